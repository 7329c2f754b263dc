import json
import math

from tanalyze import load
from tanalyze.readers.tabular.detectron2 import Detectron2Reader
from tests.conftest import real_log
from tests.readers.structured_helpers import check_points, curve, only_run


def test_metrics_json_with_an_aborted_first_attempt_at_iteration_19():
    name, info, frame = only_run(load(real_log("detectron2_metrics/Kevindic0214__detectron2_training/output")))
    assert info.format == "detectron2" and name == "output"
    # iteration 19 was written twice: the later write (the run that went on) is kept
    check_points(curve(frame, "total_loss"),
                 {19: 2.152726454194635, 159: 0.8835645178332925, 299: 0.3522665523341857}, 15)
    assert curve(frame, "fast_rcnn/fg_cls_accuracy")[19] == 0.7198067632850241
    assert curve(frame, "lr")[39] == 3.2717500000000007e-05
    assert frame["tag"].nunique() == 21 and "iteration" not in set(frame["tag"])
    (restart,) = info.restarts
    assert restart.step == 19 and restart.file.endswith("metrics.json")
    assert "21 earlier point(s) replaced" in restart.detail
    # last_checkpoint is a companion, not a log and not a warning
    assert info.hparams == {"last_checkpoint": "model_final.pth"} and len(info.files) == 2
    assert not info.warnings


def test_bad_lines_are_counted_and_eval_rows_join_their_iteration(tmp_path):
    lines = [
        {"iteration": 19, "total_loss": 1.0, "lr": 0.1},
        {"iteration": 39, "total_loss": 0.8, "lr": 0.1},
        {"iteration": 39, "bbox/AP": 12.5, "bbox/APs": float("nan")},
        {"no_iteration": 1},
        {"iteration": 1e30, "total_loss": 0.1},  # does not fit a step
        [1, 2],
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\nnot json\n" + '{"iteration": 59, "total_lo'
    path = tmp_path / "metrics.json"
    path.write_text(text)
    assert Detectron2Reader().sniff(path, path.read_bytes()[:4096])
    (run,) = Detectron2Reader().read([path])
    assert curve(run.scalars, "total_loss").to_dict() == {19: 1.0, 39: 0.8}
    assert curve(run.scalars, "bbox/AP").to_dict() == {39: 12.5}
    assert len(curve(run.scalars, "bbox/APs")) == 1  # a logged NaN is kept
    messages = " | ".join(f"{w.message} [{w.location}]" for w in run.warnings)
    assert "2 line(s) are not valid JSON and were skipped (the last line is cut off: file truncated?) [line 7, 8]" \
        in messages
    assert "1 line(s) are JSON but not objects" in messages
    assert "2 line(s) have no whole-number 'iteration'" in messages
    assert not run.restarts


def test_sniff_wants_iteration_in_the_first_object(tmp_path):
    reader = Detectron2Reader()
    other = tmp_path / "metrics.json"
    other.write_text('{"step": 1, "loss": 2}\n')
    assert not reader.sniff(other, other.read_bytes())
    lonely = tmp_path / "last_checkpoint"
    lonely.write_text("model_final.pth")
    assert not reader.sniff(lonely, lonely.read_bytes())  # no detectron2 metrics.json beside it


def test_coco_stats_not_computed_are_missing_values_with_a_note(tmp_path):
    """COCOEvaluator writes NaN for a stat COCOeval did not compute (its -1: no object of that size), its first
    releases -1 × 100: both are missing values (NaN), counted in a note; other values are kept as written."""
    lines = [
        {"iteration": 19, "total_loss": 1.0},
        {"iteration": 19, "bbox/AP": 12.5, "bbox/APs": 3.0, "bbox/APl": float("nan"), "segm/APl": -100.0},
        {"iteration": 39, "total_loss": 0.5},
        {"iteration": 39, "bbox/AP": 20.0, "bbox/APs": 4.0, "bbox/APl": float("nan"), "segm/APl": 7.5},
    ]
    path = tmp_path / "metrics.json"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    (run,) = Detectron2Reader().read([path])
    assert curve(run.scalars, "bbox/AP").to_dict() == {19: 12.5, 39: 20.0}
    assert curve(run.scalars, "bbox/APs").to_dict() == {19: 3.0, 39: 4.0}
    assert curve(run.scalars, "total_loss").to_dict() == {19: 1.0, 39: 0.5}
    apl = curve(run.scalars, "bbox/APl")
    assert list(apl.index) == [19, 39] and apl.isna().all()
    segm = curve(run.scalars, "segm/APl")
    assert math.isnan(segm[19]) and segm[39] == 7.5  # -100 (an old release's 'not computed') is no score
    assert ("3 COCO metric value(s) logged as NaN (or -100 by old releases) are missing (NaN): pycocotools gives -1 "
            "for a stat it did not compute (no ground-truth objects of that size in the evaluated images), no score; "
            "under bbox/APl (2), segm/APl") in run.notes
