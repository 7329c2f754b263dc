import json
import shutil
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import tanalyze
from tanalyze.report import build_report, report_dict
from tanalyze.report.jsonout import SCHEMA_ID, dumps
from tests.report.fakes import three_runs

SCHEMA_PATH = Path(tanalyze.__file__).parent / "schemas" / "report.schema.json"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def report():
    logs, diags = three_runs()
    diags["diverged-run"]["verdict"]["evidence"] = {"last_loss": float("nan"), "peak": np.float32("inf")}
    return report_dict(build_report(logs, diags, generated_at="2024-05-01T12:00:00Z"))


def test_report_matches_its_schema(validator, report):
    validator.validate(report)
    assert report["schema"] == SCHEMA_ID == validator.schema["properties"]["schema"]["const"]
    assert report["tanalyze_version"] == tanalyze.__version__
    assert report["inputs"] == ["logs"]


def test_runs_carry_diagnosis_summary_and_info(report):
    runs = {r["run"]: r for r in report["runs"]}
    assert list(runs) == ["normal-run", "overfitting-run", "diverged-run"]
    overfit = runs["overfitting-run"]
    assert overfit["overfitting"]["onset_step"] == 6000
    assert overfit["findings"][0]["code"] == "overfitting"
    diverged = runs["diverged-run"]
    assert diverged["divergence"]["step"] == 10500 and diverged["divergence"]["kind"] == "explosion"
    assert diverged["divergence"]["restart"]["resume_at_or_before_step"] == 10000
    assert diverged["summary"]["train_loss"]["non_finite"] == 5
    assert diverged["info"]["restarts"] == [{"step": 4000, "file": "events.2", "detail": "resumed from checkpoint"}]
    assert diverged["info"]["read_warnings"][0]["count"] == 2
    assert diverged["info"]["hparams"] == {"lr": 0.0001}


def test_non_finite_numbers_are_strings_and_the_text_is_strict_json(report):
    evidence = report["runs"][2]["verdict"]["evidence"]
    assert evidence == {"last_loss": "nan", "peak": "inf"}
    text = dumps(report)
    assert ": NaN" not in text and "Infinity" not in text
    assert json.loads(text) == report


@pytest.mark.parametrize(
    ("path", "bad"),
    [(("verdict", "label"), "sideways"), (("findings",), [{"code": "x"}]), (("info",), {})],
)
def test_schema_rejects_broken_runs(validator, report, path, bad):
    broken = json.loads(json.dumps(report))
    target = broken["runs"][0]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = bad
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)


def test_runs_encoded_beforehand_give_the_same_file_as_encoding_it_whole(report):
    from tanalyze.report.jsonout import run_text

    report = json.loads(dumps(report))  # a copy
    report["runs"][0]["run"] = "\u0000run1\u0000 \"quoted\"\nline"  # untrusted names that look like anything
    texts = [run_text(run) for run in report["runs"]]
    texts[-1] = None  # one not encoded beforehand (its content changed)
    assert dumps(report, texts) == dumps(report)
    assert json.loads(dumps(report, texts)) == report


@pytest.fixture(scope="module")
def checkpoint_report():
    logs = tanalyze.load(Path(__file__).parents[1] / "fixtures" / "checkpoints" / "hf_best_off")
    return report_dict(build_report(logs, tanalyze.diagnose(logs), generated_at="2024-05-01T12:00:00Z"))


def test_checkpoints_match_the_schema(validator, checkpoint_report):
    validator.validate(checkpoint_report)
    (run,) = checkpoint_report["runs"]
    c = run["checkpoints"]
    assert (c["metric"], c["mode"], c["best_step"], c["best_on_disk"]) == ("eval_loss", "min", 20, False)
    assert c["checkpoints"][0] == {"name": "checkpoint-110", "step": 110, "value": c["checkpoints"][0]["value"],
                                   "eval_step": 110, "source": "evaluated at its step"}


@pytest.mark.parametrize(("key", "bad"), [("mode", "lowest"), ("top_k_steps", ["20"]), ("top_k", 0),
                                          ("checkpoints", [{"name": "checkpoint-110"}]), ("best_on_disk", "no")])
def test_schema_rejects_broken_checkpoints(validator, checkpoint_report, key, bad):
    broken = json.loads(json.dumps(checkpoint_report))
    broken["runs"][0]["checkpoints"][key] = bad
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)


DISTRIBUTED = Path(__file__).parent.parent / "fixtures" / "distributed_timers"


def test_distributed_runs_match_the_schema_with_ranks_communication_and_nccl(validator, tmp_path):
    """The really-run per-rank job (a straggler, per-rank communication) and a console with NCCL lines."""
    console = tmp_path / "nccl_job" / "train.log"
    console.parent.mkdir()
    console.write_text(
        (DISTRIBUTED / "console" / "straggler" / "train.log").read_text()
        + "node-01:1001:1100 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
        "[rank1]:[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600060 "
        "milliseconds before timing out.\n")
    shutil.copytree(DISTRIBUTED / "ranks" / "straggler", tmp_path / "straggler")
    data = json.loads(tanalyze.report(tanalyze.load(tmp_path, cache=False)).to_json())
    validator.validate(data)
    runs = {r["run"]: r for r in data["runs"]}
    ranked, nccl_run = runs["straggler"], runs["nccl_job"]
    assert ranked["ranks"]["straggler"]["rank"] == 0
    assert [p["rank"] for p in ranked["communication"]["per_rank"]] == [0, 1]
    assert nccl_run["nccl"]["transport_kinds"] == {"NET/Socket": 1}
    assert nccl_run["nccl"]["timed_out_ranks"] == [1]
    codes = {f["code"] for f in nccl_run["findings"]}
    assert {"nccl_timeout", "nccl_slow_transport", "communication_bound"} <= codes
    assert nccl_run["status"]["status"] == "nccl_timeout"
