"""Checkpoints on disk against the best evaluation, and the top-k what-if.

Given the checkpoints a run kept (:class:`~tanalyze.checkpoint_files.CheckpointScan`: steps, and a metric where
the name or the trainer state gives one) and the monitored metric's evaluation curve with its direction:

* **the best evaluation**: the step and value of the best finite evaluation (the first, on ties);
* **each checkpoint's value**: a checkpoint at step ``s`` holds the weights of step ``s``; its value is the
  evaluation at ``s``, else the latest evaluation at or before ``s`` (Lightning logs a validation at
  ``global_step - 1`` and names the checkpoint ``step=global_step``; HF evaluates and saves at the same step).
  ``last.ckpt`` holds the weights at the run's last step. A checkpoint named by epoch only is matched when the
  evaluations are logged per epoch (every evaluation step ≤ the largest epoch + 1, as MMEngine's validation rows);
  a checkpoint with no evaluation at or before it takes the value in its name, if any;
* **the gap**: how much worse the best kept checkpoint is than the best evaluation. It is *material* when it
  exceeds twice the curve's point-to-point noise (:func:`~tanalyze.curves.noise_sigma`, blind to the trend), or,
  with fewer than 4 evaluations, 5 % of the curve's range;
* **the top-k what-if**: a checkpoint manager monitoring the metric (``ModelCheckpoint(save_top_k=k)``,
  ``save_total_limit`` with ``load_best_model_at_end``) saving at every evaluation would keep the ``k`` best
  evaluated steps; compared with the evaluation steps of the checkpoints on disk.

Findings: ``best_checkpoint_kept`` (info) when the best evaluation's weights are on disk;
``best_checkpoint_close`` (info) when they are not but the best kept one is within the noise;
``best_checkpoint_missing`` (warning) when they are not and the kept ones are materially worse.
No finding while the best evaluation is the newest one and no checkpoint is newer (a live run's save may be
on its way), nor when a step-less best (``best.pt``, ``model_best.pth``: the trainer's own best) is on disk: a
note says why. No checkpoints and no trainer state naming a best → no result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.results import Finding, ResultMixin, Severity
from tanalyze.checkpoint_files import CheckpointScan, SavedCheckpoint
from tanalyze.curves import Curve, noise_sigma

__all__ = ["CheckpointValue", "CheckpointResult", "analyze_checkpoints", "metric_direction", "monitored_metric",
           "mode_from_name"]

_LOWER = re.compile(r"loss|err|wer|cer|perplex|ppl|mse|mae|rmse|nll|bpb|bpc|fid|distance", re.IGNORECASE)
_HIGHER = re.compile(r"acc|f1|map|auc|bleu|rouge|precision|recall|iou|dice|r2|score|reward|top\d|psnr|ssim",
                     re.IGNORECASE)


@dataclass(frozen=True)
class CheckpointValue(ResultMixin):
    """One checkpoint on disk with the metric its weights scored."""

    name: str
    step: int | None  # the step of its weights (None: not known)
    value: float | None
    eval_step: int | None  # the evaluation its value comes from
    source: str  # how the value was found


@dataclass(frozen=True)
class CheckpointResult(ResultMixin):
    """The best evaluation, the best checkpoint on disk, the gap and the top-k what-if (see the module doc)."""

    metric: str | None
    mode: str  # "min" or "max"
    metric_source: str
    evaluations: int
    best_step: int | None
    best_value: float | None
    checkpoints: tuple[CheckpointValue, ...]
    best_kept: CheckpointValue | None
    best_on_disk: bool | None  # None: cannot tell (no evaluation, or no checkpoint matched to one)
    gap: float | None  # how much worse the best kept is (>= 0, in the metric's units)
    gap_relative: float | None  # gap / |best value|
    noise: float | None
    margin: float | None
    material: bool
    top_k: int
    candidates: str
    top_k_steps: tuple[int, ...]  # evaluation steps a top-k manager would keep, best first
    kept_eval_steps: tuple[int, ...]  # evaluation steps of the checkpoints on disk
    would_also_keep: tuple[int, ...]  # top-k steps with no checkpoint on disk
    kept_outside_top_k: tuple[int, ...]
    trainer_best_step: int | None
    trainer_best_metric: float | None
    folder: str
    notes: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def summary(self) -> str:
        """One line for a terminal (values from logs not escaped here: the caller escapes): what is on disk, the
        best evaluation, whether its weights were kept, and the top-k what-if."""
        parts = [f"{len(self.checkpoints)} on disk"]
        tag = self.metric or "metric"
        if self.best_step is not None and self.best_value is not None:
            parts.append(f"best evaluation step {self.best_step:,} ({tag} {_fmt(self.best_value)})")
        kept = self.best_kept
        if self.best_on_disk:
            parts.append(f"kept: {kept.name}" if kept is not None else "kept")
        elif self.best_on_disk is False and kept is not None and kept.value is not None:
            worse = f", +{100 * self.gap_relative:.1f}%" if self.gap_relative is not None else ""
            parts.append(f"not kept; best on disk {kept.name} ({_fmt(kept.value)}{worse})")
        if self.top_k_steps:
            parts.append(f"top-{self.top_k} would keep steps " + ", ".join(f"{s:,}" for s in self.top_k_steps))
        if not self.checkpoints and self.notes:
            parts.append(self.notes[0])
        return "; ".join(parts)


def mode_from_name(tag: str) -> str:
    """``"min"`` for a loss, error, perplexity …, ``"max"`` for an accuracy, F1, mAP, BLEU …; ``"min"`` otherwise."""
    return metric_direction(tag) or "min"


def metric_direction(tag: str) -> str | None:
    """``"min"`` for a loss, error, perplexity …, ``"max"`` for an accuracy, F1, mAP, BLEU …; None for a name
    that says neither (by its last part)."""
    last = tag.replace("\\", "/").rsplit("/", 1)[-1]
    if _LOWER.search(last):
        return "min"
    return "max" if _HIGHER.search(last) else None


def _matches(tag: str, name: str) -> bool:
    """Whether a logged tag is the metric ``name`` (``eval_loss`` ~ ``eval/loss`` ~ ``loss`` under ``eval``)."""
    norm = tag.replace("/", "_")
    plain = name.replace("/", "_")
    return norm == plain or norm == f"eval_{plain}" or plain == f"eval_{norm}" or norm.endswith(f"_{plain}") \
        and norm.startswith(("eval", "val", "valid", "test"))


def monitored_metric(curves: Mapping[str, Curve], scan: CheckpointScan,
                     val_tag: str | None) -> tuple[str | None, str, str]:
    """The metric the checkpoints are judged on: ``(tag, "min"|"max", why)``.

    In order: the HF ``metric_for_best_model`` (``greater_is_better``, else HF's default: higher is better
    unless the name ends in ``loss``); the tag whose value at the trainer state's best step is its
    ``best_metric``; the metric in Lightning checkpoint names; the validation-loss role (lower is better)."""
    trainer = scan.trainer
    if trainer is not None and trainer.metric_for_best_model:
        name = trainer.metric_for_best_model
        wanted = name if name.startswith("eval_") else f"eval_{name}"  # HF prefixes eval_ ("loss" is eval_loss)
        exact = [tag for tag in curves if tag.replace("/", "_") == wanted]
        for tag in exact or [tag for tag in curves if _matches(tag, name) and tag.replace("/", "_") != name]:
                greater = trainer.greater_is_better
                if greater is None:
                    greater = not name.endswith("loss")
                return tag, "max" if greater else "min", "metric_for_best_model of the training arguments"
    if trainer is not None and trainer.best_step is not None and trainer.best_metric is not None:
        for tag, curve in curves.items():
            at = curve.values[curve.steps == trainer.best_step]
            if at.size and np.isfinite(at[-1]) and math.isclose(float(at[-1]), trainer.best_metric, rel_tol=1e-6,
                                                                  abs_tol=1e-12):
                finite = curve.values[np.isfinite(curve.values)]
                mode = "min" if trainer.best_metric <= finite.min() else "max" if trainer.best_metric >= finite.max() \
                    else mode_from_name(tag)
                return tag, mode, f"its value at the trainer state's best step ({trainer.best_step:,}) is best_metric"
    if scan.monitor:
        for tag in curves:
            if _matches(tag, scan.monitor):
                return tag, mode_from_name(tag), "the metric in the checkpoint names (ModelCheckpoint monitor)"
    if val_tag is not None and val_tag in curves:
        return val_tag, "min", "the validation loss"
    return None, "min", "no monitored metric among the tags"


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _evaluation(steps: np.ndarray, values: np.ndarray, position: int) -> tuple[float | None, int | None, str]:
    index = int(np.searchsorted(steps, position, side="right")) - 1
    if index < 0:
        return None, None, "no evaluation at or before it"
    step = int(steps[index])
    how = "evaluated at its step" if step == position else f"latest evaluation before it (step {step:,})"
    return float(values[index]), step, how


def _position(checkpoint: SavedCheckpoint, final_step: int | None, by_epoch: bool) -> int | None:
    if checkpoint.step is not None:
        return checkpoint.step
    if checkpoint.kind == "last":
        return final_step
    if checkpoint.epoch is not None and by_epoch:
        return checkpoint.epoch
    return None


def analyze_checkpoints(scan: CheckpointScan, metric: Curve | None, *, mode: str = "min", top_k: int = 3,
                        final_step: int | None = None, metric_source: str = "") -> CheckpointResult | None:
    """Judge the checkpoints of ``scan`` on the evaluation curve ``metric`` (``mode`` ``"min"`` or ``"max"``);
    None when the run kept no checkpoint and wrote no trainer state. ``final_step``: the run's last step
    (what ``last.ckpt`` holds)."""
    if scan.empty:
        return None
    if mode not in ("min", "max"):
        raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    sign = 1.0 if mode == "min" else -1.0
    notes = list(scan.notes)
    steps = np.zeros(0, dtype=np.int64)
    values = np.zeros(0)
    if metric is not None:
        finite = np.isfinite(metric.values)
        steps, values = metric.steps[finite], metric.values[finite]
        if steps.size and np.any(np.diff(steps) == 0):  # one value per step: the last logged
            keep = np.r_[steps[1:] != steps[:-1], True]
            steps, values = steps[keep], values[keep]
    epochs = [c.epoch for c in scan.checkpoints if c.epoch is not None and c.step is None]
    by_epoch = bool(epochs) and steps.size > 0 and int(steps.max()) <= max(epochs) + 1
    if epochs and not by_epoch and steps.size:
        notes.append(f"{len(epochs)} checkpoint(s) named by epoch only: not matched to the evaluations, "
                     "which are logged by step")
    kept: list[CheckpointValue] = []
    for c in scan.checkpoints:
        position = _position(c, final_step, by_epoch)
        value, eval_step, how = (None, None, "its step is not known")
        if position is not None and steps.size:
            value, eval_step, how = _evaluation(steps, values, position)
        if value is None and c.value is not None and metric is not None and c.metric and _matches(metric.tag, c.metric):
            value, how = c.value, "the value in its name"
        kept.append(CheckpointValue(c.name, position, value, eval_step, how))
    best_step = best_value = None
    if steps.size:
        index = int(np.argmin(sign * values))
        best_step, best_value = int(steps[index]), float(values[index])
    valued = [k for k in kept if k.value is not None]
    best_kept = min(valued, key=lambda k: (sign * k.value, -(k.step or 0))) if valued else None  # type: ignore[operator]
    on_disk: bool | None = None
    gap = relative = noise = margin = None
    material = False
    if best_value is not None and best_kept is not None and best_kept.value is not None:
        on_disk = best_kept.eval_step == best_step or sign * best_kept.value <= sign * best_value
        gap = max(0.0, sign * (best_kept.value - best_value))
        relative = gap / abs(best_value) if best_value else None
        sigma = noise_sigma(values)
        noise = sigma if math.isfinite(sigma) else None
        span = float(values.max() - values.min())
        margin = 2.0 * noise if noise is not None and noise > 0 else 0.05 * span
        material = not on_disk and gap > margin
        stepless_best = [c.name for c, k in zip(scan.checkpoints, kept, strict=True)
                         if c.kind == "best" and k.step is None]
        if not on_disk and stepless_best:
            notes.append(f"{stepless_best[0]} is the trainer's own best and its step is not in its name: the best "
                         "evaluation's weights may be there")
            on_disk, material = None, False
        positions = [k.step for k in kept if k.step is not None]
        if on_disk is False and best_step == int(steps[-1]) and positions and max(positions) < best_step:
            # the newest evaluation is the best and no checkpoint is newer: its save may still be being written
            notes.append(f"the best evaluation is the newest (step {best_step:,}) and no checkpoint is newer: "
                         "its checkpoint may not have been written yet")
            on_disk = None
            material = False
    top: tuple[int, ...] = ()
    if steps.size:
        order = np.argsort(sign * values, kind="stable")[:top_k]
        top = tuple(int(s) for s in steps[order])
    kept_steps = tuple(sorted({k.eval_step for k in kept if k.eval_step is not None}))
    trainer = scan.trainer
    if trainer is not None and trainer.best_model_checkpoint and trainer.best_step is not None \
            and not any(c.step == trainer.best_step and c.kind in {"hf", "deepspeed"} for c in scan.checkpoints):
        notes.append(f"the trainer state names {trainer.best_model_checkpoint} as the best model; "
                     "that folder is not on disk")
    if trainer is not None and trainer.best_step is not None and best_step is not None \
            and trainer.best_step != best_step and metric is not None:
        notes.append(f"the trainer state's best step ({trainer.best_step:,}) is not the best evaluation of "
                     f"{metric.tag} (step {best_step:,})")
    result = CheckpointResult(
        metric=metric.tag if metric is not None else None, mode=mode, metric_source=metric_source,
        evaluations=int(steps.size), best_step=best_step, best_value=best_value, checkpoints=tuple(kept),
        best_kept=best_kept, best_on_disk=on_disk, gap=gap, gap_relative=relative, noise=noise, margin=margin,
        material=material, top_k=top_k,
        candidates=f"every evaluated step ({steps.size}), as a manager monitoring {metric.tag if metric else 'the metric'}"
                   " saves at each evaluation",
        top_k_steps=top, kept_eval_steps=kept_steps,
        would_also_keep=tuple(s for s in top if s not in kept_steps),
        kept_outside_top_k=tuple(s for s in kept_steps if s not in top),
        trainer_best_step=trainer.best_step if trainer else None,
        trainer_best_metric=trainer.best_metric if trainer else None,
        folder=scan.folder, notes=tuple(notes), findings=())
    return _with_finding(result)


def _with_finding(r: CheckpointResult) -> CheckpointResult:
    if r.best_on_disk is None or r.best_kept is None or r.best_step is None or r.best_value is None \
            or r.best_kept.value is None:
        return r
    tag = r.metric or "metric"
    evidence = {"metric": r.metric, "mode": r.mode, "best_step": r.best_step, "best_value": r.best_value,
                "best_kept": r.best_kept.name, "best_kept_step": r.best_kept.step, "best_kept_value": r.best_kept.value,
                "gap": r.gap, "gap_relative": r.gap_relative, "noise": r.noise, "margin": r.margin,
                "top_k": r.top_k, "top_k_steps": list(r.top_k_steps), "kept_eval_steps": list(r.kept_eval_steps)}
    what_if = (f"; with top_k={r.top_k} on {tag} a checkpoint manager would keep steps "
               + ", ".join(f"{s:,}" for s in r.top_k_steps))
    if r.best_on_disk:
        message = (f"best evaluation at step {r.best_step:,} ({tag} {_fmt(r.best_value)}) is on disk: "
                   f"{r.best_kept.name}")
        finding = Finding("best_checkpoint_kept", Severity.INFO, message, recommend("best_checkpoint_kept"),
                          step=r.best_step, evidence=evidence)
    else:
        worse = f"+{100 * r.gap_relative:.1f}%" if r.gap_relative is not None else f"+{_fmt(r.gap or 0.0)}"
        where = f"step {r.best_kept.step:,}" if r.best_kept.step is not None else r.best_kept.name
        message = (f"best evaluation at step {r.best_step:,} ({tag} {_fmt(r.best_value)}) but no checkpoint kept "
                   f"there; best on disk is {where} ({_fmt(r.best_kept.value)}, {worse})")
        if r.material:
            finding = Finding("best_checkpoint_missing", Severity.WARNING, message + what_if,
                              recommend("best_checkpoint_missing"), step=r.best_step, evidence=evidence)
        else:
            finding = Finding("best_checkpoint_close", Severity.INFO,
                              message + f", within the curve's noise (margin {_fmt(r.margin or 0.0)})",
                              recommend("best_checkpoint_close"), step=r.best_step, evidence=evidence)
    return replace(r, findings=(finding,))
