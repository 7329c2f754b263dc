"""Many runs as one experiment: configurations, seed groups, what drives the result, the best configuration.

A sweep (a grid with seeds, a random or Optuna search, a W&B sweep) asks which settings work, how sure we are
and what drives the result. :func:`analyse_sweep` answers from :class:`SweepRun` summaries (one per run: its
settings, its tags, its metric curve, its verdict):

* **experiments**: runs that logged the same set of tags; their settings from the logs' configuration and the
  run names (``lr=3e-4/seed_2``), each with where it came from; seeds (``seed``, ``random_state``, ``rng``,
  ``s1``-style folder names) repeat a configuration and are never one; only settings that vary are kept;
* **groups**: runs equal in every kept setting (seeds of one configuration), with a band (median, min and max of
  the metric curve over seeds on a common step grid), the final and best metric with their spread over seeds,
  and the share of seeds that diverged, were unstable or overfit;
* **importance** (:mod:`tanalyze.analysis.importance`) with a caution when runs are few; a **heat map** of the
  metric (mean over runs) over the two most important settings;
* the **best** configuration, tested against the runner-up with Welch's t-test over seeds (is it better beyond
  seed noise?), and which configurations are within seed noise of it;
* **instability** by setting: "all 9 runs with lr ≥ 0.3 diverged or were unstable".

A run whose metric ends non-finite (or never has a finite value) counts as the worst finite value seen, so a
diverged configuration ranks last instead of vanishing. Pure: no I/O, no printing.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tanalyze._display import html as display_html
from tanalyze.analysis.hparams import HparamValue, canonical_key, folder_hparams, is_seed_key
from tanalyze.analysis.importance import MIN_CONFIGS, MIN_RUNS, Importance, hparam_importance
from tanalyze.analysis.results import ResultMixin, to_jsonable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "SweepRun", "HparamInfo", "Band", "ConfigGroup", "Heatmap", "BestConfig", "InstabilityRule", "Experiment",
    "SweepResult", "analyse_sweep", "higher_is_better", "MIN_EXPERIMENT_RUNS",
]

#: An experiment needs at least this many runs (and one setting that varies) to be analysed.
MIN_EXPERIMENT_RUNS = 4
#: Points of a band's step grid at most.
BAND_POINTS = 120
#: Welch's test: a p-value below this says "better beyond seed noise".
ALPHA = 0.05
_HIGHER = re.compile(r"(^|[^a-z])(acc|accuracy|top1|top5|map|f1|bleu|rouge\w*|auc|auroc|precision|recall|iou|miou|"
                     r"dice|scores?|rewards?|rew|returns?|r2|ap|ap50|ap75|exact_match|em|pass@\d+|win_rate|psnr|ssim)"
                     r"($|[^a-z])", re.IGNORECASE)
#: Configuration sources by reader format, as shown to the user.
_SOURCE_NAMES = {
    "tensorboard": "TensorBoard hparams", "lightning_csv": "hparams.yaml", "wandb_local": "W&B config",
    "wandb_export": "W&B config", "wandb_api": "W&B config", "hf_trainer_state": "HF trainer state",
    "hf_console": "HF TrainingArguments", "mlflow": "MLflow params",
}


def higher_is_better(tag: str) -> bool:
    """Whether a metric named ``tag`` improves upward (accuracy, mAP, F1, BLEU …) rather than downward (loss)."""
    if re.search(r"loss|error|err$|perplexity|ppl|mse|mae|rmse|nll|wer|cer", tag, re.IGNORECASE):
        return False
    return bool(_HIGHER.search(tag.replace("/", " ")))


@dataclass(frozen=True, eq=False)
class SweepRun:
    """What the sweep analysis needs of one run (built by :func:`tanalyze.sweeps.sweep_runs`)."""

    name: str
    config: Mapping[str, HparamValue]  # normalised settings from the logs (see analysis.hparams)
    source: str  # the reader's format: where ``config`` came from
    tags: frozenset[str]
    metric_tag: str | None
    steps: np.ndarray
    values: np.ndarray
    label: str = "normal"  # the run's verdict
    overfit: bool = False


@dataclass(frozen=True)
class HparamInfo(ResultMixin):
    """One setting that varies across the experiment's runs."""

    key: str
    kind: str  # "numeric" or "categorical"
    values: tuple[HparamValue, ...]  # its distinct values, sorted (at most 50 shown)
    distinct: int
    sources: tuple[str, ...]  # where its values came from ("TensorBoard hparams", "folder name" …)
    aliases: tuple[str, ...] = ()  # other names for the same setting (equal on every run)


@dataclass(frozen=True, eq=False)
class Band(ResultMixin):
    """The metric of a group's seeds on a common step grid: median, min and max over the seeds at each step."""

    steps: np.ndarray
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    seeds: np.ndarray  # how many seeds cover each step


@dataclass(frozen=True)
class ConfigGroup(ResultMixin):
    """Runs equal in every varying setting: the seeds of one configuration."""

    label: str
    config: dict[str, HparamValue]
    runs: tuple[str, ...]
    seeds: tuple[str, ...]  # each run's seed (its value, or the run name when no seed is known)
    finals: tuple[float, ...]  # each run's metric as scored (final or best; non-finite → worst seen)
    final_mean: float
    final_median: float
    final_std: float  # over seeds (ddof=1; 0 for one seed)
    best_mean: float  # the best value each seed reached, averaged
    best_std: float
    diverged: float  # share of seeds that diverged
    unstable: float  # share of seeds unstable or diverged
    overfit: float  # share of seeds that overfit
    band: Band | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Heatmap(ResultMixin):
    """The metric (mean over runs) over the levels of the two most important settings."""

    x_key: str
    y_key: str
    x_levels: tuple[str, ...]
    y_levels: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]  # [y][x]; nan where no run
    counts: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class BestConfig(ResultMixin):
    """The best configuration and how sure that is."""

    label: str
    config: dict[str, HparamValue]
    mean: float
    std: float
    seeds: int
    runner_up: str | None
    runner_up_mean: float | None
    runner_up_std: float | None
    p_value: float | None  # Welch's t-test, best vs runner-up, over seeds (None: fewer than 2 seeds on a side)
    beyond_noise: bool | None  # better than the runner-up beyond seed noise (None: cannot tell)
    within_noise: tuple[str, ...]  # configurations not told apart from the best by their seeds
    marginal: dict[str, HparamValue]  # per setting, the level with the best mean over all other settings

    def reason(self) -> str:
        spread = f" ± {self.std:.3g} over {self.seeds} seed(s)" if self.seeds > 1 else " (one seed)"
        text = f"best: {self.label} at {self.mean:.4g}{spread}"
        if self.runner_up is None:
            return text
        text += f"; runner-up {self.runner_up} at {self.runner_up_mean:.4g}"
        if self.beyond_noise is None:
            return text + ": too few seeds to tell them apart"
        verdict = "better beyond seed noise" if self.beyond_noise else "not better beyond seed noise"
        return text + f" ({verdict}, Welch p = {self.p_value:.2g})"


@dataclass(frozen=True)
class InstabilityRule(ResultMixin):
    """A range of one setting where every run went wrong (and outside it, fewer did)."""

    key: str
    outcome: str  # "diverged" or "unstable" (unstable or diverged)
    op: str  # ">=", "<=" or "=="
    threshold: HparamValue
    runs: int  # runs in the range (all of them went wrong)
    others_bad: int  # runs outside the range that went wrong too
    others: int

    def reason(self) -> str:
        what = "diverged" if self.outcome == "diverged" else "diverged or were unstable"
        sign = {">=": "≥", "<=": "≤", "==": "="}[self.op]
        return (f"all {self.runs} runs with {self.key} {sign} {_fmt(self.threshold)} {what}; "
                f"{self.others_bad} of the other {self.others} did")


@dataclass(frozen=True)
class Experiment(ResultMixin):
    """Runs sharing a tag set, analysed as one sweep."""

    name: str
    runs: tuple[str, ...]
    tags: tuple[str, ...]
    metric: str
    higher_is_better: bool
    target: str  # "final" or "best"
    seed_keys: tuple[str, ...]
    hparams: tuple[HparamInfo, ...]
    constant: dict[str, HparamValue]  # settings equal on every run (at most 30 kept)
    groups: tuple[ConfigGroup, ...]  # best first
    importance: tuple[Importance, ...]
    heatmap: Heatmap | None
    best: BestConfig | None
    instability: tuple[InstabilityRule, ...]
    cautions: tuple[str, ...]
    evidence: dict[str, Any]

    def summary_lines(self) -> list[str]:
        """A few lines for a terminal: settings, importance, best configuration, instability, cautions."""
        lines = [f"{self.name}: {len(self.runs)} runs, {len(self.groups)} configurations, "
                 f"metric {self.metric} ({self.target}, {'higher' if self.higher_is_better else 'lower'} is better)"]
        for h in self.hparams:
            lines.append(f"  hparam {h.key}: {h.distinct} values ({', '.join(_fmt(v) for v in h.values[:8])}"
                         f"{' …' if h.distinct > 8 else ''}) from {' + '.join(h.sources)}"
                         + (f" (also named {', '.join(h.aliases)})" if h.aliases else ""))
        if self.seed_keys:
            lines.append(f"  seeds: {', '.join(self.seed_keys)} (repeats, not hyperparameters)")
        for imp in self.importance:
            rho = f", Spearman {imp.spearman:+.2f}" if imp.spearman is not None else ""
            lines.append(f"  importance #{imp.rank} {imp.key}: {imp.score:.2f} (forest {imp.forest:.2f}, "
                         f"permutation {imp.permutation:.2f}{rho})")
        if self.best is not None:
            lines.append("  " + self.best.reason())
            if self.best.within_noise:
                lines.append(f"  within seed noise of the best: {'; '.join(self.best.within_noise[:6])}"
                             f"{' …' if len(self.best.within_noise) > 6 else ''}")
        lines.extend("  " + rule.reason() for rule in self.instability)
        lines.extend("  caution: " + c for c in self.cautions)
        return lines


@dataclass(frozen=True)
class SweepResult(ResultMixin):
    """Every experiment found among the runs, and why other runs were left out."""

    experiments: tuple[Experiment, ...]
    skipped: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.experiments)

    def summary_lines(self) -> list[str]:
        """Every experiment's lines for a terminal (see :meth:`Experiment.summary_lines`), then what was left out."""
        lines = [line for e in self.experiments for line in e.summary_lines()]
        return lines + [f"not analysed: {s}" for s in self.skipped]

    def __repr__(self) -> str:
        names = ", ".join(f"{e.name} ({len(e.runs)} runs)" for e in self.experiments) or "none"
        return f"<SweepResult {len(self.experiments)} experiment(s): {names}>"

    def _repr_html_(self) -> str:
        """Jupyter: the report's sweep section for these experiments."""
        return display_html(self)

    def plot(self, experiment: int = 0) -> Figure:
        """Importance bars, the heat map and the bands per configuration of one experiment (by position)."""
        from tanalyze.analysis.sweep_plot import plot_experiment

        if not self.experiments:
            raise ValueError("no experiment to plot: " + ("; ".join(self.skipped) or "no runs"))
        return plot_experiment(self.experiments[experiment])


# --------------------------------------------------------------------------- settings of each run


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _is_seed(key: str, values: Sequence[HparamValue], from_folder: bool) -> bool:
    if is_seed_key(key):
        return True
    # "s1", "-s2": a seed only when written in a name, and every value is a small whole number
    return (from_folder and key.lower() in ("s", "sd", "rep", "repeat", "replicate")
            and all(isinstance(v, float) and v.is_integer() and 0 <= v < 1e6 for v in values))


def _settings(runs: Sequence[SweepRun]) -> tuple[dict[str, dict[str, HparamValue]], dict[str, set[str]], list[str]]:
    """Per key (first spelling of its canonical form): run → value, and its sources; the seed keys.

    A key both logged and written in the run name is one setting; the logged value wins where they differ.
    """
    values: dict[str, dict[str, HparamValue]] = defaultdict(dict)
    sources: dict[str, set[str]] = defaultdict(set)
    names: dict[str, str] = {}  # canonical → key as first written
    for run in runs:
        source = _SOURCE_NAMES.get(run.source, f"{run.source} config")
        for key, value in run.config.items():
            canon = names.setdefault(canonical_key(key), key)
            values[canon][run.name] = value
            sources[canon].add(source)
        for key, value in folder_hparams(run.name).items():
            canon = names.setdefault(canonical_key(key), key)
            values[canon].setdefault(run.name, value)
            sources[canon].add("folder name")
    seeds = [k for k, by_run in values.items()
             if _is_seed(k, list(by_run.values()), sources[k] == {"folder name"})]
    return values, sources, seeds


def _column(by_run: Mapping[str, HparamValue], runs: Sequence[str]) -> list[HparamValue]:
    return [by_run.get(r, "None") for r in runs]


def _partition(column: Sequence[HparamValue]) -> tuple[int, ...]:
    seen: dict[Any, int] = {}
    return tuple(seen.setdefault(_fmt(v), len(seen)) for v in column)


def _varying(runs: Sequence[SweepRun]) -> tuple[list[str], dict[str, list[HparamValue]], dict[str, set[str]],
                                                dict[str, list[str]], dict[str, dict[str, HparamValue]],
                                                dict[str, HparamValue], list[str]]:
    """The varying settings (seeds apart, aliases merged), their columns, sources, aliases; seed values by key;
    constants; notes on what was left out."""
    values, sources, seeds = _settings(runs)
    names = [r.name for r in runs]
    n = len(runs)
    notes: list[str] = []
    sparse: list[str] = []
    kept: list[str] = []
    columns: dict[str, list[HparamValue]] = {}
    constant: dict[str, HparamValue] = {}
    aliases: dict[str, list[str]] = defaultdict(list)
    for key in sorted(values, key=lambda k: (k in seeds, "folder name" in sources[k] and len(sources[k]) == 1, k)):
        if key in seeds:
            continue
        by_run = values[key]
        if len(by_run) < n / 2:
            sparse.append(key)
            continue
        column = _column(by_run, names)
        distinct = {_fmt(v) for v in column}
        if len(distinct) == 1:
            if len(constant) < 30:
                constant[key] = column[0]
            continue
        if len(distinct) == n and n >= MIN_EXPERIMENT_RUNS and all(isinstance(v, str) for v in column):
            notes.append(f"{key}: a different text on every run (a name, not a setting); left out")
            continue
        folder_only = sources[key] == {"folder name"}
        if folder_only and kept and _partition(list(zip(*(columns[k] for k in kept), strict=True))) == \
                _partition(column) and len(kept) > 1:
            notes.append(f"{key} (in the run names) numbers the configurations of the logged settings; not a setting")
            continue
        partition = _partition(column)
        same = next((k for k in kept if _partition(columns[k]) == partition
                     and ([_fmt(v) for v in columns[k]] == [_fmt(v) for v in column] or folder_only)), None)
        if same is not None:  # one setting under two names (logged and in the folder name, say)
            aliases[same].append(key)
            sources[same] |= sources[key]
            continue
        confounded = next((k for k in kept if _partition(columns[k]) == partition), None)
        if confounded is not None and len(distinct) <= 6:
            notes.append(f"{key} changes together with {confounded} on every run: their effects cannot be told apart")
        kept.append(key)
        columns[key] = column
    if sparse:
        notes.append(f"{len(sparse)} setting(s) known for fewer than half of the runs, left out: "
                     + ", ".join(sparse[:8]) + (" …" if len(sparse) > 8 else ""))
    return kept, columns, sources, aliases, {s: values[s] for s in seeds}, constant, notes


def _numeric(column: Sequence[HparamValue]) -> bool:
    return all(isinstance(v, float) for v in column)


def _sort_values(column: Sequence[HparamValue]) -> list[HparamValue]:
    distinct = {_fmt(v): v for v in column}
    return sorted(distinct.values(), key=lambda v: (0, v, "") if isinstance(v, float) else (1, 0.0, str(v)))


# --------------------------------------------------------------------------- numbers of each run


def _final_and_best(run: SweepRun, higher: bool) -> tuple[float, float]:
    values = np.asarray(run.values, dtype=np.float64)
    finite = np.isfinite(values)
    if not finite.any():
        return math.nan, math.nan
    last = float(values[-1]) if len(values) else math.nan  # a run that ends non-finite ends non-finite
    best = float(values[finite].max() if higher else values[finite].min())
    return last, best


def _band(runs: Sequence[SweepRun]) -> Band | None:
    curves = []
    for run in runs:
        steps = np.asarray(run.steps, dtype=np.float64)
        values = np.asarray(run.values, dtype=np.float64)
        keep = np.isfinite(values)
        if keep.sum() >= 1:
            curves.append((steps[keep], values[keep], float(steps[-1])))
    if not curves:
        return None
    every = np.unique(np.concatenate([c[0] for c in curves]))
    grid = every if len(every) <= BAND_POINTS else np.linspace(every[0], every[-1], BAND_POINTS)
    stack = np.full((len(curves), len(grid)), np.nan)
    for i, (steps, values, end) in enumerate(curves):
        inside = (grid >= steps[0]) & (grid <= min(steps[-1], end))
        stack[i, inside] = np.interp(grid[inside], steps, values)
    covered = np.isfinite(stack).sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # steps no seed covers: nan
        median, low, high = np.nanmedian(stack, axis=0), np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)
    return Band(grid, median, low, high, covered)


def _std(values: Sequence[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def _welch(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's t-test; None with fewer than two values on a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = float(np.var(a, ddof=1)), float(np.var(b, ddof=1))
    ma, mb = float(np.mean(a)), float(np.mean(b))
    se2 = va / len(a) + vb / len(b)
    if se2 <= 1e-24 * max(1.0, ma * ma, mb * mb):  # no spread on either side
        return 0.0 if ma != mb else 1.0
    from scipy.special import stdtr

    df = se2**2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    t = abs(ma - mb) / math.sqrt(se2)
    p = float(2 * stdtr(df, -t))
    return p if math.isfinite(p) else 1.0


# --------------------------------------------------------------------------- the analysis


def _label(config: Mapping[str, HparamValue]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in config.items()) or "(all runs)"


def _levels(column: Sequence[HparamValue], numeric: bool, most: int = 10) -> tuple[list[str], list[int]]:
    """Level names and each run's level; many numeric values fall into quantile bins."""
    if numeric and len({_fmt(v) for v in column}) > most:
        x = np.asarray(column, dtype=np.float64)
        log = bool((x > 0).all())
        scaled = np.log10(x) if log else x
        edges = np.unique(np.quantile(scaled, np.linspace(0, 1, 7)))
        index = np.clip(np.searchsorted(edges, scaled, side="right") - 1, 0, len(edges) - 2)
        shown = (10 ** edges) if log else edges
        return [f"{shown[i]:.3g}–{shown[i + 1]:.3g}" for i in range(len(edges) - 1)], index.tolist()
    order = _sort_values(column)
    names = [_fmt(v) for v in order]
    position = {name: i for i, name in enumerate(names)}
    return names, [position[_fmt(v)] for v in column]


def _heatmap(keys: Sequence[str], columns: Mapping[str, list[HparamValue]], target: np.ndarray) -> Heatmap | None:
    if len(keys) < 2:
        return None
    x_key, y_key = keys[0], keys[1]
    x_names, x_of = _levels(columns[x_key], _numeric(columns[x_key]))
    y_names, y_of = _levels(columns[y_key], _numeric(columns[y_key]))
    sums = np.zeros((len(y_names), len(x_names)))
    counts = np.zeros((len(y_names), len(x_names)), dtype=np.int64)
    for xi, yi, value in zip(x_of, y_of, target, strict=True):
        sums[yi, xi] += value
        counts[yi, xi] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return Heatmap(x_key, y_key, tuple(x_names), tuple(y_names),
                   tuple(tuple(float(v) for v in row) for row in means),
                   tuple(tuple(int(c) for c in row) for row in counts))


def _rules(keys: Sequence[str], columns: Mapping[str, list[HparamValue]], bad: Mapping[str, np.ndarray]
           ) -> list[InstabilityRule]:
    """For each setting and outcome, the widest range of it where every run (at least two) went wrong."""
    rules = []
    for outcome, flags in bad.items():
        if not flags.any() or flags.all():
            continue
        for key in keys:
            column = columns[key]
            candidates: list[tuple[int, str, HparamValue, np.ndarray]] = []
            if _numeric(column):
                x = np.asarray(column, dtype=np.float64)
                for op in (">=", "<="):
                    for t in np.unique(x):
                        inside = x >= t if op == ">=" else x <= t
                        if inside.sum() >= 2 and flags[inside].all() and not inside.all():
                            candidates.append((int(inside.sum()), op, float(t), inside))
            else:
                text = np.asarray([_fmt(v) for v in column])
                for level in np.unique(text):
                    inside = text == level
                    if inside.sum() >= 2 and flags[inside].all() and not inside.all():
                        candidates.append((int(inside.sum()), "==", str(level), inside))
            if not candidates:
                continue
            size, op, threshold, inside = max(candidates, key=lambda c: c[0])
            outside = ~inside
            if flags[outside].mean() >= 0.5:  # most runs elsewhere failed too: the setting does not explain it
                continue
            rules.append(InstabilityRule(key, outcome, op, threshold, size, int(flags[outside].sum()),
                                         int(outside.sum())))
    # "unstable" repeats a "diverged" rule when the same runs are meant
    seen = {(r.key, r.op, _fmt(r.threshold)) for r in rules if r.outcome == "diverged"}
    return [r for r in rules if r.outcome == "diverged" or (r.key, r.op, _fmt(r.threshold)) not in seen]


def _experiment(name: str, runs: Sequence[SweepRun], metric: str, higher: bool, target_kind: str,
                with_bands: bool, importance_of: Callable[..., tuple[Importance, ...]] = hparam_importance
                ) -> Experiment | str:
    keys, columns, sources, aliases, seed_values, constant, notes = _varying(runs)
    seeds = list(seed_values)
    if not keys:
        return f"{name}: {len(runs)} runs, but no setting differs between them (seeds apart)"
    names = [r.name for r in runs]
    finals, bests = zip(*(_final_and_best(r, higher) for r in runs), strict=True)
    scored = np.asarray(finals if target_kind == "final" else bests, dtype=np.float64)
    finite = np.isfinite(scored)
    if not finite.any():
        return f"{name}: no run has a finite {metric}"
    worst = float(scored[finite].min() if higher else scored[finite].max())
    if not finite.all():
        notes.append(f"{int((~finite).sum())} run(s) without a finite {target_kind} {metric} scored as the worst "
                     f"value seen ({worst:.4g})")
    scored = np.where(finite, scored, worst)
    best_values = np.asarray([b if math.isfinite(b) else worst for b in bests])
    labels = [r.label for r in runs]
    diverged = np.asarray([lab == "diverged" or not math.isfinite(f) for lab, f in zip(labels, finals, strict=True)])
    unstable = diverged | np.asarray([lab == "unstable" for lab in labels])
    overfit = np.asarray([r.overfit or r.label == "overfitting" for r in runs])

    numeric = [_numeric(columns[k]) for k in keys]
    features = np.empty((len(runs), len(keys)))
    for j, key in enumerate(keys):
        if numeric[j]:
            features[:, j] = np.asarray(columns[key], dtype=np.float64)
        else:  # categories coded in the order of their mean metric: splits then separate good from bad
            text = [_fmt(v) for v in columns[key]]
            means = {level: scored[[t == level for t in text]].mean() for level in set(text)}
            order = {level: i for i, level in enumerate(sorted(means, key=lambda lv: (means[lv], lv)))}
            features[:, j] = [order[t] for t in text]
    config_of = {c: i for i, c in enumerate(dict.fromkeys(tuple(_fmt(columns[k][i]) for k in keys)
                                                       for i in range(len(runs))))}
    groups_of = np.asarray([config_of[tuple(_fmt(columns[k][i]) for k in keys)] for i in range(len(runs))])
    importance = importance_of(keys, features, scored, numeric, groups_of)
    ranked = [imp.key for imp in importance]
    keys = ranked or keys  # configurations are written most important setting first

    # groups: runs equal in every kept setting
    by_config: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i in range(len(runs)):
        by_config[tuple(_fmt(columns[k][i]) for k in keys)].append(i)
    groups = []
    for members in by_config.values():
        config = {k: columns[k][members[0]] for k in keys}
        member_runs = [runs[i] for i in members]
        seed_of = [", ".join(_fmt(seed_values[s][runs[i].name]) for s in seeds if runs[i].name in seed_values[s])
                   or runs[i].name for i in members]
        values = scored[members]
        groups.append(ConfigGroup(
            label=_label(config), config=config, runs=tuple(names[i] for i in members), seeds=tuple(seed_of),
            finals=tuple(float(v) for v in values), final_mean=float(values.mean()),
            final_median=float(np.median(values)), final_std=_std(values),
            best_mean=float(best_values[members].mean()), best_std=_std(best_values[members]),
            diverged=float(diverged[members].mean()), unstable=float(unstable[members].mean()),
            overfit=float(overfit[members].mean()), band=_band(member_runs) if with_bands else None,
        ))
    groups.sort(key=lambda g: (-g.final_mean if higher else g.final_mean, g.label))

    cautions = list(notes)
    if len(runs) < MIN_RUNS or len(groups) < MIN_CONFIGS:
        cautions.append(f"only {len(runs)} runs in {len(groups)} configurations: the importance ranking is a rough "
                        f"guide (at least {MIN_RUNS} runs in {MIN_CONFIGS} configurations make it steadier)")
    if importance and all(i.permutation <= 0 for i in importance):
        cautions.append("shuffling no setting made predictions on held-out configurations worse: the settings do "
                        "not predict the metric beyond seed noise here, and the ranking falls back to impurity")
    elif len(importance) >= 2:
        by_forest = max(importance, key=lambda i: i.forest).key
        by_perm = max(importance, key=lambda i: i.permutation).key
        if by_forest != by_perm:
            cautions.append(f"impurity ranks {by_forest} first, held-out permutation {by_perm}: impurity favours "
                            "settings with many values; the ranking follows the permutation")
    if all(len(g.runs) == 1 for g in groups):
        cautions.append("one run per configuration: no seed noise to compare differences against")

    best = _best(groups, keys, columns, scored, higher)
    evidence = {"runs": len(runs), "configurations": len(groups), "worst_scored": worst,
                "seed_keys": list(seeds), "aliases": {k: v for k, v in aliases.items() if v}}
    return Experiment(
        name=name, runs=tuple(names), tags=tuple(sorted(runs[0].tags)), metric=metric, higher_is_better=higher,
        target=target_kind, seed_keys=tuple(seeds),
        hparams=tuple(HparamInfo(k, "numeric" if _numeric(columns[k]) else "categorical",
                                 tuple(_sort_values(columns[k])[:50]), len({_fmt(v) for v in columns[k]}),
                                 tuple(sorted(sources[k])), tuple(aliases.get(k, ()))) for k in keys),
        constant=constant, groups=tuple(groups), importance=importance,
        heatmap=_heatmap(ranked, columns, scored), best=best,
        instability=tuple(_rules(keys, columns, {"diverged": diverged, "unstable": unstable})),
        cautions=tuple(cautions), evidence=evidence,
    )


def _best(groups: Sequence[ConfigGroup], keys: Sequence[str], columns: Mapping[str, list[HparamValue]],
          scored: np.ndarray, higher: bool) -> BestConfig | None:
    if not groups:
        return None
    top = groups[0]
    runner = groups[1] if len(groups) > 1 else None
    p = _welch(top.finals, runner.finals) if runner is not None else None
    beyond = None
    if p is not None and runner is not None:
        beyond = bool(p < ALPHA and runner.final_mean != top.final_mean)
    within = []
    for g in groups[1:]:
        q = _welch(top.finals, g.finals)
        spread = max(top.final_std, g.final_std)
        if (q is not None and q >= ALPHA) or (q is None and abs(g.final_mean - top.final_mean) <= spread):
            within.append(g.label)
    marginal: dict[str, HparamValue] = {}
    for key in keys:
        text = [_fmt(v) for v in columns[key]]
        means = {level: float(scored[[t == level for t in text]].mean()) for level in set(text)}
        pick = max(means, key=lambda lv: means[lv]) if higher else min(means, key=lambda lv: means[lv])
        marginal[key] = next(v for v in columns[key] if _fmt(v) == pick)
    return BestConfig(top.label, dict(top.config), top.final_mean, top.final_std, len(top.runs),
                      runner.label if runner else None, runner.final_mean if runner else None,
                      runner.final_std if runner else None, p, beyond, tuple(within), marginal)


def _experiment_name(runs: Sequence[SweepRun], index: int, name: str | None) -> str:
    """The folder the runs share, else ``name`` (numbered when there are several experiments)."""
    names = [r.name for r in runs]
    prefix = names[0]
    for other in names[1:]:
        while not other.startswith(prefix):
            prefix = prefix[:-1]
    folder = prefix.rsplit("/", 1)[0].strip("/ ") if "/" in prefix else ""
    if folder and len(runs) > 1:
        return folder
    if len(runs) == 1:
        return names[0]
    return f"{name or 'experiment'}{f' {index}' if index > 1 else ''}"


def analyse_sweep(
    runs: Sequence[SweepRun],
    *,
    metric: str | None = None,
    higher: bool | None = None,
    target: str = "final",
    bands: bool = True,
    name: str | None = None,
    importance: Callable[..., tuple[Importance, ...]] = hparam_importance,
) -> SweepResult:
    """Group ``runs`` into experiments (same tag set) and analyse each (see the module doc).

    ``metric`` is named in each run's ``metric_tag`` already (the validation loss role unless the caller chose a
    tag); ``higher`` overrides the direction inferred from its name; ``target`` is ``"final"`` (the last value)
    or ``"best"`` (the best value each run reached). ``bands=False`` skips the curves (faster, for numbers only).
    ``name`` names an experiment whose runs share no folder (the input's name, say). ``importance``: what
    ranks the settings (:func:`~tanalyze.analysis.importance.hparam_importance`, or one that remembers its answers).
    """
    if target not in ("final", "best"):
        raise ValueError(f"target must be 'final' or 'best', got {target!r}")
    by_tags: dict[frozenset[str], list[SweepRun]] = defaultdict(list)
    skipped = []
    without = [r.name for r in runs if r.metric_tag is None]
    if without:
        shown = ", ".join(without[:5]) + (" …" if len(without) > 5 else "")
        skipped.append(f"{len(without)} run(s) without the metric{f' {metric}' if metric else ''}: {shown}")
    for run in runs:
        if run.metric_tag is not None:
            by_tags[run.tags].append(run)
    experiments = []
    small: list[str] = []
    for index, members in enumerate(sorted(by_tags.values(), key=lambda m: (-len(m), m[0].name)), start=1):
        title = _experiment_name(members, index, name)
        if len(members) < MIN_EXPERIMENT_RUNS:
            small.append(f"{title} ({len(members)})")
            continue
        tags = {r.metric_tag for r in members}
        tag = metric or (sorted(tags)[0] if tags else "")
        direction = higher if higher is not None else higher_is_better(tag)
        result = _experiment(title, members, tag, direction, target, bands, importance)
        if isinstance(result, str):
            skipped.append(result)
        else:
            experiments.append(result)
    if small:
        skipped.append(f"{len(small)} group(s) of fewer than {MIN_EXPERIMENT_RUNS} runs logging the same tags: "
                       + ", ".join(small[:6]) + (" …" if len(small) > 6 else ""))
    return SweepResult(tuple(experiments), tuple(skipped))


#: Configurations whose band goes into the JSON (the best ones; the others' bands are null), to keep it small.
JSON_BANDS = 30


def experiment_dict(experiment: Experiment, *, bands: int = JSON_BANDS) -> dict[str, Any]:
    """An experiment as the report's JSON ``experiments[]`` item: the best ``bands`` configurations with their band
    as lists, the others with ``band: null``."""
    out = experiment.to_dict()
    for group in out["groups"][bands:]:
        group["band"] = None
    return to_jsonable(out)
