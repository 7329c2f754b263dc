"""Throughput of the console-log readers against a naive per-line loop (run on demand).

    python bench/bench_text.py            # 100 MB per format, files kept in bench/_data/
    python bench/bench_text.py --mb 20    # smaller, quicker

Two synthetic logs are written once: a Megatron-DeepSpeed log (argument dump,
NCCL chatter, DeepSpeed step/timer lines, iteration, timer and validation
lines) and a Hugging Face Trainer console capture (tqdm bars redrawn with
``\\r``, INFO lines, training and evaluation dicts).

Each is read three ways, in the same run, and all three build the same
tidy table (tag, step, value, wall time; points counted and printed):

- ours: the registered reader (``Reader.read``), notes and checks included;
- naive: ``for line in f: pattern.search(line)`` per line kind, the fields of a
  matching line taken with ``re.findall``, DeepSpeed time stamps with
  ``datetime.strptime``, HF dicts with ``ast.literal_eval`` (nan/inf replaced);
- tuned: the same per-line loop hand-tuned (``str.split``/``partition`` instead
  of regexes per field, one precompiled day cache for time stamps): a harder
  reference than the naive loop, printed for honesty.
"""

from __future__ import annotations

import argparse
import ast
import math
import random
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tanalyze.readers.hf_console import HFConsoleReader, parse_dict_literal  # noqa: E402
from tanalyze.readers.megatron import MegatronReader  # noqa: E402

DATA = ROOT / "bench" / "_data"
NUMBER = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[nN]a[nN]|[iI]nf(?:inity)?)"


# -- synthetic logs --------------------------------------------------------------------------------
def make_megatron(path: Path, megabytes: int) -> None:
    rng = random.Random(0)
    target = megabytes << 20
    with open(path, "w", encoding="utf-8") as out:
        out.write("------------------------ arguments ------------------------\n")
        for i in range(2700):
            out.write(f"  argument_{i} {'.' * (40 - len(str(i)))} {rng.choice(['None', 'True', '0.1', '1024'])}\n")
        out.write("-------------------- end of arguments ---------------------\n")
        iteration, written = 0, 0
        while written < target:
            iteration += 10
            lr = 3e-4 * min(1.0, iteration / 2000)
            loss = 11.0 * (iteration + 100) ** -0.15 + rng.random() * 0.05
            block = (
                f"[2022-10-31 10:59:51,434] [INFO] [logging.py:68:log_dist] [Rank 0] step={iteration}, skipped=0, "
                f"lr=[{lr}, {lr}], mom=[(0.9, 0.95), (0.9, 0.95)]\n"
                f"[2022-10-31 10:59:51,436] [INFO] [timer.py:198:stop] 0/{iteration}, RunningAvgSamplesPerSec="
                f"{428 + rng.random()}, CurrSamplesPerSec={431 + rng.random()}, MemAllocated=1.64GB, MaxMemAllocated=7.01GB\n"
                f" iteration {iteration:>8}/  171661 | consumed samples: {iteration * 256:>12} | consumed tokens: "
                f"{iteration * 524288:>12} | elapsed time per iteration (ms): {480 + rng.random() * 20:.1f} | "
                f"learning rate: {lr:.3E} | global batch size:   256 | lm loss: {loss:.6E} | loss scale: 2048.0 | "
                f"grad norm: {1 + rng.random():.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
                f"time (ms) | forward-compute: {260 + rng.random():.2f} | backward-compute: {191 + rng.random():.2f} | "
                f"backward-embedding-all-reduce: 0.01 | optimizer: {14 + rng.random():.2f} | batch-generator: 9.85\n"
            )
            if iteration % 100 == 0:
                block += (
                    "-" * 95 + "\n"
                    f" validation loss at iteration {iteration} | lm loss value: {loss + 0.1:.6E} | "
                    f"lm loss PPL: {2.718 ** (loss + 0.1):.6E} | \n" + "-" * 95 + "\n"
                )
            if rng.random() < 0.5:
                block += f"azwus2f200000DQ:22480:24741 [4] NCCL INFO Channel {rng.randrange(32)}/32 :    0\n"
            if iteration % 1000 == 0:
                block += f"saving checkpoint at iteration {iteration:>7} to /checkpoints\n"
            out.write(block)
            written += len(block)


def make_hf(path: Path, megabytes: int) -> None:
    rng = random.Random(1)
    target = megabytes << 20
    total = 1_000_000
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("***** Running training *****\n  Num examples = 1,000,000\n  Num Epochs = 100\n")
        out.write(f"  Total optimization steps = {total:,}\n  Number of trainable parameters = 124,439,808\n")
        step, written = 0, 0
        while written < target:
            parts = []
            for _ in range(10):
                step += 1
                pct = step * 100 // total
                parts.append(
                    f"\r{pct:3d}%|{'█' * (pct // 10):<10}| {step}/{total} [1:02:03<10:11:12,  {20 + rng.random():.2f}it/s]"
                )
            epoch = step / (total / 100)
            parts.append(
                f"\n{{'loss': {2 * rng.random():.4f}, 'grad_norm': {rng.random() * 3}, "
                f"'learning_rate': {5e-5 * (1 - step / total)}, 'epoch': {epoch:.2f}}}\n"
            )
            if step % 1000 == 0:
                parts.append("[INFO|trainer.py:3984] 2025-04-13 01:53:07,703 >> Saving model checkpoint to out/ckpt\n")
                parts.append("".join(f"\r{i * 10:3d}%|#####     | {i}/10 [00:00<00:00]\x1b[A" for i in range(11)))
                parts.append(
                    f"\n{{'eval_loss': {rng.random()}, 'eval_accuracy': {rng.random()}, 'eval_runtime': 3.2, "
                    f"'eval_samples_per_second': 900.1, 'epoch': {epoch:.2f}}}\n"
                )
            block = "".join(parts)
            out.write(block)
            written += len(block.encode())


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
            m = MEG_VALID.search(line)
            if m:
                for name, value in FIELD.findall(m.group(2)):
                    add(name, int(m.group(1)), float(value))
            m = MEG_TIMERS.search(line)
            if m:
                for name, value in FIELD.findall(m.group(1) + "|"):
                    add("time (ms)/" + name, step, float(value))
            m = DS_STEP.search(line)
            if m:
                wall = _stamp(line)
                add("skipped", int(m.group(2)), float(m.group(3)), wall)
                add("lr", int(m.group(2)), float(m.group(4)), wall)
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


# -- measuring -----------------------------------------------------------------------------------
def _time(fn, path: Path, repeat: int) -> tuple[float, int]:
    best, result = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(path)
        best = min(best, time.perf_counter() - start)
    return best, result


def _ours(reader_class):
    def run(path: Path) -> int:
        (data,) = reader_class().read([path])
        return len(data.scalars)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="size of each synthetic log (default 100)")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs (default 1)")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    cases = [
        ("megatron", make_megatron, MegatronReader, naive_megatron, tuned_megatron),
        ("hf_console", make_hf, HFConsoleReader, naive_hf, tuned_hf),
    ]
    print(f"{'log':<11}{'MB':>6} {'ours MB/s':>10} {'naive MB/s':>11} {'tuned MB/s':>11} {'vs naive':>9} {'vs tuned':>9}  points ours / naive / tuned")
    for name, make, reader_class, naive, tuned in cases:
        path = DATA / f"{name}_{args.mb}mb.log"
        if not path.exists():
            make(path, args.mb)
        size = path.stat().st_size / (1 << 20)
        ours_s, ours_n = _time(_ours(reader_class), path, args.repeat)
        naive_s, naive_n = _time(naive, path, args.repeat)
        tuned_s, tuned_n = _time(tuned, path, args.repeat)
        print(
            f"{name:<11}{size:>6.1f} {size / ours_s:>10.1f} {size / naive_s:>11.1f} {size / tuned_s:>11.1f} "
            f"{naive_s / ours_s:>8.2f}x {tuned_s / ours_s:>8.2f}x  {ours_n:,} / {naive_n:,} / {tuned_n:,}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
