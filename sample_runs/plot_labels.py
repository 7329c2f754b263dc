#!/usr/bin/env python
"""Draw every labelled sample run with its label, to check by eye that each regime is unmistakable.

Reads the runs back with the same small readers the generator used (so it needs
the generator's environment), marks the labelled steps, and writes one PNG per
run plus an overview grid into a scratch folder (not into the repository)::

    python sample_runs/plot_labels.py --out /some/scratch/folder
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import generate as G  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent


def series_of(run: str, label: dict) -> dict[str, list[tuple[int, float]]]:
    folder = HERE / run
    fmt = label["format"]
    if fmt == "tensorboard":
        if label.get("truncated"):
            data = (folder / label["truncated_file"]).read_bytes()[: label["intact_bytes"]]
            return G.read_tensorboard_bytes(data, Path(tempfile.mkdtemp()))
        return G.read_tensorboard(folder)
    if fmt == "hf_trainer_state":
        return G.read_hf_state(folder / "trainer_state.json")
    if fmt == "hf_console":
        return G.read_hf_console(folder / "train.log")
    if fmt == "lightning_csv":
        return G.read_lightning(folder / "metrics.csv")
    if fmt == "nanogpt":
        return G.read_nanogpt(folder / "train.log")
    if fmt == "wandb_local":
        return G.read_wandb_history(folder / label["wandb_file"])
    raise ValueError(f"no plotter for format {fmt}")


def draw(ax, run: str, label: dict, series: dict) -> None:
    finite_max = []
    for tag, style in ((label["train_loss_tag"], dict(lw=0.8, alpha=0.8)), (label["val_loss_tag"], dict(lw=1.6))):
        if not tag:
            continue
        points = series[tag]
        xs = [p[0] for p in points]
        ax.plot(xs, [p[1] for p in points], ".-" if len(points) < 60 else "-", ms=2, label=tag, **style)
        finite_max += [p[1] for p in points if math.isfinite(p[1])]
    marks = [("divergence_step", "red"), ("explosion_step", "orange"), ("val_min_step", "green"),
             ("restart_step", "purple")]
    for key, colour in marks:
        if label.get(key) is not None:
            ax.axvline(label[key], color=colour, ls="--", lw=1, label=f"{key}={label[key]}")
    if label.get("val_min_window"):
        lo, hi = label["val_min_window"]
        ax.axvspan(lo, hi, color="green", alpha=0.1)
    train = [p[1] for p in series[label["train_loss_tag"]]]
    early = [v for v in train[: max(5, len(train) // 10)] if math.isfinite(v)]
    top = 2.5 * max(early)
    ax.set_ylim(0, top)
    off = sum(1 for v in finite_max if v > top)
    nonfinite = sum(1 for v in train if not math.isfinite(v))
    if off or nonfinite:
        ax.text(0.01, 0.97, f"{off} points above the plot, {nonfinite} non-finite", transform=ax.transAxes,
                fontsize=6, va="top", color="red")
    flag = " BORDERLINE" if label["borderline"] else ""
    ax.set_title(f"{run}\n{label['regime']}{flag} [{label['format']}]", fontsize=8)
    ax.legend(fontsize=6)
    ax.tick_params(labelsize=6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "sample_run_plots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    labels = json.loads((HERE / "LABELS.json").read_text())
    runs = labels["runs"]
    cols = 4
    rows = math.ceil(len(runs) / cols)
    grid, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (run, label) in zip(axes.flat, runs.items(), strict=False):
        series = series_of(run, label)
        draw(ax, run, label, series)
        fig, one = plt.subplots(figsize=(7, 4.5))
        draw(one, run, label, series)
        fig.tight_layout()
        fig.savefig(args.out / (run.replace("/", "__") + ".png"), dpi=110)
        plt.close(fig)
    for ax in list(axes.flat)[len(runs) :]:
        ax.axis("off")
    grid.tight_layout()
    grid.savefig(args.out / "overview.png", dpi=80)
    for pair in labels.get("pairs", []):
        fig, ax = plt.subplots(figsize=(7, 4))
        for role in ("baseline", "candidate"):
            points = G.read_tensorboard(HERE / pair[role])[pair["throughput_tag"]]
            ax.plot([p[0] for p in points], [p[1] for p in points], lw=0.7, label=f"{role}: {pair[role]}")
        ax.set_title(f"{pair['expect']} (measured slowdown {pair['measured_slowdown']})", fontsize=9)
        ax.set_ylabel(pair["throughput_tag"])
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.out / f"pair__{pair['candidate'].replace('/', '__')}.png", dpi=110)
        plt.close(fig)
    print(args.out)


if __name__ == "__main__":
    main()
