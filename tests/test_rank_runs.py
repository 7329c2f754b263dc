"""Per-rank TensorBoard writers of one distributed job are one run with a ``rank`` column (identity rule 5).

The fixtures in tests/fixtures/distributed/ were written by really running 2-process torch DDP
jobs (gloo, CPU): see generate.py and TRUTH.json there.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import tanalyze

DISTRIBUTED = Path(__file__).parent / "fixtures" / "distributed"
TRUTH = json.loads((DISTRIBUTED / "TRUTH.json").read_text())


def _load(path: Path) -> tanalyze.Logs:
    return tanalyze.load(path, cache=False)


@pytest.mark.parametrize("case", sorted(TRUTH["cases"]))
def test_rank_folders_are_one_run_with_a_rank_column(case):
    truth = TRUTH["cases"][case]
    logs = _load(DISTRIBUTED / case)
    assert list(logs.runs) == [case]
    info = logs.runs[case]
    assert sorted((p.kind, p.rank) for p in info.sources) == [("rank", r) for r in truth["ranks"]]
    frame = logs.scalars
    assert str(frame["rank"].dtype) == "Int64"
    assert sorted(frame["rank"].unique().tolist()) == truth["ranks"]
    assert set(frame["tag"].astype(str)) == {"loss", "step_time"}  # tags keep their names
    last = frame[frame["tag"] == "loss"].groupby("rank")["step"].max().to_dict()
    assert last == {int(r): step for r, step in truth["last_steps"].items()}
    counts = frame.groupby(["tag", "rank"]).size()
    for rank in truth["ranks"]:  # every point of each rank kept (no de-duplication across ranks)
        assert counts[("loss", rank)] == counts[("step_time", rank)] == truth["last_steps"][str(rank)] + 1
    assert "rank 0 (rank_0); rank 1 (rank_1)" in "\n".join(info.notes)


def _copy_as(tmp_path: Path, names: list[str], case: str = "ddp_straggler") -> Path:
    job = tmp_path / "job"
    for rank, name in enumerate(names):
        shutil.copytree(DISTRIBUTED / case / f"rank_{rank}", job / name)
    return job


@pytest.mark.parametrize("names", [["rank0", "rank1"], ["worker_0", "worker_1"], ["node0_rank0", "node0_rank1"],
                                   ["RANK-0", "RANK-1"]])
def test_other_rank_folder_names(tmp_path, names):
    logs = _load(_copy_as(tmp_path, names))
    assert list(logs.runs) == ["job"]
    assert sorted(logs.scalars["rank"].unique().tolist()) == [0, 1]


def test_folders_that_are_not_one_job_stay_separate(tmp_path):
    # one rank folder alone, and two that repeat a rank number, are not joined
    logs = _load(_copy_as(tmp_path, ["rank_0"]))
    assert list(logs.runs) == ["rank_0"] and "rank" not in logs.scalars.columns
    logs = _load(_copy_as(tmp_path / "b", ["node0_rank0", "node1_rank0"]))
    assert sorted(logs.runs) == ["node0_rank0", "node1_rank0"]
    # different tags: two different jobs that happen to be named by rank
    job = _copy_as(tmp_path / "c", ["rank_0"])
    shutil.copytree(Path(__file__).parent / "fixtures" / "layouts" / "torch_add_scalars" / "runs" / "mlp" / "Loss_val",
                    job / "rank_1")
    assert sorted(_load(job).runs) == ["rank_0", "rank_1"]


def test_no_join_keeps_one_run_per_rank_folder():
    logs = tanalyze.load(DISTRIBUTED / "ddp_straggler", cache=False, join=False)
    assert sorted(logs.runs) == ["rank_0", "rank_1"]


@pytest.mark.parametrize("case, code", [("ddp_straggler", "straggler_rank"), ("ddp_stopped_rank", "rank_stopped")])
def test_diagnose_names_the_rank_and_keeps_the_verdict_of_the_mean(case, code):
    logs = _load(DISTRIBUTED / case)
    diagnosis = tanalyze.diagnose(logs)[case]
    findings = {f.code: f for f in diagnosis.findings}
    assert findings[code].severity == "warning" and "Rank 1 " in findings[code].message
    assert findings["rank_metrics_unsynced"].severity == "info"
    assert sum(f.code == "straggler_rank" for f in diagnosis.findings) == (code == "straggler_rank")  # said once
    assert diagnosis.verdict.label == "normal"  # the mean of the ranks' losses falls: the run learns
    as_json = diagnosis.to_dict()["ranks"]
    assert [r["rank"] for r in as_json["ranks"]] == [0, 1]
    assert any("points of one step are averaged" in w for w in diagnosis.warnings)


def test_report_has_a_rank_panel_naming_the_straggler_and_the_stopped_rank(tmp_path):
    from tanalyze.report import build_report, report_dict
    from tanalyze.report.html import render_html

    for case in TRUTH["cases"]:  # the two event-file jobs (launchers/ beside them holds console jobs)
        shutil.copytree(DISTRIBUTED / case, tmp_path / case)
    logs = _load(tmp_path)
    data = build_report(logs, tanalyze.diagnose(logs), generated_at="2024-05-01T12:00:00Z")
    html = render_html(data, embed_json=report_dict(data))
    tables = re.findall(r'<table class="ranks">(.*?)</table>', html, re.S)
    assert len(tables) == 2
    stopped, straggler = ([[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
                           for row in re.findall(r"<tr(?: class=\"rank-flag\")?><td>.*?</tr>", table, re.S)]
                          for table in tables)  # runs in name order
    last = TRUTH["cases"]["ddp_stopped_rank"]["stopped"]["last_step"]
    assert [row[0] for row in stopped] == ["0", "1"] and stopped[0][5] == ""
    assert stopped[1][5] == f"stopped at step {last}" and stopped[1][4] == str(last)
    assert [row[0] for row in straggler] == ["0", "1"] and straggler[0][5] == ""
    fast, slow = (float(row[1].removesuffix(" ms")) for row in straggler)
    m = re.fullmatch(r"straggler: the others wait (\d+)% of a step", straggler[1][5])
    assert m and slow > 10 * fast and 50 < int(m.group(1)) < 100


@pytest.mark.parametrize("case, status, fragment", [
    ("ddp_straggler", "warn", "rank 1 is a straggler: the other ranks wait"),
    ("ddp_stopped_rank", "fail", "rank 1 stopped logging at step {last_step}, the others go on to step "
                                 "{others_last_step}"),
])
def test_check_rule_ranks(case, status, fragment):
    from tanalyze.baseline import summarize_run
    from tanalyze.checks import CheckPolicy, run_checks

    logs = _load(DISTRIBUTED / case)
    summary = summarize_run(logs.scalars_of(case), tanalyze.diagnose(logs)[case].to_dict(), fmt="tensorboard")
    (result,) = [r for r in run_checks([summary], None).rules if r.name == "ranks"]
    stopped = TRUTH["cases"][case]["stopped"]
    assert result.status == status and fragment.format(**(stopped or {})) in result.message
    if case == "ddp_straggler":  # a looser limit lets the same straggler pass
        policy = CheckPolicy.from_config({"ranks": {"max_wait_share": 0.9}})
        (result,) = [r for r in run_checks([summary], None, policy).rules if r.name == "ranks"]
        assert result.status == "pass" and result.threshold == 0.9


def test_rank_0_logging_more_tags_is_still_one_run(tmp_path):
    # rank 0 alone also logs the add_scalars 'Loss' key folder's tag: rank_0 gets the extra events file
    job = _copy_as(tmp_path, ["rank_0", "rank_1"])
    extra = next((Path(__file__).parent / "fixtures" / "layouts" / "torch_add_scalars" / "runs" / "mlp").glob("events*"))
    shutil.copy(extra, job / "rank_0" / extra.name)
    logs = _load(job)
    assert list(logs.runs) == ["job"]
    frame = logs.scalars
    rank0_tags = set(frame[frame["rank"] == 0]["tag"].astype(str))
    assert {"loss", "step_time"} < rank0_tags and set(frame[frame["rank"] == 1]["tag"].astype(str)) == {"loss", "step_time"}
