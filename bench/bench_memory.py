"""Peak memory of reading very large logs: it must follow the data kept, not the file size.

    python bench/bench_memory.py                 # 2 GB files (generated once under bench/_data/)
    python bench/bench_memory.py --gb 0.5        # smaller, quicker
    python bench/bench_memory.py --only tensorboard

Two files are generated: an event file that is mostly image summaries (skipped
by the reader) with a few thousand scalars, and a console log that is mostly
noise lines with a few thousand nanoGPT metric lines. Each reader runs in a
fresh subprocess; its peak resident set (VmHWM: anonymous and file-backed pages
together, what the kernel would have to find) is printed next to the anchor,
the peak of a subprocess that imports the same modules and reads a tiny file.
"anon" is the peak of anonymous memory alone (sampled every 10 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "_data"
IMAGE_BYTES = 1 << 20  # one image summary
SCALARS_PER_IMAGE = 4
NOISE_LINE = "INFO 2024-05-01 12:00:00,000 dataloader.py:123] worker 3 prefetched batch; queue depth 17 ok\n"


def _facts(path: Path) -> Path:
    """Where what a generated file holds is noted: beside its folder, so that load(folder) sees only the log."""
    return path.parent.parent / f"{path.parent.name}.facts.json"


def _frame(data: bytes) -> bytes:
    import crc32c

    def masked(b: bytes) -> int:
        crc = crc32c.crc32c(b)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked(header)) + data + struct.pack("<I", masked(data))


def make_event_file(path: Path, size: int) -> dict:
    """Image summaries of 1 MB each, with a few scalars after every image; ``size`` bytes in all."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    if path.exists() and path.stat().st_size >= size:
        return json.loads(_facts(path).read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = os.urandom(IMAGE_BYTES)
    scalars = images = 0
    with open(path, "wb") as out:
        out.write(_frame(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()))
        step = 0
        while out.tell() < size:
            image = summary_pb2.Summary.Image(height=512, width=512, colorspace=3, encoded_image_string=pixels)
            event = event_pb2.Event(wall_time=1.7e9 + step, step=step,
                                    summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="samples",
                                                                                                  image=image)]))
            out.write(_frame(event.SerializeToString()))
            images += 1
            for k in range(SCALARS_PER_IMAGE):
                value = summary_pb2.Summary.Value(tag=f"metric_{k}", simple_value=1.0 / (step + 1))
                scalar = event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(value=[value]))
                out.write(_frame(scalar.SerializeToString()))
                scalars += 1
            step += 1
    facts = {"scalars": scalars, "images": images, "bytes": path.stat().st_size}
    _facts(path).write_text(json.dumps(facts))
    return facts


def make_text_log(path: Path, size: int) -> dict:
    """Noise lines with one nanoGPT metric line per ~10,000 of them."""
    if path.exists() and path.stat().st_size >= size:
        return json.loads(_facts(path).read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    block = NOISE_LINE * 10_000
    metrics = 0
    with open(path, "w") as out:
        out.write("tokens per iteration will be: 512\n")
        while out.tell() < size:
            out.write(block)
            out.write(f"iter {metrics}: loss {2.0 / (metrics + 1):.4f}, time 10.00ms, mfu 30.00%\n")
            metrics += 1
    facts = {"metric_lines": metrics, "bytes": path.stat().st_size}
    _facts(path).write_text(json.dumps(facts))
    return facts


_CHILD = r"""
import json, sys, threading, time
sys.path.insert(0, {repo!r})
peak_anon = [0]
def sample():
    while True:
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                peak_anon[0] = max(peak_anon[0], int(line.split()[1]))
        time.sleep(0.01)
threading.Thread(target=sample, daemon=True).start()
from pathlib import Path
import tanalyze
from tanalyze.readers import get_reader
mode, target = sys.argv[1], Path(sys.argv[2])
start = time.perf_counter()
if mode == "load":
    logs = tanalyze.load(target, cache=False, jobs=1)  # a cold read in this process
    points = len(logs.scalars)
    warnings = sum(len(i.warnings) for i in logs.runs.values())
else:
    runs = get_reader(mode).read([target])
    points = sum(len(r.scalars) for r in runs)
    warnings = sum(len(r.warnings) for r in runs)
seconds = time.perf_counter() - start
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
print(json.dumps({{"hwm_kb": int(status["VmHWM"].split()[0]), "anon_kb": peak_anon[0], "points": points,
                  "warnings": warnings, "seconds": seconds}}))
"""


def measure(mode: str, target: Path) -> dict:
    """Run one read in a fresh interpreter and return its peak RSS and what it read."""
    code = _CHILD.format(repo=str(REPO))
    done = subprocess.run([sys.executable, "-c", code, mode, str(target)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=2.0, help="size of each generated file")
    parser.add_argument("--only", choices=["tensorboard", "text"], help="measure one of the two files")
    args = parser.parse_args()
    size = int(args.gb * (1 << 30))
    tag = f"{args.gb:g}gb"
    cases = []
    if args.only in (None, "tensorboard"):
        folder = DATA / f"tb_{tag}"
        event = folder / "events.out.tfevents.1700000000.bench.1.0"
        t0 = time.perf_counter()
        facts = make_event_file(event, size)
        print(f"event file: {facts['bytes'] / 2**30:.2f} GiB, {facts['images']:,} images, {facts['scalars']:,} scalars "
              f"(ready in {time.perf_counter() - t0:.0f} s)")
        tiny = DATA / "tiny" / event.name
        tiny.parent.mkdir(parents=True, exist_ok=True)
        tiny.write_bytes(_tiny_event())
        cases += [("tensorboard", "anchor: tiny event file", tiny), ("tensorboard", "event file", event),
                  ("load", "load(folder)", folder)]
    if args.only in (None, "text"):
        folder = DATA / f"text_{tag}"
        log = folder / "train.log"
        t0 = time.perf_counter()
        facts = make_text_log(log, size)
        print(f"text log: {facts['bytes'] / 2**30:.2f} GiB, {facts['metric_lines']:,} metric lines "
              f"(ready in {time.perf_counter() - t0:.0f} s)")
        tiny = DATA / "tiny_text" / "train.log"
        tiny.parent.mkdir(parents=True, exist_ok=True)
        tiny.write_text("iter 0: loss 1.0, time 10.00ms, mfu 30.00%\n")
        cases += [("nanogpt", "anchor: tiny text log", tiny)]
        cases += [(name, "text log", log) for name in ("nanogpt", "text", "hf_console", "megatron", "deepspeed")]
        cases += [("load", "load(folder)", folder)]
    anchor = None
    print(f"{'reader':<12} {'input':<24} {'peak RSS':>10} {'vs anchor':>10} {'anon':>8} {'points':>9} {'warnings':>8} "
          f"{'time':>7}")
    for mode, label, target in cases:
        result = measure(mode, target)
        if "error" in result:
            print(f"{mode:<12} {label:<24} ERROR {result['error']}")
            continue
        peak = result["hwm_kb"] / 1024
        if label.startswith("anchor"):
            anchor = peak
        ratio = f"{peak / anchor:.2f}x" if anchor else "-"
        print(f"{mode:<12} {label:<24} {peak:>8.0f}MB {ratio:>10} {result['anon_kb'] / 1024:>6.0f}MB "
              f"{result['points']:>9,} {result['warnings']:>8} {result['seconds']:>6.1f}s", flush=True)


def _tiny_event() -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    value = summary_pb2.Summary.Value(tag="metric_0", simple_value=1.0)
    return (_frame(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString())
            + _frame(event_pb2.Event(wall_time=1.7e9, step=1, summary=summary_pb2.Summary(value=[value]))
                     .SerializeToString()))


if __name__ == "__main__":
    main()
