"""Damage costs only what it touched, and what it cost is counted.

Event files: damage is put at every record boundary of a real multi-record file
and at several offsets inside records (length, length CRC, data, data CRC); an
independent oracle (a plain frame walk plus protobuf) says which points each
record holds. Every point of a record the damage did not touch must be read,
no point may be invented, and a loss must come with a warning.

Line formats (CSV, JSON lines, console logs): one line is damaged; everything
read when that line is simply deleted must still be read, and if the damaged
line lost points that the intact file had, the warnings must say so.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2

from tanalyze.readers.tensorboard.reader import TensorBoardReader
from tests.conftest import REAL_LOGS, SAMPLE_RUNS
from tests.fuzz.conftest import FUZZ, PROFILE, scaled
from tests.fuzz.harness import TRIED, read_direct, seeds, write_run

READER = TensorBoardReader()
EVENT_FILES = {
    # a real detectron2 run: 316 records of simple_value scalars
    "real": "tfevents/Kevindic0214__detectron2_training/output/events.out.tfevents.1737378888.LAPTOP-1BH8GF02.2695.0",
    # bundled with the project: an HF Trainer run of 73 records
    "sample": "sample_runs:resumed_hf/tensorboard/events.out.tfevents.1796228434.vm.12425.0",
}


def _event_file(key: str) -> Path:
    where = EVENT_FILES[key]
    if where.startswith("sample_runs:"):
        return SAMPLE_RUNS / where.removeprefix("sample_runs:")
    path = REAL_LOGS / where
    if not path.is_file():
        pytest.skip(f"real-log corpus not found at {REAL_LOGS}")
    return path


def frames(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each frame of an intact file, by following the length fields."""
    out, offset = [], 0
    while offset < len(data):
        end = offset + struct.unpack_from("<Q", data, offset)[0] + 16
        out.append((offset, end))
        offset = end
    return out


def record_points(data: bytes, frame: tuple[int, int]) -> Counter:
    """The scalar points one record holds, by protobuf (simple values; these files have no others)."""
    start, end = frame
    event = event_pb2.Event.FromString(data[start + 12 : end - 4])
    points: Counter = Counter()
    if event.WhichOneof("what") == "summary":
        for value in event.summary.value:
            if value.WhichOneof("value") == "simple_value":
                points[(value.tag, event.step, value.simple_value)] += 1
    return points


def read_points(path: Path) -> tuple[Counter, list]:
    TRIED["tensorboard (damage oracle)"] += 1
    [run] = READER.read([path])
    frame = run.scalars
    points = Counter(zip(frame["tag"].astype(str), frame["step"].tolist(), frame["value"].tolist(), strict=True))
    return points, run.warnings


def damaged(data: bytes, kind: str, at: int) -> tuple[bytes, tuple[int, int]]:
    """The damaged bytes and the byte range of the original file the damage touched."""
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :], (at, at + 1)
    if kind == "zero4":
        return data[:at] + bytes(4) + data[at + 4 :], (at, at + 4)
    if kind == "insert":
        return data[:at] + b"\x07garbage" + data[at:], (at, at)  # between bytes: touches nothing whole
    if kind == "delete":
        return data[:at] + data[at + 1 :], (at, at + 1)
    raise ValueError(kind)


def _touched(frame: tuple[int, int], hit: tuple[int, int]) -> bool:
    start, end = frame
    lo, hi = hit
    return (lo < end and hi > start) if hi > lo else start < lo < end


@cache
def oracle(path: Path) -> tuple[bytes, list[tuple[int, int]], list[Counter], Counter]:
    """The file's bytes, its frames, each record's points and all points (computed once per file)."""
    data = path.read_bytes()
    layout = frames(data)
    per_record = [record_points(data, f) for f in layout]
    return data, layout, per_record, sum(per_record, Counter())


def check_damage(path: Path, tmp: Path, kind: str, at: int) -> None:
    data, layout, per_record, everything = oracle(path)
    bad, hit = damaged(data, kind, at)
    must_keep = everything.copy()
    for f, points in zip(layout, per_record, strict=True):
        if _touched(f, hit):
            must_keep -= points
    target = tmp / path.name
    target.write_bytes(bad)
    got, warnings = read_points(target)
    missing = must_keep - got
    assert not missing, f"{kind} at byte {at}: intact points lost: {list(missing)[:3]}"
    invented = got - everything
    assert not invented, f"{kind} at byte {at}: points that were never written: {list(invented)[:3]}"
    if everything - got:
        assert warnings, f"{kind} at byte {at}: {sum((everything - got).values())} point(s) lost without a warning"


@pytest.mark.parametrize("key", EVENT_FILES)
def test_oracle_agrees_with_the_reader_on_the_intact_file(key):
    path = _event_file(key)
    data = path.read_bytes()
    expected = sum((record_points(data, f) for f in frames(data)), Counter())
    got, warnings = read_points(path)
    assert got == expected and not warnings
    assert sum(expected.values()) > 50


@pytest.mark.parametrize("kind", ["flip", "zero4", "insert", "delete"])
@pytest.mark.parametrize("key", EVENT_FILES)
def test_damage_at_every_record_boundary(key, kind, tmp_path):
    path = _event_file(key)
    starts = [start for start, _ in oracle(path)[1]]
    for at in starts:
        check_damage(path, tmp_path, kind, at)


@pytest.mark.parametrize("key", EVENT_FILES)
def test_damage_inside_records(key, tmp_path):
    """Inside the length, its CRC, the data (start, middle, end) and the data CRC of every record."""
    path = _event_file(key)
    layout = oracle(path)[1]
    stride = 1 if PROFILE == "long" else 7
    for start, end in layout[::stride]:
        for at in sorted({start + 3, start + 9, start + 12, (start + 12 + end - 4) // 2, end - 5, end - 2}):
            check_damage(path, tmp_path, "flip", at)
            check_damage(path, tmp_path, "zero4", min(at, end - 4))


@pytest.mark.parametrize("key", EVENT_FILES)
def test_truncation_at_every_record_boundary_and_inside(key, tmp_path):
    """A file cut anywhere keeps every record that ends before the cut, exactly those."""
    path = _event_file(key)
    data, layout, per_record, _ = oracle(path)
    cuts = sorted({c for start, end in layout for c in (start, start + 5, start + 12, (start + end) // 2, end - 1)})
    for cut in cuts[:: 1 if PROFILE == "long" else 9]:
        target = tmp_path / path.name
        target.write_bytes(data[:cut])
        got, warnings = read_points(target)
        complete = sum(1 for _, end in layout if end <= cut)
        expected = sum(per_record[:complete], Counter())
        assert got == expected, f"cut at {cut}"
        if cut not in {start for start, _ in layout}:
            assert warnings, f"cut at {cut}: no warning"


# ------------------------------------------------------------------ line formats

LINE_READERS = ["lightning_csv", "yolo_csv", "keras_csv", "csv", "wandb-history", "detectron2", "mmengine",
                "megatron", "hf_console", "deepspeed", "nanogpt", "text", "pattern"]
# In CSV and JSON lines every damaged line is detectable, so its loss must be counted. In a console
# log a line cut short can be a valid shorter line ("Time: 60.5s - LR: 1e-05" cut to "Time: 60.5s"):
# there only "nothing beyond that line is lost" can be required.
STRUCTURED = {"lightning_csv", "yolo_csv", "keras_csv", "csv", "wandb-history", "detectron2"}
LINE_DAMAGE = ["garble_byte", "nul", "invalid_utf8", "cut_half", "letters_for_digits", "megabyte_line"]


def _line_seed(name: str):
    for seed in seeds(name):
        text_files = [rel for rel in seed.read if not rel.endswith((".yaml", ".yml")) and len(seed.files[rel]) > 200]
        if text_files:
            return seed, max(text_files, key=lambda rel: len(seed.files[rel]))
    pytest.skip(f"no line-format seed for {name}")


# Formats whose metric lines do not carry their step: it comes from a neighbouring line (HF: the progress
# bar tqdm redraws after each dict; DeepSpeed: validation after the last training line; generic text: an
# "Epoch 6/20" header), so damage to that neighbour may move points to another step. Their values must stay.
STEP_INFERRED = {"hf_console", "deepspeed", "text"}
#: Tags of a format whose lines take their step from a neighbour likewise (Megatron's 'time (ms)' timer lines: the
#: iteration line before them).
STEP_INFERRED_TAGS = {"megatron": ("time (ms)/",)}


def _points(runs, name: str) -> Counter:
    out: Counter = Counter()
    for run in runs:
        frame = run.scalar_table()
        values = [("nan" if isinstance(v, float) and math.isnan(v) else v) for v in frame["value"].tolist()]
        tags = frame["tag"].astype(str).tolist()
        steps = [None] * len(frame) if name in STEP_INFERRED else frame["step"].tolist()
        inferred = STEP_INFERRED_TAGS.get(name)
        if inferred:
            steps = [None if tag.startswith(inferred) else step for tag, step in zip(tags, steps, strict=True)]
        out.update(zip([run.name] * len(frame), tags, steps, values, strict=True))
    return out


def _unexplained(lost: Counter, runs, reference, name: str) -> Counter:
    """Lost points not accounted for by a restart that ``runs`` report.

    A damaged line can still be a valid record of a relaunched job (the same iteration logged again)
    whose restart replaces the earlier attempt's points from that step on; where steps are inferred
    from neighbours, damage may move a point onto a step a reported restart replaces. Either way the
    run says how many points were replaced: not silent.
    """
    known = {(r.step, r.file) for run in reference for r in run.restarts}
    starts = [r.step for run in runs for r in run.restarts if name in STEP_INFERRED or (r.step, r.file) not in known]
    if not starts or not lost:
        return lost
    first = min(starts)
    steps: dict[tuple, list[int]] = {}
    for run in reference:  # where each lost point was in the reference read (step-inferred points carry no step)
        frame = run.scalar_table()
        for tag, step, value in zip(frame["tag"].astype(str), frame["step"].tolist(), frame["value"].tolist(),
                                    strict=True):
            steps.setdefault((run.name, tag, "nan" if isinstance(value, float) and math.isnan(value) else value),
                             []).append(step)
    return Counter({point: n for point, n in lost.items()
                    if not any(step >= first for step in steps.get((point[0], point[1], point[3]), []))})


def _rounded_elsewhere(lost: Counter, got: Counter) -> Counter:
    """Lost points whose metric is still there at its step, printed with more digits (HF's metrics block rounds
    what the final dict gave in full: one of the two is kept), taken out: the value was not lost."""
    kept = {}
    for run, tag, step, value in got:
        kept.setdefault((run, tag, step), []).append(value)

    def rounded_of(value, others) -> bool:
        if not isinstance(value, float) or math.isnan(value):
            return False
        decimals = len(repr(value).partition(".")[2]) if "e" not in repr(value) else None
        return decimals is not None and any(isinstance(o, float) and round(o, decimals) == value for o in others)

    return Counter({point: n for point, n in lost.items()
                    if not rounded_of(point[3], kept.get(point[:3], []))})


def _restart_steps(runs) -> set[int]:
    return {restart.step for run in runs for restart in run.restarts}


def _warned(runs) -> int:
    return sum(w.count for run in runs for w in run.warnings)


def _damage_line(line: bytes, kind: str, salt: int) -> bytes:
    body = line.rstrip(b"\r")
    if not body:
        return b"#\xfe\x00garbage"  # (not \xff\xfe: at the start of a file that is a UTF-16 byte-order mark)
    i = salt % len(body)
    if kind == "garble_byte":
        return body[:i] + b"\xff#" + body[i + 1 :]
    if kind == "nul":
        return body[:i] + b"\x00" * 3 + body[i:]
    if kind == "invalid_utf8":
        return body[:i] + b"\xc3\x28\xa0\xa1" + body[i:]
    if kind == "cut_half":
        return body[: len(body) // 2]
    if kind == "letters_for_digits":
        return bytes(c if not 48 <= c <= 57 else 120 for c in body)
    if kind == "megabyte_line":  # a line of a megabyte (a dumped tensor, a progress bar never cleared) before it
        return b"z" * (1 << 20) + b"\n" + body
    raise ValueError(kind)


def _run(seed, target: str, content: bytes, root: Path):
    files = dict(seed.files)
    files[target] = content
    return read_direct(seed.reader, write_run(files, root), seed.read)


@pytest.mark.parametrize("name", LINE_READERS)
@settings(FUZZ, max_examples=scaled(15))
@given(line_index=st.integers(0, 1 << 20), kind=st.sampled_from(LINE_DAMAGE), salt=st.integers(0, 1 << 20))
def test_a_damaged_line_costs_that_line_only(name, line_index, kind, salt, tmp_path_factory):
    seed, target = _line_seed(name)
    lines = seed.files[target].split(b"\n")
    index = line_index % len(lines)
    if index == 0 and name in ("lightning_csv", "yolo_csv", "keras_csv", "csv"):
        index = 1  # the header names every column: damaging it is not losing one line
    root = tmp_path_factory.mktemp("run")
    original = _run(seed, target, seed.files[target], root)
    without = _run(seed, target, b"\n".join(lines[:index] + lines[index + 1 :]), root)
    broken = _run(seed, target, b"\n".join(lines[:index] + [_damage_line(lines[index], kind, salt)] + lines[index + 1 :]),
                  root)
    for result in (original, without, broken):
        assert isinstance(result, list), result
    kept, base, got = _points(without, name), _points(original, name), _points(broken, name)
    missing = _rounded_elsewhere(_unexplained(kept - got, broken, without, name), got)
    assert not missing, f"damaging line {index + 1} ({kind}) lost points of other lines: {list(missing)[:3]}"
    lost_here = _unexplained((base - got) - (base - kept), broken, original, name)  # lost beyond deleting the line
    # the damaged line began a relaunched attempt (no restart without it): the earlier attempt's points at its step
    # were replaced by its own, and those it lost to the damage were its own too, whatever their values
    own_restarts = _restart_steps(original) - _restart_steps(without)
    lost_here = Counter({point: n for point, n in lost_here.items() if point[2] not in own_restarts})
    assert not lost_here
    if base - got and name in STRUCTURED:  # the damaged line's own points are gone: that must be said
        assert _warned(broken) > _warned(original) or any(run.notes != o.notes for run, o in zip(broken, original,
                                                                                                  strict=False)), \
            f"line {index + 1} ({kind}) lost {sum((base - got).values())} point(s) without a warning"


@pytest.mark.parametrize("kind", ["zero4", "insert", "delete"])
def test_damage_at_every_record_boundary_in_small_windows(kind, tmp_path, monkeypatch):
    """The same with the file read 512 bytes at a time: damage next to a window edge costs no more."""
    from tanalyze.readers.tensorboard import _windows as _tbwindows

    monkeypatch.setattr(_tbwindows, "WINDOW", 512)
    path = _event_file("sample")
    for at in [start for start, _ in oracle(path)[1]]:
        check_damage(path, tmp_path, kind, at)
