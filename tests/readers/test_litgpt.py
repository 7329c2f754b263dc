"""LitGPT's training console: logs made from LitGPT's format strings (a real training needs a downloaded checkpoint and a
GPU; ``tests/fixtures/litgpt``), lit-gpt's older lines from a real run, and lines pasted from real runs in issues."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from tanalyze.readers import HEAD_BYTES
from tanalyze.readers.text import _parts
from tanalyze.readers.text.litgpt import LitGPTParser, LitGPTReader
from tanalyze.roles import resolve_roles
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, read_on, write

FIXTURES = REPO / "tests" / "fixtures" / "litgpt"
PRETRAIN = FIXTURES / "pretrain" / "console.log"
FINETUNE = FIXTURES / "finetune_lora" / "console.log"
LEGACY = FIXTURES / "lit_gpt_finetune_lora" / "console.log"

#: lines pasted from real runs: issue #1607 (a pretraining's last lines), #1110 (a finetuning's, the epoch told one line
#: late), #1224 (a finetuning inside its first optimizer step)
ISSUE_1607 = ("Epoch 34 | iter 3050700 step 610140 | loss train: 2.846, val: 2.861 | iter time: 112.20 ms (step) "
              "remaining time: 0:01:54")
ISSUE_1110 = "Epoch 4 | iter 961 step 961 | loss train: 1.062, val: 1.057 | iter time: 529.46 ms (step)"
ISSUE_1224 = "Epoch 1 | iter 46 step 1 | loss train: 3.724, val: n/a | iter time: 45.73 ms"


def read(path):
    (run,) = LitGPTReader().read([path])
    return run


def train_line(epoch: int, it: int, step: int, loss: str, val: str, ms: str, mark: bool, remaining: str = "") -> str:
    """A training line as LitGPT's format string prints it."""
    return (f"Epoch {epoch} | iter {it} step {step} | loss train: {loss}, val: {val} | iter time: {ms} ms"
            f"{' (step)' if mark else ''}{f' remaining time: {remaining}' if remaining else ''}")


def test_a_pretraining_every_line_an_optimizer_step_its_validations_at_the_step_of_their_iter():
    reader = LitGPTReader()
    assert reader.sniff(PRETRAIN, PRETRAIN.read_bytes()[:HEAD_BYTES])
    run = read(PRETRAIN)
    frame = run.scalars
    check(frame, "train_loss", {1: 10.772, 25: 7.838, 26: 7.754, 60: 6.764}, count=60)
    check(frame, "iter_time_ms", {1: 212.41, 60: 189.41}, count=60)
    # "iter 100: val loss 7.9110" comes after "iter 100 step 25": at step 25, as the training values of that line
    check(frame, "val_loss", {25: 7.911, 50: 6.8243}, count=2)
    check(frame, "val_time_ms", {25: 6203.31, 50: 6311.34}, count=2)
    assert set(frame["tag"]) == {"train_loss", "iter_time_ms", "val_loss", "val_time_ms"}  # (no remaining time)
    assert frame["wall_time"].isna().all() and (frame["epoch"] == 1.0).all()
    notes = notes_text(run)
    assert "step = the optimizer step" in notes and "running mean of the loss" in notes
    assert "2 validation(s) as val_loss and val_time_ms" in notes and "not kept" not in notes
    assert not run.warnings and not run.restarts
    roles = resolve_roles(frame).assigned  # (what the run is judged by)
    assert (roles["train_loss"].tag, roles["val_loss"].tag, roles["step_time"].tag) == (
        "train_loss", "val_loss", "iter_time_ms")


def test_a_finetuning_keeps_the_lines_that_end_an_optimizer_step():
    run = read(FINETUNE)
    frame = run.scalars
    # "iter 4 step 1 … (step)" is kept; "iter 5 step 1" (inside step 2, its running mean over iters 2 to 5) is not
    check(frame, "train_loss", {1: 1.517, 5: 1.46, 6: 1.406, 12: 1.334}, count=12)
    check(frame, "iter_time_ms", {1: 173.67, 5: 187.23, 12: 191.77}, count=12)
    check(frame, "val_loss", {5: 1.4137, 10: 1.3058}, count=2)  # (at iters 20 and 40, after the sample text)
    check(frame, "val_time_ms", {5: 9835.22, 10: 9930.11}, count=2)
    notes = notes_text(run)
    assert "36 line(s) inside an optimizer step's gradient accumulation (no '(step)') not kept" in notes
    assert "final evaluation (the whole validation set, after training; not a curve point): val loss: 1.291 | " \
           "val ppl: 3.636" in notes
    assert "validation loss(es) shown only" not in notes  # ('val: 1.414' repeats the validation line above it)
    assert not run.warnings and not run.restarts


def test_lit_gpts_older_lines_from_a_real_run():
    reader = LitGPTReader()
    assert reader.sniff(LEGACY, LEGACY.read_bytes()[:HEAD_BYTES])
    run = read(LEGACY)
    frame = run.scalars
    check(frame, "train_loss", {1: 3.332, 2: 3.8844, 10: 3.2537}, count=10)  # (the '(optimizer.step)' lines)
    check(frame, "iter_time_ms", {1: 765.52, 10: 706.44}, count=10)
    assert "epoch" not in frame.columns and "val_loss" not in set(frame["tag"])
    notes = notes_text(run)
    assert "lit-gpt console ('iter N step M: loss …')" in notes and "last micro-batch alone" in notes
    assert "11 line(s) inside an optimizer step's gradient accumulation" in notes
    assert "LitGPT console:" not in notes


def test_lines_pasted_from_real_runs(tmp_path):
    tail = "Training time: 583.36s\nMemory used: 14.49 GB\n"
    run = read(write(tmp_path / "a.log", "\n".join([ISSUE_1224, ISSUE_1110, ISSUE_1607]) + "\n" + tail))
    frame = run.scalars
    check(frame, "train_loss", {961: 1.062, 610140: 2.846}, count=2)
    check(frame, "iter_time_ms", {961: 529.46, 610140: 112.2}, count=2)
    # a 'val:' with no validation line before it (the pastes begin after one): at the step before the line
    assert curve(frame, "val_loss") == {960: 1.057, 610139: 2.861}
    assert dict(zip(frame["step"], frame["epoch"], strict=True)) == {960: 4.0, 961: 4.0, 610139: 34.0, 610140: 34.0}
    assert "1 line(s) inside an optimizer step's gradient accumulation" in notes_text(run)
    assert "2 validation loss(es) shown only in the training lines' 'val:'" in notes_text(run)


def test_a_val_that_no_validation_line_gave_is_a_validation_loss_at_the_step_before(tmp_path):
    lines = [
        # eval.initial_validation: a validation before training, shown only in 'val:'
        train_line(1, 4, 1, "10.772", "10.981", "212.41", True, "2:37:17"),
        train_line(1, 8, 2, "10.595", "10.981", "194.76", True, "1:39:52"),
        "Validating ...",
        "iter 8: val loss 10.4213, val time: 6203.31 ms",
        train_line(1, 12, 3, "10.426", "10.421", "195.84", True, "1:20:04"),
        # a log that kept only the training lines: a validation after step 3, its line not in the log
        train_line(1, 16, 4, "10.237", "10.111", "196.02", True, "1:10:30"),
    ]
    run = read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    check(run.scalars, "val_loss", {0: 10.981, 2: 10.4213, 3: 10.111}, count=3)
    check(run.scalars, "val_time_ms", {2: 6203.31}, count=1)
    assert "2 validation loss(es) shown only in the training lines' 'val:'" in notes_text(run)


def test_a_validation_whose_training_line_was_not_printed_is_placed_by_the_iters_per_step(tmp_path):
    # log_interval 2 steps, eval.interval 5, 4 iters a step: the validation at iter 20 (step 5) follows step 4's line
    lines = [train_line(1, 8 * k, 2 * k, f"{2 - k / 10:.3f}", "n/a", "150.00", True) for k in (1, 2)]
    lines += ["Validating ...", "iter 20: val loss 1.8000, val time: 100.00 ms"]
    lines += [train_line(1, 8 * k, 2 * k, f"{2 - k / 10:.3f}", "1.800", "150.00", True) for k in (3, 4)]
    run = read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    check(run.scalars, "val_loss", {5: 1.8}, count=1)
    check(run.scalars, "train_loss", {2: 1.9, 4: 1.8, 6: 1.7, 8: 1.6}, count=4)
    assert "whose optimizer step no line before them tells" not in notes_text(run)
    # with no line that ended an optimizer step before it: at the step of the last training line, said so
    lines = [train_line(1, 1, 0, "2.000", "n/a", "150.00", False), "iter 4: val loss 1.9000, val time: 100.00 ms",
             train_line(1, 5, 1, "1.900", "1.900", "150.00", False)]
    run = read(write(tmp_path / "early.log", "\n".join(lines) + "\n"))
    check(run.scalars, "val_loss", {0: 1.9}, count=1)
    assert "1 validation(s) whose optimizer step no line before them tells" in notes_text(run)


def test_iters_per_step_changed_by_a_resume_on_more_devices(tmp_path, monkeypatch):
    """The iters per step come from the last two lines that ended an optimizer step (not the first line's iter over
    its step): a run resumed from its last checkpoint on two devices (2 iters a step, not 4), log_interval 2 steps,
    its validation at iter 34 (step 11) after the line of iter 32 (step 10). Read at once in chunks of any size."""
    lines = [train_line(1, 8, 2, "2.000", "n/a", "150.00", True), train_line(1, 16, 4, "1.900", "n/a", "150.00", True),
             "Validating ...", "iter 20: val loss 1.8500, val time: 100.00 ms",
             train_line(1, 24, 6, "1.800", "1.850", "150.00", True),
             "Resuming training from 'out/step-00000006/lit_model.pth'",
             train_line(1, 28, 8, "1.700", "1.850", "150.00", True), train_line(1, 32, 10, "1.600", "1.850", "150.00", True),
             "Validating ...", "iter 34: val loss 1.5500, val time: 100.00 ms",
             train_line(1, 36, 12, "1.500", "1.550", "150.00", True)]
    path = write(tmp_path / "train.log", "\n".join(lines) + "\n")
    cut = LitGPTParser._read_at_once
    used = []
    monkeypatch.setattr(LitGPTParser, "_read_at_once", lambda self, chunk: used.append(cut(self, chunk)) or used[-1])
    for size in (None, *range(128, 1024, 32)):
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        run = read(path)
        check(run.scalars, "val_loss", {5: 1.85, 11: 1.55}, count=2)
        assert not run.restarts and "whose optimizer step no line before them tells" not in notes_text(run)
    assert all(used)  # (every chunk read at once)


def test_lit_gpts_lines_of_march_2024_and_its_pretraining_lines(tmp_path):
    lines = ["iter 1760 | step 220: loss 1.5947, iter time: 263.85 ms (optimizer.step)",
             "iter 1770 | step 221: loss 1.5191, iter time: 89.96 ms",
             "iter 1800 | step 225: loss 1.8572, iter time: 257.35 ms (optimizer.step)",
             "iter 1800: val loss 1.7258, val time: 3778.02 ms",
             "iter 1810 step 226: loss 0.2745, iter time: 131.68ms (optimizer.step) remaining time: 0.12 days",
             "step 1810: val loss 1.6011, val time: 3778.02ms"]
    run = read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    check(run.scalars, "train_loss", {220: 1.5947, 225: 1.8572, 226: 0.2745}, count=3)
    check(run.scalars, "val_loss", {225: 1.7258, 226: 1.6011}, count=2)
    check(run.scalars, "val_time_ms", {225: 3778.02}, count=2)


def test_a_resumed_log_records_the_restart_and_keeps_the_later_values(tmp_path):
    first = [train_line(1, 4 * s, s, f"{3 - s / 10:.3f}", "n/a", "190.00", True, "0:50:00") for s in range(1, 7)]
    resumed = ["Resuming training from 'out/pretrain/step-00000004/lit_model.pth'", "Verifying settings ..."]
    resumed += [train_line(1, 4 * s, s, f"{4 - s / 10:.3f}", "n/a", "191.00", True, "0:49:00") for s in range(5, 9)]
    run = read(write(tmp_path / "train.log", "\n".join(first + resumed) + "\n"))
    (restart,) = run.restarts
    assert restart.step == 5 and "step 5 logged again after step 6 (line 9)" in restart.detail
    check(run.scalars, "train_loss", {4: 2.6, 5: 3.5, 6: 3.4, 8: 3.2}, count=8)  # (the later values kept)
    assert "point(s) logged after a restart" in notes_text(run)


def test_a_line_that_cannot_be_read_is_named_and_a_step_too_large_too(tmp_path):
    lines = PRETRAIN.read_text().splitlines()
    cut = "Epoch 1 | iter 244 step 61 | loss train: 6.7"  # (cut short)
    huge = train_line(1, 4 * 2**53, 2**53 + 1, "6.001", "6.824", "190.00", True)
    typo = "iter 248: val loss 6.7011, val time: 6311.34 mss"
    run = read(write(tmp_path / "train.log", "\n".join([*lines, cut, huge, typo]) + "\n"))
    (warning,) = run.warnings
    assert "3 line(s) look like LitGPT metrics but could not be read, e.g. line 67" in warning.message
    assert "line 68" in warning.message and "line 69" in warning.message and warning.count == 3
    check(run.scalars, "train_loss", {60: 6.764}, count=60)  # (the rest read as before)
    check(run.scalars, "val_loss", {50: 6.8243}, count=2)


def test_non_ascii_junk_and_nan(tmp_path):
    text = "\n".join([
        "Recommend a movie for me to watch — « Amélie » ✓",
        "\x00\x01 garbage \ufffd",
        train_line(1, 4, 1, "nan", "n/a", "173.67", True),
        "iter time is a phrase, not a line",
        train_line(1, 8, 2, "1.581", "n/a", "176.19", True),
        "Épоch 1 | iter 12 step 3 | loss train: 1.503, val: n/a | iter time: 195.62 ms (step)",  # (not 'Epoch')
        "Epoch ١ | iter ١٦ step ٤ | loss train: 1.435, val: n/a | iter time: 177.93 ms (step)",  # (other digits)
    ]) + "\n"
    run = read(write(tmp_path / "train.log", text))
    got = curve(run.scalars, "train_loss")
    assert set(got) == {1, 2} and math.isnan(got[1]) and got[2] == 1.581
    (warning,) = run.warnings  # (the line of other digits: named, not read)
    assert "1 line(s) look like LitGPT metrics but could not be read, e.g. line 7" in warning.message


def test_two_training_lines_are_needed_to_claim_a_log(tmp_path):
    reader = LitGPTReader()
    one = write(tmp_path / "one.log", f"Seed set to 42\n{ISSUE_1110}\nTraining time: 583.36s\n")
    two = write(tmp_path / "two.log", f"{ISSUE_1224}\n{ISSUE_1110}\n")
    assert not reader.sniff(one, one.read_bytes()) and reader.sniff(two, two.read_bytes())
    others = ("iter 201: loss 6.5809, time 309.52ms, mfu 108.40%\niter 202: loss 6.5801, time 309.50ms, mfu 108.40%\n",
              "iter 20: val loss 1.4137, val time: 9835.22 ms\niter 40: val loss 1.3058, val time: 9930.11 ms\n",
              "Epoch 1 | loss train: 1.2 | val: 1.3\nEpoch 2 | loss train: 1.1 | val: 1.2\n",
              "Epoch 3 | iter 390 step 390 | loss train: 4.625, val_loss valid: 8.033 | iter time: 37.939 s (step)\n" * 2)
    for text in others:
        path = write(tmp_path / "other.log", text)
        assert not reader.sniff(path, path.read_bytes())


def _varied_log(seed: int, troubles: bool = True) -> str:
    """A LitGPT log with everything its reading must tell apart: sessions that go back (resumed, the iters per step
    changed: more devices), micro-batches between the lines that end an optimizer step, validations (their training
    line printed or not), a 'val:' no validation line gave, sample texts, the remaining time (days too); with
    ``troubles``, NaN losses, look-alike lines and a step too large."""
    rng = random.Random(seed)
    out = ["Verifying settings ...", "Measured TFLOPs: 6.09"]
    val = "n/a"
    it, step = 0, 0
    ends = [(0, 0)]  # (the iter and step of each optimizer step's end: the checkpoints a session resumes from)
    for session in range(3):
        per_step = (4, 2, 1)[(seed + session) % 3]
        if session:
            it, step = ends[max(0, len(ends) - rng.randrange(2, 60))]
            out += ["Resuming training from 'out/step/lit_model.pth'", "Verifying settings ..."]
            val = f"{rng.random() + 1:.3f}" if rng.random() < 0.5 else "n/a"  # (eval.initial_validation)
        for _ in range(rng.randrange(300, 900)):
            it += 1
            mark = it % per_step == 0
            step += mark
            if mark:
                ends.append((it, step))
            loss = "nan" if troubles and rng.random() < 0.01 else f"{rng.random() * 3:.3f}"
            remaining = rng.choice(["", "", "0:01:54", "1 day, 2:03:04", "12 days, 0:00:01"])
            if rng.random() < (0.6 if mark and step % 7 == 0 else 0.9):  # (lines not printed: log_interval)
                out.append(train_line(1 + it // 500, it, step, loss, val, f"{100 + rng.random() * 99:.2f}", mark,
                                      remaining))
            if mark and step % 7 == 0:
                out += ["Validating ...", "Recommend a movie — « Amélie » ✓" if rng.random() < 0.3 else "Validating"]
                value = rng.random() + 1
                out.append(f"iter {it}: val loss {value:.4f}, val time: {rng.random() * 9000:.2f} ms")
                val = f"{value:.3f}"
            if rng.random() < 0.01:
                val = f"{rng.random() + 1:.3f}"  # (a validation whose line is not in the log)
            if troubles and rng.random() < 0.005:
                out.append(rng.choice([
                    f"Epoch 1 | iter {it} step {step} | loss train: 1.2",  # (cut)
                    train_line(1, it, 2**53 + 7, "1.000", val, "100.00", True),
                    f"iter {it}: val loss 1.0, val time: 12.00 mss",
                    f"iter {it} step {step}: loss 2.2000, iter time: 100.00ms (optimizer.step)"]))
    out.append("Final evaluation | val loss: 1.291 | val ppl: 3.636")
    return "\n".join(out) + "\n"


def _varied_lit_gpt_log(seed: int) -> str:
    """lit-gpt's lines of its versions (``iter I step S`` or ``iter I | step S``, ``Tms`` or ``T ms``, a remaining
    time or not), micro-batches between the lines that end an optimizer step, validations, a resumed session, a
    look-alike line now and then."""
    rng = random.Random(seed)
    out = ["Seed set to 1337", "Estimated TFLOPs: 4.49"]
    it = 0
    for session in range(2):
        if session:
            it = max(0, it - rng.randrange(2, 200))
        bar, blank = rng.choice(["", "| "]), rng.choice(["", " "])
        tail = rng.choice(["", " remaining time: 0.12 days", " remaining time: 12.34 hours.  or 44424.00 seconds"])
        for _ in range(rng.randrange(300, 700)):
            it += 1
            mark = it % 2 == 0
            loss = f"{rng.random() * 4:.4f}"
            out.append(f"iter {it} {bar}step {it // 2}: loss {loss}, iter time: {rng.random() * 900:.2f}{blank}ms"
                       f"{' (optimizer.step)' if mark else ''}{tail}")
            if mark and (it // 2) % 9 == 0:
                out.append(f"{rng.choice(['step', 'iter'])} {it}: val loss {rng.random() * 4:.4f}, val time: "
                           f"{rng.random() * 9000:.2f}{blank}ms")
            if rng.random() < 0.003:
                out.append(f"iter {it} step {it // 2}: loss 1.0")  # (cut)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(("seed", "troubles"), [(1, True), (2, True), (3, True), (4, False), (5, False), (6, None),
                                               (7, None)])
def test_lines_read_at_once_give_what_reading_every_line_on_its_own_gives(seed, troubles, tmp_path, monkeypatch):
    """The chunk's training lines cut out with numpy, its lines found by one pattern and read at once, and every line
    read on its own: the same rows exactly, notes, warnings and restarts, at any chunk size (troubles None: lit-gpt's
    lines)."""
    text = _varied_lit_gpt_log(seed) if troubles is None else _varied_log(seed, troubles)
    path = write(tmp_path / "train.log", text)
    used = {"cut": 0, "found": 0}
    cut, found = LitGPTParser._read_at_once, LitGPTParser._found_at_once

    def spy_cut(self, chunk):
        taken = cut(self, chunk)
        used["cut"] += taken
        return taken

    def spy_found(self, lines):
        taken = found(self, lines)
        used["found"] += taken is not None
        return taken

    monkeypatch.setattr(LitGPTParser, "_found_at_once", spy_found)
    for size in (None, 1024, 1 << 14):
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        monkeypatch.setattr(LitGPTParser, "_read_at_once", spy_cut)
        runs = [read(path)]
        monkeypatch.setattr(LitGPTParser, "_read_at_once", lambda self, chunk: False)
        runs.append(read(path))
        monkeypatch.setattr(LitGPTParser, "line_by_line", True)
        runs.append(read(path))
        monkeypatch.setattr(LitGPTParser, "line_by_line", False)
        for other in runs[1:]:
            pd.testing.assert_frame_equal(runs[0].scalars, other.scalars, check_exact=True)
            assert (runs[0].notes, runs[0].warnings, runs[0].restarts) == (other.notes, other.warnings, other.restarts)
    assert used["cut"] and used["found"]  # (both ways of reading at once were taken)
    run = runs[0]
    assert run.restarts and bool(run.warnings) == (troubles is not False) and len(curve(run.scalars, "val_loss")) > 10
    if troubles is not None:
        assert "validation loss(es) shown only in the training lines' 'val:'" in notes_text(run)


def test_a_log_read_on_from_where_a_read_stopped_equals_it_read_whole(tmp_path):
    data = _varied_log(4).encode()
    whole = tmp_path / "whole" / "train.log"
    write(whole, data)
    reader = LitGPTReader()
    expected = reader.read_part(whole)
    scratch = tmp_path / "train.log"
    for cuts in ([len(data) // 3], [len(data) // 5, len(data) // 2 + 7, 4 * len(data) // 5]):
        part = read_on(reader, scratch, data, cuts)
        assert part.end == expected.end
        assert part.columns.keys() == expected.columns.keys()
        for name in expected.columns:
            np.testing.assert_array_equal(part.columns[name], expected.columns[name], err_msg=name)
        (combined,) = reader.combine([scratch], [part])
        (fresh,) = reader.combine([whole], [expected])
        pd.testing.assert_frame_equal(combined.scalars.drop(columns="run"), fresh.scalars.drop(columns="run"))
        assert combined.notes == fresh.notes
