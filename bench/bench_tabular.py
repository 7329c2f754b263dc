"""Every tabular reader against the pandas baseline of its format (run on demand).

    python bench/bench_tabular.py              # 1,000,000 rows per format, files kept in bench/_data/
    python bench/bench_tabular.py --rows 200000 --only csv lightning_csv

For each format one synthetic file of ``--rows`` rows is written once (a
fixed seed: the same bytes every time; DETR's one-line-per-epoch log gets
``rows // 1000`` lines, a W&B runs table ``rows // 100`` runs, an MLflow store
10 runs sharing the rows, most in one long run), checked to be claimed by its
reader as discovery would (the first reader in registry order whose ``sniff``
takes it) and read two ways in the same run:

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
import csv
import datetime
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

from tanalyze._gc import collector_paused  # noqa: E402
from tanalyze.readers import HEAD_BYTES, get_reader, get_readers  # noqa: E402
from tanalyze.readers.base import RunData  # noqa: E402
from tanalyze.schema import ScalarColumns  # noqa: E402

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


def make_mmengine(path: Path, rows: int) -> None:
    """MMEngine ``vis_data/scalars.json`` (epoch-based loop, no text log beside it): a train row every 50
    iterations with the global ``iter`` and ``step``, and after each epoch of 5,000 iterations a validation row
    keyed by the epoch (COCO metrics and its own ``data_time``/``time``)."""
    rng = _rng()
    interval, per_epoch = 50, 5000
    per = per_epoch // interval + 1  # train rows of an epoch, then its validation row
    lines = []
    values = rng.random((rows, 8))
    for i in range(rows):
        epoch, position = divmod(i, per)
        v = values[i]
        if position < per - 1:
            step = epoch * per_epoch + (position + 1) * interval
            loss_obj, loss_bbox = v[2], v[3]
            lines.append(json.dumps({
                "base_lr": 0.01, "lr": 0.01 * v[0], "data_time": v[1], "loss": loss_obj + loss_bbox,
                "loss_cls": 0.0, "loss_obj": loss_obj, "loss_bbox": loss_bbox, "time": 1 + v[4],
                "epoch": epoch + 1, "iter": step, "memory": 2565 + int(v[5] * 100), "step": step}))
        else:
            lines.append(json.dumps({
                "coco/bbox_mAP": round(v[0], 3), "coco/bbox_mAP_50": round(v[1], 3),
                "coco/bbox_mAP_75": round(v[2], 3), "coco/bbox_mAP_s": round(v[3], 3),
                "coco/bbox_mAP_m": round(v[4], 3), "coco/bbox_mAP_l": round(v[5], 3),
                "data_time": v[6] / 10, "time": v[7] / 10, "step": epoch + 1}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def make_mmdet2(path: Path, rows: int) -> None:
    """mmcv 1.x ``<timestamp>.log.json``: the ``env_info``/``config`` header line, then ``mode: train`` rows every
    50 iterations (``iter`` counts within the epoch) and after each epoch of 7,330 iterations a ``mode: val``
    row (mmcv up to 1.3 writes the epoch's length as its ``iter``) with the bbox mAPs and their text copy."""
    rng = _rng()
    interval, per_epoch = 50, 7330
    per = per_epoch // interval + 1
    header = {"env_info": "sys.platform: linux\nPython: 3.7.10\nCUDA available: True\nPyTorch: 1.6.0",
              "config": "model = dict(type='RetinaNet')\noptimizer = dict(type='SGD', lr=0.01, momentum=0.9)\n"
                        "runner = dict(type='EpochBasedRunner', max_epochs=12)\n",
              "seed": 0, "exp_name": "retinanet_r50_fpn_1x_coco.py"}
    lines = [json.dumps(header)]
    values = rng.random((rows, 6))
    for i in range(rows):
        epoch, position = divmod(i, per)
        v = values[i]
        if position < per - 1:
            loss_cls, loss_bbox = round(v[2], 5), round(v[3], 5)
            lines.append(json.dumps({
                "mode": "train", "epoch": epoch + 1, "iter": (position + 1) * interval, "lr": round(0.01 * v[0], 5),
                "memory": 5598, "data_time": round(v[1] / 10, 5), "loss_cls": loss_cls, "loss_bbox": loss_bbox,
                "loss": round(loss_cls + loss_bbox, 5), "time": round(1.5 + v[4], 5)}))
        else:
            maps = [round(x, 3) for x in v]
            lines.append(json.dumps({
                "mode": "val", "epoch": epoch + 1, "iter": per_epoch, "lr": 0.01, "bbox_mAP": maps[0],
                "bbox_mAP_50": maps[1], "bbox_mAP_75": maps[2], "bbox_mAP_s": maps[3], "bbox_mAP_m": maps[4],
                "bbox_mAP_l": maps[5], "bbox_mAP_copypaste": " ".join(f"{m:.3f}" for m in maps)}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


#: DETR's ``log.txt`` has one line per epoch (DETR's longest schedule is 500 epochs, most are 12-150), each of
#: ~95 keys and 4-5 KB: ``--rows`` lines would be gigabytes no run ever writes. The file gets ``rows // 1000``
#: epochs (1,000 for the default: twice the longest real schedule, about 4 MB and 100,000 points).
DETR_ROWS_PER_EPOCH = 1000
_DETR_LOSSES = ("loss_ce", "loss_bbox", "loss_giou")


def _detr_keys(split: str) -> list[str]:
    """The averaged meters of one split, as DETR's ``main.py`` names them (6 decoder layers: 5 auxiliary)."""
    keys = [f"{split}_lr"] if split == "train" else []
    keys += [f"{split}_class_error", f"{split}_loss", *(f"{split}_{name}" for name in _DETR_LOSSES)]
    keys += [f"{split}_{name}_{layer}" for layer in range(5) for name in _DETR_LOSSES]
    keys += [f"{split}_{name}_unscaled" for name in ("loss_ce", "class_error", "loss_bbox", "loss_giou",
                                                        "cardinality_error")]
    keys += [f"{split}_{name}_{layer}_unscaled" for layer in range(5)
             for name in ("loss_ce", "loss_bbox", "loss_giou", "cardinality_error")]
    return keys


def make_detr(path: Path, rows: int) -> None:
    """DETR ``log.txt``: one JSON object per epoch, ``train_*`` then ``test_*`` meters, COCOeval's 12 stats
    (-1 where an area range has no ground truth), ``epoch`` and ``n_parameters``."""
    rng = _rng()
    epochs = max(1, rows // DETR_ROWS_PER_EPOCH)
    keys = _detr_keys("train") + _detr_keys("test")
    values = rng.random((epochs, len(keys) + 12))
    with open(path, "w") as out:
        for epoch in range(epochs):
            record = dict(zip(keys, values[epoch].tolist(), strict=False))
            stats = values[epoch, len(keys):].tolist()
            stats[5] = stats[11] = -1.0
            record.update({"test_coco_eval_bbox": stats, "epoch": epoch, "n_parameters": 41279495})
            out.write(json.dumps(record) + "\n")


def make_wandb_history(path: Path, rows: int) -> None:
    """``run.history(samples=…).to_csv(…)`` of a Lightning run: pandas' unnamed index, W&B's ``_step``,
    ``_runtime`` and ``_timestamp``, ``trainer/global_step`` in every row; train rows with a sparse epoch
    and a validation row every 50 rows."""
    rng = _rng()
    step = np.arange(rows)
    val = step % 50 == 49
    runtime = np.cumsum(0.5 + rng.random(rows))
    loss = rng.random(rows)
    frame = pd.DataFrame({"_step": step, "_runtime": runtime.round(6), "_timestamp": (1.7e9 + runtime).round(6),
                          "trainer/global_step": (step - step // 50) * 8,
                          "train/loss": np.where(val, np.nan, loss), "lr-AdamW": np.where(val, np.nan, loss / 1e3),
                          "epoch": np.where(val | (step % 10 != 0), np.nan, step // 5000),
                          "val/loss": np.where(val, loss, np.nan), "val/acc": np.where(val, 1 - loss, np.nan)})
    frame.to_csv(path)


#: A runs-table export has one row per run: the largest sweeps export some thousands. The file gets
#: ``rows // 100`` runs (10,000 for the default).
RUNS_TABLE_ROWS_PER_RUN = 100


def make_wandb_runs(path: Path, rows: int) -> None:
    """W&B "Runs → Export as CSV": W&B's run columns, the config columns (sorted), then the summary columns
    (sorted again: where that order restarts is where the summary begins), every cell quoted."""
    rng = _rng()
    n = max(1, rows // RUNS_TABLE_ROWS_PER_RUN)
    created = pd.Timestamp("2026-05-25T14:08:33Z") + pd.to_timedelta(np.arange(n) * 900, unit="s")
    frame = pd.DataFrame({
        "Name": [f"trial-{i % (n // 5 or 1)}" for i in range(n)],  # a name per config, each run with 5 seeds
        "State": np.where(rng.random(n) < 0.9, "finished", "crashed"), "Notes": "-", "User": "",
        "Tags": "sweep", "Created": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "Runtime": rng.integers(300, 5000, n), "Sweep": "k3j2h1g0",
        "batch_size": rng.choice([32, 64, 128], n), "dropout": rng.choice([0.0, 0.1, 0.2], n),
        "learning_rate": rng.choice([1e-4, 3e-4, 1e-3], n), "max_iters": 5000, "n_layer": rng.choice([4, 6, 8], n),
        "seed": np.arange(n) % 5, "wandb_project": "nanogpt-ablations", "weight_decay": 0.1,
        "iter": 5000, "lr": rng.random(n) / 1e3, "train/loss": rng.random(n) + 1, "train/step_loss": rng.random(n) + 1,
        "val/loss": np.where(rng.random(n) < 0.95, rng.random(n) + 1.5, np.nan),
    })
    frame.to_csv(path, index=False, quoting=csv.QUOTE_ALL)


def make_jsonl(path: Path, rows: int) -> None:
    """A pretraining loop's own JSON-lines log: one record a step (step, loss, lr, grad_norm, tokens_per_second, mfu,
    and its UNIX time)."""
    rng = _rng()
    frame = pd.DataFrame({"step": np.arange(1, rows + 1), "loss": rng.random(rows) * 3, "lr": rng.random(rows) * 1e-3,
                          "grad_norm": rng.random(rows) * 5, "tokens_per_second": rng.random(rows) * 1e5,
                          "mfu": rng.random(rows), "time": 1.7e9 + np.arange(rows) * 0.37})
    frame.to_json(path, orient="records", lines=True)


def make_mlflow(path: Path, rows: int) -> None:
    """An MLflow file store (``mlruns/<experiment>/<run>/``) of a sweep as long runs write it: 10 runs, each
    with its ``meta.yaml``, params, tags and four metric files of ``timestamp value step`` lines, ``rows``
    lines in all. One long run holds three quarters of them (its ``loss`` file: ``rows * 3 // 8`` lines,
    15 MB at a million rows), a second a tenth, eight short trials the rest; the learning rate is written
    in exponent notation (``3.1e-05``), as Python writes small floats."""
    rng = _rng()
    experiment = path.parents[2]
    experiment.mkdir(parents=True, exist_ok=True)
    (experiment / "meta.yaml").write_text(
        "artifact_location: ./mlruns/0\nexperiment_id: '0'\nlifecycle_stage: active\nname: Default\n")
    runs = (0.75, 0.1) + (0.15 / 8,) * 8
    names, shares = ("loss", "lr", "val_loss", "val_accuracy"), (0.5, 0.3, 0.1, 0.1)
    for index, run_share in enumerate(runs):
        run_id = path.parents[1].name if index == 0 else f"{index:032x}"
        run = experiment / run_id
        (run / "metrics").mkdir(parents=True, exist_ok=True)
        (run / "params").mkdir(exist_ok=True)
        (run / "tags").mkdir(exist_ok=True)
        start = 1645595100957 + index * 3_600_000
        (run / "meta.yaml").write_text(
            f"artifact_uri: ./mlruns/0/{run_id}/artifacts\nend_time: {start + 3_000_000}\nentry_point_name: ''\n"
            f"experiment_id: '0'\nlifecycle_stage: active\nrun_id: {run_id}\nrun_name: trial-{index}\n"
            f"run_uuid: {run_id}\nsource_name: ''\nsource_type: 4\nsource_version: ''\n"
            f"start_time: {start}\nstatus: 3\ntags: []\nuser_id: bench\n")
        (run / "params" / "learning_rate").write_text(str(10 ** -(1 + index % 4)))
        (run / "params" / "batch_size").write_text("32")
        (run / "tags" / "mlflow.runName").write_text(f"trial-{index}")
        (run / "tags" / "mlflow.source.type").write_text("LOCAL")
        for name, share in zip(names, shares, strict=True):
            n = int(rows * run_share * share)
            every = 5 if name.startswith("val") else 1  # validation every 5 steps
            steps = np.arange(n) * every
            value = rng.random(n) * (1e-4 if name == "lr" else 1)
            frame = pd.DataFrame({"timestamp": start + steps * 211 + rng.integers(0, 50, n), "value": value,
                                  "step": steps})
            frame.to_csv(run / "metrics" / name, sep=" ", header=False, index=False)


def make_sacred(path: Path, rows: int) -> None:
    """A Sacred ``FileStorageObserver`` run folder (``runs/1/``) as a long run leaves it: ``run.json``,
    ``config.json`` and ``metrics.json`` of four metrics, ``rows`` points in all (train/loss half of them, lr,
    and val/loss, val/accuracy every 5 steps), written as Sacred writes them (``json.dump(sort_keys=True,
    indent=2)``, ``datetime.utcnow().isoformat()`` timestamps)."""
    rng = _rng()
    start = datetime.datetime(2026, 3, 1, 12, 0, 0)
    metrics = {}
    for name, share, every in (("train/loss", 0.5, 1), ("lr", 0.3, 1), ("val/loss", 0.1, 5), ("val/accuracy", 0.1, 5)):
        n = int(rows * share)
        steps = np.arange(n) * every
        micros = steps * 211_000 + rng.integers(0, 50_000, n)
        metrics[name] = {"steps": steps.tolist(), "values": (rng.random(n) * (1e-4 if name == "lr" else 1)).tolist(),
                         "timestamps": [(start + datetime.timedelta(microseconds=int(us))).isoformat()
                                        for us in micros]}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as out:
        json.dump(metrics, out, sort_keys=True, indent=2)
    entry = {"artifacts": [], "command": "train", "experiment": {"base_dir": "/job", "dependencies": ["sacred==0.8.7"],
             "mainfile": "train.py", "name": "bench", "repositories": [], "sources": []},
             "heartbeat": "2026-03-01T15:00:00.000001", "host": {"hostname": "bench"}, "meta": {"command": "train"},
             "resources": [], "result": None, "start_time": start.isoformat(), "status": "COMPLETED",
             "stop_time": "2026-03-01T15:00:00.000002"}
    (path.parent / "run.json").write_text(json.dumps(entry, sort_keys=True, indent=2))
    (path.parent / "config.json").write_text(json.dumps({"lr": 0.001, "seed": 1}, sort_keys=True, indent=2))


def make_dvclive(path: Path, rows: int) -> None:
    """A DVCLive folder (``dvclive/plots/metrics/``) of a long run as DVCLive 3 writes it: per-step
    ``train/loss`` (half the rows), ``train/lr`` (exponent notation) and ``train/grad_norm``, and
    ``eval/loss`` and ``eval/acc`` every 10 steps logged with ``timestamp=True``; ``rows`` lines in all,
    with the ``metrics.json`` and ``params.yaml`` beside them."""
    rng = _rng()
    live = path.parents[3]
    shares = {"train/loss": 0.5, "train/lr": 0.2, "train/grad_norm": 0.2, "eval/loss": 0.05, "eval/acc": 0.05}
    for name, share in shares.items():
        n = int(rows * share)
        every = 10 if name.startswith("eval") else 1
        steps = np.arange(n) * every
        value = rng.random(n) * (1e-4 if name == "train/lr" else 1)
        columns = {"step": steps, name.rsplit("/", 1)[-1]: value}
        if name.startswith("eval"):
            columns = {"timestamp": 1_700_000_000_000 + steps * 211 + rng.integers(0, 50, n), **columns}
        target = live / "plots" / "metrics" / f"{name}.tsv"
        target.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(columns).to_csv(target, sep="\t", index=False, lineterminator="\n")
    (live / "metrics.json").write_text(json.dumps({"train": {"loss": 0.1}, "eval": {"loss": 0.2}, "step": rows},
                                                  indent=4))
    (live / "params.yaml").write_text("lr: 0.0003\nbatch_size: 32\n")


def make_hf_state(path: Path, rows: int) -> None:
    rng = _rng()
    loss, lr = rng.random(rows).tolist(), rng.random(rows).tolist()
    history = [{"epoch": i / 1000, "grad_norm": loss[i] * 2, "learning_rate": lr[i], "loss": loss[i], "step": i + 1}
               for i in range(rows)]
    path.write_text(json.dumps({"global_step": rows, "log_history": history}))


def make_history_json(path: Path, rows: int) -> None:
    """``json.dump(history.history, f)`` of a long fit: four lists, ``rows`` values in all."""
    rng = _rng()
    n = rows // 4
    path.write_text(json.dumps({"loss": rng.random(n).tolist(), "accuracy": rng.random(n).tolist(),
                                "val_loss": rng.random(n).tolist(), "val_accuracy": rng.random(n).tolist()}))


def make_tidy(path: Path, rows: int) -> None:
    """``tanalyze parse -o`` of a sweep: 10 runs of 4 tags, ``rows`` points in all, one per row."""
    rng = _rng()
    per = rows // 40
    steps = np.tile(np.arange(per), 40)
    frame = pd.DataFrame({"run": np.repeat([f"sweep/lr{i}" for i in range(10)], 4 * per),
                          "tag": np.tile(np.repeat(["train/loss", "val/loss", "lr", "grad_norm"], per), 10),
                          "step": steps, "value": rng.random(len(steps)), "wall_time": 1.7e9 + steps * 0.5})
    frame.to_csv(path, index=False)


def make_yolo_txt(path: Path, rows: int) -> None:
    """YOLOv5's results.txt (< v6): ``rows`` lines of 15 fixed-width fields, as its train.py writes them."""
    rng = _rng()
    values = rng.random((rows, 13))
    with open(path, "w") as handle:
        for epoch in range(rows):
            handle.write(("%10s" * 2 + "%10.4g" * 13 + "\n") % (f"{epoch}/{rows - 1}", "3.33G", *values[epoch]))


def make_monitor(path: Path, rows: int) -> None:
    """An environment Monitor's ``monitor.csv`` as SB3's ResultsWriter writes it: its JSON header, ``r,l,t`` and
    one episode a line (the return, the length, the seconds since the start, six decimals)."""
    rng = _rng()
    lengths = rng.integers(10, 500, rows)
    frame = pd.DataFrame({"r": lengths.astype(np.float64), "l": lengths, "t": np.round(np.cumsum(lengths) / 2000, 6)})
    with open(path, "w") as handle:
        handle.write('#{"t_start": 1796617085.983946, "env_id": "CartPole-v1"}\n')
        frame.to_csv(handle, index=False)


# -- anchors ----------------------------------------------------------------------------------------------


def make_ray_tune(path: Path, rows: int) -> None:
    """A Ray Tune trial's ``result.json``: one report per line, the user's metrics then Tune's own keys (times,
    host, the trial's config) as Tune writes them, and ``params.json`` beside it."""
    rng = _rng()
    loss, acc, lr, spent = (rng.random(rows).tolist() for _ in range(4))
    start, total = 1_700_000_000, 0.0
    lines = []
    for i in range(rows):
        total += spent[i]
        lines.append(
            f'{{"loss": {loss[i]!r}, "accuracy": {acc[i]!r}, "lr": {lr[i]!r}, "timestamp": {start + int(total)}, '
            f'"checkpoint_dir_name": null, "done": false, "training_iteration": {i + 1}, "trial_id": "a0529_00000", '
            f'"date": "2024-01-01_00-00-00", "time_this_iter_s": {spent[i]!r}, "time_total_s": {total!r}, '
            f'"pid": 8962, "hostname": "node-1", "node_ip": "10.0.0.1", "config": {{"lr": 0.001, "batch_size": 64}}, '
            f'"time_since_restore": {total!r}, "iterations_since_restore": {i + 1}}}')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    (path.parent / "params.json").write_text(json.dumps({"batch_size": 64, "lr": 0.001}, indent=2))


#: Tune's bookkeeping in every result: no metric (the reader keeps time_this_iter_s)
_TUNE_NOT_METRICS = ("timestamp", "checkpoint_dir_name", "done", "trial_id", "date", "time_total_s", "pid",
                     "hostname", "node_ip", "config", "time_since_restore", "iterations_since_restore")


def _melt(wide: pd.DataFrame, step: str, drop: tuple[str, ...] = ()) -> pd.DataFrame:
    wide = wide.drop(columns=[c for c in drop if c in wide.columns])
    long = wide.melt(id_vars=[step], var_name="tag", value_name="value").dropna(subset=["value"])
    return long.rename(columns={step: "step"}).assign(run="run")


def anchor_csv(step: str, drop: tuple[str, ...] = (), **options) -> Callable[[Path], pd.DataFrame]:
    return lambda path: _melt(pd.read_csv(path, **options), step, drop)


def anchor_json_lines(step: str, drop: tuple[str, ...] = ()) -> Callable[[Path], pd.DataFrame]:
    """``drop``: columns that are no metric (a record's kind, its other counters, text)."""
    return lambda path: _melt(pd.read_json(path, lines=True), step, drop)


def anchor_hf_state(path: Path) -> pd.DataFrame:
    with open(path) as handle:
        history = json.load(handle)["log_history"]
    return _melt(pd.DataFrame(history), "step")


def anchor_history_json(path: Path) -> pd.DataFrame:
    """The lists as columns, their position as the step."""
    with open(path) as handle:
        wide = pd.DataFrame(json.load(handle))
    return _melt(wide.rename_axis("step").reset_index(), "step")


def anchor_yolo_txt(path: Path) -> pd.DataFrame:
    """The whitespace-separated columns, the epoch from 'epoch/last', the curve columns melted."""
    wide = pd.read_csv(path, sep=r"\s+", header=None)
    wide[0] = wide[0].str.split("/").str[0].astype(int)
    return _melt(wide.drop(columns=[1, 5, 6, 7]), 0)


def anchor_monitor(path: Path) -> pd.DataFrame:
    """The episodes after the header line, the step the running sum of their lengths, return and length melted."""
    wide = pd.read_csv(path, skiprows=1)
    wide["step"] = wide["l"].cumsum()
    return _melt(wide.drop(columns=["t"]), "step")


def anchor_detr(path: Path) -> pd.DataFrame:
    """JSON lines, the COCOeval list spread over 12 columns."""
    wide = pd.read_json(path, lines=True)
    stats = pd.DataFrame(wide.pop("test_coco_eval_bbox").tolist(), index=wide.index).add_prefix("test_coco_eval_bbox/")
    return _melt(pd.concat([wide, stats], axis=1), "epoch", ("n_parameters",))


def anchor_mlflow(path: Path) -> pd.DataFrame:
    """Every metric file of every run: ``timestamp value step`` read by ``read_csv``, tagged with its name."""
    frames = [pd.read_csv(metric, sep=" ", header=None, names=["timestamp", "value", "step"])
              .assign(tag=metric.name, run=metric.parents[1].name)
              for metric in sorted(path.parents[2].glob("*/metrics/*"))]
    return pd.concat(frames, ignore_index=True)


def anchor_sacred(path: Path) -> pd.DataFrame:
    """``json.load`` of ``metrics.json``, one frame per metric (its ISO timestamps parsed by pandas), joined."""
    with open(path) as handle:
        metrics = json.load(handle)
    frames = [pd.DataFrame({"step": series["steps"], "value": series["values"],
                            "wall_time": pd.to_datetime(series["timestamps"], format="ISO8601").asi8 / 1e9})
              .assign(tag=name, run="run") for name, series in metrics.items()]
    return pd.concat(frames, ignore_index=True)


def anchor_dvclive(path: Path) -> pd.DataFrame:
    """Every metric TSV of the folder read by ``read_csv(sep="\\t")``, its value column as ``value``, tagged
    with its path below ``plots/metrics``."""
    metrics = path.parents[1]
    frames = []
    for tsv in sorted(metrics.rglob("*.tsv")):
        frame = pd.read_csv(tsv, sep="\t")
        frames.append(frame.rename(columns={frame.columns[-1]: "value"})
                      .assign(tag=tsv.relative_to(metrics).with_suffix("").as_posix(), run="run"))
    return pd.concat(frames, ignore_index=True)


def _dvclive_folder(path: Path) -> list[Path]:
    """The whole DVCLive folder: discovery hands the reader every file of it."""
    return sorted(p for p in path.parents[3].rglob("*") if p.is_file())


def anchor_wandb_runs(path: Path) -> pd.DataFrame:
    """The summary columns of every row, melted on the step the summary names (``iter``)."""
    wide = pd.read_csv(path)
    summary = wide[["Name", "iter", "lr", "train/loss", "train/step_loss", "val/loss"]]
    long = summary.melt(id_vars=["Name", "iter"], var_name="tag", value_name="value").dropna(subset=["value"])
    return long.rename(columns={"iter": "step", "Name": "run"})


def _siblings(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.iterdir() if p.is_file())


def _mlflow_store(path: Path) -> list[Path]:
    """The whole store (``mlruns/``): discovery hands the MLflow reader every file of it."""
    return sorted(p for p in path.parents[3].rglob("*") if p.is_file())


@dataclass(frozen=True)
class Case:
    reader: str
    relative: str
    make: Callable[[Path, int], None]
    anchor: Callable[[Path], pd.DataFrame]
    files: Callable[[Path], list[Path]] = _siblings  # what ``Reader.read`` gets


_MMDET2_NOT_METRICS = ("env_info", "config", "seed", "exp_name", "mode", "epoch", "bbox_mAP_copypaste")

CASES = (
    Case("lightning_csv", "lightning/version_0/metrics.csv", make_lightning, anchor_csv("step")),
    Case("keras_csv", "keras/training.log", make_keras, anchor_csv("epoch")),
    Case("yolo_csv", "yolo/results.csv", make_yolo, anchor_csv("epoch", skipinitialspace=True)),
    Case("csv", "csv/metrics.csv", make_csv, anchor_csv("step")),
    Case("csv", "per_batch/metrics.csv", make_per_batch, anchor_csv("Epoch")),
    Case("wandb-chart-csv", "wandb/wandb_export.csv", make_wandb_chart, anchor_csv("Step")),
    Case("detectron2", "detectron2/metrics.json", make_detectron2, anchor_json_lines("iteration")),
    Case("jsonl", "jsonl/metrics.jsonl", make_jsonl, anchor_json_lines("step", ("time",))),
    Case("hf_trainer_state", "hf/trainer_state.json", make_hf_state, anchor_hf_state),
    Case("mmengine", "mmengine/yolov5_s-v61_fast_1xb12-40e/20230805_113504/vis_data/scalars.json", make_mmengine,
         anchor_json_lines("step", ("epoch", "iter"))),
    Case("mmdet2", "mmdet2/retinanet_r50_fpn_1x_coco/20210421_200459.log.json", make_mmdet2,
         anchor_json_lines("iter", _MMDET2_NOT_METRICS)),
    Case("detr", "detr/log.txt", make_detr, anchor_detr),
    Case("history_json", "history/history.json", make_history_json, anchor_history_json),
    Case("tidy", "tidy/scalars.csv", make_tidy, lambda path: pd.read_csv(path)),
    Case("yolo_txt", "yolo_txt/results.txt", make_yolo_txt, anchor_yolo_txt),
    Case("sb3_monitor", "sb3_monitor/monitor.csv", make_monitor, anchor_monitor),
    Case("wandb-history", "wandb_history/history.csv", make_wandb_history,
         anchor_csv("_step", ("_runtime", "_timestamp", "trainer/global_step"), index_col=0)),
    Case("wandb-runs-csv", "wandb_runs/wandb_export.csv", make_wandb_runs, anchor_wandb_runs),
    Case("mlflow", "mlflow/mlruns/0/5d1c2a7e0b3f4e6a9c8d7b6a5f4e3d2c/metrics/loss", make_mlflow, anchor_mlflow,
         _mlflow_store),
    Case("dvclive", "dvclive/dvclive/plots/metrics/train/loss.tsv", make_dvclive, anchor_dvclive, _dvclive_folder),
    Case("ray_tune", "ray_tune/tiny_sgd/train_regression_a0529_00000_0_lr=0.0010/result.json", make_ray_tune,
         anchor_json_lines("training_iteration", _TUNE_NOT_METRICS)),
    Case("sacred", "sacred/runs/1/metrics.json", make_sacred, anchor_sacred),
)


def _claimed_by(path: Path) -> str | None:
    """The reader discovery gives ``path`` to: the first in registry order whose ``sniff`` claims it."""
    with open(path, "rb") as handle:
        head = handle.read(HEAD_BYTES)
    return next((reader.name for reader in get_readers() if reader.sniff(path, head)), None)


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


def _objects_alone(runs: list[RunData]) -> list[RunData]:
    """The runs rebuilt from their own parts, with no file read: the least any reader returning them costs.

    A runs table's product is one run per row, each with its own config, summary and points; this is
    the floor under its ratio that no parsing can lower.
    """
    with collector_paused():  # as the reader builds them
        return [RunData(name=run.name, hparams={key: dict(value) if isinstance(value, dict) else value
                                                for key, value in run.hparams.items()},
                        notes=list(run.notes), warnings=list(run.warnings), histograms=run.histograms,
                        scalars=ScalarColumns.of_chunks(run.scalars.tags, run.scalars.chunks)
                        if isinstance(run.scalars, ScalarColumns) else run.scalars)
                for run in runs]


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
        claimed = _claimed_by(path)
        if claimed != case.reader:
            raise SystemExit(f"{path} is read by {claimed!r}, not {case.reader!r}: the synthetic file is not that format")
        reader = get_reader(case.reader)
        files = case.files(path)
        ours, runs, anchor, table = _best_pair(lambda r=reader, f=files: r.read(f), lambda c=case, p=path: c.anchor(p),
                                               args.repeat)
        ratio = ours / anchor
        worst = max(worst, ratio)
        megabytes = sum(f.stat().st_size for f in files) / 1e6
        print(f"{case.reader + ' (' + label + ')':<28}{megabytes:>6.0f}{ours:>9.2f}{anchor:>10.2f}"
              f"{ratio:>7.2f}{_points(runs):>12,}{len(table):>12,}")
        if len(runs) > 1000:
            floor = min(_timed(lambda r=runs: _objects_alone(r))[0] for _ in range(args.repeat))
            print(f"{'':<4}floor: building its {len(runs):,} runs alone (no file read) takes {floor:.2f} s, "
                  f"{floor / anchor:.2f}x the anchor")
    print(f"worst ratio: {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
