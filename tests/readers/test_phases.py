"""Sessions appended to one log are phases on one step axis; a resume is still a restart (later write wins)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tanalyze import diagnose, load
from tanalyze.cache import Cache
from tanalyze.readers.phases import PHASE_LIMIT, find_phase_starts
from tanalyze.readers.tabular.common import PointBuffer, settle_rewrites
from tanalyze.readers.tabular.csv_loggers import GenericCSVReader, KerasCSVReader, LightningCSVReader
from tanalyze.readers.tabular.detectron2 import Detectron2Reader
from tanalyze.readers.wandb.history import history_to_tidy, sparse_from_rows
from tests.readers.structured_helpers import curve, epoch_at, only_run

KERAS_HEADER = "epoch,accuracy,loss,val_accuracy,val_loss"
#: a real Keras CSVLogger(append=True) file over two fit() calls, when the fixture is there
REAL_APPEND = Path(__file__).resolve().parents[1] / "fixtures" / "layouts" / "keras_csvlogger_append"


def keras_row(epoch: int, loss: float) -> str:
    return f"{epoch},{1 - loss / 2:.4f},{loss:.4f},{1 - loss / 1.5:.4f},{loss * 1.1:.4f}"


def head_then_finetune(head: int = 5, finetune: int = 20) -> tuple[str, list[float], list[float]]:
    """A Keras CSVLogger(append=True) log: head training (epochs 0..head-1), then fine-tuning from epoch 0."""
    head_loss = [1.5 - 0.1 * e for e in range(head)]
    tune_loss = [0.9 - 0.02 * e for e in range(finetune)]
    rows = [keras_row(e, v) for e, v in enumerate(head_loss)] + [keras_row(e, v) for e, v in enumerate(tune_loss)]
    return KERAS_HEADER + "\n" + "\n".join(rows) + "\n", head_loss, tune_loss


def read_keras(tmp_path: Path, text: str):
    path = tmp_path / "training.log"
    path.write_text(text)
    (run,) = KerasCSVReader().read([path])
    return run


def test_keras_append_keeps_both_sessions_as_two_phases(tmp_path):
    text, head, tune = head_then_finetune()
    run = read_keras(tmp_path, text)
    loss = curve(run.scalars, "loss")
    assert list(loss.index) == list(range(25))  # 25 epochs kept (the fine-tune used to replace the head training)
    assert loss[0] == round(head[0], 4) and loss[4] == round(head[4], 4)
    assert loss[5] == round(tune[0], 4) and loss[24] == round(tune[19], 4)
    assert len(run.scalars) == 25 * 4 and not run.restarts
    one, two = run.phases
    assert (one.index, one.first_step, one.last_step, one.offset, one.unit) == (0, 0, 4, 0, "epoch")
    assert (two.index, two.first_step, two.last_step, two.offset, two.unit) == (1, 5, 24, 5, "epoch")
    assert two.detail == ("epoch went back from 4 to 0: a new session appended to the log; "
                          "its epochs shifted by +5 to follow the previous session")
    assert two.file == str(tmp_path / "training.log")
    # one row per epoch: the epoch column is the step, shifted with it
    assert epoch_at(run.scalars, "loss", 5) == 5.0 and epoch_at(run.scalars, "val_loss", 24) == 24.0
    assert two.to_dict() == {"index": 1, "first_step": 5, "last_step": 24, "offset": 5, "file": two.file,
                             "detail": two.detail, "unit": "epoch"}


def test_a_resume_to_a_later_epoch_still_replaces(tmp_path):
    rows = [keras_row(e, 1.0 - e / 20) for e in range(10)] + [keras_row(e, 0.5 - e / 100) for e in range(5, 13)]
    run = read_keras(tmp_path, KERAS_HEADER + "\n" + "\n".join(rows) + "\n")
    loss = curve(run.scalars, "loss")
    assert list(loss.index) == list(range(13)) and loss[4] == 0.8 and loss[5] == 0.45 and loss[12] == 0.38
    assert not run.phases
    (restart,) = run.restarts
    assert restart.step == 5 and "20 earlier point(s) replaced by the later writes" in restart.detail


def test_identical_rewrites_from_the_start_are_a_note_not_a_session(tmp_path):
    rows = [keras_row(e, 1.0 - e / 10) for e in range(5)]
    run = read_keras(tmp_path, KERAS_HEADER + "\n" + "\n".join(rows + rows) + "\n")
    assert len(curve(run.scalars, "loss")) == 5 and not run.phases and not run.restarts
    assert "20 point(s) at epochs 0–4 were written twice with identical values; kept once" in run.notes


def test_three_sessions_and_a_resume_inside_the_second(tmp_path):
    rows = ([keras_row(e, 2.0) for e in range(3)]          # session 1: epochs 0-2
            + [keras_row(e, 1.0) for e in range(6)]          # session 2: epochs 0-5 ...
            + [keras_row(e, 0.9) for e in range(4, 8)]       # ... resumed from epoch 4
            + [keras_row(e, 0.5) for e in range(2)])         # session 3: epochs 0-1
    run = read_keras(tmp_path, KERAS_HEADER + "\n" + "\n".join(rows) + "\n")
    loss = curve(run.scalars, "loss")
    assert list(loss.index) == list(range(13))
    assert loss.tolist() == [2.0] * 3 + [1.0] * 4 + [0.9] * 4 + [0.5] * 2
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(0, 2, 0), (3, 10, 3), (11, 12, 11)]
    (restart,) = run.restarts  # on the run's axis: epoch 4 of session 2 is step 7
    assert restart.step == 7 and restart.detail.startswith("epochs 7–8 were logged again; 8 earlier point(s)")


def test_lightning_second_fit_into_one_version_folder(tmp_path):
    folder = tmp_path / "lightning_logs" / "version_0"
    folder.mkdir(parents=True)
    first = "".join(f"0,{s},{1.0 - s / 1000},\n" for s in (9, 19)) + "0,19,,0.9\n"
    second = "".join(f"0,{s},{0.5 - s / 1000},\n" for s in (9, 19, 29)) + "0,29,,0.4\n"
    (folder / "metrics.csv").write_text("epoch,step,train_loss,val_loss\n" + first + second)
    name, info, frame = only_run(load(tmp_path, cache=False))
    # the second fit's steps 9-29 follow the first's last step 19: offset 19 + 1 - 9 = 11
    assert curve(frame, "train_loss").to_dict() == {9: 0.991, 19: 0.981, 20: 0.491, 30: 0.481, 40: 0.471}
    assert curve(frame, "val_loss").to_dict() == {19: 0.9, 40: 0.4}
    assert [(p.first_step, p.last_step, p.offset, p.unit) for p in info.phases] == [(9, 19, 0, "step"),
                                                                                   (20, 40, 11, "step")]
    assert info.phases[1].detail.startswith("step went back from 19 to 9: a new session appended to the log")
    assert epoch_at(frame, "train_loss", 30) == 0.0  # an epoch column apart from the step is kept as written


def test_detectron2_relaunch_from_iteration_zero_is_a_phase(tmp_path):
    path = tmp_path / "metrics.json"
    lines = [{"iteration": i, "total_loss": 2.0 - i / 100} for i in (19, 39, 59)]
    lines += [{"iteration": i, "total_loss": 1.0 - i / 100} for i in (19, 39)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (run,) = Detectron2Reader().read([path])
    assert curve(run.scalars, "total_loss").to_dict() == {19: 2.0 - 0.19, 39: 2.0 - 0.39, 59: 2.0 - 0.59,
                                                          60: 1.0 - 0.19, 80: 1.0 - 0.39}
    assert [(p.first_step, p.last_step, p.offset, p.unit) for p in run.phases] == [(19, 59, 0, "iteration"),
                                                                                   (60, 80, 41, "iteration")]


def test_wandb_history_two_sessions_logged_into_one_run():
    rows = [{"_step": i, "trainer/global_step": s, "loss": 1.0 - s / 100} for i, s in enumerate((0, 10, 20))]
    rows += [{"_step": 3 + i, "trainer/global_step": s, "loss": 0.5 - s / 100} for i, s in enumerate((0, 10))]
    history = history_to_tidy(sparse_from_rows(rows), file="dir/h.jsonl")
    loss = history.scalars[history.scalars["tag"] == "loss"]
    assert list(zip(loss["step"], loss["value"], strict=True)) == [(0, 1.0), (10, 0.9), (20, 0.8), (21, 0.5),
                                                                   (31, 0.4)]
    assert [(p.first_step, p.last_step, p.offset) for p in history.phases] == [(0, 20, 0), (21, 31, 21)]
    assert not history.restarts
    assert history.phases[1].detail.startswith(
        "'trainer/global_step' went back from 20 to 0: a new training session logged into the same run")


def test_phase_rule_on_points():
    # two tags; the second session starts with the other tag at its own first step
    rows = np.array([0, 0, 1, 1, 2, 3, 3])
    codes = np.array([0, 1, 0, 1, 0, 0, 1])
    steps = np.array([0, 0, 5, 5, 10, 0, 0])
    (start,), limited = find_phase_starts(rows, codes, steps, np.arange(7.0))
    assert (start.row, start.high, start.step) == (3, 10, 0) and not limited
    # a step at the same height is a rewrite, not a session; nor is going back to a later step
    assert find_phase_starts(np.arange(3), np.zeros(3, int), np.array([0, 0, 0]), np.ones(3)) == ([], False)
    assert find_phase_starts(np.arange(4), np.zeros(4, int), np.array([0, 5, 9, 5]), None) == ([], False)


def test_more_sessions_than_the_limit_are_restarts_with_a_warning():
    buffer = PointBuffer()
    for row in range(2 * (PHASE_LIMIT + 3)):
        buffer.add(row, "loss", row % 2, float(row))  # steps 0, 1, 0, 1 …: every pair a new session
    settled = settle_rewrites(buffer.frame(), "f")
    assert len(settled.phases) == PHASE_LIMIT + 1
    # the go-backs past the limit are one restart (consecutive rows logging again): the later writes win
    assert len(settled.restarts) == 1 and "more than 100 times" in settled.warnings[0].message
    assert len(settled.frame) == 2 * (PHASE_LIMIT + 1)


def test_phases_survive_the_cache_and_reach_the_json_and_the_diagnosis(tmp_path):
    run_dir = tmp_path / "runs" / "finetune"
    run_dir.mkdir(parents=True)
    text, _, _ = head_then_finetune()
    (run_dir / "training.log").write_text(text)
    cache = Cache(tmp_path / "cache")
    first = load(tmp_path / "runs", cache=cache)
    again = load(tmp_path / "runs", cache=cache)
    info = again.runs["finetune"]
    assert info.phases == first.runs["finetune"].phases and len(info.phases) == 2
    assert [p["first_step"] for p in info.to_dict()["phases"]] == [0, 5]
    diagnosis = diagnose(again)["finetune"]
    assert diagnosis.phase is not None and diagnosis.phase.index == 1
    note = "judged phase 2 of 2 (steps 5-24, 20 of 25 epochs): the last session"
    assert diagnosis.warnings[0] == note and diagnosis.to_dict()["phase"]["note"] == note
    assert diagnosis.curves["train_loss"].steps.tolist() == list(range(5, 25))


@pytest.mark.parametrize("last", [3, 5])
def test_a_short_last_session_is_judged_with_the_session_it_went_on_from(tmp_path, last):
    # a last session too short for any verdict (under 8 epochs) that went on from the loss the one before reached
    # (a fine-tune after the head's training): the two are one training, judged whole
    text, _, _ = head_then_finetune(head=12, finetune=last)
    (tmp_path / "training.log").write_text(text)
    diagnosis = diagnose(load(tmp_path, cache=False))
    (d,) = diagnosis.values()
    assert d.phase is None and d.verdict.label != "insufficient_data"
    assert d.curves["train_loss"].steps.tolist() == list(range(12 + last))


@pytest.mark.parametrize("last", [3, 5])
def test_a_short_last_session_that_started_afresh_is_not_judged_the_longest_training_is(tmp_path, last):
    # a last session too short for any verdict whose loss is back where the log began (a new training): the
    # longest training is judged
    head_loss = [1.5 - 0.1 * e for e in range(12)]
    rows = [keras_row(e, v) for e, v in enumerate(head_loss)] + [keras_row(e, 1.5 - 0.01 * e) for e in range(last)]
    (tmp_path / "training.log").write_text(KERAS_HEADER + "\n" + "\n".join(rows) + "\n")
    (d,) = diagnose(load(tmp_path, cache=False)).values()
    assert d.phase.index == 0 and d.verdict.label != "insufficient_data"
    assert d.phase.note == (f"judged phase 1 of 2 (steps 0-11, 12 of {12 + last} epochs): the longest session "
                            f"(the last has only {last} logged epochs)")


def test_one_epoch_fits_called_again_and_again_are_one_training_judged_whole():
    """The real fixture of six fit(epochs=1) calls: every session one epoch, each going on from the loss the one
    before reached: judged as the one training they are, all six epochs (not the one epoch of a session)."""
    (d,) = diagnose(load(ONE_EPOCH_FITS, cache=False)).values()
    assert d.phase is None
    assert d.curves["train_loss"].values.tolist() == pytest.approx(ONE_EPOCH_LOSS, abs=1e-12)
    assert "only 6 finite point(s) of loss" in d.verdict.reasons[0]  # (six: still too few for a verdict)


@pytest.mark.skipif(not REAL_APPEND.is_dir(), reason="the real Keras CSVLogger(append=True) fixture is not there")
def test_real_keras_csvlogger_append_file():
    logs = load(REAL_APPEND, cache=False)
    for info in logs.runs.values():
        if info.format == "keras_csv":
            assert len(info.phases) >= 2 and not info.restarts
            assert all(b.first_step == a.last_step + 1 for a, b in zip(info.phases, info.phases[1:], strict=False))


def test_generic_csv_session_then_clock(tmp_path):
    # a generic CSV with a cumulative clock, appended twice: the clock starts over with the session
    rows = [f"{s},{1 - s / 100},{10.0 * (s + 1)}" for s in range(4)] + [f"{s},{0.5 - s / 100},{7.0 * (s + 1)}"
                                                                         for s in range(4)]
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,time\n" + "\n".join(rows) + "\n")
    (run,) = GenericCSVReader().read([path])
    assert [(p.first_step, p.last_step) for p in run.phases] == [(0, 3), (4, 7)]
    per_step = curve(run.scalars, "time/per_step")
    assert per_step.to_dict() == {1: 10.0, 2: 10.0, 3: 10.0, 5: 7.0, 6: 7.0, 7: 7.0}
    loss = run.scalars[run.scalars["tag"] == "loss"].set_index("step")["wall_time"]
    assert loss[0] == 10.0 and loss[3] == 40.0 and loss[4] == 47.0 and loss[7] == 68.0  # continued across sessions
    assert "time" not in set(run.scalars["tag"])
    assert any(n.startswith("'time' only grows: seconds since the start (8 value(s))")
               and n.endswith("; 2 first row(s) at step 0 have nothing to divide by and are not kept")
               for n in run.notes)
    assert not math.isnan(loss[0])


def test_lightning_reader_two_phases_with_lr_monitor_rows(tmp_path):
    folder = tmp_path / "version_0"
    folder.mkdir()
    body = "epoch,lr-Adam,step,train_loss\n,0.1,0,\n0,,0,1.0\n0,,1,0.9\n,0.1,0,\n0,,0,0.8\n0,,1,0.7\n"
    (folder / "metrics.csv").write_text(body)
    (run,) = LightningCSVReader().read([folder / "metrics.csv"])
    assert curve(run.scalars, "train_loss").to_dict() == {0: 1.0, 1: 0.9, 2: 0.8, 3: 0.7}
    assert curve(run.scalars, "lr-Adam").to_dict() == {0: 0.1, 2: 0.1}
    assert [(p.first_step, p.last_step) for p in run.phases] == [(0, 1), (2, 3)]


def test_keras_split_folders_of_two_fits_are_one_run_with_two_sessions():
    from tests.conftest import real_log

    logs = load(real_log("tfevents_keras_split/Nivesara__project_fashion_mnist/logs/cnn_1layer"), cache=False)
    (info,) = logs.runs.values()
    assert [(p.first_step, p.last_step, p.offset) for p in info.phases] == [(0, 9, 0), (10, 19, 10)]
    frame = logs.scalars
    for tag in ("train/epoch_loss", "validation/epoch_loss"):
        assert curve(frame, tag).index.tolist() == list(range(20))
    (d,) = diagnose(logs).values()
    assert d.phase.note == "judged phase 2 of 2 (steps 10-19, 10 of 20 steps): the last session"


#: a real Keras CSVLogger(append=True) file written by 6 model.fit(..., epochs=1) calls in a row: every row epoch 0
ONE_EPOCH_FITS = Path(__file__).resolve().parents[1] / "fixtures" / "keras_csv" / "one_epoch_fits"
ONE_EPOCH_LOSS = [0.6402404308319092, 0.36832889914512634, 0.25505104660987854, 0.19785481691360474,
                  0.1638847291469574, 0.1429627537727356]


def test_one_epoch_fits_appended_are_one_session_each():
    """Each fit(epochs=1) logs epoch 0 again: a new session (as epochs going back to 0 are), not a rewrite that
    kept the last row only (before: 1 point, 'logged twice at one epoch … the later write was kept')."""
    name, info, frame = only_run(load(ONE_EPOCH_FITS, cache=False))
    assert info.format == "keras_csv" and not info.restarts and not info.warnings
    loss = curve(frame, "loss")
    assert loss.to_dict() == dict(enumerate(ONE_EPOCH_LOSS))
    assert curve(frame, "val_loss").to_dict() == {0: 0.46545884013175964, 1: 0.29630258679389954,
                                                  2: 0.22305136919021606, 3: 0.17970681190490723,
                                                  4: 0.15513136982917786, 5: 0.13705891370773315}
    assert curve(frame, "categorical_accuracy")[5] == 0.9583333134651184
    assert [(p.index, p.first_step, p.last_step, p.offset, p.unit) for p in info.phases] == [
        (i, i, i, i, "epoch") for i in range(6)]
    assert info.phases[1].detail == ("epoch 0 logged again: a new session appended to the log; its epochs shifted by "
                                     "+1 to follow the previous session")
    assert epoch_at(frame, "loss", 5) == 5.0  # one row per epoch: the epoch column moves with the step
    assert not any("logged twice" in n for n in info.notes)


def test_a_repeated_epoch_is_the_same_kind_as_a_go_back(tmp_path):
    # the same epoch again above the session's first is a resume (a restart), as a go-back to a later epoch is
    rows = [keras_row(0, 1.0), keras_row(1, 0.9), keras_row(2, 0.8), keras_row(2, 0.7), keras_row(3, 0.6)]
    run = read_keras(tmp_path, KERAS_HEADER + "\n" + "\n".join(rows) + "\n")
    assert curve(run.scalars, "loss").to_dict() == {0: 1.0, 1: 0.9, 2: 0.7, 3: 0.6} and not run.phases
    (restart,) = run.restarts
    assert restart.step == 2 and restart.detail.startswith("epochs 2–2 were logged again; 4 earlier point(s)")
    # a one-epoch session logged again with the same values is a copy, not a session
    run = read_keras(tmp_path, KERAS_HEADER + "\n" + "\n".join([keras_row(0, 1.0)] * 2) + "\n")
    assert curve(run.scalars, "loss").to_dict() == {0: 1.0} and not run.phases and not run.restarts
    # one-epoch fits after a longer first session: each a session of its own
    rows = [keras_row(e, 1.0 - e / 10) for e in range(3)] + [keras_row(0, 0.5), keras_row(0, 0.4)]
    run = read_keras(tmp_path, KERAS_HEADER + "\n" + "\n".join(rows) + "\n")
    assert curve(run.scalars, "loss").to_dict() == {0: 1.0, 1: 0.9, 2: 0.8, 3: 0.5, 4: 0.4}
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(0, 2, 0), (3, 3, 3), (4, 4, 4)]


def test_phase_rule_on_whole_rows():
    # a step at its tag's highest that is also its first: a rewrite in a step log, a session in a log of whole rows
    rows, codes, steps, values = np.arange(3), np.zeros(3, int), np.zeros(3, int), np.array([3.0, 2.0, 1.0])
    assert find_phase_starts(rows, codes, steps, values) == ([], False)
    starts, limited = find_phase_starts(rows, codes, steps, values, whole_rows=True)
    assert [(s.row, s.high, s.step) for s in starts] == [(1, 0, 0), (2, 0, 0)] and not limited
    # above the first step it stays a rewrite (a resume): no session
    assert find_phase_starts(np.arange(3), np.zeros(3, int), np.array([0, 1, 1]), values, whole_rows=True) == (
        [], False)
