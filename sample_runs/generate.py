#!/usr/bin/env python
"""Regenerate the bundled sample runs by really training tiny models on CPU.

Every run here is a real training job: a small MLP or a tiny character-level
Transformer trained on data made in this file (nothing is downloaded), logged
by the real logging library of its format. Each regime is produced by its
cause (a learning rate far too high or too small, a tiny train set with a big
model, a slowed data loader, a resumed job …), never by editing numbers, and
every value in ``LABELS.json`` is computed from what the run logged.

Run it in its own virtual environment (see README.md); the project itself does
not depend on torch::

    python sample_runs/generate.py            # every run, then LABELS.json
    python sample_runs/generate.py --only normal_tensorboard overfit_lightning
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# Offline everywhere: a sample run must never reach a server.
os.environ.update(
    {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
    }
)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(1)

VAL_WINDOW = 0.01  # val_min_window: steps whose val loss is within 1 % of the minimum
EXPLOSION_FACTOR = 10.0  # explosion: loss above 10x its running minimum, and never back below


# --------------------------------------------------------------------------- data


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def teacher_data(n: int, *, seed: int, noise: float = 0.0, d: int = 16, k: int = 4):
    """Points labelled by a fixed random two-layer "teacher" network (a nonlinear boundary).

    ``noise`` is the fraction of labels replaced by a random class: what a tiny
    train set lets a big model memorise.
    """
    g_teacher = torch.Generator().manual_seed(20240)
    w1 = torch.randn(d, 64, generator=g_teacher)
    w2 = torch.randn(64, k, generator=g_teacher)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (torch.tanh(x @ w1 / math.sqrt(d)) @ w2).argmax(1)
    if noise:
        flip = torch.rand(n, generator=g) < noise
        y = torch.where(flip, torch.randint(0, k, (n,), generator=g), y)
    return x, y


def corpus(n_sentences: int = 3000, seed: int = 7) -> str:
    """A small English-like text from a fixed grammar: the data of the character-level models."""
    r = random.Random(seed)
    subj = ["the cat", "a dog", "my friend", "the old man", "a small bird", "the teacher", "our neighbour", "the child"]
    verb = ["sees", "likes", "follows", "paints", "finds", "carries", "watches", "remembers"]
    obj = ["a red ball", "the green door", "an apple", "the river", "a quiet song", "the long road", "a blue kite"]
    tail = ["today", "at night", "slowly", "again", "in the rain", "every morning", "with care", ""]
    lines = []
    for _ in range(n_sentences):
        words = f"{r.choice(subj)} {r.choice(verb)} {r.choice(obj)}"
        end = r.choice(tail)
        lines.append(f"{words} {end}.".replace(" .", "."))
    return "\n".join(lines) + "\n"


class CharData:
    """The corpus as character ids, split 90/10 into train and val, sampled in random windows."""

    def __init__(self, block_size: int = 32) -> None:
        text = corpus()
        self.chars = sorted(set(text))
        stoi = {c: i for i, c in enumerate(self.chars)}
        data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
        n = int(0.9 * len(data))
        self.train, self.val = data[:n], data[n:]
        self.block_size = block_size

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def batch(self, split: str, batch_size: int, generator: torch.Generator):
        src = self.train if split == "train" else self.val
        ix = torch.randint(len(src) - self.block_size - 1, (batch_size,), generator=generator)
        x = torch.stack([src[i : i + self.block_size] for i in ix])
        y = torch.stack([src[i + 1 : i + 1 + self.block_size] for i in ix])
        return x, y


# --------------------------------------------------------------------------- models


def mlp(d_in: int, width: int, depth: int, d_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    d = d_in
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    layers.append(nn.Linear(d, d_out))
    return nn.Sequential(*layers)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    """A nanoGPT-shaped character model: token + position embeddings, pre-LN blocks, a linear head."""

    def __init__(self, vocab_size: int, block_size: int, n_embd: int, n_layer: int, n_head: int) -> None:
        super().__init__()
        self.block_size, self.n_layer, self.n_head, self.n_embd = block_size, n_layer, n_head, n_embd
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor):
        pos = torch.arange(idx.size(1))
        x = self.ln_f(self.blocks(self.wte(idx) + self.wpe(pos)))
        logits = self.lm_head(x)
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters()) - self.wpe.weight.numel()

    def estimate_mfu(self, fwdbwd_per_iter: int, dt: float, flops_promised: float) -> float:
        """nanoGPT's PaLM-appendix estimate of model FLOPs utilisation."""
        n, t = self.num_params(), self.block_size
        flops_per_token = 6 * n + 12 * self.n_layer * self.n_head * (self.n_embd // self.n_head) * t
        flops_per_iter = flops_per_token * t * fwdbwd_per_iter
        return flops_per_iter / dt / flops_promised


def grad_total_norm(params) -> float:
    """The total 2-norm of the gradients, as clip_grad_norm_ returns it (no clipping)."""
    return float(torch.nn.utils.clip_grad_norm_(params, float("inf")))


# --------------------------------------------------------------------------- reading back what was logged


def read_tensorboard(run_dir: Path) -> dict[str, list[tuple[int, float, float]]]:
    """Scalars of every event file in ``run_dir``, in write order (files sorted by name)."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    from tensorboard.util import tensor_util

    out: dict[str, list[tuple[int, float, float]]] = {}
    for path in sorted(run_dir.glob("events.out.tfevents.*")):
        for event in LegacyEventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    v = float(value.simple_value)
                elif value.HasField("tensor") and value.metadata.plugin_data.plugin_name == "scalars":
                    v = float(tensor_util.make_ndarray(value.tensor))
                else:
                    continue
                out.setdefault(value.tag, []).append((int(event.step), v, float(event.wall_time)))
    return out


def read_hf_state(path: Path) -> dict[str, list[tuple[int, float]]]:
    state = json.loads(path.read_text())
    out: dict[str, list[tuple[int, float]]] = {}
    for entry in state["log_history"]:
        for key, value in entry.items():
            if key not in ("step", "epoch") and isinstance(value, (int, float)):
                out.setdefault(key, []).append((int(entry["step"]), float(value)))
    return out


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TQDM_BAR = re.compile(r"\|\s*(\d+)/(\d+) \[")


def read_hf_console(path: Path) -> dict[str, list[tuple[int, float]]]:
    """The ``{'loss': '1.23', …}`` dicts the Trainer prints (values as strings since transformers 5).

    The dicts carry no step; the step is the training bar's ``N/total`` that tqdm redraws right after
    the dict (the bar drawn before it lags behind by up to its refresh interval).
    """
    import ast

    lines = ANSI.sub("", path.read_text(errors="replace")).replace("\r", "\n").splitlines()
    bars = [(i, int(m.group(1)), int(m.group(2))) for i, line in enumerate(lines) if (m := TQDM_BAR.search(line))]
    main_total = max(total for _, _, total in bars)
    out: dict[str, list[tuple[int, float]]] = {}
    for i, line in enumerate(lines):
        text = line.strip()
        if not (text.startswith("{'") and text.endswith("}")):
            continue
        step = next(n for j, n, total in bars if j > i and total == main_total)
        for key, value in ast.literal_eval(text).items():
            with contextlib.suppress(TypeError, ValueError):
                if key != "epoch":
                    out.setdefault(key, []).append((step, float(value)))
    return out


def read_lightning(path: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            for key, value in row.items():
                if key not in ("step", "epoch") and value != "":
                    out.setdefault(key, []).append((int(row["step"]), float(value)))
    return out


NANOGPT_ITER = re.compile(r"^iter (\d+): loss (\S+), time ([\d.]+)ms, mfu (-?[\d.]+)%")
NANOGPT_EVAL = re.compile(r"^step (\d+): train loss (\S+), val loss (\S+)")


def read_nanogpt(path: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for line in path.read_text().splitlines():
        if m := NANOGPT_ITER.match(line):
            step = int(m.group(1))
            out.setdefault("loss", []).append((step, float(m.group(2))))
            out.setdefault("time_ms", []).append((step, float(m.group(3))))
            out.setdefault("mfu", []).append((step, float(m.group(4))))
        elif m := NANOGPT_EVAL.match(line):
            step = int(m.group(1))
            out.setdefault("train loss", []).append((step, float(m.group(2))))
            out.setdefault("val loss", []).append((step, float(m.group(3))))
    return out


def read_wandb_history(path: Path) -> dict[str, list[tuple[int, float]]]:
    """History rows from a ``.wandb`` transaction log (LevelDB log framing of protobuf Records)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    block, header = 32768, 7
    pos = 7  # ":W&B" magic, 2-byte ident, 1-byte version
    records, pending = [], b""
    while pos + header <= len(data):
        offset_in_block = pos % block
        if block - offset_in_block < header:
            pos += block - offset_in_block
            continue
        length, kind = struct.unpack("<HB", data[pos + 4 : pos + 7])
        chunk = data[pos + header : pos + header + length]
        pos += header + length
        if kind == 1:  # FULL
            records.append(chunk)
        elif kind == 2:  # FIRST
            pending = chunk
        elif kind == 3:  # MIDDLE
            pending += chunk
        elif kind == 4:  # LAST
            records.append(pending + chunk)
            pending = b""
        elif kind == 0 and length == 0:
            break
    out: dict[str, list[tuple[int, float]]] = {}
    for raw in records:
        record = pb.Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") != "history":
            continue
        items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
        step = int(items.get("_step", record.history.step.num))
        for key, value in items.items():
            if not key.startswith("_") and isinstance(value, (int, float)):
                out.setdefault(key, []).append((step, float(value)))
            elif isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
                out.setdefault(key, []).append((step, float(value.replace("Infinity", "inf"))))
    return out


# --------------------------------------------------------------------------- labels


def _pairs(series) -> list[tuple[int, float]]:
    return [(int(p[0]), float(p[1])) for p in series]


def val_minimum(series) -> tuple[int | None, list[int] | None]:
    points = [(s, v) for s, v in _pairs(series) if math.isfinite(v)]
    if not points:
        return None, None
    step, best = min(points, key=lambda p: (p[1], p[0]))
    near = [s for s, v in points if v <= best * (1 + VAL_WINDOW)]
    return step, [min(near), max(near)]


def first_nonfinite(series) -> tuple[int | None, str | None]:
    for s, v in _pairs(series):
        if not math.isfinite(v):
            return s, "nan" if math.isnan(v) else "inf"
    return None, None


def explosion_onset(series) -> int | None:
    """First step from which the loss stays above EXPLOSION_FACTOR x its running minimum (non-finite counts as above)."""
    points = _pairs(series)
    onset, running_min = None, math.inf
    for s, v in points:
        above = not math.isfinite(v) or (math.isfinite(running_min) and v > EXPLOSION_FACTOR * running_min)
        if above:
            onset = s if onset is None else onset
        else:
            onset = None
            running_min = min(running_min, v)
    return onset


def make_label(
    *,
    regime: str,
    fmt: str,
    logger: str,
    train_tag: str,
    val_tag: str | None,
    train,
    val=None,
    cause: str,
    notes: str = "",
    borderline: bool = False,
    restart_step: int | None = None,
    truncated: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """One run's truth, computed from the series it logged (as read back from its files)."""
    train = _pairs(train)
    nonfinite_step, nonfinite_kind = first_nonfinite(train)
    explosion = explosion_onset(train)
    if regime == "diverged":
        if nonfinite_step is not None:
            divergence_step, divergence_kind = nonfinite_step, nonfinite_kind
        elif explosion is not None:
            divergence_step, divergence_kind = explosion, "explosion"
        else:
            raise RuntimeError(f"{fmt} run labelled diverged shows neither a non-finite loss nor an explosion")
    else:
        if nonfinite_step is not None:
            raise RuntimeError(f"{regime} run has a non-finite train loss at step {nonfinite_step}")
        divergence_step, divergence_kind = None, None
    val_min_step, window = val_minimum(val) if val else (None, None)
    steps = [s for s, _ in train]
    relogged = sorted({s for s in steps if steps.count(s) > 1})
    label = {
        "regime": regime,
        "borderline": borderline,
        "format": fmt,
        "logger": logger,
        "train_loss_tag": train_tag,
        "val_loss_tag": val_tag,
        "divergence_step": divergence_step,
        "divergence_kind": divergence_kind,
        "val_min_step": val_min_step,
        "val_min_window": window,
        "restart_step": restart_step,
        "overlap_steps": [relogged[0], relogged[-1]] if relogged else None,
        "truncated": truncated,
        "train_steps": [min(steps), max(steps)],
        "train_points": len(train),
        "val_points": len(val) if val else 0,
        "cause": cause,
        "notes": notes,
    }
    if regime == "diverged" and divergence_kind in ("nan", "inf") and explosion is not None and explosion < divergence_step:
        label["explosion_step"] = explosion
    label.update(extra)
    return label


def check_regime(name: str, label: dict[str, Any], train, val) -> None:
    """Refuse to label a run whose logged curves do not show its regime (regenerate with other settings)."""
    regime = label["regime"]
    train_v = [v for _, v in _pairs(train) if math.isfinite(v)]
    first = statistics.mean(train_v[: max(3, len(train_v) // 20)])
    last = statistics.mean(train_v[-max(3, len(train_v) // 10) :])
    problems = []
    if regime == "normal" and not last < 0.6 * first:
        problems.append(f"train loss fell only from {first:.3f} to {last:.3f}")
    if regime == "underfitting" and not last > 0.9 * first:
        problems.append(f"train loss fell from {first:.3f} to {last:.3f}: that is learning")
    if regime == "overfitting":
        val_v = _pairs(val)
        best = min(v for _, v in val_v)
        if not val_v[-1][1] > 1.3 * best or label["val_min_step"] >= val_v[-1][0] * 0.5:
            problems.append(f"val minimum {best:.3f} at {label['val_min_step']}, final {val_v[-1][1]:.3f}")
    if regime == "unstable":
        rel = [abs(b - a) / a for a, b in zip(train_v, train_v[1:], strict=False)]
        if statistics.median(rel) < 0.1:
            problems.append(f"median step-to-step change {statistics.median(rel):.3f}: not oscillating")
    if problems:
        raise RuntimeError(f"{name}: curves do not show {regime}: {'; '.join(problems)}")


# --------------------------------------------------------------------------- run helpers


@contextlib.contextmanager
def scoped_env(**values: str):
    """Environment variables set for one run only (so that, say, W&B's do not reach the HF workers)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def run_worker(
    args: list[str], log_file: Path, *, cwd: Path, append: bool = False, expect_fail: bool = False
) -> None:
    """Run a part of this script as its own process in ``cwd``, its console captured to ``log_file`` (``2>&1``).

    Paths handed to the worker are relative to ``cwd`` so that no machine path ends up in a log.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab" if append else "wb") as handle:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--worker", *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            check=False,
        )
    if (proc.returncode != 0) != expect_fail:
        raise RuntimeError(f"worker {args} exited {proc.returncode}; see {log_file}")


def classification_loop(
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_xy,
    val_xy,
    steps: int,
    batch_size: int,
    eval_every: int,
    log: Callable[[str, float, int], None],
    lr_at: Callable[[int], float] | None = None,
    clip: float | None = None,
    seed: int = 0,
    start_step: int = 1,
    loss_fn: Callable = F.cross_entropy,
    on_step: Callable[[int], None] | None = None,
) -> None:
    """A plain training loop over random mini-batches; logs train loss, lr and grad norm every step."""
    xt, yt = train_xy
    xv, yv = val_xy
    g = torch.Generator().manual_seed(seed)
    for step in range(start_step, steps + 1):
        if lr_at is not None:
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step)
        idx = torch.randint(0, len(xt), (min(batch_size, len(xt)),), generator=g)
        model.train()
        loss = loss_fn(model(xt[idx]), yt[idx])
        optimizer.zero_grad()
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip if clip else float("inf")))
        optimizer.step()
        log("train/loss", loss.item(), step)
        log("train/lr", optimizer.param_groups[0]["lr"], step)
        log("train/grad_norm", norm, step)
        if step % eval_every == 0:
            model.eval()
            with torch.no_grad():
                out = model(xv)
                log("val/loss", loss_fn(out, yv).item(), step)
                if loss_fn is F.cross_entropy:
                    log("val/accuracy", (out.argmax(1) == yv).float().mean().item(), step)
        if on_step is not None:
            on_step(step)


def warmup_cosine(peak: float, warmup: int, total: int, floor: float = 0.1) -> Callable[[int], float]:
    def lr_at(step: int) -> float:
        if step <= warmup:
            return peak * step / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))

    return lr_at


# --------------------------------------------------------------------------- the runs

RUNS: dict[str, Callable[[], dict[str, Any]]] = {}


def register(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    RUNS[fn.__name__.removeprefix("run_")] = fn
    return fn


@register
def run_normal_tensorboard() -> dict[str, Any]:
    from torch.utils.tensorboard import SummaryWriter

    out = fresh(HERE / "normal_tensorboard")
    seed_all(1)
    train_xy, val_xy = teacher_data(4000, seed=11), teacher_data(2000, seed=12)
    model = mlp(16, 64, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = 800
    writer = SummaryWriter(log_dir=str(out))
    writer.add_text("config", "MLP 16-64-64-4, Adam peak lr 3e-3, warmup 40 + cosine, batch 64, 4000 samples")
    layers = {"hidden1": model[0], "output": model[4]}

    def on_step(step: int) -> None:
        if step % 100 == 0:
            for name, layer in layers.items():
                writer.add_histogram(f"weights/{name}", layer.weight, step)
                writer.add_histogram(f"grads/{name}", layer.weight.grad, step)

    classification_loop(
        model=model, optimizer=opt, train_xy=train_xy, val_xy=val_xy, steps=total, batch_size=64, eval_every=20,
        log=lambda tag, v, s: writer.add_scalar(tag, v, s), lr_at=warmup_cosine(3e-3, 40, total), seed=1,
        on_step=on_step,
    )
    writer.close()
    scalars = read_tensorboard(out)
    label = make_label(
        regime="normal", fmt="tensorboard", logger="torch.utils.tensorboard.SummaryWriter",
        train_tag="train/loss", val_tag="val/loss", train=scalars["train/loss"], val=scalars["val/loss"],
        cause="MLP (16-64-64-4) on 4000 teacher-labelled points, Adam with warmup + cosine decay: a healthy run",
        notes="weight and gradient histograms of two layers every 100 steps (weights/hidden1, grads/hidden1, "
        "weights/output, grads/output); a text summary 'config'",
        histogram_tags=sorted({"weights/hidden1", "grads/hidden1", "weights/output", "grads/output"}),
    )
    check_regime("normal_tensorboard", label, scalars["train/loss"], scalars["val/loss"])
    return {"runs": {"normal_tensorboard": label}}


@register
def run_underfit_tensorboardx() -> dict[str, Any]:
    from tensorboardX import SummaryWriter

    out = fresh(HERE / "underfit_tensorboardx")
    seed_all(2)
    train_xy, val_xy = teacher_data(4000, seed=21), teacher_data(2000, seed=22)
    model = mlp(16, 64, 2, 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    writer = SummaryWriter(logdir=str(out))
    classification_loop(
        model=model, optimizer=opt, train_xy=train_xy, val_xy=val_xy, steps=800, batch_size=64, eval_every=20,
        log=lambda tag, v, s: writer.add_scalar(tag, v, s), seed=2,
    )
    writer.close()
    scalars = read_tensorboard(out)
    label = make_label(
        regime="underfitting", fmt="tensorboard", logger="tensorboardX.SummaryWriter",
        train_tag="train/loss", val_tag="val/loss", train=scalars["train/loss"], val=scalars["val/loss"],
        cause="the same MLP and data as normal_tensorboard, plain SGD with lr 1e-4 (about 1000x too small): "
        "train and val loss stay near the chance level ln(4) = 1.386",
    )
    check_regime("underfit_tensorboardx", label, scalars["train/loss"], scalars["val/loss"])
    return {"runs": {"underfit_tensorboardx": label}}


@register
def run_diverged_tensorboard() -> dict[str, Any]:
    from torch.utils.tensorboard import SummaryWriter

    out = fresh(HERE / "diverged_tensorboard")
    seed_all(3)
    train_xy, val_xy = teacher_data(4000, seed=31), teacher_data(2000, seed=32)
    model = mlp(16, 128, 3, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    total = 700
    peak = 3.0

    def lr_at(step: int) -> float:  # linear warmup to a peak far above what the model can take
        return peak * min(1.0, step / 500)

    writer = SummaryWriter(log_dir=str(out))
    classification_loop(
        model=model, optimizer=opt, train_xy=train_xy, val_xy=val_xy, steps=total, batch_size=64, eval_every=20,
        log=lambda tag, v, s: writer.add_scalar(tag, v, s), lr_at=lr_at, clip=None, seed=3,
    )
    writer.close()
    scalars = read_tensorboard(out)
    label = make_label(
        regime="diverged", fmt="tensorboard", logger="torch.utils.tensorboard.SummaryWriter",
        train_tag="train/loss", val_tag="val/loss", train=scalars["train/loss"], val=scalars["val/loss"],
        cause=f"MLP (16-128x3-4), plain SGD with the lr warmed up linearly over 500 steps to {peak} (far too high), "
        "no gradient clipping: learns at first, then the loss explodes and becomes non-finite; the run goes on "
        "logging NaN to the end",
    )
    return {"runs": {"diverged_tensorboard": label}}


def _lightning_overfit(out: Path) -> None:
    import lightning as L
    from lightning.pytorch.callbacks import LearningRateMonitor
    from lightning.pytorch.loggers import CSVLogger

    class Classifier(L.LightningModule):
        def __init__(self, width: int = 512, lr: float = 5e-5) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.net = mlp(16, width, 2, 4)

        def training_step(self, batch, _):
            x, y = batch
            loss = F.cross_entropy(self.net(x), y)
            self.log("train_loss", loss, on_step=True, on_epoch=False)
            return loss

        def on_before_optimizer_step(self, optimizer) -> None:
            self.log("grad_norm", grad_total_norm(self.parameters()), on_step=True, on_epoch=False)

        def validation_step(self, batch, _):
            x, y = batch
            out = self.net(x)
            self.log("val_loss", F.cross_entropy(out, y), on_epoch=True)
            self.log("val_acc", (out.argmax(1) == y).float().mean(), on_epoch=True)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    L.seed_everything(4, workers=True)
    xt, yt = teacher_data(128, seed=41, noise=0.25)
    xv, yv = teacher_data(2000, seed=42, noise=0.25)
    train = torch.utils.data.DataLoader(list(zip(xt, yt, strict=True)), batch_size=32, shuffle=True)
    val = torch.utils.data.DataLoader(list(zip(xv, yv, strict=True)), batch_size=500)
    trainer = L.Trainer(
        max_epochs=300, accelerator="cpu", devices=1, logger=CSVLogger(save_dir=str(out)),
        callbacks=[LearningRateMonitor(logging_interval="step")], log_every_n_steps=1,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, deterministic=True,
    )
    trainer.fit(Classifier(), train, val)


@register
def run_overfit_lightning() -> dict[str, Any]:
    out = fresh(HERE / "overfit_lightning")
    _lightning_overfit(out)
    run_dir = out / "lightning_logs" / "version_0"
    series = read_lightning(run_dir / "metrics.csv")
    label = make_label(
        regime="overfitting", fmt="lightning_csv", logger="lightning.pytorch.loggers.CSVLogger",
        train_tag="train_loss", val_tag="val_loss", train=series["train_loss"], val=series["val_loss"],
        cause="MLP 16-512-512-4 (270k parameters) on 128 training points with 25% noisy labels, Adam lr 5e-5, "
        "no regularisation, 300 epochs: train loss goes to ~0 while val loss passes a minimum and climbs",
        notes="train rows every step; val_loss / val_acc rows once per epoch (4 steps); lr-Adam from "
        "LearningRateMonitor; grad_norm is the total gradient 2-norm before each optimizer step",
    )
    check_regime("overfit_lightning", label, series["train_loss"], series["val_loss"])
    return {"runs": {"overfit_lightning/lightning_logs/version_0": label}}


@register
def run_overfit_wandb() -> dict[str, Any]:
    with scoped_env(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_CODE="true", WANDB_DISABLE_GIT="true"):
        return _overfit_wandb()


def _overfit_wandb() -> dict[str, Any]:
    import wandb

    out = fresh(HERE / "overfit_wandb")
    seed_all(5)
    xt, yt = teacher_data(200, seed=51, noise=0.2)
    xv, yv = teacher_data(2000, seed=52, noise=0.2)
    config = {"width": 256, "depth": 3, "lr": 2e-4, "train_points": 200, "label_noise": 0.2, "batch_size": 64}
    run = wandb.init(
        project="tanalyze-samples", name="overfit_wandb", id="ovfit001", dir=str(out), config=config,
        settings=wandb.Settings(
            # system metrics on (CPU, host memory, disk, network: no GPU here), sampled every second so that
            # this short run gets a resources panel; metadata and machine info stay off (no host or paths)
            mode="offline", x_disable_meta=True, x_disable_stats=False, x_stats_sampling_interval=1.0,
            disable_git=True, save_code=False, x_save_requirements=False, console="wrap",
        ),
    )
    model = mlp(16, 256, 3, 4)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    logged: dict[str, list[tuple[int, float]]] = {}
    pending: dict[int, dict[str, float]] = {}

    def log(tag: str, value: float, step: int) -> None:
        pending.setdefault(step, {})[tag] = value
        logged.setdefault(tag, []).append((step, value))

    def flush(step: int) -> None:
        time.sleep(0.01)  # 10 ms a step (a job waiting on its loader): ~15 s, so W&B samples the system ~15 times
        row = pending.pop(step)
        if step % 5 == 0:  # log_every_n_steps=5, as most jobs do: keeps the .wandb file small
            run.log(row, step=step)
        else:
            for tag in row:
                logged[tag].pop()
        if step % 100 == 0:
            print(f"step {step}: train/loss {logged['train/loss'][-1][1]:.4f}")

    classification_loop(
        model=model, optimizer=opt, train_xy=(xt, yt), val_xy=(xv, yv), steps=1500, batch_size=64, eval_every=20,
        log=log, seed=5, on_step=flush,
    )
    run.finish()
    run_dir = next((out / "wandb").glob("offline-run-*"))
    for extra in (out / "wandb").iterdir():
        if extra != run_dir:
            extra.unlink() if extra.is_symlink() or extra.is_file() else shutil.rmtree(extra)
    shutil.rmtree(run_dir / "logs", ignore_errors=True)  # debug logs: machine paths, no metrics
    for leftover in (run_dir / "tmp",):
        shutil.rmtree(leftover, ignore_errors=True)
    history = read_wandb_history(run_dir / f"run-{run.id}.wandb")
    if [v for _, v in history["train/loss"]] != [as_logged(v) for _, v in logged["train/loss"]]:
        raise RuntimeError("the .wandb history does not hold what was logged")
    key = run_dir.relative_to(HERE).as_posix()
    label = make_label(
        regime="overfitting", fmt="wandb_local", logger=f"wandb {wandb.__version__} offline run folder",
        train_tag="train/loss", val_tag="val/loss", train=history["train/loss"], val=history["val/loss"],
        cause="MLP 16-256x3-4 on 200 training points with 20% noisy labels, Adam lr 2e-4, no regularisation: "
        "train loss goes to ~0, val loss bottoms out early and then more than doubles",
        notes="history and system metrics (W&B's system/cpu, system/memory_percent …, sampled every second) only "
        "in the binary .wandb transaction log (W&B offline mode writes no config.yaml or "
        "wandb-summary.json until synced; files/ holds the captured console output.log); train metrics every "
        "5 steps, val every 20; debug logs removed (machine paths, no metrics)",
        wandb_file=f"run-{run.id}.wandb", wandb_bytes=(run_dir / f"run-{run.id}.wandb").stat().st_size,
    )
    check_regime("overfit_wandb", label, history["train/loss"], history["val/loss"])
    return {"runs": {key: label}}


def as_logged(v: float) -> float:
    """A float as W&B stores it (JSON round trip)."""
    return float(json.loads(json.dumps(v)))


# ---- nanoGPT-style console runs


def nanogpt_worker(cfg: dict[str, Any]) -> None:
    """A nanoGPT-shaped training loop on the character corpus, printing nanoGPT's console lines."""
    seed_all(cfg["seed"])
    data = CharData(block_size=32)
    batch_size, eval_iters = cfg.get("batch_size", 16), 10
    g = torch.Generator().manual_seed(cfg["seed"])
    print(f"tokens per iteration will be: {batch_size * data.block_size:,}")
    print(f"found vocab_size = {data.vocab_size} (inside the generated character corpus)")
    print("Initializing a new model from scratch")
    model = TinyGPT(data.vocab_size, data.block_size, cfg["n_embd"], cfg["n_layer"], cfg["n_head"])
    print(f"number of parameters: {model.num_params() / 1e6:.2f}M")
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"]) if cfg["optimizer"] == "sgd" else torch.optim.AdamW(
        model.parameters(), lr=cfg["lr"], betas=tuple(cfg.get("betas", (0.9, 0.99))), weight_decay=0.0
    )
    print(f"optimizer: {cfg['optimizer']}, learning_rate = {cfg['lr']}, warmup_iters = {cfg.get('warmup_iters', 0)}, "
          f"grad_clip = {cfg['grad_clip']}")

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        model.eval()
        out = {split: float(np.mean([model(*data.batch(split, batch_size, g))[1].item() for _ in range(eval_iters)]))
               for split in ("train", "val")}
        model.train()
        return out

    iter_num, local_iter_num, running_mfu = 0, 0, -1.0
    t0 = time.time()
    warmup_iters = cfg.get("warmup_iters", 0)
    while True:
        lr = cfg["lr"] * min(1.0, (iter_num + 1) / warmup_iters) if warmup_iters else cfg["lr"]
        for group in opt.param_groups:
            group["lr"] = lr
        if iter_num % cfg["eval_interval"] == 0:
            losses = estimate_loss()
            print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        x, y = data.batch("train", batch_size, g)
        _, loss = model(x, y)
        loss.backward()
        if cfg["grad_clip"] != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        if iter_num % cfg["log_interval"] == 0:
            lossf = loss.item()
            if local_iter_num >= 5:
                mfu = model.estimate_mfu(batch_size, dt, cfg["flops_promised"])
                running_mfu = mfu if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * mfu
            print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, mfu {running_mfu * 100:.2f}%")
        iter_num += 1
        local_iter_num += 1
        if iter_num > cfg["max_iters"]:
            break


NANOGPT_BASE = {"n_embd": 64, "n_layer": 2, "n_head": 2, "log_interval": 1, "flops_promised": 50e9}


def _nanogpt_run(name: str, cfg: dict[str, Any]) -> tuple[Path, dict[str, list[tuple[int, float]]]]:
    out = fresh(HERE / name)
    log = out / "train.log"
    run_worker(["nanogpt", json.dumps({**NANOGPT_BASE, **cfg})], log, cwd=out)
    return out, read_nanogpt(log)


@register
def run_unstable_nanogpt() -> dict[str, Any]:
    cfg = {"seed": 6, "optimizer": "sgd", "lr": 5.5, "grad_clip": 1.0, "max_iters": 300, "eval_interval": 25}
    _, series = _nanogpt_run("unstable_nanogpt", cfg)
    losses = [v for _, v in series["loss"]]
    peak_ratio = max(v / min(losses[: i + 1]) for i, v in enumerate(losses))
    label = make_label(
        regime="unstable", fmt="nanogpt", logger="nanoGPT-style print() lines (stdout captured)",
        train_tag="loss", val_tag="val loss", train=series["loss"], val=series["val loss"],
        cause="tiny char-level Transformer (2 layers, 64 wide) trained with plain SGD at lr 5.5 (a working lr is "
        "about 1.0): gradient clipping at 1.0 keeps every update bounded, so the loss jumps up and down by "
        "several times its size for the whole run but never becomes non-finite",
        notes=f"the loss starts at {losses[0]:.2f}, its lowest is {min(losses):.2f} and its median "
        f"{statistics.median(losses):.2f}: the lr is too high to make progress; it is no divergence: finite "
        f"throughout and at most {peak_ratio:.1f}x its running minimum. "
        "Tags are the line's own names: 'loss' on iter lines, 'train loss' / 'val loss' on step lines; "
        "mfu is against a nominal 50 GFLOP/s CPU core, -100.00% before iter 5 as in nanoGPT",
    )
    check_regime("unstable_nanogpt", label, series["loss"], series["val loss"])
    return {"runs": {"unstable_nanogpt": label}}


@register
def run_diverged_nanogpt() -> dict[str, Any]:
    cfg = {"seed": 7, "optimizer": "sgd", "lr": 4.0, "warmup_iters": 300, "grad_clip": 0.0, "max_iters": 300,
           "eval_interval": 25}
    _, series = _nanogpt_run("diverged_nanogpt", cfg)
    label = make_label(
        regime="diverged", fmt="nanogpt", logger="nanoGPT-style print() lines (stdout captured)",
        train_tag="loss", val_tag="val loss", train=series["loss"], val=series["val loss"],
        cause="tiny char-level Transformer, plain SGD with the lr warmed up over 300 iters towards 4.0 and gradient "
        "clipping disabled (grad_clip=0.0): "
        "trains normally, then one large update throws the loss up by orders of magnitude and the next ones "
        "make it NaN; the loop keeps printing 'loss nan' to max_iters",
        notes="divergence_step is the first iter line whose loss is not finite; explosion_step is where the "
        "loss first stayed above 10x its running minimum",
    )
    return {"runs": {"diverged_nanogpt": label}}


@register
def run_normal_nanogpt() -> dict[str, Any]:
    cfg = {"seed": 8, "optimizer": "adamw", "lr": 1e-3, "grad_clip": 1.0, "max_iters": 500, "eval_interval": 50,
           "log_interval": 10}
    _, series = _nanogpt_run("normal_nanogpt", cfg)
    label = make_label(
        regime="normal", fmt="nanogpt", logger="nanoGPT-style print() lines (stdout captured)",
        train_tag="loss", val_tag="val loss", train=series["loss"], val=series["val loss"],
        cause="tiny char-level Transformer, AdamW lr 1e-3, grad_clip 1.0, log_interval 10: a healthy run",
    )
    check_regime("normal_nanogpt", label, series["loss"], series["val loss"])
    return {"runs": {"normal_nanogpt": label}}


def build_nanogpt_worker(cfg: dict[str, Any]) -> None:
    """build-nanogpt's training loop ("Let's reproduce GPT-2") on the character corpus: its cosine learning rate
    with warmup, gradient accumulation and clipping, its console prints and its ``log/log.txt`` writes, each
    statement as that script has it (no HellaSwag: its data would be a download)."""
    seed_all(cfg["seed"])
    data = CharData(block_size=32)
    B, T, grad_accum_steps = cfg["batch_size"], data.block_size, cfg["grad_accum_steps"]
    g = torch.Generator().manual_seed(cfg["seed"])
    print(f"total desired batch size: {B * T * grad_accum_steps}")
    print(f"=> calculated gradient accumulation steps: {grad_accum_steps}")
    model = TinyGPT(data.vocab_size, T, cfg["n_embd"], cfg["n_layer"], cfg["n_head"])
    max_lr, warmup_steps, max_steps = cfg["max_lr"], cfg["warmup_steps"], cfg["max_steps"]
    min_lr = max_lr * 0.1

    def get_lr(it: int) -> float:
        if it < warmup_steps:
            return max_lr * (it + 1) / warmup_steps
        if it > max_steps:
            return min_lr
        decay_ratio = (it - warmup_steps) / (max_steps - warmup_steps)
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * decay_ratio)) * (max_lr - min_lr)

    optimizer = torch.optim.AdamW(model.parameters(), lr=max_lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    log_dir = "log"
    os.makedirs(log_dir, exist_ok=True)
    log_file = os.path.join(log_dir, "log.txt")
    with open(log_file, "w"):  # open for writing to clear the file
        pass
    for step in range(max_steps):
        t0 = time.time()
        last_step = step == max_steps - 1
        if step % cfg["val_every"] == 0 or last_step:
            model.eval()
            with torch.no_grad():
                val_loss_steps = 10
                val_loss_accum = sum(model(*data.batch("val", B, g))[1] / val_loss_steps for _ in range(val_loss_steps))
            print(f"validation loss: {val_loss_accum.item():.4f}")
            with open(log_file, "a") as f:
                f.write(f"{step} val {val_loss_accum.item():.4f}\n")
        model.train()
        optimizer.zero_grad()
        loss_accum = 0.0
        for _ in range(grad_accum_steps):
            x, y = data.batch("train", B, g)
            _, loss = model(x, y)
            loss = loss / grad_accum_steps
            loss_accum += loss.detach()
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        lr = get_lr(step)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        optimizer.step()
        t1 = time.time()
        dt = t1 - t0  # time difference in seconds
        tokens_per_sec = B * T * grad_accum_steps / dt
        print(f"step {step:5d} | loss: {loss_accum.item():.6f} | lr {lr:.4e} | norm: {norm:.4f} | dt: {dt * 1000:.2f}ms | "
              f"tok/sec: {tokens_per_sec:.2f}")
        with open(log_file, "a") as f:
            f.write(f"{step} train {loss_accum.item():.6f}\n")


def read_build_nanogpt(path: Path) -> dict[str, list[tuple[int, float]]]:
    """The records of a build-nanogpt ``log.txt``: ``{step} {kind} {value}``."""
    out: dict[str, list[tuple[int, float]]] = {}
    for line in path.read_text().splitlines():
        step, kind, value = line.split(" ")
        out.setdefault(kind, []).append((int(step), float(value)))
    return out


@register
def run_normal_build_nanogpt() -> dict[str, Any]:
    """One job, its files where it writes them: ``log/log.txt`` below the folder it ran in, and its console
    captured there (``train.out``, as ``nohup`` or a scheduler keeps it): one run, the records a twin."""
    cfg = {"seed": 9, "n_embd": 64, "n_layer": 2, "n_head": 2, "batch_size": 8, "grad_accum_steps": 2,
           "max_lr": 3e-3, "warmup_steps": 20, "max_steps": 300, "val_every": 25}
    out = fresh(HERE / "normal_build_nanogpt")
    run_worker(["build_nanogpt", json.dumps(cfg)], out / "train.out", cwd=out)
    series = read_build_nanogpt(out / "log" / "log.txt")
    common = {"regime": "normal", "train_tag": "train/loss", "val_tag": "val/loss", "train": series["train"],
              "val": series["val"], "notes": "step = the loop index; the validation at the top of loop N and its "
              "train loss share step N",
              "cause": "tiny char-level Transformer trained by build-nanogpt's loop (AdamW, cosine lr with warmup to "
              "3e-3, gradient accumulation 2, clipping at 1.0): a healthy run"}
    label = make_label(fmt="build_nanogpt", logger="build-nanogpt's print() lines (stdout captured)", **common)
    check_regime("normal_build_nanogpt", label, series["train"], series["val"])
    records = make_label(fmt="build_nanogpt", logger="build-nanogpt's log/log.txt writes", twin_of="normal_build_nanogpt",
                         **common)
    return {"runs": {"normal_build_nanogpt": label, "normal_build_nanogpt/log": records}}


# ---- HF Trainer runs


def hf_worker(cfg: dict[str, Any]) -> None:
    """Train a tiny GPT-2 (built from a config, no download) with the HF Trainer; console goes to the caller's file."""
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

    seed_all(cfg["seed"])
    data = CharData(block_size=32)

    class Windows(torch.utils.data.Dataset):
        def __init__(self, split: str, n: int, seed: int) -> None:
            self.x, _ = data.batch(split, n, torch.Generator().manual_seed(seed))

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            return {"input_ids": self.x[i], "labels": self.x[i]}

    class SimulatedKill(TrainerCallback):
        """SIGKILLs the job while it logs one step, as a preempted node or the OOM killer would.

        Runs after the TensorBoard callback and before the console printer; the console
        streams are flushed first so the file holds what a terminal would have shown.
        """

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.global_step == cfg.get("crash_at") and "loss" in (logs or {}):
                sys.stdout.flush()
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)

    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=data.vocab_size, n_positions=32, n_embd=cfg["n_embd"], n_layer=2, n_head=2,
                   bos_token_id=0, eos_token_id=0)
    )
    args = TrainingArguments(
        output_dir=cfg["output_dir"], max_steps=cfg["max_steps"], per_device_train_batch_size=16,
        per_device_eval_batch_size=64, learning_rate=cfg["lr"], warmup_steps=cfg.get("warmup_steps", 0),
        lr_scheduler_type=cfg.get("scheduler", "linear"), weight_decay=0.0, logging_steps=10,
        eval_strategy="steps", eval_steps=cfg.get("eval_steps", 50),
        save_strategy="steps" if cfg.get("save_steps") else "no", save_steps=cfg.get("save_steps") or 500,
        report_to=cfg.get("report_to", "none"), seed=cfg["seed"], use_cpu=True, dataloader_num_workers=0,
        disable_tqdm=False,
    )
    trainer = Trainer(
        model=model, args=args, train_dataset=Windows("train", 8000, cfg["seed"]),
        eval_dataset=Windows("val", 256, cfg["seed"] + 1), callbacks=[SimulatedKill()],
    )
    result = trainer.train(resume_from_checkpoint=cfg.get("resume") or None)
    trainer.save_state()
    trainer.save_metrics("train", result.metrics)


def _hf_run(name: str, cfg: dict[str, Any], *, sessions: int = 1) -> Path:
    out = fresh(HERE / name)
    log = out / "console" / "train.log"
    cfg = {**cfg, "output_dir": "."}
    if sessions == 1:
        run_worker(["hf", json.dumps(cfg)], log, cwd=out)
    else:
        run_worker(["hf", json.dumps(cfg)], log, cwd=out, expect_fail=True)
        run_worker(["hf", json.dumps({**cfg, "crash_at": None, "resume": True})], log, cwd=out, append=True)
    for junk in list(out.glob("checkpoint-*")) + [out / "training_args.bin", out / "model.safetensors",
                                                   out / "config.json", out / "generation_config.json"]:
        if junk.is_dir():
            shutil.rmtree(junk)
        elif junk.exists():
            junk.unlink()
    return out


HF_NOTES = ("the Trainer's console (stdout + stderr, tqdm bars with carriage returns) captured to console/train.log; "
            "its dict lines carry no step: the step is the tqdm bar's N/total just before them")


@register
def run_normal_hf() -> dict[str, Any]:
    out = _hf_run("normal_hf", {"seed": 9, "lr": 2e-3, "warmup_steps": 20, "max_steps": 400, "n_embd": 64})
    state = read_hf_state(out / "trainer_state.json")
    console = read_hf_console(out / "console" / "train.log")
    common = dict(regime="normal", train_tag="loss", val_tag="eval_loss",
                  cause="tiny GPT-2 (2 layers, 64 wide, from a config) on the character corpus, HF Trainer, "
                  "AdamW lr 2e-3, 20 warmup steps then linear decay: a healthy run")
    labels = {
        "normal_hf": make_label(fmt="hf_trainer_state", logger="transformers.Trainer trainer_state.json",
                                train=state["loss"], val=state["eval_loss"], **common),
        "normal_hf/console": make_label(fmt="hf_console", logger="transformers.Trainer console output",
                                        train=console["loss"], val=console["eval_loss"], notes=HF_NOTES,
                                        twin_of="normal_hf", **common),
    }
    check_regime("normal_hf", labels["normal_hf"], state["loss"], state["eval_loss"])
    return {"runs": labels}


@register
def run_underfit_hf() -> dict[str, Any]:
    out = _hf_run("underfit_hf", {"seed": 10, "lr": 1e-6, "warmup_steps": 20, "max_steps": 400, "n_embd": 64})
    state = read_hf_state(out / "trainer_state.json")
    console = read_hf_console(out / "console" / "train.log")
    common = dict(regime="underfitting", train_tag="loss", val_tag="eval_loss",
                  cause="the normal_hf job with lr 1e-6 (2000x too small): loss stays at the untrained level "
                  "ln(vocab) for all 400 steps")
    labels = {
        "underfit_hf": make_label(fmt="hf_trainer_state", logger="transformers.Trainer trainer_state.json",
                                  train=state["loss"], val=state["eval_loss"], **common),
        "underfit_hf/console": make_label(fmt="hf_console", logger="transformers.Trainer console output",
                                          train=console["loss"], val=console["eval_loss"], notes=HF_NOTES,
                                          twin_of="underfit_hf", **common),
    }
    check_regime("underfit_hf", labels["underfit_hf"], state["loss"], state["eval_loss"])
    return {"runs": labels}


@register
def run_resumed_hf() -> dict[str, Any]:
    tb_dir = HERE / "resumed_hf" / "tensorboard"
    with scoped_env(TENSORBOARD_LOGGING_DIR="tensorboard"):  # relative to the worker's folder
        out = _hf_run(
            "resumed_hf",
            {"seed": 11, "lr": 2e-3, "warmup_steps": 20, "max_steps": 300, "n_embd": 64, "save_steps": 100,
             "crash_at": 150, "report_to": "tensorboard"},
            sessions=2,
        )
    state = read_hf_state(out / "trainer_state.json")
    console = read_hf_console(out / "console" / "train.log")
    tb = read_tensorboard(tb_dir)
    tb_files = sorted(p.name for p in tb_dir.glob("events.out.tfevents.*"))

    def restart_of(series) -> int | None:
        steps = [s for s, _ in _pairs(series)]
        back = next((i for i in range(1, len(steps)) if steps[i] <= steps[i - 1]), None)
        return None if back is None else steps[back]

    cause = ("HF Trainer, tiny GPT-2, checkpoint every 100 steps; the job was killed (SIGKILL from a callback, "
             "as a preempted node) while logging step 150, then restarted with resume_from_checkpoint=True, which loaded "
             "checkpoint-100 and logged steps 110 onwards again up to 300. The kill came after the "
             "TensorBoard callback had written step 150 and before the console line of step 150 was printed; "
             "the resumed session restores the RNG state, so re-logged values equal the first ones")
    common = dict(regime="normal", train_tag="loss", val_tag="eval_loss", cause=cause)
    labels = {
        "resumed_hf": make_label(
            fmt="hf_trainer_state", logger="transformers.Trainer trainer_state.json", train=state["loss"],
            val=state["eval_loss"], restart_step=restart_of(state["loss"]),
            notes="trainer_state.json of the resumed session: log_history restored from checkpoint-100, so it shows "
            "no overlap (restart_step null)", **common),
        "resumed_hf/console": make_label(
            fmt="hf_console", logger="transformers.Trainer console output", train=console["loss"],
            val=console["eval_loss"], restart_step=restart_of(console["loss"]),
            notes=HF_NOTES + "; both sessions appended to one file; the first ends abruptly, as a killed job's does",
            twin_of="resumed_hf", **common),
        "resumed_hf/tensorboard": make_label(
            fmt="tensorboard", logger="transformers TensorBoardCallback (torch SummaryWriter)", train_tag="train/loss",
            val_tag="eval/loss", train=tb["train/loss"], val=tb["eval/loss"], restart_step=restart_of(tb["train/loss"]),
            notes="two event files, one per session; the second re-logs the overlapping steps (last write wins)",
            event_files=tb_files, twin_of="resumed_hf",
            **{k: v for k, v in common.items() if k not in ("train_tag", "val_tag")}),
    }
    return {"runs": labels}


# ---- resumed, truncated and throughput runs (torch SummaryWriter)


@register
def run_resumed_tensorboard() -> dict[str, Any]:
    from torch.utils.tensorboard import SummaryWriter

    out = fresh(HERE / "resumed_tensorboard")
    ckpt_dir = Path(tempfile.mkdtemp())
    seed_all(12)
    train_xy, val_xy = teacher_data(4000, seed=121), teacher_data(2000, seed=122)
    total, crash_at, resume_from = 500, 300, 200
    lr_at = warmup_cosine(3e-3, 40, total)

    def session(start_step: int, stop_step: int, data_seed: int) -> None:
        model = mlp(16, 64, 2, 4)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        if start_step > 1:
            state = torch.load(ckpt_dir / f"step_{start_step - 1}.pt")
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
        writer = SummaryWriter(log_dir=str(out))

        def on_step(step: int) -> None:
            if step % 100 == 0:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, ckpt_dir / f"step_{step}.pt")

        classification_loop(
            model=model, optimizer=opt, train_xy=train_xy, val_xy=val_xy, steps=stop_step, batch_size=64,
            eval_every=20, log=lambda tag, v, s: writer.add_scalar(tag, v, s), lr_at=lr_at, seed=data_seed,
            start_step=start_step, on_step=on_step,
        )
        writer.close()
        time.sleep(1.1)  # event file names carry the second they were opened

    session(1, crash_at, data_seed=12)
    session(resume_from + 1, total, data_seed=13)
    shutil.rmtree(ckpt_dir)
    scalars = read_tensorboard(out)
    steps = [s for s, _, _ in scalars["train/loss"]]
    restart = next(steps[i] for i in range(1, len(steps)) if steps[i] <= steps[i - 1])
    label = make_label(
        regime="normal", fmt="tensorboard", logger="torch.utils.tensorboard.SummaryWriter",
        train_tag="train/loss", val_tag="val/loss", train=scalars["train/loss"], val=scalars["val/loss"],
        restart_step=restart,
        cause=f"MLP job killed after step {crash_at}; restarted from its step-{resume_from} checkpoint (model and "
        f"optimizer state) with a new SummaryWriter on the same log dir, so steps {resume_from + 1}-{crash_at} "
        "were logged twice; the restarted job drew its batches with another seed, so the re-logged values differ",
        notes="two event files; a reader keeping the last write keeps the second session's values for the "
        "overlapping steps",
        event_files=sorted(p.name for p in out.glob("events.out.tfevents.*")),
    )
    return {"runs": {"resumed_tensorboard": label}}


def tfrecord_offsets(data: bytes) -> list[tuple[int, int]]:
    """(offset, total length) of every complete TFRecord in ``data``: length u64, crc u32, payload, crc u32."""
    records, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos : pos + 8])
        end = pos + 12 + length + 4
        if end > len(data):
            break
        records.append((pos, end - pos))
        pos = end
    return records


@register
def run_truncated_tensorboard() -> dict[str, Any]:
    from torch.utils.tensorboard import SummaryWriter

    out = fresh(HERE / "truncated_tensorboard")
    tmp = Path(tempfile.mkdtemp())
    seed_all(13)
    train_xy, val_xy = teacher_data(4000, seed=131), teacher_data(2000, seed=132)
    model = mlp(16, 64, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    writer = SummaryWriter(log_dir=str(tmp))
    classification_loop(
        model=model, optimizer=opt, train_xy=train_xy, val_xy=val_xy, steps=400, batch_size=64, eval_every=20,
        log=lambda tag, v, s: writer.add_scalar(tag, v, s), seed=13,
    )
    writer.close()
    source = next(tmp.glob("events.out.tfevents.*"))
    data = source.read_bytes()
    records = tfrecord_offsets(data)
    last_offset, last_length = records[-1]
    cut = last_offset + 12 + 5  # header intact, 5 bytes into the payload: what a kill mid-write leaves
    (out / source.name).write_bytes(data[:cut])
    intact = read_tensorboard_bytes(data[:last_offset], tmp)
    shutil.rmtree(tmp)
    label = make_label(
        regime="normal", fmt="tensorboard", logger="torch.utils.tensorboard.SummaryWriter",
        train_tag="train/loss", val_tag="val/loss", train=intact["train/loss"], val=intact["val/loss"],
        truncated=True,
        cause="a normal 400-step MLP run whose event file was then cut 5 bytes into the payload of its last record, "
        "as a job killed in the middle of a write leaves it",
        notes=f"the real file had {len(records)} records ({len(data)} bytes); the committed copy keeps "
        f"{len(records) - 1} complete records and a partial last one (declared payload {last_length - 16} bytes, "
        "5 present, no footer CRC); labels describe the intact records only",
        truncated_file=source.name, intact_records=len(records) - 1, intact_bytes=last_offset,
        file_bytes=cut, original_bytes=len(data),
    )
    return {"runs": {"truncated_tensorboard": label}}


def read_tensorboard_bytes(data: bytes, tmp: Path) -> dict[str, list[tuple[int, float, float]]]:
    scratch = fresh(tmp / "intact")
    (scratch / "events.out.tfevents.0.intact").write_bytes(data)
    return read_tensorboard(scratch)


class SlowLoader(torch.utils.data.Dataset):
    """Mini-batches of teacher data; ``delay()`` seconds of sleep per batch stand for a slow input pipeline."""

    def __init__(self, x, y, batch_size: int, steps: int, seed: int, delay: Callable[[], float] | None,
                 io_wait_s: float = 0.0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.index = [torch.randint(0, len(x), (batch_size,), generator=g) for _ in range(steps)]
        self.x, self.y, self.delay = x, y, delay
        self.slept: list[float] = []
        # Reading a batch from storage: a latency with a little jitter, the same draw for every copy of the job.
        jitter = torch.empty(steps).log_normal_(0.0, 0.1, generator=torch.Generator().manual_seed(seed + 1))
        self.io_wait = (io_wait_s * jitter).tolist() if io_wait_s > 0 else None

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int):
        if self.io_wait is not None:
            time.sleep(self.io_wait[i])
        if self.delay is not None:
            self.slept.append(self.delay())
            time.sleep(self.slept[-1])
        idx = self.index[i]
        return self.x[idx], self.y[idx]


@register
def run_throughput() -> dict[str, Any]:
    """Four copies of one job, stepped in turn so that they share the machine's load; one has a slow loader."""
    from torch.utils.tensorboard import SummaryWriter

    root = fresh(HERE / "throughput")
    names = ["baseline", "slow_loader", "control_a", "control_b"]
    steps, batch_size, slowdown, io_wait_s = 600, 512, 0.25, 0.012
    train_xy = teacher_data(8000, seed=141)

    def make(seed: int):
        torch.manual_seed(seed)
        model = mlp(16, 384, 3, 4)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3)

    # The slow loader sleeps a quarter of the baseline's recent median step time (the baseline's step of the
    # same round has just run), so the slowdown stays ~25 % however the machine's load changes meanwhile.
    baseline_times: list[float] = []

    def delay() -> float:
        return slowdown * statistics.median(baseline_times[-20:])

    jobs = []
    for name in names:
        model, opt = make(14)
        dataset = SlowLoader(*train_xy, batch_size, steps, 14, delay if name == "slow_loader" else None, io_wait_s)
        loader = torch.utils.data.DataLoader(dataset, batch_size=None)
        jobs.append((name, model, opt, iter(loader), SummaryWriter(log_dir=str(root / name)), dataset))
    for step in range(1, steps + 1):
        for name, model, opt, batches, writer, _ in jobs:
            t0 = time.perf_counter()
            x, y = next(batches)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            norm = grad_total_norm(model.parameters())
            opt.step()
            dt = time.perf_counter() - t0
            if name == "baseline":
                baseline_times.append(dt)
            writer.add_scalar("train/loss", loss.item(), step)
            writer.add_scalar("train/grad_norm", norm, step)
            writer.add_scalar("perf/step_time_ms", dt * 1000, step)
            writer.add_scalar("perf/samples_per_sec", batch_size / dt, step)
    mean_sleep = statistics.mean(jobs[1][5].slept)
    for job in jobs:
        job[4].close()

    labels, medians, step_ms = {}, {}, {}
    for name in names:
        scalars = read_tensorboard(root / name)
        medians[name] = statistics.median(v for _, v, _ in scalars["perf/samples_per_sec"])
        step_ms[name] = statistics.median(v for _, v, _ in scalars["perf/step_time_ms"])
        labels[f"throughput/{name}"] = make_label(
            regime="normal", fmt="tensorboard", logger="torch.utils.tensorboard.SummaryWriter",
            train_tag="train/loss", val_tag=None, train=scalars["train/loss"],
            cause="MLP 16-384x3-4, batch 512, 600 steps, each batch read with ~12 ms of simulated storage latency; "
            "four copies of the job run step by step in turn in one process, so all see the same machine load"
            + ("; this one's data loader sleeps before each batch for 25% of the baseline's median step time "
               f"over its last 20 steps ({mean_sleep * 1000:.2f} ms on average)" if name == "slow_loader" else ""),
            notes="perf/step_time_ms is the wall time of one step including the data loader; "
            "perf/samples_per_sec = batch / step time",
            median_samples_per_sec=round(medians[name], 1), median_step_time_ms=round(step_ms[name], 3),
        )
    pairs = [
        {"baseline": "throughput/baseline", "candidate": "throughput/slow_loader", "expect": "regression",
         "slowdown": slowdown, "throughput_tag": "perf/samples_per_sec", "step_time_tag": "perf/step_time_ms",
         "measured_slowdown": round(step_ms["slow_loader"] / step_ms["baseline"] - 1, 3),
         "measured_throughput_drop": round(1 - medians["slow_loader"] / medians["baseline"], 3),
         "mean_loader_sleep_ms": round(mean_sleep * 1000, 3)},
        {"baseline": "throughput/control_a", "candidate": "throughput/control_b", "expect": "no_regression",
         "slowdown": 0.0, "throughput_tag": "perf/samples_per_sec", "step_time_tag": "perf/step_time_ms",
         "measured_slowdown": round(step_ms["control_b"] / step_ms["control_a"] - 1, 3),
         "measured_throughput_drop": round(1 - medians["control_b"] / medians["control_a"], 3)},
    ]
    if not 0.15 < pairs[0]["measured_slowdown"] < 0.35 or abs(pairs[1]["measured_slowdown"]) > 0.05:
        raise RuntimeError(f"throughput pairs did not come out as intended: {pairs}")
    return {"runs": labels, "pairs": pairs}


# ---- one run split over several folders (Keras TensorBoard callback, add_scalars)


def keras_worker(cfg: dict[str, Any]) -> None:
    """Train a Keras MLP (TensorFlow backend) with the TensorBoard callback writing to the working folder.

    Run as its own process so that TensorFlow and Keras' global state stay out of the torch runs.
    """
    for key, value in {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "TF_DETERMINISTIC_OPS": "1",
                       "KERAS_BACKEND": "tensorflow", "CUDA_VISIBLE_DEVICES": ""}.items():
        os.environ[key] = value
    import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(cfg["seed"])
    x, y = (t.numpy() for t in teacher_data(cfg["n_train"], seed=cfg["seed"] * 10 + 1, noise=cfg["noise"]))
    xv, yv = (t.numpy() for t in teacher_data(1000, seed=cfg["seed"] * 10 + 2, noise=cfg["noise"]))
    model = keras.Sequential([keras.Input((16,)), *(keras.layers.Dense(cfg["width"], activation="relu")
                                                    for _ in range(2)), keras.layers.Dense(4, activation="softmax")])
    model.compile(keras.optimizers.Adam(cfg["lr"]), "sparse_categorical_crossentropy", metrics=["accuracy"])
    callback = keras.callbacks.TensorBoard(".", histogram_freq=0, write_graph=False, profile_batch=0)
    model.fit(x, y, epochs=cfg["epochs"], batch_size=cfg["batch_size"], validation_data=(xv, yv), verbose=0,
              callbacks=[callback])


def split_sources(**sources: tuple[str, str]) -> dict[str, dict[str, str]]:
    """``{label tag: {"folder": sub-folder of the run, "tag": the tag in that folder's events}}``."""
    return {name: {"folder": folder, "tag": tag} for name, (folder, tag) in sources.items()}


SPLIT_NOTES = ("one run written to several folders: {folders}; the tags named here join the folder to the tag "
               "({joined}), as TensorBoard shows them; 'sources' says which folder and tag each comes from")


@register
def run_overfit_keras() -> dict[str, Any]:
    out = fresh(HERE / "overfit_keras")
    cfg = {"seed": 14, "n_train": 64, "noise": 0.2, "width": 512, "lr": 1e-3, "epochs": 80, "batch_size": 16}
    with tempfile.TemporaryDirectory() as tmp:
        run_worker(["keras", json.dumps(cfg)], Path(tmp) / "console.log", cwd=out)
    train, val = read_tensorboard(out / "train")["epoch_loss"], read_tensorboard(out / "validation")["epoch_loss"]
    label = make_label(
        regime="overfitting", fmt="tensorboard", logger="keras.callbacks.TensorBoard",
        train_tag="train/epoch_loss", val_tag="validation/epoch_loss", train=train, val=val,
        cause="Keras MLP 16-512-512-4 (270k parameters) on 64 points with 20 % noisy labels, Adam 1e-3, no "
        "regularisation, 80 epochs of 4 steps; validated on 1000 held-out points after every epoch",
        notes=SPLIT_NOTES.format(folders="train/ and validation/ (the Keras TensorBoard callback)",
                                 joined="train/epoch_loss, validation/epoch_loss")
        + "; TF2 tensor scalars, step = epoch (0-based)",
        sources=split_sources(**{"train/epoch_loss": ("train", "epoch_loss"),
                                 "validation/epoch_loss": ("validation", "epoch_loss")}),
    )
    check_regime("overfit_keras", label, train, val)
    return {"runs": {"overfit_keras": label}}


@register
def run_normal_add_scalars() -> dict[str, Any]:
    """The PyTorch TensorBoard tutorial's pattern: every N batches, add_scalars of the running train loss and val loss."""
    from torch.utils.tensorboard import SummaryWriter

    out = fresh(HERE / "normal_add_scalars")
    seed_all(15)
    (xt, yt), (xv, yv) = teacher_data(20000, seed=151), teacher_data(2000, seed=152)
    model = mlp(16, 64, 2, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    epochs, batch_size, every = 3, 64, 25
    batches = math.ceil(len(xt) / batch_size)
    lr_at = warmup_cosine(2e-3, 50, epochs * batches)
    g = torch.Generator().manual_seed(15)
    writer = SummaryWriter(log_dir=str(out))
    running = 0.0
    for epoch in range(epochs):
        for i, idx in enumerate(torch.randperm(len(xt), generator=g).split(batch_size)):
            step = epoch * batches + i + 1
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            model.train()
            loss = F.cross_entropy(model(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            running += loss.item()
            if step % every == 0:
                model.eval()
                with torch.no_grad():
                    val_loss = F.cross_entropy(model(xv), yv).item()
                writer.add_scalars("Loss", {"train": running / every, "val": val_loss}, step)
                writer.add_scalar("lr", opt.param_groups[0]["lr"], step)
                running = 0.0
    writer.close()
    train, val = read_tensorboard(out / "Loss_train")["Loss"], read_tensorboard(out / "Loss_val")["Loss"]
    label = make_label(
        regime="normal", fmt="tensorboard", logger="torch.utils.tensorboard.SummaryWriter.add_scalars",
        train_tag="Loss/train", val_tag="Loss/val", train=train, val=val,
        cause=f"MLP 16-64-64-4 on 20000 teacher-labelled points, Adam with warmup to 2e-3 and cosine decay, "
        f"{epochs} epochs of {batches} batches; every {every} batches add_scalars('Loss', {{'train': mean of the "
        "last batches' losses, 'val': val loss}, step), as in PyTorch's TensorBoard tutorial",
        notes=SPLIT_NOTES.format(folders="the writer's folder (lr) and Loss_train/, Loss_val/ (add_scalars)",
                                 joined="Loss/train, Loss/val") + "; step = optimizer step",
        sources=split_sources(**{"Loss/train": ("Loss_train", "Loss"), "Loss/val": ("Loss_val", "Loss")}),
    )
    check_regime("normal_add_scalars", label, train, val)
    best, last = min(v for _, v, _ in val), val[-1][1]
    if last > 1.05 * best:
        raise RuntimeError(f"normal_add_scalars: val loss ends at {last:.3f}, {last / best:.2f}x its minimum")
    return {"runs": {"normal_add_scalars": label}}


# --------------------------------------------------------------------------- main

WORKERS = {"nanogpt": nanogpt_worker, "build_nanogpt": build_nanogpt_worker, "hf": hf_worker,
           "keras": keras_worker}


def machine_paths_in_outputs() -> list[str]:
    """Output files that mention this checkout, this Python environment or the home folder."""
    needles = [str(HERE.parent).encode(), sys.prefix.encode(), (str(Path.home()) + "/").encode()]
    found = []
    for path in HERE.rglob("*"):
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts:
            data = path.read_bytes()
            found += [f"{path.relative_to(HERE)}: {n.decode()}" for n in needles if n in data]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(RUNS), help="regenerate only these runs")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        WORKERS[args.worker[0]](json.loads(args.worker[1]))
        return 0

    labels_path = HERE / "LABELS.json"
    labels = json.loads(labels_path.read_text()) if labels_path.exists() and args.only else {"runs": {}, "pairs": []}
    timings = {}
    started = time.perf_counter()
    for name in args.only or RUNS:
        t0 = time.perf_counter()
        result = RUNS[name]()
        prefixes = {key.split("/")[0] for key in result["runs"]}
        labels["runs"] = {k: v for k, v in labels["runs"].items() if k.split("/")[0] not in prefixes}
        labels["runs"].update(result["runs"])
        if "pairs" in result:
            keys = {p["candidate"] for p in result["pairs"]}
            labels["pairs"] = [p for p in labels["pairs"] if p["candidate"] not in keys] + result["pairs"]
        timings[name] = time.perf_counter() - t0
        print(f"{name}: {timings[name]:.1f} s", file=sys.stderr, flush=True)
    labels["runs"] = dict(sorted(labels["runs"].items()))
    leaks = machine_paths_in_outputs()
    if leaks:
        raise RuntimeError(f"outputs hold machine paths: {leaks}")
    labels_path.write_text(json.dumps(labels, indent=2, allow_nan=False) + "\n")
    print(f"total: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
