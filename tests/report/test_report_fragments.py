"""Jupyter displays: Logs, Diagnoses, RunDiagnosis and CheckReport render through the report's templates,
with every name and message from the logs escaped."""

from __future__ import annotations

import pytest

import tanalyze
from tanalyze.readers import ReadWarning, Restart
from tests.conftest import SAMPLE_RUNS
from tests.report.fakes import curves, frame_for, info, logs_of
from tests.report.htmlcheck import parse

EVIL = "<script>alert('x')</script>"
NAMES = [f"run {EVIL}", f"\"onload=\"alert(1)\" {EVIL}", "<img src=x onerror=alert(1)>"]


@pytest.fixture(scope="module")
def evil():
    runs = {}
    for k, name in enumerate(NAMES):
        runs[name] = (frame_for(name, curves("diverged" if k == 0 else "normal", n=300, seed=k)),
                      info(name, warnings=(ReadWarning(EVIL, EVIL, EVIL, 2),), restarts=(Restart(10, EVIL, EVIL),)))
    logs = logs_of(runs, root=EVIL)
    diagnoses = tanalyze.diagnose(logs)
    report = tanalyze.check(logs, baseline=logs.select(NAMES[1]))
    return logs, diagnoses, report


def _displays(logs, diagnoses, report) -> dict[str, str]:
    return {
        "logs": logs._repr_html_(),
        "diagnoses": diagnoses._repr_html_(),
        "run": diagnoses[NAMES[0]]._repr_html_(),
        "check": report._repr_html_(),
    }


@pytest.mark.parametrize("which", ["logs", "diagnoses", "run", "check"])
def test_names_and_messages_from_logs_are_escaped(evil, which):
    html = _displays(*evil)[which]
    assert "<script" not in html and "<img" not in html and "onload=\"alert" not in html
    doc = parse(html)
    for element in doc.iter():
        assert not any(key.startswith("on") for key in element.attrs), (element.tag, element.attrs)
        assert element.tag not in {"script", "img", "iframe"}
    text = doc.text_content()
    assert EVIL in text  # shown verbatim, as text
    if which != "run":
        assert all(name in text for name in NAMES)


def test_logs_display_lists_runs_with_their_warnings_and_restarts(evil):
    logs = evil[0]
    doc = parse(logs._repr_html_())
    rows = doc.find_all("tr")[1:]
    assert len(rows) == 3
    cells = [c.text_content() for c in rows[0].find_all("td")]
    assert cells[1:7] == [NAMES[0], "tensorboard", str(len(logs.runs[NAMES[0]].files)), "5", "1,206", "0–2,990"]  # 4 × 300 + 6 val
    assert "warning" in cells[7] and "restart at step 10" in cells[7]


def test_check_display_shows_the_outcome_and_one_row_per_rule():
    logs = tanalyze.load(SAMPLE_RUNS / "throughput")
    report = tanalyze.check(logs.select("slow_loader"), baseline=logs.select("baseline"))
    doc = parse(report._repr_html_())
    assert doc.find_all("p")[0].text_content().split()[0] == "failed"
    rows = [[c.text_content() for c in r.find_all("td")] for r in doc.find_all("tr")[1:]]
    assert len(rows) == len(report.rules) == 10  # one row per rule, run_status, ranks and communication included
    throughput = next(r for r in rows if r[1] == "throughput")
    assert throughput[2] == "fail" and throughput[3].startswith("throughput regression: candidate median")


def test_a_run_displays_its_report_section_with_the_panels_it_kept():
    logs = tanalyze.load(SAMPLE_RUNS / "diverged_tensorboard")
    d = tanalyze.diagnose(logs)["diverged_tensorboard"]
    shown = d._repr_html_()
    assert shown == tanalyze.report(d).to_html(fragment=True)
    doc = parse(shown)
    assert len(doc.find_all("section")) == 1 and len(doc.find_all("svg")) >= 2  # losses + lr / grad-norm panels
    text = doc.text_content()
    assert "resume from a checkpoint at or before step 444" in text
    # the same section as in the report drawn from the logs themselves
    from_logs = parse(tanalyze.report(d, scalars=logs).to_html(fragment=True)).text_content()
    assert "resume from a checkpoint at or before step 444" in from_logs


def test_many_runs_show_the_summary_only(evil):
    logs, diagnoses, _ = evil
    few = parse(diagnoses._repr_html_())
    assert len([s for s in few.find_all("section") if "run" in s.classes()]) == 3
    many = tanalyze.diagnose(tanalyze.load(SAMPLE_RUNS / "throughput"))
    many = type(many)({**many, **{f"copy-{k}": v for k, v in many.items()}})
    doc = parse(many._repr_html_())
    assert not [s for s in doc.find_all("section") if "run" in s.classes()]
    assert len(doc.find_all("table")[0].find_all("tr")) == 1 + 8
    assert "8 runs' own sections" in doc.text_content()
    with_sections = parse(tanalyze.report(many, sections=True).to_html(fragment=True))
    assert len([s for s in with_sections.find_all("section") if "run" in s.classes()]) == 8
