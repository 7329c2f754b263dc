"""torchtitan's training console. ``tests/fixtures/torchtitan`` holds two logs as ``run_train.sh`` leaves them (the
rank prefix, the colour codes), with lines pasted from real trainings (see its README). The other lines here are
written from the same format strings: those of 2024 (no ``[titan]``, ``wps``, no tflops), of the newest versions (a
module's logger, ``mfu: N/A``, ``--``, a validation without its percent), and damaged ones."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from tanalyze.readers import HEAD_BYTES
from tanalyze.readers.text import _parts, _ranked
from tanalyze.readers.text.torchtitan import TorchtitanParser, TorchtitanReader
from tanalyze.readers.values import parse_timestamp
from tanalyze.roles import resolve_roles
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "torchtitan"
CONSOLE = FIXTURES / "console.log"
VALIDATION = FIXTURES / "console_grad_norm_validation.log"
READER = TorchtitanReader()


def _stamp(step: int) -> str:
    return f"2025-06-16 22:{30 + step // 60 % 30:02d}:{step % 60:02d},{(7 * step) % 1000:03d}"


def _line(step: int, loss: float, tps: int = 5856, *, rank: str = "[rank0]:", titan: str = "[titan] ",
          logger: str = "root", grad_norm: float | None = None, mfu: str | None = None, word: str = "tps",
          tflops: bool = True, stamp: str | None = None) -> str:
    """A metrics line as ``MetricsProcessor.log`` prints it without colours (``--metrics.disable_color_printing``)."""
    grad = f"grad_norm: {grad_norm:7.4f}  " if grad_norm is not None else ""
    rest = f"  tflops: {tps * 0.0579:,.2f}" if tflops else ""
    mfu = mfu if mfu is not None else f"{tps * 0.00586:.2f}%"
    return (f"{rank}{titan}{stamp or _stamp(step)} - {logger} - INFO - step: {step:2}  loss: {loss:7.4f}  {grad}"
            f"memory: 49.66GiB(52.28%)  {word}: {tps:,}{rest}  mfu: {mfu}")


def _validation(step: int, loss: float, tps: int = 19628, *, rank: str = "[rank0]:", percent: bool = True) -> str:
    """``log_validation``'s line (the newest print no percent after the GiB)."""
    memory = "9.46GiB(64.99%)" if percent else "9.46GiB"
    return (f"{rank}[titan] {_stamp(step)} - root - INFO - validate step: {step:2}  loss: {loss:7.4f}  "
            f"memory: {memory}  tps: {tps:,}")


def _info(text: str, rank: str = "[rank0]:") -> str:
    return f"{rank}[titan] 2025-06-16 22:30:00,000 - root - INFO - {text}"


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _sniffed(path) -> bool:
    return READER.sniff(path, path.read_bytes()[:HEAD_BYTES])


def test_the_2025_console_of_a_torchrun_job():
    assert _sniffed(CONSOLE)
    (run,) = READER.read([CONSOLE])
    frame = run.scalars
    assert set(frame["tag"]) == {"loss", "memory_gib", "memory_pct", "tps", "tflops", "mfu"}
    check(frame, "loss", {1: 8.113, 22: 6.225, 29: 6.1441, 40: 5.8608}, count=40)
    check(frame, "memory_gib", {1: 1.39, 22: 1.41}, count=40)
    check(frame, "memory_pct", {1: 1.76, 22: 1.79}, count=40)
    check(frame, "tps", {1: 11872.0, 22: 193831.0, 26: 169197.0}, count=40)  # (printed "11,872", "193,831")
    check(frame, "tflops", {1: 1.12, 22: 18.36, 26: 16.03}, count=40)
    check(frame, "mfu", {1: 0.11, 22: 1.86, 26: 1.62}, count=40)  # (in percent)
    at_22 = frame[(frame["step"] == 22) & (frame["tag"] == "loss")].iloc[0]
    assert at_22["wall_time"] == parse_timestamp("2025-03-12 11:10:21,511")
    assert frame[frame["tag"] == "loss"]["wall_time"].iloc[-1] == parse_timestamp("2025-03-12 11:10:23,011")
    assert set(frame["rank"]) == {0}  # (rank 0's lines, told by torchrun's prefix)
    notes = notes_text(run)
    assert "1 rank(s) (0) of one job in one log" in notes and "ANSI escape sequence(s) removed" in notes
    assert "step = the printed step" in notes and "validation line(s)" not in notes and "wps" not in notes
    assert not run.warnings and not run.restarts


def test_grad_norm_and_the_validation_lines_of_2026():
    assert _sniffed(VALIDATION)
    (run,) = READER.read([VALIDATION])
    frame = run.scalars
    check(frame, "loss", {1: 8.10532, 14: 3.24405, 21: 3.00867}, count=40)
    check(frame, "grad_norm", {1: 4.9127, 14: 0.8319, 21: 0.6348}, count=40)
    check(frame, "memory_gib", {1: 9.33, 14: 9.46}, count=40)
    check(frame, "memory_pct", {1: 64.10, 14: 64.99}, count=40)
    check(frame, "tps", {1: 2614.0, 14: 7282.0, 15: 7334.0}, count=40)
    check(frame, "tflops", {15: 0.53}, count=40)
    check(frame, "validation/loss", {12: 3.4138, 24: 2.9877, 36: 2.8412}, count=3)
    check(frame, "validation/tps", {12: 19504.0, 24: 19628.0, 36: 19090.0}, count=3)
    check(frame, "validation/memory_gib", {24: 9.46}, count=3)
    check(frame, "validation/memory_pct", {24: 64.99}, count=3)
    assert not {"validation/tflops", "validation/mfu", "validation/grad_norm"} & set(frame["tag"])
    validation = frame[frame["tag"] == "validation/loss"]
    assert validation["wall_time"].tolist()[1] == parse_timestamp("2026-05-18 16:05:01,369")
    assert "3 validation line(s) ('validate step:') as validation/loss" in notes_text(run)
    assert not run.warnings and not run.restarts
    # the validation is known as such (a "validate/" prefix would be taken for a training loss)
    roles = resolve_roles(frame["tag"].value_counts().to_dict()).assigned
    assert roles["train_loss"].tag == "loss" and roles["val_loss"].tag == "validation/loss"
    assert roles["grad_norm"].tag == "grad_norm" and roles["throughput"].tag == "tps"


def test_each_versions_line_without_colours_or_a_rank_prefix(tmp_path):
    lines = [
        # 2024: no [titan], wps, no tflops
        _line(1, 10.8362, 2012, rank="", titan="", word="wps", tflops=False),
        _line(2, 9.9031, 7921, rank="", titan="", word="wps", tflops=False),
        # 2025's
        _line(3, 8.5, 12345, rank=""),
        # the newest: a module's logger, grad_norm, mfu not available, a value not measured, tflops over 1,000
        _line(4, 8.25, 10050, rank="", logger="torchtitan.trainer", grad_norm=26.625, mfu="N/A"),
        _line(5, 8.0, 30000, rank="", logger="torchtitan.trainer", grad_norm=1.5).replace(
            "grad_norm:  1.5000", "grad_norm:       --"),
        _validation(5, 7.9, 19628, rank="", percent=False),
    ]
    path = write(tmp_path / "train.log", _text(lines))
    assert _sniffed(path)
    (run,) = READER.read([path])
    frame = run.scalars
    assert "rank" not in frame.columns
    check(frame, "loss", {1: 10.8362, 2: 9.9031, 3: 8.5, 4: 8.25, 5: 8.0}, count=5)
    check(frame, "tps", {1: 2012.0, 2: 7921.0, 3: 12345.0, 4: 10050.0, 5: 30000.0}, count=5)  # (wps as tps)
    check(frame, "tflops", {3: 714.78, 5: 1737.0}, count=3)  # (printed "1,737.00")
    check(frame, "mfu", {1: 11.79, 3: 72.34}, count=4)  # (not at step 4: N/A)
    check(frame, "grad_norm", {4: 26.625}, count=1)  # (not at step 5: --)
    check(frame, "validation/memory_gib", {5: 9.46}, count=1)
    assert "validation/memory_pct" not in set(frame["tag"])
    notes = notes_text(run)
    assert "2 line(s) of an older version print 'wps'" in notes
    assert "2 value(s) printed as N/A or --" in notes and "1 validation line(s)" in notes
    assert not run.warnings


def test_the_ranks_of_one_job_in_one_log_each_with_its_rank(tmp_path):
    lines = [_info("Training starts at step 1.", rank) for rank in ("[rank0]:", "[rank1]:")]
    for step in range(1, 6):
        lines += [_line(step, 9 - step / 10, 5000 + step, rank="[rank1]:"),
                  _line(step, 9 - step / 10, 6000 + step, rank="[rank0]:")]
    (run,) = READER.read([write(tmp_path / "train.log", _text(lines))])
    frame = run.scalars
    tps = frame[frame["tag"] == "tps"]
    assert set(tps["rank"]) == {0, 1}
    assert curve(tps[tps["rank"] == 0], "tps") == {s: 6000.0 + s for s in range(1, 6)}
    assert curve(tps[tps["rank"] == 1], "tps") == {s: 5000.0 + s for s in range(1, 6)}
    assert "2 rank(s) (0, 1) of one job in one log" in notes_text(run)
    assert not run.warnings and not run.restarts


def test_ranks_printing_to_one_stream_without_a_prefix_give_one_point_a_step(tmp_path):
    lines = []
    for step in range(1, 4):
        lines += [_line(step, 7.6, 10050 - rank, rank="") for rank in range(4)]
    (run,) = READER.read([write(tmp_path / "train.log", _text(lines))])
    assert curve(run.scalars, "tps") == {1: 10047.0, 2: 10047.0, 3: 10047.0}  # (the last line's)
    assert "logged twice at the same step" in notes_text(run) and not run.restarts


def test_a_job_resumed_from_a_checkpoint_is_a_restart_and_its_rows_kept(tmp_path):
    lines = [_info("Training starts at step 1.")]
    lines += [_line(step, 9 - step / 10) for step in range(1, 11)]
    lines += [_info("Training starts at step 7.")]
    lines += [_line(step, 5 - step / 10) for step in range(7, 13)]
    (run,) = READER.read([write(tmp_path / "train.log", _text(lines))])
    (restart,) = run.restarts
    assert restart.step == 7 and "step 7 logged again after step 10" in restart.detail and "(line 13)" in restart.detail
    check(run.scalars, "loss", {6: 8.4, 7: 4.3, 10: 4.0, 12: 3.8}, count=12)  # (the later write wins)
    assert "point(s) logged after a restart were replaced" in notes_text(run)


def test_a_metrics_line_that_cannot_be_read_is_named_and_the_others_read(tmp_path):
    lines = [_line(step, 9 - step / 10) for step in range(1, 6)]
    lines += [
        _line(6, 8.4).replace("loss:  8.4000", "loss:  8.4x00"),  # (no number)
        _line(7, 8.3).replace("  tps:", "  hello  tps:"),  # (text between the values)
        _line(8, 8.2).replace("step:  8", "step: 99999999999999999999"),  # (no exact step)
        _info("step: 9  loss:"),  # (cut short)
        _line(10, 8.0),
    ]
    (run,) = READER.read([write(tmp_path / "train.log", _text(lines))])
    (warning,) = run.warnings
    assert "4 line(s) look like torchtitan metrics but could not be read, e.g. line 6" in warning.message
    assert "8.4x00" in warning.message and warning.count == 4
    check(run.scalars, "loss", {1: 8.9, 5: 8.5, 10: 8.0}, count=6)
    assert not run.restarts


def test_a_nan_loss_is_kept(tmp_path):
    lines = [_line(1, 2.0), _line(2, math.nan), _line(3, math.inf)]
    (run,) = READER.read([write(tmp_path / "train.log", _text(lines))])
    loss = curve(run.scalars, "loss")
    assert loss[1] == 2.0 and math.isnan(loss[2]) and loss[3] == math.inf and not run.warnings


def test_junk_and_non_ascii_lines_around_the_metrics(tmp_path):
    lines = [_info("Modèle llama3 « debugmodel » chargé ✓ — 6,139,904 paramètres"), _line(1, 8.1)]
    lines += ["\x00\x00garbage ÿþ step: 1  loss: 2", _info("step: 3  loss: ünïcode"), _line(2, 7.9), "☃" * 50]
    data = _text(lines).encode("utf-8") + b"\xff\xfe broken bytes\n" + (_line(3, 7.7) + "\n").encode()
    (run,) = READER.read([write(tmp_path / "train.log", data)])
    check(run.scalars, "loss", {1: 8.1, 2: 7.9, 3: 7.7}, count=3)
    (warning,) = run.warnings  # (the line with a step and no value)
    assert "1 line(s) look like torchtitan metrics" in warning.message and "ünïcode" in warning.message
    assert "NUL byte(s) removed" in notes_text(run)


def test_a_long_damaged_line_is_read_in_time(tmp_path):
    from tests.fuzz.harness import time_limit

    lines = [_line(1, 8.1), _line(2, 7.9) + "  " + "x" * 200_000,
             _line(3, 7.7).replace("  memory:", "  " + "y" * 100_000 + "  memory:"),
             _info("step: 4  " + "loss: " * 30_000), _line(5, 7.5)]
    path = write(tmp_path / "train.log", _text(lines))
    with time_limit(20.0):
        (run,) = READER.read([path])
    check(run.scalars, "loss", {1: 8.1, 5: 7.5}, count=2)
    (warning,) = run.warnings
    assert warning.count == 3


def test_two_metrics_lines_make_a_log_torchtitans(tmp_path):
    one = write(tmp_path / "one.log", _text([_info("Training starts at step 1.", rank=""), _line(1, 8.1, rank="")]))
    assert not _sniffed(one)
    two = write(tmp_path / "two.log", _text([_line(1, 8.1, rank=""), _line(2, 7.9, rank="")]))
    assert _sniffed(two)
    for text in (
        "step:  1  loss:  8.1130  memory:  1.39GiB(1.76%)  tps: 11,872\n" * 3,  # (no logger's prefix)
        "2024-01-01 12:00:00,000 - __main__ - INFO - step: 10  loss: 2.5  lr: 0.1\n" * 3,  # (no memory)
        "[titan] 2024-01-01 12:00:00,000 - root - INFO - Training starts at step 1.\n" * 3,
    ):
        assert not _sniffed(write(tmp_path / "other.log", text))


def _read_both_ways(path, monkeypatch, chunk_chars=(None,)):
    """``path`` read with the chunks' lines of the template at once and with every line read field by field, at
    each chunk size: the same rows, notes, warnings and restarts. The run read at once (at the last size)."""
    for size in chunk_chars:
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
            monkeypatch.setattr(_ranked, "CHUNK_CHARS", size)
        (at_once,) = READER.read([path])
        monkeypatch.setattr(TorchtitanParser, "line_by_line", True)
        (by_line,) = READER.read([path])
        monkeypatch.setattr(TorchtitanParser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True, obj=str(path))
        assert (at_once.notes, at_once.warnings, at_once.restarts) == (by_line.notes, by_line.warnings,
                                                                        by_line.restarts), path
    return at_once


def _mixed(count: int) -> str:
    """Lines of every form: colours, versions, validations, N/A and --, an extra field, damaged lines, restarts."""
    colour = ("\x1b[31m", "\x1b[32m", "\x1b[38;2;180;60;0m", "\x1b[38;2;54;234;195m", "\x1b[34m")
    lines = [_info("Training starts at step 1.")]
    step = 0
    for k in range(count):
        step = step - 25 if k % 333 == 332 else step + 1  # (a resumed job now and then)
        loss = 10 * math.exp(-k / 300) if k % 97 != 5 else math.nan
        line = _line(step, loss, 5000 + k * 37, grad_norm=(k % 13) / 7 if k % 2 else None,
                     mfu="N/A" if k % 41 == 3 else None, word="wps" if k % 17 == 4 else "tps")
        if k % 5 == 0:
            for code, label in zip(colour, ("step:", "loss:", "grad_norm:", "memory:", "tps:"), strict=True):
                line = line.replace(f"  {label}", f"  {code}{label}").replace(f"- {label}", f"- {code}{label}")
            line += "\x1b[39m"
        if k % 53 == 7:
            line = line.replace("  mfu:", "  lr: 3.0e-04  mfu:")
        if k % 61 == 9:
            line = re.sub(r"loss: +\S+", "loss:       --", line, count=1)
        lines.append(line)
        if k % 50 == 49:
            lines.append(_validation(step, loss + 0.1, percent=k % 100 == 49))
        if k % 211 == 100:
            lines.append(_line(step, 1.0).replace("loss:  1.0000", "loss:  1.0.0"))
    return _text(lines)


def test_lines_read_at_once_as_each_on_its_own(tmp_path, monkeypatch):
    path = write(tmp_path / "train.log", _mixed(1200))
    run = _read_both_ways(path, monkeypatch, chunk_chars=(None, 4096, 1 << 14))
    assert {"loss", "grad_norm", "lr", "validation/loss", "validation/memory_pct", "mfu"} <= set(run.scalars["tag"])
    assert run.restarts and run.warnings and "print 'wps'" in notes_text(run)
    assert np.isnan(run.scalars["value"]).any()
    for fixture in (CONSOLE, VALIDATION):
        _read_both_ways(fixture, monkeypatch, chunk_chars=(None, 2048))


def test_a_clean_log_is_read_at_once(monkeypatch):
    def refused(*args):
        raise AssertionError("read line by line")

    monkeypatch.setattr(TorchtitanParser, "_line_by_line", refused)
    for fixture in (CONSOLE, VALIDATION):
        (run,) = READER.read([fixture])
        assert len(run.scalars) >= 240
    with pytest.raises(AssertionError, match="line by line"):
        monkeypatch.setattr(TorchtitanParser, "line_by_line", True)
        READER.read([CONSOLE])
