"""The report in a real headless Chromium: every run with its verdict and figures, no console errors,
the sort/filter script running under the CSP, and a screenshot to look at (its path is printed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tanalyze.report import Report, build_report, report_dict
from tanalyze.report.html import render_html
from tests.conftest import SAMPLE_RUNS
from tests.report import browser
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of
from tests.report.htmlcheck import parse

pytestmark = pytest.mark.slow  # a notebook kernel / a real browser: `pytest -m "not slow"` skips them


def _fixture_data():
    runs, diags = {}, {}
    for k, kind in enumerate(("normal", "overfitting", "diverged", "normal", "normal")):
        name = f"resnet-{kind}" if k < 3 else f"resnet-baseline-s{k}"
        runs[name] = (frame_for(name, curves(kind, n=2000, seed=k)), info(name, hparams={"lr": 1e-3 if k >= 3 else 10.0 ** -(k + 4), "seed": k}))
        diags[name] = diagnosis(name, kind)
    return build_report(logs_of(runs, root="runs"), diags, title="Training report: runs")


def _sample_runs_data():
    if not SAMPLE_RUNS.is_dir():
        pytest.skip("sample_runs/ is not in this checkout yet")
    pytest.importorskip("tanalyze.diagnose", reason="the diagnosis is not in this checkout yet")
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
    browser.screenshot(page, shot, height=min(20_000, max(2400, 900 * len(data.runs))))  # the top of a long page
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
    Report(data).save(page, out / "report.json")
    _check_page(page, data, out / "report.png")


DRIVE = """<script>
(function () {
  var table = document.getElementById("tz-summary");
  var button = table.tHead.rows[0].cells[%d].querySelector("button.sort");
  for (var i = 0; i < %d; i++) { button.click(); }
  var order = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return r.getAttribute("data-run"); });
  document.body.setAttribute("data-order", order.join(","));
  var input = document.querySelector(".controls input");
  input.value = %s;
  input.dispatchEvent(new Event("input"));
  var shown = Array.prototype.filter.call(table.tBodies[0].rows, function (r) { return !r.hidden; })
    .map(function (r) { return r.getAttribute("data-run"); });
  document.body.setAttribute("data-shown", shown.join(","));
  var sections = Array.prototype.filter.call(document.querySelectorAll("section.run"), function (s) { return !s.hidden; })
    .map(function (s) { return s.id; });
  document.body.setAttribute("data-sections", sections.join(","));
  document.body.setAttribute("data-count", document.querySelector(".controls .count").textContent);
})();
</script>"""


def _drive(tmp_path, data, column: int, clicks: int, query: str) -> dict[str, str]:
    import json
    import re

    html = render_html(data, csp=False)  # the driver script is not in the page's CSP
    page = tmp_path / f"drive-{column}-{clicks}.html"
    page.write_text(html.replace("</body>", DRIVE % (column, clicks, json.dumps(query)) + "</body>"), encoding="utf-8")
    dom = browser.load(page).dom
    body = re.search(r"<body([^>]*)>", dom).group(1)
    return dict(re.findall(r'data-(order|shown|sections|count)="([^"]*)"', body))


def test_summary_sorts_and_filters_in_a_browser(tmp_path):
    from tests.report.fakes import three_runs

    logs, diags = three_runs()
    data = build_report(logs, diags)
    finals = {run.anchor: run.summary["train_loss"]["final"] for run in data.runs}
    ascending = sorted(finals, key=finals.get)
    state = _drive(tmp_path, data, column=4, clicks=1, query="")
    assert state["order"].split(",") == ascending
    assert state["count"] == "3 of 3 runs"
    state = _drive(tmp_path, data, column=4, clicks=2, query="diverged")
    assert state["order"].split(",") == ascending[::-1]
    assert state["shown"] == "run-3" and state["sections"] == "run-3"
    assert state["count"] == "1 of 3 runs"
    # finding codes match too, though no cell shows them
    state = _drive(tmp_path, data, column=2, clicks=1, query="diverged_nonfinite")
    assert "diverged_nonfinite" not in parse(render_html(data)).find_all("table", id="tz-summary")[0].text_content()
    assert state["shown"] == "run-3"
    assert state["order"].split(",") == ["run-3", "run-2", "run-1"]  # verdicts sorted worst first
