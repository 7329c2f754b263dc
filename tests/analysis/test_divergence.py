import json

import numpy as np
import pytest

from tanalyze.analysis.divergence import analyze_divergence
from tanalyze.curves import Curve
from tanalyze.datasets import make_curve


@pytest.mark.parametrize("n_steps", [60, 2000, 20000])
def test_nonfinite_divergence_step_is_exact_and_onset_close(n_steps):
    curves, truth = make_curve("diverged", n_steps=n_steps, seed=3, output="curves")
    result = analyze_divergence(curves["train/loss"], grad_norm=curves["train/grad_norm"],
                                learning_rate=curves["train/learning_rate"])
    d = result.divergence
    assert d is not None and d.kind == "inf"
    assert d.step == truth.divergence_step == result.first_nonfinite_step
    assert truth.explosion_onset <= d.onset_step <= truth.explosion_onset + 3
    assert d.grad_norm_lead_steps is not None and abs(d.grad_norm_lead_steps - truth.grad_norm_lead) <= 3
    advice = d.restart
    assert advice.resume_at_or_before_step <= d.onset_step - 100 or advice.resume_at_or_before_step == 0
    assert advice.resume_at_or_before_step in curves["train/loss"].steps
    assert advice.lr_at_onset == pytest.approx(curves["train/learning_rate"].value_at(d.onset_step))
    assert advice.suggested_lr == pytest.approx(advice.lr_at_onset / 3)
    [finding] = [f for f in result.findings if f.code == "diverged_nonfinite"]
    assert finding.severity == "error" and str(d.step) in finding.message and str(advice.resume_at_or_before_step) in finding.message
    json.dumps(result.to_dict())


def test_explosion_without_nan_is_found_at_its_onset():
    curves, truth = make_curve("diverged", n_steps=3000, seed=1, nonfinite=False, output="curves")
    d = analyze_divergence(curves["train/loss"]).divergence
    assert d.kind == "explosion" and d.step == d.onset_step
    assert truth.explosion_onset <= d.step <= truth.explosion_onset + 1
    assert d.ratio > 10 and d.first_nonfinite_step is None


@pytest.mark.parametrize("seed", range(4))
def test_planted_spikes_are_found_at_their_steps(seed):
    curves, truth = make_curve("normal", n_steps=3000, seed=seed, spikes=5, output="curves")
    result = analyze_divergence(curves["train/loss"])
    assert [s.onset_step for s in result.spikes] == list(truth.spike_steps)
    for spike in result.spikes:
        assert spike.magnitude == pytest.approx(3.0, rel=0.25)
        assert spike.recovery_steps is not None and spike.recovery_steps <= 4
    assert result.divergence is None


@pytest.mark.parametrize("kind", ["normal", "overfitting", "underfitting"])
@pytest.mark.parametrize("n_steps", [20, 500, 50000])
def test_no_spikes_on_clean_curves(kind, n_steps):
    for seed in range(3):
        curves, _ = make_curve(kind, n_steps=n_steps, seed=seed, noise=0.05, output="curves")
        result = analyze_divergence(curves["train/loss"])
        assert result.spikes == () and result.divergence is None


def test_grad_norm_spike_leading_a_loss_spike_is_measured():
    steps = np.arange(300)
    loss = np.full(300, 2.0) * np.exp(0.01 * np.sin(steps))
    loss[200:203] *= [4.0, 2.0, 1.2]
    grad = np.ones(300) * np.exp(0.01 * np.cos(steps))
    grad[193:196] *= 20
    result = analyze_divergence(Curve.from_arrays(steps, loss, "loss"), grad_norm=Curve.from_arrays(steps, grad, "gn"))
    [spike] = result.spikes
    assert spike.onset_step == 200 and spike.peak_step == 200 and spike.grad_norm_lead_steps == 7


def test_transient_nan_is_a_warning_not_a_divergence():
    values = np.linspace(3, 1, 100)
    values[40:42] = np.nan
    result = analyze_divergence(Curve.from_arrays(np.arange(100), values, "loss"))
    assert result.divergence is None and result.first_nonfinite_step == 40 and result.nonfinite_points == 2
    assert [f.code for f in result.findings] == ["nonfinite_values"]


def test_edge_cases_do_not_fail():
    empty = analyze_divergence(Curve.from_arrays([], [], "loss"))
    assert empty.points == 0 and empty.divergence is None
    assert analyze_divergence(None).divergence is None
    one = analyze_divergence(Curve.from_arrays([5], [1.0], "loss"))
    assert one.divergence is None and one.spikes == ()
    all_nan = analyze_divergence(Curve.from_arrays([3, 4, 5], [np.nan] * 3, "loss"))
    assert all_nan.divergence.kind == "nan" and all_nan.divergence.step == 3
    constant = analyze_divergence(Curve.from_arrays(np.arange(50), np.full(50, 0.7), "loss"))
    assert constant.spikes == () and constant.divergence is None


def test_negative_losses_are_analysed_without_logs():
    rng = np.random.default_rng(0)
    steps = np.arange(1000, 2000)  # steps do not start at 0
    elbo = -100 + 50 * np.exp(-(steps - 1000) / 200) + rng.normal(0, 0.5, 1000)
    elbo[600] += 40
    result = analyze_divergence(Curve.from_arrays(steps, elbo, "elbo"))
    assert not result.log_space
    assert [s.onset_step for s in result.spikes] == [1600] and result.spikes[0].magnitude is None


def test_huge_finite_values_and_duplicate_steps():
    steps = np.repeat(np.arange(100), 3)  # three points per step (per-batch losses logged per epoch)
    values = np.full(300, 1e30)
    values[150:] = 1e33
    result = analyze_divergence(Curve.from_arrays(steps, values, "loss"))
    assert result.points == result.finite_points == 300 and result.analysed_points == 100
    assert result.divergence.kind == "explosion" and result.divergence.step == 50


def test_explosion_step_is_the_point_of_no_return_and_onset_is_earlier():
    steps = np.arange(160)
    values = np.ones(160) * np.exp(0.001 * np.sin(steps))
    values[100:] = 1.1 ** np.arange(1, 61)  # climbs from 1.1x; passes 10x at the 25th point (1.1^25 = 10.8)
    d = analyze_divergence(Curve.from_arrays(steps, values, "loss")).divergence
    assert d.kind == "explosion" and d.step == 124
    # onset: where the final climb was already 1.2x above the range (1.1^2 at step 101); resume 100 steps before
    assert 100 <= d.onset_step <= 103 and d.restart.resume_at_or_before_step == d.onset_step - 100
    # a 3x plateau never passes 10x: its step is the onset
    values[100:] = 3.0
    d = analyze_divergence(Curve.from_arrays(steps, values, "loss")).divergence
    assert d.kind == "explosion" and d.step == d.onset_step == 100


def test_a_log_ending_in_a_huge_blow_up_is_a_divergence_but_a_small_last_jump_is_a_spike():
    steps = np.arange(50)
    values = np.full(50, 2.0) * np.exp(0.01 * np.sin(steps))
    values[-1] = 45.0  # the job crashed right after this
    d = analyze_divergence(Curve.from_arrays(steps, values, "loss")).divergence
    assert d is not None and d.kind == "explosion" and d.step == 49
    values[-1] = 5.0
    result = analyze_divergence(Curve.from_arrays(steps, values, "loss"))
    assert result.divergence is None and result.spikes[0].end_step is None and result.spikes[0].onset_step == 49


@pytest.mark.parametrize(("after", "severity"), [(1, "info"), (6, "warning")])
def test_a_spike_in_the_last_points_of_a_log_is_not_yet_a_warning(after, severity):
    # a 3x spike, then 30% above the trend to the end: in the last 2 points it cannot be judged; 7 points on,
    # it has not come back
    rng = np.random.default_rng(4)
    n = 500
    loss = (1.0 + np.exp(-np.arange(n) / 80)) * np.exp(rng.normal(0, 0.02, n))
    loss[n - 1 - after] *= 3
    loss[n - after:] *= 1.3
    result = analyze_divergence(Curve.from_arrays(np.arange(n), loss, "loss"))
    spikes = [f for f in result.findings if f.code == "loss_spike"]
    assert spikes and str(spikes[0].severity) == severity
    assert ("whether it recovers cannot be seen" in spikes[0].message) == (severity == "info")


def test_loss_never_finite_is_no_learning_rate_problem():
    """A loss NaN from its first logged point diverged before any update could move it: the advice names the
    checkpoint, the inputs and the numerics, not a lower learning rate or clipping."""
    steps = np.arange(1, 201)
    lr = Curve.from_arrays(steps, np.linspace(1e-6, 2e-4, 200), "lr")
    d = analyze_divergence(Curve.from_arrays(steps, np.full(200, np.nan), "loss"), learning_rate=lr).divergence
    assert d.kind == "nan" and d.never_finite and d.step == 1
    assert d.restart.suggested_lr is None and d.restart.suggested_max_grad_norm is None
    assert "learning rate" not in d.restart.text.split(",")[0] and "checkpoint or initialisation" in d.restart.text
    [finding] = analyze_divergence(Curve.from_arrays(steps, np.full(200, np.nan), "loss"), learning_rate=lr).findings
    assert finding.code == "diverged_nonfinite" and "from its first logged step (1) and never finite" in finding.message
    assert "lower learning rate will not help" in finding.recommendation
    json.dumps(d.to_dict())

    late = np.r_[np.linspace(3.0, 2.0, 100), np.full(100, np.nan)]  # finite, then NaN: the usual advice
    d = analyze_divergence(Curve.from_arrays(steps, late, "loss"), learning_rate=lr).divergence
    assert not d.never_finite and d.step == 101 and d.restart.suggested_lr == pytest.approx(d.restart.lr_at_onset / 3)


@pytest.mark.parametrize(("settled", "diverged"), [(1.7, True), (1.12, False)])
def test_a_blow_up_the_loss_comes_down_from_only_to_a_much_higher_level_is_a_divergence(settled, diverged):
    # a language model knocked back to its unigram level: 1.8 -> hundreds -> settles at 1.7x 1.8 for good
    rng = np.random.default_rng(4)
    before = 1.8 * np.exp(rng.normal(0, 0.03, 300))
    blow_up = np.geomspace(600, 20, 40)
    after = settled * 1.8 * np.exp(rng.normal(0, 0.03, 300))
    loss = np.concatenate([before, blow_up, after])
    result = analyze_divergence(Curve.from_arrays(np.arange(len(loss)) * 5, loss, "train/loss"))
    d = result.divergence
    assert (d is not None) == diverged
    if diverged:
        assert d.kind == "explosion" and d.onset_step == 1500
        assert d.peak == pytest.approx(600) and d.settled == pytest.approx(settled * 1.8, rel=0.02)
        [finding] = [f for f in result.findings if f.code == "diverged_explosion"]
        assert "a peak of 600" in finding.message and "settled at 3.0" in finding.message
    else:  # it came down to within 12 %: a spike that cost a little, not a run undone
        assert any(spike.onset_step == 1500 for spike in result.spikes)


@pytest.mark.parametrize("start", [8e7, 50.0])
def test_a_spike_is_found_from_its_first_point_even_after_a_start_millions_of_times_higher(start):
    # a regression whose first predictions were wildly off (MSE 1e8 for three logged points, as a Lightning run
    # of ours logged), then around 6, and a 1e5x excursion for six points from step 25
    rng = np.random.default_rng(3)
    loss = np.concatenate([[start, start * 1.3, start / 3], 6.0 * np.exp(rng.normal(0, 0.3, 42))])
    loss[25:31] = [6.9e5, 5.4e5, 8.0e4, 1.8e6, 2.3e6, 7.9e5]
    result = analyze_divergence(Curve.from_arrays(np.arange(45), loss, "loss"))
    (spike,) = [s for s in result.spikes if s.onset_step >= 20]
    assert spike.onset_step == 25 and spike.baseline < 20


def test_a_memorised_training_loss_wobbling_up_from_its_floor_is_no_explosion():
    # a training MSE from 1.0 to 2e-7 (40 points memorised), then up to ~5e-3 for good, bouncing to 0.027 now and
    # then: 25,000x its floor, but a two-hundredth of where it started
    rng = np.random.default_rng(6)
    loss = np.concatenate([np.geomspace(1.0, 2e-7, 160), np.geomspace(2e-7, 5e-3, 20), 5e-3 * np.exp(rng.normal(0, 0.3, 120))])
    loss[[185, 186, 230, 231, 290]] = 0.027
    result = analyze_divergence(Curve.from_arrays(np.arange(300), loss, "loss"))
    assert result.divergence is None


def test_a_spike_gone_at_the_next_logged_point_is_information_even_in_a_short_run():
    # a 10-epoch YOLO validation loss: 1.6x at epoch 2, back at epoch 3 (a tenth of the run is under one epoch)
    val = np.array([5.322, 8.585, 5.986, 6.855, 5.512, 4.73, 4.893, 4.045, 3.724, 3.114])
    result = analyze_divergence(Curve.from_arrays(np.arange(1, 11), val, "val_loss"))
    (finding,) = [f for f in result.findings if f.code == "loss_spike"]
    assert finding.step == 2 and finding.severity == "info"
