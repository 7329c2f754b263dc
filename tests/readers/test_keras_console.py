"""Keras ``model.fit`` console output, written by real Keras 3, tf.keras 2, Keras 2.2.5 and Keras 1.2.2 fits
(tests/fixtures/keras_console)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tanalyze
from tanalyze.readers import get_reader
from tanalyze.readers.text import _parts
from tanalyze.readers.text.console import detect_console_format
from tanalyze.readers.text.keras_console import (
    KerasConsoleParser,
    KerasConsoleReader,
    _last_counter,
    detect_keras_console,
)
from tests.readers.text_helpers import notes_text, write

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


# -- old Keras at verbose=2: no batch counter, the epoch's time first (real Keras 1.2.2 and 2.2.5 fits) ----------

def _old(path: Path):
    (run,) = KerasConsoleReader().read([path])
    return run, {(str(t), int(s)): float(v) for t, s, v in zip(*(run.scalar_table()[c] for c in ("tag", "step", "value")),
                                                                strict=True)}


def test_keras1s_four_fits_in_one_log_are_four_sessions_of_their_epochs():
    """Keras 1.2.2 prints '3s - loss: 0.4573 - acc: …' after each 'Epoch i/n'; the script fits four times (early
    stopped, fine-tuned, without validation, a regression): each fit starts over at Epoch 1, a new session."""
    run, points = _old(FIXTURES / "keras1_verbose2.log")
    assert points[("epoch_time_s", 0)] == 3.0 and points[("loss", 0)] == 0.4573 and points[("acc", 0)] == 0.8114
    assert points[("val_loss", 0)] == 0.3889 and points[("val_acc", 2)] == 0.8307
    # the next fits follow on one step axis: the second's Epoch 1 is step 3, the third's (no validation) step 6
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(0, 2, 0), (3, 5, 3), (6, 8, 6), (9, 11, 9)]
    assert points[("loss", 3)] == 0.3053 and points[("val_acc", 5)] == 0.8157 and points[("acc", 8)] == 0.89
    assert points[("loss", 9)] == 1.3103e-05 and points[("mean_absolute_error", 11)] == 0.0028  # '%.4e' below 1e-3
    assert {s for (t, s) in points if t == "val_loss"} == set(range(6)) and len(points) == 12 * 2 + 9 + 2 * 6 + 3
    assert np.isnan(run.scalar_table()["wall_time"]).all()
    assert not run.warnings and not run.restarts and run.hparams == {"epochs": 30}  # (the first fit's)
    assert ("12 epoch(s) printed by old Keras at verbose=2 (no batch counter: '224s - loss: …'): their time in whole "
            "seconds read as epoch_time_s") in run.notes
    assert get_reader("keras_console").sniff(FIXTURES / "keras1_verbose2.log",
                                             (FIXTURES / "keras1_verbose2.log").read_bytes()[:4096])


def test_keras22s_lines_and_a_fit_resumed_at_its_fourth_epoch():
    """Keras 2.2.5 prints ' - 1s - loss: …'; ReduceLROnPlateau's messages come between; the job resumed with
    initial_epoch=3 logs epochs 4-6 again (a restart: the later values kept); model.evaluate's bar has no metric."""
    run, points = _old(FIXTURES / "keras22_verbose2.log")
    assert points[("epoch_time_s", 0)] == 1.0 and points[("loss", 0)] == 0.4404 and points[("val_acc", 0)] == 0.837
    assert points[("loss", 2)] == 0.3315 and points[("loss", 3)] == 0.2297 and points[("loss", 5)] == 0.2226
    assert points[("val_loss", 7)] == 0.3887 and {s for (t, s) in points if t == "loss"} == set(range(8))
    (restart,) = run.restarts
    assert restart.step == 3 and restart.detail == "step 3 logged again after step 5 (line 27); the later values are kept"
    assert not run.phases and not run.warnings and not any(t.startswith("evaluate/") for t, _ in points)
    assert "15 point(s) logged after a restart were replaced by the later write (last write wins)" in run.notes
    assert not any("evaluation bar" in note for note in run.notes)


def test_a_callbacks_message_between_the_epoch_and_its_line_and_a_time_per_batch(tmp_path):
    """Keras 1.0/1.1 ran EarlyStopping before the progress logger: its message comes before the epoch's line."""
    path = tmp_path / "train.log"
    path.write_text("Epoch 18/50\n225s - loss: 0.4897 - acc: 0.8609\nEpoch 19/50\nEpoch 00018: early stopping\n"
                    "225s - loss: 0.4847 - acc: 0.8622\nstopped after  19 epochs\n"
                    "Epoch 1/2\n - 61s 32ms/step - loss: 0.2062 - acc: 0.9412\nEpoch 2/2\n - 60s - loss: nan - acc: 0.25\n")
    run, points = _old(path)
    assert points == {("epoch_time_s", 17): 225.0, ("loss", 17): 0.4897, ("acc", 17): 0.8609,
                      ("epoch_time_s", 18): 225.0, ("loss", 18): 0.4847, ("acc", 18): 0.8622,
                      ("epoch_time_s", 19): 61.0, ("step_time_ms", 19): 32.0, ("loss", 19): 0.2062,
                      ("acc", 19): 0.9412, ("epoch_time_s", 20): 60.0, ("loss", 20): pytest.approx(np.nan, nan_ok=True),
                      ("acc", 20): 0.25}
    assert [p.detail.split(":")[0] for p in run.phases[1:]] == ["step went back from 18 to 0"] and not run.warnings


def test_an_old_line_that_cannot_be_read_or_belongs_to_no_epoch_is_named(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("Epoch 1/3\n2s - loss: 0.50 - acc: 0.80\n2s - loss: 0.49 - acc: 0.81\n"  # (its epoch was read)
                    "Epoch 2/3\n2s - loss: 0.4x - acc: ?\n"  # (no pair to read)
                    "Epoch 3/3\n2s - loss: 0.30 - acc: 0.90\n")
    run, points = _old(path)
    assert points == {("epoch_time_s", 0): 2.0, ("loss", 0): 0.5, ("acc", 0): 0.8,
                      ("epoch_time_s", 2): 2.0, ("loss", 2): 0.3, ("acc", 2): 0.9}
    (warning,) = run.warnings
    assert ("2 line(s) look like keras-console metrics but could not be read, e.g. line 3: '2s - loss: 0.49 - acc: "
            "0.81'; line 5: '2s - loss: 0.4x - acc: ?'") in warning.message


def test_an_epoch_number_too_large_is_named_not_read(tmp_path):
    path = tmp_path / "train.log"
    huge = 2**53 + 1
    path.write_text(f"Epoch 1/3\n2s - loss: 0.50\nEpoch {huge}/{huge}\n2s - loss: 0.40\nEpoch 3/3\n2s - loss: 0.30\n"
                    f"Epoch {huge}/{huge}\n10/10 [==============================] - 0s 2ms/step - loss: 0.2\n")
    run, points = _old(path)
    assert points == {("epoch_time_s", 0): 2.0, ("loss", 0): 0.5, ("epoch_time_s", 2): 2.0, ("loss", 2): 0.3}
    (warning,) = run.warnings
    assert warning.message.startswith("4 line(s) look like keras-console metrics but could not be read, e.g. ")
    assert f"line 3: 'Epoch {huge}/{huge}'" in warning.message and "line 4: '2s - loss: 0.40'" in warning.message
    assert run.hparams == {"epochs": 3} and not run.restarts


def test_junk_and_non_ascii_lines_between_old_epochs_are_passed_over(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes("Epoch 1/2\n\x00\x01\x7f junk\nÉpoque 1/2 — perte: 0,5 ✓\n3s — loss: 0.5\n12 s - loss: 0.5\n"
                     "3s - loss: 0.6123 - acc: 0.7 - ✓ done\nEpoch 2/2\n3s - loss: 0.5123 - 精度: 0.8\n".encode())
    run, points = _old(path)
    assert points == {("epoch_time_s", 0): 3.0, ("loss", 0): 0.6123, ("acc", 0): 0.7,
                      ("epoch_time_s", 1): 3.0, ("loss", 1): 0.5123}
    assert not run.warnings


@pytest.mark.parametrize(("text", "keras"), [
    ("Epoch 1/50\n224s - loss: 3.5508 - acc: 0.2966\n", True),
    ("Epoch 1/50\n - 224s - loss: 3.5508 - acc: 0.2966\n", True),
    ("224s - loss: 3.5508 - acc: 0.2966\n" * 3, False),  # (the metrics line alone: no Epoch line)
    ("Epoch 1/50\n" * 3, False),
    ("Epoch 1/50\n224s elapsed - loss: 3.5508\n", False),
])
def test_old_kerass_log_is_told_by_an_epoch_line_then_its_metrics_line(text, keras):
    assert detect_keras_console(text) is keras


def _old_log(fits: int) -> str:
    """Old Keras's verbose=2 epochs of several fits as a script prints them: with validation and without, Keras 1's
    and 2.2's lines, a nan, a '%.4e', early stopping, a callback's message between an epoch and its line,
    model.evaluate's bar after the fourth fit, and a last fit resumed at its tenth epoch (a restart)."""
    out = []
    for fit in range(fits):
        epochs, dash = 40 + 13 * fit, " - " if fit % 2 else ""
        out.append("Train on 40000 samples, validate on 10000 samples\n" if fit % 3 else "")
        for epoch in [*range(1, epochs + 1), *(range(10, 21) if fit == fits - 1 else ())]:
            loss = "nan" if (fit, epoch) == (1, 7) else f"{3.5 / epoch + fit:.4f}" if epoch < 30 else f"{epoch * 1e-5:.4e}"
            valid = f" - val_loss: {4.1 / epoch:.4f} - val_acc: {1 - 0.9 / epoch:.4f}" if fit % 3 else ""
            between = "Epoch 00024: ReduceLROnPlateau reducing learning rate to 0.0005.\n" if epoch == 25 else ""
            out.append(f"Epoch {epoch}/{epochs}\n{between}{dash}{200 + epoch % 7}s - loss: {loss} - acc: "
                       f"{1 - 1 / (epoch + 1):.4f}{valid}\n")
        out.append(f"Epoch {epochs - 1:05d}: early stopping\n")
        if fit == 3:
            out.append(" 1000/10000 [==>...........................] - ETA: 0s\n"
                       "10000/10000 [==============================] - 1s 64us/step\n")
    return "".join(out)


@pytest.mark.parametrize("chunk_chars", [None, 1 << 13, 1 << 14, 20_000])
def test_old_epochs_read_a_chunk_at_once_as_line_by_line(tmp_path, monkeypatch, chunk_chars):
    path = tmp_path / "train.log"
    path.write_text(_old_log(7))
    if chunk_chars is not None:
        monkeypatch.setattr(_parts, "CHUNK_CHARS", chunk_chars)
    taken, read_at_once = [], KerasConsoleParser._old_epochs_at_once
    monkeypatch.setattr(KerasConsoleParser, "_old_epochs_at_once",
                        lambda parser, chunk: taken.append(read_at_once(parser, chunk)) or taken[-1])
    at_once = KerasConsoleReader().read([path])[0]
    assert any(taken) is (chunk_chars is not None) and not all(taken)  # (the evaluation's chunk: line by line)
    monkeypatch.setattr(KerasConsoleParser, "line_by_line", True)
    by_line = KerasConsoleReader().read([path])[0]
    pd.testing.assert_frame_equal(at_once.scalar_table(), by_line.scalar_table(), check_exact=True)
    assert (at_once.notes, at_once.warnings, at_once.restarts, at_once.phases, at_once.hparams) == (
        by_line.notes, by_line.warnings, by_line.restarts, by_line.phases, by_line.hparams)
    assert [p.first_step for p in at_once.phases] == [0, 40, 93, 159, 238, 330, 435] and not at_once.warnings
    (restart,) = at_once.restarts  # (the last fit resumed at its tenth epoch: the later values kept)
    assert restart.detail == "step 9 logged again after step 117 (line 1127); the later values are kept"
    frame = at_once.scalar_table()
    assert len(frame) == 3 * sum(40 + 13 * fit for fit in range(7)) + 2 * sum(40 + 13 * fit for fit in (1, 2, 4, 5))
    loss = frame[frame["tag"] == "loss"].set_index("step")["value"]
    assert np.isnan(loss[40 + 6]) and loss[40 + 29] == 3e-4 and loss[0] == 3.5 and loss[93] == 3.5 + 2
    assert loss[435 + 9] == 3.5 / 10 + 6 and loss[435 + 19] == 3.5 / 20 + 6  # (the resumed epochs' values)


def test_an_update_at_the_last_batch_that_still_shows_an_eta_is_no_epochs_end(tmp_path):
    """TF 2's ModelCheckpoint saving a SavedModel prints 'INFO:tensorflow:Assets written to: …' right after a last-
    batch update that still shows an ETA, before the epoch's end: that update is no epoch's end (the epoch's line
    with its validation comes next), and the end is no model.evaluate bar."""
    text = (FIXTURES / "tf_keras_file.log").read_text()
    glued = re.sub(r"(?m)^(63/63 \[=+\] - )\d+s \d+ms/step - (loss: [\d.]+ - accuracy: [\d.]+)(?= - val_loss)",
                   lambda m: (f"{m.group(1)}ETA: 0s - {m.group(2)}INFO:tensorflow:Assets written to: "
                              f"out/model-best/assets\nINFO:tensorflow:Assets written to: out/model-best/assets\n"
                              + m.group(0)), text)
    assert glued.count("INFO:tensorflow") == 12
    path = tmp_path / "output.log"
    path.write_text(glued)
    (run,) = get_reader("keras_console").read([path])
    frame = run.scalar_table()
    points = {(str(t), int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"], strict=True)}
    expected = _points("tf_keras_file.log")
    assert points == expected  # the same epochs and values as without the checkpoint's lines


def test_an_update_at_the_last_batch_that_a_checkpoints_message_and_the_epochs_end_follow_is_no_epochs_end(tmp_path):
    """Keras 3 with ModelCheckpoint(verbose=1): an update drawn at the last batch, then 'Epoch 1: val_loss improved
    …', then the epoch's end with its validation. The end is the epoch's, not a model.evaluate bar, and its values
    replace the update's."""
    text = (FIXTURES / "keras3_file.log").read_text()
    end = "\x1b[1m63/63\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m1s\x1b[0m 6ms/step - accuracy: 0.5370"
    assert text.count(end) == 1
    update = ("\x1b[1m63/63\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m0s\x1b[0m 1ms/step - "
              "accuracy: 0.5301 - loss: 1.1300\nEpoch 1: val_loss improved from inf to 0.83920, saving model to "
              "best.keras\n")
    path = tmp_path / "train.log"
    path.write_text(text.replace(end, update + end))
    (run,) = get_reader("keras_console").read([path])
    frame = run.scalar_table()
    points = {(str(t), int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"], strict=True)}
    assert points == _points("keras3_file.log")  # epoch 1's end read as the fixture's, the update left out


@pytest.mark.parametrize("name", ["keras3_verbose2.log", "tf_keras_verbose2.log"])
@pytest.mark.parametrize("width", [37, 64, 100])
def test_updates_a_terminal_hard_wrapped_are_read_whole(tmp_path, name, width):
    """A console copied from a terminal (or captured through one) that broke every line at its width: each epoch's
    update is joined back from its pieces ('… - val_recall: 0' then '.9938 - learning_rate: …' is a recall of
    0.9938, not 0), and nothing else is joined to it."""
    text = (FIXTURES / name).read_text()
    wrapped = "\n".join(line[at:at + width] for line in text.split("\n") for at in range(0, max(len(line), 1), width))
    assert wrapped.count("\n") > text.count("\n") + 5
    path = tmp_path / "train.log"
    path.write_text(wrapped)
    (run,) = get_reader("keras_console").read([path])
    frame = run.scalar_table()
    points = {(str(t), int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"], strict=True)}
    assert points == _points(name)


def test_a_line_printed_after_an_epochs_update_is_not_joined_to_it(tmp_path):
    """A line of the script's own right after an epoch's end ('best: 0.95') looks like the tail of a wrapped update
    but would spoil its last value: it is left alone."""
    text = (FIXTURES / "keras3_verbose2.log").read_text()
    path = tmp_path / "train.log"
    path.write_text(text.replace("learning_rate: 0.0010\nEpoch 2/30", "learning_rate: 0.0010\nbest: 0.95\nEpoch 2/30"))
    (run,) = get_reader("keras_console").read([path])
    frame = run.scalar_table()
    points = {(str(t), int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"], strict=True)}
    assert points == _points("keras3_verbose2.log")


@pytest.mark.parametrize("name", ["keras3_verbose2.log", "keras3_file.log", "tf_keras_file.log"])
def test_a_log_whose_head_was_cut_off_begins_with_its_first_epochs_end(tmp_path, name):
    """A console saved from the middle of its first epoch: it begins with that epoch's last update (with its
    validation) and no 'Epoch 1/30' line before it. It was read as a model.evaluate bar (``evaluate/loss`` …) and the
    first epoch lost; it is the epoch before the first 'Epoch' line, as the whole log reads it."""
    lines = (FIXTURES / name).read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("Epoch 1/"))
    cut = tmp_path / name
    cut.write_text("".join(lines[first + 1:]))
    (whole,) = get_reader("keras_console").read([FIXTURES / name])
    (run,) = get_reader("keras_console").read([cut])
    key = ["tag", "step", "value"]
    got = run.scalars[key].sort_values(key[:2]).reset_index(drop=True)
    expected = whole.scalars[key].sort_values(key[:2]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected, check_categorical=False)
    assert any("its head cut off" in note for note in run.notes)


def test_an_epoch_end_pasted_again_without_its_epoch_line_is_no_evaluation(tmp_path):
    """A notebook's output pasted twice into a file: an epoch's last update (with its validation) repeated after the
    next epoch's end, its ``Epoch`` line not repeated. It had been read as a ``model.evaluate`` bar: evaluate/loss and
    evaluate/val_loss (which evaluate never prints) at the last epoch's step, with another epoch's numbers."""
    lines = (FIXTURES / "keras3_file.log").read_text().splitlines(keepends=True)
    second = next(i for i, line in enumerate(lines) if "loss: 0.6476 - val_accuracy" in line)
    third = next(i for i, line in enumerate(lines) if "loss: 0.4335 - val_accuracy" in line)
    end_of_second = lines[second].rstrip("\n").rsplit("\r", 1)[-1] + "\n"  # (its last redraw, alone on a line)
    pasted = lines[: third + 1] + [end_of_second] + lines[third + 1:]
    (run,) = get_reader("keras_console").read([write(tmp_path / "history.txt", "".join(pasted))])
    points = {(str(t), int(s)): float(v) for t, s, v in zip(*(run.scalar_table()[c] for c in ("tag", "step", "value")),
                                                             strict=True)}
    assert not any(tag.startswith("evaluate/val_") for tag, _ in points)
    assert "1 epoch end(s) with validation after another epoch's end and no 'Epoch' line" in notes_text(run)
    assert {key: value for key, value in points.items() if not key[0].startswith("evaluate/")} == {
        key: value for key, value in _points("keras3_file.log").items() if not key[0].startswith("evaluate/")}
