"""Preference optimisation: a loss that starts at ln 2 and falls a little while the reward margin grows."""

import numpy as np

from tanalyze.analysis.classify import classify_run
from tanalyze.analysis.preference import nonfinite_policy_outputs, preference_progress
from tanalyze.curves import Curve

STEPS = np.arange(10, 810, 10)


def _dpo(margin_growth: float, seed: int = 0) -> dict[str, Curve]:
    rng = np.random.default_rng(seed)
    progress = np.linspace(0, 1, len(STEPS))
    loss = np.log(2) - 0.03 * progress * (margin_growth > 0) + rng.normal(0, 0.004, len(STEPS))
    margins = margin_growth * progress + rng.normal(0, 0.004, len(STEPS))
    accuracies = np.clip(0.5 + 0.4 * progress * (margin_growth > 0) + rng.normal(0, 0.05, len(STEPS)), 0, 1)
    return {"loss": Curve.from_arrays(STEPS, loss, "loss"),
            "rewards/margins": Curve.from_arrays(STEPS, margins, "rewards/margins"),
            "rewards/accuracies": Curve.from_arrays(STEPS, accuracies, "rewards/accuracies"),
            "eval_rewards/margins": Curve.from_arrays(STEPS[::10], margins[::10] * 0, "eval_rewards/margins")}


def test_a_dpo_loss_that_falls_a_little_while_its_margin_grows_is_no_underfitting():
    curves = _dpo(0.05)
    progress = preference_progress(curves)
    assert progress is not None and progress.tag == "rewards/margins" and progress.learning  # (not the eval copy)
    assert progress.end > progress.start + 0.03
    verdict = classify_run(curves["loss"], preference=progress)
    assert verdict.label == "normal", verdict.reasons
    assert "rewards/margins rose from" in verdict.evidence["preference_learning"]
    assert verdict.reasons[1] == verdict.evidence["preference_learning"]  # the why says what showed the learning
    # without the margin's evidence the same loss is underfitting (it fell 4%)
    assert classify_run(curves["loss"]).label == "underfitting"


def test_a_margin_that_does_not_grow_leaves_the_underfitting():
    curves = _dpo(0.0)
    progress = preference_progress(curves)
    assert progress is not None and not progress.learning
    assert classify_run(curves["loss"], preference=progress).label == "underfitting"


def test_a_run_without_reward_curves_has_no_preference_progress():
    assert preference_progress({"loss": Curve.from_arrays(STEPS, np.ones(len(STEPS)), "loss")}) is None


def test_a_policy_whose_outputs_are_nan_at_every_step_is_named():
    """TRL's DPO lines of a run gone wrong: a loss of 2.45e9, then 0.0, with every log-probability, logit and reward
    NaN (the accuracy a number). Three loss points had made it "insufficient data", with no word of the NaN."""
    steps = np.array([50, 100, 150])
    curves = {"loss": Curve.from_arrays(steps, np.array([2451616399.36, 0.0, 0.0]), "loss"),
              "rewards/accuracies": Curve.from_arrays(steps, np.array([0.0087, 0.0, 0.0]), "rewards/accuracies")}
    for tag in ("rewards/chosen", "rewards/margins", "logps/chosen", "logits/rejected", "eval_logps/chosen"):
        curves[tag] = Curve.from_arrays(steps, np.full(3, np.nan), tag)
    assert nonfinite_policy_outputs(curves) == ("logits/rejected", "logps/chosen", "rewards/chosen", "rewards/margins")
    curves["logps/chosen"] = Curve.from_arrays(steps, np.array([np.nan, -120.5, np.nan]), "logps/chosen")
    assert "logps/chosen" not in nonfinite_policy_outputs(curves)  # (a number once: not every point)


def test_a_dpo_run_whose_policy_outputs_are_nan_is_diverged(tmp_path):
    import tanalyze

    lines = [f"{{'loss': {loss}, 'learning_rate': 0.0005, 'rewards/chosen': nan, 'rewards/rejected': nan, "
             f"'rewards/accuracies': 0.0, 'rewards/margins': nan, 'logps/rejected': nan, 'logps/chosen': nan, "
             f"'logits/rejected': nan, 'logits/chosen': nan, 'epoch': {epoch}}}"
             for loss, epoch in ((2451616399.36, 0.28), (0.0, 0.57), (0.0, 0.85))]
    (tmp_path / "train_log.log").write_text("\n".join(["***** Running training *****", *lines]) + "\n")
    [d] = tanalyze.diagnose(tanalyze.load(tmp_path)).values()
    assert d.verdict.label == "diverged"
    assert d.verdict.reasons[0].startswith("the policy's outputs are NaN/Inf at every logged point")
    assert [f.severity for f in d.findings if f.code == "diverged_nonfinite"] == ["error"]
