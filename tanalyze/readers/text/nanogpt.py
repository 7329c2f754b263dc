"""nanoGPT console logs (``train.py`` of karpathy/nanoGPT and its many forks).

Two line kinds::

    step 200: train loss 6.6253, val loss 6.6336
    iter 201: loss 6.5809, time 309.52ms, mfu 108.40%

The evaluation line gives ``train/loss`` and ``val/loss`` (the names nanoGPT
logs to W&B); the iteration line gives ``loss`` (that batch's loss),
``time_ms`` (wall time of the iteration, for throughput) and ``mfu`` (model
FLOPs utilisation, in percent). nanoGPT prints ``mfu -100.00%`` until it has
measured a few iterations: that sentinel is skipped and counted. Forks that
print a unit after the loss (``loss 6.1551 BPC``) are read the same way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NUMBER, NUMBER_PATTERN, to_float

__all__ = ["NanoGPTParser", "NanoGPTReader", "detect_nanogpt"]

_UNIT = r"(?: ?([A-Za-z]{1,5}))?"
# (forks print more fields between the loss and the time: ``loss 11.0018, aux_loss 0.0508, time …``)
# (a print with blanks at its end, ``val loss 10.6778 ``, is the same line)
ITER = re.compile(
    rf"^iter (\d+): loss ({NUMBER}){_UNIT}((?:, [^\n]*?)?), time ({NUMBER}) ?ms((?:, [^\n]*?)?)[ \t]*$", re.M)
EVAL = re.compile(rf"^step (\d+): train loss ({NUMBER}){_UNIT}, val loss ({NUMBER}){_UNIT}((?:, [^\n]*?)?)[ \t]*$",
                  re.M)
_EXTRA = re.compile(rf", ([A-Za-z_][\w ]*?) ({NUMBER})(%?)(?=,|$)")
MFU_NOT_MEASURED = -100.0
# The iteration line as train.py prints it, whole, its fields in one group (a list of strings: no tuple per
# line), with the loss unit some forks print or without: (pattern, fields per line once split, unit index).
# A field is any run of number characters here; one that is not a NUMBER sends the lines to ITER, one by one.
_FIELD = r"[^ ,\n%]+"
_SHAPES = ((re.compile(rf"\niter (\d+: loss {_FIELD}, time [^ ,\nm]+ms, mfu {_FIELD})%(?=\n)"), 4, None),
           (re.compile(rf"\niter (\d+: loss {_FIELD} [A-Za-z]{{1,5}}, time [^ ,\nm]+ms, mfu {_FIELD})%(?=\n)"), 5, 2))
#: The evaluation line after a line break (a literal start: quick to find in a chunk).
_EVAL_AFTER_BREAK = re.compile(rf"\n{EVAL.pattern[1:-1]}(?=\n)")
_ITER_TAGS = ("loss", "time_ms", "mfu")


def _usual_lines(body: str, start: int, end: int, lines: int) -> tuple[list[str], int, int | None] | None:
    """The fields of the iteration lines in ``body[start:end]`` when all ``lines`` have one usual shape:
    (each line's fields in one string, fields per line, index of the unit); None otherwise."""
    for pattern, width, unit in _SHAPES:
        found = pattern.findall(body, start, end)
        if len(found) == lines:
            return found, width, unit
    return None


class NanoGPTParser(TextParser):
    family = "nanogpt"
    lookalike = re.compile(r"^(?:iter|step) \d+:", re.M)
    patterns = ((ITER, "iter"), (EVAL, "eval"))
    #: read every line on its own (the spans of usual lines are read at once otherwise); for tests
    line_by_line = False
    _stray_steps = False  # the chunk has lines like evaluation lines that are not

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._mfu_sentinels = 0
        self._units: set[str] = set()

    def feed(self, chunk: Chunk) -> None:
        """Iteration lines of the usual shape span by span, each span read at once; evaluation lines, and any
        span with a line of another shape or a step that goes back, line by line (the same rows either way)."""
        if self.line_by_line:
            super().feed(chunk)
            return
        text = chunk.text
        body = "\n" + text  # every line now starts after a line break: one pattern finds them all
        start = 0
        by_line: list[tuple[int, int, re.Pattern[str]]] = []
        evals = [EVAL.match(text, m.start()) for m in _EVAL_AFTER_BREAK.finditer(body)]  # body's m.start() is
        self._stray_steps = body.count("\nstep ") > len(evals)                          # the line's start in text
        for m in [*evals, None]:
            end = m.start() if m is not None else len(text)
            if start < end and not self._span_at_once(body, start, end):
                self._span_by_line(chunk, start, end)
                by_line.append((start, end, self.lookalike))
            if m is not None:
                self._on_eval(m, chunk)
                start = m.end() + 1
        self.scan_ranges = by_line

    def may_have_lookalikes(self, chunk: Chunk) -> bool:
        return self.line_by_line or bool(self.scan_ranges)

    def _span_at_once(self, body: str, start: int, end: int) -> bool:
        """The iteration lines of ``text[start:end]`` (``body`` is the text after a line break) when each has
        the usual shape, their steps go on and every value is a number; False (nothing read) otherwise."""
        lines = body.count("\niter ", start, end + 1)
        if self._stray_steps and body.count("\nstep ", start, end + 1):
            return False  # a line like an evaluation line that is not one
        if not lines:
            return True
        shape = _usual_lines(body, start, end + 1, lines)
        if shape is None:
            return False
        found, width, unit = shape
        joined = " ".join(found).replace(": loss ", " ").replace(", time ", " ").replace("ms, mfu ", " ")
        if joined.count(" ") != width * lines - 1:
            return False
        units: set[str] = set()
        if unit is not None:
            fields = joined.split(" ")
            units.update(fields[unit::width])
            del fields[unit::width]
            width -= 1
            joined = " ".join(fields)
        if any(c in joined for c in "_nN") and not all(map(NUMBER_PATTERN.fullmatch, joined.split(" "))):
            return False  # float() takes "1_0" and "INF", a NUMBER does not (nan, inf and their kin have an n)
        numbers = parse_numbers(joined)
        if numbers is None:
            return False
        grid = numbers.reshape(lines, width)
        steps = grid[:, 0]
        if steps.max() >= 2**53:
            return False  # read exactly by int(), line by line
        steps = steps.astype(np.int64)
        if not self.anchors_go_on(steps):
            return False  # a restart: recorded with its line
        self._add_iterations(steps, grid[:, 1:])
        self._units.update(units)
        self.anchor(int(steps[-1]), None, 0)
        self.parsed_lines += lines
        return True

    def _add_iterations(self, steps: np.ndarray, grid: np.ndarray) -> None:
        """Rows of iteration lines: loss, time and mfu of each, but an mfu of -100 (not measured yet)."""
        measured = grid[:, 2] != MFU_NOT_MEASURED
        if measured.all():
            self.rows.extend_lines(_ITER_TAGS, steps, grid.ravel())
            return
        keep = np.ones(grid.shape, dtype=bool)
        keep[:, 2] = measured
        self._mfu_sentinels += int((~measured).sum())
        codes = np.array(self.rows.codes(_ITER_TAGS), dtype=np.int32)
        self.rows.extend(np.broadcast_to(codes, grid.shape)[keep], np.broadcast_to(steps[:, None], grid.shape)[keep],
                         grid[keep])

    def _span_by_line(self, chunk: Chunk, start: int, end: int) -> None:
        for m in ITER.finditer(chunk.text, start, end):
            self._on_iter(m, chunk)

    def _extra(self, text: str) -> list[tuple[str, float]]:
        out = []
        for name, value, _percent in _EXTRA.findall(text):
            number = to_float(value)
            if number is None:
                continue
            if name == "mfu" and number == MFU_NOT_MEASURED:
                self._mfu_sentinels += 1
                continue
            out.append((name, number))
        return out

    def _on_iter(self, m: re.Match[str], chunk: Chunk) -> None:
        step = int(m.group(1))
        if m.group(3):
            self._units.add(m.group(3))
        pairs = [("loss", float(m.group(2))), *self._extra(m.group(4)), ("time_ms", float(m.group(5)))]
        pairs.extend(self._extra(m.group(6)))
        self.mark(chunk, m.start())
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(pairs, step)

    def _on_eval(self, m: re.Match[str], chunk: Chunk) -> None:
        for unit in (m.group(3), m.group(5)):
            if unit:
                self._units.add(unit)
        pairs = [("train/loss", float(m.group(2))), ("val/loss", float(m.group(4)))]
        pairs.extend(self._extra(m.group(6)))
        self.mark(chunk, m.start())
        self.rows.add_pairs(pairs, int(m.group(1)))

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "mfu_sentinels": self._mfu_sentinels, "units": sorted(self._units)}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self._mfu_sentinels = state["mfu_sentinels"]
        self._units = set(state["units"])

    def absorb(self, other: TextParser) -> None:
        assert isinstance(other, NanoGPTParser)
        super().absorb(other)
        self._mfu_sentinels += other._mfu_sentinels
        self._units |= other._units

    def finish(self) -> None:
        notes = []
        if self._mfu_sentinels:
            notes.append(f"{self._mfu_sentinels} 'mfu -100.00%' value(s) (not measured yet) skipped")
        if self._units:
            notes.append(f"losses carry a unit suffix ({', '.join(sorted(self._units))}); values kept as printed")
        self.notes[:0] = notes


def detect_nanogpt(window: str) -> bool:
    return bool(ITER.search(window) or EVAL.search(window))


class NanoGPTReader(TextReader):
    name = "nanogpt"
    cache_version = 5  # 4: fields a fork prints between the loss and the time; 5: blanks at a line's end
    description = "nanoGPT console logs ('iter N: loss …, time …ms, mfu …%', 'step N: train loss …, val loss …')"
    parser = NanoGPTParser

    def detect(self, window: str) -> bool:
        return detect_nanogpt(window)
