"""Rank analysis (tanalyze/analysis/ranks.py) on really-run DDP jobs, DeepSpeed logs and made-up ranks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tanalyze
from tanalyze.analysis.ranks import analyze_ranks
from tanalyze.analysis.results import Severity
from tanalyze.curves import Curve
from tests.conftest import real_log
from tests.readers.test_deepspeed import DPO, DS_STEP, RLHF, SFT

DISTRIBUTED = Path(__file__).parent.parent / "fixtures" / "distributed"
TRUTH = json.loads((DISTRIBUTED / "TRUTH.json").read_text())


def _per_rank(case: str, tag: str) -> dict[int, Curve]:
    frame = tanalyze.load(DISTRIBUTED / case, cache=False).scalars
    return {int(r): Curve.from_frame(g, tag) for r, g in frame.groupby("rank")}


def test_straggler_from_the_step_time_tag():
    truth = TRUTH["cases"]["ddp_straggler"]
    result = analyze_ranks(_per_rank("ddp_straggler", "loss"), step_time_by_rank=_per_rank("ddp_straggler", "step_time"))
    s = result.straggler
    assert s is not None and s.rank == truth["straggler"] and s.method == "step-time tag step_time"
    assert s.median_seconds == pytest.approx(truth["slow_seconds"], rel=0.3)  # its own work: the sleep + a forward
    assert s.slowest_share >= 0.9 and s.steps_compared == truth["steps"]
    assert 0.5 < s.wait_share < 1.0  # rank 0 idles most of each step (the sleep against ~10 ms of the rest)
    assert result.stopped == ()
    codes = {f.code: f.severity for f in result.findings}
    assert codes["straggler_rank"] == Severity.WARNING


def test_straggler_from_when_each_rank_logs_the_same_step():
    truth = TRUTH["cases"]["ddp_straggler"]
    s = analyze_ranks(_per_rank("ddp_straggler", "loss")).straggler
    assert s is not None and s.rank == truth["straggler"] and s.method == "wall time of the same step"
    assert s.median_seconds == pytest.approx(truth["slow_seconds"], rel=0.3)  # rank 1 logs each step that much later
    assert 0.5 < s.wait_share < 1.0


def test_stopped_rank():
    truth = TRUTH["cases"]["ddp_stopped_rank"]
    result = analyze_ranks(_per_rank("ddp_stopped_rank", "loss"),
                           step_time_by_rank=_per_rank("ddp_stopped_rank", "step_time"))
    stopped = truth["stopped"]  # the killed rank's last step on disk, and the other rank's (it died in the all-reduce)
    assert [(s.rank, s.last_step, s.others_last_step) for s in result.stopped] == [
        (stopped["rank"], stopped["last_step"], stopped["others_last_step"])]
    assert result.stopped[0].seconds_before_others > 0
    assert result.straggler is None  # both ranks equally fast while both ran
    finding = next(f for f in result.findings if f.code == "rank_stopped")
    assert finding.severity == Severity.WARNING and finding.step == stopped["last_step"]
    assert f"Rank 1 stopped logging at step {stopped['last_step']}" in finding.message


def test_a_rank_one_logging_interval_short_is_stopped_and_ranks_that_end_together_are_not():
    loss, wall = np.linspace(2.0, 1.0, 30), np.arange(30.0)
    together = {0: _curve(loss, wall), 1: _curve(loss, wall)}
    assert analyze_ranks(together).stopped == ()
    short = {0: _curve(loss, wall), 1: _curve(loss[:29], wall[:29])}
    assert [(s.rank, s.last_step, s.others_last_step) for s in analyze_ranks(short).stopped] == [(1, 28, 29)]


def test_each_rank_logging_its_own_loss_is_found():
    result = analyze_ranks(_per_rank("ddp_straggler", "loss"))
    d = result.disagreement
    assert d is not None and d.tag == "loss" and d.steps_compared == 40
    assert d.median_relative_spread > 0.05  # different data shards: losses differ by percents
    finding = next(f for f in result.findings if f.code == "rank_metrics_unsynced")
    assert finding.severity == Severity.INFO and "all-reduce" in finding.recommendation.lower()


def _curve(values, wall, tag="loss"):
    return Curve.from_arrays(np.arange(len(values)), values, tag=tag, wall_time=wall)


def test_synchronised_equal_ranks_say_nothing():
    loss = np.linspace(2.0, 1.0, 30)
    wall = np.arange(30) * 0.5
    result = analyze_ranks({r: _curve(loss, wall + 0.001 * ((r + np.arange(30)) % 3)) for r in range(4)})
    assert result.straggler is None and result.stopped == () and result.disagreement is None
    assert result.findings == ()
    assert [s.step_seconds for s in result.ranks] == pytest.approx([0.5] * 4, abs=0.01)


def test_a_cheap_straggler_is_info_and_one_rank_is_nothing():
    steps = np.arange(30)
    times = {0: np.full(30, 1.0), 1: np.full(30, 1.02), 2: np.full(30, 1.15)}  # rank 2: 15% slower, others wait
    loss = np.linspace(2.0, 1.0, 30)
    curves = {r: _curve(loss, steps * 10.0) for r in times}  # a step lasts 10 s: the wait is ~1% of it
    result = analyze_ranks(curves, step_time_by_rank={r: _curve(t, steps * 10.0, "step_time") for r, t in times.items()})
    assert result.straggler.rank == 2 and result.straggler.wait_share == pytest.approx(0.14 / 10, abs=0.002)
    assert [f.severity for f in result.findings] == [Severity.INFO]
    assert analyze_ranks({0: curves[0]}).findings == ()


def test_a_rank_a_fraction_of_a_millisecond_slower_is_jitter_and_one_50_ms_slower_is_a_straggler():
    steps = np.arange(30)
    loss = np.linspace(2.0, 1.0, 30)
    wall = steps * 0.001
    for lag, straggler in ((0.0003, None), (0.05, 1)):  # 9 ms lost over 30 steps, then 1.5 s
        times = {0: np.full(30, 0.001), 1: np.full(30, 0.001 + lag)}
        result = analyze_ranks({r: _curve(loss, wall) for r in times},
                               step_time_by_rank={r: _curve(t, wall, "step_time") for r, t in times.items()})
        assert (result.straggler.rank if result.straggler else None) == straggler
    slow_wall = {0: _curve(loss, steps * 0.01), 1: _curve(loss, steps * 0.01 + 0.0003)}  # logs 0.3 ms later
    assert analyze_ranks(slow_wall).straggler is None


@pytest.mark.real_logs
@pytest.mark.parametrize("log", [SFT, DPO, RLHF])
def test_real_deepspeed_logs_of_rank_0_alone_get_no_rank_analysis(log):
    logs = tanalyze.load(real_log(log), cache=False)
    (diagnosis,) = tanalyze.diagnose(logs).values()
    assert diagnosis.ranks is None
    assert not {f.code for f in diagnosis.findings} & {"straggler_rank", "rank_stopped", "rank_metrics_unsynced"}


def test_deepspeed_per_rank_files_with_a_rank_that_stopped(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    for rank, last in ((0, 200), (1, 200), (2, 80)):
        lines = "".join(DS_STEP.format(s=step // 10, rank=rank, step=step, skipped=0, lr=0.1)
                        for step in range(10, last + 1, 10))
        (job / f"log_rank{rank}.txt").write_text("DeepSpeed info: version=0.14\n" + lines)
    diagnosis = tanalyze.diagnose(tanalyze.load(job, cache=False))["job"]
    assert [(s.rank, s.last_step, s.others_last_step) for s in diagnosis.ranks.stopped] == [(2, 80, 200)]
    assert "rank_stopped" in {f.code for f in diagnosis.findings}
