"""Speed of the health analyzers on long runs (every logged point), as ratios to an anchor.

Run on demand: ``python bench/bench_health.py [n_points]``. The anchor is
``np.sort`` of the same number of float64 values, measured in the same run, so
the ratios are comparable across machines.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from tanalyze.analysis.gradients import analyze_gradients
from tanalyze.analysis.resources import analyze_resources
from tanalyze.analysis.throughput import analyze_throughput, compare_throughput
from tanalyze.curves import Curve


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(n: int = 1_000_000) -> None:
    rng = np.random.default_rng(0)
    steps = np.arange(n)
    noise = rng.normal(0, 0.03, n)
    step_time = 0.5 * np.exp(np.convolve(noise, np.ones(5) / 5, "same"))
    step_time[steps % 1000 == 0] *= 20
    step_time[n // 2 :] *= 1.2
    grad = 0.5 * np.exp(rng.normal(0, 0.3, n))
    memory = 10e9 + 100.0 * steps + rng.normal(0, 1e7, n)
    t_curve = Curve.from_arrays(steps, step_time, tag="step_time")
    cand = Curve.from_arrays(steps, step_time * 1.2, tag="step_time")

    anchor = timed(lambda: np.sort(rng.normal(size=n)))
    cases = {
        "analyze_throughput": lambda: analyze_throughput(t_curve, kind="step_time_s"),
        "compare_throughput": lambda: compare_throughput(t_curve, cand, kind="step_time_s"),
        "analyze_gradients": lambda: analyze_gradients(Curve.from_arrays(steps, grad), max_norm=1.0),
        "analyze_resources(memory)": lambda: analyze_resources(
            gpu_memory=Curve.from_arrays(steps, memory), capacity_bytes=80e9
        ),
    }
    print(f"{n:,} points; anchor np.sort: {anchor * 1e3:.1f} ms")
    for name, fn in cases.items():
        seconds = timed(fn)
        print(f"{name:28s} {seconds:7.2f} s  {seconds / anchor:7.1f}x anchor")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
