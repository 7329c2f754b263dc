"""Throughput of every console-log reader against a naive per-line loop (run on demand).

    python bench/bench_text.py                  # 100 MB per format, files kept in bench/_data/
    python bench/bench_text.py --mb 20          # smaller, quicker
    python bench/bench_text.py --only nanogpt   # one format

One realistic synthetic log per console format (Megatron, HF console, DeepSpeed, nanoGPT, the generic
reader's MMDetection-style meters, llm.c's console and main.log, modded-nanogpt, fairseq's simple and JSON formats, Keras's model.fit,
PyTorch's MNIST example, Lightning's tqdm bar,
timm's train.py) is written once
(see ``text_logs.py``: banners, dumps, noise and evaluation lines as real logs of the format have).
Each is read, in the same run, by:

- ours: the registered reader (``Reader.read``), notes and checks included;
- naive: ``for line in f: pattern.match(line)`` per line kind (the next line once one
  matched) building the same
  tidy table (tag, step, value, wall time): the fields of a matching line taken
  with ``re.findall`` or groups, time stamps with ``datetime.strptime``, HF dicts
  with ``ast.literal_eval`` (nan/inf replaced), fairseq's JSON records with ``json.loads``;
- tuned (Megatron and HF only): the same per-line loop hand-tuned (``str.split``/
  ``partition`` instead of regexes per field, a day cache for time stamps): a
  harder reference than the naive loop, printed for honesty.

One row per reader: MB, CPU seconds and MB/s of each (best of ``--repeat``, ours and
the naive loop measured alternately, after one untimed read of the log's head by ours), and
``naive s / ours s`` (the goal: at least 2).
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.text_logs import MAKERS  # noqa: E402
from tanalyze.readers import get_reader  # noqa: E402
from tanalyze.readers.text.hf_console import parse_dict_literal  # noqa: E402

DATA = ROOT / "bench" / "_data"
NUMBER = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[nN]a[nN]|[iI]nf(?:inity)?)"


# -- baselines: the same fields, one line at a time --------------------------------------------
MEG_ITER = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)")
MEG_VALID = re.compile(r"validation loss at iteration (\d+)\s*\|(.*)")
MEG_TIMERS = re.compile(r"^time \(ms\)\s*\|(.*)")
DS_STEP = re.compile(r"\[Rank (\d+)\] step=(\d+), skipped=(\d+), lr=\[([^\],]*)")
DS_TIMER = re.compile(r"\] (\d+)/(\d+), (.*)")
FIELD = re.compile(rf"\s*([^|:]+?)\s*:\s*({NUMBER})\s*\|")
PAIR = re.compile(rf"(\w+)=({NUMBER})(GB|MB)?")
STAMP = "%Y-%m-%d %H:%M:%S,%f"


def _frame(tags: list[str], steps: list[int], values: list[float], walls: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {"tag": pd.Categorical(tags), "step": np.asarray(steps, dtype=np.int64),
         "value": np.asarray(values, dtype=np.float64), "wall_time": np.asarray(walls, dtype=np.float64)}
    )


def _stamp(line: str) -> float:
    return datetime.strptime(line[1:24], STAMP).replace(tzinfo=UTC).timestamp()


def naive_megatron(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []

    def add(tag: str, step: int, value: float, wall: float = math.nan) -> None:
        tags.append(tag)
        steps.append(step)
        values.append(value)
        walls.append(wall)

    step = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = MEG_ITER.search(line)
            if m:
                step = int(m.group(1))
                for name, value in FIELD.findall(m.group(3)):
                    add(name, step, float(value))
                continue
            m = MEG_VALID.search(line)
            if m:
                for name, value in FIELD.findall(m.group(2)):
                    add(name, int(m.group(1)), float(value))
                continue
            m = MEG_TIMERS.search(line)
            if m:
                for name, value in FIELD.findall(m.group(1) + "|"):
                    add("time (ms)/" + name, step, float(value))
                continue
            m = DS_STEP.search(line)
            if m:
                wall = _stamp(line)
                add("skipped", int(m.group(2)), float(m.group(3)), wall)
                add("lr", int(m.group(2)), float(m.group(4)), wall)
                continue
            m = DS_TIMER.search(line)
            if m:
                wall = _stamp(line)
                for name, value, unit in PAIR.findall(m.group(3)):
                    add(f"{name} ({unit})" if unit else name, int(m.group(2)), float(value), wall)
    return len(_frame(tags, steps, values, walls))


def tuned_megatron(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    days: dict[str, float] = {}

    def stamp(line: str) -> float:
        day = days.get(line[1:11])
        if day is None:
            day = days[line[1:11]] = datetime.strptime(line[1:11], "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
        return day + int(line[12:14]) * 3600 + int(line[15:17]) * 60 + int(line[18:20]) + int(line[21:24]) / 1000

    def fields(text: str, step: int, prefix: str = "") -> None:
        for segment in text.split("|"):
            name, sep, value = segment.partition(":")
            if sep:
                try:
                    values.append(float(value))
                except ValueError:
                    continue
                tags.append(prefix + name.strip())
                steps.append(step)
                walls.append(math.nan)

    step = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = MEG_ITER.search(line)
            if m:
                step = int(m.group(1))
                fields(m.group(3), step)
                continue
            m = MEG_VALID.search(line)
            if m:
                fields(m.group(2), int(m.group(1)))
                continue
            m = MEG_TIMERS.search(line)
            if m:
                fields(m.group(1), step, "time (ms)/")
                continue
            m = DS_STEP.search(line)
            if m:
                wall = stamp(line)
                ds_step = int(m.group(2))
                tags.extend(("skipped", "lr"))
                values.extend((float(m.group(3)), float(m.group(4))))
                steps.extend((ds_step, ds_step))
                walls.extend((wall, wall))
                continue
            m = DS_TIMER.search(line)
            if m:
                wall, ds_step = stamp(line), int(m.group(2))
                for item in m.group(3).rstrip("\n").split(", "):
                    name, _, value = item.partition("=")
                    unit = value[-2:] if value.endswith(("GB", "MB")) else ""
                    tags.append(f"{name} ({unit})" if unit else name)
                    values.append(float(value[:-2] if unit else value))
                    steps.append(ds_step)
                    walls.append(wall)
    return len(_frame(tags, steps, values, walls))


HF_DICT = re.compile(r"\{'(?:loss|eval_\w+|train_runtime)'[^{}]*\}")
_NON_FINITE = re.compile(r"(?<=: )(-?)(nan|inf)(?=[,}])")


def naive_hf(path: Path) -> int:
    tags: list[str] = []
    epochs: list[float] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:  # text mode splits on \r too
        for line in handle:
            m = HF_DICT.search(line)
            if m:
                literal = _NON_FINITE.sub(lambda n: f"float('{n.group(1)}{n.group(2)}')", m.group(0))
                record = ast.literal_eval(literal) if "float(" not in literal else {}
                epoch = record.pop("epoch", math.nan)
                for key, value in record.items():
                    tags.append(key)
                    epochs.append(epoch)
                    values.append(float(value))
    return len(_frame(tags, [round(e * 10_000) for e in epochs], values, [math.nan] * len(values)))


def tuned_hf(path: Path) -> int:
    tags: list[str] = []
    epochs: list[float] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("{'"):
                m = HF_DICT.search(line)
                if m:
                    record, _ = parse_dict_literal(m.group(0))
                    epoch = record.pop("epoch", math.nan)
                    tags.extend(record)
                    values.extend(record.values())
                    epochs.extend([epoch] * len(record))
    return len(_frame(tags, [round(e * 10_000) for e in epochs], values, [math.nan] * len(values)))


NANO_ITER = re.compile(rf"iter (\d+): loss ({NUMBER}), time ({NUMBER})ms, mfu ({NUMBER})%")
NANO_EVAL = re.compile(rf"step (\d+): train loss ({NUMBER}), val loss ({NUMBER})")


def naive_nanogpt(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = NANO_ITER.match(line)
            if m:
                step = int(m.group(1))
                mfu = float(m.group(4))
                for tag, value in (("loss", float(m.group(2))), ("time_ms", float(m.group(3))), ("mfu", mfu)):
                    if tag != "mfu" or mfu != -100.0:
                        tags.append(tag)
                        steps.append(step)
                        values.append(value)
                continue
            m = NANO_EVAL.match(line)
            if m:
                step = int(m.group(1))
                tags.extend(("train/loss", "val/loss"))
                steps.extend((step, step))
                values.extend((float(m.group(2)), float(m.group(3))))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


DS_OVERFLOW = re.compile(rf"Skipping step\. Attempted loss scale: ({NUMBER})(?:, reducing to ({NUMBER}))?")
DS_CHAT_TIMER = re.compile(r"global_step=(\d+), (.*)")
DS_PPL = re.compile(rf"ppl: ({NUMBER})")


def naive_deepspeed(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []

    def add(tag: str, step: int, value: float, wall: float = math.nan) -> None:
        tags.append(tag)
        steps.append(step)
        values.append(value)
        walls.append(wall)

    step, skips, scale = 0, 0, math.nan
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = DS_STEP.search(line)
            if m:
                step, wall = int(m.group(2)), _stamp(line)
                if skips:
                    add("overflow_skips", step, float(skips), wall)
                    add("loss_scale", step, scale, wall)
                    skips = 0
                add("skipped", step, float(m.group(3)), wall)
                add("lr", step, float(m.group(4)), wall)
                continue
            m = DS_CHAT_TIMER.search(line)
            if m:
                wall = _stamp(line)
                for name, value, unit in PAIR.findall(m.group(2)):
                    add(f"{name} ({unit})" if unit else name, int(m.group(1)), float(value), wall)
                continue
            m = DS_OVERFLOW.search(line)
            if m:
                skips += 1
                scale = float(m.group(2) or m.group(1))
                continue
            m = DS_PPL.match(line)
            if m:
                add("eval_ppl", step, float(m.group(1)))
    return len(_frame(tags, steps, values, walls))


MM_METER = re.compile(r"Epoch \[(\d+)\]\[(\d+)/(\d+)\]\t(.*)")
MM_PAIR = re.compile(r"([A-Za-z_][\w/.()@-]*): (\S+?),? ")


COCO_SUMMARY = re.compile(r" Average \w+ +\((A[PR])\) @\[ IoU=\S+ +\| area= *(\w+) \| maxDets= *\d+ \] = (\S+)")


def naive_text(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    epochs: list[float] = []
    step, epoch = 0, math.nan
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = MM_METER.search(line)
            if m:
                epoch, index, batches = int(m.group(1)), int(m.group(2)), int(m.group(3))
                step = epoch * batches + index
                for name, value in MM_PAIR.findall(m.group(4) + " "):
                    try:
                        number = float(value)
                    except ValueError:
                        continue
                    tags.append(name)
                    steps.append(step)
                    values.append(number)
                    epochs.append(float(epoch))
                continue
            m = COCO_SUMMARY.match(line)  # a COCO evaluation's summary line, at the last training step
            if m:
                tags.append(f"coco/{m.group(1)}{m.group(2)}")
                steps.append(step)
                values.append(float(m.group(3)))
                epochs.append(math.nan)
    frame = _frame(tags, steps, values, [math.nan] * len(values))
    frame["epoch"] = np.asarray(epochs)
    return len(frame)


KV_LINE = re.compile(r"iter (\d+) \|(.*)")
KV_PAIR = re.compile(r"([\w/]+) (\S+)")


IMAGENET_METER = re.compile(r"Epoch: \[(\d+)\]\[\s*(\d+)/(\d+)\](.*)")
IMAGENET_PAIR = re.compile(r"([A-Za-z@][\w@]*)\s+(\S+) \(")


def naive_text_imagenet(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    epochs: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = IMAGENET_METER.match(line)
            if m:
                epoch = int(m.group(1))
                step = epoch * int(m.group(3)) + int(m.group(2))
                for name, value in IMAGENET_PAIR.findall(m.group(4)):
                    tags.append(name)
                    steps.append(step)
                    values.append(float(value))
                    epochs.append(float(epoch))
    frame = _frame(tags, steps, values, [math.nan] * len(values))
    frame["epoch"] = np.asarray(epochs)
    return len(frame)


def naive_text_kv(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = KV_LINE.match(line)
            if m:
                step = int(m.group(1))
                for name, value in KV_PAIR.findall(m.group(2)):
                    try:
                        number = float(value)
                    except ValueError:
                        continue
                    tags.append(name)
                    steps.append(step)
                    values.append(number)
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


EPOCH_LINE = re.compile(r"Epoch (\d+)/\d+$")
EPOCH_PAIR = re.compile(r"([A-Za-z][\w ]*?): (\S+)")


def naive_text_epochs(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    epochs: list[float] = []
    epoch = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = EPOCH_LINE.match(line)
            if m:
                epoch = int(m.group(1))
                continue
            if epoch is None:
                continue
            for name, value in EPOCH_PAIR.findall(line):
                try:
                    number = float(value)
                except ValueError:
                    continue
                tags.append(name)
                steps.append(epoch)
                values.append(number)
                epochs.append(float(epoch))
    frame = _frame(tags, steps, values, [math.nan] * len(values))
    frame["epoch"] = np.asarray(epochs)
    return len(frame)


LLMC_STEP = re.compile(r"step\s+(\d+)/(\d+) \| loss (\S+) \(([^)]*)\)\| norm (\S+) \(([^)]*)\)\| lr (\S+)(.*)")
LLMC_TAIL = re.compile(r"\| (\S+) ms \| (\S+)% \w+ MFU \| (\S+) tok/s")
LLMC_VAL = re.compile(r"val loss (\S+)")
LLMC_HELLASWAG = re.compile(r"HellaSwag: \d+/\d+ = (\S+)")


def naive_llmc(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []

    def add(tag: str, step: int, value: float) -> None:
        tags.append(tag)
        steps.append(step)
        values.append(value)

    step = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = LLMC_STEP.match(line)
            if m:
                step = int(m.group(1))
                add("train/loss", step, float(m.group(3)))
                if m.group(4) != "+nanz":
                    add("loss_zscore", step, float(m.group(4)[:-1]))
                add("grad_norm", step, float(m.group(5)))
                if m.group(6) != "+nanz":
                    add("norm_zscore", step, float(m.group(6)[:-1]))
                add("lr", step, float(m.group(7)))
                tail = LLMC_TAIL.search(m.group(8))
                if tail:
                    for tag, text in zip(("time_ms", "mfu", "tok_per_s"), tail.groups(), strict=True):
                        add(tag, step, float(text))
                continue
            m = LLMC_VAL.match(line)
            if m:
                add("val/loss", step, float(m.group(1)))
                continue
            m = LLMC_HELLASWAG.match(line)
            if m:
                add("hellaswag/acc", step, float(m.group(1)))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


LLMC_MAIN = re.compile(r"s:(\d+)((?: \w+:\S+)+)")
LLMC_MAIN_PAIR = re.compile(r"(\w+):(\S+)")
LLMC_MAIN_TAGS = {"trl": "train/loss", "tel": "val/loss", "eval": "hellaswag/acc", "lr": "lr", "norm": "grad_norm"}


def naive_llmc_main(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = LLMC_MAIN.match(line)
            if m:
                pairs = LLMC_MAIN_PAIR.findall(m.group(2))
                step = int(m.group(1)) + (pairs[0][0] == "trl")
                for key, text in pairs:
                    tags.append(LLMC_MAIN_TAGS.get(key, key))
                    steps.append(step)
                    values.append(float(text))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


MODDED_STEP = re.compile(r"step:(\d+)/(\d+) (.*)")
MODDED_FIELD = re.compile(rf"(\w+):({NUMBER})(ms)?")


def naive_modded_nanogpt(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    last_train = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = MODDED_STEP.match(line)
            if not m:
                continue
            step = int(m.group(1))
            validation = "val_loss:" in m.group(3)
            for name, text, ms in MODDED_FIELD.findall(m.group(3)):
                if validation and ms and step == last_train:
                    continue  # the train line of this step gave its timings
                tags.append(name + ("_ms" if ms else ""))
                steps.append(step)
                values.append(float(text))
            if not validation:
                last_train = step
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


BUILD_RECORD = re.compile(r"(\d+) (\w+) (\S+)")
BUILD_TAGS = {"train": "train/loss", "val": "val/loss", "hella": "hellaswag/acc"}


def naive_build_nanogpt(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = BUILD_RECORD.match(line)
            if m:
                tags.append(BUILD_TAGS.get(m.group(2), m.group(2)))
                steps.append(int(m.group(1)))
                values.append(float(m.group(3)))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


BUILD_STEP = re.compile(r"step +(\d+) \| (.*)")
BUILD_FIELD = re.compile(rf"([\w/]+):? ({NUMBER})(ms)?")
BUILD_FIELDS = {"loss": "train/loss", "norm": "grad_norm", "dt": "time_ms", "tok/sec": "tok_per_s"}
BUILD_VAL = re.compile(rf"validation loss: ({NUMBER})")
BUILD_HELLA = re.compile(rf"HellaSwag accuracy: \d+/\d+=({NUMBER})")


def naive_build_nanogpt_console(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    step = -1
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = BUILD_STEP.match(line)
            if m:
                step = int(m.group(1))
                for name, text, _ in BUILD_FIELD.findall(m.group(2)):
                    tags.append(BUILD_FIELDS.get(name, name))
                    steps.append(step)
                    values.append(float(text))
                continue
            m = BUILD_VAL.match(line) or BUILD_HELLA.match(line)
            if m:
                tags.append("val/loss" if line.startswith("validation") else "hellaswag/acc")
                steps.append(step + 1)
                values.append(float(m.group(1)))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


FAIRSEQ_INNER = re.compile(r"(\S+ \S+) \| INFO \| train_inner \| epoch (\d+):\s+(\d+) / (\d+) (.*)")
FAIRSEQ_SUMMARY = re.compile(r"(\S+ \S+) \| INFO \| (train|valid) \| epoch (\d+) \| (.*)")
FAIRSEQ_STAMP = "%Y-%m-%d %H:%M:%S"


def naive_fairseq(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    epochs: list[float] = []

    def add(section: str, pairs: list[tuple[str, str]], wall: float, epoch: float) -> None:
        record = dict(pairs)
        step = int(record.pop("num_updates"))
        for key, text in record.items():
            tags.append(f"{section}/{key}")
            steps.append(step)
            values.append(float(text))
            walls.append(wall)
            epochs.append(epoch)

    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = FAIRSEQ_INNER.match(line)
            if m:
                wall = datetime.strptime(m.group(1), FAIRSEQ_STAMP).replace(tzinfo=UTC).timestamp()
                pairs = [tuple(item.strip().split("=", 1)) for item in m.group(5).split(",")]
                epoch = int(m.group(2)) - 1 + int(m.group(3)) / int(m.group(4))
                add("train_inner", pairs, wall, epoch)  # type: ignore[arg-type]
                continue
            m = FAIRSEQ_SUMMARY.match(line)
            if m:
                wall = datetime.strptime(m.group(1), FAIRSEQ_STAMP).replace(tzinfo=UTC).timestamp()
                segments = [s.strip() for s in m.group(4).split("|")]
                section = "train"
                if segments[0].startswith("valid on"):
                    section, segments = segments[0].split("'")[1], segments[1:]
                add(section, [tuple(s.rsplit(" ", 1)) for s in segments], wall, float(m.group(3)))  # type: ignore[misc]
    frame = _frame(tags, steps, values, walls)
    frame["epoch"] = np.asarray(epochs)
    return len(frame)


FAIRSEQ_JSON = re.compile(r"\[(\S+ \S+)\]\[(\w+)\]\[INFO\] - (\{.*\})$")
FAIRSEQ_JSON_SKIP = frozenset({"epoch", "update", "num_updates"})


def naive_fairseq_json(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    epochs: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = FAIRSEQ_JSON.match(line)
            if not m:
                continue
            try:
                record = json.loads(m.group(3))
            except ValueError:
                continue
            wall = datetime.strptime(m.group(1), STAMP).replace(tzinfo=UTC).timestamp()
            subset = next((key[: -len("_num_updates")] for key in record if key.endswith("_num_updates")), None)
            if subset is not None:  # an epoch summary or a validation: '<subset>_<key>'
                section, step = subset, int(record[f"{subset}_num_updates"])
                pairs = [(key[len(subset) + 1:], text) for key, text in record.items() if key.startswith(subset + "_")]
                epoch = float(record["epoch"])
            else:
                section, step = "train_inner", int(record["num_updates"])
                pairs = list(record.items())
                epoch = float(record["update"])
            for key, text in pairs:
                if key not in FAIRSEQ_JSON_SKIP:
                    tags.append(f"{section}/{key}")
                    steps.append(step)
                    values.append(float(text))
                    walls.append(wall)
                    epochs.append(epoch)
    frame = _frame(tags, steps, values, walls)
    frame["epoch"] = np.asarray(epochs)
    return len(frame)


KERAS_EPOCH = re.compile(r"Epoch (\d+)/(\d+)\s*$")
KERAS_COUNTER = re.compile(r"(\d+)/(\d+) (?=\[[=>.]*\]|━|- )")
KERAS_PAIR = re.compile(rf" - (\w+): ({NUMBER})")
KERAS_STEP_TIME = re.compile(r" (\d+(?:\.\d+)?)ms/step")


def naive_keras_console(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    epoch = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = KERAS_EPOCH.match(line)
            if m:
                epoch = int(m.group(1))
                continue
            counters = list(KERAS_COUNTER.finditer(line))
            # (an earlier update's last digits run into the counter of the last: "0.41231875/1875")
            if epoch is None or not counters or not counters[-1].group(1).endswith(counters[-1].group(2)):
                continue
            segment = line[counters[-1].end():]
            timed = KERAS_STEP_TIME.search(segment)
            pairs = ([("step_time_ms", timed.group(1))] if timed else []) + KERAS_PAIR.findall(segment)
            for name, value in pairs:
                tags.append(name)
                steps.append(epoch - 1)
                values.append(float(value))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


MNIST_TRAIN = re.compile(r"Train Epoch: (\d+) \[(\d+)/(\d+) \(\d+%\)\]\tLoss: (\S+)")
MNIST_TEST = re.compile(r"Test set: Average loss: (\S+), Accuracy: (\d+)/(\d+)")


def naive_torch_examples(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    first = step = None
    end = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = MNIST_TRAIN.match(line)
            if m:
                epoch, seen, size = int(m.group(1)), int(m.group(2)), int(m.group(3))
                first = epoch if first is None else first
                step = (epoch - first) * size + seen
                end = (epoch - first + 1) * size
                tags.append("train/loss")
                steps.append(step)
                values.append(float(m.group(4)))
                continue
            m = MNIST_TEST.match(line)
            if m:
                tags += ["test/loss", "test/accuracy"]
                steps += [end, end]
                values += [float(m.group(1)), int(m.group(2)) / int(m.group(3))]
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


TQDM_BAR = re.compile(r"(?P<desc>[^|]*?):?\s*\d*%?\|[^|]*\|\s*(?P<i>\d+)/(?P<n>\d+)\s*\[[^\]]*?, [^\],]*, (?P<post>[^\]]*)\]")
TQDM_PAIR = re.compile(r"([A-Za-z_][\w./-]*)=([^,\]]+)")
TQDM_EPOCH = re.compile(r"[Ee]poch\s*(\d+)")


def naive_tqdm_console(path: Path) -> int:
    """Each redraw (universal newlines split at ``\\r``): the last one at each step kept, its pairs read; an
    evaluation's value only when it changes."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    pending = None
    shown: dict[str, str] = {}

    def flush(step: int, post: str) -> None:
        for name, text in TQDM_PAIR.findall(post):
            if name == "v_num":
                continue
            if "val" in name:
                if shown.get(name) == text:
                    continue
                shown[name] = text
            tags.append(name)
            steps.append(step)
            values.append(float(text))

    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = TQDM_BAR.match(line)
            if m is None:
                continue
            epoch = TQDM_EPOCH.search(m.group("desc"))
            if epoch is None:
                continue
            step = int(epoch.group(1)) * int(m.group("n")) + max(int(m.group("i")) - 1, 0)
            if pending is not None and pending[0] != step:
                flush(*pending)
            pending = (step, m.group("post"))
    if pending is not None:
        flush(*pending)
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


TIMM_TRAIN = re.compile(r"Train: (\d+) \[\s*(\d+)/(\d+) \(\s*\d+%\)\]  Loss: (\S+) \(\S+\)  Time: \S+s,\s*(\S+)/s .*"
                        r"LR: (\S+)")
TIMM_TEST = re.compile(r"Test: \[\s*(\d+)/(\d+)\]  Time: .*?Loss:\s+\S+ \(\s*(\S+)\)  Acc@1:\s+\S+ \(\s*(\S+)\)  "
                       r"Acc@5:\s+\S+ \(\s*(\S+)\)")


def naive_timm_console(path: Path) -> int:
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    end = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = TIMM_TRAIN.match(line)
            if m:
                epoch, update, updates = int(m.group(1)), int(m.group(2)), int(m.group(3))
                step = epoch * updates + update
                end = (epoch + 1) * updates - 1
                tags += ["train_loss", "samples_per_s", "lr"]
                steps += [step] * 3
                values += [float(m.group(4)), float(m.group(5)), float(m.group(6))]
                continue
            m = TIMM_TEST.match(line)
            if m and m.group(1) == m.group(2):
                tags += ["eval_loss", "eval_top1", "eval_top5"]
                steps += [end] * 3
                values += [float(m.group(3)), float(m.group(4)), float(m.group(5))]
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


NNUNET_LINE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+): (.*?) *$")
NNUNET_EPOCH = re.compile(r"Epoch (\d+)$")
NNUNET_VALUE = re.compile(rf"(train_loss|val_loss|Current learning rate:|Epoch time:|Yayy! New best EMA pseudo Dice:) "
                          rf"({NUMBER})(?: s)?$")
NNUNET_DICE = re.compile(r"Pseudo dice \[(.*)\]$")
NNUNET_TAGS = {"train_loss": "train_loss", "val_loss": "val_loss", "Current learning rate:": "lr",
               "Epoch time:": "epoch_time_s", "Yayy! New best EMA pseudo Dice:": "best_ema_pseudo_dice"}


def naive_nnunet(path: Path) -> int:
    """Each line's time and text; the epoch from its line, each value at it, the pseudo Dice of each class and
    their mean."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    epoch = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = NNUNET_LINE.match(line)
            if m is None:
                continue
            text = m.group(2)
            found = NNUNET_EPOCH.match(text)
            if found:
                epoch = int(found.group(1))
                continue
            if epoch is None:
                continue
            pairs = []
            found = NNUNET_VALUE.match(text)
            if found:
                pairs = [(NNUNET_TAGS[found.group(1)], float(found.group(2)))]
            else:
                found = NNUNET_DICE.match(text)
                if found:
                    dice = [float(x) for x in re.findall(NUMBER, found.group(1).replace("np.float32(", ""))]
                    pairs = [(f"pseudo_dice/{i}", v) for i, v in enumerate(dice, 1)]
                    pairs.append(("pseudo_dice/mean", sum(dice) / len(dice)))
            if pairs:
                wall = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
                for tag, value in pairs:
                    tags.append(tag)
                    steps.append(epoch)
                    values.append(value)
                    walls.append(wall)
    return len(_frame(tags, steps, values, walls))


DARKNET_ITERATION = re.compile(rf"\s*(\d+):\s*({NUMBER}),\s*({NUMBER}) avg(?: loss)?,\s*({NUMBER}) rate,\s*({NUMBER}) "
                               r"seconds")
DARKNET_MAP = re.compile(rf"\s*mean average precision \(mAP@({NUMBER})\) = ({NUMBER})")
DARKNET_AP = re.compile(rf"\s*class_id = \d+, name = ([^,]*), ap = ({NUMBER})%")
DARKNET_PRF = re.compile(rf"\s*for conf_thresh = {NUMBER}, precision = ({NUMBER}), recall = ({NUMBER}), "
                         rf"F1-score = ({NUMBER})")


def naive_darknet(path: Path) -> int:
    """Each iteration line's four numbers at its iteration; an evaluation's mAP, precision, recall, F1 and class AP
    at the iteration before it."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    step = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = DARKNET_ITERATION.match(line)
            if m:
                step = int(m.group(1))
                pairs = [("loss", m.group(2)), ("avg_loss", m.group(3)), ("lr", m.group(4)),
                         ("iteration_time_s", m.group(5))]
            elif m := DARKNET_MAP.match(line):
                pairs = [(f"mAP@{m.group(1)}", m.group(2))]
            elif m := DARKNET_AP.match(line):
                pairs = [(f"ap/{m.group(1).strip()}", str(float(m.group(2)) / 100))]
            elif m := DARKNET_PRF.match(line):
                pairs = [("precision", m.group(1)), ("recall", m.group(2)), ("f1", m.group(3))]
            else:
                continue
            for tag, text in pairs:
                tags.append(tag)
                steps.append(step)
                values.append(float(text))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


TABLE_HEADER = re.compile(r"\s*(epoch(?:\s+[A-Za-z_][\w@./-]*)+)\s*$")
TABLE_ROW = re.compile(r"\s*(\d+(?:\s+\S+)+)\s*$")


def naive_console_table(path: Path) -> int:
    """Each header's names, then each row under it of as many cells: its numbers at its epoch (a clock in
    seconds); lines are split at carriage returns too (the progress bars' redraws)."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    names: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = TABLE_HEADER.match(line)
            if m:
                names = ["epoch_time_s" if n == "time" else n for n in m.group(1).split()[1:]]
                continue
            m = TABLE_ROW.match(line)
            if m and names:
                cells = m.group(1).split()
                if len(cells) != len(names) + 1:
                    continue
                for name, cell in zip(names, cells[1:], strict=True):
                    if ":" in cell:
                        minutes, seconds = cell.split(":")
                        value = int(minutes) * 60 + int(seconds)
                    else:
                        value = float(cell)
                    tags.append(name)
                    steps.append(int(cells[0]))
                    values.append(value)
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


SB3_ROW = re.compile(r"\| ( *)(\S[^|]*?) *\| ([^|]*?) *\|$")
SB3_STEPS = ("total_timesteps",)
SB3_COUNTERS = ("iterations", "n_updates", "time_elapsed", "total_timesteps")


def naive_sb3_console(path: Path) -> int:
    """Each table's numeric rows (a section row's name before its indented keys) at the table's total timesteps,
    the counters left out; a table ends at its closing rule."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    rows: list[tuple[str, float]] = []
    section = ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("-----"):
                step = next((int(v) for k, v in rows if k.rsplit("/", 1)[-1] in SB3_STEPS), None)
                for key, value in rows:
                    if step is not None and key.rsplit("/", 1)[-1] not in SB3_COUNTERS:
                        tags.append(key)
                        steps.append(step)
                        values.append(value)
                rows, section = [], ""
                continue
            m = SB3_ROW.match(line)
            if m is None:
                continue
            indent, key, value = m.groups()
            if not value and not indent and key.endswith("/"):
                section = key
                continue
            try:
                rows.append((section + key if indent else key, float(value)))
            except ValueError:
                pass
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


PADDLE_TRAIN = re.compile(r"\[[^\]]*\] \S+ INFO: epoch: \[(\d+)/\d+\], global_step: (\d+), (.*)")
PADDLE_EVAL = re.compile(r"\[[^\]]*\] \S+ INFO: cur metric, (.*)")
PADDLE_PAIR = re.compile(rf"([A-Za-z_][\w.@/-]*)(?:\([^()]*\))?: +({NUMBER})")
PADDLE_SKIPPED = {"epoch", "global_step", "eta", "avg_samples"}


def naive_paddle(path: Path) -> int:
    """Each training line's pairs at its global step (but its epoch, step, time left and batch size), each
    evaluation's as eval/<name> at the last step; the line's time."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    step = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = PADDLE_TRAIN.match(line)
            prefix = ""
            if m:
                step = int(m.group(2))
                rest = m.group(3)
            else:
                m = PADDLE_EVAL.match(line)
                if not m:
                    continue
                rest, prefix = m.group(1), "eval/"
            wall = datetime.strptime(line[1:20], "%Y/%m/%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
            for name, value in PADDLE_PAIR.findall(rest):
                if name not in PADDLE_SKIPPED:
                    tags.append(prefix + name)
                    steps.append(step)
                    values.append(float(value))
                    walls.append(wall)
    return len(_frame(tags, steps, values, walls))


ONMT_STEP = re.compile(r"\[([^\]]*) INFO\] Step +(\d+)(?:/ *\d+)?; (.*?)(?:(\d+)/(\d+) tok/s; +\d+ sec;?)?$")
ONMT_VALID = re.compile(rf"\[([^\]]*) INFO\] Validation (perplexity|accuracy): ({NUMBER})")
ONMT_NAMES = {"perplexity": "valid/ppl", "accuracy": "valid/acc"}


def naive_opennmt(path: Path) -> int:
    """Each step line's pairs (but bsz) and its tokens per second at its step, each validation's number at the
    step before; the line's time."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    step = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.rstrip("\n")
            m = ONMT_STEP.match(line)
            if m:
                step = int(m.group(2))
                pairs = [(name, value) for name, value in PADDLE_PAIR.findall(m.group(3)) if name != "bsz"]
                if m.group(4):
                    pairs += [("src_tok/s", m.group(4)), ("tgt_tok/s", m.group(5))]
            else:
                m = ONMT_VALID.match(line)
                if not m:
                    continue
                pairs = [(ONMT_NAMES[m.group(2)], m.group(3))]
            wall = datetime.strptime(m.group(1), STAMP).replace(tzinfo=UTC).timestamp()
            for name, value in pairs:
                tags.append(name)
                steps.append(step)
                values.append(float(value))
                walls.append(wall)
    return len(_frame(tags, steps, values, walls))


ESPNET_BATCH = re.compile(r"\[[^\]]*\] (\S+ \S+) \([^)]*\) INFO: (\d+)epoch:train:\d+-(\d+)batch: (.*)")
ESPNET_RESULTS = re.compile(r"\[[^\]]*\] (\S+ \S+) \([^)]*\) INFO: \d+epoch results: (.*)")
ESPNET_PAIR = re.compile(rf"([A-Za-z_][\w.@/-]*)=({NUMBER})")


def naive_espnet(path: Path) -> int:
    """Each batch line's pairs at the iterations so far (the last results' train total_count plus its last batch),
    each epoch's [valid] pairs (but its time and count) at that count; the line's time."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    base = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = ESPNET_BATCH.match(line)
            if m:
                step, pairs, prefix = base + int(m.group(3)), ESPNET_PAIR.findall(m.group(4)), ""
            else:
                m = ESPNET_RESULTS.match(line)
                if not m:
                    continue
                sections = dict(zip(*[iter(re.split(r"\[(\w+)\] ", m.group(2))[1:])] * 2, strict=True))
                base = step = int(re.search(r"total_count=(\d+)", sections["train"]).group(1))
                pairs = [p for p in ESPNET_PAIR.findall(sections["valid"]) if p[0] not in ("time", "total_count")]
                prefix = "valid/"
            wall = datetime.strptime(m.group(1), STAMP).replace(tzinfo=UTC).timestamp()
            for name, value in pairs:
                tags.append(prefix + name)
                steps.append(step)
                values.append(float(value))
                walls.append(wall)
    return len(_frame(tags, steps, values, walls))


LM_TRAIN = re.compile(r"\| epoch +(\d+) \| +(\d+)/ *(\d+) batches \| lr ([^ |]+) \| ms/batch +([^ |]+) \| "
                      r"loss +([^ |]+) \| ppl +([^ |\n]+)")
LM_EPOCH = re.compile(r"\| end of epoch +(\d+) \| time: +[^ |]+s \| valid loss +([^ |]+) \| valid ppl +([^ |\n]+)")


def naive_pytorch_lm(path: Path) -> int:
    """Each training line's four numbers at (epoch − 1) × batches + batch, each epoch summary's two at the epoch's
    end."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    batches = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = LM_TRAIN.match(line)
            if m:
                batches = int(m.group(3))
                tags += ["lr", "ms/batch", "loss", "ppl"]
                steps += [(int(m.group(1)) - 1) * batches + int(m.group(2))] * 4
                values += [float(m.group(k)) for k in range(4, 8)]
                continue
            m = LM_EPOCH.match(line)
            if m:
                tags += ["valid loss", "valid ppl"]
                steps += [int(m.group(1)) * batches] * 2
                values += [float(m.group(2)), float(m.group(3))]
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


_TITAN_COLOUR = r"(?:\x1b\[[\d;]*m)?"
_TITAN_NUMBER = r"([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
TITAN_LINE = re.compile(
    rf"(?:\[rank\d+\]:)?(?:\[titan\] )?(\S+ \S+) - \S+ - INFO - {_TITAN_COLOUR}(validate )?step: +(\d+)  "
    rf"{_TITAN_COLOUR}loss: +{_TITAN_NUMBER}(?:  {_TITAN_COLOUR}grad_norm: +{_TITAN_NUMBER})?  {_TITAN_COLOUR}memory: +"
    rf"{_TITAN_NUMBER}GiB(?:\({_TITAN_NUMBER}%\))?  {_TITAN_COLOUR}[tw]ps: +{_TITAN_NUMBER}(?:  {_TITAN_COLOUR}tflops: +"
    rf"{_TITAN_NUMBER})?(?:  {_TITAN_COLOUR}mfu: +(?:{_TITAN_NUMBER}%|N/A))?{_TITAN_COLOUR}\s*$")
TITAN_NAMES = ("loss", "grad_norm", "memory_gib", "memory_pct", "tps", "tflops", "mfu")


def naive_torchtitan(path: Path) -> int:
    """Each metrics line's fields (a validation's as validation/…) at its step, the thousands separators taken out;
    the line's time."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = TITAN_LINE.match(line)
            if not m:
                continue
            prefix = "validation/" if m.group(2) else ""
            step = int(m.group(3))
            wall = datetime.strptime(m.group(1), STAMP).replace(tzinfo=UTC).timestamp()
            for name, value in zip(TITAN_NAMES, m.groups()[3:], strict=True):
                if value:
                    tags.append(prefix + name)
                    steps.append(step)
                    values.append(float(value.replace(",", "")))
                    walls.append(wall)
    return len(_frame(tags, steps, values, walls))


_MAXTEXT_ABSL = r"(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]*\] )?"
MAXTEXT_TRAIN = re.compile(rf"{_MAXTEXT_ABSL}completed step: (\d+), (.*)")
MAXTEXT_EVAL = re.compile(rf"{_MAXTEXT_ABSL}(?:eval metrics after step: |Completed eval after train step )(\d+), (.*)")
MAXTEXT_EQUALS = re.compile(rf"([A-Za-z_][\w.@/-]*)=({NUMBER})")


def naive_maxtext(path: Path) -> int:
    """Each training line's pairs at its step, each evaluation's pairs as eval/<name> at its step; no wall time."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = MAXTEXT_TRAIN.match(line)
            if m:
                step, pairs, prefix = int(m.group(1)), PADDLE_PAIR.findall(m.group(2)), ""
            else:
                m = MAXTEXT_EVAL.match(line)
                if not m:
                    continue
                step, pairs, prefix = int(m.group(1)), MAXTEXT_EQUALS.findall(m.group(2)), "eval/"
            for name, value in pairs:
                tags.append(prefix + name)
                steps.append(step)
                values.append(float(value))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


OLMO_HEADER = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\t[^\t]*\t[^\t]*\tINFO\t(.*)")
OLMO_STEP = re.compile(r"\[step=(\d+)/-?\d+(?:,epoch=(\d+))?\]$")
OLMO_METRIC = re.compile(r"    ([^=]+)=(.*)")
OLMO_STAMP = "%Y-%m-%d %H:%M:%S.%f"


def naive_olmo(path: Path) -> int:
    """Each block's ``name=value`` lines at its step (an evaluation's and the pre-train metrics' at the step
    before), the header's time, the epoch of the last training header."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    epochs: list[float] = []
    step, epoch, wall, reading, label = 0, math.nan, math.nan, False, False
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = OLMO_METRIC.match(line)
            if m:
                if label:  # (a label's block: an evaluation when its lines are eval/ metrics)
                    reading, label = m.group(1).startswith("eval/"), False
                if reading:
                    tags.append(m.group(1))
                    steps.append(step)
                    values.append(float(m.group(2).rstrip().replace(",", "")))
                    walls.append(wall)
                    epochs.append(epoch)
                continue
            reading = label = False
            m = OLMO_HEADER.match(line)
            if not m:
                continue
            wall = datetime.strptime(m.group(1), OLMO_STAMP).replace(tzinfo=UTC).timestamp()
            message = m.group(2).rstrip()
            s = OLMO_STEP.match(message)
            if s:
                step, reading = int(s.group(1)), True
                epoch = float(s.group(2)) if s.group(2) else math.nan
            elif message == "Pre-train system metrics":
                reading = True
            else:
                label = True
    frame = _frame(tags, steps, values, walls)
    frame["epoch"] = np.asarray(epochs, dtype=np.float64)
    return len(frame)


COMPOSER_HEADER = re.compile(r"\[batch=(\d+)/\d+\]:")
COMPOSER_EVAL = re.compile(r"\[Eval batch=\d+/\d+\] Eval on .* data:")
COMPOSER_METRIC = re.compile(rf"[ \t]+(Train|Eval) ([^\n:]+): ({NUMBER})[ \t]*$")
COMPOSER_COUNTER = re.compile(r"time/(?:epoch|iteration|batch|sample|token)(?:_in_(?:epoch|iteration))?")
COMPOSER_DURING = ("loss/", "metrics/train/", "trainer/", "memory/")


def naive_composer(path: Path) -> int:
    """Each metric line at its block's batch count (less one for what the trainer logs during the batch), the
    counters left out; evaluations at the last training block's count; no wall time."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    step, train = 0, False
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = COMPOSER_METRIC.match(line)
            if m:
                name = m.group(2)
                if COMPOSER_COUNTER.fullmatch(name):
                    continue
                tags.append(name)
                steps.append(step - 1 if train and name.startswith(COMPOSER_DURING) else step)
                values.append(float(m.group(3)))
                walls.append(math.nan)
                continue
            m = COMPOSER_HEADER.match(line)
            if m:
                step, train = int(m.group(1)), True
            elif COMPOSER_EVAL.match(line):
                train = False
    return len(_frame(tags, steps, values, walls))


LITGPT_TRAIN = re.compile(rf"Epoch (\d+) \| iter (\d+) step (\d+) \| loss train: ({NUMBER}), val: (n/a|{NUMBER}) \| "
                   rf"iter time: ({NUMBER}) ms( \(step\))?(?: remaining time: .*)?$")
LITGPT_LEGACY = re.compile(rf"iter (\d+) (?:\| )?step (\d+): loss ({NUMBER}), iter time: ({NUMBER}) ?ms( \(optimizer\.step\))?")
LITGPT_VALID = re.compile(rf"(?:iter|step) (\d+): val loss ({NUMBER}), val time: ({NUMBER}) ?ms$")


def naive_litgpt(path: Path) -> int:
    """Each training line that ends an optimizer step: loss and time at its step; a 'val:' that changed with no
    validation line since the line before: at the step before; each validation: at the step of its iter."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    epochs: list[float] = []
    last_iter, last_step, per_step, epoch = None, 0, None, math.nan
    last_val, validated = None, False
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = LITGPT_TRAIN.match(line)
            if m:
                epoch, it, step, mark = float(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(7)
                val = m.group(5)
                if val != last_val and val != "n/a" and not validated:
                    tags.append("val_loss")
                    steps.append(step - 1 if mark else step)
                    values.append(float(val))
                    epochs.append(epoch)
                last_val, validated = val, False
                if mark:
                    if last_iter is not None and step > last_step:
                        per_step = (it - last_iter) // (step - last_step)
                    last_iter, last_step = it, step
                    tags += ("train_loss", "iter_time_ms")
                    steps += (step, step)
                    values += (float(m.group(4)), float(m.group(6)))
                    epochs += (epoch, epoch)
                continue
            m = LITGPT_LEGACY.match(line)
            if m:
                it, step, epoch = int(m.group(1)), int(m.group(2)), math.nan
                validated = False
                if m.group(5):
                    if last_iter is not None and step > last_step:
                        per_step = (it - last_iter) // (step - last_step)
                    last_iter, last_step = it, step
                    tags += ("train_loss", "iter_time_ms")
                    steps += (step, step)
                    values += (float(m.group(3)), float(m.group(4)))
                    epochs += (epoch, epoch)
                continue
            m = LITGPT_VALID.match(line)
            if m:
                it = int(m.group(1))
                at = last_step if it == last_iter else last_step + (it - last_iter) // per_step
                tags += ("val_loss", "val_time_ms")
                steps += (at, at)
                values += (float(m.group(2)), float(m.group(3)))
                epochs += (epoch, epoch)
                validated = True
    frame = _frame(tags, steps, values, [math.nan] * len(values))
    frame["epoch"] = np.asarray(epochs, dtype=np.float64)
    return len(frame)


CLU_LINE = re.compile(r"(?:[IWEF]\d{4} [\d:.]+ +\d+ [^\]]*\] |INFO:absl:)?\[(\d+)\](?: collection=(\S+))? (.*)")
CLU_PAIR = re.compile(rf"([^=,\s][^=,]*?) ?= ?({NUMBER})(?:, |$)")
CLU_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def naive_clu(path: Path) -> int:
    """Each CLU line's pairs (big_vision's 'name = value' too) at its step, a collection as a tag prefix; no wall
    time."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if "\x1b" in line:  # (big_vision's colour codes)
                line = CLU_ESCAPE.sub("", line)
            m = CLU_LINE.match(line)
            if not m:
                continue
            step, prefix = int(m.group(1)), f"{m.group(2)}/" if m.group(2) else ""
            for name, value in CLU_PAIR.findall(m.group(3).rstrip()):
                tags.append(prefix + name)
                steps.append(step)
                values.append(float(value))
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


ULTRA_BAR = re.compile(r"(?:\x1b\[K)?\s*(\d+)/\d+\s+(\S+)G\s+(.*?)\s*:\s+\d+%.*?(\d+)/(\d+)")
ULTRA_HEADER = re.compile(r"\s*Epoch\s+GPU_mem\s+(.*?)\s+Instances\s+Size\s*$")
ULTRA_VAL = re.compile(r"(?:\x1b\[K)?\s*(?:Class|classes)\s+(.*?)(?::\s+\d+%|\s*$)")
ULTRA_ALL = re.compile(r"\s*all\s+(.*?)\s*$")
ULTRA_VALIDATING = re.compile(r"Validating .*\.\.\.")


def naive_ultralytics_console(path: Path) -> int:
    """Each epoch's last bar redraw (its losses and GPU memory) when its validation begins, the ``all`` row's
    numbers at its epoch, ``final/`` after "Validating"."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    losses: list[str] = []
    metrics: list[str] = []
    pending = None
    epoch = 0
    final = False

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            step, memory, numbers = pending
            names = ["gpu_mem_gb", *("train/" + name for name in losses)]
            for name, value in zip(names, [memory, *numbers[:-2]], strict=True):
                tags.append(name)
                steps.append(step)
                values.append(float(value))
            pending = None

    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = ULTRA_BAR.match(line)
            if m:
                epoch = int(m.group(1))
                pending = (epoch, m.group(2), m.group(3).split())
                final = False
                continue
            m = ULTRA_HEADER.match(line)
            if m:
                losses = m.group(1).split()
                continue
            m = ULTRA_VAL.match(line)
            if m:
                flush()
                tokens = m.group(1).split()
                metrics = ["metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)"][
                    : len(tokens) - 2]
                continue
            m = ULTRA_ALL.match(line)
            if m:
                flush()
                numbers = m.group(1).split()[2:]
                for name, value in zip(metrics, numbers, strict=True):
                    tags.append(("final/" if final else "") + name)
                    steps.append(epoch)
                    values.append(float(value))
                continue
            if ULTRA_VALIDATING.match(line):
                flush()
                final = True
    flush()
    return len(_frame(tags, steps, values, [math.nan] * len(values)))


GAN_LOSS = re.compile(rf"\(epoch: (\d+), iters: (\d+)(?:/\d+)?(?:, time: ({NUMBER})(?:, data: ({NUMBER}))?)?\) ?(.*)")
GAN_PAIR = re.compile(rf"([A-Za-z_][\w.@/-]*)(?:\([^()]*\))?: +({NUMBER})")


def naive_gan_loss_log(path: Path) -> int:
    """Each loss line's time, data time and pairs (as loss/<name>) at the samples so far: each epoch's start from the
    printing interval (the lines come every interval samples of the training's count)."""
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    epochs: list[float] = []
    current = None
    base = last = gap = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = GAN_LOSS.match(line)
            if not m:
                continue
            epoch, iters = int(m.group(1)), int(m.group(2))
            if current is None:
                base = 0
            elif epoch == current and iters > last:
                gap = iters - last if not gap or iters - last < gap else gap
            elif epoch > current:
                low = base + last
                base = low + (-iters - low) % gap if gap else low
            current, last = epoch, iters
            pairs = [("sample_time_s", m.group(3)), ("data_time_s", m.group(4))]
            pairs += [(f"loss/{name}", value) for name, value in GAN_PAIR.findall(m.group(5))]
            for name, value in pairs:
                tags.append(name)
                steps.append(base + iters)
                values.append(float(value))
                epochs.append(float(epoch))
    frame = _frame(tags, steps, values, [math.nan] * len(values))
    frame["epoch"] = np.asarray(epochs, dtype=np.float64)
    return len(frame)


MINIMIND_LINE = re.compile(r"Epoch:\[(\d+)/\d+\]\((\d+)/(\d+)\),? *(.*)")
MINIMIND_PAIR = re.compile(rf"([A-Za-z_][\w.@/-]*(?: [A-Za-z_][\w.@/-]*)*): *({NUMBER})")
MINIMIND_NOT_TAGS = {"epoch_time", "epoch_Time", "eta"}


def naive_minimind(path: Path) -> int:
    tags, steps, values, walls, epochs = [], [], [], [], []
    first = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            m = MINIMIND_LINE.match(line.rstrip("\n"))
            if not m:
                continue
            epoch = int(m.group(1))
            first = min(epoch, 1) if first is None else first
            step = (epoch - first) * int(m.group(3)) + int(m.group(2))
            for name, value in MINIMIND_PAIR.findall(m.group(4)):
                if name in MINIMIND_NOT_TAGS:
                    continue
                tags.append(name)
                steps.append(step)
                values.append(float(value))
                walls.append(math.nan)
                epochs.append(float(epoch))
    frame = pd.DataFrame({"tag": pd.Categorical(tags), "step": np.asarray(steps, dtype=np.int64),
                          "value": np.asarray(values, dtype=np.float64), "wall_time": np.asarray(walls),
                          "epoch": np.asarray(epochs)})
    return len(frame)


NAIVE = {"megatron": naive_megatron, "hf_console": naive_hf, "nanogpt": naive_nanogpt, "deepspeed": naive_deepspeed,
         "text": naive_text, "text_kv": naive_text_kv, "text_epochs": naive_text_epochs,
         "text_imagenet": naive_text_imagenet, "llmc": naive_llmc,
         "llmc_main": naive_llmc_main, "modded_nanogpt": naive_modded_nanogpt, "build_nanogpt": naive_build_nanogpt,
         "build_nanogpt_console": naive_build_nanogpt_console, "fairseq": naive_fairseq,
         "fairseq_json": naive_fairseq_json, "keras_console": naive_keras_console,
         "torch_examples": naive_torch_examples, "tqdm_console": naive_tqdm_console,
         "timm_console": naive_timm_console, "nnunet": naive_nnunet,
         "darknet": naive_darknet, "console_table": naive_console_table, "sb3_console": naive_sb3_console,
         "paddle": naive_paddle, "opennmt": naive_opennmt, "espnet": naive_espnet,
         "pytorch_lm": naive_pytorch_lm, "torchtitan": naive_torchtitan,
         "maxtext": naive_maxtext, "olmo": naive_olmo,
         "composer": naive_composer, "litgpt": naive_litgpt, "gan_loss_log": naive_gan_loss_log, "minimind": naive_minimind, "clu": naive_clu,
         "clu_big_vision": naive_clu,
         "ultralytics_console": naive_ultralytics_console, "ultralytics_console_tqdm": naive_ultralytics_console}
TUNED = {"megatron": tuned_megatron, "hf_console": tuned_hf}


# -- measuring -----------------------------------------------------------------------------------
def _time(fn, path: Path, repeat: int) -> tuple[float, int]:
    """Best CPU seconds of ``repeat`` runs (on a shared machine, wall-clock time counts the other jobs too)."""
    best, result = float("inf"), 0
    for _ in range(repeat):
        start = time.process_time()
        result = fn(path)
        best = min(best, time.process_time() - start)
    return best, result


#: formats read by a reader of another name (llm.c's main.log and console are both the llmc reader's, fairseq's
#: simple and JSON formats the fairseq reader's, the generic shapes the text reader's)
READER = {"llmc_main": "llmc", "fairseq_json": "fairseq", "text_kv": "text", "text_epochs": "text",
          "text_imagenet": "text", "build_nanogpt_console": "build_nanogpt", "clu_big_vision": "clu",
          "ultralytics_console_tqdm": "ultralytics_console"}


def _ours(name: str):
    def run(path: Path) -> int:
        (data,) = get_reader(READER.get(name, name)).read([path])
        return len(data.scalars)

    return run


def _warm_up(name: str, path: Path) -> None:
    """Read the head of the log once, untimed: the modules a read imports on first use (compiled from source
    where no bytecode is cached) are not charged to the first timed run."""
    head = DATA / f"{name}_warm_up.log"
    with open(path, "rb") as source:
        data = source.read(1 << 18)
    head.write_bytes(data[: data.rfind(b"\n") + 1])
    _ours(name)(head)
    head.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="size of each synthetic log (default 100)")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs (default 1)")
    parser.add_argument("--only", action="append", choices=list(MAKERS), help="just this format (repeatable)")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    print(f"{'reader':<15}{'MB':>6} {'ours s':>7} {'naive s':>8} {'ours MB/s':>10} {'naive MB/s':>11} {'ratio':>7} "
          f"{'tuned MB/s':>11}  points ours / naive")
    worst = math.inf
    for name, make in MAKERS.items():
        if args.only and name not in args.only:
            continue
        path = DATA / f"{name}_{args.mb}mb.log"
        if not path.exists():
            make(path, args.mb)
        size = path.stat().st_size / (1 << 20)
        _warm_up(name, path)
        ours_s = naive_s = float("inf")
        for _ in range(args.repeat):  # alternately, so that a change of load weighs on both
            took, ours_n = _time(_ours(name), path, 1)
            ours_s = min(ours_s, took)
            took, naive_n = _time(NAIVE[name], path, 1)
            naive_s = min(naive_s, took)
        tuned = f"{size / _time(TUNED[name], path, args.repeat)[0]:>11.1f}" if name in TUNED else f"{'-':>11}"
        ratio = naive_s / ours_s
        worst = min(worst, ratio)
        print(f"{name:<15}{size:>6.1f} {ours_s:>7.2f} {naive_s:>8.2f} {size / ours_s:>10.1f} {size / naive_s:>11.1f} "
              f"{ratio:>6.2f}x {tuned}  {ours_n:,} / {naive_n:,}")
    print(f"slowest reader: {worst:.2f}x the naive loop (goal: at least 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
