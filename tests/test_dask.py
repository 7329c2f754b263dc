"""The per-run pipeline on a Dask cluster gives what it gives in one process."""

from __future__ import annotations

import pytest

import tanalyze
from tanalyze.pipeline import diagnose_path
from tests.conftest import SAMPLE_RUNS
from tests.scale_helpers import assert_same_logs, make_sweep

distributed = pytest.importorskip("distributed", reason="Dask is optional: pip install 'tanalyze[dask]'")


@pytest.fixture(scope="module")
def client():
    try:
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0")
    except (RuntimeError, TimeoutError, OSError) as exc:  # the machine, not our pipeline: say so and move on
        pytest.skip(f"could not start a local Dask cluster of 2 workers: {exc}")
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def test_load_on_a_cluster_equals_load_in_one_process(client):
    assert_same_logs(tanalyze.load(SAMPLE_RUNS, client=client, cache=False), tanalyze.load(SAMPLE_RUNS, jobs=1, cache=False))


def test_diagnoses_on_a_cluster_equal_the_serial_ones(client, tmp_path):
    sweep = make_sweep(tmp_path, runs=6, steps=40)
    on_cluster = diagnose_path(sweep, client=client, cache=tmp_path / "cache")
    serial = diagnose_path(sweep, jobs=1, cache=False)
    assert list(on_cluster) == list(serial) and len(serial) == 6
    assert [d.to_dict() for d in on_cluster.values()] == [d.to_dict() for d in serial.values()]
    assert any((tmp_path / "cache").rglob("*.arrays"))  # the workers filled the cache


def test_progress_reaches_every_run_on_a_cluster(client, tmp_path):
    sweep = make_sweep(tmp_path, runs=5, steps=10)
    calls = []
    tanalyze.load(sweep, client=client, cache=False, progress=lambda d, t, n: calls.append((d, t)))
    assert calls == [(i, 5) for i in range(1, 6)]


def test_the_collector_runs_while_a_cluster_reads_and_pauses_while_this_process_reads(client, tmp_path):
    """The client's event loop lives in this process: its reference cycles are collected as it runs."""
    import gc

    sweep = make_sweep(tmp_path, runs=3, steps=10)
    seen = []
    tanalyze.load(sweep, client=client, cache=False, progress=lambda d, t, n: seen.append(gc.isenabled()))
    tanalyze.load(sweep, jobs=1, cache=False, progress=lambda d, t, n: seen.append(gc.isenabled()))
    assert seen == [True] * 3 + [False] * 3 and gc.isenabled()
