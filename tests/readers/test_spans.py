"""Lines of a few shapes read at once (llm.c, modded-nanogpt, the MNIST example, timm): the same run as every line
read on its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanalyze.readers import get_reader
from tanalyze.readers.text import _parts
from tanalyze.readers.text._shaped import LineShape, beginning_with
from tanalyze.readers.text._spans import shaped_lines
from tanalyze.readers.text.llmc import LlmcParser
from tanalyze.readers.text.modded_nanogpt import ModdedNanoGPTParser
from tests.readers.text_helpers import read_both_ways, write


def _modded(first: int, last: int, irregular: dict[int, str]) -> str:
    out = []
    for step in range(first, last + 1):
        out.append(irregular.get(step, f"step:{step}/6000 train_time:{step * 222}ms step_avg:{222 + step % 7 / 100:.2f}ms\n"))
        if step % 125 == 0:
            out.append(f"step:{step}/6000 val_loss:{3 + 1000 / (step + 100):.6f} train_time:{step * 222 + 9}ms "
                       "step_avg:222.50ms\n")
    return "".join(out)


MODDED = (
    "import os\nprint(f'step:{step}/{n} val_loss:{v:.4f}')\n"
    "step:0/6000 val_loss:10.9 train_time:0ms step_avg:nanms\n"
    + _modded(1, 3000, {
        1: "step:1/6000 train_loss:10.9 train_time:85ms step_avg:nanms\n",  # the early records' shape, not measured
        2: "step:2/6000 train_loss:9.5 train_time:185ms step_avg:92.5ms\n",
        700: "step:700/6000 train_time:1_0ms step_avg:1.0ms\n",  # float() takes it, a NUMBER does not
        900: "step:900/6000 train_time:INFms step_avg:1.0ms\n",
        1300: "step:1300/6000 train_time:20 0ms step_avg:1.0ms\n",  # junk: counted
        1700: "step:99999999999999999999/6000 train_time:1ms step_avg:1ms\n",
        2100: "step:2100/6000 train_time:466200ms step_avg:222.00ms \t\n",  # trailing blanks
    })
    + _modded(2000, 2600, {})  # a restart from a checkpoint
    + "peak memory allocated: 30908 MiB reserved: 46472 MiB\n"
    + _modded(1, 400, {})  # a new session appended
    + "step:401/6000 train_time:89"  # still being written
)


def _llmc_line(step: int, z: bool, mfu: str = "bf16", loss: str | None = None) -> str:
    zl, zn = (f"{(step % 40 - 20) / 10:+.2f}z", f"{(step % 30 - 15) / 10:+.2f}z") if z else ("+nanz", "+nanz")
    loss = loss or f"{11 - step / 1000:.6f}"
    return (f"step {step:>4}/19560 | loss {loss} ({zl})| norm {1 + step % 9 / 10:.4f} ({zn})| lr {6e-4 * step / 700:.2e} "
            f"| {4100 + step % 13:.2f} ms | {30 + step % 5 / 10:.1f}% {mfu} MFU | {120000 + step:.0f} tok/s\n")


def _llmc(first: int, last: int, irregular: dict[int, str]) -> str:
    out = []
    for step in range(first, last + 1):
        out.append(irregular.get(step, _llmc_line(step, step > 127)))
        if step % 250 == 0:
            out.append(f"val loss {11 - step / 900:.6f}\nHellaSwag: {2400 + step % 300}/10042 = "
                       f"{(2400 + step % 300) / 10042:.6f}\n")
    return "".join(out)


LLMC = (
    "Multi-GPU support is disabled. Using a single GPU.\n=> setting grad_accum_steps=1\nval loss 11.007921\n"
    + _llmc(1, 3000, {
        5: _llmc_line(5, False, loss="    nan"),  # printf pads a NaN loss
        600: _llmc_line(600, True, mfu="fp32"),
        800: _llmc_line(800, True).replace("(+", "(nan").replace("(-", "(nan"),  # z-scores not numbers
        1000: "step 1000/19560: train loss 4.677 (1234.5 ms, 5678 tok/s)\n",  # the old format
        1400: _llmc_line(1400, True).replace(" tok/s", " tok/s, 3 extra"),
        1900: _llmc_line(1900, True).replace("19560", "99999999999999999999"),
    })
    + _llmc(2000, 2600, {})  # a restart
    + _llmc(1, 300, {})
    + "step  301/19560 | loss 7.0"
)


@pytest.mark.parametrize(("name", "parser", "text"), [("modded_nanogpt", ModdedNanoGPTParser, MODDED),
                                                      ("llmc", LlmcParser, LLMC)], ids=["modded_nanogpt", "llmc"])
def test_spans_read_at_once_equal_every_line_read_on_its_own(name, parser, text, tmp_path, monkeypatch, real_logs):
    folders = {"modded_nanogpt": ["modded_nanogpt_logs"], "llmc": ["llmc_logs", "crash_logs/HectorFCardenas__llm.c"]}
    files = [p for folder in folders[name] for p in sorted((real_logs / folder).rglob("*")) if p.is_file()]
    files.append(write(tmp_path / "irregular.log", text))
    at_once_runs = [read_both_ways(name, parser, path, monkeypatch, (_parts.CHUNK_CHARS, 1 << 14)) for path in files]
    irregular = at_once_runs[-1]
    restarts, warnings = {"modded_nanogpt": ([1701, 2000], ["1 line(s) look like", "2 point(s) skipped"]),
                          "llmc": ([2000], ["the last line ends without a line break"])}[name]
    assert [r.step for r in irregular.restarts] == restarts
    assert [p.offset > 0 for p in irregular.phases] == [False, True]  # the session appended at the end
    assert [w.message[: len(start)] for w, start in zip(irregular.warnings, warnings, strict=True)] == warnings
    assert len(irregular.scalars) > 6000


def test_the_lines_of_each_shape_are_found_whole_and_few_candidates_are_tried_one_by_one():
    shape = LineShape(("step:", "/", " t:", "ms"), (True, True, False))
    other = LineShape(("step:", "/", " loss:", " t:", "ms"), (True, True, False, False))
    text = ("é → start\nstep:1/9 t:1.5ms\nstep:2/9 t:2e-3ms\nµ noise\nstep:3/9 loss:2 t:-.5ms\nstep:4/9 t:1.2.3ms\n"
            "step:5/9 t:1ms")  # (the last line has no line break: not whole)
    chars = np.frombuffer(text.encode("ascii", errors="replace"), dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(chars[:-1] == 10) + 1))
    candidates = beginning_with(chars, starts, b"step:")
    assert candidates.tolist() == [False, True, True, False, True, True, True]
    loose = shaped_lines(text, starts, (shape, other), False, candidates)
    assert [lines.tolist() for lines in loose] == [[1, 2, 5], [4]]  # ("1.2.3": number characters)
    assert [lines.tolist() for lines in shaped_lines(text, starts, (shape, other), True)] == [[1, 2], [4]]
    # the second shape looked for among the lines left (one by one) or over the text: the same lines
    assert [lines.tolist() for lines in shaped_lines(text, starts, (other, shape), True, candidates)] == [[4], [1, 2]]
    assert [lines.tolist() for lines in shaped_lines(text, starts, (other, shape), True)] == [[4], [1, 2]]


@pytest.mark.parametrize(("name", "parser", "handler", "text"), [
    ("torch_examples", "TorchExamplesParser", "_on_summary",
     "".join(f"Train Epoch: {e} [{b * 64}/60000 ({100. * b / 938:.0f}%)]\tLoss: {2 / e:.6f}\n" for e in range(1, 4)
             for b in range(0, 938, 10)).replace("Train Epoch: 2 [0/", "\nTest set: Average loss: 0.5000, Accuracy: "
                                                  "9000/10000 (90%)\n\nTrain Epoch: 2 [0/")),
    ("timm_console", "TimmConsoleParser", "_on_test",
     "".join(f"Train: {e} [{i:>4d}/1251 ({100. * (i + 1) / 1251:>3.0f}%)]  Loss: 6.91 (6.92)  Time: 0.5s, 2000.00/s  "
             f"(0.5s, 2000.00/s)  LR: 1.000e-03  Data: 0.012 (0.035)\n" for e in range(3) for i in range(0, 1251, 50))
     .replace("Train: 1 [   0", "".join(f"{name}: [{i:>4d}/48]  Time: 0.945 (0.512)  Loss:  0.620 (0.600)  Acc@1: "
                                         f"85.938 ( 86.100)  Acc@5:  97.266 ( 97.300)\n" for name in ("Test", "Test (EMA)")
                                         for i in (0, 10, 48)) + "Train: 1 [   0"))],
    ids=["mnist", "timm"])
def test_the_summaries_of_a_clean_log_are_read_at_once(name, parser, handler, text, tmp_path, monkeypatch):
    """No test summary of a clean log is read on its own: each is read with the train lines, at the end of the
    epoch of the train line above it."""
    import importlib

    module = importlib.import_module(f"tanalyze.readers.text.{name}")

    def one_by_one(self, m, chunk):
        raise AssertionError(f"read on its own: {m.group(0)!r}")

    monkeypatch.setattr(getattr(module, parser), handler, one_by_one)
    (run,) = get_reader(name).read([write(tmp_path / "train.log", text)])
    frame = run.scalars
    if name == "torch_examples":
        assert frame.loc[frame["tag"] == "test/accuracy", ["step", "value"]].values.tolist() == [[60000, 0.9]]
    else:
        evaluations = frame[frame["tag"].str.startswith("eval_")]
        assert sorted(set(evaluations["tag"])) == ["eval_ema_loss", "eval_ema_top1", "eval_ema_top5", "eval_loss",
                                                   "eval_top1", "eval_top5"]
        assert set(evaluations["step"]) == {1250} and evaluations["value"].tolist()[:3] == [0.6, 86.1, 97.3]


@pytest.mark.parametrize(("name", "parser", "text"), [
    ("modded_nanogpt", ModdedNanoGPTParser, "step:0/6000 val_loss:10.9 train_time:0ms step_avg:nanms\n"
     + "".join(f"step:{n}/6000 train_loss:{9 - n / 100} train_time:{n * 85}ms step_avg:85.0ms\n" for n in range(1, 126))
     + "step:125/6000 val_loss:4.5 train_time:10634ms step_avg:85.0ms\n" + _modded(126, 3000, {})),
    ("llmc", LlmcParser, "=> setting grad_accum_steps=1\nval loss 11.007921\n"
     + _llmc(1, 3000, {step: _llmc_line(step, step > 250) for step in range(1, 251)}))],
    ids=["modded_nanogpt", "llmc"])
def test_the_step_lines_of_a_clean_log_are_read_at_once(name, parser, text, tmp_path, monkeypatch):
    """No train step line of a clean log is read on its own: both shapes of it (one span of each, as evaluation
    lines cut them), evaluation lines between."""
    def one_by_one(self, m, chunk):
        assert "val_loss" in m.group(0), f"read on its own: {m.group(0)!r}"  # (modded-nanogpt's validation lines)

    monkeypatch.setattr(parser, "_on_step", one_by_one)
    (run,) = get_reader(name).read([write(tmp_path / "train.log", text)])
    assert run.scalars["step"].max() == 3000 and len(run.scalars) > 6000
    assert (run.scalars["tag"] == "train/loss").sum() == {"llmc": 3000, "modded_nanogpt": 125}[name]


_LLMC_NUMBERS = ("5.697861", "11.009662", "1.34e-04", "+1.59", "-0.06", "15.0789", "121515", "8.57e-07", "0.0006", ".5")
_LLMC_FIELDS = _LLMC_NUMBERS * 6 + ("+nan", "nan", "1.2.3", "1e", "-", "1_0", "")  # (mostly numbers: spans at once)


def _random_llmc_line(step: int, fields: list[str], nanz: bool, pad: str) -> str:
    loss, z1, norm, z2, lr, ms, mfu, tok = fields
    z1, z2 = ("+nanz", "+nanz") if nanz else (z1 + "z", z2 + "z")
    return (f"step{pad}{step}/19560 | loss {loss} ({z1})| norm {norm} ({z2})| lr {lr} | {ms} ms | {mfu}% bf16 MFU "
            f"| {tok} tok/s")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.tuples(st.integers(0, 3000), st.lists(st.sampled_from(_LLMC_FIELDS), min_size=8, max_size=8), st.booleans(),
              st.sampled_from((" ", "  ", "\t", ""))),
    st.sampled_from(("val loss 3.25", "HellaSwag: 2493/10042 = 0.248257", "noise", "", "step 5/10: train loss 4.6 "
                     "(1.5 ms, 5678 tok/s)", "=> setting grad_accum_steps=1", "step  7/19560 | loss 5.0", "µ"))),
    min_size=1, max_size=40), st.booleans())
def test_llmc_console_read_at_once_equals_line_by_line(tmp_path, monkeypatch, lines, cut):
    """Random llm.c console texts (steps up and down, fields that are no numbers or NaN, z-scores or not, other
    lines between): the lines read at once give what every line read on its own gives."""
    text = "".join((line if isinstance(line, str) else _random_llmc_line(*line)) + "\n" for line in lines)
    path = write(tmp_path / "train.log", text[:-1] if cut else text)
    read_both_ways("llmc", LlmcParser, path, monkeypatch, (512,))


_MNIST_NUMBERS = ("2.302585", "0.0523", "1", "0", "1e-3", "nan", "1.2.3", "-0.5")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.tuples(st.just("train"), st.integers(0, 3), st.sampled_from((0, 640, 5120, 59520)), st.sampled_from((60000, 0)),
              st.sampled_from(_MNIST_NUMBERS)),
    st.tuples(st.just("test"), st.sampled_from(_MNIST_NUMBERS), st.integers(0, 10), st.sampled_from((10000, 0)),
              st.sampled_from(("97", "9.5", "x"))),
    st.sampled_from(("", "", "noise", "Validation set: Average loss: 0.5, Accuracy: 5/10 (50%)",
                     "Epoch [1/5], Step [100/600], Loss: 0.2", "Train Epoch: 1 [640/6000]\tloss=2.4",
                     "[1,  2000] loss: 2.215", "µ", "Test set: Average loss: 0.4",
                     "Valid Epoch: 1 [640/6000 (11%)]\tLoss: 0.3"))),
    min_size=1, max_size=40), st.booleans())
def test_mnist_lines_and_test_summaries_read_at_once_equal_line_by_line(tmp_path, monkeypatch, lines, cut):
    """Random MNIST-example texts (train lines and their test summaries, fields that are no numbers, epochs up and
    down, other lines between): what is read at once gives what every line read on its own gives."""
    from tanalyze.readers.text.torch_examples import TorchExamplesParser

    def line(item) -> str:
        if isinstance(item, str):
            return item
        if item[0] == "train":
            _, epoch, seen, size, loss = item
            return f"Train Epoch: {epoch} [{seen}/{size} (1%)]\tLoss: {loss}"
        _, loss, correct, total, percent = item
        return f"Test set: Average loss: {loss}, Accuracy: {correct}/{total} ({percent}%)"

    text = "".join(line(item) + "\n" for item in lines)
    path = write(tmp_path / "train.log", text[:-1] if cut else text)
    read_both_ways("torch_examples", TorchExamplesParser, path, monkeypatch, (None, 256))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.tuples(st.just("train"), st.integers(0, 3), st.sampled_from((0, 10, 39)), st.sampled_from(_MNIST_NUMBERS)),
    st.tuples(st.sampled_from(("Test", "Test (EMA)")), st.sampled_from((0, 10, 11, 12)),
              st.sampled_from(_MNIST_NUMBERS)),
    st.sampled_from(("", "noise", "Train: 1 [  20/40 ( 52%)]  Loss: 0.4", "Test: [  11/11]  Loss: 0.5", "µ"))),
    min_size=1, max_size=40), st.booleans())
def test_timm_lines_and_validations_read_at_once_equal_line_by_line(tmp_path, monkeypatch, lines, cut):
    """Random timm texts (train lines, validation batches of the model and its EMA, the last of them or not, fields
    that are no numbers, other lines between): what is read at once gives what every line read on its own gives."""
    from tanalyze.readers.text.timm_console import TimmConsoleParser

    def line(item) -> str:
        if isinstance(item, str):
            return item
        if item[0] == "train":
            _, epoch, update, loss = item
            return (f"Train: {epoch} [{update:>4d}/40 ( 52%)]  Loss: {loss} (1.24)  Time: 0.014s, 4444.81/s  "
                    "(0.014s, 4444.81/s)  LR: 5.161e-04  Data: 0.001 (0.001)")
        name, batch, loss = item
        return (f"{name}: [{batch:>4d}/11]  Time: 0.945 (0.512)  Loss: {loss:>7} ({loss:>6})  Acc@1: 91.667 ( 91.667)  "
                "Acc@5: 100.000 (100.000)")

    text = "".join(line(item) + "\n" for item in lines)
    path = write(tmp_path / "train.log", text[:-1] if cut else text)
    read_both_ways("timm_console", TimmConsoleParser, path, monkeypatch, (None, 256))
