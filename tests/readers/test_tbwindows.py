"""Event files read in windows: the same result as one scan of the whole file, whatever the window size,
records larger than a window, damage across window edges, and files that shrink while they are read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tanalyze.readers.tensorboard import _windows as _tbwindows
from tanalyze.readers.tensorboard._tfrecord import scan_records
from tanalyze.readers.tensorboard._windows import scan_file
from tanalyze.readers.tensorboard.reader import TensorBoardReader
from tests.conftest import REAL_LOGS, REPO, SAMPLE_RUNS
from tests.fuzz.events import event_file, frame, header_event, image_event, scalar_event, scalar_events

READER = TensorBoardReader()


def event_files() -> list[Path]:
    files = sorted(SAMPLE_RUNS.rglob("*tfevents*"))
    if REAL_LOGS.is_dir():
        files += sorted(p for p in (REAL_LOGS / "tfevents").rglob("*tfevents*") if p.stat().st_size < 3_000_000)
    return files


def snapshot(path: Path):
    [run] = READER.read([path])
    scalars = run.scalars.astype({"tag": str, "run": str}).reset_index(drop=True)
    hist = run.histograms
    return scalars, (len(hist), list(hist["tag"].astype(str)) if len(hist) else []), dict(run.hparams), \
        dict(run.text), [str(w) for w in run.warnings], list(run.notes)


@pytest.mark.parametrize("window", [pytest.param(97, marks=pytest.mark.slow), 4096, 100_000])
def test_every_event_file_reads_the_same_in_small_windows(window, monkeypatch):
    files = event_files()
    whole = {path: snapshot(path) for path in files}
    monkeypatch.setattr(_tbwindows, "WINDOW", window)
    for path in files:
        got = snapshot(path)
        assert got[0].equals(whole[path][0]), path
        assert got[1:] == whole[path][1:], path


def test_windows_hold_the_records_of_one_whole_scan(tmp_path):
    path = event_file(tmp_path / "events.out.tfevents.1.h.1.0", scalar_events(500, ("a", "b", "c")))
    data = path.read_bytes()
    whole = scan_records(data)
    for window in (40, 41, 100, 1000, len(data) - 1, len(data), 10 * len(data)):
        starts = np.concatenate([w.base + w.starts for w in scan_file(path, window=window)])
        assert starts.tolist() == whole.starts.tolist(), window


def test_a_record_larger_than_the_window_is_read_whole(tmp_path):
    records = [header_event(), scalar_event("loss", 0, 1.0), image_event("img", 1, 300_000), scalar_event("loss", 2, 0.5)]
    path = event_file(tmp_path / "events.out.tfevents.1.h.1.0", records)
    windows = list(scan_file(path, window=4096))
    assert sum(len(w.starts) for w in windows) == 4 and not any(w.damage for w in windows)
    assert max(len(w.buf) for w in windows) >= 300_000


def test_garbage_longer_than_windows_is_one_damage_entry(tmp_path, monkeypatch):
    good = b"".join(frame(r) for r in scalar_events(20))
    junk = np.random.default_rng(1).integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    tail = b"".join(frame(scalar_event("loss", 100 + i, 2.0)) for i in range(10))
    path = tmp_path / "events.out.tfevents.1.h.1.0"
    path.write_bytes(good + junk + tail)
    reference = snapshot(path)
    monkeypatch.setattr(_tbwindows, "WINDOW", 4096)
    scalars, *_, warnings, _notes = snapshot(path)
    assert scalars.equals(reference[0]) and len(scalars) == 30
    assert warnings == reference[4]
    assert warnings == [f"{path} (byte {len(good):,}): skipped {len(junk):,} byte(s) up to byte "
                        f"{len(good) + len(junk):,}: damaged bytes (a record length or its CRC does not verify)"]


def test_tensor_scalars_after_the_first_window_keep_their_plugin(tmp_path, monkeypatch):
    """A tag's plugin is named with its first value only: later windows must still know it."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

    def hist(step: int, first: bool) -> bytes:
        data = np.array([[0.0, 1.0, 3.0], [1.0, 2.0, 5.0]], dtype=np.float64)
        tensor = tensor_pb2.TensorProto(dtype=2, tensor_content=data.tobytes(), tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=2), tensor_shape_pb2.TensorShapeProto.Dim(size=3)]))
        value = summary_pb2.Summary.Value(tag="weights", tensor=tensor)
        if first:
            value.metadata.plugin_data.plugin_name = "histograms"
        return event_pb2.Event(wall_time=1.7e9, step=step, summary=summary_pb2.Summary(value=[value])).SerializeToString()

    path = event_file(tmp_path / "events.out.tfevents.1.h.1.0",
                      [header_event()] + [hist(step, step == 0) for step in range(50)])
    monkeypatch.setattr(_tbwindows, "WINDOW", 256)
    [run] = READER.read([path])
    assert len(run.histograms) == 50 and not run.warnings


SHRINK = r"""
import os, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from tanalyze.readers.tensorboard import _windows as _tbwindows
from tanalyze.readers.tensorboard.reader import TensorBoardReader
path = Path(sys.argv[1])
original = _tbwindows.scan_records
calls = []
def truncating(buf):
    calls.append(1)
    if len(calls) == 2:
        os.truncate(path, 5000)  # another process cuts the file while we read it
    return original(buf)
_tbwindows.scan_records = truncating
_tbwindows.WINDOW = 1 << 20
[run] = TensorBoardReader().read([path])
print(len(run.scalars), "|".join(w.message for w in run.warnings))
"""


def test_a_file_truncated_while_read_ends_there_instead_of_killing_the_process(tmp_path):
    """With mmap, touching pages past the new end raised SIGBUS and the process died (exit -7)."""
    records = scalar_events(10)
    for i in range(6):
        records += [image_event("img", i, 400_000), scalar_event("loss", 100 + i, 1.0)]
    path = event_file(tmp_path / "events.out.tfevents.1.h.1.0", records)
    done = subprocess.run([sys.executable, "-c", SHRINK.format(repo=str(REPO)), str(path)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    points, warnings = done.stdout.strip().split(" ", 1)
    assert int(points) >= 10  # what was read before the cut is kept
    assert "the file shrank while it was read" in warnings
    assert os.path.getsize(path) == 5000
