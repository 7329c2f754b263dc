"""The sweep in the report, the `tanalyze sweep` command and their JSON (schema tanalyze.report/1, experiments[])."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import tanalyze
from tanalyze.cli import main
from tanalyze.report import Report, build_report, report_dict
from tests.conftest import SAMPLE_RUNS

SWEEP = SAMPLE_RUNS / "sweep"
SCHEMA = json.loads((Path(tanalyze.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def data():
    logs = tanalyze.load(SWEEP)
    return build_report(logs, tanalyze.diagnose(logs), generated_at="2024-05-01T12:00:00Z")


def test_report_json_holds_the_experiment_and_matches_the_schema(data):
    report = report_dict(data)
    jsonschema.Draft202012Validator(SCHEMA).validate(report)
    [experiment] = report["experiments"]
    assert experiment["metric"] == "val/loss" and experiment["seed_keys"] == ["seed"]
    assert [i["key"] for i in experiment["importance"]] == ["lr", "eval_batch_size"]
    assert experiment["best"]["config"]["lr"] == 0.001
    assert len(experiment["groups"]) == 12 and all(len(g["runs"]) == 3 for g in experiment["groups"])
    broken = json.loads(json.dumps(report))
    broken["experiments"][0]["importance"][0]["rank"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(broken)


def test_report_page_has_the_sweep_section(data):
    html = Report(data).to_html()
    assert 'id="sweeps"' in html and "What drives it" in html and "lr=0.001, eval_batch_size=" in html
    assert "<polyline" in html  # the bands


def test_sweep_command_prints_the_ranking_and_writes_json(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    assert main(["sweep", str(SWEEP), "--json", str(out), "-q", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "importance #1 lr" in text and "importance #2 eval_batch_size" in text
    assert "seeds: seed (repeats, not hyperparameters)" in text
    payload = json.loads(out.read_text())
    assert payload["schema"] == "tanalyze.sweep/1"
    item = {"$defs": SCHEMA["$defs"], **SCHEMA["$defs"]["experiment"]}
    jsonschema.Draft202012Validator(item).validate(payload["experiments"][0])


def test_sweep_command_with_an_accuracy_metric_it_does_not_find(capsys):
    assert main(["sweep", str(SWEEP), "--metric", "val/accuracy", "-q", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "no sweep found" in text and "without the metric val/accuracy" in text


def test_sweep_command_on_a_missing_path_is_a_clear_error(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "nope"), "-q"]) == 2
    assert "nope" in capsys.readouterr().err
