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

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._shaped import stretches
from tanalyze.readers.text._tqdm_bars import NAME, Bars, carried_forward, find_bars, postfix_pieces
from tanalyze.readers.text.generic import GenericRules
from tanalyze.readers.values import NUMBER, to_float

__all__ = ["TqdmConsoleParser", "TqdmConsoleReader", "detect_tqdm_console"]

#: a bar: description, percentage, the bar, count/total, [elapsed<remaining, rate(, postfix)]; without its "]"
#: when tqdm cut it at the terminal's width (a message may run on after the cut: "…, val_accurMetric val_…")
BAR = re.compile(
    r"^(?P<desc>[^\n|]{0,120}?):?[ \t]*(?:\d{1,3}%)?\|[^|\n]{0,200}\|[ \t]*(?P<i>\d+)/(?P<n>\d+|\?)"
    r"[ \t]*\[[^\],\n]*(?:,[^\],\n]*(?:,[ \t]*(?P<post>[^\]\n]*))?)?(?P<closed>\][^\n]*)?$", re.M)
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


#: Lightning's ModelCheckpoint(verbose=True): the monitored metric at the global step after the batch drawn last
CHECKPOINT = re.compile(rf"^Epoch \d+, global step \d+: '([^'\n]{{1,64}})' reached ({NUMBER}) \(best ")
#: a row of Lightning's table of results (``trainer.test``, ``trainer.validate``: ``  test_loss   0.4093…``)
_RESULT_ROW = re.compile(rf"[ \t│┃]*((?:test|val|valid|validation|eval)[\w/.-]*)[ \t│┃]+({NUMBER})[ \t│┃]*",
                         re.IGNORECASE)
#: a line the loop printed with an evaluation's value (``Epoch 3: val_loss=0.52``, ``Validation Loss: 0.61``),
#: Lightning's checkpoint message (its path's ``val_acc=0.61`` no value of its own) or a row of its results'
#: table
PRINTED_EVALUATION = re.compile(
    r"^(?![^\n|]*\|[^\n|]*\|)"  # (not a bar: no "|…|" in the line)
    rf"(?:Epoch \d+, global step \d+: '[^'\n]{{1,64}}' reached {NUMBER} \(best [^\n]*"
    rf"|[ \t│┃]*(?:test|val|valid|validation|eval)[\w/.-]*[ \t│┃]+{NUMBER}[ \t│┃]*"
    rf"|(?!Epoch \d+, global step \d+: )"
    rf"[^\n]*?\b(?:val|valid|validation|eval|evaluation|test)\w*(?: [A-Za-z]\w*)?[ \t]*[:=][ \t]*{NUMBER}[^\n]*)$",
    re.M | re.IGNORECASE)
#: (a number that runs on into a word or a path is a file name's: ``epoch=27-val_acc=0.8662.ckpt``)
_PRINTED_PAIR = re.compile(rf"([A-Za-z][\w ./-]{{0,40}}?)[ \t]*[:=][ \t]*({NUMBER})(?!\.?[\w\\/-])")
#: names of a printed line's counters, not metrics
_COUNTERS = frozenset({"epoch", "step", "iter", "iteration", "batch"})
#: a window that shows a bar with a metric in its postfix
_DETECT = re.compile(r"\|[ \t]*\d+/\d+[ \t]*\[[^\]\n]*,[^\]\n]*,[ \t]*[^\]\n]*[A-Za-z_]\w*=[-+.\d]")


class TqdmConsoleParser(TextParser):
    family = "tqdm"
    lookalike = None
    patterns = ()  # (feed reads the bars itself)
    #: read every redraw on its own (they are read at once otherwise); for tests
    line_by_line = False
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
        if self.line_by_line or not self._bars_at_once(chunk):
            self._redraw_by_redraw(chunk)

    def _redraw_by_redraw(self, chunk: Chunk) -> None:
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
                    self._bar(m.group("desc"), m.group("i"), m.group("n"), m.group("post"), m.group("closed"))
                else:
                    self._printed(m.group(0))
            self.parsed_lines += len(printed)
        else:
            found = BAR.findall(text)
            bar = self._bar
            for desc, count, total, post, closed in found:
                bar(desc, count, total, post, closed)
            bars = len(found)
        self._bars += bars
        self.parsed_lines += bars
        tags, steps, values = self._out
        if tags:
            self.rows.extend(self.rows.codes(tags), steps, values)
            self.anchor(steps[-1], None, 0)
            self._out = ([], [], [])

    def _bars_at_once(self, chunk: Chunk) -> bool:
        """The chunk's redraws read at once (:mod:`._tqdm_bars`), and the evaluations the loop printed between them
        (at the step of the batch drawn last before each): the rows and state of reading them one by one. False
        (the pending batch flushed at most, as the first redraw of the chunk would) when that cannot be: a line
        that may be read otherwise, a postfix piece that is no plain ``name=value``, or a batch recorded at a
        step below the last (a resumed job: its restart recorded in the loop)."""
        bars = find_bars(chunk.utf8())
        if bars is None:
            return False
        epoch_of = np.array([-1 if (e := _epoch_of(d)) is None else e for d in bars.descs] or [0], dtype=np.int64)
        epochs = epoch_of[bars.desc]
        with_equals = np.searchsorted(bars.equals, bars.post_end) > np.searchsorted(bars.equals, bars.post_start)
        active = np.flatnonzero((epochs >= 0) & (bars.post_start >= 0) & with_equals & (bars.total >= 0))
        read = _Redraws.of(self, bars, active, epochs) if len(active) else None
        if len(active) and read is None:
            return False
        # (a printed evaluation above the chunk's first batch is at the batch pending from the chunk before)
        carried = self._pending[0] if self._pending is not None else self._recorded_step
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # rows, and where they are read
        if read is not None:
            if self._pending is not None and self._pending[0] != int(read.steps[0]):
                self._flush()  # (what the first redraw does; its rows stay for the loop when the chunk goes there)
            rows = read.rows(self)
            if rows is None:
                return False
            read.commit(self)
            tags, steps, values = self._out
            if tags:
                first = int(bars.line_starts[bars.lines[active[0]]])
                parts.append((np.array(self.rows.codes(tags), dtype=np.int32), np.array(steps, dtype=np.int64),
                              np.array(values, dtype=np.float64), np.full(len(tags), first)))
                self._out = ([], [], [])
            parts.append(rows)
        printed = _printed_lines(bars)
        positions = bars.line_starts[bars.lines[active]]
        for at, line in printed:
            before = int(np.searchsorted(positions, at))
            step = int(read.steps[before - 1]) if read is not None and before else carried
            if step is None:
                continue
            pairs = _printed_pairs(line, _Redraws._post_text(bars, active, before - 1) if before else self._post)
            parts.append((np.array(self.rows.codes([name for name, _ in pairs]), dtype=np.int32),
                          np.full(len(pairs), step, dtype=np.int64), np.array([v for _, v in pairs], dtype=np.float64),
                          np.full(len(pairs), at)))
            self._evaluations += 1
        self.parsed_lines += len(printed)
        if parts:
            if len(parts) == 1:  # (the batches alone: already in their order)
                codes, steps, values = parts[0][:3]
            else:
                order = np.argsort(np.concatenate([part[3] for part in parts]), kind="stable")
                codes, steps, values = (np.concatenate([part[k] for part in parts])[order] for k in range(3))
            if len(codes):
                self.rows.extend(codes, steps, values)
                self.anchor(int(steps[-1]), None, 0)
        self._bars += len(bars.lines)
        self.parsed_lines += len(bars.lines)
        return True

    def _printed(self, line: str) -> None:
        """A line the loop printed with an evaluation's values (``Epoch 3: val_loss=0.52, val_acc=0.81``): its
        pairs at the step of the last batch drawn (the evaluation ran after it)."""
        step = self._pending[0] if self._pending is not None else self._recorded_step
        if step is None:
            return
        tags, steps, values = self._out
        shown = self._pending[1] if self._pending is not None else self._post
        for name, value in _printed_pairs(line, shown):
            tags.append(name)
            steps.append(step)
            values.append(value)
        self._evaluations += 1

    def _bar(self, desc: str, count_text: str, total: str, post: str | None, closed: str | None) -> None:
        epoch = _epoch_of(desc)
        if epoch is None:
            return  # an evaluation's own bar: its values show on the training bar once it is done
        if not closed and post:  # cut at the terminal's width: its pieces but the last, which the cut may have cut
            post = post[:max(post.rfind(","), 0)]
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
        # batches done (the count, unless it lags; a bar reset to 0 after its last batch, before its next epoch's
        # description, shows that last batch)
        done = self._count if count == 0 and self._count == int(total) else max(count, self._changes)
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
    cache_version = 14  # 5: a printed evaluation's name without the counter printed before it ('Epoch 1/10 - '); 6: 'ep N';
    #                   7: bars cut at the terminal's width, Lightning's checkpoint messages and results table;
    #                   8: the generic lines it tells itself from (COCO summaries, 'at step' lines); 9: and
    #                   blank-separated pair lines; 10: generic epoch lines whose number of epochs changed begin a
    #                   session; 11: generic 'Episode N | …' lines; 12: generic 'step N train loss: …' lines, units
    #                   of time in names; 13: generic '[Epoch 1/60]' headers, names aligned by blanks;
    #                   14: generic epoch counters

    def detect(self, window: str) -> bool:
        return detect_tqdm_console(window)


#: what comes before a printed name and is no part of it: a counter and its separator (``Epoch 1/10 - ``, ``[3/10] ``)
_BEFORE_NAME = re.compile(r".*(?:\d+[ \t]*/[ \t]*\d+\]?|[ \t][-|][ \t])")


def _printed_pairs(line: str, shown: str | None) -> list[tuple[str, float]]:
    """The values of a line the loop printed with an evaluation's (counters such as the epoch left out; a name
    without what its line printed before it: ``Epoch 1/10 - Validation Loss: 0.65`` is ``Validation Loss``), or the
    metric of Lightning's checkpoint message unless the bar drawn last (its postfix ``shown``) shows it."""
    row = _RESULT_ROW.fullmatch(line)
    if row is not None:
        value = to_float(row.group(2))
        return [] if value is None else [(row.group(1), value)]
    checkpoint = CHECKPOINT.match(line)
    if checkpoint is not None:
        name, value = checkpoint.group(1), to_float(checkpoint.group(2))
        if value is None or (shown is not None and re.search(rf"(?:^|,)[ \t]*{re.escape(name)}=", shown)):
            return []
        return [(name, value)]
    pairs = []
    for name, text in _PRINTED_PAIR.findall(line):
        name = _BEFORE_NAME.sub("", name, count=1).strip()
        if not name:
            continue
        value = to_float(text)
        if value is not None and name.lower() not in _COUNTERS:
            pairs.append((name, value))
    return pairs


def _printed_lines(bars: Bars) -> list[tuple[int, str]]:
    """The lines of the chunk that are no bar and that the loop printed with an evaluation's values: where each
    begins (in the chunk's bytes) and its text."""
    is_bar = np.zeros(len(bars.line_starts), dtype=bool)
    is_bar[bars.lines] = True
    others = np.flatnonzero(~is_bar & (bars.line_ends > bars.line_starts))
    if not len(others):
        return []
    spans = list(zip(bars.line_starts[others].tolist(), bars.line_ends[others].tolist(), strict=True))
    data = bars.data
    if PRINTED_EVALUATION.search(b"\n".join(data[a:b] for a, b in spans).decode("utf-8", errors="replace")) is None:
        return []
    lines = ((a, data[a:b].decode("utf-8", errors="replace")) for a, b in spans)
    return [(a, line) for a, line in lines if PRINTED_EVALUATION.match(line)]


#: bytes a postfix value read at once may not hold once its blanks around are stripped (``str.strip`` takes more
#: than blanks; a blank inside is no number either)
_NOT_IN_VALUE = np.zeros(256, dtype=bool)
_NOT_IN_VALUE[[*range(9, 14), *range(28, 33), *range(128, 256)]] = True


class _Redraws:
    """The active redraws of a chunk (those ``_bar`` reads on), with what reading them one by one computes: which
    brought new batch values, their steps, the batches they make (runs of one step) and the flushed batches'
    rows."""

    def __init__(self, bars: Bars, active: np.ndarray, posts, names: list[str], name_ids: np.ndarray,
                 changed: np.ndarray, epochs: np.ndarray, changes: np.ndarray, running: np.ndarray,
                 steps: np.ndarray, base: int) -> None:
        self.bars, self.active, self.posts, self.names, self.name_ids = bars, active, posts, names, name_ids
        self.changed, self.epochs, self.changes, self.running, self.steps, self.base = (
            changed, epochs, changes, running, steps, base)
        self._result: tuple | None = None

    @classmethod
    def of(cls, parser: TqdmConsoleParser, bars: Bars, active: np.ndarray, epochs: np.ndarray) -> _Redraws | None:
        chars = bars.chars
        posts = postfix_pieces(chars, bars.post_start[active], bars.post_end[active], bars.equals, bars.commas)
        if posts is None:
            return None
        count, total, epoch = bars.count[active], bars.total[active], epochs[active]
        if max(int(count.max()), parser._count) >= 1 << 40:
            return None
        size = len(active)
        # postfixes whose pieces have the names (and blanks) of the one before
        same = np.zeros(size, dtype=bool)
        rows = np.flatnonzero(posts.pieces[1:] == posts.pieces[:-1]) + 1
        mine, theirs, offsets = _aligned(posts, rows)
        if len(rows):
            same[rows] = np.logical_and.reduceat(
                bars.words.same(posts.name_start[mine], posts.name_end[mine], posts.name_start[theirs],
                                posts.name_end[theirs])
                & (posts.name_start[mine] - posts.piece_start[mine] == posts.name_start[theirs]
                   - posts.piece_start[theirs]), offsets)
        names: list[str] = []
        known: dict[str, int] = {}
        signature = np.zeros(size, dtype=np.int64)
        signatures: list[np.ndarray] = []
        for row in np.flatnonzero(~same).tolist():
            a = int(posts.first[row])
            b = a + int(posts.pieces[row])
            found = [bars.data[x:y].decode("utf-8", errors="replace") for x, y in zip(
                posts.name_start[a:b].tolist(), posts.name_end[a:b].tolist(), strict=True)]
            if not all(map(NAME.fullmatch, found)):
                return None  # (a name _PAIR would take part of, or none of)
            ids = [known.setdefault(name, len(known)) for name in found]
            signature[row] = len(signatures)
            signatures.append(np.array(ids, dtype=np.int64))
        names = list(known)
        signature = carried_forward(~same, signature)
        base_of = np.cumsum([0, *map(len, signatures)])
        piece_post = np.repeat(np.arange(size), posts.pieces)
        name_ids = np.concatenate(signatures)[base_of[signature][piece_post] + np.arange(len(piece_post))
                                              - posts.first[piece_post]]
        batch = np.array([_NOT_BATCH_PAIRS.fullmatch(f",{name}=0") is None for name in names])[name_ids]
        # new batch values: the pieces of a batch's values changed (the same names), or its key as text differs
        changed = np.zeros(size, dtype=bool)
        if len(rows):
            differs = ~bars.words.same(posts.value_start[mine], posts.value_end[mine], posts.value_start[theirs],
                                       posts.value_end[theirs]) & batch[mine]
            changed[rows] = np.logical_or.reduceat(differs, offsets) & same[rows]
        for row in np.flatnonzero(~same).tolist():
            key = _batch_values(cls._post_text(bars, active, row))
            before = parser._key if row == 0 else _batch_values(cls._post_text(bars, active, row - 1))
            changed[row] = key != before and "=" in key
        # the epoch's counters: changes of the values, the largest count drawn
        new = np.empty(size, dtype=bool)
        new[0] = parser._epoch is None or int(epoch[0]) != parser._epoch
        new[1:] = epoch[1:] != epoch[:-1]
        cumulative = np.cumsum(changed)
        start = np.maximum.accumulate(np.where(new, np.arange(size), -1))
        changes = np.where(start >= 0, cumulative - np.where(start > 0, cumulative[np.maximum(start - 1, 0)], 0),
                           parser._changes + cumulative)
        segment = np.cumsum(new)
        folded = count.copy()
        if not new[0]:
            folded[0] = max(int(count[0]), parser._count)
        scale = segment * (max(int(count.max()), parser._count) + 2)
        running = np.maximum.accumulate(scale + folded) - scale
        previous = np.empty(size, dtype=np.int64)
        previous[0] = parser._count
        previous[1:] = running[:-1]
        changed |= ~new & (count > previous) & (previous >= changes)
        base = parser._base if parser._base is not None else (int(epoch[0]) if int(epoch[0]) in (0, 1) else 0)
        steps = (epoch - base) * total + np.maximum(np.where((count == 0) & (running == total), running,
                                                                  np.maximum(count, changes)) - 1, 0)
        return cls(bars, active, posts, names, name_ids, changed, epoch, changes, running, steps, base)

    @staticmethod
    def _post_text(bars: Bars, active: np.ndarray, row: int) -> str:
        index = active[row]
        return bars.text(int(bars.post_start[index]), int(bars.post_end[index]))

    def rows(self, parser: TqdmConsoleParser) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The rows of the batches flushed in the chunk (all but the last, left pending), as ``_flush`` gives
        them, and where each is read (the line of the next batch's first redraw); None when a batch would be recorded at a step below the one before (a restart) or a value is not
        read as ``float`` reads it."""
        steps, size, posts, chars = self.steps, len(self.steps), self.posts, self.bars.chars
        group_start = np.ones(size, dtype=bool)
        group_start[1:] = steps[1:] != steps[:-1]
        starts = np.flatnonzero(group_start)
        group_changed = np.logical_or.reduceat(self.changed, starts)
        pending = parser._pending
        if pending is not None and pending[0] == int(steps[0]):
            group_changed[0] |= bool(pending[2])
        last = np.append(starts[1:], size) - 1
        flushed = last[:-1]  # (the last batch stays pending)
        sizes = posts.pieces[flushed]
        offsets = np.cumsum(sizes) - sizes
        piece = np.repeat(posts.first[flushed], sizes) + np.arange(int(sizes.sum())) - np.repeat(offsets, sizes)
        group = np.repeat(np.arange(len(flushed)), sizes)
        low, high = posts.value_start[piece], posts.value_end[piece]
        for _ in range(4):  # (blanks around a value: float() strips them)
            leading = (low < high) & ((chars[low] == 32) | (chars[low] == 9))
            trailing = (high > low) & ((chars[high - 1] == 32) | (chars[high - 1] == 9))
            if not (leading.any() or trailing.any()):
                break
            low = np.where(leading, low + 1, low)
            high = np.where(trailing & (high - 1 > low), high - 1, high)
        if (high <= low).any() or _NOT_IN_VALUE[chars[stretches(low, high)]].any():
            return None
        tokens = chars[stretches(low, high + 1)].copy()
        tokens[np.cumsum(high + 1 - low) - 1] = 32
        values, valid = parse_some_numbers(tokens[:-1].tobytes().decode("ascii"))
        ids = self.name_ids[piece]
        names = np.array(self.names + [""], dtype=object)
        metric = np.array([name not in _NOT_METRICS for name in self.names] + [False])[ids] & valid
        shown = np.array([_SHOWN_AFTER.search(name) is not None for name in self.names] + [False])[ids] & metric
        emit = metric & ~shown & group_changed[group]
        # a value shown after its evaluation: read when it differs from the one shown before (of the same name)
        self._shown_update: dict[str, str] = {}
        candidates = np.flatnonzero(shown)
        if len(candidates):
            order = candidates[np.argsort(ids[candidates], kind="stable")]
            first = np.ones(len(order), dtype=bool)
            first[1:] = ids[order][1:] != ids[order][:-1]
            differs = np.ones(len(order), dtype=bool)
            a, b = posts.value_start[piece[order]], posts.value_end[piece[order]]
            differs[1:] = ~self.bars.words.same(a[1:], b[1:], a[:-1], b[:-1])
            for at in np.flatnonzero(first).tolist():
                name = names[ids[order[at]]]
                differs[at] = parser._shown.get(name) != self.bars.text(int(a[at]), int(b[at]))
            emit[order] = differs
            for at in np.flatnonzero(differs).tolist():
                self._shown_update[names[ids[order[at]]]] = self.bars.text(int(a[at]), int(b[at]))
        found = np.bincount(group[emit], minlength=len(flushed))
        recorded = steps[flushed][found > 0]
        previous = parser._recorded_step
        if len(recorded) and ((previous is not None and recorded[0] < previous) or (recorded[1:] < recorded[:-1]).any()):
            return None
        self._recorded = recorded
        self._pending = [int(steps[-1]), self._post_text(self.bars, self.active, size - 1), bool(group_changed[-1])]
        codes = np.array(parser.rows.codes(self.names), dtype=np.int32)[ids[emit]]
        # a batch's rows are read when the next batch's first redraw comes
        flushed_at = self.bars.line_starts[self.bars.lines[self.active[starts[1:]]]]
        return codes, steps[flushed][group[emit]], values[emit], flushed_at[group[emit]]

    def commit(self, parser: TqdmConsoleParser) -> None:
        """The parser's state after the chunk's redraws, as reading them one by one leaves it."""
        parser._base = self.base
        parser._epoch = int(self.epochs[-1])
        parser._changes = int(self.changes[-1])
        parser._count = int(self.running[-1])
        post = self._post_text(self.bars, self.active, len(self.steps) - 1)
        parser._post, parser._key = post, _batch_values(post)
        parser._batches = int(self.bars.total[self.active[-1]])
        parser._pending = self._pending
        parser._shown.update(self._shown_update)
        if len(self._recorded):
            parser._recorded += len(self._recorded)
            parser._recorded_step = int(self._recorded[-1])


def _aligned(posts, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For postfixes ``rows`` (each with as many pieces as the one before): each of their pieces, the piece at its
    place in the postfix before, and where each row's pieces begin among them."""
    sizes = posts.pieces[rows]
    offsets = np.cumsum(sizes) - sizes
    k = np.arange(int(sizes.sum())) - np.repeat(offsets, sizes)
    return np.repeat(posts.first[rows], sizes) + k, np.repeat(posts.first[rows - 1], sizes) + k, offsets
