import json

import numpy as np
import pytest

from tanalyze import load
from tanalyze.readers.tabular.mmengine import MMEngineReader, parse_text_log
from tests.conftest import real_log
from tests.readers.structured_helpers import check_points, curve, epoch_at, only_run

WORK_DIRS = "mmengine_logs/hwh12345678900123__event-yolo/work_dirs"
IMAGE = f"{WORK_DIRS}/yolov5_s-v61_fast_1xb12-40e_image"


def test_two_launches_of_one_experiment_are_one_run_with_a_restart_at_1325():
    name, info, frame = only_run(load(real_log(IMAGE)))
    assert info.format == "mmengine" and name == "yolov5_s-v61_fast_1xb12-40e_image"
    assert len(info.files) == 7  # two launches (log, scalars.json, its copy) and last_checkpoint
    # 243 train rows + 80 of the resumed launch, of which 1325..1335 re-logged
    loss = curve(frame, "loss")
    check_points(loss, {5: 1.6963752508163452, 665: 0.4721764904516749, 1756: 0.2859286880493164}, 320)
    assert loss[1325] == 0.308033594742883  # the resumed launch's value, not 0.3143218346987851
    assert loss[1335] == 0.3265563814342022 and loss[1545] == 0.3017358314990997
    (restart,) = info.restarts
    assert restart.step == 1325 and restart.file == "20230805_122442/vis_data/scalars.json"
    assert "iterations 1325–1335" in restart.detail and "27 earlier point(s) replaced" in restart.detail
    assert info.hparams["last_checkpoint"].endswith("yolov5_s-v61_fast_1xb12-40e_image/epoch_40.pth")
    # where each point came from
    sources = frame[frame["tag"] == "loss"].set_index("step")["source"]
    assert sources[5] == "20230805_113504/vis_data/scalars.json"
    assert sources[1325] == "20230805_122442/vis_data/scalars.json"
    assert not info.warnings


def test_validation_rows_keyed_by_epoch_move_to_the_iteration_ending_that_epoch():
    name, info, frame = only_run(load(real_log(IMAGE)))
    # 44 iterations per epoch (from the text log's [i/44] counters): epoch 10 ends at iteration 440
    check_points(curve(frame, "coco/bbox_mAP"), {440: 0.181, 880: 0.309, 1320: 0.42, 1760: 0.431}, 4)
    assert curve(frame, "coco/bbox_mAP_50")[1760] == 0.79
    assert epoch_at(frame, "coco/bbox_mAP", 440) == 10.0 and epoch_at(frame, "coco/bbox_mAP", 1760) == 40.0
    # train rows: epoch column = epochs done
    assert epoch_at(frame, "loss", 5) == 5 / 44 and epoch_at(frame, "loss", 1756) == 1756 / 44
    # validation timing keys collide with train keys: renamed
    assert curve(frame, "val/time")[440] == 0.07208208243052165
    assert len(curve(frame, "time")) == 320
    assert any("moved to the iteration ending that epoch (epoch × 44" in n for n in info.notes)
    assert sum("identical copy" in n for n in info.notes) == 2


def test_one_launch_given_directly_is_its_run():
    name, info, frame = only_run(load(real_log(f"{IMAGE}/20230805_122442")))
    assert name == "20230805_122442"
    check_points(curve(frame, "loss"), {1325: 0.308033594742883, 1756: 0.2859286880493164}, 80)
    assert curve(frame, "coco/bbox_mAP").to_dict() == {1760: 0.431}
    assert not info.restarts


def test_test_only_launch_has_no_step():
    name, info, frame = only_run(load(real_log(f"{WORK_DIRS}/yolov5_s-v61_fast_1xb12-40e_cat")))
    assert len(info.files) == 2  # the result json and its text log, read once
    assert curve(frame, "test/coco/bbox_mAP").to_dict() == {0: 0.173}
    assert curve(frame, "test/coco/bbox_mAP_50").to_dict() == {0: 0.432}
    assert len(frame) == 8 and not info.restarts
    assert any("'test/' prefix at step 0" in n for n in info.notes)


def test_text_log_agrees_with_scalars_json_to_printed_precision():
    log = real_log(f"{IMAGE}/20230805_113504/20230805_113504.log")
    scalars = real_log(f"{IMAGE}/20230805_113504/vis_data/scalars.json")
    with open(log, encoding="utf-8") as handle:
        rows, epoch_based = parse_text_log(handle)
    assert epoch_based
    train = {step: values for kind, step, _, values in rows if kind == "train"}
    val = {step: values for kind, step, _, values in rows if kind == "val"}
    truth = [json.loads(line) for line in scalars.read_text().splitlines()]
    truth_train = {r["step"]: r for r in truth if "iter" in r}
    assert sorted(train) == sorted(truth_train) and len(train) == 243
    for step in (5, 665, 1335):
        assert train[step]["loss"] == pytest.approx(truth_train[step]["loss"], abs=5e-5)
        assert train[step]["lr"] == pytest.approx(truth_train[step]["lr"], rel=1e-4)
    assert sorted(val) == [10, 20, 30]
    assert val[10]["coco/bbox_mAP"] == 0.181 and "eta" not in val[10]


def test_launch_without_json_is_read_from_its_text_log(tmp_path):
    launch = tmp_path / "exp" / "20240101_000000"
    launch.mkdir(parents=True)
    (launch / "20240101_000000.log").write_text(
        "2024/01/01 00:00:00 - mmengine - INFO - Epoch(train)  [1][ 5/10]  lr: 1.0000e-02  eta: 0:01:00  "
        "time: 0.5000  loss: 2.0000\n"
        "2024/01/01 00:00:01 - mmengine - INFO - Epoch(train)  [2][ 5/10]  lr: 1.0000e-02  eta: 0:00:30  "
        "time: 0.5000  loss: 1.5000\n"
        "2024/01/01 00:00:02 - mmengine - INFO - Epoch(val) [2][ 2/4]    eta: 0:00:01  time: 0.1000\n"
        "2024/01/01 00:00:03 - mmengine - INFO - Epoch(val) [2][4/4]    accuracy/top1: 55.5000  time: 0.1000\n"
    )
    name, info, frame = only_run(load(tmp_path))
    assert name == "exp"
    assert curve(frame, "loss").to_dict() == {5: 2.0, 15: 1.5}
    assert curve(frame, "accuracy/top1").to_dict() == {20: 55.5}
    assert curve(frame, "val/time").to_dict() == {20: 0.1}
    assert any("read from the text log" in n for n in info.notes)


def test_iterations_per_epoch_derived_from_train_rows_without_a_text_log(tmp_path):
    vis = tmp_path / "exp" / "20240101_000000" / "vis_data"
    vis.mkdir(parents=True)
    rows = [{"lr": 0.1, "loss": 1.0 / s, "epoch": (s - 1) // 20 + 1, "iter": s, "step": s}
            for s in range(10, 61, 10)]
    rows.insert(2, {"accuracy/top1": 50.0, "step": 1})
    rows.append({"accuracy/top1": 60.0, "step": 3})
    (vis / "scalars.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (run,) = MMEngineReader().read(sorted(vis.iterdir()))
    assert curve(run.scalars, "accuracy/top1").to_dict() == {20: 50.0, 60: 60.0}
    assert np.isclose(epoch_at(run.scalars, "loss", 30), 1.5)


def test_damaged_scalars_json_keeps_good_lines(tmp_path):
    vis = tmp_path / "vis_data"
    vis.mkdir()
    path = vis / "scalars.json"
    path.write_bytes(b'{"loss": 1.0, "iter": 1, "step": 1}\n{"loss": \xff}\n{"loss": 0.5, "iter": 2, "step": 2}\n'
                     b'{"loss": 0.4, "it')
    reader = MMEngineReader()
    assert reader.sniff(path, path.read_bytes())
    (run,) = reader.read([path])
    assert curve(run.scalars, "loss").to_dict() == {1: 1.0, 2: 0.5}
    assert "2 line(s) are not valid JSON" in run.warnings[0].message


def test_last_checkpoint_without_launches_is_not_claimed(tmp_path):
    path = tmp_path / "last_checkpoint"
    path.write_text("epoch_1.pth")
    assert not MMEngineReader().sniff(path, path.read_bytes())


def test_scalars_out_of_their_vis_data_folder_are_read_as_scalars(tmp_path):
    """Committed to a repository, ``scalars.json`` often lies flat beside the code: its records say what it is
    (JSON lines with a step), not its folder; before, every point was squashed into one 'test/' point at step 0."""
    import shutil

    launch = real_log(f"{IMAGE}/20230805_113504/vis_data/scalars.json")
    shutil.copy(launch, tmp_path / "scalars.json")
    name, info, frame = only_run(load(tmp_path, cache=False))
    assert info.format == "mmengine"
    check_points(curve(frame, "loss"), {5: 1.6963752508163452, 665: 0.4721764904516749}, 243)
    assert len(curve(frame, "coco/bbox_mAP")) == 3 and not [t for t in frame["tag"].unique() if t.startswith("test/")]
    # a second launch's stamped copy beside it, with other values: both read, in the order of their stamps
    other = real_log(f"{IMAGE}/20230805_122442/vis_data/scalars.json")
    shutil.copy(other, tmp_path / "20230805_122442.json")
    name, info, frame = only_run(load(tmp_path, cache=False))
    assert curve(frame, "loss")[1756] == 0.2859286880493164
    assert any("2 different scalars files out of their vis_data/ folder" in n for n in info.notes)


def test_iteration_based_training_records_without_a_counter_are_training(tmp_path):
    """MMEngine's iteration-based loops (MMSegmentation 1.x) log training records with a step and no 'iter' or
    'epoch': their learning rate and losses make them training records, not validation ones."""
    rows = [{"lr": 1e-4, "data_time": 0.01, "loss": 0.5 - s / 1000, "decode.loss_ce": 0.2, "time": 1.0,
             "memory": 11150, "step": s} for s in range(50, 301, 50)]
    rows.insert(3, {"aAcc": 90.0, "mIoU": 50.0, "data_time": 0.02, "time": 0.5, "step": 150})
    vis = tmp_path / "20230510_145542" / "vis_data"
    vis.mkdir(parents=True)
    (vis / "scalars.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    name, info, frame = only_run(load(tmp_path, cache=False))
    check_points(curve(frame, "loss"), {50: 0.45, 300: 0.2}, 6)
    assert curve(frame, "mIoU").to_dict() == {150: 50.0} and curve(frame, "val/time").to_dict() == {150: 0.5}
    assert "val/loss" not in set(frame["tag"])


def test_renamed_scalars_files_are_known_by_their_records(tmp_path):
    """``scalars_r50.json`` beside ``scalars_aspp.json`` (one per config): MMEngine scalars by their records
    whatever their names, each a run of its own, read exactly as the same bytes named ``scalars.json``; before,
    neither was claimed (no training logs found)."""
    import shutil

    first = real_log(f"{IMAGE}/20230805_113504/vis_data/scalars.json")
    second = real_log(f"{IMAGE}/20230805_122442/vis_data/scalars.json")
    folder = tmp_path / "configs"
    folder.mkdir()
    shutil.copy(first, folder / "scalars_r50.json")
    shutil.copy(second, folder / "scalars_aspp.json")
    reader = MMEngineReader()
    assert all(reader.sniff(p, p.read_bytes()[:4096]) for p in folder.iterdir())
    logs = load(folder, cache=False)
    assert sorted(logs.runs) == ["configs/scalars_aspp.json", "configs/scalars_r50.json"]
    assert {info.format for info in logs.runs.values()} == {"mmengine"}
    frame = logs.scalars
    r50 = frame[frame["run"] == "configs/scalars_r50.json"]
    aspp = frame[frame["run"] == "configs/scalars_aspp.json"]
    check_points(curve(r50, "loss"), {5: 1.6963752508163452, 665: 0.4721764904516749}, 243)
    assert curve(aspp, "loss")[1325] == 0.308033594742883 and curve(aspp, "loss")[1756] == 0.2859286880493164
    assert not any(info.warnings for info in logs.runs.values())
    # the same bytes as scalars.json: the same points
    named = tmp_path / "named"
    named.mkdir()
    shutil.copy(first, named / "scalars.json")
    _, _, same = only_run(load(named, cache=False))
    columns = ["tag", "step", "value", "epoch"]
    assert r50[columns].astype({"tag": str}).reset_index(drop=True).equals(
        same[columns].astype({"tag": str}).reset_index(drop=True))


@pytest.mark.parametrize("record", [
    {"iteration": 19, "total_loss": 1.0, "data_time": 0.1, "time": 0.5, "step": 19},  # detectron2's key
    {"mode": "train", "epoch": 1, "iter": 50, "lr": 0.01, "loss": 1.0, "data_time": 0.1, "time": 0.5, "step": 50},
    {"_step": 3, "step": 3, "loss": 1.0, "data_time": 0.1, "time": 0.5},  # W&B history
    {"current_steps": 10, "total_steps": 100, "loss": 1.0, "step": 10, "data_time": 0.1, "time": 0.5},
    {"step": 10, "loss": 1.0, "lr": 0.01},  # any loop's JSON lines: no MMEngine timer, no 'iter'
    {"step": 1.5, "data_time": 0.1, "time": 0.5},  # not a whole-number step
])
def test_content_sniff_leaves_other_json_lines_alone(tmp_path, record):
    path = tmp_path / "metrics_log.json"
    path.write_text(json.dumps(record) + "\n")
    assert not MMEngineReader().sniff(path, path.read_bytes())


@pytest.mark.parametrize("record", [
    {"lr": 0.002, "data_time": 0.13, "loss": 2.3, "time": 0.61, "epoch": 1, "iter": 50, "memory": 6236, "step": 50},
    {"coco/bbox_mAP": 0.286, "coco/bbox_mAP_l": -1.0, "data_time": 0.24, "time": 0.67, "step": 2},
    {"lr": 1e-4, "loss": 0.5, "iter": 50, "step": 50},  # no timer hook: a train record's iter and lr
])
def test_content_sniff_claims_mmengine_records_under_any_name(tmp_path, record):
    path = tmp_path / "results_swin.json"
    path.write_text(json.dumps(record) + "\n")
    assert MMEngineReader().sniff(path, path.read_bytes())


def test_coco_minus_one_is_a_missing_value_with_a_note(tmp_path):
    """COCO's -1 (no object of that size: pycocotools' 'not computed') is no score of -1: NaN, counted."""
    rows = [{"lr": 0.01, "data_time": 0.1, "loss": 1.0 - e / 10, "time": 0.5, "epoch": e, "iter": 10 * e,
             "memory": 100, "step": 10 * e} for e in (1, 2)]
    rows.insert(1, {"coco/bbox_mAP": 0.286, "coco/bbox_mAP_s": 0.271, "coco/bbox_mAP_l": -1.0,
                    "coco/segm_mAP_l": -1.0, "data_time": 0.2, "time": 0.6, "step": 1})
    rows.append({"coco/bbox_mAP": 0.331, "coco/bbox_mAP_s": 0.319, "coco/bbox_mAP_l": -1.0,
                 "coco/segm_mAP_l": 0.5, "data_time": 0.2, "time": 0.6, "step": 2})
    (tmp_path / "scalars.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    name, info, frame = only_run(load(tmp_path, cache=False))
    assert curve(frame, "coco/bbox_mAP").to_dict() == {10: 0.286, 20: 0.331}
    assert curve(frame, "coco/bbox_mAP_s").to_dict() == {10: 0.271, 20: 0.319}
    mAP_l = curve(frame, "coco/bbox_mAP_l")
    assert list(mAP_l.index) == [10, 20] and mAP_l.isna().all()
    segm_l = curve(frame, "coco/segm_mAP_l")
    assert np.isnan(segm_l[10]) and segm_l[20] == 0.5
    assert curve(frame, "loss").to_dict() == {10: 0.9, 20: 0.8}
    assert ("3 COCO metric value(s) logged as -1 are missing (NaN): pycocotools gives -1 for a stat it did not "
            "compute (no ground-truth objects of that size in the evaluated images), no score; under "
            "coco/bbox_mAP_l (2), coco/segm_mAP_l") in info.notes
