"""tqdm progress bars with metrics in their postfix: Lightning's ``TQDMProgressBar`` and hand-written loops'
``tqdm(loader, desc=f"Epoch {e}").set_postfix(loss=…)``, as a job's stderr keeps them::

    Epoch 1:  44%|████▍     | 22/50 [00:00<00:00, 152.15it/s, v_num=0, train_loss=0.0485, val_loss=0.136]
    Epoch 3/10:  0%|          | 0/40 [00:00<?, ?it/s, loss=1.36, lr=0.05]

tqdm redraws a bar after ``\\r``; each redraw is a line here. A batch's values are those of the last
redraw at its position: the bar's count, or, when the count lags (a loop's own bar only refreshes its
count now and then; its postfix is redrawn at every ``set_postfix``), the number of times the postfix
changed in the epoch so far (there, two batches in a row whose values print alike are one).

Step = ``(epoch − base) × batches per epoch + batch index`` (from 0, as Lightning's own loggers count its
steps); ``base`` is the first epoch printed when it is 0 or 1 (Lightning counts from 0, most loops from 1),
else 0 (a resumed job); a bar without an epoch in its description counts its batches from 0. A value of an
evaluation (a name with ``val``, ``eval`` or ``test``) that tqdm keeps showing after it was logged
(Lightning's ``val_loss`` during the next epoch) is read when it changes, at the step it first shows (an
evaluation that prints the same digits as the one before gives no new point). ``v_num`` (the logger's
version) is not a metric. A line the loop prints with an evaluation's values between its bars
(``Epoch 3: val_loss=0.52, val_acc=0.81``) is read at the step of the last batch drawn before it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text.generic import GenericRules
from tanalyze.readers.values import NUMBER, to_float

__all__ = ["TqdmConsoleParser", "TqdmConsoleReader", "detect_tqdm_console"]

#: a bar: description, percentage, the bar, count/total, [elapsed<remaining, rate(, postfix)]
BAR = re.compile(
    r"^(?P<desc>[^\n|]{0,120}?):?[ \t]*(?:\d{1,3}%)?\|[^|\n]{0,200}\|[ \t]*(?P<i>\d+)/(?P<n>\d+|\?)"
    r"[ \t]*\[[^\],\n]*(?:,[^\],\n]*(?:,[ \t]*(?P<post>[^\]\n]*))?)?\][^\n]*$", re.M)
_EPOCH = re.compile(r"\b[Ee]poch[ \t:]*(\d+)")
_EVALUATION = re.compile(r"valid|eval|test|sanity", re.IGNORECASE)
_PAIR = re.compile(r"([A-Za-z_][\w./-]{0,63})=([^,\]]+)")
_SHOWN_AFTER = re.compile(r"(?:^|[/_])(?:val|valid|validation|eval|test)(?:$|[/_])", re.IGNORECASE)
_NOT_METRICS = frozenset({"v_num"})
#: the postfix's pairs that are no batch's values: an evaluation's, the logger's version
_NOT_BATCH_PAIRS = re.compile(r"(?:^|,)[ \t]*(?:[\w./-]*(?:val|valid|validation|eval|test)[\w./-]*|v_num)=[^,\]]*",
                              re.IGNORECASE)


def _batch_values(post: str) -> str:
    """The postfix without the pairs that are no batch's values (what tells a new batch)."""
    return _NOT_BATCH_PAIRS.sub("", post)


@functools.lru_cache(maxsize=256)
def _epoch_of(desc: str) -> int | None:
    """The epoch a bar's description names (0 without one); None for an evaluation's own bar."""
    found = _EPOCH.search(desc)
    if found is None:
        return None if _EVALUATION.search(desc) else 0
    return int(found.group(1))


#: a line the loop printed with an evaluation's value (``Epoch 3: val_loss=0.52``, ``Validation Loss: 0.61``)
PRINTED_EVALUATION = re.compile(
    r"^(?![^\n|]*\|[^\n|]*\|)"  # (not a bar: no "|…|" in the line)
    rf"[^\n]*?\b(?:val|valid|validation|eval|evaluation|test)\w*(?: [A-Za-z]\w*)?[ \t]*[:=][ \t]*{NUMBER}[^\n]*$",
    re.M | re.IGNORECASE)
_PRINTED_PAIR = re.compile(rf"([A-Za-z][\w ./-]{{0,40}}?)[ \t]*[:=][ \t]*({NUMBER})")
#: names of a printed line's counters, not metrics
_COUNTERS = frozenset({"epoch", "step", "iter", "iteration", "batch"})
#: a window that shows a bar with a metric in its postfix
_DETECT = re.compile(r"\|[ \t]*\d+/\d+[ \t]*\[[^\]\n]*,[^\]\n]*,[ \t]*[^\]\n]*[A-Za-z_]\w*=[-+.\d]")


class TqdmConsoleParser(TextParser):
    family = "tqdm"
    lookalike = None
    patterns = ()  # (feed reads the bars itself)
    state_fields = {"_epoch": "last", "_base": "last", "_batches": "last", "_changes": "last", "_count": "last",
                    "_post": "last", "_key": "last", "_pending": "last", "_shown": "last", "_recorded_step": "last",
                    "_bars": "sum", "_recorded": "sum", "_evaluations": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._epoch: int | None = None
        self._base: int | None = None
        self._batches: int | None = None
        self._changes = 0  # postfix changes in this epoch's bar
        self._count = 0  # the largest count it drew
        self._post: str | None = None  # the last postfix drawn
        self._key = ""  # its batch's values (without an evaluation's)
        self._pending: list | None = None  # [step, postfix, new values]: the last redraw of the current position
        self._shown: dict[str, str] = {}  # the value each evaluation-like name was last read at
        self._recorded_step: int | None = None
        self._bars = 0
        self._recorded = 0
        self._evaluations = 0  # printed evaluation lines read
        self._out: tuple[list[str], list[int], list[float]] = ([], [], [])

    def feed(self, chunk: Chunk) -> None:
        """Every redraw of the chunk in one loop (a bar is redrawn twice a batch: the per-line machinery of the
        other parsers would cost more than the reading), the rows added at once."""
        text = chunk.text
        printed = list(PRINTED_EVALUATION.finditer(text))
        if printed:  # the loop prints its evaluations too: bars and those lines in their order
            events = sorted([(m.start(), m) for m in BAR.finditer(text)] + [(m.start(), m) for m in printed],
                            key=lambda item: item[0])
            bars = 0
            for _, m in events:
                if m.re is BAR:
                    bars += 1
                    self._bar(m.group("desc"), m.group("i"), m.group("n"), m.group("post"))
                else:
                    self._printed(m.group(0))
            self.parsed_lines += len(printed)
        else:
            found = BAR.findall(text)
            bar = self._bar
            for desc, count, total, post in found:
                bar(desc, count, total, post)
            bars = len(found)
        self._bars += bars
        self.parsed_lines += bars
        tags, steps, values = self._out
        if tags:
            self.rows.extend(self.rows.codes(tags), steps, values)
            self.anchor(steps[-1], None, 0)
            self._out = ([], [], [])

    def _printed(self, line: str) -> None:
        """A line the loop printed with an evaluation's values (``Epoch 3: val_loss=0.52, val_acc=0.81``): its
        pairs at the step of the last batch drawn (the evaluation ran after it)."""
        step = self._pending[0] if self._pending is not None else self._recorded_step
        if step is None:
            return
        tags, steps, values = self._out
        for name, text in _PRINTED_PAIR.findall(line):
            name = name.strip()
            value = to_float(text)
            if value is None or name.lower() in _COUNTERS:
                continue
            tags.append(name)
            steps.append(step)
            values.append(value)
        self._evaluations += 1

    def _bar(self, desc: str, count_text: str, total: str, post: str) -> None:
        epoch = _epoch_of(desc)
        if epoch is None:
            return  # an evaluation's own bar: its values show on the training bar once it is done
        if not post or "=" not in post or total == "?":
            return
        if self._base is None:
            self._base = epoch if epoch in (0, 1) else 0
        # a new batch's values (an evaluation's showing up is none; Lightning's bar starts an epoch with the
        # last batch's values)
        changed = False
        if post != self._post:
            key = _batch_values(post)
            changed = key != self._key and "=" in key
            self._key = key
        count = int(count_text)
        if epoch != self._epoch:
            self._epoch, self._changes, self._count = epoch, int(changed), count
        else:
            if changed:
                self._changes += 1
            # the count moved on from where the values were: a batch whose values may print as the last one's
            # (Lightning's count is exact); a lagging count catching up is a redraw
            changed = changed or (count > self._count >= self._changes)
            self._count = max(self._count, count)
        self._post = post
        self._batches = int(total)
        done = max(count, self._changes)  # batches done (the count, unless it lags)
        step = (epoch - self._base) * self._batches + max(done - 1, 0)
        pending = self._pending
        if pending is not None:
            if pending[0] == step:
                changed = changed or pending[2]  # one batch redrawn: new values if any redraw brought some
            else:
                self._flush()
        self._pending = [step, post, changed]

    def _flush(self) -> None:
        step, post, changed = self._pending
        self._pending = None
        tags, steps, values = self._out
        found = 0
        for name, text in _PAIR.findall(post):
            value = to_float(text.strip())
            if value is None or name in _NOT_METRICS:
                continue
            if _SHOWN_AFTER.search(name):
                if self._shown.get(name) == text:
                    continue  # still shown from when it was logged
                self._shown[name] = text
            elif not changed:
                continue  # a redraw of the count alone: the values are the last batch's
            tags.append(name)
            steps.append(step)
            values.append(value)
            found += 1
        if found:
            if self._recorded_step is not None and step < self._recorded_step:
                self.anchor(self._recorded_step, None, 0)
                self.anchor(step, None, 0)  # a resumed job: its restart is recorded
            self._recorded_step = step
            self._recorded += 1

    def finish_changes_rows(self) -> bool:
        return self._pending is not None

    def finish(self) -> None:
        if self._pending is not None:
            self._flush()
            tags, steps, values = self._out
            if tags:
                self.rows.extend(self.rows.codes(tags), steps, values)
                self.anchor(steps[-1], None, 0)
                self._out = ([], [], [])
        notes = [f"tqdm bars: {self._bars:,} redraws, the last at each batch read ({self._recorded:,} batches); step = "
                 f"(epoch − {self._base or 0}) × batches per epoch + batch index (from 0); values still shown from an "
                 "earlier evaluation are not repeated"]
        if self._evaluations:
            notes.append(f"{self._evaluations:,} printed evaluation line(s) (a name with val, eval or test) read at the "
                         "step of the last batch drawn before them")
        self.notes[:0] = notes


def detect_tqdm_console(window: str) -> bool:
    """At least three redraws of a bar with a metric in its postfix, and more of them than lines the generic
    reader reads (a log that prints its epochs' metrics and shows a bar's last redraw per epoch is the generic
    reader's: its printed lines hold more, the validation too)."""
    bars = sum(1 for _ in _DETECT.finditer(window))
    if bars < 3:
        return False
    printed = 0
    for pattern, _ in GenericRules.generic_patterns:
        printed += sum(1 for m in pattern.finditer(window) if "it/s" not in m.group(0) and "s/it" not in m.group(0))
        if printed >= bars:
            return False
    return True


class TqdmConsoleReader(TextReader):
    name = "tqdm_console"
    description = ("tqdm progress bars with metrics in their postfix (Lightning's TQDMProgressBar, loops' "
                   "set_postfix): 'Epoch 1:  44%|████▍| 22/50 [00:00<00:00, 152.15it/s, train_loss=0.0485]'")
    parser = TqdmConsoleParser

    def detect(self, window: str) -> bool:
        return detect_tqdm_console(window)
