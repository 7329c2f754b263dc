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
from pathlib import Path

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.values import parse_timestamp, to_float

__all__ = ["FairseqParser", "FairseqReader", "detect_fairseq"]

_PREFIX = (
    r"(?:(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?) \| [A-Z]+ \| ([\w.]+) \| "
    r"|\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?)\]\[([\w.]+)\]\[[A-Z]+\] - "
    r"|\| )?"
)
INNER = re.compile(rf"^{_PREFIX}epoch (\d+):\s+(\d+) / (\d+) ([^\n]*)$", re.M)
SUMMARY = re.compile(rf"^{_PREFIX}epoch (\d+) \| ([^\n]*)$", re.M)
JSON_LINE = re.compile(rf"^{_PREFIX}(\{{[^\n]*\}})[ \t]*$", re.M)
_SUBSET = re.compile(r"^valid on '([^']*)' subset$")
_NOT_TAGS = frozenset({"epoch", "update", "num_updates"})
_RECORD_NAMES = frozenset({"train_inner", "train", "valid"})


class FairseqParser(TextParser):
    family = "fairseq"
    lookalike = re.compile(rf"^{_PREFIX}(?:epoch \d+[:|  ]|\{{\"epoch\")", re.M)
    patterns = ((INNER, "inner"), (SUMMARY, "summary"), (JSON_LINE, "json"))

    state_fields = {"_not_numbers": "sum", "_kinds": "union"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._not_numbers = 0
        self._kinds: set[str] = set()
        self._names: dict[tuple[str, str], str] = {}  # (section, key) -> tag, made once

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
