"""The bundled sample runs agree with what LABELS.json says about them.

These tests read the files with small independent parsers (TFRecord framing +
the Event protobuf, json, csv, regular expressions), not with tanalyze's
readers: they check the labels the analysis tests will trust.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import re
import struct
from pathlib import Path

import crc32c
import pytest
from tensorboard.compat.proto import event_pb2

from tests.conftest import REPO, SAMPLE_RUNS

LABELS = json.loads((SAMPLE_RUNS / "LABELS.json").read_text())
RUNS: dict[str, dict] = LABELS["runs"]
REGIMES = {"normal", "overfitting", "underfitting", "unstable", "diverged"}
LOG_FILES = {  # format -> glob of the files that make a run of it
    "tensorboard": "events.out.tfevents.*",
    "hf_trainer_state": "trainer_state.json",
    "hf_console": "*.log",
    "lightning_csv": "metrics.csv",
    "wandb_local": "run-*.wandb",
    "nanogpt": "train.log",
    "build_nanogpt": "*",  # log.txt, or the console as captured
}
REQUIRED = {
    "regime", "borderline", "format", "train_loss_tag", "val_loss_tag", "divergence_step", "divergence_kind",
    "val_min_step", "val_min_window", "restart_step", "truncated", "cause", "notes",
}


# --------------------------------------------------------------------------- independent parsers


def _masked_crc(data: bytes) -> int:
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecords(data: bytes) -> tuple[list[bytes], int]:
    """Complete, CRC-checked record payloads and the offset where complete records end."""
    payloads, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos : pos + 8])
        (length_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        assert length_crc == _masked_crc(data[pos : pos + 8]), f"bad length CRC at offset {pos}"
        end = pos + 12 + length + 4
        if end > len(data):
            break
        payload = data[pos + 12 : pos + 12 + length]
        assert struct.unpack("<I", data[end - 4 : end])[0] == _masked_crc(payload), f"bad data CRC at {pos}"
        payloads.append(payload)
        pos = end
    return payloads, pos


def _tensor_scalar(tensor) -> float | None:
    """The value of a 0-d DT_FLOAT/DT_DOUBLE tensor (how TF2 and Keras write scalars), else None."""
    if tensor.tensor_shape.dim:
        return None
    if tensor.float_val:
        return float(tensor.float_val[0])
    if tensor.double_val:
        return float(tensor.double_val[0])
    formats = {1: "<f", 2: "<d"}  # DT_FLOAT, DT_DOUBLE
    if tensor.dtype in formats and tensor.tensor_content:
        return float(struct.unpack(formats[tensor.dtype], tensor.tensor_content)[0])
    return None


def tb_scalars(folder: Path, *, limit: int | None = None) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        payloads, _ = tfrecords(data[:limit] if limit else data)
        for payload in payloads:
            event = event_pb2.Event.FromString(payload)
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    out.setdefault(value.tag, []).append((event.step, value.simple_value))
                elif kind == "tensor" and value.metadata.plugin_data.plugin_name == "scalars":
                    scalar = _tensor_scalar(value.tensor)
                    if scalar is not None:
                        out.setdefault(value.tag, []).append((event.step, scalar))
    return out


def hf_state(folder: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for entry in json.loads((folder / "trainer_state.json").read_text())["log_history"]:
        for key, value in entry.items():
            if isinstance(value, float | int) and key not in ("step", "epoch"):
                out.setdefault(key, []).append((entry["step"], float(value)))
    return out


def lightning(folder: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    with open(folder / "metrics.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            for key, value in row.items():
                if value and key not in ("step", "epoch"):
                    out.setdefault(key, []).append((int(row["step"]), float(value)))
    return out


def nanogpt(folder: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for line in (folder / "train.log").read_text().splitlines():
        if m := re.match(r"iter (\d+): loss (\S+),", line):
            out.setdefault("loss", []).append((int(m[1]), float(m[2])))
        elif m := re.match(r"step (\d+): train loss (\S+), val loss (\S+)", line):
            out.setdefault("val loss", []).append((int(m[1]), float(m[3])))
    return out


def hf_console_dicts(folder: Path) -> list[dict]:
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", (folder / "train.log").read_text()).replace("\r", "\n")
    lines = (line.strip() for line in text.splitlines())
    return [ast.literal_eval(line) for line in lines if line.startswith("{'") and line.endswith("}")]


def build_nanogpt(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """log.txt's records, or the console's step lines and the validation lines before them (at their loop)."""
    out: dict[str, list[tuple[int, float]]] = {}
    names = {"train": "train/loss", "val": "val/loss"}
    if (folder / "log.txt").is_file():
        for line in (folder / "log.txt").read_text().splitlines():
            step, kind, value = line.split(" ")
            out.setdefault(names[kind], []).append((int(step), float(value)))
        return out
    step = -1
    for line in (folder / "train.out").read_text().splitlines():
        if m := re.match(r"step +(\d+) \| loss: (\S+) \|", line):
            step = int(m[1])
            out.setdefault("train/loss", []).append((step, float(m[2])))
        elif m := re.match(r"validation loss: (\S+)$", line):
            out.setdefault("val/loss", []).append((step + 1, float(m[1])))
    return out


PARSERS = {"tensorboard": tb_scalars, "hf_trainer_state": hf_state, "lightning_csv": lightning, "nanogpt": nanogpt,
           "build_nanogpt": build_nanogpt}


def series(run: str, tag: str) -> list[tuple[int, float]]:
    label = RUNS[run]
    folder = SAMPLE_RUNS / run
    if tag in label.get("sources", {}):  # one run split over sub-folders: the tag lives in one of them
        source = label["sources"][tag]
        return tb_scalars(folder / source["folder"])[source["tag"]]
    if label["truncated"]:
        return tb_scalars(folder, limit=label["intact_bytes"])[tag]
    return PARSERS[label["format"]](folder)[tag]


PARSEABLE = [run for run, label in RUNS.items() if label["format"] in PARSERS]


# --------------------------------------------------------------------------- the labels themselves


def test_labels_cover_every_regime_and_the_formats_the_readers_need():
    assert {label["regime"] for label in RUNS.values()} == REGIMES
    assert set(LOG_FILES) <= {label["format"] for label in RUNS.values()}
    assert any(label["truncated"] for label in RUNS.values())
    assert any(label["restart_step"] is not None for label in RUNS.values())


@pytest.mark.parametrize("run", sorted(RUNS))
def test_label_has_the_documented_fields(run):
    label = RUNS[run]
    assert REQUIRED <= set(label), f"{run} misses {REQUIRED - set(label)}"
    assert label["regime"] in REGIMES
    assert label["format"] in LOG_FILES
    assert (label["divergence_step"] is None) == (label["divergence_kind"] is None) == (label["regime"] != "diverged")
    if label["val_min_window"] is not None:
        lo, hi = label["val_min_window"]
        assert lo <= label["val_min_step"] <= hi


@pytest.mark.parametrize("run", sorted(RUNS))
def test_labelled_run_folder_holds_log_files_of_its_format(run):
    folder = SAMPLE_RUNS / run
    assert folder.is_dir(), f"{run} is labelled but missing"
    sources = RUNS[run].get("sources", {})
    for where in [folder / source["folder"] for source in sources.values()] or [folder]:
        files = [p for p in where.glob(LOG_FILES[RUNS[run]["format"]]) if p.is_file() and p.stat().st_size > 0]
        assert files, f"{where.relative_to(SAMPLE_RUNS)}: no {LOG_FILES[RUNS[run]['format']]} file"


@pytest.mark.parametrize("run", sorted(r for r, label in RUNS.items() if "sources" in label))
def test_split_run_sources_hold_the_labelled_points(run):
    """A run written to several folders: each labelled tag is where 'sources' says, with the labelled count."""
    label = RUNS[run]
    assert set(label["sources"]) == {label["train_loss_tag"], label["val_loss_tag"]}
    train, val = series(run, label["train_loss_tag"]), series(run, label["val_loss_tag"])
    assert len(train) == label["train_points"] and len(val) == label["val_points"]
    assert [min(s for s, _ in train), max(s for s, _ in train)] == label["train_steps"]
    for source in label["sources"].values():
        assert label["train_loss_tag"] not in tb_scalars(SAMPLE_RUNS / run / source["folder"])


# --------------------------------------------------------------------------- labels agree with the files


@pytest.mark.parametrize("run", [r for r in PARSEABLE if RUNS[r]["divergence_step"] is not None])
def test_divergence_step_is_the_first_non_finite_or_exploded_loss(run):
    label = RUNS[run]
    points = series(run, label["train_loss_tag"])
    steps = [s for s, _ in points]
    assert min(steps) <= label["divergence_step"] <= max(steps)
    before = [v for s, v in points if s < label["divergence_step"]]
    at = dict(points)[label["divergence_step"]]
    if label["divergence_kind"] in ("nan", "inf"):
        assert all(math.isfinite(v) for v in before)
        assert math.isnan(at) if label["divergence_kind"] == "nan" else math.isinf(at)
    else:
        assert at > 10 * min(before)


@pytest.mark.parametrize("run", [r for r in PARSEABLE if RUNS[r]["regime"] != "diverged"])
def test_non_diverged_runs_stay_finite(run):
    points = series(run, RUNS[run]["train_loss_tag"])
    assert all(math.isfinite(v) for _, v in points)


@pytest.mark.parametrize("run", [r for r in PARSEABLE if RUNS[r]["val_min_step"] is not None])
def test_val_min_step_is_the_minimum_of_the_logged_val_loss(run):
    label = RUNS[run]
    points = [(s, v) for s, v in series(run, label["val_loss_tag"]) if math.isfinite(v)]
    best = min(v for _, v in points)
    assert dict(points)[label["val_min_step"]] == best
    lo, hi = label["val_min_window"]
    near = [s for s, v in points if v <= best * 1.01]
    assert (min(near), max(near)) == (lo, hi)


def test_overfitting_runs_show_a_val_minimum_well_before_the_end():
    checked = 0
    for run in PARSEABLE:
        label = RUNS[run]
        if label["regime"] == "overfitting":
            points = series(run, label["val_loss_tag"])
            assert label["val_min_step"] < points[-1][0] / 2
            assert points[-1][1] > 1.3 * min(v for _, v in points)
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize("run", [r for r in PARSEABLE if RUNS[r]["restart_step"] is not None])
def test_restart_step_is_logged_twice_and_overlap_is_as_labelled(run):
    label = RUNS[run]
    steps = [s for s, _ in series(run, label["train_loss_tag"])]
    twice = sorted({s for s in steps if steps.count(s) == 2})
    assert twice[0] == label["restart_step"]
    assert [twice[0], twice[-1]] == label["overlap_steps"]
    assert len(steps) == label["train_points"]


def test_hf_console_holds_as_many_loss_lines_as_labelled():
    runs = [r for r, label in RUNS.items() if label["format"] == "hf_console"]
    assert runs
    for run in runs:
        dicts = hf_console_dicts(SAMPLE_RUNS / run)
        assert sum("loss" in d for d in dicts) == RUNS[run]["train_points"]
        assert sum("eval_loss" in d for d in dicts) == RUNS[run]["val_points"]


def test_truncated_event_file_really_ends_mid_record():
    truncated = [r for r, label in RUNS.items() if label["truncated"]]
    assert truncated
    for run in truncated:
        label = RUNS[run]
        data = (SAMPLE_RUNS / run / label["truncated_file"]).read_bytes()
        payloads, end = tfrecords(data)
        assert len(payloads) == label["intact_records"]
        assert end == label["intact_bytes"] < len(data) == label["file_bytes"]
        (declared,) = struct.unpack("<Q", data[end : end + 8])
        assert end + 12 + declared + 4 > len(data), "the last record is complete: not truncated"
        assert event_pb2.Event.FromString(payloads[0]).file_version.startswith("brain.Event")


def test_pairs_reference_labelled_runs_that_log_their_throughput_tag():
    expects = {pair["expect"] for pair in LABELS["pairs"]}
    assert expects == {"regression", "no_regression"}
    for pair in LABELS["pairs"]:
        for role in ("baseline", "candidate"):
            assert pair[role] in RUNS
            points = tb_scalars(SAMPLE_RUNS / pair[role])[pair["throughput_tag"]]
            assert len(points) >= 300, "too few points for a statistical test"
        assert (pair["expect"] == "regression") == (pair["measured_slowdown"] > 0.15)


def test_wandb_run_keeps_only_small_files():
    for run, label in RUNS.items():
        if label["format"] == "wandb_local":
            wandb_file = SAMPLE_RUNS / run / label["wandb_file"]
            assert wandb_file.read_bytes()[:4] == b":W&B"
            assert wandb_file.stat().st_size == label["wandb_bytes"] < 500_000
            assert not (SAMPLE_RUNS / run / "logs").exists()


def test_sample_runs_stay_small_and_hold_no_machine_paths():
    files = [p for p in SAMPLE_RUNS.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in files) < 5_000_000
    needles = {str(REPO).encode(), str(Path.home()).encode() + b"/"}
    for path in files:
        data = path.read_bytes()
        for needle in needles:
            assert needle not in data, f"{path.relative_to(SAMPLE_RUNS)} contains {needle!r}"
