"""The report's sweep section: experiments found among the report's runs, drawn as bars, a heat map and bands.

:func:`experiments_of` hands the runs the report already read (settings, tags, validation curve, verdict) to
:func:`tanalyze.analysis.sweep.analyse_sweep`; :func:`sweep_context` turns its experiments into what
``sweep.html.j2`` draws: importance bars and the heat map as HTML, the bands as small SVG paths made of numbers
only (run names and settings, which come from logs, stay text for the autoescaping template).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from markupsafe import Markup

from tanalyze.analysis import importance as _importance
from tanalyze.analysis.hparams import normalise_hparams
from tanalyze.analysis.importance import Importance, hparam_importance
from tanalyze.analysis.sweep import Experiment, SweepRun, analyse_sweep
from tanalyze.cache import Cache
from tanalyze.cache.memo import Digest, load_memo, save_memo, source_digest

__all__ = ["experiments_of", "importance_of", "sweep_context", "MAX_GROUPS_SHOWN", "BAND_GROUPS"]

#: Configurations listed in a table at most (the best first); the rest are counted.
MAX_GROUPS_SHOWN = 30
#: Configurations drawn as bands (the best ones).
BAND_GROUPS = 6
_W, _H, _PAD = 420.0, 170.0, 6.0


def experiments_of(runs: Sequence[Any], name: str | None = None, *, cache: Any = None) -> tuple[Experiment, ...]:
    """The experiments among report runs (:class:`~tanalyze.report.model.RunView`), scored by their validation
    loss role. Runs without one are left out; fewer than four alike runs make no experiment. ``cache``: where
    the settings' importances are kept by their inputs (see :func:`importance_of`)."""
    items = []
    for run in runs:
        series = run.series.get("val_loss")
        info = run.info
        overfitting = run.diagnosis.get("overfitting") or {}
        items.append(SweepRun(
            name=run.name, config=normalise_hparams(info.hparams) if info is not None else {},
            source=info.format if info is not None else run.format, tags=frozenset(run.tags),
            metric_tag=series.tag if series is not None else None,
            steps=series.steps.astype(np.float64) if series is not None else np.empty(0),
            values=series.values if series is not None else np.empty(0),
            label=run.verdict, overfit=bool(isinstance(overfitting, dict) and overfitting.get("detected")),
        ))
    if len(items) < 4:
        return ()
    return analyse_sweep(items, name=name, importance=importance_of(cache)).experiments


def importance_of(cache: Cache | None) -> Callable[..., tuple[Importance, ...]]:
    """:func:`~tanalyze.analysis.importance.hparam_importance`, answered from the cache for inputs seen before
    (a warm report need not fit the importance forests again: importing scikit-learn alone costs more than the
    rest)."""
    if cache is None:
        return hparam_importance

    def memoised(keys: Sequence[str], features: np.ndarray, target: np.ndarray, numeric: Sequence[bool],
                 groups: np.ndarray | None = None, **options: Any) -> tuple[Importance, ...]:
        digest = Digest().add(source_digest(_importance), list(keys), np.asarray(features, dtype=np.float64),
                              np.asarray(target, dtype=np.float64), [bool(n) for n in numeric], options,
                              None if groups is None else np.asarray(groups))
        found = load_memo(cache, "importance", digest.hexdigest())
        if isinstance(found, list):
            try:
                return tuple(Importance(**item) for item in found)
            except TypeError:
                pass
        made = hparam_importance(keys, features, target, numeric, groups, **options)
        save_memo(cache, "importance", digest.hexdigest(), [asdict(item) for item in made])
        return made

    return memoised


def _color(t: float, higher: bool) -> str:
    """A light-to-dark green for good-to-bad cells (t in [0, 1], 0 = lowest value)."""
    good = t if higher else 1 - t
    r, g, b = (int(247 - good * (247 - c)) for c in (22, 163, 74))
    return f"rgb({r},{g},{b})"


def _heat(experiment: Experiment) -> dict[str, Any] | None:
    heat = experiment.heatmap
    if heat is None:
        return None
    values = np.asarray(heat.values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    rows = []
    for yi, level in enumerate(heat.y_levels):
        cells = []
        for xi in range(len(heat.x_levels)):
            v = values[yi, xi]
            t = 0.0 if not math.isfinite(v) or hi == lo else (v - lo) / (hi - lo)
            good = t if experiment.higher_is_better else 1 - t
            cells.append({"value": v if math.isfinite(v) else None, "n": heat.counts[yi][xi],
                          "bg": _color(t, experiment.higher_is_better) if math.isfinite(v) else "#f3f4f6",
                          "dark": good > 0.6})
        rows.append({"level": level, "cells": cells})
    return {"x_key": heat.x_key, "y_key": heat.y_key, "x_levels": heat.x_levels, "rows": rows}


def _bands(experiment: Experiment) -> dict[str, Any] | None:
    groups = [g for g in experiment.groups[:BAND_GROUPS] if g.band is not None and len(g.band.steps)]
    if not groups:
        return None
    steps = np.concatenate([g.band.steps for g in groups])
    ys = np.concatenate([np.concatenate([g.band.low, g.band.high]) for g in groups])
    ys = ys[np.isfinite(ys)]
    if not ys.size:
        return None
    log = bool((ys > 0).all())
    ty = np.log10 if log else (lambda a: a)
    y_lo, y_hi = float(np.min(ty(ys))), float(np.max(ty(ys)))
    x_lo, x_hi = float(steps.min()), float(steps.max())
    sx = (_W - 2 * _PAD) / ((x_hi - x_lo) or 1.0)
    sy = (_H - 2 * _PAD) / ((y_hi - y_lo) or 1.0)

    def points(x: np.ndarray, y: np.ndarray) -> str:
        keep = np.isfinite(y)
        px = _PAD + (x[keep] - x_lo) * sx
        py = _H - _PAD - (ty(y[keep]) - y_lo) * sy
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py, strict=True))

    paths = []
    for i, g in enumerate(groups):
        band = g.band
        area = points(np.concatenate([band.steps, band.steps[::-1]]), np.concatenate([band.low, band.high[::-1]]))
        paths.append({"color": f"hsl({(i * 67) % 360},65%,42%)", "median": Markup(points(band.steps, band.median)),
                      "area": Markup(area) if len(g.runs) > 1 else None, "label": g.label, "seeds": len(g.runs)})
    return {"paths": paths, "width": int(_W), "height": int(_H), "log": log,
            "x_range": (x_lo, x_hi), "y_range": (float(10 ** y_lo) if log else y_lo, float(10 ** y_hi) if log else y_hi)}


def sweep_context(experiments: Sequence[Experiment]) -> list[dict[str, Any]]:
    """What the template draws for each experiment."""
    out = []
    for e in experiments:
        top = max((i.score for i in e.importance), default=0.0) or 1.0
        out.append({
            "name": e.name, "runs": len(e.runs), "metric": e.metric, "target": e.target,
            "direction": "higher" if e.higher_is_better else "lower",
            "hparams": [h.to_dict() for h in e.hparams], "seed_keys": e.seed_keys,
            "importance": [{"key": i.key, "rank": i.rank, "score": i.score, "forest": i.forest,
                            "permutation": i.permutation, "spearman": i.spearman,
                            "width": round(100 * i.score / top, 1)} for i in e.importance],
            "heat": _heat(e), "bands": _bands(e),
            "best": e.best.to_dict() if e.best is not None else None,
            "best_text": e.best.reason() if e.best is not None else None,
            "groups": [{"label": g.label, "runs": len(g.runs), "mean": g.final_mean, "std": g.final_std,
                        "best_mean": g.best_mean, "diverged": g.diverged, "unstable": g.unstable,
                        "overfit": g.overfit} for g in e.groups[:MAX_GROUPS_SHOWN]],
            "groups_more": max(0, len(e.groups) - MAX_GROUPS_SHOWN),
            "instability": [r.reason() for r in e.instability], "cautions": list(e.cautions),
        })
    return out
