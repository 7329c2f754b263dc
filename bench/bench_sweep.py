"""Bench: what the sweep analysis adds to the report of a 2,000-run sweep (target: less than 10 %).

A grid sweep whose settings are in the run names (``lr=0.001_wd=0.1_drop=0.2/seed_3``: lr drives, wd matters a
little, drop does nothing), 500 configurations × 4 seeds, 40 validation and 40 training points each, is built in
memory. The report (diagnose every run, compute the report with its sweep section, render the page) is timed,
and the sweep analysis inside it is timed on its own on the same runs.

    python bench/bench_sweep.py                  # 2,000 runs
    python bench/bench_sweep.py --runs 200       # smaller, for a quick look
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tanalyze  # noqa: E402
from tanalyze.report import build_report, report_dict  # noqa: E402
from tanalyze.report.html import render_html  # noqa: E402
from tanalyze.report.sweep import experiments_of  # noqa: E402
from tests.sweep_helpers import sweep_frame  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=1, help="processes drawing the runs' figures")
    args = parser.parse_args()
    configs = max(1, args.runs // args.seeds)
    logs = tanalyze.from_frame(sweep_frame(configs, args.seeds))
    print(f"{len(logs.runs):,} runs, {len(logs.scalars):,} points")

    start = time.perf_counter()
    diagnoses = tanalyze.diagnose(logs)
    data = build_report(logs, diagnoses)
    report_dict(data)
    page = render_html(data, jobs=args.jobs)
    report = time.perf_counter() - start

    start = time.perf_counter()
    experiments = experiments_of(data.runs)
    alone = time.perf_counter() - start
    [experiment] = experiments
    ranking = ", ".join(f"{i.key} {i.score:.2f}" for i in experiment.importance)
    print(f"report (diagnose + compute + render, {len(page) / 1e6:.1f} MB): {report:.1f} s")
    print(f"sweep analysis alone: {alone:.2f} s = {100 * alone / (report - alone):.1f} % of the rest of the report")
    print(f"importance: {ranking}; best: {experiment.best.label}")


if __name__ == "__main__":
    main()
