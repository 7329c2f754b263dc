"""Communication share (tanalyze/analysis/communication.py) on really-run gloo jobs, a real Megatron-DeepSpeed
log and made-up timers with known shares."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import tanalyze
from tanalyze.analysis.communication import (
    analyze_communication,
    compute_time_by_rank,
    is_communication_timer,
    timer_curves,
)
from tanalyze.analysis.results import Severity
from tanalyze.curves import Curve
from tests.conftest import real_log

DISTRIBUTED = Path(__file__).parent.parent / "fixtures" / "distributed_timers"
TRUTH = json.loads((DISTRIBUTED / "TRUTH.json").read_text())
MEGATRON_DS = ("megatron_text_log/microsoft__Megatron-DeepSpeed/examples/random_ltd/log/"
               "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log")


def _curve(tag: str, values, start: int = 10, every: int = 10) -> Curve:
    values = np.asarray(values, dtype=np.float64)
    return Curve.from_arrays(np.arange(len(values)) * every + start, values, tag=tag)


def _console_shares(path: Path) -> tuple[list[int], list[float]]:
    """The all-reduce share of each logged iteration, read from the console with a regex of its own."""
    text = path.read_text()
    steps = [int(s) for s in re.findall(r"iteration\s+(\d+)/", text)]
    elapsed = [float(v) for v in re.findall(r"elapsed time per iteration \(ms\): ([\d.]+)", text)]
    reduce = [float(v) for v in re.findall(r"backward-params-all-reduce: ([\d.]+)", text)]
    assert len(steps) == len(elapsed) == len(reduce) == TRUTH["iterations"] // TRUTH["log_interval"]
    return steps, [min(r / e, 1.0) for r, e in zip(reduce, elapsed, strict=True)]


@pytest.mark.parametrize("name, expected", [
    ("backward-params-all-reduce", True), ("backward-embedding-all-reduce", True), ("bwd_allreduce", True),
    ("bwd_allreduce_microstep", True), ("all-grads-sync", True), ("params-all-gather", True),
    ("grads-reduce-scatter", True), ("forward-send-backward-recv", True), ("forward-recv", True),
    ("comm", True), ("forward-compute", False), ("backward-compute", False), ("optimizer", False),
    ("batch-generator", False), ("fwd", False), ("step", False), ("optimizer-copy-to-main-grad", False),
])
def test_communication_timers_by_name(name, expected):
    assert is_communication_timer(name) is expected


def test_share_against_the_step_time_tag_leaves_out_the_first_interval():
    timers = {"forward-compute": _curve("f", [500, 60, 60, 60, 60, 60]),
              "backward-params-all-reduce": _curve("a", [10, 30, 40, 30, 20, 30]),
              "optimizer": _curve("o", [300, 10, 10, 10, 10, 10])}
    step = _curve("elapsed time per iteration (ms)", [900, 100, 100, 100, 100, 100])
    result = analyze_communication(timers, step_time=step)
    assert result.comm_timers == ("backward-params-all-reduce",)
    assert result.step_source == "step time tag elapsed time per iteration (ms)"
    assert result.median_share == pytest.approx(0.30)  # median of 0.3, 0.4, 0.3, 0.2, 0.3 (warm-up left out)
    assert result.steps_compared == 5 and result.first_step == 10 and result.last_step == 60
    assert result.last_share == pytest.approx(0.30) and result.median_step_ms == 100
    assert result.findings == ()


def test_deepspeed_timers_fwd_bwd_step_and_the_microstep_ones_counted_once():
    n = 8
    timers = {"fwd": _curve("fwd", [40] * n), "bwd": _curve("bwd", [100] * n), "step": _curve("step", [20] * n),
              "bwd_allreduce": _curve("ar", [96] * n), "bwd_allreduce_microstep": _curve("arm", [48] * n),
              "fwd_microstep": _curve("fm", [20] * n)}
    result = analyze_communication(timers)
    assert result.comm_timers == ("bwd_allreduce",)
    assert result.step_source == "fwd + bwd + step"
    assert result.median_share == pytest.approx(96 / 160)
    (finding,) = result.findings
    assert finding.code == "communication_bound" and finding.severity == Severity.WARNING
    assert finding.evidence["threshold"] == 0.5 and "60%" in finding.message


def test_megatron_lm_all_grads_sync_holds_the_grads_all_reduces():
    n = 6
    timers = {"forward-backward": _curve("fb", [300] * n), "forward-compute": _curve("fc", [100] * n),
              "backward-compute": _curve("bc", [180] * n), "all-grads-sync": _curve("s", [50] * n),
              "embedding-grads-all-reduce": _curve("e", [5] * n), "optimizer": _curve("o", [50] * n),
              "optimizer-inner-step": _curve("oi", [40] * n)}
    result = analyze_communication(timers)
    assert result.comm_timers == ("all-grads-sync",)
    # top level: forward-backward (holding the compute), all-grads-sync, optimizer (holding optimizer-inner-step)
    assert result.step_source == "sum of the top-level timers (all-grads-sync, forward-backward, optimizer)"
    assert result.median_share == pytest.approx(50 / 400)


def test_rising_share_is_an_info_finding_with_its_theil_sen_trend():
    n = 40
    comm = np.linspace(10, 60, n)  # of a 100 ms step: 10% → 60%
    timers = {"backward-params-all-reduce": _curve("a", comm), "forward-compute": _curve("f", 100 - comm)}
    result = analyze_communication(timers, step_time=_curve("elapsed time per iteration (ms)", [100] * n))
    assert result.change == pytest.approx(0.5 * (n - 2) / (n - 1), rel=1e-6)  # fitted over steps 20…400
    assert result.trend_per_1k_steps == pytest.approx(0.5 / ((n - 1) * 10) * 1000, rel=1e-6)
    codes = {f.code: f.severity for f in result.findings}
    assert codes == {"communication_rising": Severity.INFO}  # median 36%: not dominating


def test_nothing_without_a_communication_timer_or_a_step_to_divide_by():
    assert analyze_communication({"forward-compute": _curve("f", [1, 2, 3])}) is None
    assert analyze_communication({"backward-params-all-reduce": _curve("a", [1, 2, 3])}) is None


def test_megatron_tensorboard_timer_tags_in_seconds():
    curves = {"forward-compute-time": _curve("forward-compute-time", [0.05, 0.05]),
              "backward-params-all-reduce-time": _curve("backward-params-all-reduce-time", [0.02, 0.03]),
              "iteration-time": _curve("iteration-time", [0.1, 0.1]), "lm loss": _curve("lm loss", [3.0, 2.9])}
    timers = timer_curves(curves)
    assert sorted(timers) == ["backward-params-all-reduce", "forward-compute"]
    assert timers["backward-params-all-reduce"].values.tolist() == pytest.approx([20.0, 30.0])
    assert timer_curves({"data-time": _curve("data-time", [0.1])}) == {}  # one lone '-time' tag is no timer


@pytest.mark.parametrize("case", ["balanced", "straggler"])
def test_really_run_console_share_equals_the_logged_timers(case):
    path = DISTRIBUTED / "console" / case / "train.log"
    steps, shares = _console_shares(path)
    diagnosis = tanalyze.diagnose(tanalyze.load(path.parent, cache=False))[case]
    assert diagnosis.format == "megatron"
    result = diagnosis.communication
    assert result.comm_timers == ("backward-params-all-reduce",)
    assert result.step_source == "step time tag elapsed time per iteration (ms)"
    assert result.median_share == pytest.approx(float(np.median(shares[1:])), abs=1e-12)
    assert result.first_step == steps[0] and result.last_step == steps[-1]
    codes = {f.code for f in diagnosis.findings}
    if TRUTH["cases"][case]["straggler"] is None:
        assert result.median_share < 0.5 and "communication_bound" not in codes
    else:  # the printing rank waits for the straggler inside its all-reduce
        assert result.median_share > 0.5 and "communication_bound" in codes


def test_really_run_ranks_name_the_straggler_from_compute_time():
    truth = TRUTH["cases"]["straggler"]
    diagnosis = tanalyze.diagnose(tanalyze.load(DISTRIBUTED / "ranks" / "straggler", cache=False))["straggler"]
    per_rank = {r.rank: r for r in diagnosis.communication.per_rank}
    slow, waiting = truth["straggler"], truth["printing_rank"]
    # the straggler hardly waits; the other rank spends most of its step in the all-reduce, waiting for it
    assert per_rank[slow].median_share < 0.3 < 0.5 < per_rank[waiting].median_share
    straggler = diagnosis.ranks.straggler
    assert straggler.rank == slow and straggler.method.startswith("step-time tag compute time")
    assert straggler.median_seconds - straggler.others_seconds == pytest.approx(TRUTH["slow_seconds"], rel=0.5)
    assert straggler.wait_share > 0.3
    # the job's share is the ranks' mean: a straggler, not communication, is what dominates
    assert diagnosis.communication.median_share < 0.5
    assert "communication_bound" not in {f.code for f in diagnosis.findings}
    assert "straggler_rank" in {f.code for f in diagnosis.findings}


def test_really_run_balanced_ranks_have_no_straggler():
    diagnosis = tanalyze.diagnose(tanalyze.load(DISTRIBUTED / "ranks" / "balanced", cache=False))["balanced"]
    assert diagnosis.ranks.straggler is None
    assert [r.rank for r in diagnosis.communication.per_rank] == [0, 1]


def test_compute_time_is_step_less_communication():
    timers = {0: {"backward-params-all-reduce": _curve("a", [10, 10, 10]), "forward-compute": _curve("f", [1, 2, 3])},
              1: {"backward-params-all-reduce": _curve("a", [40, 40, 40]), "forward-compute": _curve("f", [1, 2, 3])}}
    steps = {0: _curve("s", [100, 100, 100]), 1: _curve("s", [100, 100, 100])}
    compute = compute_time_by_rank(timers, steps)
    assert compute[0].values.tolist() == pytest.approx([0.09] * 3) and compute[1].values.tolist() == pytest.approx([0.06] * 3)


def test_real_megatron_deepspeed_log_times_only_the_embedding_all_reduce():
    path = real_log(MEGATRON_DS)
    diagnosis = next(iter(tanalyze.diagnose(tanalyze.load(path, cache=False)).values()))
    result = diagnosis.communication
    # DeepSpeed does the gradient all-reduce inside its engine: Megatron's timers show only the embedding's
    assert result.comm_timers == ("backward-embedding-all-reduce",)
    text = path.read_text(errors="replace")
    elapsed = [float(v) for v in re.findall(r"elapsed time per iteration \(ms\): ([\d.]+)", text)]
    reduce = [float(v) for v in re.findall(r"backward-embedding-all-reduce: ([\d.]+)", text)]
    assert len(elapsed) == len(reduce) == 47 and result.steps_compared == 46
    assert result.median_share == pytest.approx(float(np.median(np.array(reduce[1:]) / np.array(elapsed[1:]))))
    assert result.findings == ()
