"""The logger tables of Stable-Baselines3 (and of OpenAI Baselines and stable-baselines before it), printed to a
console or written to ``log.txt`` by ``configure(folder, ["stdout", "log", …])``::

    ------------------------------------------
    | rollout/                |              |
    |    ep_len_mean          | 21.7         |
    |    ep_rew_mean          | 21.7         |
    | time/                   |              |
    |    fps                  | 1437         |
    |    iterations           | 2            |
    |    time_elapsed         | 0            |
    |    total_timesteps      | 512          |
    | train/                  |              |
    |    approx_kl            | 0.0051524946 |
    |    loss                 | 30.7         |
    ------------------------------------------

SB3 groups a key's section (``rollout/``) on a row of its own and indents its keys under it; Baselines prints
the whole key (``misc/total_timesteps``). Decisions:

* **A table is one dump of the logger; step = its total timesteps** (``time/total_timesteps``, Baselines'
  ``total_timesteps`` or ``misc/total_timesteps``): the environment steps so far, SB3's own x-axis (its
  TensorBoard output and ``progress.csv`` beside the log use it). A table without one is at its
  ``iterations`` / ``n_updates`` / ``episodes`` counter, else at its number (from 0), as a note says.
* Each other numeric row is a tag under its whole key (``rollout/ep_rew_mean``), the value as printed (floats
  with three significant digits: ``progress.csv`` holds them whole). The counters (iterations, updates) are
  where a table is, not how training went: not tags. ``time_elapsed`` (seconds since the start) is the
  points' wall time, counted from 0.
* Text values are skipped and counted; keys SB3 cut short (``...``) are kept as printed and counted. A step
  that goes back (a second ``learn()`` that starts its count over, another run appended to the log) begins a
  new session, placed after the one before.
* Whole tables are read a chunk at once with numpy (:meth:`SB3ConsoleParser._feed_at_once`); a table cut by
  a chunk's edge, and a chunk with a line the row-by-row reading reads otherwise, row by row.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._keys import key_codes
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._shaped import stretches
from tanalyze.readers.values import to_float

__all__ = ["SB3ConsoleParser", "SB3ConsoleReader", "detect_sb3_console"]

#: a table's rule (dashes only) or a row: its indent, key and value (with the blanks after them)
_LINE = re.compile(r"\n(?:(-{5,}+)|\| ( *+)([^|\n]*+)\| ([^|\n]*+)\|)[ \t]*+(?=\n)")
_NUMBER_START = r"[-+]?(?:\d|\.\d|nan|inf)"  # how a value that looks like a number begins
_NUMERIC_ROW = rf"\| *[A-Za-z_][^|\n]*\| *{_NUMBER_START}"
_LOOKS_NUMERIC = re.compile(_NUMBER_START)
TABLE = re.compile(r"^-{5,}[ \t]*\n(?:\| [^|\n]+\| [^|\n]*\|[ \t]*\n){2,}-{5,}[ \t]*$", re.M)
#: a table's step, by the last part of a key, best first
_STEP_KEYS = ("total_timesteps", "timesteps_total", "num_timesteps", "total_env_steps", "totalenvsteps",
              "timesteps", "total_steps", "steps")
#: counters a table without timesteps is placed by, best first; never tags (where a table is, not how it went)
_COUNTER_KEYS = ("iterations", "n_updates", "nupdates", "updates", "iteration", "itr", "serial_timesteps")
_PLACES = (*_STEP_KEYS, *_COUNTER_KEYS[:3], "episodes")
_CLOCK_KEYS = frozenset({"time_elapsed"})
_TAG, _COUNTER, _CLOCK = range(3)


@functools.lru_cache(maxsize=4096)
def _role(key: str) -> tuple[int, int]:
    """What a key is to its table, by its last part: its place among the keys that may give the table's step
    (``len(_PLACES)``: none) and whether it is a tag, a counter or the clock."""
    last = key.rsplit("/", 1)[-1].lower()
    place = _PLACES.index(last) if last in _PLACES else len(_PLACES)
    kind = _CLOCK if last in _CLOCK_KEYS else _COUNTER if last in _STEP_KEYS or last in _COUNTER_KEYS else _TAG
    return place, kind


class SB3ConsoleParser(FindallParser):
    """Reads the whole tables of a chunk at once (:meth:`_feed_at_once`); a chunk it cannot take, and the rows
    of a table cut by the chunk's edges, row by row: its rules and rows found by one ``findall``, a table's rows
    kept until its closing rule."""

    family = "Stable-Baselines3 logger"
    lookalike = re.compile(rf"^{_NUMERIC_ROW}", re.M)
    line = _LINE
    lookalike_line = re.compile(rf"\n{_NUMERIC_ROW}")
    state_fields = {"_section": "last", "_pending": "last", "_tables": "sum", "_unnumbered": "sum",
                    "_step_key": "last", "_skipped": "sum", "_cut_keys": "sum"}
    #: read every chunk row by row; for tests
    line_by_line = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._section = ""
        self._pending: list[list] = []  # the rows of the table being read: [key, value or None]
        self._tables = 0
        self._unnumbered = 0  # tables placed by their number: no step or counter row
        self._step_key: str | None = None
        self._skipped = 0  # values that are no numbers
        self._cut_keys = 0

    def feed(self, chunk: Chunk) -> None:
        if self.line_by_line or not self._feed_at_once(chunk):
            super().feed(chunk)

    # -- row by row ------------------------------------------------------------------------------------------
    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        numeric = 0
        for index, (rule, indent, key, value) in enumerate(found):
            if rule:
                self._rule(chunk, lambda index=index: self.match_start(text, index))
            else:
                numeric += self._row(bool(indent), key.rstrip(), value.rstrip())
        return len(found), numeric

    def _rule(self, chunk: Chunk | None, where: Callable[[], int]) -> None:
        """A rule: it closes the table being read (``where`` tells the rule's place in ``chunk``)."""
        if self._pending:
            self._close(chunk, where)
        self._section = ""

    def _row(self, indented: bool, key: str, value: str) -> bool:
        """A row (key and value without the blanks after them); whether its value is a number."""
        if not value and not indented and key.endswith("/"):
            self._section = key  # SB3's section row: its keys follow, indented
            return False
        number = to_float(value) if value else None
        self._pending.append([self._section + key if indented and self._section else key, number])
        return number is not None

    def _close(self, chunk: Chunk | None, where: Callable[[], int]) -> None:
        """The rows of a table whose closing rule was read, at its step."""
        rows, self._pending = self._pending, []
        pairs: list[tuple[str, float]] = []
        best, step_key, step = len(_PLACES), None, None
        clock = float("nan")
        for key, value in rows:
            place, kind = _role(key)
            self._cut_keys += key.endswith("...")
            if value is None:
                self._skipped += 1
                continue
            if place < best and math.isfinite(value) and value >= 0:
                best, step_key, step = place, key, int(value)
            if kind == _TAG:
                pairs.append((key, value))
            elif kind == _CLOCK:
                clock = value
        if step is None:
            step, self._unnumbered = self._tables, self._unnumbered + 1
        else:
            self._step_key = step_key
            if _role(step_key)[1] == _TAG:  # (a table placed by its episodes: not a tag of its own then)
                pairs = [pair for pair in pairs if pair[0] != step_key]
        self._tables += 1
        if chunk is not None and self._last_step is not None and step < self._last_step:
            self.anchor(step, chunk, where())  # (a step that goes back is said at the table's closing rule)
        else:
            self.anchor(step, None, 0)
        self.rows.add_pairs(pairs, step, wall=clock)

    # -- whole tables at once --------------------------------------------------------------------------------
    def _feed_at_once(self, chunk: Chunk) -> bool:
        """Read the chunk with numpy: its lines told apart by their first characters, each row cut at its three
        ``|``, keys told apart by their bytes (:func:`._keys.key_codes`), values parsed in bulk, each table's step
        and rows found over all its rows at once; the rows before the first rule and after the last one go row by
        row. False, having read nothing, when a line could be read otherwise than row by row reads it (a tab, a
        value with a blank inside, a line of dashes that is no rule, a value that looks like a number but is not)."""
        cut = _cut_rows(chunk.text)
        if cut is None:
            return False
        starts, rules, rows = cut
        before, inside, after = rows.split(rules)
        for row in before.rows():
            self._row(*row)
        self._rule(chunk, lambda: int(starts[rules[0]]))
        if len(inside.lines):
            self._tables_at_once(chunk, starts, rules, inside)
        self._section = ""
        for row in after.rows():
            self._row(*row)
        self.parsed_lines += len(rules) + len(rows.lines)
        self.scan_ranges = []  # every look-alike line was read
        return True

    def _tables_at_once(self, chunk: Chunk, starts: np.ndarray, rules: np.ndarray, rows: _Rows) -> None:
        """The rows of the whole tables between the chunk's first and last rule."""
        table = np.searchsorted(rules, rows.lines) - 1  # (the rule that opens each row's table)
        opening, table = np.unique(table, return_inverse=True)
        closing = starts[rules[opening + 1]]
        names, prefix = rows.names(table)
        data = np.flatnonzero(~rows.is_section)
        name, value, has_value, row_table = names[data], rows.values[data], rows.has_value[data], table[data]
        unique = sorted(set(name.tolist()))
        labels = dict(zip(unique, rows.name_texts(names, prefix, unique), strict=True))
        roles = {code: _role(labels[code]) for code in unique}
        place = np.array([roles[code][0] for code in name.tolist()], dtype=np.int64)
        kind = np.array([roles[code][1] for code in name.tolist()], dtype=np.int64)
        self._cut_keys += int(np.count_nonzero(rows.cut_keys[data]))
        self._skipped += int(np.count_nonzero(~has_value))
        count = len(opening)
        # each table's step: the value of its best-placed key (the first such row)
        candidate = np.flatnonzero(has_value & np.isfinite(value) & (value >= 0) & (place < len(_PLACES)))
        order = candidate[np.lexsort((candidate, place[candidate], row_table[candidate]))]
        tables_with, first = np.unique(row_table[order], return_index=True)
        chosen = order[first]
        steps = self._tables + np.arange(count, dtype=np.int64)  # (a table without one: its number)
        steps[tables_with] = value[chosen].astype(np.int64)
        step_name = np.full(count, -1, dtype=np.int64)
        step_name[tables_with] = name[chosen]
        self._unnumbered += count - len(tables_with)
        if len(tables_with):
            self._step_key = labels[int(step_name[tables_with[-1]])]
        clocks = np.flatnonzero(has_value & (kind == _CLOCK))
        wall = np.full(count, np.nan)
        last_clock = clocks[::-1][np.unique(row_table[clocks][::-1], return_index=True)[1]]  # (the last of each)
        wall[row_table[last_clock]] = value[last_clock]
        previous = self._last_step
        for k in np.flatnonzero(steps < np.concatenate(([previous if previous is not None else -1], steps[:-1]))):
            self.anchor(int(steps[k - 1]) if k else int(previous), None, 0)
            self.anchor(int(steps[k]), chunk, int(closing[k]))
        self.anchor(int(steps[-1]), None, 0)
        self._tables += count
        kept = np.flatnonzero(has_value & (kind == _TAG) & (name != step_name[row_table]))
        codes = np.array(self.rows.codes([labels[code] for code in unique]), dtype=np.int32)
        where = np.searchsorted(np.array(unique), name[kept])
        walls = wall[row_table[kept]]
        self.rows.extend(codes[where], steps[row_table[kept]], value[kept],
                         wall=walls if not np.isnan(walls).all() else float("nan"))

    def finish(self) -> None:
        if self._pending:  # a last table without its closing rule (the job stopped while it was written)
            self._close(None, lambda: 0)
            self.notes.append("the last table has no closing rule: read as far as it was written")
        step = f"{self._step_key!r} (the environment steps so far)" if self._step_key else "its number (from 0)"
        notes = [f"{self._tables} logger table(s) (Stable-Baselines3 / Baselines): step = {step}; counters "
                 "(iterations, updates) are not tags, 'time_elapsed' is the wall time (seconds from the start)"]
        self.count_note(self._unnumbered, "table(s) without timesteps or a counter placed by their number")
        self.count_note(self._skipped, "value(s) that are no numbers skipped")
        self.count_note(self._cut_keys, "key(s) cut short by the logger ('...') kept as printed")
        self.notes[:0] = notes


@dataclass(frozen=True)
class _Rows:
    """Rows of a chunk cut at their ``|`` (one entry per row in each array): the line, the key (its place, its
    indent, a code per distinct key), the value (its place; parsed, when it is a number), whether the row is a
    section's, whether its key was cut short."""

    text: str
    lines: np.ndarray
    key_start: np.ndarray
    key_end: np.ndarray
    indent: np.ndarray
    value_start: np.ndarray
    value_end: np.ndarray
    values: np.ndarray
    has_value: np.ndarray
    is_section: np.ndarray
    cut_keys: np.ndarray
    key_code: np.ndarray

    def subset(self, which: np.ndarray) -> _Rows:
        return _Rows(self.text, *(getattr(self, f.name)[which] for f in fields(self)[1:]))

    def split(self, rules: np.ndarray) -> tuple[_Rows, _Rows, _Rows]:
        """The rows before the first rule, between it and the last, and after the last."""
        before, after = self.lines < rules[0], self.lines > rules[-1]
        return self.subset(before), self.subset(~before & ~after), self.subset(after)

    def rows(self) -> Iterator[tuple[bool, str, str]]:
        """Each row as the row-by-row reading takes it: indented, key, value."""
        for indent, a, b, c, d in zip(self.indent.tolist(), self.key_start.tolist(), self.key_end.tolist(),
                                      self.value_start.tolist(), self.value_end.tolist(), strict=True):
            yield indent > 0, self.text[a:b], self.text[c:d]

    def names(self, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A code per row's name (its section's key before an indented key of a section in its table), and the
        row of each row's section (-1: none)."""
        position = np.arange(len(self.lines))
        section = np.maximum.accumulate(np.where(self.is_section, position, -1))
        under = (section >= 0) & (self.indent > 0)
        under[under] &= table[section[under]] == table[under]
        prefix = np.where(under, section, -1)
        prefix_code = np.where(under, self.key_code[np.maximum(prefix, 0)], -1) + 1
        return pd.factorize(prefix_code * (int(self.key_code.max()) + 1) + self.key_code)[0], prefix

    def name_texts(self, names: np.ndarray, prefix: np.ndarray, unique: list[int]) -> list[str]:
        """The name of each of ``unique`` (name codes), from its first row."""
        first = np.unique(names, return_index=True)[1][unique]
        out = []
        for row, above in zip(first.tolist(), prefix[first].tolist(), strict=True):
            head = self.text[self.key_start[above]:self.key_end[above]] if above >= 0 else ""
            out.append(head + self.text[self.key_start[row]:self.key_end[row]])
        return out


def _cut_rows(text: str) -> tuple[np.ndarray, np.ndarray, _Rows] | None:
    """The chunk's line starts, its rule lines and its rows; None where it must be read row by row (see
    :meth:`SB3ConsoleParser._feed_at_once`), or it has fewer than two rules."""
    if not text.endswith("\n") or not text.isascii():
        return None
    chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    if np.count_nonzero(chars < 32) != np.count_nonzero(chars == 10):
        return None  # a tab, a carriage return … (row by row, they are blanks of their own)
    ends = np.flatnonzero(chars == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts
    first = chars[starts]
    dashed = np.flatnonzero((first == 45) & (lengths >= 5))
    all_dashes = np.logical_and.reduceat(chars[stretches(starts[dashed], ends[dashed])] == 45,
                                         np.cumsum(lengths[dashed]) - lengths[dashed]) if len(dashed) else dashed
    five = np.logical_and.reduceat(chars[stretches(starts[dashed], starts[dashed] + 5)] == 45,
                                   np.arange(len(dashed)) * 5) if len(dashed) else dashed
    if (five & ~all_dashes).any():
        return None  # five dashes and more text: no rule, a line read otherwise row by row
    rules = dashed[all_dashes.astype(bool)] if len(dashed) else dashed
    lines = np.flatnonzero(first == 124)
    if len(rules) < 2:
        return None
    begin, end = starts[lines], ends[lines]
    pipes = np.flatnonzero(chars == 124)
    at = np.searchsorted(pipes, begin)  # (each row's first pipe)
    middle = pipes[np.minimum(at + 1, len(pipes) - 1)]
    if not ((np.searchsorted(pipes, end) - at == 3) & (chars[end - 1] == 124) & (chars[begin + 1] == 32)
            & (middle + 1 < end - 1) & (chars[middle + 1] == 32)).all():
        return None
    # where the words of the rows begin and end (blanks and pipes between them): each key's and value's edges
    apart = (chars == 32) | (chars == 124) | (chars == 10)
    word_starts = np.append(np.flatnonzero(apart[:-1] & ~apart[1:]) + 1, len(chars))  # (and the text's end)
    word_ends = np.flatnonzero(~apart[:-1] & apart[1:]) + 1
    key_start = word_starts[np.searchsorted(word_starts, begin + 2)]
    key_end = word_ends[np.searchsorted(word_ends, middle, side="right") - 1]
    first_value_word = np.searchsorted(word_starts, middle + 2)
    value_start = word_starts[first_value_word]
    value_end = word_ends[np.searchsorted(word_ends, end - 1, side="right") - 1]
    if (key_start >= middle).any():
        return None  # (a row without a key)
    empty = value_start >= end - 1
    value_end = np.where(empty, value_start, value_end)
    if (~empty & (np.searchsorted(word_starts, value_end) - first_value_word > 1)).any():
        return None  # a value with a blank inside
    indent = key_start - (begin + 2)
    is_section = empty & (indent == 0) & (chars[key_end - 1] == 47)
    values, has_value = _numbers(text, chars, value_start[~empty], value_end[~empty])
    if values is None:
        return None
    all_values, all_has = np.full(len(lines), np.nan), np.zeros(len(lines), dtype=bool)
    all_values[~empty], all_has[~empty] = values, has_value
    key_length = key_end - key_start
    cut = key_length >= 3
    for back in (1, 2, 3):
        cut &= chars[np.maximum(key_end - back, 0)] == 46
    rows = _Rows(text, lines, key_start, key_end, indent, value_start, value_end, all_values, all_has, is_section,
                 cut, key_codes(chars, key_start, key_length) if len(lines) else np.empty(0, dtype=np.int64))
    return starts, rules, rows


def _numbers(text: str, chars: np.ndarray, begin: np.ndarray, end: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """The values at ``[begin, end)`` (none blank inside) as numbers and which are; (None, None) when one that
    looks like a number is none (row by row, it is a look-alike line the scan names)."""
    if not len(begin):
        return np.empty(0), np.empty(0, dtype=bool)
    tokens = chars[stretches(begin, end + 1)].copy()
    tokens[np.cumsum(end + 1 - begin) - 1] = 32
    values, valid = parse_some_numbers(tokens[:-1].tobytes().decode("ascii"))
    for i in np.flatnonzero(~valid).tolist():
        token = text[begin[i]:end[i]]
        number = to_float(token)
        if number is None and _LOOKS_NUMERIC.match(token):
            return None, None
        values[i], valid[i] = (number, True) if number is not None else (np.nan, False)
    return values, valid


def detect_sb3_console(window: str) -> bool:
    """A whole logger table: a rule, two rows or more, a rule."""
    return TABLE.search(window) is not None


class SB3ConsoleReader(TextReader):
    name = "sb3_console"
    description = ("Stable-Baselines3 / OpenAI Baselines logger tables in a console or log.txt "
                   "('| rollout/ |', '|    ep_rew_mean | 21.7 |', '|    total_timesteps | 512 |')")
    parser = SB3ConsoleParser

    def detect(self, window: str) -> bool:
        return detect_sb3_console(window)
