#!/usr/bin/env python
"""Regenerate the labelled hard cases by really training small models on CPU.

Each run here is a real training job (an MLP, a tiny character Transformer, a
GAN, a multi-head net, a tiny GPT-2 under the HF Trainer, a REINFORCE policy on
gymnasium's CartPole) logged by a real
logger (``torch.utils.tensorboard``, ``tensorboardX``, Lightning's CSVLogger,
Keras's CSVLogger, the HF Trainer's ``trainer_state.json``). The hard part of each run is produced
by its cause (warm restarts, corrupted batches, a long warm-up, a tiny train
set, zeroed inputs, an lr far too high …), never by editing numbers; the truth
in ``LABELS.json`` is what a practitioner reads from the curves, and every step
in it (divergence onset, validation-minimum window) is computed from what the
run logged.

Data and models come from ``sample_runs/generate.py`` (teacher data, the
character corpus, TinyGPT); run this in the same kind of environment
(``requirements.txt`` beside this file)::

    python bench/hardcases/generate.py              # every run, then LABELS.json
    python bench/hardcases/generate.py --only gan_collapse spikes_recover
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

_spec = importlib.util.spec_from_file_location("sample_generate", REPO / "sample_runs" / "generate.py")
sg = importlib.util.module_from_spec(_spec)  # sets the offline environment and one thread, as for the samples
sys.modules["sample_generate"] = sg
_spec.loader.exec_module(sg)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(1)

#: The validation-minimum window: evaluations within 1 % of the minimum (as for the sample runs).
VAL_WINDOW = 0.01


# --------------------------------------------------------------------------- logging helpers


class TB:
    """A ``torch.utils.tensorboard`` (or tensorboardX) writer that also keeps what it wrote."""

    def __init__(self, folder: Path, *, x: bool = False) -> None:
        if x:
            from tensorboardX import SummaryWriter
        else:
            from torch.utils.tensorboard import SummaryWriter
        self.writer = SummaryWriter(str(folder))
        self.series: dict[str, list[tuple[int, float]]] = {}

    def __call__(self, tag: str, value: float, step: int) -> None:
        self.writer.add_scalar(tag, value, step)
        self.series.setdefault(tag, []).append((step, float(value)))

    def close(self) -> dict[str, list[tuple[int, float]]]:
        self.writer.close()
        return self.series


def fresh(name: str) -> Path:
    path = HERE / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def val_window(series: list[tuple[int, float]]) -> tuple[int, list[int]]:
    """The step of the validation minimum and the first/last step within ``VAL_WINDOW`` of it."""
    finite = [(s, v) for s, v in series if math.isfinite(v)]
    step, best = min(finite, key=lambda p: (p[1], p[0]))
    near = [s for s, v in finite if v <= best * (1 + VAL_WINDOW)]
    return step, [min(near), max(near)]


def blowup_onset(series: list[tuple[int, float]], factor: float = 2.0, window: int = 20) -> int:
    """First step of a blow-up that never comes back: from it on, every value (non-finite counts) stays above
    ``factor`` x the median of the ``window`` values before it."""
    values = [v for _, v in series]
    for i in range(window, len(values)):
        ref = float(np.median(values[i - window : i]))
        if all(not math.isfinite(v) or v > factor * ref for v in values[i:]):
            return series[i][0]
    raise RuntimeError("no blow-up in this series")


def first_nonfinite(series: list[tuple[int, float]]) -> int | None:
    return next((s for s, v in series if not math.isfinite(v)), None)


def label(regime: str, *, fmt: str, logger: str, train_tag: str | None, val_tag: str | None, why: str,
          train=None, val=None, kind: str, **extra: Any) -> dict[str, Any]:
    """One run's truth; the validation-minimum window is computed from the logged validation loss."""
    out: dict[str, Any] = {"verdict": regime, "kind": kind, "format": fmt, "logger": logger,
                           "train_loss_tag": train_tag, "val_loss_tag": val_tag, "why": why}
    if train:
        out["train_points"] = len(train)
    if val:
        out["val_points"] = len(val)
        if regime == "overfitting":
            out["val_min_step"], out["overfitting_window"] = val_window(val)
    out.update(extra)
    return out


def diverged_tb(name: str, series: dict[str, list[tuple[int, float]]], *, kind: str, onset: int, why: str
                ) -> dict[str, dict[str, Any]]:
    """The truth of a diverged run logged by ``TB`` as train/loss and val/loss, with its labelled onset."""
    train = series["train/loss"]
    return {name: label("diverged", kind=kind, fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=train, val=series["val/loss"], divergence_onset=onset,
                        first_nonfinite_step=first_nonfinite(train), why=why)}


# --------------------------------------------------------------------------- training loops


def classifier_loop(*, model: nn.Module, opt: torch.optim.Optimizer, train_xy, val_xy, steps: int, batch: int,
                    eval_every: int, log: Callable[[str, float, int], None], lr_at: Callable[[int], float] | None = None,
                    seed: int = 0, log_every: int = 1, corrupt: dict[int, float] | None = None,
                    loss_fn: Callable = F.cross_entropy, clip: float | None = None,
                    log_lr: bool = False, log_grad: bool = False, on_eval: Callable[[], None] | None = None,
                    val_batch: int | None = None) -> None:
    """Random mini-batches; train loss every ``log_every`` steps, validation loss every ``eval_every``
    (on the whole validation set, or on ``val_batch`` random samples of it as nanoGPT's estimate_loss does).

    ``corrupt`` maps a step to a factor its batch's inputs are multiplied by (a corrupted batch)."""
    xt, yt = train_xy
    xv, yv = val_xy
    g = torch.Generator().manual_seed(seed)
    gv = torch.Generator().manual_seed(seed + 1)
    for step in range(1, steps + 1):
        if lr_at is not None:
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
        idx = torch.randint(0, len(xt), (min(batch, len(xt)),), generator=g)
        x = xt[idx] * (corrupt or {}).get(step, 1.0)
        model.train()
        loss = loss_fn(model(x), yt[idx])
        opt.zero_grad()
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip or float("inf")))
        opt.step()
        if step % log_every == 0:
            log("train/loss", loss.item(), step)
            if log_lr:
                log("train/lr", opt.param_groups[0]["lr"], step)
            if log_grad:
                log("train/grad_norm", norm, step)
        if eval_every and step % eval_every == 0:
            model.eval()
            pick = torch.randint(0, len(xv), (val_batch,), generator=gv) if val_batch else slice(None)
            with torch.no_grad():
                log("val/loss", loss_fn(model(xv[pick]), yv[pick]).item(), step)
            if on_eval is not None:
                on_eval()


def teacher(n_train: int, n_val: int, *, seed: int, noise: float = 0.0, k: int = 4):
    x, y = sg.teacher_data(n_train, seed=seed, noise=noise, k=k)
    xv, yv = sg.teacher_data(n_val, seed=seed + 1000, noise=noise, k=k)
    return (x, y), (xv, yv)


# --------------------------------------------------------------------------- the runs

RUNS: dict[str, Callable[[], dict[str, dict[str, Any]]]] = {}


def register(fn: Callable[[], dict[str, dict[str, Any]]]) -> Callable[[], dict[str, dict[str, Any]]]:
    RUNS[fn.__name__.removeprefix("run_")] = fn
    return fn


TB_LOGGER = "torch.utils.tensorboard.SummaryWriter"


@register
def run_cosine_restarts() -> dict[str, dict[str, Any]]:
    name = "cosine_restarts"
    sg.seed_all(1)
    train, val = teacher(20000, 2000, seed=1)
    model = sg.mlp(16, 128, 2, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    tb = TB(fresh(name))
    # CosineAnnealingWarmRestarts(T_0=250, eta_min=1e-4) written out per step
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1500, batch=64, eval_every=50, log=tb,
                    lr_at=lambda s: 1e-4 + (0.2 - 1e-4) * 0.5 * (1 + math.cos(math.pi * ((s - 1) % 250) / 250)),
                    seed=1, log_every=2, log_lr=True)
    s = tb.close()
    return {name: label("normal", kind="schedule", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="SGD+momentum with cosine warm restarts every 250 steps (lr back to 0.2 at each restart): "
                            "the loss jumps up at every restart and comes back lower; a healthy schedule")}


@register
def run_spikes_recover() -> dict[str, dict[str, Any]]:
    name = "spikes_recover"
    sg.seed_all(2)
    train, val = teacher(4000, 1000, seed=2)
    model = sg.mlp(16, 128, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tb = TB(fresh(name))
    corrupt = {400: 40.0, 800: 40.0, 1150: 40.0}
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1500, batch=64, eval_every=100, log=tb,
                    seed=2, corrupt=corrupt)
    s = tb.close()
    return {name: label("normal", kind="spikes", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"], spike_steps=sorted(corrupt),
                        why="Adam, healthy run; three corrupted batches (inputs x40, a sensor glitch) throw the loss up "
                            "for a few steps each and it recovers to its trend every time")}


@register
def run_few_val_points() -> dict[str, dict[str, Any]]:
    name = "few_val_points"
    sg.seed_all(3)
    train, val = teacher(3000, 150, seed=3, noise=0.1)
    model = sg.mlp(16, 64, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1000, batch=32, eval_every=250, log=tb,
                    seed=3, log_every=5)
    s = tb.close()
    return {name: label("normal", kind="few_val", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="a short healthy run evaluated only 4 times on a small validation set: the validation "
                            "loss wobbles between evaluations, too few points to show any trend but a fall")}


@register
def run_three_val_epochs() -> dict[str, dict[str, Any]]:
    name = "three_val_epochs"
    out = fresh(name)
    sg.seed_all(4)
    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    train, val = teacher(2000, 200, seed=4, noise=0.1)

    class Net(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = sg.mlp(16, 64, 2, 4)

        def training_step(self, batch, _):
            x, y = batch
            loss = F.cross_entropy(self.net(x), y)
            self.log("train_loss", loss, on_step=True, on_epoch=False)
            return loss

        def validation_step(self, batch, _):
            x, y = batch
            self.log("val_loss", F.cross_entropy(self.net(x), y), on_epoch=True)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=2e-3)

    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=32, shuffle=True,
                                     generator=torch.Generator().manual_seed(4))
    vl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*val), batch_size=200)
    trainer = L.Trainer(max_epochs=3, logger=CSVLogger(save_dir=str(out)), log_every_n_steps=5,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0, accelerator="cpu", deterministic=True)
    trainer.fit(Net(), dl, vl)
    s = sg.read_lightning(out / "lightning_logs" / "version_0" / "metrics.csv")
    shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return {name: label("normal", kind="few_val", fmt="lightning_csv", logger="lightning CSVLogger",
                        train_tag="train_loss", val_tag="val_loss", train=s["train_loss"], val=s["val_loss"],
                        why="Lightning, 3 epochs of a healthy classifier: 3 validation points only")}


@register
def run_train_only() -> dict[str, dict[str, Any]]:
    name = "train_only"
    sg.seed_all(5)
    train, val = teacher(4000, 10, seed=5)
    model = sg.mlp(16, 96, 2, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    tb = TB(fresh(name), x=True)
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1200, batch=32, eval_every=0, log=tb,
                    lr_at=sg.warmup_cosine(1e-3, 50, 1200), seed=5, log_every=2, log_lr=True)
    s = tb.close()
    return {name: label("normal", kind="train_only", fmt="tensorboard", logger="tensorboardX.SummaryWriter",
                        train_tag="train/loss", val_tag=None, train=s["train/loss"],
                        why="AdamW with warm-up and cosine decay, no validation logged: a healthy training loss")}


def char_lm_loop(*, steps: int, lr_at: Callable[[int], float], log, seed: int, eval_every: int, log_every: int = 1,
                 n_embd: int = 32, batch: int = 16, clip: float | None = 1.0, log_grad: bool = False,
                 weight_decay: float = 0.0) -> None:
    data = sg.CharData(block_size=32)
    model = sg.TinyGPT(data.vocab_size, 32, n_embd=n_embd, n_layer=2, n_head=2)
    opt = torch.optim.AdamW(model.parameters(), lr=lr_at(1), weight_decay=weight_decay)
    g = torch.Generator().manual_seed(seed)
    gv = torch.Generator().manual_seed(seed + 1)
    for step in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        x, y = data.batch("train", batch, g)
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip or float("inf")))
        opt.step()
        if step % log_every == 0:
            log("train/loss", loss.item(), step)
            log("train/lr", opt.param_groups[0]["lr"], step)
            if log_grad:
                log("train/grad_norm", norm, step)
        if eval_every and step % eval_every == 0:
            with torch.no_grad():
                xv, yv = data.batch("val", 128, gv)
                log("val/loss", model(xv, yv)[1].item(), step)


@register
def run_warmup_plateau() -> dict[str, dict[str, Any]]:
    name = "warmup_plateau"
    sg.seed_all(6)
    tb = TB(fresh(name))
    total, warm = 1500, 600

    def lr_at(step: int) -> float:  # a long linear warm-up from 1e-6, then cosine decay
        if step <= warm:
            return 1e-6 + (3e-3 - 1e-6) * (step / warm) ** 3
        return 3e-4 + (3e-3 - 3e-4) * 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm)))

    char_lm_loop(steps=total, lr_at=lr_at, log=tb, seed=6, eval_every=100, log_every=2)
    s = tb.close()
    return {name: label("normal", kind="warmup", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="tiny char Transformer with a long (cubic) warm-up over 40% of the run: the loss sits "
                            "near its initial level for hundreds of steps, then falls and converges")}


@register
def run_late_mild_overfit() -> dict[str, dict[str, Any]]:
    name = "late_mild_overfit"
    sg.seed_all(7)
    train, val = teacher(3000, 1000, seed=7, noise=0.2)
    model = sg.mlp(16, 256, 2, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=3000, batch=64, eval_every=50, log=tb,
                    seed=7, log_every=5)
    s = tb.close()
    return {name: label("overfitting", kind="overfit_mild", fmt="tensorboard", logger=TB_LOGGER,
                        train_tag="train/loss", val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="a wide MLP on 3000 training points with 20% label noise, small lr: the validation loss "
                            "bottoms out past the middle of the run and then creeps up a few percent, steadily, "
                            "while the training loss keeps falling")}


@register
def run_noisy_overfit() -> dict[str, dict[str, Any]]:
    name = "noisy_overfit"
    sg.seed_all(8)
    train, val = teacher(400, 2000, seed=8, noise=0.2)
    model = sg.mlp(16, 256, 2, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1400, batch=32, eval_every=20, log=tb,
                    seed=8, log_every=4, val_batch=160)
    s = tb.close()
    return {name: label("overfitting", kind="overfit_noisy", fmt="tensorboard", logger=TB_LOGGER,
                        train_tag="train/loss", val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="a wide MLP on 400 noisy points, each evaluation on 160 random validation samples (as "
                            "nanoGPT's estimate_loss): a noisy validation curve whose minimum comes at about 40% of the "
                            "run and which then rises well above it while training goes on")}


@register
def run_strong_overfit() -> dict[str, dict[str, Any]]:
    name = "strong_overfit"
    sg.seed_all(9)
    train, val = teacher(150, 1000, seed=9, noise=0.25)
    model = sg.mlp(16, 512, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1500, batch=32, eval_every=25, log=tb,
                    seed=9, log_every=5)
    s = tb.close()
    return {name: label("overfitting", kind="overfit_strong", fmt="tensorboard", logger=TB_LOGGER,
                        train_tag="train/loss", val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="a 512-wide MLP memorises 150 noisy points: the training loss goes to ~0 and the "
                            "validation loss rises to several times its minimum and stays there (not a divergence)")}


@register
def run_chance_plateau() -> dict[str, dict[str, Any]]:
    name = "chance_plateau"
    sg.seed_all(10)
    (x, y), (xv, yv) = teacher(12000, 3000, seed=10, k=10)
    # balanced classes (400 / 100 per class), as a curated data set has
    pick = torch.cat([torch.nonzero(y == c).flatten()[:400] for c in range(10)])
    pick_v = torch.cat([torch.nonzero(yv == c).flatten()[:100] for c in range(10)])
    x, y, xv, yv = x[pick], y[pick], xv[pick_v], yv[pick_v]
    # A normalisation bug divides the features by a huge "std": the inputs carry no information.
    x, xv = x / 1e6, xv / 1e6
    model = sg.mlp(16, 64, 2, 10)
    with torch.no_grad():
        model[-1].weight.mul_(400.0)  # a badly scaled head: confident wrong guesses at the start
        model[-1].bias.copy_(torch.randn(10) * 3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=(x, y), val_xy=(xv, yv), steps=1200, batch=64, eval_every=50,
                    log=tb, seed=10, log_every=2)
    s = tb.close()
    counts = torch.bincount(y, minlength=10).float() / len(y)
    prior_entropy = float(-(counts * counts.log()).sum())
    return {name: label("underfitting", kind="chance", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"], chance_level=math.log(10),
                        class_prior_entropy=prior_entropy,
                        why="10 classes, features wiped out by a normalisation bug: from a badly scaled start the "
                            "loss falls quickly to the entropy of the class prior (~ln 10 = 2.303) and stays there: "
                            "chance level, the model learns nothing from the inputs")}


@register
def run_growing_oscillation() -> dict[str, dict[str, Any]]:
    name = "growing_oscillation"
    sg.seed_all(11)
    train, val = teacher(4000, 1000, seed=11)
    model = sg.mlp(16, 128, 2, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    tb = TB(fresh(name))

    def lr_at(step: int) -> float:  # triangular cyclic lr (period 100) whose peak grows 0.2% per step
        phase = (step % 100) / 100
        return 0.01 + 0.05 * 1.002**step * (1 - abs(2 * phase - 1))

    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1500, batch=128, eval_every=50, log=tb,
                    lr_at=lr_at, seed=11, log_every=2, log_lr=True)
    s = tb.close()
    return {name: label("unstable", kind="oscillation", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="SGD+momentum under a cyclic lr whose peak keeps growing (exp_range with gamma > 1, a "
                            "config slip): the loss first falls, then swings up and down every cycle with growing "
                            "amplitude; it never blows up for good")}


@register
def run_late_divergence() -> dict[str, dict[str, Any]]:
    name = "late_divergence"
    sg.seed_all(12)
    train, val = teacher(4000, 1000, seed=12)
    model = sg.mlp(16, 128, 3, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1600, batch=64, eval_every=100, log=tb,
                    lr_at=lambda s: 0.05 if s < 1300 else 0.05 * 1.04 ** (s - 1300), seed=12, log_lr=True)
    s = tb.close()
    return diverged_tb(name, s, kind="late_divergence", onset=blowup_onset(s["train/loss"]),
                       why="SGD+momentum trains well for 1300 steps, then a resumed job's scheduler grows the lr 4% "
                           "per step: the loss blows up late in the run and never comes back")


@register
def run_collapse_to_chance() -> dict[str, dict[str, Any]]:
    name = "collapse_to_chance"
    sg.seed_all(13)
    train, val = teacher(4000, 1000, seed=13)
    model = sg.mlp(16, 128, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1200, batch=64, eval_every=50, log=tb,
                    lr_at=lambda s: 1e-3 if s < 500 else 0.5, seed=13, log_every=2, log_lr=True)
    s = tb.close()
    return diverged_tb(name, s, kind="diverged_finite", onset=blowup_onset(s["train/loss"]),
                       why="Adam at 1e-3, then the lr is set to 0.5 at step 500 (a config typo): the units die and "
                           "the cross-entropy jumps to ln 4 (uniform guesses), 5x where it was, and stays there")


def explosion_step(series: list[tuple[int, float]], factor: float = 10.0, window: int = 20) -> int:
    """First step whose value is ``factor`` x the median of the ``window`` values before it (a blow-up the loss
    may come down from)."""
    values = [v for _, v in series]
    for i in range(window, len(values)):
        if values[i] > factor * float(np.median(values[i - window : i])):
            return series[i][0]
    raise RuntimeError("no explosion in this series")


@register
def run_blowup_to_unigram() -> dict[str, dict[str, Any]]:
    name = "blowup_to_unigram"
    sg.seed_all(27)
    tb = TB(fresh(name))
    char_lm_loop(steps=800, lr_at=lambda s: 3e-3 if s < 150 else 3.0, log=tb, seed=27, eval_every=50, log_every=5,
                 clip=None, log_grad=True, weight_decay=0.1)
    s = tb.close()
    return diverged_tb(name, s, kind="diverged_finite", onset=explosion_step(s["train/loss"]),
                       why="tiny char Transformer, AdamW at 3e-3 (weight decay 0.1) without clipping; at step 150 "
                           "the lr is set to 3.0: the loss blows up by hundreds of times, comes down after some "
                           "hundred steps but only to about the level of character frequencies, well above where it "
                           "was, and stays there: what the model had learnt is lost")


def chance_return_step(series: list[tuple[int, float]], chance: float, window: int = 20) -> int:
    """First step from which every later value stays above halfway between the lowest level reached before (the
    smallest median of ``window`` values in a row) and the chance level ``chance``."""
    values = np.array([v for _, v in series])
    levels = np.array([np.median(values[i : i + window]) for i in range(len(values) - window + 1)])
    low_at = int(np.argmin(levels[: int(0.75 * len(levels))]))
    halfway = (levels[low_at] + chance) / 2
    stays = np.minimum.accumulate(values[::-1])[::-1] > halfway
    return series[int(np.flatnonzero(stays[low_at:])[0]) + low_at][0]


@register
def run_collapse_after_learning() -> dict[str, dict[str, Any]]:
    name = "collapse_after_learning"
    sg.seed_all(41)
    train, val = teacher(4000, 1000, seed=41)
    model = sg.mlp(16, 128, 2, 4)
    opt = torch.optim.SGD(model.parameters(), lr=3.0)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1200, batch=64, eval_every=50, log=tb,
                    seed=41, log_every=2, log_lr=True)
    s = tb.close()
    return diverged_tb(name, s, kind="collapse", onset=chance_return_step(s["train/loss"], math.log(4)),
                       why="plain SGD at 3.0 on a 4-class MLP: the loss falls to about 0.8, then the units die and it "
                           "goes back to ln 4 = 1.386 (uniform guesses: chance level) and stays there; less than "
                           "twice where it was, but what the model had learnt is lost")


def keras_fit(name: str, data: tuple, *, seed: int, widths: tuple[int, ...], out_activation: str | None,
              optimizer: Callable[[Any], Any], loss: str, epochs: int, batch_size: int,
              metrics: tuple[str, ...] = ()) -> dict[str, list[float]]:
    """An MLP (ReLU layers of ``widths``, then its output layer) trained by Keras on its torch backend, logged by
    Keras's own ``CSVLogger`` to ``<name>/training.log``: the epoch means Keras users have. ``data`` is
    ``(x, y, x_val, y_val)`` as numpy arrays; ``optimizer`` is given the ``keras.optimizers`` module."""
    os.environ["KERAS_BACKEND"] = "torch"  # (read when keras is first imported: no TensorFlow needed)
    import keras

    out = fresh(name)
    x, y, xv, yv = data
    keras.utils.set_random_seed(seed)
    layers = [keras.layers.Dense(w, activation="relu") for w in widths[:-1]]
    model = keras.Sequential([keras.Input((x.shape[1],)), *layers, keras.layers.Dense(widths[-1], activation=out_activation)])
    model.compile(optimizer(keras.optimizers), loss, metrics=list(metrics))
    return model.fit(x, y, validation_data=(xv, yv), epochs=epochs, batch_size=batch_size, verbose=0,
                     callbacks=[keras.callbacks.CSVLogger(str(out / "training.log"))]).history


@register
def run_dead_after_blowup() -> dict[str, dict[str, Any]]:
    name = "dead_after_blowup"
    (x, y), (xv, yv) = teacher(4000, 1000, seed=45, k=10)
    history = keras_fit(name, (x.numpy(), y.numpy(), xv.numpy(), yv.numpy()), seed=45, widths=(256, 10),
                        out_activation="softmax", optimizer=lambda o: o.SGD(8.0),
                        loss="sparse_categorical_crossentropy", epochs=20, batch_size=32, metrics=("accuracy",))
    train = list(enumerate(history["loss"]))
    return {name: label("diverged", kind="dead", fmt="keras_csv", logger="keras.callbacks.CSVLogger", train_tag="loss",
                        val_tag="val_loss", train=train, val=list(enumerate(history["val_loss"])),
                        divergence_onset=0, first_nonfinite_step=first_nonfinite(train),
                        why="a 10-class MLP under Keras with plain SGD at 8.0: the first epoch already blows the "
                            "softmax into certainty on wrong classes (each miss costs -ln 1e-7 = 16.1, Keras's "
                            "clipping), the loss creeps up a little and freezes to the last bit: the weights no "
                            "longer change, and what the model outputs is no better than at its first epoch")}


@register
def run_blowup_before_learning() -> dict[str, dict[str, Any]]:
    name = "blowup_before_learning"
    sg.seed_all(46)
    train, val = teacher(8000, 1000, seed=46, k=10)
    model = sg.mlp(16, 128, 2, 10)
    opt = torch.optim.SGD(model.parameters(), lr=3.0, momentum=0.9)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1500, batch=64, eval_every=100, log=tb,
                    seed=46, log_every=5, log_lr=True)
    s = tb.close()
    onset = next(step for step, value in s["train/loss"] if value >= 2 * math.log(10))
    return diverged_tb(name, s, kind="early_blowup", onset=onset,
                       why="a 10-class MLP under SGD with momentum at 3.0: within the first steps the loss jumps to "
                           "several times its start, then sits around the class prior's entropy for the rest of the "
                           "run, never below where it began: too high a learning rate wrecked the model before it "
                           "learnt anything (onset: the first point at twice ln 10, the loss of uniform guesses)")


def _regression_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A smooth function of 10 inputs plus noise (a third of its spread), standardised."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 10)).astype("float32")
    w = np.random.default_rng(777).normal(size=10)
    y = np.sin(x @ w / 2) + 0.3 * np.tanh(x[:, 0] * x[:, 1]) + rng.normal(0, 0.3, n)
    return x, ((y - y.mean()) / y.std()).astype("float32")


@register
def run_regression_tiny_lr() -> dict[str, dict[str, Any]]:
    name = "regression_tiny_lr"
    sg.seed_all(47)
    x, y = _regression_data(400, 47)
    xv, yv = _regression_data(200, 1047)
    model = sg.mlp(10, 64, 1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    tb = TB(fresh(name), x=True)
    classifier_loop(model=model, opt=opt, train_xy=(torch.from_numpy(x), torch.from_numpy(y)),
                    val_xy=(torch.from_numpy(xv), torch.from_numpy(yv)), steps=2000, batch=32, eval_every=50, log=tb,
                    seed=47, log_every=5, loss_fn=lambda out, target: F.mse_loss(out.squeeze(-1), target))
    s = tb.close()
    return {name: label("underfitting", kind="noisy_flat", fmt="tensorboard", logger="tensorboardX.SummaryWriter",
                        train_tag="train/loss", val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="an MLP regression under plain SGD at 1e-6: the per-batch MSE swings by a quarter around "
                            "a level that does not move (the validation MSE changes in its third digit); the medians "
                            "of its first and last stretches differ only as much as that noise makes them")}


@register
def run_memorise_regression() -> dict[str, dict[str, Any]]:
    name = "memorise_regression"
    history = keras_fit(name, (*_regression_data(40, 48), *_regression_data(300, 1048)), seed=48,
                        widths=(512, 512, 1), out_activation=None, optimizer=lambda o: o.Adam(1e-3), loss="mse",
                        epochs=300, batch_size=8)
    return {name: label("overfitting", kind="memorise", fmt="keras_csv", logger="keras.callbacks.CSVLogger",
                        train_tag="loss", val_tag="val_loss", train=list(enumerate(history["loss"])),
                        val=list(enumerate(history["val_loss"])),
                        why="a 270k-parameter MLP fitting 40 noisy regression points with Adam for 300 epochs: the "
                            "training MSE goes to ~1e-6 (with Adam's bounces off that floor), the validation MSE is "
                            "lowest within the first epochs and stays well above it after")}


@register
def run_diverged_finite() -> dict[str, dict[str, Any]]:
    name = "diverged_finite"
    sg.seed_all(25)
    g = torch.Generator().manual_seed(25)
    w = torch.randn(16, generator=g)
    x, xv = torch.randn(4000, 16, generator=g), torch.randn(800, 16, generator=g)
    y, yv = x @ w + 0.1 * torch.randn(4000, generator=g), xv @ w + 0.1 * torch.randn(800, generator=g)
    model = sg.mlp(16, 64, 2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    tb = TB(fresh(name))

    def mse(out, target):
        return F.mse_loss(out.squeeze(1), target)

    classifier_loop(model=model, opt=opt, train_xy=(x, y), val_xy=(xv, yv), steps=1200, batch=64, eval_every=50,
                    log=tb, lr_at=lambda s: 1e-3 if s < 700 else 0.5, seed=25, log_every=2, loss_fn=mse, clip=5.0,
                    log_lr=True)
    s = tb.close()
    return diverged_tb(name, s, kind="diverged_finite", onset=blowup_onset(s["train/loss"]),
                       why="an MSE regression with SGD+momentum and clipping at 5; at step 700 the lr goes from 1e-3 "
                           "to 0.5: the loss climbs to a large finite value, orders of magnitude above its level, "
                           "and stays there (clipping keeps it finite)")


@register
def run_lightning_step_epoch() -> dict[str, dict[str, Any]]:
    name = "lightning_step_epoch"
    out = fresh(name)
    sg.seed_all(14)
    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    train, val = teacher(4000, 1000, seed=14)

    class Net(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = sg.mlp(16, 64, 2, 4)

        def training_step(self, batch, _):
            x, y = batch
            loss = F.cross_entropy(self.net(x), y)
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            return loss

        def validation_step(self, batch, _):
            x, y = batch
            self.log("val_loss", F.cross_entropy(self.net(x), y), on_epoch=True)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9)

    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=8, shuffle=True,
                                     generator=torch.Generator().manual_seed(14))
    vl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*val), batch_size=1000)
    trainer = L.Trainer(max_epochs=8, logger=CSVLogger(save_dir=str(out)), log_every_n_steps=4,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0, accelerator="cpu", deterministic=True)
    trainer.fit(Net(), dl, vl)
    s = sg.read_lightning(out / "lightning_logs" / "version_0" / "metrics.csv")
    return {name: label("normal", kind="step_epoch", fmt="lightning_csv", logger="lightning CSVLogger",
                        train_tag="train_loss_step", val_tag="val_loss", train=s["train_loss_step"],
                        val=s["val_loss"], epoch_tag="train_loss_epoch",
                        why="Lightning with batches of 8: train_loss_step is very noisy (one small batch each), "
                            "train_loss_epoch and val_loss fall smoothly: a healthy run")}


def gan_run(name: str, *, d_lr: float, g_lr: float, d_steps: int, steps: int, seed: int, d_width: int,
            boost_at: int | None = None) -> dict:
    """A GAN on a ring of 8 Gaussians in 2-D; BCE losses logged per step as loss/D and loss/G. From step
    ``boost_at`` on, the discriminator gets 10x its lr and ``d_steps`` updates per generator step (1 before)."""
    sg.seed_all(seed)
    g = torch.Generator().manual_seed(seed)
    angles = torch.arange(8) * (2 * math.pi / 8)
    centres = torch.stack([angles.cos(), angles.sin()], 1) * 2

    def real(n: int) -> torch.Tensor:
        return centres[torch.randint(0, 8, (n,), generator=g)] + 0.05 * torch.randn(n, 2, generator=g)

    gen = sg.mlp(8, 64, 2, 2)
    disc = sg.mlp(2, d_width, 2, 1)
    og = torch.optim.Adam(gen.parameters(), lr=g_lr, betas=(0.5, 0.999))
    od = torch.optim.Adam(disc.parameters(), lr=d_lr, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    tb = TB(fresh(name))
    for step in range(1, steps + 1):
        boosted = boost_at is None or step >= boost_at
        for group in od.param_groups:
            group["lr"] = d_lr * (10 if boost_at is not None and boosted else 1)
        for _ in range(d_steps if boosted else 1):
            z = torch.randn(64, 8, generator=g)
            fake = gen(z).detach()
            xr = real(64)
            d_loss = bce(disc(xr), torch.ones(64, 1)) + bce(disc(fake), torch.zeros(64, 1))
            od.zero_grad()
            d_loss.backward()
            od.step()
        z = torch.randn(64, 8, generator=g)
        g_loss = bce(disc(gen(z)), torch.ones(64, 1))
        og.zero_grad()
        g_loss.backward()
        og.step()
        if step % 2 == 0:
            tb("loss/D", d_loss.item(), step)
            tb("loss/G", g_loss.item(), step)
    return tb.close()


@register
def run_gan_collapse() -> dict[str, dict[str, Any]]:
    name = "gan_collapse"
    s = gan_run(name, d_lr=2e-4, g_lr=2e-4, d_steps=5, steps=1000, seed=15, d_width=256, boost_at=400)
    return {name: label("unstable", kind="gan", fmt="tensorboard", logger=TB_LOGGER, train_tag=None, val_tag=None,
                        loss_tags=["loss/D", "loss/G"], train=s["loss/D"],
                        why="a GAN trained balanced for 400 steps, then the discriminator gets 10x its lr and 5 steps "
                            "per generator step (a per-network schedule slip): the discriminator loss collapses towards "
                            "0 while the generator loss climbs: the adversarial game broke down (unstable, not "
                            "underfitting)")}


@register
def run_gan_healthy() -> dict[str, dict[str, Any]]:
    name = "gan_healthy"
    s = gan_run(name, d_lr=2e-4, g_lr=2e-4, d_steps=1, steps=1000, seed=16, d_width=64)
    return {name: label("normal", kind="gan", fmt="tensorboard", logger=TB_LOGGER, train_tag=None, val_tag=None,
                        loss_tags=["loss/D", "loss/G"], train=s["loss/D"],
                        why="a balanced GAN: both losses move to an equilibrium (D near 2 ln 2 / 2, G around "
                            "ln 2-ish) and hover there; GAN losses are not supposed to fall")}


@register
def run_multi_loss() -> dict[str, dict[str, Any]]:
    name = "multi_loss"
    sg.seed_all(17)
    (x, y), (xv, yv) = teacher(4000, 800, seed=17)
    # a regression target on another scale (in the hundreds) and an auxiliary reconstruction
    w = torch.randn(16, generator=torch.Generator().manual_seed(170))
    r, rv = 100 * torch.tanh(x @ w / 4), 100 * torch.tanh(xv @ w / 4)
    trunk = sg.mlp(16, 128, 2, 64)
    cls, reg, rec = nn.Linear(64, 4), nn.Linear(64, 1), nn.Linear(64, 16)
    params = [*trunk.parameters(), *cls.parameters(), *reg.parameters(), *rec.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    tb = TB(fresh(name))
    g = torch.Generator().manual_seed(17)

    def losses(xb, yb, rb):
        h = F.relu(trunk(xb))
        return (F.cross_entropy(cls(h), yb), F.mse_loss(reg(h).squeeze(1), rb), F.mse_loss(rec(h), xb))

    for step in range(1, 1201):
        idx = torch.randint(0, len(x), (64,), generator=g)
        lc, lr_, la = losses(x[idx], y[idx], r[idx])
        total = lc + 1e-3 * lr_ + 0.1 * la
        opt.zero_grad()
        total.backward()
        opt.step()
        if step % 3 == 0:
            tb("train/loss_cls", lc.item(), step)
            tb("train/loss_reg", lr_.item(), step)
            tb("train/loss_aux", la.item(), step)
        if step % 60 == 0:
            with torch.no_grad():
                vc, vr, va = losses(xv, yv, rv)
            tb("val/loss_cls", vc.item(), step)
            tb("val/loss_reg", vr.item(), step)
            tb("val/loss_aux", va.item(), step)
    s = tb.close()
    return {name: label("normal", kind="multi_loss", fmt="tensorboard", logger=TB_LOGGER, train_tag=None,
                        val_tag=None, loss_tags=sorted(k for k in s if "loss" in k), train=s["train/loss_cls"],
                        why="one trunk, three heads (classification CE ~1, regression MSE in the thousands, an "
                            "auxiliary reconstruction) each logged on its own: every head learns; the losses are on "
                            "unrelated scales and must be judged as separate curves")}


@register
def run_eval_pauses() -> dict[str, dict[str, Any]]:
    name = "eval_pauses"
    sg.seed_all(18)
    train, _ = teacher(4000, 10, seed=18)
    _, big_val = teacher(10, 200000, seed=18)
    model = sg.mlp(16, 64, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tb = TB(fresh(name))

    def slow_eval() -> None:  # a full pass over a large validation set: a pause in wall time every 100 steps
        with torch.no_grad():
            for _ in range(3):
                for chunk in big_val[0].split(4096):
                    model(chunk)

    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=(big_val[0][:5000], big_val[1][:5000]), steps=1000,
                    batch=64, eval_every=100, log=tb, seed=18, log_every=5, on_eval=slow_eval)
    s = tb.close()
    return {name: label("normal", kind="eval_pauses", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"], eval_period=100,
                        why="a healthy run that evaluates on a large set every 100 steps: wall time shows a pause at "
                            "every evaluation, the share of time spent evaluating, not a throughput stall")}


@register
def run_val_plateau() -> dict[str, dict[str, Any]]:
    name = "val_plateau"
    sg.seed_all(31)
    train, val = teacher(10000, 2000, seed=31, noise=0.2)
    model = sg.mlp(16, 128, 2, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=3000, batch=64, eval_every=200, log=tb,
                    seed=31, log_every=5)
    s = tb.close()
    return {name: label("normal", kind="val_plateau", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="an MLP with weight decay on 10000 points with 20% label noise, evaluated 15 times: the "
                            "validation loss levels off at the noise floor while the noisy training loss keeps "
                            "drifting down; flat is not a rise (the later steps gain nothing, nothing is wrong)")}


@register
def run_epoch_pauses() -> dict[str, dict[str, Any]]:
    name = "epoch_pauses"
    sg.seed_all(32)
    train, _ = teacher(3200, 10, seed=32)
    _, big = teacher(10, 200000, seed=32)
    model = sg.mlp(16, 64, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tb = TB(fresh(name))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=64, shuffle=True,
                                         generator=torch.Generator().manual_seed(32))
    step = 0
    for epoch in range(4):  # 50 steps an epoch; at each epoch's end a slow pass over a large set (no curve logged)
        for x, y in loader:
            step += 1
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 2 == 0:
                tb("train/loss", loss.item(), step)
                tb("epoch", float(epoch), step)
        with torch.no_grad():
            for _ in range(8):
                for chunk in big[0].split(4096):
                    model(chunk)
    s = tb.close()
    return {name: label("normal", kind="epoch_pauses", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag=None, train=s["train/loss"], epoch_steps=50,
                        why="a healthy train-only run over 4 epochs of a DataLoader that runs a slow pass over a large "
                            "set at the end of every epoch (no validation curve logged, the epoch counter is): three "
                            "pauses in wall time at the epoch starts, time spent evaluating, not throughput stalls")}


@register
def run_val_nan() -> dict[str, dict[str, Any]]:
    name = "val_nan"
    sg.seed_all(19)
    train, (xv, yv) = teacher(4000, 500, seed=19)
    xv = xv.clone()
    xv[7, 3] = float("nan")  # one corrupted validation record: every evaluation is NaN
    model = sg.mlp(16, 64, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=(xv, yv), steps=1000, batch=64, eval_every=100,
                    log=tb, seed=19, log_every=5)
    s = tb.close()
    return {name: label("normal", kind="val_nan", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="training is healthy; one validation record holds a NaN feature, so the validation loss "
                            "is NaN at every evaluation from the first: a data/metric problem, not a divergence "
                            "(lowering the learning rate would not help)")}


@register
def run_rebound_unstable() -> dict[str, dict[str, Any]]:
    name = "rebound_unstable"
    sg.seed_all(20)
    train, val = teacher(4000, 1000, seed=20, noise=0.05)
    model = sg.mlp(16, 128, 2, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    tb = TB(fresh(name))
    classifier_loop(model=model, opt=opt, train_xy=train, val_xy=val, steps=1500, batch=64, eval_every=50, log=tb,
                    lr_at=lambda s: 0.05 if s < 700 else 0.35, seed=20, log_every=2, log_lr=True)
    s = tb.close()
    return {name: label("unstable", kind="rebound", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="SGD+momentum; at step 700 the lr jumps from 0.05 to 0.35: the training loss leaves its "
                            "minimum and bounces at a higher level while the validation loss rises with it: "
                            "unstable optimisation, not overfitting")}


def regression_run(folder: Path, *, seed: int, input_scale: float) -> dict[str, list[tuple[int, float]]]:
    sg.seed_all(seed)
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(16, generator=torch.Generator().manual_seed(2100))
    x, xv = torch.randn(3000, 16, generator=g), torch.randn(600, 16, generator=g)
    y, yv = 3 + torch.sin(x @ w / 4) * 3, 3 + torch.sin(xv @ w / 4) * 3
    model = sg.mlp(16, 64, 2, 1)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    tb = TB(folder)

    def mse(out, target):
        return F.mse_loss(out.squeeze(1), target)

    classifier_loop(model=model, opt=opt, train_xy=(x * input_scale, y), val_xy=(xv * input_scale, yv), steps=800,
                    batch=64, eval_every=50, log=tb, seed=seed, log_every=4, loss_fn=mse)
    return tb.close()


@register
def run_siblings() -> dict[str, dict[str, Any]]:
    root = fresh("siblings")
    out: dict[str, dict[str, Any]] = {}
    for i, scale in enumerate([1.0, 1.0, 1.0, 1e-4]):
        sub = f"seed_{i}"
        s = regression_run(root / sub, seed=30 + i, input_scale=scale)
        stuck = scale != 1.0
        out[f"siblings/{sub}"] = label(
            "underfitting" if stuck else "normal", kind="siblings", fmt="tensorboard", logger=TB_LOGGER,
            train_tag="train/loss", val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
            cross_run=True,
            why=("same regression job as its siblings, but a unit bug scales its inputs by 1e-4: it only learns the "
                 "mean, its loss falls from where it started and then sits orders of magnitude above the siblings' (underfitting)"
                 if stuck else "one of four seeds of a healthy regression job"))
    return out


@register
def run_unbounded_bce() -> dict[str, dict[str, Any]]:
    """Binary cross-entropy on 0..3 ratings (labels out of [0, 1]): the loss has no floor."""
    name = "unbounded_bce"
    sg.seed_all(41)
    g = torch.Generator().manual_seed(41)
    x, xv = torch.randn(2000, 16, generator=g), torch.randn(400, 16, generator=g)
    y, yv = torch.randint(0, 4, (2000,), generator=g).float(), torch.randint(0, 4, (400,), generator=g).float()
    model = sg.mlp(16, 64, 2, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tb = TB(fresh(name))

    def bce(out, target):
        return F.binary_cross_entropy_with_logits(out.squeeze(1), target)

    classifier_loop(model=model, opt=opt, train_xy=(x, y), val_xy=(xv, yv), steps=600, batch=64, eval_every=30,
                    log=tb, seed=41, log_every=2, loss_fn=bce)
    s = tb.close()
    return {name: label("diverged", kind="unbounded", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="binary cross-entropy fed ratings 0..3 instead of labels in [0, 1]: for a label above 1 the "
                            "loss falls without limit as the logit grows, and the run drives it to ever larger "
                            "negative values (a broken objective, not a model that learns)",
                        last_loss=s["train/loss"][-1][1])}


@register
def run_gaussian_nll() -> dict[str, dict[str, Any]]:
    """A regression net that predicts a mean and a log-variance: its Gaussian NLL goes negative and levels off."""
    name = "gaussian_nll"
    sg.seed_all(42)
    g = torch.Generator().manual_seed(42)
    x, xv = torch.randn(3000, 8, generator=g), torch.randn(600, 8, generator=g)
    w = torch.randn(8, generator=torch.Generator().manual_seed(4200))
    y, yv = x @ w + 0.05 * torch.randn(3000, generator=g), xv @ w + 0.05 * torch.randn(600, generator=g)
    model = sg.mlp(8, 64, 2, 2)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    tb = TB(fresh(name))

    def nll(out, target):  # the log-variance floored at log(1e-4): a variance that cannot collapse
        mean, log_var = out[:, 0], out[:, 1].clamp(min=math.log(1e-4))
        return F.gaussian_nll_loss(mean, target, log_var.exp())

    classifier_loop(model=model, opt=opt, train_xy=(x, y), val_xy=(xv, yv), steps=1500, batch=64, eval_every=50,
                    log=tb, seed=42, log_every=3, loss_fn=nll)
    s = tb.close()
    return {name: label("normal", kind="negative_nll", fmt="tensorboard", logger=TB_LOGGER, train_tag="train/loss",
                        val_tag="val/loss", train=s["train/loss"], val=s["val/loss"],
                        why="a Gaussian negative log-likelihood with a learned variance: it falls below zero (the "
                            "model is sure of its fit, noise 0.05) and levels off near its floor; negative is "
                            "healthy here",
                        last_loss=s["train/loss"][-1][1])}


@register
def run_late_small_rise() -> dict[str, dict[str, Any]]:
    name = "late_small_rise"
    out = fresh(name)
    sg.seed_all(22)
    g = torch.Generator().manual_seed(22)
    w = torch.randn(16, generator=g)
    n = 8192
    x, xv = torch.randn(n, 16, generator=g), torch.randn(1024, 16, generator=g)
    y = torch.tanh(x @ w / 4) + 0.02 * torch.randn(n, generator=g)
    yv = torch.tanh(xv @ w / 4) + 0.02 * torch.randn(1024, generator=g)
    model = sg.mlp(16, 32, 2, 1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    epochs = 500

    def lr_at(epoch: int) -> float:  # cosine to the end, with the next cycle's restart starting at epoch 486
        if epoch >= 486:
            return 3e-3 * 0.5
        return 3e-4 + (3e-3 - 3e-4) * 0.5 * (1 + math.cos(math.pi * epoch / 486))

    rows = []
    for epoch in range(epochs):
        for group in opt.param_groups:
            group["lr"] = lr_at(epoch)
        perm = torch.randperm(n, generator=g)
        total = 0.0
        for chunk in perm.split(1024):
            loss = F.mse_loss(model(x[chunk]).squeeze(1), y[chunk])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(chunk)
        with torch.no_grad():
            v = F.mse_loss(model(xv).squeeze(1), yv).item()
        rows.append({"epoch": epoch, "loss": total / n, "val_loss": v, "lr": lr_at(epoch)})
    with open(out / "training.log", "w", newline="") as handle:  # Keras CSVLogger's layout
        writer = csv.DictWriter(handle, fieldnames=["epoch", "loss", "lr", "val_loss"])
        writer.writeheader()
        writer.writerows(rows)
    val = [(r["epoch"], r["val_loss"]) for r in rows]
    best = min(v for _, v in val)
    tail = float(np.median([v for _, v in val[-15:]]))
    return {name: label("normal", kind="tiny_late_rise", fmt="keras_csv", logger="CSV in Keras CSVLogger layout",
                        train_tag="loss", val_tag="val_loss", train=[(r["epoch"], r["loss"]) for r in rows], val=val,
                        late_rise_pct=round(100 * (tail / best - 1), 2),
                        why="500 epochs of a small regression net; a learning-rate restart in the last 3% of the "
                            "run lifts the validation loss by a few percent: far too little and too late to call "
                            "overfitting")}


def hf_worker(cfg: dict[str, Any]) -> None:
    """A tiny GPT-2 under the HF Trainer (run in its own process, in the run's folder)."""
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    sg.seed_all(cfg["seed"])
    data = sg.CharData(block_size=32)

    class Windows(torch.utils.data.Dataset):
        def __init__(self, split: str, n: int, seed: int) -> None:
            self.x, _ = data.batch(split, n, torch.Generator().manual_seed(seed))

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            return {"input_ids": self.x[i], "labels": self.x[i]}

    if cfg.get("init_from"):  # a fine-tune: the weights another Trainer saved
        model = GPT2LMHeadModel.from_pretrained(cfg["init_from"])
    else:
        model = GPT2LMHeadModel(GPT2Config(vocab_size=data.vocab_size, n_positions=32, n_embd=cfg["n_embd"],
                                           n_layer=cfg.get("n_layer", 2), n_head=2, bos_token_id=0, eos_token_id=0))
    train = Windows(cfg.get("train_split", "train"), cfg["n_train"], cfg["seed"])
    args = TrainingArguments(
        output_dir=".", max_steps=cfg["max_steps"], per_device_train_batch_size=cfg.get("batch", 16),
        per_device_eval_batch_size=64, learning_rate=cfg["lr"], warmup_steps=cfg.get("warmup_steps", 0),
        lr_scheduler_type="linear", weight_decay=0.0, logging_steps=cfg.get("logging_steps", 10),
        eval_strategy="steps" if cfg.get("eval_steps") else "no", eval_steps=cfg.get("eval_steps"),
        max_grad_norm=cfg.get("max_grad_norm", 1.0), save_strategy="no", report_to="none", seed=cfg["seed"],
        use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
    )
    evaluation = train if cfg.get("eval_on_train") else Windows("val", 128, cfg["seed"] + 1)
    trainer = Trainer(model=model, args=args, train_dataset=train,
                      eval_dataset=evaluation if cfg.get("eval_steps") else None)
    trainer.train()
    trainer.save_state()
    if cfg.get("save_model"):
        trainer.save_model(cfg["save_model"])  # the weights and the model's config.json


def hf_run(name: str, cfg: dict[str, Any], *, transformers4: bool = False, out: Path | None = None
           ) -> dict[str, list[tuple[int, float]]]:
    """Run :func:`hf_worker` in the run's folder (or ``out``); with ``transformers4``, under the 4.x Trainer found
    in the folder named by ``$HARDCASES_TRANSFORMERS4`` (``pip install --no-deps --target DIR transformers==4.46.3
    tokenizers==0.20.3 huggingface_hub==0.26.5``): the 4.x Trainer rounds the logged loss to 4 decimals."""
    out = out or fresh(name)
    env = dict(os.environ)
    if transformers4:
        if not os.environ.get("HARDCASES_TRANSFORMERS4"):
            raise RuntimeError(f"{name} needs $HARDCASES_TRANSFORMERS4 (see hf_run's doc)")
        env["PYTHONPATH"] = os.environ["HARDCASES_TRANSFORMERS4"]
    with open(out / "console.log", "wb") as handle:  # the worker's console, kept only on failure
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", "hf", json.dumps(cfg)],
                              stdout=handle, stderr=subprocess.STDOUT, cwd=out, check=False, env=env)
    if proc.returncode:
        raise RuntimeError(f"HF worker for {name} exited {proc.returncode}; see {out / 'console.log'}")
    (out / "console.log").unlink()
    return sg.read_hf_state(out / "trainer_state.json")


@register
def run_hf_rounded() -> dict[str, dict[str, Any]]:
    name = "hf_rounded"
    s = hf_run(name, {"seed": 23, "lr": 5e-3, "max_steps": 800, "n_embd": 64, "n_train": 4, "warmup_steps": 20,
                      "logging_steps": 5, "eval_steps": 100, "eval_on_train": True}, transformers4=True)
    return {name: label("normal", kind="rounded", fmt="hf_trainer_state", logger="transformers.Trainer trainer_state.json",
                        train_tag="loss", val_tag="eval_loss", train=s["loss"], val=s["eval_loss"],
                        why="a tiny GPT-2 memorising 4 windows (evaluated on the same windows): the 4.x Trainer "
                            "rounds the logged loss to 4 decimals, so near the end it moves in quanta of 0.0001 "
                            "(0.0001 -> 0.0002 is one quantum, not a 2x spike)")}


@register
def run_llm_clip() -> dict[str, dict[str, Any]]:
    name = "llm_clip"
    s = hf_run(name, {"seed": 24, "lr": 1e-3, "max_steps": 500, "n_embd": 96, "n_layer": 3, "n_train": 4000,
                      "batch": 4, "warmup_steps": 30, "logging_steps": 5, "eval_steps": 100, "max_grad_norm": 1.0})
    norms = [v for _, v in s["grad_norm"]]
    return {name: label("normal", kind="clipped", fmt="hf_trainer_state", logger="transformers.Trainer trainer_state.json",
                        train_tag="loss", val_tag="eval_loss", train=s["loss"], val=s["eval_loss"],
                        max_grad_norm=1.0, share_grad_norm_above_1=round(sum(v > 1 for v in norms) / len(norms), 3),
                        why="an LLM-like fine-tune (tiny GPT-2, batches of 4, AdamW, max_grad_norm 1.0): the logged "
                            "pre-clip gradient norm sits above 1 almost all the time and is clipped; a healthy run")}


#: The tiny GPT-2 the fine-tune cases start from: 600 steps on the training split, as ``llm_clip`` trains.
PRETRAIN = {"seed": 31, "lr": 1e-3, "max_steps": 600, "n_embd": 96, "n_layer": 3, "n_train": 4000, "batch": 8,
            "warmup_steps": 30, "logging_steps": 20}


def config_only(folder: Path) -> None:
    """Keep the model's ``config.json`` a Trainer saved in ``folder``, not its weights and tokenizer files."""
    for path in folder.iterdir():
        if path.is_file() and path.name not in ("trainer_state.json", "config.json"):
            path.unlink()


def model_config_case(name: str, out: Path, cfg: dict[str, Any], truth: str, kind: str, why: str
                      ) -> dict[str, dict[str, Any]]:
    """A tiny GPT-2 trained under the HF Trainer into ``out``, which keeps its state and the model's config.json."""
    s = hf_run(name, {**cfg, "save_model": "."}, out=out)
    config_only(out)
    loss = [v for _, v in s["loss"]]
    return {name: label(truth, kind=kind, fmt="hf_trainer_state", logger="transformers.Trainer trainer_state.json",
                        train_tag="loss", val_tag="eval_loss", train=s["loss"], val=s["eval_loss"],
                        first_loss=round(loss[0], 4), last_loss=round(loss[-1], 4), why=why)}


@register
def run_finetune_small_fall() -> dict[str, dict[str, Any]]:
    import tempfile

    name = "finetune_small_fall"
    out = fresh(name)
    with tempfile.TemporaryDirectory() as scratch:
        weights = Path(scratch) / "pretrained"
        hf_run(name, {**PRETRAIN, "save_model": str(weights)}, out=Path(scratch))
        return model_config_case(
            name, out, {"seed": 32, "lr": 1e-4, "max_steps": 300, "n_train": 2000, "batch": 8, "warmup_steps": 10,
                        "logging_steps": 5, "eval_steps": 50, "train_split": "val", "init_from": str(weights)},
            "normal", "finetune",
            "a fine-tune of a tiny GPT-2 pretrained by another Trainer (its weights loaded with from_pretrained, its "
            "config.json saved beside the state) on text it has not seen, at lr 1e-4: the loss starts near where the "
            "pretraining ended, falls a few percent and levels off, and the evaluation loss with it. A fine-tune "
            "converging, not a model that cannot fit its data")


@register
def run_scratch_tiny_lr() -> dict[str, dict[str, Any]]:
    name = "scratch_tiny_lr"
    return model_config_case(
        name, fresh(name), {**PRETRAIN, "seed": 33, "lr": 3e-7, "max_steps": 300, "logging_steps": 5, "eval_steps": 50},
        "underfitting", "tiny_lr",
        "the same tiny GPT-2 trained from scratch at lr 3e-7 (its config.json beside the state names a "
        "GPT2LMHeadModel, as a fine-tune's does): the loss starts at ln(vocab) and hardly moves. The model is not "
        "learning")


def reinforce_cartpole(*, name: str, lr: float, episodes: int, seed: int) -> dict[str, list[tuple[int, float]]]:
    """REINFORCE with normalised discounted returns on gymnasium's CartPole-v1 (a 64-unit MLP policy, Adam),
    one update per episode, logged per episode: the episode's reward, the policy's mean entropy over the
    episode and its loss."""
    import gymnasium as gym

    sg.seed_all(seed)
    env = gym.make("CartPole-v1")
    policy = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    tb = TB(fresh(name))
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed * 100_000 + episode)
        log_probs, entropies, rewards = [], [], []
        done = False
        while not done:
            dist = torch.distributions.Categorical(logits=policy(torch.as_tensor(obs, dtype=torch.float32)))
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            entropies.append(dist.entropy())
            obs, reward, terminated, truncated, _ = env.step(int(action))
            rewards.append(float(reward))
            done = terminated or truncated
        returns, running = [], 0.0
        for reward in reversed(rewards):
            running = reward + 0.99 * running
            returns.append(running)
        g = torch.tensor(returns[::-1])
        g = (g - g.mean()) / (g.std() + 1e-8) if len(g) > 1 else g * 0
        loss = -(torch.stack(log_probs) * g).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        tb("episode/reward", sum(rewards), episode)
        tb("policy/entropy", float(torch.stack(entropies).mean()), episode)
        tb("policy/loss", loss.item(), episode)
    env.close()
    return tb.close()


def _rl_label(regime: str, series: dict[str, list[tuple[int, float]]], why: str) -> dict[str, Any]:
    rewards = [v for _, v in series["episode/reward"]]
    tenth = max(2, len(rewards) // 10)
    return label(regime, kind="rl", fmt="tensorboard", logger=TB_LOGGER, train_tag="policy/loss", val_tag=None,
                 train=series["policy/loss"], why=why, reward_tag="episode/reward",
                 reward_first_tenth=float(np.median(rewards[:tenth])), reward_last_tenth=float(np.median(rewards[-tenth:])))


#: The RL hard cases: name -> (truth, Adam learning rate, seed, why). Each is REINFORCE on CartPole for 400 episodes.
RL_RUNS: dict[str, tuple[str, float, int, str]] = {
    "rl_learns": ("normal", 5e-3, 21, "REINFORCE on CartPole-v1 with Adam at 5e-3: the episode reward climbs from ~25 "
                  "to the 500 cap (with one dip on the way, as policy gradients do) and stays there; a policy-gradient "
                  "loss that swings by design"),
    "rl_entropy_collapse": ("unstable", 5e-2, 24, "the same REINFORCE with Adam at 5e-2, far too high: within ten "
                            "episodes the policy entropy falls from ln 2 to ~0 (one action always) and the episode "
                            "reward sits at ~9, below a random policy's ~20"),
    "rl_not_learning": ("underfitting", 1e-6, 22, "the same REINFORCE with Adam at 1e-6: the policy barely moves, the "
                        "episode reward stays at a random policy's ~20 for all 400 episodes"),
}


def _rl_run(name: str) -> Callable[[], dict[str, dict[str, Any]]]:
    truth, lr, seed, why = RL_RUNS[name]

    def run() -> dict[str, dict[str, Any]]:
        return {name: _rl_label(truth, reinforce_cartpole(name=name, lr=lr, episodes=400, seed=seed), why)}

    return run


for _name in RL_RUNS:
    RUNS[_name] = _rl_run(_name)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="regenerate only these runs (LABELS.json is updated in place)")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        hf_worker(json.loads(args.worker[1]))
        return 0
    names = args.only or list(RUNS)
    unknown = sorted(set(names) - set(RUNS))
    if unknown:
        parser.error(f"unknown run(s) {unknown}; known: {', '.join(RUNS)}")
    labels_file = HERE / "LABELS.json"
    labels = json.loads(labels_file.read_text())["runs"] if labels_file.exists() and args.only else {}
    for run in names:
        start = time.time()
        for key in [k for k in labels if k == run or k.startswith(run + "/")]:
            del labels[key]
        labels.update(RUNS[run]())
        print(f"{run}: {time.time() - start:.1f} s", flush=True)
    ordered = {k: labels[k] for k in sorted(labels)}
    labels_file.write_text(json.dumps({"about": "truth of the hard cases; see generate.py and README.md",
                                       "runs": ordered}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
