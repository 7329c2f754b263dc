"""Megatron-LM and Megatron-DeepSpeed console logs.

The training loop prints one line every ``log_interval`` iterations::

     iteration       10/  171661 | consumed samples:  2560 | elapsed time per iteration (ms): 1001.5 | learning rate: 9.339E-08 | … | lm loss: 1.078335E+01 | loss scale: 2048.0 | number of skipped iterations:   0 |

Fields vary between versions and forks, so every ``name: number`` field is
read and keeps its name as the tag (``lm loss``, ``grad norm``,
``elapsed time per iteration (ms)``). Validation lines
(``validation loss at iteration 100 | lm loss value: … | lm loss PPL: …``)
become ``lm loss validation`` and ``lm loss validation ppl``, the names
Megatron itself gives them in TensorBoard. Timer lines (``time (ms) | forward-compute: …``)
and memory reports become ``time (ms)/…`` and ``memory (MB)/…`` at the last
iteration. The argument dump before training (``  name ........ value``) goes to
the run's hyperparameters. DeepSpeed engine lines that Megatron-DeepSpeed
interleaves are read too (see :mod:`tanalyze.readers.deepspeed`).

An iteration line must end with ``|``: a line cut mid-write by a killed job
does not, and is reported instead of being read with a truncated value.
"""

from __future__ import annotations

import re
from pathlib import Path

from tanalyze.readers._lines import Chunk
from tanalyze.readers._textparse import NAN, TextParser, config_value, parse_timestamp, to_float
from tanalyze.readers._textreader import TextReader
from tanalyze.readers.deepspeed import DS_OVERFLOW, DeepSpeedEngineLines, _rank

__all__ = ["MegatronParser", "MegatronReader", "detect_megatron"]

ITERATION = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|([^\n]*)")
VALIDATION = re.compile(
    r"validation loss at (?:iteration (\d+)|the end of training for (\w+) data)(?: on [^|\n]*)?\s*\|([^\n]*)"
)
MEMORY = re.compile(r"\(after (\d+) iterations\) memory \(MB\)\s*\|([^\n]*)")
TIMERS = re.compile(r"time \(ms\) *\|([^\n]*)")
ARGUMENT = re.compile(r"^  ([A-Za-z_]\w*) \.{3,} ([^\n]*)$", re.M)
_BANNER = re.compile(r"using world size: \d+|> initializing torch distributed|Megatron")


def _fields(text: str, counter: list[int]) -> list[tuple[str, float]]:
    """``name: value`` fields between ``|``; non-numeric values are counted in ``counter[0]``."""
    names: list[str] = []
    values: list[float] = []
    _fields_into(text, names, values, counter, {})
    return list(zip(names, values, strict=True))


def _fields_into(text: str, names: list[str], values: list[float], counter: list[int], tags: dict[str, str],
                 prefix: str = "") -> int:
    """Append the ``name: value`` fields of ``text`` to ``names``/``values``; return how many.

    ``tags`` caches raw field name -> tag (the same few names repeat on every line).
    """
    count = 0
    for segment in text.split("|"):
        name, sep, value = segment.partition(":")
        if not sep:
            continue
        try:
            number = float(value)
        except ValueError:
            number = to_float(value)
            if number is None:
                if name.strip():
                    counter[0] += 1  # not a number, or empty
                continue
        tag = tags.get(name)
        if tag is None:
            stripped = name.strip()
            if not stripped:
                continue
            tag = tags[name] = prefix + stripped
        names.append(tag)
        values.append(number)
        count += 1
    return count


class _Shapes:
    """Fast path for lines whose field names repeat: 'a: 1 | b: 2 |' → names once, values by C-level split."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.last: list[str] | None = None
        self.tags: list[str] = []

    def read(self, text: str, names: list[str], values: list[float], counter: list[int], cache: dict[str, str]) -> int:
        if not text.endswith("|"):
            text += "|"
        parts = text.replace("|", ":").split(":")
        keys = parts[0:-1:2]
        if keys != self.last:
            if len(parts) % 2 == 0 or (parts[-1] and not parts[-1].isspace()) or text.count("|") != len(keys):
                return _fields_into(text, names, values, counter, cache, self.prefix)  # ':' in a value, or odd
            tags = [self.prefix + k.strip() for k in keys]
            if any(tag == self.prefix for tag in tags):  # an empty name: let the careful path decide
                return _fields_into(text, names, values, counter, cache, self.prefix)
            self.last, self.tags = keys, tags
        try:
            floats = list(map(float, parts[1::2]))
        except ValueError:
            return _fields_into(text, names, values, counter, cache, self.prefix)
        values.extend(floats)
        names.extend(self.tags)
        return len(self.tags)


def _line_start_ok(text: str, pos: int) -> bool:
    """A timer line starts the line, maybe after a '[time stamp]' prefix."""
    if pos == 0 or text[pos - 1] == "\n":
        return True
    start = text.rfind("\n", 0, pos) + 1
    prefix = text[start:pos].strip()
    return prefix.startswith("[") and prefix.endswith("]")


class MegatronParser(DeepSpeedEngineLines, TextParser):
    family = "megatron"
    lookalike = None  # iteration and validation lines that fail are reported where they are found
    #: read every chunk line by line in order (as chunks with overflow messages are); for tests
    ordered = False
    patterns = (
        (ITERATION, "iteration"),
        (VALIDATION, "validation"),
        (MEMORY, "memory"),
        (TIMERS, "timers"),
        *DeepSpeedEngineLines.deepspeed_patterns,
    )

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._init_deepspeed()
        self._iterations_seen = False
        self._bad_values = [0]
        self._validations = 0
        self._last_iteration: int | None = None
        self._iteration_tags: dict[str, str] = {}
        self._timer_tags: dict[str, str] = {}
        self._iteration_shapes = _Shapes()
        self._timer_shapes = _Shapes("time (ms)/")
        self._ordered_chunks = 0

    # -- chunk level ----------------------------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        if not self._iterations_seen:
            first = ITERATION.search(chunk.text)
            for m in ARGUMENT.finditer(chunk.text, 0, first.start() if first else len(chunk.text)):
                self.hparams.setdefault(m.group(1), config_value(m.group(2)))
        if self.ordered or self._pending_skips or (chunk.contains("Skipping step") and DS_OVERFLOW.search(chunk.text)):
            # overflow messages count at the next logged step: read this chunk line by line, in order
            self._ordered_chunks += 1
            super().feed(chunk)
        else:
            self._feed_fast(chunk)

    def _feed_fast(self, chunk: Chunk) -> None:
        """The same rows as the ordered path, each dense line kind read in one tight loop."""
        text = chunk.text
        rows = self.rows
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        walls: list[tuple[int, int, float]] = []
        positions: list[int] = []
        iteration_steps: list[int] = []
        bad, tags, shapes = self._bad_values, self._iteration_tags, self._iteration_shapes
        for m in ITERATION.finditer(text):
            pos = m.start()
            rest = m.group(3)
            if not rest.rstrip().endswith("|"):
                self.unparsed(chunk, pos)
                continue
            step = int(m.group(1))
            if not self._iterations_seen:
                self._first_iteration(m)
            start = len(values)
            count = shapes.read(rest, names, values, bad, tags)
            steps.extend([step] * count)
            if "]" in text[pos - 4 : pos]:
                walls.append((start, count, self._iteration_wall(text, pos)))
            if self._last_iteration is not None and step < self._last_iteration:
                self._last_anchor[-1] = self._last_iteration
                self.anchor(step, chunk, pos)  # a restart: recorded with its line
            self._last_iteration = step
            positions.append(pos)
            iteration_steps.append(step)
        wall_column: float | list[float] = NAN
        if walls:
            wall_column = [NAN] * len(values)
            for start, count, wall in walls:
                wall_column[start : start + count] = [wall] * count
        rows.extend(rows.codes(names), steps, values, wall=wall_column)
        if iteration_steps:
            self.anchor(iteration_steps[-1], None, 0)
        self.parsed_lines += len(positions)
        self._timers_fast(chunk, positions, iteration_steps)
        if chunk.contains("validation loss at"):
            for m in VALIDATION.finditer(text):
                self._on_validation(m, chunk)
        if chunk.contains("(after "):
            for m in MEMORY.finditer(text):
                self._on_memory(m, chunk)
        self.parsed_lines += self._ds_fast(chunk)

    def _timers_fast(self, chunk: Chunk, positions: list[int], iteration_steps: list[int]) -> None:
        text = chunk.text
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        before = self._previous_iteration
        index, n = 0, len(positions)
        lines = 0
        for m in TIMERS.finditer(text):
            pos = m.start()
            while index < n and positions[index] < pos:
                index += 1
            step = iteration_steps[index - 1] if index else before
            if step is None or not _line_start_ok(text, pos):
                continue  # setup timers come before training
            count = self._timer_shapes.read(m.group(1), names, values, self._bad_values, self._timer_tags)
            steps.extend([step] * count)
            lines += 1
        self.rows.extend(self.rows.codes(names), steps, values)
        self.parsed_lines += lines
        self._previous_iteration = self._last_iteration

    _previous_iteration: int | None = None

    def _first_iteration(self, m: re.Match[str]) -> None:
        self._iterations_seen = True
        if self.hparams.get("train_iters") is None:  # the dump says None when set by samples
            self.hparams["train_iters"] = int(m.group(2))

    @staticmethod
    def _iteration_wall(text: str, pos: int) -> float:
        start = text.rfind("\n", 0, pos) + 1
        return parse_timestamp(text[start:pos].strip(" ["))

    # -- line by line (chunks with overflow messages) ------------------------------------------------
    def _on_iteration(self, m: re.Match[str], chunk: Chunk) -> None:
        rest = m.group(3)
        if not rest.rstrip().endswith("|"):
            self.unparsed(chunk, m.start())
            return
        text, pos = chunk.text, m.start()
        wall = self._iteration_wall(text, pos) if "]" in text[pos - 4 : pos] else NAN
        step = int(m.group(1))
        if not self._iterations_seen:
            self._first_iteration(m)
        self.parsed_lines += 1
        self._flush_overflows(step)
        self.anchor(step, chunk, pos)
        self._last_iteration = step
        self.rows.add_pairs(_fields(rest, self._bad_values), step, wall=wall)

    def _on_timers(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._last_iteration is None or not _line_start_ok(chunk.text, m.start()):
            return  # setup timers (load-checkpoint, model-and-optimizer-setup) come before training
        names: list[str] = []
        values: list[float] = []
        count = _fields_into(m.group(1), names, values, self._bad_values, self._timer_tags, "time (ms)/")
        if count:
            self.parsed_lines += 1
            self.rows.extend(self.rows.codes(names), [self._last_iteration] * count, values)

    def end_chunk(self, chunk: Chunk) -> None:
        super().end_chunk(chunk)
        self._previous_iteration = self._last_iteration

    def _on_validation(self, m: re.Match[str], chunk: Chunk) -> None:
        split = "validation" if m.group(1) is not None or m.group(2) in (None, "val", "valid") else m.group(2)
        step = int(m.group(1)) if m.group(1) is not None else (self._last_iteration or 0)
        pairs = []
        for name, value in _fields(m.group(3), self._bad_values):
            if name.endswith(" value"):
                pairs.append((f"{name[:-6]} {split}", value))
            elif name.endswith(" PPL"):
                pairs.append((f"{name[:-4]} {split} ppl", value))
            else:
                pairs.append((f"{name} {split}", value))
        if pairs:
            self._validations += 1
            self.parsed_lines += 1
            self.rows.add_pairs(pairs, step)
        else:
            self.unparsed(chunk, m.start())

    def _on_memory(self, m: re.Match[str], chunk: Chunk) -> None:
        rank = _rank(chunk.text, m.start())
        pairs = [(f"memory (MB)/{name}", value) for name, value in _fields(m.group(2), self._bad_values)]
        if pairs:
            self.parsed_lines += 1
            self.rows.add_pairs(pairs, int(m.group(1)), rank=rank)

    def finish(self) -> None:
        notes = self._finish_deepspeed()
        if self._bad_values[0]:
            notes.append(f"{self._bad_values[0]:,} field value(s) that are empty or not numbers were skipped")
        if self._validations:
            notes.append(
                "validation lines: 'X value' → 'X validation', 'X PPL' → 'X validation ppl' (Megatron's TensorBoard names)"
            )
        self.notes[:0] = notes


_DETECT = re.compile(r"iteration\s+\d+\s*/\s*\d+\s*\|[^\n]*\|")


def detect_megatron(window: str) -> bool:
    if _DETECT.search(window):
        return True
    return "----- arguments -----" in window and bool(_BANNER.search(window, 0, 1 << 20))


class MegatronReader(TextReader):
    name = "megatron"
    description = "Megatron-LM / Megatron-DeepSpeed console logs ('iteration N/ M | name: value | …')"
    parser = MegatronParser

    def detect(self, window: str) -> bool:
        return detect_megatron(window)
