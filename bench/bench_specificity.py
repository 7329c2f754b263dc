"""Specificity on a healthy sweep: hundreds of healthy runs, how many get a problem verdict or a warning?

The healthy runs are recorded noise around real tiny trainings: every run labelled ``normal`` in
``bench/hardcases`` and ``sample_runs`` (GANs, multi-head and cross-run cases left out: they need
their other curves) is split, in log space, into its trend (a centred running median) and its
residuals; each variant keeps the trend and draws the residuals again by a local moving-block bootstrap
(blocks of 8 from within a tenth of the run of where they go, so short-range correlation and noise that is
larger early or late both stay), for the training and the validation loss, with
the run's real wall times and learning rate. ``--runs`` variants in all (default 320), seeds fixed.

Prints the problem verdicts (goal: 0) and the false-alarm rate per finding code (WARNING/ERROR findings
on these healthy runs). Run: ``python bench/bench_specificity.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.ndimage import median_filter

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's package, not an installed one

import tanalyze  # noqa: E402
from tanalyze.curves import Curve  # noqa: E402
from tanalyze.diagnose import diagnose_run  # noqa: E402
from tanalyze.schema import scalar_frame  # noqa: E402

_spec = importlib.util.spec_from_file_location("hardcases_score", REPO / "bench" / "hardcases" / "score.py")
score = importlib.util.module_from_spec(_spec)
sys.modules["hardcases_score"] = score
_spec.loader.exec_module(score)

#: Kinds whose verdict is not their training loss's alone (redrawing that loss's noise says nothing about them):
#: GANs, summed losses, sibling comparisons, NaN validation, reinforcement learning (judged by the reward); and a
#: blow-up three points long at the run's start (``early_blowup``), which the trend's median filter takes for
#: noise: its redrawn variants scatter or drop the very event their truth is about.
SKIP_KINDS = {"gan", "multi_loss", "siblings", "val_nan", "rl", "early_blowup"}
PROBLEMS = {"overfitting", "underfitting", "unstable", "diverged"}


def healthy_bases() -> list[tuple[str, dict[str, Curve], dict[str, Any]]]:
    """(name, {role: curve}, its configuration) of every healthy labelled run that can be varied on its own."""
    out = []
    for root in (REPO / "bench" / "hardcases", REPO / "sample_runs"):
        labels = score.load_labels(root / "LABELS.json")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logs = tanalyze.load(root)
            diagnoses = tanalyze.diagnose(logs)
        for s in score.score(diagnoses, labels):
            if s.truth != "normal" or s.kind in SKIP_KINDS:
                continue
            d = diagnoses[s.run]
            curves = {role: c for role, c in d.curves.items() if role in ("train_loss", "train_loss_epoch", "val_loss", "learning_rate")}
            if "train_loss" in curves and len(curves["train_loss"].finite_part()) >= 20:
                out.append((s.run, curves, configuration(logs, s.run)))
    return out


def configuration(logs: tanalyze.Logs, run: str) -> dict[str, Any]:
    """What a variant keeps of its run besides the curves: its config and logged texts (``diagnose_run``'s
    ``hparams`` and ``text``): a variant is the same run with its noise drawn again."""
    info = logs.runs[run]
    return {"hparams": info.hparams, "text": info.text}


def vary(curve: Curve, rng: np.random.Generator, block: int = 8) -> Curve:
    """The curve's trend with its residuals drawn again by moving-block bootstrap (log space when positive)."""
    c = curve.collapse_steps().finite_part()
    positive = bool((c.values > 0).all())
    y = np.log(c.values) if positive else c.values.copy()
    n = len(y)
    if n < 6:
        return c
    trend = median_filter(y, size=max(3, n // 25) | 1, mode="nearest")
    resid = y - trend
    # local moving blocks: each block is drawn from within a tenth of the run of where it goes, so that noise
    # that is larger early (or late) stays where it was
    reach = max(block, n // 10)
    blocks = []
    for at in range(0, n, block):
        lo, hi = max(0, at - reach), max(1, min(n - block, at + reach) + 1)
        start = int(rng.integers(lo, hi)) if hi > lo else 0
        blocks.append(resid[start : start + block])
    drawn = np.concatenate(blocks)[:n]
    if drawn.size < n:
        drawn = np.concatenate([drawn, resid[n - (n - drawn.size):]])
    new = trend + drawn
    return Curve(c.tag, c.steps, np.exp(new) if positive else new, c.wall_time)


def frame_of(name: str, curves: dict[str, Curve]) -> pd.DataFrame:
    tags, steps, values, wall = [], [], [], []
    for c in curves.values():
        tags += [c.tag] * len(c)
        steps.append(c.steps)
        values.append(c.values)
        wall.append(c.wall_time)
    return scalar_frame(run=name, tag=tags, step=np.concatenate(steps), value=np.concatenate(values),
                        wall_time=np.concatenate(wall))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=320)
    args = parser.parse_args(argv)
    bases = healthy_bases()
    verdicts: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    info: Counter[str] = Counter()
    wrong: list[str] = []
    for i in range(args.runs):
        name, curves, config = bases[i % len(bases)]
        rng = np.random.default_rng(i)
        varied = {role: (vary(c, rng) if role != "learning_rate" else c) for role, c in curves.items()}
        d = diagnose_run(frame_of(f"{name}#{i}", varied), roles={role: c.tag for role, c in varied.items()}, **config)
        verdicts[d.verdict.label] += 1
        if d.verdict.label in PROBLEMS:
            wrong.append(f"{name}#{i}: {d.verdict.label} ({d.verdict.confidence:.2f}) {d.verdict.reasons[0][:120]}")
        for code in {f.code for f in d.findings if str(f.severity) in ("warning", "error")}:
            codes[code] += 1
        for code in {f.code for f in d.findings if str(f.severity) == "info"}:
            info[code] += 1
    print(f"{args.runs} healthy runs from {len(bases)} real tiny trainings (recorded noise redrawn)")
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in verdicts.most_common()))
    print(f"problem verdicts: {sum(verdicts[p] for p in PROBLEMS)} (goal 0)")
    print("false-alarm rate per finding code (runs with a WARNING/ERROR of that code):")
    for code, n in codes.most_common():
        print(f"  {code:24s} {n:4d}  {n / args.runs:.1%}")
    if not codes:
        print("  none")
    print(f"WARNING/ERROR findings per healthy run: {sum(codes.values()) / args.runs:.3f} (goal <= 0.1)")
    print("INFO findings per code (runs with one): "
          + (", ".join(f"{c} {n / args.runs:.1%}" for c, n in info.most_common()) or "none"))
    for line in wrong[:20]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
