import json

import numpy as np
import pytest

from tanalyze.analysis.overfitting import analyze_overfitting
from tanalyze.curves import Curve
from tanalyze.datasets import make_curve


@pytest.mark.parametrize("n_steps", [40, 1000, 30000])
@pytest.mark.parametrize("seed", range(3))
def test_onset_is_inside_the_known_window(n_steps, seed):
    curves, truth = make_curve("overfitting", n_steps=n_steps, seed=seed, output="curves")
    result = analyze_overfitting(curves["val/loss"], curves["train/loss"])
    assert result.detected and result.pattern == "rising"
    lo, hi = truth.val_min_window
    assert lo <= result.onset_step <= hi
    assert result.gl_end > 20 and result.rise_rel > 0.2 and result.gap_trend == "growing"
    assert result.train_end < result.train_at_onset
    assert 0.5 < result.confidence <= 1
    [finding] = result.findings
    assert finding.code == "overfitting" and finding.step == result.onset_step and "GL =" in finding.message
    json.dumps(result.to_dict())


@pytest.mark.parametrize("kind", ["normal", "underfitting"])
def test_no_overfitting_when_val_keeps_falling(kind):
    for seed in range(5):
        curves, _ = make_curve(kind, n_steps=2000, seed=seed, output="curves")
        result = analyze_overfitting(curves["val/loss"], curves["train/loss"])
        assert not result.detected and result.findings == ()


def test_minimum_window_spans_evaluations_within_tolerance():
    val = Curve.from_arrays([10, 20, 30, 40, 50, 60, 70], [2.0, 1.0, 1.005, 0.999, 1.2, 1.3, 1.4], "val")
    result = analyze_overfitting(val)
    assert result.onset_step == 40 and result.min_window == (20, 40)
    assert result.detected and result.train_tag is None and result.gap_trend is None
    assert result.gl_end == pytest.approx(100 * (1.4 / 0.999 - 1))


def test_noise_dip_is_not_overfitting():
    rng = np.random.default_rng(5)
    steps = np.arange(1, 41) * 100
    val = 1.0 * np.exp(0.03 * rng.standard_normal(40))  # flat and noisy
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"))
    assert not result.detected


def test_rising_train_loss_is_degradation_not_overfitting():
    steps = np.arange(1, 21) * 10
    val = np.concatenate([np.linspace(2, 1, 10), np.linspace(1.1, 2.0, 10)])
    train = val * 0.9
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"), Curve.from_arrays(steps, train, "train"))
    assert not result.detected and "training loss rose" in result.reason


def test_a_lone_low_draw_after_the_turn_is_not_the_minimum():
    # falls to 0.8 at evaluation 10 and climbs to 0.95 by 30; one evaluation late on is drawn low (0.70)
    steps = np.arange(1, 31) * 50
    wobble = 0.005 * np.sin(np.arange(30) * 2.1)
    val = np.concatenate([np.linspace(1.0, 0.8, 10), np.linspace(0.8, 0.95, 21)[1:]]) * (1 + wobble)
    val[24] = 0.70
    train = np.linspace(1.0, 0.3, 30)
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"), Curve.from_arrays(steps, train, "train"))
    assert result.detected and result.pattern == "rising"
    assert 400 <= result.onset_step <= 600 and result.val_min == pytest.approx(val[8:11].min())
    [finding] = result.findings
    assert "0.7 at step 1250, is a lone low draw" in finding.message
    # the same low draw with the curve still falling around it is not taken away: still improving
    falling = np.linspace(1.0, 0.75, 30)
    falling[24] = 0.70
    assert not analyze_overfitting(Curve.from_arrays(steps, falling, "val")).detected


def test_a_training_loss_that_climbs_after_the_minimum_and_comes_back_is_degradation():
    # the validation loss turns at evaluation 10 and rises; the training loss rises with it over the later half
    # and is back at its earlier level only at the very end
    steps = np.arange(1, 31) * 10
    val = np.concatenate([np.linspace(2, 1, 10), np.linspace(1.05, 1.8, 20)])
    train = np.concatenate([np.linspace(1.8, 0.9, 10), np.linspace(0.95, 1.6, 17), [1.0, 0.9, 0.9]])
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"), Curve.from_arrays(steps, train, "train"))
    assert not result.detected and "training loss rose" in result.reason


@pytest.mark.parametrize("train_trend", [0.0, 0.5])
def test_a_noisy_per_step_training_loss_is_read_for_its_level(train_trend):
    """A per-step training loss with 15% noise per point and 10 points per evaluation: its level at the validation
    minimum and at the end, each a median of 10 points, differ by chance by several percent. Flat, it has not
    risen: the validation loss's clear rise is overfitting. Rising by half (far beyond that noise), it is
    degradation."""
    rng = np.random.default_rng(11)
    val_steps = np.arange(1, 61) * 100
    val = np.concatenate([np.linspace(1.3, 0.9, 30), np.linspace(0.9, 1.0, 30)])
    train_steps = np.arange(10, 6010, 10)
    level = 0.8 * np.exp(np.where(train_steps > 3000, train_trend * (train_steps - 3000) / 3000, 0.0))
    train = level * np.exp(0.15 * rng.standard_normal(train_steps.size))
    result = analyze_overfitting(Curve.from_arrays(val_steps, val, "val"), Curve.from_arrays(train_steps, train, "train"))
    if train_trend:
        assert not result.detected and "training loss rose" in result.reason
    else:
        assert result.detected and result.pattern == "rising", result.reason


def test_widening_gap_while_val_stalls_for_long():
    # 48 evaluations after the minimum (at sin(11) ~ -1) while the training loss halves: an established stall
    steps = np.arange(1, 76)
    val = np.concatenate([np.linspace(1.5, 0.75, 15), 0.75 + 0.004 * np.sin(np.arange(60))])
    train = np.concatenate([np.linspace(1.5, 0.7, 15), np.linspace(0.68, 0.3, 60)])
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"), Curve.from_arrays(steps, train, "train"))
    assert result.detected and result.pattern == "widening_gap" and result.gap_trend == "growing"
    assert result.points_after_min == 48 and 0.3 < result.confidence < 0.75
    assert [f.code for f in result.findings] == ["overfitting"]


def test_short_val_plateau_while_train_falls_is_information():
    # the same shape with 13 evaluations after the minimum: flat is not a rise, and 13 is within patience
    steps = np.arange(1, 41)
    val = np.concatenate([np.linspace(1.5, 0.75, 15), 0.75 + 0.004 * np.sin(np.arange(25))])
    train = np.concatenate([np.linspace(1.5, 0.7, 15), np.linspace(0.68, 0.3, 25)])
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"), Curve.from_arrays(steps, train, "train"))
    assert not result.detected and result.pattern is None and "a plateau, not a rise" in result.reason
    [finding] = result.findings
    assert finding.code == "val_plateau" and str(finding.severity) == "info" and finding.step == 27


def test_a_plateau_reports_its_rise_from_the_level_the_noise_band_is_read_from():
    """A noisy validation loss whose later evaluations lie 25% above its lowest draw but within its noise of the level
    around that draw: the finding quotes that level and the rise from it, not a rise larger than its band next to
    the words 'within its noise' (it said it 'stayed near its minimum' and '+25.5% above it')."""
    steps = np.arange(0, 2200, 200)
    val = np.array([0.31, 0.256, 0.268, 0.231, 0.301, 0.27, 0.253, 0.285, 0.292, 0.296, 0.289])
    train = np.linspace(0.46, 0.027, len(steps))
    result = analyze_overfitting(Curve.from_arrays(steps, val, "eval_loss"), Curve.from_arrays(steps, train, "loss"))
    [finding] = result.findings
    assert finding.code == "val_plateau"
    assert "has not improved on its minimum 0.231 (step 600) in 7 evaluations" in finding.message
    assert "above the level around it (0.268)" in finding.message and "within its noise, a band of" in finding.message


def test_incomparable_losses_have_no_gap():
    curves, _ = make_curve("overfitting", n_steps=500, seed=0, output="curves")
    result = analyze_overfitting(curves["val/loss"], curves["train/loss"], losses_comparable=False)
    assert result.detected and result.gap_at_onset is None and result.gap_trend is None


def test_too_few_points_and_missing_curve():
    assert "cannot be judged" in analyze_overfitting(None).reason
    short = analyze_overfitting(Curve.from_arrays([1, 2, 3], [1.0, 0.5, 0.9], "val"))
    assert not short.detected and "only 3" in short.reason
    at_end = analyze_overfitting(Curve.from_arrays([1, 2, 3, 4, 5], [5.0, 4.0, 3.0, 2.0, 1.0], "val"))
    assert not at_end.detected and "still improving" in at_end.reason


def test_negative_validation_loss():
    steps = np.arange(20)
    val = np.concatenate([np.linspace(-1, -5, 10), np.linspace(-4.5, -2, 10)])
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"))
    assert result.detected and result.onset_step == 9 and result.gl_end is None


def _healthy_pair(seed: int) -> tuple[Curve, Curve]:
    """A healthy run: training loss decaying to a floor with multiplicative noise; validation = the same curve
    x 1.1 + i.i.d. noise, evaluated 5 to 100 times (noise 0.2-8 % of the floor)."""
    r = np.random.default_rng(seed)
    n = int(r.integers(200, 3000))
    evals = int(r.choice([5, 8, 12, 20, 40, 100]))
    t = np.arange(1, n + 1)
    floor, amp, tau = r.uniform(0.05, 1.0), r.uniform(0.5, 3.0), r.uniform(0.05, 0.5) * n
    smooth = floor + amp * np.exp(-t / tau)
    train = smooth * np.exp(r.normal(0, r.uniform(0.01, 0.2), n))
    at = np.linspace(n / evals, n, evals).astype(int)
    val = 1.1 * smooth[at - 1] + r.normal(0, r.uniform(0.002, 0.08) * floor * 1.1, evals)
    return Curve.from_arrays(t, train, "train/loss"), Curve.from_arrays(at, val, "val/loss")


def test_no_false_alarm_on_300_healthy_runs_with_noisy_validation():
    # Before the persistence test (>= 5 evaluations after the minimum over >= 10 % of the run, and a Kendall
    # trend at p < 0.01 or a clear rise) 5 of these 300 were called overfitting: a low draw of the noise
    # near the end read as the minimum.
    alarms = [seed for seed in range(300) if analyze_overfitting(*reversed(_healthy_pair(seed))).detected]
    assert alarms == []


def test_clear_but_noisy_overfit_is_found_in_its_window():
    r = np.random.default_rng(7)
    steps = np.arange(1, 61) * 10
    x = steps / steps[-1]
    # falls to its minimum at 40 % of the run, then rises 40 %; evaluations noisy (+-4 %)
    clean = np.where(x <= 0.4, 1.0 - 1.2 * x, 0.52 * (1 + 0.4 * (x - 0.4) / 0.6))
    val = clean * np.exp(r.normal(0, 0.04, x.size))
    train = Curve.from_arrays(np.arange(1, 601), 1.0 * np.exp(-np.arange(1, 601) / 150) + 0.05, "train")
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val"), train)
    assert result.detected and result.pattern == "rising"
    assert 150 <= result.onset_step <= 330  # the noisy bottom: within a few evaluations of step 240
    assert result.rise_rel > 0.15


def test_a_small_rise_in_the_last_3_percent_of_a_long_run_is_not_overfitting():
    epochs = np.arange(500)
    val = 0.5 + 0.5 * np.exp(-epochs / 60)
    val[-15:] *= 1.029  # +2.9 % over the last 15 epochs
    train = Curve.from_arrays(epochs, 0.45 + 0.5 * np.exp(-epochs / 60), "loss")
    result = analyze_overfitting(Curve.from_arrays(epochs, val, "val_loss"), train)
    assert not result.detected and result.findings == ()
    assert result.onset_step is not None and result.onset_step >= 480 and result.points_after_min <= 15


def test_a_clear_rise_at_once_after_the_minimum_that_eases_a_little_since_is_overfitting():
    # a Keras regression on 40 points: the validation MSE is lowest at epoch 2, 40% above it by epoch 20, and
    # eases 3% over the next 280 epochs while the training MSE goes to ~0
    rng = np.random.default_rng(5)
    epochs = np.arange(300)
    val = np.concatenate([[0.83, 0.56, 0.55], np.linspace(0.6, 0.79, 17), np.linspace(0.79, 0.77, 280)])
    val = val * np.exp(rng.normal(0, 0.004, 300))
    train = np.geomspace(0.7, 6e-6, 300)
    result = analyze_overfitting(Curve.from_arrays(epochs, val, "val_loss"), Curve.from_arrays(epochs, train, "loss"))
    assert result.detected and result.pattern == "rising" and result.onset_step == 2
    assert result.trend_after_min < 0


def test_a_rise_from_a_minimum_at_the_first_evaluation_is_measured_from_that_evaluation():
    # lowest at the first evaluation, then a jump and a level 20% above it: the level the rise is read from is the
    # first evaluation's, not its mean with the jump right after it
    rng = np.random.default_rng(8)
    epochs = np.arange(300)
    val = np.concatenate([[0.96, 1.24], np.full(298, 1.15)]) * np.exp(rng.normal(0, 0.004, 300))
    train = np.concatenate([np.geomspace(1.05, 1e-6, 50), 1e-6 * np.exp(rng.normal(0, 0.5, 250))])  # memorised
    result = analyze_overfitting(Curve.from_arrays(epochs, val, "val_loss"), Curve.from_arrays(epochs, train, "loss"))
    assert result.detected and result.pattern == "rising" and result.onset_step == 0
    assert result.rise_rel == pytest.approx(0.2, abs=0.01)


@pytest.mark.parametrize("seed", range(5))
def test_a_large_rise_after_wild_first_epochs_is_overfitting(seed):
    """A short Keras or fastai run: its first epochs swing wildly (0.48, 0.16, 0.61 …), which widens the noise the
    rise is read against; the validation loss then rises 60 % above its minimum at nearly every later evaluation
    while the training loss keeps falling. Too few evaluations for the trend test, too noisy for 'clear': it is
    overfitting all the same, not a plateau 'near its minimum'."""
    rng = np.random.default_rng(seed)
    early = [0.48, 0.16, 0.61, 0.21, 0.18, 0.09, 0.078]
    later = 0.12 * np.exp(rng.normal(0, 0.1, 9)) * np.linspace(0.9, 1.2, 9)
    val = Curve.from_arrays(np.arange(17), np.array(early + [0.068] + list(later))[:17], "val_loss")
    train = Curve.from_arrays(np.arange(17), 0.25 * np.exp(-0.17 * np.arange(17)), "loss")
    result = analyze_overfitting(val, train)
    assert result.detected and result.onset_step == 7, result.reason
    # the same shape rising only 20 %: still not told from the noise of those first epochs
    low = Curve.from_arrays(val.steps, np.where(val.steps > 7, 0.068 + (val.values - 0.068) * 0.25, val.values), "val")
    assert not analyze_overfitting(low, train).detected


def test_a_rise_its_noise_cannot_yet_tell_from_chance_is_reported_not_judged():
    """A real YOLO classifier's validation loss (19 epochs, as its results.csv holds it): its minimum 0.14527 at
    epoch 13, then 0.22372 … 0.2582 — up, but no more than its wild early epochs swung. Not overfitting, and not
    silent: a ``val_rise`` information."""
    values = [0.23504, 0.21328, 0.21424, 0.28638, 0.28395, 0.23043, 0.17545, 0.28162, 0.1854, 0.17146, 0.16161,
              0.15557, 0.14527, 0.22372, 0.19105, 0.1634, 0.22947, 0.21077, 0.2582]
    train = [0.56924, 0.24155, 0.22374, 0.28318, 0.2244, 0.19211, 0.18923, 0.14878, 0.14138, 0.13806, 0.13125,
             0.11133, 0.09866, 0.12688, 0.10651, 0.09545, 0.09116, 0.07657, 0.08758]
    steps = list(range(1, 20))
    r = analyze_overfitting(Curve.from_arrays(steps, values, tag="val/loss"),
                            Curve.from_arrays(steps, train, tag="train/loss"))
    assert not r.detected
    (finding,) = r.findings
    assert finding.code == "val_rise" and finding.severity == "info" and finding.step == 13
    assert "val/loss rose after its minimum 0.1453 (step 13); its later evaluations are +58.0% above it" in finding.message


def test_a_validation_loss_frozen_at_one_value_is_a_warning():
    """A real YOLO classifier whose training loss reached exactly 0 at epoch 15: its validation loss 0.314, 0.31345,
    0.31326, then 0.31323 at each of the 197 evaluations left. The model's outputs no longer change."""
    values = [0.314, 0.31345, 0.31326] + [0.31323] * 197
    train = [0.03721, 0.00032, 9e-05] + [1e-05] * 11 + [0.0] * 186
    steps = list(range(1, 201))
    r = analyze_overfitting(Curve.from_arrays(steps, values, tag="val/loss"),
                            Curve.from_arrays(steps, train, tag="train/loss"))
    [finding] = [f for f in r.findings if f.code == "val_frozen"]
    assert finding.severity == "warning" and finding.step == 4
    assert finding.message.startswith("val/loss is 0.31323 at each of its last 197 evaluations (from step 4)")
    # a validation loss that repeats a value a few times at its end is no frozen one
    noisy = [0.5 / k for k in range(1, 31)] + [0.01] * 5
    assert not [f for f in analyze_overfitting(Curve.from_arrays(range(35), noisy, tag="v")).findings
                if f.code == "val_frozen"]


def test_a_validation_level_that_moved_up_is_overfitting_though_its_minimum_is_a_lone_low_draw():
    """A real U-Net's Keras CSVLogger (32 epochs): the validation loss 0.013–0.015 over its first epochs, a lone
    0.00893 at epoch 8, then 0.017–0.048 to the end, while the training loss fell smoothly from 0.0036 to 0.0012: its
    level after the minimum is two thirds above its level before, at nearly every later epoch."""
    val = [0.01359, 0.01299, 0.01372, 0.0146, 0.01438, 0.02502, 0.01625, 0.01472, 0.00893, 0.04843, 0.01181, 0.02004,
           0.0206, 0.01658, 0.02307, 0.01902, 0.0254, 0.02044, 0.02218, 0.02399, 0.02066, 0.03573, 0.01798, 0.02589,
           0.02375, 0.03395, 0.02813, 0.0332, 0.02447, 0.02839, 0.04821, 0.02798]
    train = [0.00889, 0.00567, 0.00513, 0.00484, 0.00459, 0.00429, 0.00406, 0.00385, 0.00361, 0.00342, 0.00325,
             0.00316, 0.003, 0.00288, 0.00272, 0.00259, 0.00246, 0.00236, 0.00222, 0.00209, 0.00201, 0.00194, 0.00188,
             0.00172, 0.00164, 0.0016, 0.00151, 0.00141, 0.00138, 0.0013, 0.00123, 0.00119]
    r = analyze_overfitting(Curve.from_arrays(range(32), val, tag="val_loss"), Curve.from_arrays(range(32), train, tag="loss"))
    assert r.detected and r.onset_step == 8
    assert r.reason.startswith("validation loss after its minimum at step 8 sits 67% above its level up to there")


def _short_run(after: list[float]) -> tuple[Curve, Curve]:
    """Ten epochs of a small text classifier: the validation loss falls with a noise of about half a percent to its
    minimum at epoch 5, then ``after``; the training loss falls throughout."""
    epochs = list(range(6 + len(after)))
    val = Curve.from_arrays(epochs, [0.515, 0.480, 0.474, 0.478, 0.476, 0.466, *after], "val_loss")
    train = [0.52, 0.48, 0.46, 0.44, 0.42, 0.40, 0.38, 0.36, 0.34, 0.32][:len(epochs)]
    return val, Curve.from_arrays(epochs, train, "loss")


def test_a_short_climb_at_every_evaluation_well_beyond_the_noise_is_overfitting():
    """Four evaluations after the minimum, each above the one before, ending 8.6% above it where the noise before
    it is under a percent: a rise that started at the minimum, not a plateau (four evaluations are too few for a
    trend test, and the rise is short of 15%)."""
    result = analyze_overfitting(*_short_run([0.484, 0.491, 0.499, 0.506]))
    assert result.detected and result.pattern == "rising" and result.onset_step == 5
    assert result.findings[0].code == "overfitting"


@pytest.mark.parametrize("after", [[0.484, 0.499, 0.491, 0.506],  # not a climb at every evaluation
                                   [0.467, 0.469, 0.470, 0.472],  # a climb within a few noise sigmas
                                   [0.484, 0.491, 0.499]])  # three evaluations: a 7% climb is no proof
def test_a_short_climb_short_of_the_rule_is_no_overfitting(after):
    assert not analyze_overfitting(*_short_run(after)).detected


def test_a_plateau_names_a_lone_lowest_draw_and_a_passing_bump_as_such():
    """A validation loss that levelled off, bumped up for a few evaluations and came back, with one evaluation drawn
    lower than all others between higher neighbours: the finding named the level it measured as 'its minimum' while
    the lowest evaluation was later, and called a rise beyond its band 'within its noise'."""
    steps = np.arange(40)
    val = np.r_[np.geomspace(0.33, 0.037, 15), [0.042, 0.036, 0.042, 0.032, 0.031, 0.029, 0.028, 0.032, 0.036, 0.029,
                                                0.025, 0.0256, 0.027, 0.0263, 0.039, 0.041, 0.054, 0.062, 0.066, 0.045,
                                                0.038, 0.033, 0.0225, 0.030, 0.028]]
    train = np.geomspace(1.0, 0.015, 40)
    result = analyze_overfitting(Curve.from_arrays(steps, val, "val_loss"), Curve.from_arrays(steps, train, "loss"))
    [finding] = result.findings
    assert finding.code == "val_plateau" and result.onset_step == 25
    assert "its lowest evaluation, 0.0225 at step 37, is a lone low draw" in finding.message
    assert "above the level around it (0.0256)" in finding.message and "within its noise, a band of" in finding.message


def test_a_plateaus_rise_beyond_its_band_is_not_called_within_its_noise():
    from tanalyze.analysis.overfitting import _plateau_level

    beyond = _plateau_level(np.log(1.298), np.log(0.0255), np.log(1.209), 0.57, True, 0.0278)
    assert beyond == ("the later evaluations are +29.8% above the level around it (0.0255), the last 0.0278, but only "
                      "57% of them beyond its noise (a band of 20.9%): no lasting rise")
    within = _plateau_level(np.log(1.092), np.log(0.2665), np.log(1.211), 0.0, True, 0.2878)
    assert within.endswith(": within its noise, a band of 21.1%")


def test_the_training_level_quoted_at_the_onset_is_the_level_there_not_since_the_last_evaluation():
    """A Whisper fine-tune: the training loss every 25 steps falls from 0.89 to 0.10 by step 1000, the evaluation
    every 1000 steps is lowest at step 1000. The message quoted the median of the 40 points since step 0 (the level
    at step 500) for the training loss at the onset; the level of the last points before step 1000 is 0.10-0.15."""
    steps = np.arange(25, 5001, 25)
    rng = np.random.default_rng(3)
    train = np.where(steps <= 1000, 0.89 * np.exp(-steps / 470), 0.1 * np.exp(-(steps - 1000) / 600))
    train = train * np.exp(rng.normal(0, 0.08, steps.size))
    val = Curve.from_arrays(np.arange(1000, 5001, 1000), np.array([0.3075, 0.39, 0.43, 0.45, 0.468]), "eval_loss")
    result = analyze_overfitting(val, Curve.from_arrays(steps, train, "loss"))
    assert result.detected and result.onset_step == 1000
    assert 0.1 <= result.train_at_onset <= 0.15
    assert f"while loss went from {result.train_at_onset:.4g}" in result.reason + result.findings[0].message


def test_a_plateau_whose_later_evaluations_are_all_beyond_the_band_says_they_are_too_few():
    """Three evaluations after the minimum, all beyond the band: the wording had been "but only 100% of them beyond its
    noise: no lasting rise"."""
    from tanalyze.analysis.overfitting import _plateau_level

    few = _plateau_level(np.log(1.101), np.log(0.4685), np.log(1.023), 1.0, True, 0.5339, 0.7)
    assert few.endswith("100% of them beyond its noise (a band of 2.3%), too few evaluations to call the rise lasting")
    assert "but only" not in few
