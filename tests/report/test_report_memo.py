"""The report's cross-run parts kept by a digest of their inputs: a warm report draws no compare chart and fits
no importance forest again, gives the same page, and a run that changed makes them anew."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tanalyze.analysis.sweep import analyse_sweep, experiment_dict
from tanalyze.cache import Cache
from tanalyze.cache.memo import Digest, load_memo, save_memo
from tanalyze.report import report_paths
from tanalyze.report.figures import FigureMaker
from tanalyze.report.html import render_html
from tanalyze.report.sweep import importance_of
from tests.scale_helpers import append_events, make_sweep
from tests.sweep_helpers import synthetic_runs

SWEEP = importlib.import_module("tanalyze.report.sweep")


def test_digest_tells_apart_values_dtypes_and_order():
    a = np.arange(5, dtype=np.int64)
    same = Digest().add("x", a).hexdigest()
    assert Digest().add("x", a.copy()).hexdigest() == same
    assert Digest().add("x", a.astype(np.int32)).hexdigest() != same
    assert Digest().add("x", a[::-1]).hexdigest() != same
    assert Digest().add(a, "x").hexdigest() != same
    assert Digest().add("x", np.arange(5.0)).hexdigest() != same


def test_memo_round_trip_and_no_cache(tmp_path):
    cache = Cache(str(tmp_path / "cache"))
    assert load_memo(cache, "what", "d1") is None
    assert save_memo(cache, "what", "d1", {"v": [1, None, "x"]})
    assert load_memo(cache, "what", "d1") == {"v": [1, None, "x"]}
    assert load_memo(cache, "other", "d1") is None and load_memo(cache, "what", "d2") is None
    assert not save_memo(None, "what", "d1", 1) and load_memo(None, "what", "d1") is None


@pytest.fixture
def forests(monkeypatch):
    """How many times the importance forests were fitted."""
    seen = []
    real = SWEEP.hparam_importance

    def counting(*args, **kwargs):
        seen.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(SWEEP, "hparam_importance", counting)
    return seen


def test_importances_come_back_from_the_cache_equal(tmp_path, forests):
    runs = synthetic_runs(0, seeds=2)
    plain = [experiment_dict(e) for e in analyse_sweep(runs).experiments]
    cache = Cache(str(tmp_path / "cache"))
    first = [experiment_dict(e) for e in analyse_sweep(runs, importance=importance_of(cache)).experiments]
    fitted = len(forests)
    assert fitted >= 1
    again = [experiment_dict(e) for e in analyse_sweep(runs, importance=importance_of(cache)).experiments]
    assert len(forests) == fitted  # answered from the cache
    assert first == plain and again == plain
    changed = synthetic_runs(1, seeds=2)  # other numbers: fitted anew
    analyse_sweep(changed, importance=importance_of(cache))
    assert len(forests) > fitted


@pytest.fixture
def compares(monkeypatch):
    """How many compare charts were drawn."""
    seen = []
    real = FigureMaker.compare

    def counting(self, *args, **kwargs):
        seen.append(args[1])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(FigureMaker, "compare", counting)
    return seen


def _page(data) -> str:
    return render_html(data, embed_json=None, jobs=1).replace(data.generated_at, "")


def test_a_warm_report_draws_no_compare_chart_and_the_same_page(tmp_path, compares):
    root = make_sweep(tmp_path, runs=8, steps=40)
    cache = Cache(str(tmp_path / "cache"))
    cold = _page(report_paths([root], jobs=1, cache=cache))
    drawn = len(compares)
    assert drawn >= 1
    warm = _page(report_paths([root], jobs=1, cache=cache))
    assert len(compares) == drawn
    assert warm == cold
    assert _page(report_paths([root], jobs=1, cache=False)) == cold  # the same as without any cache

    append_events(root / "lr1" / "run01", tmp_path / "scratch", steps=range(40, 50))
    drawn = len(compares)
    grown = _page(report_paths([root], jobs=1, cache=cache))
    assert len(compares) > drawn  # a run's curve changed: its charts are drawn again
    assert grown == _page(report_paths([root], jobs=1, cache=False))
