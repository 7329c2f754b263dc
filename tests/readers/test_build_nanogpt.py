"""build-nanogpt ("Let's reproduce GPT-2"): its log/log.txt and its console, written with the training loop's own
print and write statements (no file of the format is in the real-log corpus)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanalyze import load
from tanalyze.readers import get_reader
from tanalyze.readers.text import _parts
from tanalyze.readers.text.build_nanogpt import BuildNanoGPTParser, detect_build_nanogpt
from tanalyze.readers.text.console import detect_console_format
from tests.readers.text_helpers import check, notes_text, read_both_ways, write


def _loop(max_steps: int, first: int = 0) -> tuple[str, str]:
    """The console and log.txt of build-nanogpt's training loop (evaluations every 250 steps and at the last),
    made with its print and write statements."""
    console, log = [], []
    for step in range(first, max_steps):
        last_step = step == max_steps - 1
        if step % 250 == 0 or last_step:
            val_loss = 4 + 7 * math.exp(-step / 300)
            console.append(f"validation loss: {val_loss:.4f}\n")
            log.append(f"{step} val {val_loss:.4f}\n")
        if (step % 250 == 0 or last_step) and step > 0:
            num_correct_norm, num_total = 2400 + step // 10, 10042
            acc_norm = num_correct_norm / num_total
            console.append(f"HellaSwag accuracy: {num_correct_norm}/{num_total}={acc_norm:.4f}\n")
            log.append(f"{step} hella {acc_norm:.4f}\n")
        loss = 3 + 8 * math.exp(-step / 200)
        lr, norm, dt = 6e-4 * min(1.0, (step + 1) / 100), 0.3 + 1 / (step + 1), 0.33012 + step % 7 / 1000
        console.append(f"step {step:5d} | loss: {loss:.6f} | lr {lr:.4e} | norm: {norm:.4f} | dt: {dt * 1000:.2f}ms | "
                       f"tok/sec: {524288 / dt:.2f}\n")
        log.append(f"{step} train {loss:.6f}\n")
    return "".join(console), "".join(log)


CONSOLE, LOG = _loop(1000)


def _train(step: int) -> float:
    return float(f"{3 + 8 * math.exp(-step / 200):.6f}")


def _val(step: int) -> float:
    return float(f"{4 + 7 * math.exp(-step / 300):.4f}")


def test_log_txt_records_at_the_loop_index(tmp_path):
    path = write(tmp_path / "gpt2" / "log" / "log.txt", LOG)
    assert detect_console_format(path).name == "build_nanogpt"
    (run,) = get_reader("build_nanogpt").read([path])
    frame = run.scalars
    check(frame, "train/loss", {0: 11.0, 1: _train(1), 999: _train(999)}, count=1000)
    check(frame, "val/loss", {0: 11.0, 250: _val(250), 999: _val(999)}, count=5)
    check(frame, "hellaswag/acc", {250: round(2425 / 10042, 4), 999: 0.2489}, count=4)
    assert set(frame["tag"]) == {"train/loss", "val/loss", "hellaswag/acc"}
    assert "log.txt records '{step} {kind} {value}': step = the loop index" in notes_text(run)
    assert run.warnings == [] and run.restarts == []


def test_console_evaluations_at_the_step_of_their_loop(tmp_path):
    text = "using device: cuda\ntotal desired batch size: 524288\n=> calculated gradient accumulation steps: 32\n"
    path = write(tmp_path / "train.out", text + CONSOLE)
    assert detect_console_format(path).name == "build_nanogpt"
    (run,) = get_reader("build_nanogpt").read([path])
    frame = run.scalars
    check(frame, "train/loss", {0: 11.0, 999: _train(999)}, count=1000)
    check(frame, "val/loss", {0: 11.0, 250: _val(250), 500: _val(500), 999: _val(999)}, count=5)  # as in log.txt
    check(frame, "hellaswag/acc", {250: round(2425 / 10042, 4), 999: 0.2489}, count=4)
    check(frame, "lr", {0: 6e-06, 99: 6e-4}, count=1000)
    check(frame, "grad_norm", {0: 1.3, 999: 0.301}, count=1000)
    check(frame, "time_ms", {0: 330.12, 6: 336.12}, count=1000)
    check(frame, "tok_per_s", {0: float(f"{524288 / 0.33012:.2f}")}, count=1000)
    assert "at the step after the last step line" in notes_text(run)
    assert run.warnings == []


def test_a_fork_with_other_kinds_and_fields_keeps_their_names(tmp_path):
    log = write(tmp_path / "a" / "log.txt", "0 val 10.9512\n0 hella 0.2470\n0 train 10.954321\n0 lr 0.0006\n"
                                            "1 train 10.012345\n1 lr 0.0006\n")
    (run,) = get_reader("build_nanogpt").read([log])
    check(run.scalars, "lr", {0: 0.0006, 1: 0.0006}, count=2)
    assert "kept under their own names: lr" in notes_text(run)
    console = write(tmp_path / "b" / "out.log", "Hellaswag accuracy: 2500/10042 = 0.2489\n"
                                                "step    0 | loss: 10.9 | lr: 6e-05 | norm: 2.1 | dt: 0.33s | tok/sec: 15000\n")
    (run,) = get_reader("build_nanogpt").read([console])
    check(run.scalars, "hellaswag/acc", {0: 0.2489})
    check(run.scalars, "dt_s", {0: 0.33})
    assert "kept under their own names: dt_s" in notes_text(run)


def test_what_is_not_build_nanogpt_is_left_to_other_readers(tmp_path):
    assert not detect_build_nanogpt("step 5 | loss: 2.3 | acc: 0.5\n")  # a custom loop: the generic reader's
    assert not detect_build_nanogpt("3 apples 5\nhello\n")
    assert not detect_build_nanogpt("10 epochs 5\n20 epochs 6\n30 epochs 7\n")  # records, but of no kind it writes
    assert not detect_build_nanogpt("step 0, loss: 10.877635955810547\nstep 1, loss: 10.02\n")  # its first lesson
    lines = "".join(f"step {n} | loss: {3 - n / 10} | acc: {n / 10}\n" for n in range(8))
    assert detect_console_format(write(tmp_path / "train.log", lines)).name == "text"


def test_loaded_from_a_folder_with_a_cut_last_line_and_junk(tmp_path):
    write(tmp_path / "run" / "log" / "log.txt", _loop(50)[1] + "50 train oops\n" + "garbage\n" + "51 tra")
    runs = load(tmp_path)
    (run,) = runs.runs.values()
    assert run.format == "build_nanogpt"
    assert runs.scalars["step"].max() == 49 and len(runs.scalars) == 50 + 2 + 1  # train, val at 0 and 49, hella
    messages = " ".join(w.message for w in run.warnings)
    assert "1 line(s) look like" in messages and "without a line break" in messages


def _irregular(seed: int) -> str:
    """log.txt and console lines mixed with NaN, junk, steps that go back and odd records."""
    import random

    rng = random.Random(seed)
    console, log = _loop(600)
    lines = (console + log).splitlines(keepends=True)
    rng.shuffle(lines)
    lines[:0] = _loop(300)[1].splitlines(keepends=True)  # log.txt first, then the rest
    for at in rng.sample(range(len(lines)), 12):
        lines[at] = rng.choice(["5 train nan\n", "7 val inf\n", "noise\n", "8 train 1,5\n", "9 lr 1e-3\n",
                                "step 3 | loss: nan | lr 1e-4 | norm: 1.0 | dt: 1.00ms | tok/sec: 1.00\n",
                                "step 99999999999999999999 train 1.0\n", "validation loss: -\n", "µ 1 train 2\n",
                                "٣ train 2.5\n", "10 train 2.5.1\n"])
    return "".join(lines)


@pytest.mark.parametrize("text", [LOG, CONSOLE, _irregular(1), _irregular(2)], ids=["log", "console", "mixed1", "mixed2"])
def test_read_at_once_equals_every_line_read_on_its_own(text, tmp_path, monkeypatch):
    path = write(tmp_path / "log.txt", text)
    at_once = read_both_ways("build_nanogpt", BuildNanoGPTParser, path, monkeypatch, (_parts.CHUNK_CHARS, 1 << 12))
    assert len(at_once.scalars) > 500


@pytest.mark.parametrize(("text", "handler"), [(LOG, "_on_record"), (CONSOLE, "_on_step")], ids=["log", "console"])
def test_a_clean_log_is_read_at_once(text, handler, tmp_path, monkeypatch):
    def one_by_one(self, m, chunk):
        raise AssertionError(f"read on its own: {m.group(0)!r}")

    monkeypatch.setattr(BuildNanoGPTParser, handler, one_by_one)
    (run,) = get_reader("build_nanogpt").read([write(tmp_path / "log.txt", text)])
    assert (run.scalars["tag"] == "train/loss").sum() == 1000


_KINDS = ("train", "val", "hella", "lr", "x_1")
_VALUES = ("3.5", "10.954321", "nan", "-inf", "1,234", "1e-3", "x", "", "7", "+.5", "1.2.3")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.tuples(st.integers(0, 3000), st.sampled_from(_KINDS), st.sampled_from(_VALUES)),
                          st.sampled_from(("noise", "", "12", "validation loss: 3.1", "step 4 | loss: 2.0"))),
                min_size=1, max_size=40), st.booleans())
def test_records_read_at_once_equal_line_by_line(tmp_path, monkeypatch, lines, cut):
    """Random log.txt texts (steps up and down, other kinds, values that are no numbers, junk)."""
    text = "".join((line if isinstance(line, str) else f"{line[0]} {line[1]} {line[2]}") + "\n" for line in lines)
    path = write(tmp_path / "log.txt", text[:-1] if cut else text)
    read_both_ways("build_nanogpt", BuildNanoGPTParser, path, monkeypatch, (256,))


def test_the_console_and_log_txt_of_one_job_are_one_run(tmp_path):
    """The bundled run: its console (``train.out``) is the run, ``log/log.txt`` a twin that agrees with it."""
    import shutil

    from tests.conftest import SAMPLE_RUNS

    job = tmp_path / "gpt2"
    shutil.copytree(SAMPLE_RUNS / "normal_build_nanogpt", job)
    logs = load(tmp_path, cache=False)
    assert list(logs.runs) == ["gpt2"]
    info = logs.runs["gpt2"]
    assert [(p.kind, Path(p.files[0]).name) for p in info.sources] == [("main", "train.out"), ("twin", "log.txt")]
    assert any("twin: log.txt (build_nanogpt) in log" in n and "agrees on all 313 common points" in n for n in info.notes)
    assert set(logs.scalars["tag"]) == {"train/loss", "val/loss", "lr", "grad_norm", "time_ms", "tok_per_s"}

    # the console cut short (a job whose stdout was lost): the records, which go on, are read
    console = (job / "train.out").read_text()
    (job / "train.out").write_text(console[: console.index("step   150 |")])
    info = load(tmp_path, cache=False).runs["gpt2"]
    assert any(n.startswith("read from log.txt (build_nanogpt) rather than train.out (build_nanogpt): it goes on to "
                            "step 299, the other stops at step 150") for n in info.notes), info.notes

    # a fork's logs/ folder, the console whole again
    (job / "train.out").write_text(console)
    (job / "log").rename(job / "logs")
    info = load(tmp_path, cache=False).runs["gpt2"]
    assert any("twin: log.txt (build_nanogpt) in logs" in n and "agrees" in n for n in info.notes), info.notes

    # two consoles above logs/: which one is the job's is not known, so nothing is joined
    (job / "other.out").write_text(console)
    assert sorted(load(tmp_path, cache=False).runs) == ["gpt2/logs", "gpt2/other.out", "gpt2/train.out"]
