"""nanoGPT console logs: the real ``output.log`` files of W&B runs (read through parse_console_file)."""

from pathlib import Path

import pandas as pd

from tanalyze.readers.text.console import parse_console_file
from tanalyze.readers.text.nanogpt import NanoGPTReader
from tests.conftest import real_log
from tests.readers.text_helpers import check, notes_text, points, write

SAMPLE_RUNS = Path(__file__).resolve().parents[2] / "sample_runs"

DRUIDOWM = "wandb_local/druidowm__nanoGPT/wandb"
JACK = "wandb_local/jackokeefe11__nanoGPT/wandb"


def test_druidowm_run_with_mfu_sentinel_and_interrupt():
    run = parse_console_file(real_log(f"{DRUIDOWM}/run-20241012_160630-jqe8zy9r/files/output.log"))
    frame = run.scalars
    check(frame, "loss", {0: 10.9766, 1273: 4.1529, 2546: 3.5074}, count=2547)
    check(frame, "time_ms", {0: 22640.22, 1273: 309.94, 2546: 312.84}, count=2547)
    check(frame, "mfu", {5: 108.40, 1273: 108.08, 2546: 107.86}, count=2542)  # iters 0-4 print -100%
    check(frame, "train/loss", {0: 10.9886, 1200: 4.2432, 2400: 3.6432}, count=13)
    check(frame, "val/loss", {0: 10.9897, 1200: 4.2623, 2400: 3.6716}, count=13)
    notes = notes_text(run)
    assert notes.startswith("console output read as nanogpt")
    assert "5 'mfu -100.00%' value(s) (not measured yet) skipped" in notes
    assert "2 Python traceback(s) in the log; last exception: KeyboardInterrupt" in notes
    assert run.warnings == [] and run.restarts == []


def test_bpc_unit_runs_with_a_last_line_without_line_break():
    run = parse_console_file(real_log(f"{JACK}/run-20240214_191836-mw8ngzqq/files/output.log"))
    frame = run.scalars
    check(frame, "loss", {0: 6.1551, 2500: 1.5596, 5000: 1.1710}, count=501)
    check(frame, "time_ms", {0: 65940.03, 2500: 8100.39, 5000: 8061.35}, count=501)
    check(frame, "mfu", {10: 7.09, 2500: 5.15, 5000: 5.25}, count=500)
    check(frame, "train/loss", {0: 6.1854, 2500: 1.3801, 5000: 0.8948}, count=21)
    check(frame, "val/loss", {0: 6.1780, 2500: 2.1555, 5000: 2.4492}, count=21)
    notes = notes_text(run)
    assert "unit suffix (BPC)" in notes
    assert "the last line has no line break; it was complete and was read" in notes
    assert run.warnings == []

    overfit = parse_console_file(real_log(f"{JACK}/run-20240214_195452-kt2awly2/files/output.log")).scalars
    check(overfit, "train/loss", {2500: 0.6265, 5000: 0.1191}, count=21)
    check(overfit, "val/loss", {2500: 2.9483, 5000: 4.9221}, count=21)
    check(overfit, "time_ms", {0: 254533.85, 2500: 35452.49, 5000: 35994.07}, count=501)


def test_crashed_runs_keep_what_was_logged_and_name_the_exception():
    oom = parse_console_file(real_log(f"{JACK}/run-20240216_065242-ibal0bht/files/output.log"))
    check(oom.scalars, "train/loss", {0: 12.6510}, count=1)
    check(oom.scalars, "val/loss", {0: 12.6486}, count=1)
    assert "last exception: torch.cuda.OutOfMemoryError: CUDA out of memory." in notes_text(oom)

    crashed = parse_console_file(real_log(f"{DRUIDOWM}/run-20241022_232419-18kjtmnl/files/output.log"))
    assert len(crashed.scalars) == 0
    notes = notes_text(crashed)
    assert "no known console format recognised" in notes
    assert "last exception: TypeError: 'NoneType' object is not callable" in notes
    (warning,) = crashed.warnings  # a run without a single point is worth a warning
    assert warning.file.endswith("18kjtmnl/files/output.log") and "no text metric line could be read" in warning.message


def test_output_log_inside_a_wandb_run_is_left_to_the_wandb_reader():
    path = real_log(f"{JACK}/run-20240214_191836-mw8ngzqq/files/output.log")
    assert not NanoGPTReader().sniff(path, path.read_bytes()[:4096])


def test_restarted_run_and_cut_iteration_line(tmp_path):
    text = "".join(f"iter {i}: loss {5 - i / 10:.4f}, time 100.00ms, mfu 10.00%\n" for i in range(0, 6))
    text += "Resuming training from out\n"
    text += "".join(f"iter {i}: loss {3 - i / 10:.4f}, time 90.00ms, mfu 11.00%\n" for i in range(3, 8))
    text += "iter 8: loss 2.1000, time 9"
    path = write(tmp_path / "train.log", text)
    (run,) = NanoGPTReader().read([path])
    check(run.scalars, "loss", {2: 4.8, 3: 2.7, 7: 2.3}, count=8)
    (restart,) = run.restarts
    assert restart.step == 3 and "after step 5" in restart.detail
    (warning,) = run.warnings
    assert "iter 8: loss 2.1000, time 9" in warning.message
    assert points(run.scalars, "time_ms") == 8


def test_a_fork_that_prints_more_fields_before_the_time(tmp_path):
    # a nanoGPT fork (MoE auxiliary loss, throughput): its fields between the loss and the time are read too
    text = "".join(f"iter {10 * i}: loss {11 - i / 10:.4f}, aux_loss {0.05 + i / 1000:.4f}, time 250.00ms, "
                   f"mfu {'-100.00' if i < 5 else '12.50'}%, throughput 0.020 MT/s\n" for i in range(20))
    (run,) = NanoGPTReader().read([write(tmp_path / "train.log", text)])
    check(run.scalars, "loss", {0: 11.0, 190: 9.1}, count=20)
    check(run.scalars, "aux_loss", {0: 0.05, 190: 0.069}, count=20)
    check(run.scalars, "time_ms", {0: 250.0}, count=20)
    check(run.scalars, "mfu", {50: 12.5}, count=15)
    assert run.warnings == []


IRREGULAR = (
    "iter 0: loss 4.0000, time 100.00ms, mfu -100.00%\n"
    "step 0: train loss 4.1, val loss 4.2\n"
    "step 1: not an evaluation\n"
    "iter 1: loss 3.5000 BPC, time 50.00ms, mfu 7.00%\n"
    "iter 2: loss 1_0, time 50.00ms, mfu 7.00%\n"
    "iter 3: loss 3.0000, time 50.00 ms, mfu 7.10%, lr 0.001\n"
    "iter 4: loss nan, time 50.00ms, mfu 7.10%\n"
    "iter 5: loss INF, time 50.00ms, mfu 7.10%\n"
    "iter 2: loss 2.0000, time 50.00ms, mfu 7.10%\n"
    "iter 99999999999999999999: loss 2.0000, time 50.00ms, mfu 7.10%\n"
    "iter 6: loss 2.9"
)


def test_spans_read_at_once_equal_every_line_read_on_its_own(tmp_path, monkeypatch, real_logs):
    """The usual lines are read span by span; the same rows, notes and warnings as line by line."""
    from tanalyze.readers.text.nanogpt import NanoGPTParser
    from tests.readers.test_text_resume import _nanogpt

    files = sorted(real_logs.glob("wandb_local/*nanoGPT/wandb/*/files/output.log"))
    files += [write(tmp_path / "irregular.log", IRREGULAR), write(tmp_path / "resumed.log", _nanogpt(300)),
              write(tmp_path / "usual.log", "".join(f"iter {i}: loss {1 + i / 1e4:.4f}, time 30.25ms, mfu 40.00%\n"
                                                    for i in range(5000)))]
    for path in files:
        (at_once,) = NanoGPTReader().read([path])
        monkeypatch.setattr(NanoGPTParser, "line_by_line", True)
        (by_line,) = NanoGPTReader().read([path])
        monkeypatch.setattr(NanoGPTParser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True)
        assert (at_once.notes, at_once.warnings, at_once.restarts) == (by_line.notes, by_line.warnings,
                                                                       by_line.restarts), path
    (irregular,) = NanoGPTReader().read([files[-3]])
    unread, cut, overflow = (w.message for w in irregular.warnings)
    assert unread.startswith("3 line(s) look like nanogpt metrics") and "loss 1_0" in unread and "INF" in unread
    assert "iter 6: loss 2.9" in cut and overflow.startswith("3 point(s) skipped")
    assert [r.step for r in irregular.restarts] == [2]


def test_lines_printed_with_blanks_at_their_end_are_the_same_lines(tmp_path):
    """A fork's prints end in blanks (``val loss 10.6778 ``, ``mfu -100.00%  ``): its evaluation lines were named
    as unreadable and its mfu dropped from every iteration line. The real nanoGPT run of sample_runs/normal_nanogpt
    with two blanks after every line reads the same as without."""
    source = SAMPLE_RUNS / "normal_nanogpt" / "train.log"
    padded = write(tmp_path / "train.log", "".join(line + "  \n" for line in source.read_text().splitlines()))
    (plain,) = NanoGPTReader().read([source])
    (blanks,) = NanoGPTReader().read([padded])
    key = ["tag", "step", "value"]
    pd.testing.assert_frame_equal(blanks.scalar_table()[key], plain.scalar_table()[key])
    assert not blanks.warnings and {"val/loss", "mfu"} <= set(blanks.scalars["tag"].astype(str))
