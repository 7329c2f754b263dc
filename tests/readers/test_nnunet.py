"""nnU-Net training logs: the fixture written by a real nnU-Net v2 training on the CPU
(``tests/fixtures/nnunet/generate.py``: a fold trained, killed at its third epoch, continued with ``--c``), and
nnU-Net v1's lines as a public log prints them."""

import math

from tanalyze import load
from tanalyze.readers import HEAD_BYTES, get_reader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FOLD = REPO / "tests" / "fixtures" / "nnunet" / "Dataset001_Blobs" / "nnUNetTrainer_5epochs__nnUNetPlans__2d" / "fold_0"
FIRST, SECOND = "training_log_2026_12_7_01_40_38.txt", "training_log_2026_12_7_01_42_18.txt"

# nnU-Net v1 (network_trainer.py) as a public training log prints it: the epoch on a line of its own, every
# other line after its time, each value followed by a space
V1 = "".join(line + " \n" for line in (  # (each line ends with a space, as nnU-Net v1 wrote them)
    "2021-06-21 08:13:03.056420:",
    "epoch:  0",
    "2021-06-21 08:17:05.605214: train loss : -0.2531",
    "2021-06-21 08:17:47.605599: validation loss: -0.3259",
    "2021-06-21 08:17:47.610551: Average global foreground Dice: [0.9093312319493183, 0.0, nan]",
    "2021-06-21 08:17:47.610851: (interpret this as an estimate for the Dice of the different classes. This is not "
    "exact.)",
    "2021-06-21 08:17:48.053071: lr: 0.009991",
    "2021-06-21 08:17:48.054774: This epoch took 288.041806 s\n",
    "2021-06-21 08:17:48.056420:",
    "epoch:  1",
    "2021-06-21 08:22:05.605214: train loss : -0.5531",
    "2021-06-21 08:22:47.605599: validation loss: -0.5259",
    "2021-06-21 08:22:47.610551: Average global foreground Dice: [0.93, 0.5, 0.7]",
    "2021-06-21 08:22:48.053071: lr: 0.009982",
    "2021-06-21 08:22:48.054774: This epoch took 300.5 s"))


def test_a_fold_trained_twice_is_one_run_with_its_epochs_values_and_times():
    logs = load(FOLD.parents[2], cache=False)
    (name,) = logs.runs
    assert name.endswith("fold_0")
    info = logs.runs[name]
    assert info.format == "nnunet" and sorted(f.rsplit("/", 1)[-1] for f in info.files) == [FIRST, SECOND]
    frame = logs.scalars_of(name)
    # the killed training logged epochs 0 and 1; the continued one epochs 2 to 4
    check(frame, "train_loss", {0: -0.8559, 1: -0.9548, 2: -0.9634, 4: -0.9691}, count=5)
    check(frame, "val_loss", {0: -0.9441, 3: -0.9763, 4: -0.9788}, count=5)
    check(frame, "pseudo_dice/1", {0: 0.967, 2: 0.9801}, count=5)
    check(frame, "pseudo_dice/mean", {0: 0.967}, count=5)
    check(frame, "lr", {0: 0.01, 1: 0.00818, 2: 0.00631}, count=5)
    check(frame, "epoch_time_s", {0: 35.6, 1: 52.23}, count=5)
    check(frame, "best_ema_pseudo_dice", {0: 0.9670000076293945, 4: 0.9710000157356262}, count=5)
    assert curve(frame, "final_validation_dice") == {4: 0.987770971865845}
    wall = frame[(frame["tag"] == "train_loss") & (frame["step"] == 0)]["wall_time"].iloc[0]
    assert wall == 1796607674.834066  # 2026-12-07 01:41:14.834066, read as UTC
    assert info.hparams == {"fold": 0, "training_cases": 16, "validation_cases": 4, "configuration": "2d",
                            "batch_size": 2}
    notes = notes_text(info)
    assert f"{FIRST}: epochs 0–2; epoch 2 has no values: the job stopped during it" in notes
    assert f"{SECOND}: epochs 2–4" in notes
    assert info.status.status == "finished" and "nnU-Net: training done" in info.status.reason
    assert not info.warnings


def test_logs_whose_dates_are_not_zero_padded_are_read_in_the_order_they_were_started(tmp_path):
    # nnU-Net names its logs by a date without zero padding: day 10 sorts before day 9 by name
    fold = tmp_path / "fold_0"
    lines = "2026-01-{day} 10:00:00.000001: Epoch {epoch} \n2026-01-{day} 10:01:00.000001: train_loss {loss} \n"
    write(fold / "training_log_2026_1_9_10_00_00.txt", "".join(
        lines.format(day="09", epoch=e, loss=-0.1 * e) for e in range(3)))
    write(fold / "training_log_2026_1_10_10_00_00.txt", "".join(
        lines.format(day="10", epoch=e, loss=-0.5 - 0.01 * e) for e in range(2, 5)))
    logs = load(tmp_path, cache=False)
    (info,) = logs.runs.values()
    assert "training_log_2026_1_9_10_00_00.txt: epochs 0–2\ntraining_log_2026_1_10_10_00_00.txt: epochs 2–4" \
        in notes_text(info)
    # epoch 2, logged by both, is the later (continued) training's
    assert curve(logs.scalars, "train_loss") == {0: 0.0, 1: -0.1, 2: -0.52, 3: -0.53, 4: -0.54}


def test_nnunet_v1_lines(tmp_path):
    path = write(tmp_path / "training_log_2021_6_21_08_13_03.txt", V1)
    reader = get_reader("nnunet")
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    frame = run.scalars
    check(frame, "train_loss", {0: -0.2531, 1: -0.5531}, count=2)
    check(frame, "val_loss", {0: -0.3259, 1: -0.5259}, count=2)
    check(frame, "global_dice/1", {0: 0.9093312319493183, 1: 0.93}, count=2)
    check(frame, "global_dice/2", {0: 0.0}, count=2)
    dice3 = curve(frame, "global_dice/3")
    assert math.isnan(dice3[0]) and dice3[1] == 0.7
    check(frame, "global_dice/mean", {0: (0.9093312319493183 + 0.0) / 2, 1: (0.93 + 0.5 + 0.7) / 3})  # NaN left out
    check(frame, "lr", {0: 0.009991}, count=2)
    check(frame, "epoch_time_s", {0: 288.041806, 1: 300.5}, count=2)
    assert "nnU-Net v1 ('epoch: N', 'train loss :') training log" in notes_text(run)


def test_a_metric_line_before_any_epoch_is_counted_not_guessed(tmp_path):
    text = ("2026-01-01 10:00:00.000001: train_loss -0.1 \n2026-01-01 10:00:01.000001: Epoch 0 \n"
            "2026-01-01 10:01:00.000001: train_loss -0.2 \n2026-01-01 10:01:00.000002: val_loss -0.25 \n")
    (run,) = get_reader("nnunet").read([write(tmp_path / "training_log_2026_1_1_10_00_00.txt", text)])
    assert curve(run.scalars, "train_loss") == {0: -0.2}
    assert "1 metric line(s) before the first epoch line skipped" in notes_text(run)


def test_other_logs_with_epoch_lines_are_not_taken_for_nnunet(tmp_path):
    for text in ("Epoch 1\nloss: 0.5\n", "2026-01-01 10:00:00: Epoch 1 done, loss 0.5\n",
                 "2026-01-01 10:00:00,123 - INFO - Epoch 3\n2026-01-01 10:00:01,123 - INFO - train_loss 0.5\n"):
        path = write(tmp_path / "train.log", text)
        assert not get_reader("nnunet").sniff(path, path.read_bytes())


def test_a_line_that_looks_like_a_metric_but_is_not_read_is_named(tmp_path):
    text = ("2026-01-01 10:00:00.000001: Epoch 0 \n2026-01-01 10:01:00.000001: train_loss -0.2 \n"
            "2026-01-01 10:01:00.000002: val_loss n/a \n2026-01-01 10:02:00.000001: Epoch 1 \n"
            "2026-01-01 10:03:00.000001: train_loss -0.3 \n")
    (run,) = get_reader("nnunet").read([write(tmp_path / "training_log_2026_1_1_10_00_00.txt", text)])
    assert curve(run.scalars, "train_loss") == {0: -0.2, 1: -0.3}
    (warning,) = run.warnings
    assert warning.location == "line 3" and "1 line(s) look like nnU-Net metrics but could not be read" in warning.message


def test_epochs_that_go_back_in_one_log_are_a_restart_at_their_line(tmp_path):
    lines = [f"2026-01-01 10:0{i}:00.000001: {text} \n" for i, text in enumerate(
        ["Epoch 0", "train_loss -0.1", "Epoch 1", "train_loss -0.2", "Epoch 2", "train_loss -0.3", "Epoch 1",
         "train_loss -0.25", "Epoch 2", "train_loss -0.35"])]
    (run,) = get_reader("nnunet").read([write(tmp_path / "training_log_2026_1_1_10_00_00.txt", "".join(lines))])
    assert curve(run.scalars, "train_loss") == {0: -0.1, 1: -0.25, 2: -0.35}  # the later write wins
    (restart,) = run.restarts
    assert restart.step == 1 and "step 1 logged again after step 2" in restart.detail and "(line 7)" in restart.detail
