"""Checkpoints on disk against the best evaluation, and the top-k what-if: known curves and really written runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tanalyze
from tanalyze.analysis.checkpoints import analyze_checkpoints, mode_from_name, monitored_metric
from tanalyze.checkpoint_files import NO_CHECKPOINTS, CheckpointScan, SavedCheckpoint, TrainerBest
from tanalyze.curves import Curve
from tests.conftest import real_log

FIXTURES = Path(__file__).parents[1] / "fixtures" / "checkpoints"

# A validation loss evaluated every 1,000 steps: best at 4,000, then rising with a little noise.
STEPS = np.arange(1000, 11000, 1000)
VALUES = np.array([2.40, 2.10, 1.95, 1.82, 1.84, 1.87, 1.91, 1.93, 1.96, 2.00])


def _scan(*steps: int, **kw) -> CheckpointScan:
    return CheckpointScan(folder="out", checkpoints=tuple(SavedCheckpoint(f"checkpoint-{s}", "hf", step=s)
                                                          for s in steps), **kw)


def test_best_missing_on_a_known_curve():
    r = analyze_checkpoints(_scan(6000, 10000), Curve.from_arrays(STEPS, VALUES, "val_loss"))
    assert (r.best_step, r.best_value, r.evaluations) == (4000, 1.82, 10)
    assert (r.best_kept.name, r.best_kept.value, r.best_on_disk) == ("checkpoint-6000", 1.87, False)
    assert r.gap == pytest.approx(0.05) and r.gap_relative == pytest.approx(0.05 / 1.82)
    assert r.material and r.gap > r.margin
    assert r.top_k_steps == (4000, 5000, 6000)
    assert r.kept_eval_steps == (6000, 10000)
    assert r.would_also_keep == (4000, 5000) and r.kept_outside_top_k == (10000,)
    (finding,) = r.findings
    assert (finding.code, finding.severity, finding.step) == ("best_checkpoint_missing", "warning", 4000)
    assert finding.message == ("best evaluation at step 4,000 (val_loss 1.82) but no checkpoint kept there; best on "
                               "disk is step 6,000 (1.87, +2.7%); with top_k=3 on val_loss a checkpoint manager "
                               "would keep steps 4,000, 5,000, 6,000")
    assert "load_best_model_at_end=True" in finding.recommendation and "save_top_k=3" in finding.recommendation


def test_best_kept_is_info_and_top_k_is_a_parameter():
    r = analyze_checkpoints(_scan(4000, 10000), Curve.from_arrays(STEPS, VALUES, "val_loss"), top_k=2)
    assert r.best_on_disk and r.gap == 0.0 and not r.material
    assert r.top_k_steps == (4000, 5000) and r.would_also_keep == (5000,) and r.kept_outside_top_k == (10000,)
    assert [(f.code, f.severity) for f in r.findings] == [("best_checkpoint_kept", "info")]


def test_a_gap_within_the_noise_is_not_a_warning():
    rng = np.random.default_rng(0)
    noisy = 1.0 + 0.05 * rng.standard_normal(40)  # flat: every difference is noise
    steps = np.arange(100, 4100, 100)
    best = int(steps[np.argmin(noisy)])
    kept = int(steps[np.argsort(noisy)[1]])  # the second best evaluation
    r = analyze_checkpoints(_scan(kept), Curve.from_arrays(steps, noisy, "val_loss"))
    assert r.best_step == best and not r.best_on_disk and not r.material
    assert r.gap < r.margin == pytest.approx(2 * r.noise)
    assert [(f.code, f.severity) for f in r.findings] == [("best_checkpoint_close", "info")]


def test_higher_is_better_and_values_between_evaluations():
    acc = Curve.from_arrays([10, 20, 30, 40], [0.5, 0.8, 0.7, 0.6], "eval/accuracy")
    r = analyze_checkpoints(_scan(25, 45), acc, mode="max")
    assert (r.best_step, r.best_value) == (20, 0.8)
    values = [(c.name, c.value, c.eval_step, c.source) for c in r.checkpoints]
    assert values == [("checkpoint-25", 0.8, 20, "latest evaluation before it (step 20)"),
                      ("checkpoint-45", 0.6, 40, "latest evaluation before it (step 40)")]
    assert r.best_on_disk and r.top_k_steps == (20, 30, 40)


def test_no_checkpoints_no_result_and_bad_arguments():
    curve = Curve.from_arrays(STEPS, VALUES, "val_loss")
    assert analyze_checkpoints(NO_CHECKPOINTS, curve) is None
    with pytest.raises(ValueError, match="mode must be 'min' or 'max', got 'lowest'"):
        analyze_checkpoints(_scan(1000), curve, mode="lowest")
    with pytest.raises(ValueError, match="top_k must be at least 1, got 0"):
        analyze_checkpoints(_scan(1000), curve, top_k=0)


def test_checkpoints_without_a_metric_or_step_are_listed_without_a_finding():
    scan = CheckpointScan(folder="out", checkpoints=(SavedCheckpoint("ckpt.pt", "nanogpt"),), notes=("n",))
    r = analyze_checkpoints(scan, Curve.from_arrays(STEPS, VALUES, "val_loss"))
    assert r.findings == () and r.best_on_disk is None
    assert [(c.name, c.step, c.value, c.source) for c in r.checkpoints] == [("ckpt.pt", None, None,
                                                                              "its step is not known")]
    r = analyze_checkpoints(_scan(1000), None)
    assert r.findings == () and r.evaluations == 0 and r.top_k_steps == ()


def test_epoch_named_checkpoints_match_per_epoch_evaluations_only():
    scan = CheckpointScan(folder="w", checkpoints=(SavedCheckpoint("epoch_3.pth", "mmengine", epoch=3),
                                                   SavedCheckpoint("epoch_4.pth", "mmengine", epoch=4)))
    per_epoch = Curve.from_arrays([1, 2, 3, 4], [0.3, 0.5, 0.6, 0.55], "coco/bbox_mAP")
    r = analyze_checkpoints(scan, per_epoch, mode="max")
    assert [c.value for c in r.checkpoints] == [0.6, 0.55] and r.best_on_disk
    per_step = Curve.from_arrays([100, 200, 300], [0.3, 0.5, 0.6], "coco/bbox_mAP")
    r = analyze_checkpoints(scan, per_step, mode="max")
    assert [c.value for c in r.checkpoints] == [None, None] and r.best_on_disk is None
    assert r.notes == ("2 checkpoint(s) named by epoch only: not matched to the evaluations, which are logged by step",)


def test_monitored_metric_order():
    curves = {"eval/loss": Curve.from_arrays([1, 2], [0.5, 0.4], "eval/loss"),
              "eval/f1": Curve.from_arrays([1, 2], [0.6, 0.7], "eval/f1")}
    args = CheckpointScan(trainer=TrainerBest("s", metric_for_best_model="f1"))
    assert monitored_metric(curves, args, "eval/loss") == ("eval/f1", "max",
                                                           "metric_for_best_model of the training arguments")
    state = CheckpointScan(trainer=TrainerBest("s", best_step=1, best_metric=0.6))
    assert monitored_metric(curves, state, "eval/loss")[:2] == ("eval/f1", "min")  # 0.6 is eval/f1's lowest
    assert monitored_metric(curves, CheckpointScan(monitor="val_loss"), None)[0] is None
    assert monitored_metric(curves, CheckpointScan(), "eval/loss") == ("eval/loss", "min", "the validation loss")
    assert [mode_from_name(t) for t in ("eval/wer", "val_acc", "coco/bbox_mAP", "perplexity", "other")] == [
        "min", "max", "max", "min", "min"]


@pytest.fixture(scope="module")
def fixture_runs():
    return tanalyze.diagnose(tanalyze.load(FIXTURES))


def test_really_written_hf_run_lost_its_best(fixture_runs):
    r = fixture_runs["hf_best_off"].checkpoints
    assert (r.metric, r.mode, r.metric_source) == ("eval_loss", "min", "the validation loss")
    assert r.evaluations == 12 and r.best_step == 20 and r.best_value == pytest.approx(0.10390798, rel=1e-6)
    assert [(c.name, c.step, c.eval_step) for c in r.checkpoints] == [("checkpoint-110", 110, 110),
                                                                        ("checkpoint-120", 120, 120)]
    assert r.best_kept.name == "checkpoint-120" and r.gap_relative == pytest.approx(0.7072, abs=1e-4)
    assert r.top_k_steps == (20, 40, 50) and r.would_also_keep == (20, 40, 50)
    assert [(f.code, f.severity) for f in r.findings] == [("best_checkpoint_missing", "warning")]
    assert "best_checkpoint_missing" in [f.code for f in fixture_runs["hf_best_off"].findings]


def test_really_written_hf_run_with_load_best_model_at_end(fixture_runs):
    r = fixture_runs["hf_best_on"].checkpoints
    assert (r.metric, r.mode) == ("eval_loss", "min")
    assert r.metric_source == "its value at the trainer state's best step (20) is best_metric"
    assert [c.step for c in r.checkpoints] == [20, 120] and r.best_on_disk
    assert (r.trainer_best_step, r.best_step) == (20, 20)
    assert r.kept_eval_steps == (20, 120) and r.would_also_keep == (40, 50) and r.kept_outside_top_k == (120,)
    assert [(f.code, f.severity) for f in r.findings] == [("best_checkpoint_kept", "info")]


def test_really_written_lightning_top_2(fixture_runs):
    r = fixture_runs["lightning_topk/lightning_logs/version_0"].checkpoints
    assert (r.metric, r.mode) == ("val_loss", "min")
    assert r.metric_source == "the metric in the checkpoint names (ModelCheckpoint monitor)"
    got = [(c.name.rsplit("/", 1)[-1], c.step, c.eval_step) for c in r.checkpoints]
    assert got == [("epoch=14-step=30-val_loss=0.1086.ckpt", 30, 29),
                   ("epoch=29-step=60-val_loss=0.1044.ckpt", 60, 59), ("last.ckpt", 119, 119)]
    # the names' rounded values agree with the logged evaluations they were matched to
    assert [round(c.value, 4) for c in r.checkpoints[:2]] == [0.1086, 0.1044]
    assert (r.best_step, r.best_on_disk) == (59, True)
    assert r.top_k_steps == (59, 29, 19) and r.would_also_keep == (19,) and r.kept_outside_top_k == (119,)


def test_real_trainer_state_names_a_best_checkpoint_not_on_disk():
    folder = real_log("hf_trainer_state/CoralReefFish__whisper-tiny-nbaiLab/trainer_state.json").parent
    d = tanalyze.diagnose(tanalyze.load(folder))
    (r,) = [x.checkpoints for x in d.values()]
    assert (r.metric, r.mode, r.best_step) == ("eval_wer", "min", 98000)
    assert r.best_value == pytest.approx(24.878197320341048, rel=1e-12)
    assert r.checkpoints == () and r.findings == ()
    assert r.notes == ("the trainer state names ./checkpoint-98000 as the best model; that folder is not on disk",)
    assert r.top_k_steps == (98000, 93000, 91000)


def test_newest_evaluation_best_and_no_newer_checkpoint_is_not_judged_yet():
    falling = Curve.from_arrays([100, 200, 300, 400], [1.0, 0.9, 0.8, 0.5], "val_loss")
    r = analyze_checkpoints(_scan(100, 300), falling)
    assert r.best_step == 400 and r.best_on_disk is None and not r.material and r.findings == ()
    assert r.notes == ("the best evaluation is the newest (step 400) and no checkpoint is newer: its checkpoint "
                       "may not have been written yet",)


@pytest.mark.parametrize(("relative", "run", "note"), [
    ("mmengine_logs", "hwh12345678900123__event-yolo/work_dirs/yolov5_s-v61_fast_1xb12-40e_image",
     "last_checkpoint names epoch_40.pth (epoch 40), which is not on disk beside the logs"),
    ("detectron2_metrics", "Kevindic0214__detectron2_training/output",
     "last_checkpoint names model_final.pth, which is not on disk beside the logs"),
])
def test_real_last_checkpoint_pointers_name_checkpoints_not_on_disk(relative, run, note):
    d = tanalyze.diagnose(tanalyze.load(real_log(relative)))
    r = d[run].checkpoints
    assert r.checkpoints == () and r.findings == () and r.notes == (note,)
    assert r.summary == f"0 on disk; {note}"


def test_metric_for_best_model_loss_is_the_evaluation_loss_not_the_training_loss():
    curves = {"loss": Curve.from_arrays([1, 2], [0.9, 0.8], "loss"),
              "eval_loss": Curve.from_arrays([2], [1.0], "eval_loss")}
    scan = CheckpointScan(trainer=TrainerBest("s", metric_for_best_model="loss"))
    assert monitored_metric(curves, scan, None)[:2] == ("eval_loss", "min")
    tb = {"train/loss": curves["loss"], "eval/loss": curves["eval_loss"]}
    assert monitored_metric(tb, scan, None)[:2] == ("eval/loss", "min")


def test_really_written_tensorboard_run_takes_the_metric_from_its_logged_arguments():
    logs = tanalyze.load(FIXTURES / "hf_best_on", join=False)  # the TensorBoard writer's folder on its own
    trainer = logs.runs["runs/tb"].checkpoints.trainer
    assert (trainer.metric_for_best_model, trainer.greater_is_better, trainer.load_best_model_at_end,
            trainer.save_total_limit) == ("eval_loss", False, True, 2)
    r = tanalyze.diagnose(logs)["runs/tb"].checkpoints
    assert (r.metric, r.mode, r.metric_source) == ("eval/loss", "min", "metric_for_best_model of the training arguments")
    assert [c.name for c in r.checkpoints] == ["checkpoint-20", "checkpoint-120"] and r.best_on_disk


def test_a_stepless_best_file_is_no_missing_best():
    scan = CheckpointScan(folder="w", checkpoints=(SavedCheckpoint("weights/best.pt", "best"),
                                                   SavedCheckpoint("weights/last.pt", "last")))
    r = analyze_checkpoints(scan, Curve.from_arrays(STEPS, VALUES, "val_loss"), final_step=10000)
    assert [(c.name, c.step, c.value) for c in r.checkpoints] == [("weights/best.pt", None, None),
                                                                  ("weights/last.pt", 10000, 2.0)]
    assert r.best_on_disk is None and not r.material and r.findings == ()
    assert r.notes == ("weights/best.pt is the trainer's own best and its step is not in its name: the best "
                       "evaluation's weights may be there",)


def test_early_stopping_follows_the_metric_the_trainer_chose(tmp_path):
    """A trainer that kept its best model by WER (the trainer state's best_metric at its best step) while eval_loss
    overfits early: the early-stopping what-if replays patience on WER (lower is better, no stop: the best is two
    evaluations before the end), not on eval_loss (which would name step 1,000's checkpoint)."""
    import json

    losses = [0.32, 0.36, 0.39, 0.41, 0.42]
    wers = [0.95, 0.80, 0.74, 0.75, 0.76]
    history = []
    for i, (loss, wer) in enumerate(zip(losses, wers, strict=True)):
        step = 1000 * (i + 1)
        history += [{"epoch": i + 0.5, "loss": 0.07 / (i + 1), "learning_rate": 1e-5, "step": step},
                    {"epoch": i + 0.5, "eval_loss": loss, "eval_wer": wer, "eval_runtime": 900.0, "step": step}]
    state = {"best_metric": 0.74, "best_model_checkpoint": "out/checkpoint-3000", "epoch": 5.0, "global_step": 5000,
             "max_steps": 5000, "log_history": history, "logging_steps": 1000, "eval_steps": 1000}
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    (d,) = tanalyze.diagnose(tanalyze.load(tmp_path, cache=False)).values()
    assert (d.early_stopping.val_tag, d.early_stopping.mode) == ("eval_wer", "min")
    assert d.early_stopping.rule("hf_patience").stop_step is None and d.early_stopping.global_best_step == 3000
    assert "early_stopping" not in [f.code for f in d.findings]
