"""Early warning of divergence: how early it fires on gradual divergences, how often it cries wolf on healthy runs.

Three sets, each through ``diagnose_run`` (the analysis a user gets):

* synthetic gradual divergences (``tanalyze.datasets.make_gradual_divergence``: the learning rate grows a
  little every step from 30-60 % of the run, the loss creeps, then blows up; with and without a gradient-norm
  curve, ending in NaN or on a finite plateau; ``--gradual`` runs, seeds fixed): the share of them whose
  warning fired at least 10 % of the run before the reported onset (goal: most);
* the really-trained hard cases in ``bench/hardcases`` labelled diverged (their learning rate jumps or ramps
  within a few dozen steps: instantaneous, no lead is claimed) and the growing oscillation: per case;
* the healthy sweep of ``bench/bench_specificity.py`` (``--runs``, default 320): the share of runs with a
  ``divergence_warning`` (goal <= 5 %) and the problem verdicts (goal 0).

Run: ``python bench/bench_early_warning.py [--runs N] [--gradual N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's package, not an installed one

import tanalyze  # noqa: E402
from tanalyze.datasets import GRAD, LR, TRAIN, make_gradual_divergence  # noqa: E402
from tanalyze.diagnose import diagnose_run  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_specificity", REPO / "bench" / "bench_specificity.py")
spec_bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_specificity"] = spec_bench
_spec.loader.exec_module(spec_bench)

ROLES = {"train_loss": TRAIN, "learning_rate": LR, "grad_norm": GRAD}


def gradual_set(count: int) -> tuple[int, int, list[float]]:
    """(runs diagnosed diverged, runs warned >= 10 % ahead, lead shares) over ``count`` gradual divergences."""
    diverged = ahead = 0
    shares: list[float] = []
    for i in range(count):
        rng = np.random.default_rng(1000 + i)
        curves, _ = make_gradual_divergence(
            n_steps=int(rng.choice([1000, 2000, 4000])), seed=i, noise=float(rng.uniform(0.02, 0.15)),
            start_at=float(rng.uniform(0.3, 0.6)), sharpness=float(rng.uniform(1.5, 3.0)),
            grad_norm=bool(i % 2 == 0), nonfinite=bool(i % 3 != 0), run=f"gradual#{i}")
        d = diagnose_run(spec_bench.frame_of(f"gradual#{i}", curves),
                         roles={r: t for r, t in ROLES.items() if t in curves})
        e = d.early_warning
        if d.divergence is None or e is None or e.onset_step is None:
            continue
        diverged += 1
        share = e.warning_lead_share or 0.0
        shares.append(share)
        ahead += share >= 0.10
    return diverged, ahead, shares


def hard_cases() -> list[str]:
    root = REPO / "bench" / "hardcases"
    labels = json.loads((root / "LABELS.json").read_text())["runs"]
    lines = []
    for name, label in labels.items():
        if label["verdict"] != "diverged" and "oscillation" not in label["kind"]:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = next(iter(tanalyze.diagnose(tanalyze.load(root / name)).values()))
        e = d.early_warning
        said = ", ".join(f.code for f in e.findings) if e is not None else ""
        lead = f"lead {e.warning_lead_share:.0%}" if e is not None and e.warning_lead_share is not None else "no lead"
        lr = f", lr at onset {e.lr_ratio_at_onset:.3g}x its median" if e is not None and e.lr_ratio_at_onset else ""
        lines.append(f"  {name:22s} {label['verdict']:9s} onset {e.onset_step if e else None}: "
                     f"{lead}{lr}; findings: {said or 'none'}")
    return lines


def healthy_set(runs: int) -> tuple[int, int]:
    """(runs with a divergence_warning, runs with a problem verdict) over the healthy sweep."""
    bases = spec_bench.healthy_bases()
    warned = problems = 0
    for i in range(runs):
        name, curves, config = bases[i % len(bases)]
        rng = np.random.default_rng(i)
        varied = {role: (spec_bench.vary(c, rng) if role != "learning_rate" else c) for role, c in curves.items()}
        d = diagnose_run(spec_bench.frame_of(f"{name}#{i}", varied), roles={r: c.tag for r, c in varied.items()},
                         **config)
        warned += any(f.code == "divergence_warning" for f in d.findings)
        problems += d.verdict.label in spec_bench.PROBLEMS
    return warned, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=320, help="healthy runs")
    parser.add_argument("--gradual", type=int, default=60, help="synthetic gradual divergences")
    args = parser.parse_args(argv)
    diverged, ahead, shares = gradual_set(args.gradual)
    print(f"gradual divergences: {diverged} of {args.gradual} diagnosed diverged; warned >= 10% of the run "
          f"before the onset: {ahead} ({ahead / max(diverged, 1):.0%}; goal: most); "
          f"median lead {np.median(shares) if shares else 0:.0%}")
    print("hard cases (really trained):")
    for line in hard_cases():
        print(line)
    warned, problems = healthy_set(args.runs)
    print(f"healthy runs: divergence_warning on {warned} of {args.runs} ({warned / args.runs:.1%}; goal <= 5%); "
          f"problem verdicts {problems} (goal 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
