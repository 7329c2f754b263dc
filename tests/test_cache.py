"""The incremental cache: never stale, resumes files that grew, survives damage and deletion."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import tanalyze
from tanalyze.cache import LAYOUT, Cache, default_cache_dir, resolve_cache
from tanalyze.cache.codec import Uncacheable, encode_runs
from tanalyze.cache.reading import read_runs
from tanalyze.cache.store import (
    MAX_FRAMES,
    SUFFIX,
    Chunked,
    _raw_frame,
    append_entry,
    read_entry,
    write_entry,
)
from tanalyze.readers import get_reader
from tanalyze.readers.base import RunData
from tanalyze.readers.tensorboard._tails import read_tails
from tanalyze.readers.tensorboard.reader import TensorBoardReader
from tests.conftest import SAMPLE_RUNS
from tests.scale_helpers import append_events, assert_same_logs, event_file, make_sweep, write_events


@pytest.fixture
def reads(monkeypatch):
    """Every file parsed, as (folder name, start offset): by ``read_part`` or, read on with others, ``read_parts``."""
    calls: list[tuple[str, int]] = []
    original = TensorBoardReader.read_part

    def spy(self, path, start=0, state=None):
        calls.append((Path(path).parent.name, start))
        return original(self, path, start, state)

    def spy_many(self, requests):
        calls.extend((Path(path).parent.name, start) for path, start, _ in requests)
        return read_tails(requests, lambda path, start, state: original(self, path, start, state))

    monkeypatch.setattr(TensorBoardReader, "read_part", spy)
    monkeypatch.setattr(TensorBoardReader, "read_parts", spy_many)
    return calls


def entries(cache: Cache) -> list[Path]:
    """The entries of what was read (files and runs; discovery's head tags apart, see test_cache_heads.py)."""
    return sorted(p for p in cache.root.rglob("*")
                  if p.is_file() and p.name != "CACHEDIR.TAG" and p.parent.parent.name != "heads")


def fresh(path) -> tanalyze.Logs:
    return tanalyze.load(path, jobs=1, cache=False)


def test_cold_and_warm_loads_equal_an_uncached_load_for_every_sample_format(tmp_path):
    cache = Cache(str(tmp_path / "c"))
    cold = tanalyze.load(SAMPLE_RUNS, jobs=1, cache=cache)
    stored = entries(cache)
    warm = tanalyze.load(SAMPLE_RUNS, jobs=1, cache=cache)
    formats = {info.format for info in cold.runs.values()}
    assert {"tensorboard", "hf_trainer_state", "lightning_csv"} <= formats
    assert len(stored) >= len(cold.runs)  # one entry per event file and per run of the other readers
    assert entries(cache) == stored
    assert_same_logs(cold, fresh(SAMPLE_RUNS))
    assert_same_logs(warm, fresh(SAMPLE_RUNS))


def test_warm_load_parses_nothing(tmp_path, reads):
    sweep = make_sweep(tmp_path, runs=4, steps=30)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(sweep, jobs=1, cache=cache)
    assert sorted(reads) == sorted((f"run{i:02d}", 0) for i in range(4))
    reads.clear()
    tanalyze.load(sweep, jobs=1, cache=cache)
    assert reads == []


def test_a_file_that_grew_is_read_from_where_the_last_read_stopped(tmp_path, reads):
    folder = tmp_path / "run"
    write_events(folder, steps=range(0, 50)).close()
    cache = Cache(str(tmp_path / "c"))
    first = tanalyze.load(folder, jobs=1, cache=cache)
    size = event_file(folder).stat().st_size
    assert first.scalars["step"].max() == 49
    append_events(folder, tmp_path / "more", steps=range(50, 80))
    reads.clear()
    grown = tanalyze.load(folder, jobs=1, cache=cache)
    assert reads == [("run", size)]  # only the new bytes were parsed
    assert grown.scalars["step"].max() == 79 and len(grown.scalars) == 80 * 3
    assert_same_logs(grown, fresh(folder))
    append_events(folder, tmp_path / "more2", steps=range(80, 90))
    assert_same_logs(tanalyze.load(folder, jobs=1, cache=cache), fresh(folder))


@pytest.fixture
def combines(monkeypatch):
    """How many times a TensorBoard run was combined from whole parts (not extended)."""
    calls: list[int] = []
    original = TensorBoardReader.combine

    def spy(self, files, parts):
        calls.append(len(files))
        return original(self, files, parts)

    monkeypatch.setattr(TensorBoardReader, "combine", spy)
    return calls


def _append_histogram(folder: Path, scratch: Path, step: int) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(scratch), flush_secs=3600)
    writer.add_histogram("weights", np.arange(10.0), step, walltime=1.7e9 + step)
    writer.close()
    data = event_file(scratch).read_bytes()
    header = 8 + 4 + int.from_bytes(data[:8], "little") + 4
    with open(event_file(folder), "ab") as handle:
        handle.write(data[header:])


def test_appends_that_continue_the_run_extend_its_entry_without_combining_again(tmp_path, reads, combines):
    folder = tmp_path / "run"
    write_events(folder, steps=range(0, 50)).close()
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(folder, jobs=1, cache=cache)
    assert combines == [1]
    for index, steps in enumerate((range(50, 60), range(60, 61), range(61, 90))):
        size = event_file(folder).stat().st_size
        append_events(folder, tmp_path / f"more{index}", steps=steps, seed=index + 5)
        reads.clear()
        combines.clear()
        grown = tanalyze.load(folder, jobs=1, cache=cache)
        assert reads == [("run", size)]  # the new bytes only, resumed from the run entry
        assert combines == []  # appended to the cached run, not combined from parts again
        assert grown.scalars["step"].max() == steps[-1] and len(grown.scalars) == (steps[-1] + 1) * 3
        assert_same_logs(grown, fresh(folder))
    reads.clear()
    combines.clear()
    again = tanalyze.load(folder, jobs=1, cache=cache)
    assert reads == [] and combines == []  # and the extended entry serves the next load whole
    assert_same_logs(again, fresh(folder))


@pytest.mark.parametrize("change", ["steps go back", "a step repeats", "histogram", "damaged tail", "record being written",
                                    "hparams.yaml added", "a new tag", "several appends then one going back"])
def test_appends_are_extended_only_when_they_continue_the_run_and_always_equal_a_fresh_read(tmp_path, change, combines):
    folder = tmp_path / "run"
    write_events(folder, steps=range(0, 50)).close()
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(folder, jobs=1, cache=cache)
    path = event_file(folder)
    if change == "steps go back":
        append_events(folder, tmp_path / "more", steps=range(30, 60))
    elif change == "a step repeats":
        append_events(folder, tmp_path / "more", steps=range(49, 52))
    elif change == "histogram":
        _append_histogram(folder, tmp_path / "more", step=50)
    elif change == "damaged tail":
        append_events(folder, tmp_path / "more", steps=range(50, 60))
        data = bytearray(path.read_bytes())
        data[-40] ^= 0xFF  # a data CRC of one appended record no longer matches
        path.write_bytes(bytes(data))
    elif change == "record being written":
        append_events(folder, tmp_path / "more", steps=range(50, 60))
        path.write_bytes(path.read_bytes()[:-7])
    elif change == "hparams.yaml added":
        append_events(folder, tmp_path / "more", steps=range(50, 60))
        (folder / "hparams.yaml").write_text("lr: 0.5\n", encoding="utf-8")
    elif change == "a new tag":
        from tensorboardX import SummaryWriter

        writer = SummaryWriter(str(tmp_path / "more"), flush_secs=3600)
        writer.add_scalar("extra/metric", 1.5, 50, walltime=1.7e9 + 50)
        writer.close()
        data = event_file(tmp_path / "more").read_bytes()
        with open(path, "ab") as handle:
            handle.write(data[8 + 4 + int.from_bytes(data[:8], "little") + 4:])
    else:
        for index in range(3):
            append_events(folder, tmp_path / f"more{index}", steps=range(50 + 10 * index, 60 + 10 * index))
            combines.clear()
            cached = tanalyze.load(folder, jobs=1, cache=cache)
            assert combines == []
            assert_same_logs(cached, fresh(folder))
        append_events(folder, tmp_path / "back", steps=range(55, 65))  # a resume inside the same file
    combines.clear()
    grown = tanalyze.load(folder, jobs=1, cache=cache)
    assert combines == ([] if change == "a new tag" else [1])
    assert_same_logs(grown, fresh(folder))
    assert_same_logs(tanalyze.load(folder, jobs=1, cache=cache), fresh(folder))  # and its new entry is right too


@pytest.mark.parametrize("resume", [{"ends": "x"}, {"ends": [1, 2], "states": [{}]}, {"ends": [10], "states": ["x"]},
                                    [], {"states": [{"plugins": 7}]}])
def test_a_damaged_resume_point_in_a_run_entry_reads_the_run_through_its_parts(tmp_path, resume):
    folder = tmp_path / "run"
    write_events(folder, steps=range(0, 30)).close()
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(folder, jobs=1, cache=cache)
    [entry] = [p for p in entries(cache) if p.parent.parent.name == "runs"]
    found = read_entry(entry)
    write_entry(entry, found.arrays, {**found.header, "resume": resume})
    append_events(folder, tmp_path / "more", steps=range(30, 40))
    assert_same_logs(tanalyze.load(folder, jobs=1, cache=cache), fresh(folder))


def test_a_record_cut_in_the_middle_is_read_whole_once_complete(tmp_path, reads):
    folder = tmp_path / "run"
    write_events(folder, steps=range(40)).close()
    path = event_file(folder)
    data = path.read_bytes()
    path.write_bytes(data[:-20])  # the last record is still being written
    cache = Cache(str(tmp_path / "c"))
    partial = tanalyze.load(folder, jobs=1, cache=cache)
    info = next(iter(partial.runs.values()))
    assert len(partial.scalars) == 40 * 3 - 1
    assert any("file ends inside a record" in w.message for w in info.warnings)
    path.write_bytes(data)
    complete = tanalyze.load(folder, jobs=1, cache=cache)
    assert reads[-1][1] > 0 and len(complete.scalars) == 40 * 3
    assert_same_logs(complete, fresh(folder))
    assert not next(iter(complete.runs.values())).warnings


def test_a_truncated_file_is_read_again_whole(tmp_path, reads):
    folder = tmp_path / "run"
    write_events(folder, steps=range(60)).close()
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(folder, jobs=1, cache=cache)
    path = event_file(folder)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    reads.clear()
    shorter = tanalyze.load(folder, jobs=1, cache=cache)
    assert reads == [("run", 0)]
    assert_same_logs(shorter, fresh(folder))
    assert shorter.scalars["step"].max() < 59


def test_a_rewrite_with_the_same_size_and_a_new_mtime_is_read_again(tmp_path, reads):
    folder = tmp_path / "run"
    write_events(folder, steps=range(60), seed=1).close()
    path = event_file(folder)
    cache = Cache(str(tmp_path / "c"))
    before = tanalyze.load(folder, jobs=1, cache=cache)
    other = tmp_path / "other"
    write_events(other, steps=range(60), seed=2).close()  # same layout, other values: same size
    stat = path.stat()
    replacement = event_file(other).read_bytes()
    assert len(replacement) == stat.st_size
    path.write_bytes(replacement)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    reads.clear()
    after = tanalyze.load(folder, jobs=1, cache=cache)
    assert reads == [("run", 0)]
    assert not np.array_equal(after.scalars["value"], before.scalars["value"])
    assert_same_logs(after, fresh(folder))


def test_a_rewrite_that_keeps_size_and_mtime_is_caught_by_the_prefix_hash(tmp_path):
    folder = tmp_path / "run"
    write_events(folder, steps=range(5), seed=1).close()  # small: the whole prefix is hashed
    path = event_file(folder)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(folder, jobs=1, cache=cache)
    stat = path.stat()
    other = tmp_path / "other"
    write_events(other, steps=range(5), seed=2).close()
    path.write_bytes(event_file(other).read_bytes())
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert_same_logs(tanalyze.load(folder, jobs=1, cache=cache), fresh(folder))


def test_a_new_tanalyze_or_reader_version_does_not_use_old_entries(tmp_path, reads, monkeypatch):
    sweep = make_sweep(tmp_path, runs=2, steps=10)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(sweep, jobs=1, cache=cache)
    reads.clear()
    monkeypatch.setattr("tanalyze._version.__version__", "999.0")
    tanalyze.load(sweep, jobs=1, cache=cache)
    assert sorted(reads) == [("run00", 0), ("run01", 0)]
    reads.clear()
    monkeypatch.setattr(TensorBoardReader, "cache_version", TensorBoardReader.cache_version + 1)
    tanalyze.load(sweep, jobs=1, cache=cache)
    assert sorted(reads) == [("run00", 0), ("run01", 0)]


def test_deleting_the_cache_in_the_middle_of_a_load_is_harmless(tmp_path, monkeypatch):
    sweep = make_sweep(tmp_path, runs=6, steps=20)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(sweep, jobs=1, cache=cache)
    looked_up = []
    original = Cache.load

    def load_then_delete(self, kind, key):
        if kind == "runs":
            looked_up.append(key)
            if len(looked_up) == 4:  # three runs found in the cache; it is gone for the other three
                shutil.rmtree(cache.directory)
        return original(self, kind, key)

    monkeypatch.setattr(Cache, "load", load_then_delete)
    logs = tanalyze.load(sweep, jobs=1, cache=cache)
    monkeypatch.undo()
    assert_same_logs(logs, fresh(sweep))
    assert len(entries(cache)) == 3 * 2  # the runs read after the deletion were stored again (file + run entries)
    assert_same_logs(tanalyze.load(sweep, jobs=1, cache=cache), fresh(sweep))


def _damage(entry: Path, damage: str) -> None:
    data = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(os.urandom(len(data)))
    elif damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        entry.write_bytes(b"")
    else:  # a valid entry of another file, copied over this one
        found = read_entry(entry)
        write_entry(entry, found.arrays, {**found.header, "key": {**found.header["key"], "elsewhere": True}})


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "another key"])
def test_corrupt_entries_are_ignored_and_rewritten(tmp_path, damage, reads):
    sweep = make_sweep(tmp_path, runs=1, steps=20)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(sweep, jobs=1, cache=cache)
    stored = entries(cache)
    assert [p.parent.parent.name for p in stored] == ["files", "runs"]
    for entry in stored:
        _damage(entry, damage)
    reads.clear()
    logs = tanalyze.load(sweep, jobs=1, cache=cache)
    assert reads == [("run00", 0)]
    assert_same_logs(logs, fresh(sweep))
    file_entry = read_entry(stored[0]).header
    assert file_entry["key"]["path"] == os.path.realpath(event_file(sweep / "lr0" / "run00"))
    reads.clear()
    tanalyze.load(sweep, jobs=1, cache=cache)
    assert reads == []  # rewritten and valid again


def test_a_corrupt_run_entry_falls_back_to_the_file_entries(tmp_path, reads):
    sweep = make_sweep(tmp_path, runs=1, steps=20)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(sweep, jobs=1, cache=cache)
    _damage(entries(cache)[1], "garbage")
    reads.clear()
    logs = tanalyze.load(sweep, jobs=1, cache=cache)
    assert reads == []  # served from the event file's entry: nothing parsed
    assert_same_logs(logs, fresh(sweep))


def test_whole_file_readers_are_cached_per_run_and_read_again_on_any_change(tmp_path):
    shutil.copytree(SAMPLE_RUNS / "overfit_lightning", tmp_path / "lightning_logs", dirs_exist_ok=True)
    metrics = next((tmp_path / "lightning_logs").rglob("metrics.csv"))
    cache = Cache(str(tmp_path / "c"))
    first = tanalyze.load(tmp_path / "lightning_logs", jobs=1, cache=cache)
    assert_same_logs(first, fresh(tmp_path / "lightning_logs"))
    assert any(p.parent.parent.name == "runs" for p in entries(cache))
    with open(metrics, "a", encoding="utf-8") as handle:  # a row appended
        header = metrics.read_text().splitlines()[0].split(",")
        handle.write(",".join("999" if name == "step" else "0.5" if "loss" in name else "" for name in header) + "\n")
    changed = tanalyze.load(tmp_path / "lightning_logs", jobs=1, cache=cache)
    assert changed.scalars["step"].max() == 999
    assert_same_logs(changed, fresh(tmp_path / "lightning_logs"))


def test_results_json_cannot_keep_exactly_are_not_cached():
    with pytest.raises(Uncacheable):
        encode_runs([RunData(hparams={"betas": (0.9, 0.999)})])
    with pytest.raises(Uncacheable):
        encode_runs([RunData(hparams={"when": __import__("datetime").date(2024, 1, 1)})])
    arrays, body = encode_runs([RunData(hparams={"betas": [0.9, 0.999], "nested": {"a": None}})])
    assert body["runs"][0]["hparams"] == {"betas": [0.9, 0.999], "nested": {"a": None}}


def test_concurrent_writers_never_leave_a_partial_entry(tmp_path):
    path = tmp_path / "entry.arrays"
    arrays = {"x": np.arange(200_000, dtype=np.int64)}
    seen: list[object] = []

    def write(seed: int) -> None:
        for _ in range(20):
            write_entry(path, arrays, {"seed": seed})

    writers = [threading.Thread(target=write, args=(i,)) for i in range(3)]
    for thread in writers:
        thread.start()
    while any(t.is_alive() for t in writers):
        found = read_entry(path)
        if found is not None:
            seen.append(found.header["seed"])
            assert np.array_equal(found.arrays["x"], arrays["x"])
    for thread in writers:
        thread.join()
    assert read_entry(path) is not None
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_rows_added_at_the_end_are_stored_as_a_frame_and_read_back_whole(tmp_path):
    path = tmp_path / "e.arrays"
    write_entry(path, {"x": np.arange(100, dtype=np.int64), "v": np.linspace(0, 1, 100)}, {"n": 1})
    first = read_entry(path)
    grown = {"x": np.arange(130, dtype=np.int64), "v": np.concatenate([first.arrays["v"], [np.nan] * 30])}
    assert append_entry(path, first, grown, {"n": 2})
    second = read_entry(path)
    assert second.frames == 2 and second.header == {"n": 2} and second.size == path.stat().st_size
    assert second.arrays["x"].tolist() == list(range(130))
    assert np.array_equal(second.arrays["v"], grown["v"], equal_nan=True)
    # Rows changed rather than added, a dtype changed, an array missing: not a frame (the caller writes whole).
    changed = {"x": grown["x"][::-1].copy(), "v": grown["v"]}
    assert not append_entry(path, second, changed, {"n": 3})
    assert not append_entry(path, second, {"x": grown["x"].astype(np.float64), "v": grown["v"]}, {})
    assert not append_entry(path, second, {"x": grown["x"]}, {})
    assert read_entry(path).frames == 2  # untouched by the refusals


def test_pieces_handed_back_as_read_are_not_compared_and_others_are(tmp_path):
    path = tmp_path / "e.arrays"
    write_entry(path, {"x": np.arange(1000, dtype=np.int64)}, {})
    read = read_entry(path)
    stored = read.arrays.chunked("x")
    assert stored.dtype == np.int64 and stored.pieces[0].dtype == np.int16  # kept as stored: narrowed
    more = np.arange(1000, 1020, dtype=np.int16)
    # The very pieces read, then a new one: only the new rows are written, widened to the entry's dtype.
    assert append_entry(path, read, {"x": Chunked((*stored.pieces, more), stored.dtype)}, {"n": 2})
    again = read_entry(path)
    assert again.frames == 2 and again.arrays["x"].dtype == np.int64 and again.arrays["x"].tolist() == list(range(1020))
    assert len(again.arrays.chunked("x").pieces) == 2
    # Equal copies are compared byte by byte (and pass); changed ones are refused; so is another dtype.
    copies = tuple(piece.copy() for piece in again.arrays.chunked("x").pieces)
    assert append_entry(path, again, {"x": Chunked((*copies, np.arange(1020, 1025)), np.dtype(np.int64))}, {})
    third = read_entry(path)
    changed = (third.arrays.chunked("x").pieces[0] + 1, *third.arrays.chunked("x").pieces[1:], np.arange(1025, 1030))
    assert not append_entry(path, third, {"x": Chunked(changed, np.dtype(np.int64))}, {})
    assert not append_entry(path, third, {"x": Chunked(third.arrays.chunked("x").pieces, np.dtype(np.float64))}, {})
    assert read_entry(path).arrays["x"].tolist() == list(range(1025))


def test_stored_numbers_that_cannot_widen_exactly_to_their_dtype_make_the_entry_unreadable(tmp_path):
    path = tmp_path / "e.arrays"
    path.write_bytes(_raw_frame({"x": (np.array([0.5, 1.5]), "<i8")}, "{}", 0))  # floats claimed to be int64
    assert read_entry(path) is None
    path.write_bytes(_raw_frame({"x": (np.arange(3, dtype=np.int64), "<i2")}, "{}", 0))  # wider than its dtype
    assert read_entry(path) is None


def test_arrays_read_can_be_written_to(tmp_path):
    path = tmp_path / f"e{SUFFIX}"
    write_entry(path, {"x": np.arange(100, dtype=np.int64), "v": np.linspace(0, 1, 100)}, {})
    arrays = read_entry(path).arrays
    for name in ("x", "v"):
        arrays[name][0] = 7  # a table built on them may be edited by its user
        assert arrays[name][0] == 7


def test_a_run_read_from_the_cache_and_extended_is_held_as_stored_and_joins_widened(tmp_path):
    folder = tmp_path / "run"
    write_events(folder, steps=range(0, 100)).close()
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(folder, jobs=1, cache=cache)
    append_events(folder, tmp_path / "more", steps=range(100, 110))
    reader = get_reader("tensorboard")
    files = sorted(folder.glob("events.out.tfevents.*"))
    [run] = read_runs(reader, files, folder, cache)
    scalars = run.scalars
    assert len(scalars.chunks) == 2 and scalars.column_chunks("step")[0].dtype == np.int8  # no copy of the cached rows
    assert scalars.step.dtype == np.int64 and scalars.step.tolist() == fresh(folder).scalars["step"].tolist()
    frame = scalars.frame("run")
    assert frame["step"].dtype == np.int64 and frame["value"].dtype == np.float64
    assert_same_logs(tanalyze.load(folder, jobs=1, cache=cache), fresh(folder))


def test_an_entry_is_rewritten_whole_after_max_frames_or_when_it_would_more_than_double(tmp_path):
    path = tmp_path / "e.arrays"
    write_entry(path, {"x": np.arange(10, dtype=np.int64)}, {})
    for count in range(11, 10 + MAX_FRAMES):
        assert append_entry(path, read_entry(path), {"x": np.arange(count, dtype=np.int64)}, {})
    full = read_entry(path)
    assert full.frames == MAX_FRAMES
    assert not append_entry(path, full, {"x": np.arange(40, dtype=np.int64)}, {})
    write_entry(path, {"x": np.arange(10, dtype=np.int64)}, {})
    assert not append_entry(path, read_entry(path), {"x": np.arange(21, dtype=np.int64)}, {})


def test_frames_that_do_not_verify_make_the_entry_unreadable_never_a_mix(tmp_path):
    path = tmp_path / "e.arrays"
    write_entry(path, {"x": np.arange(100, dtype=np.int64)}, {"n": 1})
    base = read_entry(path)
    grown = {"x": np.arange(110, dtype=np.int64)}
    assert append_entry(path, base, grown, {"n": 2})
    whole = path.read_bytes()
    # A second writer that read the same entry finds it changed and does not append.
    assert not append_entry(path, base, {"x": np.arange(120, dtype=np.int64)}, {"n": 3})
    # One that appended anyway (its frame lands after the other's, claiming the old end) is caught on reading.
    path.write_bytes(whole + _raw_frame({"x": (np.arange(110, 120), "<i8")}, '{"n": 3}', base.size))
    assert read_entry(path) is None
    # A frame cut short (a crash while appending), or one byte of it changed, fails its length or CRC.
    path.write_bytes(whole[:-5])
    assert read_entry(path) is None
    damaged = bytearray(whole)
    damaged[-3] ^= 1
    path.write_bytes(bytes(damaged))
    assert read_entry(path) is None
    # A frame whose numbers would be read back as another dtype than the entry's is refused too.
    path.write_bytes(whole[:base.size] + _raw_frame({"x": (np.arange(100, 110.0), "<f8")}, "{}", base.size))
    assert read_entry(path) is None
    path.write_bytes(whole)
    assert read_entry(path).arrays["x"].tolist() == list(range(110))


def test_continued_appends_add_frames_to_the_run_entry_and_equal_a_fresh_read(tmp_path):
    folder = tmp_path / "run"
    write_events(folder, steps=range(0, 50)).close()
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(folder, jobs=1, cache=cache)
    [run_entry] = [p for p in entries(cache) if p.parent.parent.name == "runs"]
    sizes = [run_entry.stat().st_size]
    for index in range(3):
        append_events(folder, tmp_path / f"more{index}", steps=range(50 + 5 * index, 55 + 5 * index))
        assert_same_logs(tanalyze.load(folder, jobs=1, cache=cache), fresh(folder))
        sizes.append(run_entry.stat().st_size)
    assert read_entry(run_entry).frames == 4
    assert all(0 < b - a < sizes[0] / 2 for a, b in zip(sizes, sizes[1:], strict=False))  # each load adds a small frame
    assert_same_logs(tanalyze.load(folder, jobs=1, cache=cache), fresh(folder))


def test_entries_hold_no_pickle(tmp_path):
    path = tmp_path / "e.arrays"
    with pytest.raises(TypeError, match="1-d numbers"):
        write_entry(path, {"objects": np.array([object()], dtype=object)}, {})
    # Frames that verify but claim object arrays (stored as such, or to be read back as such) are refused.
    for arrays in ({"x": (np.array([object()], dtype=object), "|O8")}, {"x": (np.arange(3), "|O8")}):
        path.write_bytes(_raw_frame(arrays, "{}", 0))
        assert read_entry(path) is None
    path.write_bytes(_raw_frame({"x": (np.arange(3), "<i8")}, "{}", 0))
    assert read_entry(path).arrays["x"].tolist() == [0, 1, 2]


def test_cache_folder_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("TANALYZE_CACHE_DIR", str(tmp_path / "a"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("TANALYZE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "tanalyze"
    assert resolve_cache(False) is None
    assert resolve_cache(tmp_path / "b").root == tmp_path / "b" / LAYOUT
    with pytest.raises(TypeError):  # one storage: a second (Parquet) was measured and removed
        Cache(str(tmp_path), "parquet")


def test_cli_cache_dir_and_no_cache(tmp_path, capsys):
    from tanalyze.cli import main

    sweep = make_sweep(tmp_path, runs=2, steps=10)
    cache_dir = tmp_path / "cli-cache"
    assert main(["runs", str(sweep), "--cache-dir", str(cache_dir), "-q"]) == 0
    assert len(entries(Cache(str(cache_dir)))) == 2 * 2  # per event file and per run
    assert (cache_dir / LAYOUT / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    shutil.rmtree(cache_dir)
    assert main(["runs", str(sweep), "--cache-dir", str(cache_dir), "--no-cache", "-q"]) == 0
    assert not cache_dir.exists()
    assert "2 run(s)" in capsys.readouterr().out


def _same_part(a, b) -> None:
    assert a.end == b.end and a.state == b.state and a.tail == b.tail
    assert a.columns.keys() == b.columns.keys()
    for key in a.columns:
        assert a.columns[key].dtype == b.columns[key].dtype
        np.testing.assert_array_equal(a.columns[key], b.columns[key], err_msg=key)
    for key in a.meta:
        if key == "histograms":
            assert len(a.meta[key]) == len(b.meta[key])
            for x, y in zip(a.meta[key], b.meta[key], strict=True):
                assert x.keys() == y.keys()
                for field in x:
                    np.testing.assert_array_equal(x[field], y[field])
        else:
            assert a.meta[key] == b.meta[key], key


def test_resuming_real_event_files_at_any_cut_equals_reading_them_whole(real_logs, tmp_path):
    """Every real event file (damaged ones, TF2 tensors, histograms, hparams included), cut at five places
    as if still being written, then read on from where the first read stopped."""
    reader = TensorBoardReader()
    files = sorted((real_logs / "tfevents").rglob("*tfevents*"))
    assert len(files) >= 10
    copy = tmp_path / "events.out.tfevents.1.host.1.0"
    for path in files:
        data = path.read_bytes()
        whole = reader.read_part(path)
        for cut in np.linspace(0, len(data), 7).astype(int)[1:-1].tolist():
            copy.write_bytes(data[:cut])
            first = reader.read_part(copy)
            copy.write_bytes(data)
            _same_part(reader.join_parts(first, reader.read_part(copy, first.end, first.state)), whole)


def test_cli_cache_info_and_clear(tmp_path, capsys):
    from tanalyze.cli import main

    sweep = make_sweep(tmp_path, runs=2, steps=10)
    cache_dir = tmp_path / "cli-cache"
    assert main(["runs", str(sweep), "--cache-dir", str(cache_dir), "-q"]) == 0
    capsys.readouterr()
    assert main(["cache", "info", "--cache-dir", str(cache_dir)]) == 0
    assert f"{cache_dir / LAYOUT}: 5 entries" in capsys.readouterr().out  # 2 files, 2 runs, the folder's head tags
    assert main(["cache", "clear", "--cache-dir", str(cache_dir)]) == 0
    assert "removed 5 cache entries" in capsys.readouterr().err
    assert not (cache_dir / LAYOUT).exists()
    (tmp_path / "not-a-cache" / LAYOUT).mkdir(parents=True)
    assert Cache(str(tmp_path / "not-a-cache")).clear() == 0 and (tmp_path / "not-a-cache" / LAYOUT).exists()


def test_a_sweep_whose_logs_grew_is_read_on_in_one_pass_and_equals_a_fresh_read(tmp_path, monkeypatch):
    sweep = make_sweep(tmp_path, runs=8, steps=30)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(sweep, jobs=1, cache=cache)
    folders = sorted(p.parent for p in sweep.rglob("events.out.tfevents.*"))
    for index, folder in enumerate(folders[:-1]):
        append_events(folder, tmp_path / f"more{index}", steps=range(30, 33), seed=index)
    rewritten = event_file(folders[-1])
    rewritten.write_bytes(rewritten.read_bytes()[:-200])  # cut: not a growth, the run is read whole
    batches = []
    original = TensorBoardReader.read_parts

    def spy(self, requests):
        batches.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(TensorBoardReader, "read_parts", spy)
    logs = tanalyze.load(sweep, jobs=1, cache=cache)
    assert batches == [7]  # the seven runs that grew, read on together
    assert_same_logs(logs, fresh(sweep))


def test_a_bug_while_extending_one_run_is_reported_with_its_name_and_the_others_are_read(tmp_path, monkeypatch):
    sweep = make_sweep(tmp_path, runs=4, steps=20)
    cache = Cache(str(tmp_path / "c"))
    tanalyze.load(sweep, jobs=1, cache=cache)
    for index, folder in enumerate(sorted(p.parent for p in sweep.rglob("events.out.tfevents.*"))):
        append_events(folder, tmp_path / f"more{index}", steps=range(20, 22), seed=index)
    original = TensorBoardReader.extend

    def buggy(self, files, runs, tails):
        if "run02" in str(files[0]):
            raise ZeroDivisionError("simulated bug")
        return original(self, files, runs, tails)

    monkeypatch.setattr(TensorBoardReader, "extend", buggy)
    logs = tanalyze.load(sweep, jobs=1, cache=cache)
    [broken] = [name for name, info in logs.runs.items() if info.warnings]
    assert broken.endswith("run02") and "ZeroDivisionError: simulated bug" in logs.runs[broken].warnings[0].message
    monkeypatch.undo()
    expected = fresh(sweep)
    assert logs.scalars[logs.scalars["run"] != broken]["value"].tolist() == \
        expected.scalars[expected.scalars["run"] != broken]["value"].tolist()
