"""fairseq training logs: ``fairseq-train`` console/``train.log`` and ``fairseq-hydra-train``'s ``hydra_train.log``.

Three record kinds, in two formats (``--log-format simple`` or ``json``), behind
one of three line prefixes (fairseq ≥ 0.10 ``2023-06-13 17:31:08 | INFO |
train_inner | ``, hydra ``[2021-03-05 12:00:00,123][train_inner][INFO] - `` or
the legacy ``| ``)::

    epoch 143:     85 / 282 loss=3.147, nll_loss=1.236, ppl=8.86, wps=72384.3, ups=1.21, num_updates=40100, lr=…
    epoch 143 | loss 3.14 | nll_loss 1.23 | ppl 8.82 | … | num_updates 40297 | lr 0.00015753 | …
    epoch 143 | valid on 'valid' subset | loss 12.677 | … | bleu 29.52 | num_updates 40297 | best_bleu 30.53
    {"epoch": 1, "update": 0.012, "loss": "21.229", "ppl": "1.98043e+06", "num_updates": "10", …}
    {"epoch": 1, "train_loss": "3.1", …, "train_num_updates": "282"}    {"epoch": 1, "valid_loss": "4.2", …}

**Step = num_updates** (optimizer updates). Tags follow fairseq's own TensorBoard
names: ``train_inner/<key>`` for the records of each log interval,
``train/<key>`` for the epoch averages, ``<subset>/<key>`` for validation
(``valid/loss``, ``valid/bleu``, ``valid/best_bleu``). JSON values are strings
and are read as numbers. ``epoch`` goes to the epoch column (the fraction of
epochs done for interval records), the line's time stamp to the wall time.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers, parse_some_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import matches_of, ordered_matches, require
from tanalyze.readers.text._spans import field_grid
from tanalyze.readers.values import NAN, parse_timestamp, parse_timestamps, to_float

__all__ = ["FairseqParser", "FairseqReader", "detect_fairseq"]

_PREFIX = (
    r"(?:(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?) \| [A-Z]+ \| ([\w.]+) \| "
    r"|\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?)\]\[([\w.]+)\]\[[A-Z]+\] - "
    r"|\| )?"
)
INNER = re.compile(rf"^{_PREFIX}epoch (\d+):\s+(\d+) / (\d+) ([^\n]*)$", re.M)
SUMMARY = re.compile(rf"^{_PREFIX}epoch (\d+) \| ([^\n]*)$", re.M)
JSON_LINE = require(re.compile(rf"^{_PREFIX}(\{{[^\n]*\}})[ \t]*$", re.M), lambda text: "{" in text)
#: a JSON line that may be an interval record (a dict with a string key first and 'num_updates'): where a
#: chunk's record shape is learnt (not from a config dump's ``{'_name': None, …}``)
_RECORD_CANDIDATE = re.compile(rf'^{_PREFIX}(\{{"[^\n]*"num_updates": [^\n]*\}})[ \t]*$', re.M)
_SUBSET = re.compile(r"^valid on '([^']*)' subset$")
_NOT_TAGS = frozenset({"epoch", "update", "num_updates"})
_RECORD_NAMES = frozenset({"train_inner", "train", "valid"})
#: The interval records' shape, after a line break, for each of the three prefixes (or none): the time stamp
#: (empty without one), the epoch, then 'i / n key=value, …' (the keys learnt from a line of the log).
_SHAPE_PREFIXES = (
    r"\n(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?) \| [A-Z]+ \| [\w.]+ \| ",
    r"\n\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?)\]\[[\w.]+\]\[[A-Z]+\] - ",
    r"\n()\| ",
    r"\n()",
)
LOOKALIKE = re.compile(rf"^{_PREFIX}(?:epoch \d+[:|  ]|\{{\"epoch\")", re.M)
#: a look-alike line, after its line break (found at C speed)
_LOOKALIKE_AFTER_BREAK = re.compile("\n" + LOOKALIKE.pattern[1:])
_VALUE = r"[^\s,=]+"
#: any line the patterns or the look-alike scan may take (a superset: 'epoch N' or a dict after a prefix)
_ANY_LINE = re.sub(r"\((?!\?)", "(?:", rf"{_PREFIX}(?:epoch \d|\{{)")  # no group: inside other patterns
#: a JSON string value that json.loads gives back as is (no escape, quote or control character) and that
#: float() reads as parse_numbers does (no space: the bulk parser splits on single spaces; other blanks float()
#: strips as it does line by line); no brace either
_JSON_TEXT = r'"[^"\\\x00-\x20{}]+"'
#: a JSON number whose str() after json.loads float() reads as the text itself (no sign: '-0' is the int 0;
#: at most 100 digits before the dot, far below the int conversion limit)
_JSON_NUMBER = r"(?:0|[1-9]\d{0,99})(?:\.\d+)?(?:[eE][-+]?\d+)?"
_PLAIN_KEY = re.compile(r"[^\s,=]+")


#: the largest epoch or batch count a line is believed to hold (an exact double; more is a damaged line)
_LARGEST_COUNT = 2**53


class FairseqParser(TextParser):
    family = "fairseq"
    lookalike = LOOKALIKE
    patterns = ((INNER, "inner"), (SUMMARY, "summary"), (JSON_LINE, "json"))

    state_fields = {"_not_numbers": "sum", "_kinds": "union"}
    #: read every line on its own (the interval records of a chunk are read at once otherwise); for tests
    line_by_line = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._not_numbers = 0
        self._kinds: set[str] = set()
        self._names: dict[tuple[str, str], str] = {}  # (section, key) -> tag, made once
        self._shapes: dict[tuple[int, tuple[str, ...]], _InnerShape | None] = {}
        self._json_shapes: dict[tuple[int, str | None, tuple[tuple[str, bool], ...]], _JsonShape | None] = {}

    def feed(self, chunk: Chunk) -> None:
        """The interval records (``train_inner``) of a chunk at once when they all have the shape of its first
        one and every value is a number; epoch summaries, validations and JSON records line by line where they
        are. Otherwise (or when the steps of a span between them go back: a restart) line by line, the same
        rows either way."""
        if self.line_by_line or not (self._inner_at_once(chunk) or self._json_at_once(chunk)):
            super().feed(chunk)

    def _inner_at_once(self, chunk: Chunk) -> bool:
        text = chunk.text
        if "epoch " not in text:
            return False  # no interval record of the simple format (a JSON log): not worth a scan
        first = next(matches_of(INNER, text), None)
        if first is None:
            return False
        shape = self._shape(first)
        if shape is None:
            return False
        body = "\n" + text  # every line starts after a line break: positions in text are those of its break
        others = list(ordered_matches(text, ((SUMMARY, "summary"), (JSON_LINE, "json"))))
        bounds = [0]
        for _, m in others:
            bounds += [m.start(), m.end() + 1]
        bounds.append(len(text))
        counts = [len(_LOOKALIKE_AFTER_BREAK.findall(body, a, b + 1)) if a < b else 0
                  for a, b in zip(bounds[::2], bounds[1::2], strict=True)]
        found = shape.pattern.findall(body)
        if len(found) != sum(counts):
            return False  # a look-alike line of another shape (or none) in a span
        read = shape.read(found)
        if read is None:
            return False
        steps, values, epochs, walls = read
        width = values.shape[1]
        step_list = steps.tolist()
        rising = not (np.diff(steps) < 0).any()
        columns = (np.repeat(steps, width), values.ravel(), np.repeat(epochs, width),
                   np.repeat(walls, width) if walls is not None else None)
        codes = array("i", self.rows.codes(shape.tags))
        handlers = self._handlers
        by_line = []
        done = 0
        for index, count in enumerate(counts):
            start, end = bounds[2 * index], bounds[2 * index + 1]
            if count:
                first, done = done, done + count
                previous = self._last_anchor.get(-1)
                if (previous is not None and step_list[first] < previous) or (
                        not rising and (np.diff(steps[first:done]) < 0).any()):
                    for m in matches_of(INNER, text, start, end):  # a restart: recorded with its line
                        self._on_inner(m, chunk)
                    by_line.append((start, end, self.lookalike))
                else:
                    rows = slice(first * width, done * width)
                    self.rows.extend(codes * count, *(column[rows] for column in columns[:3]),
                                     wall=NAN if walls is None else columns[3][rows])
                    self.anchor(step_list[done - 1], None, 0)
                    self.parsed_lines += count
                    self._kinds.add("train_inner")
            if index < len(others):
                kind, m = others[index]
                handlers[kind](m, chunk)
                by_line.append((m.start(), m.end(), self.lookalike))
        self.scan_ranges = by_line
        return True

    def _json_at_once(self, chunk: Chunk) -> bool:
        """The JSON interval records of a chunk (``--log-format json``) at once, when they have the keys of its
        first one in the same order and every step, epoch and value is a number; the other lines of this format
        (summaries, validations, records of another shape) line by line where they are, and a span of records
        whose steps go back (a restart) too. False (nothing read) to read the whole chunk line by line."""
        text = chunk.text
        shape = self._json_shape(text)
        if shape is None:
            return False
        body = "\n" + text  # every line starts after a line break: positions in text are those of its break
        every = shape.every.findall(body)  # the lines of this shape and the others of the format, in order
        pieces = shape.pieces(body, every)
        if pieces is None:
            return False
        read = shape.read(every if len(pieces) == 1 else [line for line in every if not line[2]])
        if read is None:
            return False
        steps, ends = read.steps, read.ends
        codes = np.array(self.rows.codes(shape.tags), dtype=np.int32)[read.tags]
        by_line = []
        done = 0
        for start, end, count in pieces:
            if count is None:
                self._read_other(chunk, start, end)
                by_line.append((start, end, self.lookalike))
                continue
            first, done = done, done + count
            if not count:
                continue
            if not self.anchors_go_on(steps[first:done]):
                for m in matches_of(JSON_LINE, text, start, end):  # a restart: recorded with its line
                    self._on_json(m, chunk)
                by_line.append((start, end, self.lookalike))
                continue
            rows = slice(ends[first - 1] if first else 0, ends[done - 1])
            self.rows.extend(array("i", codes[rows].tobytes()), read.row_steps[rows], read.values[rows],
                             read.epochs[rows], wall=NAN if read.walls is None else read.walls[rows])
            self.anchor(int(steps[done - 1]), None, 0)
            self.parsed_lines += count
            self._not_numbers += int(read.not_numbers[first:done].sum())
            self._kinds.add("train_inner")
        self.scan_ranges = by_line
        return True

    def _read_other(self, chunk: Chunk, start: int, end: int) -> None:
        """The line at ``start`` (and the lines after it up to ``end``, none of which a pattern may start at: a
        pattern's match begins as _ANY_LINE does) as the default ``feed`` reads them: each pattern, in order,
        tried at that line only, as their merged scans would find it (a match may run on over those lines, as
        there), without setting up a scan of each."""
        for pattern, kind in self.patterns:
            m = pattern.match(chunk.text, start, end)
            if m is not None:
                self._handlers[kind](m, chunk)

    def _json_shape(self, text: str) -> _JsonShape | None:
        """The shape of the chunk's first JSON interval record (among its first few JSON lines), None when there
        is none or it cannot be read at once (a key twice, a value that is no string or plain number …)."""
        for tries, m in enumerate(matches_of(_RECORD_CANDIDATE, text)):
            if tries == 8:
                return None
            try:
                record = json.loads(m.group(5), object_pairs_hook=list)
            except (ValueError, RecursionError):
                continue
            if not isinstance(record, list) or not record or any(k.endswith("_num_updates") for k, _ in record):
                continue
            form = 0 if m.group(1) else 1 if m.group(3) else 2 if m.group(0).startswith("| ") else 3
            name = m.group(2) or m.group(4)
            if name in _RECORD_NAMES and name != "train_inner":
                continue
            kinds = tuple((k, isinstance(v, str)) for k, v in record
                          if isinstance(v, str) or type(v) in (int, float))
            if len(kinds) != len(record):
                continue
            key = (form, name, kinds)
            if key not in self._json_shapes:
                self._json_shapes[key] = _JsonShape.make(form, name, kinds)
            if self._json_shapes[key] is not None:
                return self._json_shapes[key]
        return None

    def _shape(self, first: re.Match[str]) -> _InnerShape | None:
        """The shape of the interval records like ``first`` (None when it is not one of plain fields)."""
        form = 0 if first.group(1) else 1 if first.group(3) else 2 if first.group(0).startswith("| ") else 3
        keys = tuple(item.strip().partition("=")[0].strip() for item in first.group(8).split(","))
        key = (form, keys)
        if key not in self._shapes:
            self._shapes[key] = _InnerShape.make(form, keys)
        return self._shapes[key]

    @staticmethod
    def _prefix(m: re.Match[str]) -> tuple[float, str | None]:
        stamp = m.group(1) or m.group(3)
        name = m.group(2) or m.group(4)
        return (parse_timestamp(stamp) if stamp else float("nan")), name

    def _emit(self, m: re.Match[str], chunk: Chunk, section: str, values: dict[str, str],
              epoch: float, step_text: str | None, inner: bool) -> None:
        step = _whole(step_text)
        if step is None:
            return  # not marked: the look-alike scan counts it as unreadable
        wall, _ = self._prefix(m)
        pairs = []
        names = self._names
        for key, text in values.items():
            if key in _NOT_TAGS:
                continue
            try:
                number = float(text)  # the usual value; to_float for the rest (thousands separators …)
            except ValueError:
                number = to_float(text)
                if number is None:
                    self._not_numbers += 1
                    continue
            tag = names.get((section, key))
            if tag is None:
                tag = names[(section, key)] = f"{section}/{key}"
            pairs.append((tag, number))
        self.mark(chunk, m.start())
        if inner:
            self.anchor(step, chunk, m.start())
        self._kinds.add(section if section in ("train_inner", "train") else "validation")
        self.rows.add_pairs(pairs, step, epoch=epoch, wall=wall)

    def _on_inner(self, m: re.Match[str], chunk: Chunk) -> None:
        epoch, position, total = int(m.group(5)), int(m.group(6)), int(m.group(7))
        if max(epoch, position, total) > _LARGEST_COUNT:
            return  # (a damaged line: not marked, the look-alike scan names it)
        values = {}
        for item in m.group(8).split(","):
            key, sep, value = item.strip().partition("=")
            if sep:
                values[key.strip()] = value.strip()
        done = epoch - 1 + position / total if total else float(epoch)
        self._emit(m, chunk, "train_inner", values, done, values.get("num_updates"), inner=True)

    def _on_summary(self, m: re.Match[str], chunk: Chunk) -> None:
        segments = [s.strip() for s in m.group(6).split("|")]
        section = "train"
        subset = _SUBSET.match(segments[0]) if segments else None
        if subset:
            section, segments = subset.group(1), segments[1:]
        values = {}
        for segment in segments:
            key, _, value = segment.rpartition(" ")
            if key:
                values[key.strip()] = value
        self._emit(m, chunk, section, values, float(m.group(5)), values.get("num_updates"), inner=False)

    def _on_json(self, m: re.Match[str], chunk: Chunk) -> None:
        try:
            record = json.loads(m.group(5))
        except (ValueError, RecursionError):
            return
        if not isinstance(record, dict) or "epoch" not in record and not any("num_updates" in k for k in record):
            return
        _, name = self._prefix(m)
        keys = [k for k in record if isinstance(k, str)]
        prefixed = [k for k in keys if k.endswith("_num_updates")]
        if prefixed:  # an epoch summary or a validation: every key carries '<subset>_'
            subset = prefixed[0][: -len("_num_updates")]
            section = subset
            values = {k[len(subset) + 1:]: str(v) for k, v in record.items()
                      if isinstance(k, str) and k.startswith(subset + "_")}
            step_text = values.get("num_updates")
        else:
            section = "train_inner" if name in (None, "train_inner") or name not in _RECORD_NAMES else name
            values = {k: str(v) for k, v in record.items() if isinstance(k, str)}
            step_text = values.get("num_updates")
        # 'update' is the fraction of epochs done (epoch 1 at 1.2%: 0.012); summaries have the epoch only
        epoch = to_float(str(record.get("update", record.get("epoch", "nan"))))
        self._emit(m, chunk, section, values, epoch if epoch is not None else float("nan"), step_text,
                   inner=section == "train_inner")

    def finish(self) -> None:
        notes = ["step = num_updates; tags as fairseq's TensorBoard names them: train_inner/* per log interval, "
                 "train/* epoch averages, <subset>/* validation"]
        if self._not_numbers:
            notes.append(f"{self._not_numbers:,} value(s) that are not numbers skipped")
        self.notes[:0] = notes


class _InnerShape:
    """Interval records with one prefix and the same keys in the same order, read all at once."""

    def __init__(self, pattern: re.Pattern[str], keys: tuple[str, ...], stamped: bool) -> None:
        self.pattern = pattern
        self.separators = (" / ", " " + keys[0] + "=", *(", " + key + "=" for key in keys[1:]))
        self.width = 2 + len(keys)
        self.key_lengths = np.array([len(key) for key in keys])
        self.step = 2 + keys.index("num_updates")
        self.kept = [2 + i for i, key in enumerate(keys) if key not in _NOT_TAGS]
        self.tags = tuple(f"train_inner/{keys[i - 2]}" for i in self.kept)
        self.stamped = stamped

    @classmethod
    def make(cls, form: int, keys: tuple[str, ...]) -> _InnerShape | None:
        if "num_updates" not in keys or len(set(keys)) != len(keys) or not all(map(_PLAIN_KEY.fullmatch, keys)):
            return None  # no step, a key twice (the last value counts), a key with a blank, ',' or '='
        fields = ", ".join(re.escape(key) + "=" + _VALUE for key in keys)
        pattern = re.compile(rf"{_SHAPE_PREFIXES[form]}epoch (\d+): +(\d+ / \d+ {fields})(?=\n)")
        return cls(pattern, keys, form < 2)

    def _grid(self, rests: tuple[str, ...]) -> np.ndarray | None:
        """The numbers of ``rests`` ('i / n k=v, k=v, …' as the pattern took them) as a (lines, width) grid;
        None when one is not a NUMBER. The pattern fixed the keys: they, their '=' and the ',' before them are
        cut out by position, in a few passes over the bytes (a replace per key costs a pass each)."""
        joined = " ".join(rests).replace(" / ", " ")
        lines = len(rests)
        if not joined.isascii():
            return field_grid(list(rests), self.separators, self.width)
        chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        equals = np.flatnonzero(chars == 61)
        if len(equals) != lines * len(self.key_lengths):
            return None  # cannot happen: the pattern took the keys
        starts = equals - np.tile(self.key_lengths, lines)
        commas = (starts.reshape(lines, -1)[:, 1:] - 2).ravel()
        cut = np.zeros(len(chars) + 1, dtype=np.int8)
        cut[starts] += 1
        cut[equals + 1] -= 1
        cut[commas] += 1
        cut[commas + 1] -= 1
        text = chars[np.cumsum(cut[:-1], dtype=np.int8) == 0].tobytes().decode("ascii")
        grid = field_grid([text], (), self.width * lines)
        return None if grid is None else grid.reshape(lines, self.width)

    def read(self, found: list[tuple[str, str, str]]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
        """(steps, values (lines, tags), epochs done, wall times or None) of the records ``found``; None when
        a value is not a plain number, a step not a whole number, or a count beyond 2**53."""
        if not found:
            return np.empty(0, np.int64), np.empty((0, len(self.kept))), np.empty(0), None
        stamps, epoch_texts, rests = zip(*found, strict=True)
        grid = self._grid(rests)
        epoch = parse_numbers(" ".join(epoch_texts))
        if grid is None or epoch is None:
            return None
        step = grid[:, self.step]
        counts = np.concatenate([epoch, grid[:, 0], grid[:, 1]])
        if not (np.abs(step) < 2**53).all() or (step != np.floor(step)).any() or counts.max() >= 2**53:
            return None  # NaN, not whole, or more digits than a double holds: line by line
        position, total = grid[:, 0], grid[:, 1]
        done = np.where(total != 0, epoch - 1 + position / np.where(total != 0, total, 1), epoch)
        walls = np.array(parse_timestamps(stamps)) if self.stamped else None
        return step.astype(np.int64), grid[:, self.kept], done, walls


class _JsonShape:
    """JSON interval records with one prefix (and record name) and the same keys in the same order, each value
    a string or a number as in the first: read all at once. The pattern checks every line; the values are cut
    out of their dicts by position and parsed together."""

    def __init__(self, pattern: re.Pattern[str], every: re.Pattern[str],
                 kinds: tuple[tuple[str, bool], ...], stamped: bool) -> None:
        keys = tuple(key for key, _ in kinds)
        self.pattern = pattern  # a line of this shape: (time stamp, dict, '')
        self.every = every  # that, or any line of the format: ('', '', the line)
        self.keys = keys
        self.step = keys.index("num_updates")
        self.epoch = keys.index("update") if "update" in keys else keys.index("epoch") if "epoch" in keys else None
        self.kept = [i for i, key in enumerate(keys) if key not in _NOT_TAGS]
        self.tags = tuple(f"train_inner/{keys[i]}" for i in self.kept)
        self.stamped = stamped
        self.quoted = np.array([quoted for _, quoted in kinds], dtype=np.int64)
        # bytes from a value's closing quote (if any) to the next key's '": ': ', "key' or, before a line's first
        # key, '}{"key' (UTF-8)
        self.gaps = np.array([len(json.dumps(key, ensure_ascii=False).encode("utf-8")) + 1 for key in keys])

    @classmethod
    def make(cls, form: int, name: str | None, kinds: tuple[tuple[str, bool], ...]) -> _JsonShape | None:
        keys = tuple(key for key, _ in kinds)
        if "num_updates" not in keys or len(set(keys)) != len(keys) or not all(
                json.dumps(key, ensure_ascii=False)[1:-1] == key for key in keys):
            return None  # no step, a key twice (the last value counts), a key written with escapes
        prefix = _SHAPE_PREFIXES[form]
        if name is not None:  # the record's own name in place of any name
            prefix = prefix.replace(r"[\w.]+", re.escape(name), 1)
        fields = ", ".join(f"{re.escape(json.dumps(key, ensure_ascii=False))}: "
                           + (_JSON_TEXT if quoted else _JSON_NUMBER) for key, quoted in kinds)
        line = rf"{prefix}(\{{{fields}\}})[ \t]*(?=\n)"
        pattern = re.compile(line + "()")
        every = re.compile(rf"\n(?:{line[2:]}|(?={_ANY_LINE})([^\n]+))")
        return cls(pattern, every, kinds, form < 2)

    def pieces(self, body: str, every: list[tuple[str, str, str]]) -> list[tuple[int, int, int | None]] | None:
        """``body[1:]`` (the chunk after a line break) cut into pieces, in text positions: (start, end, how many
        lines of this shape) where every line a pattern of the format could take has this shape, (start, end,
        None) from a line of another shape up to the next line of this shape (a record spread over lines stays
        whole). ``every``: the lines of this shape ('', …) and the others (…, their text) in order. None when
        an other line is not found where it should be (cannot happen)."""
        size = len(body) - 1
        flags = list(map(bool, map(itemgetter(2), every)))
        if not any(flags):
            return [(0, size, len(every))]
        others = list(compress(range(len(every)), flags))
        starts = self._starts(body, [every[index][2] for index in others], others[-1] == len(every) - 1)
        if starts is None:
            return None
        pieces: list[tuple[int, int, int | None]] = []
        at = after = 0  # where the piece begins, the index in every of its first line
        for number, (index, start) in enumerate(zip(others, starts, strict=True)):
            if index > after:
                pieces.append((at, start, index - after))
            after = index + 1
            if after < len(every) and not flags[after]:  # up to the next line of this shape
                following = self.pattern.search(body, start + 1)
                if following is None:
                    return None
                at = following.start()
            else:  # up to the next other line, or the end
                at = starts[number + 1] if number + 1 < len(starts) else size
            pieces.append((start, at, None))
        if after < len(every):
            pieces.append((at, size, len(every) - after))
        return pieces

    @staticmethod
    def _starts(body: str, lines: list[str], last: bool) -> list[int] | None:
        """Where ``lines`` (texts of whole lines of ``body``, in order) start; ``last``: the last of them may be the
        text's last line, without a line break (only it, whatever lines before have its text). None when one
        is not found (cannot happen)."""
        starts = []
        position = 0
        final = body.rfind("\n")
        for number, line in enumerate(lines):
            if last and number == len(lines) - 1 and final + 1 + len(line) == len(body) and body.endswith(line):
                found = final
            else:
                found = body.find(f"\n{line}\n", position)
                if found < 0:
                    return None
            starts.append(found)
            position = found + 1 + len(line)
        return starts

    def _values(self, dicts: tuple[str, ...]) -> str | None:
        """The values of ``dicts`` (of this shape, checked by the pattern), line after line, as one text of
        space-separated tokens; None when the structure is not where it should be. Keys hold no quote and
        values neither: each key ends at a '": ', each value starts a fixed count of bytes after it and ends a
        fixed count before the next one's (a few passes of numpy over the bytes, no string per value)."""
        raw = "".join(dicts).encode("utf-8")
        chars = np.frombuffer(raw, dtype=np.uint8)
        lines, width = len(dicts), len(self.keys)
        colons = np.flatnonzero(chars[1:-1] == 58)  # a ':' between '"' and ' ': a key's end
        colons = colons[(chars[colons] == 34) & (chars[colons + 2] == 32)]
        if len(colons) != lines * width:
            return None
        quoted = np.tile(self.quoted, lines)
        starts = colons + 3 + quoted
        ends = np.empty_like(starts)
        ends[:-1] = colons[1:] - np.tile(self.gaps, lines)[1:] - quoted[:-1]
        ends[-1] = len(chars) - 1 - quoted[-1]
        if not (ends > starts).all() or not (starts[1:] > ends[:-1]).all():
            return None
        sizes = ends - starts + 1  # each value and the byte after it, which becomes the blank between tokens
        offsets = np.cumsum(sizes)
        out = chars[np.arange(offsets[-1]) + np.repeat(starts - (offsets - sizes), sizes)]
        out[offsets - 1] = 32
        return out[:-1].tobytes().decode("utf-8")

    def read(self, found: list[tuple[str, str, str]]) -> _JsonRows | None:
        """The rows of the records ``found`` (time stamp, dict, ''); None when a step is not a whole number below
        2**53 or an epoch not a number (then line by line)."""
        lines, width = len(found), len(self.keys)
        if not found:
            nothing = np.empty(0, np.int64)
            return _JsonRows(nothing, nothing, nothing, nothing, np.empty(0), np.empty(0), None, nothing)
        stamps, dicts, _ = zip(*found, strict=True)
        text = self._values(dicts)
        if text is None:
            return None  # cannot happen: the pattern checked the dicts
        numbers, valid = parse_some_numbers(text)
        numbers, valid = numbers.reshape(lines, width), valid.reshape(lines, width)
        step = numbers[:, self.step]
        if not valid[:, self.step].all() or not (np.abs(step) < 2**53).all() or (step != np.floor(step)).any():
            return None  # NaN, not whole, or more digits than a double holds: line by line
        if self.epoch is None:
            epochs = np.full(lines, NAN)
        elif valid[:, self.epoch].all():
            epochs = numbers[:, self.epoch]
        else:
            return None
        values, keep = numbers[:, self.kept], valid[:, self.kept]
        not_numbers = np.zeros(lines, dtype=np.int64)
        if not keep.all():  # the rare others: as to_float reads them, or left out
            keep = keep.copy()
            tokens = text.split(" ")
            for line, column in zip(*np.nonzero(~keep), strict=True):
                number = to_float(tokens[line * width + self.kept[column]])
                if number is None:
                    not_numbers[line] += 1
                else:
                    values[line, column], keep[line, column] = number, True
        walls = np.array(parse_timestamps(stamps)) if self.stamped else None
        per_line = len(self.kept)
        steps = step.astype(np.int64)
        line_of = np.repeat(np.arange(lines), per_line)
        tags = np.tile(np.arange(per_line), lines)
        if keep.all():
            ends, values = np.arange(1, lines + 1) * per_line, values.ravel()
        else:
            flat = keep.ravel()
            ends, values, line_of, tags = np.cumsum(keep.sum(axis=1)), values.ravel()[flat], line_of[flat], tags[flat]
        return _JsonRows(steps, ends, steps[line_of], tags, values, epochs[line_of],
                         None if walls is None else walls[line_of], not_numbers)


class _JsonRows(NamedTuple):
    """The rows of JSON interval records read at once: per line its step and the rows up to its end; per row
    its step, tag (an index into the shape's tags), value, epoch and wall time (None: no time stamps)."""

    steps: np.ndarray
    ends: np.ndarray
    row_steps: np.ndarray
    tags: np.ndarray
    values: np.ndarray
    epochs: np.ndarray
    walls: np.ndarray | None
    not_numbers: np.ndarray  # per line, the values that are no numbers (left out)


def _whole(text: str | None) -> int | None:
    number = to_float(text) if text is not None else None
    if number is None or number != number or not float(number).is_integer():
        return None
    return int(number)


def detect_fairseq(window: str) -> bool:
    """fairseq record lines: interval records, epoch summaries or JSON records that carry num_updates."""
    for pattern in (INNER, SUMMARY, JSON_LINE):
        for m in pattern.finditer(window):
            if "num_updates" in m.group(0):
                return True
    return False


class FairseqReader(TextReader):
    name = "fairseq"
    description = "fairseq train.log / hydra_train.log ('epoch N: i / n loss=…, num_updates=…', '| valid on …', JSON)"
    parser = FairseqParser

    def detect(self, window: str) -> bool:
        return detect_fairseq(window)
