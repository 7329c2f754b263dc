"""nanoGPT console logs (``train.py`` of karpathy/nanoGPT and its many forks).

Two line kinds::

    step 200: train loss 6.6253, val loss 6.6336
    iter 201: loss 6.5809, time 309.52ms, mfu 108.40%

The evaluation line gives ``train/loss`` and ``val/loss`` (the names nanoGPT
logs to W&B); the iteration line gives ``loss`` (that batch's loss),
``time_ms`` (wall time of the iteration, for throughput) and ``mfu`` (model
FLOPs utilisation, in percent). nanoGPT prints ``mfu -100.00%`` until it has
measured a few iterations: that sentinel is skipped and counted. Forks that
print a unit after the loss (``loss 6.1551 BPC``) are read the same way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tanalyze.readers._lines import Chunk
from tanalyze.readers._textparse import NUMBER, TextParser, to_float
from tanalyze.readers._textreader import TextReader

__all__ = ["NanoGPTParser", "NanoGPTReader", "detect_nanogpt"]

_UNIT = r"(?: ?([A-Za-z]{1,5}))?"
ITER = re.compile(rf"^iter (\d+): loss ({NUMBER}){_UNIT}, time ({NUMBER}) ?ms((?:, [^\n]*)?)$", re.M)
EVAL = re.compile(rf"^step (\d+): train loss ({NUMBER}){_UNIT}, val loss ({NUMBER}){_UNIT}((?:, [^\n]*)?)$", re.M)
_EXTRA = re.compile(rf", ([A-Za-z_][\w ]*?) ({NUMBER})(%?)(?=,|$)")
MFU_NOT_MEASURED = -100.0


class NanoGPTParser(TextParser):
    family = "nanogpt"
    lookalike = re.compile(r"^(?:iter|step) \d+:", re.M)
    patterns = ((ITER, "iter"), (EVAL, "eval"))

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._mfu_sentinels = 0
        self._units: set[str] = set()

    def _extra(self, text: str) -> list[tuple[str, float]]:
        out = []
        for name, value, _percent in _EXTRA.findall(text):
            number = to_float(value)
            if number is None:
                continue
            if name == "mfu" and number == MFU_NOT_MEASURED:
                self._mfu_sentinels += 1
                continue
            out.append((name, number))
        return out

    def _on_iter(self, m: re.Match[str], chunk: Chunk) -> None:
        step = int(m.group(1))
        if m.group(3):
            self._units.add(m.group(3))
        pairs = [("loss", float(m.group(2))), ("time_ms", float(m.group(4)))]
        pairs.extend(self._extra(m.group(5)))
        self.mark(chunk, m.start())
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(pairs, step)

    def _on_eval(self, m: re.Match[str], chunk: Chunk) -> None:
        for unit in (m.group(3), m.group(5)):
            if unit:
                self._units.add(unit)
        pairs = [("train/loss", float(m.group(2))), ("val/loss", float(m.group(4)))]
        pairs.extend(self._extra(m.group(6)))
        self.mark(chunk, m.start())
        self.rows.add_pairs(pairs, int(m.group(1)))

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "mfu_sentinels": self._mfu_sentinels, "units": sorted(self._units)}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self._mfu_sentinels = state["mfu_sentinels"]
        self._units = set(state["units"])

    def absorb(self, other: TextParser) -> None:
        assert isinstance(other, NanoGPTParser)
        super().absorb(other)
        self._mfu_sentinels += other._mfu_sentinels
        self._units |= other._units

    def finish(self) -> None:
        notes = []
        if self._mfu_sentinels:
            notes.append(f"{self._mfu_sentinels} 'mfu -100.00%' value(s) (not measured yet) skipped")
        if self._units:
            notes.append(f"losses carry a unit suffix ({', '.join(sorted(self._units))}); values kept as printed")
        self.notes[:0] = notes


def detect_nanogpt(window: str) -> bool:
    return bool(ITER.search(window) or EVAL.search(window))


class NanoGPTReader(TextReader):
    name = "nanogpt"
    description = "nanoGPT console logs ('iter N: loss …, time …ms, mfu …%', 'step N: train loss …, val loss …')"
    parser = NanoGPTParser

    def detect(self, window: str) -> bool:
        return detect_nanogpt(window)
