"""OpenNMT-py's training log (``onmt_train``'s console, or its ``-log_file``)::

    [2020-09-22 16:31:24,717 INFO] Step 50/ 1000; acc:   7.21; ppl: 6659.24; xent: 8.80; lr: 1.00000; 19307/19183 tok/s;      6 sec
    [2022-09-27 12:32:51,247 INFO] Step 100/40000; acc:  4.41; ppl: 1654.45; xent: 7.41; lr: 0.00001; 21889/22994 tok/s;     81 sec;
    [2020-09-22 16:33:40,079 INFO] Validation perplexity: 218.311
    [2020-09-22 16:33:40,080 INFO] Validation accuracy: 21.7181

Decisions:

* **step = the step** of each ``Step N/M;`` line; every ``name: number`` of it is a tag (``acc`` in percent, ``ppl``,
  ``xent``, the cross-entropy, ``lr``; later versions' ``aux``, ``sents``), the source and target tokens per second
  as ``src_tok/s`` and ``tgt_tok/s``. Not tags: ``bsz`` (the batch's sizes) and the seconds since the start (the
  line's own time is its wall time).
* ``Validation perplexity`` and ``Validation accuracy`` (and ``Validation xent`` where printed) are ``valid/ppl``,
  ``valid/acc`` and ``valid/xent``, at the step of the training line before them (OpenNMT validates right after it).
"""

from __future__ import annotations

import re
from pathlib import Path

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._pairs import PairsParser, PairTake
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import at_least_two
from tanalyze.readers.values import LARGEST_STEP, NUMBER

__all__ = ["OpenNMTParser", "OpenNMTReader", "detect_opennmt"]

#: its logger's prefix ("[2020-09-22 16:31:24,717 INFO] "; its time, when whole, a group)
_PREFIX = r"\[(?:(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})|[^\]\n]*) INFO\] "
#: every line read, from its line break (see ._findall): a training line (its step; its pairs and the source and
#: target tokens per second, or its pairs alone), a validation line (its name, its number), a line that looks like a
#: training line but is not one (its text)
_LINE = re.compile(
    rf"\n{_PREFIX}(?:Step +(\d+)(?:/ *\d+)?; (?:([^\n]*; +)(\d+)/(\d+) tok/s; +\d+ sec;?[ \t]*|([^\n]*))"
    rf"|Validation (perplexity|accuracy|xent): ({NUMBER})[ \t]*|(Step +\d[^\n]*))(?=\n)")
_LOOKALIKE = re.compile(r"^\[[^\]\n]* INFO\] Step +\d", re.M)
_NOT_TAGS = frozenset({"bsz"})
_VALIDATION = {"perplexity": "ppl", "accuracy": "acc", "xent": "xent"}


class OpenNMTParser(PairsParser):
    family = "OpenNMT-py"
    lookalike = _LOOKALIKE
    line = _LINE
    state_fields = {"_validations": "sum"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._validations = 0

    def take(self, chunk: Chunk, text: str, found: list[tuple[str, ...]]) -> tuple[int, int]:
        taking = PairTake(self, chunk, text, _NOT_TAGS)
        for index, (stamp, number, rest, source, target, plain, name, value, lookalike) in enumerate(found):
            if name:
                at = 0 if taking.previous is None else taking.previous
                taking.lines.add(at, "nan", f"{_VALIDATION[name]}: {value}", stamp, "valid/")
                self._validations += name == "perplexity"
            elif lookalike or int(number) > LARGEST_STEP:  # (no exact step: not read, named)
                taking.unread.append(index)
            else:
                rest = f"{rest}src_tok/s: {source}; tgt_tok/s: {target}" if source else plain
                taking.main(index, int(number), "nan", rest, stamp)
        return taking.done(len(found))

    def finish(self) -> None:
        notes = ["OpenNMT-py training log: step = the step of each 'Step N/M;' line; acc in percent, xent the "
                 "cross-entropy; src_tok/s and tgt_tok/s the tokens per second"]
        self.count_note(self._validations, "validation(s) as valid/ppl, valid/acc, at the step before them")
        self.notes[:0] = notes


def detect_opennmt(window: str) -> bool:
    """Two training lines of OpenNMT-py."""
    return at_least_two(m for m in _LINE.finditer("\n" + window) if m.group(2))


class OpenNMTReader(TextReader):
    name = "opennmt"
    description = "OpenNMT-py training log ('[… INFO] Step 100/40000; acc: 4.41; ppl: 1654.45; xent: 7.41; lr: …')"
    parser = OpenNMTParser

    def detect(self, window: str) -> bool:
        return detect_opennmt(window)
