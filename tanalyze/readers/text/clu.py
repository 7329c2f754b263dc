"""The metric lines Google's JAX training libraries log through absl: CLU's ``LoggingWriter`` (Flax's examples, t5x,
scenic, …) and big_vision's metric writer::

    I0325 14:11:17.857037 130245504009792 logging_writer.py:48] [4000] train_accuracy=0.4054645895957947, train_loss=3.389246940612793
    I0325 14:14:07.470407 130245504009792 logging_writer.py:48] [4001] steps_per_sec=3.0123
    I0709 15:29:52.025554 12803141632 logging_writer.py:48] [0] collection=train timing/train_iter_warmup=1.90735e-06
    INFO:absl:[300] eval_accuracy=0.91796875, eval_loss=0.24660715460777283
    I0603 08:13:08.690986 140529512351552 utils.py:1268] [0] minival/prec@1 = 0.0009765625

CLU's ``write_scalars(step, scalars)`` logs ``[step] name=value, name=value`` (its keys sorted; a Python float as
``.6g``, a NumPy or JAX number as it prints), one line a call; big_vision's ``measure(name, value)`` logs ``[step]
name = value``, one metric a line (its step in ANSI colour, which is removed with every escape before the lines are
read). Decisions:

* **step = the bracketed step**. A step is often on several lines (CLU's training metrics, then ``steps_per_sec`` and
  ``uptime`` from its ``ReportProgress``, then the evaluation's metrics; big_vision's metrics one by one): they are one
  step, their rows add up; the same tag twice at one step: the later write wins, as everywhere.
* **Tags = the names as printed** (``train_loss``, ``eval_accuracy``, ``steps_per_sec``, ``uptime``,
  ``minival/prec@1``, ``z/secs/eval/minival``, ``core_hours_TPU v3``). A writer made with a collection (t5x's
  ``collection=train``, which its TensorBoard writer makes a folder of) prefixes its names: ``train/loss``. Evaluations
  are the names their loop gives them (``eval_loss``, ``minival/loss``), at the step they were logged at.
* **No wall time**: absl's prefix (``I%m%d %H:%M:%S.%f``) has a month and a day but no year, so it makes no point in
  time (as everywhere a logging prefix without a date is only removed); CLU's asynchronous writer logs from a thread
  of its own, late, anyway. The lines are read behind absl's prefix, behind Python logging's ``INFO:absl:`` (absl
  without ``app.run``, a notebook) and without any (a captured message); not behind another logging library's
  prefix (the shared removal of such prefixes takes a bracketed ``[step]`` for a part of them).
* A step that goes back is a resumed job when a line's step is below the last step of the same kind of line (the same
  first tag): CLU's writers log from threads of their own, several writers each from its own, so lines of one step can
  come after those of the next, which is no restart. One restart is recorded for all the kinds of lines that go back
  to the same resumed step.
* Not metrics, not read: CLU's ``Got texts: …`` / ``Got images: …`` (write_texts, write_images …), ``Histogram for
  …``, ``[Hyperparameters] …``, ``Setting work unit notes: …``; big_vision's ``TIMING[…]`` and ``NOTE`` lines. A line
  ``[step] name=…`` whose value is no number (an array, a shape) looks like a metric and is named in a warning. The
  training loop's own messages (Flax's ``Finished training step 3. Batch size: 512, Loss: …`` of its first steps,
  ``eval epoch: 4, loss: 2.9286, accuracy: 37.13``) repeat what the writer logs, in another format: not read.

Every line is found by one pattern over a whole chunk; the pairs of all its lines are cut apart at once (at their
``, `` and ``=``), their numbers read at once.
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import ClassVar

import numpy as np

from tanalyze.readers.text._findall import FindallParser
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import SPACE_CHARS, all_but, at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER, NUMBER_CHARS, NUMBER_PATTERN

__all__ = ["CLUParser", "CLUReader", "detect_clu"]

#: absl's line prefix (``I0325 14:11:17.857037 130245504009792 logging_writer.py:48] ``), or Python logging's
#: ``INFO:absl:`` (absl's logger without its handler), or none
_ABSL = r"(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\n]*\] |INFO:absl:)?"
#: the same, loosely (its level and date, anything up to its bracket; quicker): for reading, once ``detect`` has
#: seen the lines with the prefix whole (the classes of reading are ranges: see ``all_but``)
_ABSL_READ = r"(?:[IWEF]\d{4} " + all_but("]\n") + r"*+\] |INFO:absl:)?"
#: a character of a name: no blank, ``=``, comma, quote, brace or bracket (a text's or a histogram's line has some)
_NC = all_but(SPACE_CHARS + "=,'\"{}[]")
#: a metric's name: words of such characters, single blanks or more between them (big_vision's
#: ``core_hours_TPU v3``), taken whole
_NAME = rf"{_NC}++(?: ++{_NC}++)*+"
_COLLECTION = f"{all_but(SPACE_CHARS + ',=')}++"
#: how a line that looks like a metric line goes on after its step: `` name=`` or `` name =``
_LOOKS = rf" (?:collection={_COLLECTION} )?+{_NAME} ?="
#: every line read, from its line break (see ._findall): its step, CLU's collection, the first name, then CLU's
#: values (``value, name=value, …``: no name has a ``=``) or big_vision's one (``name = value``); or (a line that looks
#: like one but is neither) how it goes on
_LINE = re.compile(
    rf"\n{_ABSL_READ}\[(\d+)\](?:(?: collection=({_COLLECTION}))? ({_NAME})"
    rf"(?:=({NUMBER_CHARS}(?:, {_NAME}={NUMBER_CHARS})*+)| = ({NUMBER_CHARS}))|({_LOOKS})[^\n]*)[ \t]*(?=\n)")
#: the two lines ``detect`` needs: CLU's or big_vision's, every value a number
_DETECT = re.compile(
    rf"^{_ABSL}\[\d+\](?: collection={_COLLECTION})? (?:(?:{_NAME}={NUMBER}, )*{_NAME}={NUMBER}|{_NAME} = {NUMBER})"
    r"[ \t]*$", re.M)


class CLUParser(FindallParser):
    family = "CLU"
    lookalike = re.compile(rf"^{_ABSL_READ}\[\d+\]{_LOOKS}", re.M)
    line = _LINE
    lookalike_line = re.compile(rf"\n{_ABSL_READ}\[\d+\]{_LOOKS}")
    state_fields = {"_last_steps": "last", "_high": "last", "_resumed": "last", "_collection_lines": "sum",
                    "_big_vision_lines": "sum"}
    #: read every line on its own (not a chunk's pairs at once); for tests
    line_by_line: ClassVar[bool] = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._last_steps: dict[str, int] = {}  # the last step of each kind of line (its first tag)
        self._high = -1  # the highest step so far
        self._resumed: list[int] | None = None  # the last restart recorded: its step, the highest step before it
        self._collection_lines = 0
        self._big_vision_lines = 0
        self._lookalikes = 0

    def count_lookalikes(self, text: str) -> int:
        return self._lookalikes  # (every line found looks like a metric line: no second scan)

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        self._lookalikes = len(found)
        if not found:
            return 0, 0
        if self.line_by_line:
            unread = self._take_by_line(chunk, text, found)
        else:
            unread = self._take_at_once(chunk, text, found)
        self.unread_matches.update(unread)
        read = len(found) - len(unread)
        return read, read

    # -- a chunk's lines at once ---------------------------------------------------------------
    def _take_at_once(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> list[int]:
        unread: list[int] = []
        read = found
        if any(map(itemgetter(5), found)):  # (look-alikes: left for the look-alike scan to name)
            lines, read = [], []
            for index, groups in enumerate(found):
                if groups[2]:
                    lines.append(index)
                    read.append(groups)
                else:
                    unread.append(index)
            if not read:
                return unread
        else:
            lines = list(range(len(found)))
        steps, names, singles = list(map(itemgetter(0), read)), list(map(itemgetter(2), read)), list(
            map(itemgetter(4), read))
        collections = list(map(itemgetter(1), read)) if any(map(itemgetter(1), read)) else []
        clu = any(map(itemgetter(3), read))  # (else big_vision's lines alone: a name and a value each)
        # what follows each line's first name: CLU's ``value, name=value, …`` or big_vision's value (the other is "")
        texts = list(map(str.__add__, map(itemgetter(3), read), singles)) if clu else singles
        if collections:
            names = [f"{collection}/{name}" if collection else name
                     for name, collection in zip(names, collections, strict=True)]
            texts = [rest.replace(", ", f", {collection}/") if collection else rest
                     for rest, collection in zip(texts, collections, strict=True)]
        if clu:
            counts = np.fromiter(map(str.count, texts, repeat("=")), np.int64, len(texts)) + 1
        else:
            counts = np.ones(len(texts), dtype=np.int64)
        if len(counts) != int(counts.sum()):  # (lines of several pairs: cut apart at once)
            # names and values in turn (none has "=" or ", ")
            pairs = map(str.__add__, names, map("=".__add__, texts))
            parts = ", ".join(pairs).replace("=", ", ").split(", ")
            if len(parts) != 2 * int(counts.sum()):  # (not met)
                return self._take_by_line(chunk, text, found)
            names, texts = parts[0::2], parts[1::2]
        values, valid = _numbers(texts)
        step_array, good = _steps(steps)
        line_of = np.repeat(np.arange(len(counts)), counts)
        if not valid.all():
            good[line_of[~valid]] = False
        codes = np.array(self.rows.codes(names), dtype=np.int32)
        row_steps = step_array[line_of]
        if good.all():
            first_codes = codes[np.cumsum(counts) - counts]
        else:  # (lines that cannot be read: left for the look-alike scan to name)
            unread = sorted(unread + np.array(lines)[~good].tolist())
            if not good.any():
                return unread
            keep = good[line_of]
            codes, values, row_steps, line_of = codes[keep], values[keep], row_steps[keep], line_of[keep]
            first_codes = codes[np.flatnonzero(np.concatenate(([True], line_of[1:] != line_of[:-1])))]
            mask = good.tolist()
            lines = [line for line, ok in zip(lines, mask, strict=True) if ok]
            if collections:
                collections = [collection for collection, ok in zip(collections, mask, strict=True) if ok]
            singles = [single for single, ok in zip(singles, mask, strict=True) if ok]
            step_array = step_array[good]
        self._collection_lines += len(collections) - collections.count("")
        self._big_vision_lines += len(singles) - singles.count("")  # (big_vision's lines: a single value)
        self._steps_go_on(chunk, text, lines, first_codes, step_array)
        self.rows.extend(codes, row_steps, values)
        return unread

    def _steps_go_on(self, chunk: Chunk, text: str, lines: list[int], keys: np.ndarray, steps: np.ndarray) -> None:
        """Follow the step of every line read (``lines``: their match indices; ``keys``: the code of their first
        tag): when none goes below the last step of its kind, at once; else line by line, where a restart is
        recorded at its line."""
        order = np.argsort(keys, kind="stable")
        grouped, ordered = keys[order], steps[order]
        same = grouped[1:] == grouped[:-1]
        back = bool((ordered[1:][same] < ordered[:-1][same]).any())
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        ends = np.concatenate((starts[1:] - 1, [len(ordered) - 1]))
        names = self.rows.tag_names
        if not back:
            last = self._last_steps
            for start in starts.tolist():
                previous = last.get(names[int(grouped[start])])
                if previous is not None and int(ordered[start]) < previous:
                    back = True
                    break
        if back:
            for k, index in enumerate(lines):
                self._step(names[int(keys[k])], int(steps[k]), chunk, text, index)
            return
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            self._last_steps[names[int(grouped[start])]] = int(ordered[end])
        self._high = max(self._high, int(steps.max()))

    def _step(self, key: str, step: int, chunk: Chunk, text: str, index: int) -> None:
        """The step of a line read whose first tag is ``key``: below the last step of its kind, a restart, unless it
        goes back to the restart recorded last (another kind of line of the same resumed job)."""
        previous = self._last_steps.get(key)
        if previous is not None and step < previous:
            resumed = self._resumed
            if resumed is None or not (resumed[0] <= step and previous <= resumed[1]):
                self.anchor(self._high, None, 0)
                self.anchor(step, chunk, self.match_start(text, index))
                self._resumed = [step, self._high]
        self._last_steps[key] = step
        self._high = max(self._high, step)

    # -- every line on its own (the reference the chunk's reading equals) ----------------------
    def _take_by_line(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> list[int]:
        unread: list[int] = []
        for index, (step_text, collection, name, rest, single, _) in enumerate(found):
            if not name:
                unread.append(index)
                continue
            if single:  # (big_vision's)
                items = [[name, single]]
            else:
                items = [pair.split("=", 1) for pair in f"{name}={rest}".split(", ")]
            prefix = f"{collection}/" if collection else ""
            step = int(step_text)
            if step > LARGEST_STEP or not all(NUMBER_PATTERN.fullmatch(number) for _, number in items):
                unread.append(index)
                continue
            tags = [prefix + tag for tag, _ in items]
            self._step(tags[0], step, chunk, text, index)
            self.rows.extend(self.rows.codes(tags), [step] * len(tags), [float(number) for _, number in items])
            self._collection_lines += bool(collection)
            self._big_vision_lines += bool(single)
        return unread

    def finish(self) -> None:
        notes = ["CLU / big_vision metric lines: step = the bracketed step (a step's lines add up); tags as printed; "
                 "no wall time (absl's line prefix has no year)"]
        self.count_note(self._collection_lines, "line(s) of a writer's collection (t5x's 'collection=train'): tags "
                        "<collection>/<name>")
        self.count_note(self._big_vision_lines, "big_vision line(s) ('[step] name = value')")
        self.notes[:0] = notes


def _steps(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The steps (digits) as int64 and which are at most ``LARGEST_STEP`` (the others 0)."""
    joined = " ".join(texts)
    if joined.isascii() and max(map(len, texts)) <= 18:  # (digits an int64 holds: numpy reads them at once)
        steps = np.fromstring(joined, dtype=np.int64, sep=" ")
        if (steps < LARGEST_STEP).all():
            return steps, np.ones(len(texts), dtype=bool)
    exact = [int(text) for text in texts]
    ok = np.array([step <= LARGEST_STEP for step in exact], dtype=bool)
    return np.array([step if step <= LARGEST_STEP else 0 for step in exact], dtype=np.int64), ok


def _numbers(tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``float()`` of each token (NaN where it raises) and which are numbers (``NUMBER``: a spelling of nan or inf that
    float() takes but ``NUMBER`` does not is none), by the bulk parser."""
    values, valid = parse_some_numbers(" ".join(tokens))
    for k in np.flatnonzero(valid & ~np.isfinite(values)).tolist():
        valid[k] = NUMBER_PATTERN.fullmatch(tokens[k]) is not None
    return values, valid


def detect_clu(window: str) -> bool:
    """Two metric lines of CLU's or big_vision's writer."""
    return at_least_two(_DETECT.finditer(window))


class CLUReader(TextReader):
    name = "clu"
    description = ("CLU LoggingWriter / big_vision metric lines through absl ('… logging_writer.py:48] [4000] "
                   "train_accuracy=0.405, train_loss=3.389', '… utils.py:1268] [0] minival/prec@1 = 0.00098')")
    parser = CLUParser

    def detect(self, window: str) -> bool:
        return detect_clu(window)
