"""MiniMind's training console: real tiny trainings through MiniMind's loop and its console lines
(``tests/fixtures/minimind/generate.py``: the current line, a run resumed in the same log, the 2024 versions' line),
and the lines of its other versions and scripts as their format strings print them."""

import math

import pandas as pd

from tanalyze.readers import HEAD_BYTES
from tanalyze.readers.text import _parts
from tanalyze.readers.text.minimind import MiniMindParser, MiniMindReader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "minimind"

#: the older line, epochs printed from 0 (the first versions' ``epoch``), a time left of several digits
FROM_ZERO = """LLM总参数量：26.878 百万
Epoch:[0/3](0/61701) loss:8.895 lr:0.0002000 epoch_Time:1403.0min:
Epoch:[0/3](100/61701) loss:1.771 lr:0.0000100 epoch_Time:87.0min:
Epoch:[1/3](0/61701) loss:1.502 lr:0.0000090 epoch_Time:90.0min:
Epoch:[1/3](100/61701) loss:1.499 lr:0.0000089 epoch_Time:88.0min:
"""

#: the RL scripts' lines (names of several words), a fork's '[SFT] ' and 'eta:'
OTHERS = """Epoch:[1/1](10/100), Actor Loss: 0.1234, Critic Loss: 0.5678, Reward: 0.3000, KL: 0.0100, KL_ref: 0.0200, Avg Response Len: 120.50, Actor LR: 0.00000100, Critic LR: 0.00000100
Epoch:[1/1](20/100), Actor Loss: 0.1134, Critic Loss: 0.4678, Reward: 0.3500, KL: 0.0110, KL_ref: 0.0210, Avg Response Len: 118.25, Actor LR: 0.00000100, Critic LR: 0.00000100
"""
SFT = """[SFT] Epoch:[1/2](100/500), loss:2.5000, lr:0.00001000, eta:3.0min
[SFT] Epoch:[2/2](100/500), loss:2.2500, lr:0.00000500, eta:1.0min
"""


def read(path):
    (run,) = MiniMindReader().read([path])
    return run


def test_a_real_training_with_the_current_line():
    run = read(FIXTURES / "pretrain" / "train.log")
    frame = run.scalars
    # Epoch:[1/2](10/40) … Epoch:[2/2](40/40): step = (epoch - 1) × 40 + the step in the epoch
    check(frame, "loss", {10: 2.4381, 40: 2.2895, 50: 2.2357, 80: 2.2585}, count=8)
    check(frame, "logits_loss", {20: 2.3240, 70: 2.3195}, count=8)
    check(frame, "aux_loss", {10: 0.0}, count=8)
    check(frame, "lr", {10: 0.00048287, 80: 0.00005}, count=8)
    assert set(frame["tag"]) == {"loss", "logits_loss", "aux_loss", "lr"}  # (no epoch_time: the minutes left)
    assert frame["wall_time"].isna().all()
    assert frame.loc[frame["step"] == 50, "epoch"].tolist() == [2.0] * 4
    assert "epochs counted from 1" in notes_text(run) and not run.warnings and not run.restarts


def test_a_run_resumed_in_the_same_log_is_a_restart():
    run = read(FIXTURES / "resumed" / "train.log")
    (restart,) = run.restarts
    assert restart.step == 50 and restart.until == 60 and "(line 12)" in restart.detail
    check(run.scalars, "loss", {10: 2.4381, 50: 2.2370, 60: 2.2820, 80: 2.2609}, count=8)  # (the later values kept)
    assert not run.warnings


def test_the_older_line_of_2024_epochs_printed_from_1_and_steps_from_0():
    run = read(FIXTURES / "v1" / "train.log")
    check(run.scalars, "loss", {0: 2.606, 30: 2.345, 40: 2.279, 70: 2.291}, count=8)
    check(run.scalars, "lr", {10: 0.000482872895, 40: 0.000275}, count=8)
    assert "epoch_Time" not in set(run.scalars["tag"]) and not run.warnings


def test_epochs_printed_from_0(tmp_path):
    run = read(write(tmp_path / "train.log", FROM_ZERO))
    check(run.scalars, "loss", {0: 8.895, 100: 1.771, 61701: 1.502, 61801: 1.499}, count=4)
    assert curve(run.scalars, "lr")[61801] == 0.0000089
    assert "epochs counted from 0" in notes_text(run)


def test_rl_and_fork_lines(tmp_path):
    run = read(write(tmp_path / "ppo.log", OTHERS))
    check(run.scalars, "Actor Loss", {10: 0.1234, 20: 0.1134}, count=2)
    check(run.scalars, "Avg Response Len", {20: 118.25}, count=2)
    check(run.scalars, "KL_ref", {10: 0.02}, count=2)
    assert len(set(run.scalars["tag"])) == 8
    run = read(write(tmp_path / "sft.log", SFT))
    check(run.scalars, "loss", {100: 2.5, 600: 2.25}, count=2)
    assert set(run.scalars["tag"]) == {"loss", "lr"}  # (eta: the minutes left)


def test_lines_behind_a_logging_prefix_or_a_rank_prefix(tmp_path):
    text = (FIXTURES / "pretrain" / "train.log").read_text(encoding="utf-8")
    logged = "".join(f"2025-01-01 12:00:{k:02d},000 - INFO - {line}\n" for k, line in enumerate(text.splitlines()))
    run = read(write(tmp_path / "logged" / "train.log", logged))
    check(run.scalars, "loss", {10: 2.4381, 80: 2.2585}, count=8)
    ranked = "".join(f"[rank0]:{line}\n" for line in text.splitlines())
    run = read(write(tmp_path / "ranked" / "train.log", ranked))
    check(run.scalars, "loss", {10: 2.4381, 80: 2.2585}, count=8)


def test_lines_that_cannot_be_read_are_named(tmp_path):
    lines = (FIXTURES / "pretrain" / "train.log").read_text(encoding="utf-8").splitlines()
    huge = f"Epoch:[1/2]({2 ** 53 + 1}/{2 ** 53 + 5}), loss: 1.0000, lr: 0.00010000, epoch_time: 0.0min"
    cut = "Epoch:[2/2](4"
    junk = ["\x00\x01 ��� 训练中…", "Epoch [1/2]: 跳过前40个step，从step 41开始", "loss: 9.9 lr: 1.0"]
    run = read(write(tmp_path / "train.log", "\n".join([*lines[:4], huge, cut, *junk, *lines[4:]]) + "\n"))
    (warning,) = run.warnings
    assert "2 line(s) look like MiniMind metrics but could not be read, e.g. line 5" in warning.message
    assert "line 6: 'Epoch:[2/2](4'" in warning.message
    check(run.scalars, "loss", {10: 2.4381, 80: 2.2585}, count=8)
    assert not run.restarts


def test_detect_needs_two_lines():
    line = "Epoch:[1/2](100/44160), loss: 6.1319, logits_loss: 6.1319, aux_loss: 0.0000, lr: 0.00054991, epoch_time: 452.0min\n"
    reader = MiniMindReader()
    assert not reader.detect(line)
    assert reader.detect(line + line.replace("(100/", "(200/"))
    assert reader.detect(FROM_ZERO)
    assert not reader.detect("Epoch 1/2, loss: 2.5\nEpoch 2/2, loss: 2.4\n")
    assert not reader.detect("Epoch:[1/2](abc)\nEpoch:[1/2](def)\n")
    path = FIXTURES / "v1" / "train.log"
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])


def _lines(count: int) -> str:
    """Lines of both versions, numbers of changing widths, a nan, an odd line."""
    out = []
    for k in range(count):
        epoch, within = divmod(k * 10, 1000)
        loss = "nan" if k == 77 else f"{8 * math.exp(-k / 300):.4f}"
        if k < count // 2:
            out.append(f"Epoch:[{epoch + 1}/9]({within}/1000) loss:{float(loss):.3f} lr:{1e-4 / (k + 1):.12f} "
                       f"epoch_Time:{k * 13 % 2000}.0min:")
        else:
            out.append(f"Epoch:[{epoch + 1}/9]({within}/1000), loss: {loss}, logits_loss: {loss}, aux_loss: 0.0000, "
                       f"lr: {1e-4 / (k + 1):.8f}, epoch_time: {k * 13 % 2000:.1f}min")
        if k % 150 == 149:
            out.append("Epoch:[oops")
    return "\n".join(out) + "\n"


def test_lines_read_at_once_as_each_on_its_own(tmp_path, monkeypatch):
    path = write(tmp_path / "train.log", _lines(600))
    at_once = []
    feed_at_once = MiniMindParser._feed_at_once
    monkeypatch.setattr(MiniMindParser, "_feed_at_once", lambda self, chunk: at_once.append(feed_at_once(self, chunk))
                        or at_once[-1])
    runs = []
    for size in (None, 4096, 1 << 14):
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        for by_line in (False, True):
            monkeypatch.setattr(MiniMindParser, "line_by_line", by_line)
            runs.append(read(path))
    first = runs[0]
    for other in runs[1:]:
        pd.testing.assert_frame_equal(first.scalars, other.scalars, check_exact=True)
        assert (first.notes, first.warnings, first.restarts) == (other.notes, other.warnings, other.restarts)
    check(first.scalars, "loss", {0: 8.0, 5990: round(8 * math.exp(-599 / 300), 4)}, count=600)
    assert math.isnan(curve(first.scalars, "loss")[770])
    assert first.warnings[0].count == 4
    assert any(at_once) and not all(at_once)  # (chunks read at once, and others with a line not read)
