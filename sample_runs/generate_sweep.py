"""Generate ``sample_runs/sweep/``: a real learning-rate × eval-batch-size grid, three seeds each.

A small MLP (16-64-4) learns points labelled by a fixed random "teacher" network, with Adam, for 300 steps,
and logs its losses with ``tensorboardX`` (and its settings through TensorBoard's hparams plugin). The grid:

* ``lr`` ∈ {1e-4, 1e-3, 1e-2, 0.3}: **drives** the result. 1e-4 is far too slow (the loss barely falls),
  1e-3 and 1e-2 learn, 0.3 is far too high (the loss jumps and stays up).
* ``eval_batch_size`` ∈ {50, 200, 1000}: **idle by construction**. It only sets how many validation points
  are scored at once; the validation loss is the mean over all of them either way (equal up to rounding).
* ``seed`` ∈ {1, 2, 3}: the initial weights and the order of the training batches. Never a hyperparameter.

Folder names carry two of them (``lr=1e-3_ebs=200/seed_2``), the hparams plugin all of them, so both sources
are exercised. The truth is written to ``sweep/TRUTH.json``. Environment: ``requirements-sweep.txt`` (torch
first, alone: ``pip install torch==2.13.0 && pip install -r sample_runs/requirements-sweep.txt``); run it from
the repository root: ``python sample_runs/generate_sweep.py``. It takes about a minute on one CPU thread.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import torch
from tensorboardX import SummaryWriter
from tensorboardX.summary import hparams as hparams_summary
from torch import nn

torch.set_num_threads(1)

OUT = Path(__file__).resolve().parent / "sweep"
LRS = {"1e-4": 1e-4, "1e-3": 1e-3, "1e-2": 1e-2, "0.3": 0.3}
EVAL_BATCH_SIZES = (50, 200, 1000)
SEEDS = (1, 2, 3)
STEPS, BATCH, TRAIN_EVERY, VAL_EVERY = 300, 64, 10, 20


def teacher_data(n: int, *, seed: int, d: int = 16, k: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """Points labelled by a fixed random two-layer network (the same teacher for every run)."""
    g_teacher = torch.Generator().manual_seed(20240)
    w1 = torch.randn(d, 64, generator=g_teacher)
    w2 = torch.randn(64, k, generator=g_teacher)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (torch.tanh(x @ w1 / math.sqrt(d)) @ w2).argmax(1)
    return x, y


def val_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> float:
    """The mean cross-entropy over every validation point, scored ``batch_size`` at a time."""
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            logits = model(x[start:start + batch_size])
            total += float(nn.functional.cross_entropy(logits, y[start:start + batch_size], reduction="sum"))
    return total / len(x)


def train_one(folder: Path, lr: float, eval_batch_size: int, seed: int,
              train: tuple[torch.Tensor, torch.Tensor], val: tuple[torch.Tensor, torch.Tensor]) -> float:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    order = torch.Generator().manual_seed(1000 + seed)
    writer = SummaryWriter(logdir=str(folder), flush_secs=3600)
    x, y = train
    last = float("nan")
    for step in range(1, STEPS + 1):
        idx = torch.randint(0, len(x), (BATCH,), generator=order)
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % TRAIN_EVERY == 0:
            writer.add_scalar("train/loss", loss.item(), step)
        if step % VAL_EVERY == 0:
            last = val_loss(model, *val, eval_batch_size)
            writer.add_scalar("val/loss", last, step)
    settings = {"lr": lr, "eval_batch_size": eval_batch_size, "seed": seed, "hidden": 64, "optimizer": "adam"}
    for summary in hparams_summary(settings, {"val/loss": last}):
        writer.file_writer.add_summary(summary)
    writer.close()
    return last


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    train, val = teacher_data(2000, seed=5), teacher_data(1000, seed=6)
    finals: dict[str, list[float]] = {}
    for lr_text, lr in LRS.items():
        for ebs in EVAL_BATCH_SIZES:
            config = f"lr={lr_text}_ebs={ebs}"
            for seed in SEEDS:
                final = train_one(OUT / config / f"seed_{seed}", lr, ebs, seed, train, val)
                finals.setdefault(config, []).append(final)
                print(f"{config}/seed_{seed}: final val/loss {final:.4f}", flush=True)
    means = {config: sum(v) / len(v) for config, v in finals.items()}
    truth = {
        "drives": "lr",
        "idle": "eval_batch_size",
        "seed": "seed",
        "metric": "val/loss",
        "lower_is_better": True,
        "best_lr": min(means, key=means.get).split("_")[0].removeprefix("lr="),
        "final_val_loss": {config: [round(v, 6) for v in values] for config, values in finals.items()},
    }
    (OUT / "TRUTH.json").write_text(json.dumps(truth, indent=1) + "\n")


if __name__ == "__main__":
    main()
