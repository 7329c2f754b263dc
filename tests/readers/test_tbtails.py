"""Many event files read on together give exactly what reading each alone gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from tanalyze.readers.base import FilePart
from tanalyze.readers.tensorboard._tails import MAX_TAIL, read_tails
from tanalyze.readers.tensorboard._tfrecord import scan_records
from tanalyze.readers.tensorboard.reader import TensorBoardReader
from tests.conftest import SAMPLE_RUNS
from tests.scale_helpers import append_events, event_file, write_events

READER = TensorBoardReader()


def same(a, b) -> bool:
    """Equality through dicts and lists, arrays compared by value (NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def assert_same_part(got: FilePart | OSError, expected: FilePart, where: str) -> None:
    assert isinstance(got, FilePart), where
    assert same([got.end, got.meta, got.state, got.tail], [expected.end, expected.meta, expected.state, expected.tail]), where
    assert list(got.columns) == list(expected.columns), where
    for name, column in expected.columns.items():
        assert got.columns[name].dtype == column.dtype, (where, name)
        assert np.array_equal(got.columns[name], column, equal_nan=True), (where, name)


def frame_ends(path: Path) -> list[int]:
    records = scan_records(path.read_bytes())
    return (records.starts + records.lengths + 4).tolist()


class Counting:
    """``read_part``, counting the files ``read_tails`` had to read alone."""

    def __init__(self) -> None:
        self.alone: list[Path] = []

    def __call__(self, path, start, state):
        self.alone.append(Path(path))
        return READER.read_part(path, start, state)


def check(requests) -> Counting:
    counting = Counting()
    got = read_tails(requests, counting)
    for (path, start, state), part in zip(requests, got, strict=True):
        assert_same_part(part, READER.read_part(path, start, state), f"{path} from {start}")
    return counting


def test_tails_of_every_real_event_file_read_together_equal_each_read_alone(real_logs):
    files = sorted((real_logs / "tfevents").rglob("*tfevents*")) + sorted(SAMPLE_RUNS.rglob("*tfevents*"))
    requests = []
    for path in files:
        ends = frame_ends(path)
        state = READER.read_part(path).state
        for cut in sorted({ends[len(ends) // 3], ends[(2 * len(ends)) // 3], ends[-2] if len(ends) > 1 else ends[0]}):
            requests.append((path, cut, state))
        requests.append((path, ends[len(ends) // 2], {}))  # no plugins known: TF2 tensors are then read otherwise
        requests.append((path, ends[len(ends) // 2] + 3, state))  # not a record boundary: damage, read alone
    counting = check(requests)
    assert len(counting.alone) < len(requests) / 2  # most were read together: tails of plain scalars


def grown(tmp_path: Path, runs: int, steps: int, more: int) -> list[tuple[Path, int]]:
    """``runs`` event files of ``steps`` steps, then ``more`` steps appended to each: (file, where it ended)."""
    out = []
    for index in range(runs):
        folder = tmp_path / f"run{index}"
        write_events(folder, steps=range(0, steps), seed=index).close()
        end = event_file(folder).stat().st_size
        append_events(folder, tmp_path / f"more{index}", steps=range(steps, steps + more), seed=index)
        out.append((event_file(folder), end))
    return out


def test_a_sweep_that_grew_is_read_in_one_pass(tmp_path):
    assert check([(path, end, {"plugins": {}}) for path, end in grown(tmp_path, 6, 40, 5)]).alone == []


def test_damaged_cut_or_unusual_tails_are_read_alone_and_the_others_still_together(tmp_path):
    requests, odd = [], {}
    for index, (path, end) in enumerate(grown(tmp_path, 6, 30, 5)):
        requests.append((path, end, {}))
        if index == 1:  # a record still being written: half of one more frame
            data = path.read_bytes()
            with open(path, "ab") as handle:
                handle.write(data[end:end + (frame_ends(path)[-1] - frame_ends(path)[-2]) // 2])
            odd[path] = "cut"
        elif index == 2:  # one flipped byte inside the new records
            data = bytearray(path.read_bytes())
            data[end + 20] ^= 0xFF
            path.write_bytes(bytes(data))
            odd[path] = "damaged"
        elif index == 3:  # the new records hold a histogram and a text summary as well
            writer = SummaryWriter(str(tmp_path / "extra"), flush_secs=3600)
            writer.add_histogram("weights", np.arange(10.0), 35)
            writer.add_text("note", "hello", 35)
            writer.close()
            extra = event_file(tmp_path / "extra").read_bytes()
            with open(path, "ab") as handle:
                handle.write(extra[frame_ends(event_file(tmp_path / "extra"))[0]:])
            odd[path] = "histogram"
    requests.append((tmp_path / "missing" / "events.out.tfevents.1.x", 10, {}))
    requests.append((requests[0][0], 0, {}))  # from the start: a whole read, not a tail
    counting = Counting()
    got = read_tails(requests, counting)
    assert isinstance(got[-2], FileNotFoundError)
    for (path, start, state), part in zip(requests[:-2] + requests[-1:], got[:-2] + got[-1:], strict=True):
        assert_same_part(part, READER.read_part(path, start, state), f"{path} from {start}")
    assert odd[requests[1][0]] == "cut" and got[1].tail["damage"] is not None
    # The cut and the damaged tail are read alone, and so is the one holding more than scalars (found by
    # halving the group until it stands alone); the whole read and the missing file go to read_part.
    assert set(counting.alone) >= {requests[1][0], requests[2][0], requests[3][0]}
    assert requests[4][0] not in counting.alone and requests[5][0] not in counting.alone  # still read together
    assert requests[-2][0] in counting.alone and requests[-1][0] in counting.alone


def test_a_tail_larger_than_the_limit_is_read_alone(tmp_path):
    folder = tmp_path / "run"
    write_events(folder, steps=range(0, 10)).close()
    path = event_file(folder)
    end = path.stat().st_size
    append_events(folder, tmp_path / "more", steps=range(10, 10 + MAX_TAIL // 100))
    assert path.stat().st_size - end > MAX_TAIL
    assert check([(path, end, {})]).alone == [path]


@pytest.mark.parametrize("plugins", [{}, {"train/loss": "scalars"}])
def test_files_are_grouped_by_the_plugins_they_knew(tmp_path, plugins):
    requests = [(path, end, {"plugins": plugins if index else {}})
                for index, (path, end) in enumerate(grown(tmp_path, 3, 20, 5))]
    assert check(requests).alone == []
