"""Statistics for autocorrelated series: consecutive step times, memory readings, norms.

Consecutive measurements from a training loop are not independent (a slow node
stays slow for a while, data-loader queues drain and refill), so tests that
assume independence overstate their confidence. The helpers here measure that
dependence and correct for it:

- :func:`autocorrelation_time`: the integrated autocorrelation time τ (Sokal's
  automatic window, as used by ``emcee``): ``n / τ`` points carry about as much
  information as ``n`` independent ones.
- :func:`thin`: keep every ``ceil(τ)``-th point, so a rank test sees roughly
  independent samples.
- :func:`block_bootstrap_medians`: moving-block bootstrap (Künsch 1989) of the
  median, blocks of length ≈ τ keep the short-range dependence inside each block.
- :func:`binary_segmentation`: change points in the mean (least-squares cost,
  BIC-type penalty scaled by the long-run variance), the classic method of
  Scott & Knott (1974) / Vostrikova (1981), as ``ruptures.Binseg(model="l2")``.
- :func:`rolling_median` and :func:`robust_sigma`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeVar

import numpy as np

from tanalyze.curves import MAD_TO_SIGMA, mad

__all__ = [
    "quiet_numpy",
    "autocorrelation_time",
    "thin",
    "block_bootstrap_medians",
    "binary_segmentation",
    "rolling_median",
    "robust_sigma",
    "mann_whitney_p",
    "min_attainable_p",
]


P = ParamSpec("P")
R = TypeVar("R")


def quiet_numpy(func: Callable[P, R]) -> Callable[P, R]:
    """Run an analyzer with numpy's floating-point warnings off.

    Analyzers meet NaN, inf, zeros and subnormal values in real logs and handle them
    explicitly (masks, ``np.isfinite``); numpy's overflow/divide warnings would only
    be noise for the user.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with np.errstate(all="ignore"):
            return func(*args, **kwargs)

    return wrapper


def autocorrelation_time(values: np.ndarray, *, window_c: float = 5.0) -> float:
    """Integrated autocorrelation time ``τ = 1 + 2 Σ ρ_k`` with Sokal's window ``M ≥ c·τ(M)``.

    1.0 for independent data (or fewer than 4 points, or a constant series);
    never more than ``n``. Computed with an FFT, so long series are cheap.
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 4:
        return 1.0
    x = x - x.mean()
    var = float(np.dot(x, x)) / n
    if var <= 0:
        return 1.0
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(x, size)
    acf = np.fft.irfft(spectrum * np.conj(spectrum), size)[:n] / (var * n)
    taus = 1.0 + 2.0 * np.cumsum(acf[1:])
    lags = np.arange(1, n)
    ok = lags >= window_c * taus
    tau = float(taus[np.argmax(ok)]) if ok.any() else float(taus[-1])
    return float(min(max(tau, 1.0), n))


def thin(values: np.ndarray, stride: int) -> np.ndarray:
    """Every ``stride``-th value, starting from the middle of the first stride."""
    stride = max(int(stride), 1)
    return np.asarray(values)[stride // 2 :: stride]


def _block_resample_medians(
    series: Sequence[np.ndarray], block: int, n_boot: int, rng: np.random.Generator, max_points: int
) -> np.ndarray:
    """Medians of ``n_boot`` moving-block resamples of the concatenation of ``series``."""
    parts = []
    for x in series:
        x = np.asarray(x, dtype=np.float64)
        group = 1
        if x.size > max_points:
            # aggregate runs of `group` points to medians: keeps memory at n_boot × max_points
            group = math.ceil(x.size / max_points)
            usable = (x.size // group) * group
            x = np.median(x[:usable].reshape(-1, group), axis=1)
        n = x.size
        length = max(1, min(math.ceil(block / group), n))
        k = math.ceil(n / length)
        starts = rng.integers(0, n - length + 1, size=(n_boot, k))
        idx = (starts[:, :, None] + np.arange(length)).reshape(n_boot, -1)[:, :n]
        parts.append(x[idx])
    return np.median(np.concatenate(parts, axis=1), axis=1)


def block_bootstrap_medians(
    series: Sequence[np.ndarray],
    *,
    block: int,
    n_boot: int = 2000,
    seed: int = 0,
    max_points: int = 4000,
) -> np.ndarray:
    """Bootstrap distribution of the pooled median of several runs (each resampled in moving blocks).

    Deterministic for a given ``seed`` (analyzers are pure functions). To bound
    memory at about ``n_boot × max_points`` values, runs longer than their share of
    ``max_points`` are first reduced to medians of consecutive groups.
    """
    rng = np.random.default_rng(seed)
    per_run = max(250, max_points // max(len(series), 1))
    return _block_resample_medians(series, block, n_boot, rng, per_run)


def rolling_median(values: np.ndarray, window: int) -> np.ndarray:
    """Centred rolling median (window shrinks at the ends); NaN-aware."""
    import pandas as pd

    window = max(int(window), 1)
    return (
        pd.Series(np.asarray(values, dtype=np.float64))
        .rolling(window, center=True, min_periods=1)
        .median()
        .to_numpy()
    )


def robust_sigma(values: np.ndarray) -> float:
    """1.4826 × MAD: the standard deviation for normal data, unmoved by outliers."""
    return MAD_TO_SIGMA * mad(np.asarray(values, dtype=np.float64))


def min_attainable_p(n_a: int, n_b: int) -> float:
    """Smallest two-sided p-value a rank test can reach with these sample sizes (asv's rule).

    ``2 / C(n_a + n_b, min(n_a, n_b))``: when it is not below the significance
    level, no outcome could be significant and the comparison is inconclusive.
    """
    if n_a == 0 or n_b == 0:
        return 1.0
    n, k = n_a + n_b, min(n_a, n_b)
    log_comb = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    return min(1.0, 2.0 * math.exp(-log_comb))


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann–Whitney U p-value (exact for small samples, normal approximation otherwise)."""
    from scipy.stats import mannwhitneyu

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return float("nan")
    if np.ptp(np.concatenate([a, b])) == 0:
        return 1.0
    return float(mannwhitneyu(a, b, alternative="two-sided", method="auto").pvalue)


def _segment_costs(s1: np.ndarray, s2: np.ndarray, start: int, end: np.ndarray | int) -> np.ndarray:
    length = np.asarray(end) - start
    total = s1[end] - s1[start]
    return (s2[end] - s2[start]) - total * total / length


def binary_segmentation(
    values: np.ndarray,
    *,
    penalty: float,
    min_size: int = 5,
    max_changes: int = 10,
) -> list[int]:
    """Indices where a new mean level starts, by greedy binary segmentation on the L2 cost.

    A split is accepted while it lowers the total within-segment sum of squares by
    more than ``penalty``; with noise variance σ² (long-run variance for dependent
    data) a penalty of about ``2 σ² ln n`` is the Schwarz/BIC choice. Each accepted
    split is the best one over all current segments. Cost O(n) per split.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    min_size = max(int(min_size), 1)
    if n < 2 * min_size:
        return []
    s1 = np.concatenate([[0.0], np.cumsum(x)])
    s2 = np.concatenate([[0.0], np.cumsum(x * x)])

    def best_split(start: int, end: int) -> tuple[float, int]:
        if end - start < 2 * min_size:
            return -np.inf, -1
        cuts = np.arange(start + min_size, end - min_size + 1)
        whole = float(_segment_costs(s1, s2, start, end))
        left = _segment_costs(s1, s2, start, cuts)
        right = (s2[end] - s2[cuts]) - (s1[end] - s1[cuts]) ** 2 / (end - cuts)
        gains = whole - left - right
        i = int(np.argmax(gains))
        return float(gains[i]), int(cuts[i])

    segments = [(0, n, *best_split(0, n))]
    changes: list[int] = []
    while len(changes) < max_changes and segments:
        j = max(range(len(segments)), key=lambda k: segments[k][2])
        start, end, gain, cut = segments[j]
        if not gain > penalty:
            break
        changes.append(cut)
        segments[j : j + 1] = [(start, cut, *best_split(start, cut)), (cut, end, *best_split(cut, end))]
    return sorted(changes)
