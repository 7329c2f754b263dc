"""darknet's training output: lines as public training logs of AlexeyAB's and pjreddie's darknet print them
(no such log in the corpus, and darknet is not installable here: the lines below reproduce theirs)."""

import math

from tanalyze import diagnose, load
from tanalyze.readers import HEAD_BYTES, get_reader
from tests.readers.text_helpers import check, curve, notes_text, write

BANNER = (" CUDA-version: 11020 (11040), cuDNN: 8.1.0, GPU count: 1  \n OpenCV version: 4.5.1\n"
          "   layer   filters  size/strd(dil)      input                output\n"
          "   0 conv     32       3 x 3/ 1    416 x 416 x   3 ->  416 x 416 x  32 0.299 BF\n"
          "Total BFLOPS 59.585 \n")
REGION = ("v3 (iou loss, Normalizer: (iou: 0.07, obj: 1.00, cls: 1.00) Region 139 Avg (IOU: 0.326186), count: 5, "
          "class_loss = 280.7, iou_loss = 12.3, total_loss = 293.0 \n total_bbox = 15, rewritten_bbox = 0.000000 % \n")


def _alexeyab(iterations: int, start: int = 1) -> str:
    lines = []
    for i in range(start, start + iterations):
        loss = 1400 * math.exp(-i / 30) + 1.5
        lines.append(REGION * 3 + "\n")
        lines.append(f" {i}: {loss:.6f}, {loss * 1.01:.6f} avg loss, 0.001000 rate, 5.132000 seconds, {64 * i} images, "
                     f"{12.3 - i / 100:.6f} hours left\nLoaded: 0.000035 seconds\n")
    return "".join(lines)


EVALUATION = """
 calculation mAP (mean average precision)...
 Detection layer: 139 - type = 28
 detections_count = 1530, unique_truth_count = 295
 class_id = 0, name = smoke, ap = 71.23%   	 (TP = 245, FP = 30)
 class_id = 1, name = fire, ap = 65.10%   	 (TP = 120, FP = 44)

 for conf_thresh = 0.25, precision = 0.89, recall = 0.83, F1-score = 0.86
 for conf_thresh = 0.25, TP = 365, FP = 74, FN = 75, average IoU = 72.34 %

 IoU threshold = 50 %, used Area-Under-Curve for each unique Recall
 mean average precision (mAP@0.50) = 0.681650, or 68.17 %
Total Detection Time: 12 Seconds

 mean_average_precision (mAP@0.50) = 0.681650
New best mAP!
 Last accuracy mAP@0.50 = 68.17 %, best = 68.17 %
"""


def test_iterations_and_an_evaluation_of_alexeyabs_darknet(tmp_path):
    path = write(tmp_path / "train.log", BANNER + _alexeyab(100) + EVALUATION + _alexeyab(20, start=101))
    reader = get_reader("darknet")
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    frame = run.scalars
    first = 1400 * math.exp(-1 / 30) + 1.5
    check(frame, "loss", {1: float(f"{first:.6f}")}, count=120)
    check(frame, "avg_loss", {1: float(f"{first * 1.01:.6f}")}, count=120)
    check(frame, "lr", {1: 0.001, 120: 0.001}, count=120)
    check(frame, "iteration_time_s", {50: 5.132}, count=120)
    # the evaluation printed after iteration 100 is at iteration 100
    assert curve(frame, "mAP@0.50") == {100: 0.68165}
    assert curve(frame, "ap/smoke") == {100: 71.23 / 100} and curve(frame, "ap/fire") == {100: 65.10 / 100}
    assert curve(frame, "precision") == {100: 0.89} and curve(frame, "f1") == {100: 0.86}
    assert curve(frame, "average_iou") == {100: 72.34 / 100}
    assert "1 evaluation(s) (-map) at the iteration before them" in notes_text(run)
    assert not run.warnings


def test_pjreddies_lines_and_a_nan_loss(tmp_path):
    lines = "".join(f"{i}: {v}, {a} avg, 0.000100 rate, 3.500000 seconds, {64 * i} images\n"
                    for i, v, a in ((1, "719.302734", "719.302734"), (2, "-nan", "-nan"), (3, "650.5", "700.0")))
    (run,) = get_reader("darknet").read([write(tmp_path / "log.txt", "Loading weights\n" + lines)])
    values = curve(run.scalars, "loss")
    assert values[1] == 719.302734 and math.isnan(values[2]) and values[3] == 650.5
    check(run.scalars, "lr", {1: 0.0001}, count=3)


def test_an_iteration_line_cut_short_is_named(tmp_path):
    text = _alexeyab(3) + " 4: 0.5, avg loss\n" + _alexeyab(2, start=5)
    (run,) = get_reader("darknet").read([write(tmp_path / "train.log", text)])
    assert sorted(curve(run.scalars, "loss")) == [1, 2, 3, 5, 6]
    (warning,) = run.warnings
    assert "look like darknet metrics but could not be read" in warning.message and "line 28: '4: 0.5, avg loss'" in warning.message


def test_a_detectors_loss_that_settles_is_judged_as_one_not_as_a_classifier_at_chance(tmp_path):
    # a converged detector whose summed loss settles at 2.30 (ln 10, by chance): normal, not "at chance level"
    lines = "".join(f" {i}: {1200 * math.exp(-i / 8) + 2.30 + 0.004 * math.sin(i):.6f}, 3.0 avg loss, 0.001000 rate, "
                    f"5.1 seconds, {64 * i} images\n" for i in range(1, 201))
    write(tmp_path / "yolo" / "train.log", lines)
    (result,) = diagnose(load(tmp_path / "yolo", cache=False)).values()
    assert result.verdict.label == "normal" and "chance_level" not in result.verdict.evidence


def test_iteration_tokens_that_are_no_number_leave_their_line_unread_as_the_line_pattern_does(tmp_path):
    """The reader takes an iteration's four numbers as runs of a number's characters, then checks them: exactly
    the lines ``ITERATION`` (each number a ``NUMBER``) matches are read, at the steps and values it gives, and the
    others that look like iterations are named; an evaluation after a line not read is at the iteration before."""
    odd = ["1.2.3, 1.0 avg loss", "INF, 1.0 avg loss", "nAn, 1.0 avg loss", "-nan, -nan avg loss",
           "inf, Infinity avg loss", "1e5, 1E-3 avg", "5e, 1.0 avg loss", "0.5, 0.6 avg loss", "+.5, -2. avg loss",
           "0x1, 1.0 avg loss", "1_0, 1.0 avg loss", "INFINITY, 1.0 avg loss", "NaN, NAN avg loss"]
    lines = []
    for k, pair in enumerate(odd):
        step = 10 + k if k != 8 else 3  # (a restart, after lines not read)
        hours = ", x hours left" if k == 7 else ", 1.5 hours left"
        lines.append(f" {step}: {pair}, 0.001000 rate, 1.000000 seconds, 64 images{hours}\n")
        lines.append(REGION)
        if k in (1, 6):
            lines.append(EVALUATION)
    text = BANNER + _alexeyab(2) + "".join(lines) + _alexeyab(2, start=40)
    (run,) = get_reader("darknet").read([write(tmp_path / "train.log", text)])

    from tanalyze.readers.text.darknet import ITERATION, DarknetParser
    expected, unread = {}, []
    for number, line in enumerate(text.splitlines(), 1):
        m = ITERATION.match(line)
        if m is not None:
            expected[int(m.group(1))] = float(m.group(2))
        elif DarknetParser.lookalike.match(line) and "(mAP@" not in line:  # (an evaluation's mAP is read)
            unread.append(number)
    loss = curve(run.scalars, "loss")
    assert set(loss) == set(expected) and len(unread) == 5  # (INF, nAn, NaN: not even look-alike lines)
    assert all(math.isnan(expected[s]) if math.isnan(v) else v == expected[s] for s, v in loss.items())
    (warning,) = [w for w in run.warnings if "look like darknet metrics" in w.message]
    assert warning.message.startswith(f"{len(unread)} line(s)") and f"line {unread[0]}:" in warning.message
    # after 10 and 11 (not read): at iteration 2; after 16 (not read): at 15
    assert curve(run.scalars, "mAP@0.50") == {2: 0.68165, 15: 0.68165}
    assert [r.step for r in run.restarts] == [3]
