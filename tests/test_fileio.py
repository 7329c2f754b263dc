"""Reads at an offset give the same bytes with positional reads and with the seek-and-read of platforms
that have none (Windows): the readers and the cache built on them read the same."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tanalyze
from tanalyze import _fileio
from tanalyze._fileio import open_fd, pread, pread_into
from tanalyze.cache import Cache
from tanalyze.readers.tensorboard.reader import TensorBoardReader
from tests.conftest import SAMPLE_RUNS
from tests.readers.test_tbtails import assert_same_part
from tests.scale_helpers import append_events, assert_same_logs, make_sweep


@pytest.fixture(params=[True, False], ids=["positional", "seek-and-read"])
def positional(request, monkeypatch):
    monkeypatch.setattr(_fileio, "_POSITIONAL", request.param)
    return request.param


def test_reads_at_an_offset(tmp_path, positional):
    path = tmp_path / "data"
    path.write_bytes(bytes(range(256)) * 4)
    handle = open_fd(path, os.O_RDONLY)
    try:
        assert pread(handle, 4, 254) == bytes([254, 255, 0, 1])
        assert pread(handle, 10, 1020) == bytes([252, 253, 254, 255])  # fewer at the end
        assert pread(handle, 10, 2000) == b""
        buffer = np.zeros(6, np.uint8)
        assert pread_into(handle, memoryview(buffer)[1:], 10) == 5 and buffer.tolist() == [0, 10, 11, 12, 13, 14]
        assert pread_into(handle, memoryview(buffer), 1023) == 1 and buffer[0] == 255
        assert pread(handle, 3, 0) == bytes([0, 1, 2])  # the order of reads does not matter
    finally:
        os.close(handle)


def test_event_files_and_the_cache_read_the_same_either_way(tmp_path, positional, monkeypatch):
    files = sorted(SAMPLE_RUNS.rglob("*tfevents*"))
    reader = TensorBoardReader()
    parts = [reader.read_part(path) for path in files]
    monkeypatch.setattr(_fileio, "_POSITIONAL", True)
    for path, part in zip(files, parts, strict=True):
        assert part.rows > 0
        assert_same_part(part, reader.read_part(path), str(path))
    monkeypatch.setattr(_fileio, "_POSITIONAL", positional)
    sweep = make_sweep(tmp_path, runs=3, steps=20)
    cache = Cache(str(tmp_path / "c"))
    cold = tanalyze.load(sweep, jobs=1, cache=cache)
    assert_same_logs(tanalyze.load(sweep, jobs=1, cache=cache), cold)  # warm: entries read back
    for index, folder in enumerate(sorted(p.parent for p in sweep.rglob("*tfevents*"))):
        append_events(folder, tmp_path / f"more{index}", steps=range(20, 23), seed=index)
    assert_same_logs(tanalyze.load(sweep, jobs=1, cache=cache), tanalyze.load(sweep, jobs=1, cache=False))
