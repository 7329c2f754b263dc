import json

import numpy as np
import pytest

from tanalyze.analysis.divergence import analyze_divergence
from tanalyze.analysis.early_warning import analyze_early_warning, warning_scores
from tanalyze.curves import Curve
from tanalyze.datasets import GRAD, LR, TRAIN, make_curve, make_gradual_divergence
from tanalyze.diagnose import diagnose_run
from tanalyze.schema import scalar_frame


def _frame(name: str, curves: dict[str, Curve]):
    tags, steps, values = [], [], []
    for c in curves.values():
        tags += [c.tag] * len(c)
        steps.append(c.steps)
        values.append(c.values)
    step = np.concatenate(steps)
    return scalar_frame(run=name, tag=tags, step=step, value=np.concatenate(values), wall_time=1.7e9 + step * 0.5)


def _healthy(n: int = 2000, seed: int = 0, noise: float = 0.15) -> Curve:
    rng = np.random.default_rng(seed)
    t = np.arange(n) / (n - 1)
    loss = (0.3 + 2.0 * np.exp(-t / 0.15)) * np.exp(noise * rng.standard_normal(n))
    return Curve.from_arrays(np.arange(n), loss, "train/loss")


@pytest.mark.parametrize("seed,grad", [(0, True), (1, False), (2, True)])
def test_gradual_divergence_warns_ten_percent_of_the_run_before_the_onset(seed, grad):
    curves, truth = make_gradual_divergence(seed=seed, start_at=0.4, sharpness=2.5, grad_norm=grad)
    d = diagnose_run(_frame("g", curves), roles={"train_loss": TRAIN, "learning_rate": LR,
                                                 **({"grad_norm": GRAD} if grad else {})})
    e = d.early_warning
    assert d.divergence is not None and e.onset_step == d.divergence.onset_step
    assert e.warning_step is not None and truth["instability_start"] < e.warning_step < e.onset_step
    assert e.warning_lead_steps == e.onset_step - e.warning_step
    assert e.warning_lead_share == pytest.approx(e.warning_lead_steps / (e.onset_step - e.first_step), abs=1e-4)
    assert e.warning_lead_share >= 0.10
    signals = {p.signal for p in e.precursors}
    assert "loss_rise" in signals and (("grad_norm_growth" in signals) == grad)
    assert e.lr_ratio_at_onset is not None and e.lr_ratio_at_onset > 1.2  # the lr kept growing
    [info] = [f for f in d.findings if f.code == "divergence_precursor"]
    assert info.severity == "info" and f"step {e.onset_step:,}" in info.message and "of the run" in info.message
    assert not any(f.code == "divergence_warning" for f in d.findings)
    json.dumps(d.to_dict()["early_warning"])


def test_step_jump_divergence_is_not_claimed_foreseen():
    curves, truth = make_curve("diverged", n_steps=2000, seed=4, nonfinite=False, output="curves")
    loss = curves["train/loss"]
    result = analyze_divergence(loss)
    onset = result.divergence.onset_step
    assert abs(onset - truth.explosion_onset) <= 3
    e = analyze_early_warning(loss, onset_step=onset, learning_rate=curves["train/learning_rate"])
    assert e.warning_step is None and e.warning_lead_steps is None
    assert not any(p.signal == "loss_rise" for p in e.precursors)
    assert e.max_score < e.threshold


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_healthy_noisy_run_has_no_warning(seed):
    e = analyze_early_warning(_healthy(seed=seed))
    assert e.onset_step is None and e.warning_step is None and e.findings == ()
    assert e.score_at_end < e.threshold


def test_run_climbing_now_warns_before_it_diverges():
    curves, _ = make_gradual_divergence(n_steps=2000, seed=5, start_at=0.4, sharpness=2.0)
    live = {tag: c.between(None, 900) for tag, c in curves.items()}  # as `watch` sees it, 80 steps into the climb
    d = diagnose_run(_frame("live", live), roles={"train_loss": TRAIN, "learning_rate": LR, "grad_norm": GRAD})
    assert d.divergence is None and d.verdict.label == "normal"  # a warning, not a problem verdict
    [w] = [f for f in d.findings if f.code == "divergence_warning"]
    assert w.severity == "warning" and w.step == d.early_warning.warning_step and 800 < w.step < 900
    assert "has not diverged yet" in w.message


def test_climb_at_the_end_of_a_finished_run_is_information():
    """The same climb in a run known to have finished: no blow-up can follow, so the warning is information
    (with what to do before training on from its checkpoint), not a warning."""
    from tanalyze.runstatus import RunStatus

    curves, _ = make_gradual_divergence(n_steps=2000, seed=5, start_at=0.4, sharpness=2.0)
    ended = {tag: c.between(None, 900) for tag, c in curves.items()}
    roles = {"train_loss": TRAIN, "learning_rate": LR, "grad_norm": GRAD}
    d = diagnose_run(_frame("ended", ended), roles=roles, status=RunStatus("finished", "exit code 0"))
    [w] = [f for f in d.findings if f.code == "divergence_warning"]
    assert w.severity == "info" and 800 < w.step < 900 and "when the run finished, without diverging" in w.message
    assert "training on from its last checkpoint" in w.recommendation
    crashed = diagnose_run(_frame("ended", ended), roles=roles, status=RunStatus("crashed", "Traceback"))
    assert [f.severity for f in crashed.findings if f.code == "divergence_warning"] == ["warning"]


def test_score_has_no_look_ahead():
    curves, _ = make_gradual_divergence(n_steps=1500, seed=7, start_at=0.5)
    loss, grad = curves[TRAIN], curves[GRAD]
    steps, score, *_ = warning_scores(loss, grad)
    for cut in (100, 700, 900, 1100):
        s2, sc2, *_ = warning_scores(loss.between(None, cut), grad.between(None, cut))
        keep = steps <= cut
        np.testing.assert_array_equal(s2, steps[keep])
        np.testing.assert_allclose(sc2, score[keep], rtol=0, atol=0)
    assert score.max() > 1  # the scores compared are not all zero


def test_loss_scale_drop_and_spike_rate_are_precursors():
    n = 1000
    loss = _healthy(n, noise=0.02)
    halvings = np.where(np.arange(n) < 700, 0, (np.arange(n) - 700) // 40 + 1)  # halved every 40 steps from 700
    scale = Curve.from_arrays(np.arange(n), 65536.0 / 2.0 ** halvings, "scaler/scale")
    e = analyze_early_warning(loss, onset_step=900, loss_scale=scale, spike_steps=(200, 820, 850, 880))
    by = {p.signal: p for p in e.precursors}
    assert by["loss_scale_drop"].step == 700 and by["loss_scale_drop"].lead_steps == 200
    assert by["loss_scale_drop"].ratio == pytest.approx(2.0 ** 6)  # 6 halvings by step 900
    assert by["spike_rate"].step == 820 and by["spike_rate"].ratio == pytest.approx((3 / 80) / (4 / 900)) and by["spike_rate"].lead_share == pytest.approx(80 / 900, abs=1e-4)


@pytest.mark.parametrize("case", ["diverged_finite", "collapse_to_chance"])
def test_really_trained_lr_jump_is_not_claimed_foreseen(case):
    import warnings
    from pathlib import Path

    import tanalyze

    root = Path(__file__).resolve().parents[2] / "bench" / "hardcases" / case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [d] = tanalyze.diagnose(tanalyze.load(root)).values()
    e = d.early_warning
    assert d.verdict.label == "diverged" and e.onset_step == d.divergence.onset_step
    assert e.warning_step is None and e.precursors == () and e.findings == ()
    assert e.lr_ratio_at_onset == pytest.approx(500, rel=0.01)  # the lr went from 1e-3 to 0.5: the cause, shown
