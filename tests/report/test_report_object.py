"""One report object: ``tanalyze.report(path_or_logs)`` gives a :class:`Report` saved as HTML or JSON and shown in
Jupyter; the render functions of the previous release still work, with a DeprecationWarning."""

from __future__ import annotations

import json
import sys

import pytest

import tanalyze
from tanalyze.errors import InputError
from tanalyze.report import Report, build_report, report_dict
from tests.conftest import SAMPLE_RUNS
from tests.report.fakes import three_runs
from tests.report.htmlcheck import parse

RUN = SAMPLE_RUNS / "diverged_tensorboard"


def _no_stamp(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "generated_at"}


def test_a_path_gives_a_report_saved_as_html_and_json(tmp_path):
    report = tanalyze.report(RUN, jobs=1, cache=False, title="Diverged")
    assert isinstance(report, Report) and isinstance(report, tanalyze.Report)
    assert repr(report) == "<Report 'Diverged': 1 run>"
    assert [run.verdict for run in report.data.runs] == ["diverged"]
    html_size = report.save_html(tmp_path / "r.html")
    json_size = report.save_json(tmp_path / "r.json")
    assert html_size == (tmp_path / "r.html").stat().st_size and json_size == (tmp_path / "r.json").stat().st_size
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved == json.loads(report.to_json()) == json.loads(json.dumps(report.to_dict()))
    assert saved["runs"][0]["verdict"]["label"] == "diverged"
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "Diverged" in page
    # the same report from the Logs, diagnosed here
    from_logs = tanalyze.report(tanalyze.load(RUN, cache=False), title="Diverged")
    assert _no_stamp(from_logs.to_dict())["runs"] == _no_stamp(saved)["runs"]


def test_jupyter_shows_the_fragment_and_a_single_run_its_section():
    logs, diags = three_runs()
    report = tanalyze.report(logs, diags)
    shown = report._repr_html_()
    assert shown == report.to_html(fragment=True) and "<script" not in shown and "<!DOCTYPE" not in shown
    one = tanalyze.report(diags["overfitting-run"], scalars=logs)
    doc = parse(one._repr_html_())
    assert len(doc.find_all("section")) == 1 and "Keep the checkpoint of step 6,000." in doc.text_content()


def test_bad_sources_say_what_is_wrong(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        tanalyze.report(tmp_path / "missing")
    with pytest.raises(TypeError, match="not int"):
        tanalyze.report(3)


def test_the_package_stays_callable_after_its_modules_are_imported():
    import tanalyze.report.html  # noqa: F401  (importing a submodule must not replace tanalyze.report)

    assert callable(tanalyze.report) and tanalyze.report is sys.modules["tanalyze.report"]
    logs, diags = three_runs()
    assert isinstance(tanalyze.report(logs, diags), Report)


def test_old_render_functions_warn_and_give_the_same_output(tmp_path):
    from tanalyze import report as package

    logs, diags = three_runs()
    data = build_report(logs, diags, generated_at="2024-05-01T12:00:00Z")
    with pytest.warns(DeprecationWarning, match="render_run_html is deprecated"):
        old = package.render_run_html(diags["overfitting-run"], logs)
    assert old == tanalyze.report(diags["overfitting-run"], scalars=logs).to_html(fragment=True)
    with pytest.warns(DeprecationWarning, match="render_diagnoses_html is deprecated"):
        old = package.render_diagnoses_html(diags, sections=False)
    assert old == tanalyze.report(diags, sections=False).to_html(fragment=True)
    with pytest.warns(DeprecationWarning, match="render_report_html is deprecated"):
        old = package.render_report_html(data, fragment=True)
    assert old == Report(data).to_html(fragment=True)
    with pytest.warns(DeprecationWarning, match="write_report is deprecated"):
        sizes = package.write_report(data, tmp_path / "old.html", tmp_path / "old.json")
    new = Report(data).save(tmp_path / "new.html", tmp_path / "new.json")
    assert sizes == new
    assert (tmp_path / "old.html").read_bytes() == (tmp_path / "new.html").read_bytes()
    assert json.loads((tmp_path / "old.json").read_text()) == report_dict(data)
