"""Keras ``model.fit`` console output, written by real Keras 3 and tf.keras 2 fits (tests/fixtures/keras_console)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tanalyze
from tanalyze.readers import get_reader
from tanalyze.readers.text.console import detect_console_format
from tanalyze.readers.text.keras_console import _last_counter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "keras_console"


def _points(name: str) -> dict[tuple[str, int], float]:
    (run,) = get_reader("keras_console").read([FIXTURES / name])
    frame = run.scalar_table()
    return {(str(t), int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"], strict=True)}


# file: (epochs read, {(tag, step): value} as printed, the evaluation's loss at the last epoch's step)
CASES = {
    "keras3_file.log": (6, {("loss", 0): 1.1287, ("val_loss", 0): 0.8392, ("accuracy", 0): 0.5370,
                            ("step_time_ms", 0): 6.0, ("loss", 1): 0.6476, ("val_accuracy", 1): 0.8200}, 0.3329),
    "keras3_tty.log": (4, {("loss", 0): 1.1287, ("val_loss", 1): 0.5002}, 0.3576),
    "keras3_verbose2.log": (9, {("loss", 0): 1.1287, ("step_time_ms", 0): 16.0, ("learning_rate", 0): 0.001,
                                ("learning_rate", 6): 5e-4}, 0.3259),
    "tf_keras_file.log": (6, {("loss", 1): 0.6437, ("val_loss", 1): 0.4941, ("accuracy", 1): 0.7895,
                              ("step_time_ms", 0): 3.0}, 0.3299),
    "tf_keras_tty.log": (4, {("loss", 1): 0.6437, ("val_accuracy", 1): 0.8475}, 0.3612),
    "tf_keras_verbose2.log": (6, {("loss", 0): 1.1287, ("step_time_ms", 0): 9.0}, 0.3299),
}


@pytest.mark.parametrize("name", CASES)
def test_each_epochs_last_update_is_read_at_the_epoch_index_whatever_the_keras_and_the_capture(name):
    epochs, expected, evaluated = CASES[name]
    points = _points(name)
    assert {step for (tag, step) in points if tag == "loss"} == set(range(epochs))
    for key, value in expected.items():
        assert points[key] == pytest.approx(value, abs=1e-12), key
    assert points[("evaluate/loss", epochs - 1)] == pytest.approx(evaluated, abs=1e-12)
    assert get_reader("keras_console").sniff(FIXTURES / name, (FIXTURES / name).read_bytes()[:4096])


def test_the_console_and_the_csvlogger_of_one_fit_are_one_run_whose_twins_agree():
    logs = tanalyze.load(FIXTURES / "overfit", cache=False)
    (info,) = logs.runs.values()
    assert info.format == "keras_csv"
    [twin] = [note for note in info.notes if note.startswith("twin: train.log (keras_console)")]
    assert "agrees on all 240 common points of 4 tag(s)" in twin


def test_a_fit_killed_in_its_third_epoch_keeps_two_epochs_and_names_the_cut_one():
    (run,) = get_reader("keras_console").read([FIXTURES / "keras3_killed.log"])
    frame = run.scalar_table()
    assert sorted(set(frame["step"].tolist())) == [0, 1] and not run.warnings
    assert "1 epoch(s) ended before their last update, no point: epoch 3 at batch 13/63" in run.notes


def test_how_each_fit_ended_is_read_from_its_console():
    statuses = {name: tanalyze.run_status([str(FIXTURES / name)]) for name in (*CASES, "keras3_killed.log")}
    assert statuses["keras3_file.log"].reason == "Keras: the fit's last epoch (6/6) ended"
    assert statuses["keras3_verbose2.log"].reason == "Keras: early stopping ended the fit"
    assert statuses["keras3_verbose2.log"].evidence[0].line == 31
    assert all(s.status == "finished" for name, s in statuses.items() if name != "keras3_killed.log")
    assert statuses["keras3_killed.log"].status == "unknown"  # killed mid-epoch: its last epoch never ended


def test_a_fit_that_overfits_is_judged_from_its_console_alone():
    """200 noisy points, a wide net, 60 epochs: the validation loss bottoms out at epoch 4 and ends 2.4x higher."""
    (diagnosis,) = tanalyze.diagnose(tanalyze.load(FIXTURES / "overfit" / "train.log", cache=False)).values()
    assert diagnosis.format == "keras_console" and diagnosis.verdict.label == "overfitting"
    assert diagnosis.roles["train_loss"] == "loss" and diagnosis.roles["val_loss"] == "val_loss"
    assert diagnosis.overfitting.onset_step == 3 and diagnosis.overfitting.val_end > 2 * diagnosis.overfitting.val_min


def test_the_last_update_of_a_line_is_found_even_when_an_earlier_value_runs_into_its_counter():
    line = " 1/1875 [....] - ETA: 0s - loss: 2.3 - accuracy: 0.41231875/1875 [====] - 61s 32ms/step - loss: 0.5"
    done, total, end = _last_counter(line)
    assert (done, total, line[end:]) == ("1875", "1875", "[====] - 61s 32ms/step - loss: 0.5")
    assert _last_counter("0.187546/50 [=====>...] - ETA: 0s")[:2] == ("46", "50")
    assert _last_counter("no counter here: 3 ms/step") is None


@pytest.mark.parametrize("text", [
    "Epoch 1/10\nTrain Loss: 0.52 - Train Acc: 0.81\nVal Loss: 0.61 - Val Acc: 0.78\n",  # hand-written blocks
    "Epoch 1/10\n100%|##########| 50/50 [00:01<00:00, 30.1it/s, loss=0.52]\n",  # tqdm
])
def test_other_epoch_blocks_are_not_taken_for_keras(text, tmp_path):
    path = tmp_path / "train.log"
    path.write_text(text * 3)
    reader = detect_console_format(path)
    assert reader is None or reader.name != "keras_console"


def test_a_loss_keras_prints_as_nan_is_a_nan_point(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"Epoch {e}/3\n63/63 - 0s - loss: {loss} - accuracy: 0.2500 - 60ms/epoch - 1ms/step\n"
                            for e, loss in ((1, "1.3862"), (2, "nan"), (3, "nan"))))
    (run,) = get_reader("keras_console").read([path])
    frame = run.scalar_table()
    loss = frame[frame["tag"] == "loss"]["value"].to_numpy()
    assert loss[0] == 1.3862 and np.isnan(loss[1:]).all() and not run.warnings


def test_a_keras_console_above_its_tensorboard_log_dir_is_that_runs_twin():
    """Keras's TensorBoard callback wrote logs/train and logs/validation; the job's console is in the folder
    above: one run, the events read, the console compared (epoch_loss is loss, validation/epoch_loss val_loss)."""
    logs = tanalyze.load(FIXTURES / "with_tensorboard", cache=False)
    (info,) = logs.runs.values()
    assert info.format == "tensorboard" and info.status.status == "finished"
    [twin] = [note for note in info.notes if note.startswith("twin: train.log (keras_console)")]
    assert "it agrees on all 32 common points of 4 tag(s)" in twin


def test_a_keras_console_above_two_runs_belongs_to_neither(tmp_path):
    import shutil

    for name in ("a", "b"):
        shutil.copytree(FIXTURES / "with_tensorboard" / "logs", tmp_path / "logs" / name)
    shutil.copy(FIXTURES / "with_tensorboard" / "train.log", tmp_path / "train.log")
    logs = tanalyze.load(tmp_path, cache=False)
    assert sorted((name, info.format) for name, info in logs.runs.items()) == [
        ("logs/a", "tensorboard"), ("logs/b", "tensorboard"), (tmp_path.name, "keras_console")]
