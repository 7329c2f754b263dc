"""Speed and memory of reading a W&B ``.wandb`` file, against anchors measured in the same run.

Anchors: (1) only framing + protobuf decoding of every record (the floor any reader pays);
(2) ``json.loads`` of the same rows as JSON lines plus a pandas DataFrame (what a user's own
script over ``scan_history()`` rows does). Run from the repository root:
``python -m bench.bench_wandb_records [rows]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pandas as pd

from tanalyze.readers.wandb._records import Framing, iter_chunks, record_class
from tanalyze.readers.wandb.local import WandbLocalReader
from tests.readers import wandb_make as make


def timed(label: str, func) -> float:
    """Wall time of one plain run, then peak traced memory of a second run."""
    start = time.perf_counter()
    func()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    func()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    print(f"{label:<44} {seconds:7.2f} s  peak {peak:6.0f} MB")
    return seconds


def main(rows: int) -> None:
    folder = Path(tempfile.mkdtemp())
    history = [{"train/loss": 1.0 / (i + 1), "lr": 1e-4, "grad_norm": 0.5, "iter": i, "_step": i,
                "_timestamp": 1.7e9 + i, "_runtime": float(i)} for i in range(rows)]
    run = make.run_folder(folder, [make.history(row) for row in history])
    wandb_file = next(run.glob("*.wandb"))
    jsonl = folder / "rows.jsonl"
    jsonl.write_text("\n".join(json.dumps(row) for row in history))
    print(f"{rows:,} rows, .wandb {wandb_file.stat().st_size / 1e6:.1f} MB")

    def floor() -> None:
        record = record_class()
        for _, payload in iter_chunks(wandb_file.read_bytes(), str(wandb_file), Framing()):
            record.FromString(payload)

    def user_loop() -> None:
        pd.DataFrame([json.loads(line) for line in jsonl.read_text().splitlines()])

    anchor = timed("anchor 1: framing + protobuf decode only", floor)
    loop = timed("anchor 2: json.loads rows + DataFrame", user_loop)
    ours = timed("tanalyze WandbLocalReader.read", lambda: WandbLocalReader().read([wandb_file]))
    print(f"ratio vs anchor 1: {ours / anchor:.2f}x   ratio vs anchor 2: {ours / loop:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
