"""How right and how well calibrated are the verdicts? Scores every labelled run, on demand.

Labelled runs: ``sample_runs/`` (regimes in its LABELS.json; borderline runs left out) and
``bench/hardcases/`` (really trained hard cases). Prints

* agreement overall and per kind of hard case, and every miss;
* a reliability table: confidence bands -> how many verdicts, share right (verdicts with
  confidence >= 0.9 should be right >= 90 % of the time), with scikit-learn's
  ``calibration_curve`` when it is installed;
* divergence-onset errors (steps) and overfitting onsets inside their window;
* WARNING/ERROR findings on healthy runs.

Run: ``python bench/bench_verdicts.py``.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's package, not an installed one

import tanalyze  # noqa: E402

_spec = importlib.util.spec_from_file_location("hardcases_score", REPO / "bench" / "hardcases" / "score.py")
score = importlib.util.module_from_spec(_spec)
sys.modules["hardcases_score"] = score
_spec.loader.exec_module(score)

BANDS = [(0.0, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)]


def scored_runs() -> list:
    out = []
    for root in (REPO / "sample_runs", REPO / "bench" / "hardcases"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            diagnoses = tanalyze.diagnose(tanalyze.load(root))
        out += score.score(diagnoses, score.load_labels(root / "LABELS.json"))
    return out


def reliability(scored: list) -> list[tuple[str, int, float]]:
    rows = []
    for lo, hi in BANDS:
        inside = [s for s in scored if lo <= s.confidence < hi]
        rows.append((f"[{lo:.1f}, {min(hi, 1.0):.1f}{']' if hi > 1 else ')'}", len(inside),
                     sum(s.right for s in inside) / len(inside) if inside else float("nan")))
    return rows


def main() -> int:
    scored = scored_runs()
    summary = score.summary(scored)
    print(f"{summary['runs']} labelled runs; agreement {summary['agreement']:.1%}")
    kinds: dict[str, list] = defaultdict(list)
    for s in scored:
        kinds[s.kind].append(s)
    print("\nper kind: right / runs")
    for kind, items in sorted(kinds.items()):
        print(f"  {kind:18s} {sum(s.right for s in items)}/{len(items)}")
    print("\nreliability: confidence band -> verdicts, share right")
    for band, n, share in reliability(scored):
        print(f"  {band:12s} {n:4d}  {share:.0%}" if n else f"  {band:12s} {n:4d}  -")
    try:
        from sklearn.calibration import calibration_curve
    except ImportError:
        print("  (scikit-learn not installed: no calibration_curve)")
    else:
        right = np.array([s.right for s in scored], dtype=float)
        conf = np.array([s.confidence for s in scored])
        frac, mean = calibration_curve(right, conf, n_bins=5, strategy="quantile")
        print("  calibration_curve (quantile bins): mean confidence -> share right: "
              + ", ".join(f"{m:.2f}->{f:.2f}" for m, f in zip(mean, frac, strict=True)))
    print(f"\ndivergence onsets: errors {summary['onset_errors']} steps "
          f"({summary['onsets_within_tolerance']} within {score.GOALS['onset_tolerance_steps']})")
    print(f"overfitting onsets inside their window: {summary['overfitting_onsets_in_window']}"
          f"/{summary['overfitting_windows']}")
    print(f"healthy runs: {summary['healthy_runs']}, given a problem verdict: {summary['healthy_problem_verdicts']}, "
          f"WARNING/ERROR findings per healthy run: {summary['problem_findings_per_healthy_run']:.2f}")
    for s in scored:
        if s.truth == "normal" and s.problem_findings:
            print(f"  {s.key}: {', '.join(s.problem_findings)}")
    misses = score.failures(scored)
    print("\nmisses:" if misses else "\nno misses")
    for line in misses:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
