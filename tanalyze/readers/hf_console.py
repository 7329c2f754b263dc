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
from the final ``train_runtime × train_steps_per_second``, snapped to a
multiple of ``logging_steps`` (from the argument dump) for training logs;
otherwise ``k × logging_steps`` for the k-th training log; otherwise the plain
count of logging events. ``epoch`` stays a column.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from tanalyze.readers._lines import Chunk
from tanalyze.readers._textparse import NAN, TextParser, config_value, to_float
from tanalyze.readers._textreader import TextReader

__all__ = ["HFConsoleParser", "HFConsoleReader", "detect_hf_console", "parse_dict_literal"]

DICT = re.compile(r"\{\s*(['\"])([^'\"\n]{1,200})\1\s*:[^{}\n]*\}")
_DICT_PAIR = re.compile(
    r"""(['"])((?:(?!\1)[^\\\n]|\\.)*)\1\s*:\s*('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\[[^\]\n]*\]|\([^)\n]*\)|[^,}\n]+)"""
)
_FIRST_KEYS = ("loss", "eval_", "train_", "test_", "predict_", "learning_rate", "grad_norm", "epoch", "total_flos")
RUNNING_TRAINING = re.compile(r"\*{5} Running training \*{5}")
BANNER = re.compile(
    r"(Num examples|Num Epochs|Total optimization steps|Gradient Accumulation steps|Number of trainable parameters"
    r"|Instantaneous batch size per device|Total train batch size \(w\. parallel, distributed & accumulation\))"
    r" = ([\d,]+)"
)
ARGS_START = re.compile(r"\w*TrainingArguments\($", re.M)
ARG = re.compile(r"^([a-z_][a-z0-9_]*)=([^\n]*?),?$", re.M)
ARGS_END = re.compile(r"^\)$", re.M)
METRICS_HEADER = re.compile(r"\*{5} (\w+) metrics \*{5}[ \t]*$", re.M)
METRIC_KV = re.compile(r"^(?:[^\n>]*>>)?[ \t]+([A-Za-z_][\w./-]*)[ \t]+=[ \t]+([^\n]*?)[ \t]*$", re.M)
_DURATION = re.compile(r"^(\d+):(\d\d):(\d\d(?:\.\d+)?)$")
_STEP_KEYS = ("step", "global_step")


def parse_dict_literal(text: str) -> tuple[dict[str, float], int]:
    """Numeric items of a printed Python dict, and how many items were not numbers.

    A literal tokenizer: quoted keys, values that are numbers or nan/inf
    spellings are kept; strings, lists, None and booleans are counted, not kept.
    """
    out: dict[str, float] = {}
    skipped = 0
    for _, key, raw in _DICT_PAIR.findall(text):
        raw = raw.strip()
        if raw[:1] in "'\"[(" or raw in ("None", "True", "False"):
            skipped += 1
            continue
        number = to_float(raw)
        if number is None:
            skipped += 1
        else:
            out[key] = number
    return out, skipped


def _metric_value(text: str) -> float | None:
    number = to_float(text)
    if number is not None:
        return number
    m = _DURATION.match(text.strip())
    if m:
        return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    return None


@dataclass
class _Event:
    kind: str  # train | eval | final | other | block
    values: dict[str, float]
    epoch: float
    line: int
    step: int | None = None


def _kind(values: dict[str, float]) -> str:
    if "train_runtime" in values:
        return "final"
    if any(k.startswith("eval_") for k in values):
        return "eval"
    if "loss" in values:
        return "train"
    return "other"


class HFConsoleParser(TextParser):
    family = "hf_console"
    lookalike = re.compile(r"\{\s*['\"](?:loss|eval_\w*|train_runtime|learning_rate)['\"]\s*:")
    patterns = (
        (DICT, "dict"),
        (RUNNING_TRAINING, "running"),
        (BANNER, "banner"),
        (ARGS_START, "args_start"),
        (ARG, "arg"),
        (ARGS_END, "args_end"),
        (METRICS_HEADER, "metrics_header"),
        (METRIC_KV, "metric_kv"),
    )

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._events: list[_Event] = []
        self._banner: dict[str, int] = {}
        self._in_training_banner = False
        self._trainings = 0
        self._in_args = False
        self._args: dict[str, str] = {}
        self._block: str | None = None
        self._block_next = -1
        self._non_numeric = 0

    # -- lines --------------------------------------------------------------------------------------
    def _on_dict(self, m: re.Match[str], chunk: Chunk) -> None:
        first = m.group(2)
        text = m.group(0)
        if not first.startswith(_FIRST_KEYS) and "'epoch'" not in text and '"epoch"' not in text:
            return
        values, skipped = parse_dict_literal(text)
        self._non_numeric += skipped
        if not values:
            return
        epoch = values.pop("epoch", NAN)
        step = None
        for key in _STEP_KEYS:
            if key in values:
                step = int(values.pop(key))
        self.mark(chunk, m.start())
        self._events.append(_Event(_kind(values), values, epoch, chunk.line_of(m.start()), step))

    def _on_running(self, m: re.Match[str], chunk: Chunk) -> None:
        self._trainings += 1
        self._in_training_banner = True

    def _on_banner(self, m: re.Match[str], chunk: Chunk) -> None:
        name, value = m.group(1), int(m.group(2).replace(",", ""))
        if name == "Num examples":
            if self._in_training_banner:
                self._banner.setdefault(name, value)
            return
        if name == "Number of trainable parameters":
            self._in_training_banner = False
        self._banner[name] = value

    def _on_args_start(self, m: re.Match[str], chunk: Chunk) -> None:
        self._in_args = True

    def _on_arg(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._in_args:
            self._args.setdefault(m.group(1), m.group(2))

    def _on_args_end(self, m: re.Match[str], chunk: Chunk) -> None:
        self._in_args = False

    def _on_metrics_header(self, m: re.Match[str], chunk: Chunk) -> None:
        self._block = m.group(1)
        self._block_next = chunk.text.find("\n", m.end()) + 1
        self.mark(chunk, m.start())

    def _on_metric_kv(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._block is None or m.start() != self._block_next:
            self._block = None
            return
        self._block_next = m.end() + 1
        key, raw = m.group(1), m.group(2)
        value = _metric_value(raw)
        self.mark(chunk, m.start())
        if value is None:
            self._non_numeric += 1
            return
        if key == "epoch":
            return
        self._events.append(_Event("block", {key: value}, NAN, chunk.line_of(m.start())))

    def start_file(self, path: Path) -> None:
        super().start_file(path)
        self._block = None
        self._in_args = False

    # -- steps ----------------------------------------------------------------------------------------
    def _arg_int(self, name: str) -> int | None:
        raw = self._args.get(name)
        if raw is None:
            return None
        number = to_float(raw)
        return int(number) if number is not None and number == int(number) else None

    def _steps_per_epoch(self) -> tuple[float | None, str]:
        total = self._banner.get("Total optimization steps")
        epochs = self._banner.get("Num Epochs")
        max_steps = self._arg_int("max_steps")
        if total and epochs and (max_steps is None or max_steps <= 0):
            return total / epochs, f"Total optimization steps {total:,} / Num Epochs {epochs} (banner)"
        finals = [e for e in self._events if e.kind == "final" and not math.isnan(e.epoch) and e.epoch > 0]
        for final in reversed(finals):
            runtime, rate = final.values.get("train_runtime"), final.values.get("train_steps_per_second")
            if runtime and rate:
                steps = round(runtime * rate)
                return steps / final.epoch, (
                    f"train_runtime × train_steps_per_second ≈ {steps:,} steps over {final.epoch:g} epochs"
                )
        logging = self._arg_int("logging_steps")
        trains = [e for e in self._events if e.kind == "train" and not math.isnan(e.epoch) and e.epoch > 0]
        if logging and trains:
            last = trains[-1]
            return len(trains) * logging / last.epoch, f"{len(trains)} training logs × logging_steps {logging}"
        return None, ""

    def finish(self) -> None:
        events = self._events
        if not events:
            self._hparams()
            return
        spe, source = self._steps_per_epoch()
        logging = self._arg_int("logging_steps")
        eval_every = self._arg_int("eval_steps") or logging
        tolerance = max(1.0, 0.006 * spe) if spe else 0.0
        last_step = 0
        count = 0
        how: set[str] = set()
        for event in events:
            count += event.kind == "train"
            if event.step is not None:
                step = event.step
                how.add("step key in the dict")
            elif event.kind == "block":
                step = last_step
            elif spe and not math.isnan(event.epoch):
                raw = event.epoch * spe
                snap = logging if event.kind == "train" else eval_every
                step = round(raw)
                if snap and event.epoch != int(event.epoch):
                    snapped = round(raw / snap) * snap
                    if abs(raw - snapped) <= tolerance:
                        step = snapped
                how.add("epoch")
            elif event.kind == "train" and logging:
                step = count * logging
                how.add("logging_steps")
            elif event.kind == "train":
                step = count
                how.add("count")
            else:
                step = last_step
                how.add("previous")
            event.step = step
            if event.kind == "train":
                self.anchor(step, None, 0, line=event.line)
            last_step = step if event.kind != "block" else last_step
        final_step = max(e.step for e in events if e.step is not None)
        logged_final = {(k, e.step) for e in events if e.kind != "block" for k in e.values}
        dropped_block = 0
        for event in events:
            if event.kind == "block":
                event.step = final_step
                key = next(iter(event.values))
                if (key, final_step) in logged_final:
                    dropped_block += 1
                    continue
            self.rows.add_pairs(event.values.items(), event.step, epoch=event.epoch)  # type: ignore[arg-type]
        self._notes(spe, source, logging, how, dropped_block)
        self._hparams()

    def _notes(self, spe: float | None, source: str, logging: int | None, how: set[str], dropped: int) -> None:
        notes = []
        if "epoch" in how:
            snap = f", training logs snapped to multiples of logging_steps {logging}" if logging else ""
            notes.append(
                f"the console carries no step: step = round(epoch × {spe:g} steps per epoch) ({source}){snap}"
            )
        if "logging_steps" in how:
            notes.append(f"the console carries no step: the k-th training log is step k × logging_steps {logging}")
        if "count" in how:
            notes.append("the console carries no step and no logging_steps: step = count of training logs so far")
        if "previous" in how:
            notes.append("logs without an epoch are keyed by the previous log's step")
        if "step key in the dict" in how:
            notes.append("dicts with a 'step' key use it")
        if dropped:
            notes.append(f"{dropped} '***** … metrics *****' value(s) already logged in a dict at the final step were not repeated")
        if any(e.kind == "block" for e in self._events):
            notes.append("'***** … metrics *****' blocks are keyed by the final step (h:mm:ss durations in seconds)")
        if self._non_numeric:
            notes.append(f"{self._non_numeric} logged value(s) that are not numbers were skipped")
        if self._trainings > 1:
            notes.append(f"{self._trainings} '***** Running training *****' banners: the log holds several trainings")
        self.notes[:0] = notes

    def _hparams(self) -> None:
        for key, value in self._banner.items():
            self.hparams.setdefault(key, value)
        for key, raw in self._args.items():
            self.hparams.setdefault(key, config_value(raw))


_HF_DICT = re.compile(r"\{\s*['\"](?:loss|eval_loss|train_runtime|learning_rate|grad_norm)['\"]\s*:")
_HF_BANNER = re.compile(r"\*{5} Running training \*{5}[^\n]*\n[^\n]*Num examples = ")


def detect_hf_console(window: str) -> bool:
    return bool(_HF_DICT.search(window) or _HF_BANNER.search(window))


class HFConsoleReader(TextReader):
    name = "hf_console"
    description = "Hugging Face Trainer console output ({'loss': …, 'epoch': …} dicts, metrics blocks)"
    parser = HFConsoleParser

    def detect(self, window: str) -> bool:
        return detect_hf_console(window)
