"""ESPnet2's ``exp/<model>/train.log`` (and FunASR's, which trains with its trainer)::

    [host] 2023-10-27 13:29:13,321 (trainer:298) INFO: 1/30epoch started
    [host] 2023-10-27 13:37:46,484 (trainer:753) INFO: 1epoch:train:1-4025batch: iter_time=1.924e-04, forward_time=0.040, loss_ctc=174.564, loss_att=145.106, acc=0.235, loss=153.944, …, optim0_lr0=1.007e-05, train_time=0.127
    [host] 2023-10-27 14:01:05,691 (trainer:338) INFO: 1epoch results: [train] …, loss=130.1, …, total_count=8050, …, [valid] loss_ctc=120.5, loss_att=95.4, acc=0.35, cer=0.6, loss=102.9, time=31.9 seconds, total_count=300, …
    [host] 2023-04-23 18:59:48,924 (trainer:777) INFO: 2epoch:train:1-50batch:50num_updates: iter_time=0.008, …

Decisions:

* **step = the iterations so far** at the last batch of a line: the ``total_count`` of the last epoch's
  ``[train]`` results (ESPnet counts every iteration of the training there) plus the line's last batch;
  ``num_updates`` where FunASR prints it. Before an epoch's results are seen (a log resumed mid-training), the epoch
  is placed after the batches of the one before as its lines show them, and a note says so.
* Every ``name=number`` of a training line is a tag by its name (``loss``, ``loss_ctc``, ``acc``, ``grad_norm``,
  ``optim0_lr0`` …). The ``[valid]`` section of an epoch's results is ``valid/<name>`` at the epoch's last
  iteration; its times and counts are no tags. The ``[train]`` section (the epoch's averages of the lines above)
  and other sections (``[att_plot]``) are not read.
"""

from __future__ import annotations

import re
from pathlib import Path

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._pairs import EQUALS_PAIR, PairLines, PairsParser, PairTake
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP

__all__ = ["ESPnetParser", "ESPnetReader", "detect_espnet"]

#: its logger's prefix ("[host] 2023-10-27 13:37:46,484 (trainer:753) INFO: "; its time a group)
_PREFIX = r"\[[^\]\n]*\] (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \([^)\n]*\) INFO: "
#: every line read, from its line break (see ._findall): a training line (the epoch, its last batch, FunASR's updates,
#: its pairs), an epoch's results (the epoch, its sections), a line that looks like a training line but is not one
_LINE = re.compile(
    rf"\n{_PREFIX}(?:(\d+)epoch:train:\d+-(\d+)batch(?::(\d+)num_updates)?: ([^\n]*)"
    r"|(\d+)epoch results: ([^\n]*)|(\d+epoch:train:[^\n]*))(?=\n)")
_LOOKALIKE = re.compile(r"^[^\n]*\) INFO: \d+epoch:train:", re.M)
_SECTION = re.compile(r"\[(\w+)\] ")
_TOTAL = re.compile(r"\btotal_count=(\d+)")
#: names of an epoch's results that are no measure of its validation: how long it took, how many batches
_NOT_TAGS = frozenset({"time", "total_count"})


class ESPnetParser(PairsParser):
    family = "ESPnet"
    lookalike = _LOOKALIKE
    line = _LINE
    state_fields = {"_epoch": "last", "_base": "last", "_batches": "last", "_next_base": "last", "_results": "sum",
                    "_placed": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._epoch: int | None = None  # the epoch of the last training line
        self._base = 0  # the iterations before that epoch
        self._batches = 0  # the last batch of that epoch seen
        self._next_base: int | None = None  # the iterations after it, when its results said
        self._results = 0
        self._placed = 0  # epochs placed after the batches of the one before (no results before them)

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        taking = PairTake(self, chunk, text, _NOT_TAGS, EQUALS_PAIR)
        for index, (stamp, epoch, batch, updates, rest, done, results, lookalike) in enumerate(found):
            if results:
                self._on_results(int(done), results, stamp, taking.lines)
            elif lookalike or max(int(epoch), int(batch), int(updates or 0)) > LARGEST_STEP:
                taking.unread.append(index)
            else:
                self._enter(int(epoch))
                self._batches = max(self._batches, int(batch))
                taking.main(index, int(updates) if updates else self._base + int(batch), epoch, rest, stamp)
        return taking.done(len(found))

    def _enter(self, epoch: int) -> None:
        """The training lines of ``epoch`` begin: the iterations before it are those its results said, else those
        before the epoch before and its batches seen."""
        if self._epoch is None:
            self._placed += epoch != 1  # (a log that begins after the first epoch: its iterations before unknown)
        elif epoch != self._epoch:
            if self._next_base is not None:
                self._base = self._next_base
            else:
                self._base += self._batches
                self._placed += 1
            self._batches, self._next_base = 0, None
        self._epoch = epoch

    def _on_results(self, epoch: int, results: str, stamp: str, lines: PairLines) -> None:
        """An epoch's results: its ``[valid]`` pairs at its last iteration, which its ``[train]`` count gives."""
        self._results += 1
        sections = dict(zip(*[iter(_SECTION.split(results)[1:])] * 2, strict=True))
        total = _TOTAL.search(sections.get("train", ""))
        if total is not None and int(total.group(1)) <= LARGEST_STEP:
            end = self._next_base = int(total.group(1))
        else:
            end = self._base + self._batches
        if "valid" in sections:
            lines.add(end, str(epoch), sections["valid"], stamp, "valid/")

    def finish(self) -> None:
        notes = ["ESPnet training log: step = the iterations so far (the last epoch's results' total_count plus the "
                 "line's last batch; FunASR's num_updates)"]
        self.count_note(self._results, "epoch result(s): their [valid] section as valid/<name> at the epoch's last "
                        "iteration")
        self.count_note(self._placed, "epoch(s) with no results line before them (a log resumed, or cut): placed "
                        "after the batches seen of the epoch before")
        self.notes[:0] = notes


def detect_espnet(window: str) -> bool:
    """Two training lines of ESPnet's trainer."""
    return at_least_two(m for m in _LINE.finditer("\n" + window) if m.group(2))


class ESPnetReader(TextReader):
    name = "espnet"
    description = "ESPnet2 / FunASR train.log ('… INFO: 1epoch:train:1-4025batch: iter_time=…, loss=153.944, …')"
    parser = ESPnetParser

    def detect(self, window: str) -> bool:
        return detect_espnet(window)
