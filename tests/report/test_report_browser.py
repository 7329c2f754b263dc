"""The report in a real headless Chromium: every run with its verdict and figures, no console errors,
the sort/filter script running under the CSP, and a screenshot to look at (its path is printed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tanalyze.report import build_report, report_dict, write_report
from tanalyze.report.html import render_html
from tests.conftest import SAMPLE_RUNS
from tests.report import browser
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of
from tests.report.htmlcheck import parse


def _fixture_data():
    runs, diags = {}, {}
    for k, kind in enumerate(("normal", "overfitting", "diverged", "normal", "normal")):
        name = f"resnet-{kind}" if k < 3 else f"resnet-baseline-s{k}"
        runs[name] = (frame_for(name, curves(kind, n=2000, seed=k)), info(name, hparams={"lr": 1e-3 if k >= 3 else 10.0 ** -(k + 2), "seed": k}))
        diags[name] = diagnosis(name, kind)
    return build_report(logs_of(runs, root="runs"), diags, title="Training report: runs")


def _sample_runs_data():
    if not SAMPLE_RUNS.is_dir():
        pytest.skip("sample_runs/ is not in this checkout yet")
    from tanalyze.report import report_paths

    return report_paths([SAMPLE_RUNS])


def _check_page(page: Path, data, shot: Path) -> None:
    result = browser.load(page)
    dom = parse(result.dom)
    assert "tz js" in result.dom, "the report's script did not run under its CSP"
    errors = [line for line in result.console if "rror" in line or "Uncaught" in line or "Content Security" in line]
    assert errors == []
    rows = dom.find_all("table", id="tz-summary")[0].find_all("tr")[1:]
    assert len(rows) == len(data.runs)
    for run in data.runs:
        section = dom.find_all("section", id=run.anchor)[0]
        assert run.name in section.find_all("h2")[0].text_content()
        badge = next(e for e in section.iter() if "badge" in e.classes())
        assert f"v-{run.verdict}" in badge.classes()
        if "train_loss" in run.series or "val_loss" in run.series:
            assert section.find_all("svg"), f"no figure for {run.name}"
    browser.screenshot(page, shot, height=max(2400, 900 * len(data.runs)))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    print(f"\nscreenshot: {shot}")


def test_fixture_report_in_a_browser(tmp_path_factory):
    out = tmp_path_factory.mktemp("report-browser")
    data = _fixture_data()
    page = out / "report.html"
    page.write_text(render_html(data, embed_json=report_dict(data)), encoding="utf-8")
    _check_page(page, data, out / "report.png")


def test_sample_runs_report_in_a_browser(tmp_path_factory):
    data = _sample_runs_data()
    out = tmp_path_factory.mktemp("sample-runs-browser")
    page = out / "report.html"
    write_report(data, page, out / "report.json")
    _check_page(page, data, out / "report.png")
