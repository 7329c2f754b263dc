"""Diagnose runs: roles → every analyzer → one frozen :class:`RunDiagnosis` per run.

>>> import tanalyze
>>> diagnoses = tanalyze.diagnose(tanalyze.load("runs/"))
>>> diagnoses                              # one line per run: verdict, confidence, key steps
>>> diagnoses["my-run"].to_dict()          # the JSON shape below
>>> diagnoses["my-run"].plot()             # loss curves with onset / divergence / spikes marked

:func:`diagnose_run` is the pure per-run pipeline: a tidy table of one run in,
a :class:`RunDiagnosis` out, both picklable, so any executor can map it over runs.

``RunDiagnosis.to_dict()`` shape (non-finite numbers as ``"nan"``/``"inf"`` strings)::

    {"run", "format", "roles": {role: tag},
     "verdict": {"label", "confidence", "evidence", "reasons", "also"},
     "overfitting": {..., "onset_step"} | null,        # only when overfitting was found
     "divergence": {"step", "kind", "onset_step", "restart", ...} | null,
     "spikes": [{"step", "onset_step", "peak_step", "magnitude", ...}],
     "early_stopping": {"stop_step", "best_step", "rules": [...], ...} | null,
     "progress": {...} | null, "gradients": {...} | null, "throughput": {...} | null,
     "resources": {...} | null,
     "findings": [{"code", "severity", "step", "step_end", "message", "recommendation", "evidence"}],
     "warnings": [str], "role_details": {...},
     "phase": {"index", "count", "first_step", "last_step", "steps", "total_steps", "unit", "reason", "note"} | null,
     "ranks": {"ranks": [...], "straggler", "stopped": [...], "disagreement", "findings"} | null,  # several ranks
     "early_warning": {"onset_step", "precursors": [...], "warning_step", "warning_lead_steps", ...} | null,
     "checkpoints": {"metric", "mode", "best_step", "best_value", "checkpoints": [...], "best_kept", "best_on_disk",
                     "gap", "top_k", "top_k_steps", "kept_eval_steps", "would_also_keep", ...} | null,  # saved any
     "system": {"series": [...], "alignment", "drops": [...], "throttling": [...], "memory": [...],
                "findings"} | null,                   # when the run logged system metrics
     "communication": {"comm_timers", "step_source", "median_share", "change", "per_rank": [...], ...} | null,
     "nccl": {"transport_kinds", "hosts", "nranks", "timed_out_ranks", "silent_ranks", "scan", "findings"} | null}

A run whose log holds several training sessions (``RunInfo.phases``: a second
``fit()`` appended to the same log) is judged on its last session when that has at
least :data:`MIN_PHASE_STEPS` logged steps. A shorter one is judged with the sessions
before it that it went on from (a ``fit()`` called again goes on from the loss
reached; a session whose loss is back near where the log began is a fresh start,
another training), as many as it takes; when the whole last training is too short,
the longest training is judged, and when the sessions judged are all of them, the
whole run is. ``phase`` says which and why, and the same sentence is the first of
``warnings``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tanalyze._display import html as display_html
from tanalyze.analysis.checkpoints import CheckpointResult, analyze_checkpoints, monitored_metric
from tanalyze.analysis.classify import Thresholds, Verdict, classify_run, judged_loss
from tanalyze.analysis.communication import (
    CommunicationResult,
    analyze_communication,
    compute_time_by_rank,
    timer_curves,
)
from tanalyze.analysis.divergence import Divergence, DivergenceResult, Spike, analyze_divergence
from tanalyze.analysis.early_stopping import EarlyStoppingResult, simulate_early_stopping
from tanalyze.analysis.early_warning import EarlyWarningResult, analyze_early_warning
from tanalyze.analysis.gradients import GradientHealth, analyze_gradients
from tanalyze.analysis.learning_rate import check_learning_rate
from tanalyze.analysis.nccl import NcclAnalysis, analyze_nccl
from tanalyze.analysis.overfitting import OverfittingResult, analyze_overfitting
from tanalyze.analysis.preference import nonfinite_policy_outputs, preference_progress
from tanalyze.analysis.pretrained import LanguageModelStart, language_model_start
from tanalyze.analysis.progress import ProgressResult, analyze_progress
from tanalyze.analysis.ranks import RankAnalysis, analyze_ranks
from tanalyze.analysis.recommendations import recommend
from tanalyze.analysis.reinforcement import classify_reinforcement, classify_without_reward
from tanalyze.analysis.resources import ResourceHealth, analyze_resources
from tanalyze.analysis.restarts import Boundary, RestartCost, analyze_restarts
from tanalyze.analysis.results import Finding, Severity, to_jsonable
from tanalyze.analysis.siblings import SiblingSummary, compare_siblings, folder_of
from tanalyze.analysis.system import SystemHealth, SystemSeries, analyze_system
from tanalyze.analysis.task_metric import (
    MetricAgreement,
    metric_against_overfitting,
    task_metric_tags,
    zero_metrics,
)
from tanalyze.analysis.throughput import ThroughputResult, analyze_throughput
from tanalyze.checkpoint_files import CheckpointScan
from tanalyze.curves import Curve
from tanalyze.errors import ConfigError
from tanalyze.logs import Logs, RunInfo
from tanalyze.readers.base import Phase, Restart
from tanalyze.readers.text.job_console import says_metrics_unread
from tanalyze.roles import (
    Roles,
    memory_unit,
    resolve_roles,
    resource_kind,
    role_curve,
    step_time_unit,
    sum_curves,
    tag_words,
)
from tanalyze.runstatus import RunStatus
from tanalyze.runstatus.nccl import NcclScan
from tanalyze.text import safe_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["RunDiagnosis", "Diagnoses", "diagnose", "diagnose_run", "diagnose_info", "compare_with_siblings",
           "ANALYSIS_VERSION"]

#: Bump when what any analyzer concludes from the same points changes: cached results of older versions
#: are then not used (the results cache also keys by the tanalyze version).
ANALYSIS_VERSION = "75"  # 3: rank analysis (straggler, stopped rank, unsynchronised losses); 4: early warning;
# 5: cheap throughput drops dropped; 6: checkpoints on disk against the best evaluation;
# 7: system metrics (GPU utilisation drops, thermal throttling, memory near capacity);
# 8: communication share from framework timers, NCCL transports and timeouts; 9: a straggler must cost more than jitter;
# 10: W&B system metrics (sampled on a clock) take no gpu_memory role; 11: losses never finite, warnings on finished
# runs, gradient spikes the loss absorbed, restarts of seconds; a lone low validation draw is no minimum; RL runs
# judged by their reward; 12: a language model's fine-tune that falls a little is no underfitting; the report reads
# the run's configuration (its gradient clipping) as diagnose does; a sparse training loss leaves the verdict to a
# validation loss; a loss at exactly 0; gradient collapses that are too short to tell or that the loss fell with;
# 13: a failed job with no point says it ended before logging (ended_before_metrics); 14: a loss with no floor
# (loss_unbounded), the spikes of a loss that reaches zero or below weighed against how far it travels; 15: the
# first logged value named inside the 'from …' part of a verdict's reason; 16: a blow-up the loss comes down from
# only to a level well above its old one is a divergence; a loss frozen at a classifier's chance level; NaN/Inf
# gradient norms under a loss scale that stays up are overflows (information); fairseq's gnorm, wps and ups;
# 17: a classifier's loss back at chance after a stretch well below it is a collapse (diverged); 18: fairseq's
# train_inner/loss is the step-level training loss; 19: one spike long (10% of the points at 2x) or huge (20x,
# 2+ points) is instability; validation swings of a run that ends at its best evaluation are not; a running
# clock is no step time; 20: a last session too short for a verdict is not the one judged; 21: a chance
# plateau names a first logged value far above it; 22: the collapse to chance found with --num-classes too;
# 23: a loss frozen at chance after a blow-up is a dead model (diverged_dead); a validation stall beside a
# training loss that stood still is no plateau nor widening gap; 24: a loss that blew up to 5x its start and
# settled no lower than it is diverged (diverged_early); an unstable finding's step is where it begins; a
# validation-only verdict ending at its best takes no heavy spike on the way for instability
# 25: a spike's onset and baseline found before points a floor on the rise let pass unflagged
# 26: a fall no larger than the noise of its medians is no fall (underfitting); a clear validation rise that
# eased a little since stands; a blow-up must be one in the loss's own units too (no explosion off a floor)
# 27: a validation rise from a minimum at the first evaluation is read from that evaluation's level
# 28: gradient norms above the band with clipping on and the median within the clip say nothing
# 29: a training loss 2x or more below its validation loss is no underfitting (it fits its data); a spike
# gone at the next logged point is information however short the run
# 30: a jump to 1.8x the lowest level that settles there is diverged (settled_high); no 'also underfitting'
# beside an instability after the loss fell well below its start and rose back
# 31: a task metric that kept improving after the validation loss's overfitting onset (metric_disagrees)
# 32: a session that started over from scratch is a new start (information, no time lost), not a resume
# 33: a validation rise beside a training loss that ends clearly above its level at the minimum is degradation;
# a long 2x excursion not back by the end is instability (heavy spike)
# 34: a loss that goes below zero measured against its largest magnitude; no chance-level guess for the summed
# losses of detection and segmentation trainers (SUMMED_LOSS_FORMATS)
# 35: early stopping replayed on the metric the trainer chose its best model by, in its direction
# 36: an HF Trainer state that logged its end-of-training summary or reached max_steps is a finished run; a W&B
# runs table's State is its run's status
# 37: a validation rise of 50% and 3 sigmas of the noise after the minimum that most later evaluations share is
# overfitting, though wild first epochs widen the band and a short run's trend test cannot tell
# 38: a preference-optimisation loss (DPO …) that falls a little while its reward margin grows is no underfitting
# 39: an underfitting run that stopped before a tenth of its planned steps is insufficient data; LLaMA-Factory's
# last step at total_steps is a finished run
# 40: a new start's finding no longer claims the last session is judged (the phase note says which is)
# 41: a launcher's rank log (workerlog.0) and a rotated log (train.log.1) are consoles read for how the job ended
# 42: a reinforcement-learning run (approx_kl, clip_fraction, LossBefore …) with no reward is insufficient data, its
# loss terms never summed and no loss-shape finding (spike, explosion, plateau) on them; a reward of many distinct
# values whose first and last medians differ beyond a robust noise rose (or fell), though outliers widen the noise
# of its means
# 43: a learning rate of 0 over the end of a run is a warning (lr_zero)
# 44: a last session too short for a verdict is judged with the sessions before it that it went on from (a fit()
# called again), not alone or replaced by the longest
# 45: a validation rise its noise cannot yet tell from chance, 25% or more over its minimum in half the later
# evaluations, is reported (val_rise, information); val_plateau says where the validation loss ended
# 46: a validation loss frozen at one value over its last 10+ evaluations is a warning (val_frozen); a normal verdict on
# a training loss at exactly 0 over most of the run is worth at most 0.5
# 47: hit-counting scores (accuracy, top-k, F1, mAP) exactly 0 at every evaluation while the training loss fell are a
# warning (metric_zero), and an overfitting verdict beside them is worth at most 0.5
# 48: a run whose resumes are all sessions appended to its log says so, not "restarts"
# 49: an explosion or a heavy spike must give back a tenth of what the loss had fallen from its start (a converged
# loss of 0.02 bumped to 0.14 after a start at 3.3 is neither)
# 50: a validation level that moved up (the median after the minimum half again above the median up to it, beyond
# three standard errors, most later evaluations above it) is overfitting though the minimum is a lone low draw
# 51: OpenNMT-py's early stop ends a run as finished
# 52: a training loss first logged after the validation loss fell a fifth or more is no underfitting for its small fall
# 53: a run's sessions all too short: the latest of the longest is judged; restarts beside new starts name sessions;
# an HF Trainer's end names the state that records it; another training's checkpoints are not a run's
# 54: a validation rise that climbs at every one of 4+ evaluations after the minimum, 4 noise sigmas, is overfitting;
# val_plateau quotes the rise from the level its noise band is read from
# 55: a failed job whose console holds metric lines no reader read is metrics_unread, not ended_before_metrics
# 56: brief heavy spikes of a training loss that goes on to its best at the end are no unstable run
# 57: a plateau starts where the loss reached its level; a normal verdict beside loss spikes says they fall short
# 58: a new start is measured against where the log or the session before began (the higher)
# 59: a clipping norm assumed from the trainer's default says so
# 60: a language model's loss is no few-class classifier's at chance, and starts from scratch near ln 1000 or above
# 61: a nanoGPT run whose last iteration is the last before max_iters finished
# 62: an underfitting loss that ended above its start says the training made it worse
# 63: a JSON-lines log's final status record is how the run ended
# 64: MiniMind's loss is a language model's
# 65: a gradient norm logged as 0 while the loss moved was not measured; a clipped norm's explosions are not told
# to enable clipping
# 66: a run too short for a verdict whose validation loss ends 25% above its minimum while the training loss fell
# overfits
# 67: the training level an overfitting finding quotes is the level at the onset, not since the evaluation before;
# a YOLO results.csv holding its planned epochs is a finished run
# 68: an underfitting verdict's confidence weighs how surely the loss fell short of its decrease through its noise
# 69: a short run's validation loss that climbed at 3+ evaluations after its minimum overfits; a memorised training
# set's hard batches and its held-out swings are no instability
# 70: a YOLO run's planned epochs count as its planned steps (too early to call underfitting in its first tenth)
# 71: a loss at exactly 0 over the last third of the run is flagged (was: the second half)
# 72: a preference-optimisation run whose policy outputs (logps, logits, rewards) are NaN at every point diverged
# 73: a log that ends in a traceback cut before its exception line crashed (was: killed)
# 74: a flat reward read from levels of fewer than 5 episodes is too few to call not learning
# 75: an episode log with no episode says so, not that no loss was found

#: The early-stopping rule a run's framework offers, named in its finding (the others are replayed too)
_STOPPING_RULE = {"keras_csv": "keras_patience", "keras_console": "keras_patience", "hf_trainer_state": "hf_patience",
                  "hf_console": "hf_patience"}

#: Formats whose training loss is a sum of parts (a detector's box, objectness and class terms; nnU-Net's Dice +
#: cross-entropy): it settles at any level, a classifier's chance level ln K among them, so none is guessed from it
SUMMED_LOSS_FORMATS = frozenset({"darknet", "yolo_csv", "yolo_txt", "detectron2", "mmdet2", "detr", "nnunet"})
#: Formats whose loss is a language model's cross-entropy per token (a vocabulary of thousands): a level near
#: ln 7 is no few-class classifier's chance level
LANGUAGE_MODEL_FORMATS = frozenset({"llamafactory", "nanogpt", "build_nanogpt", "modded_nanogpt", "llmc", "megatron",
                                    "torchtitan", "maxtext", "olmo", "composer", "litgpt", "fairseq", "opennmt",
                                    "pytorch_lm", "minimind"})
#: The vocabulary a language model's loss is judged against when its configuration gives none: fewer tokens than
#: any real tokenizer has (a character-level model's, 65, starts below half of ln 1000 only when already trained)
LEAST_VOCABULARY = 1000
#: Points a reward needs to be the curve a run is judged by (fewer: an evaluation summary beside a loss curve).
_REWARD_CURVE_POINTS = 3
_SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
#: Loss findings that stand in a reinforcement-learning run, where a loss's level and swings mean nothing (the
#: others, spikes, explosions and plateaus of a surrogate or value loss, are not raised there).
_NONFINITE_CODES = frozenset({"nonfinite_values", "diverged_nonfinite"})
#: Keyword arguments of the analyzers that diagnose() forwards (each a dict of that analyzer's parameters).
ANALYZER_PARAMS = ("divergence", "overfitting", "early_stopping", "progress", "gradients", "throughput", "resources",
                   "ranks", "early_warning", "checkpoints", "system", "communication")


#: The last session of a run is judged when it has at least this many logged steps (else the longest one).
MIN_PHASE_STEPS = Thresholds().min_points  # (a last session too short for any verdict is not the one judged)


@dataclass(frozen=True)
class JudgedPhase:
    """Which session of a multi-session run the diagnosis judged, and why (see the module doc)."""

    index: int  # 0-based
    count: int
    first_step: int
    last_step: int
    steps: int  # logged steps in the phase
    total_steps: int  # logged steps in the run
    unit: str
    reason: str
    #: the last session judged with it, when the sessions after ``index`` went on from its loss (None: it alone)
    last_index: int | None = None

    @property
    def note(self) -> str:
        """``judged phase 2 of 2 (steps 5-24, 20 of 25 epochs): the last session`` (``judged phases 3-5 of 5 …``
        for sessions of one training)."""
        which = (f"phases {self.index + 1}-{self.last_index + 1}" if self.last_index not in (None, self.index)
                 else f"phase {self.index + 1}")
        return (f"judged {which} of {self.count} (steps {self.first_step}-{self.last_step}, "
                f"{self.steps} of {self.total_steps} {self.unit}s): {self.reason}")

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "first_step": self.first_step, "last_step": self.last_step,
                "steps": self.steps, "total_steps": self.total_steps, "unit": self.unit, "reason": self.reason,
                "last_index": self.last_index, "note": self.note}


def choose_phase(frame: pd.DataFrame, phases: Sequence[Phase],
                 roles: Mapping[str, str | tuple[str, ...] | None] | None = None) -> JudgedPhase | None:
    """The sessions to judge (see the module doc): the last session, with the sessions of its training before it
    while it has under :data:`MIN_PHASE_STEPS` logged steps; when its whole training has fewer, the longest
    training. None when that is every session (the whole run is judged)."""
    if len(phases) < 2 or frame.empty:
        return None
    steps = np.unique(frame["step"].to_numpy())

    def logged(first: Phase, last: Phase) -> int:
        return int(((steps >= first.first_step) & (steps <= last.last_step)).sum())

    fresh = _fresh_sessions(frame, phases, roles)
    starts = [0] + [k for k, phase in enumerate(phases) if k and phase.index in fresh]
    end = len(phases) - 1
    begin = end
    while begin > starts[-1] and logged(phases[begin], phases[end]) < MIN_PHASE_STEPS:
        begin -= 1  # a short last session and the sessions it went on from: one training's end
    if logged(phases[begin], phases[end]) >= MIN_PHASE_STEPS:
        reason = "the last session" if begin == end else (
            f"the last {end - begin + 1} sessions of one training (the last alone has too few logged "
            f"{phases[end].unit}s; each went on from the loss the one before reached)")
    else:  # the last training is too short: the longest one
        count = logged(phases[begin], phases[end])
        bounds = list(zip(starts, [*starts[1:], len(phases)], strict=True))
        begin, stop = max(bounds, key=lambda b: (logged(phases[b[0]], phases[b[1] - 1]), b[0]))  # (ties: the later)
        end = stop - 1
        reason = (f"the longest {'training' if end > begin else 'session'} (the last has only {count} logged "
                  f"{phases[-1].unit}{'' if count == 1 else 's'})")
    if begin == 0 and end == len(phases) - 1:
        return None  # every session went on from the one before: one training, judged whole
    first, last = phases[begin], phases[end]
    return JudgedPhase(index=first.index, count=len(phases), first_step=first.first_step, last_step=last.last_step,
                       steps=logged(first, last), total_steps=len(steps), unit=first.unit, reason=reason,
                       last_index=last.index if end > begin else None)


@dataclass(frozen=True)
class RunDiagnosis:
    """Everything tanalyze concluded about one run, with the evidence; see the module doc for ``to_dict``."""

    run: str
    format: str | None
    roles: dict[str, str]
    verdict: Verdict
    overfitting: OverfittingResult | None
    divergence: Divergence | None
    spikes: tuple[Spike, ...]
    early_stopping: EarlyStoppingResult | None
    progress: ProgressResult | None
    gradients: GradientHealth | None
    throughput: ThroughputResult | None
    resources: ResourceHealth | None
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...]
    role_details: Roles | None = None
    loss_analysis: DivergenceResult | None = None
    #: the curves as analysed (role → curve: losses, learning rate, gradient norm, throughput), kept so that
    #: plot() and the Jupyter display draw without the logs; not part of to_dict()
    curves: dict[str, Curve] = field(default_factory=dict, repr=False, compare=False)
    #: the session judged when the run's log holds several (None: the whole run)
    phase: JudgedPhase | None = None
    #: how the run ended, from its console logs, W&B exit record and file times (None: not looked at)
    status: RunStatus | None = None
    #: what its restarts and sessions cost in wall time and steps redone (None: it has none)
    restarts: RestartCost | None = None
    #: the ranks of a distributed run compared (None: one rank, or no ``rank`` column)
    ranks: RankAnalysis | None = None
    #: how early the signals fired before a divergence, or the warning score of a run not (yet) diverged
    early_warning: EarlyWarningResult | None = None
    #: the checkpoints on disk against the best evaluation, and the top-k what-if (None: no checkpoint found)
    checkpoints: CheckpointResult | None = None
    #: the run's system metrics judged (None: it logged none)
    system: SystemHealth | None = None
    #: the share of each step spent communicating, from the framework's timers (None: no communication timer)
    communication: CommunicationResult | None = None
    #: what NCCL printed: transports, warnings, collective timeouts (None: no NCCL line in the console logs)
    nccl: NcclAnalysis | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (non-finite numbers as strings); the shape is in the module doc."""
        verdict = {
            "label": self.verdict.label,
            "confidence": self.verdict.confidence,
            "evidence": to_jsonable(self.verdict.evidence),
            "reasons": list(self.verdict.reasons),
            "also": list(self.verdict.also),
        }
        return {
            "run": self.run,
            "format": self.format,
            "roles": dict(self.roles),
            "verdict": verdict,
            "overfitting": to_jsonable(self.overfitting),
            "divergence": to_jsonable(self.divergence),
            "spikes": to_jsonable(self.spikes),
            "early_stopping": to_jsonable(self.early_stopping),
            "progress": to_jsonable(self.progress),
            "gradients": to_jsonable(self.gradients),
            "throughput": to_jsonable(self.throughput),
            "resources": to_jsonable(self.resources),
            "findings": [f.to_dict() for f in self.findings],
            "warnings": list(self.warnings),
            "role_details": self.role_details.to_dict() if self.role_details is not None else None,
            "phase": self.phase.to_dict() if self.phase is not None else None,
            "status": self.status.to_dict() if self.status is not None else None,
            "restarts": self.restarts.to_dict() if self.restarts is not None else None,
            "ranks": to_jsonable(self.ranks),
            "early_warning": self.early_warning.to_dict() if self.early_warning is not None else None,
            "checkpoints": to_jsonable(self.checkpoints),
            "system": to_jsonable(self.system),
            "communication": to_jsonable(self.communication),
            "nccl": to_jsonable(self.nccl),
        }

    def key_steps(self) -> dict[str, int]:
        """The steps a reader looks for first: divergence, overfitting onset, a worthwhile early stop, first spike."""
        steps: dict[str, int] = {}
        if self.divergence is not None:
            steps["diverged"] = self.divergence.step
            if self.divergence.onset_step != self.divergence.step:
                steps["blow-up onset"] = self.divergence.onset_step
        elif self.verdict.label == "diverged" and isinstance(self.verdict.evidence.get("divergence_step"), int):
            steps["diverged"] = self.verdict.evidence["divergence_step"]  # a collapse the verdict found
        if self.overfitting is not None and self.overfitting.onset_step is not None:
            steps["overfitting onset"] = self.overfitting.onset_step
        if self.early_stopping is not None and self.early_stopping.findings:  # only when stopping was worth it
            steps["early stop"] = self.early_stopping.stop_step
        if self.spikes:
            steps["first spike"] = self.spikes[0].onset_step
        return steps

    def summary_line(self) -> str:
        """One line: run, verdict, confidence, key steps, a straggler or stopped rank (run name made safe for a
        terminal)."""
        steps = ", ".join(f"{k} {v}" for k, v in self.key_steps().items())
        spikes = f", {len(self.spikes)} spike(s)" if self.spikes else ""
        ranks = ""
        if self.ranks is not None:
            if self.ranks.straggler is not None:
                ranks += f", straggler rank {self.ranks.straggler.rank}"
            ranks += "".join(f", rank {s.rank} stopped at step {s.last_step}" for s in self.ranks.stopped)
        return (f"{safe_text(self.run, 120)}: {self.verdict.label} ({self.verdict.confidence:.2f})"
                + (f" — {steps}" if steps else "") + spikes + ranks)

    def distributed_line(self) -> str | None:
        """The distributed side of the run in one line — ranks, the straggler and what the others wait for it,
        a stopped rank, the communication share, NCCL's transports and timeouts — or None for one process."""
        parts = []
        if self.ranks is not None and self.ranks.ranks:
            parts.append(f"{len(self.ranks.ranks)} ranks")
            s = self.ranks.straggler
            if s is not None:
                parts.append(f"straggler rank {s.rank} (the others wait {s.wait_share:.0%} of a step)")
            parts += [f"rank {r.rank} stopped at step {r.last_step:,} (others to {r.others_last_step:,})"
                      for r in self.ranks.stopped]
        if self.communication is not None:
            c = self.communication
            ranks = ", ".join(f"rank {r.rank} {r.median_share:.0%}" for r in c.per_rank)
            parts.append(f"communication {c.median_share:.0%} of a step" + (f" ({ranks})" if ranks else ""))
        if self.nccl is not None:
            kinds = ", ".join(f"{k} ×{v:,}" for k, v in self.nccl.transport_kinds.items())
            if kinds:
                parts.append(f"NCCL {kinds}")
            for t in self.nccl.scan.timeouts[:1]:
                who = f"rank {t.rank}" if t.rank is not None else "a rank"
                parts.append(f"NCCL timeout: {who} in {safe_text(t.op, 40)} (SeqNum {t.seq})")
        return "; ".join(parts) or None

    def __repr__(self) -> str:
        return f"<RunDiagnosis {self.summary_line()}>"

    def _repr_html_(self) -> str:
        """Jupyter: this run's section of the HTML report (figures from the kept curves, findings, evidence)."""
        return display_html(self)

    def plot(self, ax: Axes | None = None) -> Axes:
        """Draw the train/val loss with the divergence, overfitting onset, early stop and spikes marked.

        Uses what the diagnosis stored; nothing is recomputed. Returns the axes.
        """
        from tanalyze.plotting import axes, label

        ax = axes(ax)
        for role, color in (("train_loss", "#1f77b4"), ("val_loss", "#ff7f0e")):
            curve = self.curves.get(role)
            if curve is not None and len(curve):
                ax.plot(curve.steps, curve.values, color=color, linewidth=1.0, label=label(f"{role}: {curve.tag}"),
                        marker="o" if len(curve) <= 50 else None, markersize=3)
        losses = [c for role, c in self.curves.items() if role in ("train_loss", "val_loss") and len(c)]
        positive = all((c.values[np.isfinite(c.values)] > 0).all() for c in losses)
        if positive and losses:
            ax.set_yscale("log")
        if self.divergence is not None:
            ax.axvline(self.divergence.step, color="#d62728", label=f"diverged ({self.divergence.kind})")
            if self.divergence.onset_step != self.divergence.step:
                ax.axvline(self.divergence.onset_step, color="#d62728", linestyle=":", label="blow-up onset")
            ax.axvline(self.divergence.restart.resume_at_or_before_step, color="#2ca02c", linestyle=":",
                       label="resume at or before")
        if self.overfitting is not None and self.overfitting.onset_step is not None:
            ax.axvline(self.overfitting.onset_step, color="#9467bd", linestyle="--", label="overfitting onset")
        if self.early_stopping is not None and self.early_stopping.stop_step is not None:
            ax.axvline(self.early_stopping.stop_step, color="#7f7f7f", linestyle="-.", label="early stop")
        if self.spikes:
            ax.plot([s.peak_step for s in self.spikes], [s.peak_value for s in self.spikes], "v", color="#d62728",
                    markersize=6, linestyle="none", label=f"spikes ({len(self.spikes)})")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.set_title(label(f"{self.run}: {self.verdict.label} ({self.verdict.confidence:.2f})", 120))
        ax.legend(loc="best", fontsize="small")
        return ax


class Diagnoses(Mapping[str, RunDiagnosis]):
    """Run name → :class:`RunDiagnosis`, in the order the runs were loaded. ``not_read``: the files under the
    path that are in no run, and why (:class:`~tanalyze.discover.NotRead`): no verdict was given for them."""

    def __init__(self, items: Mapping[str, RunDiagnosis], not_read: Sequence[Any] = ()) -> None:
        self._items = dict(items)
        self.not_read = tuple(not_read)

    def __getitem__(self, name: str) -> RunDiagnosis:
        if name not in self._items:
            raise KeyError(f"no run {name!r}; runs: {', '.join(self._items)}")
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        lines = [f"<Diagnoses of {len(self)} run(s)>"]
        lines += [f"  {d.summary_line()}" for d in self._items.values()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter: the HTML report's summary of these runs; each run's own section too for a few runs."""
        return display_html(self)

    def to_dict(self) -> dict[str, Any]:
        """``{"runs": [RunDiagnosis.to_dict(), ...], "not_read": [{"path", "reason"}, ...]}`` in load order."""
        return {"runs": [d.to_dict() for d in self._items.values()], "not_read": [n.to_dict() for n in self.not_read]}

    def labels(self) -> dict[str, str]:
        """Run name → verdict label."""
        return {name: d.verdict.label for name, d in self._items.items()}


# --- the per-run pipeline ---------------------------------------------------------------------------------


def _metric_agreement(curves: Mapping[str, Curve], role_map: Any,
                      overfitting: OverfittingResult | None) -> MetricAgreement | None:
    """The first task metric evaluated with the validation loss that kept improving after the loss's overfitting
    onset (or the first one read, when none did); None without a detected overfitting or such a metric."""
    if overfitting is None or not overfitting.detected or overfitting.onset_step is None \
            or "val_loss" not in role_map:
        return None
    val_tag = role_map.tag("val_loss")
    read = [result for tag, higher in task_metric_tags(val_tag, curves)
            if (result := metric_against_overfitting(curves[tag], higher, overfitting.onset_step, val_tag)) is not None]
    return next((r for r in read if r.findings), read[0] if read else None)


def _curves_by_tag(frame: pd.DataFrame) -> dict[str, Curve]:
    """Every tag's curve, with one sort of the run's rows (no per-tag scans of the table)."""
    if frame.empty:
        return {}
    steps = frame["step"].to_numpy(dtype=np.int64)
    values = frame["value"].to_numpy(dtype=np.float64)
    wall = frame["wall_time"].to_numpy(dtype=np.float64)
    tag = frame["tag"]
    if isinstance(tag.dtype, pd.CategoricalDtype):
        codes, names = tag.cat.codes.to_numpy(), tag.cat.categories
    else:
        codes, names = pd.factorize(tag.to_numpy(), sort=False)
    order = np.lexsort((steps, codes))  # stable: equal steps keep write order
    codes, steps, values, wall = codes[order], steps[order], values[order], wall[order]
    bounds = np.flatnonzero(np.diff(codes)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(codes)]])
    return {str(names[codes[a]]): Curve(str(names[codes[a]]), steps[a:b], values[a:b], wall[a:b])
            for a, b in zip(starts, ends, strict=True)}


def _epoch_curve(frame: pd.DataFrame, curves: Mapping[str, Curve], roles: Roles, tag: str | None) -> Curve | None:
    if "epoch" in frame.columns and tag is not None:
        rows = frame[frame["tag"] == tag]
        epochs = rows["epoch"].to_numpy(dtype=np.float64, na_value=np.nan)
        if len(rows) and np.isfinite(epochs).all():
            return Curve.from_arrays(rows["step"].to_numpy(), epochs, "epoch")
    return role_curve(curves, roles, "epoch")


def epoch_starts(epoch: Curve | None) -> np.ndarray | None:
    """The first logged step of every epoch after the first (where the whole epoch number goes up): where an
    epoch's end-of-epoch work (validation, checkpoint, the loader's restart) shows as a pause."""
    if epoch is None or len(epoch) < 2:
        return None
    e = epoch.collapse_steps().finite_part()
    whole = np.floor(e.values + 1e-9)
    return e.steps[1:][np.diff(whole) > 0] if len(e) >= 2 else None


def _health(
    frame: pd.DataFrame,
    curves: Mapping[str, Curve],
    roles: Roles,
    histograms: pd.DataFrame | None,
    params: Mapping[str, Mapping[str, Any]],
    eval_steps: np.ndarray | None = None,
    epoch_steps: np.ndarray | None = None,
) -> tuple[GradientHealth | None, ThroughputResult | None, ResourceHealth | None]:
    """Gradient health, throughput and resources, from the roles that feed them (None when none exist)."""
    hist = histograms if histograms is not None and len(histograms) else None
    grad = role_curve(curves, roles, "grad_norm")
    scale = role_curve(curves, roles, "loss_scale")
    skipped = role_curve(curves, roles, "skipped_steps")
    gradients = None
    if grad is not None or scale is not None or skipped is not None or hist is not None:
        gradients = analyze_gradients(grad, histograms=hist, loss_scale=scale, skipped=skipped,
                                      loss=role_curve(curves, roles, "train_loss"), **params.get("gradients", {}))

    throughput = None
    options = dict(params.get("throughput", {}))
    if eval_steps is not None:
        options.setdefault("eval_steps", eval_steps)
    if epoch_steps is not None and len(epoch_steps):
        options.setdefault("epoch_steps", epoch_steps)
    tp = role_curve(curves, roles, "throughput")
    step_time = role_curve(curves, roles, "step_time")
    train = role_curve(curves, roles, "train_loss")
    if tp is not None and roles.throughput_kind in ("samples", "tokens"):
        throughput = analyze_throughput(tp, kind=f"{roles.throughput_kind}_per_s", **options)
    elif tp is not None:  # steps per second: turned into seconds per step
        with np.errstate(divide="ignore"):
            seconds = Curve(tp.tag, tp.steps, 1.0 / tp.values, tp.wall_time)
        throughput = analyze_throughput(seconds, kind="step_time_s", **options)
    elif step_time is not None:
        options.setdefault("interval_means", "elapsed" in tag_words(step_time.tag))
        throughput = analyze_throughput(step_time, kind=step_time_unit(step_time.tag, step_time), **options)
    elif (train is not None and np.isfinite(train.wall_time).sum() >= 3 and len(roles["train_loss"].components) == 1
          and "reward" not in roles and not roles.reinforcement):  # an RL run logs per episode, whose length is the policy's doing
        throughput = analyze_throughput(None, kind="wall_time", wall_time_curve=train, **options)

    resources = None
    memory = role_curve(curves, roles, "gpu_memory")
    attention_tags = []
    if "attention_entropy" in roles:
        attention_tags = [roles.tag("attention_entropy")] + [
            r.tag for r in roles.rejected.get("attention_entropy", ()) if r.tag in curves]
    attention = [curves[t] for t in attention_tags if t in curves]
    by_rank = None
    if step_time is not None and "rank" in frame.columns:
        rows = frame[frame["tag"] == step_time.tag]
        ranks = rows["rank"].dropna().unique()
        if len(ranks) > 1:
            by_rank = {int(r): Curve.from_frame(rows[rows["rank"] == r], step_time.tag) for r in ranks}
    if memory is not None or attention or by_rank:
        options = dict(params.get("resources", {}))
        if memory is not None:
            options.setdefault("memory_unit", memory_unit(memory.tag, memory))
        resources = analyze_resources(gpu_memory=memory, attention_entropy=attention,
                                      attention_histograms=hist, step_time_by_rank=by_rank, **options)
    return gradients, throughput, resources


def _rank_analysis(frame: pd.DataFrame, main: Curve | None, step_time: Curve | None,
                   params: Mapping[str, Mapping[str, Any]],
                   compute_by_rank: Mapping[int, Curve] | None = None) -> RankAnalysis | None:
    """The ranks of a run with a ``rank`` column compared on its main loss (and step-time tag, in seconds).

    When each rank logs framework timers with communication among them, the ranks' work is compared on
    ``compute_by_rank`` (step time less communication): in a synchronous job every rank's step time includes
    waiting for the slowest, so only the work before the wait tells the straggler.

    Without a loss, the tag with most points tells which rank stopped early or lags (not whether values agree).
    """
    if "rank" not in frame.columns:
        return None
    rows = frame[frame["rank"].notna() & (frame["rank"] >= 0)]
    if rows["rank"].nunique() < 2:
        return None
    tag = main.tag if main is not None else str(rows["tag"].value_counts().index[0])
    grouped = {int(r): group for r, group in rows.groupby("rank", observed=True)}
    by_rank = {r: Curve.from_frame(g, tag) for r, g in grouped.items()}
    by_rank = {r: c for r, c in by_rank.items() if len(c.steps)}
    step_times = None
    if compute_by_rank is not None and len(compute_by_rank) >= 2:
        step_times = dict(compute_by_rank)
    elif step_time is not None:
        scale = 1e-3 if step_time_unit(step_time.tag, step_time) == "step_time_ms" else 1.0
        step_times = {}
        for r, g in grouped.items():
            curve = Curve.from_frame(g, step_time.tag)
            if len(curve.steps):
                step_times[r] = Curve(curve.tag, curve.steps, curve.values * scale, curve.wall_time)
    if len(by_rank) < 2:
        return None
    options = {"check_disagreement": main is not None, **params.get("ranks", {})}
    return analyze_ranks(by_rank, step_time_by_rank=step_times, **options)


def _align_validation(
    val: Curve | None, train: Curve | None, epoch: Curve | None
) -> tuple[Curve | None, Curve | None, str | None]:
    """Validation keyed by epoch while training is keyed by iteration: move each evaluation to the last
    training step of its epoch when the epoch of every training step is known, else judge the validation
    curve without the training curve. Returns (val, train to compare it with, a note for the user)."""
    if val is None or train is None or len(val) < 2 or len(train) < 2:
        return val, train, None
    v_last, t_last = int(val.steps.max()), int(train.steps.max())
    if not (v_last > 0 and v_last * 20 < t_last and len(train) > 5 * len(val)):
        return val, train, None
    if epoch is not None and len(epoch):
        index = np.searchsorted(epoch.steps, train.steps, side="right") - 1
        ok = index >= 0
        whole = np.floor(epoch.values[np.clip(index, 0, None)] + 1e-9)
        if ok.all() and np.isfinite(whole).all() and whole.max() + 1 >= v_last and (np.diff(whole) >= 0).all():
            last_of = np.searchsorted(whole, val.steps, side="right") - 1
            if (last_of >= 0).all():
                moved = Curve(val.tag, train.steps[last_of], val.values, val.wall_time)
                note = (f"{val.tag} is keyed by epoch (steps up to {v_last}) while {train.tag} is keyed by "
                        f"iteration (up to {t_last}): each evaluation was placed at the last step of its epoch")
                return moved, train, note
    note = (f"{val.tag} seems keyed by epoch (steps up to {v_last}) while {train.tag} is keyed by iteration "
            f"(up to {t_last}): the validation curve is judged on its own, without the train-validation gap")
    return val, None, note


#: Gradient clipping a format's trainer applies unless told otherwise (the HF Trainer's max_grad_norm is 1.0).
DEFAULT_CLIP = {"hf_trainer_state": 1.0, "hf_console": 1.0}
#: Configuration keys that hold the gradient-clipping norm (HF Trainer, DeepSpeed, Lightning, nanoGPT, mmengine …).
CLIP_KEYS = ("max_grad_norm", "gradient_clipping", "gradient_clip_val", "grad_clip", "clip_grad_norm", "clip_grad",
             "max_norm", "clip_norm")


def clip_value(hparams: Mapping[str, Any], depth: int = 3) -> float | None:
    """The gradient-clipping norm named in a run's configuration (nested mappings searched a few levels deep),
    or None when absent, zero or not a positive number (no clipping)."""
    for key in CLIP_KEYS:
        value = hparams.get(key)
        if isinstance(value, Mapping):
            value = value.get("max_norm", value.get("value"))
        if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value) and value > 0:
            return float(value)
    if depth > 0:
        for value in hparams.values():
            if isinstance(value, Mapping):
                found = clip_value(value, depth - 1)
                if found is not None:
                    return found
    return None


def _nonfinite_from_start(curve: Curve) -> bool:
    """Whether a curve is NaN/Inf from its first point (and has at least one point)."""
    values = curve.collapse_steps().values
    return len(values) > 0 and not np.isfinite(values[0])


def _metric_finding(val: Curve) -> Finding:
    values = val.collapse_steps().values
    bad = int((~np.isfinite(values)).sum())
    first_finite = np.flatnonzero(np.isfinite(values))
    then = (f"; finite from step {int(val.collapse_steps().steps[first_finite[0]])}" if first_finite.size
            else ", never finite")
    return Finding("metric_nonfinite", Severity.WARNING,
                   f"{val.tag} is NaN/Inf from its first evaluation ({bad} of {len(values)} evaluations{then}) "
                   "while the training loss is finite: the validation data or the metric is broken, not the "
                   "training; overfitting and early stopping are not judged",
                   recommend("metric_nonfinite"), step=int(val.steps[0]))


def _adversarial_curves(curves: Mapping[str, Curve], roles: Roles) -> tuple[Curve, Curve] | None:
    """A GAN's (generator, discriminator) loss curves, each side summed over its parts; None for other runs."""
    if not roles.adversarial:
        return None
    sides = []
    for side in ("generator", "discriminator"):
        parts = [curves[t] for t in roles.adversarial[side] if t in curves]
        if not parts:
            return None
        sides.append(sum_curves(parts, " + ".join(roles.adversarial[side])))
    return sides[0], sides[1]


#: where a format's run keeps the optimizer steps it planned (its trainer's max_steps, LLaMA-Factory's total_steps)
_PLANNED_STEPS = {"hf_trainer_state": ("max_steps",), "hf_console": ("max_steps", "Total optimization steps"),
                  "llamafactory": ("total_steps",), "olmo": ("_planned_steps",), "megatron": ("train_iters",),
                  "modded_nanogpt": ("num_iterations",), "llmc": ("train_num_batches",),
                  "yolo_csv": ("epochs",)}  # (a YOLO results.csv's step is the epoch)
#: a run that logged its last point before this share of its planned steps is too short to call underfitting
_TOO_EARLY = 0.1


def _stopped_early(verdict: Verdict, hparams: Mapping[str, Any], format: str, last_step: int,
                   status: RunStatus | None) -> Verdict:
    """An underfitting verdict of a run that stopped before a tenth of the steps its trainer planned (killed or
    copied while it ran, in its warm-up or first epochs): too early to say the model cannot fit."""
    planned = next((hparams[key] for key in _PLANNED_STEPS.get(format, ()) if isinstance(hparams.get(key), int)
                    and hparams[key] > 0), None)
    if not isinstance(planned, int) or isinstance(planned, bool) or planned <= 0 or last_step >= _TOO_EARLY * planned:
        return verdict
    if status is not None and status.status == "finished":
        return verdict
    why = (f"the run's last logged step is {last_step:,} of the {planned:,} its trainer planned "
           f"({100 * last_step / planned:.1f}%): too early to judge whether it underfits")
    finding = Finding("insufficient_data", Severity.INFO, why[:1].upper() + why[1:], recommend("insufficient_data"),
                      step=last_step)
    return Verdict("insufficient_data", 1.0, {**verdict.evidence, "planned_steps": planned, "last_step": last_step},
                   (why, *verdict.reasons[1:]),
                   findings=tuple(f for f in verdict.findings if f.code != "underfitting") + (finding,))


#: formats whose points are a reinforcement-learning run's episodes (no loss to look for)
_EPISODE_FORMATS = frozenset({"sb3_monitor"})


def _no_episodes(verdict: Verdict) -> Verdict:
    """The verdict of an episode log with no episode in it (a Monitor file of its header lines only): it says that,
    not that no loss was found (an episode log has none)."""
    why = "no episode was recorded (the episode log holds its header only): the policy cannot be judged"
    return replace(verdict, reasons=(why,),
                   findings=tuple(Finding("insufficient_data", Severity.INFO, why[:1].upper() + why[1:],
                                          recommend("insufficient_data")) if f.code == "insufficient_data" else f
                                  for f in verdict.findings))


def _policy_nonfinite(verdict: Verdict, tags: tuple[str, ...], curves: Mapping[str, Curve]) -> Verdict:
    """The diverged verdict of a preference-optimisation run whose policy outputs (``tags``) are NaN/Inf at every
    logged point: whatever its loss (TRL logs 0.0 beside them, or billions), the model gives no numbers."""
    first = min(int(curves[tag].steps[0]) for tag in tags)
    shown = ", ".join(tags[:4]) + (f" and {len(tags) - 4} more" if len(tags) > 4 else "")
    why = (f"the policy's outputs are NaN/Inf at every logged point from step {first} ({shown}): its forward pass "
           "gives no numbers, whatever its loss says")
    finding = Finding("diverged_nonfinite", Severity.ERROR, why[:1].upper() + why[1:], recommend("diverged_nonfinite"),
                      step=first)
    return Verdict("diverged", 0.9, {**verdict.evidence, "nonfinite_outputs": list(tags)}, (why, *verdict.reasons),
                   findings=tuple(f for f in verdict.findings if f.code != "insufficient_data") + (finding,))


def _ended_before_metrics(verdict: Verdict, status: RunStatus) -> Verdict:
    """The verdict of a run with no point whose job failed: it says the job ended before logging, and how."""
    why = f"the job ended ({status.status}: {status.reason}) before it logged any metric"
    ended = Finding("ended_before_metrics", Severity.ERROR, why[:1].upper() + why[1:], recommend("ended_before_metrics"))
    return replace(verdict, reasons=(why,),
                   findings=tuple(ended if f.code == "insufficient_data" else f for f in verdict.findings))


def _language_model(format: str | None, hparams: Mapping[str, Any] | None, text: Mapping[str, str] | None
                    ) -> LanguageModelStart | None:
    """The language model a run's configuration names, else the one a language model's log format implies, of a
    vocabulary of at least :data:`LEAST_VOCABULARY` tokens (a loss that starts far below its ln started trained)."""
    found = language_model_start(hparams or {}, text)
    if found is None and format in LANGUAGE_MODEL_FORMATS:
        return LanguageModelStart(f"a language model's loss per token (a {format} log; its vocabulary not given, "
                                  f"{LEAST_VOCABULARY:,} tokens or more)", LEAST_VOCABULARY)
    return found


def _metrics_unread(verdict: Verdict, status: RunStatus) -> Verdict:
    """The verdict of a run with no point whose job failed but whose console holds lines no reader could read as
    metrics: it did log, in a format tanalyze does not know."""
    why = (f"no metric could be read: the console has lines that look like metrics in a format tanalyze does not "
           f"read (see the read warnings); the job ended ({status.status}: {status.reason})")
    unread = Finding("metrics_unread", Severity.WARNING, why[:1].upper() + why[1:], recommend("metrics_unread"))
    return replace(verdict, reasons=(why,),
                   findings=tuple(unread if f.code == "insufficient_data" else f for f in verdict.findings))


def diagnose_run(
    frame: pd.DataFrame,
    *,
    run: str | None = None,
    format: str | None = None,
    roles: Mapping[str, str | tuple[str, ...] | None] | None = None,
    histograms: pd.DataFrame | None = None,
    read_warnings: tuple[str, ...] = (),
    num_classes: int | None = None,
    thresholds: Thresholds | None = None,
    hparams: Mapping[str, Any] | None = None,
    phases: Sequence[Phase] = (),
    status: RunStatus | None = None,
    restarts: Sequence[Restart] = (),
    checkpoints: CheckpointScan | None = None,
    nccl: NcclScan | None = None,
    text: Mapping[str, str] | None = None,
    **params: Mapping[str, Any],
) -> RunDiagnosis:
    """Diagnose one run from its tidy table (rows of one run; every point is used, or those of one session).

    Args:
        frame: tidy scalar rows of one run (``run, tag, step, value, wall_time``; ``epoch``/``rank`` used when present).
        run: the run's name (default: the frame's ``run`` value).
        format: the reader that read it (shown in the result).
        roles: role overrides, e.g. ``{"val_loss": "my/val"}``.
        histograms: the run's histogram rows (gradient and attention histograms).
        read_warnings: warnings from reading the run, carried into the result.
        num_classes: number of classes, enabling the chance-level check ``ln(num_classes)``.
        thresholds: the verdict's thresholds.
        hparams: the run's configuration as read; its gradient-clipping value (``max_grad_norm``,
            ``gradient_clipping``, ``gradient_clip_val``, ``grad_clip`` …) is the gradient analyzer's ``max_norm``
            unless ``gradients={"max_norm": …}`` says otherwise.
        phases: the run's sessions (``RunInfo.phases``); with several, one is judged (see the module doc).
        status: how the run ended (``RunInfo.status``), carried into the result as it is.
        restarts: the run's resumes (``RunInfo.restarts``); with ``phases``, what they cost in time and steps.
        checkpoints: the checkpoints it saved (``RunInfo.checkpoints``), judged against the best evaluation of the
            monitored metric (``checkpoints={"top_k": 3}`` sets the what-if's ``k``).
        nccl: what NCCL printed in the run's console logs (``RunInfo.nccl``): transports, warnings, timeouts.
        text: the texts the run logged (``RunInfo.text``; a Hugging Face run's ``model_config`` and ``args``):
            with ``hparams``, what tells a fine-tune of a trained language model (see
            :mod:`tanalyze.analysis.pretrained`).
        **params: per-analyzer parameters by name: ``divergence``, ``overfitting``,
            ``early_stopping``, ``progress``, ``gradients``, ``throughput``, ``resources``, ``early_warning``,
            ``checkpoints``, ``communication``
            (each a dict of that analyzer's keyword arguments).

    Raises:
        ConfigError: an unknown role or analyzer name.
        ValueError: the table holds several runs (use :func:`diagnose`).
    """
    unknown = sorted(set(params) - set(ANALYZER_PARAMS))
    if unknown:
        raise ConfigError(f"unknown analyzer parameter group(s) {unknown}; known: {', '.join(ANALYZER_PARAMS)}")
    if "run" in frame.columns and len(frame):
        names = pd.unique(frame["run"].to_numpy())
        if len(names) > 1:
            shown = ", ".join(safe_text(n, 60) for n in names[:5])
            raise ValueError(f"diagnose_run() takes the rows of one run; this table holds {len(names)}: {shown}")
        if run is None:
            run = str(names[0])
    run = run or ""
    restart_cost = _restart_cost(frame, restarts, phases, roles)
    judged = choose_phase(frame, phases, roles)
    if judged is not None:  # the curves (and histograms) of that session only
        steps = frame["step"].to_numpy()
        keep = (steps >= judged.first_step) & (steps <= judged.last_step)
        # system metrics sampled on a clock: their step is seconds since the start, not a training step
        clocked = [t for t in pd.unique(frame["tag"]) if (k := resource_kind(str(t))) is not None and k.clock == "wall"]
        if clocked:
            keep |= frame["tag"].isin(clocked).to_numpy()
        frame = frame[keep]
        if histograms is not None and len(histograms):
            hist_steps = histograms["step"].to_numpy()
            histograms = histograms[(hist_steps >= judged.first_step) & (hist_steps <= judged.last_step)]
    curves = _curves_by_tag(frame)
    role_map = resolve_roles({tag: int(np.isfinite(c.values).sum()) for tag, c in curves.items()}, roles)
    warnings = ([judged.note] if judged is not None else []) + list(read_warnings) + list(role_map.warnings)
    train = role_curve(curves, role_map, "train_loss")
    val = role_curve(curves, role_map, "val_loss")
    lr = role_curve(curves, role_map, "learning_rate")
    grad = role_curve(curves, role_map, "grad_norm")
    # reinforcement learning: the reward decides the verdict, the losses (policy, critic, KL) only by NaN/Inf
    reward = role_curve(curves, role_map, "reward")
    if reward is not None and (train is not None or val is not None) \
            and len(reward.collapse_steps().finite_part()) < _REWARD_CURVE_POINTS:
        # a reward evaluated once or twice (a score printed after training) is no curve to judge the run by
        warnings.append(f"{reward.tag} has only {len(reward.collapse_steps().finite_part())} point(s): "
                        + ("too few to judge the policy by" if role_map.reinforcement
                           else "the run is judged by its loss, not as reinforcement learning"))
        reward = None
    # a run whose tags only RL logs (approx_kl, LossBefore …) is one though it logged no reward: no loss judges it
    reinforcement = reward is not None or bool(role_map.reinforcement)
    entropy = role_curve(curves, role_map, "policy_entropy") if reward is not None else None
    if train is None and not reinforcement:
        warnings.append("no training loss found among the tags" + (f" ({len(curves)} tag(s))" if curves else ""))
    if val is None and not reinforcement:
        warnings.append("no validation loss: overfitting and early stopping cannot be judged")
    elif train is not None and not role_map.losses_comparable:
        warnings.append(f"{train.tag} and {val.tag} measure different quantities: their gap is not judged")
    for curve in (train, val):
        if curve is not None and curve.duplicate_steps:
            warnings.append(f"{curve.tag}: {curve.duplicate_steps} point(s) share a step with another; "
                            "points of one step are averaged")

    epoch = _epoch_curve(frame, curves, role_map, role_map.tag("train_loss") if train is not None else None)
    val, val_train, note = _align_validation(val, train, epoch)
    if note:
        warnings.append(note)
    main = judged_loss(train, val, thresholds or Thresholds())
    loss_analysis = analyze_divergence(main, grad_norm=grad, learning_rate=lr, **params.get("divergence", {}))
    # The validation loss has spikes of its own (a bad evaluation batch, BatchNorm statistics, an LR jump).
    val_analysis = None
    metric_findings: list[Finding] = []
    if val is not None and main is not val and _nonfinite_from_start(val):
        # NaN/Inf from the first evaluation while training is finite: the metric or the validation data is
        # broken (a NaN record, an empty split, a division by zero); no learning rate makes it finite. When the
        # training loss is non-finite from its start too, the model is: the divergence finding says so.
        if not _nonfinite_from_start(main):
            metric_findings.append(_metric_finding(val))
        val = None
    elif val is not None and main is not val:
        val_analysis = analyze_divergence(val, learning_rate=lr, **params.get("divergence", {}))
    # Only transient validation spikes: a lasting rise of the validation loss is overfitting's business.
    val_spikes = tuple(sp for sp in val_analysis.spikes if sp.end_step is not None) if val_analysis else ()
    spikes = loss_analysis.spikes + val_spikes if not reinforcement else ()  # (an RL loss's bumps are no spikes)
    divergence = loss_analysis.divergence
    if reinforcement and divergence is not None and divergence.kind not in ("nan", "inf"):
        divergence = None  # an RL loss's level means nothing: only NaN/Inf in it is a divergence
    if divergence is None and val_analysis is not None and val_analysis.divergence is not None \
            and val_analysis.divergence.kind != "explosion":
        divergence = val_analysis.divergence
    overfitting = None
    if val is not None and train is not None:
        overfitting = analyze_overfitting(val, val_train, losses_comparable=role_map.losses_comparable,
                                          **params.get("overfitting", {}))
    adversarial = _adversarial_curves(curves, role_map)
    components = None
    if train is not None and adversarial is None and "train_loss" in role_map:
        parts = {t: curves[t] for t in role_map["train_loss"].components if t in curves}
        components = parts if len(parts) >= 2 else None
    epoch_train = role_curve(curves, role_map, "train_loss_epoch") if train is not None else None
    if reward is not None:
        verdict = classify_reinforcement(reward, entropy=entropy, loss=main, loss_divergence=loss_analysis)
    elif reinforcement:
        verdict = classify_without_reward(role_map.reinforcement, loss=main, loss_divergence=loss_analysis)
    else:
        verdict = classify_run(train, val, divergence=loss_analysis, overfitting=overfitting, learning_rate=lr,
                               num_classes=num_classes, thresholds=thresholds or Thresholds(),
                               adversarial=adversarial, components=components,
                               epoch_train=epoch_train, language_model=_language_model(format, hparams, text),
                               classifier=format not in SUMMED_LOSS_FORMATS | LANGUAGE_MODEL_FORMATS,
                               preference=preference_progress(curves))
    if verdict.label != "diverged" and reward is None and not reinforcement:
        broken = nonfinite_policy_outputs(curves)
        if broken:
            verdict = _policy_nonfinite(verdict, broken, curves)
    if not len(frame) and format in _EPISODE_FORMATS:
        verdict = _no_episodes(verdict)
    if not len(frame) and status is not None and status.failed:
        verdict = (_metrics_unread(verdict, status) if says_metrics_unread(read_warnings)
                   else _ended_before_metrics(verdict, status))
    if verdict.label == "underfitting" and len(frame):
        verdict = _stopped_early(verdict, hparams or {}, format or "", int(frame["step"].max()), status)
    stopping = {"headline": _STOPPING_RULE.get(format or "", "lightning_patience"), **params.get("early_stopping", {})}
    watched, watched_mode = _stopping_metric(checkpoints, curves, role_map, val)
    early = (simulate_early_stopping(watched, val_train, **{"mode": watched_mode, **stopping}) if watched is not None
             else None)
    progress = (analyze_progress(main, epochs=epoch, **params.get("progress", {}))
                if main is not None and not reinforcement else None)
    eval_steps = val.steps if val is not None and val is not train else None
    clip = clip_value(hparams) if hparams else None
    assumed = clip is None and (format or "") in DEFAULT_CLIP
    if clip is None:
        clip = DEFAULT_CLIP.get(format or "")
    if clip is not None and "max_norm" not in params.get("gradients", {}):
        params = {**params, "gradients": {**params.get("gradients", {}), "max_norm": clip, "max_norm_assumed": assumed}}
    gradients, throughput, resources = _health(frame, curves, role_map, histograms, params, eval_steps,
                                               epoch_starts(epoch))

    communication, compute = _communication(frame, curves, role_curve(curves, role_map, "step_time"),
                                            params.get("communication", {}))
    ranks = _rank_analysis(frame, main, role_curve(curves, role_map, "step_time"), params, compute)
    if ranks is not None and ranks.straggler is not None and resources is not None:  # one straggler finding
        resources = replace(resources, findings=tuple(f for f in resources.findings if f.code != "straggler_rank"))

    system = _system(curves, role_map, train, val, params.get("system", {}))
    memory_tag = role_map.tag("gpu_memory")
    if system is not None and resources is not None and memory_tag is not None and resource_kind(memory_tag):
        # the system analysis judges system memory against capacity (per device, with times): one finding
        resources = replace(resources, findings=tuple(f for f in resources.findings
                                                      if f.code != "memory_near_capacity"))

    loss_findings = list(loss_analysis.findings)
    if adversarial is not None:  # a GAN's losses swing by design: their spikes are information
        loss_findings = [replace(f, severity=Severity.INFO) if f.code == "loss_spike" else f for f in loss_findings]
    elif reinforcement:  # an RL loss's level and swings mean nothing; only NaN/Inf does
        loss_findings = [f for f in loss_findings if f.code in _NONFINITE_CODES]
    if not reinforcement:
        zero = zero_metrics(curves, train)
        metric_findings += zero
        if zero and verdict.label == "overfitting":  # judged by a validation that may not measure the model
            verdict = replace(verdict, confidence=min(verdict.confidence, 0.5), reasons=(
                *verdict.reasons, "the evaluation scores no hit at all (metric_zero): the validation loss it rests on "
                "may not measure the model"))
    findings: list[Finding] = loss_findings + list(verdict.findings) + metric_findings
    if val_analysis is not None:  # its spikes and non-finite values; a val "explosion" is judged as overfitting
        findings += [f for f in val_analysis.findings
                     if f.code in _NONFINITE_CODES
                     or (f.code == "loss_spike" and f.step in {sp.onset_step for sp in val_spikes})]
    if overfitting is not None:
        findings += overfitting.findings
    agreement = _metric_agreement(curves, role_map, overfitting)
    if agreement is not None and agreement.findings:
        findings += agreement.findings
        if verdict.label == "overfitting":
            verdict = replace(verdict, reasons=(*verdict.reasons, agreement.findings[0].message))
    finished = status is not None and status.status == "finished"
    warning = None if reinforcement else _early_warning(
        main, loss_analysis, divergence, curves, role_map, grad, lr,
        {"finished": finished, **params.get("early_warning", {})},
        verdict.evidence.get("onset_step") if verdict.label == "diverged" else None)
    saved = _checkpoints(checkpoints, curves, role_map, frame, params.get("checkpoints", {}))
    nccl_result = analyze_nccl(nccl) if nccl is not None else None
    lr_check = check_learning_rate(lr) if lr is not None and not reinforcement else None
    for result in (early, progress, gradients, throughput, resources, restart_cost, ranks, warning, saved, system,
                   communication, nccl_result, lr_check):
        if result is not None:
            findings += result.findings
    findings.sort(key=lambda f: (_SEVERITY_RANK[Severity(f.severity)], f.step if f.step is not None else -1))
    shown = (("train_loss", train), ("train_loss_epoch", epoch_train), ("val_loss", val), ("learning_rate", lr),
             ("grad_norm", grad),
             ("throughput", role_curve(curves, role_map, "throughput")), ("step_time", role_curve(curves, role_map, "step_time")),
             ("reward", reward), ("policy_entropy", entropy))
    kept = {role: curve for role, curve in shown if curve is not None}
    return RunDiagnosis(
        run=run,
        format=format,
        roles=role_map.tags(),
        verdict=verdict,
        overfitting=overfitting if overfitting is not None and overfitting.detected else None,
        divergence=divergence,
        spikes=tuple(sorted(spikes, key=lambda sp: sp.onset_step)),
        early_stopping=early,
        progress=progress,
        gradients=gradients,
        throughput=throughput,
        resources=resources,
        findings=tuple(findings),
        warnings=tuple(warnings),
        ranks=ranks,
        role_details=role_map,
        loss_analysis=loss_analysis,
        curves=kept,
        phase=judged,
        status=status,
        restarts=restart_cost,
        early_warning=warning,
        checkpoints=saved,
        system=system,
        communication=communication,
        nccl=nccl_result,
    )


def _stopping_metric(scan: CheckpointScan | None, curves: Mapping[str, Curve], role_map: Roles,
                     val: Curve | None) -> tuple[Curve | None, str]:
    """The curve early stopping is replayed on, and its direction: the metric the trainer chose its best model by
    (``metric_for_best_model``, the trainer state's ``best_metric``, a ``ModelCheckpoint`` monitor) when it has
    one, else the validation loss."""
    if scan is None or scan.empty:
        return val, "min"
    val_tag = role_map.tag("val_loss") if "val_loss" in role_map else None
    tag, mode, _ = monitored_metric(curves, scan, val_tag)
    if tag is None or tag == val_tag or tag not in curves:
        return val, "min"
    return curves[tag], mode


def _checkpoints(scan: CheckpointScan | None, curves: Mapping[str, Curve], role_map: Roles, frame: pd.DataFrame,
                 options: Mapping[str, Any]) -> CheckpointResult | None:
    """The checkpoints on disk judged on the monitored metric (see :mod:`tanalyze.analysis.checkpoints`)."""
    if scan is None or scan.empty:
        return None
    val_tag = role_map.tag("val_loss") if "val_loss" in role_map else None
    tag, mode, why = monitored_metric(curves, scan, val_tag)
    final = int(frame["step"].max()) if len(frame) else None
    return analyze_checkpoints(scan, curves.get(tag) if tag else None, mode=mode, final_step=final,
                               metric_source=why, **options)


def _system(curves: Mapping[str, Curve], roles: Roles, train: Curve | None, val: Curve | None,
            options: Mapping[str, Any]) -> SystemHealth | None:
    """The run's system metrics (one tag per kind, device and unit: the preferred, then the longest) judged."""
    chosen: dict[tuple[str, str, str], tuple[tuple[int, int], SystemSeries]] = {}
    for tag, curve in curves.items():
        kind = resource_kind(tag)
        if kind is None:
            continue
        points = int(np.isfinite(curve.values).sum())
        if points == 0:
            continue
        key, order = (kind.kind, kind.device, kind.unit), (kind.rank, -points)
        if key not in chosen or order < chosen[key][0]:
            chosen[key] = (order, SystemSeries(kind.kind, kind.device, kind.unit, kind.clock, curve))
    if not chosen:
        return None
    series = [s for _, s in sorted(chosen.values(), key=lambda item: (item[1].kind, item[1].device, item[0]))]
    # the training curve with the most wall times places wall-clock samples at steps
    timed = [c for t, c in curves.items() if resource_kind(t) is None and not t.startswith(("system/", "system."))]
    clock = train if train is not None and np.isfinite(train.wall_time).sum() >= 2 else None
    if clock is None and timed:
        best = max(timed, key=lambda c: int(np.isfinite(c.wall_time).sum()))
        clock = best if np.isfinite(best.wall_time).sum() >= 2 else None
    speed, higher = role_curve(curves, roles, "throughput"), True
    if speed is None:
        speed, higher = role_curve(curves, roles, "step_time"), False
    options = dict(options)
    if val is not None and val is not train:
        options.setdefault("eval_steps", val.steps)
    return analyze_system(series, step_clock=clock, speed=speed, speed_higher_is_better=higher, **options)


def _early_warning(main: Curve | None, loss_analysis: DivergenceResult, divergence: Divergence | None,
                   curves: Mapping[str, Curve], role_map: Roles, grad: Curve | None,
                   lr: Curve | None, options: Mapping[str, Any], verdict_onset: int | None = None
                   ) -> EarlyWarningResult | None:
    """Precursors of the main loss's divergence (or of the collapse the verdict found, at ``verdict_onset``), or the
    warning score of a run that has not diverged."""
    if main is None:
        return None
    if divergence is not None and divergence is not loss_analysis.divergence:
        return None  # diverged on the validation loss: the training curves' lead is not about that onset
    onset = divergence.onset_step if divergence is not None else verdict_onset
    return analyze_early_warning(main, onset_step=onset, grad_norm=grad, learning_rate=lr,
                                 loss_scale=role_curve(curves, role_map, "loss_scale"),
                                 spike_steps=tuple(sp.onset_step for sp in loss_analysis.spikes), **options)


def _per_iteration_ms(curve: Curve | None) -> Curve | None:
    """A step-time curve in milliseconds per iteration (None for another kind of step time)."""
    if curve is None:
        return None
    unit = step_time_unit(curve.tag, curve)
    if unit == "step_time_ms":
        return curve
    if unit == "step_time_s":
        return Curve(curve.tag, curve.steps, curve.values * 1000.0, curve.wall_time)
    return None


def _communication(frame: pd.DataFrame, curves: Mapping[str, Curve], step_time: Curve | None,
                   options: Mapping[str, Any]) -> tuple[CommunicationResult | None, dict[int, Curve] | None]:
    """The communication share from the run's framework timers (see :func:`timer_curves`), per rank when the
    run has a ``rank`` column with timers on several ranks; and then each rank's compute time (step time less
    communication, seconds) for the rank analysis."""
    timers = timer_curves(curves)
    if not timers:
        return None, None
    by_rank = steps_by_rank = None
    if "rank" in frame.columns:
        rows = frame[frame["rank"].notna() & (frame["rank"] >= 0)]
        if rows["rank"].nunique() >= 2:
            by_rank, steps_by_rank = {}, {}
            # only the timer tags and the step time are needed of each rank
            wanted = {t for t in curves if t.startswith("time (ms)/") or t.endswith("-time")}
            if step_time is not None:
                wanted.add(step_time.tag)
            rows = rows[rows["tag"].isin(wanted)]
            for rank, group in rows.groupby("rank", observed=True):
                mine = {str(tag): Curve.from_frame(group, str(tag)) for tag in pd.unique(group["tag"])}
                by_rank[int(rank)] = timer_curves(mine)
                own = _per_iteration_ms(mine.get(step_time.tag)) if step_time is not None else None
                if own is not None:
                    steps_by_rank[int(rank)] = own
            by_rank = {r: t for r, t in by_rank.items() if t}
    result = analyze_communication(timers, step_time=_per_iteration_ms(step_time), timers_by_rank=by_rank,
                                   step_time_by_rank=steps_by_rank, **options)
    compute = compute_time_by_rank(by_rank, steps_by_rank) if result is not None and by_rank else None
    return result, compute


def _restart_cost(frame: pd.DataFrame, restarts: Sequence[Restart], phases: Sequence[Phase],
                  roles: Mapping[str, str | tuple[str, ...] | None] | None = None) -> RestartCost | None:
    """What the run's resumes cost, from all its points (every session, before one is chosen to judge)."""
    boundaries = [Boundary(r.step, "restart", r.until, r.detail) for r in restarts]
    later = [p for p in phases if p.index > 0]
    fresh = _fresh_sessions(frame, phases, roles) if later else set()
    boundaries += [Boundary(p.first_step, "fresh" if p.index in fresh else "session", None, p.detail) for p in later]
    if not boundaries or not len(frame):
        return None
    return analyze_restarts(frame["step"].to_numpy(), frame["wall_time"].to_numpy(dtype=np.float64), boundaries)


def _fresh_sessions(frame: pd.DataFrame, phases: Sequence[Phase],
                    roles: Mapping[str, str | tuple[str, ...] | None] | None) -> set[int]:
    """The sessions (their ``index``) that started over from scratch: their steps begin again where the log's
    first session began, and the training loss at their start has gone back most of the way (80%) from where
    the session before ended to where the log, or that session, began (the higher). A Keras ``fit()`` called again also starts its epochs
    over, but goes on from the loss it had reached: a session, not a new start."""
    curves = _curves_by_tag(frame)
    role_map = resolve_roles({tag: int(np.isfinite(c.values).sum()) for tag, c in curves.items()}, roles)
    train = role_curve(curves, role_map, "train_loss")
    if train is None:
        return set()
    loss = train.collapse_steps().finite_part()
    if len(loss) < 2:
        return set()
    begins = phases[0].first_step - phases[0].offset
    out = set()
    for previous, phase in zip(phases[:-1], phases[1:], strict=True):
        after = np.flatnonzero(loss.steps >= phase.first_step)
        before = np.flatnonzero(loss.steps < phase.first_step)
        if phase.first_step - phase.offset > begins or not after.size or not before.size:
            continue
        # (from where the log, or the session before, began: a log whose first session started low, or was a
        # short false start, is no yardstick for the one before this)
        began = np.flatnonzero(loss.steps >= previous.first_step)
        first = max(float(loss.values[0]), float(loss.values[began[0]]) if began.size else -np.inf)
        ended, start = float(loss.values[before[-1]]), float(loss.values[after[0]])
        if first > ended and start >= ended + 0.8 * (first - ended):
            out.add(phase.index)
    return out


def diagnose(
    logs: Logs | str | os.PathLike[str],
    *,
    roles: Mapping[str, str | tuple[str, ...] | None] | None = None,
    num_classes: int | None = None,
    thresholds: Thresholds | None = None,
    **params: Mapping[str, Any],
) -> Diagnoses:
    """Diagnose every run of ``logs`` — a :class:`Logs`, or a path read with :func:`tanalyze.load`, as
    :func:`tanalyze.check` takes one (see :func:`diagnose_run` for the arguments)."""
    if not isinstance(logs, Logs):
        from tanalyze.logs import load

        logs = load(logs)
    groups: dict[str, pd.DataFrame] = {}
    if len(logs.scalars):
        for name, rows in logs.scalars.groupby("run", observed=True, sort=False):
            groups[str(name)] = rows
    hist_groups: dict[str, pd.DataFrame] = {}
    if len(logs.histograms):
        for name, rows in logs.histograms.groupby("run", observed=True, sort=False):
            hist_groups[str(name)] = rows
    out: dict[str, RunDiagnosis] = {}
    empty = logs.scalars.iloc[0:0]
    for name, info in logs.runs.items():
        out[name] = diagnose_info(groups.get(name, empty), info, histograms=hist_groups.get(name), roles=roles,
                                  num_classes=num_classes, thresholds=thresholds, **params)
    return Diagnoses(compare_with_siblings(out), not_read=logs.not_read)


def diagnose_info(frame: pd.DataFrame, info: RunInfo, *, histograms: pd.DataFrame | None = None,
                  **options: Any) -> RunDiagnosis:
    """:func:`diagnose_run` of one run as read: its rows, and all its reader found besides them (``info``:
    name, format, warnings, config, texts, sessions, status, resumes, checkpoints, NCCL lines).
    ``options`` are :func:`diagnose_run`'s own (``roles``, ``num_classes``, ``thresholds``, analyzer parameters)."""
    return diagnose_run(frame, run=info.name, format=info.format, histograms=histograms,
                        read_warnings=tuple(str(w) for w in info.warnings), hparams=info.hparams, text=info.text,
                        phases=info.phases, status=info.status, restarts=info.restarts,
                        checkpoints=info.checkpoints, nccl=info.nccl, **options)


def compare_with_siblings(diagnoses: Mapping[str, RunDiagnosis]) -> dict[str, RunDiagnosis]:
    """The diagnoses, with every run whose loss ended orders of magnitude above its siblings' (same folder,
    same training-loss tag; see :mod:`tanalyze.analysis.siblings`) judged underfitting: a cross-run
    judgement that a run alone cannot make. Other runs are returned as they are."""
    summaries = [
        SiblingSummary(name, folder_of(name), d.roles.get("train_loss"), d.verdict.evidence.get("end_level"),
                       d.verdict.label, kind=f"{d.format}|{sorted(d.roles.items())}",
                       start_level=d.verdict.evidence.get("start_level"))
        for name, d in diagnoses.items() if d.verdict.evidence.get("main_role") == "train"
    ]
    out = dict(diagnoses)
    for stuck in compare_siblings(summaries):
        d = out[stuck.run]
        v = d.verdict
        reason = stuck.reason()
        finding = Finding("underfitting", Severity.WARNING, reason, recommend("underfitting"),
                          evidence={"siblings": list(stuck.siblings), "ratio": stuck.ratio})
        evidence = {**v.evidence, "siblings": stuck.to_dict()}
        if v.label == "normal":
            confidence = round(float(np.clip(1 - 0.5 * 10 / stuck.ratio, 0.5, 0.95)), 3)
            verdict = replace(v, label="underfitting", confidence=confidence, evidence=evidence,
                              reasons=(reason, *v.reasons[1:]), findings=(finding,))
        elif v.label == "underfitting":
            verdict = replace(v, evidence=evidence, reasons=(*v.reasons, reason))
        else:
            verdict = replace(v, evidence=evidence, also=(*v.also, "underfitting"), reasons=(*v.reasons, reason))
        findings = tuple(f for f in d.findings if not (f.code == "underfitting" and v.label == "normal")) + (finding,)
        out[stuck.run] = replace(d, verdict=verdict, findings=findings if v.label != "underfitting" else d.findings)
    return out
