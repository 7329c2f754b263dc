"""AI2 OLMo's trainer console: blocks of an OLMo-1B run as its terminal showed them and as its file formatter writes
them, blocks of the later trainer pasted in allenai/OLMo issue #692, and logs written from OLMo's format strings
(``tests/fixtures/olmo``: OLMo's trainer needs GPUs, no real training ran here), with their values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tanalyze.readers import HEAD_BYTES
from tanalyze.readers.text import _parts
from tanalyze.readers.text.olmo import OLMoParser, OLMoReader, detect_olmo
from tanalyze.readers.values import parse_timestamp
from tanalyze.roles import resolve_roles
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, points, read_on, write

FIXTURES = REPO / "tests" / "fixtures" / "olmo"
CONSOLE = FIXTURES / "console.log"
LATER = FIXTURES / "console_v0.4plus.log"
TERMINAL = FIXTURES / "console_rich_tty.log"
ISSUE = FIXTURES / "issue692.log"
MEMORY = "System/Peak GPU Memory (MB)"
LOSS = "train/CrossEntropyLoss"


def _read(path):
    (run,) = OLMoReader().read([path])
    return run


def _prefix(second: int, where: str = "olmo.train:816", terminal: bool = False) -> str:
    stamp = f"2024-04-17 {10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
    if terminal:
        return f"[{stamp}] INFO     [{where}, rank=0] "
    return f"{stamp}.{second * 7 % 1000:03d}\tgpu-node-07:0\t{where}\tINFO\t"


def _log(steps: int, terminal: bool = False, first: int = 1, second: int = 0, pretrain: bool = True) -> str:
    """Blocks as OLMo's trainer prints them: the pre-train metrics, a block a step (memory every 10 steps, the
    newer header's epoch on every other block), an evaluation every 25 steps (its progress lines, its block)."""
    out = [_prefix(second, "train:174", terminal) + "Model:", "OLMo(", "    (transformer): ModuleDict(",
           "      (wte): Embedding(50304, 2048)", "    )", ")"]
    if pretrain:
        out += [_prefix(second, terminal=terminal) + "Pre-train system metrics", "    System/Peak GPU Memory (MB)=9,720"]
    for step in range(first, first + steps):
        second += 11
        loss = 10 - step / 50
        epoch = f",epoch={step // 40}" if step % 2 else ""
        out += [_prefix(second, terminal=terminal) + f"[step={step}/739328{epoch}]",
                f"    {LOSS}={loss:.3f}", f"    train/Perplexity={int(math.exp(loss)):,d}",
                f"    throughput/total_tokens={4_194_304 * step:,d}"]
        if step > 1:
            out.append(f"    throughput/device/tokens_per_second={45_000 + step:,d}")
        if step % 10 == 0:
            out.append(f"    {MEMORY}=43,309")
        if step % 25 == 0:
            out.append(_prefix(second, "olmo.train:863", terminal) + "Running evaluation for 'v3-small-ppl-validation'...")
            out += [_prefix(second, "olmo.train:887", terminal) + f"[eval_step={i}/-1]" for i in (1, 2)]
            out.append(_prefix(second, terminal=terminal) + "v3-small-ppl-validation")
            for name in ("c4_en", "pile"):
                out += [f"    eval/v3-small-{name}-validation/CrossEntropyLoss={loss + 0.2:.3f}",
                        f"    eval/v3-small-{name}-validation/Perplexity={int(math.exp(loss + 0.2)):,d}"]
    return "\n".join(out) + "\n"


def _read_both_ways(path, monkeypatch, sizes=(None,)):
    """``path`` read with a chunk's blocks at once and block by block, at each chunk size (None: as it is set): the
    same rows exactly, notes, warnings and restarts. The run read at once (at the last size)."""
    for size in sizes:
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        at_once = _read(path)
        monkeypatch.setattr(OLMoParser, "line_by_line", True)
        by_block = _read(path)
        monkeypatch.setattr(OLMoParser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_block.scalars, check_exact=True, obj=f"{path} {size}")
        assert (at_once.notes, at_once.warnings, at_once.restarts) == (
            by_block.notes, by_block.warnings, by_block.restarts), (path, size)
    return at_once


def test_the_file_formatters_blocks_and_an_evaluation():
    run = _read(CONSOLE)
    frame = run.scalars
    check(frame, LOSS, {1: 11.25, 2: 10.73, 7: 9.703, 10: 9.331, 30: 7.715}, count=30)
    check(frame, "train/Perplexity", {1: 76631.0, 9: 8879.0, 30: 2242.0}, count=30)  # (thousands separators read)
    check(frame, "throughput/total_tokens", {1: 4_194_304.0, 30: 125_829_120.0}, count=30)
    check(frame, "throughput/device/tokens_per_second", {2: 45538.0, 30: 45199.0}, count=29)
    assert 1 not in curve(frame, "throughput/device/tokens_per_second")  # (not measured at the first step)
    check(frame, "throughput/device/batches_per_second", {2: 0.0869, 5: 0.0863}, count=29)
    # the pre-train metrics at step 0, then at steps 1, 2 and every 10th
    assert curve(frame, MEMORY) == {0: 9720.0, 1: 42133.0, 2: 43309.0, 10: 43309.0, 20: 43309.0, 30: 43309.0}
    # the evaluation after step 20: every set's loss and perplexity at step 20, the block's own time
    evaluations = sorted(tag for tag in set(frame["tag"]) if tag.startswith("eval/"))
    assert len(evaluations) == 22
    check(frame, "eval/v3-small-c4_en-validation/CrossEntropyLoss", {20: 8.328}, count=1)
    check(frame, "eval/v3-small-c4_en-validation/Perplexity", {20: 4138.0}, count=1)
    check(frame, "eval/v3-small-wikitext_103-validation/Perplexity", {20: 4584.0}, count=1)
    rows = frame[frame["tag"] == "eval/v3-small-pile-validation/CrossEntropyLoss"]
    assert rows["wall_time"].tolist() == [parse_timestamp("2024-04-17 09:46:15.862")]
    first = frame[(frame["tag"] == LOSS) & (frame["step"] == 1)]
    assert first["wall_time"].tolist() == [parse_timestamp("2024-04-17 09:42:26.534")]
    assert not any("eval_step" in tag for tag in set(frame["tag"]))  # (progress lines, no metrics)
    assert "epoch" not in frame.columns  # (the older header has none)
    notes = notes_text(run)
    assert "1 evaluation block(s) (eval/…) at the step of the training block before them" in notes
    assert "1 'Pre-train system metrics' block(s) at step 0" in notes
    assert not run.warnings and not run.restarts


def test_the_terminals_blocks_read_as_the_files():
    reader = OLMoReader()
    assert reader.sniff(TERMINAL, TERMINAL.read_bytes()[:HEAD_BYTES])
    terminal, file = _read(TERMINAL).scalars, _read(CONSOLE).scalars
    check(terminal, LOSS, {1: 11.25, 10: 9.331}, count=10)
    check(terminal, MEMORY, {1: 42133.0, 2: 43309.0, 10: 43309.0}, count=3)
    for tag in (LOSS, "train/Perplexity", "throughput/total_tokens", "throughput/device/batches_per_second"):
        assert curve(terminal, tag) == {step: value for step, value in curve(file, tag).items() if 1 <= step <= 10}
    first = terminal[(terminal["tag"] == LOSS) & (terminal["step"] == 2)]
    assert first["wall_time"].tolist() == [parse_timestamp("2024-04-17 09:42:38")]  # (to the second)


def test_the_later_trainers_epoch_and_grad_norm():
    run = _read(LATER)
    frame = run.scalars
    check(frame, "optim/total_grad_norm", {1: 231.7, 2: 38.27, 30: 1.355}, count=30)
    check(frame, LOSS, {1: 12.18, 30: 7.957}, count=30)
    check(frame, "throughput/total_training_Gflops", {1: 5_103_640.0, 30: 153_109_200.0}, count=30)
    check(frame, "throughput/total_training_log_Gflops", {1: 15.45, 30: 18.85}, count=30)
    check(frame, MEMORY, {0: 6784.0, 1: 46911.0, 2: 53695.0, 30: 53695.0}, count=6)
    training = frame[frame["tag"] == LOSS]
    assert (training["epoch"] == 0).all()  # (",epoch=0" of the header)
    assert frame[(frame["tag"] == MEMORY) & (frame["step"] == 0)]["epoch"].isna().all()  # (before any block)
    assert not run.warnings and not run.restarts


def test_the_issues_blocks_with_every_digit_of_small_values():
    run = _read(ISSUE)
    frame = run.scalars
    check(frame, LOSS, {1: 12.18, 2: 1.7872662283480167e-06, 3: 0.0}, count=3)
    check(frame, "optim/total_grad_norm", {1: 231.7, 2: 0.0002, 3: 7.725906669975302e-08}, count=3)
    check(frame, "train/Perplexity", {1: 195153.0, 2: 1.0, 3: 1.0}, count=3)
    check(frame, "throughput/total_training_Gflops", {2: 10_207_281.0, 3: 15_310_922.0}, count=3)
    # the first line, the end of a block whose header the paste left out: no block's, not read
    assert curve(frame, MEMORY) == {1: 46911.0, 2: 53695.0}
    second = frame[(frame["tag"] == LOSS) & (frame["step"] == 2)]
    assert second["wall_time"].tolist() == [parse_timestamp("2024-08-06 10:00:05.520")]
    assert not run.warnings


def test_its_cross_entropy_is_the_training_loss():
    roles = resolve_roles(_read(LATER).scalars)
    assert roles.tag("train_loss") == LOSS
    assert roles.tag("grad_norm") == "optim/total_grad_norm" and roles.tag("gpu_memory") == MEMORY
    roles = resolve_roles(_read(CONSOLE).scalars)
    assert roles.tag("train_loss") == LOSS
    assert "eval/v3-small-c4_en-validation/CrossEntropyLoss" in roles["val_loss"].components


@pytest.mark.parametrize("terminal", [False, True], ids=["file", "terminal"])
def test_blocks_cut_by_chunks_read_as_whole_ones(tmp_path, monkeypatch, terminal):
    """Chunks of every size cut blocks after their header, between their lines, before an evaluation's first line:
    the same rows as one chunk, and as reading block by block."""
    path = write(tmp_path / "train.log", _log(120, terminal))
    whole = _read(path)
    run = _read_both_ways(path, monkeypatch, (None, 97, 128, 200, 331, 512, 1000, 4096))
    pd.testing.assert_frame_equal(whole.scalars, run.scalars, check_exact=True)
    assert (whole.notes, whole.warnings) == (run.notes, run.warnings)
    frame = run.scalars
    check(frame, LOSS, {1: 9.98, 120: 7.6}, count=120)
    check(frame, "eval/v3-small-pile-validation/CrossEntropyLoss", {25: 9.7, 100: 8.2}, count=4)
    check(frame, MEMORY, {0: 9720.0, 10: 43309.0}, count=13)
    assert frame[(frame["tag"] == LOSS) & (frame["step"] == 25)]["epoch"].tolist() == [0.0]
    assert frame[(frame["tag"] == LOSS) & (frame["step"] == 40)]["epoch"].isna().all()  # (a header without one)
    assert "4 evaluation block(s)" in notes_text(run) and not run.warnings


def test_common_blocks_are_read_a_chunk_at_once(tmp_path, monkeypatch):
    """The chunks of these logs (evaluations, progress lines, a model dump, both prefixes) go the at-once path."""
    def by_block(*args):
        raise AssertionError("read block by block")

    monkeypatch.setattr(OLMoParser, "_block_by_block", by_block)
    for path in (CONSOLE, LATER, TERMINAL, write(tmp_path / "train.log", _log(120))):
        assert len(_read(path).scalars) > 50


def test_a_log_read_on_from_a_cut_equals_the_log_read_whole(tmp_path):
    """A log still being written, read on from where each read stopped (a cut inside a block, inside a line, after
    an evaluation's header): the run of the whole log."""
    data = _log(60).encode()
    copy = write(tmp_path / "whole" / "train.log", data)
    reader = OLMoReader()
    (whole,) = reader.combine([copy], [reader.read_part(copy)])
    label = data.index(b"INFO\tv3-small-ppl-validation\n") + 28  # (the line break after an evaluation's label)
    places = [data.index(b"[step=7/") + 3, data.index(b"[step=8/") - 30, label, label + 1, label + 9,
              len(data) * 3 // 4]
    scratch = tmp_path / "train.log"
    for cuts in ([place] for place in places):
        (run,) = reader.combine([scratch], [read_on(reader, scratch, data, cuts)])
        pd.testing.assert_frame_equal(run.scalars.drop(columns="run"), whole.scalars.drop(columns="run"),
                                      check_exact=True, obj=f"cut at {cuts}")
        assert run.notes == whole.notes and not run.warnings
    check(whole.scalars, "eval/v3-small-c4_en-validation/Perplexity", {25: 16317.0, 50: 9897.0}, count=2)


def test_a_resumed_job_appending_to_the_log_is_a_restart(tmp_path):
    """Steps 1-30, then a job resumed from step 20 appends its pre-train metrics and steps 21-25: a restart at its
    line, every row kept, the later write of a step winning; the resumed job's pre-train metrics not read."""
    first = CONSOLE.read_text()
    again = _log(5, first=21, second=3600)
    path = write(tmp_path / "train.log", first + again)
    run = _read(path)
    (restart,) = run.restarts
    line = (first + again).splitlines().index(_prefix(3611) + "[step=21/739328,epoch=0]") + 1
    assert restart.step == 21 and f"after step 30 (line {line})" in restart.detail
    frame = run.scalars
    check(frame, LOSS, {20: 8.282, 21: 9.58, 25: 9.5, 26: 7.863, 30: 7.715}, count=30)  # (21-25: the later writes)
    assert curve(frame, MEMORY) == {0: 9720.0, 1: 42133.0, 2: 43309.0, 10: 43309.0, 20: 43309.0, 30: 43309.0}
    assert "1 'Pre-train system metrics' block(s) after training blocks (a resumed job" in notes_text(run)
    assert "replaced by the later write" in notes_text(run)


def test_lines_that_cannot_be_read_are_named(tmp_path, monkeypatch):
    """A header with text after it, a step beyond 2**53 and a block's lines that are no ``name=number`` are named
    in a warning with their lines; a step of 2**53 is read."""
    lines = _log(3).splitlines()
    bad = [_prefix(100) + "[step=4/739328] (resumed)", f"    {LOSS}=7.5",
           _prefix(111) + f"[step={2**53 + 1}/739328]", f"    {LOSS}=7.4",
           _prefix(122) + f"[step={2**53}/739328]", f"    {LOSS}=7.3", f"    {MEMORY}=abc",
           "    train/Perplexity=1,23", f"    {MEMORY}", "    train/ZLoss=0.5 nats"]
    path = write(tmp_path / "train.log", "\n".join([*lines, *bad]) + "\n")
    run = _read_both_ways(path, monkeypatch, (None, 256))
    (warning,) = run.warnings
    first = len(lines) + 1
    assert warning.count == 6
    assert f"6 line(s) look like OLMo metrics but could not be read, e.g. line {first}: " in warning.message
    assert f"line {first + 2}: " in warning.message and f"line {first + 6}: " in warning.message
    frame = run.scalars
    check(frame, LOSS, {3: 9.94, 2**53: 7.3}, count=4)  # (the blocks of headers not read are not read)
    assert 4 not in curve(frame, LOSS) and points(frame, "train/ZLoss") == 0


def test_junk_non_ascii_and_colours(tmp_path, monkeypatch):
    """A terminal's colour codes around the Rich prefix, non-ASCII names, binary junk and NUL bytes between blocks."""
    colour = ("\x1b[2;36m[2024-04-17 10:00:11]\x1b[0m\x1b[2;36m \x1b[0m\x1b[34mINFO    \x1b[0m "
              "\x1b[2m[olmo.train:816, rank=0]\x1b[0m [step=1/739328]\n")
    text = (colour + f"    {LOSS}=11.25\n    train/Perplexity=76,631\n"
            "\x00\x00junk \xff\xfe line ▒▒\n"
            + _prefix(22, terminal=True) + "[step=2/739328]\n" + f"    {LOSS}=10.73\n"
            + _prefix(23, terminal=True) + "évaluation-ünïcode\n"
            + "    eval/wikitext-é/CrossEntropyLoss=10.9\n    eval/wikitext-é/Perplexity=54,176\n"
            + "\x1b[31mWARNING\x1b[0m  ☃ no metrics here=1\n")
    path = tmp_path / "train.log"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape").replace("\xff\xfe".encode(), b"\xff\xfe"))
    assert OLMoReader().sniff(path, path.read_bytes()[:HEAD_BYTES])
    run = _read_both_ways(path, monkeypatch, (None, 200))
    frame = run.scalars
    assert curve(frame, LOSS) == {1: 11.25, 2: 10.73}
    assert curve(frame, "train/Perplexity") == {1: 76631.0}
    assert curve(frame, "eval/wikitext-é/CrossEntropyLoss") == {2: 10.9}
    assert curve(frame, "eval/wikitext-é/Perplexity") == {2: 54176.0}
    assert len(frame) == 5 and not run.warnings


def test_detect_needs_two_blocks():
    two = _log(2, pretrain=False)
    assert detect_olmo(two)
    one = two[: two.index("[step=2/")]
    assert not detect_olmo(one)
    assert detect_olmo(_log(2, terminal=True, pretrain=False))
    for other in (
        "[step=1/100]\n    train/loss=2.5\n[step=2/100]\n    train/loss=2.4\n",  # (no logging prefix)
        "2024-04-17 10:00:11,000 - root - INFO - step: 1  loss: 2.5\n2024-04-17 10:00:12,000 - root - INFO - step: 2  "
        "loss: 2.4\n",
        _prefix(1) + "[step=1/100]\ntrain/loss=2.5\n" + _prefix(2) + "[step=2/100]\ntrain/loss=2.4\n",  # (no indent)
    ):
        assert not detect_olmo(other), other


def test_other_logs_are_not_olmos(tmp_path):
    for text in ("[step=1/100]\n    loss=2.5\n[step=2/100]\n    loss=2.4\n",
                 "epoch 1 train loss=0.5\nepoch 2 train loss=0.4\n"):
        path = write(tmp_path / "train.log", text)
        assert not OLMoReader().sniff(path, path.read_bytes()[:HEAD_BYTES])
    assert OLMoReader().sniff(CONSOLE, CONSOLE.read_bytes()[:HEAD_BYTES])


def test_numbers_as_olmo_prints_them(tmp_path, monkeypatch):
    """Each branch of OLMo's ``format_float`` (and NaN, a negative loss), read at once as line by line; commas that
    are no thousands separators named."""
    values = ["1.2e-05", "0.0", "-0.5", "nan", "0.0869", "9.331", "11.25", "231.7", "76,631", "125,829,120"]
    bad = ["1,2345", "12,34", "1234,567", ",123", "1,,234", "1.5e", "infinite"]
    lines = [_prefix(0) + "[step=1/739328]", *(f"    m/{i}={v}" for i, v in enumerate(values)),
             _prefix(1) + "[step=2/739328]", *(f"    m/{i}={v}" for i, v in enumerate(bad))]
    path = write(tmp_path / "train.log", "\n".join(lines) + "\n")
    run = _read_both_ways(path, monkeypatch)
    got = {tag: value for tag, value in zip(run.scalars["tag"], run.scalars["value"], strict=True)}
    expected = [1.2e-05, 0.0, -0.5, math.nan, 0.0869, 9.331, 11.25, 231.7, 76631.0, 125829120.0]
    np.testing.assert_array_equal([got[f"m/{i}"] for i in range(len(values))], expected)
    assert len(run.scalars) == len(values)
    (warning,) = run.warnings
    assert warning.count == len(bad)
    # the same numbers a chunk at once, from many blocks
    many = "".join("\n".join([_prefix(k) + f"[step={k}/739328]", *(f"    m/{i}={v}" for i, v in enumerate(values))])
                   + "\n" for k in range(1, 200))
    run = _read_both_ways(write(tmp_path / "many.log", many), monkeypatch)
    assert math.isnan(curve(run.scalars, "m/3")[150]) and curve(run.scalars, "m/9")[199] == 125829120.0


def test_the_planned_steps_of_the_last_header():
    """``[step=N/M]``: M is the steps the trainer planned, kept as the hparam ``_planned_steps``; a run cut after a
    few dozen of them is too early to call underfitting (a continued OLMo-1B run of 21 logged steps of 15,000, its
    loss flat from trained weights, had been UNDERFITTING 0.86)."""
    assert _read(CONSOLE).hparams["_planned_steps"] == 739328
    assert _read(LATER).hparams["_planned_steps"] == 739328


def test_a_run_cut_early_is_too_early_to_judge(tmp_path):
    import tanalyze

    blocks = [_prefix(10 * step) + f"[step={step}/15000]\n    {LOSS}={3.0 + 0.01 * (step % 3):.3f}\n"
              for step in range(1, 22)]
    path = write(tmp_path / "train.log", "".join(blocks))
    [diagnosis] = tanalyze.diagnose(tanalyze.load(path)).values()
    assert diagnosis.verdict.label == "insufficient_data"
    assert diagnosis.verdict.reasons[0].startswith("the run's last logged step is 21 of the 15,000 its trainer planned")
