"""MaxText's training console: two real trainings of maxtext 0.2.5 on a CPU (``tests/fixtures/maxtext``: a plain one,
and one with the batch-size ramp-up, step diagnostics and the profiler's hidden steps), the lines of MaxText's own
guide to its logs (print era) and of a pull request's pasted run (absl era), with their values."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from tanalyze.readers.base import HEAD_BYTES
from tanalyze.readers.text import _parts
from tanalyze.readers.text.maxtext import MaxTextParser, MaxTextReader, detect_maxtext
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "maxtext"
CPU = FIXTURES / "cpu_train" / "train.log"
OPTIONS = FIXTURES / "cpu_train_options" / "train.log"
DOCS = FIXTURES / "docs_print" / "console.log"
ABSL = FIXTURES / "pr4847_absl" / "console.log"

ABSL_PREFIX = "I1207 09:32:48.{micro:06d} 140501780278144 metric_logger.py:265] "


def _read(path: Path):
    (run,) = MaxTextReader().read([path])
    return run


def _line(step: int, loss: float, seconds: float = 5.668, prefix: str = "") -> str:
    """A print-era training line, as MaxText formats it."""
    return (f"{prefix}completed step: {step}, seconds: {seconds:.3f}, TFLOP/s/device: {764.65 / seconds:.3f}, "
            f"Tokens/s/device: {49152 / seconds:.3f}, total_weights: 196608, loss: {loss:.3f}")


def test_a_real_training_on_a_cpu():
    reader = MaxTextReader()
    assert reader.sniff(CPU, CPU.read_bytes()[:HEAD_BYTES])
    run = _read(CPU)
    frame = run.scalars
    check(frame, "seconds", {0: 0.048, 1: 0.296, 29: 0.014}, count=30)
    check(frame, "TFLOP/s/device", {0: 0.004, 29: 0.013}, count=30)
    check(frame, "Tokens/s/device", {0: 5291.443, 1: 863.607, 29: 18417.266}, count=30)
    check(frame, "total_weights", {0: 256.0, 29: 256.0}, count=30)
    check(frame, "loss", {0: 6.077, 29: 5.945}, count=30)
    check(frame, "lm_loss", {29: 5.945}, count=30)
    check(frame, "perplexity", {0: 435.75, 29: 381.994}, count=30)
    # the summaries after train steps 0, 10 and 20 (not the running averages of each evaluation batch)
    check(frame, "eval/loss", {0: 6.077, 10: 6.006, 20: 5.958}, count=3)
    check(frame, "eval/perplexity", {10: 405.969}, count=3)
    check(frame, "eval/total_weights", {20: 512.0}, count=3)
    check(frame, "eval/avg_z_loss", {20: 0.0}, count=3)
    assert not any("running" in tag for tag in set(frame["tag"]))
    assert frame["wall_time"].isna().all()  # (absl's prefix has no year)
    text = notes_text(run)
    assert "3 evaluation(s) as eval/<name>" in text and "33 line(s) read behind absl's prefix" in text
    assert "step = the completed step (0-based)" in text
    assert not run.warnings and not run.restarts


def test_the_ramp_up_the_diagnostics_and_the_profilers_hidden_steps():
    run = _read(OPTIONS)
    frame = run.scalars
    check(frame, "loss", {0: 6.032, 7: 5.994, 8: 5.963, 11: 5.96}, count=12)
    check(frame, "total_weights", {0: 128.0, 7: 384.0, 8: 512.0}, count=12)
    # the ramp-up prints no throughput; the profiler's boundary steps print no seconds either
    check(frame, "seconds", {0: 5.577, 7: 0.158}, count=8)
    assert "TFLOP/s/device" not in set(frame["tag"]) and "Tokens/s/device" not in set(frame["tag"])
    check(frame, "raw_grad_norm", {0: 1.963007689, 8: 0.9668344855}, count=12)
    check(frame, "grad_norm", {7: 1.000000119}, count=12)
    check(frame, "param_norm", {11: 134.8535309}, count=12)
    check(frame, "moe_overflow", {11: 0.0}, count=12)
    assert "diag" not in set(frame["tag"]) and not run.warnings


def test_the_print_era_lines_of_maxtexts_guide():
    reader = MaxTextReader()
    assert reader.sniff(DOCS, DOCS.read_bytes()[:HEAD_BYTES])
    run = _read(DOCS)
    frame = run.scalars
    # step 0 took the compilation (44.9 s), step 1 looks quick: both kept as printed
    check(frame, "seconds", {0: 44.923, 1: 0.319, 2: 5.658, 9: 5.667}, count=30)
    check(frame, "TFLOP/s/device", {0: 17.022, 1: 2400.734, 9: 134.924}, count=30)
    check(frame, "Tokens/s/device", {0: 1094.129, 3: 9098.189}, count=30)
    check(frame, "total_weights", {0: 196608.0}, count=30)
    check(frame, "loss", {0: 12.038, 5: 10.879, 9: 10.374}, count=30)
    # printed before the training line of the step it follows (MaxText writes a step's line one step late)
    check(frame, "eval/loss", {9: 10.331, 19: 9.372, 29: 8.861}, count=3)
    check(frame, "eval/total_weights", {9: 983040.0}, count=3)
    assert frame["wall_time"].isna().all()
    assert "behind absl" not in notes_text(run) and not run.warnings and not run.restarts


def test_absl_lines_of_a_pasted_run():
    run = _read(ABSL)
    frame = run.scalars
    check(frame, "seconds", {1: 0.631, 2: 10.228, 3: 10.344}, count=26)
    check(frame, "TFLOP/s/device", {1: 5688.282, 3: 346.932}, count=26)
    check(frame, "Tokens/s/device", {1: 311629.521}, count=26)
    check(frame, "total_weights", {1: 1572864.0}, count=26)
    check(frame, "loss", {1: 12.979, 2: 12.98}, count=26)
    check(frame, "lm_loss", {3: 12.979}, count=26)
    check(frame, "perplexity", {1: 433358.281, 2: 433463.719}, count=26)
    assert frame["wall_time"].isna().all()
    assert "26 line(s) read behind absl's prefix, whose time has no year: no wall time" in notes_text(run)


def _mixed(count: int) -> str:
    """Training lines of several templates (absl's prefix or none, the ramp-up's, the profiler's, a diagnostics part,
    odd numbers), evaluations of both eras, the tensorboard hint, other lines between."""
    lines = []
    for step in range(count):
        loss = 12 - step / 100
        prefix = ABSL_PREFIX.format(micro=step) if step >= count // 2 else ""
        if step % 97 == 5:
            lines.append(f"{prefix}[Rampup Batch Size Phase], completed step: {step}, seconds: 0.100, "
                         f"total_weights: 98304, loss: {loss:.3f}")
        elif step % 89 == 7:
            lines.append(f"{prefix}completed profiler activation/deactivation step: {step}, total_weights: 196608, "
                         f"loss: {loss:.3f}, diag: raw_grad_norm={step / 7:.9e} grad_norm=n/a")
        elif step % 71 == 9:  # (the GRPO trainer's, which ends with a comma)
            lines.append(f"{prefix}completed step: {step}, seconds: 1.250, TFLOP/s/device: 9.000, Tokens/s/device: "
                         f"99.000, loss: {loss:.3f}, learning/avg_reward: 0.500, learning/avg_kl: {step / 1000:.3f}, ")
        else:
            lines.append(_line(step, math.nan if step % 53 == 52 else loss, prefix=prefix).replace(
                "loss: 11.770", "loss: inf"))
        if step % 100 == 99:
            summary = (f"eval metrics after step: {step}, loss={loss:.3f}, total_weights=983040.0" if step < count // 2
                       else f"Completed eval after train step {step}, loss={loss:.3f}, perplexity=1.500, "
                            "total_weights=983040.0, avg_z_loss=0.000, avg_mtp_acceptance_rate=41.25%")
            lines.insert(-1, prefix + summary)
        if step % 100 == 0:
            lines.append(f"{prefix}To see full metrics 'tensorboard --logdir=gs://b/run/tensorboard/'")
        if step % 250 == 3:
            lines.append("I1207 09:32:48.000001 140501780278144 max_utils.py:780] Memstats: After params initialized:")
    return "\n".join(lines) + "\n"


def read_both_ways(path: Path, monkeypatch, chunk_chars: tuple[int | None, ...] = (None,)):
    """``path`` read with the chunk's template and with every line read on its own, at each chunk size: the same
    rows exactly, notes, warnings, restarts. The run read at once (at the last size)."""
    run = None
    for size in chunk_chars:
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        run = _read(path)
        monkeypatch.setattr(MaxTextParser, "line_by_line", True)
        alone = _read(path)
        monkeypatch.setattr(MaxTextParser, "line_by_line", False)
        pd.testing.assert_frame_equal(run.scalars, alone.scalars, check_exact=True, obj=str(path))
        assert (run.notes, run.warnings, run.restarts) == (alone.notes, alone.warnings, alone.restarts), path
    return run


def test_lines_read_at_once_by_their_template_as_each_on_its_own(tmp_path, monkeypatch):
    run = read_both_ways(write(tmp_path / "train.log", _mixed(600)), monkeypatch, chunk_chars=(None, 4096, 1 << 14))
    frame = run.scalars
    check(frame, "loss", {0: 12.0, 5: 11.95, 7: 11.93, 599: 6.01}, count=600)
    assert math.isnan(curve(frame, "loss")[52]) and curve(frame, "loss")[23] == math.inf
    check(frame, "seconds", {0: 5.668, 5: 0.1}, count=600 - 7)  # (the profiler's steps 7, 96, …: no seconds)
    check(frame, "raw_grad_norm", {7: 1.0, 96: 96 / 7}, count=7)
    check(frame, "learning/avg_kl", {9: 0.009, 577: 0.577}, count=9)
    assert "grad_norm" not in set(frame["tag"])  # (n/a: not computed)
    check(frame, "eval/loss", {99: 11.01, 599: 6.01}, count=6)
    check(frame, "eval/perplexity", {399: 1.5}, count=3)
    check(frame, "eval/avg_mtp_acceptance_rate", {599: 41.25}, count=3)
    assert "6 evaluation(s)" in notes_text(run) and "303 line(s) read behind absl's prefix" in notes_text(run)
    assert not run.warnings and not run.restarts
    for path in (CPU, OPTIONS, DOCS, ABSL):
        read_both_ways(path, monkeypatch, chunk_chars=(None, 2048))


def test_a_resumed_log_records_its_restart_and_keeps_the_later_rows(tmp_path):
    # killed after step 25, resumed from the checkpoint of step 20: steps 20-25 again, then on
    first = [_line(step, 10 - step / 10) for step in range(26)]
    again = [_line(step, 9 - step / 10) for step in range(20, 31)]
    run = _read(write(tmp_path / "train.log", "\n".join([*first, *again]) + "\n"))
    (restart,) = run.restarts
    assert restart.step == 20 and "after step 25 (line 27)" in restart.detail
    check(run.scalars, "loss", {19: 8.1, 20: 7.0, 25: 6.5, 30: 6.0}, count=31)  # (the later values of 20-25)
    assert "replaced" in notes_text(run)


@pytest.mark.parametrize("bad", [
    "completed step: 31, seconds: 5.668, TFLOP/s/dev",  # (cut short)
    "completed step: 31, seconds: 5.668, TFLOP/s/device: 134.9.1, Tokens/s/device: 8671.0, total_weights: 196608, "
    "loss: 8.0",  # (a field that is no number, in the template)
    "completed step: 31, seconds: 5.668, TFLOP/s/device: 134.900, Tokens/s/device: 8671.000, total_weights: 196608, "
    "loss: INFINITY",  # (float() takes it; a trainer prints no such thing)
    "eval metrics after step: 31, loss=oops",
])
def test_a_line_that_cannot_be_read_is_named(tmp_path, bad):
    lines = [_line(step, 10 - step / 10) for step in range(31)]
    run = _read(write(tmp_path / "train.log", "\n".join([*lines, bad, _line(32, 6.0)]) + "\n"))
    (warning,) = run.warnings
    assert "1 line(s) look like MaxText metrics but could not be read, e.g. line 32" in warning.message
    check(run.scalars, "loss", {0: 10.0, 32: 6.0}, count=32)


def test_a_step_too_large_is_named_not_read(tmp_path):
    lines = [_line(step, 10 - step / 10) for step in range(5)]
    for huge in (2**53 + 1, 10**30):
        for where in (0, 3):  # (the chunk's first training line, whose template is taken, or another)
            text = lines[:where] + [_line(huge, 1.0)] + lines[where:]
            run = _read(write(tmp_path / "train.log", "\n".join(text) + "\n"))
            (warning,) = run.warnings
            assert f"e.g. line {where + 1}: 'completed step: {huge}," in warning.message
            check(run.scalars, "loss", {0: 10.0, 4: 9.6}, count=5)
            assert not run.restarts


def test_junk_and_non_ascii_lines_between_are_passed_over(tmp_path):
    lines = [_line(step, 10 - step / 10) for step in range(6)]
    junk = ["\x00\x01\x7f binary junk", "Schritt abgeschlossen: Verlust ≈ 3,5 — ✓", "completed steps: all ✓",
            "I1207 09:32:48.205242 140501780278144 train.py:917] Starting eval after train step 2",
            "completed step: 6, loss: 1.0 ✓"]
    text = "\n".join(lines[:3] + junk + lines[3:]) + "\n"
    run = _read(write(tmp_path / "train.log", text.encode("utf-8")))
    check(run.scalars, "loss", {0: 10.0, 5: 9.5}, count=6)
    (warning,) = run.warnings  # (only the training line with a word after its number)
    assert "'completed step: 6, loss: 1.0 ✓'" in warning.message


def test_a_log_read_in_parts_as_it_grew_reads_as_one_read_whole(tmp_path):
    reader = MaxTextReader()
    data = _mixed(300).encode()
    path = tmp_path / "train.log"
    part = None
    for size in (1000, 1001, 5000, 20000, len(data)):  # (cuts inside lines too)
        path.write_bytes(data[:size])
        part = reader.read_part(path) if part is None else reader.join_parts(part, reader.read_part(path, part.end,
                                                                                                      part.state))
    (grown,) = reader.combine([path], [part])
    whole = _read(path)
    pd.testing.assert_frame_equal(grown.scalar_table().drop(columns="run"), whole.scalar_table().drop(columns="run"),
                                  check_exact=True)
    assert (grown.notes, grown.warnings, grown.restarts) == (whole.notes, whole.warnings, whole.restarts)


def test_detection_needs_two_training_lines():
    one, two = _line(1, 9.9), _line(2, 9.8)
    assert detect_maxtext(f"{one}\n{two}\n")
    assert detect_maxtext(f"{ABSL_PREFIX.format(micro=1)}{one}\nnoise\n{ABSL_PREFIX.format(micro=2)}{two}\n")
    assert not detect_maxtext(f"{one}\nnoise\n")
    assert not detect_maxtext("eval metrics after step: 9, loss=3.2, total_weights=1.0\n" * 2)
    assert not detect_maxtext("completed step: 5\ncompleted step: 6\n")  # (no metric)
    assert not detect_maxtext("completed step 5, loss: 2.0\ncompleted step 6, loss: 1.9\n")


def test_other_logs_are_not_maxtexts(tmp_path):
    for text in ("step: 1, loss: 2.5\nstep: 2, loss: 2.4\n",
                 "[INFO] completed step 100/1000, loss: 2.5\n[INFO] completed step 200/1000, loss: 2.4\n",
                 "Epoch 1 completed step: done, loss: 1.0\nEpoch 2 completed step: done, loss: 0.9\n"):
        path = write(tmp_path / "train.log", text)
        assert not MaxTextReader().sniff(path, path.read_bytes()[:HEAD_BYTES])
