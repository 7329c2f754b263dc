"""Preference optimisation judged on real TRL DPO runs (tests/fixtures/dpo, written by its generate.py).

Both runs train the same tiny GPT-2 for 120 steps with ``DPOTrainer`` (beta 0.1) and differ only in their pairs: in
``learns/`` the chosen completion follows a rule (repeat the prompt's last word), in ``random_pairs/`` chosen and
rejected are random words. The learning run's loss falls only from ln 2 to about 0.65, which the loss alone would
call underfitting; its reward margin and reward accuracy say the policy learns.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import pytest

import tanalyze

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dpo"


def _diagnosis(folder: str):
    (d,) = tanalyze.diagnose(tanalyze.load(FIXTURES / folder, cache=False)).values()
    return d


def test_the_state_is_read_with_trls_exact_values():
    logs = tanalyze.load(FIXTURES / "learns", cache=False)
    (name,) = logs.runs
    assert logs.runs[name].format == "hf_trainer_state"
    margins = logs.series(name, "rewards/margins")
    assert margins.index.tolist() == list(range(5, 125, 5))
    assert margins[5] == 0.014762273896485567 and margins[120] == 0.0934169664978981
    assert logs.series(name, "rewards/accuracies")[60] == 0.975
    assert logs.series(name, "eval_rewards/margins")[120] == 0.0782734639942646
    loss = logs.series(name, "loss")
    assert loss[5] == 0.6859006881713867 and loss[120] == 0.6477400779724121
    assert loss[5] < math.log(2)  # the mean of steps 1-5: a policy equal to its reference starts at ln 2

    random_pairs = tanalyze.load(FIXTURES / "random_pairs", cache=False)
    (name,) = random_pairs.runs
    assert random_pairs.series(name, "rewards/margins")[60] == 0.01469406895339489


def test_a_policy_that_learns_the_preferences_is_not_underfitting():
    d = _diagnosis("learns")
    assert d.format == "hf_trainer_state" and d.roles["train_loss"] == "loss" and d.roles["val_loss"] == "eval_loss"
    assert d.verdict.label != "underfitting"
    assert d.verdict.label == "normal"
    assert -0.10 < d.verdict.evidence["change"] < -0.05  # the loss fell under 10 %: "flat" by the loss alone
    evidence = d.verdict.evidence["preference_learning"]
    assert "rewards/margins" in evidence and "the policy learns the preferences" in evidence


def test_without_the_margins_the_loss_alone_would_call_it_underfitting(monkeypatch):
    # the case the preference rule exists for: a healthy DPO run whose loss falls only a few percent
    monkeypatch.setattr(importlib.import_module("tanalyze.diagnose"), "preference_progress", lambda curves: None)
    d = _diagnosis("learns")
    assert d.verdict.label == "underfitting" and "preference_learning" not in d.verdict.evidence


def test_random_pairs_teach_nothing_and_stay_underfitting():
    d = _diagnosis("random_pairs")
    assert d.verdict.label == "underfitting"
    assert "preference_learning" not in d.verdict.evidence
    assert d.verdict.evidence["chance_level"] == pytest.approx(math.log(2))
