"""DeepSpeed and DeepSpeed-Chat console logs.

The DeepSpeed engine prints, on rank 0 and every ``steps_per_print`` steps::

    [2023-04-18 01:46:59,142] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=6, lr=[9.6e-06, 9.6e-06], mom=[…]
    [2023-04-18 01:46:59,171] [INFO] [timer.py:199:stop] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=173.4, CurrSamplesPerSec=171.9, MemAllocated=3.96GB, MaxMemAllocated=22.95GB

and, for fp16, ``OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768``
(or ``Overflow detected. Skipping step. …`` in newer versions) with no step.
Those lines are counted at the NEXT logged step (``overflow_skips``: how many
skip messages since the previous logged step; ``loss_scale``: the scale they
left), which is where DeepSpeed's own ``skipped=`` count shows them.

DeepSpeed-Chat adds evaluation lines (``ppl: …``; ``chosen: …, rejected: …, loss: …``;
``chosen_last_scores (higher is better) : …, acc (higher is better) : …``), RLHF
step lines (``epoch: 0|step: 3|ppo_ep: 1|act_loss: …|cri_loss: …|unsuper_loss: …``,
``average reward score: …``, ``|E2E latency=3.9s |…|CurSamplesPerSec=16.5 |…``) and
per-micro-batch throughput lines (``Model Parameters: 0.331 B, Latency: 0.14s, …``).

With ``"wall_clock_breakdown": true`` the engine times its phases
(``[Rank 0] time (ms) | fwd: … | bwd: … | bwd_inner: … | bwd_allreduce: … | step: …`` and the ``*_microstep``
line): tags ``time (ms)/<timer>`` at the last step line's step, the naming Megatron's timer lines get
(:mod:`tanalyze.analysis.communication` reads the all-reduce share from them).
"""

from __future__ import annotations

import functools
import math
import re
from array import array
from bisect import bisect_right
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.readers.text._batch import floats, interleave, rising
from tanalyze.readers.text._fields import fields_into
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import line_index, matches_by_line, require, tagged_matches
from tanalyze.readers.text.generic import GenericRules
from tanalyze.readers.values import NAN, NUMBER, parse_timestamp, parse_timestamps, to_float

__all__ = ["DeepSpeedEngineLines", "DeepSpeedParser", "DeepSpeedReader", "detect_deepspeed"]

# Patterns start with a literal so that scanning a chunk is fast; what precedes
# (rank, time stamp, step counters) is read from the line when a match is found.
DS_STEP = re.compile(r"step=(\d+), skipped=(\d+), lr=\[([^\]\n]*)\]")
DS_TIMER = re.compile(r", RunningAvgSamplesPerSec=([^\n]*)")
#: ``wall_clock_breakdown``: ``[…] [Rank 0] time (ms) | fwd: 6567.66 | bwd: … | bwd_allreduce: 239.11 | step: …``
#: (its start is no literal: a chunk without "time (ms)" is not scanned for it, which costs a quarter of a read)
DS_BREAKDOWN = require(re.compile(r"(?:^|\] )time \(ms\) *\|([^\n]*)", re.M), lambda text: "time (ms)" in text)
DS_OVERFLOW = re.compile(
    rf"Skipping step\. Attempted loss scale: ({NUMBER})(?:, reducing to ({NUMBER})|, but hysteresis is \d+)?"
)

EVAL_HEADER = re.compile(r"^\*\*\*\*\* Evaluating (\w+), Epoch (\d+)/(\d+) \*\*\*\*\*[ \t]*$", re.M)
BEGIN_EPOCH = re.compile(r"^Beginning of Epoch (\d+)/(\d+), Total (Micro|Generation) Batches (\d+)[ \t]*$", re.M)
PPL = re.compile(rf"^ppl: ({NUMBER})[ \t]*$", re.M)
CHOSEN = re.compile(rf"^chosen: ({NUMBER}), rejected: ({NUMBER})(?:, loss: ({NUMBER}))?[ \t]*$", re.M)
CHOSEN_LAST = re.compile(
    rf"^chosen_last_scores \(higher is better\) : ({NUMBER}), acc \(higher is better\) : ({NUMBER})[ \t]*$", re.M
)
EPOCH_LOSS = re.compile(rf"^Epoch (\d+)/(\d+) with loss ({NUMBER})[ \t]*$", re.M)
PPO = re.compile(r"^epoch: (\d+)\|step: (\d+)\|ppo_ep: (\d+)\|([^\n]*)$", re.M)
REWARD = re.compile(rf"^average reward score: ({NUMBER})[ \t]*$", re.M)
E2E = re.compile(r"^\|E2E latency=([^\n]*)$", re.M)
THROUGHPUT = re.compile(
    rf"^Model Parameters: [^,\n]*, Latency: ({NUMBER})s, TFLOPs: ({NUMBER}), Samples/sec: ({NUMBER}), "
    rf"Time/seq ({NUMBER})s(?:, [^\n]*)?$",
    re.M,
)
#: (a name of at most 80 characters: unbounded, a long line of words without "=" took time in the square of its
#: length, as each word start looked for an "=" to the line's end)
_EQ_PAIR = re.compile(rf"([A-Za-z][\w /]{{0,80}}?)=\s*({NUMBER})")
_THROUGHPUT = ("latency", "tflops", "samples_per_second", "time_per_sequence")


def _wall(text: str, start: int) -> float:
    """Time stamp of a DeepSpeed line starting at ``start`` ('[2023-04-18 01:46:59,142] …'), NaN if none."""
    if text.startswith("[", start):
        return parse_timestamp(text[start + 1 : start + 24])
    return NAN


def _rank(text: str, pos: int) -> int:
    """The N of a '[Rank N] ' right before ``pos`` (-1 when there is none)."""
    if text.startswith("[Rank 0] ", pos - 9):
        return 0
    at = text.rfind("[Rank ", max(0, pos - 16), pos)
    if at < 0 or text[pos - 2 : pos] != "] ":
        return -1
    try:
        return int(text[at + 6 : pos - 2])
    except ValueError:
        return -1


_TIMER_TAGS: dict[tuple[str, str], str] = {}
# The usual shapes of the two dense engine lines, whole, for one C-level findall per chunk:
# a step line fills groups 1-5 (time stamp, rank, step, skipped, lr), a timer line groups 1 and 6-13.
_ENGINE_LINE = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+)\] \[\w+\] \["
    r"(?:logging\.py:\d+:log_dist\] \[Rank (-?\d+)\] step=(\d+), skipped=(\d+), lr=\[([^\],\n]*)"
    r"|timer\.py:\d+:stop\] (?:epoch=(\d+)/micro_step=(\d+)/global_step=(\d+)|\d+/(\d+)), "
    r"RunningAvgSamplesPerSec=([^,\n]+), CurrSamplesPerSec=([^,\n]+), MemAllocated=([^,\n]+)GB, "
    r"MaxMemAllocated=([^,\n]+)GB$)",
    re.M,
)
_STAMP, _RANK, _STEP, _SKIPPED, _LR, _EPOCH, _MICRO, _GLOBAL, _OLD_STEP = range(9)
_TIMER_FIELDS = slice(9, 13)
_TIMER_LINE_TAGS = ("RunningAvgSamplesPerSec", "CurrSamplesPerSec", "MemAllocated (GB)", "MaxMemAllocated (GB)")


@functools.cache
def _literal(literal: str) -> re.Pattern[str]:
    return re.compile(re.escape(literal))


def _occurrences(text: str, literal: str, start: int, end: int) -> list[int]:
    """Where ``literal`` occurs in ``text[start:end]``, in order (found in C, not one ``find`` at a time)."""
    return list(map(re.Match.start, _literal(literal).finditer(text, start, end)))


def _step_line_start(text: str, index: int, start: int, end: int) -> int:
    """Where the ``index``-th step line that ``_ENGINE_LINE`` finds in ``text[start:end]`` starts (to name a
    restart's line)."""
    steps = (m for m in _ENGINE_LINE.finditer(text, start, end) if m.group(_RANK + 1))
    return next(islice(steps, index, None)).start()


def _first_line(step_lines: list[tuple[str, ...]], step_positions: list[int], timer_lines: list[tuple[str, ...]],
                timer_positions: list[int]) -> tuple[int, int, int] | None:
    """(position, step, rank) of a span's first step or timer line (None: it has neither)."""
    if step_positions and (not timer_positions or step_positions[0] < timer_positions[0]):
        return step_positions[0], int(step_lines[0][_STEP]), int(step_lines[0][_RANK])
    if timer_positions:
        line = timer_lines[0]
        return timer_positions[0], int(line[_GLOBAL] or line[_OLD_STEP]), -1
    return None


class _TimerShapes:
    """Timer lines repeat the same names: split once per line in C, names checked against the last shape."""

    def __init__(self) -> None:
        self.keys: list[str] | None = None
        self.tags: list[str] = []
        self.units: list[bool] = []

    def read(self, rest: str, prefix: str) -> list[tuple[str, float]] | tuple[list[str], list[float]]:
        parts = rest.replace("=", ", ").split(", ")
        keys = parts[1::2]
        if prefix or keys != self.keys:
            pairs = timer_fields(rest, prefix)
            if not prefix and len(pairs) == len(parts) // 2 + 1:
                self.keys, self.tags = keys, [tag for tag, _ in pairs]
                self.units = [tag.endswith("B)") for tag in self.tags]
            return pairs
        try:
            values = [float(v[:-2]) if unit else float(v) for v, unit in zip(parts[0::2], self.units, strict=True)]
        except ValueError:
            return timer_fields(rest, prefix)
        return self.tags, values


def timer_fields(rest: str, prefix: str = "") -> list[tuple[str, float]]:
    """``RunningAvgSamplesPerSec=…, CurrSamplesPerSec=…, MemAllocated=3.96GB, …`` as (tag, value)."""
    out = []
    for item in ("RunningAvgSamplesPerSec=" + rest).split(", "):
        name, sep, value = item.partition("=")
        if not sep or not value:
            continue
        unit = ""
        if value[-1] == "B" and value[-2:] in ("GB", "MB"):
            value, unit = value[:-2], value[-2:]
        try:
            number = float(value)
        except ValueError:
            continue
        tag = _TIMER_TAGS.get((name, unit))
        if tag is None:
            tag = _TIMER_TAGS[(name, unit)] = f"{name} ({unit})" if unit else name
        out.append((prefix + tag if prefix else tag, number))
    return out


class DeepSpeedEngineLines:
    """Mixin: the DeepSpeed engine's step, timer and overflow lines (``_init_deepspeed`` first).

    Host parsers call :meth:`_flush_overflows` with the step of each line that
    carries one, so that pending overflow messages land on the next logged step.
    """

    deepspeed_patterns = ((DS_STEP, "ds_step"), (DS_TIMER, "ds_timer"), (DS_OVERFLOW, "ds_overflow"))

    def _init_deepspeed(self) -> None:
        self._ds_last_step: int | None = None
        self._ds_engine = 0
        self._ds_engines = 1
        self._ds_last_timer: int | None = None
        self._ds_timer_engine = 0
        self._ds_grad_accum: float | None = None
        self._pending_scale: float | None = None
        self._pending_skips = 0
        self._pending_wall = NAN
        self._overflow_total = 0
        self._overflow_at_end = 0
        # step, rank, row of skips, row of scale (rows counted in the file), skips counted
        self._last_flush: tuple[int, int, int, int, float] | None = None
        self._ds_timer_shapes = _TimerShapes()
        self._row_positions: list[np.ndarray] | None = None  # see _place

    def _in_line_order(self, first: int) -> None:
        """Put the rows added from ``first`` (since ``_row_positions`` was set to a list) in the order of the
        lines they came from: the line kinds read apart come back as they were written."""
        placed, self._row_positions = self._row_positions, None
        assert placed is not None
        if len(placed) < 2:
            return
        positions = np.concatenate(placed)
        rows = self.rows  # type: ignore[attr-defined]
        if len(positions) != len(rows) - first:
            return  # rows were skipped (steps beyond 64 bits): left as read
        if len(positions) and not (positions[1:] >= positions[:-1]).all():
            order = np.argsort(positions, kind="stable")
            rows.reorder(first, order)
            last = self._last_flush
            if last is not None and last[2] >= rows.base + first:  # the overflow rows moved too
                moved = np.empty_like(order)
                moved[order] = np.arange(len(order))
                offset = rows.base + first
                self._last_flush = (last[0], last[1], offset + int(moved[last[2] - offset]),
                                    offset + int(moved[last[3] - offset]) if last[3] >= 0 else -1, last[4])

    def _place(self, positions: list[int], counts: list[int] | int, before: bool = False) -> None:
        """Note where in the chunk the rows just added were written (``counts`` rows for each line), when the
        host parser reads line kinds apart and puts the chunk's rows back in line order afterwards
        (``before``: rows that go before those of the line at each position)."""
        if self._row_positions is not None:
            self._row_positions.append(np.repeat(np.asarray(positions, np.int64) * 2 - before, counts))

    def _on_ds_step(self, m: re.Match[str], chunk: Chunk) -> None:
        text = chunk.text
        pos = m.start()
        rank = _rank(text, pos)
        step, skipped = int(m.group(1)), int(m.group(2))
        if step == self._ds_last_step:
            self._ds_engine += 1  # a second engine (RLHF actor + critic) logging the same step
            self._ds_engines = max(self._ds_engines, self._ds_engine + 1)
        else:
            self._ds_engine = 0
        self._ds_last_step = step
        prefix = f"engine{self._ds_engine}/" if self._ds_engine else ""
        wall = _wall(text, text.rfind("\n", 0, pos) + 1)
        pairs = [(prefix + "skipped", float(skipped))]
        lr = to_float(m.group(3).partition(",")[0])
        if lr is not None:
            pairs.append((prefix + "lr", lr))
        self.mark(chunk, pos)  # type: ignore[attr-defined]
        if not self._ds_engine:
            self._flush_overflows(step, rank)
            self.anchor(step, chunk, pos, rank=rank)  # type: ignore[attr-defined]
        self.rows.add_pairs(pairs, step, rank=rank, wall=wall)  # type: ignore[attr-defined]

    def _timer_step(self, text: str, start: int, pos: int) -> int | None:
        """The global step of a timer line: '… epoch=0/micro_step=20/global_step=10' or '… 0/10'."""
        head = text[text.rfind(" ", start, pos) + 1 : pos]
        parts = head.split("/")
        try:
            if len(parts) == 3 and parts[2].startswith("global_step="):
                micro, step = int(parts[1][len("micro_step=") :]), int(parts[2][len("global_step=") :])
                if step and parts[0] == "epoch=0":  # micro_step restarts every epoch; global_step does not
                    self._ds_grad_accum = micro / step
                return step
            if len(parts) == 2:
                return int(parts[1])
        except ValueError:
            return None
        return None

    def _ds_fast(self, chunk: Chunk) -> int:
        """Every step and timer line of a chunk without overflow messages (see :meth:`_ds_span`)."""
        return self._ds_span(chunk, 0, len(chunk.text))[0]

    #: whether the step lines read by ``_ds_any`` are marked (for a host parser that looks for lines it left
    #: unread; those of the usual shape need not be: see ``_UNUSUAL_LOOKALIKES``)
    _mark_engine_lines = False

    _read_at_once: tuple = ()

    def _ds_span(self, chunk: Chunk, start: int, end: int, strict: bool = False) -> tuple[int, bool]:
        """Every step and timer line of ``chunk.text[start:end]`` (and, with ``_overflows_in_spans``, the overflow
        messages among them; without, there must be none).

        The same rows as ``_on_ds_step``/``_on_ds_timer`` (and ``_on_ds_overflow``); returns how many lines
        were read (and not marked), and whether all had the usual shape (then one findall read them all);
        (-1, False) when overflow messages go with lines of other shapes: nothing read, for the caller to read
        line by line.
        """
        text = chunk.text
        step_positions = _occurrences(text, ", skipped=", start, end)  # (their number tells all were matched)
        timer_positions = _occurrences(text, ", RunningAvgSamplesPerSec=", start, end)
        steps_seen, timers_seen = len(step_positions), len(timer_positions)
        overflowing = self._overflows_in_spans and (self._pending_skips or text.find("Skipping step", start, end) >= 0)
        if not steps_seen and not timers_seen:
            self._read_at_once = ([], [], [], [])
            return (-1, False) if overflowing else (0, True)
        found = _ENGINE_LINE.findall(text, start, end)
        step_lines = [line for line in found if line[_RANK]]
        timer_lines = [line for line in found if not line[_RANK]] if timers_seen else []
        if len(step_lines) == steps_seen and len(timer_lines) == timers_seen:
            read = self._ds_usual(chunk, step_lines, step_positions, timer_lines, timer_positions, start, end, strict)
            return (read, True) if read is not None else (-1, False)
        if overflowing or strict:
            return -1, False  # overflow messages among lines of other shapes: for the caller, line by line
        return self._ds_any(chunk, start, end), False

    def _ds_usual(self, chunk: Chunk, step_lines: list[tuple[str, ...]], step_positions: list[int],
                  timer_lines: list[tuple[str, ...]], timer_positions: list[int], start: int, end: int,
                  strict: bool = False) -> int | None:
        """Lines matched by ``_ENGINE_LINE``: all at once when they allow it, else one by one. With overflow
        messages among them (``_overflows_in_spans``), or ``strict``, all at once or None (nothing read: the
        caller reads every line on its own); what was read at once is then in ``_read_at_once``."""
        text = chunk.text
        overflows = list(DS_OVERFLOW.finditer(text, start, end)) if self._overflows_in_spans else []
        self._read_at_once = (step_positions, step_lines, timer_positions, timer_lines)
        if strict or overflows or self._pending_skips:
            saved = self._engine_state()
            if not ((not step_lines or self._ds_steps_at_once(step_lines))
                    and (not timer_lines or self._ds_timers_at_once(timer_lines))):
                self._engine_state(saved)
                return None
            self._place(step_positions, 2)
            self._place(timer_positions, len(_TIMER_LINE_TAGS))
            self._flush_in_span(chunk, overflows, step_lines, step_positions, timer_lines, timer_positions)
        else:
            if step_lines:
                if self._ds_steps_at_once(step_lines):
                    self._place(step_positions, 2)
                else:
                    self._place(step_positions, self._ds_steps_one_by_one(chunk, step_lines, start, end))
            if timer_lines:
                if self._ds_timers_at_once(timer_lines):
                    self._place(timer_positions, len(_TIMER_LINE_TAGS))
                else:
                    self._place(timer_positions, self._ds_timers_one_by_one(timer_lines))
        return len(step_lines) + len(timer_lines)  # all read (a look-alike scan needs no mark of theirs)

    #: whether overflow messages are read with the step and timer lines around them (a host parser whose
    #: other line kinds do not count them)
    _overflows_in_spans = False

    def _engine_state(self, saved: tuple | None = None) -> tuple:
        """What reading step and timer lines at once changes (to take it back); restores ``saved`` if given."""
        rows = self.rows  # type: ignore[attr-defined]
        if saved is not None:
            (length, anchors, last_step), fields = saved[0], saved[1]
            rows.truncate(length)
            self._last_anchor.clear()  # type: ignore[attr-defined]
            self._last_anchor.update(anchors)  # type: ignore[attr-defined]
            self._last_step = last_step  # type: ignore[attr-defined]
            for name, value in fields.items():
                setattr(self, name, value)
            return saved
        fields = {name: getattr(self, name) for name in ("_ds_engine", "_ds_last_step", "_ds_timer_engine",
                                                          "_ds_last_timer", "_ds_grad_accum")}
        return (len(rows), dict(self._last_anchor), self._last_step), fields  # type: ignore[attr-defined]

    def _flush_in_span(self, chunk: Chunk, overflows: list[re.Match[str]], step_lines: list[tuple[str, ...]],
                       step_positions: list[int], timer_lines: list[tuple[str, ...]], timer_positions: list[int]) -> None:
        """The overflow messages of a span read at once: those before each step or timer line counted at it, as
        ``_on_ds_overflow`` then ``_on_ds_step``/``_on_ds_timer`` (``_flush_overflows``) count them, their rows
        added together; those after the span's last such line wait for the next one."""
        text = chunk.text
        self._overflow_total += len(overflows)
        starts = [m.start() for m in overflows]
        line_starts = [text.rfind("\n", 0, at) + 1 for at in starts]
        self._marked.update(line_starts)  # type: ignore[attr-defined]
        # The line each message is counted at (the first step or timer line after it), for all at once; the
        # messages before one line form a group.
        step_at = np.searchsorted(step_positions, starts, side="right")
        timer_at = np.searchsorted(timer_positions, starts, side="right")
        step_next = np.append(np.asarray(step_positions, np.int64), np.iinfo(np.int64).max)[step_at]
        timer_next = np.append(np.asarray(timer_positions, np.int64), np.iinfo(np.int64).max)[timer_at]
        on_step = step_next < timer_next
        line_at = np.where(on_step, step_next, timer_next)
        ends = (np.flatnonzero(np.diff(line_at)) + 1).tolist() + [len(overflows)]

        def target(group: int) -> tuple[int, int, int] | None:
            """(position, step, rank) of the line the messages of ``group`` (one of its indices) are counted at."""
            if on_step[group]:
                line = step_lines[step_at[group]]
                return step_positions[step_at[group]], int(line[_STEP]), int(line[_RANK])
            if timer_at[group] < len(timer_positions):
                line = timer_lines[timer_at[group]]
                return timer_positions[timer_at[group]], int(line[_GLOBAL] or line[_OLD_STEP]), -1
            return None

        groups: list[tuple] = []  # (target, indices of its messages)
        if self._pending_skips:
            groups.append((_first_line(step_lines, step_positions, timer_lines, timer_positions), []))
        begin = 0
        for end in ends if overflows else ():
            where = target(begin)
            if groups and groups[-1][0] == where:
                groups[-1][1].extend(range(begin, end))
            else:
                groups.append((where, list(range(begin, end))))
            begin = end
        rows = self.rows  # type: ignore[attr-defined]
        base = rows.total
        tags: list[str] = []
        steps: list[int] = []
        values: list[float] = []
        ranks: list[int] = []
        walls: list[float] = []
        targets: list[int] = []
        counts: list[int] = []
        last = self._last_flush
        for where, messages in groups:
            count = len(messages) + self._pending_skips  # those from before the span: in the first group only
            if messages:
                m = overflows[messages[-1]]
                attempted = to_float(m.group(1))
                reduced = to_float(m.group(2)) if m.group(2) else None
                scale = reduced if reduced is not None else attempted
                wall = _wall(text, line_starts[messages[-1]])  # (the line starts found above)
            else:
                scale, wall = self._pending_scale, self._pending_wall
            self._pending_wall = wall  # as _on_ds_overflow leaves it, counted or not
            if where is None:  # no logged step after them in the span: they wait
                self._pending_skips, self._pending_scale = count, scale
                break
            position, step, rank = where
            if last is not None and last[:2] == (step, rank) and last[3] >= 0:
                skips = last[4] + count  # a second count at the same step: added up (see _flush_overflows)
                for row, value in ((last[2], skips), (last[3], scale)):
                    if value is None:
                        continue
                    if row >= base:
                        values[row - base] = value
                    else:
                        rows.set_value(row, value)
                last = (*last[:4], skips)
            else:
                added = [("overflow_skips", float(count))] + ([("loss_scale", scale)] if scale is not None else [])
                for tag, value in added:
                    tags.append(tag)
                    steps.append(step)
                    values.append(value)
                    ranks.append(rank)
                    walls.append(wall)
                last = (step, rank, base + len(tags) - len(added), base + len(tags) - 1 if scale is not None else -1,
                        float(count))
                targets.append(position)
                counts.append(len(added))
            self._pending_skips, self._pending_scale = 0, None
        self._last_flush = last
        if tags:
            rank_column: int | list[int] = ranks if any(r != -1 for r in ranks) else -1
            rows.extend(rows.codes(tags), steps, values, rank=rank_column, wall=walls)
        self._place(targets, counts, before=True)

    def _ds_steps_at_once(self, lines: list[tuple[str, ...]]) -> bool:
        """Step lines of one rank and one engine with rising steps and numeric lr; False (nothing read) otherwise."""
        columns = list(zip(*lines, strict=True))
        ranks = columns[_RANK]
        if ranks.count(ranks[0]) != len(ranks):
            return False
        rank = int(ranks[0])
        steps = list(map(int, columns[_STEP]))
        previous = self._last_anchor.get(rank)  # type: ignore[attr-defined]
        if steps[0] == self._ds_last_step or (previous is not None and steps[0] < previous) or not rising(steps):
            return False  # a second engine, or a restart
        values = floats(interleave(columns[_SKIPPED], columns[_LR]))
        if values is None:
            return False
        try:
            self.rows.extend_lines(("skipped", "lr"), steps, values, parse_timestamps(columns[_STAMP]), rank)  # type: ignore[attr-defined]
        except OverflowError:
            return False
        self._ds_engine, self._ds_last_step = 0, steps[-1]
        self._last_anchor[rank] = self._last_step = steps[-1]  # type: ignore[attr-defined]
        return True

    def _ds_steps_one_by_one(self, chunk: Chunk, lines: list[tuple[str, ...]], start: int, end: int) -> list[int]:
        """The lines one by one; how many rows each gave."""
        rows = self.rows  # type: ignore[attr-defined]
        counts: list[int] = []
        last_anchor = self._last_anchor  # type: ignore[attr-defined]
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        ranks: list[int] = []
        walls: list[float] = []
        latest = None
        for index, (stamp, rank_text, step_text, skipped, lr_text, *_) in enumerate(lines):
            rank, step = int(rank_text), int(step_text)
            if step == self._ds_last_step:
                self._ds_engine += 1
                self._ds_engines = max(self._ds_engines, self._ds_engine + 1)
            else:
                self._ds_engine = 0
            self._ds_last_step = step
            if not self._ds_engine:
                previous = last_anchor.get(rank)
                if previous is not None and step < previous:
                    at = _step_line_start(chunk.text, index, start, end)
                    self.anchor(step, chunk, at, rank=rank)  # type: ignore[attr-defined]
                last_anchor[rank] = step
                latest = step
            prefix = f"engine{self._ds_engine}/" if self._ds_engine else ""
            wall = parse_timestamp(stamp)
            lr = to_float(lr_text)
            if lr is None:
                names.append(prefix + "skipped")
                values.append(float(skipped))
                steps.append(step)
                ranks.append(rank)
                walls.append(wall)
                counts.append(1)
                continue
            names.extend((prefix + "skipped", prefix + "lr"))
            values.extend((float(skipped), lr))
            steps.extend((step, step))
            ranks.extend((rank, rank))
            walls.extend((wall, wall))
            counts.append(2)
        if latest is not None:
            self._last_step = latest  # type: ignore[attr-defined]
        if names:
            rows.extend(rows.codes(names), steps, values, rank=ranks, wall=walls)
        return counts

    def _ds_timers_at_once(self, lines: list[tuple[str, ...]]) -> bool:
        """Timer lines of one engine with rising steps and numeric fields; False (nothing read) otherwise."""
        columns = list(zip(*lines, strict=True))
        if "" in columns[_GLOBAL]:
            steps = [int(new or old) for new, old in zip(columns[_GLOBAL], columns[_OLD_STEP], strict=True)]
        else:
            steps = list(map(int, columns[_GLOBAL]))
        if steps[0] == self._ds_last_timer or not rising(steps):
            return False  # a second engine logs the same steps
        values = floats(interleave(*columns[_TIMER_FIELDS]))
        if values is None:
            return False
        try:
            self.rows.extend_lines(_TIMER_LINE_TAGS, steps, values, parse_timestamps(columns[_STAMP]))  # type: ignore[attr-defined]
        except OverflowError:
            return False
        for line in reversed(lines) if "0" in columns[_EPOCH] else ():
            if line[_EPOCH] == "0" and int(line[_GLOBAL]):  # micro_step restarts every epoch; global_step does not
                self._ds_grad_accum = int(line[_MICRO]) / int(line[_GLOBAL])
                break
        self._ds_timer_engine, self._ds_last_timer = 0, steps[-1]
        return True

    def _ds_timers_one_by_one(self, lines: list[tuple[str, ...]]) -> list[int]:
        """The lines one by one; how many rows each gave."""
        rows = self.rows  # type: ignore[attr-defined]
        counts: list[int] = []
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        walls: list[float] = []
        for line in lines:
            stamp, epoch, micro, global_step, old_step = line[_STAMP], *line[_EPOCH:_TIMER_FIELDS.start]
            if global_step:
                step = int(global_step)
                if step and epoch == "0":
                    self._ds_grad_accum = int(micro) / step
            else:
                step = int(old_step)
            if step == self._ds_last_timer:
                self._ds_timer_engine += 1
            else:
                self._ds_timer_engine = 0
            self._ds_last_timer = step
            try:
                numbers = [float(v) for v in line[_TIMER_FIELDS]]
            except ValueError:
                counts.append(0)
                continue
            prefix = f"engine{self._ds_timer_engine}/" if self._ds_timer_engine else ""
            names.extend(_TIMER_LINE_TAGS if not prefix else [prefix + t for t in _TIMER_LINE_TAGS])
            values.extend(numbers)
            steps.extend((step,) * 4)
            walls.extend((parse_timestamp(stamp),) * 4)
            counts.append(4)
        if names:
            rows.extend(rows.codes(names), steps, values, wall=walls)
        return counts

    def _ds_any(self, chunk: Chunk, start: int, end: int) -> int:
        """Step and timer lines of any shape in ``chunk.text[start:end]``, found by their literal parts."""
        text = chunk.text
        rows = self.rows  # type: ignore[attr-defined]
        names: list[str] = []
        values: list[float] = []
        steps: list[int] = []
        ranks: list[int] = []
        walls: list[float] = []
        lines = 0
        positions: list[int] = []
        counts: list[int] = []
        last_anchor = self._last_anchor  # type: ignore[attr-defined]
        latest = None
        for m in DS_STEP.finditer(text, start, end):
            pos = m.start()
            rank = _rank(text, pos)
            step = int(m.group(1))
            if step == self._ds_last_step:
                self._ds_engine += 1
                self._ds_engines = max(self._ds_engines, self._ds_engine + 1)
            else:
                self._ds_engine = 0
            self._ds_last_step = step
            prefix = f"engine{self._ds_engine}/" if self._ds_engine else ""
            wall = _wall(text, text.rfind("\n", 0, pos) + 1)
            lr = to_float(m.group(3).partition(",")[0])
            if not self._ds_engine:
                previous = last_anchor.get(rank)
                if previous is not None and step < previous:
                    self.anchor(step, chunk, pos, rank=rank)  # type: ignore[attr-defined]  # a restart
                last_anchor[rank] = step
                latest = step
            count = 2 if lr is not None else 1
            names.append(prefix + "skipped")
            values.append(float(m.group(2)))
            if lr is not None:
                names.append(prefix + "lr")
                values.append(lr)
            steps.extend([step] * count)
            ranks.extend([rank] * count)
            walls.extend([wall] * count)
            positions.append(pos)
            counts.append(count)
            if self._mark_engine_lines:
                self.mark(chunk, pos)  # type: ignore[attr-defined]
            else:
                lines += 1
        if latest is not None:
            self._last_step = latest  # type: ignore[attr-defined]
        if names:
            rows.extend(rows.codes(names), steps, values, rank=ranks, wall=walls)
            self._place(positions, counts)
        names, values, steps, walls = [], [], [], []
        positions, counts = [], []
        shapes = self._ds_timer_shapes
        for m in DS_TIMER.finditer(text, start, end):
            pos = m.start()
            line = text.rfind("\n", 0, pos) + 1
            step = self._timer_step(text, line, pos)
            if step is None:
                continue
            read = shapes.read(m.group(1), self._timer_engine(step))
            if isinstance(read, tuple):
                tags, numbers = read
            else:
                tags, numbers = [t for t, _ in read], [v for _, v in read]
            if not tags:
                continue
            wall = _wall(text, line)
            names.extend(tags)
            values.extend(numbers)
            steps.extend([step] * len(tags))
            walls.extend([wall] * len(tags))
            positions.append(pos)
            counts.append(len(tags))
            lines += 1
        if names:
            rows.extend(rows.codes(names), steps, values, wall=walls)
            self._place(positions, counts)
        return lines

    def _timer_engine(self, step: int) -> str:
        """The tag prefix of a timer line: a second line at the same step is the next engine's (``engine1/`` …)."""
        self._ds_timer_engine = self._ds_timer_engine + 1 if step == self._ds_last_timer else 0
        self._ds_last_timer = step
        return f"engine{self._ds_timer_engine}/" if self._ds_timer_engine else ""

    def _on_ds_timer(self, m: re.Match[str], chunk: Chunk) -> None:
        text = chunk.text
        start = text.rfind("\n", 0, m.start()) + 1
        step = self._timer_step(text, start, m.start())
        if step is None:
            return
        pairs = timer_fields(m.group(1), self._timer_engine(step))
        if pairs:
            self.mark(chunk, m.start())  # type: ignore[attr-defined]
            self._flush_overflows(step, -1)
            self.rows.add_pairs(pairs, step, wall=_wall(text, start))  # type: ignore[attr-defined]

    def _on_ds_overflow(self, m: re.Match[str], chunk: Chunk) -> None:
        attempted = to_float(m.group(1))
        reduced = to_float(m.group(2)) if m.group(2) else None
        self._pending_scale = reduced if reduced is not None else attempted
        self._pending_skips += 1
        self._pending_wall = _wall(chunk.text, chunk.text.rfind("\n", 0, m.start()) + 1)
        self._overflow_total += 1
        self.mark(chunk, m.start())  # type: ignore[attr-defined]

    def _flush_overflows(self, step: int, rank: int = -1) -> None:
        if not self._pending_skips:
            return
        rows = self.rows  # type: ignore[attr-defined]
        last = self._last_flush
        if last is not None and last[:2] == (step, rank) and last[3] >= 0:
            # a second flush at the same step (two line kinds carry it): add up, keep the newest scale
            skips = last[4] + self._pending_skips
            rows.set_value(last[2], skips)
            if self._pending_scale is not None:
                rows.set_value(last[3], self._pending_scale)
            self._last_flush = (*last[:4], skips)
        else:
            skips = float(self._pending_skips)
            rows.add("overflow_skips", step, skips, rank=rank, wall=self._pending_wall)
            skips_row, scale_row = rows.total - 1, -1
            if self._pending_scale is not None:
                rows.add("loss_scale", step, self._pending_scale, rank=rank, wall=self._pending_wall)
                scale_row = rows.total - 1
            self._last_flush = (step, rank, skips_row, scale_row, skips)
        self._pending_skips = 0
        self._pending_scale = None

    def _flush_at_end(self) -> None:
        """Overflow messages after the last logged step: counted at it."""
        if self._pending_skips:
            self._overflow_at_end += self._pending_skips
            step = self.current_step(default=0)  # type: ignore[attr-defined]
            last = self._last_flush
            self._flush_overflows(step, last[1] if last is not None and last[0] == step else -1)

    _DS_STATE = ("_ds_last_step", "_ds_engine", "_ds_engines", "_ds_last_timer", "_ds_timer_engine", "_ds_grad_accum",
                 "_pending_scale", "_pending_skips", "_pending_wall", "_overflow_total", "_overflow_at_end")

    def _ds_snapshot(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in self._DS_STATE}
        state["_last_flush"] = list(self._last_flush) if self._last_flush is not None else None
        return state

    def _ds_restore(self, state: dict[str, Any]) -> None:
        for name in self._DS_STATE:
            setattr(self, name, state[name])
        last = state["_last_flush"]
        self._last_flush = tuple(last) if last is not None else None  # type: ignore[assignment]

    def _ds_absorb(self, other: DeepSpeedEngineLines, offset: int) -> None:
        """The engine lines of the next file (its rows were appended after row ``offset``): overflow messages
        left at the end of this file are counted at its last step first, as a file's end would."""
        self._overflow_total += other._overflow_total
        self._overflow_at_end += other._overflow_at_end
        self._ds_engines = max(self._ds_engines, other._ds_engines)
        if other._ds_grad_accum is not None:
            self._ds_grad_accum = other._ds_grad_accum
        self._pending_scale, self._pending_skips = other._pending_scale, other._pending_skips
        self._pending_wall = other._pending_wall
        last = other._last_flush
        self._last_flush = None if last is None else (last[0], last[1], last[2] + offset,
                                                      last[3] + offset if last[3] >= 0 else -1, last[4])

    def _finish_deepspeed(self) -> list[str]:
        notes = []
        self._flush_at_end()
        if self._overflow_total:
            tail = (
                f" ({self._overflow_at_end} after the last logged step, counted at it)" if self._overflow_at_end else ""
            )
            notes.append(
                f"{self._overflow_total:,} fp16 overflow (skipped step) message(s): each is counted at the next "
                f"logged step in 'overflow_skips', with the loss scale it left in 'loss_scale'{tail}"
            )
        if self._ds_engines > 1:
            notes.append(
                f"{self._ds_engines} DeepSpeed engines log the same steps (e.g. RLHF actor and critic): "
                "the second one's tags are prefixed 'engine1/'"
            )
        return notes


class DeepSpeedParser(DeepSpeedEngineLines, GenericRules, TextParser):
    """DeepSpeed engine lines, DeepSpeed-Chat lines, and the generic shapes scripts add."""

    family = "deepspeed"
    lookalike = re.compile(
        r"step=\d+, skipped=|OVERFLOW!|Overflow detected|^ppl:|^chosen|^epoch: \d+\|step:|^average reward score"
        r"|^Model Parameters:|^\|E2E latency",
        re.M,
    )
    #: A literal of each look-alike above: a chunk without any of them has no look-alike (an ``in`` test is
    #: several times quicker than the anchored alternatives).
    _lookalike_words = ("step=", "OVERFLOW!", "Overflow detected", "ppl:", "chosen", "epoch: ",
                        "average reward score", "Model Parameters:", "|E2E latency")

    def may_have_lookalikes(self, chunk: Chunk) -> bool:
        return any(word in chunk.text for word in self._lookalike_words)

    patterns = (
        *DeepSpeedEngineLines.deepspeed_patterns,
        (DS_BREAKDOWN, "ds_breakdown"),
        (EVAL_HEADER, "eval_header"),
        (BEGIN_EPOCH, "begin_epoch"),
        (PPL, "ppl"),
        (CHOSEN, "chosen"),
        (CHOSEN_LAST, "chosen_last"),
        (EPOCH_LOSS, "epoch_loss"),
        (PPO, "ppo"),
        (REWARD, "reward"),
        (E2E, "e2e"),
        (THROUGHPUT, "throughput"),
        *GenericRules.generic_patterns,
    )
    _other_patterns = tuple(pair for pair in patterns if pair[1] not in ("ds_step", "ds_timer", "ds_overflow"))

    #: read every line on its own (the engine's step and timer lines are read span by span otherwise); for tests
    line_by_line = False
    _mark_engine_lines = True  # the look-alike scan needs to know them read
    _overflows_in_spans = True

    def feed(self, chunk: Chunk) -> None:
        """Lines of the kinds that are not the engine's step and timer lines (overflow messages, evaluations,
        RLHF steps …) are read one by one, in order; the step and timer lines between them span by span,
        each span at once (their rows put back in line order): the same rows as every line on its own."""
        if self.line_by_line:
            super().feed(chunk)
            return
        text = chunk.text
        others = list(matches_by_line(text, tagged_matches(text, self._other_patterns, lines=line_index(chunk))))
        if self._chunk_at_once(chunk, others):
            return
        start = 0
        ranges: list[tuple[int, int, re.Pattern[str]]] = []
        for line, matches in others:
            self._engine_lines(chunk, start, line, ranges)
            end = text.find("\n", line) + 1 or len(text)
            self._one_by_one(chunk, line, end, matches)
            ranges.append((line, end, self.lookalike))
            start = end
        self._engine_lines(chunk, start, len(text), ranges)
        self.scan_ranges = ranges

    def _chunk_at_once(self, chunk: Chunk, others: list[tuple[int, list[tuple[int, int, str, re.Match[str]]]]]
                       ) -> bool:
        """Every step and timer line and overflow message of the chunk at once, and the lines of other kinds
        one by one, each with the step and gradient accumulation of its place (the only engine state those
        kinds read; they change none): when all engine lines have the usual shape and the other lines only
        such kinds. False (nothing read) otherwise: the chunk is read span by span."""
        if any(kind not in _READERS_OF_THE_STEP for _, group in others for _, _, kind, _ in group):
            return False
        text = chunk.text
        first_row = len(self.rows)
        step_before, accum_before = self._last_step, self._ds_grad_accum
        self._row_positions = []
        read, _ = self._ds_span(chunk, 0, len(text), strict=True)
        if read < 0:
            self._row_positions = None
            return False
        self.parsed_lines += read
        step_end, accum_end = self._last_step, self._ds_grad_accum
        step_positions, step_lines, timer_positions, timer_lines = self._read_at_once
        steps = list(map(int, map(itemgetter(_STEP), step_lines)))
        accums = [(pos, int(line[_MICRO]) / int(line[_GLOBAL])) for pos, line in zip(timer_positions, timer_lines,
                                                                                         strict=True)
                  if line[_EPOCH] == "0" and line[_GLOBAL] and int(line[_GLOBAL])
                  ] if "0" in map(itemgetter(_EPOCH), timer_lines) else []  # (epoch 0 only: mostly none)
        accum_at = [pos for pos, _ in accums]
        handlers = self._handlers
        counts: list[int] = []
        for line, matches in others:
            before = bisect_right(step_positions, line)
            self._last_step = steps[before - 1] if before else step_before
            before = bisect_right(accum_at, line)
            self._ds_grad_accum = accums[before - 1][1] if before else accum_before
            rows = self.rows.total
            for _, _, kind, m in matches:  # in order, and no engine line among them (they were all read)
                handlers[kind](m, chunk)
            counts.append(self.rows.total - rows)
        self._place([line for line, _ in others], counts)
        self._last_step, self._ds_grad_accum = step_end, accum_end
        self._in_line_order(first_row)
        self.scan_ranges = [(line, text.find("\n", line) + 1 or len(text), self.lookalike) for line, _ in others]
        self.scan_ranges.append((0, len(text), _UNUSUAL_LOOKALIKES))
        return True

    def _one_by_one(self, chunk: Chunk, start: int, end: int,
                    others: list[tuple[int, int, str, re.Match[str]]] = (),  # type: ignore[assignment]
                    engine: bool = True) -> None:
        """The lines of ``text[start:end]``: their matches of the other kinds (found already) and of the
        engine's (unless ``engine`` is False), in order, as the line-by-line reading handles them."""
        text = chunk.text
        kinds = len(self.deepspeed_patterns)  # first in ``patterns``: the others' indices come after
        found = [(m.start(), index, kind, m) for index, (pattern, kind) in enumerate(self.deepspeed_patterns)
                 for m in pattern.finditer(text, start, end)] if engine else []
        found += [(pos, index + kinds, kind, m) for pos, index, kind, m in others]
        handlers = self._handlers
        for _, _, kind, m in sorted(found, key=lambda match: match[:2]):
            handlers[kind](m, chunk)

    def _engine_lines(self, chunk: Chunk, start: int, end: int, ranges: list) -> None:
        """The step and timer lines and overflow messages of ``text[start:end]`` (no other kind of line there):
        at once, or line by line when some have another shape."""
        if start >= end:
            return
        rows = self.rows
        first_row = len(rows)
        self._row_positions = []
        read, usual = self._ds_span(chunk, start, end)
        if read < 0:
            self._row_positions = None
            self._one_by_one(chunk, start, end)
            ranges.append((start, end, self.lookalike))
            return
        self.parsed_lines += read
        self._in_line_order(first_row)
        if not usual:
            ranges.append((start, end, self.lookalike))
        elif any(chunk.text.find(word, start, end) >= 0 for word in self._unusual_words):
            ranges.append((start, end, _UNUSUAL_LOOKALIKES))

    _unusual_words = ("OVERFLOW!", "Overflow detected", "ppl:", "chosen", "epoch: ", "average reward score",
                      "Model Parameters:", "|E2E latency")

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._init_deepspeed()
        self._init_generic()
        self._eval_epoch: int | None = None
        self._epochs_begun = 0
        self._epoch_batches: int | None = None
        self._batch_kind = "Micro"
        self._ppo_step: int | None = None
        self._ppo_batches: int | None = None
        self._ppo_inner = 1
        self._eval_rows = 0
        self._bad_breakdown = [0]
        self._breakdown_tags: dict[str, str] = {}
        # the four numbers of each per-micro-batch throughput line, a column each
        self._throughput: dict[str, array] = {name: array("d") for name in _THROUGHPUT}

    # -- DeepSpeed-Chat evaluation ---------------------------------------------------------------
    def _on_eval_header(self, m: re.Match[str], chunk: Chunk) -> None:
        self._eval_epoch = int(m.group(2))
        self.mark(chunk, m.start())

    def _on_begin_epoch(self, m: re.Match[str], chunk: Chunk) -> None:
        self._epochs_begun += 1
        self._batch_kind = m.group(3)
        if m.group(3) == "Micro":
            self._epoch_batches = int(m.group(4))
        else:
            self._ppo_batches = int(m.group(4))
        self.mark(chunk, m.start())

    def _eval_step(self) -> int:
        """Step of an evaluation: epochs completed × steps per epoch when known, else the last logged step."""
        # DeepSpeed-Chat evaluates before training and after each epoch: after "Beginning of Epoch k"
        # lines, k epochs are done when the next evaluation comes.
        if self._epoch_batches and self._ds_grad_accum:
            return round(self._epochs_begun * self._epoch_batches / self._ds_grad_accum)
        return self.current_step(default=0) if self._epochs_begun else 0

    def _eval(self, pairs: list[tuple[str, float]], chunk: Chunk, pos: int) -> None:
        self.mark(chunk, pos)
        epoch = float(self._eval_epoch) if self._eval_epoch is not None else NAN
        self._eval_rows += 1
        self.rows.add_pairs(pairs, self._eval_step(), epoch=epoch)

    def _on_ds_breakdown(self, m: re.Match[str], chunk: Chunk) -> None:
        """``wall_clock_breakdown``'s ``[Rank 0] time (ms) | fwd: … | bwd: … | bwd_allreduce: … | step: …``: tags
        ``time (ms)/<timer>`` at the last step line's step (timers before the first step are set-up, left out)."""
        step = self._last_step
        if step is None:
            return
        names: list[str] = []
        values: list[float] = []
        count = fields_into(m.group(1), names, values, self._bad_breakdown, self._breakdown_tags, "time (ms)/")
        if count:
            text = chunk.text
            rank = _rank(text, m.start())
            self.rows.add_pairs(list(zip(names, values, strict=True)), step, rank=rank,
                                wall=_wall(text, text.rfind("\n", 0, m.start()) + 1))

    def _on_ppl(self, m: re.Match[str], chunk: Chunk) -> None:
        self._eval([("eval_ppl", float(m.group(1)))], chunk, m.start())

    def _on_chosen(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = [("eval_chosen", float(m.group(1))), ("eval_rejected", float(m.group(2)))]
        if m.group(3) is not None:
            pairs.append(("eval_loss", float(m.group(3))))
        self._eval(pairs, chunk, m.start())

    def _on_chosen_last(self, m: re.Match[str], chunk: Chunk) -> None:
        self._eval([("eval_chosen_last_scores", float(m.group(1))), ("eval_acc", float(m.group(2)))], chunk, m.start())

    def _on_epoch_loss(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self.rows.add("epoch_loss", self._eval_step(), float(m.group(3)), epoch=float(m.group(1)))

    # -- DeepSpeed-Chat RLHF -----------------------------------------------------------------------
    def _on_ppo(self, m: re.Match[str], chunk: Chunk) -> None:
        epoch, inner = int(m.group(1)), int(m.group(3))
        step = epoch * self._ppo_batches + int(m.group(2)) if self._ppo_batches else int(m.group(2))
        self._ppo_inner = max(self._ppo_inner, inner)
        pairs = []
        for segment in m.group(4).split("|"):
            name, _, value = segment.partition(":")
            number = to_float(value)
            if name.strip() and number is not None:
                pairs.append((name.strip(), number))
        self.mark(chunk, m.start())
        self._ppo_step = step
        self._flush_overflows(step)
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(pairs, step, epoch=float(epoch))

    def _on_reward(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self.rows.add("average reward score", self.current_step(), float(m.group(1)))

    def _on_e2e(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = [(name.strip(), float(value)) for name, value in _EQ_PAIR.findall("E2E latency=" + m.group(1))]
        if pairs:
            self.mark(chunk, m.start())
            self.rows.add_pairs(pairs, self.current_step())

    def _on_throughput(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        for column, value in zip(self._throughput.values(), m.groups(), strict=True):
            column.append(float(value))

    _STATE = ("_eval_epoch", "_epochs_begun", "_epoch_batches", "_batch_kind", "_ppo_step", "_ppo_batches",
              "_ppo_inner", "_eval_rows")

    _throughput_before = 0  # throughput lines of the parts before this one

    def snapshot(self) -> dict[str, Any]:
        state = super().snapshot()
        state.update(deepspeed=self._ds_snapshot(), generic=self._generic_snapshot(),
                     chat={name: getattr(self, name) for name in self._STATE},
                     throughput=self._throughput_before + len(self._throughput["latency"]))
        return state

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self._ds_restore(state["deepspeed"])
        self._generic_restore(state["generic"])
        for name in self._STATE:
            setattr(self, name, state["chat"][name])
        self._throughput_before = state["throughput"]

    def finish_changes_rows(self) -> bool:
        return bool(self._pending_skips) or self._throughput_before + len(self._throughput["latency"]) > 0

    def aux_columns(self) -> dict[str, array]:
        return self._throughput

    def load_aux(self, columns: dict[str, np.ndarray]) -> None:
        self._throughput_before = 0
        for name, column in columns.items():
            self._throughput[name] = array("d", np.asarray(column, np.float64).tobytes())

    def absorb(self, other: TextParser) -> None:
        assert isinstance(other, DeepSpeedParser)
        self._flush_at_end()
        offset = self.rows.total
        super().absorb(other)
        self._ds_absorb(other, offset)
        self._generic_absorb(other)
        for name, column in other._throughput.items():
            self._throughput[name].extend(column)
        self._eval_rows += other._eval_rows
        self._ppo_inner = max(self._ppo_inner, other._ppo_inner)
        self._epochs_begun += other._epochs_begun
        for name in ("_epoch_batches", "_ppo_batches", "_eval_epoch", "_ppo_step"):
            if getattr(other, name) is not None:
                setattr(self, name, getattr(other, name))

    def finish(self) -> None:
        notes = self._finish_deepspeed()
        throughput = list(zip(*self._throughput.values(), strict=True))
        if throughput:
            accum = self._ds_grad_accum or 1.0
            by_step: dict[int, tuple[float, ...]] = {}
            for index, values in enumerate(throughput, start=1):
                by_step[math.ceil(index / accum - 1e-9)] = values  # the last micro-batch of a step wins
            for step, (latency, tflops, samples, per_seq) in by_step.items():
                self.rows.add_pairs(
                    [("Latency", latency), ("TFLOPs", tflops), ("Samples/sec", samples), ("Time/seq", per_seq)], step
                )
            source = "the timer lines" if self._ds_grad_accum else "assumed, no timer lines"
            notes.append(
                f"{len(throughput):,} per-micro-batch throughput line(s) ('Model Parameters: …') carry no step: "
                f"step = ceil(line count / gradient accumulation {accum:g} ({source})); the last micro-batch of "
                f"each step is kept ({len(by_step):,} step(s))"
            )
        if self._eval_rows:
            how = (
                "epochs completed × steps per epoch ('Total Micro Batches' / gradient accumulation)"
                if self._epoch_batches and self._ds_grad_accum
                else "the last logged DeepSpeed step"
            )
            notes.append(f"{self._eval_rows} DeepSpeed-Chat evaluation line(s) carry no step: keyed by {how}")
        if self._ppo_batches:
            notes.append(
                f"RLHF step lines: step = epoch × {self._ppo_batches} generation batches + the line's step; "
                "reward and latency lines are keyed by the step line before them"
            )
        if self._ppo_inner > 1:
            notes.append(f"{self._ppo_inner} PPO epochs per step: the last one's losses are kept")
        self.notes[:0] = notes + self._generic_notes()


#: The kinds of lines (DeepSpeed-Chat's and the generic ones) that read no engine state but the step and the
#: gradient accumulation, and change none: no anchor, no overflow count (see ``DeepSpeedParser._chunk_at_once``).
_READERS_OF_THE_STEP = frozenset({"eval_header", "begin_epoch", "ppl", "chosen", "chosen_last", "epoch_loss", "reward",
                                  "e2e", "throughput", "eval_meter", "summary", "pair_line", "ds_breakdown"})


#: The look-alikes of DeepSpeedParser but the step line's: where every step line was read at once (each
#: ", skipped=" of the span is in a step line that was), only these can be left unread. Two patterns, each
#: of which the engine finds quickly (a literal start, or a line start: see ``matches_of``).
_UNUSUAL_LOOKALIKES = (
    re.compile(r"OVERFLOW!|Overflow detected"),
    re.compile(r"^(?:ppl:|chosen|epoch: \d+\|step:|average reward score|Model Parameters:|\|E2E latency)", re.M),
)

_LAUNCHER = ("deepspeed.launcher.launch", "[launch.py:", "DeepSpeed info: version=")


def detect_deepspeed(window: str) -> bool:
    if DS_STEP.search(window) or DS_OVERFLOW.search(window) or PPO.search(window):
        return True
    if EVAL_HEADER.search(window) or CHOSEN_LAST.search(window):
        return True
    return any(marker in window for marker in _LAUNCHER)


class DeepSpeedReader(TextReader):
    name = "deepspeed"
    cache_version = 21  # 4: the generic key-value lines it reads too (blank-separated pairs, units in names); 5: the
    #                    generic evaluation meters' averages and summaries; 6: the generic key-value lines' changes;
    #                    7: 'max mem' named whole; 8: segments of several pairs, repeated names given their phase;
    #                    9: Swin Transformer's meters; 10: epoch lines printed several times an epoch;
    #                    11: 'loss at step N: value' lines; 12: pair lines with blanks between pairs;
    #                    13: COCO evaluation summaries; 14: an 'iteration' counting epochs;
    #                    15: names and numbers with blanks between under an epoch header; 16: banner blocks' phase;
    #                    17: generic epoch lines whose number of epochs changed begin a session; 18: generic
    #                    'Episode N | …' lines; 19: generic 'step N train loss: …' lines, units of time in names;
    #                    20: generic '[Epoch 1/60]' headers, names aligned by blanks; 21: generic epoch counters
    description = "DeepSpeed / DeepSpeed-Chat console logs (step=…, skipped=…; OVERFLOW; ppl/reward/PPO lines)"
    parser = DeepSpeedParser

    def detect(self, window: str) -> bool:
        return detect_deepspeed(window)
