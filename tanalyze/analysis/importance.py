"""Which hyperparameters drive a result: random-forest importance, cross-checked two ways.

The way W&B's parameter-importance panel works, offline: a random forest predicts the metric from the settings and
its impurity importance says how much each setting's splits reduce the error. Impurity importance favours settings
with many distinct values (an idle setting drawn at random gets a share), so it is cross-checked by permutation
importance on held-out configurations (how much worse forests fitted on the other configurations predict when
one setting's column is shuffled) and by Spearman's rank correlation (monotone effects only: a U-shaped
learning-rate effect correlates weakly yet drives the result, so correlation only confirms, it never ranks).
The ranking (``score``) is the held-out permutation importance scaled to sum to 1: on synthetic sweeps with a known
truth it put the idle setting last more often than impurity, in-sample permutation or ω² did. ω² (the share of the
metric's variance explained by the setting's levels, corrected for how many there are) is reported beside it: a
marginal measure, exact on grids, misled in small random searches where an idle setting happens to follow a
driving one.

The forest predicts the *rank* of each run's metric, so one run that blew up to 1e30 weighs no more than a run that
was merely worst. Pure: arrays in, a frozen result out; scikit-learn is imported on first use.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tanalyze.analysis.results import ResultMixin

__all__ = ["Importance", "hparam_importance", "MIN_RUNS", "MIN_CONFIGS"]

#: Fewer runs (or distinct configurations) than this and the ranking comes with a caution.
MIN_RUNS = 12
MIN_CONFIGS = 6


@dataclass(frozen=True)
class Importance(ResultMixin):
    """One hyperparameter's share in driving the metric."""

    key: str
    rank: int  # 1 = drives the result most
    score: float  # the held-out permutation importance, normalised to sum 1 over the keys (0 when negative)
    omega_squared: float  # the metric's variance explained by this key's levels (ω², corrected for their number)
    forest: float  # random-forest impurity importance (sums to 1), averaged over the folds' forests
    permutation: float  # mean drop in R² on held-out configurations when this key is shuffled
    permutation_std: float
    spearman: float | None  # rank correlation with the metric (None for a categorical key)
    spearman_p: float | None


def _normalised(values: np.ndarray) -> np.ndarray:
    clipped = np.clip(values, 0.0, None)
    total = clipped.sum()
    return clipped / total if total > 0 else np.zeros_like(clipped)


def _omega_squared(column: np.ndarray, target: np.ndarray, numeric: bool, bins: int = 6) -> float:
    """The share of ``target``'s variance explained by ``column``'s levels, corrected for the number of levels
    (ω², unbiased: an idle setting scores about 0 however many values it takes). Many numeric values are
    binned by quantile first."""
    values = column
    if numeric and len(np.unique(column)) > bins:
        edges = np.unique(np.quantile(column, np.linspace(0, 1, bins + 1)))
        values = np.clip(np.searchsorted(edges, column, side="right") - 1, 0, len(edges) - 2)
    levels, index = np.unique(values, return_inverse=True)
    n, k = len(target), len(levels)
    if k < 2 or n <= k:
        return 0.0
    mean = target.mean()
    sums = np.bincount(index, weights=target)
    counts = np.bincount(index)
    between = float((sums**2 / counts).sum() - n * mean**2)
    total = float(((target - mean) ** 2).sum())
    within = (total - between) / (n - k)
    return max(0.0, (between - (k - 1) * within) / (total + within)) if total > 0 else 0.0


def _folds(groups: np.ndarray, most: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train/test splits that keep every configuration's seeds together (held-out configurations)."""
    labels = np.unique(groups)
    k = min(most, len(labels))
    if k < 2:
        every = np.arange(len(groups))
        return [(every, every)]
    rng = np.random.default_rng(0)
    fold_of = dict(zip(labels, rng.permutation(len(labels)) % k, strict=True))
    fold = np.asarray([fold_of[g] for g in groups])
    return [(np.flatnonzero(fold != i), np.flatnonzero(fold == i)) for i in range(k)]


def _r2(truth: np.ndarray, predicted: np.ndarray) -> float:
    total = float(((truth - truth.mean()) ** 2).sum())
    return 1.0 - float(((truth - predicted) ** 2).sum()) / total if total > 0 else 0.0


def _permutation_drops(forest: Any, features: np.ndarray, target: np.ndarray, repeats: int,
                       rng: np.random.Generator) -> np.ndarray:
    """keys × repeats: how much R² falls when one column is shuffled, every shuffle predicted in one call
    (a forest's per-call overhead dominates on small sweeps)."""
    n, k = features.shape
    stacked = np.tile(features, (1 + k * repeats, 1))
    for j in range(k):
        for r in range(repeats):
            block = 1 + j * repeats + r
            stacked[block * n:(block + 1) * n, j] = features[rng.permutation(n), j]
    predicted = forest.predict(stacked).reshape(1 + k * repeats, n)
    base = _r2(target, predicted[0])
    return np.asarray([[base - _r2(target, predicted[1 + j * repeats + r]) for r in range(repeats)]
                       for j in range(k)])


def hparam_importance(
    keys: Sequence[str],
    features: np.ndarray,
    target: np.ndarray,
    numeric: Sequence[bool],
    groups: np.ndarray | None = None,
    *,
    trees: int = 60,
    repeats: int = 4,
    most: int = 4,
    seed: int = 0,
) -> tuple[Importance, ...]:
    """Importance of each column of ``features`` (runs × keys, categorical columns as codes) for ``target``
    (one finite number per run, lower or higher: only ranks matter). Sorted, most important first.

    ``groups`` labels each run's configuration: the forests are fitted on some configurations and the
    permutation importance measured on the others (grouped K-fold, at most ``most`` folds), so that a setting which
    only helps the forest memorise seed noise scores about zero instead of inflating like impurity does.
    """
    from scipy.stats import rankdata, spearmanr
    from sklearn.ensemble import RandomForestRegressor

    n, k = features.shape
    if k == 0 or n < 2:
        return ()
    ranks = rankdata(target)
    forest_imp = np.zeros(k)
    perm_mean = np.zeros(k)
    perm_std = np.zeros(k)
    if np.ptp(ranks) > 0:  # else every run scored alike: nothing drives anything
        folds = _folds(np.arange(n) if groups is None else np.asarray(groups), most)
        rng = np.random.default_rng(seed)
        for train, test in folds:
            forest = RandomForestRegressor(n_estimators=trees, random_state=seed, n_jobs=1)
            forest.fit(features[train], ranks[train])
            forest_imp += forest.feature_importances_ / len(folds)
            drops = _permutation_drops(forest, features[test], ranks[test], repeats, rng)
            perm_mean += drops.mean(axis=1) / len(folds)
            perm_std += drops.std(axis=1) / len(folds)
    omega = np.asarray([_omega_squared(features[:, j], ranks, numeric[j]) for j in range(k)])
    score = _normalised(perm_mean)
    if not score.any():  # no shuffle hurt held-out predictions: the forests' impurity is all there is to rank by
        score = _normalised(forest_imp)
    out = []
    for j, key in enumerate(keys):
        rho = p = None
        if numeric[j] and np.ptp(features[:, j]) > 0 and np.ptp(target) > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = spearmanr(features[:, j], target)
            rho, p = float(result.statistic), float(result.pvalue)
        out.append((key, float(score[j]), float(omega[j]), float(forest_imp[j]), float(perm_mean[j]),
                    float(perm_std[j]), rho, p))
    out.sort(key=lambda item: (-item[1], -item[3], item[0]))
    return tuple(Importance(key, rank, *rest) for rank, (key, *rest) in enumerate(out, start=1))
