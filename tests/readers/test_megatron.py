"""Megatron-LM / Megatron-DeepSpeed console logs: the real logs of microsoft/Megatron-DeepSpeed and dirty cases."""

import calendar

import pandas as pd
import pytest

from tanalyze import load
from tanalyze.readers.text.megatron import MegatronReader
from tests.conftest import real_log
from tests.readers.text_helpers import check, notes_text, points, write

EXAMPLES = "megatron_text_log/microsoft__Megatron-DeepSpeed/examples"
BASELINE = f"{EXAMPLES}/random_ltd/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log"
RANDOM_LTD = f"{EXAMPLES}/random_ltd/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log"
MOE = f"{EXAMPLES}/MoE/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log"


def _read(path):
    reader = MegatronReader()
    assert reader.sniff(path, path.read_bytes()[:4096])
    (run,) = reader.read([path])
    return run


def test_baseline_log_killed_after_470_iterations():
    run = _read(real_log(BASELINE))
    frame = run.scalars
    check(frame, "lm loss", {10: 10.78335, 250: 8.940360, 470: 8.101424}, count=47)
    check(frame, "elapsed time per iteration (ms)", {10: 1001.5, 250: 488.3, 470: 490.4}, count=47)
    check(frame, "learning rate", {10: 9.339e-08, 470: 5.212e-06}, count=47)
    check(frame, "loss scale", {10: 2048.0, 470: 2048.0}, count=47)
    check(frame, "reserve_length", {10: 256.0, 100: 272.0, 470: 320.0}, count=47)  # glued '|reserve_length:'
    check(frame, "lm loss validation", {100: 9.661073, 400: 8.323271}, count=4)
    check(frame, "lm loss validation ppl", {100: 15694.61, 400: 4118.609}, count=4)
    check(frame, "time (ms)/forward-compute", {10: 467.20, 470: 261.21}, count=47)  # setup timers left out
    check(frame, "memory (MB)/max allocated", {10: 7176.13916015625}, count=1)
    # DeepSpeed engine lines interleaved with the iteration lines, with their own time stamps
    check(frame, "lr", {10: 9.338879999999999e-08, 470: 5.212023466666666e-06}, count=48)
    lr = frame[(frame["tag"] == "lr") & (frame["step"] == 10)]
    assert lr["wall_time"].iloc[0] == pytest.approx(calendar.timegm((2022, 10, 31, 10, 59, 51)) + 0.434)
    assert lr["rank"].iloc[0] == 0
    assert frame[frame["tag"] == "lm loss"]["rank"].isna().all()
    # the killed job's interleaved tracebacks give no rows, no warnings, and one note
    assert frame["step"].max() == 470
    assert run.warnings == [] and run.restarts == []
    notes = notes_text(run)
    assert "9 Python traceback(s)" in notes and "NameError: free variable 'kill_cmd'" in notes
    assert "400 ANSI escape sequence(s) removed" in notes
    assert run.hparams["train_iters"] == 171661
    assert run.hparams["micro_batch_size"] == 4 and run.hparams["train_samples"] == 43945312 and run.hparams["fp16"] is True


def test_random_ltd_log_killed_after_600_iterations():
    run = _read(real_log(RANDOM_LTD))
    frame = run.scalars
    check(frame, "lm loss", {10: 10.78335, 250: 8.940360, 600: 7.516389}, count=60)
    check(frame, "elapsed time per iteration (ms)", {10: 810.1, 250: 483.4, 600: 485.4}, count=60)
    check(frame, "loss scale", {10: 2048.0, 600: 4096.0}, count=60)
    check(frame, "lm loss validation", {100: 9.661073, 500: 7.883712}, count=5)
    check(frame, "lm loss validation ppl", {500: 2653.706}, count=5)
    check(frame, "lr", {600: 6.811784533333332e-06}, count=61)
    assert run.warnings == [] and run.restarts == []


def test_moe_log_with_setup_timers_and_one_validation():
    run = _read(real_log(MOE))
    frame = run.scalars
    check(frame, "lm loss", {10: 10.69112, 60: 9.833212, 120: 8.958018}, count=12)
    check(frame, "elapsed time per iteration (ms)", {10: 942.0, 60: 587.4, 120: 591.5}, count=12)
    check(frame, "lm loss validation", {100: 9.082474}, count=1)
    check(frame, "lm loss validation ppl", {100: 8799.707}, count=1)
    assert points(frame, "time (ms)/forward-compute") == 12
    assert not any(tag.startswith("time (ms)/load-checkpoint") for tag in frame["tag"].unique())
    assert run.warnings == []


def test_two_megatron_logs_in_one_folder_are_two_runs():
    folder = real_log(BASELINE).parent
    logs = load(folder, formats=["megatron"])
    assert sorted(logs.runs) == [
        "log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log",
        "log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log",
    ]
    counts = logs.tag_summary().set_index(["run", "tag"])["points"]
    assert counts[("log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log", "lm loss")] == 60


ITER = (
    " iteration {it:>8}/    1000 | consumed samples: {s:>8} | elapsed time per iteration (ms): 500.0 |"
    " learning rate: 1.000E-04 | global batch size:    8 | lm loss: {loss:.6E} | grad norm: 1.500 |"
    " number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)


def test_resumed_job_keeps_the_later_writes_and_records_the_restart(tmp_path):
    text = "".join(ITER.format(it=i, s=8 * i, loss=10.0 - i / 100) for i in range(10, 70, 10))
    text += "saving checkpoint at iteration 40\nresuming\n"
    text += "".join(ITER.format(it=i, s=8 * i, loss=5.0 - i / 100) for i in range(50, 90, 10))
    path = write(tmp_path / "train.log", text)
    (run,) = MegatronReader().read([path])
    check(run.scalars, "lm loss", {10: 9.9, 40: 9.6, 50: 4.5, 60: 4.4, 80: 4.2}, count=8)
    check(run.scalars, "grad norm", {80: 1.5}, count=8)
    (restart,) = run.restarts
    assert restart.step == 50 and restart.file == "train.log"
    assert "after step 60" in restart.detail and "line 9" in restart.detail
    assert "16 point(s) logged after a restart were replaced by the later write" in notes_text(run)


def test_cut_last_line_is_reported_not_read(tmp_path):
    text = ITER.format(it=10, s=80, loss=9.0) + ITER.format(it=20, s=160, loss=8.0)[:120]
    path = write(tmp_path / "killed.log", text)
    (run,) = MegatronReader().read([path])
    check(run.scalars, "lm loss", {10: 9.0}, count=1)
    (warning,) = run.warnings
    assert "last line ends without a line break" in warning.message and "iteration       20" in warning.message
    assert warning.location == "line 2"


def test_broken_iteration_lines_are_counted_with_examples(tmp_path):
    good = ITER.format(it=10, s=80, loss=9.0)
    bad = " iteration       20/    1000 | lm loss: 8.0 | grad norm: (truncated by a crash\n"
    path = write(tmp_path / "train.log", good + bad + bad.replace("20/", "30/") + good.replace("10/", "40/"))
    (run,) = MegatronReader().read([path])
    assert points(run.scalars, "lm loss") == 2
    (warning,) = run.warnings
    assert warning.count == 2 and warning.location == "line 2"
    assert "2 line(s) look like megatron metrics" in warning.message and "iteration       30" in warning.message


def test_non_numeric_field_values_are_counted(tmp_path):
    line = ITER.format(it=10, s=80, loss=9.0).replace("grad norm: 1.500", "grad norm: n/a")
    (run,) = MegatronReader().read([write(tmp_path / "t.log", line)])
    assert points(run.scalars, "grad norm") == 0 and points(run.scalars, "lm loss") == 1
    assert "1 field value(s) that are empty or not numbers were skipped" in notes_text(run)
    empty = ITER.format(it=10, s=80, loss=9.0).replace("grad norm: 1.500", "grad norm: ")
    (run,) = MegatronReader().read([write(tmp_path / "e.log", empty)])
    assert points(run.scalars, "grad norm") == 0 and "1 field value(s) that are empty" in notes_text(run)


def test_timestamped_upstream_megatron_lines(tmp_path):
    line = "[2024-05-01 10:00:00] " + ITER.format(it=10, s=80, loss=9.0)
    (run,) = MegatronReader().read([write(tmp_path / "t.log", line)])
    loss = run.scalars[run.scalars["tag"] == "lm loss"]
    assert loss["wall_time"].iloc[0] == calendar.timegm((2024, 5, 1, 10, 0, 0))


def _sorted(frame):
    frame = frame.assign(tag=frame["tag"].astype(str))
    return frame.sort_values(["tag", "step", "value"], kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("relative", [BASELINE, MOE])
def test_fast_path_and_line_by_line_path_agree(monkeypatch, relative):
    from tanalyze.readers.text.megatron import MegatronParser

    path = real_log(relative)
    (fast,) = MegatronReader().read([path])
    monkeypatch.setattr(MegatronParser, "ordered", True)
    (ordered,) = MegatronReader().read([path])
    pd.testing.assert_frame_equal(_sorted(fast.scalars), _sorted(ordered.scalars), check_categorical=False)
    assert fast.notes == ordered.notes and fast.restarts == ordered.restarts


DS_LINE = "[2022-10-31 10:59:{s:02d},000] [INFO] [logging.py:68:log_dist] [Rank 0] step={step}, skipped={skipped}, lr=[0.1, 0.1], mom=[(0.9, 0.95)]\n"
OVERFLOW = "[2022-10-31 10:59:00,000] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {a}, reducing to {b}\n"


def test_overflow_messages_count_at_the_next_logged_iteration(tmp_path):
    text = OVERFLOW.format(a=4096, b=2048) + OVERFLOW.format(a=2048, b=1024)
    text += DS_LINE.format(s=1, step=10, skipped=2) + ITER.format(it=10, s=80, loss=9.0)
    text += ITER.format(it=20, s=160, loss=8.0) + OVERFLOW.format(a=1024, b=512) + ITER.format(it=30, s=240, loss=7.0)
    (run,) = MegatronReader().read([write(tmp_path / "t.log", text)])
    check(run.scalars, "overflow_skips", {10: 2, 30: 1}, count=2)
    check(run.scalars, "loss_scale", {10: 1024.0, 30: 512.0}, count=2)
    check(run.scalars, "lm loss", {10: 9.0, 20: 8.0, 30: 7.0}, count=3)
    assert "3 fp16 overflow (skipped step) message(s)" in notes_text(run)


def _engine_and_megatron_log(iterations: int, odd: str | None = None) -> str:
    """A Megatron-DeepSpeed log: DeepSpeed step and timer lines, iteration and timer lines, validations."""
    out = []
    for n in range(1, iterations + 1):
        it = 10 * n
        if odd == "restart" and n > iterations // 2:
            it -= 10 * (iterations // 4)
        stamp = f"[2022-10-31 10:{n // 60 % 60:02d}:{n % 60:02d},{n % 1000:03d}]"
        out.append(f"{stamp} [INFO] [logging.py:68:log_dist] [Rank 0] step={it}, skipped=0, lr=[{it * 1e-7}, {it * 1e-7}], "
                   "mom=[(0.9, 0.95)]\n")
        out.append(f"{stamp} [INFO] [timer.py:198:stop] 0/{it}, RunningAvgSamplesPerSec={400 + n / 7}, "
                   f"CurrSamplesPerSec={401 + n / 3}, MemAllocated=1.64GB, MaxMemAllocated=7.01GB\n")
        line = ITER.format(it=it, s=8 * it, loss=10.0 - n / 1000)
        if odd == "shape" and n % 7 == 0:
            line = line.replace(" grad norm: 1.500 |", "")
        if odd == "bad value" and n == iterations // 3:
            line = line.replace("grad norm: 1.500", "grad norm: n/a")
        out.append(line)
        timers = f"time (ms) | forward-compute: {200 + n / 4:.2f} | backward-compute: {300 + n / 8:.2f} | optimizer: 9.50\n"
        if odd == "stamped timers" and n % 5 == 0:
            timers = f"{stamp} {timers}"
        out.append(timers)
        if it % 100 == 0:
            out.append(f" validation loss at iteration {it} | lm loss value: {9.0 - n / 1000:.6E} | lm loss PPL: 8.1E+03 | \n")
    return "".join(out)


@pytest.mark.parametrize("odd", [None, "restart", "shape", "bad value", "stamped timers"])
def test_lines_read_at_once_give_what_the_line_by_line_reading_gives(tmp_path, monkeypatch, odd):
    from tanalyze.readers.text.megatron import MegatronParser

    path = write(tmp_path / "train.log", _engine_and_megatron_log(300, odd))
    at_once = []
    read = MegatronParser._iterations_at_once
    monkeypatch.setattr(MegatronParser, "_iterations_at_once", lambda self, chunk: at_once.append(read(self, chunk)) or at_once[-1])
    (fast,) = MegatronReader().read([path])
    assert (at_once[0] is not None) == (odd in (None, "stamped timers"))
    monkeypatch.setattr(MegatronParser, "ordered", True)
    (ordered,) = MegatronReader().read([path])
    pd.testing.assert_frame_equal(_sorted(fast.scalars), _sorted(ordered.scalars), check_categorical=False)
    assert fast.notes == ordered.notes and fast.warnings == ordered.warnings
    # the same restarts, each with its line (the fast path meets the two line kinds in another order)
    assert sorted(fast.restarts, key=repr) == sorted(ordered.restarts, key=repr)
    assert len(fast.restarts) == (2 if odd == "restart" else 0)
    if odd is None:
        check(fast.scalars, "lm loss", {10: 9.999, 1500: 9.85, 3000: 9.7}, count=300)
        check(fast.scalars, "time (ms)/forward-compute", {10: 200.25, 3000: 275.0}, count=300)
        check(fast.scalars, "CurrSamplesPerSec", {3000: 501.0}, count=300)
        check(fast.scalars, "lr", {3000: 3000 * 1e-7}, count=300)
        walls = fast.scalars[fast.scalars["tag"] == "lr"]["wall_time"]
        assert walls.iloc[61] == calendar.timegm((2022, 10, 31, 10, 1, 2)) + 0.062
