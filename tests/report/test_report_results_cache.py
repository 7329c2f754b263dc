"""The results cache: a report over unchanged runs diagnoses none of them again; a run that grew is
re-analysed, alone; another analysis (roles, version) or a damaged entry means analysing again."""

from __future__ import annotations

import importlib
import json
import shutil

import pytest

from tanalyze.cache import Cache
from tanalyze.report import Report, report_dict, report_paths
from tanalyze.report.jsonout import run_digest
from tests.conftest import SAMPLE_RUNS

DIAGNOSE = importlib.import_module("tanalyze.diagnose")
PIPELINE = importlib.import_module("tanalyze.report.pipeline")  # the module (``tanalyze.diagnose`` is the function)
RUNS = ("normal_nanogpt", "diverged_nanogpt", "unstable_nanogpt")


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    for name in RUNS:
        source = SAMPLE_RUNS / name
        if not source.is_dir():
            pytest.fail(f"{source} is missing from the checkout")
        shutil.copytree(source, root / name)
    return root


@pytest.fixture
def calls(monkeypatch):
    """The names of the runs diagnose_run was called for (the report pipeline imports it when it runs)."""
    seen: list[str] = []
    real = DIAGNOSE.diagnose_run

    def counting(frame, **kwargs):
        seen.append(kwargs["run"])
        return real(frame, **kwargs)

    monkeypatch.setattr(DIAGNOSE, "diagnose_run", counting)
    return seen


def _report(root, cache, **options):
    data = report_paths([root], jobs=1, cache=cache, **options)
    out = report_dict(data)
    out.pop("generated_at")
    return data, out


def test_unchanged_runs_are_not_diagnosed_again(runs, tmp_path, calls):
    cache = Cache(str(tmp_path / "cache"))
    _, cold = _report(runs, cache)
    assert sorted(calls) == sorted(RUNS)
    calls.clear()
    _, warm = _report(runs, cache)
    assert calls == []
    assert json.dumps(warm, sort_keys=True) == json.dumps(cold, sort_keys=True)  # the same report, verdicts and all


@pytest.fixture
def reads(monkeypatch):
    """The names of the runs whose scalars the report pipeline read."""
    seen: list[str] = []
    real = PIPELINE.read_run

    def counting(spec, **kwargs):
        seen.append(spec.name)
        return real(spec, **kwargs)

    monkeypatch.setattr(PIPELINE, "read_run", counting)
    return seen


def _page(data):
    from tanalyze.report.html import render_html

    return render_html(data, embed_json=None, jobs=1).replace(data.generated_at, "")


def test_a_warm_report_reads_no_scalars_and_draws_the_same_page(runs, tmp_path, calls, reads):
    cache = Cache(str(tmp_path / "cache"))
    cold_data, cold = _report(runs, cache)
    assert sorted(reads) == sorted(RUNS)
    assert all(run.figures is not None for run in cold_data.runs)  # static figures drawn where read
    reads.clear()
    calls.clear()
    warm_data, warm = _report(runs, cache)
    assert reads == [] and calls == []
    assert json.dumps(warm, sort_keys=True) == json.dumps(cold, sort_keys=True)
    for before, after in zip(cold_data.runs, warm_data.runs, strict=True):
        assert after.figures == before.figures  # the static SVG served from the cache
        assert after.summary == before.summary and after.tags == before.tags and after.points == before.points
        assert after.info == before.info
    assert _page(warm_data) == _page(cold_data)
    texts = []
    for data, name in ((cold_data, "cold.json"), (warm_data, "warm.json")):
        Report(data).save_json(tmp_path / name)
        texts.append((tmp_path / name).read_text(encoding="utf-8").replace(data.generated_at, ""))
    assert texts[0] == texts[1]
    report = report_dict(warm_data)  # each run's JSON text came with its view, for this very content
    assert [run.json[0] for run in warm_data.runs] == [run_digest(d) for d in report["runs"]]
    reads.clear()
    _report(runs, cache, smoothing=0.3)  # other figures: drawn again from the cached curves, still not read
    assert reads == [] and calls == []


def test_a_run_that_grew_is_the_only_one_reanalysed(runs, tmp_path, calls, reads):
    cache = Cache(str(tmp_path / "cache"))
    before, _ = _report(runs, cache)
    calls.clear()
    with open(runs / "normal_nanogpt" / "train.log", "a", encoding="utf-8") as log:
        for i in range(510, 560, 10):
            log.write(f"iter {i}: loss 0.4000, time 15.00ms, mfu 54.00%\n")
    reads.clear()
    after, _ = _report(runs, cache)
    assert calls == ["normal_nanogpt"] and reads == ["normal_nanogpt"]
    grown = {r.name: r for r in after.runs}["normal_nanogpt"]
    old = {r.name: r for r in before.runs}["normal_nanogpt"]
    assert grown.summary["last_step"] == 550 and old.summary["last_step"] == 500
    assert grown.diagnosis["roles"] == old.diagnosis["roles"]
    calls.clear()
    _report(runs, cache)
    assert calls == []  # and its new results are cached in turn


def test_other_roles_or_analysis_version_mean_analysing_again(runs, tmp_path, calls, monkeypatch):
    cache = Cache(str(tmp_path / "cache"))
    _report(runs, cache)
    calls.clear()
    _report(runs, cache, roles={"train_loss": "train/loss"})
    assert sorted(calls) == sorted(RUNS)
    calls.clear()
    monkeypatch.setattr(DIAGNOSE, "ANALYSIS_VERSION", "test-next")
    _report(runs, cache)
    assert sorted(calls) == sorted(RUNS)


def test_a_damaged_entry_is_not_cached_and_no_cache_means_always(runs, tmp_path, calls):
    cache = Cache(str(tmp_path / "cache"))
    _report(runs, cache)
    entries = list((tmp_path / "cache" / "v1" / "results").rglob("*.arrays"))
    assert len(entries) == len(RUNS)
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:20])
    calls.clear()
    _report(runs, cache)
    assert sorted(calls) == sorted(RUNS)
    calls.clear()
    _report(runs, False)
    assert sorted(calls) == sorted(RUNS)


def test_a_checkpoint_deleted_means_analysing_again(tmp_path, calls):
    from pathlib import Path

    fixture = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "lightning_topk"
    root = tmp_path / "runs"
    shutil.copytree(fixture, root / "lightning_topk")
    cache = Cache(str(tmp_path / "cache"))
    _, cold = _report(root, cache)
    assert len(cold["runs"][0]["checkpoints"]["checkpoints"]) == 3
    calls.clear()
    _, warm = _report(root, cache)
    assert calls == []
    best = root / "lightning_topk" / "lightning_logs" / "version_0" / "checkpoints" / "epoch=29-step=60-val_loss=0.1044.ckpt"
    best.unlink()  # the logs are unchanged; only the checkpoints folder is
    _, after = _report(root, cache)
    assert calls == ["lightning_topk/lightning_logs/version_0"]
    c = after["runs"][0]["checkpoints"]
    assert len(c["checkpoints"]) == 2 and c["best_on_disk"] is False
    assert [f["code"] for f in c["findings"]] == ["best_checkpoint_missing"]
