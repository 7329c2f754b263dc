"""Per-layer gradients from gradient histograms: each layer's RMS over steps, vanishing or exploding.

RMS is ``sqrt(sum_squares / num)`` of the logged gradient values (from the buckets when the sum of
squares is missing); a layer is judged against its own early level and the median layer at each step.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity

__all__ = ["LayerGradients", "analyze_layers", "layer_findings", "layer_name", "require_one_run", "sustained_runs"]


@dataclass(frozen=True)
class LayerGradients(ResultMixin):
    """Per-layer gradient RMS over steps, from gradient histograms."""

    layer: str
    tag: str
    n_points: int
    first_step: int
    last_step: int
    rms_first: float
    rms_last: float
    rms_median: float
    rms_min: float
    rms_max: float
    status: str  # "ok" | "vanishing" | "exploding"
    onset_step: int | None  # first step of the vanishing/exploding condition
    reason: str


def sustained_runs(mask: np.ndarray, min_points: int) -> np.ndarray:
    """Keep only runs of at least ``min_points`` consecutive True (or runs reaching the end)."""
    out = np.zeros_like(mask)
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return out
    for group in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1):
        if group.size >= min_points or group[-1] == mask.size - 1:
            out[group] = True
    return out



_GRAD_PART = re.compile(r"^(grad|grads|gradient|gradients)$", re.IGNORECASE)
_GRAD_SUFFIX = re.compile(r"^(?P<layer>.+?)[._-](grad|grads|gradient|gradients)$", re.IGNORECASE)


def layer_name(tag: str) -> str | None:
    """The layer of a gradient-histogram tag, or None when the tag is not a gradient.

    Recognises ``grad/<layer>``, ``<layer>/grad``, ``gradients/<layer>`` (W&B's
    ``wandb.watch``), ``<prefix>/grad/<layer>`` and ``<layer>.grad`` / ``<layer>_grad``.
    """
    parts = tag.split("/")
    rest = [p for p in parts if not _GRAD_PART.match(p)]
    if len(rest) < len(parts):
        return "/".join(rest) or None
    m = _GRAD_SUFFIX.match(parts[-1])
    if m:
        return "/".join([*parts[:-1], m.group("layer")])
    return None


def require_one_run(frame: pd.DataFrame, what: str) -> None:
    """Analyzers look at one run: refuse a table that mixes several (a programming error upstream)."""
    if "run" in frame.columns:
        runs = pd.unique(frame["run"])
        if len(runs) > 1:
            raise ValueError(f"{what} hold {len(runs)} runs; pass the rows of one run")


def _num(frame: pd.DataFrame) -> np.ndarray:
    """Values per histogram row: the ``num`` column, or the sum of the bucket counts."""
    if "num" in frame.columns:
        return pd.to_numeric(frame["num"], errors="coerce").to_numpy(dtype=np.float64)
    if "bucket_counts" in frame.columns:
        return np.array([float(np.sum(c)) for c in frame["bucket_counts"]], dtype=np.float64)
    raise ValueError("histograms need a 'num' or a 'bucket_counts' column")


def _rms(frame: pd.DataFrame) -> np.ndarray:
    """RMS per histogram row: sqrt(sum_squares / num), or from bucket mid-points when sum_squares is missing."""
    num = _num(frame)
    ss = (
        frame["sum_squares"].to_numpy(dtype=np.float64)
        if "sum_squares" in frame
        else np.full(len(frame), np.nan)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        rms = np.sqrt(ss / num)
    missing = np.isnan(ss)  # absent; an infinite sum of squares is a real overflow
    if missing.any() and "bucket_limits" in frame and "bucket_counts" in frame:
        for i in np.flatnonzero(missing):
            limits = np.asarray(frame["bucket_limits"].iloc[i], dtype=np.float64)
            counts = np.asarray(frame["bucket_counts"].iloc[i], dtype=np.float64)
            if limits.size == 0 or counts.sum() <= 0:
                continue
            lo = np.r_[frame["min"].iloc[i] if "min" in frame else limits[0], limits[:-1]]
            mids = np.where(np.isfinite(lo), (lo + limits) / 2, limits)
            mids = np.where(np.isfinite(mids), mids, 0.0)
            rms[i] = math.sqrt(float(np.sum(counts * mids * mids) / counts.sum()))
    return rms


def _first_onset(steps: np.ndarray, mask: np.ndarray, persist: int) -> int | None:
    sustained = sustained_runs(mask, persist)
    idx = np.flatnonzero(sustained)
    return int(steps[idx[0]]) if idx.size else None


def analyze_layers(
    histograms: pd.DataFrame,
    *,
    vanish_rms: float = 1e-8,
    vanish_factor: float = 1e-3,
    explode_factor: float = 1e2,
    persist: int = 2,
) -> tuple[list[LayerGradients], int]:
    """Each gradient layer's RMS over steps and its status (see ``analyze_gradients``), and the number of
    histogram tags that are not gradients."""
    require_one_run(histograms, "histograms")
    histograms = histograms[_num(histograms) > 0]  # empty histograms carry no gradient
    tags = list(pd.unique(histograms["tag"]))
    grad_tags = {t: layer_name(str(t)) for t in tags}
    ignored = sum(1 for v in grad_tags.values() if v is None)
    rows = []
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for tag, layer in grad_tags.items():
        if layer is None:
            continue
        part = histograms[histograms["tag"] == tag].sort_values("step", kind="stable")
        part = part.drop_duplicates("step", keep="last")
        steps = part["step"].to_numpy(dtype=np.int64)
        rms = _rms(part)
        series[str(tag)] = (steps, rms)
        rows.append((str(tag), layer))
    # cross-layer reference: the median RMS over layers at each step
    if len(series) >= 3:
        wide = pd.DataFrame({t: pd.Series(r, index=s) for t, (s, r) in series.items()})
        cross = wide.replace([np.inf, -np.inf], np.nan).median(axis=1)
    else:
        cross = None
    out = []
    for tag, layer in rows:
        steps, rms = series[tag]
        if steps.size == 0:
            continue
        finite = np.isfinite(rms)
        head = rms[finite][: max(3, int(0.1 * finite.sum()))]
        early = float(np.median(head)) if head.size else math.nan
        with np.errstate(invalid="ignore"):
            vanishing = finite & (rms < vanish_rms)
            reasons = []
            if np.isfinite(early) and early > 0:
                vanishing |= finite & (rms < early * vanish_factor)
            if cross is not None:
                ref = cross.reindex(steps).to_numpy(dtype=np.float64)
                vanishing |= finite & (rms < ref * vanish_factor)
            exploding = ~finite
            if np.isfinite(early) and early > 0:
                exploding |= finite & (rms > early * explode_factor)
        v_on = _first_onset(steps, vanishing, persist)
        e_on = _first_onset(steps, exploding, persist)
        status, onset = "ok", None
        if e_on is not None and (v_on is None or e_on <= v_on):
            status, onset = "exploding", e_on
            i = int(np.searchsorted(steps, e_on))
            reasons.append(
                f"RMS {rms[i]:.3g} at step {e_on}"
                + (
                    f", {rms[i] / early:.3g}x its early level {early:.3g}"
                    if np.isfinite(rms[i])
                    else " (non-finite)"
                )
            )
        elif v_on is not None:
            status, onset = "vanishing", v_on
            i = int(np.searchsorted(steps, v_on))
            ref_txt = ""
            if cross is not None:
                ref_txt = f", median layer {float(cross.get(v_on, math.nan)):.3g}"
            reasons.append(f"RMS {rms[i]:.3g} at step {v_on} (early level {early:.3g}{ref_txt})")
        fin = rms[finite]
        out.append(
            LayerGradients(
                layer=layer,
                tag=tag,
                n_points=int(steps.size),
                first_step=int(steps[0]),
                last_step=int(steps[-1]),
                rms_first=float(rms[0]),
                rms_last=float(rms[-1]),
                rms_median=float(np.median(fin)) if fin.size else math.nan,
                rms_min=float(fin.min()) if fin.size else math.nan,
                rms_max=float(fin.max()) if fin.size else math.nan,
                status=status,
                onset_step=onset,
                reason="; ".join(reasons),
            )
        )
    return out, ignored


def layer_findings(layers: list[LayerGradients]) -> list[Finding]:
    """One warning per status (vanishing, exploding) naming its layers, earliest onset first."""
    findings = []
    for status, code in (("vanishing", "layer_grad_vanishing"), ("exploding", "layer_grad_exploding")):
        bad = sorted((lg for lg in layers if lg.status == status), key=lambda lg: lg.onset_step or 0)
        if not bad:
            continue
        names = ", ".join(f"{lg.layer} (step {lg.onset_step})" for lg in bad[:8]) + (" …" if len(bad) > 8 else "")
        findings.append(Finding(
            code,
            Severity.WARNING,
            f"{len(bad)} of {len(layers)} layer(s) with {status} gradients: {names}; "
            f"first: {bad[0].layer}: {bad[0].reason}.",
            recommend(code),
            step=bad[0].onset_step,
            evidence={"layers": [lg.to_dict() for lg in bad[:50]]},
        ))
    return findings
