"""Console logs of custom training loops: epoch blocks, progress meters, key-value lines."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanalyze.readers.text.generic import GenericTextReader
from tests.conftest import real_log
from tests.readers.text_helpers import check, curve, notes_text, write

SLM = "other_text/0Xero7__slm_training"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MMENGINE = "mmengine_logs/hwh12345678900123__event-yolo/work_dirs"


def _read(path):
    reader = GenericTextReader()
    assert reader.sniff(path, path.read_bytes()[:4096])
    (run,) = reader.read([path])
    return run


def test_epoch_blocks_with_tqdm_bars_and_warnings():
    run = _read(real_log(f"{SLM}/classic.txt"))
    frame = run.scalars
    check(frame, "Train Loss", {1: 7.4976, 10: 5.5931, 20: 5.4095}, count=20)
    check(frame, "Valid Loss", {1: 6.6384, 10: 5.4771, 20: 5.3239}, count=20)
    check(frame, "Valid Perplexity", {10: 239.14}, count=20)
    check(frame, "Time", {1: 122.57, 10: 71.47}, count=20)  # '122.57s': the unit is dropped
    check(frame, "LR", {1: 9.94e-05, 20: 1.00e-05}, count=20)
    check(frame, "Test Loss", {20: 5.3181}, count=1)  # after training: keyed by the last epoch
    check(frame, "Test Perplexity", {20: 204.00}, count=1)
    assert frame[frame["tag"] == "Train Loss"].set_index("step")["epoch"][10] == 10.0
    assert "step = epoch" in notes_text(run)
    assert run.warnings == [] and run.restarts == []


def test_log_that_starts_at_epoch_4():
    run = _read(real_log(f"{SLM}/experimental.txt"))
    check(run.scalars, "Train Loss", {4: 5.9609, 12: 5.4328, 20: 5.3212}, count=17)
    check(run.scalars, "Valid Loss", {12: 5.3203, 20: 5.2317}, count=17)
    check(run.scalars, "Test Loss", {20: 5.2318}, count=1)
    assert run.warnings == []


def test_mmengine_text_log_as_a_fallback():
    run = _read(real_log(f"{MMENGINE}/yolov5_s-v61_fast_1xb12-40e_image/20230805_113504/20230805_113504.log"))
    frame = run.scalars
    # the same global iteration numbers MMEngine writes in its scalars.json
    check(frame, "loss", {5: 1.6964, 10: 1.5417}, count=243)
    check(frame, "lr", {5: 3.0303e-04}, count=243)
    check(frame, "coco/bbox_mAP", {440: 0.1810}, count=3)  # Epoch(val) [10][66/66]: end of epoch 10
    assert "epochs counted from 1 (MMEngine)" in notes_text(run)


METER = "Epoch: [{e}][{i:>3}/100]\tTime  0.500 ( 0.600)\tLoss {loss:.4e} ({avg:.4e})\tAcc@1  {acc:6.2f} ( 50.00)\n"


def test_pytorch_imagenet_meters_keep_the_current_value_and_an_evaluations_average(tmp_path):
    text = "".join(METER.format(e=e, i=i, loss=2 - e - i / 100, avg=9.0, acc=10.0 * e) for e in range(2) for i in (0, 50))
    text += "Test: [ 0/10]\tTime  0.100 ( 0.100)\tLoss 2.0000e+00 (2.0000e+00)\tAcc@1  40.00 ( 40.00)\n"
    text += "Test: [ 5/10]\tTime  0.100 ( 0.100)\tLoss 3.0000e+00 (2.2500e+00)\tAcc@1  10.00 ( 38.00)\n"
    text += " * Acc@1 41.250 Acc@5 80.500\n"
    run = _read(write(tmp_path / "train.log", text))
    frame = run.scalars
    check(frame, "Loss", {0: 2.0, 50: 1.5, 100: 1.0, 150: 0.5}, count=4)
    check(frame, "Acc@1", {100: 10.0}, count=4)
    # the evaluation: its average so far (one batch's value is noise), after epoch 1 of 100 batches
    check(frame, "test/Loss", {200: 2.25}, count=1)
    check(frame, "test/Acc@1", {200: 41.25}, count=1)  # the summary (the average of all batches) replaces it
    check(frame, "test/Acc@5", {200: 80.5}, count=1)
    assert "the current value is kept" in notes_text(run) and "val/Acc@1" not in set(frame["tag"])


#: torchvision's classification reference (MetricLogger): meters of "name: value (average)", its summary
#: "Test:  Acc@1 …" (and "Test: EMA …" for the model's moving average), and durations that are no metrics
TORCHVISION = (
    "Start training\n"
    "Epoch: [0]  [   0/5005]  eta: 13:12:41  lr: 0.1  img/s: 19.36  loss: 7.0231 (7.0231)  acc1: 0.0000 (0.0000)  "
    "acc5: 0.0000 (0.0000)  time: 9.5008  data: 7.8449  max mem: 1776\n"
    "Epoch: [0]  [  10/5005]  eta: 2:04:43  lr: 0.1  img/s: 293.31  loss: 7.0718 (7.0536)  acc1: 0.0000 (0.2841)  "
    "acc5: 0.0000 (0.8523)  time: 1.4984  data: 0.7134  max mem: 1776\n"
    "Epoch: [0] Total time: 1:02:22\n"
    "Test:   [   0/1563]  eta: 1:19:15  loss: 5.4325 (5.4325)  acc1: 6.2500 (6.2500)  acc5: 21.8750 (21.8750)  "
    "time: 3.0424  data: 2.9201  max mem: 1776\n"
    "Test:   [1500/1563]  eta: 0:00:02  loss: 4.9105 (5.2147)  acc1: 9.3750 (10.1064)  acc5: 31.2500 (27.5458)  "
    "time: 0.0389  data: 0.0001  max mem: 1776\n"
    "Test:  Total time: 0:01:22\n"
    "Test:  Acc@1 10.102 Acc@5 27.690\n"
    "Test: EMA  [   0/1563]  eta: 1:19:15  loss: 5.5 (5.5)  acc1: 6.0 (6.0)  acc5: 21.0 (21.0)  time: 3.0  data: 2.9\n"
    "Test: EMA Acc@1 9.500 Acc@5 26.000\n"
    "Training time 1:05:18\n"
)
#: the DeiT family's evaluation (DeiT, MAE, DINO, BEiT, ConvNeXt): "* Acc@1 … loss …" after its meters
DEIT = (
    "Epoch: [0]  [   0/1251]  eta: 2:20:11  lr: 0.000001  loss: 6.9174 (6.9174)  time: 6.7238  data: 5.2111  "
    "max mem: 15342\n"
    "Epoch: [0]  [1250/1251]  eta: 0:00:00  lr: 0.000001  loss: 6.8120 (6.8702)  time: 0.3996  data: 0.0005  "
    "max mem: 15342\n"
    "Epoch: [0] Total time: 0:09:06 (0.4369 s / it)\n"
    "Averaged stats: lr: 0.000001  loss: 6.8120 (6.8702)\n"
    "Test:  [ 0/261]  eta: 0:13:42  loss: 6.5405 (6.5405)  acc1: 1.5833 (1.5833)  acc5: 5.9167 (5.9167)  "
    "time: 3.1505  data: 2.8848  max mem: 15342\n"
    "Test:  [260/261]  eta: 0:00:00  loss: 6.8001 (6.4477)  acc1: 0.0000 (2.0120)  acc5: 4.1667 (7.3020)  "
    "time: 0.1500  data: 0.0001  max mem: 15342\n"
    "Test: Total time: 0:00:57 (0.2197 s / it)\n"
    "* Acc@1 2.012 Acc@5 7.302 loss 6.448\n"
    "Accuracy of the network on the 50000 test images: 2.0%\n"
)


def test_torchvision_references_evaluations_are_their_averages_and_summaries(tmp_path):
    run = _read(write(tmp_path / "train.log", TORCHVISION))
    frame = run.scalars
    check(frame, "loss", {0: 7.0231, 10: 7.0718}, count=2)  # training: the current value
    # the evaluation after epoch 0 (5005 batches): the last meter line's averages, its summary's global averages
    check(frame, "test/loss", {5005: 5.2147}, count=1)
    check(frame, "test/acc1", {5005: 10.1064}, count=1)
    check(frame, "test/Acc@1", {5005: 10.102}, count=1)
    check(frame, "test/Acc@5", {5005: 27.69}, count=1)
    check(frame, "ema/loss", {5005: 5.5}, count=1)
    check(frame, "ema/Acc@1", {5005: 9.5}, count=1)
    check(frame, "max mem", {0: 1776, 10: 1776}, count=2)  # the peak memory in MB, named as printed
    assert "mem" not in set(frame["tag"].astype(str))
    assert not run.warnings  # (the durations are no metrics a reader missed)


def test_deit_family_evaluations_summary_is_its_validation_loss(tmp_path):
    run = _read(write(tmp_path / "train.log", DEIT))
    frame = run.scalars
    check(frame, "loss", {0: 6.9174, 1250: 6.812}, count=2)
    check(frame, "test/loss", {1251: 6.448}, count=1)  # the summary's global average replaces the meter's
    check(frame, "test/acc1", {1251: 2.012}, count=1)
    check(frame, "test/Acc@1", {1251: 2.012}, count=1)
    assert not run.warnings


@pytest.mark.parametrize(
    ("line", "step", "expected"),
    [
        ("iter 120 | loss 0.53 | lr [1e-4] | acc 91.2%", 120, {"loss": 0.53, "lr": 1e-4, "acc": 91.2}),
        ("step: 7, epoch: 1, loss: 2.5, grad_norm: 0.9", 7, {"loss": 2.5, "grad_norm": 0.9}),
        ("Epoch 3/10 - loss: 0.4210 - val_loss: 0.5120", 3, {"loss": 0.421, "val_loss": 0.512}),
    ],
)
def test_key_value_lines_with_a_step(tmp_path, line, step, expected):
    run = _read(write(tmp_path / "train.log", "\n".join([line.replace(str(step), str(step - 2), 1),
                                                          line.replace(str(step), str(step - 1), 1), line]) + "\n"))
    for tag, value in expected.items():
        check(run.scalars, tag, {step: value}, count=3)


def test_random_text_is_not_a_training_log(tmp_path):
    path = write(tmp_path / "README.txt", "Version: 2\nEpoch of the dinosaurs: 65\nSee the docs.\n")
    assert not GenericTextReader().sniff(path, path.read_bytes())


MIXED_METERS = (
    "2021-04-22 14:17:51,316 - mmdet - INFO - Environment info:\n"
    "2021-04-22 14:18:34,659 - mmdet - INFO - Epoch [1][50/791]\tlr: 1.220e-04, eta: 1 day, 9:17:16, time: 0.555, "
    "data_time: 0.113, memory: 2490, loss_cls: 401.4800, loss: 15066.5946, grad_norm: 37179.7770\n"
    "2021-04-22 14:18:51,583 - mmdet - INFO - Epoch [1][100/791]\tlr: 1.445e-04, eta: 23:52:47, time: 0.338, "
    "data_time: 0.011, memory: 1,490, loss_cls: nan, loss: 1837.6349, grad_norm: 8144.2638\n"
    "Epoch(val) [1][5/66]  eta: 0:00:05  time: 0.1104  data_time: 0.0034  memory: 1114\n"
    "Epoch(val) [1][66/66]  coco/bbox_mAP: 0.0010  coco/bbox_mAP_50: 0.0030  data_time: 0.0033  time: 0.1086\n"
    "Epoch(train)  [2][ 5/44]  lr: 3.0e-04  eta: 0:01:14  time: 0.4280  loss: 1.6934\n"
    "Epoch: [2][ 10/391]\tTime 0.208 (0.212)\tLoss 3.4360e+00 (3.4360e+00)\tAcc@1  10.94 ( 10.94)\n"
    "Test: [ 10/100]\tTime  0.103 ( 0.103)\tLoss 3.1000e+00 (3.1000e+00)\tAcc@1  18.00 ( 18.00)\n"
    " * Acc@1 18.000 Acc@5 45.000\n"
    "Epoch: [2][ 20/391]\tTime 0.208 (0.212)\tLoss 3.2000e+00 (3.3000e+00)\tAcc@1  12.00 ( 11.00)\n"
    "Epoch [3][50/791]\tlr: x, eta: 1:00:00\n"
    "Epoch [3][60/791]\tlr: 1e-3, loss: 0.5\n"
)


def test_meters_read_at_once_equal_every_line_read_on_its_own(tmp_path, monkeypatch, real_logs):
    """Training meter lines are read a chunk at once, the other lines one by one at their place: the same
    rows, notes and warnings as every line on its own, on the real logs and on meters of every shape."""
    from tanalyze.readers.text.generic import GenericTextParser
    from tests.readers.test_text_resume import _generic

    files = [p for folder in ("mmdet2_json", "other_text", "crash_logs") for p in sorted((real_logs / folder).rglob("*"))
             if p.suffix in (".log", ".txt")]
    files += [write(tmp_path / "mixed.log", MIXED_METERS), write(tmp_path / "meters.log", _generic(40, blocks=False)),
              write(tmp_path / "blocks.log", _generic(5))]
    from bench.text_logs import make_text

    make_text(tmp_path / "bench.log", 1)
    shaped = "".join(f"Epoch [{1 + i // 20}][{i % 20 + 1}/20]\tlr: 1e-3, time:  0.{i}, loss: {i}.5 \n" for i in range(60))
    files[:0] = [tmp_path / "bench.log", write(tmp_path / "shaped.log", shaped.replace("time:  0.7,", "time:0.7,")
                                               .replace("loss: 9.5", "loss: 9.5 x").replace("lr: 1e-3, time:  0.30", "lr: 1e-3,  time: 0.30"))]
    for path in files:
        (at_once,) = GenericTextReader().read([path])
        monkeypatch.setattr(GenericTextParser, "line_by_line", True)
        (by_line,) = GenericTextReader().read([path])
        monkeypatch.setattr(GenericTextParser, "line_by_line", False)
        frames = [run.scalars.frame("x") if hasattr(run.scalars, "frame") else run.scalars for run in (at_once, by_line)]
        pd.testing.assert_frame_equal(*frames, check_exact=True)
        assert (at_once.notes, at_once.warnings, at_once.restarts) == (by_line.notes, by_line.warnings,
                                                                       by_line.restarts), path
    (mixed,) = GenericTextReader().read([files[-3]])
    frame = mixed.scalars.frame("x") if hasattr(mixed.scalars, "frame") else mixed.scalars
    check(frame, "memory", {841: 2490, 891: 1490})  # "1,490": a thousands separator
    check(frame, "coco/bbox_mAP", {1582: 0.001})  # MMEngine's evaluation, at the end of the meters' epoch
    # MMEngine's epoch 2 (step 49) after MMDetection's epoch 1 (from step 841): back below the first step, so a
    # new session (phase), shifted to follow the first (its last step 1582): +1534
    assert [(p.first_step, p.last_step, p.offset) for p in mixed.phases] == [(841, 1582, 0), (1583, 3967, 1534)]
    assert mixed.restarts == []
    # the ImageNet example's summary, at the end of its meters' epoch 2 of 391 batches (its epochs counted as
    # MMEngine's, from 1, once an MMEngine line was read); no evaluation meter read before it: "val/"
    check(frame, "val/Acc@5", {2 * 391 + 1534: 45.0})
    assert "'Epoch [3][50/791]\\tlr: x, eta: 1:00:00'" in mixed.warnings[0].message  # no number in it


_NAMES = ("lr", "eta", "loss", "top-1", "loss(x)", "a.b", "lr")
_VALUES = ("1e-3,", "0.278,", "2490", "20:00:27,", "nan", "1,490,", ",", "x", "3.5e+00", "lr:", "-0.0")
_BLANKS = (" ", "  ", "\t", " \t", "\r", "\u00a0", "")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_NAMES), st.sampled_from(_VALUES), st.sampled_from(_BLANKS),
                          st.sampled_from(_BLANKS)), min_size=1, max_size=4).flatmap(
    lambda shape: st.lists(st.lists(st.tuples(st.sampled_from(_VALUES), st.sampled_from(_BLANKS[:3])),
                                    min_size=len(shape), max_size=len(shape)), min_size=1, max_size=5)
    .map(lambda lines: (shape, lines))),
    st.sampled_from(("\t", "  ", "", "| ")), st.integers(0, 6), st.sampled_from(_BLANKS))
def test_meter_pairs_of_shaped_lines_are_each_line_searched(case, before, damaged, junk):
    """The pairs of a chunk's meter lines read at once (numpy checking every line's words and picking the
    values) are those each line searched on its own gives, whatever the blanks, values and damage."""
    from tanalyze.readers.text.generic import _COLON_PAIR, _pairs

    shape, lines = case
    rests = []
    for line in lines:
        rest = before + "".join(f"{name}:{gap or ' '}{value}{after}"
                                for (name, _, gap, _), (value, after) in zip(shape, line, strict=True))
        rests.append(rest)
    if damaged < len(rests):
        rests[damaged] = rests[damaged][: len(rests[damaged]) // 2] + junk
    names, values, counts, _ = _pairs(tuple(rests))
    expected = [_COLON_PAIR.findall(rest) for rest in rests]
    assert counts == [len(pairs) for pairs in expected]
    assert names == [name for pairs in expected for name, _ in pairs]
    assert values == " ".join(value for pairs in expected for _, value in pairs).replace(",", "")


def test_meter_lines_of_one_shape_are_read_at_once():
    """Lines of one shape take the path without a string per pair, blanks of any width and commas included;
    another name, order or a non-ASCII line does not."""
    from tanalyze.readers.text.generic import _shaped_values

    rests = ("\tlr: 1.0e-3, eta: 1:02:03, loss: 2,490  ", "\tlr:\t2e-3,  eta: 0:00:01, loss: 0.5")
    assert _shaped_values(rests, "\t", ("lr", "eta", "loss")) == "1.0e-3 1:02:03 2490 2e-3 0:00:01 0.5"
    assert _shaped_values(rests, "\t", ("lr", "eta", "acc")) is None
    assert _shaped_values((rests[0], "\tlr: 1, loss: 2, eta: 3"), "\t", ("lr", "eta", "loss")) is None
    assert _shaped_values((rests[0], "\tlr: 1, eta: 2, loss: 3µ"), "\t", ("lr", "eta", "loss")) is None
    assert _shaped_values((rests[0], "\tlr: 1, eta: 2, loss: 3 lr: 4"), "\t", ("lr", "eta", "loss")) is None
    # the names of both lines, in turn, are right; a pair moved to the line before is not
    assert _shaped_values(("\tlr: 1, eta: 2, loss: 3 lr: 4", "\teta: 5, loss: 6"), "\t",
                          ("lr", "eta", "loss")) is None
    assert _shaped_values((rests[0], "\tlr: 1,\reta: 2, loss: 3"), "\t", ("lr", "eta", "loss")) is None
    assert _shaped_values((rests[0], "\tlr: 1, eta: 2, loss:3"), "\t", ("lr", "eta", "loss")) is None


_AVERAGED_NAMES = ("Time", "Data", "Loss", "Acc@1", "Data Time", "lr")
_AVERAGED_VALUES = ("0.208", " 0.5", "3.4360e+00", "nan", "inf", "-1", "1.5e", "x", "10.94", "1,0")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_AVERAGED_NAMES), min_size=1, max_size=4).flatmap(
    lambda names: st.lists(st.lists(st.tuples(st.sampled_from(_AVERAGED_VALUES), st.sampled_from(_AVERAGED_VALUES),
                                              st.sampled_from(("\t", " ", "  ", "\t ", "", "\r"))),
                                    min_size=len(names), max_size=len(names)), min_size=1, max_size=5)
    .map(lambda lines: (names, lines))), st.sampled_from(("\t", "", "  ", "x ")), st.integers(0, 6))
def test_averaged_meter_pairs_are_each_line_searched(case, before, damaged):
    """"name value (average)" meter lines read at once (one findall, a line a match) give the pairs each line
    searched on its own gives, whatever the blanks, values and damage."""
    from tanalyze.readers.text.generic import _COLON_PAIR, _METER_PAIR, _pairs

    names, lines = case
    rests = [before + "".join(f"{name}  {value} ({average}){gap}" for name, (value, average, gap)
                              in zip(names, line, strict=True)) for line in lines]
    if damaged < len(rests):
        rests[damaged] = rests[damaged][: len(rests[damaged]) // 2]
    got_names, values, counts, _ = _pairs(tuple(rests))
    expected = [(_METER_PAIR if "(" in rest and ":" not in rest else _COLON_PAIR).findall(rest) for rest in rests]
    assert counts == [len(pairs) for pairs in expected]
    assert got_names == [name for pairs in expected for name, _ in pairs]
    assert values == " ".join(value for pairs in expected for _, value in pairs).replace(",", "")


def test_averaged_meter_lines_of_one_shape_are_read_at_once():
    from tanalyze.readers.text.generic import _averaged_values

    rests = ("\tTime  0.208 ( 0.212)\tLoss 3.4360e+00 (3.4360e+00)", "\tTime 0.1 (0.2)  Loss -5\t(+.5 ) ")
    assert _averaged_values(rests, "\t", ("Time", "Loss")) == "0.208 3.4360e+00 0.1 -5"
    assert _averaged_values(rests, "\t", ("Time", "Acc")) is None
    assert _averaged_values((rests[0], "\tTime 0.1 (0.2)"), "\t", ("Time", "Loss")) is None
    assert _averaged_values((rests[0], "\tTime 0.1 (0.2) Loss nan (nan)"), "\t", ("Time", "Loss")) is None  # searched


def _kv_line(step, rng, loss=None):
    loss = f"{rng.random() * 3:.4f}" if loss is None else loss
    return (f"iter {step} | loss {loss} | lr [{rng.random() * 1e-3:.6f}] | grad_norm {rng.random():.3f} | "
            f"tokens/s {rng.random() * 1e5:.0f}\n")


def _epoch_block(epoch, rng, total=100):
    return (f"Epoch {epoch}/{total}\nTrain Loss: {rng.random():.4f} - Train Acc: {rng.random() * 100:.2f}%\n"
            f"Val Loss: {rng.random():.4f} - Val Acc: {rng.random() * 100:.2f}% - Time: {rng.random() * 90:.1f}s\n")


#: lines of other shapes (or damaged ones) put among the usual ones
_ODD_LINES = (
    "iter {s} | loss nan | lr [1e-4] | grad_norm inf | tokens/s 100\n",
    "iter {s} | loss abc | lr [1e-4] | grad_norm 0.5 | tokens/s 100\n",
    "saving checkpoint to out/ckpt_{s}.pt\n",
    "step: {s}, loss: 2.5, grad_norm: 0.9\n",
    "global_step={s}, loss=1.25, lr=3e-4\n",
    "step: {s}, epoch: 2, loss: 2.5\n",
    "Epoch {e} - loss: 0.4210 - val_loss: 0.5120\n",
    "iter {s} | val_loss 2.3456 | val_ppl 10.44\n",
    "Epoch {e}/100\n",
    "Epoch {e}/100\n" * 6,
    "iter {s} | loss 0.5 | lr [1e-4] | grad_norm 0.5 | tokens/s 100\n" * 6,
    "Train Loss: 0.5 - Train Acc: 0.9\n",
    "Train Loss: nan - Train Acc: 0.9\n",
    "Test Loss: 5.3181 | Test Perplexity: 204.00\n",
    "Epoch [1][{s}/791]\tlr: 1.2e-4, loss: 0.5\n",
    "Train Loss: 0.5 - Train Acc: 0.9 \u00b5\n",
    "iter {s} | loss 1.0e+00 | lr [1e-4] | grad_norm 0.5 | tokens/s 100\n",
    "iter {s} | loss -0.0 | lr [.5] | grad_norm +1 | tokens/s 1.\n",
    "iter {s} | loss 1.2.3 | lr [1e-4] | grad_norm - | tokens/s 1e\n",
    "Train Loss: 1-2 - Train Acc: .\n",
    "  \n",
)


def _meter_line(epoch, batch, rng, batches=500):
    """A meter line of the PyTorch ImageNet example (numbers padded to a width; sometimes 100.00, one blank)."""
    return (f"Epoch: [{epoch}][{batch:>4}/{batches}]\tTime {rng.random() * 9:6.3f} ({rng.random() * 9:6.3f})\t"
            f"Loss {rng.random() * 10:.4e} ({rng.random() * 10:.4e})\t"
            f"Acc@1 {rng.random() * 120:6.2f} ({rng.random() * 120:6.2f})\n")


#: meter lines of other shapes (or damaged ones) put among the usual ones
_ODD_METERS = (
    "Epoch: [{e}][{s}/500]\tTime nan (nan)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\n",
    "Epoch: [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\n",
    "Epoch: [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\tAcc@5 1.0 (2.0)\n",
    "Epoch: [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)  \n",
    "Epoch: [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\r\n",
    "Epoch: [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 ( 1.0)\tAcc@1 5.0 (5.0)\n",
    "Epoch: [99999999999][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\n",
    "Epoch: [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0) \u00b5\n",
    "Epoch(train) [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\n",
    "Epoch(val) [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\n",
    "Test: [ 10/100]\tTime  0.103 ( 0.103)\tLoss 3.1000e+00 (3.1000e+00)\tAcc@1  18.00 ( 18.00)\n",
    " * Acc@1 18.000 Acc@5 45.000\n",
    "Epoch: [{e}][{s}/500] loss: 0.5\n",
    "2021-04-22 14:18:34,659 - INFO - Epoch: [{e}][{s}/500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\n",
    "Epoch: [{e}][ {s} /500]\tTime 0.1 (0.1)\tLoss 1.0 (1.0)\tAcc@1 5.0 (5.0)\n",
    "Epoch: [{e}][{s}/500]\tTime 1-2 (0.1)\tLoss 1.0 (.)\tAcc@1 5.0 (5.0)\n",
)


def _irregular(seed, kind):
    """Usual lines (key-value, epoch blocks or meters) with odd ones among them now and then, steps that go
    back once, and sometimes no line break at the end."""
    import random

    rng = random.Random(seed)
    odd = _ODD_METERS + _ODD_LINES[-3:] if kind == "meters" else _ODD_LINES
    out, step, epoch = [], 10, 1
    for index in range(900):
        if index == 500:
            step, epoch = step // 3, max(1, epoch // 3)  # a restart
        if rng.random() < 0.03:
            out.append(rng.choice(odd).format(s=step, e=epoch))
        if kind == "epoch_blocks":
            out.append(_epoch_block(epoch, rng))
            epoch += 1
        elif kind == "meters":
            out.append(_meter_line(epoch, step % 500, rng))
            epoch += step % 500 + 10 >= 500
            step += 10
        else:
            out.append(_kv_line(step, rng))
            step += 10
    text = "".join(out)
    return text[:-1] if seed % 2 else text


def _same_at_once_and_line_by_line(path, monkeypatch):
    from tanalyze.readers.text import _parts
    from tanalyze.readers.text.generic import GenericTextParser

    for chunk_chars in (_parts.CHUNK_CHARS, 1 << 12):
        monkeypatch.setattr(_parts, "CHUNK_CHARS", chunk_chars)
        (at_once,) = GenericTextReader().read([path])
        monkeypatch.setattr(GenericTextParser, "line_by_line", True)
        (by_line,) = GenericTextReader().read([path])
        monkeypatch.setattr(GenericTextParser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True, obj=str(path))
        assert (at_once.notes, at_once.warnings, at_once.restarts) == (by_line.notes, by_line.warnings,
                                                                       by_line.restarts), path
    return at_once


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["kv_step", "epoch_blocks", "meters"])
def test_shaped_lines_read_at_once_equal_every_line_read_on_its_own(tmp_path, monkeypatch, seed, kind):
    """Key-value lines, epoch blocks and the ImageNet example's meters of one printed shape are read run by run at once, the lines between
    one by one: the same rows (every column), notes, warnings and restarts as every line on its own, with odd
    lines (NaN, junk, a word for a number, other shapes, other separators), a restart and a cut last line, at
    the usual chunk size and a small one."""
    run = _same_at_once_and_line_by_line(write(tmp_path / "train.log", _irregular(seed, kind)), monkeypatch)
    assert run.restarts or len(run.phases) > 1  # the step going back: a restart, or a new session


def test_shaped_lines_of_the_real_logs_and_the_bench(tmp_path, monkeypatch, real_logs):
    from bench.text_logs import make_text, make_text_epochs, make_text_imagenet, make_text_kv

    make_text_kv(tmp_path / "kv.log", 1)
    make_text_epochs(tmp_path / "epochs.log", 1)
    make_text_imagenet(tmp_path / "imagenet.log", 1)
    make_text(tmp_path / "mmdet.log", 1)  # (meters with COCO summaries between them)
    files = [p for folder in ("other_text", "crash_logs", "mmdet2_json") for p in sorted((real_logs / folder).rglob("*"))
             if p.suffix in (".log", ".txt")]
    for path in [tmp_path / "kv.log", tmp_path / "epochs.log", tmp_path / "imagenet.log", tmp_path / "mmdet.log",
                 *files]:
        _same_at_once_and_line_by_line(path, monkeypatch)


def test_coco_summaries_read_with_the_meters_at_once_equal_each_line_read_on_its_own(monkeypatch):
    """The real COCOeval fixture: its summaries read with the chunk's meters at once, and line by line."""
    run = _same_at_once_and_line_by_line(FIXTURES / "coco_console" / "train.log", monkeypatch)
    assert len(run.scalars[run.scalars["tag"] == "bbox/AP"]) == 8


@pytest.mark.parametrize("kind", ["kv_step", "epoch_blocks", "meters"])
def test_clean_shaped_lines_take_the_fast_path(tmp_path, monkeypatch, kind):
    """Lines of one shape are never read one by one (no handler of their kind is called), nor meters by the
    chunk's meter lines at once."""
    import random

    from tanalyze.readers.text.generic import GenericTextParser

    rng = random.Random(1)
    if kind == "meters":
        text = "".join(_meter_line(e, i, rng, 1000) for e in range(3) for i in range(0, 1000, 1))
    else:
        text = "".join(_epoch_block(e, rng, 3000) if kind == "epoch_blocks" else _kv_line(10 * e, rng)
                       for e in range(1, 3001))
    path = write(tmp_path / "train.log", text)
    calls = []
    for handler in ("kv_step", "epoch_header", "pair_line", "meter"):
        monkeypatch.setattr(GenericTextParser, f"_on_{handler}", lambda self, m, chunk, kind=handler: calls.append(kind))
    monkeypatch.setattr(GenericTextParser, "_meters_at_once", lambda self, chunk: calls.append("meters") or False)
    (run,) = GenericTextReader().read([path])
    assert calls == []
    monkeypatch.undo()
    frame = run.scalars
    if kind == "epoch_blocks":
        assert len(frame) == 3000 * 5 and set(frame["tag"]) == {"Train Loss", "Train Acc", "Val Loss", "Val Acc", "Time"}
        assert frame["step"].max() == 3000 and (frame["epoch"] == frame["step"]).all()
    elif kind == "meters":
        assert len(frame) == 3000 * 3 and list(frame["tag"].unique()) == ["Time", "Loss", "Acc@1"]
        assert frame["step"].max() == 2999 and (frame["epoch"] == frame["step"] // 1000).all()
        last = frame[frame["step"] == 2999].set_index("tag")["value"]
        line = text.splitlines()[-1].split("\t")
        assert last.tolist() == [float(line[1].split()[1]), float(line[2].split()[1]), float(line[3].split()[1])]
    else:
        assert len(frame) == 3000 * 4 and set(frame["tag"]) == {"loss", "lr", "grad_norm", "tokens/s"}
        assert frame["step"].max() == 30000
    _same_at_once_and_line_by_line(path, monkeypatch)


def test_a_field_of_a_numbers_characters_that_is_no_number_is_read_on_its_own(tmp_path, monkeypatch):
    """Runs of templated lines are found with any run of a number's characters as a field; a field that then
    is no number ("1.2.3") has the runs found again, exactly: that line alone is read one by one."""
    import random

    from tanalyze.readers.text.generic import GenericTextParser

    rng = random.Random(2)
    lines = [_kv_line(10 * step, rng) for step in range(1, 2001)]
    lines[700] = "iter 7010 | loss 1.2.3 | lr [1e-4] | grad_norm 0.5 | tokens/s 100\n"
    path = write(tmp_path / "train.log", "".join(lines))
    calls = []
    original = GenericTextParser._on_kv_step
    monkeypatch.setattr(GenericTextParser, "_on_kv_step",
                        lambda self, m, chunk: calls.append(m.group(0)) or original(self, m, chunk))
    (run,) = GenericTextReader().read([path])
    assert calls == [lines[700].rstrip("\n")]
    monkeypatch.undo()
    check(run.scalars, "loss", {7000: float(lines[699].split()[4])}, count=1999)  # none at 7010
    assert 7010 in set(run.scalars.loc[run.scalars["tag"] == "lr", "step"])  # its other pairs are read
    _same_at_once_and_line_by_line(path, monkeypatch)


def test_line_breaks_starts_and_unread_stretches_count_characters():
    """Indices are of characters, not bytes, in a text that is not ASCII too; the stretches between the lines
    read cover the rest of the text, a last line without its break included."""
    from tanalyze.readers.text.generic import _line_breaks, _line_starts, _unread_stretches

    text = "a\u00b5\nEpoch 1\n\u4e2d\u6587\nEpoch 2\ntail"
    breaks = _line_breaks(text)
    assert breaks.tolist() == [i for i, char in enumerate(text) if char == "\n"] == [2, 10, 13, 21]
    assert _line_starts(breaks, [0, 4, 14, 20, 23]) == [0, 3, 14, 14, 22]
    read = np.array([3, 14])
    assert _unread_stretches(text, breaks, read) == [(0, 3), (11, 14), (22, len(text))]
    assert _unread_stretches(text, breaks, np.array([22])) == [(0, 22)]
    assert _unread_stretches("x", _line_breaks("x"), np.array([], dtype=np.int64)) == [(0, 1)]


def test_an_evaluation_on_its_own_line_after_a_step_line_is_read_at_that_step(tmp_path):
    text = ("lr: 0.001\nbatch size: 32\n"  # a config dump before training: no step yet, not read
            + "".join(f"step {s} | loss {3 - s / 200:.4f} | acc {s / 400:.3f}\n"
                      + (f"val loss: {3.2 - s / 250:.4f} | val acc: {s / 500:.3f}\n" if s % 50 == 0 else "")
                      for s in range(0, 300, 10)))
    (run,) = GenericTextReader().read([write(tmp_path / "train.log", text)])
    check(run.scalars, "val loss", {0: 3.2, 50: 3.0, 250: 2.2}, count=6)
    check(run.scalars, "val acc", {50: 0.1}, count=6)
    assert not {"lr", "batch size"} & set(run.scalars["tag"])
    assert "'Name: value' lines after such a line (an evaluation printed on its own line) are keyed by that " \
           "line's step" in notes_text(run)
    assert run.warnings == []


@pytest.mark.parametrize("tail", ["words " * 20_000, "x" * 80_000], ids=["many words", "one long token"])
def test_long_lines_of_letters_are_read_in_time(tmp_path, tail):
    """Found by the long fuzz run: a damaged line made a meter line end in a long run of words (or of one token)
    with a "(" and no ":", and the pairs' name patterns, unbounded, ran from every letter to the line's end and
    back (minutes). Names are now at most 4 words of 64 characters. The read is guarded so that a return of the
    old patterns fails instead of hanging; the meters around the line are read."""
    from tests.fuzz.harness import read_direct

    meter = "Epoch: [0][{i}/100]  Time 0.512 (0.601)  Data 0.101 (0.201)  Loss {loss:.4f} ({loss:.4f})\n"
    text = "".join(meter.format(i=i, loss=7 - i / 10) for i in range(10, 40, 10))
    text += "Test: [ 5/10]  Time 0.1 (0.2)  " + tail + " (\n"
    text += "Epoch: [0][50/100] note: " + "y" * 80_000 + "\n"
    text += meter.format(i=60, loss=1.5)
    (tmp_path / "train.log").write_text(text)
    [run] = read_direct("text", tmp_path, ("train.log",), limit=20.0)
    frame = run.scalar_table()
    assert frame[frame["tag"] == "Loss"]["value"].tolist() == [6.0, 5.0, 4.0, 1.5]


def _logged(path, fmt, datefmt=None, lines=()):
    """A training loop's log written by Python's own ``logging`` with the format ``fmt``."""
    import logging

    logger = logging.getLogger(f"train.{path.stem}")
    logger.propagate = False
    handler = logging.FileHandler(path, mode="w")
    handler.setFormatter(logging.Formatter(fmt, datefmt))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("Started training")
        for line in lines:
            logger.info(line)
        logger.warning("done")
    finally:
        handler.close()
        logger.removeHandler(handler)
    return path


@pytest.mark.parametrize("fmt,datefmt", [
    ("%(asctime)s - %(name)s - %(levelname)s - %(message)s", None),
    ("%(name)s - %(levelname)s - %(message)s", None),
    ("%(levelname)s:%(name)s:%(message)s", None),  # logging.basicConfig's default
    ("%(asctime)s - %(levelname)s - %(name)s - %(message)s", "%m/%d/%Y %H:%M:%S"),  # the HF examples' format
    ("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s", None),  # hydra's job logging
    ("%(asctime)s | %(levelname)-8s | %(module)s:%(funcName)s:%(lineno)d - %(message)s", None),  # loguru-like
    ("[%(levelname)s] %(asctime)s : %(message)s", None),  # a translation model's trainer (its lines were not read)
])
def test_key_value_lines_behind_a_logging_prefix_are_read(tmp_path, fmt, datefmt):
    lines = [f"epoch={i // 10}, step={8 * (i + 1)}, loss={1 / (i + 1):.6f}" for i in range(30)]
    path = _logged(tmp_path / "train.log", fmt, datefmt, lines)
    run = _read(path)
    check(run.scalars, "loss", {8: 1.0, 16: 0.5, 240: 0.033333}, count=30)
    assert "the logging prefix of its lines (time, level, logger name) removed before reading" in notes_text(run)


def test_a_line_with_a_stray_blank_before_its_logging_prefix_is_read(tmp_path):
    """One line of 30 printed with a blank before the logger's time (a stray print(' ', end='')): read as the
    others, not dropped without a word."""
    path = _logged(tmp_path / "train.log", "%(asctime)s %(levelname)s: %(message)s", None,
                   [f"epoch={i}, step={8 * (i + 1)}, loss={1 / (i + 1):.6f}" for i in range(30)])
    lines = path.read_text().splitlines(keepends=True)
    lines[10] = " " + lines[10]
    path.write_text("".join(lines))
    check(_read(path).scalars, "loss", {80: 0.1, 88: 0.090909}, count=30)


def test_a_log_that_reads_as_it_is_keeps_its_prefix():
    # MMEngine's own text log: its ' - mmengine - INFO - Epoch(train)' lines are read as they are
    run = _read(real_log(f"{MMENGINE}/yolov5_s-v61_fast_1xb12-40e_image/20230805_113504/20230805_113504.log"))
    assert "logging prefix" not in notes_text(run)


def test_prose_behind_a_logging_prefix_is_not_a_training_log(tmp_path):
    path = _logged(tmp_path / "server.log", "%(asctime)s - %(levelname)s - %(message)s",
                   lines=[f"request {i} served in 12 ms" for i in range(30)])
    assert not GenericTextReader().sniff(path, path.read_bytes()[:4096])


@pytest.mark.parametrize("template", [
    "step {step} loss {loss:.4f} lr {lr}",  # print(f"step {step} loss {loss:.4f} lr {lr}")
    "step: {step} loss: {loss:.4f} lr: {lr}",
    "step={step} loss={loss:.4f} lr={lr}",
    "Epoch {step}  train_loss {loss:.4f}  lr {lr}",
])
def test_pairs_separated_by_blanks_only_are_read_at_once_as_line_by_line(tmp_path, monkeypatch, template):
    lines = ["Starting training"]
    for i in range(60):
        lines.append(template.format(step=10 * (i + 1), loss=2.5 / (i + 1), lr=3e-4))
        if i == 30:
            lines.append("step 310 saved a checkpoint to out/ckpt.pt")  # words, not pairs: no metrics
    run = _same_at_once_and_line_by_line(write(tmp_path / "train.log", "\n".join(lines) + "\n"), monkeypatch)
    name = "train_loss" if template.startswith("Epoch") else "loss"
    check(run.scalars, name, {10: 2.5, 20: 1.25, 600: 0.0417}, count=60)  # as printed, 4 decimals
    check(run.scalars, "lr", {10: 3e-4, 600: 3e-4}, count=60)


@pytest.mark.parametrize("text", [
    "Step 1 Install the package\nStep 2 Run the script\nStep 3 Open the report\n",
    "Epoch 1 of 10\nEpoch 2 of 10\nEpoch 3 of 10\n",
    "step 1 took 3 seconds and 2 retries\nstep 2 took 4 seconds and 1 retries\nstep 3 took 2 seconds and 0 retries\n",
])
def test_words_after_a_step_are_no_blank_separated_pairs(tmp_path, text):
    path = write(tmp_path / "notes.log", text)
    assert not GenericTextReader().sniff(path, path.read_bytes()[:4096])


def test_a_name_may_end_in_its_unit_in_parentheses(tmp_path, monkeypatch):
    lines = [f"step {10 * i} | loss {2 / (i + 1):.4f} | GPU Mem (GB): 12.81 | Time (s): {0.5 + i / 100:.2f}"
             for i in range(30)]
    run = _same_at_once_and_line_by_line(write(tmp_path / "train.log", "\n".join(lines) + "\n"), monkeypatch)
    check(run.scalars, "GPU Mem (GB)", {0: 12.81, 290: 12.81}, count=30)
    check(run.scalars, "Time (s)", {0: 0.5, 290: 0.79}, count=30)
    check(run.scalars, "loss", {0: 2.0, 10: 1.0}, count=30)


def test_an_epoch_with_the_batch_of_the_epoch_beside_it_is_placed_by_both(tmp_path):
    """YOLOX's trainer (loguru): ``epoch: e/E, iter: i/N, …`` (both counted from 1) is at step (e - 1) × N + i, not
    at the epoch (every line of an epoch at one step, all but its last replaced)."""
    lines = []
    for epoch in (1, 2):
        for batch in (10, 20, 30):
            loss = 10 - epoch - batch / 100
            lines.append(f"2023-05-01 10:00:{batch:02d} | INFO     | yolox.core.trainer:261 - epoch: {epoch}/300, "
                         f"iter: {batch}/30, mem: 5000Mb, iter_time: 0.500s, data_time: 0.010s, total_loss: {loss:.1f}, "
                         f"iou_loss: 2.5, conf_loss: 4.0, cls_loss: 2.0, lr: 1.000e-04, size: 640, ETA: 1 day, 2:00:00")
    (run,) = GenericTextReader().read([write(tmp_path / "train_log.txt", "\n".join(lines) + "\n")])
    assert curve(run.scalars, "total_loss") == {10: 8.9, 20: 8.8, 30: 8.7, 40: 7.9, 50: 7.8, 60: 7.7}
    assert "step = epochs before e × N + i" in notes_text(run)
    assert "keyed by the epoch number" not in notes_text(run)
    assert "ETA" not in set(run.scalars["tag"])  # (the time left, "1 day, 2:00:00": no measure, not its days)


@pytest.mark.parametrize("eta", ["{days} days, 12:18:53", "{days} batch_cost: 1.5"],
                         ids=["days and a clock", "a number (blanks only between pairs)"])
def test_paddledetections_meters_take_no_time_left(tmp_path, monkeypatch, eta):
    """PaddleDetection's ``Epoch: [e] [i/N] … eta: 2 days, 12:18:53 batch_cost: …`` (lines as its docs show its
    training output): its ``eta`` is the time left, not a measure (it read as its days), read at once or line by
    line (with a plain number, every line has one template: the lines' pairs are told at once)."""
    lines = []
    for epoch in range(3):
        for batch in range(0, 1929, 20):
            loss = 3 - epoch / 2 - batch / 2000
            lines.append(f"[08/15 04:03:19] ppdet.engine INFO: Epoch: [{epoch}] [{batch:4d}/1929] learning_rate: 0.064000 "
                         f"loss_vfl: 1.180627 loss_bbox: 0.939552 loss: {loss:.6f} eta: {eta.format(days=epoch + 2)}"
                         + (" batch_cost: 1.5770 data_cost: 0.0008 ips: 15.2184 images/s" if "12:18:53" in eta else ""))
    run = _same_at_once_and_line_by_line(write(tmp_path / "train.log", "\n".join(lines) + "\n"), monkeypatch)
    assert "eta" not in set(run.scalars["tag"])
    check(run.scalars, "loss", {0: 3.0, 1929 + 20: 2.49}, count=3 * 97)
    check(run.scalars, "batch_cost", {0: 1.577 if "12:18:53" in eta else 1.5}, count=3 * 97)


@pytest.mark.parametrize("template", [
    "[Epoch {step}] Loss: {loss:.4f}",  # (the step word in brackets)
    "Iter {step}| Loss train: {loss:.5}| Loss size 4: {lr:.5}| Loss size 9: 0.7",  # (names that end in a number)
])
def test_key_value_lines_of_hand_written_loops_as_public_code_prints_them(tmp_path, monkeypatch, template):
    """Key-value lines that printed nothing: the step word in brackets, and names ending in a number before their
    colon (more than half of the line's pairs, so the line was dropped). Read at once as line by line."""
    lines = [template.format(step=10 * k, loss=2 / k, lr=1 / k) for k in range(1, 301)]
    run = _same_at_once_and_line_by_line(write(tmp_path / "train.log", "\n".join(lines) + "\n"), monkeypatch)
    check(run.scalars, "Loss" if template.startswith("[") else "Loss train", {10: 2.0, 40: 0.5}, count=300)
    if "size" in template:
        check(run.scalars, "Loss size 4", {20: 0.5}, count=300)
        check(run.scalars, "Loss size 9", {20: 0.7}, count=300)


def test_a_batch_counter_that_starts_over_each_epoch_continues_across_epochs(tmp_path):
    """``ep: e, batch: b, …`` (a custom LM pre-training loop): the batch starts over with each epoch, so the step
    is the batch plus the batches before (estimated: the log never says how many an epoch has)."""
    lines = [f"ep: {e}, batch: {b}, time: 8.5, ntokens: 485.20/513, loss: {10 - e - b / 1000:.6f}"
             for e in range(3) for b in range(20, 261, 20)]
    run = _read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    # epoch 0: 20 … 260; epoch 1 starts after 260 + the interval 20
    check(run.scalars, "loss", {20: 9.98, 260: 9.74, 300: 8.98, 540: 8.74, 580: 7.98}, count=39)
    assert set(run.scalars["tag"].astype(str)) == {"loss", "time"}  # 'batch' is the step, no metric
    assert "starts over with each epoch" in notes_text(run) and run.restarts == []
    # a counter that goes on across epochs is the step as printed
    lines = [f"epoch: {e}, iter: {e * 100 + i}, loss: {1 / (e * 100 + i):.6f}" for e in range(3) for i in (50, 100)]
    run = _read(write(tmp_path / "global.log", "\n".join(lines) + "\n"))
    check(run.scalars, "loss", {50: 0.02, 150: 0.006667, 300: 0.003333}, count=6)
    assert "starts over" not in notes_text(run)


@pytest.mark.parametrize("many", [False, True])
def test_the_same_line_again_after_an_evaluation_banner_is_that_evaluation(tmp_path, many):
    """A loop that prints training and evaluation with one template, the evaluation after 'testing in eval mode'
    (a PaddlePaddle CIFAR script's log): the evaluation is not written over the training values at their step."""
    out = ["testing in eval mode……", "epoch: 0,  loss is: 2.5047, acc is: 0.0708"]  # before training
    epochs = 40 if many else 3
    for e in range(epochs):
        out += [f"epoch: {e},  loss is: {1 / (e + 2):.4f}, acc is: {0.7 + e / 100:.4f}", "testing in eval mode……",
                f"epoch: {e},  loss is: {1 / (e + 1.5):.4f}, acc is: {0.6 + e / 100:.4f}", "Now continue training……"]
    text = "\n".join(out) + "\n"
    run = _read(write(tmp_path / "training_log.txt", text if not many else text.replace("……", "...")))
    check(run.scalars, "loss", {0: 0.5, 2: 0.25}, count=epochs)
    check(run.scalars, "acc", {0: 0.7, 2: 0.72}, count=epochs)
    check(run.scalars, "test/loss", {0: 0.6667, 2: 0.2857}, count=epochs)
    check(run.scalars, "test/acc", {0: 0.6, 2: 0.62}, count=epochs)
    assert f"{epochs} line(s) that repeat the previous line's step" in notes_text(run)
    # the same lines without the banner: the later is kept, as before
    plain = "\n".join(line for line in out if "testing" not in line) + "\n"
    run = _read(write(tmp_path / "plain.txt", plain))
    assert "test/loss" not in set(run.scalars["tag"].astype(str))


def test_a_bracketed_step_with_its_total_begins_a_key_value_line(tmp_path):
    """clovaai's deep-text-recognition-benchmark: ``[200/300000] Train loss: …, Valid loss: …`` then its accuracy
    lines (``Name : value, …``) at that step; a bracketed step's line may go on after a blank ('[Epoch 5] A: 1, B: 2')."""
    out = ["model input parameters 100 100 20 1 512 256 975 25 TPS ResNet BiLSTM Attn"]
    for it in (1, 200, 400):
        out += [f"[{it}/300000] Train loss: {7 - it / 100:.5f}, Valid loss: {6.8 - it / 100:.5f}, Elapsed_time: {it * 2:.5f}",
                f"Current_accuracy : {it / 20:.3f}, Current_norm_ED  : 0.{it // 100:02d}",
                f"Best_accuracy    : {it / 20:.3f}, Best_norm_ED     : 0.{it // 100:02d}",
                "-" * 80, "Ground Truth              | Prediction                | Confidence Score & T/F",
                "available                 | available                 | 0.9931	True", "-" * 80]
    run = _read(write(tmp_path / "log_train.txt", "\n".join(out) + "\n"))
    check(run.scalars, "Train loss", {1: 6.99, 200: 5.0, 400: 3.0}, count=3)
    check(run.scalars, "Valid loss", {1: 6.79, 400: 2.8}, count=3)
    check(run.scalars, "Current_accuracy", {1: 0.05, 400: 20.0}, count=3)
    check(run.scalars, "Best_norm_ED", {200: 0.02}, count=3)
    lines = [f"[Epoch {e}] Train Loss: {1 / e:.4f}, Val Loss: {1.5 / e:.4f}" for e in range(1, 5)]
    run = _read(write(tmp_path / "epochs.log", "\n".join(lines) + "\n"))
    check(run.scalars, "Val Loss", {1: 1.5, 4: 0.375}, count=4)


@pytest.mark.parametrize("epochs", [3, 40])  # line by line, and the lines of one shape read at once
def test_a_name_printed_again_after_a_validation_name_takes_its_phase(tmp_path, epochs):
    """``Epoch 0 | Train Loss: … | Token Acc: … | Val Loss: … | Token Acc: …`` (a translation model's loop): the
    second Token Acc is the validation's, not a second write over the training's; the first the training's."""
    lines = [f"Epoch {e} |             Train Loss: {11 - e / 10:.4f} | Token Acc: {0.05 + e / 1000:.4f} | Seq Acc: "
             f"0.0000 |             Val Loss: {10.9 - e / 10:.4f} | Token Acc: {0.066 + e / 1000:.4f} | Seq Acc: "
             "0.0000" for e in range(epochs)]
    run = _read(write(tmp_path / "train.log", "start load training data...\n" + "\n".join(lines) + "\n"))
    check(run.scalars, "Train Token Acc", {0: 0.05, 2: 0.052}, count=epochs)
    check(run.scalars, "Val Token Acc", {0: 0.066, 2: 0.068}, count=epochs)
    check(run.scalars, "Val Loss", {2: 10.7}, count=epochs)
    assert {"Train Seq Acc", "Val Seq Acc", "Train Loss"} <= set(run.scalars["tag"].astype(str))
    assert "logged twice" not in notes_text(run)


def test_evaluation_banners_of_two_files_of_one_run_are_counted_together(tmp_path):
    """A run's two console files (a job's stdout and stderr, or a log and its continuation) read as one: the note
    counts the lines read as evaluations in both."""
    def log(first: int, epochs: int) -> str:
        out = []
        for e in range(first, first + epochs):
            out += [f"epoch: {e},  loss is: {1 / (e + 2):.4f}", "testing in eval mode……", f"epoch: {e},  loss is: 0.5"]
        return "\n".join(out) + "\n"

    paths = [write(tmp_path / "train.log", log(0, 2)), write(tmp_path / "train.log.1", log(2, 3))]
    (run,) = GenericTextReader().read(paths)
    assert "5 line(s) that repeat the previous line's step" in notes_text(run)
    check(run.scalars, "test/loss", {0: 0.5, 4: 0.5}, count=5)


@pytest.mark.parametrize("epochs", [3, 40])  # line by line, and the lines of one shape read at once
def test_a_segment_of_several_pairs_and_a_name_its_phase_prints_once(tmp_path, epochs):
    """``Epoch 1/50 | Train Loss: 0.2143 Acc: 0.8993 | Val Loss: 0.0870 Acc: 0.9710`` behind a logging prefix: the
    pairs of a segment are read each, the bare ``Acc`` after ``Train Loss`` the training's, after ``Val Loss`` the
    validation's; step = the epoch."""
    lines = [f"2025-08-18 21:59:{e % 60:02d},302 - INFO - Epoch {e}/{epochs} | Train Loss: {1 / e:.4f} Acc: "
             f"{1 - 0.5 / e:.4f} | Val Loss: {1.2 / e + 0.05:.4f} Acc: {1 - 0.6 / e:.4f}" for e in range(1, epochs + 1)]
    run = _read(write(tmp_path / "training.log", "\n".join(lines) + "\n"))
    check(run.scalars, "Train Loss", {1: 1.0, 2: 0.5}, count=epochs)
    check(run.scalars, "Train Acc", {1: 0.5, 2: 0.75}, count=epochs)
    check(run.scalars, "Val Loss", {1: 1.25, 2: 0.65}, count=epochs)
    check(run.scalars, "Val Acc", {1: 0.4, 2: 0.7}, count=epochs)
    assert set(run.scalars["tag"].astype(str)) == {"Train Loss", "Train Acc", "Val Loss", "Val Acc"}


def test_swin_transformers_meters_and_validation_from_its_logging_code():
    """Swin Transformer's ``log_rank0.txt`` (``Train: [e/E][i/N]\\teta 0:00:00 lr 0.000251\\t wd 0.0500\\ttime …
    (…)\\tloss 2.3503 (2.3294)\\t…\\tmem 309MB``, behind its logger's prefix): step = e × N + i, the current value of
    each ``value (average)`` pair, the pairs without an average (lr, wd, mem) too, the ``eta`` none; its validation's
    ``Test: [i/n]`` meters at the end of their epoch (their averages)."""
    run = _read(FIXTURES / "swin" / "log_rank0.txt")
    frame = run.scalars
    check(frame, "loss", {0: 2.3530, 10: 2.3503, 40: 2.0613, 50: 1.8987}, count=24)
    check(frame, "lr", {0: 0.000001, 10: 0.000251, 40: 0.001000, 50: 0.000994}, count=24)
    check(frame, "grad_norm", {0: 0.7289, 10: 0.7200}, count=24)
    check(frame, "wd", {0: 0.05}, count=24)
    check(frame, "mem", {0: 309.0, 40: 310.0}, count=24)
    check(frame, "test/Acc@1", {40: 35.938, 80: 57.188}, count=6)  # (the last Test line's averages: all batches)
    assert {"eta", "Mem", "test/Mem"}.isdisjoint(set(frame["tag"].astype(str)))
    assert not run.warnings


@pytest.mark.parametrize("epochs", [3, 40])
def test_lines_keyed_by_their_epoch_printed_several_times_an_epoch_are_each_a_step(tmp_path, epochs):
    """A loop that prints ``epoch:  0 loss:  0.686…`` every few batches (no batch counter) and its evaluation
    after: each line is the next step (the epoch in the epoch column), not written over by the epoch's last; the
    evaluation (``Validation Accuracy: …``, ``Epoch 1: Val acc is 86.0%``) at the step of the line before it."""
    out, value = ["Training..."], {}
    for e in range(epochs):
        for b in range(5):
            value[5 * e + b] = round(1 / (1 + 5 * e + b), 6)
            out.append(f"epoch:  {e} loss:  {value[5 * e + b]}")
        out.append(f"Validation Accuracy: {0.5 + e / 100}")
    run = _read(write(tmp_path / "nohup.out", "\n".join(out) + "\n"))
    check(run.scalars, "loss", value, count=5 * epochs)
    check(run.scalars, "Validation Accuracy", {4: 0.5, 9: 0.51}, count=epochs)
    loss = run.scalars[run.scalars["tag"] == "loss"]
    assert loss["epoch"].tolist()[:6] == [0, 0, 0, 0, 0, 1]
    assert f"{5 * epochs} 'epoch N name value' line(s) printed several times an epoch" in notes_text(run)
    assert "logged twice" not in notes_text(run)
    lines = [f"Epoch: {e}| train loss: {1 / (e + b + 1):.4f}" for e in range(1, 4) for b in range(4)]
    for e in range(3):
        lines.insert(5 * e + 4, f"Epoch {e + 1}: Val acc is {86 + e}.0%")
    run = _read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    check(run.scalars, "train loss", {1: 0.5, 4: 0.2, 5: 0.3333}, count=12)
    check(run.scalars, "Val acc", {4: 86.0, 8: 87.0, 12: 88.0}, count=3)


def test_a_resumed_job_that_prints_its_last_epoch_again_keeps_one_step_an_epoch(tmp_path):
    """One line an epoch, then a resumed job's start-up lines and its last epoch again: no several-lines-an-epoch
    loop (the steps stay the epochs)."""
    lines = [f"Epoch {e}: loss 0.{9 - e}00 val_loss 0.{9 - e}50" for e in range(6)]
    lines += ["Loading checkpoint from ckpt/epoch_4.pt", "Resuming training", "Using device: cuda", "Seed: 42"]
    lines += [f"Epoch {e}: loss 0.{9 - e}10 val_loss 0.{9 - e}60" for e in range(5, 9)]
    run = _read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    assert sorted(set(curve(run.scalars, "loss"))) == list(range(9))
    assert "several times an epoch" not in notes_text(run)


@pytest.mark.parametrize("logging_prefix", ["", "2017-08-18 02:43:53,914 - INFO - "])
def test_a_value_named_with_its_step_in_a_sentence_and_the_values_after_it(tmp_path, logging_prefix):
    """TensorFlow's tutorials' ``Minibatch loss at step 500: 1.234567`` then ``Minibatch accuracy: 70.2%`` and
    ``Validation accuracy: 72.3%`` (at that step), a last ``Test accuracy`` at the last step."""
    out = ["Initialized"]
    for k, step in enumerate((0, 500, 1000, 1500)):
        out += [f"Minibatch loss at step {step}: {3.5 / (k + 1):.6f}", f"Minibatch accuracy: {10 + 20 * k:.1f}%",
                f"Validation accuracy: {12 + 20 * k:.1f}%"]
    out.append("Test accuracy: 86.1%")
    run = _read(write(tmp_path / "train.log", "\n".join(logging_prefix + line for line in out) + "\n"))
    check(run.scalars, "Minibatch loss", {0: 3.5, 500: 1.75, 1500: 0.875}, count=4)
    check(run.scalars, "Minibatch accuracy", {0: 10.0, 1000: 50.0}, count=4)
    check(run.scalars, "Validation accuracy", {0: 12.0, 1500: 72.0}, count=4)
    check(run.scalars, "Test accuracy", {1500: 86.1}, count=1)
    assert "'<name> at step N: value' lines" in notes_text(run)


def test_the_transfer_learning_tutorials_phase_lines_under_their_epoch():
    """PyTorch's transfer-learning tutorial: ``Epoch 3/7``, a rule, ``train Loss: 0.6783 Acc: 0.5605`` and ``val
    Loss: 0.6704 Acc: 0.8594``: the pairs of a line with blanks between them, each bare ``Acc`` given its line's
    phase (the validation's accuracy is not written over the training's), step = the epoch."""
    run = _read(FIXTURES / "transfer_learning" / "train.log")
    frame = run.scalars
    check(frame, "train Loss", {0: 0.6889, 3: 0.6783, 7: 0.6113}, count=8)
    check(frame, "train Acc", {0: 0.6094, 3: 0.5605}, count=8)
    check(frame, "val Loss", {0: 0.6896, 3: 0.6704}, count=8)
    check(frame, "val Acc", {0: 0.4844, 3: 0.8594, 7: 0.8477}, count=8)
    assert "Acc" not in set(frame["tag"].astype(str))


def test_a_loop_over_models_each_from_its_first_epoch_is_sessions_none_written_over():
    """A script comparing models in one loop (tests/fixtures/model_comparison, a real CPU training): a linear baseline
    for ``Epoch 1/1``, then an MLP and a CNN for ``Epoch 1/6`` … ``6/6`` each. The MLP's first line repeats the
    baseline's epoch but not its number of epochs: another training, not the loop's next line of one epoch (all
    thirteen lines were one run of steps 1-17) nor a rewrite of the baseline's point. Each training is a session."""
    run = _read(FIXTURES / "model_comparison" / "train.log")
    frame = run.scalars
    check(frame, "Train Loss", {1: 2.3315, 2: 2.2767, 7: 0.9163, 8: 2.3357, 13: 1.9296}, count=13)
    check(frame, "Val Acc", {1: 0.2109, 7: 0.5098, 13: 0.2695}, count=13)
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(1, 1, 0), (2, 7, 1), (8, 13, 7)]
    assert run.phases[1].detail.startswith("step 1 logged again: a new session appended to the log")
    assert run.restarts == []
    assert "logged several times an epoch" not in notes_text(run) and "replaced" not in notes_text(run)


def test_episode_lines_of_a_reinforcement_learning_loop():
    """A hand-written Q-learning loop's ``Episode 10 | Avg Reward: 1.53 | Epsilon: 0.847 | Win Rate: 50.00%`` through
    logging's default prefix (tests/fixtures/rl_episodes, a real training): step = the episode. Nothing was read."""
    run = _read(FIXTURES / "rl_episodes" / "train.log")
    frame = run.scalars
    check(frame, "Avg Reward", {0: -4.0, 10: 1.53, 290: 9.0}, count=30)
    check(frame, "Epsilon", {10: 0.847, 290: 0.05}, count=30)
    check(frame, "Win Rate", {10: 50.0, 290: 100.0}, count=30)
    assert run.restarts == [] and not run.warnings


def test_coco_evaluation_summaries_at_the_last_training_step_before_them():
    """pycocotools' summary after each epoch (a real COCOeval): each of its twelve lines a tag named as detectron2
    names them under the evaluation's kind (``bbox/AP``, ``bbox/AP50``, ``bbox/APl``, ``bbox/AR1`` …), at the last
    training line's step; -1.000 (no object of that size) a missing value, counted in a note."""
    run = _read(FIXTURES / "coco_console" / "train.log")
    frame = run.scalars
    check(frame, "loss", {45: 0.1263}, count=16)
    check(frame, "bbox/AP", {45: 0.005, 220: 0.312}, count=8)
    check(frame, "bbox/AP50", {45: 0.023, 220: 0.779}, count=8)
    check(frame, "bbox/AR1", {45: 0.019}, count=8)
    check(frame, "bbox/AR100", {45: 0.038}, count=8)
    assert frame[frame["tag"] == "bbox/APs"]["value"].isna().all()
    assert {"bbox/AP75", "bbox/APm", "bbox/APl", "bbox/AR10", "bbox/ARs", "bbox/ARm", "bbox/ARl"} <= set(
        frame["tag"].astype(str))
    assert "96 line(s) of COCO evaluation summaries" in notes_text(run)
    assert "16 value(s) of -1 (no object of that size) read as missing" in notes_text(run)


def test_an_iteration_that_counts_epochs_beside_the_batch_of_its_epoch(tmp_path):
    """ChineseNER's loop (and its many forks): ``logger.info("iteration:{} step:{}/{}, NER loss:{:>9.6f}")`` where
    the iteration is the epoch, from 1, and the step the batch of that epoch; its logger named after the log's path
    (``- log\\train.log - INFO -``): step = (iteration − 1) × batches + batch."""
    lines = ["2019-10-10 20:31:34,388 - log\\train.log - INFO - lr             :\t0.001",
             "2019-10-10 20:32:13,967 - log\\train.log - INFO - start training"]
    for iteration, batch in [(1, 100), (1, 200), (1, 300), (2, 100), (2, 200)]:
        loss = 30 / (iteration * batch / 100)
        lines.append(f"2019-10-10 20:33:11,477 - log\\train.log - INFO - iteration:{iteration} step:{batch}/300, "
                     f"NER loss:{loss:>9.6f}")
    run = _read(write(tmp_path / "train.log", "\r\n".join(lines) + "\r\n"))
    check(run.scalars, "NER loss", {100: 30.0, 200: 15.0, 300: 10.0, 400: 15.0, 500: 7.5}, count=5)
    assert "the logging prefix of its lines" in notes_text(run)


@pytest.mark.parametrize("epochs", [3, 40])
def test_names_and_numbers_with_blanks_between_under_an_epoch_header(tmp_path, monkeypatch, epochs):
    """A widely copied BERT fine-tuning tutorial: ``Epoch 1/10``, a rule, ``Train loss 0.1417 accuracy 0.9542`` and
    ``Val   loss 0.1393 accuracy 0.9600`` (``print(f'Train loss {loss} accuracy {acc}')``): each pair read, the bare
    ``accuracy`` given its line's phase; a line of other words and a number under a header is not a metric."""
    out = []
    for e in range(1, epochs + 1):
        out += [f"Epoch {e}/{epochs}", "-" * 10, f"Train loss {0.5 / e} accuracy {0.9 + e / 1000}",
                f"Val   loss {0.6 / e} accuracy {0.85 + e / 1000}", "Saving model to checkpoint 3", ""]
    path = write(tmp_path / "train_logs.txt", "\n".join(out) + "\n")
    run = _same_at_once_and_line_by_line(path, monkeypatch)
    check(run.scalars, "Train loss", {1: 0.5, 2: 0.25}, count=epochs)
    check(run.scalars, "Train accuracy", {1: 0.901, 3: 0.903}, count=epochs)
    check(run.scalars, "Val loss", {1: 0.6, 2: 0.3}, count=epochs)
    check(run.scalars, "Val accuracy", {1: 0.851}, count=epochs)
    assert set(run.scalars["tag"].astype(str)) == {"Train loss", "Train accuracy", "Val loss", "Val accuracy"}


def test_an_evaluations_block_after_its_banner_takes_its_phase_and_a_bracketed_batch_its_epoch(tmp_path):
    """``Epoch 15 | Batch [108/108] | Loss: 0.6494 | Acc: 0.8519`` lines behind a logging prefix (the batch of the
    epoch in brackets), then a banner and its block: ``TEST SET EVALUATION``, a rule, ``Loss      : 0.5793`` …:
    the block's values are the test's (``test/Loss``), not written over the last training values."""
    lines = []
    for epoch in (1, 2):
        for batch in (54, 108):
            lines.append(f"[2026-05-30 23:54:32,842] INFO:   Epoch {epoch} | Batch [{batch}/108] | Loss: "
                         f"{1 / (epoch + batch / 108):.4f} | Acc: {0.5 + epoch / 10:.4f}")
    lines += ["[2026-05-31 01:17:57,968] INFO: ", "=" * 60, "[2026-05-31 01:17:57,969] INFO: TEST SET EVALUATION",
              "[2026-05-31 01:17:57,969] INFO: " + "=" * 60, "[2026-05-31 01:17:57,970] INFO:   Loss      : 0.5793",
              "[2026-05-31 01:17:57,970] INFO:   Accuracy  : 0.8871", "[2026-05-31 01:17:57,970] INFO:   F1 Score  : 0.8853"]
    run = _read(write(tmp_path / "training.log", "\n".join(lines) + "\n"))
    check(run.scalars, "Loss", {162: 0.6667, 216: 0.5, 270: 0.4, 324: 0.3333}, count=4)
    check(run.scalars, "test/Loss", {324: 0.5793}, count=1)
    check(run.scalars, "test/Accuracy", {324: 0.8871}, count=1)
    check(run.scalars, "test/F1 Score", {324: 0.8853}, count=1)


def test_makemore_evaluation_lines_and_step_times_in_milliseconds(monkeypatch):
    """makemore's console (tests/fixtures/makemore, a real CPU training with its print formats): ``step N | loss … |
    step time …ms`` every 10 steps and ``step N train loss: … test loss: …`` every 500. The evaluation lines, whose
    names are of two words, had been skipped as lines without metrics; the step time lost its unit, so a millisecond
    was read as a second. The "best so far" sentence is no metric."""
    path = FIXTURES / "makemore" / "train.log"
    run = _read(path)
    frame = run.scalars
    check(frame, "loss", {0: 3.0202, 500: 2.0834, 1500: 2.2855}, count=151)
    check(frame, "step time (ms)", {0: 385.15, 10: 1.28}, count=151)
    check(frame, "train loss", {500: 2.2209248542785645, 1000: 2.177870750427246, 1500: 2.1588635444641113}, count=3)
    check(frame, "test loss", {500: 2.1796038150787354, 1000: 2.227509021759033, 1500: 2.242488384246826}, count=3)
    assert set(frame["tag"].astype(str)) == {"loss", "step time (ms)", "train loss", "test loss"}
    assert _same_at_once_and_line_by_line(path, monkeypatch).scalars.shape == frame.shape


@pytest.mark.parametrize(("line", "tag", "value"), [
    ("iter 5 | loss 2.5 | time 120.5ms", "time (ms)", 120.5),
    ("step 5 | loss 2.5 | dt 0.42s", "dt (s)", 0.42),
    ("step 5 | loss 2.5 | Time (s): 0.42s", "Time (s)", 0.42),  # (its name gives the unit already)
    ("step 5 | loss 2.5 | acc 91.2%", "acc", 91.2),
])
def test_a_pairs_unit_of_time_stays_in_its_name(tmp_path, line, tag, value):
    lines = [line.replace("5", str(step), 1) for step in (3, 4, 5)]
    run = _read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    check(run.scalars, tag, {5: value}, count=3)
    check(run.scalars, "loss", {5: 2.5}, count=3)


def test_epoch_headers_in_brackets_behind_a_logging_prefix_and_names_aligned_by_blanks(monkeypatch):
    """A loop logging through Python's logging (tests/fixtures/logged_epochs, a real CPU training): ``[Epoch 3/12]``
    then ``Train Loss: …, Train Acc: …`` and ``Val   Loss: …, Val   Acc: …``. The bracketed header had been taken
    for a part of the logging prefix (a logger's name in brackets) and the file was not read at all; the validation
    lines, their names aligned by blanks, were named as unreadable."""
    path = FIXTURES / "logged_epochs" / "train.log"
    run = _read(path)
    frame = run.scalars
    check(frame, "Train Loss", {1: 2.1879, 2: 1.5632, 10: 0.0363}, count=10)
    check(frame, "Val Loss", {1: 2.0551, 2: 1.7171, 10: 1.1776}, count=10)
    check(frame, "Val Acc", {1: 0.3555, 10: 0.623}, count=10)
    assert set(frame["tag"].astype(str)) == {"Train Loss", "Train Acc", "Val Loss", "Val Acc"}
    assert not run.warnings
    assert "the logging prefix of its lines (time, level, logger name) removed before reading" in notes_text(run)
    assert _same_at_once_and_line_by_line(path, monkeypatch).scalars.shape == frame.shape


@pytest.mark.parametrize("header", ["[Epoch 3/12]", "===== Epoch 3/12 =====", "--- Epoch 3 of 12 ---", "Epoch 3/12:"])
def test_epoch_header_spellings(tmp_path, header):
    blocks = [f"{header.replace('3', str(e), 1)}\nloss: {1 / e:.4f}, val_loss: {1.5 / e:.4f}\n" for e in range(1, 5)]
    run = _read(write(tmp_path / "train.log", "".join(blocks)))
    check(run.scalars, "val_loss", {1: 1.5, 4: 0.375}, count=4)


def test_a_step_counter_that_starts_over_each_epoch_goes_on(monkeypatch):
    """``Epoch 2/4 started`` then ``step=10/48 loss=…`` every 10 batches (tests/fixtures/epoch_counter, a real CPU
    training): the counter runs to its total and starts over each epoch. Its steps had gone back each epoch, read as
    new sessions appended to the log (and the last judged alone); they go on, epochs before × 48 + step."""
    path = FIXTURES / "epoch_counter" / "train.log"
    run = _read(path)
    frame = run.scalars
    assert sorted(curve(frame, "loss")) == [48 * epoch + step for epoch in range(4) for step in (10, 20, 30, 40)]
    check(frame, "loss", {10: 2.3332, 40: 1.9228, 58: 1.2933, 88: 0.8968}, count=16)
    assert run.restarts == [] and len(run.phases) <= 1
    assert "started over after reaching it 3 time(s)" in notes_text(run)
    assert _same_at_once_and_line_by_line(path, monkeypatch).scalars.shape == frame.shape


def test_a_counter_that_goes_back_before_its_total_is_still_a_restart(tmp_path):
    """A job relaunched at batch 140 of 289 (the counter far from its total) starts its steps again: a restart, not
    an epoch."""
    lines = [f"step={step}/289 loss={5 - step / 100:.4f}" for step in range(20, 160, 20)]
    lines += [f"step={step}/289 loss={5 - step / 100:.4f}" for step in range(20, 300, 20) if step <= 289]
    run = _read(write(tmp_path / "train.log", "\n".join(lines) + "\n"))
    assert max(curve(run.scalars, "loss")) == 280
    assert run.restarts or len(run.phases) > 1
    assert "started over" not in notes_text(run)


@pytest.mark.parametrize("first", [0, 20])
def test_a_long_log_of_epoch_counters_read_at_once_equals_line_by_line(tmp_path, monkeypatch, first):
    """Counters printed from 0 or from the interval, 40 epochs of 289 batches in several chunks."""
    lines = []
    for epoch in range(40):
        lines.append(f"Epoch {epoch + 1}/40 started")
        lines += [f"step={step}/289 loss={4 / (1 + epoch + step / 289):.4f} lr=0.0003" for step in range(first, 290, 20)]
    path = write(tmp_path / "train.log", "\n".join(lines) + "\n")
    run = _same_at_once_and_line_by_line(path, monkeypatch)
    steps = sorted(curve(run.scalars, "loss"))
    assert steps[-1] == 39 * 289 + max(range(first, 290, 20)) and len(steps) == len(set(steps))
