"""MMDetection 2.x / mmcv 1.x work dirs: the real work dirs of masati91/ELTD, winycg/detection and JJho1314/my_mmdet.

Besides the real files, copies of them are read alone (JSON without its text twin, text without its JSON)
and damaged (junk, cut last line, empty), to check each path gives the same axis.
"""

import calendar
import json
import math
import shutil

import pytest

from tanalyze import load
from tanalyze.readers.tabular.mmdet2 import MMDet2Reader, config_hparams
from tests.conftest import real_log
from tests.readers.text_helpers import check, curve, notes_text, write

ELTD = "mmdet2_json/masati91__ELTD/work_dirs"
ELTD_RUN = f"{ELTD}/eltd_r50_fpn_1x_coco"
YOLO = f"{ELTD}/yolov3_d53_320_273e_coco"
WINYCG = "mmdet2_json/winycg__detection/work_dirs/faster_rcnn_r50_fpn_1x_coco"
JJHO = "mmdet2_json/JJho1314__my_mmdet/work_dirs/mask_rcnn_r50_fpn_1x_coco"


def _files(folder):
    reader = MMDet2Reader()
    files = sorted(p for p in folder.iterdir() if reader.sniff(p, p.read_bytes()[:4096]))
    return reader, files


def _read(folder):
    reader, files = _files(folder)
    (run,) = reader.read(files)
    return run


def test_json_with_text_twin_on_one_iteration_axis():
    run = _read(real_log(ELTD_RUN))
    frame = run.scalars
    # epoch 1 iter 50 is step 50 (never one epoch higher); the text says 1581 iterations per epoch
    check(frame, "loss", {50: 1.51178, 1581 + 50: 0.57145, 11 * 1581 + 1550: 0.19926}, count=372)
    check(frame, "loss_cls", {50: 1.09819})
    check(frame, "grad_norm", {50: 4.48481})
    check(frame, "lr", {50: 0.00099, 1631: 0.01})
    # validation at the end of its epoch, on the same axis
    check(frame, "bbox_mAP", {1581: 0.237, 2 * 1581: 0.404, 12 * 1581: 0.518}, count=12)
    check(frame, "bbox_mAP_50", {1581: 0.416})
    check(frame, "val/lr", {1581: 0.01, 12 * 1581: 0.0001}, count=12)
    # exact JSON values, wall times from the twin's '2021-04-23 01:30:49,930 - mmdet - INFO - Epoch [1][50/1581]'
    row = frame[(frame["tag"] == "loss") & (frame["step"] == 50)].iloc[0]
    assert row["wall_time"] == pytest.approx(calendar.timegm((2021, 4, 23, 1, 30, 49)) + 0.930)
    assert row["epoch"] == pytest.approx(50 / 1581)
    assert frame.loc[frame["tag"] == "bbox_mAP", "epoch"].tolist()[:2] == [1.0, 2.0]
    notes = notes_text(run)
    assert "20210423_013002.log: twin of 20210423_013002.log.json" in notes
    assert "from the text log's 'Epoch [e][i/N]'" in notes
    assert "non-numeric values skipped under: bbox_mAP_copypaste" in notes
    assert run.hparams["optimizer.lr"] == 0.01 and run.hparams["model.type"] == "FSAF"
    assert run.warnings == [] and run.restarts == []


def test_273_epochs():
    frame = _read(real_log(YOLO)).scalars
    check(frame, "loss", {50: 15066.59461, 791 + 50: 551.79414, 272 * 791 + 750: 176.282}, count=4095)
    check(frame, "bbox_mAP", {791: 0.026, 273 * 791: 0.235}, count=273)


def test_json_alone_and_text_alone_give_the_same_axis(tmp_path):
    source = real_log(ELTD_RUN)
    json_only = tmp_path / "json" / "eltd"
    text_only = tmp_path / "text" / "eltd"
    json_only.mkdir(parents=True)
    text_only.mkdir(parents=True)
    shutil.copy(source / "20210423_013002.log.json", json_only)
    shutil.copy(source / "20210423_013002.log", text_only)
    from_json = _read(json_only)
    # mmcv 1.2 writes the train iterations per epoch as the validation records' 'iter' (1581 >= 1550 logged)
    check(from_json.scalars, "loss", {50: 1.51178, 1631: 0.57145}, count=372)
    check(from_json.scalars, "bbox_mAP", {1581: 0.237, 18972: 0.518}, count=12)
    assert "from the 'iter' of the validation records" in notes_text(from_json)
    assert from_json.scalars["wall_time"].isna().all()
    from_text = _read(text_only)  # '... Epoch [2][50/1581]\tlr: 1.000e-02, eta: 4:00:48, time: 0.889, ...'
    check(from_text.scalars, "loss", {50: 1.5118, 1631: 0.5714}, count=372)
    check(from_text.scalars, "bbox_mAP", {1581: 0.237, 18972: 0.518}, count=12)
    check(from_text.scalars, "lr", {50: 9.890e-04, 1631: 1.0e-02})
    assert "eta" not in set(from_text.scalars["tag"])
    assert "read from the text (values rounded" in notes_text(from_text)
    assert from_text.warnings == []


def test_val_iter_that_cannot_be_the_epoch_length_falls_back_to_the_largest_train_iter(tmp_path):
    rows = [{"mode": "train", "epoch": e, "iter": i, "loss": 1.0 / (e * i)} for e in (1, 2) for i in (50, 100)]
    rows.insert(2, {"mode": "val", "epoch": 1, "iter": 20, "bbox_mAP": 0.1})  # mmcv >= 1.3: validation batches
    path = write(tmp_path / "w" / "20220101_000000.log.json", "\n".join(json.dumps(r) for r in rows) + "\n")
    run = _read(path.parent)
    check(run.scalars, "loss", {50: 1 / 50, 100: 1 / 100, 150: 1 / 100, 200: 1 / 200}, count=4)
    check(run.scalars, "bbox_mAP", {100: 0.1})
    assert "the largest train 'iter' logged is used" in notes_text(run)


def test_a_log_whose_runner_meta_is_not_the_usual_header_is_read(tmp_path):
    # MMAction2's tutorial: mmcv dumps the runner's meta, {"hook_msgs": {}}, then only validation records
    rows = [{"hook_msgs": {}}] + [{"mode": "val", "epoch": e, "iter": 5, "lr": 8e-05, "top1_acc": acc, "top5_acc": 1.0}
                                  for e, acc in ((5, 0.7), (10, 0.8))]
    path = write(tmp_path / "tutorial_exps" / "None.log.json", "\n".join(json.dumps(r) for r in rows) + "\n")
    assert MMDet2Reader().sniff(path, path.read_bytes()[:4096])
    run = _read(path.parent)
    check(run.scalars, "top1_acc", {25: 0.7, 50: 0.8}, count=2)
    assert not run.warnings and "skipped" not in notes_text(run)


def test_iteration_based_json(tmp_path):
    rows = [{"mode": "train", "epoch": 1, "iter": 50, "loss": 2.0}, {"mode": "train", "epoch": 2, "iter": 100, "loss": 1.5},
            {"mode": "val", "epoch": 2, "iter": 500, "mIoU": 0.4}]
    path = write(tmp_path / "w" / "20220101_000000.log.json", "\n".join(json.dumps(r) for r in rows) + "\n")
    run = _read(path.parent)
    check(run.scalars, "loss", {50: 2.0, 100: 1.5}, count=2)
    check(run.scalars, "mIoU", {100: 0.4})
    assert "iteration-based loop" in notes_text(run)


def test_launches_that_died_before_iteration_one_and_a_single_train_row():
    run = _read(real_log(WINYCG))
    check(run.scalars, "loss", {50: 1.52762}, count=1)
    check(run.scalars, "acc", {50: 89.66406})
    notes = notes_text(run)
    assert "launch 20210812_172835 logged no iteration" in notes
    assert "launch 20210812_190306 logged no iteration" in notes
    assert run.warnings == []
    header_only = _read(real_log(JJHO))
    assert header_only.scalars.empty
    (warning,) = header_only.warnings
    assert "no iteration was logged" in warning.message
    assert header_only.hparams["optimizer.lr"] == 0.02 and header_only.hparams["exp_name"] == "mask_rcnn_r50_fpn_1x_coco.py"


def test_junk_cut_last_line_and_empty_file(tmp_path):
    source = real_log(ELTD_RUN) / "20210423_013002.log.json"
    lines = source.read_text().splitlines(keepends=True)
    damaged = "".join(lines[:4]) + "not json\n" + '{"mode": "train", "epoch": 1}\n' + lines[4][:40]
    run = _read(write(tmp_path / "w" / "20210423_013002.log.json", damaged).parent)
    check(run.scalars, "loss", {50: 1.51178}, count=3)
    messages = [w.message for w in run.warnings]
    assert "2 line(s) are not valid JSON and were skipped (the last line is cut off: file truncated?)" in messages
    assert "1 record(s) without a 'mode' and a whole-number 'iter'; skipped" in messages
    (empty,) = MMDet2Reader().read([write(tmp_path / "e" / "20210423_013002.log.json", b"")])
    assert empty.scalars.empty and empty.warnings


def test_config_is_parsed_not_executed():
    settings, problem = config_hparams("import os\nos.system('echo hi')\nlr = 0.1\noptimizer = dict(type='SGD', "
                                       "lr=0.02, params=make())\nrunner = dict(max_epochs=12)\nx = [1, 2]\n")
    assert problem is None
    assert settings == {"lr": 0.1, "optimizer.type": "SGD", "optimizer.lr": 0.02, "runner.max_epochs": 12}
    assert config_hparams("def (")[1] == "SyntaxError"


def test_discovery_one_run_per_work_dir_and_the_text_reader_no_longer_takes_the_logs(real_logs):
    logs = load(real_logs / "mmdet2_json")
    assert {name: info.format for name, info in logs.runs.items()} == {
        "JJho1314__my_mmdet/work_dirs/mask_rcnn_r50_fpn_1x_coco": "mmdet2",
        "masati91__ELTD/work_dirs/cornernet_hourglass104_mstest_10x5_210e_coco": "mmdet2",
        "masati91__ELTD/work_dirs/eltd_r50_fpn_1x_coco": "mmdet2",
        "masati91__ELTD/work_dirs/retinanet_r50_fpn_1x_coco": "mmdet2",
        "masati91__ELTD/work_dirs/yolov3_d53_320_273e_coco": "mmdet2",
        "winycg__detection/work_dirs/faster_rcnn_r50_fpn_1x_coco": "mmdet2",
    }
    assert logs.unrecognized == ()  # the twins and the dumped configs belong to their run
    assert len(logs.runs["winycg__detection/work_dirs/faster_rcnn_r50_fpn_1x_coco"].files) == 5


def test_coco_minus_one_is_a_missing_value_with_a_note(tmp_path):
    """bbox_mAP_l of -1 (no large object evaluated: pycocotools' 'not computed') is no score: NaN, counted."""
    rows = [{"env_info": "x", "config": "", "seed": 1}]
    for epoch in (1, 2):
        rows.append({"mode": "train", "epoch": epoch, "iter": 50, "lr": 0.02, "loss": 1.0 / epoch, "time": 0.5})
        rows.append({"mode": "val", "epoch": epoch, "iter": 100, "lr": 0.02, "bbox_mAP": 0.2 * epoch,
                     "bbox_mAP_m": 0.1 * epoch, "bbox_mAP_l": -1.0 if epoch == 1 else 0.3, "segm_mAP_l": -1.0,
                     "bbox_mAP_copypaste": "0.200 -1.000"})
    path = write(tmp_path / "w" / "20220101_000000.log.json", "\n".join(json.dumps(r) for r in rows) + "\n")
    run = _read(path.parent)
    check(run.scalars, "bbox_mAP", {100: 0.2, 200: 0.4}, count=2)
    check(run.scalars, "bbox_mAP_m", {100: 0.1, 200: 0.2}, count=2)
    mAP_l = curve(run.scalars, "bbox_mAP_l")
    assert sorted(mAP_l) == [100, 200] and math.isnan(mAP_l[100]) and mAP_l[200] == 0.3
    segm_l = curve(run.scalars, "segm_mAP_l")
    assert sorted(segm_l) == [100, 200] and all(math.isnan(v) for v in segm_l.values())
    check(run.scalars, "loss", {50: 1.0, 150: 0.5}, count=2)
    assert ("3 COCO metric value(s) logged as -1 are missing (NaN): pycocotools gives -1 for a stat it did not "
            "compute (no ground-truth objects of that size in the evaluated images), no score; under "
            "bbox_mAP_l, segm_mAP_l (2)") in run.notes
