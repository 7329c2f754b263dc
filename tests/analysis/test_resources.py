import json
import re

import numpy as np
import pandas as pd
import pytest

from tanalyze.analysis.resources import analyze_resources
from tanalyze.curves import Curve

GiB = 2.0**30


def codes(result):
    return [f.code for f in result.findings]


def mem_curve(values, tag="gpu_memory"):
    return Curve.from_arrays(np.arange(len(values)), values, tag=tag)


def flat_memory(n=1000, level=10e9, seed=0):
    rng = np.random.default_rng(seed)
    return level + rng.normal(0, 20e6, n)


def test_flat_memory_is_clean():
    r = analyze_resources(gpu_memory=mem_curve(flat_memory()), capacity_bytes=40e9)
    assert r.findings == ()
    assert r.memory.unit == "bytes" and r.memory.peak_fraction == pytest.approx(0.25, abs=0.01)
    json.dumps(r.to_dict())


def test_leak_of_1mb_per_step_is_memory_growth():
    mem = flat_memory() + 1e6 * np.arange(1000)
    r = analyze_resources(gpu_memory=mem_curve(mem), capacity_bytes=40e9)
    assert "memory_growth" in codes(r)
    assert r.memory.slope_per_step == pytest.approx(1e6, rel=0.05)
    lo, hi = r.memory.slope_ci
    assert lo > 0 and lo <= 1e6 <= hi
    assert r.memory.steps_to_capacity == pytest.approx((40e9 - mem[-1]) / 1e6, rel=0.1)


def test_small_growth_below_threshold_is_not_a_leak():
    mem = flat_memory() + 1e5 * np.arange(1000)  # 0.1 GB over 10 GB: 1%
    assert "memory_growth" not in codes(analyze_resources(gpu_memory=mem_curve(mem)))


def test_one_jump_is_a_jump_not_a_leak():
    mem = flat_memory()
    mem[600:] += 6e9
    r = analyze_resources(gpu_memory=mem_curve(mem), capacity_bytes=40e9)
    assert codes(r) == ["memory_jump"]
    [jump] = r.memory.jumps
    assert jump.step == 600 and jump.increase == pytest.approx(6e9, rel=0.02)


def test_peak_near_capacity():
    mem = flat_memory(level=37e9)
    r = analyze_resources(gpu_memory=mem_curve(mem), capacity_bytes=40e9)
    f = next(f for f in r.findings if f.code == "memory_near_capacity")
    assert f.severity == "warning" and "93%" in f.message


def test_memory_in_percent_of_capacity():
    pct = np.r_[np.linspace(5, 95, 10), np.full(90, 95.0)]
    r = analyze_resources(gpu_memory=mem_curve(pct), memory_unit="percent")
    assert r.memory.unit == "%" and r.memory.capacity == 100
    assert "memory_near_capacity" in codes(r)


def test_memory_in_mib_is_converted_to_bytes():
    r = analyze_resources(gpu_memory=mem_curve(np.full(50, 1024.0)), memory_unit="MiB")
    assert r.memory.peak == GiB


def test_unknown_memory_unit_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown memory unit 'parsecs'"):
        analyze_resources(gpu_memory=mem_curve(np.ones(10)), memory_unit="parsecs")


@pytest.mark.parametrize("values", [[], [1e9], [np.nan] * 5], ids=["empty", "one", "nan"])
def test_memory_edge_cases(values):
    r = analyze_resources(gpu_memory=mem_curve(np.array(values, dtype=float)), capacity_bytes=40e9)
    assert r.memory is None and r.findings == ()


def test_attention_entropy_collapse_per_head():
    steps = np.arange(0, 2000, 10)
    rng = np.random.default_rng(3)
    healthy = 3.0 + rng.normal(0, 0.05, steps.size)
    collapsing = healthy.copy()
    collapsing[120:] = 0.05 + rng.uniform(0, 0.02, steps.size - 120)  # collapses at step 1200
    heads = [
        Curve.from_arrays(steps, healthy, tag="attention_entropy/layer_0/head_0"),
        Curve.from_arrays(steps, collapsing, tag="attention_entropy/layer_3/head_1"),
    ]
    r = analyze_resources(attention_entropy=heads)
    by = {h.tag: h for h in r.attention}
    bad = by["attention_entropy/layer_3/head_1"]
    assert bad.collapsed and bad.layer == 3 and bad.head == 1 and bad.collapse_step == 1200
    assert not by["attention_entropy/layer_0/head_0"].collapsed
    f = next(f for f in r.findings if f.code == "attention_collapse")
    assert f.step == 1200 and "1 of 2" in f.message


def test_attention_entropy_from_histograms():
    steps = np.arange(0, 100)
    entropy = np.r_[np.full(50, 2.0), np.full(50, 0.1)]
    frame = pd.DataFrame({"tag": "attn/entropy/block_2", "step": steps, "num": 64.0, "sum": entropy * 64})
    r = analyze_resources(attention_histograms=frame)
    [head] = r.attention
    assert head.collapsed and head.layer == 2 and head.collapse_step == 50


def rank_times(n=500, level=0.5, seed=0):
    rng = np.random.default_rng(seed)
    return level * np.exp(rng.normal(0, 0.03, n))


def test_straggler_rank_is_found():
    steps = np.arange(500)
    by_rank = {r: Curve.from_arrays(steps, rank_times(seed=r), tag=f"step_time/rank{r}") for r in range(8)}
    by_rank[5] = Curve.from_arrays(steps, rank_times(seed=5, level=0.6), tag="step_time/rank5")
    r = analyze_resources(step_time_by_rank=by_rank)
    stragglers = [t.rank for t in r.ranks if t.straggler]
    assert stragglers == [5]
    slow = next(t for t in r.ranks if t.rank == 5)
    assert slow.lag_pct == pytest.approx(20, abs=2) and slow.p_value < 0.01
    assert codes(r) == ["straggler_rank"]


def test_equal_ranks_have_no_straggler():
    steps = np.arange(300)
    by_rank = {r: Curve.from_arrays(steps, rank_times(n=300, seed=10 + r)) for r in range(4)}
    r = analyze_resources(step_time_by_rank=by_rank)
    assert not any(t.straggler for t in r.ranks) and r.findings == ()


def test_slightly_slower_rank_below_threshold_is_not_a_straggler():
    steps = np.arange(500)
    by_rank = {r: Curve.from_arrays(steps, rank_times(seed=20 + r)) for r in range(4)}
    by_rank[2] = Curve.from_arrays(steps, rank_times(seed=22, level=0.52))
    r = analyze_resources(step_time_by_rank=by_rank)
    assert not any(t.straggler for t in r.ranks)


def test_nothing_given():
    r = analyze_resources()
    assert r.memory is None and r.attention == () and r.ranks == () and r.findings == ()


def test_a_jump_spread_over_two_points_is_one_jump():
    mem = flat_memory()
    mem[500] += 3e9
    mem[501:] += 6e9
    r = analyze_resources(gpu_memory=mem_curve(mem), capacity_bytes=40e9, jump_fraction=0.05)
    [jump] = r.memory.jumps
    assert jump.step == 501 or jump.step == 500
    assert jump.increase == pytest.approx(6e9, rel=0.05)


def test_growth_message_gives_the_rate_in_mib_per_step():
    mem = flat_memory() + 2**20 * np.arange(1000)
    f = next(f for f in analyze_resources(gpu_memory=mem_curve(mem)).findings if f.code == "memory_growth")
    assert re.search(r"(0\.99\d|1\.00?) MiB/step", f.message) and f.step == 100 and f.step_end == 999
