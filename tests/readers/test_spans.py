"""Spans of usual lines read at once (llm.c, modded-nanogpt): the same run as every line read on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tanalyze.readers import get_reader
from tanalyze.readers.text import _parts
from tanalyze.readers.text._spans import Shape, read_spans, spans
from tanalyze.readers.text.llmc import LlmcParser
from tanalyze.readers.text.modded_nanogpt import ModdedNanoGPTParser
from tests.readers.text_helpers import write


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
    reader = get_reader(name)
    at_once_runs = []
    for path in files:
        for chunk_chars in (_parts.CHUNK_CHARS, 1 << 14):
            monkeypatch.setattr(_parts, "CHUNK_CHARS", chunk_chars)
            (at_once,) = reader.read([path])
            monkeypatch.setattr(parser, "line_by_line", True)
            (by_line,) = reader.read([path])
            monkeypatch.setattr(parser, "line_by_line", False)
            pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True, obj=str(path))
            assert (at_once.notes, at_once.warnings, at_once.restarts, at_once.hparams) == (
                by_line.notes, by_line.warnings, by_line.restarts, by_line.hparams), path
        at_once_runs.append(at_once)
    irregular = at_once_runs[-1]
    restarts, warnings = {"modded_nanogpt": ([1701, 2000], ["1 line(s) look like", "2 point(s) skipped"]),
                          "llmc": ([2000], ["the last line ends without a line break"])}[name]
    assert [r.step for r in irregular.restarts] == restarts
    assert [p.offset > 0 for p in irregular.phases] == [False, True]  # the session appended at the end
    assert [w.message[: len(start)] for w, start in zip(irregular.warnings, warnings, strict=True)] == warnings
    assert len(irregular.scalars) > 6000


def test_a_chunk_is_cut_at_its_breaker_lines_and_read_whole():
    text = "step:1/9 t:1\nstep:2/9 v:5\nnoise\nstep:3/9 t:3\nstep:4/9 v:7"
    body = "\n" + text
    import re

    breakers = re.compile(r"\nstep:\d+/\d+ v:")
    cut = spans(body, breakers, (" v:",))
    assert "".join(text[a:b] for a, b, _ in cut) == text
    assert [(text[a:b], breaker) for a, b, breaker in cut] == [
        ("step:1/9 t:1\n", False), ("step:2/9 v:5\n", True), ("noise\nstep:3/9 t:3\n", False), ("step:4/9 v:7", True)]
    shape = Shape(re.compile(r"\nstep:(\d+/\d+ t:[^ \n]+)(?=\n)"), ("/", " t:"), 3)
    reads = read_spans(body, [(a, b) for a, b, breaker in cut if not breaker], "step:", (shape,))
    assert [read[0].tolist() for read in reads if read is not None] == [[[1, 9, 1]], [[3, 9, 3]]]
    assert read_spans(body, [(0, len(text))], "step:", (shape,)) == [None]  # a line of another shape
    assert np.array_equal(read_spans("\nx\n", [(0, 2)], "step:", (shape,))[0][0], np.empty((0, 0)))
