import math
from pathlib import Path

import pytest

from tanalyze import load
from tanalyze.errors import FormatError
from tanalyze.readers.tabular.csv_loggers import (
    GenericCSVReader,
    KerasCSVReader,
    LightningCSVReader,
    YoloResultsReader,
    choose_step_column,
)
from tests.conftest import real_log
from tests.readers.structured_helpers import check_points, curve, epoch_at, only_run

LIGHTNING = "lightning_metrics_csv"


def _load(relative: str):
    return only_run(load(real_log(relative)))


# --- Lightning -------------------------------------------------------------------------------------


def test_lightning_sparse_rows_share_steps():
    name, info, frame = _load(f"{LIGHTNING}/0Xero7__slm_training/lightning_logs/version_0")
    assert info.format == "lightning_csv" and name == "version_0"
    check_points(curve(frame, "train_loss_step"),
                 {49: 7.628580570220947, 70399: 3.970869302749634, 140699: 3.565943479537964}, 2814)
    check_points(curve(frame, "val_loss"),
                 {14073: 4.132571697235107, 84443: 3.7182743549346924, 140739: 3.570486068725586}, 10)
    # the validation row and the epoch-end row of the last epoch share step 140739
    assert curve(frame, "epoch_time")[140739] == 2419.625244140625
    assert curve(frame, "train_loss_epoch")[140739] == 3.687237024307251
    assert epoch_at(frame, "train_loss_step", 49) == 0.0 and epoch_at(frame, "val_loss", 140739) == 9.0
    assert "epoch" not in set(frame["tag"]) and "step" not in set(frame["tag"])
    assert info.hparams["num_epochs"] == 10 and info.hparams["d_model"] == 768
    assert not info.warnings and not info.restarts


def test_lightning_resumed_version_folder_is_its_own_run():
    logs = load(real_log(f"{LIGHTNING}/0Xero7__slm_training/lightning_logs"))
    assert sorted(logs.runs) == ["version_0", "version_12", "version_3", "version_5"]
    v5 = logs.scalars_of("version_5")
    check_points(curve(v5, "train_loss_step"),
                 {140749: 3.708270311355591, 168899: 3.7356536388397217, 196999: 3.913863182067871}, 1126)
    check_points(curve(v5, "val_loss"), {154813: 3.5629003047943115, 197035: 3.604208469390869}, 4)
    assert epoch_at(v5, "train_loss_step", 140749) == 10.0
    assert logs.runs["version_5"].hparams["num_epochs"] == 20
    assert logs.runs["version_5"].restarts == ()
    assert "starts at step 140749 (epoch 10): a job resumed from a checkpoint" in logs.runs["version_5"].notes[0]
    assert not any("starts at step" in n for n in logs.runs["version_0"].notes)
    v12 = logs.scalars_of("version_12")
    check_points(curve(v12, "train_loss_step"),
                 {49: 9.796794891357422, 16049: 5.73740816116333, 32049: 5.512516975402832}, 641)
    assert logs.runs["version_12"].hparams["lr"] == 5.0e-06
    # the stale .ipynb_checkpoints copy is not read
    assert all(".ipynb_checkpoints" not in f for f in logs.runs["version_12"].files)
    # a version folder with only hparams.yaml ({}): a run without points, saying why
    v3 = logs.runs["version_3"]
    assert logs.scalars_of("version_3").empty and v3.hparams == {}
    (warning,) = v3.warnings
    assert warning.file.endswith("version_3/hparams.yaml") and "no metrics.csv" in warning.message


@pytest.mark.parametrize(
    ("version", "lr", "n_lr", "val", "n_val"),
    [
        ("version_0", {49: 0.00328141592920354, 2749: 0.000892355450027609, 5399: 0.0003071019988956377}, 108,
         {678: 0.019856970821374123, 3394: 0.018149170219221016, 5431: 0.01806013539950508}, 8),
        ("version_1", {49: 0.004837113402061856, 3849: 1.5537667844522885e-05}, 77,
         {388: 0.020177614757533265, 2333: 0.01761433318892611, 3889: 0.01753209561807983}, 10),
    ],
)
def test_lightning_learning_rate_monitor_rows_have_empty_epoch(version, lr, n_lr, val, n_val):
    name, info, frame = _load(f"{LIGHTNING}/Eve-ning__opal-v2/lightning_logs/{version}")
    check_points(curve(frame, "lr-Adam"), lr, n_lr)
    check_points(curve(frame, "val/rmse_loss"), val, n_val)
    assert len(curve(frame, "train/nll_loss")) == n_lr
    # the epoch of a LearningRateMonitor row comes from the train row at the same step
    assert epoch_at(frame, "lr-Adam", 49) == 0.0
    assert any(f"epoch was empty for {n_lr} point(s)" in n for n in info.notes)
    assert info.hparams == {}  # no hparams.yaml in this folder


def test_lightning_old_insertion_ordered_columns():
    name, info, frame = _load(f"{LIGHTNING}/Goreg12345__nlp2-probing-lms/lightning_logs/version_0")
    check_points(curve(frame, "train_loss"), {49: 2.347229480743408, 749: 3.9867682456970215,
                                              1399: 2.7272350788116455}, 28)
    assert curve(frame, "train_acc")[49] == 0.375
    assert epoch_at(frame, "train_loss", 1399) == 19.0
    assert info.hparams == {} and len(info.files) == 2


def test_lightning_appended_resume_in_one_file_is_a_restart(tmp_path):
    folder = tmp_path / "lightning_logs" / "version_0"
    folder.mkdir(parents=True)
    (folder / "metrics.csv").write_text(
        "epoch,step,train_loss,val_loss\n0,9,1.0,\n0,19,0.9,\n0,19,,0.95\n1,29,0.8,\n"
        "0,19,0.85,\n1,29,0.75,\n1,39,0.7,\n1,39,,0.72\n"
    )
    (folder / "hparams.yaml").write_text("lr: 0.1\nargs: !!python/object:argparse.Namespace {depth: 3}\n")
    name, info, frame = only_run(load(tmp_path))
    assert curve(frame, "train_loss").to_dict() == {9: 1.0, 19: 0.85, 29: 0.75, 39: 0.7}
    # the earlier val_loss at 19 belongs to the abandoned attempt from step 19 on
    assert curve(frame, "val_loss").to_dict() == {39: 0.72}
    (restart,) = info.restarts
    assert restart.step == 19 and "1 point(s) of the abandoned attempt" in restart.detail
    assert info.hparams == {"lr": 0.1, "args": {"depth": 3}}  # python tags read as data, never executed


# --- Keras -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "tag", "expected", "count"),
    [
        ("keras_csvlogger/Aditya24jar__Emotion-Detection-Resnet50", "val_loss",
         {0: 1.4435802698135376, 1: 7.41715145111084, 8: 1.0712780952453613, 16: 1.0745148658752441}, 17),
        ("keras_csvlogger/BurakErguvn__Car-Prediction-CNN-Model", "val_accuracy",
         {0: 0.16604077816009521, 50: 0.7494634985923767, 99: 0.7564377784729004}, 100),
    ],
)
def test_keras_csvlogger_training_log(relative, tag, expected, count):
    name, info, frame = _load(relative)
    assert info.format == "keras_csv"
    check_points(curve(frame, tag), expected, count)
    assert sorted(set(frame["tag"])) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert epoch_at(frame, tag, count - 1) == count - 1
    assert any("step = epoch" in n for n in info.notes)


KERAS_SEPARATORS = Path(__file__).resolve().parents[1] / "fixtures" / "keras_csv" / "separators"


@pytest.mark.parametrize("name", ["semicolon.log", "tab.tsv"])
def test_keras_csvlogger_with_its_other_separators(name):
    """Keras ``CSVLogger(path, separator=";")`` (as European spreadsheets want it) and ``separator="\\t"``, written by
    a real fit of 8 epochs (tests/fixtures/keras_csv): the same epochs and values as a comma's. They were not read."""
    path = KERAS_SEPARATORS / name
    assert KerasCSVReader().sniff(path, path.read_bytes()[:4096])
    name, info, frame = only_run(load(path, cache=False))
    assert info.format == "keras_csv" and not info.warnings
    assert sorted(set(frame["tag"])) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    check_points(curve(frame, "loss"), {0: 0.3728204667568207, 1: 0.12117094546556473, 7: 0.027378762140870094}, 8)
    check_points(curve(frame, "val_loss"), {0: 0.1651199609041214, 7: 0.02500321716070175}, 8)
    assert epoch_at(frame, "loss", 7) == 7.0


def test_a_semicolon_log_that_is_no_keras_csvlogger_is_not_claimed(tmp_path):
    """Only Keras' CSVLogger takes another separator: a ';' table whose first column is no epoch stays unread."""
    path = tmp_path / "training.log"
    path.write_text("step;loss\n0;0.5\n1;0.4\n")
    assert not KerasCSVReader().sniff(path, path.read_bytes())
    assert not GenericCSVReader().sniff(path, path.read_bytes())


LOSS_TABLES = Path(__file__).resolve().parents[1] / "fixtures" / "loss_tables"


def test_a_losses_table_whose_columns_name_only_their_split():
    """``pd.DataFrame({"train": …, "valid": …}).to_csv("losses.csv")`` after a real training
    (tests/fixtures/loss_tables): no step column, an unnamed index, columns that name no measure. It was not read
    at all; the file's name says the columns are losses: ``loss/train``, ``loss/valid`` at the row number."""
    name, info, frame = _load_path(LOSS_TABLES / "losses.csv")
    assert info.format == "csv" and not info.warnings
    assert sorted(set(frame["tag"])) == ["loss/train", "loss/valid"]
    check_points(curve(frame, "loss/train"), {0: 0.6581125140190125, 39: 0.0006728756212396547}, 40)
    check_points(curve(frame, "loss/valid"), {3: 0.34946316480636597, 39: 0.7048790454864502}, 40)
    assert "losses.csv names its columns' values losses: train as loss/train, valid as loss/valid" in info.notes


def test_a_losses_tables_columns_that_name_a_measure_keep_their_names(tmp_path):
    path = tmp_path / "losses.csv"
    path.write_text(",loss0,loss1,acc0,acc1\n0,1.74,1.75,81.7,79.1\n1,1.64,1.67,84.5,82.0\n")
    name, info, frame = _load_path(path)
    assert sorted(set(frame["tag"])) == ["acc0", "acc1", "loss0", "loss1"]
    assert not any("names its columns' values losses" in note for note in info.notes)


def test_a_losses_table_without_a_header_is_not_read_with_numbers_for_names(tmp_path):
    path = tmp_path / "losses.csv"
    path.write_text("0.5833239185090606 ,0.5479436865750196\n0.5392689951212867 ,0.525249026720492\n")
    assert not GenericCSVReader().sniff(path, path.read_bytes())


def _load_path(path: Path):
    return only_run(load(path, cache=False))


# --- YOLO ------------------------------------------------------------------------------------------


def test_yolov5_results_space_padded_with_opt_and_hyp():
    name, info, frame = _load("yolo_results_csv/483172__yolov5-custom_lego_dataset-2022-06-15/runs/train/exp")
    assert info.format == "yolo_csv" and len(info.files) == 3
    check_points(curve(frame, "metrics/mAP_0.5"), {0: 0.28274, 25: 0.97033, 49: 0.97967}, 50)
    assert curve(frame, "train/box_loss")[0] == 0.066099
    assert curve(frame, "x/lr2")[0] == 0.070191 and curve(frame, "x/lr2")[49] == 0.000496
    assert frame["tag"].nunique() == 13
    assert info.hparams["lr0"] == 0.01 and info.hparams["epochs"] == 50
    assert info.hparams["weights"] == "yolov5m.pt" and info.hparams["freeze"] == [0]


def test_yolov8_results_with_parenthesised_names_and_args():
    name, info, frame = _load("yolo_results_csv/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train")
    check_points(curve(frame, "metrics/mAP50(B)"), {0: 0.15826, 12: 0.5933, 24: 0.85651}, 25)
    assert curve(frame, "lr/pg0")[24] == 0.000892
    assert epoch_at(frame, "metrics/mAP50(B)", 0) == 0.0
    assert info.hparams["imgsz"] == 800 and info.hparams["epochs"] == 25 and info.hparams["model"] == "yolov8s.yaml"
    assert not info.warnings


def test_yolo_epochs_it_did_not_validate_are_no_zero_losses(tmp_path):
    """``val=False`` (or validation at the end only): Ultralytics writes 0 in every val/* and metrics/* cell of the
    epochs it did not validate; a validation loss of exactly 0 is no measurement (it was judged as a plateau at 0)."""
    import csv

    source = real_log("yolo_results_csv/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train/results.csv")
    rows = list(csv.reader(source.read_text().splitlines()))
    header = [h.strip() for h in rows[0]]
    validation = [i for i, h in enumerate(header) if h.startswith(("val/", "metrics/"))]
    for row in rows[1:-1]:
        for i in validation:
            row[i] = "0"
    out = tmp_path / "results.csv"
    out.write_text("\n".join(",".join(row) for row in rows) + "\n")
    name, info, frame = only_run(load(out, cache=False))
    assert curve(frame, "metrics/mAP50(B)").to_dict() == {24: 0.85651}
    assert len(curve(frame, "val/box_loss")) == 1 and len(curve(frame, "train/box_loss")) == 25
    assert any("24 epoch(s) with every validation value exactly 0" in n for n in info.notes)
    # an epoch with a real validation that scored 0 somewhere is kept whole
    rows[1][validation[0]] = "0.001"
    out.write_text("\n".join(",".join(row) for row in rows) + "\n")
    name, info, frame = only_run(load(out, cache=False))
    assert curve(frame, "metrics/mAP50(B)")[0] == 0.0 and len(curve(frame, "val/box_loss")) == 2


# --- generic wide CSV ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "val_loss", "count", "tags", "config_key", "config_value"),
    [
        ("01_AlexNet_SGD_20260128-181343", {1: 3.5639275127410888, 51: 1.1886052249908448, 100: 1.1258645677566528},
         100, 6, "model_name", "AlexNet"),
        ("03_YOLOv2_backbone_SGD_448_20260212-132843", {1: 0.61039, 6: 0.5976, 10: 0.61992}, 10, 8,
         "input_size", 448),
        ("04_ResNet18_SGD_20260216-194827", {1: 3.64948, 47: 0.74898, 93: 0.7501}, 93, 8, "model_name", "ResNet18"),
    ],
)
def test_generic_metrics_csv_with_config_json(folder, val_loss, count, tags, config_key, config_value):
    name, info, frame = _load(f"other_csv/ZeroToMax-ZYZ__study_tensorboard/logs/logs_upload/{folder}")
    assert info.format == "csv" and len(info.files) == 2
    check_points(curve(frame, "val_loss"), val_loss, count)
    assert frame["tag"].nunique() == tags and "epoch" not in set(frame["tag"])
    assert info.hparams[config_key] == config_value
    assert any("step = 'epoch'" in n for n in info.notes)


def test_generic_keeps_nested_config_and_odd_float():
    name, info, frame = _load("other_csv/ZeroToMax-ZYZ__study_tensorboard/logs/logs_upload/04_ResNet18_SGD_20260216-194827")
    assert curve(frame, "lr")[93] == 0.00010000000000000003
    assert curve(frame, "epoch_time")[1] == 122.8744
    alexnet = only_run(load(real_log(
        "other_csv/ZeroToMax-ZYZ__study_tensorboard/logs/logs_upload/01_AlexNet_SGD_20260128-181343")))[1]
    assert alexnet.hparams["optimizer"]["lr_scheduler"] == {"type": "StepLR", "step_size": 30, "gamma": 0.1}


# --- sniffing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (["epoch", "step", "loss"], "step"),
        (["Iteration", "loss"], "Iteration"),
        (["time/total_timesteps", "rollout/ep_rew_mean"], "time/total_timesteps"),
        (["epoch", "loss"], "epoch"),
        (["loss", "acc"], None),
    ],
)
def test_step_column_choice(header, expected):
    index = choose_step_column(header)
    assert (header[index] if index is not None else None) == expected


def test_sniffing_leaves_other_csvs_alone(tmp_path):
    generic, keras = GenericCSVReader(), KerasCSVReader()
    cases = {
        "wandb_export.csv": b'"Step","run - train/loss","run - train/loss__MIN"\n1,2,3\n',
        "runs.csv": b'"Name","State","Notes","iter","loss"\n"a","finished","-",1,2\n',
        "iris.csv": b"sepal_length,sepal_width,species\n5.1,3.5,setosa\n",
        "metrics.csv": b"run_name,seed,final_train_loss\nbaseline,42,0.63\n",  # a runs table, not a curve
    }
    for filename, content in cases.items():
        path = tmp_path / filename
        path.write_bytes(content)
        assert not generic.sniff(path, content), filename
    history = tmp_path / "history.csv"
    history.write_bytes(b"loss,accuracy\n0.9,0.5\n")
    assert generic.sniff(history, history.read_bytes())
    text_log = tmp_path / "training.log"
    text_log.write_bytes(b"[2022-11-22 10:02:00] INFO epoch, loss\n")
    assert not keras.sniff(text_log, text_log.read_bytes())
    assert not LightningCSVReader().sniff(history, history.read_bytes())
    assert not YoloResultsReader().sniff(history, history.read_bytes())


# --- dirty input ----------------------------------------------------------------------------------


def _read(reader, path):
    (run,) = reader.read([path])
    return run


def test_dirty_csv_bom_crlf_ragged_rows_bad_cells_and_cut_off_last_line(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_bytes(
        b"\xef\xbb\xbfstep,loss,note,lr\r\n"
        b"1,0.5,warmup,0.1\r\n"
        b"2,nan,,0.1\r\n"           # a literal nan is a value; empty cells are not
        b"3,0.4,x,0.1,extra\r\n"    # ragged: skipped and counted
        b"4,oops,y,0.1\r\n"         # one non-number in a numeric column
        b"5,0.3,caf\xe9,\r\n"       # a byte that is not UTF-8, an empty lr
        b",0.2,z,0.1\r\n"           # no step
        b"7,0.1,z"                  # cut off
    )
    run = _read(GenericCSVReader(), path)
    loss = curve(run.scalars, "loss")
    assert list(loss.index) == [1, 2, 5] and loss[1] == 0.5 and math.isnan(loss[2]) and loss[5] == 0.3
    assert curve(run.scalars, "lr").to_dict() == {1: 0.1, 2: 0.1, 4: 0.1}
    assert "note" not in set(run.scalars["tag"])
    assert any("non-numeric column(s) skipped: note" in n for n in run.notes)
    messages = " | ".join(f"{w.message} [{w.location}] x{w.count}" for w in run.warnings)
    assert "1 row(s) have a different number of fields than the header (4); skipped [line 4]" in messages
    assert "the last line is incomplete" in messages and "[line 8]" in messages
    assert "column 'loss': 1 cell(s) are not numbers (e.g. 'oops'); skipped" in messages
    assert "1 row(s) have a step ('step') that is empty, not a whole number or too large; skipped" in messages
    assert "1 byte(s) are not UTF-8; replaced" in messages


def test_format_step_column_missing_is_a_warning_not_a_crash(tmp_path):
    folder = tmp_path / "version_0"
    folder.mkdir()
    path = folder / "metrics.csv"
    path.write_text("epoch,iteration,loss\n0,10,1.0\n0,20,0.5\n")
    run = _read(LightningCSVReader(), path)
    assert curve(run.scalars, "loss").to_dict() == {10: 1.0, 20: 0.5}
    assert "no 'step' column, which this format always writes; 'iteration' used as the step" in \
        run.warnings[0].message
    keras = tmp_path / "training.log"
    keras.write_text("accuracy,loss\n0.5,1.0\n")
    run = _read(KerasCSVReader(), keras)
    assert curve(run.scalars, "loss").to_dict() == {0: 1.0}
    assert "no 'epoch' column" in run.warnings[0].message and "the row number" in run.warnings[0].message


def test_csv_without_step_column_uses_the_row_number(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("loss,accuracy\n0.9,0.5\n0.8,0.6\n0.7,0.7\n")
    run = _read(GenericCSVReader(), path)
    assert curve(run.scalars, "loss").to_dict() == {0: 0.9, 1: 0.8, 2: 0.7}
    assert any("row number (from 0) is the step" in n for n in run.notes)


def test_header_only_and_empty_files(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n")
    run = _read(GenericCSVReader(), path)
    assert run.scalars.empty and "no data rows" in run.warnings[0].message
    empty = tmp_path / "empty" / "metrics.csv"
    empty.parent.mkdir()
    empty.write_text("")
    with pytest.raises(FormatError, match="empty file"):
        GenericCSVReader().read([empty])


def test_large_csv_is_read_in_chunks(tmp_path, monkeypatch):
    import tanalyze.readers.tabular.widecsv as widecsv

    path = tmp_path / "metrics.csv"
    rows = "".join(f"{i},{i / 1000},{'' if i % 3 else i}\n" for i in range(1, 2501))
    path.write_text("step,loss,val\n" + rows + "2500,0.0,\n")  # step 2500 written again at the end
    monkeypatch.setattr(widecsv, "BLOCK_BYTES", 1000)  # ~30 blocks
    run = _read(GenericCSVReader(), path)
    loss = curve(run.scalars, "loss")
    assert len(loss) == 2500 and loss[1] == 0.001 and loss[1250] == 1.25 and loss[2500] == 0.0
    assert len(curve(run.scalars, "val")) == 833
    (restart,) = run.restarts
    assert restart.step == 2500


def test_the_parse_paths_give_the_same_columns(tmp_path, monkeypatch):
    """pandas on a clean block, numpy-checked lines around a ragged one, csv for quoted cells: one result."""
    import tanalyze.readers.tabular.widecsv as widecsv

    rows = [["1", "0.5", "", "warm"], ["2", "nan", "0.25", ""], ["3", "inf", "None", "x"], ["4", "-1e-3", "7", "y"],
            ["5", "oops", "8", "z"]]
    header = ["step", "loss", "val", "note"]

    def text(quote: bool, ragged: bool) -> str:
        cell = (lambda c: f'"{c}"') if quote else (lambda c: c)
        lines = [",".join(cell(c) for c in header)] + [",".join(cell(c) for c in row) for row in rows]
        if ragged:
            lines.insert(3, "9,9,9,9,9")
        return "\n".join(lines) + "\n"

    variants = {
        "plain": text(False, False), "quoted": text(True, False), "ragged": text(False, True),
        "quoted ragged": text(True, True),
        "comma in a quoted cell": text(False, False).replace("warm", '"warm, up"'),
    }
    variants["old Mac line ends"] = variants["plain"].replace("\n", "\r")
    results = {}
    whole_file = widecsv._Parser._whole_file
    for name, body in variants.items():
        path = tmp_path / name.replace(" ", "_") / "metrics.csv"
        path.parent.mkdir()
        path.write_text(body, newline="")
        for block, whole in ((widecsv.BLOCK_BYTES, True), (widecsv.BLOCK_BYTES, False), (16, False)):
            # pandas on the whole file; one block; a block per line or two
            monkeypatch.setattr(widecsv, "BLOCK_BYTES", block)
            monkeypatch.setattr(widecsv._Parser, "_whole_file", whole_file if whole else lambda *args: False)
            (run,) = GenericCSVReader().read([path])
            frame = run.scalars
            values = ["nan" if math.isnan(v) else str(v) for v in frame["value"].tolist()]
            results[(name, block, whole)] = sorted(zip(frame["tag"].astype(str), frame["step"].tolist(), values,
                                                       strict=True))
            bad = [w.message for w in run.warnings if "not numbers" in w.message]
            assert bad == ["column 'loss': 1 cell(s) are not numbers (e.g. 'oops'); skipped"], (name, block, whole)
            assert any("non-numeric column(s) skipped: note" in n for n in run.notes), (name, block, whole)
            ragged = [w for w in run.warnings if "different number of fields" in w.message]
            assert [w.location for w in ragged] == (["line 4"] if "ragged" in name else []), (name, block, whole)
    expected = [("loss", 1, "0.5"), ("loss", 2, "nan"), ("loss", 3, "inf"), ("loss", 4, "-0.001"),
                ("val", 2, "0.25"), ("val", 4, "7.0"), ("val", 5, "8.0")]
    assert all(result == expected for result in results.values()), results


def test_a_text_cell_deep_in_a_large_numeric_column(tmp_path):
    """pandas types a large file piece by piece: a column numeric in one piece and text in another is read
    cell by cell, with the same values and counts as anywhere else."""
    n = 300_000
    lines = [f"{i},{i / 8},{'' if i % 7 else i}" for i in range(n)]
    lines[250_000] = "250000,oops,nan"
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,val\n" + "\n".join(lines) + "\n")
    (run,) = GenericCSVReader().read([path])
    loss, val = curve(run.scalars, "loss"), curve(run.scalars, "val")
    assert len(loss) == n - 1 and loss[249_999] == 249_999 / 8 and loss[250_001] == 250_001 / 8
    assert len(val) == len(range(0, n, 7)) + 1 and math.isnan(val[250_000]) and val[249_998] == 249_998
    assert [w.message for w in run.warnings] == ["column 'loss': 1 cell(s) are not numbers (e.g. 'oops'); skipped"]


def test_an_integer_too_large_for_a_float_is_an_infinity_not_a_crash(tmp_path):
    # pandas types a large file piece by piece: a piece may hold a Python int beyond float64 in an object column
    lines = [f"{i},{i}" for i in range(300_000)]
    lines[200_000] = "200000," + "9" * 400
    path = tmp_path / "metrics.csv"
    path.write_text("step,count\n" + "\n".join(lines) + "\n")
    (run,) = GenericCSVReader().read([path])
    count = curve(run.scalars, "count")
    assert len(count) == 300_000 and count[200_000] == math.inf and count[199_999] == 199_999
