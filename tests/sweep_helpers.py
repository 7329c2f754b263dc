"""Synthetic sweeps with a known truth: one setting drives the metric, one does nothing, seeds add noise."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from tanalyze.analysis.sweep import SweepRun

LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
BEST_LR = 1e-3


def final_loss(lr: float, wd: float = 0.0) -> float:
    """U-shaped in log10(lr) with its minimum at 1e-3 (0.3); ``wd`` a mild effect (0.04 per 0.1)."""
    return 0.3 + 0.25 * (np.log10(lr) + 3) ** 2 + 0.4 * wd


def val_curve(final: float, rng: np.random.Generator, points: int = 30, diverge: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
    steps = np.arange(1, points + 1) * 100.0
    values = final + (2.5 - final) * np.exp(-np.arange(points) / 6) + rng.normal(0, 0.003, points)
    if diverge:
        values[points // 2:] = np.geomspace(3, 1e4, points - points // 2)
        values[-3:] = np.nan
    return steps, values


def synthetic_runs(seed: int, *, design: str = "grid", seeds: int = 3, noise: float = 0.02, mild: bool = False,
                   diverge_at: float | None = None, seed_key: str = "seed") -> list[SweepRun]:
    """Runs of a sweep: ``lr`` drives (best 1e-3), ``dropout`` is idle, ``wd`` (with ``mild``) matters a little.

    ``design="grid"``: every combination; ``"random"``: 15 random configurations (log-uniform lr, uniform
    dropout), as a random or Optuna search draws them. Each configuration runs ``seeds`` times; the seed moves the
    final loss by ``noise`` (sd). Runs with ``lr >= diverge_at`` blow up and end NaN.
    """
    rng = np.random.default_rng(seed)
    if design == "grid":
        configs = [{"lr": lr, "dropout": d} for lr, d in itertools.product(LRS, (0.0, 0.1, 0.2, 0.3))]
    else:
        configs = [{"lr": float(10 ** rng.uniform(-4, -2)), "dropout": float(rng.uniform(0, 0.5))} for _ in range(15)]
    if mild:
        configs = [{**c, "wd": wd} for c in configs for wd in (0.0, 0.1)]
    runs = []
    for i, config in enumerate(configs):
        for s in range(1, seeds + 1):
            final = final_loss(config["lr"], config.get("wd", 0.0)) + rng.normal(0, noise)
            diverge = diverge_at is not None and config["lr"] >= diverge_at
            steps, values = val_curve(final, rng, diverge=diverge)
            name = f"sweep/c{i}/run-{s}"
            runs.append(SweepRun(
                name=name, config={**config, seed_key: float(s), "hidden": 128.0}, source="tensorboard",
                tags=frozenset({"train/loss", "val/loss"}), metric_tag="val/loss", steps=steps, values=values,
                label="diverged" if diverge else "normal",
            ))
    return runs


def sweep_frame(configs: int, seeds: int, points: int = 40, seed: int = 0) -> pd.DataFrame:
    """A tidy table of a grid sweep whose settings are only in the run names (``lr=0.001_wd=0.1_drop=0.2/seed_3``):
    ``lr`` drives, ``wd`` matters a little, ``drop`` does nothing; ``configs`` configurations × ``seeds``."""
    rng = np.random.default_rng(seed)
    lrs = np.geomspace(1e-4, 1e-2, 10)
    grid = list(itertools.product(lrs, (0.0, 0.05, 0.1, 0.2, 0.3), np.round(np.linspace(0, 0.45, 10), 2)))
    rng.shuffle(grid)
    frames = []
    for lr, wd, drop in grid[:configs]:
        for s in range(1, seeds + 1):
            steps, val = val_curve(final_loss(lr, wd) + rng.normal(0, 0.02), rng, points=points)
            train = val - 0.05
            name = f"lr={lr:.3g}_wd={wd:g}_drop={drop:g}/seed_{s}"
            for tag, values in (("val/loss", val), ("train/loss", train)):
                frames.append(pd.DataFrame({"run": name, "tag": tag, "step": steps.astype(np.int64), "value": values}))
    return pd.concat(frames, ignore_index=True)
