"""Every tabular reader against the pandas baseline of its format (run on demand).

    python bench/bench_tabular.py              # 1,000,000 rows per format, files kept in bench/_data/
    python bench/bench_tabular.py --rows 200000 --only csv lightning_csv

For each format one synthetic file of ``--rows`` rows is written once (a
fixed seed: the same bytes every time) and read two ways in the same run:

- ours: the registered reader (``Reader.read``), every check, note and rule
  included, down to the tidy table;
- anchor: the pandas baseline that does the least a reader must do: parse the
  file with ``pandas.read_csv`` (C engine; ``pandas.read_json(lines=True)`` for
  JSON lines, ``json.load`` + ``DataFrame`` for a JSON document) and melt the
  wide table to the long one (``run, tag, step, value``) without its empty cells.

It prints both times (best of ``--repeat``, the two timed in turn so that a
busy machine slows both alike), the points each produced and the ratio
ours / anchor. The goal is a ratio of at most 3 for every format.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tanalyze.readers import get_reader  # noqa: E402

DATA = ROOT / "bench" / "_data" / "tabular"


# -- synthetic files ---------------------------------------------------------------------------------------


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _sparse(values: np.ndarray, every: int) -> np.ndarray:
    out = np.full(len(values), np.nan)
    out[::every] = values[::every]
    return out


def make_lightning(path: Path, rows: int) -> None:
    """Lightning CSVLogger: train rows every step, a validation row (own row, same step) every 100 rows."""
    rng = _rng()
    n_val = rows // 100
    n_train = rows - n_val
    step = np.arange(n_train) * 10
    train = pd.DataFrame({"epoch": step // 5000, "lr-Adam": 1e-3 * rng.random(n_train), "step": step,
                          "train_loss": rng.random(n_train), "val_acc": np.nan, "val_loss": np.nan})
    vstep = step[99::100][:n_val]
    val = pd.DataFrame({"epoch": vstep // 5000, "lr-Adam": np.nan, "step": vstep, "train_loss": np.nan,
                        "val_acc": rng.random(len(vstep)), "val_loss": rng.random(len(vstep))})
    order = np.concatenate([np.arange(n_train), np.arange(len(vstep)) * 100 + 99.5])
    frame = pd.concat([train, val], ignore_index=True).iloc[np.argsort(order, kind="stable")]
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    (path.parent / "hparams.yaml").write_text("lr: 0.001\n")


def make_keras(path: Path, rows: int) -> None:
    rng = _rng()
    frame = pd.DataFrame({"epoch": np.arange(rows), "accuracy": rng.random(rows), "loss": rng.random(rows),
                          "val_accuracy": rng.random(rows), "val_loss": rng.random(rows)})
    frame.to_csv(path, index=False)


def make_yolo(path: Path, rows: int) -> None:
    """Ultralytics 8.1+ results.csv: space-padded, 1-based epochs and a cumulative ``time`` column."""
    rng = _rng()
    columns = {"epoch": np.arange(1, rows + 1), "time": np.cumsum(30 + rng.random(rows))}
    for name in ("train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)", "metrics/recall(B)",
                 "metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss", "val/dfl_loss",
                 "lr/pg0", "lr/pg1", "lr/pg2"):
        columns[name] = rng.random(rows).round(5)
    frame = pd.DataFrame(columns)
    frame["time"] = frame["time"].round(3)
    text = frame.to_csv(index=False, header=False, lineterminator="\n")
    width = 24
    header = ",".join(f"{name:>{width}}" for name in frame.columns)
    with open(path, "w") as out:
        out.write(header + "\n")
        for line in text.splitlines():
            out.write(",".join(f"{cell:>{width}}" for cell in line.split(",")) + "\n")


def make_csv(path: Path, rows: int) -> None:
    """A generic metrics CSV: step, an epoch column, dense and sparse metrics."""
    rng = _rng()
    frame = pd.DataFrame({"epoch": np.arange(rows) // 1000, "step": np.arange(rows)})
    for name in ("loss", "lr", "grad_norm", "acc", "data_time"):
        frame[name] = rng.random(rows)
    frame["acc"] = _sparse(frame["acc"].to_numpy(), 50)
    frame.to_csv(path, index=False)


def make_per_batch(path: Path, rows: int) -> None:
    """A per-batch CSV (``Epoch,Batch,...``): the batch counter restarts every epoch."""
    rng = _rng()
    batches = 1000
    frame = pd.DataFrame({"Epoch": np.arange(rows) // batches, "Batch": np.arange(rows) % batches,
                          "Gen Loss": rng.random(rows), "Disc Loss": rng.random(rows)})
    frame.to_csv(path, index=False)


def make_wandb_chart(path: Path, rows: int) -> None:
    rng = _rng()
    frame = pd.DataFrame({"Step": np.arange(rows)})
    for run in ("run-a", "run-b"):
        values = rng.random(rows)
        frame[f"{run} - train/loss"] = values
        frame[f"{run} - train/loss__MIN"] = values - 0.01
        frame[f"{run} - train/loss__MAX"] = values + 0.01
    frame.to_csv(path, index=False)


def make_detectron2(path: Path, rows: int) -> None:
    rng = _rng()
    frame = pd.DataFrame({"data_time": rng.random(rows), "iteration": np.arange(rows) * 20 + 19,
                          "lr": rng.random(rows), "loss_cls": rng.random(rows), "total_loss": rng.random(rows),
                          "time": rng.random(rows)})
    frame.to_json(path, orient="records", lines=True)


def make_hf_state(path: Path, rows: int) -> None:
    rng = _rng()
    loss, lr = rng.random(rows).tolist(), rng.random(rows).tolist()
    history = [{"epoch": i / 1000, "grad_norm": loss[i] * 2, "learning_rate": lr[i], "loss": loss[i], "step": i + 1}
               for i in range(rows)]
    path.write_text(json.dumps({"global_step": rows, "log_history": history}))


# -- anchors ----------------------------------------------------------------------------------------------


def _melt(wide: pd.DataFrame, step: str) -> pd.DataFrame:
    long = wide.melt(id_vars=[step], var_name="tag", value_name="value").dropna(subset=["value"])
    return long.rename(columns={step: "step"}).assign(run="run")


def anchor_csv(step: str, **options) -> Callable[[Path], pd.DataFrame]:
    return lambda path: _melt(pd.read_csv(path, **options), step)


def anchor_json_lines(step: str) -> Callable[[Path], pd.DataFrame]:
    return lambda path: _melt(pd.read_json(path, lines=True), step)


def anchor_hf_state(path: Path) -> pd.DataFrame:
    with open(path) as handle:
        history = json.load(handle)["log_history"]
    return _melt(pd.DataFrame(history), "step")


@dataclass(frozen=True)
class Case:
    reader: str
    relative: str
    make: Callable[[Path, int], None]
    anchor: Callable[[Path], pd.DataFrame]


CASES = (
    Case("lightning_csv", "lightning/version_0/metrics.csv", make_lightning, anchor_csv("step")),
    Case("keras_csv", "keras/training.log", make_keras, anchor_csv("epoch")),
    Case("yolo_csv", "yolo/results.csv", make_yolo, anchor_csv("epoch", skipinitialspace=True)),
    Case("csv", "csv/metrics.csv", make_csv, anchor_csv("step")),
    Case("csv", "per_batch/metrics.csv", make_per_batch, anchor_csv("Epoch")),
    Case("wandb-chart-csv", "wandb/wandb_export.csv", make_wandb_chart, anchor_csv("Step")),
    Case("detectron2", "detectron2/metrics.json", make_detectron2, anchor_json_lines("iteration")),
    Case("hf_trainer_state", "hf/trainer_state.json", make_hf_state, anchor_hf_state),
)


def _timed(func: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def _best_pair(ours: Callable[[], object], anchor: Callable[[], object], repeat: int
               ) -> tuple[float, object, float, object]:
    """Best of ``repeat`` for each, the two timed in turn (a busy machine then slows both alike)."""
    best_ours = best_anchor = float("inf")
    runs = table = None
    for _ in range(repeat):
        seconds, runs = _timed(ours)
        best_ours = min(best_ours, seconds)
        seconds, table = _timed(anchor)
        best_anchor = min(best_anchor, seconds)
    return best_ours, runs, best_anchor, table


def _points(runs) -> int:
    return sum(len(run.scalars) for run in runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="paths (lightning, csv, per_batch …) or reader names to run")
    args = parser.parse_args(argv)
    print(f"{'format':<28}{'MB':>6}{'ours s':>9}{'anchor s':>10}{'ratio':>7}{'points':>12}{'anchor pts':>12}")
    worst = 0.0
    for case in CASES:
        label = case.relative.split("/")[0]
        if args.only and label not in args.only and case.reader not in args.only:
            continue
        path = DATA / str(args.rows) / case.relative
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            case.make(path, args.rows)
        reader = get_reader(case.reader)
        files = sorted(p for p in path.parent.iterdir() if p.is_file())
        ours, runs, anchor, table = _best_pair(lambda r=reader, f=files: r.read(f), lambda c=case, p=path: c.anchor(p),
                                               args.repeat)
        ratio = ours / anchor
        worst = max(worst, ratio)
        print(f"{case.reader + ' (' + label + ')':<28}{path.stat().st_size / 1e6:>6.0f}{ours:>9.2f}{anchor:>10.2f}"
              f"{ratio:>7.2f}{_points(runs):>12,}{len(table):>12,}")
    print(f"worst ratio: {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
