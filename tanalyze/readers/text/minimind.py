"""MiniMind's training console (``jingyaogong/minimind``'s ``trainer/train_pretrain.py``, ``train_full_sft.py``,
``train_lora.py``, ``train_dpo.py`` … and their many forks), the line its ``Logger`` (a ``print`` on the main process)
prints every ``log_interval`` steps::

    Epoch:[1/2](100/44160), loss: 6.1319, logits_loss: 6.1319, aux_loss: 0.0000, lr: 0.00054991, epoch_time: 452.0min
    Epoch:[1/2](100/44160) loss:6.132 lr:0.000549909830 epoch_Time:452.0min:
    Epoch:[0/3](100/61701) loss:1.771 lr:0.0000100 epoch_Time:87.0min:
    Epoch:[1/1](10/100), Actor Loss: 0.1234, Critic Loss: 0.5678, Reward: 0.3000, KL: 0.0100, …

from the format strings, the current one first::

    f'Epoch:[{epoch + 1}/{args.epochs}]({step}/{iters}), loss: {current_loss:.4f}, logits_loss: '
    f'{current_logits_loss:.4f}, aux_loss: {current_aux_loss:.4f}, lr: {current_lr:.8f}, epoch_time: {eta_min:.1f}min'
    'Epoch:[{}/{}]({}/{}) loss:{:.3f} lr:{:.12f} epoch_Time:{}min:'   (older versions, and most forks; some ``lr:{:.7f}``)
    f"Epoch:[{epoch + 1}/{args.epochs}]({step}/{iters}), Actor Loss: {actor_loss_val:.4f}, Critic Loss: …"   (PPO)

(a fork's ``[SFT] Epoch:[…](…), loss:…, lr:…, eta:…min`` too). ``(i/N)`` is the step within the epoch (``iters``, the
batches of an epoch, = N); it starts over every epoch.

Decisions:

* **step = (epochs before) × N + i**, the epochs before counted from the first epoch the log could print: an epoch
  printed from 1 (``epoch + 1``, every version since 2024) counts from 1, one printed from 0 (the oldest versions'
  ``epoch``) from 0, told by the first line read (as the generic reader's ``epoch: e/E, iter: i/N`` rule): the first
  epoch printed is 0 or not. A log of a run resumed in a later epoch of a version that printed from 0 would be shifted
  by N (no line tells). The epoch column is the epoch as printed.
* Every ``name: number`` (or ``name:number``) after the counter is a tag by its name as printed: ``loss``, ``lr``,
  ``logits_loss``, ``aux_loss``, the RL scripts' ``Actor Loss``, ``Reward``, ``KL`` … (names of a few words kept whole).
  Not tags: ``epoch_Time`` / ``epoch_time`` / ``eta``, the minutes LEFT in the epoch, an estimate from the time spent so
  far (no measure of training, and it says nothing the steps' pace does not).
* No wall time: the lines carry none (``print``). Lines behind a logging library's prefix (a fork's ``logger.info``,
  ``[2025-01-01 12:00:00] ``) or a launcher's rank prefix (``torchrun``'s ``[rank0]:``) are read the same.
* Steps that go back (a run resumed from its checkpoint, ``--from_resume 1``, appended to the same log) are a restart,
  recorded at their line, the rows kept. A line ``Epoch:[`` that is not a counter with pairs, or whose step is beyond
  2**53, is not read and named in a warning.

Reading: a chunk's lines at once by one pattern, the heads and the last training line's template of pairs (see
:func:`._pairs.template`), when every ``Epoch:[`` of the chunk is in a line it reads; else (another template, a line
not read, a restart) as :class:`._pairs.PairsParser` reads them, the same rows.
"""

from __future__ import annotations

import re
from itertools import chain
from pathlib import Path

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_numbers
from tanalyze.readers.text._pairs import PairLines, PairsParser, PairTake, template
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER, NUMBER_ONCE

__all__ = ["MiniMindParser", "MiniMindReader", "detect_minimind"]

#: a training line's beginning, up to its pairs (its epoch, step in the epoch and steps per epoch groups)
_HEAD = r"(?:\[[A-Za-z]{1,16}\] )?Epoch:\[(\d+)/\d+\]\((\d+)/(\d+)\),? *"
#: the same (a chunk read at once: without a fork's "[SFT] "), its numbers of at most as many digits as make an exact
#: step below 2**53
_HEAD_DIGITS = r"Epoch:\[(\d{1,6})/\d+\]\((\d{1,15})/(\d{1,9})\),? *"
_NUMBER_GROUP = f"({NUMBER_ONCE})"
#: a number where a chunk is read at once: a run of the characters of the numbers Python prints (``nan``, ``inf``,
#: ``1e-05``), read by float() after (a token it does not take sends the chunk the usual way); a token float() takes of
#: these characters is a whole NUMBER
_LOOSE_NUMBER = "([-+.0-9eEnafity]++)"
#: a training line, from its line break (see ._findall): its epoch, step in the epoch, steps per epoch, and its pairs
#: (beginning with a name, a colon and what begins a number); or a line that looks like one but is not one (its text)
_LINE = re.compile(
    r"\n(?:\[[A-Za-z]{1,16}\] )?Epoch:\[(?:(\d+)/\d+\]\((\d+)/(\d+)\),? *"
    r"([A-Za-z_][^\n:]{0,300}: *[-+.\dnNiI][^\n]*)|([^\n]*))(?=\n)")
_LOOKALIKE = re.compile(r"^(?:\[[A-Za-z]{1,16}\] )?Epoch:\[", re.M)
#: a name (a few words, each taken whole) and its number, with or without blanks after the colon
_PAIR = re.compile(rf"([A-Za-z_][\w.@/-]{{0,63}}+(?: [A-Za-z_][\w.@/-]{{0,63}}+){{0,3}}+): *({NUMBER})")
#: the minutes left in the epoch (an estimate): no tags
_NOT_TAGS = frozenset({"epoch_Time", "epoch_time", "eta"})


class _Untimed(PairLines):
    """Lines that carry no time (no time parsed per line)."""

    def _walls(self) -> np.ndarray:
        return np.full(len(self.stamps), np.nan)


class MiniMindParser(PairsParser):
    family = "MiniMind"
    lookalike = _LOOKALIKE
    line = _LINE
    state_fields = {"_first_epoch": "last"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._first_epoch: int | None = None  # the epoch counted first: 0 or 1
        #: the pairs of the last training line read (the template a chunk's lines are tried with, all at once)
        self._last_rest: str | None = None
        self._whole: tuple[str, re.Pattern[str], re.Pattern[str], list[str]] | None = None

    def feed(self, chunk: Chunk) -> None:
        if self.line_by_line or self._last_rest is None or not self._feed_at_once(chunk):
            super().feed(chunk)

    def _feed_at_once(self, chunk: Chunk) -> bool:
        """The chunk read by one pattern, its lines' heads and the last training line's template (see
        :func:`._pairs.template`): when every line with ``Epoch:[`` in it is such a line, whose steps go on and none
        beyond 2**53 (else False: nothing taken, the chunk is read the usual way)."""
        rest = self._last_rest
        if self._whole is None or self._whole[0] != rest:
            pattern, names = template(rest, _PAIR)  # type: ignore[arg-type]
            pieces = pattern.pattern[1:-1].split(_NUMBER_GROUP)  # (without its ^ and $; a piece after each number)
            body = pieces[0] + "".join(("(?:" + _NUMBER_GROUP[1:] if name in _NOT_TAGS else _LOOSE_NUMBER) + piece
                                       for name, piece in zip(names, pieces[1:], strict=True))
            names = [name for name in names if name not in _NOT_TAGS]
            whole = re.compile(rf"\n{_HEAD_DIGITS}{body}(?=\n)")
            self._whole = (rest, whole, re.compile(rf"{_HEAD_DIGITS}{body}(?=\n)"), names)  # type: ignore[assignment]
        _, whole, at_start, names = self._whole  # type: ignore[misc]
        text = chunk.text if chunk.text.endswith("\n") else chunk.text + "\n"
        found = whole.findall(text)
        first = at_start.match(text)
        if first is not None:
            found.insert(0, first.groups())
        if not found or len(found) != text.count("Epoch:["):  # (a line of another kind, or one not read)
            return False
        columns = list(zip(*found, strict=True))
        epochs, withins, per_epochs = columns[:3]
        numbers = parse_numbers(" ".join(chain(epochs, per_epochs, withins, *columns[3:])))
        if numbers is None:  # pragma: no cover - the pattern takes numbers only
            return False
        count = len(found)
        counts = numbers[:3 * count].reshape(3, count)
        start = self._first_epoch if self._first_epoch is not None else min(int(epochs[0]), 1)
        steps = ((counts[0] - start) * counts[1] + counts[2]).astype(np.int64)  # (exact: below 2**53)
        if steps.min() < 0 or steps.max() > LARGEST_STEP or not self.anchors_go_on(steps):
            return False
        self._first_epoch = start
        if names:
            rows, width = self.rows, len(names)
            values = numbers[3 * count:].reshape(width, count).T.ravel()  # (line after line)
            rows.extend(np.tile(np.array(rows.codes(names), dtype=np.int32), count), np.repeat(steps, width), values,
                        epoch=np.repeat(counts[0], width), wall=np.full(count * width, np.nan))
        self.anchor(int(steps[-1]), None, 0)
        self.parsed_lines += count
        self.scan_ranges = []  # (every look-alike line read)
        return True

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        if found and not self.line_by_line and self._take_at_once(found):
            return len(found), len(found)
        taking = PairTake(self, chunk, text, _NOT_TAGS, _PAIR)
        taking.lines = _Untimed(_NOT_TAGS, _PAIR)
        for index, (epoch, within, per_epoch, rest, lookalike) in enumerate(found):
            if lookalike or not epoch:
                taking.unread.append(index)
                continue
            if self._first_epoch is None:
                self._first_epoch = min(int(epoch), 1)
            step = (int(epoch) - self._first_epoch) * int(per_epoch) + int(within)
            if not 0 <= step <= LARGEST_STEP:  # (no exact step: not read, named)
                taking.unread.append(index)
                continue
            taking.main(index, step, epoch, rest, "")
            self._last_rest = rest
        return taking.done(len(found))

    def _take_at_once(self, found: list[tuple[str, ...]]) -> bool:
        """The rows of a chunk whose lines are all training lines, their steps computed at once, when none is beyond
        2**53 and they never go back (else False: the lines are taken one by one, a restart recorded at its line)."""
        epochs, withins, per_epochs, rests, lookalikes = zip(*found, strict=True)
        if any(lookalikes) or not all(epochs) or max(map(len, epochs)) > 6 or max(map(len, per_epochs)) > 9 \
                or max(map(len, withins)) > 15:  # (digits enough for any step up to 2**53, and no more)
            return False
        first = self._first_epoch if self._first_epoch is not None else min(int(epochs[0]), 1)
        numbers = parse_numbers(" ".join(chain(epochs, per_epochs, withins)))  # (all digits: exact)
        if numbers is None:  # pragma: no cover - the pattern takes digits only
            return False
        counts = numbers.reshape(3, len(found))
        steps = ((counts[0] - first) * counts[1] + counts[2]).astype(np.int64)  # (exact: below 2**53)
        if steps.min() < 0 or steps.max() > LARGEST_STEP or not self.anchors_go_on(steps):
            return False
        self._first_epoch = first
        self._last_rest = rests[-1]
        lines = _Untimed(_NOT_TAGS, _PAIR)
        lines.steps, lines.epochs, lines.rests = steps, counts[0], list(rests)  # type: ignore[assignment]
        lines.stamps = lines.prefixes = [""] * len(found)
        self.anchor(int(steps[-1]), None, 0)
        lines.add_rows(self.rows, at_once=True)
        self._lookalikes = len(found)
        return True

    def finish(self) -> None:
        first = "0" if self._first_epoch == 0 else "1"
        self.notes[:0] = [f"MiniMind training console: step = (epochs before) × steps per epoch + the step in the "
                          f"epoch (epochs counted from {first}, as the first line prints them); the minutes left in "
                          "the epoch (epoch_time) not read"]


def detect_minimind(window: str) -> bool:
    """Two training lines of MiniMind."""
    return at_least_two(m for m in _LINE.finditer("\n" + window) if m.group(1))


class MiniMindReader(TextReader):
    name = "minimind"
    description = ("MiniMind training console ('Epoch:[1/2](100/44160), loss: 6.1319, …, lr: 0.00054991, "
                   "epoch_time: 452.0min', 'Epoch:[1/2](100/44160) loss:6.132 lr:0.000549909830 epoch_Time:452.0min:')")
    parser = MiniMindParser
    behind_logging = True

    def detect(self, window: str) -> bool:
        return detect_minimind(window)
