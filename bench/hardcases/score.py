"""Score diagnoses against labelled runs: verdict agreement, onsets, problem findings on healthy runs.

Shared by ``tests/analysis/test_hardcases.py`` (which fails below the goals) and
``bench/bench_verdicts.py`` (which prints the tables). Labels are the
``LABELS.json`` shapes of ``bench/hardcases`` (``verdict``) and of
``sample_runs`` (``regime``, ``borderline``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: What the hard cases must reach (and what the held-out set is judged by).
GOALS = {"agreement": 0.95, "healthy_problem_verdicts": 0, "onset_tolerance_steps": 5,
         "problem_findings_per_healthy_run": 0.1}
PROBLEMS = {"overfitting", "underfitting", "unstable", "diverged"}


@dataclass
class Scored:
    """One labelled run and what the diagnosis said about it."""

    key: str
    run: str
    kind: str
    truth: str
    got: str
    confidence: float
    onset_truth: int | None = None
    onset_got: int | None = None
    window: tuple[int, int] | None = None
    overfit_onset: int | None = None
    problem_findings: list[str] = field(default_factory=list)

    @property
    def right(self) -> bool:
        return self.truth == self.got

    @property
    def onset_error(self) -> int | None:
        if self.onset_truth is None or self.onset_got is None:
            return None
        return abs(self.onset_got - self.onset_truth)

    @property
    def onset_in_window(self) -> bool | None:
        if self.window is None:
            return None
        return self.overfit_onset is not None and self.window[0] <= self.overfit_onset <= self.window[1]


def load_labels(path: Path) -> dict[str, dict[str, Any]]:
    return json.loads(path.read_text())["runs"]


def _truth(label: Mapping[str, Any]) -> str | None:
    if "verdict" in label:
        return label["verdict"]
    if label.get("borderline"):
        return None
    return label.get("regime")


def match_runs(names: list[str], key: str) -> list[str]:
    """The loaded runs a label belongs to: the folder itself, or the runs below it."""
    exact = [n for n in names if n == key]
    return exact or [n for n in names if n.startswith(key + "/")]


def score(diagnoses: Mapping[str, Any], labels: Mapping[str, Mapping[str, Any]], *, prefix: str = "") -> list[Scored]:
    """One :class:`Scored` per labelled run found among ``diagnoses`` (run names are ``prefix + key``)."""
    out: list[Scored] = []
    names = list(diagnoses)
    for key, label in labels.items():
        truth = _truth(label)
        if truth is None or label.get("twin_of"):  # a twin is read with its run (judged alone in the tests)
            continue
        runs = match_runs(names, prefix + key)
        if "verdict" not in label and len(runs) > 1:  # sample runs: the run with the labelled train tag
            runs = [r for r in runs if diagnoses[r].roles.get("train_loss") == label.get("train_loss_tag")] or runs
        for run in runs[:1]:
            d = diagnoses[run]
            # hard cases label the onset (where the loss left its range for good); the sample runs label the
            # divergence step itself (first non-finite step, or where it stayed 10x above its running minimum)
            onset_truth, onset_got = label.get("divergence_onset"), None
            if d.divergence is not None:
                onset_got = d.divergence.onset_step
            elif d.verdict.label == "diverged":  # a divergence the verdict found (a collapse to chance level)
                onset_got = d.verdict.evidence.get("onset_step")
            if "regime" in label and label.get("divergence_step") is not None:
                onset_truth = label["divergence_step"]
                onset_got = d.divergence.step if d.divergence is not None else None
            window = label.get("overfitting_window") or (label.get("val_min_window") if truth == "overfitting" else None)
            overfit_onset = d.overfitting.onset_step if d.overfitting is not None else None
            problems = [f"{f.code}:{f.severity}" for f in d.findings if str(f.severity) in ("warning", "error")]
            out.append(Scored(key, run, label.get("kind", "sample"), truth, d.verdict.label, d.verdict.confidence,
                              onset_truth, onset_got, tuple(window) if window else None, overfit_onset, problems))
    return out


def summary(scored: list[Scored]) -> dict[str, Any]:
    """Agreement, healthy runs given a problem verdict, onset errors and problem findings per healthy run."""
    n = len(scored)
    healthy = [s for s in scored if s.truth == "normal"]
    errors = [s.onset_error for s in scored if s.truth == "diverged" and s.onset_truth is not None]
    windows = [s.onset_in_window for s in scored if s.truth == "overfitting" and s.window is not None]
    return {
        "runs": n,
        "agreement": sum(s.right for s in scored) / n if n else float("nan"),
        "healthy_runs": len(healthy),
        "healthy_problem_verdicts": sum(s.got in PROBLEMS for s in healthy),
        "problem_findings_per_healthy_run": (sum(len(s.problem_findings) for s in healthy) / len(healthy)
                                             if healthy else 0.0),
        "onset_errors": errors,
        "onsets_within_tolerance": sum(e is not None and e <= GOALS["onset_tolerance_steps"] for e in errors),
        "overfitting_onsets_in_window": sum(bool(w) for w in windows),
        "overfitting_windows": len(windows),
    }


def failures(scored: list[Scored]) -> list[str]:
    """Human-readable lines for every way the scored runs miss the goals."""
    out = []
    for s in scored:
        if not s.right:
            out.append(f"{s.key}: truth {s.truth}, got {s.got} ({s.confidence:.2f})")
        if s.truth == "diverged" and s.onset_truth is not None and (
                s.onset_error is None or s.onset_error > GOALS["onset_tolerance_steps"]):
            out.append(f"{s.key}: divergence onset {s.onset_got}, truth {s.onset_truth}")
        if s.window is not None and s.truth == "overfitting" and not s.onset_in_window:
            out.append(f"{s.key}: overfitting onset {s.overfit_onset} outside {s.window}")
    return out
