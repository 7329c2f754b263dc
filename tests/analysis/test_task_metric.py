from __future__ import annotations

import numpy as np
import pytest

import tanalyze
from tanalyze.analysis.task_metric import metric_against_overfitting, task_metric_tags, zero_metrics
from tanalyze.curves import Curve
from tests.conftest import real_log


def test_the_metrics_beside_a_validation_loss_are_found_by_its_prefix_overall_ones_first():
    tags = ["eval_loss", "eval_T017_f1", "eval_overall_f1", "eval_runtime", "eval_accuracy", "eval_wer",
            "eval_samples_per_second", "train_accuracy", "eval_score"]
    assert task_metric_tags("eval_loss", tags) == [("eval_overall_f1", True), ("eval_wer", False),
                                                   ("eval_accuracy", True), ("eval_T017_f1", True)]
    assert task_metric_tags("val/loss", ["val/acc", "val/loss", "train/acc", "val/top1"]) == [("val/acc", True),
                                                                                            ("val/top1", True)]
    assert task_metric_tags("loss", ["acc"]) == []  # no prefix: nothing says which metrics go with it


@pytest.mark.parametrize(("f1", "disagrees"), [([0.34, 0.41, 0.45, 0.47, 0.51, 0.53, 0.55, 0.56], True),
                                               ([0.34, 0.41, 0.45, 0.44, 0.43, 0.42, 0.41, 0.40], False)])
def test_a_metric_that_kept_improving_after_the_loss_rose_disagrees(f1, disagrees):
    steps = np.arange(1400, 12000, 1400)[: len(f1)]
    result = metric_against_overfitting(Curve.from_arrays(steps, np.array(f1), "eval_f1"), True, 4200, "eval_loss")
    assert result.at_onset == 0.45 and result.best == max(f1[3:])
    assert bool(result.findings) == disagrees


def test_a_lower_is_better_metric_is_read_the_other_way():
    wer = Curve.from_arrays(np.arange(1, 9), np.array([0.5, 0.4, 0.35, 0.33, 0.31, 0.30, 0.29, 0.28]), "eval_wer")
    result = metric_against_overfitting(wer, False, 3, "eval_loss")
    assert result.best == 0.28 and result.findings[0].code == "metric_disagrees"


@pytest.mark.real_logs
def test_a_tagger_whose_f1_kept_rising_while_its_eval_loss_rose_is_told_to_select_by_f1():
    # a token-classification fine-tune (HF Trainer): eval_loss lowest at step 5600, +55% by 14000, while
    # eval_overall_f1 goes 0.452 -> 0.565 (its best, at the end)
    folder = real_log("hf_trainer_state/Nicolassalvan__mti881-projet2/ResultsEtape4/"
                      "NouveauWeightLossSansOptunaHyperparamByDefault")
    (d,) = tanalyze.diagnose(tanalyze.load(folder)).values()
    assert d.verdict.label == "overfitting" and d.overfitting.onset_step == 5600
    (finding,) = [f for f in d.findings if f.code == "metric_disagrees"]
    assert finding.evidence["metric"] == "eval_overall_f1"
    assert finding.evidence["at_onset"] == pytest.approx(0.4518, abs=1e-4)
    assert finding.evidence["best"] == finding.evidence["last"] == pytest.approx(0.5647, abs=1e-4)
    assert "eval_overall_f1 kept improving" in d.verdict.reasons[-1]


def test_hit_counting_scores_at_exactly_zero_while_the_model_learns_are_a_warning():
    """A YOLO classifier as a real one logged it (22 epochs): train/loss from 2.518 down 97%, metrics/accuracy_top1 and _top5 exactly 0 at
    every epoch (its validation's class folders did not match the training's)."""
    steps = list(range(1, 23))
    train = Curve.from_arrays(steps, [2.5183 * 0.84 ** k for k in range(22)], tag="train/loss")
    curves = {"train/loss": train, "val/loss": Curve.from_arrays(steps, [3.97] * 22, tag="val/loss"),
              "metrics/accuracy_top1": Curve.from_arrays(steps, [0.0] * 22, tag="metrics/accuracy_top1"),
              "metrics/accuracy_top5": Curve.from_arrays(steps, [0.0] * 22, tag="metrics/accuracy_top5")}
    (finding,) = zero_metrics(curves, train)
    assert finding.code == "metric_zero" and finding.severity == "warning"
    assert finding.message.startswith("metrics/accuracy_top1 and metrics/accuracy_top5 are exactly 0 at every "
                                      "evaluation (22 of them) while train/loss fell 97%")
    # a score that scored once, a loss at 0, or a model that does not learn: no such warning
    curves["metrics/accuracy_top1"] = Curve.from_arrays(steps, [0.0] * 21 + [0.02], tag="metrics/accuracy_top1")
    assert "accuracy_top5" in zero_metrics(curves, train)[0].message and "top1" not in zero_metrics(curves, train)[0].message
    assert zero_metrics({"val/loss": Curve.from_arrays(steps, [0.0] * 22, tag="val/loss")}, train) == ()
    flat = Curve.from_arrays(steps, [2.5] * 22, tag="train/loss")
    assert zero_metrics(curves, flat) == ()
    # one class's scores at 0 (a rare entity type an NER model never finds: a real run's eval_T024_f1) are no sign
    rare = {"eval_T024_f1": Curve.from_arrays(steps, [0.0] * 22, tag="eval_T024_f1")}
    assert zero_metrics(rare, train) == ()
