import json

import numpy as np
import pytest

from tanalyze.analysis.early_stopping import progress_strips, simulate_early_stopping
from tanalyze.curves import Curve
from tanalyze.datasets import make_curve

VAL = Curve.from_arrays([10, 20, 30, 40, 50, 60, 70, 80, 90], [1.0, 0.8, 0.7, 0.72, 0.71, 0.69, 0.75, 0.8, 0.9], "val")


def stops(result):
    return {r.rule: r.stop_step for r in result.rules}


def test_patience_rules_on_a_hand_series():
    # patience 2: evaluations at 40 and 50 do not beat 0.7 -> stop at 50
    assert stops(simulate_early_stopping(VAL, patience=2))["hf_patience"] == 50
    assert stops(simulate_early_stopping(VAL, patience=2))["lightning_patience"] == 50
    # patience 3: 0.69 at 60 resets the counter; 70, 80, 90 are worse -> stop at 90
    result = simulate_early_stopping(VAL, patience=3)
    rule = result.rule("lightning_patience")
    assert rule.stop_step == 90 and rule.stop_evaluation == 9 and rule.best_step == 60
    assert rule.best_value == 0.69 and rule.given_up == 0.0
    assert rule.gained_vs_final == pytest.approx(0.9 - 0.69)
    assert rule.compute_saved == 0.0  # stops at the last evaluation


def test_threshold_semantics_differ_between_transformers_and_lightning():
    val = Curve.from_arrays([10, 20, 30, 40, 50], [1.0, 0.99, 0.98, 0.97, 0.96], "val")
    result = simulate_early_stopping(val, patience=2, threshold=0.015, min_delta=0.015)
    # HF: best_metric follows every strict improvement, each step improves by only 0.01 -> counter 1, 2 -> stop at 30
    assert result.rule("hf_patience").stop_step == 30
    # Lightning: best only moves on an improvement > min_delta: 1.0 -> 0.98 (wait reset) -> 0.96 (reset): no stop
    assert result.rule("lightning_patience").stop_step is None


def test_prechelt_gl_and_up_on_a_hand_series():
    result = simulate_early_stopping(VAL, gl_alpha=5.0, up_strips=2)
    # GL(40) = 100 * (0.72 / 0.7 - 1) = 2.86; GL(70) = 100 * (0.75 / 0.69 - 1) = 8.7 > 5
    assert result.rule("prechelt_gl").stop_step == 70
    # rises at 70 and 80: two successive increases
    assert result.rule("prechelt_up").stop_step == 80
    assert result.rule("prechelt_pq").note == "needs a training loss" and result.rule("prechelt_pq").stop_step is None


def test_prechelt_pq_uses_training_strips():
    train = Curve.from_arrays(np.arange(1, 91), np.linspace(1.0, 0.5, 90), "train")
    p = progress_strips(train, VAL.steps, 5)
    # a strip of 10 linearly falling points cut into 5 groups: medians step down evenly
    strip = np.linspace(1.0, 0.5, 90)[80:90]
    medians = np.array([np.median(g) for g in np.array_split(strip, 5)])
    assert p[-1] == pytest.approx(1000 * (medians.mean() / medians.min() - 1))
    result = simulate_early_stopping(VAL, train, pq_alpha=0.5)
    assert result.rule("prechelt_pq").stopped


def test_lightning_stops_on_nonfinite_and_saved_compute():
    val = Curve.from_arrays([100, 200, 300, 400], [1.0, 0.9, np.nan, 0.8], "val")
    train = Curve.from_arrays([0, 400, 1000], [2.0, 1.0, 0.9], "train")
    result = simulate_early_stopping(val, train, patience=5)
    rule = result.rule("lightning_patience")
    assert rule.stop_step == 300 and rule.best_step == 200
    assert rule.compute_saved == pytest.approx(1 - 300 / 1000)
    assert result.first_step == 0 and result.last_step == 1000


def test_synthetic_overfitting_run_reports_savings():
    curves, truth = make_curve("overfitting", n_steps=2000, seed=0, output="curves")
    result = simulate_early_stopping(curves["val/loss"], curves["train/loss"])
    assert result.stop_step is not None and result.best_step == result.global_best_step
    lo, hi = truth.val_min_window
    assert lo <= result.best_step <= hi
    assert result.compute_saved > 0.3
    [finding] = result.findings
    assert finding.code == "early_stopping" and str(result.stop_step) in finding.message
    json.dumps(result.to_dict())


def test_no_validation_curve():
    result = simulate_early_stopping(None)
    assert result.rules == () and result.evaluations == 0 and result.stop_step is None


def test_keras_rule_is_lightnings_but_a_nan_is_no_stop_and_a_keras_run_is_told_in_keras_terms():
    val = Curve.from_arrays([1, 2, 3, 4, 5, 6], [1.0, 0.8, float("nan"), 0.7, 0.75, 0.76], "val_loss")
    result = simulate_early_stopping(val, patience=2)
    assert result.rule("lightning_patience").stop_step == 3  # check_finite: the NaN stops it
    assert result.rule("keras_patience").stop_step == 6  # NaN no improvement; 0.75, 0.76 do not beat 0.7
    assert stops(simulate_early_stopping(VAL, patience=2))["keras_patience"] == 50


def test_a_keras_runs_finding_names_keras_early_stopping():
    import tanalyze
    from tests.conftest import REPO

    logs = tanalyze.load(REPO / "tests" / "fixtures" / "keras_console" / "overfit", cache=False)
    (d,) = tanalyze.diagnose(logs).values()
    [f] = [f for f in d.findings if f.code == "early_stopping"]
    assert f.message.startswith("with keras.callbacks.EarlyStopping(monitor='val_loss', patience=3, min_delta=0.0)")


def test_a_metric_to_maximise_is_replayed_in_its_direction():
    """A trainer that picked its best model by an accuracy or F1 (greater is better): the patience rules wait for a
    rise, the checkpoint kept is the highest value, Prechelt's loss ratios are not replayed."""
    f1 = Curve.from_arrays([10, 20, 30, 40, 50, 60, 70, 80, 90], [0.3, 0.5, 0.6, 0.58, 0.59, 0.61, 0.55, 0.5, 0.4],
                           "eval_f1")
    result = simulate_early_stopping(f1, patience=3, mode="max", headline="hf_patience", min_saving=0.0)
    rule = result.rule("hf_patience")
    assert (rule.stop_step, rule.best_step, rule.best_value) == (90, 60, 0.61)
    assert rule.given_up == 0.0 and rule.gained_vs_final == pytest.approx(0.61 - 0.4)
    assert result.rule("lightning_patience").params["mode"] == "max"
    assert result.rule("keras_patience").params["monitor"] == "eval_f1"
    assert (result.mode, result.global_best_step, result.global_best_value, result.final_value) == ("max", 60, 0.61, 0.4)
    assert result.rule("prechelt_gl").note == "Prechelt's criteria are ratios of a loss"
    (finding,) = result.findings
    assert "keeping the checkpoint of step 60 (eval_f1 0.61; the best of the whole run is 0.61" in finding.message
    assert "the last checkpoint (0.4) is 34.4% worse" in finding.message
    # the same curve read as a loss would stop at the first dip: 0.58 at step 40 is no 'rise'
    assert simulate_early_stopping(f1, patience=3).rule("hf_patience").stop_step == 40
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        simulate_early_stopping(f1, mode="maximise")


def test_a_last_checkpoint_better_than_the_one_kept_is_called_better():
    """A run whose loss dipped below the stop's best checkpoint at its very end: 'better', not '-0.1% worse'."""
    val = Curve.from_arrays([10, 20, 30, 40, 50, 60, 70, 80], [1.0, 0.8, 0.81, 0.82, 0.83, 0.84, 0.85, 0.7995], "val")
    result = simulate_early_stopping(val, patience=3, headline="lightning_patience", min_saving=0.0,
                                     max_given_up=0.01)
    (finding,) = result.findings
    assert finding.message.endswith("the last checkpoint (0.7995) is 0.1% better")
