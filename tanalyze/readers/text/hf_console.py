"""Hugging Face Trainer console output (stdout/stderr of a ``Trainer.train()`` run).

The Trainer prints its logs as Python dict reprs, not JSON::

    {'loss': 0.7214, 'grad_norm': 2.74, 'learning_rate': 4.83e-05, 'epoch': 0.34}
    {'eval_loss': 0.448, 'eval_f1': 0.55, 'eval_runtime': 3.2, 'epoch': 1.0}
    {'train_runtime': 805.03, 'train_samples_per_second': 289.1, 'train_steps_per_second': 18.07, 'train_loss': 0.18, 'epoch': 10.0}

mixed with tqdm bars, and ends with ``***** train metrics *****`` blocks of
``key = value`` lines (durations as ``h:mm:ss.xx``). Dicts are read with a
small literal tokenizer (never ``eval``); ``nan``/``inf`` are kept.

The console carries no step, so it is derived, best source first, and the
run's notes say which was used: ``epoch × steps per epoch`` where steps per
epoch come from the banner (``Total optimization steps`` / ``Num Epochs``) or
from the final ``train_runtime × train_steps_per_second`` (of each training, when the console holds several
``train()`` calls, each ended by its summary), snapped to a
multiple of ``logging_steps`` (from the argument dump) for training logs;
otherwise ``k × logging_steps`` for the k-th training log; otherwise the plain
count of logging events. ``epoch`` stays a column.
"""

from __future__ import annotations

import math
import re
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import NAN, config_value, to_float

__all__ = ["HFConsoleParser", "HFConsoleReader", "detect_hf_console", "parse_dict_literal"]

DICT = re.compile(r"\{\s*(['\"])([^'\"\n]{1,200})\1\s*:[^{}\n]*\}")
_DICT_PAIR = re.compile(
    r"""(['"])((?:(?!\1)[^\\\n]|\\.)*)\1\s*:\s*('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\[[^\]\n]*\]|\([^)\n]*\)|[^,}\n]+)"""
)
_FIRST_KEYS = ("loss", "eval_", "train_", "test_", "predict_", "learning_rate", "grad_norm", "epoch", "total_flos")
RUNNING_TRAINING = re.compile(r"\*\*\*\*\* Running training \*\*\*\*\*")
BANNER = re.compile(
    r"(Num examples|Num Epochs|Total optimization steps|Gradient Accumulation steps|Number of trainable parameters"
    r"|Instantaneous batch size per device|Total train batch size \(w\. parallel, distributed & accumulation\))"
    r" = ([\d,]+)"
)
ARGS_START = re.compile(r"TrainingArguments\(\n")
ARGS_END = re.compile(r"^\)$", re.M)
ARG = re.compile(r"^([a-z_][a-z0-9_]*)=([^\n]*?),?$", re.M)
METRICS_HEADER = re.compile(r"\*\*\*\*\* (\w+) metrics \*\*\*\*\*[ \t]*\n")
METRIC_KV = re.compile(r"(?:[^\n>]*>>)?[ \t]+([A-Za-z_][\w./-]*)[ \t]+=[ \t]+([^\n]*?)[ \t]*\n")
#: How the lines that end a metrics block start (the next block's header, a logger's line, a dict): any other line
#: followed by a ``key = value`` line is a damaged line inside the block.
_NOT_IN_A_BLOCK = ("*****", "[", "{")
_BANNER_SPAN = 4000
#: The training bar tqdm redraws right after a dict it printed: '\n 12%|█▎        | 50/400 [00:01<…'
BAR_AFTER = re.compile(r"\s{0,200}?[ \d]{0,2}\d%\|[^|\n]{0,100}\| *(\d+)/(\d+) \[")
_DURATION = re.compile(r"^(\d+):(\d\d):(\d\d(?:\.\d+)?)$")
_STEP_KEYS = ("step", "global_step")
_NUMPY = {"b": np.int8, "d": np.float64, "q": np.int64}


def parse_dict_literal(text: str) -> tuple[dict[str, float], int]:
    """Numeric items of a printed Python dict, and how many items were not numbers.

    A literal tokenizer: quoted keys, values that are numbers or nan/inf
    spellings are kept (also when printed as strings, as newer Trainers do:
    ``{'loss': '3.052'}``); other strings, lists, None and booleans are counted, not kept.
    """
    if text.startswith("{'") and text.endswith("}"):  # the common all-numbers dict, by plain splitting
        out: dict[str, float] = {}
        try:
            for item in text[2:-1].split(", '"):
                key, sep, raw = item.partition("': ")
                if not sep or "'" in key:
                    break
                # newer Trainers print the values as strings: {'loss': '3.052', 'epoch': '0.02'}
                out[key] = float(raw[1:-1] if raw[:1] == "'" and raw[-1:] == "'" else raw)
            else:
                return out, 0
        except ValueError:
            pass
    return _parse_dict_tokens(text)


def _parse_dict_tokens(text: str) -> tuple[dict[str, float], int]:
    out: dict[str, float] = {}
    skipped = 0
    for _, key, raw in _DICT_PAIR.findall(text):
        raw = raw.strip()
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            raw = raw[1:-1]  # a number printed as a string is still a number
            if to_float(raw) is None:
                skipped += 1
                continue
        if raw[:1] in "'\"[(" or raw in ("None", "True", "False"):
            skipped += 1
            continue
        number = to_float(raw)
        if number is None:
            skipped += 1
        else:
            out[key] = number
    return out, skipped


def _cleared_before(text: str, pos: int) -> bool:
    """Whether the dict at ``pos`` follows tqdm's clear-line (a line of spaces): tqdm.write printed it,
    so the bar drawn right after it is the redraw at the same step."""
    start = text.rfind("\n", 0, pos)
    if start <= 0:
        return False
    previous = text.rfind("\n", 0, start) + 1
    line = text[previous:start]
    return bool(line) and line.isspace() and not text[start + 1 : pos].strip(" \t")


_BAR_BEFORE = re.compile(r"\| *\d+/\d+ \[[^\]\n]{0,100}\]$")


def _cleared_inline(text: str, pos: int) -> bool:
    """Whether the dict at ``pos`` follows, on its line, a tqdm bar and the blanks that cleared it: the capture
    lost its carriage returns (copied through a tool that drops them), so the bar drawn after the dict is the
    redraw at the dict's step as in :func:`_cleared_before`."""
    head = text[max(0, pos - 400) : pos]
    bar = head.rstrip(" ")
    return len(head) - len(bar) >= 2 and bar.endswith("]") and _BAR_BEFORE.search(bar, max(0, len(bar) - 200)) is not None


def _whole(value: float) -> int | None:
    """A logged step as an int: finite and within the int64 step column; None otherwise."""
    if not math.isfinite(value) or not _STEP_RANGE[0] < value < _STEP_RANGE[1]:
        return None
    return int(value)


def _metric_value(text: str) -> float | None:
    number = to_float(text)
    if number is not None:
        return number
    m = _DURATION.match(text.strip())
    if m:
        return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    return None


TRAIN, EVAL, FINAL, OTHER = 0, 1, 2, 3
_NO_STEP = -(2**62)
_EPOCH_LIMIT = 1e12  # an epoch beyond this (or not finite) is damage: kept in the epoch column, not used for steps
_STEP_RANGE = (-(2**62), 2**62)  # exclusive: steps outside it are not steps (and _NO_STEP is its low end)


def _kind(values: dict[str, float], raw: str) -> int:
    if "train_runtime" in values:
        return FINAL
    if ("'eval_" in raw or '"eval_' in raw) and any(k.startswith("eval_") for k in values):
        return EVAL
    if "loss" in values:
        return TRAIN
    return OTHER


class _Events:
    """One logging event per dict, in compact arrays: its rows are written at once, their step later."""

    TYPES = {"kind": "b", "epoch": "d", "line": "q", "step": "q", "bar": "q", "start": "q"}

    def __init__(self) -> None:
        self.kind = array("b")
        self.epoch = array("d")
        self.line = array("q")
        self.step = array("q")  # the dict's own 'step' key, else _NO_STEP until derived
        self.bar = array("q")  # N of the progress bar redrawn right after the dict, else -1
        self.start = array("q")  # first row of the event, counted in the file

    def __len__(self) -> int:
        return len(self.kind)

    def columns(self) -> dict[str, array]:
        return {name: getattr(self, name) for name in self.TYPES}

    def add(self, kind: int, epoch: float, line: int, step: int, bar: int, start: int) -> None:
        for column, value in ((self.kind, kind), (self.epoch, epoch), (self.line, line), (self.step, step),
                              (self.bar, bar), (self.start, start)):
            column.append(value)

    def add_many(self, events: list[tuple[int, float, int, int, int, int]]) -> None:
        """Events as :meth:`add` takes them, in order: a column at a time."""
        if events:
            for column, values in zip((self.kind, self.epoch, self.line, self.step, self.bar, self.start),
                                      zip(*events, strict=True), strict=True):
                column.extend(values)


class HFConsoleParser(TextParser):
    family = "hf_console"
    lookalike = re.compile(r"\{\s*['\"](?:loss|eval_\w*|train_runtime|learning_rate)['\"]\s*:")
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._events = _Events()
        self._dict_positions: list[int] = []
        self._bar_totals: dict[str, int] = {}
        self._finals: list[tuple[float, dict[str, float]]] = []
        self._blocks: list[tuple[str, float, int]] = []  # '***** … metrics *****' key, value, line
        self._banner: dict[str, int] = {}
        self._trainings = 0
        self._in_args = False
        self._args: dict[str, str] = {}
        self._non_numeric = 0
        self._block_open = False  # a metrics block ended the chunk: its lines may go on in the next one
        self._banner_left = 0  # characters of a banner's span past the chunk, to read in the next one
        self._pending: list | None = None  # the event of a dict that ended the chunk, its bar maybe in the next

    def feed(self, chunk: Chunk) -> None:
        """Dicts in one loop; the rare structure lines (banner, argument dump, metrics blocks) by literal search.

        What a line starts may go on in the next chunk (a metrics block, a banner, the bar redrawn after a
        dict that ends the chunk): it is picked up there, so that where chunks (and parts) begin changes nothing.
        """
        text = chunk.text
        if self._pending is not None:
            self._settle_pending(text)
        if self._block_open:
            self._read_block(chunk, 0)
        if self._banner_left:
            self._read_banner(text, 0, self._banner_left)
        events = self._events
        positions = self._dict_positions
        rows = self.rows
        redraws = chunk.redraws
        tags: list[str] = []
        values_out: list[float] = []
        epochs: list[float] = []
        added: list[tuple[int, float, int, int, int, int]] = []  # the chunk's events, added at once
        first_row = rows.total
        self._dicts_in_chunk = 0
        for m in DICT.finditer(text):
            self._dicts_in_chunk += 1
            first = m.group(2)
            raw = m.group(0)
            if not first.startswith(_FIRST_KEYS) and "'epoch'" not in raw and '"epoch"' not in raw:
                continue
            values, skipped = parse_dict_literal(raw)
            self._non_numeric += skipped
            if not values:
                continue
            epoch = values.pop("epoch", NAN)
            step = _NO_STEP
            if "step" in values or "global_step" in values:
                for key in _STEP_KEYS:
                    if key in values:
                        given = _whole(values.pop(key))
                        if given is None:
                            self._bad_steps += 1  # the dict is kept; its step is derived like any other's
                        else:
                            step = given
                if not values:
                    continue
            kind = _kind(values, raw)
            if kind == FINAL:
                self._finals.append((epoch, values))
            pos = m.start()
            positions.append(pos)
            # a line number is only ever shown for a restart: look it up where the epoch (or step) goes back
            if kind == TRAIN and (epoch < self._last_epoch or (step != _NO_STEP and step < self._last_given)):
                line = chunk.line_of(pos)
            else:
                line = -1
            if kind == TRAIN:
                self._last_epoch = epoch if epoch == epoch else self._last_epoch
                self._last_given = step if step != _NO_STEP else self._last_given
            if abs(epoch) >= _EPOCH_LIMIT:  # inf, or absurd: steps come from usable epochs only (NaN is never >=)
                self._bad_epochs += 1
                kept_epoch = NAN
            else:
                kept_epoch = epoch
            event = (kind, kept_epoch, line, step, -1, first_row + len(values_out))
            if (redraws and _cleared_before(text, pos) and chunk.after_carriage_return(pos)) or _cleared_inline(text, pos):
                # tqdm.write cleared the bar for this dict: the bar redrawn right after it has its step
                if text[m.end():].isspace():  # ... in the next chunk
                    self._pending = [*event, text[m.end():]]
                else:
                    added.append(self._with_bar(event, BAR_AFTER.match(text, m.end())))
            else:
                added.append(event)
            tags.extend(values)
            values_out.extend(values.values())
            epochs.extend([epoch] * len(values))
        events.add_many(added)
        if tags:
            rows.extend(rows.codes(tags), [0] * len(tags), values_out, epoch=epochs)
        if chunk.contains("***** "):
            for m in RUNNING_TRAINING.finditer(text):
                self._trainings += 1
                self._read_banner(text, m.end())
            for m in METRICS_HEADER.finditer(text):
                self.mark(chunk, m.start())
                self._read_block(chunk, m.end())
        if self._in_args or chunk.contains("TrainingArguments("):
            self._read_arguments(text)

    def _with_bar(self, event: tuple, bar: re.Match[str] | None) -> tuple[int, float, int, int, int, int]:
        """A dict's event with the step of the bar drawn after it (None: no bar), that bar's total counted."""
        if bar is not None:
            self._bar_totals[bar.group(2)] = self._bar_totals.get(bar.group(2), 0) + 1
        kind, epoch, line, step, _, start = event
        return kind, epoch, line, step, int(bar.group(1)) if bar is not None and len(bar.group(1)) < 18 else -1, start

    def _settle_pending(self, text: str = "") -> None:
        """The event of the dict that ended the last chunk, with the bar at the start of ``text`` (the next
        chunk; none when the file ended)."""
        pending, self._pending = self._pending, None
        assert pending is not None
        *event, gap = pending
        self._events.add(*self._with_bar(tuple(event), BAR_AFTER.match(gap + text[:4096]) if text else None))

    _dicts_in_chunk = 0
    _bad_steps = 0
    _bad_epochs = 0
    _last_epoch = -math.inf
    _last_given = -(2**62)

    def may_have_lookalikes(self, chunk: Chunk) -> bool:
        # every look-alike starts with '{': if each '{' began a dict that was matched, none is left
        return chunk.count("{") != self._dicts_in_chunk or chunk.incomplete

    def end_chunk(self, chunk: Chunk) -> None:
        positions, self._dict_positions = self._dict_positions, []
        if self.may_have_lookalikes(chunk):  # the look-alike scan needs the lines that were read
            text = chunk.text
            self._marked.update(text.rfind("\n", 0, pos) + 1 for pos in positions)
        else:
            self.parsed_lines += len(positions)
        super().end_chunk(chunk)

    def _read_banner(self, text: str, start: int, span: int = _BANNER_SPAN) -> None:
        """The banner's counts in the ``span`` characters after ``start`` (what is past the chunk, in the next)."""
        stop = start + span
        for m in BANNER.finditer(text, start, stop):
            name, value = m.group(1), int(m.group(2).replace(",", ""))
            self._banner.setdefault(name, value) if name == "Num examples" else self._banner.__setitem__(name, value)
            if name == "Number of trainable parameters":
                self._banner_left = 0
                return
        self._banner_left = max(0, stop - len(text))

    def _read_arguments(self, text: str) -> None:
        start = 0
        while True:
            if not self._in_args:
                m = ARGS_START.search(text, start)
                if m is None:
                    return
                self._in_args, start = True, m.end()
            end = ARGS_END.search(text, start)
            for arg in ARG.finditer(text, start, end.start() if end is not None else len(text)):
                self._args.setdefault(arg.group(1), arg.group(2))
            if end is None:
                return  # the dump goes on in the next chunk
            self._in_args, start = False, end.end() + 1

    def _read_block(self, chunk: Chunk, pos: int) -> None:
        """The ``  key = value`` lines right after a '***** … metrics *****' line (to the next chunk if need be)."""
        text = chunk.text
        while True:
            m = METRIC_KV.match(text, pos)
            if m is None:
                end = text.find("\n", pos)
                if 0 <= end and not text.startswith(_NOT_IN_A_BLOCK, pos) and METRIC_KV.match(text, end + 1):
                    pos = end + 1  # one damaged line inside the block (garbled, cut, junk): the block goes on after it
                    continue
                self._block_open = pos >= len(text)
                return
            self.mark(chunk, pos)
            value = _metric_value(m.group(2))
            if value is None:
                self._non_numeric += 1
            elif m.group(1) != "epoch":
                self._blocks.append((m.group(1), value, chunk.line_of(pos)))
            pos = m.end()

    def start_file(self, path: Path) -> None:
        super().start_file(path)
        self._in_args = False

    # -- resuming ---------------------------------------------------------------------------------------
    _COUNTS = ("_trainings", "_in_args", "_non_numeric", "_bad_steps", "_bad_epochs", "_last_epoch", "_last_given",
               "_block_open", "_banner_left")

    def snapshot(self) -> dict[str, Any]:
        state = super().snapshot()
        state["hf"] = {
            **{name: getattr(self, name) for name in self._COUNTS},
            "bar_totals": dict(self._bar_totals), "finals": [[epoch, dict(values)] for epoch, values in self._finals],
            "blocks": [list(block) for block in self._blocks], "banner": dict(self._banner), "args": dict(self._args),
            "pending": list(self._pending) if self._pending is not None else None,
        }
        return state

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        hf = state["hf"]
        for name in self._COUNTS:
            setattr(self, name, hf[name])
        self._bar_totals = dict(hf["bar_totals"])
        self._finals = [(epoch, dict(values)) for epoch, values in hf["finals"]]
        self._blocks = [(key, value, line) for key, value, line in hf["blocks"]]
        self._banner, self._args = dict(hf["banner"]), dict(hf["args"])
        self._pending = list(hf["pending"]) if hf["pending"] is not None else None

    def finish_changes_rows(self) -> bool:
        return True  # steps are derived from the whole log

    def aux_columns(self) -> dict[str, array]:
        return self._events.columns()

    def load_aux(self, columns: dict[str, np.ndarray]) -> None:
        for name, typecode in _Events.TYPES.items():
            setattr(self._events, name, array(typecode, np.asarray(columns[name], _NUMPY[typecode]).tobytes()))

    def absorb(self, other: TextParser) -> None:
        """The next file's dicts and banner: steps are derived over both (the banner is on stderr, dicts on stdout)."""
        assert isinstance(other, HFConsoleParser)
        for parser in (self, other):
            if parser._pending is not None:
                parser._settle_pending()
        offset = self.rows.total
        super().absorb(other)
        for name, column in other._events.columns().items():
            getattr(self._events, name).extend(column if name != "start" else array("q", (s + offset for s in column)))
        for total, count in other._bar_totals.items():
            self._bar_totals[total] = self._bar_totals.get(total, 0) + count
        self._finals.extend(other._finals)
        self._blocks.extend(other._blocks)
        for name, value in other._banner.items():
            self._banner.setdefault(name, value) if name == "Num examples" else self._banner.__setitem__(name, value)
        for name, value in other._args.items():
            self._args.setdefault(name, value)
        self._trainings += other._trainings
        self._non_numeric += other._non_numeric
        self._bad_steps += other._bad_steps
        self._bad_epochs += other._bad_epochs

    # -- steps ----------------------------------------------------------------------------------------
    def _arg_int(self, name: str) -> int | None:
        raw = self._args.get(name)
        if raw is None:
            return None
        number = to_float(raw)
        return int(number) if number is not None and number == int(number) else None

    def _steps_per_epoch(self, lo: int = 0, hi: int | None = None, finals: list[int] | None = None
                         ) -> tuple[float | None, str]:
        """Steps per epoch of the training whose events are ``lo:hi`` and whose end-of-training summaries are
        ``finals`` (indices into ``_finals``; None: the whole log, one training, whose banner counts too)."""
        total = self._banner.get("Total optimization steps")
        epochs = self._banner.get("Num Epochs")
        max_steps = self._arg_int("max_steps")
        if finals is None and total and epochs and (max_steps is None or max_steps <= 0) and \
                total / epochs < _STEP_RANGE[1]:
            return total / epochs, f"Total optimization steps {total:,} / Num Epochs {epochs} (banner)"
        events = self._events
        span = range(lo, len(events) if hi is None else hi)
        ratios = sorted(
            events.bar[i] / events.epoch[i]
            for i in span
            if events.bar[i] > 0 and events.epoch[i] > 0 and events.kind[i] == TRAIN
            and events.bar[i] / events.epoch[i] < _STEP_RANGE[1]
        )
        if ratios:
            return ratios[len(ratios) // 2], "progress-bar step / epoch of the training logs (median)"
        for epoch, values in reversed([self._finals[k] for k in finals] if finals is not None else self._finals):
            runtime, rate = values.get("train_runtime"), values.get("train_steps_per_second")
            if runtime and rate and 0 < runtime * rate < _STEP_RANGE[1] and 0 < epoch < _EPOCH_LIMIT:
                steps = round(runtime * rate)
                return steps / epoch, f"train_runtime × train_steps_per_second ≈ {steps:,} steps over {epoch:g} epochs"
        logging = self._arg_int("logging_steps")
        trains = [i for i in span if events.kind[i] == TRAIN and events.epoch[i] > 0]
        if logging and trains:
            last = events.epoch[trains[-1]]
            return len(trains) * logging / last, f"{len(trains)} training logs × logging_steps {logging}"
        return None, ""

    def _training_spans(self) -> list[tuple[int, int, list[int]]]:
        """The trainings of the log, each ``train()`` ended by its summary (``train_runtime``): their events
        (``lo:hi``) and the indices of their summaries in ``_finals``; one span when training logs follow no summary."""
        events = self._events
        spans: list[tuple[int, int, list[int]]] = []
        lo, finals, seen = 0, [], 0
        for i in range(len(events)):
            if events.kind[i] == FINAL:
                finals.append(seen)
                seen += 1
                if any(events.kind[j] == TRAIN for j in range(i + 1, len(events))):
                    spans.append((lo, i + 1, finals))
                    lo, finals = i + 1, []
        spans.append((lo, len(events), finals))
        return spans

    def _logging_interval(self, spe: float | None, lo: int = 0, hi: int | None = None) -> tuple[int | None, bool]:
        """``logging_steps`` from the argument dump, else estimated from the epochs of the training logs (of the
        training whose events are ``lo:hi``)."""
        logging = self._arg_int("logging_steps")
        if logging or not spe:
            return logging, False
        run: list[float] = []
        events = self._events
        for i in range(lo, len(events) if hi is None else hi):
            epoch = events.epoch[i]
            if events.kind[i] == TRAIN and events.step[i] == _NO_STEP and not math.isnan(epoch):
                if run and epoch < run[-1]:
                    break  # the first uninterrupted stretch only
                run.append(epoch)
        if len(run) < 2 or run[-1] <= run[0]:
            return None, False
        return max(1, round((run[-1] - run[0]) * spe / (len(run) - 1))), True

    def finish(self) -> None:
        if self._pending is not None:
            self._settle_pending()
        events = self._events
        if not len(events) and not self._blocks:
            self._hparams()
            return
        trainings = self._training_spans()
        sources = []
        for lo, hi, finals in trainings:
            spe, source = self._steps_per_epoch(lo, hi, finals if len(trainings) > 1 else None)
            sources.append((spe, source))
        spe, source = sources[-1]
        interval, estimated = self._logging_interval(spe)
        eval_every = self._arg_int("eval_steps") or interval
        tolerance = 0.0
        several = len(trainings) > 1

        def snap(raw: float, every: int | None) -> int:
            if every:
                snapped = round(raw / every) * every
                if abs(raw - snapped) <= tolerance:
                    return snapped
            return round(raw)

        last_train: int | None = None
        last_step = 0
        count = 0
        how: set[str] = set()
        derived = array("q", events.step)
        bars = events.bar
        starts = {lo: index for index, (lo, _, _) in enumerate(trainings)}
        for i in range(len(events)):
            if i in starts:  # a training's own steps per epoch (each train() of one console counts from 0)
                spe = sources[starts[i]][0]
                if several:
                    lo, hi, _ = trainings[starts[i]]
                    interval, estimated = self._logging_interval(spe, lo, hi)
                    eval_every = self._arg_int("eval_steps") or interval
                # epochs are printed with 2 decimals: an epoch-derived step is known to ± 0.005 × steps per epoch
                tolerance = 0.005 * spe + 1 if spe else 0.0
                last_train, count = None, 0
            kind, epoch = events.kind[i], events.epoch[i]
            if kind == TRAIN:
                count += 1
            if derived[i] != _NO_STEP:
                how.add("step key in the dict")
                step = derived[i]
            elif bars[i] >= 0 and (not spe or math.isnan(epoch) or abs(bars[i] - epoch * spe) <= tolerance):
                how.add("bar")  # the bar redrawn right after the dict, when its epoch agrees
                step = bars[i]
            elif spe and math.isfinite(epoch * spe):
                how.add("epoch")
                raw = epoch * spe
                if kind == TRAIN:
                    expected = (last_train or 0) + interval if interval else None
                    # consecutive logs are one interval apart: keep counting while the epoch agrees
                    step = expected if expected is not None and abs(raw - expected) <= tolerance else snap(raw, interval)
                elif epoch == int(epoch):
                    step = round(raw)
                elif last_train is not None and abs(raw - last_train) <= tolerance:
                    step = last_train  # evaluation right after the training log of the same step
                else:
                    step = snap(raw, eval_every)
            elif kind == TRAIN:
                how.add("logging_steps" if interval else "count")
                step = count * interval if interval else count
            else:
                how.add("previous")
                step = last_step
            if not _STEP_RANGE[0] < step < _STEP_RANGE[1]:  # an absurd epoch or interval in a damaged log
                self._bad_steps += 1
                step = last_step
            derived[i] = step
            if kind == TRAIN:
                self.anchor(step, None, 0, line=events.line[i] if events.line[i] >= 0 else None)
                last_train = step
            last_step = step
        rows = self.rows
        ends = list(events.start[1:]) + [len(rows)]
        for i in range(len(events)):
            start, end = events.start[i], ends[i]
            rows.steps[start:end] = array("q", [derived[i]]) * (end - start)
        final_step = max(derived, default=0)
        at_final = {rows.tag_names[rows.tags[r]] for i in range(len(events)) if derived[i] == final_step
                    for r in range(events.start[i], ends[i])}
        kept = [(key, value) for key, value, _ in self._blocks if key not in at_final]
        if kept:
            rows.extend(rows.codes([k for k, _ in kept]), [final_step] * len(kept), [v for _, v in kept])
        if len(trainings) > 1 and len({round(value or 0, 6) for value, _ in sources}) > 1:
            source = "; ".join(f"training {k + 1}: {value:g} steps per epoch ({why})" if value else
                               f"training {k + 1}: none" for k, (value, why) in enumerate(sources))
            spe = None
        self._notes(spe, source, interval if not estimated else None, how, len(self._blocks) - len(kept))
        if estimated and "epoch" in how:
            self.notes.insert(1, f"logging interval estimated at {interval} steps from the epochs (no logging_steps in the log)")
        self._hparams()

    def _notes(self, spe: float | None, source: str, logging: int | None, how: set[str], dropped: int) -> None:
        notes = []
        if "bar" in how:
            total = max(self._bar_totals, key=self._bar_totals.get) if self._bar_totals else "?"
            notes.append(
                f"the console carries no step: step = N of the progress bar (N/{total}) that tqdm redraws right "
                "after each logged dict"
            )
        if "epoch" in how:
            snap = f", training logs snapped to multiples of logging_steps {logging}" if logging else ""
            lead = "other logs:" if "bar" in how else "the console carries no step:"
            per = f"{spe:g} steps per epoch" if spe else "the steps per epoch of its training"
            notes.append(f"{lead} step = round(epoch × {per}) ({source}){snap}")
        if "logging_steps" in how:
            every = f"logging_steps {logging}" if logging else "the logging interval estimated from the epochs"
            notes.append(f"the console carries no step: the k-th training log is step k × {every}")
        if "count" in how:
            notes.append("the console carries no step and no logging_steps: step = count of training logs so far")
        if "previous" in how:
            notes.append("logs without an epoch are keyed by the previous log's step")
        if "step key in the dict" in how:
            notes.append("dicts with a 'step' key use it")
        if dropped:
            notes.append(f"{dropped} '***** … metrics *****' value(s) already logged in a dict at the final step were not repeated")
        if self._blocks:
            notes.append("'***** … metrics *****' blocks are keyed by the final step (h:mm:ss durations in seconds)")
        if self._non_numeric:
            notes.append(f"{self._non_numeric} logged value(s) that are not numbers were skipped")
        if self._bad_epochs:
            notes.append(f"{self._bad_epochs} epoch value(s) that are not finite or not below {_EPOCH_LIMIT:g} were not "
                         "used to derive steps (kept in the epoch column)")
        if self._bad_steps:
            notes.append(f"{self._bad_steps} step(s) that are not finite or not below 2**62 (a 'step' key, or one "
                         "derived from an absurd epoch) were ignored: those dicts are keyed like dicts without a step")
        if self._trainings > 1:
            notes.append(f"{self._trainings} '***** Running training *****' banners: the log holds several trainings")
        self.notes[:0] = notes

    def _hparams(self) -> None:
        for key, value in self._banner.items():
            self.hparams.setdefault(key, value)
        for key, raw in self._args.items():
            self.hparams.setdefault(key, config_value(raw))


_HF_DICT = re.compile(r"\{\s*['\"](?:loss|eval_loss|train_runtime|learning_rate|grad_norm)['\"]\s*:")
#: the Trainer's banner (not printed by a script's own logger, ``__main__``: accelerate's ``*_no_trainer.py`` examples
#: copy it, ``[RANK 0]`` after the logger's name since accelerate 1.13)
_HF_BANNER = re.compile(r"^(?![^\n]*__main__ - )[^\n]*\*\*\*\*\* Running training \*\*\*\*\*[^\n]*\n[^\n]*Num examples = ",
                        re.M)


def detect_hf_console(window: str) -> bool:
    return bool(_HF_DICT.search(window) or _HF_BANNER.search(window))


class HFConsoleReader(TextReader):
    name = "hf_console"
    description = "Hugging Face Trainer console output ({'loss': …, 'epoch': …} dicts, metrics blocks)"
    parser = HFConsoleParser
    cache_version = 6  # 5: steps from the bar redrawn after a dict in a capture that lost its carriage returns;
    #                   6: each train() of a console its own steps per epoch

    def detect(self, window: str) -> bool:
        return detect_hf_console(window)
