"""MosaicML Composer's console (its ConsoleLogger, as llm-foundry trainings print it): two real trainings
(``tests/fixtures/composer/generate.py``, Composer 0.32.1) with the points Composer's own TensorboardLogger wrote for
one of them, and lines pasted from real trainings (see the fixture's README)."""

from __future__ import annotations

import csv
import math
import random

import numpy as np
import pandas as pd
import pytest

import tanalyze
from tanalyze.readers import HEAD_BYTES
from tanalyze.readers.text import _parts
from tanalyze.readers.text.composer import ComposerParser, ComposerReader, detect_composer
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "composer"
EPOCHS = FIXTURES / "toy" / "epochs.log"
BATCHES = FIXTURES / "toy" / "batches.log"
COUNTERS = {"time/epoch", "time/batch", "time/sample", "time/batch_in_epoch", "time/sample_in_epoch", "time/token",
            "time/token_in_epoch"}

#: the ROCm blog's two-node MPT-30B fine-tuning (Composer 0.21.3), as pasted (spaces for the tab)
ROCM = """2024-09-30 02:05:36,662: rank0[73][MainThread]: INFO: composer.trainer.trainer: Using precision Precision.AMP_FP16
******************************
Config:
composer_commit_hash: None
composer_version: 0.21.3
enabled_algorithms/GradientClipping: true
node_name: unknown because NODENAME environment variable not set
num_gpus_per_node: 8
num_nodes: 2
rank_zero_seed: 17
time/remaining_estimate_unit: hours
******************************
[epoch=1][batch=5/5]:
         Train time/batch: 4
         Train time/sample: 4096
         Train time/batch_in_epoch: 4
         Train time/sample_in_epoch: 4096
         Train time/token: 29254495
         Train time/token_in_epoch: 29254495
         Train trainer/device_train_microbatch_size: 8
         Train loss/train/total: 8.4213
         Train metrics/train/LanguageCrossEntropy: 8.4620
         Train metrics/train/LanguagePerplexity: 4731.5786
         Train metrics/train/TokenAccuracy: 0.0445
         Train throughput/batches_per_sec: 0.0027
         Train throughput/samples_per_sec: 2.7330
         Train throughput/device/batches_per_sec: 0.0002
         Train throughput/device/samples_per_sec: 0.1708
         Train throughput/tokens_per_sec: 20082.8418
         Train throughput/device/tokens_per_sec: 1255.1776
         Train time/train: 0.5249
         Train time/val: 0.0000
         Train time/total: 0.5249
         Train time/remaining_estimate: 0.0000
         Train lr-DecoupledAdamW/group0: 0.0000
"""

#: princeton-nlp/LLM-Shearing issue #24: the start of a block of its pruning run, as pasted
SHEARING = """[batch=366/48000]:
         Train time/batch: 365
         Train time/sample: 93440
         Train time/batch_in_epoch: 365
         Train time/sample_in_epoch: 93440
         Train time/token: 382730240
         Train time/token_in_epoch: 382730240
         Train metrics/train/cc_weight: 0.2192
         Train metrics/train/github_weight: 0.0002
         Train metrics/train/book_weight: 0.0791
         Train memory/current_allocated_mem: 9.7173
         Train memory/alloc_retries: 0
         Train trainer/device_train_microbatch_size: 16
         Train loss/train/total: 10.3750
         Train loss/train/ce_loss: 10.3750
         Train metrics/train/LanguageCrossEntropy: 10.3750
         Train metrics/train/Perplexity: 32048.3164
"""


def read(path):
    (run,) = ComposerReader().read([path])
    return run


def _block(header: str, pairs: list[tuple[str, object]], prefix: str = "Train ") -> str:
    return header + ":\n" + "".join(f"\t {prefix}{name}: {value}\n" for name, value in pairs)


def _train(n: int, loss: float, header: str | None = None) -> str:
    """A ``[batch=n/…]`` block as Composer prints it (time/batch is n - 1)."""
    return _block(header or f"[batch={n}/100]", [("time/batch", n - 1), ("time/sample", 8 * (n - 1)),
                                                 ("loss/train/total", f"{loss:.4f}"),
                                                 ("throughput/batches_per_sec", f"{n / 3:.4f}"),
                                                 ("lr-DecoupledAdamW/group0", f"{n / 1000:.4f}")])


def test_a_real_training_in_batches():
    run = read(BATCHES)
    frame = run.scalars
    check(frame, "loss/train/total", {0: 3.4699, 1: 3.4361, 3: 3.4067, 13: 1.624, 23: 1.2965}, count=13)
    check(frame, "metrics/train/LanguagePerplexity", {0: 32.1328}, count=13)
    check(frame, "trainer/device_train_microbatch_size", {0: 8.0, 23: 8.0}, count=13)
    check(frame, "lr-DecoupledAdamW/group0", {1: 0.0, 2: 0.005, 4: 0.01, 24: 0.001}, count=13)
    check(frame, "time/remaining_estimate", {2: 0.0007, 4: 0.0003}, count=12)  # (the runtime estimator skips the first batch)
    check(frame, "throughput/tokens_per_sec", {6: 5234.6921}, count=10)  # (once the speed monitor's window is full)
    check(frame, "metrics/eval/LanguageCrossEntropy", {8: 2.476, 16: 1.6486, 24: 1.4917}, count=3)
    check(frame, "metrics/eval/LanguagePerplexity", {24: 4.4446}, count=3)
    assert not COUNTERS & set(frame["tag"])
    assert frame["wall_time"].isna().all() and "epoch" not in frame.columns
    assert run.hparams == {"composer_commit_hash": None, "composer_version": "0.32.1",
                           "node_name": "unknown because NODENAME environment variable not set",
                           "num_cpus_per_node": 1, "num_nodes": 1, "rank_zero_seed": 17,
                           "time/remaining_estimate_unit": "hours"}
    notes = notes_text(run)
    assert "step = the trainer's batch count as Composer's loggers place each metric" in notes
    assert "3 evaluation(s) ('Eval' lines) at the batch count" in notes
    assert not run.warnings and not run.restarts


def test_the_console_is_read_at_the_steps_composers_tensorboard_logger_wrote():
    """Every point read from the console is one Composer's TensorboardLogger wrote in the same training, at the same
    step (the value as the console rounds it): the loss at the batches before, lr and throughput at the batches done,
    the evaluation at the batches done."""
    written: dict[tuple[str, int], float] = {}
    with open(FIXTURES / "tensorboard_points.tsv", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            written[row["tag"], int(row["step"])] = float(row["value"])  # (the last write of a step, as read)
    frame = read(BATCHES).scalars
    assert len(frame) == 182
    for tag, step, value in zip(frame["tag"], frame["step"], frame["value"], strict=True):
        assert (tag, step) in written, (tag, step)
        assert abs(written[tag, step] - value) <= 5e-5 * max(1.0, abs(value)), (tag, step, value, written[tag, step])
    assert {tag for tag, _ in written} == set(frame["tag"])
    assert written["loss/train/total", 9] == pytest.approx(2.3676, abs=5e-5)  # the block [batch=10/24]
    assert written["lr-DecoupledAdamW/group0", 10] == pytest.approx(0.0079, abs=5e-5)


def test_a_real_training_in_epochs():
    run = read(EPOCHS)
    frame = run.scalars
    check(frame, "loss/train/total", {0: 3.4699, 11: 1.902, 12: 1.9492, 23: 1.2965}, count=24)
    check(frame, "lr-DecoupledAdamW/group0", {1: 0.0, 12: 0.0068, 13: 0.0061, 24: 0.001}, count=24)
    check(frame, "metrics/eval/LanguageCrossEntropy", {12: 1.9237, 24: 1.4917}, count=2)
    epochs = frame.set_index(["tag", "step"])["epoch"]
    assert epochs["loss/train/total", 11] == 1 and epochs["loss/train/total", 12] == 2  # [epoch=2][batch=1/12]
    assert epochs["lr-DecoupledAdamW/group0", 12] == 1 and epochs["lr-DecoupledAdamW/group0", 24] == 2
    assert epochs["metrics/eval/LanguageCrossEntropy", 12] == 1 and epochs["metrics/eval/LanguageCrossEntropy", 24] == 2
    assert "2 evaluation(s)" in notes_text(run) and not run.warnings and not run.restarts


def test_the_roles_and_verdict_of_the_real_training():
    frame = read(EPOCHS).scalars
    logs = tanalyze.from_frame(frame.assign(run="composer"))
    (result,) = tanalyze.diagnose(logs).values()
    # validated by its cross-entropy: the training cross-entropy is the loss it is compared with
    assert result.roles["train_loss"] == "metrics/train/LanguageCrossEntropy"
    assert result.roles["val_loss"] == "metrics/eval/LanguageCrossEntropy"
    assert result.roles["learning_rate"] == "lr-DecoupledAdamW/group0"
    assert result.verdict.label == "normal"
    assert not any("different quantities" in note for note in result.warnings)


def test_lines_pasted_from_real_trainings(tmp_path):
    run = read(write(tmp_path / "rocm" / "train.log", ROCM))
    frame = run.scalars
    # [epoch=1][batch=5/5]: the fifth batch done; what was logged during it at the four before
    assert curve(frame, "loss/train/total") == {4: 8.4213}
    assert curve(frame, "metrics/train/TokenAccuracy") == {4: 0.0445}
    assert curve(frame, "throughput/tokens_per_sec") == {5: 20082.8418}
    assert curve(frame, "time/total") == {5: 0.5249}
    assert curve(frame, "lr-DecoupledAdamW/group0") == {5: 0.0}
    assert set(frame["epoch"]) == {1.0} and not COUNTERS & set(frame["tag"])
    assert run.hparams["num_nodes"] == 2 and run.hparams["enabled_algorithms/GradientClipping"] is True
    assert run.hparams["composer_commit_hash"] is None and not run.warnings
    frame = read(write(tmp_path / "shearing" / "train.log", SHEARING)).scalars
    assert curve(frame, "metrics/train/cc_weight") == {365: 0.2192}
    assert curve(frame, "memory/alloc_retries") == {365: 0.0}
    assert curve(frame, "loss/train/ce_loss") == {365: 10.375}
    assert len(frame) == 10


def test_a_launchers_rank_prefix_is_removed(tmp_path):
    text = "".join(f"0: {line}\n" for line in _train(1, 12.0).splitlines() + _train(2, 11.5).splitlines())
    path = write(tmp_path / "slurm-42.out", text)
    assert ComposerReader().sniff(path, path.read_bytes()[:HEAD_BYTES])
    frame = read(path).scalars
    assert curve(frame, "loss/train/total") == {0: 12.0, 1: 11.5}
    assert curve(frame, "lr-DecoupledAdamW/group0") == {1: 0.001, 2: 0.002}


def test_evaluations_go_to_the_batches_done_before_them(tmp_path):
    evaluation = ("[Eval batch=1/2] Eval on eval data\n"
                  + _block("[Eval batch=2/2] Eval on eval data", [("metrics/eval/LanguageCrossEntropy", "2.5000")],
                           "Eval ")
                  + _block("[Eval batch=5/5] Eval on hellaswag/10-shot data",
                           [("metrics/hellaswag/10-shot/InContextLearningMultipleChoiceAccuracy", "0.2500")], "Eval "))
    text = evaluation + _train(1, 3.0) + _train(2, 2.9) + evaluation.replace("2.5000", "2.4000") + _train(3, 2.8)
    run = read(write(tmp_path / "train.log", text))
    frame = run.scalars
    assert curve(frame, "metrics/eval/LanguageCrossEntropy") == {0: 2.5, 2: 2.4}  # (the first before any training)
    assert curve(frame, "metrics/hellaswag/10-shot/InContextLearningMultipleChoiceAccuracy") == {0: 0.25, 2: 0.25}
    assert curve(frame, "loss/train/total") == {0: 3.0, 1: 2.9, 2: 2.8}
    assert "4 evaluation(s)" in notes_text(run) and not run.warnings


def test_a_header_in_tokens_or_without_the_epochs_length_takes_its_count_from_time_batch(tmp_path):
    text = (_train(1, 3.0, "[token=0/1048576]") + _train(2, 2.9, "[token=2048/1048576]")
            + _train(3, 2.8, "[epoch=1][batch=3]"))
    # (an epoch-start block: the train metrics logged at the epoch's end come before its time/batch)
    text += _block("[epoch=2][batch=1]", [("metrics/train/LanguageCrossEntropy", "2.6000"), ("time/epoch", 1),
                                          ("time/batch", 3), ("loss/train/total", "2.6000"),
                                          ("lr-DecoupledAdamW/group0", "0.0040")])
    run = read(write(tmp_path / "train.log", text))
    frame = run.scalars
    assert curve(frame, "loss/train/total") == {0: 3.0, 1: 2.9, 2: 2.8, 3: 2.6}
    assert curve(frame, "metrics/train/LanguageCrossEntropy") == {3: 2.6}
    assert curve(frame, "lr-DecoupledAdamW/group0") == {1: 0.001, 2: 0.002, 3: 0.003, 4: 0.004}
    assert not run.warnings


def test_a_block_whose_count_is_not_known_is_named(tmp_path):
    text = _block("[token=0/1048576]", [("loss/train/total", "3.0000"), ("lr-DecoupledAdamW/group0", "0.0010")])
    text += _train(2, 2.9)
    run = read(write(tmp_path / "train.log", text))
    assert curve(run.scalars, "loss/train/total") == {1: 2.9}
    (warning,) = run.warnings
    assert "2 metric line(s) of blocks whose batch count is not known" in warning.message
    assert "e.g. the block '[token=0/1048576]:'" in warning.message


def test_a_resumed_log_records_the_restart_and_keeps_the_later_values(tmp_path):
    text = "".join(_train(n, 3 - n / 10) for n in range(1, 5)) + _train(3, 9.0) + _train(4, 8.0) + _train(5, 7.0)
    run = read(write(tmp_path / "train.log", text))
    (restart,) = run.restarts
    assert restart.step == 3 and "after step 4 (line 25)" in restart.detail
    assert curve(run.scalars, "loss/train/total") == {0: 2.9, 1: 2.8, 2: 9.0, 3: 8.0, 4: 7.0}
    assert curve(run.scalars, "lr-DecoupledAdamW/group0")[3] == 0.003


def test_lines_that_cannot_be_read_are_named(tmp_path):
    lines = (
        "\t Train loss/train/total: 5.0000\n"  # (before any block's header: no step)
        + _train(1, 3.0)
        + "\t Train loss/train/tot\n"  # (cut)
        + f"[batch={2**53 + 1}/100]:\n\t Train loss/train/total: 2.9000\n"  # (a count too large)
        + _train(3, 2.8)
    )
    run = read(write(tmp_path / "train.log", lines))
    assert curve(run.scalars, "loss/train/total") == {0: 3.0, 2: 2.8}
    (warning,) = run.warnings
    assert "4 line(s) look like Composer metrics but could not be read, e.g. line 1" in warning.message
    assert "line 8: 'Train loss/train/tot'; line 9: '[batch=9007199254740993/100]:'" in warning.message


def test_a_header_that_cannot_be_read_is_named_and_its_block_placed_by_its_time_batch(tmp_path):
    text = (_train(1, 3.0) + _train(2, 2.9).replace("[batch=2/100]", "[batch=2/100] what")
            + _train(3, 2.8).replace("[batch=3/100]", "[batch=x/xxx]") + _train(4, 2.7)
            + "[batch=5/100]x:\n\t Train loss/train/total: 2.6000\n")  # (and no time/batch in its block)
    run = read(write(tmp_path / "train.log", text))
    assert curve(run.scalars, "loss/train/total") == {0: 3.0, 1: 2.9, 2: 2.8, 3: 2.7}
    assert curve(run.scalars, "lr-DecoupledAdamW/group0") == {1: 0.001, 2: 0.002, 3: 0.003, 4: 0.004}
    lookalikes, unplaced = run.warnings
    assert "3 line(s) look like Composer metrics but could not be read, e.g. line 7: '[batch=2/100] what:'; " \
           "line 13: '[batch=x/xxx]:'; line 25: '[batch=5/100]x:'" in lookalikes.message
    assert "1 metric line(s) of blocks whose batch count is not known" in unplaced.message
    assert "e.g. the block '[batch=5/100]x:'" in unplaced.message


def test_a_block_whose_header_was_lost_is_placed_by_its_time_batch_not_put_in_the_block_before(tmp_path):
    text = _train(1, 3.0) + _train(2, 2.9) + _train(3, 2.8).replace("[batch=3/100]:\n", "") + _train(4, 2.7)
    run = read(write(tmp_path / "train.log", text))
    assert curve(run.scalars, "loss/train/total") == {0: 3.0, 1: 2.9, 2: 2.8, 3: 2.7}
    assert curve(run.scalars, "lr-DecoupledAdamW/group0") == {1: 0.001, 2: 0.002, 3: 0.003, 4: 0.004}
    assert not run.warnings
    evaluation = _block("[Eval batch=2/2] Eval on eval data", [("metrics/eval/LanguageCrossEntropy", "2.5000")], "Eval ")
    for missing in (_train(3, 2.8).split("\n", 1)[0] + "\n", evaluation.split("\n", 1)[0] + "\n"):
        text = (_train(1, 3.0) + _train(2, 2.9) + evaluation + _train(3, 2.8) + _train(4, 2.7)).replace(missing, "")
        run = read(write(tmp_path / "evaluation.log", text))  # (after an evaluation, the training header lost; then
        frame = run.scalars  # the evaluation's)
        assert curve(frame, "loss/train/total") == {0: 3.0, 1: 2.9, 2: 2.8, 3: 2.7}, missing
        assert curve(frame, "metrics/eval/LanguageCrossEntropy") == {2: 2.5}, missing
        assert "1 evaluation(s)" in notes_text(run) and not run.warnings
    lost = _train(1, 3.0) + "\t Train loss/train/total: 2.9000\n"
    run = read(write(tmp_path / "lost.log", lost))  # (a name again, no time/batch after it: named)
    assert curve(run.scalars, "loss/train/total") == {0: 3.0}
    (warning,) = run.warnings
    assert "1 metric line(s) of blocks whose batch count is not known" in warning.message
    assert "'(a block whose header was lost)'" in warning.message


def test_values_that_are_no_numbers_are_counted_not_read(tmp_path):
    pairs = [("time/batch", 0), ("loss/train/total", "nan"), ("metrics/train/Accuracy", "inf"),
             ("Table", '{"columns":["a"],"data":[[1]]}'), ("expert/ffn", "<wandb.sdk.data_types.image.Image object>"),
             ("note", '"text: 3"'), ("gate", "None"), ("grads", "Tensor of shape torch.Size([2])"), ("odd", "1.2.3")]
    numbers = [(name, "0.5000" if name == "gate" else value) for name, value in pairs]  # (a number where None was)
    text = _block("[batch=1/100]", pairs) + _block("[batch=2/100]", pairs) + _block("[batch=3/100]", numbers)
    run = read(write(tmp_path / "train.log", text))  # (the second block by the first one's template)
    frame = run.scalars
    assert math.isnan(curve(frame, "loss/train/total")[0]) and curve(frame, "metrics/train/Accuracy")[1] == math.inf
    assert curve(frame, "gate") == {3: 0.5}
    assert set(frame["tag"]) == {"loss/train/total", "metrics/train/Accuracy", "gate"}
    assert "17 metric line(s) whose value is no number (text, None, a table …) not read, e.g. 'Table'" in (
        notes_text(run))
    assert not run.warnings


def test_non_ascii_names_and_junk_lines(tmp_path):
    text = ("\x1b[32mStarting training…\x1b[0m\n" + _train(1, 3.0)
            + "\t Train metrics/train/Précision→: 0.5000\nwandb: 🚀 View run at https://example.org\n"
            + "Train loss/train/total: 1.0\n"  # (no indent: not Composer's)
            + _train(2, 2.9) + "\x00\x00garbage ÿ\n")
    run = read(write(tmp_path / "train.log", text))
    assert curve(run.scalars, "metrics/train/Précision→") == {0: 0.5}
    assert curve(run.scalars, "loss/train/total") == {0: 3.0, 1: 2.9}
    assert not run.warnings


def test_the_config_block_cut_between_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(_parts, "CHUNK_CHARS", 128)
    run = read(write(tmp_path / "rocm" / "train.log", ROCM))
    assert run.hparams["time/remaining_estimate_unit"] == "hours" and run.hparams["num_gpus_per_node"] == 8
    assert curve(run.scalars, "loss/train/total") == {4: 8.4213}


def test_detect_needs_a_header_and_a_metric_line():
    assert detect_composer("[batch=1/100]:\n\t Train time/batch: 0\n")
    assert detect_composer("[epoch=1][batch=5/5]:\n         Train time/batch: 4\n")
    assert detect_composer("[Eval batch=3/3] Eval on eval data:\n\t Eval metrics/eval/LanguageCrossEntropy: 1.8331\n")
    assert not detect_composer("[batch=1/100]:\n")
    assert not detect_composer("\t Train loss/train/total: 1.0\n\t Train time/batch: 0\n")
    assert not detect_composer("[batch=1/100]:\nTrain loss: 1.0\n")
    assert not detect_composer("[rank=1/100]:\n\t Train loss: 1.0\n")


def test_other_logs_are_not_composers(tmp_path):
    for text in ("Epoch 1/10\n100/100 [====] - loss: 0.5\n", "[INFO] Step 100/1000, Loss: 2.5\n",
                 "[2020-09-22 16:31:24,717 INFO] Step 50/ 1000; acc:   7.21; ppl: 6659.24; xent: 8.80\n" * 2):
        path = write(tmp_path / "train.log", text)
        assert not ComposerReader().sniff(path, path.read_bytes()[:HEAD_BYTES])
    assert ComposerReader().sniff(BATCHES, BATCHES.read_bytes()[:HEAD_BYTES])


def _long_log(blocks: int) -> str:
    """Blocks of several shapes (the speed monitor's window filling, an epoch's start, a key logged once, other
    values, an interval of 3), evaluations, junk and look-alike lines between them."""
    rng = random.Random(7)
    out = []
    for n in range(1, blocks + 1):
        pairs: list[tuple[str, object]] = []
        if n % 40 == 1:
            pairs += [("metrics/train/LanguageCrossEntropy", f"{rng.random():.4f}"), ("time/epoch", n // 40)]
        pairs += [("time/batch", 3 * n - 1), ("time/sample", 24 * n - 8), ("memory/alloc_retries", n % 3),
                  ("trainer/device_train_microbatch_size", 8), ("loss/train/total", f"{rng.random() * 4:.4f}")]
        if n % 40 != 1:
            pairs.append(("metrics/train/LanguageCrossEntropy", f"{rng.random():.4f}"))
        if n > 10:
            pairs += [("throughput/batches_per_sec", f"{rng.random():.4f}"), ("throughput/tokens_per_sec", "nan")]
        if n % 97 == 5:
            pairs.append(("Table", '{"columns":["x"]}'))
        pairs += [("time/train", f"{n / 1000:.4f}"), ("lr-DecoupledAdamW/group0", f"{n * 1e-5:.4f}")]
        out.append(_block(f"[batch={3 * n}/{3 * blocks}]", pairs))
        if n % 25 == 0:
            out.append("".join(f"[Eval batch={i}/4] Eval on eval data\n" for i in (1, 2, 3)))
            out.append(_block("[Eval batch=4/4] Eval on eval data", [("metrics/eval/LanguageCrossEntropy",
                                                                      f"{rng.random():.4f}")], "Eval "))
        if n % 33 == 0:
            out.append("/site-packages/streaming/dataset.py:412: UserWarning: slow shard\n")
        if n % 51 == 0:
            out.append("\t Train loss/train/tot\n")
    return "".join(out)


def _oracle(text: str) -> pd.DataFrame:
    """The documented rules, line by line: each metric at its block's count, less one for loss/, metrics/train/,
    trainer/, memory/ in a training block; evaluations at the last training block's count; counters left out."""
    rows, count, train = [], 0, False
    for line in text.splitlines():
        if line.startswith("[batch="):
            count, train = int(line[7:line.index("/")]), True
        elif line.startswith("[Eval batch=") and line.endswith(":"):
            train = False
        elif line.startswith("\t Train ") or line.startswith("\t Eval "):
            name, _, value = line.split(" ", 2)[2].partition(": ")
            try:
                number = float(value)
            except ValueError:
                continue
            if name not in COUNTERS:
                during = train and name.startswith(("loss/", "metrics/train/", "trainer/", "memory/"))
                rows.append((name, count - during, number))
    return pd.DataFrame(rows, columns=["tag", "step", "value"])


@pytest.mark.parametrize("chunk_chars", [None, 1024, 1 << 14])
def test_bodies_read_by_their_template_as_line_by_line_and_as_the_rules_say(tmp_path, monkeypatch, chunk_chars):
    text = _long_log(400)
    path = write(tmp_path / "train.log", text)
    if chunk_chars is not None:
        monkeypatch.setattr(_parts, "CHUNK_CHARS", chunk_chars)
    at_once = read(path)
    monkeypatch.setattr(ComposerParser, "line_by_line", True)
    by_line = read(path)
    pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True)
    assert (at_once.notes, at_once.warnings, at_once.restarts) == (by_line.notes, by_line.warnings, by_line.restarts)
    expected = _oracle(text).drop_duplicates(["tag", "step"], keep="last").sort_values(["tag", "step"])
    got = at_once.scalars[["tag", "step", "value"]].astype({"tag": str}).sort_values(["tag", "step"])
    np.testing.assert_array_equal(got["tag"].to_numpy(), expected["tag"].to_numpy())
    np.testing.assert_array_equal(got["step"].to_numpy(), expected["step"].to_numpy())
    np.testing.assert_array_equal(got["value"].to_numpy(), expected["value"].to_numpy())
    (warning,) = at_once.warnings
    assert "7 line(s) look like Composer metrics but could not be read" in warning.message
    assert "5 metric line(s) whose value is no number" in notes_text(at_once)


@pytest.mark.parametrize("name", ["batches", "tokens", "restart", "lookalikes"])
def test_a_log_read_on_from_any_line_reads_as_the_log_read_whole(name, tmp_path):
    """A log that grew (cut at every line and mid-line, read on from where the last read stopped): the Config block,
    a block whose count comes after a cut (its time/batch), a restart and look-alike lines come out the same."""
    from tests.readers.test_text_resume import _line_starts, assert_same_part, resumed

    data = {"batches": BATCHES.read_bytes(),
            "tokens": "".join(_train(n, 3 - n / 100, f"[token={2048 * (n - 1)}/99999]") for n in range(1, 12)).encode(),
            "restart": ("".join(_train(n, 3 - n / 10) for n in range(1, 5)) + _train(3, 9.0) + _train(4, 8.0)).encode(),
            "lookalikes": ("\t Train loss/train/total: 5.0000\n" + _train(1, 3.0) + "\t Train loss/train/tot\n"
                           + "[batch=2/100]: what\n\t Train loss/train/total: 2.9000\n" + _train(3, 2.8)).encode()}[name]
    reader = ComposerReader()
    path = write(tmp_path / "whole" / "train.log", data)
    whole = reader.read_part(path)
    starts = _line_starts(data)
    if name == "batches":  # (the Config block and the first blocks at every line, then every ninth line)
        starts = starts[:40] + starts[40::9]
    scratch = tmp_path / "train.log"
    for cut in starts + [start - 3 for start in starts[3::7]]:
        assert_same_part(resumed(reader, scratch, data, [cut], scratch), whole, f"{name} cut at {cut}")
    assert_same_part(resumed(reader, scratch, data, starts[2::5], scratch), whole, f"{name} read on in steps")
