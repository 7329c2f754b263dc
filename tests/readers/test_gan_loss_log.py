"""The pix2pix / CycleGAN family's loss_log.txt and console: a real tiny pix2pix training's (its loop and logger as the
framework writes them, ``tests/fixtures/gan_loss_log/generate.py``: a training of 4 epochs, then one continued from
epoch 3 into the same loss_log.txt), and lines of CycleGAN and pix2pixHD as their format strings print them."""

import math

import numpy as np
import pandas as pd

from tanalyze.readers import HEAD_BYTES
from tanalyze.readers.text import _parts
from tanalyze.readers.text.gan_loss_log import GanLossLogParser, GanLossLogReader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, read_on, write

FIXTURES = REPO / "tests" / "fixtures" / "gan_loss_log"
LOSS_LOG = FIXTURES / "checkpoints" / "pix2pix_tiny" / "loss_log.txt"
CONSOLE = FIXTURES / "console" / "train.log"

#: the framework's lines as its format strings print them (a CycleGAN's, a pix2pix's; pix2pixHD's without ``data``)
CYCLEGAN = "(epoch: {e}, iters: {i}, time: 0.352, data: 0.184) D_A: 0.357 G_A: 0.364 cycle_A: {c} idt_A: 1.086 " \
           "D_B: 0.381 G_B: 0.409 cycle_B: 2.254 idt_B: 1.358 "
PIX2PIXHD = "(epoch: {e}, iters: {i}, time: 0.573) G_GAN: 1.121 G_GAN_Feat: 5.887 G_VGG: {c} D_real: 0.696 D_fake: 0.642 "
HEADER = "================ Training Loss (Sun Mar  1 12:00:00 2020) ================"


def read(path):
    (run,) = GanLossLogReader().read([path])
    return run


def lines(template: str, epochs: range, size: int, every: int, start: int = 0, loss=lambda total: 3.0) -> list[str]:
    """The lines a training prints: epochs of ``size`` samples (batch_size 1), a line every ``every`` samples of the
    training's count (``total_iters % print_freq``), the count starting at ``start``."""
    out = []
    total = start
    for epoch in epochs:
        first = total
        for total in range((first // every + 1) * every, first + size + 1, every):
            out.append(template.format(e=epoch, i=total - first, c=f"{loss(total):.3f}"))
        total = first + size
    return out


def test_a_real_pix2pix_trainings_loss_log_with_a_continued_training():
    run = read(LOSS_LOG)
    frame = run.scalars
    # epochs of 90 images in batches of 4 (92 samples counted), a line every 20 samples of the count: epoch 2's first
    # line (iters 8) at 92 + 8, epoch 3's (iters 16) at 184 + 16, epoch 4's (iters 4) at 276 + 4
    check(frame, "loss/G_L1", {20: 30.923, 80: 9.502, 100: 8.328, 180: 8.3, 200: 7.752, 280: 8.065, 360: 7.544}, count=27)
    # the training continued with --epoch_count 3 (its own count from 0 again, its lines at other samples than the
    # first attempt's epochs 3 and 4): after the 360 samples seen (its first line, iters 16, past the interval)
    check(frame, "loss/G_L1", {380: 8.107, 440: 8.528, 460: 7.57, 540: 7.924})
    check(frame, "loss/G_GAN", {20: 0.689, 540: 0.715}, count=27)
    check(frame, "loss/D_real", {20: 0.671}, count=27)
    check(frame, "loss/D_fake", {20: 0.697}, count=27)
    check(frame, "sample_time_s", {20: 0.001}, count=27)
    check(frame, "data_time_s", {20: 0.002, 40: 0.0, 380: 0.002}, count=27)
    epochs = frame[frame["tag"] == "loss/G_L1"].set_index("step")["epoch"]
    assert (epochs[20], epochs[100], epochs[360], epochs[380], epochs[540]) == (1.0, 2.0, 4.0, 3.0, 4.0)
    assert frame["wall_time"].isna().all()  # (the lines carry no time)
    assert not run.restarts
    notes = notes_text(run)
    assert "step = the samples seen since the start" in notes and "printing interval: 20 samples" in notes
    assert "1 continued training(s)" in notes and "estimated" not in notes and not run.warnings


def test_the_console_of_both_trainings():
    run = read(CONSOLE)
    frame = run.scalars
    assert curve(frame, "loss/G_L1") == curve(read(LOSS_LOG).scalars, "loss/G_L1")  # (the same lines, the same steps)
    # the learning rate each epoch starts with (printed before its first line), at the last line before; the first
    # of each training at the step it starts from
    check(frame, "lr", {0: 0.002, 80: 0.0013333, 180: 0.0006667, 260: 0.0, 360: 0.0006667, 440: 0.0}, count=6)
    check(frame, "epoch_time_s", {80: 0.0, 180: 0.0, 260: 0.0, 360: 0.0, 440: 0.0, 540: 0.0}, count=6)
    assert frame[frame["tag"] == "epoch_time_s"]["epoch"].tolist() == [1.0, 2.0, 3.0, 4.0, 3.0, 4.0]
    assert not run.restarts
    notes = notes_text(run)
    assert "6 epoch time(s) as epoch_time_s" in notes and "6 learning rate(s) as lr" in notes
    assert "1 epoch start(s) taken from a 'saving the …' line's count" in notes  # (the end of epoch 2: 184)
    assert not run.warnings


def test_epoch_starts_fall_where_the_lines_fall_on_the_printing_interval(tmp_path):
    # horse2zebra's 1334 images, batch_size 1, print_freq 100: epoch 2's first line at iters 66 (total 1400)
    text = "\n".join([HEADER, *lines(CYCLEGAN, range(1, 4), 1334, 100, loss=lambda total: total / 1000)]) + "\n"
    frame = read(write(tmp_path / "loss_log.txt", text)).scalars
    steps = np.array(sorted(curve(frame, "loss/cycle_A")))
    assert (steps % 100 == 0).all() and len(steps) == 40  # (every line at its count: 100, 200, … 4000)
    check(frame, "loss/cycle_A", {1300: 1.3, 1400: 1.4, 4000: 4.0})
    check(frame, "loss/D_A", {100: 0.357}, count=40)
    check(frame, "sample_time_s", {100: 0.352}, count=40)
    check(frame, "data_time_s", {100: 0.184}, count=40)


def test_before_the_interval_is_known_an_epoch_starts_after_the_last_line(tmp_path):
    # pix2pixHD's lines (no data time), one a epoch of 150 samples, a line every 100: epoch 2's at total 200, iters 50
    text = "\n".join(PIX2PIXHD.format(e=e, i=i, c="6.070") for e, i in ((1, 100), (2, 50), (2, 150), (3, 100))) + "\n"
    run = read(write(tmp_path / "loss_log.txt", text))
    # epoch 2 placed right after epoch 1's last line (100 + 50), its interval then learned: epoch 3 exact from there
    check(run.scalars, "loss/G_VGG", {100: 6.07, 150: 6.07, 250: 6.07, 400: 6.07}, count=4)
    assert "data_time_s" not in set(run.scalars["tag"])
    check(run.scalars, "sample_time_s", {100: 0.573}, count=4)
    assert "1 epoch start(s) estimated" in notes_text(run)


def test_saving_lines_give_where_an_epoch_began_or_ended(tmp_path):
    console = [PIX2PIXHD.format(e=1, i=100, c="6.0"), "saving the model at the end of epoch 1, iters 150",
               "End of epoch 1 / 4 \t Time Taken: 7 sec", "learning rate 0.0002000 -> 0.0001000",
               PIX2PIXHD.format(e=2, i=50, c="5.0"),
               # epoch 3 placed after epoch 2's last line (estimated: no interval yet), then the saving line of the
               # same iteration says where it began: 300 samples since the start
               PIX2PIXHD.format(e=3, i=100, c="4.0"), "saving the latest model (epoch 3, total_iters 400)",
               PIX2PIXHD.format(e=3, i=140, c="3.0"), "End of epoch 3 / 4 \t 0:01:02.500000",
               "End of epoch 3 / 4 \t Time Taken: 0:01:02.500000", "learning rate = 0.0000500"]
    run = read(write(tmp_path / "train.log", "\n".join(console) + "\n"))
    check(run.scalars, "loss/G_VGG", {100: 6.0, 200: 5.0, 300: 4.0, 440: 3.0}, count=4)
    check(run.scalars, "epoch_time_s", {100: 7.0, 440: 62.5}, count=2)
    check(run.scalars, "lr", {100: 0.0001, 440: 0.00005}, count=2)
    notes = notes_text(run)
    assert "2 epoch start(s) taken from a 'saving the …' line's count" in notes
    assert "1 epoch start(s) estimated" in notes
    (warning,) = run.warnings  # (an epoch's end without its 'Time Taken:')
    assert "1 line(s) look like pix2pix/CycleGAN metrics but could not be read, e.g. line 9" in warning.message


def test_a_training_continued_at_the_next_epoch_goes_on(tmp_path):
    # 100 samples an epoch, a line every 30: epoch 1 at 30, 60, 90; epoch 2 at 20, 50, 80 (its length found: 100)
    first = lines(CYCLEGAN, range(1, 3), 100, 30)
    # continued with --epoch_count 3 after epoch 2 ended: a new count from 0, at 200 if epochs stay as long
    again = lines(CYCLEGAN, range(3, 4), 100, 30)
    run = read(write(tmp_path / "loss_log.txt", "\n".join([HEADER, *first, HEADER, *again]) + "\n"))
    assert sorted(curve(run.scalars, "loss/D_A")) == [30, 60, 90, 120, 150, 180, 230, 260, 290]
    assert not run.restarts
    assert "1 epoch start(s) estimated" in notes_text(run) and "1 continued training(s)" in notes_text(run)


def test_a_training_continued_at_the_epoch_it_stopped_in_goes_on_after_the_samples_seen(tmp_path):
    # epochs of 90 samples, a line every 30; a training stopped in epoch 2 (after 120, 150) and continued with
    # --epoch_count 2: its own count from 0 again, so its lines fall at other samples than the first attempt's; put
    # back where epoch 2 began they would interleave with them: it goes on after the 150 samples seen, the epoch
    # column as printed
    first = lines(CYCLEGAN, range(1, 3), 90, 30, loss=lambda total: 1.0)[:5]
    again = lines(CYCLEGAN, range(2, 4), 90, 30, loss=lambda total: 2.0)
    run = read(write(tmp_path / "loss_log.txt", "\n".join([HEADER, *first, HEADER, *again]) + "\n"))
    assert not run.restarts
    check(run.scalars, "loss/cycle_A", {30: 1.0, 150: 1.0, 180: 2.0, 330: 2.0}, count=11)
    epochs = run.scalars[run.scalars["tag"] == "loss/cycle_A"].set_index("step")["epoch"]
    assert (epochs[150], epochs[180], epochs[330]) == (2.0, 2.0, 3.0)
    assert "1 continued training(s)" in notes_text(run) and "goes on after the samples seen" in notes_text(run)
    # the console has no header: the epoch begun again (its iters going back) is a training of its own too
    run = read(write(tmp_path / "train.log", "\n".join([*first, *again]) + "\n"))
    assert not run.restarts
    check(run.scalars, "loss/cycle_A", {150: 1.0, 180: 2.0, 330: 2.0}, count=11)
    # stopped right after epoch 2's first line: the continued training goes on from there
    run = read(write(tmp_path / "l.txt", "\n".join([HEADER, *first[:4], HEADER, *again]) + "\n"))
    check(run.scalars, "loss/cycle_A", {120: 1.0, 150: 2.0, 300: 2.0}, count=10)
    assert not run.restarts and not run.phases


def test_an_epoch_going_back_without_a_header_goes_on_after_the_samples_seen(tmp_path):
    first = lines(CYCLEGAN, range(1, 4), 100, 30, loss=lambda total: 1.0)
    again = lines(CYCLEGAN, range(2, 4), 100, 30, loss=lambda total: 2.0)
    run = read(write(tmp_path / "train.log", "\n".join([*first, "----------------- Options ---------------",
                                                        "learning rate 0.0002000 -> 0.0002000", *again]) + "\n"))
    assert not run.restarts
    check(run.scalars, "loss/cycle_A", {30: 1.0, 300: 1.0, 330: 2.0, 480: 2.0}, count=16)
    check(run.scalars, "lr", {300: 0.0002}, count=1)  # (printed at the start: where the training starts)


def test_lines_that_look_like_the_format_but_cannot_be_read_are_named(tmp_path):
    text = [HEADER, CYCLEGAN.format(e=1, i=100, c="3.0"),
            "(epoch: 1, iters: 200, time: soon, data: 0.184) D_A: 0.357 G_A: 0.364 ",  # (a time that is no number)
            CYCLEGAN.format(e=1, i=300, c="2.9"),
            "(epoch: 1, iters: 4",  # (cut short)
            CYCLEGAN.format(e=1, i=400, c="2.8")]
    run = read(write(tmp_path / "loss_log.txt", "\n".join(text) + "\n"))
    (warning,) = run.warnings
    assert "2 line(s) look like pix2pix/CycleGAN metrics but could not be read, e.g. line 3" in warning.message
    assert "line 5: '(epoch: 1, iters: 4'" in warning.message
    check(run.scalars, "loss/cycle_A", {100: 3.0, 300: 2.9, 400: 2.8}, count=3)


def test_a_step_too_large_is_named_not_read(tmp_path):
    text = [CYCLEGAN.format(e=1, i=100, c="3.0"), CYCLEGAN.format(e=1, i=2**53 + 1, c="2.0"),
            CYCLEGAN.format(e=2**53 + 1, i=100, c="2.0"), CYCLEGAN.format(e=1, i=200, c="1.0")]
    run = read(write(tmp_path / "loss_log.txt", "\n".join(text) + "\n"))
    check(run.scalars, "loss/cycle_A", {100: 3.0, 200: 1.0}, count=2)
    (warning,) = run.warnings
    assert "2 line(s) look like pix2pix/CycleGAN metrics but could not be read, e.g. line 2" in warning.message
    assert not run.restarts
    # iters that fit, but an epoch after them would start past the exact steps: its lines named, the rest read
    text = [CYCLEGAN.format(e=1, i=100, c="3.0"), CYCLEGAN.format(e=1, i=2**53 - 100, c="2.0"),
            CYCLEGAN.format(e=2, i=100, c="1.0"), CYCLEGAN.format(e=2, i=200, c="1.0")]
    run = read(write(tmp_path / "loss_log.txt", "\n".join(text) + "\n"))
    check(run.scalars, "loss/cycle_A", {100: 3.0, 2**53 - 100: 2.0}, count=2)
    (warning,) = run.warnings
    assert "2 line(s) look like pix2pix/CycleGAN metrics but could not be read, e.g. line 3" in warning.message


def test_junk_and_non_ascii_lines_are_passed_over(tmp_path):
    text = ["訓練開始 ✓ — Ünïcödé", "\x1b[31mwarning\x1b[0m: visdom не отвечает", "(epoch) G_A: x",
            HEADER, CYCLEGAN.format(e=1, i=100, c="3.0"), "����", CYCLEGAN.format(e=1, i=200, c="nan"),
            "Could not connect to Visdom server. ", CYCLEGAN.format(e=1, i=300, c="inf")]
    run = read(write(tmp_path / "loss_log.txt", "\n".join(text) + "\n"))
    got = curve(run.scalars, "loss/cycle_A")
    assert got[100] == 3.0 and math.isnan(got[200]) and got[300] == math.inf and len(got) == 3
    assert not run.warnings


def test_detect_needs_two_lines_of_the_format(tmp_path):
    reader = GanLossLogReader()

    def sniffs(name: str, text: str) -> bool:
        path = write(tmp_path / name, text)
        return reader.sniff(path, path.read_bytes()[:HEAD_BYTES])

    one, two = CYCLEGAN.format(e=1, i=100, c="3.0"), CYCLEGAN.format(e=1, i=200, c="2.0")
    assert sniffs("a.txt", "\n".join([HEADER, one, two]) + "\n")
    assert sniffs("b.log", "\n".join(["some banner", one, "saving", two]) + "\n")
    assert not sniffs("c.txt", "\n".join([HEADER, one, "End of epoch 1 / 200 \t Time Taken: 7 sec"]) + "\n")
    assert not sniffs("d.txt", "epoch: 1, iters: 100, D_A: 0.3\nepoch: 1, iters: 200, D_A: 0.2\n")
    assert not sniffs("e.txt", "Epoch 1, iters 100: D_A: 0.3\nEpoch 1, iters 200: D_A: 0.2\n")
    for fixture in (LOSS_LOG, CONSOLE):
        assert reader.sniff(fixture, fixture.read_bytes()[:HEAD_BYTES])


def _varied(count: int) -> str:
    """A console of several trainings: lines of two templates (a pair left out now and then, as forks print only the
    losses that are not 0), odd numbers, the epoch ends, learning rates and saving lines between."""
    out = []
    for training, (start, stop) in enumerate(((1, 6), (4, 7), (8, 9))):
        out += ["----------------- Options ---------------", "----------------- End -------------------"]
        total = 0
        for epoch in range(start, stop + 1):
            out.append(f"learning rate 0.{training}002000 -> 0.000{epoch}000")
            first = total
            for total in range((first // 7 + 1) * 7, first + 333 + 1, 7):
                value = "nan" if total % 1001 == 0 else f"{(total % 97) / 10:.3f}"
                idt = f"idt_A: {count % 5}.000 " if total % 11 else ""
                out.append(f"(epoch: {epoch}, iters: {total - first}, time: 0.{total % 1000:03d}, data: 0.001) "
                           f"D_A: {value} G_A: 0.364 cycle_A: 3.155 {idt}D_B: 0.381 ")
                if total % 700 == 0:
                    out.append(f"saving the latest model (epoch {epoch}, total_iters {total})")
            total = first + 333
            if epoch % 2 == 0:
                out.append(f"saving the model at the end of epoch {epoch}, iters {total}")
            out.append(f"End of epoch {epoch} / 9 \t Time Taken: {epoch * 3} sec")
    return "\n".join(out * count) + "\n"


def test_lines_read_at_once_by_their_template_as_each_on_its_own(tmp_path, monkeypatch):
    path = write(tmp_path / "train.log", _varied(2))
    reader = GanLossLogReader()
    for size in (None, 4096, 1 << 14):
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        (at_once,) = reader.read([path])
        monkeypatch.setattr(GanLossLogParser, "line_by_line", True)
        (by_line,) = reader.read([path])
        monkeypatch.setattr(GanLossLogParser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True)
        assert (at_once.notes, at_once.warnings, at_once.restarts) == (by_line.notes, by_line.warnings,
                                                                       by_line.restarts)
    frame = at_once.scalars
    # the first training's lines on its count's interval of 7 (its epochs 333 samples long); the second's, from
    # epoch 4 (where it began: 999), on its own; the third's, from epoch 8, after the second's epoch 7 (1998 + 333)
    check(frame, "loss/D_A", {7: 0.7})
    assert all(step % 7 == 0 for step in curve(frame, "loss/D_A") if step < 999)
    # every training continued after the samples seen: each tag's points in step order, no restart
    assert all(rows["step"].is_monotonic_increasing for _, rows in frame.groupby("tag", observed=True))
    assert at_once.restarts == []
    assert not at_once.warnings


def test_a_log_read_on_from_where_a_read_stopped_equals_it_read_whole(tmp_path):
    data = _varied(1).encode()
    whole = write(tmp_path / "whole" / "train.log", data)
    reader = GanLossLogReader()
    expected = reader.read_part(whole)
    scratch = tmp_path / "train.log"
    for cuts in ([len(data) // 3], [len(data) // 5, len(data) // 2 + 7, 4 * len(data) // 5]):
        part = read_on(reader, scratch, data, cuts)
        assert part.end == expected.end
        for name in expected.columns:
            np.testing.assert_array_equal(part.columns[name], expected.columns[name], err_msg=name)
        (combined,) = reader.combine([scratch], [part])
        (fresh,) = reader.combine([whole], [expected])
        pd.testing.assert_frame_equal(combined.scalar_table().drop(columns="run"),
                                      fresh.scalar_table().drop(columns="run"))
        assert combined.notes == fresh.notes and combined.restarts == fresh.restarts
