"""Which hyperparameters drive a result: random-forest importance, cross-checked two ways.

The way W&B's parameter-importance panel works, offline: a random forest predicts the metric from the settings and
its impurity importance says how much each setting's splits reduce the error. Impurity importance favours settings
with many distinct values, so it is cross-checked by permutation importance (how much worse the forest predicts
when one setting's column is shuffled) and by Spearman's rank correlation (monotone effects only: a U-shaped
learning-rate effect correlates weakly yet drives the result, so correlation only confirms, it never ranks).
The ranking is by the mean of the two forest measures, each scaled to sum to 1.

The forest predicts the *rank* of each run's metric, so one run that blew up to 1e30 weighs no more than a run that
was merely worst. Pure: arrays in, a frozen result out; scikit-learn is imported on first use.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

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
    score: float  # mean of the two forest measures, each normalised to sum 1 over the keys
    forest: float  # random-forest impurity importance (sums to 1)
    permutation: float  # mean drop in the forest's R² when this key is shuffled
    permutation_std: float
    spearman: float | None  # rank correlation with the metric (None for a categorical key)
    spearman_p: float | None


def _normalised(values: np.ndarray) -> np.ndarray:
    clipped = np.clip(values, 0.0, None)
    total = clipped.sum()
    return clipped / total if total > 0 else np.zeros_like(clipped)


def hparam_importance(
    keys: Sequence[str],
    features: np.ndarray,
    target: np.ndarray,
    numeric: Sequence[bool],
    *,
    trees: int = 100,
    repeats: int = 5,
    seed: int = 0,
) -> tuple[Importance, ...]:
    """Importance of each column of ``features`` (runs × keys, categorical columns as codes) for ``target``
    (one finite number per run, lower or higher: only ranks matter). Sorted, most important first."""
    from scipy.stats import rankdata, spearmanr
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import permutation_importance

    n, k = features.shape
    if k == 0 or n < 2:
        return ()
    ranks = rankdata(target)
    if np.ptp(ranks) == 0:  # every run scored alike: nothing drives anything
        forest_imp = np.zeros(k)
        perm_mean = np.zeros(k)
        perm_std = np.zeros(k)
    else:
        forest = RandomForestRegressor(n_estimators=trees, random_state=seed, n_jobs=1, min_samples_leaf=1)
        forest.fit(features, ranks)
        forest_imp = forest.feature_importances_
        perm = permutation_importance(forest, features, ranks, n_repeats=repeats, random_state=seed, n_jobs=1)
        perm_mean, perm_std = perm.importances_mean, perm.importances_std
    score = (_normalised(forest_imp) + _normalised(perm_mean)) / 2
    out = []
    for j, key in enumerate(keys):
        rho = p = None
        if numeric[j] and np.ptp(features[:, j]) > 0 and np.ptp(target) > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = spearmanr(features[:, j], target)
            rho, p = float(result.statistic), float(result.pvalue)
        out.append((key, float(score[j]), float(forest_imp[j]), float(perm_mean[j]), float(perm_std[j]), rho, p))
    out.sort(key=lambda item: (-item[1], -item[2], item[0]))
    return tuple(Importance(key, rank, s, f, pm, ps, rho, p)
                 for rank, (key, s, f, pm, ps, rho, p) in enumerate(out, start=1))
