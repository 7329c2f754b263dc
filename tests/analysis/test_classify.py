import json

import numpy as np
import pytest

from tanalyze.analysis.classify import LABELS, Thresholds, classify_run
from tanalyze.analysis.divergence import analyze_divergence
from tanalyze.analysis.overfitting import analyze_overfitting
from tanalyze.curves import Curve
from tanalyze.datasets import KINDS, make_curve


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n_steps", [100, 3000, 100000])
def test_synthetic_runs_get_their_label(kind, n_steps):
    for seed in range(3):
        curves, truth = make_curve(kind, n_steps=n_steps, seed=seed, output="curves")
        verdict = classify_run(curves["train/loss"], curves["val/loss"])
        assert verdict.label == kind, verdict.reasons
        assert 0.5 <= verdict.confidence <= 1.0
        json.dumps(verdict.to_dict())


def test_divergence_step_in_evidence_is_exact():
    curves, truth = make_curve("diverged", n_steps=5000, seed=2, output="curves")
    verdict = classify_run(curves["train/loss"], curves["val/loss"])
    assert verdict.evidence["divergence_step"] == truth.divergence_step
    assert verdict.confidence == 0.99


def test_without_validation_overfitting_cannot_be_judged():
    curves, _ = make_curve("overfitting", n_steps=2000, seed=0, output="curves")
    verdict = classify_run(curves["train/loss"])
    assert verdict.label == "normal"
    assert any("overfitting cannot be judged" in r for r in verdict.reasons)


def test_too_few_points_is_insufficient_data():
    loss = Curve.from_arrays(np.arange(7), np.linspace(2, 1, 7), "loss")
    verdict = classify_run(loss)
    assert verdict.label == "insufficient_data" and "only 7" in verdict.reasons[0]
    assert classify_run(loss, thresholds=Thresholds(min_points=5)).label != "insufficient_data"
    assert classify_run(None).label == "insufficient_data"


def test_flat_loss_is_underfitting_and_chance_level_is_named():
    rng = np.random.default_rng(0)
    loss = np.log(10) * np.exp(0.02 * rng.standard_normal(200))
    verdict = classify_run(Curve.from_arrays(np.arange(200), loss, "loss"), num_classes=10)
    assert verdict.label == "underfitting"
    assert any("chance level ln(10)" in r for r in verdict.reasons)
    assert verdict.findings[0].code == "underfitting"


def test_a_flat_log_that_starts_late_is_a_plateau_not_underfitting():
    # a log continuing a run at step 140,000: the fall happened before it began
    rng = np.random.default_rng(1)
    steps = np.arange(140_000, 150_000, 50)
    loss = 3.70 * np.exp(0.01 * rng.standard_normal(steps.size))
    verdict = classify_run(Curve.from_arrays(steps, loss, "loss"))
    assert verdict.label == "normal"
    assert "the log starts at step 140000" in verdict.evidence["flat_after_late_start"]
    from_start = classify_run(Curve.from_arrays(steps - 140_000, loss, "loss"))
    assert from_start.label == "underfitting"  # the same curve from step 0 never fell


def test_still_falling_steadily_is_not_converged():
    steps = np.arange(30)
    loss = 2.0 - 0.04 * steps  # falls 60 % and is still falling at the same pace
    verdict = classify_run(Curve.from_arrays(steps, loss, "loss"))
    assert verdict.label == "underfitting" and "still falling" in verdict.reasons[0]


def test_stronger_overfitting_gets_higher_confidence():
    steps = np.arange(1, 21) * 100
    train = Curve.from_arrays(steps, np.linspace(2, 0.1, 20), "train")
    base = np.concatenate([np.linspace(2, 1, 10), np.ones(10)])
    mild = base + np.concatenate([np.zeros(10), np.linspace(0.01, 0.06, 10)])
    strong = base + np.concatenate([np.zeros(10), np.linspace(0.1, 1.0, 10)])
    v_mild = classify_run(train, Curve.from_arrays(steps, mild, "val"))
    v_strong = classify_run(train, Curve.from_arrays(steps, strong, "val"))
    assert v_mild.label == v_strong.label == "overfitting"
    assert v_strong.confidence > v_mild.confidence


def test_labels_are_the_documented_ones():
    assert LABELS == ("normal", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data")


def test_falling_end_under_an_annealed_learning_rate_is_not_underfitting():
    steps = np.arange(100)
    loss = np.concatenate([1.5 - 0.25 * np.linspace(0, 1, 60) ** 0.3, 1.25 - 0.1 * np.linspace(0, 1, 40)])
    annealed = Curve.from_arrays(steps, 1e-4 * 0.5 * (1 + np.cos(np.pi * steps / 99)), "lr")
    constant = Curve.from_arrays(steps, np.full(100, 1e-4), "lr")
    curve = Curve.from_arrays(steps, loss, "loss")
    assert classify_run(curve, learning_rate=constant).label == "underfitting"
    verdict = classify_run(curve, learning_rate=annealed)
    assert verdict.label == "normal" and verdict.evidence["lr_end_over_peak"] < 0.01


@pytest.mark.parametrize(("width", "label"), [(1, "normal"), (4, "unstable")])
def test_one_point_spikes_are_bad_batches_lasting_ones_instability(width, label):
    # 8 spikes of 10x in 1,000 steps: gone at the next logged point (bad batches), or lasting 4 points
    rng = np.random.default_rng(5)
    steps = np.arange(1000)
    loss = (2.0 * np.exp(-steps / 250) + 0.3) * np.exp(rng.normal(0, 0.03, steps.size))
    for at in range(100, 900, 100):
        loss[at : at + width] *= 10
    verdict = classify_run(Curve.from_arrays(steps, loss, "train/loss"))
    assert verdict.label == label
    assert verdict.evidence["one_point_spikes"] == (8 if width == 1 else 0)


@pytest.mark.parametrize(("val_end", "label"), [(0.55, "normal"), (0.40, "underfitting")])
def test_still_falling_is_not_converged_only_while_validation_still_improves(val_end, label):
    # the training loss still falls steadily (a third of its fall in the last 30%); the validation loss has
    # levelled off at 0.55
    # (nothing more to gain from more steps) or keeps falling to 0.40 (train longer)
    steps = np.arange(1, 1001)
    train = 1.5 - steps / 1000 + 0.2 * np.exp(-steps / 50)
    v_steps = np.arange(100, 1001, 100)
    val = np.concatenate([[0.9, 0.7, 0.6, 0.56, 0.55, 0.55, 0.56], np.linspace(0.55, val_end, 3)])
    verdict = classify_run(Curve.from_arrays(steps, train, "train/loss"), Curve.from_arrays(v_steps, val, "val/loss"))
    assert verdict.label == label and verdict.evidence["val_levelled"] == (label == "normal")


def test_a_percentage_never_rounds_to_what_it_is_not_and_never_prints_a_row_of_zeros():
    from tanalyze.analysis.classify import _percent

    assert [_percent(f) for f in (-0.5, 0.99996, 0.00004)] == ["50%", "99.996%", "0.004%"]
    assert _percent(-0.9999999998) == "more than 99.99%" and _percent(1e-9) == "less than 0.0001%"


def test_a_first_value_far_from_the_starting_level_is_named_inside_the_from_part_of_the_sentence():
    steps = np.arange(0, 2000, 10)
    loss = np.concatenate([[2.3], 1.7 * np.exp(-steps[1:] / 300) + 0.01])
    verdict = classify_run(Curve.from_arrays(steps, loss, "train/loss"))
    (reason,) = [r for r in verdict.reasons if "its first logged value was 2.3" in r]
    assert "points; its first logged value was 2.3) to " in reason


def test_a_normal_verdict_says_rose_when_a_resumed_plateau_ends_a_little_higher():
    steps = np.arange(140_000, 150_000, 50)
    loss = np.linspace(3.70, 3.73, steps.size)
    verdict = classify_run(Curve.from_arrays(steps, loss, "loss"))
    assert verdict.label == "normal" and verdict.reasons[0].startswith("loss rose 0.8% from 3.7")


def test_a_training_loss_logged_twice_leaves_the_verdict_to_a_validation_loss_evaluated_every_epoch():
    # a Lightning run logging its train loss every 50 of 100 steps and its validation MSE every epoch
    train = Curve.from_arrays(np.array([49, 99]), np.array([6294.0, 2874.0]), "Train loss")
    epochs = np.arange(100)
    val = Curve.from_arrays(epochs, 3e5 * np.exp(-epochs / 8) + 2800, "Valid MSE")
    verdict = classify_run(train, val)
    assert verdict.label == "normal" and verdict.evidence["main_curve"] == "Valid MSE"
    assert "only 2 finite point(s) of Train loss, 100 of Valid MSE: the verdict rests on the validation loss" \
        in verdict.reasons
    few = Curve.from_arrays(epochs[:5], val.values[:5], "Valid MSE")
    assert classify_run(train, few).label == "insufficient_data"  # neither has enough: the training loss decides
    assert classify_run(train, few).evidence["main_curve"] == "Train loss"


def test_a_loss_at_exactly_zero_from_its_second_point_fell_all_the_way_and_is_flagged():
    # a QLoRA run of 1,000 epochs over a few examples: 0.0328 at step 10, then 0 (as logged, 4 decimals) to the end
    steps = np.arange(10, 1010, 10)
    loss = np.r_[0.0328, np.zeros(99)]
    verdict = classify_run(Curve.from_arrays(steps, loss, "loss"))
    assert verdict.label == "normal" and verdict.reasons[0].startswith("loss fell 100% from 0.0328 (its first point)")
    [finding] = [f for f in verdict.findings if f.code == "loss_at_zero"]
    assert finding.severity == "warning" and finding.step == 20 and "99 of 100 points" in finding.message
    # nothing left to learn from: the normal verdict is worth little, and says why
    assert verdict.confidence <= 0.5 and "is exactly 0 from step 20 to the end" in verdict.reasons[-1]
    # a loss reaching 0 only over its last tenth is not flagged
    late = np.r_[np.linspace(1.0, 0.01, 90), np.zeros(10)]
    assert not [f for f in classify_run(Curve.from_arrays(steps, late, "loss")).findings if f.code == "loss_at_zero"]


def test_a_negative_loss_that_keeps_falling_by_orders_of_magnitude_is_diverged_but_one_that_levels_off_is_not():
    steps = np.arange(1, 101)
    walls = np.full(100, np.nan)
    runaway = Curve("loss", steps, -3e4 * steps.astype(float) ** 1.5, walls)  # a Keras BCE on labels 0..255
    verdict = classify_run(runaway)
    assert verdict.label == "diverged" and verdict.evidence["unbounded_below"]
    assert verdict.findings[0].code == "loss_unbounded"
    levelled = Curve("loss", steps, -2.0 - 3.0 * (1 - np.exp(-steps / 10)), walls)  # an NLL finding its floor
    assert classify_run(levelled).label != "diverged"
    small = Curve("loss", steps, 1.0 - 0.05 * steps, walls)  # to -4: far from zero by a few units only
    assert "unbounded_below" not in classify_run(small).evidence


def test_a_loss_that_goes_below_zero_is_told_by_how_much_it_fell_not_as_a_share_of_a_start_near_zero():
    # nnU-Net's Dice + cross-entropy: 0.05 at the first epoch, -0.54 at the end (a share of 0.05 would be 1189%)
    epochs = np.arange(60)
    dice_ce = Curve.from_arrays(epochs, -0.6 * (1 - np.exp(-epochs / 6)) + 0.05, "train_loss")
    verdict = classify_run(dice_ce)
    assert verdict.label == "normal"
    assert verdict.reasons[0].startswith("train_loss fell by 0.5539 from 0.003945 (median of its first 2 points; its "
                                         "first logged value was 0.05) to -0.55 (median of its last 6)")
    # one that hardly moves is measured against its largest magnitude, and says what it needed
    flat = Curve.from_arrays(epochs, -0.80 - 0.02 * epochs / 59, "train_loss")
    verdict = classify_run(flat)
    assert verdict.label == "underfitting"
    assert "fell only by 0.01898 from -0.8002 (median of its first 2 points)" in verdict.reasons[0]
    assert "(needs a decrease of 0.0819, 10% of its largest magnitude 0.8193)" in verdict.reasons[0]


def test_a_loss_frozen_near_chance_after_a_first_epoch_blow_up_is_a_dead_model_diverged_at_the_blow_up():
    # Keras with SGD at 8 (a real run's numbers): the first epoch blows up, the ReLUs die, and the epoch means of
    # a model whose output no longer depends on its input stay the same to the last float32 bit
    epochs = np.arange(20)
    train = np.array([12.528196, 2.517245] + [2.405849, 2.4058492] * 9)
    val = np.array([2.3638492] + [2.3643601, 2.3643603] * 9 + [2.3643603])
    verdict = classify_run(Curve.from_arrays(epochs, train, "loss"), Curve.from_arrays(epochs, val, "val_loss"))
    assert verdict.label == "diverged" and verdict.evidence["onset_step"] == 0
    (finding,) = verdict.findings
    assert finding.code == "diverged_dead" and finding.step == 0
    assert "loss was 12.53 at step 0, 5.22x the chance level (its first logged value" in finding.message
    assert "ln K for K = 9 to 11 classes" in finding.message and "lower learning rate" in finding.recommendation
    # the same run's validation loss stalled from the first epoch while the training loss stood still: no
    # "kept falling" finding beside it
    stall = analyze_overfitting(Curve.from_arrays(epochs, val, "val_loss"), Curve.from_arrays(epochs, train, "loss"))
    assert not stall.findings and not stall.detected
    told = classify_run(Curve.from_arrays(epochs, train, "loss"), num_classes=10)
    assert told.label == "diverged" and told.findings[0].code == "diverged_dead"


def test_a_loss_that_rose_and_froze_is_a_dead_model_but_one_frozen_after_falling_is_a_decayed_learning_rate():
    # Keras with SGD at 8 on 10 classes (a real run's numbers): the first epoch's mean is already the cost of
    # outputs saturated on the wrong class (-ln 1e-7 for each miss), it rises a little more and freezes
    epochs = np.arange(20)
    dead = np.array([12.623437, 12.845543, 12.866806, 12.882871, 12.905479] + [12.922688, 12.922693] * 7 + [12.922688])
    verdict = classify_run(Curve.from_arrays(epochs, dead, "loss"))
    assert verdict.label == "diverged" and verdict.evidence["divergence_kind"] == "dead_after_rise"
    (finding,) = verdict.findings
    assert finding.code == "diverged_dead" and finding.step == 0
    assert finding.message.startswith("loss rose from 12.62 (its first logged value) to 12.92 and froze there")
    # a step schedule that took the learning rate to nothing: the epoch means of weights that no longer change
    decayed = np.concatenate([np.geomspace(2.3, 0.41, 12), [0.4012345, 0.4012346] * 4])
    assert classify_run(Curve.from_arrays(epochs, decayed, "loss")).label != "diverged"


def test_an_unstable_finding_points_at_where_the_instability_begins_not_at_the_run_start():
    # a nanoGPT loss falls to 3.7, jumps to 8.5 at step 61 and stays well above its low (a real W&B export's shape)
    rng = np.random.default_rng(7)
    steps = np.arange(128)
    loss = np.concatenate([np.geomspace(11.0, 3.7, 40), np.full(21, 3.7), [8.5], np.linspace(7.4, 6.0, 66)])
    loss *= np.exp(rng.normal(0, 0.01, 128))
    swinging = loss.copy()
    swinging[62:] *= np.tile([0.6, 1.0, 1.5], 22)  # and it keeps swinging by half its level: instability
    verdict = classify_run(Curve.from_arrays(steps, swinging, "loss"))
    assert verdict.label == "unstable" and "rise" in verdict.evidence["unstable_by"]
    (finding,) = [f for f in verdict.findings if f.code == "unstable"]
    assert finding.step == min(verdict.evidence["unstable_from"].values()) == 61
    # settled up there instead: a blow-up the run never came back from, though under 2x
    settled = classify_run(Curve.from_arrays(steps, loss, "loss"))
    assert settled.label == "diverged" and settled.evidence["divergence_kind"] == "settled_high"
    assert settled.findings[0].code == "diverged_explosion" and settled.findings[0].step == 61
    assert "also" not in " ".join(settled.reasons)


@pytest.mark.parametrize(("last", "label"), [(2860.0, "normal"), (3400.0, "unstable")])
def test_a_validation_only_verdict_keeps_a_setback_on_the_way_to_its_best_evaluation_as_no_instability(last, label):
    # a Lightning regression logging its validation MSE each epoch and its training loss twice: it falls 100x,
    # with a 2.6x setback for ten epochs on the way, and ends at its best (or, the second time, not)
    epochs = np.arange(100)
    mse = np.geomspace(3.0e5, 2900.0, 100)
    mse[30:40] *= 2.6
    mse[-1] = last
    val = Curve.from_arrays(epochs, mse, "Valid MSE")
    train = Curve.from_arrays(np.array([49, 99]), np.array([6293.6, 2873.7]), "Train loss")
    verdict = classify_run(train, val)
    assert verdict.evidence["main_role"] == "val" and verdict.label == label


def test_a_fine_tune_knocked_up_by_its_warm_up_that_never_came_back_is_unstable_not_overfitting():
    # a Whisper fine-tune (a real run's shape): train 0.12 at step 100 climbs with the learning-rate warm-up to
    # 0.33 at 575, 0.30 to 1100, 0.185 at the end; its eval loss 0.22 at its first evaluation (250), ~0.41 after
    steps = np.arange(25, 1525, 25)
    train = np.interp(steps, [25, 100, 250, 575, 1100, 1150, 1500], [0.83, 0.121, 0.14, 0.327, 0.30, 0.185, 0.185])
    evals = np.arange(250, 1750, 250)
    val = np.array([0.219, 0.416, 0.423, 0.410, 0.438, 0.402])
    t, v = Curve.from_arrays(steps, train, "loss"), Curve.from_arrays(evals, val, "eval_loss")
    overfitting = analyze_overfitting(v, t)
    assert not overfitting.detected and "rose with it" in overfitting.reason
    verdict = classify_run(t, v, overfitting=overfitting)
    assert verdict.label == "unstable" and "had not come back to it by the end" in verdict.reasons[0]


@pytest.mark.parametrize(("held_out", "underfitting"), [(2.1, False), (0.6, True)])
def test_a_training_loss_that_hardly_fell_far_below_its_validation_loss_is_no_underfitting(held_out, underfitting):
    # an SFT logging from step 20, already past its first fall: 0.54 -> 0.51 in 8 points, while its held-out loss
    # is 2.1 (the model fits its training data), or 0.6 (train and validation both where they started)
    steps = np.arange(20, 180, 20)
    train = np.array([0.541, 0.534, 0.577, 0.526, 0.524, 0.534, 0.507, 0.514])
    val = Curve.from_arrays(np.array([60, 120, 160]), held_out * np.array([1.02, 1.0, 0.995]), "eval_loss")
    overfitting = analyze_overfitting(val, Curve.from_arrays(steps, train, "loss"))
    verdict = classify_run(Curve.from_arrays(steps, train, "loss"), val, overfitting=overfitting)
    assert (verdict.label == "underfitting") == underfitting
    assert ("fits_training_data" in verdict.evidence) == (not underfitting)


@pytest.mark.parametrize(("fall", "underfitting"), [(0.0, True), (0.4, False)])
def test_a_fall_no_larger_than_the_noise_of_the_medians_is_no_fall(fall, underfitting):
    # SGD at 1e-6 on a regression: per-batch MSE ±25% around a level that does not move; the medians of the first
    # 12 and the last 40 of 400 points can differ by 10% from the noise alone (or the loss really fell 40%)
    rng = np.random.default_rng(11)
    steps = np.arange(5, 2005, 5)
    level = 1.1 * np.exp(-fall * np.linspace(0, 1, 400) / 0.5)
    loss = level * np.exp(rng.normal(0, 0.25, 400))
    loss[:12] *= 1.22  # a first stretch drawn high, as the noise draws it now and then
    verdict = classify_run(Curve.from_arrays(steps, loss, "loss"))
    assert (verdict.label == "underfitting") == underfitting
    assert any("no fall told from noise" in r for r in verdict.reasons) == underfitting


@pytest.mark.parametrize(("end", "label"), [(2.25, "diverged"), (1.2, None)])
def test_a_blow_up_before_the_loss_fell_below_its_start_is_diverged_but_one_it_recovered_from_is_not(end, label):
    # a 10-class classifier at too high a learning rate: 2.30, then 19 at the second point; it ends around the
    # prior's entropy (nothing learnt) or well below its start (it learnt after all)
    rng = np.random.default_rng(4)
    steps = np.arange(0, 1500, 5)
    loss = np.concatenate([[2.30, 19.0, 3.2, 2.7], np.linspace(2.6, end, 296)]) * np.exp(rng.normal(0, 0.05, 300))
    verdict = classify_run(Curve.from_arrays(steps, loss, "loss"))
    if label is None:
        assert verdict.label != "diverged" and "blown_up_before_learning" not in verdict.evidence.values()
        return
    assert verdict.label == label and verdict.evidence["onset_step"] == 5
    assert verdict.findings[0].code == "diverged_early"
    assert verdict.findings[0].message.startswith(f"loss blew up from {loss[0]:.4g} (where it started) to {loss[1]:.4g}")


@pytest.mark.parametrize(("start", "wobble", "label"), [(9.0, 0.0, "diverged"), (4.0, 0.0, "underfitting"),
                                                          (9.0, 2e-3, None), (4.0, 2e-3, None)])
def test_only_a_loss_that_no_longer_moves_at_all_is_read_as_frozen(start, wobble, label):
    # the same end level (2.36, off the chance band of a loss that moves): frozen to the last bits (after a first
    # value 3x or more above it, a dead model: diverged), or still moving (neither)
    epochs = np.arange(24)
    train = np.concatenate([[start, 3.1, 2.6], 2.3600113 * (1 + wobble * np.sin(np.arange(21)))])
    verdict = classify_run(Curve.from_arrays(epochs, train, "loss"))
    assert any("frozen" in r for r in verdict.reasons) == (label is not None)
    if label is None:
        assert verdict.label not in ("underfitting", "diverged")
    else:
        assert verdict.label == label


@pytest.mark.parametrize(("length", "height", "label"), [(38, 2.2, "unstable"), (2, 2.2, "normal"), (3, 30.0, "unstable")])
def test_one_spike_counts_when_it_is_long_or_huge(length, height, label):
    # a Whisper fine-tune at too high a learning rate: 2.2x its level for 38 of 60 points (950 steps), then back
    rng = np.random.default_rng(2)
    steps = np.arange(25, 1525, 25)
    loss = np.concatenate([np.geomspace(0.83, 0.15, 8), np.full(52, 0.15)]) * np.exp(rng.normal(0, 0.02, 60))
    loss[10:10 + length] *= height
    verdict = classify_run(Curve.from_arrays(steps, loss, "loss"))
    assert verdict.label == label
    if label == "unstable":
        assert "logged points) to come back" in verdict.reasons[0] and "heavy spike" in verdict.evidence["unstable_by"]


def test_validation_swings_are_no_instability_when_the_run_ends_at_its_best_evaluation():
    # ViT fine-tune: validation loss swings in a high-learning-rate phase, then ends at its minimum
    steps = np.arange(1644)
    train = 1.2 * np.exp(-steps / 250) + 0.01
    v_steps = np.arange(137, 1645, 137)
    val = np.array([0.633, 0.635, 1.127, 0.711, 1.402, 1.002, 1.102, 1.251, 0.627, 0.34, 0.502, 0.276])  # as logged
    verdict = classify_run(Curve.from_arrays(steps, train, "loss"), Curve.from_arrays(v_steps, val, "eval_loss"))
    assert verdict.label != "unstable" and verdict.evidence["val_ends_at_best"]
    swinging = classify_run(Curve.from_arrays(steps, train, "loss"),
                            Curve.from_arrays(v_steps, np.r_[val[:-1], 0.45], "eval_loss"))
    assert swinging.label == "unstable" and "oscillates" in swinging.reasons[0]


@pytest.mark.parametrize("num_classes", [None, 4])
def test_a_loss_back_at_chance_after_learning_is_a_collapse_told_or_not_the_number_of_classes(num_classes):
    # 4 classes: the loss falls to 0.8, then the units die and it sits at ln 4 to the end (1.7x: no explosion)
    rng = np.random.default_rng(5)
    steps = np.arange(0, 1200, 2)
    loss = np.concatenate([np.geomspace(1.5, 0.8, 150), np.full(50, 0.8), np.full(400, np.log(4))])
    loss *= np.exp(rng.normal(0, 0.02, loss.size))
    verdict = classify_run(Curve.from_arrays(steps, loss, "train/loss"), num_classes=num_classes)
    assert verdict.label == "diverged" and 398 <= verdict.evidence["onset_step"] <= 410
    (finding,) = verdict.findings
    assert finding.code == "diverged_collapse" and "ln(4)" in finding.message


def test_a_loss_flat_at_ln_k_is_no_chance_level_when_it_is_no_classifiers_loss():
    # darknet's summed detection loss: from 1,200 to a flat 2.30 (ln 10 by chance), a converged detector
    steps = np.arange(1, 201)
    loss = 1200 * np.exp(-steps / 8) + 2.30 + 0.004 * np.sin(steps)
    curve = Curve.from_arrays(steps, loss, "loss")
    assert classify_run(curve).label == "underfitting"  # a classifier's loss would be at chance
    verdict = classify_run(curve, classifier=False)
    assert verdict.label == "normal" and "chance_level" not in verdict.evidence


#: a real OpenNMT-py training's xent, printed to two decimals (steps 50 … 1600): converged near 0.02, bumped to 0.14
#: at step 1350 (training accuracy 99.4% → 96.9%), back to 0.04–0.05; early-stopped on its validation at step 1600
OPENNMT_XENT = [3.29, 2.58, 2.04, 1.81, 1.6, 1.38, 1.18, 0.86, 0.58, 0.4, 0.22, 0.18, 0.13, 0.08, 0.07, 0.05, 0.07,
                0.07, 0.04, 0.04, 0.05, 0.04, 0.02, 0.02, 0.01, 0.02, 0.14, 0.09, 0.09, 0.06, 0.04, 0.05]


def test_a_bump_of_a_converged_loss_that_gives_back_little_of_its_fall_is_no_divergence_nor_instability():
    """0.02 → 0.14 → 0.05 after a fall from 3.29: a ratio of tiny rounded values (7x, 3.7x settled), but a tenth of
    a nat of the 3.27 the loss had learnt: no divergence, no heavy spike; the spike itself is still reported."""
    loss = Curve.from_arrays(np.arange(50, 1650, 50), OPENNMT_XENT, "xent")
    analysis = analyze_divergence(loss)
    assert analysis.divergence is None
    assert [sp.onset_step for sp in analysis.spikes] == [1350]
    verdict = classify_run(loss, divergence=analysis)
    assert verdict.label == "normal", verdict.reasons
    # the same bump on a loss that had learnt little (from 0.05) is one
    values = [0.05, 0.048, 0.045, 0.04, 0.035, 0.03, 0.028, 0.025, 0.022, 0.02, 0.02, 0.02, 0.021, 0.02, 0.14, 0.09,
              0.09, 0.06, 0.05, 0.05]
    small = Curve.from_arrays(np.arange(50, 50 * (len(values) + 1), 50), values, "xent")
    assert classify_run(small, divergence=analyze_divergence(small)).label != "normal"


def test_a_training_loss_first_logged_after_the_validation_loss_fell_is_no_underfitting():
    """A real Lightning run: ``train_loss`` one batch's value every 50 steps, first at step 49 (0.5334 … 0.4986: -9%),
    while ``valid_loss``, evaluated each epoch from step 7, had fallen from 0.697 to 0.505 by then (and levels off
    at 0.42): the learning came before the training loss's log began."""
    train = Curve.from_arrays(np.arange(49, 650, 50), [0.5334, 0.5155, 0.5203, 0.4455, 0.4803, 0.4982, 0.49, 0.5267,
                                                       0.473, 0.4952, 0.4856, 0.472, 0.4986], "train_loss")
    steps = np.arange(7, 688, 8)
    val = Curve.from_arrays(steps, 0.42 + 0.277 * np.exp(-(steps - 7) / 45.0), "valid_loss")
    verdict = classify_run(train, val, overfitting=analyze_overfitting(val, train))
    assert verdict.label != "underfitting", verdict.reasons
    assert "the fall came before the training loss's log began" in verdict.evidence["fits_training_data"]


@pytest.mark.parametrize(("tail", "label"), [([0.0029, 0.00098, 0.00105, 0.00067, 0.00024, 0.00022], "normal"),
                                             ([0.0095, 0.0088, 0.0091, 0.0087, 0.0090, 0.0089], "unstable")])
def test_one_brief_spike_of_a_loss_that_goes_on_to_its_best_is_no_unstable_run(tail, label):
    """A 20-epoch fine-tune: the training loss falls from 0.16 to 0.0038, jumps 3.7x for three epochs (0.047) and comes
    back. Going on to new lows, to its best at the end, the run is normal (the spike is still reported); ending above
    its low before the spike, the setback stands as instability."""
    values = [0.161, 0.111, 0.0474, 0.0473, 0.044, 0.032, 0.040, 0.0134, 0.0068, 0.0038, 0.0127, 0.0302, 0.0474, 0.0178,
              *tail]
    loss = Curve.from_arrays(np.arange(1, 21), values, "Train Loss")
    analysis = analyze_divergence(loss)
    verdict = classify_run(loss, divergence=analysis)
    assert verdict.label == label, verdict.reasons
    assert [sp.onset_step for sp in analysis.spikes if sp.magnitude and sp.magnitude > 3] == [12]


def test_a_normal_verdict_beside_a_loss_spike_does_not_say_no_instability_was_found():
    """A loss that fell, then jumped 1.5x at a few points and ended above its best, short of an unstable run: the
    reason said 'no overfitting, instability, divergence or underfitting found' next to the spike's warning."""
    values = np.r_[np.geomspace(0.44, 0.09, 60), [0.097, 0.146, 0.147, 0.12, 0.112, 0.118, 0.117, 0.116]]
    loss = Curve.from_arrays(np.arange(len(values)), values, "loss")
    analysis = analyze_divergence(loss)
    verdict = classify_run(loss, divergence=analysis)
    assert analysis.spikes and verdict.label == "normal"
    assert "its loss spike(s) fall short of an unstable run" in verdict.reasons[0]
    assert "instability" not in verdict.reasons[0]


def test_an_underfitting_loss_that_ended_above_its_start_says_the_training_made_it_worse():
    """A Whisper fine-tune at too high a learning rate judged by its evaluations: the validation loss ends 28% above
    its first one. 'Needs a 10% decrease' alone pointed at capacity (train longer, a bigger model)."""
    steps = np.arange(132, 2641, 132)
    values = 2.55 * np.r_[1.0, np.full(len(steps) - 1, 1.28)] * (1 + 0.01 * np.sin(np.arange(len(steps))))
    verdict = classify_run(None, Curve.from_arrays(steps, values, "eval_loss"))
    assert verdict.label == "underfitting"
    assert "it ended above where it began: the training made it worse" in verdict.reasons[0]


def _epochs(values, tag):
    return Curve.from_arrays(np.arange(len(values)), np.asarray(values, dtype=float), tag)


def test_a_three_epoch_fine_tune_whose_validation_loss_rises_overfits():
    """A BERT fine-tune of three epochs (the usual length): validation loss 0.32, 0.32, 0.44 while the training
    loss fell 0.39 to 0.11. Three points are too few for a curve's shape, not for a 39% rise at the end: it had been
    "insufficient data"."""
    verdict = classify_run(_epochs([0.39, 0.19, 0.11], "loss"), _epochs([0.318, 0.320, 0.443], "val_loss"))
    assert verdict.label == "overfitting" and 0.5 <= verdict.confidence <= 0.6
    assert verdict.reasons[0].startswith("val_loss rose 39% from its minimum 0.318 at step 0 to 0.443")
    [finding] = verdict.findings
    assert finding.code == "overfitting" and finding.step == 0 and finding.step_end == 2


@pytest.mark.parametrize(("train", "val"), [
    ([0.39, 0.19, 0.11], [0.318, 0.320, 0.36]),  # a rise of 13%: within what one evaluation's draw may move
    ([0.39, 0.37, 0.35], [0.318, 0.320, 0.443]),  # the training loss hardly fell: no fit to blame
    ([0.39, 0.19, 0.11], [0.443, 0.320, 0.318]),  # falling
    ([0.39, 0.19], [0.318, 0.443]),  # two evaluations
])
def test_a_short_run_without_a_clear_rise_is_still_too_short(train, val):
    verdict = classify_run(_epochs(train, "loss"), _epochs(val, "val_loss"))
    assert verdict.label == "insufficient_data"


def test_a_short_fall_told_through_heavy_noise_is_underfitting_with_less_confidence():
    """A GPT-2 fine-tune's 50 per-batch losses (±18% batch to batch) around a flat 2.3: it may have fallen the 10%
    it needs for all a few points' medians tell, so its underfitting verdict had been as sure (0.91) as that of a
    loss of 400 quiet points that plainly stayed flat."""
    rng = np.random.default_rng(4)
    noisy = Curve.from_arrays(np.arange(50) * 50, 2.3 * np.exp(rng.normal(0, 0.18, 50)), "loss")
    quiet = Curve.from_arrays(np.arange(400) * 50, 2.3 * np.exp(rng.normal(0, 0.01, 400)), "loss")
    loud, sure = classify_run(noisy), classify_run(quiet)
    assert loud.label == sure.label == "underfitting"
    assert sure.confidence >= 0.85 and loud.confidence <= 0.75


def test_a_seven_epoch_run_whose_validation_loss_climbs_at_each_epoch_after_its_minimum_overfits():
    """A Keras run of seven epochs: validation loss 0.563 … 0.457 at epoch 3, then 0.469, 0.498, 0.534 (+17%, up at
    every epoch) while the training loss fell 0.63 to 0.16. It had been "insufficient data"; a six-epoch run beside it
    was overfitting."""
    verdict = classify_run(_epochs([0.631, 0.52, 0.42, 0.33, 0.26, 0.2, 0.158], "loss"),
                           _epochs([0.5626, 0.5231, 0.4952, 0.4569, 0.4685, 0.4984, 0.5339], "val_loss"))
    assert verdict.label == "overfitting" and verdict.evidence["short_overfitting"]["onset_step"] == 3
    wobbly = classify_run(_epochs([0.631, 0.52, 0.42, 0.33, 0.26, 0.2, 0.158], "loss"),
                          _epochs([0.5626, 0.5231, 0.4952, 0.4569, 0.5, 0.47, 0.5339], "val_loss"))
    assert wobbly.label == "insufficient_data"  # (+17% with a fall between: not the climb, not 25%)


def test_hard_batches_of_a_memorised_training_set_and_its_held_out_swings_are_no_instability():
    """A CodeBERT classifier's fine-tune: its training loss every 10 steps falls from 0.68 to 0.0003 and sits there,
    lifted now and then for two or three points by a batch with a hard example (0.1-0.29), back at once; its
    validation loss, lowest at epoch 3, swings ±26% above it. It had been UNSTABLE: by those lifts (hundreds of times
    a level near zero) and by the held-out swings, which are an overconfident model's, not an optimiser's."""
    rng = np.random.default_rng(5)
    steps = np.arange(10, 5421, 10)
    train = np.maximum(0.68 * np.exp(-steps / 250), 0.0003) * np.exp(rng.normal(0, 0.15, steps.size))
    for at, bump in ((2000, [0.12, 0.05]), (3500, [0.0157, 0.0987]), (3840, [0.0543, 0.1016]),
                     (4070, [0.1002, 0.0364, 0.1775]), (4500, [0.09, 0.03])):
        i = int(np.searchsorted(steps, at))
        train[i:i + len(bump)] = bump
    val = [0.1762, 0.1660, 0.1567, 0.2150, 0.1946, 0.2284, 0.1771, 0.2369, 0.2140, 0.2142]
    verdict = classify_run(Curve.from_arrays(steps, train, "loss"),
                           Curve.from_arrays(np.arange(542, 5421, 542), np.array(val), "eval_loss"))
    assert verdict.label != "unstable"
    assert verdict.evidence["spikes_at_the_floor"] >= 3 and verdict.evidence["train_memorised"]


def test_a_loss_at_exactly_zero_over_its_last_third_is_flagged():
    """An HF fine-tune whose loss, 4 decimals as logged, is 0.0 from step 970 to 1500 (54 of 150 points): a model
    that fits every training example (or a loss not computed) had been NORMAL 0.98 without a word."""
    steps = np.arange(10, 1510, 10)
    loss = np.r_[0.85 * np.exp(-np.arange(96) / 6) + 0.0001, np.zeros(54)]
    verdict = classify_run(Curve.from_arrays(steps, np.round(loss, 4), "loss"))
    [finding] = [f for f in verdict.findings if f.code == "loss_at_zero"]
    assert finding.step == 970 and "54 of 150 points" in finding.message and verdict.confidence <= 0.5
