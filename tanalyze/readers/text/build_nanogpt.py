"""build-nanogpt (karpathy/build-nanogpt, "Let's reproduce GPT-2 (124M)", and its many forks).

Its ``train_gpt2.py`` writes ``log/log.txt``, one record per line, ``{step} {kind} {value}``::

    0 val 10.9310        validation loss
    0 hella 0.2413       HellaSwag accuracy (acc_norm)
    0 train 10.934416    training loss

and prints the same numbers, with more, to the console::

    validation loss: 10.9310
    HellaSwag accuracy: 2423/10042=0.2413
    step     0 | loss: 10.934416 | lr 6.0000e-05 | norm: 15.3712 | dt: 34712.11ms | tok/sec: 15103.99

**Step = the loop index printed.** The training loss of loop ``N`` is computed on the weights after ``N``
updates (before the loop's own update), and so are the validation loss and HellaSwag accuracy measured at
the top of loop ``N``: all three are at step ``N``. On the console the evaluation lines of loop ``N`` come
before its step line, so they are put at the step after the last step line printed (0 before the first).

Tags: ``train/loss``, ``val/loss``, ``hellaswag/acc``; the console's step line also gives ``lr``,
``grad_norm`` (``norm``), ``time_ms`` (``dt``) and ``tok_per_s`` (``tok/sec``). Kinds of records and fields
of step lines that forks add keep their own names.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tanalyze.readers.text._keys import KEY_BYTES, key_codes
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._shaped import LineShape
from tanalyze.readers.text._spans import SpanParser
from tanalyze.readers.values import NUMBER, to_float

__all__ = ["BuildNanoGPTParser", "BuildNanoGPTReader", "detect_build_nanogpt"]

#: log.txt kinds -> tags (llm.c's names for the same numbers)
RECORD_TAGS = {"train": "train/loss", "val": "val/loss", "hella": "hellaswag/acc"}
#: console step-line fields -> tags
FIELD_TAGS = {"loss": "train/loss", "norm": "grad_norm", "dt": "time_ms", "tok/sec": "tok_per_s"}

RECORD = re.compile(rf"^(\d+) ([A-Za-z_][\w/.-]*) ({NUMBER})[ \t]*$", re.M)
STEP_LINE = re.compile(r"^step[ \t]+(\d+)[ \t]*\|((?:[^|\n]*\|)*[^|\n]*)$", re.M)
_FIELD = re.compile(rf"^[ \t]*([A-Za-z][\w/.-]*):?[ \t]*({NUMBER})[ \t]*(ms|s)?[ \t]*$")
VAL_LINE = re.compile(rf"^validation loss:[ \t]*({NUMBER})[ \t]*$", re.M)
HELLA_LINE = re.compile(rf"^HellaSwag accuracy:[ \t]*(\d+)[ \t]*/[ \t]*(\d+)[ \t]*=[ \t]*({NUMBER})[ \t]*$",
                        re.M | re.I)
#: the step line as build-nanogpt prints it (forks with another line are read line by line)
_STEP_SHAPE = LineShape(("step", " | loss: ", " | lr ", " | norm: ", " | dt: ", "ms | tok/sec: ", ""),
                        (True, *[False] * 5), ("+", *[""] * 5))
_STEP_TAGS = ("train/loss", "lr", "grad_norm", "time_ms", "tok_per_s")
#: a text of log.txt records only, each with its line break (read at once; what ``RECORD`` matches)
_RECORDS = re.compile(r"(?:[0-9]++ [A-Za-z_][\w/.-]*+ [-+.0-9eE]++\n)++")
#: where a line may be a record (begins with a digit): found after its line break, at C speed
_RECORD_START = re.compile(r"\d")
_LINE_RECORD_START = re.compile(r"\n\d")
#: the signature of the console's step line: a loss, a gradient norm and a time or throughput
_CONSOLE_STEP = re.compile(rf"^step[ \t]+\d+ \| loss: {NUMBER} \|[^\n]*\bnorm: [^\n]*\b(?:dt|tok/sec): ", re.M)


class BuildNanoGPTParser(SpanParser, TextParser):
    family = "build-nanogpt"
    lookalike = re.compile(r"^(?:\d+ [A-Za-z_]|step[ \t]+\d+[ \t]*\||validation loss|HellaSwag accuracy)", re.M | re.I)
    patterns = ((RECORD, "record"), (STEP_LINE, "step"), (VAL_LINE, "val"), (HELLA_LINE, "hella"))

    state_fields = {"_records": "sum", "_console_lines": "sum", "_other_names": "union"}

    span_prefix = "step"
    span_shapes = (_STEP_SHAPE,)

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._records = 0
        self._console_lines = 0
        self._other_names: set[str] = set()

    def feed(self, chunk: Chunk) -> None:
        if self.line_by_line:
            super().feed(chunk)
        elif self._records_at_once(chunk):
            return
        elif _RECORD_START.match(chunk.text) or _LINE_RECORD_START.search(chunk.text):
            TextParser.feed(self, chunk)  # records among other lines: every line in its place
            self.scan_ranges = None
        else:
            super().feed(chunk)

    # log.txt ---------------------------------------------------------------------------
    def _records_at_once(self, chunk: Chunk) -> bool:
        """A chunk of log.txt records only, read at once: the rows, anchors and counts of reading each line
        (:meth:`_on_record`). False (nothing read) when a line is anything else or a value is no number, a
        step is too long for a float, or a train step goes back (a relaunch, recorded at its line)."""
        records = _records(chunk.text)
        if records is None:
            return False
        kinds, kind_of_line, steps, values = records
        train = kinds.index("train") if "train" in kinds else -1
        anchors = steps[kind_of_line == train]
        if not self.anchors_go_on(anchors):
            return False
        codes = np.array(self.rows.codes([RECORD_TAGS.get(kind, kind) for kind in kinds]), dtype=np.int32)
        self.take_whole_chunk(codes[kind_of_line], steps, values, len(steps), anchors)
        self._other_names.update(kind for kind in kinds if kind not in RECORD_TAGS)
        self._records += len(steps)
        return True

    def _on_record(self, m: re.Match[str], chunk: Chunk) -> None:
        step, kind, value = int(m.group(1)), m.group(2), to_float(m.group(3))
        if value is None or step >= 2**63:
            return  # not marked: the look-alike scan counts it as unreadable
        self.mark(chunk, m.start())
        if kind == "train":
            self.anchor(step, chunk, m.start())
        elif kind not in RECORD_TAGS:
            self._other_names.add(kind)
        self._records += 1
        self.rows.add_pairs([(RECORD_TAGS.get(kind, kind), value)], step)

    # console ---------------------------------------------------------------------------
    def span_rows(self, grid: np.ndarray, shape: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray] | None:
        return _STEP_TAGS, grid[:, 0].astype(np.int64), grid[:, 1:].ravel()

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        self._console_lines += len(steps)

    def _on_step(self, m: re.Match[str], chunk: Chunk) -> None:
        step = int(m.group(1))
        if step >= 2**63:
            return
        pairs = []
        for field in m.group(2).split("|"):
            found = _FIELD.match(field)
            if found is None:
                continue
            pairs.append((self._field_tag(found.group(1), found.group(3)), float(found.group(2))))
        if not pairs:
            return
        self.mark(chunk, m.start())
        self.anchor(step, chunk, m.start())
        self._console_lines += 1
        self.rows.add_pairs(pairs, step)

    def _field_tag(self, name: str, unit: str | None) -> str:
        """A step-line field's tag: the names build-nanogpt prints mapped (``dt`` only in ms), others as they are,
        their unit kept (``time: 3.2s`` is ``time_s``)."""
        if name in FIELD_TAGS and (name != "dt" or unit == "ms"):
            return FIELD_TAGS[name]
        tag = f"{name}_{unit}" if unit else name
        if tag != "lr":
            self._other_names.add(tag)
        return tag

    def _evaluation_step(self) -> int:
        """The loop an evaluation line belongs to: the one after the last step line printed."""
        return self.current_step(-1) + 1

    def _on_val(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self._console_lines += 1
        self.rows.add_pairs([("val/loss", float(m.group(1)))], self._evaluation_step())

    def _on_hella(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self._console_lines += 1
        self.rows.add_pairs([("hellaswag/acc", float(m.group(3)))], self._evaluation_step())

    def finish(self) -> None:
        notes = []
        if self._records:
            notes.append("log.txt records '{step} {kind} {value}': step = the loop index written; the train loss "
                         "of loop N and the evaluations at its top are all measured after N updates")
        if self._console_lines:
            notes.append("console lines: step = the loop index printed ('step N |'); 'validation loss' and "
                         "'HellaSwag accuracy' lines, printed before the step line of their loop, at the step "
                         "after the last step line")
        if self._other_names:
            notes.append(f"kept under their own names: {', '.join(sorted(self._other_names))}")
        self.notes[:0] = notes


def _records(text: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None:
    """The records of a text of log.txt lines, found with numpy rather than one line at a time: the kinds (in
    order of first use), each line's kind, step and value. None when the text is not all records (ASCII, each
    with its line break), a value is no number, a step does not fit a float exactly or a kind is long. The same
    records as ``RECORD`` finds, values as ``to_float`` reads them."""
    if not text.isascii() or _RECORDS.fullmatch(text) is None:
        return None
    chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    spaces = np.flatnonzero(chars == 32).reshape(-1, 2)  # two a line: after the step, after the kind
    kind_starts, lengths = spaces[:, 0] + 1, spaces[:, 1] - spaces[:, 0] - 1
    if lengths.max() > KEY_BYTES:
        return None
    keep = np.ones(len(chars), dtype=bool)  # the step and the value of each line, one space between them
    edges = np.zeros(len(chars) + 1, dtype=np.int8)
    edges[kind_starts] = 1
    edges[spaces[:, 1] + 1] = -1
    keep[np.cumsum(edges[:-1], dtype=np.int8).view(bool)] = False
    numbers, valid = parse_some_numbers(chars[keep][:-1].tobytes().replace(b"\n", b" ").decode("ascii"))
    steps, values = numbers[0::2], numbers[1::2]
    if not valid.all() or steps.max() >= 2**53:
        return None
    kind_of_line = key_codes(chars, kind_starts, lengths)
    firsts = np.flatnonzero(np.diff(np.maximum.accumulate(kind_of_line), prepend=-1) > 0)  # first use of each kind
    kinds = [text[a:a + n] for a, n in zip(kind_starts[firsts].tolist(), lengths[firsts].tolist(), strict=True)]
    return kinds, kind_of_line, steps.astype(np.int64), values


def detect_build_nanogpt(window: str) -> bool:
    """A log.txt (its first lines are all ``{step} {kind} {value}`` records, one of a kind it writes) or the
    console (a step line with loss, norm and time, or the evaluation lines)."""
    lines = [line for line in window.split("\n")[:4] if line.strip()]
    if lines and all(RECORD.fullmatch(line) for line in lines[:3]):
        return any(RECORD.fullmatch(line).group(2) in RECORD_TAGS for line in lines[:3])  # type: ignore[union-attr]
    if _CONSOLE_STEP.search(window):
        return True
    return bool(VAL_LINE.search(window) and HELLA_LINE.search(window))


class BuildNanoGPTReader(TextReader):
    name = "build_nanogpt"
    cache_version = 4  # 4: every line not of the main template read in its place, as line by line
    description = "build-nanogpt / 'reproduce GPT-2' log.txt ('N train X', 'N val X', 'N hella X') and console output"
    parser = BuildNanoGPTParser

    def detect(self, window: str) -> bool:
        return detect_build_nanogpt(window)
