"""PaddlePaddle's suites' training consoles: PaddleSeg's from a real training (``tests/fixtures/paddle/generate.py``);
PaddleOCR's and PaddleClas's training scripts are not installable (they live in their repositories), so their lines
below are those their docs show from real trainings, with the values printed there."""

import math

from tanalyze import diagnose, load
from tanalyze.readers import HEAD_BYTES, get_reader
from tanalyze.readers.values import parse_timestamp
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

SEG = REPO / "tests" / "fixtures" / "paddle" / "paddleseg" / "train.log"

OCR = """[2022/08/08 16:28:20] ppocr INFO: Architecture :
[2022/08/08 16:28:20] ppocr INFO:     algorithm : LayoutXLM
[2022/08/08 16:28:28] ppocr INFO: epoch: [1/200], global_step: 10, lr: 0.000006, loss: 1.871535, avg_reader_cost: 0.28200 s, avg_batch_cost: 0.82318 s, avg_samples: 8.0, ips: 9.71838 samples/s, eta: 0:51:59
[2022/08/08 16:28:33] ppocr INFO: epoch: [1/200], global_step: 19, lr: 0.000018, loss: 1.461939, avg_reader_cost: 0.00042 s, avg_batch_cost: 0.32037 s, avg_samples: 6.9, ips: 21.53773 samples/s, eta: 0:37:55
[2022/08/08 16:28:39] ppocr INFO: cur metric, precision: 0.11526348939743859, recall: 0.19776657060518732, hmean: 0.14564265817747712, fps: 34.008392345050055
[2022/08/08 16:28:45] ppocr INFO: save best model is to ./output/ser_vi_layoutxlm_xfund_zh/best_accuracy
[2022/08/08 16:28:45] ppocr INFO: best metric, hmean: 0.14564265817747712, precision: 0.11526348939743859, recall: 0.19776657060518732, fps: 34.008392345050055, best_epoch: 1
[2025/08/30 18:00:18] ppocr INFO: epoch: [2/200], global_step: 28, lr: 0.000001, loss: 0.091679, loss_shrink_maps: 0.035711, avg_reader_cost: 0.00148 s, avg_batch_cost: 0.71354 s, avg_samples: 8.0, ips: 11.21165 samples/s, eta: 9 days, 2:29:27, max_mem_reserved: 14606 MB, max_mem_allocated: 12963 MB
"""

CLS = """[2022/07/05 10:38:20] ppcls INFO: [Train][Epoch 1/120][Iter: 0/5005]lr(PiecewiseDecay): 0.10000000, top1: 0.00000, top5: 0.00391, CELoss: 7.02506, loss: 7.02506, batch_cost: 6.29051s, reader_cost: 3.57217, ips: 40.69624 samples/s, eta: 43 days, 17:27:58
[2022/07/05 10:38:28] ppcls INFO: [Train][Epoch 1/120][Iter: 10/5005]lr(PiecewiseDecay): 0.10000000, top1: 0.00142, top5: 0.00604, CELoss: 8.36165, loss: 8.36165, batch_cost: 0.79642s, reader_cost: 0.02113, ips: 321.43838 samples/s, eta: 5 days, 12:52:01
[2022/07/05 11:38:28] ppcls INFO: [Train][Epoch 1/120][Avg]CELoss: 6.90000, loss: 6.90000, top1: 0.00200, top5: 0.00900
[2023/01/02 03:07:48] ppcls INFO: [Eval][Epoch 1][Iter: 0/157]CELoss: 0.01224, loss: 0.01224, top1: 1.00000, top5: 1.00000, batch_cost: 4.57323s, reader_cost: 0.76991, ips: 13.99447 images/sec
[2023/01/02 03:07:50] ppcls INFO: [Eval][Epoch 1][Avg]CELoss: 6.47000, loss: 6.47000, top1: 0.03100, top5: 0.10200
[2023/01/02 03:07:50] ppcls INFO: [Eval][Epoch 1][best metric: 0.031]
[2022/07/05 11:40:28] ppcls INFO: [Train][Epoch 2/120][Iter: 0/5005]lr(PiecewiseDecay): 0.10000000, top1: 0.03000, top5: 0.10000, CELoss: 6.40000, loss: 6.40000, batch_cost: 0.79642s, reader_cost: 0.02113, ips: 321.43838 samples/s, eta: 5 days, 12:52:01
"""


def test_a_real_paddleseg_training():
    (run,) = get_reader("paddle").read([SEG])
    frame = run.scalars
    check(frame, "loss", {10: 0.1992, 40: 0.0060, 120: 0.0036}, count=12)
    check(frame, "lr", {10: 0.046258, 120: 0.000516}, count=12)
    check(frame, "ips", {10: 461.1152}, count=12)
    # each evaluation right after the training line of its iteration
    check(frame, "eval/mIoU", {40: 0.9945, 80: 0.9929, 120: 0.9939}, count=3)
    check(frame, "eval/Dice", {40: 0.9972}, count=3)
    first = frame[frame["tag"] == "loss"].iloc[0]
    assert first["epoch"] == 2 and first["wall_time"] == parse_timestamp("2026-12-07 07:10:37")
    assert not {"eta", "ETA", "epoch", "iter"} & set(frame["tag"])
    assert "PaddleSeg training console: step = PaddleSeg's iter" in notes_text(run)
    assert "3 evaluation(s) as eval/<name>" in notes_text(run)
    assert not run.warnings


def test_a_real_paddleseg_training_is_found_and_judged():
    logs = load(SEG.parent, cache=False)
    (name,) = logs.runs
    assert logs.runs[name].format == "paddle"
    (result,) = diagnose(logs).values()
    assert result.verdict.label == "normal"  # (the loss fell from 0.20 to 0.0036, the mIoU stayed at 0.99)


def test_paddleocr_lines_at_their_global_step(tmp_path):
    path = write(tmp_path / "output" / "train.log", OCR)
    reader = get_reader("paddle")
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    frame = run.scalars
    check(frame, "loss", {10: 1.871535, 19: 1.461939, 28: 0.091679}, count=3)
    check(frame, "avg_reader_cost", {10: 0.282}, count=3)
    check(frame, "max_mem_reserved", {28: 14606.0}, count=1)
    assert curve(frame, "eval/hmean") == {19: 0.14564265817747712}  # at the step before it; "best metric" not read
    assert curve(frame, "eval/fps") == {19: 34.008392345050055}
    assert not {"eta", "avg_samples", "best_epoch", "epoch", "global_step"} & set(frame["tag"])
    assert frame[frame["tag"] == "loss"]["epoch"].tolist() == [1, 1, 2]
    assert frame[frame["tag"] == "loss"]["wall_time"].iloc[0] == parse_timestamp("2022-08-08 16:28:28")


def test_paddleclas_lines_at_their_iteration_and_an_epochs_evaluation_at_its_end(tmp_path):
    (run,) = get_reader("paddle").read([write(tmp_path / "train.log", CLS)])
    frame = run.scalars
    check(frame, "loss", {0: 7.02506, 10: 8.36165, 5005: 6.4}, count=3)
    check(frame, "lr", {0: 0.1}, count=3)  # (its scheduler's name left out)
    check(frame, "batch_cost", {10: 0.79642}, count=3)
    # the epoch's averages at its last iteration; its per-batch lines, the training average and the best not read
    assert curve(frame, "eval/loss") == {5004: 6.47} and curve(frame, "eval/top1") == {5004: 0.031}
    assert "PaddleClas's (epoch - 1) × iterations per epoch + iteration" in notes_text(run)


def test_a_training_line_that_cannot_be_read_is_named_and_a_restart_recorded(tmp_path):
    lines = OCR.splitlines()
    cut = "[2022/08/08 16:28:50] ppocr INFO: epoch: [1/200], lr: 0.000018, loss: 1.4"  # (no global_step)
    huge = lines[2].replace("global_step: 10,", "global_step: 99999999999999999999999,")  # (no exact step)
    again = lines[2].replace("16:28:28", "16:30:00")  # step 10 again, after 28: a restart
    text = "\n".join([*lines, cut, huge, again]) + "\n"
    (run,) = get_reader("paddle").read([write(tmp_path / "train.log", text)])
    (warning,) = run.warnings
    assert "2 line(s) look like PaddlePaddle metrics but could not be read, e.g. line 9" in warning.message
    assert "line 10: '[2022/08/08 16:28:28] ppocr INFO: epoch: [1/200], global_step: 999" in warning.message
    (restart,) = run.restarts
    assert restart.step == 10 and "after step 28 (line 11)" in restart.detail
    assert curve(run.scalars, "loss")[10] == 1.871535 and not math.isnan(curve(run.scalars, "loss")[28])


def test_other_logs_are_not_paddles(tmp_path):
    for text in ("epoch: [1/200], global_step: 10, loss: 1.8\nepoch: [1/200], global_step: 20, loss: 1.7\n",
                 "[TRAIN] epoch: 1, iter: 20/6000, loss: 2.5\n[TRAIN] epoch: 1, iter: 40/6000, loss: 2.4\n",
                 "[08/15 04:03:19] ppdet.engine INFO: Epoch: [0] [  20/1929] learning_rate: 0.064000 loss: 2.6\n" * 2):
        path = write(tmp_path / "train.log", text)
        assert not get_reader("paddle").sniff(path, path.read_bytes()[:HEAD_BYTES])


def _ocr_lines(count: int) -> str:
    """PaddleOCR training lines of several templates (the time left with days and without, a pair more), odd
    numbers among them (NaN, an exponent, a number that is no NUMBER), evaluations between."""
    lines = []
    for k in range(count):
        eta = "9 days, 2:29:27" if k % 97 < 40 else f"{k % 7}:04:1{k % 10}"
        loss = "nan" if k == 150 else "1.2.3" if k == 151 else f"{2 - k / 1000:.6f}"
        extra = ", loss_cbn: 0.007171" if 200 <= k < 230 else ""
        lines.append(f"[2026/08/06 10:{k // 60 % 60:02d}:{k % 60:02d}] ppocr INFO: epoch: [{k // 100 + 1}/50], "
                     f"global_step: {10 * (k + 1)}, lr: {'1e-05' if k % 13 == 0 else '0.000099'}, loss: {loss}{extra}, "
                     f"avg_reader_cost: 0.00106 s, avg_samples: 17.0, ips: 101.35329 samples/s, eta: {eta}, "
                     "max_mem_reserved: 5140 MB, max_mem_allocated: 4339 MB")
        if k % 50 == 49:
            lines.append(f"[2026/08/06 10:00:00] ppocr INFO: cur metric, acc: {k / 1000}, norm_edit_dis: 0.9, fps: 1600.5")
    return "\n".join(lines) + "\n"


def test_training_lines_read_at_once_by_their_template_as_each_on_its_own(tmp_path, monkeypatch):
    """A chunk's training lines whose pairs the first line's template has are read at once; the rows, notes,
    warnings and restarts are those of finding each line's pairs on its own, whatever the chunks."""
    from tanalyze.readers.text.paddle import PaddleParser
    from tests.readers.text_helpers import read_both_ways

    path = write(tmp_path / "train.log", _ocr_lines(400))
    run = read_both_ways("paddle", PaddleParser, path, monkeypatch, chunk_chars=(None, 4096, 1 << 14))
    loss = curve(run.scalars, "loss")
    assert math.isnan(loss[1510]) and loss[1520] == 1.2  # (as _PAIR reads "1.2.3": its number is "1.2")
    check(run.scalars, "loss", {10: 2.0, 4000: 1.601}, count=400)
    check(run.scalars, "lr", {10: 1e-05, 20: 0.000099}, count=400)
    check(run.scalars, "loss_cbn", {2010: 0.007171}, count=30)
    check(run.scalars, "eval/acc", {500: 0.049}, count=8)
    for path in (SEG, write(tmp_path / "ocr" / "train.log", OCR), write(tmp_path / "cls" / "train.log", CLS)):
        read_both_ways("paddle", PaddleParser, path, monkeypatch, chunk_chars=(None, 2048))


def test_a_training_line_with_a_long_run_of_letters_is_read_in_time(tmp_path):
    """Found by the long fuzz run: a damaged training line holding a long run of letters; the pairs' names,
    unbounded, were tried from each of its letters to its end (minutes). Names are now at most 128 characters,
    taken whole. The read is guarded so that a return of the old pattern fails instead of hanging."""
    from tests.fuzz.harness import read_direct

    lines = OCR.splitlines()
    lines[3] = lines[3].replace("loss: 1.461939", "loss: 1.461939, " + "x" * 200_000)
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    [run] = read_direct("paddle", tmp_path, ("train.log",), limit=20.0)
    assert curve(run.scalar_table(), "loss") == {10: 1.871535, 19: 1.461939, 28: 0.091679}
