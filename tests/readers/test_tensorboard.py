"""The TensorBoard reader: equivalence with tbparse on every real event file, exact values from
known files, TensorBoard's merge rules for restarted runs, and damaged files that must not crash."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboardX import SummaryWriter
from tensorboardX.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboardX.record_writer import masked_crc32c

from tanalyze import load
from tanalyze.cli import main
from tanalyze.readers.tensorboard.reader import TensorBoardReader, _continues
from tanalyze.schema import HISTOGRAM_COLUMNS, ScalarColumns
from tests.conftest import real_log

READER = TensorBoardReader()
T5_RUN = "tfevents/10844110__t5-summarization-demo/runs/Mar24_22-23-40_DESKTOP-41L2EO3"
T5_TRAIN = f"{T5_RUN}/events.out.tfevents.1742826235.DESKTOP-41L2EO3.107869.0"
OD_API = ("tfevents/Harry0415__TensorFlow-Object-Detection-API-implement/workspace/training_demo/models/"
          "my_ssd_resnet50_v1_fpn/train/events.out.tfevents.1624280588.LAPTOP-3E248V60.6508.1548.v2")
DEEPSC = "tfevents/Battam1111__DeepSC/lightning_logs/version_0"
HISTOGRAMS = "tfevents/ZeroToMax-ZYZ__study_tensorboard/runs/histogram_experiment"
RERUN = "tfevents/ZeroToMax-ZYZ__study_tensorboard/runs/my_first_experiment"
KERAS_TWO_FITS = "tfevents_keras_split/Nivesara__project_fashion_mnist/logs/cnn_1layer"
YOLOV8 = "tfevents/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train"
YOLOV5 = "tfevents/483172__yolov5-custom_lego_dataset-2022-06-15/runs/train/exp"


# ---------------------------------------------------------------- helpers

def read_one(*files: Path):
    [run] = READER.read(list(files))
    return run


def curve(frame: pd.DataFrame, tag: str) -> pd.DataFrame:
    return frame[frame["tag"] == tag].reset_index(drop=True)


def write_scalars(folder: Path, name: str, points: list[tuple[str, float, int]], start_time: float = 1.7e9) -> Path:
    """An event file written by tensorboardX's SummaryWriter, renamed to ``name`` (a chosen writer/pid)."""
    scratch = folder / f"_writing_{name}"
    writer = SummaryWriter(str(scratch))
    for index, (tag, value, step) in enumerate(points):
        writer.add_scalar(tag, value, step, walltime=start_time + index)
    writer.close()
    [written] = scratch.glob("*tfevents*")
    target = folder / name
    written.rename(target)
    scratch.rmdir()
    return target


def write_events(path: Path, events: list) -> Path:
    """Frame serialised events as TFRecords with tensorboardX's own CRC code (independent of ours)."""
    chunks = []
    for event in events:
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        chunks += [header, struct.pack("<I", masked_crc32c(header)), data, struct.pack("<I", masked_crc32c(data))]
    path.write_bytes(b"".join(chunks))
    return path


def test_files_a_writer_reopened_within_a_second_are_read_in_the_order_written(tmp_path):
    """Composer's TensorBoard logger reopens its writer at every flush: ``….PID.2`` … ``….PID.10`` in one second.
    Was: ``.10`` read before ``.2``, its steps then taken for a restart and the steps between dropped."""
    run = tmp_path / "run"
    run.mkdir()
    for counter in range(2, 12):
        step = counter - 2
        write_scalars(run, f"events.out.tfevents.1733500000.vm.4127.{counter}", [("loss/train/total", 10.0 - step, step)],
                      start_time=1.7e9 + step)
    [result] = READER.read(sorted(run.iterdir()))
    frame = result.scalars
    assert frame[frame["tag"] == "loss/train/total"]["step"].tolist() == list(range(10))
    assert not result.restarts and not result.phases


def scalars_plugin() -> summary_pb2.SummaryMetadata:
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))


def tensor_event(tag: str, step: int, tensor: tensor_pb2.TensorProto, metadata=None, wall: float = 1.7e9):
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if metadata is not None:
        value.metadata.CopyFrom(metadata)
    return event_pb2.Event(wall_time=wall, step=step, summary=summary_pb2.Summary(value=[value]))


def frame_offsets(data: bytes) -> list[int]:
    """Offsets of the frames of an intact file (an independent walk for the damage tests)."""
    offsets, offset = [], 0
    while offset < len(data):
        offsets.append(offset)
        offset += struct.unpack_from("<Q", data, offset)[0] + 16
    return offsets


@pytest.fixture
def tbx_file(tmp_path) -> Path:
    """A tensorboardX file of 3 tags x 40 steps (values exact in float32), and the folder it is in."""
    points = [(f"tag{t}", step + t / 4, step) for step in range(40) for t in range(3)]
    return write_scalars(tmp_path, "events.out.tfevents.1700000000.host.1.0", points)


# ---------------------------------------------------------------- equivalence with tbparse

def tbparse_scalars(path: Path) -> pd.DataFrame:
    """tbparse's scalars of one file, plus its TF2 tensors that hold one number (its ``tensors`` table)."""
    from tbparse import SummaryReader

    reader = SummaryReader(str(path), pivot=False, extra_columns={"wall_time"})
    frames = [reader.scalars]
    tensors = reader.tensors
    if len(tensors):
        numeric = tensors["value"].map(lambda v: np.ndim(v) == 0 and np.asarray(v).dtype.kind in "fiu")
        tensors = tensors[numeric].assign(value=lambda f: f["value"].map(float))
        frames.append(tensors)
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["tag", "step", "value", "wall_time"])
    return pd.concat(frames, ignore_index=True)[["tag", "step", "value", "wall_time"]]


def by_tag(frame: pd.DataFrame) -> dict[str, list[tuple[int, float, float]]]:
    """Each tag's points in order (tbparse groups by tag, keeping write order within a tag)."""
    out: dict[str, list] = {}
    for tag, step, value, wall in zip(frame["tag"].astype(str), frame["step"], frame["value"], frame["wall_time"],
                                      strict=True):
        out.setdefault(tag, []).append((int(step), float(value), float(wall)))
    return out


def test_every_real_event_file_matches_tbparse(real_logs, tmp_path):
    """Same (tag, step, value, wall_time) per tag, in the same order, file by file. (An event without a
    wall_time would read as NaN here and 0.0 in tbparse; no real file has one.)"""
    files = sorted((real_logs / "tfevents").rglob("*tfevents*"))
    assert len(files) >= 16
    for path in files:
        # Read each file alone (copied away from its hparams.yaml) so that only the file is compared.
        alone = tmp_path / path.name
        alone.write_bytes(path.read_bytes())
        ours = read_one(alone)
        assert not ours.warnings, (path, ours.warnings)
        assert by_tag(ours.scalars) == by_tag(tbparse_scalars(path)), path


def test_several_files_merge_like_tensorboard_not_like_tbparse(real_logs):
    """tbparse concatenates the files of a folder. We apply TensorBoard's rule: a later writer process that
    logs a tag again replaces the earlier points of that tag from its first step on (see _tbsessions).
    Files of one process (same host and pid in the name) are one session and are all kept. A later process
    that starts a tag over (at or below its first step, after the earlier points were written, with new
    values) is a new phase instead: kept whole, shifted to follow the earlier points."""
    folders = sorted({p.parent for p in (real_logs / "tfevents").rglob("*tfevents*")})
    merged_any = phased_any = False
    for folder in folders:
        files = sorted(folder.glob("*tfevents*"), key=lambda p: int(p.name.split(".")[3]))
        if len(files) < 2:
            continue
        done: list[tuple[str, int, float]] = []  # the points of earlier phases, on the run's axis
        phase: list[tuple[str, int, float, str, float]] = []  # the current phase as logged: tag, step, value, writer, wall
        offset = 0
        for path in files:
            writer = ".".join(path.name.split(".")[4:-1])
            points = tbparse_scalars(path)
            firsts = points.groupby("tag", sort=False)["step"].first()
            rows = [(str(t), int(s), float(v), writer, float(w)) for t, s, v, w in
                    points[["tag", "step", "value", "wall_time"]].itertuples(index=False)]
            earlier = {(t, s): v for t, s, v, _, _ in phase}
            starts_over = any(
                first < max(s for t, s, *_ in phase if t == tag) and first <= min(s for t, s, *_ in phase if t == tag)
                for tag, first in firsts.items() if any(t == tag for t, *_ in phase))
            repeats = all(earlier[(t, s)] == v for t, s, v, _, _ in rows if (t, s) in earlier)
            after = not phase or min(w for *_, w in rows) >= max(w for *_, w in phase)
            if phase and starts_over and not repeats and after:
                done += [(t, s + offset, v) for t, s, v, _, _ in phase]
                offset = max(s for _, s, _ in done) + 1 - min(s for _, s, *_ in rows)
                phase = []
                phased_any = True
            for tag, first in firsts.items():
                later_steps = {s for t, s, *_ in rows if t == tag}
                phase = [row for row in phase if not (
                    row[0] == tag and row[3] != writer and (row[1] >= first or row[1] in later_steps))]
            phase += rows
        expected = done + [(t, s + offset, v) for t, s, v, _, _ in phase]
        ours = read_one(*files).scalars
        got = sorted(zip(ours["tag"].astype(str), ours["step"].tolist(), ours["value"].tolist(), strict=True))
        assert got == sorted(expected), folder
        merged_any |= len({".".join(path.name.split(".")[4:-1]) for path in files}) > 1
    assert merged_any, "the corpus should hold a folder written by two processes"
    assert phased_any, "the corpus should hold a folder a second session was written to"


def test_histograms_match_tbparse(real_logs):
    from tbparse import SummaryReader

    checked = 0
    for path in sorted((real_logs / "tfevents").rglob("*tfevents*")):
        theirs = SummaryReader(str(path), pivot=False,
                               extra_columns={"wall_time", "min", "max", "num", "sum", "sum_squares"}).histograms
        ours = read_one(path).histograms
        assert len(ours) == len(theirs), path
        for mine, row in zip(ours.itertuples(index=False), theirs.itertuples(index=False), strict=True):
            assert (mine.tag, mine.step, mine.wall_time) == (row.tag, row.step, row.wall_time)
            assert (mine.min, mine.max, mine.num, mine.sum, mine.sum_squares) == (
                row.min, row.max, row.num, row.sum, row.sum_squares)
            np.testing.assert_array_equal(mine.bucket_limits, row.limits)
            np.testing.assert_array_equal(mine.bucket_counts, row.counts)
            checked += 1
    assert checked == 10  # the histogram_experiment file


def test_histogram_table_has_the_schema_columns():
    ours = read_one(*real_log(HISTOGRAMS).glob("*tfevents*")).histograms
    assert list(ours.columns) == list(HISTOGRAM_COLUMNS)
    assert ours["step"].dtype == np.int64 and ours["num"].dtype == np.float64


def test_hparams_plugin_matches_tbparse(real_logs, tmp_path):
    from tbparse import SummaryReader

    checked = 0
    for path in sorted((real_logs / "tfevents").rglob("*tfevents*")):
        theirs = SummaryReader(str(path), pivot=False).hparams
        if not len(theirs):
            continue
        alone = tmp_path / path.name  # without hparams.yaml beside it: the plugin's values only
        alone.write_bytes(path.read_bytes())
        assert read_one(alone).hparams == dict(zip(theirs["tag"], theirs["value"], strict=True)), path
        checked += 1
    assert checked >= 5


# ---------------------------------------------------------------- exact values from known files

def test_hf_trainer_file_exact_values():
    run = read_one(real_log(T5_TRAIN))
    loss = curve(run.scalars, "train/loss")
    assert len(loss) == 430
    assert (loss["step"][0], loss["value"][0]) == (500, 1.9962999820709229)
    assert (loss["step"][215], loss["value"][215]) == (108000, 1.7996000051498413)
    assert (loss["step"].iloc[-1], loss["value"].iloc[-1]) == (215000, 1.742300033569336)
    assert loss["wall_time"][0] == 1742826365.0545628
    assert len(curve(run.scalars, "train/epoch")) == 431
    assert run.text["args"].startswith('{\n  "output_dir": "/home/cora/my_models/t5-summarization"')
    assert set(run.text) == {"args", "model_config"}


def test_hf_trainer_run_keeps_both_files_of_one_process():
    files = sorted(real_log(T5_RUN).glob("*tfevents*"))
    run = read_one(*files)
    assert run.restarts == []  # the second file is the same process's final evaluation, not a restart
    assert curve(run.scalars, "eval/loss")["value"].tolist() == [pytest.approx(1.633908, abs=1e-6)]
    epoch = curve(run.scalars, "train/epoch")
    assert epoch["step"].tolist()[-2:] == [215337, 215337] and len(epoch) == 432
    assert any("1 point(s) repeat a (tag, step)" in note and "train/epoch" in note for note in run.notes)


def test_tf2_object_detection_tensor_scalars():
    run = read_one(real_log(OD_API))
    total = curve(run.scalars, "Loss/total_loss")
    assert len(total) == 51
    assert (total["step"][0], total["value"][0]) == (100, 0.3940320909023285)
    assert (total["step"].iloc[-1], total["value"].iloc[-1]) == (5100, 0.12426914274692535)
    steps_per_sec = curve(run.scalars, "steps_per_sec")
    assert len(steps_per_sec) == 52 and steps_per_sec["step"].iloc[-1] == 5200
    assert curve(run.scalars, "learning_rate")["value"][25] == 0.039932869374752045
    assert run.notes == ["skipped 52 image summaries (tanalyze reads scalars, histograms, hparams and text)"]


def test_lightning_hparams_and_learning_rate_tags():
    run = read_one(*real_log(DEEPSC).glob("*tfevents*"))
    # hparams.yaml (typed) wins over the plugin (numbers as doubles); keys flattened with "/" as Lightning does.
    assert run.hparams["model/d_model"] == 512 and isinstance(run.hparams["model/d_model"], int)
    assert run.hparams["train/lr"] == 0.0003
    assert run.hparams["data/channel"] == "AWGN"
    assert run.hparams["precision"] == 16
    assert len(run.hparams) == 24
    assert run.extra_files == [real_log(DEEPSC) / "hparams.yaml"]
    for tag, value in (("lr-Adam", 6.176323807949302e-08), ("lr-Adam-1", 0.0010000000474974513)):
        points = curve(run.scalars, tag)
        assert len(points) == 190
        assert (points["step"][0], points["step"].iloc[-1]) == (49, 9499)
        assert (points["value"] == value).all()
    val = curve(run.scalars, "val_ce")
    assert (len(val), val["step"][9], val["value"][9]) == (18, 5169, 8.79869270324707)


def test_histogram_buckets_at_step_zero():
    run = read_one(*real_log(HISTOGRAMS).glob("*tfevents*"))
    hist = run.histograms
    assert hist["step"].tolist() == list(range(10))
    first = hist.iloc[0]
    assert len(first["bucket_counts"]) == 568
    assert first["bucket_counts"][:8].tolist() == [0.0, 1.0, 0.0, 1.0, 1.0, 2.0, 1.0, 4.0]
    assert first["bucket_counts"].sum() == first["num"] == 100.0
    assert first["bucket_limits"][0] == -0.5177616740489182
    assert (first["min"], first["max"]) == (-0.4827924966812134, 0.43180420994758606)
    assert (first["sum"], first["sum_squares"]) == (0.9857620149850845, 4.498269244584625)
    assert run.scalars.empty and not run.warnings


def test_yolov8_per_batch_points_are_all_kept_and_counted():
    run = read_one(*real_log(YOLOV8).glob("*tfevents*"))
    box = curve(run.scalars, "train/box_loss")
    assert len(box) == 1375 and (box["step"] == 1).sum() == 55
    assert (box["value"][0], box["value"].iloc[-1]) == (2.1379001140594482, 0.9386799931526184)
    assert any(note.startswith("4,058 point(s) repeat a (tag, step)") for note in run.notes)
    assert run.restarts == []


def test_skipped_media_are_counted():
    run = read_one(*real_log(YOLOV5).glob("*tfevents*"))
    assert run.notes == ["skipped 1 graph, 6 image summaries, 1 run-metadata record "
                         "(tanalyze reads scalars, histograms, hparams and text)"]
    assert len(run.scalars) == 650


def test_rerun_in_the_same_folder_is_a_second_phase():
    """A script run twice into one folder: the second run starts over at step 0. Both are kept, the
    second shifted to follow the first on one step axis (it used to replace the first)."""
    first, second = sorted(real_log(RERUN).glob("*tfevents*"), key=lambda p: p.name.split(".")[3])
    run = read_one(first, second)
    assert len(run.scalars) == 400 and not run.restarts
    alone = [read_one(f).scalars[["tag", "step", "value"]].astype({"tag": str}) for f in (first, second)]
    assert alone[0]["step"].min() == 0 and alone[1]["step"].min() == 0 and alone[1]["step"].max() == 99
    got = run.scalars[["tag", "step", "value"]].astype({"tag": str})
    expected = pd.concat([alone[0], alone[1].assign(step=alone[1]["step"] + 100)], ignore_index=True)
    key = ["tag", "step"]
    pd.testing.assert_frame_equal(got.sort_values(key, ignore_index=True), expected.sort_values(key, ignore_index=True))
    one, two = run.phases
    assert (one.index, one.first_step, one.last_step, one.offset) == (0, 0, 99, 0)
    assert (two.index, two.first_step, two.last_step, two.offset, two.file) == (1, 100, 199, 100, second.name)
    assert two.detail.startswith("step went back from 99 to 0: a new session written to the same folder")


def test_keras_fit_twice_into_one_log_dir_is_two_phases():
    """Keras' TensorBoard callback over two fit() calls of one process (a real log): each fit writes new
    train/ and validation/ files whose epochs start at 0 again."""
    for part in ("train", "validation"):
        files = sorted(real_log(f"{KERAS_TWO_FITS}/{part}").glob("*tfevents*"))
        run = read_one(*files)
        loss = curve(run.scalars, "epoch_loss")
        assert loss["step"].tolist() == list(range(20)) and not run.restarts
        assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(0, 9, 0), (10, 19, 10)]
    train = read_one(*sorted(real_log(f"{KERAS_TWO_FITS}/train").glob("*tfevents*")))
    loss = curve(train.scalars, "epoch_loss").set_index("step")["value"]
    # the second fit goes on from the first one's weights: its first epoch is no worse than the first fit's
    assert loss[10] < loss[0] and loss[9] > loss[19]


def test_a_later_session_that_only_repeats_earlier_values_is_no_phase(tmp_path):
    write_scalars(tmp_path, "events.out.tfevents.1700000000.host.111.0", [("loss", 10.0 + s, s) for s in range(5)])
    copy = write_scalars(tmp_path, "events.out.tfevents.1700000500.host.222.0",
                         [("loss", 10.0 + s, s) for s in range(5)], start_time=1.8e9)
    run = READER.read(sorted(tmp_path.glob("events*")))[0]
    assert curve(run.scalars, "loss")["value"].tolist() == [10, 11, 12, 13, 14]
    assert not run.phases and run.restarts[0].file == copy.name


def test_a_session_starting_over_then_resuming_inside_it(tmp_path):
    write_scalars(tmp_path, "events.out.tfevents.1700000000.host.111.0", [("loss", 1.0, s) for s in range(5)])
    write_scalars(tmp_path, "events.out.tfevents.1700000500.host.222.0", [("loss", 2.0, s) for s in range(8)],
                  start_time=1.8e9)
    resumed = write_scalars(tmp_path, "events.out.tfevents.1700000900.host.333.0",
                            [("loss", 3.0, s) for s in range(6, 10)], start_time=1.9e9)
    run = READER.read(sorted(tmp_path.glob("events*")))[0]
    loss = curve(run.scalars, "loss")
    # phase 2 (offset 5) holds steps 5-12 of the second writer; the third resumes it from its step 6 (= 11)
    assert loss["step"].tolist() == list(range(15))
    assert loss["value"].tolist() == [1.0] * 5 + [2.0] * 6 + [3.0] * 4
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(0, 4, 0), (5, 14, 5)]
    [restart] = run.restarts
    assert (restart.step, restart.file) == (11, resumed.name)
    assert "from step 11: 2 earlier point(s) replaced" in restart.detail


# ---------------------------------------------------------------- restart and duplicate semantics

def test_resumed_job_replaces_orphaned_steps(tmp_path):
    write_scalars(tmp_path, "events.out.tfevents.1700000000.host.111.0",
                  [("loss", 10.0 + s, s) for s in range(10)] + [("eval", 1.0, 4), ("eval", 2.0, 9)])
    later = write_scalars(tmp_path, "events.out.tfevents.1700000500.host.222.0",
                          [("loss", 100.0 + s, s) for s in range(5, 8)], start_time=1.8e9)
    run = READER.read(sorted(tmp_path.glob("events*")))[0]
    loss = curve(run.scalars, "loss")
    assert loss["step"].tolist() == [0, 1, 2, 3, 4, 5, 6, 7]  # 8 and 9 were orphaned by the restart at 5
    assert loss["value"].tolist() == [10, 11, 12, 13, 14, 105, 106, 107]
    assert curve(run.scalars, "eval")["value"].tolist() == [1.0, 2.0]  # not logged again: untouched
    [restart] = run.restarts
    assert (restart.step, restart.file) == (5, later.name)
    assert "1 tag(s) again from step 5: 5 earlier point(s) replaced" in restart.detail
    assert not run.warnings


def test_same_process_going_back_is_a_restart(tmp_path):
    # a notebook kernel re-running its training cell: same host and pid, a new file, steps start over
    write_scalars(tmp_path, "events.out.tfevents.1700000000.host.111.0", [("loss", 10.0 + s, s) for s in range(10)])
    again = write_scalars(tmp_path, "events.out.tfevents.1700000500.host.111.1",
                          [("loss", 100.0 + s, s) for s in range(4, 7)], start_time=1.8e9)
    run = READER.read(sorted(tmp_path.glob("events*")))[0]
    assert curve(run.scalars, "loss")["value"].tolist() == [10, 11, 12, 13, 104, 105, 106]
    [restart] = run.restarts
    assert (restart.step, restart.file) == (4, again.name)


def test_same_process_carrying_on_is_not_a_restart(tmp_path):
    # HF Trainer opens a second file for its final evaluation and logs train/epoch at the last step again
    write_scalars(tmp_path, "events.out.tfevents.1700000000.host.111.0",
                  [("train/epoch", s / 10, s) for s in range(10)])
    write_scalars(tmp_path, "events.out.tfevents.1700000500.host.111.1",
                  [("train/epoch", 0.9, 9), ("eval/loss", 0.5, 9)], start_time=1.8e9)
    run = READER.read(sorted(tmp_path.glob("events*")))[0]
    assert not run.restarts
    assert len(curve(run.scalars, "train/epoch")) == 11  # both writes of step 9 kept, in write order


def test_concurrent_writers_are_flagged(tmp_path):
    write_scalars(tmp_path, "events.out.tfevents.1700000000.host.111.0", [("loss", 1.0, s) for s in range(5)])
    write_scalars(tmp_path, "events.out.tfevents.1700000001.host.222.0", [("loss", 2.0, s) for s in range(5)],
                  start_time=1.7e9 + 2)
    run = READER.read(sorted(tmp_path.glob("events*")))[0]
    assert curve(run.scalars, "loss")["value"].tolist() == [2.0] * 5
    assert "overlap in time" in run.restarts[0].detail
    assert any("two writers" in w.message for w in run.warnings)


def test_session_start_replaces_later_steps_of_every_tag(tmp_path):
    events = [event_pb2.Event(step=s, wall_time=1.7e9 + s, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=t, simple_value=float(s))])) for s in range(6) for t in ("a", "b")]
    events.append(event_pb2.Event(step=3, wall_time=1.8e9, session_log=event_pb2.SessionLog(status=1)))
    events.append(event_pb2.Event(step=3, wall_time=1.8e9, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="a", simple_value=-3.0)])))
    run = read_one(write_events(tmp_path / "events.out.tfevents.1700000000.host", events))
    assert curve(run.scalars, "a")["value"].tolist() == [0, 1, 2, -3]
    assert curve(run.scalars, "b")["step"].tolist() == [0, 1, 2]
    [restart] = run.restarts
    assert restart.step == 3 and "restarted at step 3 (SessionLog.START); 6 earlier point(s)" in restart.detail


# ---------------------------------------------------------------- TF2 tensors and other encodings

def test_tensor_scalars_of_every_common_encoding(tmp_path):
    shape = tensor_shape_pb2.TensorShapeProto()
    half = np.array([1.5], np.float16).view(np.uint16)[0]
    tensors = [
        ("content_f32", tensor_pb2.TensorProto(dtype=1, tensor_shape=shape, tensor_content=struct.pack("<f", 0.25))),
        ("float_val", tensor_pb2.TensorProto(dtype=1, tensor_shape=shape, float_val=[0.5])),
        ("double_val", tensor_pb2.TensorProto(dtype=2, tensor_shape=shape, double_val=[0.1])),
        ("content_f64", tensor_pb2.TensorProto(dtype=2, tensor_content=struct.pack("<d", 0.2))),
        ("half_val", tensor_pb2.TensorProto(dtype=19, tensor_shape=shape, half_val=[int(half)])),
        ("content_f16", tensor_pb2.TensorProto(dtype=19, tensor_shape=shape, tensor_content=np.float16(-2.5).tobytes())),
        ("int64_val", tensor_pb2.TensorProto(dtype=9, tensor_shape=shape, int64_val=[-(2**40)])),
        ("int_val", tensor_pb2.TensorProto(dtype=3, tensor_shape=shape, int_val=[7])),
        ("bf16", tensor_pb2.TensorProto(dtype=14, tensor_shape=shape, tensor_content=b"\x80\x3f")),
    ]
    events = [tensor_event(tag, 3, tensor, scalars_plugin()) for tag, tensor in tensors]
    run = read_one(write_events(tmp_path / "events.out.tfevents.1.h.v2", events))
    got = dict(zip(run.scalars["tag"].astype(str), run.scalars["value"], strict=True))
    assert got == {"content_f32": 0.25, "float_val": 0.5, "double_val": 0.1, "content_f64": 0.2, "half_val": 1.5,
                   "content_f16": -2.5, "int64_val": -(2.0**40), "int_val": 7.0, "bf16": 1.0}
    assert (run.scalars["step"] == 3).all() and not run.warnings


def test_tf2_histogram_text_and_unknown_plugins(tmp_path):
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=2),
                                                   tensor_shape_pb2.TensorShapeProto.Dim(size=3)])
    histo = tensor_pb2.TensorProto(dtype=2, tensor_shape=shape, double_val=[0, 1, 3, 1, 2, 5])
    text = tensor_pb2.TensorProto(dtype=7, string_val=[b"hello <b>"])

    def meta(name):
        return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=name))

    events = [
        tensor_event("weights", 1, histo, meta("histograms")),
        tensor_event("notes/text_summary", 1, text, meta("text")),
        tensor_event("notes/text_summary", 2, tensor_pb2.TensorProto(dtype=7, string_val=[b"bye"])),
        tensor_event("mesh", 1, tensor_pb2.TensorProto(dtype=1, float_val=[1.0]), meta("mesh")),
        tensor_event("mesh", 2, tensor_pb2.TensorProto(dtype=1, float_val=[1.0])),
    ]
    run = read_one(write_events(tmp_path / "events.out.tfevents.1.h.v2", events))
    [row] = run.histograms.itertuples(index=False)
    assert (row.tag, row.step, row.min, row.max, row.num) == ("weights", 1, 0.0, 2.0, 8.0)
    assert row.bucket_limits.tolist() == [1.0, 2.0] and row.bucket_counts.tolist() == [3.0, 5.0]
    assert np.isnan(row.sum)  # a [k, 3] tensor does not store it
    assert run.text == {"notes": "bye"}
    assert run.scalars.empty  # "mesh" 0-d floats belong to their plugin (named by the tag's first metadata)
    assert run.notes == ["skipped 2 mesh summaries (tanalyze reads scalars, histograms, hparams and text)"]


def test_several_values_per_event_keep_write_order(tmp_path):
    events = [event_pb2.Event(step=s, wall_time=1.7e9 + s, summary=summary_pb2.Summary(value=[
        summary_pb2.Summary.Value(tag="b", simple_value=s + 0.5),
        summary_pb2.Summary.Value(tag="a", simple_value=float(s)),
    ])) for s in range(3)]
    events.insert(1, event_pb2.Event(step=0, wall_time=1.7e9, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="c", simple_value=9.0)])))
    run = read_one(write_events(tmp_path / "events.out.tfevents.1.h", events))
    assert list(zip(run.scalars["tag"].astype(str), run.scalars["value"], strict=True)) == [
        ("b", 0.5), ("a", 0.0), ("c", 9.0), ("b", 1.5), ("a", 1.0), ("b", 2.5), ("a", 2.0)]


TAGS = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=150)
POINTS = st.lists(st.tuples(
    TAGS,
    st.integers(-(2**63), 2**63 - 1),
    st.floats(width=32),
    st.sampled_from(["simple", "content", "float_val", "double_val", "two_values"]),
    st.sampled_from([0.0, 1.7e9, 1234.5]),
), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(points=POINTS)
def test_vectorised_and_protobuf_paths_agree(tmp_path, points):
    """Arbitrary tags (long, non-ASCII), steps (0, negative, 64-bit), values (NaN, inf) and encodings:
    the reader's rows equal what protobuf says the file holds."""
    events, expected = [], []
    for tag, step, value, kind, wall in points:
        if kind == "simple":
            values = [summary_pb2.Summary.Value(tag=tag, simple_value=value)]
        elif kind == "two_values":
            values = [summary_pb2.Summary.Value(tag=tag, simple_value=value),
                      summary_pb2.Summary.Value(tag=tag + "/2", simple_value=-value)]
        else:
            tensor = {"content": tensor_pb2.TensorProto(dtype=1, tensor_content=struct.pack("<f", value)),
                      "float_val": tensor_pb2.TensorProto(dtype=1, float_val=[value]),
                      "double_val": tensor_pb2.TensorProto(dtype=2, double_val=[value])}[kind]
            values = [summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=scalars_plugin())]
        events.append(event_pb2.Event(step=step, wall_time=wall, summary=summary_pb2.Summary(value=values)))
        expected += [(v.tag, step, v.simple_value if v.HasField("simple_value") else value,
                      np.nan if wall == 0 else wall) for v in values]
    path = write_events(tmp_path / "events.out.tfevents.1.h", events)
    run = read_one(path)
    got = run.scalars
    assert got["tag"].astype(str).tolist() == [row[0] for row in expected]
    assert got["step"].tolist() == [row[1] for row in expected]
    np.testing.assert_array_equal(got["value"].to_numpy(), np.array([row[2] for row in expected], np.float64))
    np.testing.assert_array_equal(got["wall_time"].to_numpy(), np.array([row[3] for row in expected]))


def test_common_layouts_take_the_vectorised_path(tbx_file, tmp_path):
    """Speed guard without timing: tensorboardX and TF2 scalar records never fall back to protobuf."""
    from tanalyze.readers.tensorboard._fast import decode_fast
    from tanalyze.readers.tensorboard._tfrecord import scan_records

    tf2 = write_events(tmp_path / "tf2", [tensor_event(f"t{i % 3}", i, tensor_pb2.TensorProto(
        dtype=1, tensor_shape=tensor_shape_pb2.TensorShapeProto(), tensor_content=struct.pack("<f", i)),
        scalars_plugin()) for i in range(300)])
    for path, header_records in ((tbx_file, [0]), (tf2, [])):
        data = np.frombuffer(path.read_bytes(), np.uint8)
        records = scan_records(data)
        assert decode_fast(data, records.starts, records.lengths).rest.tolist() == header_records


def frame_records(path: Path, payloads: list[bytes]) -> Path:
    chunks = []
    for data in payloads:
        header = struct.pack("<Q", len(data))
        chunks += [header, struct.pack("<I", masked_crc32c(header)), data, struct.pack("<I", masked_crc32c(data))]
    path.write_bytes(b"".join(chunks))
    return path


EVENT_LIKE = st.builds(
    lambda step, summary, tag, rest: b"\x09" + struct.pack("<d", 1.7e9) + b"\x10" + step + b"\x2a" + summary
    + b"\x0a" + summary + b"\x0a" + tag + rest,
    st.binary(min_size=1, max_size=11), st.binary(min_size=1, max_size=10), st.binary(max_size=12),
    st.binary(max_size=40),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=st.lists(st.one_of(st.binary(max_size=60), EVENT_LIKE), min_size=1, max_size=20))
def test_intact_frames_of_garbage_never_crash(tmp_path, payloads):
    """Records whose CRCs verify but whose bytes are not events (or nearly are): warnings, no exception."""
    run = read_one(frame_records(tmp_path / "events.out.tfevents.1.h", payloads))
    assert all("record skipped" in w.message for w in run.warnings)  # nothing else went wrong
    assert run.scalars["step"].dtype == np.int64 and run.scalars["value"].dtype == np.float64


# ---------------------------------------------------------------- damaged files

def warning_text(run) -> str:
    return "\n".join(str(w) for w in run.warnings)


@pytest.mark.parametrize("cut", [1, 3, 8, 11, 12, 13, 20, 30])
def test_truncated_file_keeps_every_complete_record(tbx_file, cut):
    data = tbx_file.read_bytes()
    offsets = frame_offsets(data)
    size = len(data) - cut
    complete = sum(1 for start, end in zip(offsets, offsets[1:] + [len(data)], strict=True) if end <= size)
    cut_at = max(o for o in offsets if o < size)
    tbx_file.write_bytes(data[:size])
    run = read_one(tbx_file)
    assert len(run.scalars) == complete - 1  # the first record is the file-version header
    [warning] = run.warnings
    assert warning.file == str(tbx_file) and warning.location == f"byte {cut_at:,}"
    assert "file ends inside a record" in warning.message


def test_flipped_data_byte_drops_that_record_only(tbx_file):
    data = bytearray(tbx_file.read_bytes())
    offsets = frame_offsets(bytes(data))
    data[offsets[50] + 20] ^= 0x40
    tbx_file.write_bytes(bytes(data))
    run = read_one(tbx_file)
    assert len(run.scalars) == 119  # 120 points, one lost
    [warning] = run.warnings
    assert "1 record(s) whose data CRC does not match skipped" in warning.message
    assert warning.location == f"byte {offsets[50]:,}" and warning.count == 1


def test_damaged_length_field_is_recovered_or_skipped_and_reading_resumes(tbx_file):
    data = bytearray(tbx_file.read_bytes())
    offsets = frame_offsets(bytes(data))
    data[offsets[30] + 1] ^= 0x7F  # the length is now wrong and its CRC no longer matches
    data[offsets[60] : offsets[60] + 12] = b"\xff" * 12  # length and its CRC both destroyed
    tbx_file.write_bytes(bytes(data))
    run = read_one(tbx_file)
    assert len(run.scalars) == 120  # both records recovered: the next record follows each, and data CRCs verify
    text = warning_text(run)
    assert f"(byte {offsets[30]:,}): record length field damaged; record recovered" in text
    assert f"(byte {offsets[60]:,}): record length field damaged; record recovered" in text


def test_garbage_between_records_is_skipped_and_counted(tbx_file):
    data = tbx_file.read_bytes()
    offsets = frame_offsets(data)
    junk = bytes(range(256)) * 3
    tbx_file.write_bytes(data[: offsets[40]] + junk + data[offsets[40] :])
    run = read_one(tbx_file)
    assert len(run.scalars) == 120
    [warning] = run.warnings
    assert warning.location == f"byte {offsets[40]:,}"
    assert f"skipped {len(junk):,} byte(s) up to byte {offsets[40] + len(junk):,}" in warning.message


def test_corrupt_record_in_a_real_file_costs_that_record_only(tmp_path):
    """tbparse stops at the first bad record; we skip it and read on."""
    [source] = real_log(DEEPSC).glob("*tfevents*")
    data = bytearray(source.read_bytes())
    offsets = frame_offsets(bytes(data))
    victim = offsets[len(offsets) // 3]
    data[victim + 14] ^= 0xFF  # inside the record's data
    damaged = tmp_path / source.name
    damaged.write_bytes(bytes(data))
    intact, run = read_one(source).scalars, read_one(damaged)
    assert len(run.scalars) == len(intact) - 1 == 1384
    [warning] = run.warnings
    assert warning.location == f"byte {victim:,}" and "data CRC" in warning.message
    columns = ["tag", "step", "value", "wall_time"]
    before, after = (f[columns].astype({"tag": str}) for f in (intact, run.scalars))
    lost = before.merge(after, how="left", indicator=True).query("_merge == 'left_only'")
    assert len(lost) == 1


@pytest.mark.parametrize("valid_crc", [False, True])
def test_terabyte_length_field_does_not_allocate(tbx_file, valid_crc):
    data = bytearray(tbx_file.read_bytes())
    offsets = frame_offsets(bytes(data))
    header = struct.pack("<Q", 2**40)
    data[offsets[10] : offsets[10] + 8] = header
    if valid_crc:
        data[offsets[10] + 8 : offsets[10] + 12] = struct.pack("<I", masked_crc32c(header))
    tbx_file.write_bytes(bytes(data))
    run = read_one(tbx_file)
    assert len(run.scalars) == 120  # the record itself is recovered from its data CRC
    assert "record length field damaged" in warning_text(run)


@pytest.mark.parametrize("where", ["middle", "end"])
def test_zero_filled_region_is_skipped(tbx_file, where):
    """What a crash can leave in a preallocated or partly synced file: a run of zero bytes."""
    data = tbx_file.read_bytes()
    offsets = frame_offsets(data)
    zeros = bytes(1 << 21)
    at = offsets[70] if where == "middle" else len(data)
    tbx_file.write_bytes(data[:at] + zeros + data[at:])
    run = read_one(tbx_file)
    assert len(run.scalars) == 120
    [warning] = run.warnings
    assert warning.location == f"byte {at:,}"
    expected = ("damaged bytes" if where == "middle" else "no valid record from here to the end of the file")
    assert f"skipped {len(zeros):,} byte(s)" in warning.message and expected in warning.message


def test_huge_length_at_the_end_is_reported_as_truncation(tbx_file):
    data = tbx_file.read_bytes()
    header = struct.pack("<Q", 2**40)
    tbx_file.write_bytes(data + header + struct.pack("<I", masked_crc32c(header)) + b"partial")
    run = read_one(tbx_file)
    assert len(run.scalars) == 120
    [warning] = run.warnings
    assert f"frame needs {2**40 + 16:,} bytes, 19 remain" in warning.message and warning.location == f"byte {len(data):,}"


def test_empty_lfs_and_foreign_files_warn(tmp_path, tbx_file):
    empty = tmp_path / "events.out.tfevents.1700000001.host.2.0"
    empty.write_bytes(b"")
    lfs = tmp_path / "events.out.tfevents.1700000002.host.3.0"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 98780\n")
    noise = tmp_path / "events.out.tfevents.1700000003.host.4.0"
    noise.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    run = READER.read([tbx_file, empty, lfs, noise])[0]
    assert len(run.scalars) == 120  # the good file is read whatever its neighbours are
    messages = {w.file: w.message for w in run.warnings}
    assert messages[str(empty)] == "empty file: no events were written"
    assert "Git LFS pointer, not the event file (the real file has 98,780 bytes)" in messages[str(lfs)]
    assert "git lfs pull" in messages[str(lfs)]
    assert messages[str(noise)] == "not a TensorBoard event file: no intact record in 5,000 bytes"


def test_sniff_claims_event_files_only(tbx_file, tmp_path):
    head = tbx_file.read_bytes()[:4096]
    assert READER.sniff(tbx_file, head)
    assert READER.sniff(tmp_path / "run1.tfevents.log", head)  # non-standard name, valid content
    assert not READER.sniff(tmp_path / "run1.tfevents.csv", b"step,loss\n1,0.5\n")
    assert READER.sniff(tmp_path / "x.tfevents.y", b"version https://git-lfs.github.com/spec/v1\n")
    assert READER.sniff(tmp_path / "events.out.tfevents.1.host", b"")  # TensorBoard's name: claimed to warn
    assert not READER.sniff(tmp_path / "metrics.csv", head)


# ---------------------------------------------------------------- through load() and the CLI

def test_load_and_parse_to_csv(tbx_file, tmp_path, capsys):
    logs = load(tmp_path)
    assert list(logs.runs) == [tmp_path.name]
    assert len(logs.scalars) == 120
    out = tmp_path / "out.csv"
    assert main(["parse", str(tbx_file), "-o", str(out), "-q"]) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["run", "tag", "step", "value", "wall_time"]
    assert len(table) == 120 and set(table["run"]) == {tbx_file.name}
    assert table.iloc[0][["tag", "step", "value"]].tolist() == ["tag0", 0, 0.0]
    assert table.iloc[-1][["tag", "step", "value"]].tolist() == ["tag2", 39, 39.5]
    assert table["wall_time"].iloc[-1] == 1.7e9 + 119
    assert "wrote 120 rows from 1 run(s)" in capsys.readouterr().err


def test_runs_command_lists_sessions_restarts_and_notes(real_logs, capsys, tmp_path):
    assert main(["runs", str(real_logs / RERUN), "-q"]) == 0
    out = capsys.readouterr().out
    assert "2 file(s), 2 tag(s), 400 points" in out
    assert "    session 1 of 2: steps 0-99 (the first session)\n" in out
    assert ("    session 2 of 2: steps 100-199 (step went back from 99 to 0: a new session written to the same folder "
            "(events.out.tfevents.1771596596.zyzkings.7880.0); its steps shifted by +100") in out
    write_scalars(tmp_path, "events.out.tfevents.1700000000.host.111.0", [("loss", 10.0 + s, s) for s in range(10)])
    write_scalars(tmp_path, "events.out.tfevents.1700000500.host.222.0", [("loss", 1.0, s) for s in range(5, 8)],
                  start_time=1.8e9)
    assert main(["runs", str(tmp_path), "-q", "--no-cache"]) == 0
    assert "restart at step 5: events.out.tfevents.1700000500.host.222.0 logged 1 tag(s) again" in \
        capsys.readouterr().out


def test_runs_command_shows_hparams_histograms_and_used_yaml(capsys):
    assert main(["runs", str(real_log(DEEPSC)), "-q"]) == 0
    out = capsys.readouterr().out
    assert "2 file(s), 10 tag(s), 1,385 points" in out  # the event file and hparams.yaml
    assert "hparams: 24 (seed=42, precision=16, model/vocab_size=22234, model/max_len=32, … 20 more)" in out
    assert out.rstrip().endswith("0 warning(s), 0 file(s) not recognised")
    assert main(["runs", str(real_log(HISTOGRAMS)), "-q"]) == 0
    assert "histograms: 1 tag(s), 10 histogram(s)" in capsys.readouterr().out


@pytest.mark.parametrize(("new_codes", "new_steps", "expected"), [
    ([0, 1, 0, 1], [3, 3, 4, 4], True),  # each tag goes on past its own last step
    ([1, 0], [2, 5], True),  # a tag whose last step was 1 may go on at 2 while another is at 5
    ([0, 1], [2, 5], False),  # tag 0 was at 2 already: a repeat
    ([0, 0], [6, 5], False),  # going back inside the new rows
    ([1, 0, 1], [5, 7, 5], False),  # a repeat inside the new rows, other tags between
    ([2], [0], True),  # a tag the run did not have
    ([], [], True),
])
def test_continues_means_every_tag_steps_on_past_its_own_last_step(new_codes, new_steps, expected):
    # Tag 0 up to step 2, tag 1 up to 1; in two chunks of narrow dtypes, as a run read from the cache and extended.
    old = ScalarColumns.of_chunks(("a", "b"), [
        (np.array([0, 1, 0], np.int8), np.array([0, 0, 1], np.int16), np.zeros(3, np.float32), np.zeros(3)),
        (np.array([1, 0], np.int32), np.array([1, 2]), np.zeros(2), np.zeros(2)),
    ])
    assert _continues(old, np.array(new_codes, np.int32), np.array(new_steps, np.int64), 3) is expected
