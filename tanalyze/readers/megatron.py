"""Megatron-LM and Megatron-DeepSpeed console logs.

The training loop prints one line every ``log_interval`` iterations::

     iteration       10/  171661 | consumed samples:  2560 | elapsed time per iteration (ms): 1001.5 | learning rate: 9.339E-08 | … | lm loss: 1.078335E+01 | loss scale: 2048.0 | number of skipped iterations:   0 |

Fields vary between versions and forks, so every ``name: number`` field is
read and keeps its name as the tag (``lm loss``, ``grad norm``,
``elapsed time per iteration (ms)``). Validation lines
(``validation loss at iteration 100 | lm loss value: … | lm loss PPL: …``)
become ``lm loss validation`` and ``lm loss validation ppl``, the names
Megatron itself gives them in TensorBoard. Timer lines (``time (ms) | forward-compute: …``)
and memory reports become ``time (ms)/…`` and ``memory (MB)/…`` at the last
iteration. The argument dump before training (``  name ........ value``) goes to
the run's hyperparameters. DeepSpeed engine lines that Megatron-DeepSpeed
interleaves are read too (see :mod:`tanalyze.readers.deepspeed`).

An iteration line must end with ``|``: a line cut mid-write by a killed job
does not, and is reported instead of being read with a truncated value.
"""

from __future__ import annotations

import re
from pathlib import Path

from tanalyze.readers._lines import Chunk
from tanalyze.readers._textparse import NAN, TextParser, config_value, parse_timestamp, to_float
from tanalyze.readers._textreader import TextReader
from tanalyze.readers.deepspeed import DeepSpeedEngineLines

__all__ = ["MegatronParser", "MegatronReader", "detect_megatron"]

ITERATION = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|([^\n]*)")
VALIDATION = re.compile(
    r"validation loss at (?:iteration (\d+)|the end of training for (\w+) data)(?: on [^|\n]*)?\s*\|([^\n]*)"
)
MEMORY = re.compile(r"(?:\[Rank (\d+)\] )?\(after (\d+) iterations\) memory \(MB\)\s*\|([^\n]*)")
TIMERS = re.compile(r"^ *(?:\[[^\]\n]*\] *)?time \(ms\) *\|([^\n]*)$", re.M)
ARGUMENT = re.compile(r"^  ([A-Za-z_]\w*) \.{3,} ([^\n]*)$", re.M)
_BANNER = re.compile(r"-{5,} arguments -{5,}|using world size: \d+|> initializing torch distributed|Megatron")


def _fields(text: str, counter: list[int]) -> list[tuple[str, float]]:
    """``name: value`` fields between ``|``; non-numeric values are counted in ``counter[0]``."""
    out = []
    for segment in text.split("|"):
        name, sep, value = segment.partition(":")
        if not sep:
            continue
        name = name.strip()
        number = to_float(value)
        if number is None:
            if value.strip():
                counter[0] += 1
            continue
        if name:
            out.append((name, number))
    return out


class MegatronParser(DeepSpeedEngineLines, TextParser):
    family = "megatron"
    lookalike = re.compile(r"\biteration\s+\d+\s*/\s*\d+|validation loss at")
    patterns = (
        (ITERATION, "iteration"),
        (VALIDATION, "validation"),
        (MEMORY, "memory"),
        (TIMERS, "timers"),
        (ARGUMENT, "argument"),
        *DeepSpeedEngineLines.deepspeed_patterns,
    )

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._init_deepspeed()
        self._iterations_seen = False
        self._bad_values = [0]
        self._validations = 0

    def _on_iteration(self, m: re.Match[str], chunk: Chunk) -> None:
        rest = m.group(3)
        if not rest.rstrip().endswith("|"):
            return  # cut mid-write; the lookalike check reports it
        start = chunk.text.rfind("\n", 0, m.start()) + 1
        prefix = chunk.text[start : m.start()]
        wall = parse_timestamp(prefix.strip(" [")) if any(c.isdigit() for c in prefix) else NAN
        step = int(m.group(1))
        if not self._iterations_seen:
            self._iterations_seen = True
            if self.hparams.get("train_iters") is None:  # the dump says None when set by samples
                self.hparams["train_iters"] = int(m.group(2))
        self.mark(chunk, m.start())
        self._flush_overflows(step)
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(_fields(rest, self._bad_values), step, wall=wall)

    def _on_validation(self, m: re.Match[str], chunk: Chunk) -> None:
        split = "validation" if m.group(1) is not None or m.group(2) in (None, "val", "valid") else m.group(2)
        step = int(m.group(1)) if m.group(1) is not None else self.current_step()
        pairs = []
        for name, value in _fields(m.group(3), self._bad_values):
            if name.endswith(" value"):
                pairs.append((f"{name[:-6]} {split}", value))
            elif name.endswith(" PPL"):
                pairs.append((f"{name[:-4]} {split} ppl", value))
            else:
                pairs.append((f"{name} {split}", value))
        if pairs:
            self._validations += 1
            self.mark(chunk, m.start())
            self.rows.add_pairs(pairs, step)

    def _on_memory(self, m: re.Match[str], chunk: Chunk) -> None:
        rank = int(m.group(1)) if m.group(1) is not None else -1
        pairs = [(f"memory (MB)/{name}", value) for name, value in _fields(m.group(3), self._bad_values)]
        if pairs:
            self.mark(chunk, m.start())
            self.rows.add_pairs(pairs, int(m.group(2)), rank=rank)

    def _on_timers(self, m: re.Match[str], chunk: Chunk) -> None:
        if not self._iterations_seen:
            return  # setup timers (load-checkpoint, model-and-optimizer-setup) come before training
        pairs = [(f"time (ms)/{name}", value) for name, value in _fields(m.group(1), self._bad_values)]
        if pairs:
            self.mark(chunk, m.start())
            self.rows.add_pairs(pairs, self.current_step())

    def _on_argument(self, m: re.Match[str], chunk: Chunk) -> None:
        if not self._iterations_seen:
            self.hparams.setdefault(m.group(1), config_value(m.group(2)))

    def finish(self) -> None:
        notes = self._finish_deepspeed()
        if self._bad_values[0]:
            notes.append(f"{self._bad_values[0]:,} field value(s) that are not numbers were skipped")
        if self._validations:
            notes.append(
                "validation lines: 'X value' → 'X validation', 'X PPL' → 'X validation ppl' (Megatron's TensorBoard names)"
            )
        self.notes[:0] = notes


def detect_megatron(window: str) -> bool:
    if re.search(r"iteration\s+\d+\s*/\s*\d+\s*\|[^\n]*\|", window):
        return True
    return bool(re.search(r"-{5,} arguments -{5,}", window) and _BANNER.search(window, 0, 1 << 20))


class MegatronReader(TextReader):
    name = "megatron"
    description = "Megatron-LM / Megatron-DeepSpeed console logs ('iteration N/ M | name: value | …')"
    parser = MegatronParser

    def detect(self, window: str) -> bool:
        return detect_megatron(window)
