"""Synthetic training runs with known answers, for tests, docs and notebooks.

>>> from tanalyze.datasets import make_curve
>>> frame, truth = make_curve("overfitting", n_steps=2000, seed=1)
>>> truth.val_min_window            # evaluations that can be the observed minimum
(..., ...)

Each run has the tags ``train/loss`` (every ``log_every`` steps), ``val/loss``
(every ``eval_every`` steps), ``train/learning_rate`` and ``train/grad_norm``,
and an ``epoch`` column. Noise is multiplicative (log-normal), as minibatch
losses are; the validation loss is averaged over many samples, so it is
quieter. The truth is computed from the noise-free curves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd

from tanalyze.curves import Curve
from tanalyze.schema import concat_frames, empty_histograms, scalar_frame

__all__ = ["KINDS", "CurveTruth", "make_curve", "make_gradual_divergence", "make_logs", "curves_of"]

KINDS = ("normal", "overfitting", "underfitting", "unstable", "diverged")

TRAIN, VAL, LR, GRAD = "train/loss", "val/loss", "train/learning_rate", "train/grad_norm"


@dataclass(frozen=True)
class CurveTruth:
    """What a synthetic run is known to contain (steps are the logged steps)."""

    kind: str
    n_steps: int
    first_step: int
    eval_every: int
    divergence_step: int | None = None  # first non-finite step (or explosion onset when nonfinite=False)
    explosion_onset: int | None = None  # where the loss starts to blow up
    grad_norm_lead: int | None = None  # steps by which the gradient norm blew up first
    val_min_step: int | None = None  # noise-free validation minimum
    #: evaluations whose noise-free val loss is within ``tolerance + 3 · val_noise`` of the minimum:
    #: the ones that can come out lowest once noise is added
    val_min_window: tuple[int, int] | None = None
    spike_steps: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _train_shape(kind: str, t: np.ndarray) -> np.ndarray:
    if kind == "overfitting":
        return 0.02 + 2.28 * np.exp(-t / 0.12)
    if kind == "underfitting":
        return 2.30 - 0.12 * t
    return 0.35 + 1.95 * np.exp(-t / 0.15)


def _val_shape(kind: str, t: np.ndarray) -> np.ndarray:
    if kind == "overfitting":
        return 0.55 + 1.8 * np.exp(-t / 0.1) + 0.9 * np.clip(t - 0.3, 0, None) ** 1.5
    if kind == "underfitting":
        return 2.33 - 0.10 * t
    return 1.06 * _train_shape(kind, t) + 0.02


def make_curve(
    kind: str = "normal",
    *,
    n_steps: int = 1000,
    seed: int = 0,
    noise: float = 0.03,
    val_noise: float | None = None,
    eval_every: int | None = None,
    log_every: int = 1,
    first_step: int = 0,
    spikes: int = 0,
    spike_size: float = 3.0,
    divergence_at: float = 0.6,
    nonfinite: bool = True,
    steps_per_epoch: int | None = None,
    tolerance: float = 0.01,
    run: str = "synthetic",
    output: str = "frame",
) -> tuple[pd.DataFrame | dict[str, Curve], CurveTruth]:
    """One synthetic run of ``kind`` (see :data:`KINDS`) and its known answers.

    Args:
        n_steps: training steps; ``train/loss`` is logged every ``log_every`` steps.
        noise: standard deviation of the log-normal noise on the training loss.
        val_noise: the same for the validation loss (default ``noise / 4``).
        eval_every: validation interval in steps (default ``n_steps // 20``).
        first_step: the first logged step (runs resumed from a checkpoint do not start at 0).
        spikes: how many transient spikes of ``spike_size`` × the loss to plant (``unstable`` plants
            ``max(spikes, n // 50)``).
        divergence_at: fraction of the run where ``diverged`` starts to blow up.
        nonfinite: ``diverged`` ends in inf/NaN (True) or stays exploded at a high finite level.
        steps_per_epoch: adds an ``epoch`` column (default ``n_steps // 10``).
        tolerance: relative width of ``val_min_window`` (widened by three noise standard deviations).
        output: ``"frame"`` (a tidy table) or ``"curves"`` (tag → :class:`Curve`).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    if n_steps < 4:
        raise ValueError(f"n_steps must be at least 4, got {n_steps}")
    if output not in ("frame", "curves"):
        raise ValueError(f"output must be 'frame' or 'curves', got {output!r}")
    rng = np.random.default_rng(seed)
    val_noise = noise / 4 if val_noise is None else val_noise
    eval_every = eval_every or max(1, n_steps // 20)
    steps_per_epoch = steps_per_epoch or max(1, n_steps // 10)
    steps = np.arange(0, n_steps, log_every, dtype=np.int64)
    t = steps / max(n_steps - 1, 1)
    train = _train_shape(kind, t) * np.exp(noise * rng.standard_normal(len(steps)))
    grad = 0.8 * np.exp(0.1 * rng.standard_normal(len(steps)))
    warm = max(1, n_steps // 20)
    lr = np.where(steps < warm, 3e-4 * (steps + 1) / warm, 3e-4 * 0.5 * (1 + np.cos(np.pi * t)))
    truth: dict = {"kind": kind, "n_steps": n_steps, "first_step": first_step, "eval_every": eval_every}

    planted = spikes if kind != "unstable" else max(spikes, len(steps) // 50, 3)
    if kind == "unstable":
        spike_size = max(spike_size, 5.0)
        train = _train_shape(kind, t) * np.exp(max(noise, 0.1) * rng.standard_normal(len(steps)))
    if planted:
        lo, hi = max(2, len(steps) // 10), len(steps) - max(6, len(steps) // 10)
        slots = np.linspace(lo, hi, planted + 2)[1:-1].astype(int)
        jitter = rng.integers(-2, 3, size=planted) if len(steps) > 100 else 0
        where = np.clip(slots + jitter, 1, len(steps) - 6)
        for i in where:
            train[i : i + 3] *= np.array([spike_size, 1 + (spike_size - 1) / 2, 1 + (spike_size - 1) / 6])
        truth["spike_steps"] = tuple(int(steps[i]) + first_step for i in where)

    if kind == "diverged":
        onset = int(divergence_at * len(steps))
        rise = np.arange(len(steps) - onset, dtype=np.float64)
        if nonfinite:
            with np.errstate(over="ignore", invalid="ignore"):
                reach = max(2, min(len(rise) - 2, 40))
                blow = np.exp(74.0 * (rise / reach) ** 2)  # passes 1e31 (then inf) within `reach` points
                train[onset:] = train[onset:] * blow
                train[onset:] = np.where(train[onset:] > 1e30, np.inf, train[onset:])
            first_bad = onset + int(np.flatnonzero(~np.isfinite(train[onset:]))[0])
            train[first_bad + 1 :] = np.nan  # after the overflow the loss is NaN
            truth["divergence_step"] = int(steps[first_bad]) + first_step
        else:
            train[onset:] = 7.5 * np.exp(noise * rng.standard_normal(len(steps) - onset))
            truth["divergence_step"] = int(steps[onset]) + first_step
        truth["explosion_onset"] = int(steps[onset]) + first_step
        lead = min(10, onset - 1)
        with np.errstate(over="ignore"):
            grad[onset - lead :] *= np.exp(0.5 * np.arange(len(steps) - onset + lead))
        grad = np.where(np.isfinite(grad), np.minimum(grad, 1e6), 1e6)
        truth["grad_norm_lead"] = int(steps[onset] - steps[onset - lead])

    val_steps = np.arange(eval_every, n_steps + 1, eval_every, dtype=np.int64)
    val_steps = np.minimum(val_steps, n_steps - 1)
    val_steps = np.unique(val_steps)
    vt = val_steps / max(n_steps - 1, 1)
    clean_val = _val_shape(kind, vt)
    val = clean_val * np.exp(val_noise * rng.standard_normal(len(val_steps)))
    if kind == "unstable":
        val = clean_val * np.exp(0.25 * rng.standard_normal(len(val_steps)))
    if kind == "diverged":
        index = np.searchsorted(steps, val_steps)
        val = np.where(np.isfinite(train[index]), np.maximum(val, train[index] * 1.05), np.nan)
    if kind == "overfitting":
        best = int(np.argmin(clean_val))
        within = np.flatnonzero(clean_val <= clean_val[best] * (1 + tolerance + 3 * val_noise))
        truth["val_min_step"] = int(val_steps[best]) + first_step
        truth["val_min_window"] = (int(val_steps[within[0]]) + first_step, int(val_steps[within[-1]]) + first_step)

    all_steps = np.concatenate([steps, val_steps, steps, steps]) + first_step
    frame = scalar_frame(
        run=run,
        tag=np.array([TRAIN] * len(steps) + [VAL] * len(val_steps) + [LR] * len(steps) + [GRAD] * len(steps)),
        step=all_steps,
        value=np.concatenate([train, val, lr, grad]),
        wall_time=1.7e9 + all_steps * 0.25,
        epoch=(all_steps - first_step) / steps_per_epoch,
    )
    result: pd.DataFrame | dict[str, Curve] = frame if output == "frame" else curves_of(frame)
    return result, CurveTruth(**truth)


def make_gradual_divergence(
    *,
    n_steps: int = 2000,
    seed: int = 0,
    noise: float = 0.05,
    start_at: float = 0.4,
    sharpness: float = 2.0,
    grad_norm: bool = True,
    nonfinite: bool = True,
    run: str = "gradual",
) -> tuple[dict[str, Curve], dict[str, int]]:
    """A run that diverges slowly: healthy until ``start_at`` of the run, then a learning rate growing a
    little every step makes the loss and the gradient norm creep up, then blow up (NaN at the end when
    ``nonfinite``, else a high finite plateau). ``sharpness`` > 1 makes the creep slower at first.

    Returns the curves (``train/loss``, ``train/learning_rate``, ``train/grad_norm`` when asked) and the
    truth: ``instability_start`` (first step of the growth) and ``tenfold_step`` (first step the loss is
    ten times its level at the start of the growth).
    """
    rng = np.random.default_rng(seed)
    steps = np.arange(n_steps, dtype=np.int64)
    t = steps / max(n_steps - 1, 1)
    start = int(start_at * n_steps)
    x = np.clip((steps - start) / max(n_steps - start, 1), 0, None)
    growth = 80.0 * x ** sharpness  # log of the loss's multiplier: about e^80 at the end
    with np.errstate(over="ignore"):
        loss = _train_shape("normal", t) * np.exp(growth + noise * rng.standard_normal(n_steps))
    if nonfinite:
        loss = np.where(loss > 1e30, np.nan, loss)
    else:
        loss = np.minimum(loss, 50.0 * _train_shape("normal", t) * np.exp(noise * rng.standard_normal(n_steps)))
    lr = 3e-4 * np.exp(np.clip(steps - start, 0, None) * (2.0 / max(n_steps - start, 1)))
    grad = 0.8 * np.exp(np.minimum(0.6 * growth, 30.0) + 0.1 * rng.standard_normal(n_steps))
    base = float(_train_shape("normal", t[start : start + 1])[0]) if start < n_steps else float("nan")
    tenfold = np.flatnonzero((steps >= start) & ~(loss < 10 * base))
    truth = {"instability_start": int(start), "tenfold_step": int(steps[tenfold[0]]) if tenfold.size else -1}
    curves = {TRAIN: Curve.from_arrays(steps, loss, TRAIN), LR: Curve.from_arrays(steps, lr, LR)}
    if grad_norm:
        curves[GRAD] = Curve.from_arrays(steps, grad, GRAD)
    return curves, truth


def curves_of(frame: pd.DataFrame) -> dict[str, Curve]:
    """Tag → :class:`Curve` for a tidy table of one run."""
    return {str(tag): Curve.from_frame(frame, str(tag)) for tag in frame["tag"].unique()}


def make_logs(
    kinds: tuple[str, ...] = KINDS, *, n_steps: int = 1000, seed: int = 0, **options
) -> tuple[object, dict[str, CurveTruth]]:
    """A :class:`~tanalyze.logs.Logs` of one synthetic run per kind (named ``<kind>-<i>``) and their truths."""
    from tanalyze.logs import Logs, RunInfo

    frames, truths, infos = [], {}, {}
    for i, kind in enumerate(kinds):
        name = f"{kind}-{i}"
        frame, truth = make_curve(kind, n_steps=n_steps, seed=seed + i, run=name, **options)
        frames.append(frame)
        truths[name] = truth
        infos[name] = RunInfo(name=name, format="synthetic", directory=name, files=())
    logs = Logs(scalars=concat_frames(frames), histograms=empty_histograms(), runs=MappingProxyType(infos),
                root="synthetic")
    return logs, truths
