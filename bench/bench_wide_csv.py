"""How fast the wide-CSV readers stream a large metrics CSV, against pandas.read_csv of the same file.

Run on demand from the checkout root: ``python -m bench.bench_wide_csv [rows]``. Prints seconds, rows/s and
the ratio to the anchor (pandas' C parser reading the same file into a wide
frame, which does less work: no long table, no per-cell checks).
"""

from __future__ import annotations

import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.readers.tabular.csv_loggers import GenericCSVReader


def write_csv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"epoch": np.arange(rows) // 1000, "step": np.arange(rows)})
    for name in ("loss", "lr", "grad_norm", "acc", "time", "data_time"):
        frame[name] = rng.random(rows)
    frame.loc[frame.index % 50 != 0, "acc"] = np.nan  # sparse, like a validation column
    frame.to_csv(path, index=False)


def timed(label: str, func) -> float:
    start = time.perf_counter()
    result = func()
    seconds = time.perf_counter() - start
    print(f"{label:<28} {seconds:8.2f} s   -> {len(result):,} rows out")
    return seconds


def peak_mb(func) -> float:
    """Peak Python-allocated memory of one call (a separate pass: tracing slows the call down)."""
    tracemalloc.start()
    func()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return peak


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "metrics.csv"
        write_csv(path, rows)
        print(f"{rows:,} rows, {path.stat().st_size / 1e6:.0f} MB")
        anchor = timed("anchor: pandas.read_csv", lambda: pd.read_csv(path))
        ours = timed("GenericCSVReader.read", lambda: GenericCSVReader().read([path])[0].scalars)
        print(f"ratio to anchor: {ours / anchor:.2f}x   ({rows / ours:,.0f} CSV rows/s)")
        size = path.stat().st_size / 1e6
        read_peak = peak_mb(lambda: GenericCSVReader().read([path]))
        anchor_peak = peak_mb(lambda: pd.read_csv(path))
        print(f"peak memory: ours {read_peak:.0f} MB, anchor {anchor_peak:.0f} MB, file {size:.0f} MB "
              f"(the tidy table holds ~5x more rows than the wide one)")


if __name__ == "__main__":
    main()
