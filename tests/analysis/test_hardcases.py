"""The labelled hard cases of ``bench/hardcases`` (really trained; truth in its LABELS.json) meet their goals.

Reads the committed files only (fast). Goals: verdict agreement >= 95 %, no healthy run given a problem
verdict, divergence onset within 5 steps, overfitting onset inside its window, at most one WARNING/ERROR
finding per 10 healthy runs. Each kind of error fixed has its own check below, on the run made for it.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

import tanalyze
from tests.conftest import REPO

HARDCASES = REPO / "bench" / "hardcases"
_spec = importlib.util.spec_from_file_location("hardcases_score", HARDCASES / "score.py")
score = importlib.util.module_from_spec(_spec)
sys.modules["hardcases_score"] = score
_spec.loader.exec_module(score)
LABELS = score.load_labels(HARDCASES / "LABELS.json")


@pytest.fixture(scope="module")
def diagnosed():
    return tanalyze.diagnose(tanalyze.load(HARDCASES))


@pytest.fixture(scope="module")
def scored(diagnosed):
    return score.score(diagnosed, LABELS)


def test_every_labelled_run_is_read(scored):
    assert {s.key for s in scored} == set(LABELS)
    assert len(LABELS) >= 25


def test_the_set_meets_its_goals(scored):
    s = score.summary(scored)
    goals = score.GOALS
    misses = score.failures(scored)
    assert s["agreement"] >= goals["agreement"], misses
    assert s["healthy_problem_verdicts"] == goals["healthy_problem_verdicts"], misses
    assert s["onsets_within_tolerance"] == len(s["onset_errors"]) and s["onset_errors"], misses
    assert s["overfitting_onsets_in_window"] == s["overfitting_windows"] >= 3, misses
    assert s["problem_findings_per_healthy_run"] <= goals["problem_findings_per_healthy_run"], [
        (x.key, x.problem_findings) for x in scored if x.truth == "normal" and x.problem_findings]


def _run(diagnosed, key):
    return diagnosed[score.match_runs(list(diagnosed), key)[0]]


def test_step_curve_noise_is_not_instability(diagnosed):
    # Lightning train_loss_step on batches of 8 jumps +-100% from step to step around a smooth fall
    d = _run(diagnosed, "lightning_step_epoch")
    assert d.verdict.label == "normal"
    assert d.verdict.evidence["noise"] > 0.5 and d.verdict.evidence["excess_roughness"] < 1.5


def test_growing_oscillation_is_unstable_not_diverged(diagnosed):
    d = _run(diagnosed, "growing_oscillation")
    assert d.verdict.label == "unstable" and d.divergence is None


def test_gan_is_judged_as_a_game(diagnosed):
    collapse, healthy = _run(diagnosed, "gan_collapse"), _run(diagnosed, "gan_healthy")
    assert collapse.role_details.adversarial == {"generator": ("loss/G",), "discriminator": ("loss/D",)}
    assert collapse.roles["train_loss"] == "loss/G"  # never "loss/D + loss/G"
    assert collapse.verdict.label == "unstable" and "discriminator" in collapse.verdict.reasons[0]
    assert healthy.verdict.label == "normal"


def test_unrelated_losses_are_judged_as_several_curves(diagnosed):
    d = _run(diagnosed, "multi_loss")
    assert d.verdict.label == "normal"
    assert set(d.verdict.evidence["components"]) == {"train/loss_aux", "train/loss_cls", "train/loss_reg"}


def test_rounded_losses_near_zero_are_not_spikes(diagnosed):
    d = _run(diagnosed, "hf_rounded")
    assert d.verdict.label == "normal"
    assert not [f for f in d.findings if f.code == "loss_spike" and f.severity != "info"]


def test_evaluation_pauses_are_information(diagnosed):
    d = _run(diagnosed, "eval_pauses")
    codes = {f.code: f.severity for f in d.findings}
    assert codes.get("evaluation_time") == "info" and "throughput_stall" not in codes
    [f] = [f for f in d.findings if f.code == "evaluation_time"]
    period = LABELS["eval_pauses"]["eval_period"]  # the pause ends at the first logged step after an evaluation
    assert f.evidence["steps"] and all((step - 1) % period < 5 for step in f.evidence["steps"])
    assert 0 < f.evidence["share"] < 1 and "of the wall time" in f.message


def test_epoch_end_pauses_are_time_spent_with_their_share(diagnosed):
    # no validation curve: the pauses are found at the epoch starts the epoch counter marks
    d = _run(diagnosed, "epoch_pauses")
    assert d.verdict.label == "normal"
    codes = {f.code: f.severity for f in d.findings}
    assert codes == {"evaluation_time": "info"}
    [f] = d.findings
    per_epoch = LABELS["epoch_pauses"]["epoch_steps"]
    assert [(step - 1) // per_epoch for step in f.evidence["steps"]] == [1, 2, 3] and "epoch starts" in f.message
    assert f.evidence["share"] > 0.5 and "evaluate less often" in f.message


def test_flat_validation_while_training_drifts_down_is_a_plateau_not_overfitting(diagnosed):
    d = _run(diagnosed, "val_plateau")
    assert d.verdict.label == "normal" and d.overfitting is None
    assert not [f for f in d.findings if str(f.severity) in ("warning", "error")]


def test_clipped_fine_tune_has_no_gradient_warning(diagnosed):
    d = _run(diagnosed, "llm_clip")
    assert d.gradients.fraction_above_band >= 0.9 and d.gradients.max_norm == 1.0
    assert not [f for f in d.findings if f.code.startswith("grad") and f.severity != "info"]


def test_validation_nan_from_the_start_is_a_metric_problem(diagnosed):
    d = _run(diagnosed, "val_nan")
    assert d.verdict.label == "normal" and d.divergence is None
    [metric] = [f for f in d.findings if f.code == "metric_nonfinite"]
    assert "learning rate" not in metric.recommendation.split(";")[0].lower()
    assert not [f for f in d.findings if f.code.startswith("diverged")]


def test_rebound_while_validation_rises_is_unstable_not_overfitting(diagnosed):
    assert _run(diagnosed, "rebound_unstable").verdict.label == "unstable"


def test_strong_validation_rise_is_overfitting_not_divergence(diagnosed):
    d = _run(diagnosed, "strong_overfit")
    assert d.verdict.label == "overfitting" and d.divergence is None and d.overfitting.rise_rel > 1.3


def test_chance_plateau_found_without_num_classes(diagnosed):
    d = _run(diagnosed, "chance_plateau")
    assert d.verdict.label == "underfitting" and d.verdict.evidence["chance_classes"] == 10
    # its badly scaled start (21.8, 9x chance) is named, without claiming which of the two causes it was
    assert "x that level (a blow-up before the first log point, or a badly scaled start)" in d.verdict.reasons[0]


def test_stuck_sibling_is_underfitting(diagnosed):
    stuck = _run(diagnosed, "siblings/seed_3")
    assert stuck.verdict.label == "underfitting" and stuck.verdict.evidence["siblings"]["ratio"] > 10
    assert all(_run(diagnosed, f"siblings/seed_{i}").verdict.label == "normal" for i in range(3))


def test_divergence_onsets(diagnosed):
    for key in ("late_divergence", "diverged_finite", "collapse_to_chance"):
        d = _run(diagnosed, key)
        assert d.verdict.label == "diverged"
        assert abs(d.divergence.onset_step - LABELS[key]["divergence_onset"]) <= 5, key


def test_a_blow_up_that_settles_well_above_its_old_level_is_a_divergence(diagnosed):
    # an lr set to 3.0: the loss peaks hundreds of times up and comes down only to the unigram level (1.7x)
    d = _run(diagnosed, "blowup_to_unigram")
    assert d.verdict.label == "diverged" and d.divergence.settled / d.divergence.baseline > 1.25
    assert abs(d.divergence.onset_step - LABELS["blowup_to_unigram"]["divergence_onset"]) <= 5
    assert any(f.code == "diverged_explosion" and "settled at" in f.message for f in d.findings)


def test_a_loss_back_at_chance_after_learning_is_a_collapse(diagnosed):
    # SGD at 3.0: from 0.73 back to ln 4 for good, under twice its low: no explosion, but what was learnt is lost
    d = _run(diagnosed, "collapse_after_learning")
    assert d.verdict.label == "diverged" and d.divergence is None
    assert abs(d.verdict.evidence["onset_step"] - LABELS["collapse_after_learning"]["divergence_onset"]) <= 5
    (finding,) = [f for f in d.findings if f.code == "diverged_collapse"]
    assert finding.severity == "error" and "ln(4)" in finding.message
    assert d.key_steps()["diverged"] == d.verdict.evidence["onset_step"]
    assert d.early_warning is None or "has not diverged yet" not in " ".join(f.message for f in d.findings)


def test_a_loss_that_rose_and_froze_under_keras_is_a_dead_model(diagnosed):
    # Keras, SGD at 8.0: the first epoch's mean is already the cost of saturated wrong outputs; it creeps up and
    # freezes to the last bit
    d = _run(diagnosed, "dead_after_blowup")
    assert d.verdict.label == "diverged" and d.verdict.evidence["divergence_kind"] == "dead_after_rise"
    (finding,) = [f for f in d.findings if f.code == "diverged_dead"]
    assert finding.step == LABELS["dead_after_blowup"]["divergence_onset"] == d.key_steps()["diverged"]
    assert "froze there" in finding.message and not [f for f in d.findings if f.code == "val_plateau"]


def test_a_loss_that_blew_up_before_it_learnt_anything_is_diverged_at_the_blow_up(diagnosed):
    # SGD with momentum at 3.0: the loss jumps to 7x its start within 15 steps, then sits at the prior's entropy
    d = _run(diagnosed, "blowup_before_learning")
    assert d.verdict.label == "diverged" and d.verdict.evidence["divergence_kind"] == "blown_up_before_learning"
    (finding,) = [f for f in d.findings if f.code == "diverged_early"]
    assert abs(finding.step - LABELS["blowup_before_learning"]["divergence_onset"]) <= 5
    assert "never fell clearly below where it started" in finding.message and "10x lower" in finding.recommendation


def test_a_validation_loss_lowest_at_its_first_evaluation_that_jumps_and_stays_up_is_overfitting(diagnosed):
    # Keras memorising 40 regression points: validation MSE 0.96 at epoch 0, 1.24 at epoch 1, ~1.15 to the end
    d = _run(diagnosed, "memorise_regression")
    assert d.verdict.label == "overfitting" and d.overfitting.onset_step == 0
    assert d.overfitting.rise_rel == pytest.approx(0.20, abs=0.01)


def test_percentages_never_round_up_to_100(diagnosed):
    for d in diagnosed.values():
        for text in d.verdict.reasons:
            assert "fell 100%" not in text, text


def test_a_fine_tune_that_falls_a_little_is_normal_and_tiny_lr_from_scratch_is_not(diagnosed):
    # Both are tiny GPT-2s under the HF Trainer with their config.json beside the state: the fine-tune starts
    # from weights another Trainer saved; the other starts from scratch at ln(vocab) and hardly moves.
    tune, scratch = _run(diagnosed, "finetune_small_fall"), _run(diagnosed, "scratch_tiny_lr")
    assert -0.10 < tune.verdict.evidence["change"] < 0
    assert tune.verdict.label == "normal" and "started from trained weights" in tune.verdict.evidence["trained_start"]
    assert scratch.verdict.label == "underfitting" and "trained_start" not in scratch.verdict.evidence


def test_a_loss_with_no_floor_is_a_divergence_below(diagnosed):
    # binary cross-entropy fed ratings 0..3: the loss falls to -1,800 and keeps falling (a broken objective)
    d = _run(diagnosed, "unbounded_bce")
    assert d.verdict.label == "diverged" and d.verdict.evidence["unbounded_below"]
    [finding] = [f for f in d.findings if f.code == "loss_unbounded"]
    assert finding.severity == "error" and "labels' range" in finding.recommendation


def test_a_negative_log_likelihood_that_levels_off_is_healthy(diagnosed):
    # a Gaussian NLL with a learned variance goes below zero and levels off; its heavy-tailed batch noise
    # (one outlier batch: -1.3 -> +1.4) is no instability on a loss whose offset is arbitrary
    d = _run(diagnosed, "gaussian_nll")
    assert d.verdict.label == "normal" and "unbounded_below" not in d.verdict.evidence
