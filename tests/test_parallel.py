"""Reading and diagnosing runs side by side: the same results as one by one, failures kept with their run."""

from __future__ import annotations

import os
from functools import partial

import pytest

import tanalyze
from tanalyze.discover import discover
from tanalyze.parallel import Failure, map_runs, resolve_jobs
from tanalyze.pipeline import diagnose_path, read_task, summarize_path
from tests.conftest import SAMPLE_RUNS
from tests.scale_helpers import assert_same_logs, make_sweep

BAD_RUN = "lr1/run04"


def read_or_fail(spec, *, cache=None):
    """A reader with a bug for one run (module level: it runs in worker processes)."""
    if spec.name == BAD_RUN:
        raise ZeroDivisionError("simulated reader bug")
    return read_task(spec, cache=cache)


def die_on_bad_run(spec):
    """A worker process that dies (as under the OOM killer) on one run."""
    if spec.name == BAD_RUN:
        os._exit(9)
    return spec.name


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return make_sweep(tmp_path_factory.mktemp("parallel"), runs=10, steps=60)


def test_jobs_2_equals_jobs_1_on_sample_runs():
    serial = tanalyze.load(SAMPLE_RUNS, jobs=1, cache=False)
    parallel = tanalyze.load(SAMPLE_RUNS, jobs=2, cache=False)
    assert len(serial.runs) >= 10 and len(serial.scalars) > 10_000
    assert_same_logs(serial, parallel)


def test_jobs_2_equals_jobs_1_on_generated_runs(sweep):
    serial = tanalyze.load(sweep, jobs=1, cache=False)
    parallel = tanalyze.load(sweep, jobs=2, cache=False)
    assert len(serial.runs) == 10 and len(serial.scalars) == 10 * 60 * 3
    assert list(serial.runs) == sorted(serial.runs)  # discovery order, whatever order workers finished in
    assert_same_logs(serial, parallel)
    run = serial.scalars_of("lr2/run05")
    assert run["step"].tolist()[:3] == [0, 0, 0] and run["step"].iloc[-1] == 59


def test_diagnoses_are_the_same_with_jobs_2_and_as_diagnose_of_load(sweep):
    serial = diagnose_path(sweep, jobs=1, cache=False)
    parallel = diagnose_path(sweep, jobs=2, cache=False)
    whole = tanalyze.diagnose(tanalyze.load(sweep, jobs=1, cache=False))
    assert list(serial) == list(parallel) == list(whole) and len(serial) == 10
    for name in serial:
        assert serial[name].to_dict() == parallel[name].to_dict() == whole[name].to_dict(), name
    assert serial["lr0/run00"].roles == {"train_loss": "train/loss", "val_loss": "val/loss", "learning_rate": "train/lr"}


def test_diagnoses_of_sample_runs_match_diagnose_of_load():
    folder = SAMPLE_RUNS / "diverged_tensorboard"
    (name, piped), = diagnose_path(folder, jobs=1, cache=False).items()
    assert piped.to_dict() == tanalyze.diagnose(tanalyze.load(folder, cache=False))[name].to_dict()
    assert piped.verdict.label == "diverged"


def test_check_summaries_are_the_same_with_jobs_2(sweep):
    one = [s.to_dict() for s in summarize_path(sweep, jobs=1, cache=False)]
    two = [s.to_dict() for s in summarize_path(sweep, jobs=2, cache=False)]
    assert one == two and len(one) == 10


def test_a_reader_bug_in_a_worker_is_reported_with_the_run_name_and_the_others_are_read(sweep):
    specs = discover(sweep).runs
    results = map_runs(read_or_fail, specs, [s.name for s in specs], jobs=2, chunk_size=3)
    failures = [r for r in results if isinstance(r, Failure)]
    assert [f.name for f in failures] == [BAD_RUN]
    assert "ZeroDivisionError: simulated reader bug" in failures[0].error
    assert "test_parallel.py" in failures[0].error  # where it happened
    assert sum(len(r[0].scalars) for r in results if not isinstance(r, Failure)) == 9 * 60 * 3


def test_a_reader_bug_becomes_a_warning_on_its_run(sweep, monkeypatch):
    from tanalyze.readers.tensorboard.reader import TensorBoardReader

    original = TensorBoardReader.combine

    def combine(self, files, parts):
        if BAD_RUN in str(files[0]):
            raise KeyError("simulated")
        return original(self, files, parts)

    monkeypatch.setattr(TensorBoardReader, "combine", combine)
    logs = tanalyze.load(sweep, jobs=1, cache=False)
    assert len(logs.runs) == 10 and len(logs.scalars) == 9 * 60 * 3
    (warning,) = logs.runs[BAD_RUN].warnings
    assert "could not be read: KeyError: 'simulated'" in warning.message and warning.file.endswith("run04")


def test_a_worker_that_dies_costs_its_run_only(sweep):
    specs = discover(sweep).runs
    results = map_runs(die_on_bad_run, specs, [s.name for s in specs], jobs=2)
    assert [r.name for r in results if isinstance(r, Failure)] == [BAD_RUN]
    assert "died twice" in next(r for r in results if isinstance(r, Failure)).error
    assert [r for r in results if not isinstance(r, Failure)] == [s.name for s in specs if s.name != BAD_RUN]


def test_a_chunk_a_broken_pool_refuses_is_run_by_the_next_pool(monkeypatch):
    """A worker's death breaks the pool at once: a chunk submitted after it is refused (BrokenProcessPool from
    ``submit``), and must be run by the next pool, not lost (it was, under load: its results stayed None)."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from tanalyze import parallel

    class BreaksAtSecondSubmit:
        """A pool whose first task dies with its worker; the pool is broken from then on."""

        pools = 0

        def __init__(self, **_):
            type(self).pools += 1
            self.first_pool = type(self).pools == 1
            self.submitted = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, *args):
            self.submitted += 1
            future = Future()
            if self.first_pool and self.submitted == 1:
                future.set_exception(BrokenProcessPool("a worker died"))
            elif self.first_pool:
                raise BrokenProcessPool("a worker died")
            else:
                future.set_result(fn(*args))
            return future

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", BreaksAtSecondSubmit)
    names = [f"run{i}" for i in range(6)]
    results = parallel.map_runs(str.upper, names, names, jobs=2, chunk_size=2)
    assert results == [name.upper() for name in names]


def test_progress_is_called_once_per_run_with_increasing_counts(sweep):
    calls = []
    tanalyze.load(sweep, jobs=2, cache=False, progress=lambda done, total, name: calls.append((done, total, name)))
    assert [c[0] for c in calls] == list(range(1, 11)) and {c[1] for c in calls} == {10}
    assert sorted(c[2] for c in calls) == sorted(s.name for s in discover(sweep).runs)


def test_jobs_validation_and_automatic_choice():
    assert resolve_jobs(1, 1000) == 1
    assert resolve_jobs(None, 3) == 1  # a few runs: no pool
    assert resolve_jobs(None, 1000) >= 1
    with pytest.raises(ValueError, match="at least 1"):
        resolve_jobs(0, 10)


def test_cli_runs_with_jobs_and_no_cache(sweep, capsys):
    from tanalyze.cli import main

    assert main(["runs", str(sweep), "--jobs", "2", "--no-cache", "-q"]) == 0
    out = capsys.readouterr().out
    assert "10 run(s) in 1 format(s) (tensorboard), 1,800 scalar points" in out
    assert main(["runs", str(sweep), "--jobs", "0"]) == 2


def test_partial_of_a_module_function_is_what_crosses_to_workers(sweep):
    specs = discover(sweep).runs[:4]
    results = map_runs(partial(read_or_fail, cache=None), specs, [s.name for s in specs], jobs=2)
    assert [r[0].info.name for r in results] == [s.name for s in specs]


def square(x):
    if x == 3:
        raise ZeroDivisionError("simulated bug for item 3")
    return x * x


def squares_at_once(items):
    """``square``'s chunk form: a whole chunk in one call, with item 3's exception in its place."""
    if 99 in items:
        raise RuntimeError("a bug in the shared part")
    out = []
    for x in items:
        try:
            out.append(square(x))
        except ZeroDivisionError as exc:
            out.append(exc)
    return out


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_chunk_form_keeps_results_in_order_and_failures_with_their_item(jobs):
    items = list(range(150))
    results = map_runs(square, items, [f"n{i}" for i in items], jobs=jobs, many=squares_at_once, chunk_size=10)
    assert [r for i, r in enumerate(results) if i != 3] == [i * i for i in items if i != 3]
    assert isinstance(results[3], Failure) and results[3].name == "n3"
    assert results[3].error.startswith("ZeroDivisionError: simulated bug for item 3 (at test_parallel.py:")
    # A chunk the chunk form fails on as a whole is done again item by item: only item 3 fails.
    items = [*range(98), 99, *range(100, 130)]
    results = map_runs(square, items, [f"n{i}" for i in items], jobs=jobs, many=squares_at_once, chunk_size=10)
    assert sum(isinstance(r, Failure) for r in results) == 1 and results[items.index(99)] == 99 * 99


def test_progress_reaches_every_run_when_runs_are_read_in_chunks(sweep, tmp_path):
    calls = []
    tanalyze.load(sweep, jobs=1, cache=tmp_path / "cache", progress=lambda done, total, name: calls.append(done))
    assert calls == list(range(1, 11))
