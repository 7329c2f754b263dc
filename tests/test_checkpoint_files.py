"""The checkpoint scanner: names found beside really written runs, odd names, bounds, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tanalyze.checkpoint_files import NO_CHECKPOINTS, parse_name, scan_checkpoints, with_training_args

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"


def test_hf_run_without_best_keeps_the_last_two():
    scan = scan_checkpoints(FIXTURES / "hf_best_off")
    assert [(c.name, c.kind, c.step) for c in scan.checkpoints] == [("checkpoint-110", "hf", 110),
                                                                      ("checkpoint-120", "hf", 120)]
    assert scan.trainer is not None and scan.trainer.source == "trainer_state.json"
    assert (scan.trainer.save_steps, scan.trainer.eval_steps, scan.trainer.global_step) == (10, 10, 120)
    assert scan.trainer.best_model_checkpoint is None and scan.trainer.best_step is None
    assert scan.ignored == () and scan.notes == ()


def test_hf_tensorboard_folder_finds_the_output_folder_and_its_best():
    scan = scan_checkpoints(FIXTURES / "hf_best_on" / "runs" / "tb")  # logs in <output_dir>/runs/<name>
    assert Path(scan.folder) == FIXTURES / "hf_best_on"
    assert [c.step for c in scan.checkpoints] == [20, 120]
    assert scan.trainer.best_model_checkpoint == "hf_best_on/checkpoint-20"
    assert scan.trainer.best_step == 20
    assert scan.trainer.best_metric == pytest.approx(0.1039079874753952, rel=1e-12)


def test_lightning_names_give_step_epoch_and_monitor():
    scan = scan_checkpoints(FIXTURES / "lightning_topk" / "lightning_logs" / "version_0")
    got = [(c.name, c.kind, c.step, c.epoch, c.metric, c.value) for c in scan.checkpoints]
    assert got == [("checkpoints/epoch=14-step=30-val_loss=0.1086.ckpt", "lightning", 30, 14, "val_loss", 0.1086),
                   ("checkpoints/epoch=29-step=60-val_loss=0.1044.ckpt", "lightning", 60, 29, "val_loss", 0.1044),
                   ("checkpoints/last.ckpt", "last", None, None, None, None)]
    assert scan.monitor == "val_loss" and scan.trainer is None


def test_weight_files_are_zero_byte_stand_ins():
    weights = [p for p in FIXTURES.rglob("*") if p.suffix in {".ckpt", ".safetensors", ".pt", ".pth", ".bin"}]
    assert len(weights) == 38 and all(p.stat().st_size == 0 for p in weights)


@pytest.mark.parametrize(("name", "expected"), [
    ("epoch_12.pth", ("mmengine", None, 12, None)),
    ("iter_5000.pth", ("mmengine", 5000, None, None)),
    ("best_coco_bbox_mAP_epoch_12.pth", ("best", None, 12, "coco_bbox_mAP")),
    ("model_0004999.pth", ("named", 4999, None, None)),
    ("step_800.safetensors", ("named", 800, None, None)),
    ("ckpt.pt", ("nanogpt", None, None, None)),
    ("best.pt", ("best", None, None, None)),
    ("model_best.pth", ("best", None, None, None)),
    ("last-v1.ckpt", ("last", None, None, None)),
    ("epoch=2-val_acc=0.91.ckpt", ("lightning", None, 2, "val_acc")),
    ("epoch=0-step=4-v1.ckpt", ("lightning", 4, 0, None)),
])
def test_names(name, expected):
    c = parse_name(name)
    assert (c.kind, c.step, c.epoch, c.metric) == expected


@pytest.mark.parametrize("name", ["notes.pt", "model.safetensors", "events.out.tfevents.1.vm", "config.json",
                                  "epoch=abc.ckpt", "step_.pt"])
def test_names_that_are_no_checkpoint(name):
    assert parse_name(name) is None


def test_odd_names_are_ignored_with_a_note(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    for name in ("step_100.pt", "weird.pt", "backup (copy).pth", "model.safetensors", "checkpoints/epoch_3.pth"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "step_999.pt").write_bytes(b"")  # hidden folders are never entered
    scan = scan_checkpoints(tmp_path)
    assert [(c.name, c.step, c.epoch) for c in scan.checkpoints] == [("step_100.pt", 100, None),
                                                                       ("checkpoints/epoch_3.pth", None, 3)]
    assert scan.ignored == ("backup (copy).pth", "weird.pt")
    assert scan.notes == ("2 weight file(s) with no step or epoch in their names not matched to the curve: "
                          "backup (copy).pth, weird.pt",)


def test_nanogpt_checkpoint_says_it_has_no_step(tmp_path):
    (tmp_path / "ckpt.pt").write_bytes(b"")
    scan = scan_checkpoints(tmp_path)
    assert [(c.kind, c.step) for c in scan.checkpoints] == [("nanogpt", None)]
    assert scan.notes[0].startswith("ckpt.pt carries no step: nanoGPT overwrites one checkpoint")


def test_no_checkpoints_and_missing_folder(tmp_path):
    (tmp_path / "events.out.tfevents.1.vm").write_bytes(b"x")
    assert scan_checkpoints(tmp_path) is NO_CHECKPOINTS
    assert scan_checkpoints(tmp_path / "gone") is NO_CHECKPOINTS


def test_the_scan_is_bounded(tmp_path):
    for n in range(30):
        (tmp_path / f"step_{n}.pt").write_bytes(b"")
    scan = scan_checkpoints(tmp_path, max_entries=10)
    assert scan.truncated and len(scan.checkpoints) == 10
    assert scan.notes[-1] == "more than 10 entries in the run's folders: the checkpoint scan stopped there"


def test_bad_trainer_state_is_skipped_for_an_older_good_one(tmp_path):
    for step, text in ((10, json.dumps({"global_step": 10, "best_model_checkpoint": "out/checkpoint-10",
                                        "best_metric": 0.5, "log_history": []})), (20, "{not json")):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(text)
    scan = scan_checkpoints(tmp_path)
    assert [c.step for c in scan.checkpoints] == [10, 20]
    assert (scan.trainer.source, scan.trainer.best_step, scan.trainer.best_metric) == (
        "checkpoint-10/trainer_state.json", 10, 0.5)


def test_training_args_from_the_logged_text():
    scan = scan_checkpoints(FIXTURES / "hf_best_on")
    args = json.dumps({"metric_for_best_model": "eval_loss", "greater_is_better": False,
                       "load_best_model_at_end": True, "save_total_limit": 2})
    got = with_training_args(scan, {"args/text_summary": args}, {}).trainer
    assert (got.metric_for_best_model, got.greater_is_better, got.load_best_model_at_end, got.save_total_limit) == (
        "eval_loss", False, True, 2)
    assert got.best_step == 20  # the state's fields are kept
    assert with_training_args(scan, {"args/text_summary": "{broken"}, {}) == scan
    assert with_training_args(NO_CHECKPOINTS, {"args/text_summary": args}, {}) is NO_CHECKPOINTS


def test_last_checkpoint_pointer_is_noted_only_when_not_on_disk(tmp_path):
    (tmp_path / "iter_400.pth").write_bytes(b"")
    scan = scan_checkpoints(tmp_path)
    assert with_training_args(scan, {}, {"last_checkpoint": "/somewhere/else/iter_400.pth"}) == scan
    noted = with_training_args(scan, {}, {"last_checkpoint": "C:\\work\\iter_800.pth"})
    assert noted.notes == ("last_checkpoint names iter_800.pth (step 800), which is not on disk beside the logs",)
    assert not with_training_args(NO_CHECKPOINTS, {}, {"last_checkpoint": "model_final.pth"}).empty
    assert with_training_args(NO_CHECKPOINTS, {}, {"last_checkpoint": ""}) is NO_CHECKPOINTS


def test_names_that_are_not_utf8_are_shown_with_a_replacement_character(tmp_path):
    import os

    open(os.fsencode(tmp_path) + b"/step_7-\xff.pt", "wb").close()
    open(os.fsencode(tmp_path) + b"/odd\xfe.pt", "wb").close()
    scan = scan_checkpoints(tmp_path)
    assert [(c.name, c.step) for c in scan.checkpoints] == [("step_7-\ufffd.pt", 7)]
    assert scan.ignored == ("odd\ufffd.pt",)
    json.dumps(scan.to_dict(), ensure_ascii=False).encode("utf-8")  # writable as UTF-8


def test_a_folder_named_runs_is_not_taken_for_an_hf_output_folder(tmp_path):
    (tmp_path / "runs" / "exp1").mkdir(parents=True)
    (tmp_path / "model_final.pth").write_bytes(b"")  # beside the runs, not a run's checkpoint
    (tmp_path / "step_5.pt").write_bytes(b"")
    assert scan_checkpoints(tmp_path / "runs" / "exp1") is NO_CHECKPOINTS
    (tmp_path / "checkpoint-10").mkdir()  # now it is an HF output folder
    assert [c.name for c in scan_checkpoints(tmp_path / "runs" / "exp1").checkpoints] == ["step_5.pt",
                                                                                          "checkpoint-10"]
