"""Run identity: which files are one run, layout by layout, on real logs (the rules: tanalyze/identity.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import tanalyze
from tanalyze.discover import discover
from tests.conftest import real_log

pytestmark = pytest.mark.real_logs


def _copy(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        if item.is_file():
            shutil.copy2(item, dst / item.name)


def test_keras_train_and_validation_folders_are_one_run_with_split_tags():
    root = real_log("tfevents_keras_split/SamuelkohP04__Deep-Learning-Sentimental-Analysis-for-Google-Play-Reviews")
    logs = tanalyze.load(root, cache=False)
    assert list(logs.runs) == ["logs/fit/20240213-132033"]
    info = logs.runs["logs/fit/20240213-132033"]
    assert {p.kind for p in info.sources} == {"split"}
    assert sorted(Path(p.directory).name for p in info.sources) == ["train", "validation"]
    tags = set(logs.scalars["tag"].astype(str))
    assert {"train/epoch_loss", "validation/epoch_loss"} <= tags
    assert len(logs.scalars) == 30  # 10 train + 20 validation points, as read from each folder alone
    val = logs.series("logs/fit/20240213-132033", "validation/epoch_loss")
    assert list(val.index) == [0, 1, 2, 3, 4]
    assert val.iloc[0] == pytest.approx(0.113328, abs=1e-6) and val.iloc[-1] == pytest.approx(0.062697, abs=1e-6)


def test_keras_split_roles_resolve_to_train_and_validation():
    root = real_log("tfevents_keras_split/Nivesara__project_fashion_mnist")
    diagnoses = tanalyze.diagnose(tanalyze.load(root, cache=False))
    d = diagnoses["logs/cnn_1layer"]
    assert d.roles["train_loss"] == "train/epoch_loss"
    assert d.roles["val_loss"] == "validation/epoch_loss"


def test_add_scalars_sub_folders_join_their_parent_run_as_main_tag_slash_key():
    root = real_log("tfevents_add_scalars/ma-nual__pytorch-deeplearning")
    alone = tanalyze.load(root, cache=False, join=False)
    logs = tanalyze.load(root, cache=False)
    assert list(logs.runs) == ["logs"]
    assert len(alone.runs) == 3
    tags = set(logs.scalars["tag"].astype(str))
    # add_scalars('data/data_group', {'x': …, 'y': …}) wrote data_data_group_x/ and data_data_group_y/
    assert {"data/data_group/x", "data/data_group/y"} <= tags
    assert len(logs.scalars) == len(alone.scalars)  # every point kept, none twice
    # its writer reopened many times a second (….6920.6 … ….6920.96): each of the 5 tags at steps 0-29, all 30
    steps = logs.scalars.groupby("tag", observed=True)["step"].apply(sorted)
    assert len(steps) == 5 and all(got == list(range(30)) for got in steps)
    assert len(logs.scalars) == 150
    kinds = sorted(p.label for p in logs.runs["logs"].sources if p.kind == "add_scalars")
    assert kinds == ["add_scalars 'data/data_group' key 'x'", "add_scalars 'data/data_group' key 'y'"]


def test_hparams_sub_run_joins_its_parent():
    root = real_log("tfevents/ZeroToMax-ZYZ__study_tensorboard/runs")
    names = [r.name for r in discover(root).runs]
    assert "hparams_search_exp_1" in names
    assert not any(n.startswith("hparams_search_exp_1/") for n in names)
    logs = tanalyze.load(root / "hparams_search_exp_1", cache=False)
    info = logs.runs["hparams_search_exp_1"]
    assert [p.kind for p in info.sources] == ["main", "hparams"]
    assert len(logs.scalars) == 2


def test_ultralytics_results_csv_and_event_file_are_twins(tmp_path):
    run = tmp_path / "runs" / "detect" / "train"
    _copy(real_log("yolo_results_csv/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train"), run)
    _copy(real_log("tfevents/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train"), run)
    logs = tanalyze.load(tmp_path, cache=False)
    assert list(logs.runs) == ["runs/detect/train"]
    info = logs.runs["runs/detect/train"]
    assert info.format == "yolo_csv"
    assert [p.kind for p in info.sources] == ["main", "twin"]
    assert len(logs.scalars) == 325  # results.csv: 25 epochs x 13 columns; the events are not added again
    note = next(n for n in info.notes if "same run, written by another sink" in n)
    # the event file counts epochs from 1, results.csv from 0: found and said; the last epoch's mAP in the
    # events is the final evaluation of best.pt, which differs from the last row of results.csv
    assert "differs at 2 of 250 common points once its steps are shifted by -1" in note


def test_detectron2_metrics_json_and_event_file_are_twins(tmp_path):
    out = tmp_path / "output"
    _copy(real_log("detectron2_metrics/Kevindic0214__detectron2_training/output"), out)
    _copy(real_log("tfevents/Kevindic0214__detectron2_training/output"), out)
    logs = tanalyze.load(tmp_path, cache=False)
    assert list(logs.runs) == ["output"]
    assert logs.runs["output"].format == "detectron2"
    assert [p.format for p in logs.runs["output"].sources] == ["detectron2", "tensorboard"]


def test_hf_output_folder_with_trainer_state_and_runs_events_is_one_run_named_by_the_folder(tmp_path):
    out = tmp_path / "t5-summarization"
    _copy(real_log("hf_trainer_state/10844110__t5-summarization-demo"), out)
    events = "runs/Mar24_22-23-40_DESKTOP-41L2EO3"
    _copy(real_log(f"tfevents/10844110__t5-summarization-demo/{events}"), out / events)
    logs = tanalyze.load(tmp_path, cache=False)
    assert list(logs.runs) == ["t5-summarization"]
    info = logs.runs["t5-summarization"]
    assert info.format == "hf_trainer_state"
    assert [p.kind for p in info.sources] == ["main", "twin"]
    assert any("twin" in n and "agrees" in n for n in info.notes), info.notes


def test_a_twin_that_goes_further_is_read_as_the_run(tmp_path):
    """trainer_state.json saved early (a checkpoint) while the events went on: the events are the run."""
    import json

    out = tmp_path / "out"
    _copy(real_log("hf_trainer_state/10844110__t5-summarization-demo"), out)
    state = json.loads((out / "trainer_state.json").read_text())
    state["log_history"] = state["log_history"][:50]
    (out / "trainer_state.json").write_text(json.dumps(state))
    events = "runs/Mar24_22-23-40_DESKTOP-41L2EO3"
    _copy(real_log(f"tfevents/10844110__t5-summarization-demo/{events}"), out / events)
    logs = tanalyze.load(tmp_path, cache=False)
    info = logs.runs["out"]
    assert info.format == "tensorboard"
    assert any(n.startswith("read from tensorboard rather than hf_trainer_state") for n in info.notes)


def test_no_join_keeps_one_run_per_folder_and_format(tmp_path):
    root = real_log("tfevents_keras_split/Nivesara__project_fashion_mnist")
    names = sorted(r.name for r in discover(root, join=False).runs)
    assert names == ["logs/cnn_1layer/train", "logs/cnn_1layer/validation"]


def test_config_can_turn_joining_off(tmp_path):
    root = tmp_path / "logs"
    _copy(real_log("tfevents_keras_split/Nivesara__project_fashion_mnist/logs/cnn_1layer/train"), root / "train")
    _copy(real_log("tfevents_keras_split/Nivesara__project_fashion_mnist/logs/cnn_1layer/validation"),
          root / "validation")
    assert [r.name for r in discover(root).runs] == ["logs"]
    (tmp_path / "tanalyze.toml").write_text("[runs]\njoin = false\n")
    assert sorted(r.name for r in discover(root).runs) == ["train", "validation"]


def test_ultralytics_style_train_folders_are_runs_not_splits(tmp_path):
    """runs/detect/train, train2 … are separate runs, each with its own results.csv (not a Keras split)."""
    src = real_log("yolo_results_csv/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train")
    _copy(src, tmp_path / "detect" / "train")
    _copy(src, tmp_path / "detect" / "train2")
    assert sorted(r.name for r in discover(tmp_path).runs) == ["detect/train", "detect/train2"]


def test_joined_points_equal_the_points_of_each_folder_read_alone():
    root = real_log("tfevents_keras_split/Maya9awadh__Makeen-Deep-Learning")
    joined = tanalyze.load(root, cache=False)
    alone = tanalyze.load(root, cache=False, join=False)
    for split in ("train", "validation"):
        part = alone.scalars[alone.scalars["run"] == f"logs/{split}"]
        mine = joined.scalars[joined.scalars["tag"].astype(str).str.startswith(f"{split}/")]
        assert sorted(f"{split}/{t}" for t in part["tag"].astype(str)) == sorted(mine["tag"].astype(str))
        np.testing.assert_array_equal(np.sort(part["value"].to_numpy()), np.sort(mine["value"].to_numpy()))


def test_every_file_not_in_a_run_is_listed_with_its_reason(tmp_path):
    run = tmp_path / "train"
    _copy(real_log("yolo_results_csv/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train"), run)
    (run / "weights.pt").write_bytes(b"\x80\x04not a log")
    (run / "notes.txt").write_text("just some words\nnothing numeric here\n")
    (tmp_path / ".hidden").mkdir()
    logs = tanalyze.load(tmp_path, cache=False)
    reasons = {Path(n.path).name: n.reason for n in logs.not_read}
    assert reasons["weights.pt"] == "model weights or arrays, not a log"
    assert "--pattern" in reasons["notes.txt"]
    assert "not entered" in reasons[".hidden"]
    assert "args.yaml" not in reasons  # read by the run as its config


def test_runs_verbose_and_report_json_list_what_was_not_read(tmp_path, capsys):
    import json

    from tanalyze.cli import main

    run = tmp_path / "train"
    _copy(real_log("yolo_results_csv/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train"), run)
    (run / "best.pt").write_bytes(b"\x80\x04")
    assert main(["runs", str(tmp_path), "-v", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"not read: {run / 'best.pt'}: model weights or arrays, not a log" in out
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"),
                 "-q", "--no-cache"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["not_read"] == [{"path": str(run / "best.pt"), "reason": "model weights or arrays, not a log"}]
    assert "best.pt" in (tmp_path / "r.html").read_text()


def test_a_folder_without_logs_names_its_files_and_suggests_pattern_and_format(tmp_path, capsys):
    from tanalyze.cli import main

    (tmp_path / "train_output.txt").write_text("epoch one went fine\n")
    assert main(["runs", str(tmp_path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "train_output.txt" in err and "--pattern" in err and "--format" in err


def test_wandb_runs_are_named_by_their_display_name_and_id():
    logs = tanalyze.load(real_log("wandb_local/jackokeefe11__nanoGPT"), cache=False)
    assert "wandb/mini-gpt (kt2awly2)" in logs.runs
    # a run that died before its run record was written keeps its folder's name
    assert "wandb/run-20240216_065242-ibal0bht" in logs.runs


CRASHES = Path(__file__).parent / "fixtures" / "crashes"


def test_the_console_beside_its_wandb_folder_is_the_one_wandb_run_written_twice(tmp_path):
    # a job run as `python job.py | tee train.log` with wandb: train.log and wandb/offline-run-*/ hold one run
    shutil.copytree(CRASHES / "wandb_crashed", tmp_path / "job")
    logs = tanalyze.load(tmp_path / "job", cache=False)
    [(name, info)] = logs.runs.items()
    assert name == "wandb/wandb-crashed (27ga96a6)" and info.format == "wandb-local"
    assert any("twin: train.log (text)" in note and "agrees on all 31 common points" in note for note in info.notes)
    assert len(logs.scalars) == 31


def test_a_console_beside_several_wandb_runs_stays_its_own_run(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(CRASHES / "wandb_crashed", job)
    shutil.copytree(CRASHES / "wandb_killed" / "wandb" / "offline-run-20261203_115650-rn5rxoev",
                    job / "wandb" / "offline-run-20261203_115650-rn5rxoev")
    formats = sorted(run.format for run in discover(job).runs)
    assert formats == ["text", "wandb-local", "wandb-local"]  # which W&B run it belongs to cannot be told
