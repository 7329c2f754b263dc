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
interleaves are read too (see :mod:`tanalyze.readers.text.deepspeed`).

An iteration line must end with ``|``: a line cut mid-write by a killed job
does not, and is reported instead of being read with a truncated value.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from itertools import repeat
from pathlib import Path
from typing import Any

from tanalyze.readers.text._batch import rising
from tanalyze.readers.text._fields import FieldShape, LineShapes, field_pairs, fields_into
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text.deepspeed import DS_OVERFLOW, DeepSpeedEngineLines, _rank
from tanalyze.readers.values import NAN, config_value, parse_timestamp

__all__ = ["MegatronParser", "MegatronReader", "detect_megatron"]

_ITERATION_HEAD = r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|"
ITERATION = re.compile(_ITERATION_HEAD + r"([^\n]*)")
VALIDATION = re.compile(
    r"validation loss at (?:iteration (\d+)|the end of training for (\w+) data)(?: on [^|\n]*)?\s*\|([^\n]*)"
)
MEMORY = re.compile(r"\(after (\d+) iterations\) memory \(MB\)\s*\|([^\n]*)")
_TIMERS_HEAD = r"time \(ms\) *\|"
TIMERS = re.compile(_TIMERS_HEAD + r"([^\n]*)")
ARGUMENT = re.compile(r"^  ([A-Za-z_]\w*) \.{3,} ([^\n]*)$", re.M)
_BANNER = re.compile(r"using world size: \d+|> initializing torch distributed|Megatron")


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
        self._validation_tags: dict[str, str] = {}
        self._split_tags: dict[tuple[str, str], str] = {}
        self._iteration_shapes = LineShapes()
        self._timer_shapes = LineShapes("time (ms)/")
        self._iteration_fields = FieldShape(_ITERATION_HEAD)
        self._timer_fields = FieldShape(_TIMERS_HEAD, prefix="time (ms)/", closed=False)
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
        """The same rows as the ordered path, each dense line kind read in one tight loop or all at once,
        then put back in the order of their lines (so that where a chunk begins changes nothing)."""
        first = len(self.rows)
        self._row_positions = []
        iterations = self._iterations_at_once(chunk)
        if iterations is None:
            self._iteration_fields.forget()
            iterations = self._iterations_one_by_one(chunk)
        if not self._timers_at_once(chunk, *iterations):
            self._timer_fields.forget()
            self._timers_one_by_one(chunk, *iterations)
        self._previous_iteration = self._last_iteration
        self._validations_fast(chunk)
        for m in MEMORY.finditer(chunk.text):  # a literal start: as quick as a test for it
            before = self.rows.total
            self._on_memory(m, chunk)
            self._place([m.start()], self.rows.total - before)
        self.parsed_lines += self._ds_fast(chunk)
        self._in_line_order(first)

    def _iterations_at_once(self, chunk: Chunk) -> tuple[list[int], list[int]] | None:
        """(positions, steps) of the chunk's iteration lines, read at once; None (nothing read) when
        a line needs care: other field names, a value that is not a number, a step that goes back,
        a time stamp."""
        text = chunk.text
        shape = self._iteration_fields
        found = shape.read_learning(text, ITERATION, 3)
        if found is None:
            return None
        matches, heads, values = found
        if not matches:
            return [], []
        steps = list(map(int, heads[0]))
        if (self._last_iteration is not None and steps[0] < self._last_iteration) or not rising(steps, strictly=False):
            return None  # a restart: recorded with its line
        positions = list(map(re.Match.start, matches))
        if any("]" in text[pos - 4 : pos] for pos in positions):
            return None  # time-stamped lines
        try:
            self.rows.extend_lines(shape.tags, steps, values)
        except OverflowError:
            return None
        if not self._iterations_seen:
            self._first_iteration(matches[0])
        self._place(positions, len(shape.tags))
        self._last_iteration = steps[-1]
        self.anchor(steps[-1], None, 0)
        self.parsed_lines += len(steps)
        return positions, steps

    def _iterations_one_by_one(self, chunk: Chunk) -> tuple[list[int], list[int]]:
        """(positions, steps) of the chunk's iteration lines, read line by line (cut lines, restarts)."""
        text = chunk.text
        rows = self.rows
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        walls: list[tuple[int, int, float]] = []
        positions: list[int] = []
        iteration_steps: list[int] = []
        counts: list[int] = []
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
            counts.append(count)
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
        self._place(positions, counts)
        if iteration_steps:
            self.anchor(iteration_steps[-1], None, 0)
        self.parsed_lines += len(positions)
        return positions, iteration_steps

    def _timers_at_once(self, chunk: Chunk, positions: list[int], iteration_steps: list[int]) -> bool:
        """The chunk's timer lines read at once, each at the iteration before it; False (nothing read)
        when a line needs care: other names, a value that is not a number, a prefix, no iteration before."""
        text = chunk.text
        shape = self._timer_fields
        found = shape.read_learning(text, TIMERS, 1)
        if found is None:
            return False
        matches, _, values = found
        if not matches:
            return True
        starts = list(map(re.Match.start, matches))
        if not all(pos == 0 or text[pos - 1] == "\n" for pos in starts):
            return False
        before = self._previous_iteration
        index = list(map(bisect_left, repeat(positions), starts))
        if before is None and 0 in index:
            return False  # setup timers before training: left out line by line
        steps = [iteration_steps[i - 1] if i else before for i in index]
        try:
            self.rows.extend_lines(shape.tags, steps, values)
        except OverflowError:
            return False
        self._place(starts, len(shape.tags))
        self.parsed_lines += len(steps)
        return True

    def _timers_one_by_one(self, chunk: Chunk, positions: list[int], iteration_steps: list[int]) -> None:
        """The chunk's timer lines, line by line, each at the iteration before it."""
        text = chunk.text
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        before = self._previous_iteration
        index, n = 0, len(positions)
        lines = 0
        placed: list[int] = []
        counts: list[int] = []
        for m in TIMERS.finditer(text):
            pos = m.start()
            while index < n and positions[index] < pos:
                index += 1
            step = iteration_steps[index - 1] if index else before
            if step is None or not _line_start_ok(text, pos):
                continue  # setup timers come before training
            count = self._timer_shapes.read(m.group(1), names, values, self._bad_values, self._timer_tags)
            steps.extend([step] * count)
            placed.append(pos)
            counts.append(count)
            lines += 1
        self.rows.extend(self.rows.codes(names), steps, values)
        self._place(placed, counts)
        self.parsed_lines += lines

    _previous_iteration: int | None = None

    def _first_iteration(self, m: re.Match[str]) -> None:
        self._iterations_seen = True
        self._train_iters = int(m.group(2))  # the hparam when the dump has none (see finish)

    _train_iters: int | None = None
    _STATE = ("_iterations_seen", "_validations", "_last_iteration", "_previous_iteration", "_train_iters")

    def snapshot(self) -> dict[str, Any]:
        state = super().snapshot()
        state.update(deepspeed=self._ds_snapshot(), bad_values=self._bad_values[0],
                     megatron={name: getattr(self, name) for name in self._STATE})
        return state

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self._ds_restore(state["deepspeed"])
        self._bad_values[0] = state["bad_values"]
        for name in self._STATE:
            setattr(self, name, state["megatron"][name])

    def finish_changes_rows(self) -> bool:
        return bool(self._pending_skips)

    def absorb(self, other: TextParser) -> None:
        assert isinstance(other, MegatronParser)
        self._flush_at_end()
        offset = self.rows.total
        super().absorb(other)
        self._ds_absorb(other, offset)
        self._bad_values[0] += other._bad_values[0]
        self._validations += other._validations
        if self._train_iters is None:
            self._train_iters = other._train_iters

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
        self.rows.add_pairs(field_pairs(rest, self._bad_values), step, wall=wall)

    def _on_timers(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._last_iteration is None or not _line_start_ok(chunk.text, m.start()):
            return  # setup timers (load-checkpoint, model-and-optimizer-setup) come before training
        names: list[str] = []
        values: list[float] = []
        count = fields_into(m.group(1), names, values, self._bad_values, self._timer_tags, "time (ms)/")
        if count:
            self.parsed_lines += 1
            self.rows.extend(self.rows.codes(names), [self._last_iteration] * count, values)

    def end_chunk(self, chunk: Chunk) -> None:
        super().end_chunk(chunk)
        self._previous_iteration = self._last_iteration

    def _on_validation(self, m: re.Match[str], chunk: Chunk) -> None:
        read = self._validation(m)
        if read is None:
            self.unparsed(chunk, m.start())
            return
        step, names, values = read
        self.rows.extend(self.rows.codes(names), [step] * len(names), values)

    def _validations_fast(self, chunk: Chunk) -> None:
        """Every validation line of the chunk, appended together (the same rows as ``_on_validation``)."""
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        positions: list[int] = []
        counts: list[int] = []
        for m in VALIDATION.finditer(chunk.text):
            read = self._validation(m)
            if read is None:
                self.unparsed(chunk, m.start())
                continue
            names.extend(read[1])
            values.extend(read[2])
            steps.extend([read[0]] * len(read[1]))
            positions.append(m.start())
            counts.append(len(read[1]))
        self.rows.extend(self.rows.codes(names), steps, values)
        self._place(positions, counts)

    def _validation(self, m: re.Match[str]) -> tuple[int, list[str], list[float]] | None:
        """(step, tags, values) of a validation line, counted as read; None when it has no field."""
        split = "validation" if m.group(1) is not None or m.group(2) in (None, "val", "valid") else m.group(2)
        step = int(m.group(1)) if m.group(1) is not None else (self._last_iteration or 0)
        names: list[str] = []
        values: list[float] = []
        if not fields_into(m.group(3), names, values, self._bad_values, self._validation_tags):
            return None
        self._validations += 1
        self.parsed_lines += 1
        return step, [self._validation_tag(name, split) for name in names], values

    def _validation_tag(self, name: str, split: str) -> str:
        """'lm loss value' → 'lm loss validation', 'lm loss PPL' → 'lm loss validation ppl' (Megatron's names)."""
        tag = self._split_tags.get((name, split))
        if tag is None:
            if name.endswith(" value"):
                tag = f"{name[:-6]} {split}"
            elif name.endswith(" PPL"):
                tag = f"{name[:-4]} {split} ppl"
            else:
                tag = f"{name} {split}"
            self._split_tags[(name, split)] = tag
        return tag

    def _on_memory(self, m: re.Match[str], chunk: Chunk) -> None:
        rank = _rank(chunk.text, m.start())
        pairs = [(f"memory (MB)/{name}", value) for name, value in field_pairs(m.group(2), self._bad_values)]
        if pairs:
            self.parsed_lines += 1
            self.rows.add_pairs(pairs, int(m.group(1)), rank=rank)

    def finish(self) -> None:
        if self._train_iters is not None and self.hparams.get("train_iters") is None:
            self.hparams["train_iters"] = self._train_iters  # the dump says None when set by samples
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
