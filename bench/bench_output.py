"""Writing a table as CSV: ``tanalyze parse PATH -o out.csv`` against ``DataFrame.to_csv`` (run on demand).

    python bench/bench_output.py              # 1,000,000 scalars from one event file
    python bench/bench_output.py --repeat 3   # best of three

The table is what ``tanalyze.load`` reads from the 1,000,000-scalar event file of
``bench_tensorboard.py`` (case a, generated once under ``bench/_data/``). In the
same run it is written by ``tanalyze.csvout.write_csv`` (what ``parse -o out.csv``
uses) and by ``DataFrame.to_csv(index=False)``, and the two files are compared
byte for byte. Times are CPU seconds of this process (a busy machine distorts
them less than wall-clock time), best of ``--repeat``; the read is timed too, for
scale.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_tensorboard import ensure_data  # noqa: E402

import tanalyze  # noqa: E402
from tanalyze.csvout import write_csv  # noqa: E402


def _best(action, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        action()
        best = min(best, time.process_time() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs (default 1)")
    args = parser.parse_args()
    folder = ensure_data("a")
    read = _best(lambda: tanalyze.load(folder, cache=False, jobs=1).scalars, args.repeat)
    frame = tanalyze.load(folder, cache=False, jobs=1).scalars
    rows = len(frame)
    with tempfile.TemporaryDirectory() as scratch:
        ours_path, pandas_path = Path(scratch) / "ours.csv", Path(scratch) / "pandas.csv"
        ours = _best(lambda: write_csv(frame, ours_path), args.repeat)
        pandas = _best(lambda: frame.to_csv(pandas_path, index=False), args.repeat)
        same = filecmp.cmp(ours_path, pandas_path, shallow=False)
        size = ours_path.stat().st_size / (1 << 20)
    print(f"{rows:,} rows, {len(frame.columns)} columns, {size:.1f} MB of CSV (read from the event file in {read:.2f} s)")
    print(f"{'writer':<18}{'s':>7}{'rows/s':>12}")
    print(f"{'tanalyze':<18}{ours:>7.2f}{rows / ours:>12,.0f}")
    print(f"{'DataFrame.to_csv':<18}{pandas:>7.2f}{rows / pandas:>12,.0f}")
    print(f"tanalyze writes it {pandas / ours:.2f}x as fast as to_csv ({ours / read:.2f}x the read); "
          f"same bytes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
