import json

import numpy as np
import pandas as pd
import pytest

from tanalyze.analysis.gradients import analyze_gradients, layer_name
from tanalyze.curves import Curve


def norms(n=1000, level=0.5, seed=0, sd=0.2):
    rng = np.random.default_rng(seed)
    return level * np.exp(rng.normal(0, sd, n))


def curve(values, steps=None, tag="grad_norm"):
    steps = np.arange(len(values)) * 10 if steps is None else steps
    return Curve.from_arrays(steps, values, tag=tag)


def codes(result):
    return [f.code for f in result.findings]


def test_clean_norms_have_no_findings():
    r = analyze_gradients(curve(norms()), max_norm=1.0)
    assert r.findings == ()
    assert r.median == pytest.approx(0.5, rel=0.05)
    assert r.clip_rate == pytest.approx(float(np.mean(norms() > 1.0)))
    json.dumps(r.to_dict())


def test_planted_explosion_is_found_at_exactly_its_step():
    g = norms()
    g[400] = 20.0
    r = analyze_gradients(curve(g))
    [event] = r.explosions
    assert event.step == 4000 and event.step_end == 4000
    assert event.value == 20.0 and event.ratio == pytest.approx(40, rel=0.15)
    f = next(f for f in r.findings if f.code == "grad_explosion")
    assert f.step == 4000 and "step 4000" in f.message


def test_explosion_factor_is_a_parameter():
    g = norms(sd=0.05)
    g[500] = 0.5 * 4
    assert analyze_gradients(curve(g)).explosions == ()
    assert analyze_gradients(curve(g), explosion_factor=3.0).explosions[0].step == 5000


def test_sustained_collapse_is_found_at_its_onset():
    g = norms()
    g[600:] *= 0.01
    r = analyze_gradients(curve(g))
    [event] = r.collapses
    assert event.step == 6000 and event.step_end == 9990
    assert "grad_collapse" in codes(r)


def _collapse_severity(result):
    return next(f for f in result.findings if f.code == "grad_collapse").severity


def test_a_collapse_that_stays_is_a_warning_unless_the_loss_fell_with_it():
    # a classifier that fits its data: the loss falls 500x and the gradient with it (a RoBERTa run of this shape)
    g = norms()
    g[600:] *= 0.01
    flat = np.full(1000, 1.5)
    fitted = np.where(np.arange(1000) < 600, 1.5, 0.003)
    assert _collapse_severity(analyze_gradients(curve(g), loss=curve(flat, tag="loss"))) == "warning"
    result = analyze_gradients(curve(g), loss=curve(fitted, tag="loss"))
    finding = next(f for f in result.findings if f.code == "grad_collapse")
    assert finding.severity == "info" and "fell 500x with it" in finding.message
    assert finding.evidence["loss_fall"] == pytest.approx(500)


def test_one_low_norm_at_the_last_logged_step_is_information():
    g = norms()
    g[-1] *= 0.05  # the last logged step (a partial last batch): too short to tell whether it stays
    r = analyze_gradients(curve(g))
    assert [e.n_points for e in r.collapses] == [1] and _collapse_severity(r) == "info"


def test_a_single_low_point_is_not_a_collapse():
    g = norms()
    g[600] *= 0.01
    assert analyze_gradients(curve(g)).collapses == ()


def test_fast_fall_at_the_start_of_training_is_not_a_collapse():
    g = norms(n=2000)
    g[:40] *= np.geomspace(40, 1, 40)  # large initial norms that settle
    r = analyze_gradients(curve(g))
    assert r.collapses == ()


def test_nonfinite_norms_are_counted_with_their_first_step():
    g = norms()
    g[[100, 101, 500]] = [np.nan, np.inf, np.nan]
    r = analyze_gradients(curve(g))
    assert r.n_nonfinite == 3 and r.first_nonfinite_step == 1000
    assert r.nonfinite_steps == (1000, 1010, 5000)
    f = next(f for f in r.findings if f.code == "grad_nonfinite")
    assert f.severity == "warning"


def test_a_few_nonfinite_norms_the_loss_went_on_past_are_skipped_steps_not_an_error():
    """The HF Trainer's state logs no loss scale: NaN norms at 4 of 75 steps (a DPO run in fp16) while the loss
    stays finite and keeps falling are the steps the scaler skipped."""
    steps = np.arange(1, 76)
    g = np.full(75, 12.0)
    g[[0, 1, 17, 73]] = np.nan
    loss = curve(np.linspace(0.69, 0.2, 75), steps=steps, tag="loss")
    r = analyze_gradients(curve(g, steps=steps), loss=loss)
    f = next(f for f in r.findings if f.code == "grad_nonfinite")
    assert f.severity == "info" and "a mixed-precision loss scaler skipped" in f.message
    assert r.nonfinite_steps == (1, 2, 18, 74)
    # NaN at the last step, or a loss that went NaN too, or norms NaN at many steps: still an error
    g_tail = g.copy()
    g_tail[-1] = np.nan
    assert next(f for f in analyze_gradients(curve(g_tail, steps=steps), loss=loss).findings
                if f.code == "grad_nonfinite").severity == "error"
    nan_loss = curve(np.where(steps >= 50, np.nan, np.linspace(0.69, 0.2, 75)), steps=steps, tag="loss")
    assert next(f for f in analyze_gradients(curve(g, steps=steps), loss=nan_loss).findings
                if f.code == "grad_nonfinite").severity == "error"
    g_many = np.where(steps % 5 == 0, np.nan, 12.0)
    assert next(f for f in analyze_gradients(curve(g_many, steps=steps), loss=loss).findings
                if f.code == "grad_nonfinite").severity == "error"


def test_nonfinite_norms_with_loss_scaling_are_info():
    g = norms()
    g[[100, 500]] = np.inf
    scale = curve(np.full(1000, 65536.0), tag="loss_scale")
    r = analyze_gradients(curve(g), loss_scale=scale)
    f = next(f for f in r.findings if f.code == "grad_nonfinite")
    assert f.severity == "info"


def test_epoch_means_of_norms_all_inf_under_a_loss_scale_that_stays_up_are_overflows_not_an_error():
    # MAE's log.txt: train_grad_norm is an epoch's mean, Inf in every epoch (one overflow step suffices) while the
    # dynamic loss scale stays between 1e5 and 3e5
    epochs = np.arange(16)
    norms_ = np.full(16, np.inf)
    scale = curve(np.array([131072.0, 262144.0, 131072.0, 327680.0] * 4), tag="train_loss_scale", steps=epochs)
    r = analyze_gradients(curve(norms_, tag="train_grad_norm", steps=epochs), loss_scale=scale)
    f = next(f for f in r.findings if f.code == "grad_nonfinite")
    assert f.severity == "info" and "fp16 overflow that the scaler skipped" in f.message
    collapsed = curve(np.geomspace(65536.0, 1.0, 16), tag="train_loss_scale", steps=epochs)
    r = analyze_gradients(curve(norms_, tag="train_grad_norm", steps=epochs), loss_scale=collapsed)
    assert next(f for f in r.findings if f.code == "grad_nonfinite").severity == "error"


def test_clip_rate_and_frequent_clipping():
    g = norms(level=1.5)  # LLM-style: most norms above the 1.0 clip threshold
    r = analyze_gradients(curve(g), max_norm=1.0)
    assert r.clip_rate > 0.9 and r.n_clipped == int((g > 1.0).sum())
    assert "grad_clipping_frequent" in codes(r)
    band = next(f for f in r.findings if f.code == "grad_out_of_band")
    assert band.severity == "info"  # above 1 with clipping on is common, not an error


def test_norms_above_the_band_but_mostly_within_the_clip_value_say_nothing():
    g = norms(level=0.8, sd=0.6)  # an HF fine-tune clipped at 1: a third of its norms above 1, its median within
    assert (g > 1.0).mean() > 0.2
    assert not [f for f in analyze_gradients(curve(g), max_norm=1.0).findings if f.code == "grad_out_of_band"]
    assert [f for f in analyze_gradients(curve(g)).findings if f.code == "grad_out_of_band"]  # no clip: said


def test_norms_far_above_band_are_judged_against_their_own_history():
    # A steady norm of 50 is how some models train (mmdet's YOLOv3 logs ~700): the fixed band is information;
    # a warning needs the norm to leave its own range.
    r = analyze_gradients(curve(norms(level=50)))
    band = next(f for f in r.findings if f.code == "grad_out_of_band")
    assert band.severity == "info" and r.fraction_above_band == 1.0
    assert not [f for f in r.findings if f.severity != "info"]
    g = norms(level=50)
    g[600] = 50 * 40  # one step 40x its trailing median, far above where the run ever was
    burst = analyze_gradients(curve(g))
    assert next(f for f in burst.findings if f.code == "grad_explosion").severity == "warning"


def test_clipped_fine_tune_is_information_unless_clipping_cuts_updates_tenfold():
    assert next(f for f in analyze_gradients(curve(norms(level=1.5)), max_norm=1.0).findings
                if f.code == "grad_clipping_frequent").severity == "info"
    assert next(f for f in analyze_gradients(curve(norms(level=30)), max_norm=1.0).findings
                if f.code == "grad_clipping_frequent").severity == "warning"


def test_norms_below_band_warn_and_band_is_a_parameter():
    r = analyze_gradients(curve(norms(level=1e-6)))
    assert next(f for f in r.findings if f.code == "grad_out_of_band").severity == "warning"
    assert analyze_gradients(curve(norms(level=1e-6)), healthy_band=(1e-8, 1.0)).findings == ()


def test_bad_band_is_rejected():
    with pytest.raises(ValueError, match="healthy_band"):
        analyze_gradients(None, healthy_band=(1.0, 0.1))


@pytest.mark.parametrize(
    "values", [[], [0.5], [np.nan] * 5, [0.3] * 100], ids=["empty", "one", "nan", "constant"]
)
def test_edge_cases_do_not_raise(values):
    r = analyze_gradients(curve(np.array(values, dtype=float)))
    assert r.explosions == () and r.collapses == ()
    json.dumps(r.to_dict())


def test_nothing_given():
    r = analyze_gradients(None)
    assert r.n_points == 0 and r.findings == ()


def test_loss_scale_collapse_to_one():
    scale = 65536.0 / 2.0 ** np.minimum(np.arange(100) // 5, 16)
    r = analyze_gradients(None, loss_scale=curve(scale, tag="loss_scale"))
    assert r.loss_scale.collapsed and r.loss_scale.minimum == 1.0
    assert r.loss_scale.minimum_step == 800
    assert next(f for f in r.findings if f.code == "loss_scale_collapse").severity == "error"


def test_early_loss_scale_halvings_are_normal():
    scale = np.r_[65536.0 / 2.0 ** np.arange(6), np.full(994, 2048.0)]
    r = analyze_gradients(None, loss_scale=curve(scale, tag="loss_scale"))
    assert not r.loss_scale.collapsed and r.loss_scale.n_decreases == 5
    assert r.findings == ()


def test_skipped_steps_indicator_cumulative_and_per_interval():
    steps = np.arange(0, 1000, 10)
    per_interval = np.zeros(100)
    per_interval[[1, 2, 60, 80]] = [3, 1, 2, 1]
    r = analyze_gradients(None, skipped=curve(per_interval, steps, tag="skipped"))
    assert r.skipped.interpretation == "per-interval" and r.skipped.total == 7
    assert r.skipped.steps == (10, 20, 600, 800) and r.skipped.late == 3
    cumulative = np.cumsum(per_interval)
    r = analyze_gradients(None, skipped=curve(cumulative, steps, tag="skipped"))
    assert r.skipped.interpretation == "cumulative" and r.skipped.total == 7
    indicator = curve(np.ones(4), np.array([5, 9, 600, 700]), tag="skipped")
    r = analyze_gradients(None, skipped=indicator)
    assert r.skipped.interpretation == "indicator" and r.skipped.total == 4
    assert "skipped_steps" in codes(r)


def test_many_late_skipped_steps_warn():
    steps = np.arange(0, 1000)
    skipped = (np.arange(1000) % 10 == 0).astype(float)  # every 10th step, all run long
    r = analyze_gradients(None, skipped=curve(skipped, steps, tag="skipped"))
    assert r.skipped.late_fraction == pytest.approx(0.1, abs=0.01)
    assert next(f for f in r.findings if f.code == "skipped_steps").severity == "warning"


def test_occasional_skips_of_dynamic_loss_scaling_are_info():
    # DeepSpeed-style cumulative counter logged every 10 steps: one skip every ~50 steps
    steps = np.arange(10, 7400, 10)
    counter = np.floor(steps / 50.0)
    r = analyze_gradients(None, skipped=curve(counter, steps, tag="skipped"))
    assert r.skipped.interpretation == "cumulative" and r.skipped.total == 147
    assert r.skipped.fraction == pytest.approx(147 / 7390, rel=1e-6)
    assert next(f for f in r.findings if f.code == "skipped_steps").severity == "info"


def test_repeated_steps_keep_the_last_value():
    # two engines writing the same step (e.g. actor and critic): last write wins, fraction stays sane
    steps = np.repeat(np.arange(10, 110, 10), 2)
    values = np.ravel(np.column_stack([np.arange(10) + 4, np.full(10, 3.0)]))
    r = analyze_gradients(None, skipped=curve(values, steps, tag="skipped"))
    assert r.skipped.interpretation == "cumulative" and r.skipped.total == 3 and r.skipped.fraction <= 1


# ---------------------------------------------------------------------------------------------- histograms


@pytest.mark.parametrize(
    ("tag", "layer"),
    [
        ("grad/encoder.0", "encoder.0"),
        ("encoder.0/grad", "encoder.0"),
        ("gradients/fc1.weight", "fc1.weight"),
        ("model/grads/layer3", "model/layer3"),
        ("fc1.weight.grad", "fc1.weight"),
        ("fc1_grad", "fc1"),
        ("weights/fc1", None),
        ("gradient_norm", None),
    ],
)
def test_layer_name(tag, layer):
    assert layer_name(tag) == layer


def hist_frame(layers: dict[str, np.ndarray], steps: np.ndarray, num: int = 1000) -> pd.DataFrame:
    rows = []
    for tag, rms in layers.items():
        for step, r in zip(steps, rms, strict=True):
            rows.append(
                dict(
                    run="r",
                    tag=tag,
                    step=int(step),
                    wall_time=np.nan,
                    min=-3 * r,
                    max=3 * r,
                    num=float(num),
                    sum=0.0,
                    sum_squares=num * r * r,
                    bucket_limits=np.array([-r, 0.0, r, 3 * r]),
                    bucket_counts=np.array([num / 4, num / 4, num / 4, num / 4]),
                )
            )
    return pd.DataFrame(rows)


def test_layer_vanishing_and_exploding_with_first_steps():
    steps = np.arange(0, 500, 10)
    rng = np.random.default_rng(1)
    healthy = 1e-3 * np.exp(rng.normal(0, 0.1, steps.size))
    vanishing = healthy.copy()
    vanishing[20:] *= 1e-5  # falls 5 orders of magnitude at step 200
    exploding = healthy.copy()
    exploding[35:] *= 1e4  # at step 350
    frame = hist_frame(
        {"grad/l0": healthy, "grad/l1": healthy * 2, "grad/l2": vanishing, "grad/l3": exploding}, steps
    )
    frame = pd.concat([frame, hist_frame({"weights/l0": healthy}, steps)])
    r = analyze_gradients(None, histograms=frame)
    by = {lg.layer: lg for lg in r.layers}
    assert set(by) == {"l0", "l1", "l2", "l3"} and r.n_histogram_tags_ignored == 1
    assert by["l0"].status == "ok" and by["l1"].status == "ok"
    assert by["l2"].status == "vanishing" and by["l2"].onset_step == 200
    assert by["l3"].status == "exploding" and by["l3"].onset_step == 350
    assert by["l0"].rms_median == pytest.approx(1e-3, rel=0.1)
    found = {f.code: f for f in r.findings}
    assert found["layer_grad_vanishing"].step == 200 and "l2" in found["layer_grad_vanishing"].message
    assert found["layer_grad_exploding"].step == 350
    json.dumps(r.to_dict())


def test_layer_far_below_the_others_from_the_start_is_vanishing():
    steps = np.arange(0, 300, 10)
    base = np.full(steps.size, 1e-2)
    frame = hist_frame({"l0/grad": base, "l1/grad": base, "l2/grad": base, "embed/grad": base * 1e-6}, steps)
    by = {lg.layer: lg for lg in analyze_gradients(None, histograms=frame).layers}
    assert by["embed"].status == "vanishing" and by["embed"].onset_step == 0


def test_rms_falls_back_to_buckets_without_sum_squares():
    steps = np.arange(0, 100, 10)
    frame = hist_frame({"grad/a": np.full(steps.size, 1e-2)}, steps)
    frame["sum_squares"] = np.nan
    [lg] = analyze_gradients(None, histograms=frame).layers
    assert lg.rms_median == pytest.approx(1e-2, rel=0.5)


def test_empty_histograms_are_skipped_not_exploding():
    steps = np.arange(0, 100, 10)
    frame = hist_frame({"grad/a": np.full(steps.size, 1e-2)}, steps)
    frame.loc[3, ["num", "sum_squares"]] = [0.0, 0.0]
    [lg] = analyze_gradients(None, histograms=frame).layers
    assert lg.status == "ok" and lg.n_points == 9


def test_nonfinite_layer_gradients_are_exploding():
    steps = np.arange(0, 100, 10)
    frame = hist_frame({"grad/a": np.full(steps.size, 1e-2)}, steps)
    frame.loc[frame["step"] >= 60, "sum_squares"] = np.inf
    [lg] = analyze_gradients(None, histograms=frame).layers
    assert lg.status == "exploding" and lg.onset_step == 60 and "non-finite" in lg.reason


def test_histograms_of_several_runs_are_refused():
    steps = np.arange(0, 30, 10)
    frame = pd.concat([hist_frame({"grad/a": np.ones(3)}, steps).assign(run=r) for r in ("a", "b")])
    with pytest.raises(ValueError, match="hold 2 runs"):
        analyze_gradients(None, histograms=frame)


def test_histograms_with_only_buckets_still_give_an_rms():
    # a table with bucket limits/counts but no num/sum_squares columns (as some readers produce)
    steps = np.arange(0, 50, 10)
    limits = np.array([-0.02, -0.01, 0.0, 0.01, 0.02])
    counts = np.array([0.0, 10.0, 10.0, 0.0, 0.0])
    frame = pd.DataFrame(
        {"tag": "gradients/fc", "step": steps, "bucket_limits": [limits] * 5, "bucket_counts": [counts] * 5}
    )
    [lg] = analyze_gradients(None, histograms=frame).layers
    # mid-points -0.015 and -0.005 (the first bucket starts at its own limit): rms = sqrt((2.25e-4 + 2.5e-5) / 2)
    assert lg.rms_median == pytest.approx(np.sqrt((2.25e-4 + 2.5e-5) / 2))
    assert lg.n_points == 5 and lg.status == "ok"


def test_explosion_severity_transient_vs_unrecovered():
    g = norms()
    g[400] = 0.5 * 20
    assert (
        next(f for f in analyze_gradients(curve(g)).findings if f.code == "grad_explosion").severity
        == "warning"
    )
    g[900:] = 0.5 * 20  # stays up until the end
    r = analyze_gradients(curve(g))
    assert r.explosions[-1].step == 9000 and r.explosions[-1].step_end == 9990
    assert next(f for f in r.findings if f.code == "grad_explosion").severity == "error"


def test_explosion_the_loss_did_not_follow_is_information():
    """A transient gradient spike that the training loss absorbed (a bad batch, clipped) is information; the
    same spike with the loss rising around it stays a warning, with the loss's rise as evidence."""
    g = norms(1000)
    g[600:603] *= 10  # a 10x spike at steps 6000..6020, back at once
    rng = np.random.default_rng(1)
    flat = 2.0 * np.exp(rng.normal(0, 0.01, 1000))
    quiet = analyze_gradients(curve(g), loss=curve(flat, tag="loss"))
    [f] = [f for f in quiet.findings if f.code == "grad_explosion"]
    assert f.severity == "info" and "The loss did not follow" in f.message and f.evidence["loss_rise"] < 1.1
    followed = flat.copy()
    followed[601:604] *= 1.6
    [f] = [f for f in analyze_gradients(curve(g), loss=curve(followed, tag="loss")).findings
           if f.code == "grad_explosion"]
    assert f.severity == "warning" and "the loss rose up to 1.6" in f.message.lower()
    [f] = [f for f in analyze_gradients(curve(g)).findings if f.code == "grad_explosion"]  # no loss: as before
    assert f.severity == "warning" and "loss_rise" not in f.evidence


@pytest.mark.parametrize("assumed", [True, False])
def test_a_clipping_norm_assumed_from_the_trainers_default_says_so(assumed):
    """A trainer_state.json does not record max_grad_norm: the clip of 1 is the HF Trainer's default, assumed; the
    finding said 'max norm 1' as if the log gave it."""
    norms = Curve.from_arrays(np.arange(1, 41), np.full(40, 11.0) + np.sin(np.arange(40)), "grad_norm")
    health = analyze_gradients(norms, max_norm=1.0, max_norm_assumed=assumed)
    [clipped] = [f for f in health.findings if f.code == "grad_clipping_frequent"]
    assert ("max norm 1 (assumed: the trainer's default; the log does not record it)" in clipped.message) == assumed
    assert "max norm 1" in clipped.message


def test_explosions_of_a_clipped_norm_are_not_told_to_enable_clipping():
    """An HF fine-tune (clipping at 1 on, the norms logged before it) with two norm spikes: the advice had been
    "Enable gradient clipping", beside a finding that said clipping was on."""
    g = norms(1000, level=2.4)
    g[600:602] *= 10
    [clipped] = [f for f in analyze_gradients(curve(g), max_norm=1.0, max_norm_assumed=True).findings
                 if f.code == "grad_explosion"]
    assert "Enable gradient clipping" not in clipped.recommendation
    assert clipped.recommendation.startswith("Clipping at 1 (assumed: the trainer's default")
    [above] = [f for f in analyze_gradients(curve(g), max_norm=1.0).findings if f.code == "grad_out_of_band"]
    assert "Clip large gradients" not in above.recommendation
    [unclipped] = [f for f in analyze_gradients(curve(g)).findings if f.code == "grad_explosion"]
    assert "Enable gradient clipping" in unclipped.recommendation


def test_a_norm_logged_as_zero_while_the_loss_falls_was_not_measured():
    """A W&B export of an HF fine-tune whose grad_norm is exactly 0.0 at every point while its loss fell (1.152 to
    0.911): gradients of zero change no weight, so the zeros are a norm not measured; it had been a warning of
    gradients below the healthy band at 100% of steps. A zero norm with a loss that did not move stays a warning."""
    zeros = curve(np.zeros(20))
    falling = curve(np.linspace(1.152, 0.911, 20), tag="loss")
    health = analyze_gradients(zeros, loss=falling)
    assert codes(health) == ["grad_norm_unmeasured"]
    [f] = health.findings
    assert f.severity == "info" and "exactly 0 at 100% of 20 logged steps" in f.message and "1.152 to 0.911" in f.message
    still = analyze_gradients(zeros, loss=curve(np.full(20, 1.152), tag="loss"))
    assert [(f.code, f.severity) for f in still.findings] == [("grad_out_of_band", "warning")]
