"""modded-nanogpt (the NanoGPT speedrun, KellerJordan/modded-nanogpt and forks): its ``logs/<uuid>.txt``.

Each log starts with the whole ``train_gpt.py`` source and the ``nvidia-smi``
output, then one line per step::

    step:0/6200 val_loss:10.9264 train_time:285ms step_avg:nanms
    step:1/6200 train_loss:10.9184 train_time:74701ms step_avg:nanms
    step:1/5820 train_time:85ms step_avg:85.33ms            (later versions: no train loss)

Only lines that *start* with ``step:N/M`` are read, so the source code above
them (which prints those very lines from f-strings) gives no point. Step = the
``N`` printed: the train line of update ``N`` and the validation run after ``N``
updates share it (the validation line's timings, a few ms after the train
line's, are then not repeated). Tags: ``train/loss``, ``val/loss``, ``train_time_ms`` (time
spent training so far, excluding validation), ``step_avg_ms``. ``step_avg:nanms``
(not measured during the first steps) is skipped and counted. The closing
``peak memory allocated: … MiB reserved: … MiB`` goes to hparams.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._shaped import LineShape
from tanalyze.readers.text._spans import SpanParser
from tanalyze.readers.values import NUMBER, to_float

__all__ = ["ModdedNanoGPTParser", "ModdedNanoGPTReader", "detect_modded_nanogpt"]

STEP_LINE = re.compile(r"^step:(\d+)/(\d+)((?: [A-Za-z_]\w*:[^\s:]+)+)[ \t]*$", re.M)
_FIELD = re.compile(rf"^([A-Za-z_]\w*):({NUMBER})(ms)?$")
PEAK_MEMORY = re.compile(r"^peak memory allocated: (\d+) MiB reserved: (\d+) MiB[ \t]*$", re.M)
TAGS = {"train_loss": "train/loss", "val_loss": "val/loss", "train_time": "train_time_ms", "step_avg": "step_avg_ms"}
#: The train line as the speedrun prints it (with the train loss, as the early records do, or without), read
#: at once (see ._spans); validation lines and the peak memory line in their place, on their own.
_SHAPES = (
    LineShape(("step:", "/", " train_time:", "ms step_avg:", "ms"), (True, True, False, False)),
    LineShape(("step:", "/", " train_loss:", " train_time:", "ms step_avg:", "ms"), (True, True, False, False, False)),
)
_SHAPE_TAGS = (("train_time_ms", "step_avg_ms"), ("train/loss", "train_time_ms", "step_avg_ms"))


class ModdedNanoGPTParser(SpanParser, TextParser):
    family = "modded-nanogpt"
    lookalike = re.compile(r"^step:\d+", re.M)
    patterns = ((STEP_LINE, "step"), (PEAK_MEMORY, "memory"))

    state_fields = {"_not_measured": "sum", "_other_values": "sum", "_repeated_timings": "sum",
                    "_last_train_step": "last"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._not_measured = 0
        self._other_values = 0
        self._repeated_timings = 0
        self._last_train_step: int | None = None

    span_prefix = "step:"
    span_shapes = _SHAPES

    def span_rows(self, grid: np.ndarray, shape: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray] | None:
        return _SHAPE_TAGS[shape], grid[:, 0].astype(np.int64), grid[:, 2:].ravel()

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        self._last_train_step = int(steps[-1])
        self.hparams["num_iterations"] = int(grid[-1, 1])

    def _on_step(self, m: re.Match[str], chunk: Chunk) -> None:
        step = int(m.group(1))
        validation = "val_loss:" in m.group(3)
        repeat = validation and step == self._last_train_step  # its train line gave this step's timings
        pairs = []
        for field in m.group(3).split():
            found = _FIELD.match(field)
            value = to_float(found.group(2)) if found else None
            if found is None or value is None:
                self._other_values += 1
                continue
            if value != value:  # 'nanms': step_avg before it is measured
                self._not_measured += 1
                continue
            name = found.group(1)
            if repeat and found.group(3):
                self._repeated_timings += 1
                continue
            pairs.append((TAGS.get(name, name + ("_ms" if found.group(3) else "")), value))
        if not pairs:
            return  # not marked: the look-alike scan counts it as unreadable
        self.mark(chunk, m.start())
        if not validation:
            self.anchor(step, chunk, m.start())
            self._last_train_step = step
        self.hparams["num_iterations"] = int(m.group(2))
        self.rows.add_pairs(pairs, step)

    def _on_memory(self, m: re.Match[str], chunk: Chunk) -> None:
        self.hparams["peak_memory_allocated_mib"] = int(m.group(1))
        self.hparams["peak_memory_reserved_mib"] = int(m.group(2))

    def finish(self) -> None:
        notes = ["only 'step:N/M …' lines are read (step = N); the rest (the training script's source a speedrun "
                 "log starts with, nvidia-smi, warnings) is skipped"]
        if self._not_measured:
            notes.append(f"{self._not_measured:,} NaN value(s) ('step_avg:nanms', not measured yet) skipped")
        if self._repeated_timings:
            notes.append(f"{self._repeated_timings:,} timing(s) of validation lines not repeated: the train line "
                         "of the same step gave them (a few ms earlier)")
        if self._other_values:
            notes.append(f"{self._other_values:,} field(s) of step lines that are not numbers skipped")
        self.notes[:0] = notes


def detect_modded_nanogpt(window: str) -> bool:
    return STEP_LINE.search(window) is not None


class ModdedNanoGPTReader(TextReader):
    name = "modded_nanogpt"
    cache_version = 5  # 4: every line not of the main template read in its place, as line by line; 5: its note
    description = "modded-nanogpt / NanoGPT speedrun logs ('step:N/M train_loss:… val_loss:… train_time:…ms')"
    parser = ModdedNanoGPTParser

    def detect(self, window: str) -> bool:
        return detect_modded_nanogpt(window)
