from pathlib import Path

import xmlschema

from tanalyze.baseline import RunSummary
from tanalyze.check_output import emit_github, format_text, github_annotations, github_summary, write_junit
from tanalyze.checks import CheckReport, RuleResult, Status

XSD = Path(__file__).parent / "fixtures" / "junit.xsd"


def report():
    return CheckReport(
        candidate="runs/cand",
        baseline="base.json",
        rules=(
            RuleResult("throughput", Status.FAIL, "median 75.1 samples/s is 24.9% slower, p=1e-9", "a<b>&\"c", value=0.751, p_value=1e-9),
            RuleResult("verdict", Status.WARN, "verdict overfitting\nsecond line", "a<b>&\"c"),
            RuleResult("validation_loss", Status.SKIP, "no baseline given", "a<b>&\"c"),
            RuleResult("divergence", Status.PASS, "no divergence", "a<b>&\"c"),
        ),
    )


def test_junit_validates_against_the_junit_schema(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(report(), path)
    xmlschema.XMLSchema(XSD).validate(path)
    text = path.read_text()
    assert 'failures="1"' in text and 'skipped="1"' in text and 'tests="4"' in text
    assert "a&lt;b&gt;&amp;" in text  # run names from logs are escaped


def test_text_summary_lists_every_rule_and_the_outcome():
    text = format_text(report())
    assert "FAIL  throughput" in text and "WARN  verdict" in text and "SKIP  validation_loss" in text
    assert text.rstrip().endswith("FAILED: 1 pass, 1 warn, 1 fail, 1 skip")


def test_a_run_every_rule_skipped_is_named_as_not_checked():
    # a launch that died before its first iteration: no loss, no status, no baseline -> every rule skips
    skipped = tuple(RuleResult(name, Status.SKIP, "no data", "work_dirs/\x1b[31mempty")
                    for name in ("nonfinite_loss", "divergence", "verdict"))
    text = format_text(CheckReport(candidate="runs", baseline=None, rules=report().rules + skipped))
    assert text.splitlines()[-2] == "FAILED: 1 pass, 1 warn, 1 fail, 4 skip"
    assert text.splitlines()[-1].startswith("note: nothing was checked on 1 run(s), every rule skipped: work_dirs/")
    assert "\x1b" not in text  # the run name comes from the files: made safe for a terminal
    assert "note:" not in format_text(report())


def test_github_annotations_encode_newlines_and_properties():
    lines = github_annotations(report())
    assert lines[0].startswith("::error title=tanalyze throughput (a<b>&\"c)::median")
    assert lines[1] == '::warning title=tanalyze verdict (a<b>&"c)::verdict overfitting%0Asecond line'


def test_github_summary_escapes_markup(tmp_path, monkeypatch):
    md = github_summary(report())
    assert "a&lt;b&gt;&amp;&quot;c" in md and "<b>" not in md
    summary_file = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary_file))

    class Out:
        text = ""

        def write(self, s):
            Out.text += s

    emit_github(report(), Out())
    assert "::error" in Out.text and summary_file.read_text() == md


def test_summary_from_dict_is_tolerant_of_missing_fields():
    assert RunSummary.from_dict({"run": "x"}).throughput is None
