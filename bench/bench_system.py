"""System-metric findings on real runs: where they fire and where they do not (false alarms).

Diagnoses every run under each PATH (default: the bundled sample runs) and prints, per path, how many runs
logged system metrics, how many of those had a GPU under load, and each ``gpu_util_drops``,
``thermal_throttling`` and ``memory_near_capacity`` finding with its message, so that every one can be
checked by eye against the curves (the report's resources panel).

Run: ``python bench/bench_system.py [PATH ...]`` (e.g. a folder of real W&B run folders).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's package, not an installed one

import tanalyze  # noqa: E402

CODES = ("gpu_util_drops", "thermal_throttling", "memory_near_capacity")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(REPO / "sample_runs")])
    args = parser.parse_args(argv)
    total = {code: 0 for code in CODES}
    for path in args.paths:
        diagnoses = tanalyze.diagnose(tanalyze.load(path, cache=False))
        with_system = busy = 0
        lines = []
        for name in diagnoses:
            d = diagnoses[name]
            if d.system is None:
                continue
            with_system += 1
            busy += any(s.kind == "gpu_util" and s.median >= 50 for s in d.system.series)
            for f in d.findings:
                if f.code in CODES:
                    total[f.code] += 1
                    lines.append(f"  {name}: {f.code} ({f.severity}): {f.message}")
        print(f"{path}: {len(diagnoses)} runs, {with_system} with system metrics, {busy} with a GPU under load "
              f"(median utilisation >= 50%), {len(lines)} system finding(s)")
        print("\n".join(lines))
    print("findings:", ", ".join(f"{code} {n}" for code, n in total.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
