"""How right and how well calibrated are the verdicts? Scores every labelled run, on demand.

Labelled runs: ``sample_runs/`` (regimes in its LABELS.json; borderline runs left out) and
``bench/hardcases/`` (really trained hard cases). Prints

* agreement overall and per kind of hard case, and every miss;
* a reliability table: confidence bands -> how many verdicts, share right (verdicts with
  confidence >= 0.9 should be right >= 90 % of the time), with scikit-learn's
  ``calibration_curve`` when it is installed;
* divergence-onset errors (steps) and overfitting onsets inside their window;
* WARNING/ERROR findings on healthy runs;
* with ``--variants N`` (default 6), the reliability table again over the labelled runs plus N recorded-noise
  variants of each (its trend kept, its residuals drawn again as in ``bench_specificity.py``, truth kept): a
  larger set with some misses, so that the table says how often each confidence band is wrong.

Run: ``python bench/bench_verdicts.py [--variants N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's package, not an installed one

import tanalyze  # noqa: E402
from tanalyze.diagnose import diagnose_run  # noqa: E402

_spec = importlib.util.spec_from_file_location("hardcases_score", REPO / "bench" / "hardcases" / "score.py")
score = importlib.util.module_from_spec(_spec)
sys.modules["hardcases_score"] = score
_spec.loader.exec_module(score)

_bspec = importlib.util.spec_from_file_location("bench_specificity", REPO / "bench" / "bench_specificity.py")
spec_bench = importlib.util.module_from_spec(_bspec)
_bspec.loader.exec_module(spec_bench)

BANDS = [(0.0, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)]


@dataclass(frozen=True)
class Judged:
    """A verdict against its truth (for the reliability table)."""

    truth: str
    got: str
    confidence: float

    @property
    def right(self) -> bool:
        return self.truth == self.got


def scored_runs(variants: int = 0) -> tuple[list, list[Judged]]:
    """The labelled runs scored, and ``variants`` recorded-noise variants of each one that can be varied
    (finite losses, no GAN / multi-loss / sibling / NaN-metric kinds), judged against the same truth."""
    out, varied = [], []
    for root in (REPO / "sample_runs", REPO / "bench" / "hardcases"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logs = tanalyze.load(root)
            diagnoses = tanalyze.diagnose(logs)
        scored = score.score(diagnoses, score.load_labels(root / "LABELS.json"))
        out += scored
        for s in scored:
            curves = {role: c for role, c in diagnoses[s.run].curves.items()
                      if role in ("train_loss", "train_loss_epoch", "val_loss", "learning_rate")}
            if (s.kind in spec_bench.SKIP_KINDS or "train_loss" not in curves
                    or not all(np.isfinite(c.values).all() for c in curves.values())
                    or len(curves["train_loss"]) < 20):
                continue
            for i in range(variants):
                rng = np.random.default_rng(10_000 + i)
                new = {role: (spec_bench.vary(c, rng) if role != "learning_rate" else c) for role, c in curves.items()}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    d = diagnose_run(spec_bench.frame_of(f"{s.run}#{i}", new), roles={r: c.tag for r, c in new.items()},
                                     **spec_bench.configuration(logs, s.run))
                varied.append(Judged(s.truth, d.verdict.label, d.verdict.confidence))
    return out, varied


def reliability(scored: list) -> list[tuple[str, int, float]]:
    rows = []
    for lo, hi in BANDS:
        inside = [s for s in scored if lo <= s.confidence < hi]
        rows.append((f"[{lo:.1f}, {min(hi, 1.0):.1f}{']' if hi > 1 else ')'}", len(inside),
                     sum(s.right for s in inside) / len(inside) if inside else float("nan")))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=6)
    args = parser.parse_args(argv)
    scored, varied = scored_runs(args.variants)
    summary = score.summary(scored)
    print(f"{summary['runs']} labelled runs; agreement {summary['agreement']:.1%}")
    kinds: dict[str, list] = defaultdict(list)
    for s in scored:
        kinds[s.kind].append(s)
    print("\nper kind: right / runs")
    for kind, items in sorted(kinds.items()):
        print(f"  {kind:18s} {sum(s.right for s in items)}/{len(items)}")
    print("\nreliability on the labelled runs: confidence band -> verdicts, share right")
    for band, n, share in reliability(scored):
        print(f"  {band:12s} {n:4d}  {share:.0%}" if n else f"  {band:12s} {n:4d}  -")
    if varied:
        both = [Judged(s.truth, s.got, s.confidence) for s in scored] + varied
        print(f"\nreliability on the labelled runs and {len(varied)} recorded-noise variants "
              f"({sum(j.right for j in both) / len(both):.1%} right): confidence band -> verdicts, share right")
        for band, n, share in reliability(both):
            print(f"  {band:12s} {n:4d}  {share:.1%}" if n else f"  {band:12s} {n:4d}  -")
        for label in sorted({j.truth for j in both}):
            mine = [j for j in both if j.truth == label]
            wrong = [j for j in mine if not j.right]
            if wrong:
                print(f"  truth {label}: {len(wrong)}/{len(mine)} wrong: "
                      + ", ".join(f"{j.got} ({j.confidence:.2f})" for j in wrong[:8]))
        scored_for_curve = both
    else:
        scored_for_curve = scored
    try:
        from sklearn.calibration import calibration_curve
    except ImportError:
        print("  (scikit-learn not installed: no calibration_curve)")
    else:
        right = np.array([s.right for s in scored_for_curve], dtype=float)
        conf = np.array([s.confidence for s in scored_for_curve])
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
