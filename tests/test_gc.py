"""The cyclic collector paused while logs are read, and always restored."""

from __future__ import annotations

import gc

import pytest

from tanalyze._gc import collector_paused


def test_the_collector_is_paused_inside_and_restored_after_an_error():
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        assert not gc.isenabled()
        raise ValueError("a reader failed")
    assert gc.isenabled()


def test_nested_pauses_leave_it_to_the_outer_one_and_a_disabled_collector_disabled():
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner one does not turn it back on
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_loading_runs_leaves_the_collector_on(tmp_path):
    from tanalyze import load

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "train.log").write_text("".join(f"iter {i} | loss {1 / (i + 1):.4f}\n" for i in range(50)))
    logs = load(tmp_path, cache=False)
    assert gc.isenabled() and len(logs.scalars) == 50
