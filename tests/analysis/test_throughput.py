import json

import numpy as np
import pytest

from tanalyze.analysis.throughput import analyze_throughput, compare_throughput, detect_warmup
from tanalyze.curves import Curve


def ar1(n: int, rho: float, sd: float, seed: int) -> np.ndarray:
    """Autocorrelated log-noise, like consecutive step times on a shared machine."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0, sd, n)
    x = np.empty(n)
    x[0] = e[0] / np.sqrt(1 - rho**2)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


def step_times(n=1500, level=0.5, seed=0, rho=0.7, sd=0.03):
    return level * np.exp(ar1(n, rho, sd, seed))


def curve(values, steps=None, tag="step_time"):
    steps = np.arange(len(values)) if steps is None else steps
    return Curve.from_arrays(steps, values, tag=tag)


def codes(result):
    return [f.code for f in result.findings]


# ------------------------------------------------------------------------------------------ within a run


def test_clean_run_has_no_findings_and_a_steady_median():
    r = analyze_throughput(curve(step_times()), kind="step_time_s")
    assert r.findings == ()
    assert r.steady_median == pytest.approx(0.5, rel=0.02)
    assert r.unit == "s/step" and not r.higher_is_better
    assert r.autocorrelation_time > 2  # AR(1) with rho 0.7: tau = 5.7 in theory
    json.dumps(r.to_dict())


def test_warmup_end_is_found_after_a_slow_start():
    t = step_times()
    t[:40] *= np.linspace(4, 1.0, 40)
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert 30 <= r.warmup_end_step <= 45
    assert "throughput_stall" not in codes(r)  # a slow first step is warm-up, not a stall


def test_later_drop_is_not_mistaken_for_warmup_and_is_found_where_planted():
    t = step_times(n=2000)
    t[1200:] *= 1.3
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert r.n_warmup_points < 50
    [cp] = r.change_points
    assert abs(cp.step - 1200) <= 5
    assert cp.slowdown_pct == pytest.approx(30, abs=3)
    drop = next(f for f in r.findings if f.code == "throughput_drop")
    assert "30%" in drop.message and drop.step == cp.step
    assert r.final_median == pytest.approx(0.65, rel=0.03)


def test_a_lasting_drop_that_cost_under_a_second_is_timing_jitter_not_a_finding():
    t = step_times(n=2000, level=0.0005)  # half a millisecond per step: the whole run takes one second
    t[1200:] *= 1.3
    r = analyze_throughput(curve(t), kind="step_time_s")
    [cp] = r.change_points  # the change is measured ...
    assert abs(cp.step - 1200) <= 5
    assert "throughput_drop" not in codes(r)  # ... but 0.1 s lost is no event in a run


def test_drop_in_samples_per_second_is_normalised():
    rate = 256 / step_times(n=2000)  # samples/s: larger is better
    rate[1000:] *= 0.7
    r = analyze_throughput(curve(rate, tag="train_samples_per_second"), kind="samples_per_s")
    [cp] = r.change_points
    assert abs(cp.step - 1000) <= 5
    assert cp.before > cp.after
    assert cp.slowdown_pct == pytest.approx(100 / 0.7 - 100, abs=3)
    assert "throughput_drop" in codes(r)


def test_improvement_is_a_change_point_but_not_a_drop_finding():
    t = step_times(n=2000)
    t[1000:] *= 0.7
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert len(r.change_points) == 1 and r.change_points[0].slowdown_pct < 0
    assert "throughput_drop" not in codes(r)


def test_periodic_dips_every_50_steps_report_period_50():
    steps = np.arange(0, 5000, 10)  # logged every 10 steps
    t = step_times(n=steps.size, seed=3)
    t[steps % 50 == 0] *= 1.8
    r = analyze_throughput(curve(t, steps), kind="step_time_s")
    assert r.dips is not None
    assert r.dips.period_steps == 50
    assert r.dips.phase == 0
    assert r.dips.median_slowdown_pct == pytest.approx(80, abs=10)
    assert "throughput_dips" in codes(r)
    assert r.change_points == ()


def test_stalls_report_steps_and_seconds_lost():
    t = step_times(n=1000, seed=4)
    t[[300, 700]] = [30.0, 12.0]
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert [s.step for s in r.stalls] == [300, 700]
    assert r.stall_seconds_lost == pytest.approx(30 + 12 - 2 * 0.5, rel=0.02)
    f = next(f for f in r.findings if f.code == "throughput_stall")
    assert f.step == 300 and f.step_end == 700 and "41" in f.message


def test_step_time_in_ms_loses_seconds_not_milliseconds():
    t = step_times(n=500, seed=5) * 1000
    t[250] = 20_000.0
    r = analyze_throughput(curve(t), kind="step_time_ms")
    assert r.unit == "ms/step"
    assert r.stall_seconds_lost == pytest.approx(19.5, rel=0.02)


def test_interval_means_multiply_lost_time_by_the_step_gap():
    steps = np.arange(10, 5010, 10)
    t = step_times(n=steps.size, seed=6)
    t[200] = 5.5  # averaged over 10 iterations: 50 s extra in total
    r = analyze_throughput(curve(t, steps), kind="step_time_s", interval_means=True)
    assert r.stall_seconds_lost == pytest.approx(50, rel=0.02)


def test_step_time_derived_from_wall_time_of_another_curve():
    steps = np.arange(0, 2000, 10)
    per_step = step_times(n=steps.size, seed=7)
    per_step[100] += 60 / 10  # a 60 s checkpoint save inside one logging interval
    wall = 1.7e9 + np.concatenate([[0.0], np.cumsum(per_step[1:] * 10)])
    loss = Curve.from_arrays(steps, np.linspace(3, 1, steps.size), tag="train/loss", wall_time=wall)
    r = analyze_throughput(None, kind="step_time_s", wall_time_curve=loss)
    assert r.kind == "wall_time" and r.unit == "s/step"
    assert "train/loss" in r.source
    assert r.steady_median == pytest.approx(0.5, rel=0.03)
    assert [s.step for s in r.stalls] == [1000]
    assert r.stall_seconds_lost == pytest.approx(60, rel=0.05)


@pytest.mark.parametrize(
    "values",
    [[], [0.5], [np.nan] * 10, [0.0, -1.0, 0.0], [np.nan, 0.5]],
    ids=["empty", "one", "all-nan", "zero-negative", "one-valid"],
)
def test_too_little_data_is_reported_not_raised(values):
    r = analyze_throughput(curve(np.array(values, dtype=float)), kind="step_time_s")
    assert codes(r) == ["insufficient_data"]
    assert r.steady_median is None
    json.dumps(r.to_dict())


def test_invalid_points_are_counted():
    t = step_times(n=200)
    t[[5, 6, 7]] = [0.0, -2.0, np.nan]
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert r.n_invalid == 3 and r.n_points == 197


def test_constant_step_time_is_clean():
    r = analyze_throughput(curve(np.full(300, 0.25)), kind="step_time_s")
    assert r.findings == () and r.steady_median == 0.25 and r.steady_cv == 0


def test_no_curve_at_all():
    r = analyze_throughput(None, kind="samples_per_s")
    assert codes(r) == ["insufficient_data"]


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown throughput kind 'furlongs'"):
        analyze_throughput(curve([1.0, 2.0, 3.0]), kind="furlongs")


def test_detect_warmup_edge_cases():
    assert detect_warmup(np.array([])) == 0
    assert detect_warmup(np.full(100, 2.0)) == 0
    assert detect_warmup(np.r_[10.0, np.full(99, 1.0)]) == 1


# -------------------------------------------------------------------------------------- against a baseline


def test_25pct_slower_candidate_with_autocorrelated_noise_is_a_regression():
    base = curve(step_times(seed=10))
    cand = curve(step_times(seed=11) * 1.25)
    c = compare_throughput(base, cand, kind="step_time_s")
    assert c.verdict == "regression"
    assert c.p_value < 0.002
    assert c.slowdown_pct == pytest.approx(25, abs=3)
    assert c.ci_low > 1.15 and c.ci_high < 1.35
    assert c.thinning_stride >= 3  # autocorrelation was accounted for
    assert c.n_candidate_effective < c.n_candidate
    assert [f.code for f in c.findings] == ["throughput_regression"]
    json.dumps(c.to_dict())


def test_regression_in_samples_per_second():
    base = curve(256 / step_times(seed=12))
    cand = curve(256 / (step_times(seed=13) * 1.25))
    c = compare_throughput(base, cand, kind="samples_per_s")
    assert c.verdict == "regression"
    assert c.ratio == pytest.approx(0.8, abs=0.03) and c.change_pct < 0 and c.slowdown_pct > 0


def test_runs_differing_only_by_noise_show_no_change():
    c = compare_throughput(curve(step_times(seed=20)), curve(step_times(seed=21)), kind="step_time_s")
    assert c.verdict == "no_change" and c.findings == ()
    assert c.message.startswith("throughput no change: change below 15%")


def test_5pct_slowdown_is_below_min_change():
    c = compare_throughput(curve(step_times(seed=22)), curve(step_times(seed=23) * 1.05), kind="step_time_s")
    assert c.verdict == "no_change"
    assert c.slowdown_pct == pytest.approx(5, abs=2)


def test_candidate_with_five_points_is_inconclusive():
    c = compare_throughput(
        curve(step_times(seed=24)), curve(step_times(n=5, seed=25) * 1.3), kind="step_time_s"
    )
    assert c.verdict == "inconclusive"
    assert c.n_candidate == 5
    assert c.slowdown_pct > 15  # the numbers are still reported


def test_faster_candidate_is_an_improvement():
    c = compare_throughput(curve(step_times(seed=26)), curve(step_times(seed=27) / 1.3), kind="step_time_s")
    assert c.verdict == "improvement" and c.findings == ()


def test_candidate_inside_the_band_of_several_baselines_is_not_a_regression():
    # three baseline runs whose levels differ by up to 40% (different nodes): the noise floor
    bases = [curve(step_times(seed=s, level=lv)) for s, lv in [(30, 0.45), (31, 0.52), (32, 0.63)]]
    c = compare_throughput(bases, curve(step_times(seed=33, level=0.6)), kind="step_time_s")
    assert c.baseline_band == pytest.approx((0.45, 0.63), rel=0.03)
    assert c.verdict == "no_change" and "band" in c.reason
    c2 = compare_throughput(bases, curve(step_times(seed=34, level=0.8)), kind="step_time_s")
    assert c2.verdict == "regression"


def test_strongly_autocorrelated_short_runs_are_inconclusive_not_overconfident():
    # a random walk-like level: 60 points carry only a handful of independent samples
    base = curve(0.5 * np.exp(ar1(60, 0.97, 0.05, seed=40)))
    cand = curve(0.5 * 1.2 * np.exp(ar1(60, 0.97, 0.05, seed=41)))
    c = compare_throughput(base, cand, kind="step_time_s")
    assert c.thinning_stride > 5
    assert c.verdict in {"inconclusive", "no_change"}


def test_warmup_is_excluded_from_the_comparison():
    b = step_times(seed=50)
    cnd = step_times(seed=51)
    cnd[:100] *= 3  # a long compile at the start of the candidate only
    c = compare_throughput(curve(b), curve(cnd), kind="step_time_s")
    assert c.verdict == "no_change"
    c_fixed = compare_throughput(curve(b), curve(cnd), kind="step_time_s", warmup=None)
    assert c_fixed.candidate_median > c.candidate_median


def test_comparison_without_valid_points():
    c = compare_throughput(curve(step_times()), curve(np.array([np.nan, 0.0])), kind="step_time_s")
    assert c.verdict == "inconclusive" and c.candidate_median is None


def test_comparison_is_deterministic():
    a = compare_throughput(curve(step_times(seed=60)), curve(step_times(seed=61) * 1.2), kind="step_time_s")
    b = compare_throughput(curve(step_times(seed=60)), curve(step_times(seed=61) * 1.2), kind="step_time_s")
    assert a.to_dict() == b.to_dict()


def test_a_few_random_outliers_are_not_periodic_dips():
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        t = step_times(n=1000, seed=100 + seed)
        t[rng.choice(1000, size=4, replace=False)] *= 2.0
        r = analyze_throughput(curve(t), kind="step_time_s")
        assert r.dips is None, seed


def test_periodic_stalls_are_one_finding_with_their_period():
    # evaluation every 250 iterations, logged every 10: nanoGPT-style
    steps = np.arange(0, 5010, 10)
    t = step_times(n=steps.size, seed=8) * 1000
    t[(steps % 250 == 0) & (steps > 0)] = 35_000.0
    r = analyze_throughput(curve(t, steps), kind="step_time_ms")
    assert r.dips.period_steps == 250 and r.dips.p_value < 0.001
    # pauses at one period are time spent evaluating, information, not a throughput stall
    assert codes(r) == ["evaluation_time"] and r.stalls == ()
    [f] = r.findings
    assert str(f.severity) == "info" and "every 250 steps" in f.message and f.evidence["period_steps"] == 250
    assert len(f.evidence["steps"]) == 20 and f.evidence["seconds"] == pytest.approx(20 * 34.5, rel=0.01)
    # 690 s of 20 x 34.5 s pauses in ~ 3,200 s: a large share, so the advice to evaluate less often
    assert f.evidence["share"] == pytest.approx(690 / (690 + 501 * 0.5), rel=0.05)
    assert "evaluate less often" in f.message


def test_pauses_at_epoch_starts_are_evaluation_time_with_their_share():
    # 5 epochs of 200 steps; each epoch's first logged interval holds a 20 s validation pass
    steps = np.arange(0, 1000, 5)
    t = step_times(n=steps.size, seed=21)
    at_epoch = (steps % 200 == 0) & (steps > 0)
    t[at_epoch] = 20.0 / 5  # mean seconds per step over the 5-step interval
    r = analyze_throughput(curve(t, steps), kind="step_time_s", interval_means=True,
                           epoch_steps=np.arange(200, 1000, 200))
    [f] = r.findings
    assert f.code == "evaluation_time" and str(f.severity) == "info" and "epoch" in f.message
    assert f.evidence["steps"] == [200, 400, 600, 800]
    assert f.evidence["seconds"] == pytest.approx(4 * (20 - 5 * 0.5), rel=0.05)
    run = 5 * float(np.sum(t))
    assert f.evidence["share"] == pytest.approx(f.evidence["seconds"] / run, rel=0.05)


@pytest.mark.parametrize("evaluated", ["at_dips", "nowhere", "every_step"])
def test_periodic_dips_at_evaluations_are_evaluation_time(evaluated):
    """A loop that times each step with the evaluation at its top (build-nanogpt, nanoGPT) is ~2x slower at
    every evaluation: too mild for a stall, but time spent evaluating, not a throughput problem. Without
    evaluation steps, or with one at every logged step (nothing told apart), the dips stay a warning."""
    steps = np.arange(0, 3000)
    t = step_times(n=steps.size, seed=23, level=20.0)
    t[(steps % 25 == 0) & (steps > 0)] *= 2.3
    evals = {"at_dips": np.arange(0, 3000, 25), "nowhere": None, "every_step": steps}[evaluated]
    r = analyze_throughput(curve(t, steps), kind="step_time_s", eval_steps=evals)
    assert r.dips is not None and r.dips.period_steps == 25
    if evaluated == "at_dips":
        assert "throughput_dips" not in codes(r)
        [f] = r.findings
        assert f.code == "evaluation_time" and str(f.severity) == "info" and "at evaluation steps" in f.message
        assert f.evidence["steps"] == list(range(25, 3000, 25))
        assert f.evidence["seconds"] == pytest.approx(119 * 1.3 * 20.0, rel=0.05)
    else:
        assert "throughput_dips" in codes(r) and "evaluation_time" not in codes(r)


def test_a_stall_that_costs_nothing_is_no_finding():
    # microsecond timing jitter: one interval 10x the pace of 1 us steps is a "stall" of 9 us
    t = step_times(n=500, seed=22, level=1e-6)
    t[250] = 1e-5
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert [st.step for st in r.stalls] == [250] and r.stall_seconds_lost < 1e-4
    assert "throughput_stall" not in codes(r)


def test_a_faster_start_is_a_drop_not_warmup():
    t = step_times(n=1000, seed=9)
    t[:1] = 60.0  # compile
    t[200:] *= 1.18  # slower after the first evaluation
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert r.n_warmup_points == 1
    [cp] = r.change_points
    assert abs(cp.step - 200) <= 3 and cp.slowdown_pct == pytest.approx(18, abs=3)


def test_candidate_must_differ_from_every_baseline_run():
    steady = curve(step_times(seed=70, level=0.5))
    noisy = curve(0.56 * np.exp(np.random.default_rng(0).normal(0, 0.4, 30)))  # a short, very noisy baseline
    cand = curve(step_times(seed=72, level=0.66))
    assert compare_throughput(steady, cand, kind="step_time_s").verdict == "regression"
    c = compare_throughput([steady, noisy], cand, kind="step_time_s")
    assert c.candidate_median > c.baseline_band[1]  # outside the band ...
    assert (
        c.verdict == "inconclusive" and 0.002 < c.p_value < 0.1
    )  # ... but not clearly slower than the noisy run


def test_a_wandering_level_is_not_cut_into_drops():
    # strongly autocorrelated pace (rho 0.9: the level drifts by several % over hundreds of steps)
    for seed in range(5):
        r = analyze_throughput(curve(step_times(n=2000, seed=seed, rho=0.9)), kind="step_time_s")
        assert r.change_points == (), seed


def test_the_end_of_a_fast_episode_is_not_a_drop():
    t = step_times(n=2000, seed=11)
    t[800:1100] *= 0.7  # a fast stretch (e.g. shorter sequences), then back to the usual pace
    r = analyze_throughput(curve(t), kind="step_time_s")
    assert [round(cp.slowdown_pct / 10) for cp in r.change_points] == [-3, 4]
    assert "throughput_drop" not in codes(r)


def test_compare_on_step_times_derived_from_wall_time():
    steps = np.arange(0, 3000, 10)

    def loss_curve(per_step):
        wall = 1.7e9 + np.concatenate([[0.0], np.cumsum(per_step[1:] * 10)])
        return Curve.from_arrays(steps, np.linspace(3, 1, steps.size), tag="loss", wall_time=wall)

    base = loss_curve(step_times(n=steps.size, seed=80))
    cand = loss_curve(step_times(n=steps.size, seed=81) * 1.3)
    c = compare_throughput(base, cand, kind="wall_time")
    assert c.unit == "s/step" and c.verdict == "regression"
    assert c.slowdown_pct == pytest.approx(30, abs=4)
