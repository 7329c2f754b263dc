"""The report's cross-run parts kept in the cache by a digest of what they are made from.

A warm report (no run changed) would otherwise draw its compare charts again
(thousands of curves: seconds of drawing) and fit the sweep's importance forests
again (importing scikit-learn alone costs more than the rest). Each is stored
under a digest of every number, name and option it is made from, and of the code
that makes it, so a changed run gives a new digest and a fresh result: memoised,
never stale. Without a cache both are simply made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import cache as once
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze import curves as _curves
from tanalyze.analysis.importance import Importance, hparam_importance
from tanalyze.cache import Cache
from tanalyze.cache.memo import Digest, load_memo, save_memo
from tanalyze.report import chartdata as _chartdata
from tanalyze.report import downsample as _downsample
from tanalyze.report import figures as _figures
from tanalyze.report import svgaxes as _svgaxes
from tanalyze.report import svgsafe as _svgsafe
from tanalyze.report.chartdata import blowup_step
from tanalyze.report.figures import FigureMaker, Rendered
from tanalyze.report.model import RunView

__all__ = ["compare_figure", "importance_of"]


@once
def _code(*modules: Any) -> str:
    """The source of the modules that make a result (a new release or a local edit is a new digest)."""
    import matplotlib

    digest = Digest().add(matplotlib.__version__)
    for module in modules:
        try:
            digest.add(Path(module.__file__).read_text(encoding="utf-8"))
        except (OSError, TypeError):
            digest.add(module.__name__)
    return digest.hexdigest()


def compare_figure(maker: FigureMaker, role: str, tag: str, runs: Sequence[RunView], *, max_lines: int, key: int,
                   cache: Cache | None) -> Rendered:
    """:meth:`FigureMaker.compare` of these runs, from the cache when drawn before from the same curves."""
    if cache is None:
        return maker.compare(role, tag, runs, max_lines=max_lines, key=key)
    code = _code(_figures, _chartdata, _downsample, _svgaxes, _svgsafe, _curves)
    digest = Digest().add(code, role, tag, max_lines, key, maker.smoothing, maker.columns)
    for run in runs:
        series = run.series[role]
        digest.add(run.index, run.name, blowup_step(run.diagnosis), series.steps, series.values)
    found = load_memo(cache, "compare", digest.hexdigest())
    if isinstance(found, dict):
        try:
            return Rendered(**{**found, "keys": tuple(tuple(k) for k in found.get("keys", ()))})
        except TypeError:  # another shape: drawn again below
            pass
    rendered = maker.compare(role, tag, runs, max_lines=max_lines, key=key)
    save_memo(cache, "compare", digest.hexdigest(), asdict(rendered))
    return rendered


def importance_of(cache: Cache | None) -> Callable[..., tuple[Importance, ...]]:
    """:func:`~tanalyze.analysis.importance.hparam_importance`, answered from the cache for inputs seen before."""
    if cache is None:
        return hparam_importance

    def memoised(keys: Sequence[str], features: np.ndarray, target: np.ndarray, numeric: Sequence[bool],
                 groups: np.ndarray | None = None, **options: Any) -> tuple[Importance, ...]:
        from tanalyze.analysis import importance as module

        digest = Digest().add(_code(module), list(keys), np.asarray(features, dtype=np.float64),
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
