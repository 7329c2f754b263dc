"""Early-stopping what-if: where common stopping rules would have stopped this run, and what it would have cost.

Rules replayed over the logged validation curve, evaluation by evaluation:

``hf_patience`` — Hugging Face ``EarlyStoppingCallback(early_stopping_patience, early_stopping_threshold)``
    (``transformers/trainer_callback.py``): at each evaluation the counter resets when
    ``metric < best`` and ``|metric - best| > threshold``, else it grows by one; training
    stops when ``counter >= patience``. ``best`` is ``state.best_metric``, which the
    Trainer updates after the callback on *any* strict improvement (no threshold), so
    several small improvements still run the counter up. A NaN never improves.
``lightning_patience`` — PyTorch Lightning ``EarlyStopping(patience, min_delta, mode="min")``:
    improvement means ``current < best - min_delta`` (then ``best = current``,
    ``wait = 0``), else ``wait += 1`` and training stops when ``wait >= patience``;
    ``check_finite=True`` stops at the first non-finite value. ``best`` starts at +inf.
``keras_patience`` — Keras ``EarlyStopping(monitor="val_loss", patience, min_delta)``: Lightning's rule,
    but a non-finite value is no improvement rather than a stop.
``prechelt_gl`` — GL_α: stop when ``GL(t) = 100 · (E_va(t) / min_{t'≤t} E_va(t') − 1) > α``.
``prechelt_pq`` — PQ_α: stop when ``GL(t) / P_k(t) > α`` with training progress
    ``P_k(t) = 1000 · (Σ strip / (k · min strip) − 1)`` over a strip of ``k`` training values.
``prechelt_up`` — UP_s: stop when the validation loss rose at ``s`` successive evaluations.

Prechelt's criteria come from L. Prechelt, "Early Stopping — But When?" (Neural
Networks: Tricks of the Trade, 1998), where a strip is ``k = 5`` epochs ending at
an evaluation. Here a strip is the evaluation interval: the training points logged
since the previous evaluation, cut into ``k`` consecutive groups whose medians are
the strip's ``k`` values (so per-batch noise does not pass for progress); when an
interval holds fewer than ``k`` points, the last ``k`` training points up to the
evaluation are used, which is Prechelt's definition for per-epoch logging.

The best checkpoint at a stop is the lowest validation loss seen up to it (what
``load_best_model_at_end`` or a ``ModelCheckpoint(monitor=…)`` keeps). When the trainer chose its best model by
another metric (``metric_for_best_model="wer"``, a macro-F1 with ``greater_is_better``), the rules are replayed on
that metric in its direction (``mode="max"``: higher is better, as the patience rules' ``mode="max"``); Prechelt's
criteria, ratios of a loss, are then not replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.curves import Curve, segment_medians

__all__ = ["StopSimulation", "EarlyStoppingResult", "simulate_early_stopping", "progress_strips"]


#: How each rule is called in messages.
RULE_NAMES = {
    "hf_patience": "transformers EarlyStoppingCallback",
    "lightning_patience": "Lightning EarlyStopping",
    "keras_patience": "keras.callbacks.EarlyStopping",
    "prechelt_gl": "Prechelt GL",
    "prechelt_pq": "Prechelt PQ",
    "prechelt_up": "Prechelt UP",
}


@dataclass(frozen=True)
class StopSimulation(ResultMixin):
    """One stopping rule replayed over the run."""

    rule: str
    params: dict[str, Any]
    stopped: bool
    stop_step: int | None
    stop_evaluation: int | None  # 1-based: how many evaluations had been seen
    best_step: int | None  # best checkpoint available at the stop (or at the end)
    best_value: float | None
    given_up: float | None  # best_value - global best (>= 0): validation loss lost by stopping
    gained_vs_final: float | None  # final value - best_value: what keeping that checkpoint gains over the last one
    compute_saved: float  # share of the run's steps not trained
    note: str = ""


@dataclass(frozen=True)
class EarlyStoppingResult(ResultMixin):
    """Every rule's stop, against the run's global best and final validation loss."""

    val_tag: str
    train_tag: str | None
    evaluations: int
    # (the values below are the metric's own; "max": higher is better)
    first_step: int | None
    last_step: int | None
    global_best_step: int | None
    global_best_value: float | None
    final_value: float | None
    rules: tuple[StopSimulation, ...]
    headline: str | None  # the rule the finding talks about
    stop_step: int | None = None  # the headline rule's stop (None: it would not have stopped)
    best_step: int | None = None  # the checkpoint it would keep
    compute_saved: float = 0.0
    findings: tuple[Finding, ...] = field(default=())
    mode: str = "min"

    def rule(self, name: str) -> StopSimulation:
        for r in self.rules:
            if r.rule == name:
                return r
        raise KeyError(f"no rule {name!r}; rules: {', '.join(r.rule for r in self.rules)}")


def _hf(values: np.ndarray, patience: int, threshold: float) -> int | None:
    best = None
    counter = 0
    for i, v in enumerate(values):
        if best is None or (v < best and abs(v - best) > threshold):
            counter = 0
        else:
            counter += 1
        if best is None or v < best:  # the Trainer's best_metric: any strict improvement
            best = v
        if counter >= patience:
            return i
    return None


def _lightning(values: np.ndarray, patience: int, min_delta: float, check_finite: bool) -> int | None:
    best = np.inf
    wait = 0
    for i, v in enumerate(values):
        if check_finite and not np.isfinite(v):
            return i
        if v < best - min_delta:
            best = v
            wait = 0
        else:
            wait += 1
            if wait >= patience:
                return i
    return None


def _generalisation_loss(values: np.ndarray) -> np.ndarray:
    running_min = np.fmin.accumulate(values)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (values / running_min - 1.0)


def progress_strips(train: Curve, eval_steps: np.ndarray, k: int) -> np.ndarray:
    """Prechelt's training progress ``P_k`` at each evaluation (NaN without enough training points)."""
    t = train.collapse_steps().finite_part()
    n_eval = len(eval_steps)
    if len(t) == 0 or n_eval == 0:
        return np.full(n_eval, np.nan)
    hi = np.searchsorted(t.steps, eval_steps, side="right")
    lo = np.concatenate([[0], hi[:-1]])
    short = (hi - lo) < k
    lo = np.where(short, np.maximum(0, hi - k), lo)  # Prechelt's k points before the evaluation
    # k groups per strip: for a short strip each group is one point.
    parts = np.arange(k + 1)
    edges = lo[:, None] + ((hi - lo)[:, None] * parts[None, :]) // k
    medians = segment_medians(t.values, edges[:, :-1].ravel(), edges[:, 1:].ravel()).reshape(n_eval, k)
    present = ~np.isnan(medians)
    low = np.where(present, medians, np.inf).min(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(present, medians, 0.0).sum(axis=1) / present.sum(axis=1)
        p = 1000.0 * (mean / low - 1.0)
    enough = (hi - lo) >= 2
    return np.where(enough & (low > 0) & np.isfinite(low), p, np.nan)


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def simulate_early_stopping(
    val: Curve | None,
    train: Curve | None = None,
    *,
    patience: int = 3,
    threshold: float = 0.0,
    min_delta: float = 0.0,
    gl_alpha: float = 5.0,
    pq_alpha: float = 1.0,
    pq_strip: int = 5,
    up_strips: int = 3,
    headline: str = "lightning_patience",
    min_saving: float = 0.1,
    max_given_up: float = 0.01,
    mode: str = "min",
) -> EarlyStoppingResult:
    """Replay stopping rules over ``val`` (see the module doc for their exact semantics).

    Args:
        patience, threshold: the Hugging Face rule; patience, min_delta: the Lightning rule.
        gl_alpha, pq_alpha, pq_strip, up_strips: Prechelt's GL_α, PQ_α (strip length k), UP_s.
        headline: the rule the finding reports.
        min_saving: report a finding when the headline rule saves at least this share of steps …
        max_given_up: … while giving up at most this relative validation loss against the global best.
        mode: "min" (a loss: lower is better) or "max" (an accuracy, an F1: higher is better).
    """
    if mode not in ("min", "max"):
        raise ValueError(f"mode must be 'min' or 'max', not {mode!r}")
    if val is None or len(val) == 0:
        return EarlyStoppingResult("" if val is None else val.tag, train.tag if train is not None else None,
                                   0, None, None, None, None, None, (), None, mode=mode)
    v = val.collapse_steps()
    sign = -1.0 if mode == "max" else 1.0  # the rules below minimise: a metric to maximise is negated
    steps, values = v.steps, sign * v.values
    n = len(values)
    finite = np.isfinite(values)
    first_step = int(min(steps[0], train.steps[0])) if train is not None and len(train) else int(steps[0])
    last_step = int(max(steps[-1], train.steps[-1])) if train is not None and len(train) else int(steps[-1])
    span = max(last_step - first_step, 1)
    if finite.any():
        g = int(np.nanargmin(np.where(finite, values, np.nan)))
        global_best_step, global_best = int(steps[g]), float(values[g])
    else:
        global_best_step, global_best = None, None
    final = float(values[-1])

    def own(value: float | None) -> float | None:
        """A value in the metric's own sign."""
        return None if value is None else sign * value

    def simulate(rule: str, params: dict[str, Any], stop: int | None, note: str = "") -> StopSimulation:
        upto = n if stop is None else stop + 1
        seen = np.where(finite[:upto], values[:upto], np.nan)
        if np.isfinite(seen).any():
            b = int(np.nanargmin(seen))
            best_step, best_value = int(steps[b]), float(values[b])
        else:
            best_step = best_value = None
        stop_step = int(steps[stop]) if stop is not None else None
        saved = 0.0 if stop_step is None else float(np.clip(1 - (stop_step - first_step) / span, 0, 1))
        given_up = best_value - global_best if best_value is not None and global_best is not None else None
        gained = final - best_value if best_value is not None and np.isfinite(final) else None
        return StopSimulation(rule, params, stop is not None, stop_step, None if stop is None else stop + 1,
                              best_step, own(best_value), given_up, gained, saved, note)

    rules = [
        simulate("hf_patience", {"early_stopping_patience": patience, "early_stopping_threshold": threshold},
                 _hf(values, patience, threshold)),
        simulate("lightning_patience", {"patience": patience, "min_delta": min_delta, "mode": mode},
                 _lightning(values, patience, min_delta, True)),
        simulate("keras_patience", {"monitor": "val_loss" if mode == "min" else v.tag, "patience": patience,
                                    "min_delta": min_delta, **({"mode": "max"} if mode == "max" else {})},
                 _lightning(values, patience, min_delta, False)),
    ]
    positive = bool(finite.any() and (values[finite] > 0).all())
    if mode == "max":
        note = "Prechelt's criteria are ratios of a loss"
        rules.append(simulate("prechelt_gl", {"alpha": gl_alpha}, None, note))
        rules.append(simulate("prechelt_pq", {"alpha": pq_alpha, "k": pq_strip}, None, note))
    elif positive:
        gl = _generalisation_loss(np.where(finite, values, np.nan))
        rules.append(simulate("prechelt_gl", {"alpha": gl_alpha}, _first(gl > gl_alpha)))
        if train is not None and len(train):
            p = progress_strips(train, steps, pq_strip)
            with np.errstate(divide="ignore", invalid="ignore"):
                pq = np.where(p > 0, gl / p, np.where(gl > 0, np.inf, 0.0))
            rules.append(simulate("prechelt_pq", {"alpha": pq_alpha, "k": pq_strip},
                                  _first(np.isfinite(p) & (pq > pq_alpha))))
        else:
            rules.append(simulate("prechelt_pq", {"alpha": pq_alpha, "k": pq_strip}, None,
                                  "needs a training loss"))
    else:
        note = "needs a positive loss (GL is a ratio)"
        rules.append(simulate("prechelt_gl", {"alpha": gl_alpha}, None, note))
        rules.append(simulate("prechelt_pq", {"alpha": pq_alpha, "k": pq_strip}, None, note))
    rises = np.concatenate([[False], values[1:] > values[:-1]])
    run = np.zeros(n, dtype=np.int64)
    count = 0
    for i, up in enumerate(rises):  # one iteration per evaluation
        count = count + 1 if up else 0
        run[i] = count
    rules.append(simulate("prechelt_up", {"s": up_strips}, _first(run >= up_strips)))

    findings: tuple[Finding, ...] = ()
    chosen = next((r for r in rules if r.rule == headline), None)
    if (chosen is not None and chosen.stopped and chosen.compute_saved >= min_saving
            and chosen.given_up is not None and global_best is not None
            and chosen.given_up <= max_given_up * abs(global_best)):
        best = chosen.best_value
        worse = ""
        if best and best > 0 and np.isfinite(final):
            change = 100 * sign * (sign * final / best - 1)  # (> 0: the last checkpoint is worse)
            worse = (f"; the last checkpoint ({sign * final:.4g}) is {abs(change):.1f}% "
                     f"{'worse' if change >= 0 else 'better'}")
        params = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in chosen.params.items())
        message = (
            f"with {RULE_NAMES[chosen.rule]}({params}) training would have stopped at step "
            f"{chosen.stop_step} (evaluation {chosen.stop_evaluation} of {n}), keeping the checkpoint of step "
            f"{chosen.best_step} ({v.tag} {best:.4g}; the best of the whole run is {sign * global_best:.4g} at "
            f"step {global_best_step}) and saving {100 * chosen.compute_saved:.0f}% of the steps{worse}"
        )
        findings = (Finding("early_stopping", Severity.INFO, message, recommend("early_stopping"),
                            step=chosen.stop_step, evidence={"rule": chosen.rule, "best_step": chosen.best_step}),)
    return EarlyStoppingResult(
        val_tag=v.tag, train_tag=train.tag if train is not None else None, evaluations=n, first_step=first_step,
        last_step=last_step, global_best_step=global_best_step, global_best_value=own(global_best),
        final_value=own(final),
        rules=tuple(rules), headline=headline if chosen is not None else None,
        stop_step=chosen.stop_step if chosen is not None else None,
        best_step=chosen.best_step if chosen is not None else None,
        compute_saved=chosen.compute_saved if chosen is not None else 0.0, findings=findings, mode=mode,
    )
