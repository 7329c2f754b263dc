"""Ultralytics YOLO's training console: real trainings of ultralytics 8.4 (``tests/fixtures/ultralytics_console``,
``generate.py``: detection, segmentation, classification, into a file and on a terminal) beside their own
results.csv, and lines made from the format strings of Ultralytics 8.0-8.3 (tqdm's bar) and YOLOv5, with their
values."""

import math

import pandas as pd
import pytest

from tanalyze.readers import HEAD_BYTES, get_reader
from tanalyze.readers.text import _parts
from tanalyze.readers.text.ultralytics_console import (
    UltralyticsConsoleReader,
    detect_ultralytics_console,
    validation_columns,
)
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, read_on, write

FIXTURES = REPO / "tests" / "fixtures" / "ultralytics_console"
DETECT = FIXTURES / "detect" / "train.log"
TTY = FIXTURES / "detect_tty.log"
SEGMENT = FIXTURES / "segment" / "train.log"
CLASSIFY = FIXTURES / "classify" / "train.log"
LOSSES = ("train/box_loss", "train/cls_loss", "train/dfl_loss")
BOX = ("metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)")


def _read(path):
    (run,) = UltralyticsConsoleReader().read([path])
    return run


def _agrees(printed: float, value: float, digits: int) -> bool:
    """Whether ``printed`` is ``value`` to ``digits`` significant digits: within half a unit of its last digit (the
    CSV's own 6 digits may round the other way at the half: 2.0475 printed 2.048)."""
    if value == 0:
        return printed == 0
    unit = 10.0 ** (math.floor(math.log10(abs(value))) - digits + 1)
    return abs(printed - value) <= unit / 2 + abs(value) * 1e-6


def _results_csv(log):
    """The results.csv the same training wrote, as its reader reads it."""
    task = log.parent.name
    (run,) = get_reader("yolo_csv").read([log.parent / "runs" / task / "train" / "results.csv"])
    return run.scalars


# -- lines made from Ultralytics' and YOLOv5's format strings ----------------------------------------------------
def _header(*losses: str, names=("Epoch", "GPU_mem", "Instances", "Size")) -> str:
    return ("%11s" * (4 + len(losses))) % (names[0], names[1], *losses, names[2], names[3])


def _desc(epoch: str, memory: float, losses: list[float], instances: int = 8, size: int = 640) -> str:
    return ("%11s" * 2 + "%11.4g" * (2 + len(losses))) % (epoch, f"{memory:.3g}G", *losses, instances, size)


def _tqdm_bar(i: int, n: int) -> str:
    """tqdm's ``{l_bar}{bar:10}{r_bar}`` after the description (Ultralytics before it drew its own bar, YOLOv5)."""
    filled = 10 * i // n
    return f" {100 * i // n:3d}%|{'█' * filled}{' ' * (10 - filled)}| {i}/{n} [00:{i:02d}<00:{n - i:02d},  2.70it/s]"


def _row(name: str, counts: tuple[int, ...], metrics: list[float]) -> str:
    return ("%22s" + "%11i" * len(counts) + "%11.3g" * len(metrics)) % (name, *counts, *metrics)


VALIDATION = ("%22s" + "%11s" * 6) % ("Class", "Images", "Instances", "Box(P", "R", "mAP50", "mAP50-95)")
YOLOV5_VALIDATION = ("%22s" + "%11s" * 6) % ("Class", "Images", "Instances", "P", "R", "mAP50", "mAP50-95")


def _losses(epoch: int) -> list[float]:
    return [1.5 / epoch, 2.0 / epoch, 1.2 / epoch + 0.1]


def _metrics(epoch: int) -> list[float]:
    return [0.5 + epoch / 100, 0.3 + epoch / 100, 0.25 + epoch / 100, 0.125 + epoch / 100]


def _tqdm_log(epochs: int = 3, batches: int = 5, *, yolov5: bool = False, first: int = 1) -> str:
    """A training as Ultralytics 8.0-8.3 (or YOLOv5's train.py, epochs from 0) prints it into a file: each batch's
    redraw after ``\\r`` (the values of an earlier batch on all but the last), a validation bar, its ``all`` row."""
    banner = ("YOLOv5 \U0001f680 v7.0-114-g3c0a6e6 Python-3.10.6 torch-1.13.1+cu117" if yolov5 else
              "Ultralytics YOLOv8.0.196 \U0001f680 Python-3.10.12 torch-2.0.1+cu118")
    out = [banner + " CUDA:0 (Tesla T4, 15102MiB)\n"]
    for epoch in range(first, first + epochs):
        out.append("\n" + _header("box_loss", "obj_loss" if yolov5 else "cls_loss",
                                  "cls_loss" if yolov5 else "dfl_loss") + "\n")
        shown = f"{epoch}/{first + epochs - 1}"  # (YOLOv5: 0/2 … 2/2)
        for i in range(batches + 1):
            values = _losses(epoch + 1 if yolov5 else epoch) if i == batches else [9.0 + i, 9.5, 9.9]
            out.append(f"\r{_desc(shown, 3.41, values)}:{_tqdm_bar(i, batches)}")
        out.append("\n")
        validation = YOLOV5_VALIDATION if yolov5 else VALIDATION
        out += [f"\r{validation}:{_tqdm_bar(i, 2)}" for i in range(3)]
        out.append("\n" + _row("all", (128, 929), _metrics(epoch + 1 if yolov5 else epoch)) + "\n")
    return "".join(out)


# -- real trainings ----------------------------------------------------------------------------------------
def test_a_real_detection_training_into_a_file():
    reader = UltralyticsConsoleReader()
    assert reader.sniff(DETECT, DETECT.read_bytes()[:HEAD_BYTES])
    run = _read(DETECT)
    frame = run.scalars
    # each epoch's bar, its last redraw (after its 20th batch): the epoch's mean of each loss
    check(frame, "train/box_loss", {1: 6.359, 2: 5.526, 3: 4.005, 4: 3.388, 5: 2.397, 6: 2.048}, count=6)
    check(frame, "train/cls_loss", {1: 3.867, 5: 1.282, 6: 1.17}, count=6)
    check(frame, "train/dfl_loss", {1: 4.111, 6: 2.301}, count=6)
    check(frame, "gpu_mem_gb", {1: 0.0, 6: 0.0}, count=6)  # (on the CPU: 0G)
    check(frame, "metrics/precision(B)", {1: 0.0, 5: 0.0, 6: 0.992}, count=6)
    check(frame, "metrics/recall(B)", {6: 0.5}, count=6)
    check(frame, "metrics/mAP50(B)", {6: 0.61}, count=6)
    check(frame, "metrics/mAP50-95(B)", {6: 0.376}, count=6)
    # the final validation of best.pt: at the last epoch, as final/; its per-class rows not read
    assert curve(frame, "final/metrics/mAP50-95(B)") == {6: 0.376}
    assert curve(frame, "final/metrics/precision(B)") == {6: 0.992}
    assert len({tag for tag in frame["tag"] if tag.startswith("final/")}) == 4
    assert frame["wall_time"].isna().all()
    notes = notes_text(run)
    assert "6 validation(s)" in notes and "1 final validation(s)" in notes
    assert "2 per-class row(s) of the final validation not read" in notes
    assert "6 epoch(s) completed in 0.006 hours" in notes and "stopped before its last batch" not in notes
    assert not run.warnings and not run.restarts
    assert run.hparams["task"] == "detect" and run.hparams["epochs"] == 6 and run.hparams["imgsz"] == 64
    assert run.hparams["batch"] == 8 and run.hparams["time"] is None and run.hparams["amp"] is False


@pytest.mark.parametrize("log", [DETECT, SEGMENT, CLASSIFY], ids=["detect", "segment", "classify"])
def test_the_console_agrees_with_the_results_csv_of_the_same_training(log):
    """Every tag of the console is a column of results.csv (val/ losses, lr/ and time are only there), at the same
    epochs, each value the CSV's as the console prints it (4 significant digits for losses, 3 for metrics)."""
    console = _read(log).scalars
    table = _results_csv(log)
    tags = {tag for tag in console["tag"] if not tag.startswith("final/") and tag != "gpu_mem_gb"}
    assert tags == {tag for tag in table["tag"] if tag.startswith(("train/", "metrics/"))}
    for tag in sorted(tags):
        ours, theirs = curve(console, tag), curve(table, tag)
        assert sorted(ours) == sorted(theirs), tag
        digits = 4 if tag.startswith("train/") else 3
        for step, value in theirs.items():
            assert _agrees(ours[step], value, digits), (tag, step, ours[step], value)


def test_the_same_training_on_a_terminal_reads_the_same():
    """On a (pseudo-)terminal: CRLF line ends, the same redraws; the same training (seed 0) gives the same rows."""
    tty, file = _read(TTY), _read(DETECT)
    pd.testing.assert_frame_equal(tty.scalars.drop(columns="run"), file.scalars.drop(columns="run"), check_exact=True)
    assert not tty.warnings and "6 validation(s)" in notes_text(tty)


def test_segmentation_and_classification_headers_name_their_columns():
    segment = _read(SEGMENT).scalars
    check(segment, "train/seg_loss", {1: 6.459, 2: 4.294, 3: 2.266}, count=3)
    check(segment, "train/sem_loss", {1: 0.0}, count=3)
    check(segment, "train/box_loss", {3: 5.382}, count=3)
    for tag in (*BOX, "metrics/precision(M)", "metrics/recall(M)", "metrics/mAP50(M)", "metrics/mAP50-95(M)"):
        check(segment, tag, {1: 0.0, 3: 0.0}, count=3)
        assert curve(segment, "final/" + tag) == {3: 0.0}
    run = _read(CLASSIFY)
    classify = run.scalars
    check(classify, "train/loss", {1: 1.254, 2: 0.6411, 3: 0.3079}, count=3)
    check(classify, "metrics/accuracy_top1", {1: 0.5, 2: 1.0, 3: 1.0}, count=3)
    check(classify, "metrics/accuracy_top5", {1: 1.0}, count=3)
    assert curve(classify, "final/metrics/accuracy_top1") == {3: 1.0}
    assert "per-class" not in notes_text(run) and not run.warnings
    assert validation_columns("Images Instances Box(P R mAP50 mAP50-95) Pose(P R mAP50 mAP50-95)") == (
        2, (*BOX, "metrics/precision(P)", "metrics/recall(P)", "metrics/mAP50(P)", "metrics/mAP50-95(P)"))


def test_a_log_pasted_from_a_terminal_keeps_only_each_bars_last_redraw(tmp_path):
    """What a terminal shows (each line's last redraw, as a pasted log keeps it) reads as the log with every redraw."""
    text = DETECT.read_bytes().decode()
    pasted = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    assert "\r" not in pasted
    run = _read(write(tmp_path / "training_output.txt", pasted))
    pd.testing.assert_frame_equal(run.scalars.drop(columns="run"), _read(DETECT).scalars.drop(columns="run"),
                                  check_exact=True)
    assert not run.warnings


# -- other versions ----------------------------------------------------------------------------------------------
def test_tqdm_bars_of_ultralytics_8_0_to_8_3(tmp_path):
    path = write(tmp_path / "train.log", _tqdm_log())
    assert UltralyticsConsoleReader().sniff(path, path.read_bytes()[:HEAD_BYTES])
    run = _read(path)
    frame = run.scalars
    check(frame, "train/box_loss", {1: 1.5, 2: 0.75, 3: 0.5}, count=3)  # (the last redraw's, not the 9.x before)
    check(frame, "train/cls_loss", {1: 2.0, 2: 1.0, 3: 0.6667}, count=3)
    check(frame, "train/dfl_loss", {1: 1.3, 3: 0.5}, count=3)
    check(frame, "gpu_mem_gb", {1: 3.41}, count=3)
    check(frame, "metrics/precision(B)", {1: 0.51, 3: 0.53}, count=3)
    check(frame, "metrics/recall(B)", {1: 0.31}, count=3)
    check(frame, "metrics/mAP50(B)", {2: 0.27}, count=3)
    check(frame, "metrics/mAP50-95(B)", {3: 0.155}, count=3)
    assert not run.warnings and not run.restarts and "3 validation(s)" in notes_text(run)


def test_yolov5_counts_its_epochs_from_0_and_names_its_columns_as_its_results_csv(tmp_path):
    run = _read(write(tmp_path / "train.log", _tqdm_log(yolov5=True, first=0)))
    frame = run.scalars
    check(frame, "train/box_loss", {0: 1.5, 1: 0.75, 2: 0.5}, count=3)
    check(frame, "train/obj_loss", {0: 2.0}, count=3)
    check(frame, "train/cls_loss", {0: 1.3}, count=3)
    check(frame, "metrics/precision", {0: 0.51}, count=3)
    check(frame, "metrics/recall", {2: 0.33}, count=3)
    check(frame, "metrics/mAP_0.5", {1: 0.27}, count=3)
    check(frame, "metrics/mAP_0.5:0.95", {2: 0.155}, count=3)
    assert not run.warnings
    # YOLOv5 6.x: lower-case header, the box loss as 'box', 'mAP@.5:.95'
    assert validation_columns("Images Labels P R mAP@.5 mAP@.5:.95") == (
        2, ("metrics/precision", "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95"))
    old = ("\n" + _header("box", "obj", "cls", names=("Epoch", "gpu_mem", "labels", "img_size")) + "\n"
           + "".join(f"{_desc(f'{e}/9', 1.2, _losses(e + 1))}:{_tqdm_bar(4, 4)}\n" for e in range(2)))
    check(_read(write(tmp_path / "v6.log", old)).scalars, "train/obj_loss", {0: 2.0, 1: 1.0}, count=2)


def test_a_pose_training_and_its_early_stop(tmp_path):
    losses = ("box_loss", "pose_loss", "kobj_loss", "cls_loss", "dfl_loss")
    pose = ("%22s" + "%11s" * 10) % ("Class", "Images", "Instances", "Box(P", "R", "mAP50", "mAP50-95)", "Pose(P",
                                     "R", "mAP50", "mAP50-95)")
    lines = []
    for epoch in (1, 2):
        lines += ["", _header(*losses), f"{_desc(f'{epoch}/50', 5.2, [1.1 * epoch, 2.2, 0.33, 1.4, 1.05])}: 100% "
                  f"━━━━━━━━━━━━ 36/36 2.3it/s 15.4s", f"{pose}: 100% ━━━━━━━━━━━━ 4/4 4.1it/s 1.0s",
                  _row("all", (60, 140), [0.9, 0.8, 0.85, 0.6, 0.7 + epoch / 10, 0.5, 0.55, 0.25])]
    lines += ["EarlyStopping: Training stopped early as no improvement observed in last 1 epochs. Best results "
              "observed at epoch 1, best model saved as best.pt.", ""]
    run = _read(write(tmp_path / "train.log", "\n".join(lines)))
    frame = run.scalars
    check(frame, "train/pose_loss", {1: 2.2, 2: 2.2}, count=2)
    check(frame, "train/kobj_loss", {2: 0.33}, count=2)
    check(frame, "train/box_loss", {1: 1.1, 2: 2.2}, count=2)
    check(frame, "metrics/precision(P)", {1: 0.8, 2: 0.9}, count=2)
    check(frame, "metrics/mAP50-95(P)", {2: 0.25}, count=2)
    check(frame, "metrics/mAP50-95(B)", {1: 0.6}, count=2)
    assert "training stopped early as no improvement observed in last 1 epochs" in notes_text(run)


# -- restarts, lines that cannot be read, junk -----------------------------------------------------------------
def test_a_resumed_training_is_a_restart_and_its_later_epochs_win(tmp_path):
    """The job stopped in the middle of epoch 4 (after its 10th redraw); resumed from epoch 3, it appends epochs 3-6:
    the step going back is recorded at its line, the rows of both kept, the later write of an epoch winning."""
    text = DETECT.read_bytes().decode()
    stop = text.index("\r", text.index("       4/6 ") + 1)
    for _ in range(9):
        stop = text.index("\r", stop + 1)
    again = text.index("\n      Epoch", text.index("      2/6 "))
    first = text[:stop] + "\n"
    resumed = first + "Resuming training yolov8n.yaml from epoch 3 to 6 total epochs\n" + text[again:]
    path = write(tmp_path / "train.log", resumed)
    run = _read(path)
    (restart,) = run.restarts
    line = next(n for n, line in enumerate(resumed.split("\n"), 1)
                if n > first.count("\n") and line.lstrip("\r\x1b[K").startswith("        3/6 "))
    assert restart.step == 3 and f"step 3 logged again after step 4 (line {line})" in restart.detail
    whole = _read(DETECT).scalars
    for tag in (*LOSSES, *BOX):
        assert curve(run.scalars, tag) == curve(whole, tag), tag  # (epoch 4's values: the resumed job's)
    notes = notes_text(run)
    assert "1 epoch(s) whose bar stopped before its last batch" in notes and "replaced by the later write" in notes


def test_lines_that_cannot_be_read_are_named(tmp_path):
    """A bar whose description a narrow terminal cut short ('…'), an ``all`` row with a column missing, an epoch past
    2**53: named in a warning with their lines, the other epochs read."""
    lines = _tqdm_log().split("\n")
    cut = next(n for n, line in enumerate(lines) if "2/3 " in line)
    lines[cut] = lines[cut].rsplit("\r", 1)[0] + "\r        2/3      3.41G       0.75…: 100%|██████████| 5/5"
    row = next(n for n, line in enumerate(lines) if line.lstrip().startswith("all") and n > cut)
    lines[row] = _row("all", (128, 929), [0.52, 0.32, 0.27])
    huge = f"{_desc('99999999999999999999/3', 3.41, _losses(4))}:{_tqdm_bar(5, 5)}"
    path = write(tmp_path / "train.log", "\n".join([*lines[:-1], huge, ""]))
    run = _read(path)
    (warning,) = run.warnings
    assert warning.count == 3 and "3 line(s) look like Ultralytics metrics but could not be read" in warning.message
    assert f"line {cut + 1}:" in warning.message and f"line {row + 1}:" in warning.message
    assert "99999999999999999999/3" in warning.message
    check(run.scalars, "train/box_loss", {1: 1.5, 3: 0.5}, count=2)
    check(run.scalars, "metrics/precision(B)", {1: 0.51, 3: 0.53}, count=2)
    assert not run.restarts


def test_junk_and_non_ascii_lines_between_and_inside_the_bars(tmp_path):
    """Lines of other text (a warning inside an epoch's redraws, non-ASCII, NUL bytes, a byte that is no UTF-8,
    a colour code) change nothing: the same rows, no warning."""
    data = DETECT.read_bytes()
    at = data.index(b"\r", data.index(b"       2/6 ") + 200)
    junk = ("\n\x1b[33mWARNING ⚠️ \x00\x00 Ünïcödé 日本語: 1/2 3G, all 5 nan\x1b[0m\n".encode() + b"\xff\xfe junk\n")
    path = write(tmp_path / "train.log", data[:at] + junk + data[at:])
    run = _read(path)
    pd.testing.assert_frame_equal(run.scalars.drop(columns="run"), _read(DETECT).scalars.drop(columns="run"),
                                  check_exact=True)
    assert not run.warnings and not run.restarts


def test_a_job_stopped_mid_epoch_keeps_its_last_redraw(tmp_path):
    """The log ends in the middle of epoch 3's bar, without a line break: the last redraw drawn, the mean of the
    batches so far, read and noted; a redraw cut mid-write after it is named."""
    text = _tqdm_log()
    stop = text.index("\r", text.index("       3/3 ") + 1)
    run = _read(write(tmp_path / "train.log", text[:stop]))
    assert curve(run.scalars, "train/box_loss") == {1: 1.5, 2: 0.75, 3: 9.0}
    assert "1 epoch(s) whose bar stopped before its last batch" in notes_text(run) and not run.warnings
    cut = _read(write(tmp_path / "cut.log", text[:stop] + "\r        3/3      3.41G       9.1"))
    assert curve(cut.scalars, "train/box_loss") == {1: 1.5, 2: 0.75, 3: 9.0}
    (warning,) = cut.warnings
    assert "the last line ends without a line break and could not be read" in warning.message


@pytest.mark.parametrize("size", [700, 1024, 4096, 1 << 14])
def test_chunk_boundaries_anywhere_give_the_same_rows(size, monkeypatch):
    """Chunks that end inside a run of redraws (a line of redraws longer than a chunk is cut after a redraw), between
    a bar and its validation, inside a row: the same rows. (The trainer's arguments, one line of 1.8 KB, are whole
    in a chunk of 4 KB.)"""
    whole = {path: _read(path) for path in (DETECT, SEGMENT, CLASSIFY)}
    monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
    for path, expected in whole.items():
        run = _read(path)
        pd.testing.assert_frame_equal(run.scalars, expected.scalars, check_exact=True, obj=f"{path.name} at {size}")
        assert run.warnings == expected.warnings == [] and run.restarts == expected.restarts
        assert size < 4096 or run.hparams == expected.hparams


def test_a_log_read_on_from_a_cut_equals_the_log_read_whole(tmp_path):
    """A log still being written, read on from where each read stopped (inside a run of redraws, after an epoch's
    last redraw, inside an ``all`` row, before the final validation): the run of the whole log."""
    data = DETECT.read_bytes()
    copy = write(tmp_path / "whole" / "train.log", data)
    reader = UltralyticsConsoleReader()
    (whole,) = reader.combine([copy], [reader.read_part(copy)])
    places = [data.index(b"       3/6 ") + 40, data.index(b"20/20", data.index(b"       3/6 ")) + 20,
              data.index(b"all", data.index(b"       4/6 ")) + 20, data.index(b"Validating"), len(data) * 3 // 4]
    scratch = tmp_path / "train.log"
    for cuts in [[place] for place in places] + [places]:
        (run,) = reader.combine([scratch], [read_on(reader, scratch, data, cuts)])
        pd.testing.assert_frame_equal(run.scalar_table(), whole.scalar_table(), check_exact=True, obj=f"cut at {cuts}")
        assert run.notes == whole.notes and not run.warnings and run.hparams == whole.hparams


def test_detection_needs_two_lines_of_the_format(tmp_path):
    header = _header("box_loss", "cls_loss", "dfl_loss")
    bar = f"{_desc('1/50', 7.25, [1.234, 2.345, 1.456])}: 100% ━━━━━━━━━━━━ 75/75 3.1it/s 24.2s"
    assert detect_ultralytics_console(f"{header}\n{bar}\n")
    assert detect_ultralytics_console(f"{bar}\n\n{bar.replace('1/50', '2/50')}\n")
    assert not detect_ultralytics_console(f"{bar}\n")
    assert not detect_ultralytics_console(f"{header}\n")
    for text in (f"{VALIDATION}\n{_row('all', (300, 812), [0.711, 0.452, 0.503, 0.287])}\n" * 2,
                 "Epoch 1:  44%|████▍     | 22/50 [00:00<00:00, 152.15it/s, v_num=0, train_loss=0.0485]\n" * 2,
                 " 4259: 0.034688, 0.045240 avg loss, 0.001000 rate, 0.923000 seconds, 272576 images\n" * 2,
                 "1/10 train: 100%|██████████| 50/50 [00:03<00:00, loss=0.5]\n" * 2):
        path = write(tmp_path / "train.log", text)
        assert not UltralyticsConsoleReader().sniff(path, path.read_bytes()[:HEAD_BYTES]), text

