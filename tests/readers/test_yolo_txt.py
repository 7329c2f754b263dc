"""YOLOv5's ``results.txt`` (before v6): lines written with the format strings of YOLOv5's own ``train.py``
(``'%10s' * 2 + '%10.4g' * 6`` then ``'%10.4g' * 7``); no such file in the corpus, and that YOLOv5 needs a
dataset download to train."""

import math

from tanalyze import load
from tanalyze.discover import discover
from tanalyze.readers import HEAD_BYTES, get_reader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURE = REPO / "tests" / "fixtures" / "yolo_txt" / "runs" / "train" / "exp"


def epoch_line(epoch: int, last: int, shift: float = 0.0) -> str:
    """One epoch as YOLOv5 v3-v5's train.py writes it: memory, mean box/obj/cls/total loss, targets, image size,
    then P, R, mAP@.5, mAP@.5:.95 and the validation's box/obj/cls losses."""
    box, obj = 0.08 * math.exp(-epoch / 20) + 0.02 + shift, 0.07 * math.exp(-epoch / 25) + 0.02
    cls = 0.027 * math.exp(-epoch / 10)
    train = ("%10s" * 2 + "%10.4g" * 6) % (f"{epoch}/{last}", "3.33G", box, obj, cls, box + obj + cls, 46, 640)
    val = "%10.4g" * 7 % (0.1 + epoch / 40, 0.05 + epoch / 40, 0.003 + epoch / 50, 0.001 + epoch / 100,
                          box * 0.9, obj * 0.8, cls * 0.9)
    return train + val + "\n"


def test_a_yolov5_run_folder_with_its_settings():
    logs = load(FIXTURE.parents[2], cache=False)
    (name,) = logs.runs
    info = logs.runs[name]
    assert name.endswith("runs/train/exp") and info.format == "yolo_txt"
    frame = logs.scalars_of(name)
    check(frame, "train/box_loss", {0: 0.1, 29: float("%.4g" % (0.08 * math.exp(-29 / 20) + 0.02))}, count=30)
    check(frame, "metrics/mAP_0.5", {0: 0.003, 10: float("%.4g" % (0.003 + 10 / 50))}, count=30)
    check(frame, "val/obj_loss", {0: float("%.4g" % (0.09 * 0.8))}, count=30)
    assert "train/total_loss" not in set(frame["tag"].astype(str))
    assert info.hparams == {"lr0": 0.01, "momentum": 0.937, "weights": "yolov5s.pt", "epochs": 30, "batch_size": 16,
                            "img_size": 640}
    assert not info.warnings


def test_a_resumed_run_keeps_the_later_write_and_a_bad_line_is_named(tmp_path):
    # --resume from the checkpoint of epoch 3: epochs 4 and 5 logged again, with other values
    lines = [epoch_line(e, 9) for e in range(6)] + ["garbage line\n"] + [epoch_line(e, 9, 0.001) for e in range(4, 10)]
    path = write(tmp_path / "exp2" / "results.txt", "".join(lines))
    reader = get_reader("yolo_txt")
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    box = curve(run.scalars, "train/box_loss")
    assert sorted(box) == list(range(10)) and box[4] == float("%.4g" % (0.08 * math.exp(-4 / 20) + 0.021))
    (restart,) = run.restarts
    assert restart.step == 4
    (warning,) = run.warnings
    assert warning.location == "line 7" and "not of YOLOv5's results.txt shape" in warning.message
    assert "step = the epoch as written" in notes_text(run)


def test_other_results_txt_and_configs_without_one_are_not_taken(tmp_path):
    reader = get_reader("yolo_txt")
    text = write(tmp_path / "a" / "results.txt", "accuracy: 0.93\nloss: 0.2\n")
    assert not reader.sniff(text, text.read_bytes())
    alone = write(tmp_path / "b" / "opt.yaml", "epochs: 3\n")
    assert not reader.sniff(alone, alone.read_bytes())
    found = discover(FIXTURE)
    assert [spec.format for spec in found.runs] == ["yolo_txt"] and not found.unrecognized
