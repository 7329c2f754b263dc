"""DETR-family log.txt: the real logs of PukarBaral/sten_detr and Moqixis/object_detection_detr, and damaged copies."""

import json
import math

from tanalyze import load
from tanalyze.readers.tabular.detr import DetrReader
from tests.conftest import real_log
from tests.readers.text_helpers import check, curve, notes_text, write

MOQIXIS = "detr_log_txt/Moqixis__object_detection_detr/outputs/log.txt"
STEN = "detr_log_txt/PukarBaral__sten_detr/outputs/log.txt"


def _read(path):
    reader = DetrReader()
    assert reader.sniff(path, path.read_bytes()[:4096])  # the first line is longer than the sniffed head
    (run,) = reader.read([path])
    return run


def test_300_epoch_run_with_coco_stats_by_name():
    run = _read(real_log(STEN))
    frame = run.scalars
    check(frame, "train_loss", {0: 16.838505818367004, 299: 1.631428750514984}, count=300)
    check(frame, "test_coco_eval_bbox/AP", {0: 0.00014992437624753214, 299: 0.04486012489267438}, count=300)
    check(frame, "test_coco_eval_bbox/AP50", {0: 0.0005592182254874703}, count=300)
    check(frame, "test_coco_eval_bbox/APs", {0: 0.0029702970297029695}, count=300)
    check(frame, "test_coco_eval_bbox/ARs", {0: 0.0012195121951219512}, count=300)
    check(frame, "test_coco_eval_bbox/ARm", {0: 0.0075000000000000015}, count=300)
    # APl and ARl are -1 (no large objects in this data set) in every epoch: not computed, no scores: missing
    for tag in ("test_coco_eval_bbox/APl", "test_coco_eval_bbox/ARl"):
        values = curve(frame, tag)
        assert sorted(values) == list(range(300)) and all(math.isnan(v) for v in values.values())
    assert ("600 COCO metric value(s) logged as -1 are missing (NaN): pycocotools gives -1 for a stat it did not "
            "compute (no ground-truth objects of that size in the evaluated images), no score; under "
            "test_coco_eval_bbox/APl (300), test_coco_eval_bbox/ARl (300)") in notes_text(run)
    check(frame, "train_lr", {0: 0.0001000000000000008, 299: 9.99999999999993e-06})
    assert "n_parameters" not in set(frame["tag"]) and run.hparams == {"n_parameters": 41253894}
    assert frame.loc[frame["tag"] == "train_loss", "epoch"].tolist()[:3] == [0.0, 1.0, 2.0]
    assert run.warnings == [] and run.restarts == []


def test_two_sessions_appended_to_one_log():
    run = _read(real_log(MOQIXIS))
    frame = run.scalars
    # the second session (lines 6-7, epochs 0-1) starts over: a new phase after the first (lines 1-5, epochs 0-4)
    check(frame, "train_loss", {0: 4.234414317799276, 4: 2.571670105837736, 5: 4.12762659557747,
                                6: 3.007559477160542}, count=7)
    check(frame, "test_coco_eval_bbox/AP", {5: 0.7292430729342911, 6: 0.7597355857037735}, count=7)
    notes = notes_text(run)
    assert "2 training sessions appended to this file (epochs 0–4 from line 1; epochs 0–1 from line 6)" in notes
    assert not run.restarts
    first, second = run.phases
    assert (first.first_step, first.last_step, second.first_step, second.last_step, second.offset) == (0, 4, 5, 6, 5)
    assert run.phases[1].detail.startswith("epoch went back from 4 to 0: a new session appended to the log")
    assert frame.loc[frame["tag"] == "train_loss", "epoch"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_junk_cut_last_line_and_empty_file(tmp_path):
    rows = [{"train_loss": 2.0, "test_coco_eval_bbox": [0.5] + [-1] * 11, "epoch": 0, "n_parameters": 10},
            {"train_loss": 1.5, "test_acc1": 40.0, "note": "text", "epoch": 1, "n_parameters": 10}]
    text = "\n".join(json.dumps(r) for r in rows) + "\nnot json\n{\"epoch\": \"x\", \"train_loss\": 1}\n"
    text += '{"train_loss": 1.2, "epoch": 2, "test_l'
    path = write(tmp_path / "log.txt", text)
    run = _read(path)
    check(run.scalars, "train_loss", {0: 2.0, 1: 1.5}, count=2)
    check(run.scalars, "test_coco_eval_bbox/AP", {0: 0.5}, count=1)
    check(run.scalars, "test_acc1", {1: 40.0})
    messages = [w.message for w in run.warnings]
    assert "2 line(s) are not valid JSON and were skipped (the last line is cut off: file truncated?)" in messages
    assert "1 record(s) without a whole-number 'epoch'; skipped" in messages
    assert "non-numeric values skipped under: note" in notes_text(run)
    (empty,) = DetrReader().read([write(tmp_path / "empty" / "log.txt", b"")])
    assert empty.scalars.empty and empty.warnings


def test_other_json_lines_are_not_detr(tmp_path):
    reader = DetrReader()
    for line in ('{"iteration": 19, "total_loss": 1.0}', '{"mode": "train", "epoch": 1, "iter": 50, "loss": 1.0}',
                 '{"epoch": 1, "loss": 2.0}', "epoch 1 train_loss 2"):
        path = write(tmp_path / "log.txt", line + "\n")
        assert not reader.sniff(path, path.read_bytes())


def test_discovery_finds_the_three_runs(real_logs):
    logs = load(real_logs / "detr_log_txt")
    assert {name: info.format for name, info in logs.runs.items()} == {
        "Moqixis__object_detection_detr/outputs": "detr",
        "PukarBaral__sten_detr/outputs": "detr",
        "PukarBaral__sten_detr/outputs_2": "detr",
    }
    assert logs.unrecognized == ()


def test_a_first_line_that_is_not_json_is_skipped_with_a_warning_naming_it(tmp_path):
    """A log whose first line is a record cut at the file's start (a copy that lost its beginning), or a text line
    printed into it: the first few lines are looked at for the first epoch record; before, the first line alone
    decided and the file was not claimed at all (no training logs found)."""
    whole = real_log(STEN).read_bytes()
    first_end = whole.index(b"\n")
    cut = write(tmp_path / "cut" / "log.txt", whole[first_end - 150:])  # the tail of epoch 0's record, then 1 …
    text = write(tmp_path / "text" / "log.txt", b"Not using distributed mode\n" + whole)
    for path, lost, first_epoch, loss in ((cut, 1, 1, 15.50723321723938), (text, 1, 0, 16.838505818367004)):
        run = _read(path)
        check(run.scalars, "train_loss", {first_epoch: loss, 299: 1.631428750514984}, count=300 - first_epoch)
        check(run.scalars, "test_coco_eval_bbox/AP", {299: 0.04486012489267438})
        (warning,) = run.warnings
        assert (warning.file, warning.location, warning.count) == (str(path), "line 1", lost)
        assert warning.message == "1 line(s) are not valid JSON and were skipped"
        (found,) = load(path.parent, cache=False).runs.values()
        assert found.format == "detr"
    check(_read(cut).scalars, "test_coco_eval_bbox/AP", {1: 0.001042786766145286})


def test_first_lines_tolerance_is_bounded(tmp_path):
    reader = DetrReader()
    record = json.dumps({"train_loss": 2.0, "epoch": 0}) + "\n"
    # a record after five lines that are not JSON: not a DETR log
    path = write(tmp_path / "log.txt", "text\n" * 5 + record)
    assert not reader.sniff(path, path.read_bytes())
    path = write(tmp_path / "log.txt", "text\n" * 4 + record)
    assert reader.sniff(path, path.read_bytes())
    # the first JSON object decides: another format's record first is not DETR's, whatever follows
    path = write(tmp_path / "log.txt", "text\n" + json.dumps({"iteration": 1, "loss": 1.0}) + "\n" + record)
    assert not reader.sniff(path, path.read_bytes())
    # a first line longer than the sniffed head: read on from the file when it is the end of a cut record
    fragment = ", ".join(f'"test_{i}": {i}.5' for i in range(400)) + ', "epoch": 3}\n'
    path = write(tmp_path / "log.txt", fragment + record)
    assert len(fragment) > 4096 and reader.sniff(path, path.read_bytes()[:4096])
    # not when it is a console's long line (a progress bar redrawn with carriage returns, text)
    for long_line in ("\r".join(f'epoch 0: {i}% "loss": 1.0, "acc": 0.5, "lr": 0.1' for i in range(100)), "x" * 10_000):
        path = write(tmp_path / "log.txt", long_line + "\n" + record)
        assert len(long_line) > 4096 and not reader.sniff(path, path.read_bytes()[:4096])
