"""``tanalyze check``: rules that turn diagnoses (and a baseline) into pass / warn / fail / skip.

Measurement and judgement stay apart: analyzers measure (see :mod:`tanalyze.analysis`),
the rules here compare those measurements with thresholds from a :class:`CheckPolicy`.
Every rule returns a :class:`RuleResult` with the measured value, the threshold
and the reason, so a failing CI job says exactly why.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tanalyze._display import html as display_html
from tanalyze._version import __version__
from tanalyze.analysis.results import to_jsonable
from tanalyze.baseline import Baseline, RunSummary
from tanalyze.errors import ConfigError
from tanalyze.runstatus import FAILED_STATUSES
from tanalyze.text import safe_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Status", "RuleResult", "CheckReport", "CheckPolicy", "RULES", "run_checks"]

CHECK_SCHEMA = "tanalyze.check/1"


class Status(enum.StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True)
class RuleResult:
    """The outcome of one rule on one candidate run."""

    name: str
    status: Status
    message: str
    run: str | None = None
    value: Any = None
    threshold: Any = None
    p_value: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "run": self.run,
            "status": self.status.value,
            "value": to_jsonable(self.value),
            "threshold": to_jsonable(self.threshold),
            "p_value": to_jsonable(self.p_value),
            "message": self.message,
            "details": to_jsonable(dict(self.details)),
        }


_STATUS_RANK = {Status.FAIL: 0, Status.WARN: 1, Status.PASS: 2, Status.SKIP: 3}


@dataclass(frozen=True)
class CheckReport:
    """All rule results of one ``check``; ``passed`` is False when any rule failed.

    ``runs`` and ``baseline_runs`` keep the run summaries the rules judged (with
    their throughput samples), so :meth:`plot` draws without reading or recomputing.
    """

    candidate: str
    baseline: str | None
    rules: tuple[RuleResult, ...]
    runs: tuple[RunSummary, ...] = field(default=(), repr=False, compare=False)
    baseline_runs: tuple[RunSummary, ...] = field(default=(), repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return not any(r.status is Status.FAIL for r in self.rules)

    def counts(self) -> dict[str, int]:
        """Rule results by status: ``{"pass": n, "warn": n, "fail": n, "skip": n}``."""
        return {s.value: sum(1 for r in self.rules if r.status is s) for s in Status}

    def by_run(self) -> dict[str | None, list[RuleResult]]:
        """Run name → its rule results, in order."""
        out: dict[str | None, list[RuleResult]] = {}
        for rule in self.rules:
            out.setdefault(rule.run, []).append(rule)
        return out

    def summary_lines(self) -> list[str]:
        """One line per run: its worst status and the rule(s) behind it (log text made terminal-safe)."""
        lines = []
        for run, rules in self.by_run().items():
            worst = min((r.status for r in rules), key=_STATUS_RANK.__getitem__)
            if worst in (Status.FAIL, Status.WARN):
                bad = [r for r in rules if r.status is worst]
                detail = f"{bad[0].name}: {safe_text(bad[0].message, 300)}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
            else:
                detail = f"{sum(r.status is Status.PASS for r in rules)} pass, {sum(r.status is Status.SKIP for r in rules)} skip"
            lines.append(f"{safe_text(run, 120)}: {worst.value.upper()} — {detail}")
        return lines

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in self.counts().items() if n) or "no rules ran"
        against = f" against {safe_text(self.baseline, 200)!r}" if self.baseline else ""
        head = f"<CheckReport {'PASSED' if self.passed else 'FAILED'} ({counts}): {safe_text(self.candidate, 200)!r}{against}>"
        return "\n".join([head, *(f"  {line}" for line in self.summary_lines())])

    def _repr_html_(self) -> str:
        """Jupyter: passed or failed, counts by status, one row per (run, rule), in the report's style."""
        return display_html(self)

    def plot(self, run: str | None = None, *, ax: Axes | None = None) -> Axes:
        """Draw each candidate run's throughput (or step time) against the baseline runs', with the
        steady-state medians the throughput rule compared. Uses what the check kept; returns the axes.

        Raises:
            ValueError: no candidate (or no baseline) run has a throughput curve.
        """
        from tanalyze.plotting import axes, label

        candidates = [r for r in self.runs if r.throughput is not None and (run is None or r.run == run)]
        if run is not None and not any(r.run == run for r in self.runs):
            raise KeyError(f"no run {run!r} in this check; runs: {', '.join(r.run for r in self.runs)}")
        if not candidates:
            raise ValueError("nothing to plot: no candidate run logs throughput, step time or wall time")
        kind = candidates[0].throughput.kind
        reference = [r for r in self.baseline_runs if r.throughput is not None and r.throughput.kind == kind]
        ax = axes(ax)
        for i, summary in enumerate(reference):
            sample = summary.throughput
            ax.plot(sample.steps, sample.values, color="0.55", linewidth=0.8, alpha=0.8,
                    label="baseline" if len(reference) == 1 else ("baseline runs" if i == 0 else None))
        verdicts = {r.run: r for r in self.rules if r.name == "throughput"}
        for i, summary in enumerate(c for c in candidates if c.throughput.kind == kind):
            color = f"C{(i + 1) % 10}"
            ax.plot(summary.throughput.steps, summary.throughput.values, color=color, linewidth=0.9,
                    label=label(summary.run))
            result = verdicts.get(summary.run)
            details = result.details if result is not None else {}
            if details.get("candidate_median") is not None:
                ax.axhline(float(details["candidate_median"]), color=color, linestyle="--", linewidth=1.2,
                           label=label(f"{summary.run} median {details['candidate_median']:.4g} ({result.status.value})"))
            if i == 0 and details.get("baseline_median") is not None:
                ax.axhline(float(details["baseline_median"]), color="0.3", linestyle="--", linewidth=1.2,
                           label=f"baseline median {details['baseline_median']:.4g}")
            if i == 0 and details.get("baseline_band"):
                low, high = (float(v) for v in details["baseline_band"])
                ax.axhspan(low, high, color="0.5", alpha=0.15, label="baseline run medians (band)")
        ax.set_xlabel("step")
        unit = next((r.details.get("unit") for r in verdicts.values() if r.details.get("unit")), kind)
        ax.set_ylabel(label(f"{candidates[0].throughput.tag} ({unit})"))
        status = [verdicts[c.run].status.value for c in candidates if c.run in verdicts]
        ax.set_title(label(f"throughput vs {self.baseline or 'no baseline'}" + (f": {', '.join(status)}" if status else ""), 120))
        ax.legend(loc="best", fontsize="small")
        return ax

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``tanalyze check --json`` (schema ``tanalyze.check/1``)."""
        return {
            "schema": CHECK_SCHEMA,
            "tanalyze_version": __version__,
            "candidate": self.candidate,
            "baseline": self.baseline,
            "passed": self.passed,
            "counts": self.counts(),
            "rules": [r.to_dict() for r in self.rules],
        }


# Defaults, each with where it comes from.
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "nonfinite_loss": {},
    "divergence": {},
    # Unstable and diverged runs fail; overfitting/underfitting are worth a look but not a red build.
    "verdict": {"fail_on": ["unstable", "diverged"], "warn_on": ["overfitting", "underfitting"]},
    # A run that stopped before its end fails: crashed, out of memory, killed, a distributed hang.
    "run_status": {"fail_on": sorted(FAILED_STATUSES)},
    # 5% worse than the baseline; with several baseline seeds the seed band widens the threshold.
    "validation_loss": {"tolerance": 0.05, "which": "best"},
    # asv's defaults: a change counts when the median moved by a factor (here 15% slower,
    # a common CI tolerance for noisy training jobs) AND Mann-Whitney U gives p < 0.002.
    "throughput": {"min_change": 0.15, "alpha": 0.002},
    "gradient_health": {},
    "loss_progress": {},
    # a distributed run: a straggler that makes the others wait more than 10% of each step warns
    # (a slow node, not a broken model); a rank that stopped logging before the others fails.
    "ranks": {"max_wait_share": 0.10},
    # against a baseline: the share of the step spent communicating, or waiting for a straggler, up by more
    # than 10 points of the step (0.10) fails; several baseline seeds widen it by their spread.
    "communication": {"max_increase": 0.10},
}


@dataclass(frozen=True)
class CheckPolicy:
    """Which rules run, with what thresholds, and which only warn."""

    params: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {k: dict(v) for k, v in DEFAULT_PARAMS.items()})
    disabled: frozenset[str] = frozenset()
    warn_only: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, table: Mapping[str, Any] | None, source: str = "config") -> CheckPolicy:
        """Build a policy from a ``[check]`` table; unknown rules or parameters are errors."""
        table = dict(table or {})
        params = {k: dict(v) for k, v in DEFAULT_PARAMS.items()}
        disabled = _rule_list(table.pop("disable", []), "disable", source)
        warn_only = _rule_list(table.pop("warn_only", []), "warn_only", source)
        for rule, overrides in table.items():
            if rule not in DEFAULT_PARAMS:
                raise ConfigError(f"{source}: unknown check rule {rule!r}; known: {', '.join(DEFAULT_PARAMS)}")
            if not isinstance(overrides, dict):
                raise ConfigError(f"{source}: [check.{rule}] must be a table of parameters")
            overrides = dict(overrides)
            if overrides.pop("enabled", True) is False:
                disabled.add(rule)
            if overrides.pop("warn_only", False) is True:
                warn_only.add(rule)
            unknown = set(overrides) - set(DEFAULT_PARAMS[rule])
            if unknown:
                raise ConfigError(
                    f"{source}: unknown parameter(s) {sorted(unknown)} for rule {rule!r}; "
                    f"known: {sorted(DEFAULT_PARAMS[rule]) or 'none'}"
                )
            params[rule].update(overrides)
        return cls(params=params, disabled=frozenset(disabled), warn_only=frozenset(warn_only))


def _rule_list(value: Any, key: str, source: str) -> set[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: check.{key} must be a list of rule names")
    unknown = set(value) - set(DEFAULT_PARAMS)
    if unknown:
        raise ConfigError(f"{source}: check.{key} names unknown rule(s) {sorted(unknown)}; known: {', '.join(DEFAULT_PARAMS)}")
    return set(value)


# --- the rules ---------------------------------------------------------------------------------

Rule = Callable[[RunSummary, Baseline | None, Mapping[str, Any]], RuleResult]


def rule_nonfinite_loss(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """No NaN/Inf in the train or validation loss."""
    if not run.loss_tags:
        return RuleResult("nonfinite_loss", Status.SKIP, "no loss curve found (set a role override)", run.run)
    if run.nonfinite_loss_points:
        return RuleResult(
            "nonfinite_loss",
            Status.FAIL,
            f"{run.nonfinite_loss_points} non-finite loss value(s), first at step {run.first_nonfinite_step}",
            run.run,
            value=run.nonfinite_loss_points,
            threshold=0,
            details={"first_step": run.first_nonfinite_step, "tags": list(run.loss_tags)},
        )
    return RuleResult("nonfinite_loss", Status.PASS, "every loss value is finite", run.run, value=0, threshold=0)


def rule_divergence(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """The loss did not diverge (non-finite or exploded without recovering)."""
    divergence = run.diagnosis.get("divergence")
    if run.diagnosis.get("verdict", {}).get("label") == "insufficient_data":
        return RuleResult("divergence", Status.SKIP, "not enough loss points to judge", run.run)
    if divergence:
        step = divergence.get("step")
        kind = divergence.get("kind")
        return RuleResult(
            "divergence",
            Status.FAIL,
            f"loss diverged ({kind}) at step {step}",
            run.run,
            value=step,
            details=divergence,
        )
    return RuleResult("divergence", Status.PASS, "no divergence", run.run)


def rule_verdict(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """The run's verdict is not in the failing set (default: unstable, diverged)."""
    verdict = run.diagnosis.get("verdict", {})
    label = verdict.get("label", "insufficient_data")
    confidence = verdict.get("confidence")
    fail_on, warn_on = list(params.get("fail_on", [])), list(params.get("warn_on", []))
    message = f"verdict {label}" + (f" (confidence {confidence:.2f})" if isinstance(confidence, int | float) else "")
    if label == "insufficient_data":
        return RuleResult("verdict", Status.SKIP, message + ": not enough data to judge", run.run, value=label)
    if label in fail_on:
        status = Status.FAIL
    elif label in warn_on:
        status = Status.WARN
    else:
        status = Status.PASS
    return RuleResult("verdict", status, message, run.run, value=label, threshold={"fail_on": fail_on, "warn_on": warn_on})


def rule_run_status(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """The run did not stop early: a crashed, out-of-memory, killed or hung (distributed timeout) run fails."""
    status = run.diagnosis.get("status")
    if not isinstance(status, Mapping) or status.get("status") in (None, "unknown"):
        return RuleResult("run_status", Status.SKIP, "how the run ended is not known (no console log, exit "
                          "record or end marker)", run.run, value="unknown")
    label = str(status["status"])
    reason = str(status.get("reason", ""))
    evidence = status.get("evidence") or []
    where = ""
    if evidence and isinstance(evidence[0], Mapping):
        first = evidence[0]
        where = f" ({first.get('file')}" + (f":{first['line']}" if first.get("line") is not None else "") + ")"
    fail_on = list(params.get("fail_on", []))
    message = f"{label}: {reason}{where}"
    result = Status.FAIL if label in fail_on else Status.PASS
    return RuleResult("run_status", result, message, run.run, value=label, threshold={"fail_on": fail_on},
                      details=dict(status))


def rule_validation_loss(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """Best (or final) validation loss not worse than the baseline by more than a tolerance."""
    which = params.get("which", "best")
    if which not in ("best", "final"):
        raise ConfigError(f"check.validation_loss.which must be 'best' or 'final', got {which!r}")
    if baseline is None:
        return RuleResult("validation_loss", Status.SKIP, "no baseline given (--baseline)", run.run)
    candidate = run.best_val_loss if which == "best" else run.final_val_loss
    if candidate is None:
        return RuleResult("validation_loss", Status.SKIP, "candidate has no validation loss", run.run)
    reference = [r.best_val_loss if which == "best" else r.final_val_loss for r in baseline.runs]
    reference = [v for v in reference if v is not None and math.isfinite(v)]
    if not reference:
        return RuleResult("validation_loss", Status.SKIP, "baseline has no validation loss", run.run)
    tolerance = float(params.get("tolerance", 0.05))
    ordered = sorted(reference)
    median = ordered[len(ordered) // 2] if len(ordered) % 2 else 0.5 * (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2])
    # Losses can be negative (e.g. ELBO): the tolerance applies to the magnitude.
    threshold = median + tolerance * abs(median)
    if len(reference) > 1:
        threshold = max(threshold, ordered[-1])  # inside the baseline's seed band is not a regression
    band = f" (baseline {which} {median:.4g}" + (f", seed band {ordered[0]:.4g}..{ordered[-1]:.4g}" if len(reference) > 1 else "") + ")"
    if not math.isfinite(candidate) or candidate > threshold:
        change = (candidate - median) / abs(median) if median else math.inf
        return RuleResult(
            "validation_loss", Status.FAIL,
            f"{which} validation loss {candidate:.4g} is {change:+.1%} vs baseline, above threshold {threshold:.4g}{band}",
            run.run, value=candidate, threshold=threshold, details={"baseline": reference, "which": which},
        )
    return RuleResult(
        "validation_loss", Status.PASS,
        f"{which} validation loss {candidate:.4g} within threshold {threshold:.4g}{band}",
        run.run, value=candidate, threshold=threshold, details={"baseline": reference, "which": which},
    )


def rule_throughput(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """Steady-state throughput not lower than the baseline's (factor AND significance)."""
    if baseline is None:
        return RuleResult("throughput", Status.SKIP, "no baseline given (--baseline)", run.run)
    if run.throughput is None:
        return RuleResult("throughput", Status.SKIP, "candidate logs no throughput, step time or wall time", run.run)
    reference = [r.throughput for r in baseline.runs if r.throughput is not None and r.throughput.kind == run.throughput.kind]
    if not reference:
        kinds = sorted({r.throughput.kind for r in baseline.runs if r.throughput is not None})
        reason = f"baseline has no {run.throughput.kind} measurement" + (f" (it has {', '.join(kinds)})" if kinds else "")
        return RuleResult("throughput", Status.SKIP, reason, run.run)
    from tanalyze.analysis.throughput_compare import compare_throughput

    comparison = compare_throughput(
        [r.curve() for r in reference],
        run.throughput.curve(),
        kind=run.throughput.kind,
        min_change=float(params.get("min_change", 0.15)),
        alpha=float(params.get("alpha", 0.002)),
    )
    data = comparison.to_dict()
    verdict = data.get("verdict")
    status = {"regression": Status.FAIL, "inconclusive": Status.WARN}.get(verdict, Status.PASS)
    return RuleResult(
        "throughput", status, data.get("message") or f"throughput {verdict}", run.run,
        value=data.get("ratio"), threshold=params.get("min_change", 0.15), p_value=data.get("p_value"), details=data,
    )


def rule_ranks(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """A distributed run's ranks: none stopped before the others (fail), no costly straggler (warn)."""
    ranks = run.diagnosis.get("ranks")
    if not isinstance(ranks, Mapping) or not ranks.get("ranks"):
        return RuleResult("ranks", Status.SKIP, "not a run of several ranks (no rank column)", run.run)
    limit = float(params.get("max_wait_share", 0.10))
    stopped = [s for s in ranks.get("stopped") or () if isinstance(s, Mapping)]
    if stopped:
        first = stopped[0]
        return RuleResult(
            "ranks", Status.FAIL,
            f"rank {first.get('rank')} stopped logging at step {first.get('last_step')}, the others go on to step "
            f"{first.get('others_last_step')}" + (f" (+{len(stopped) - 1} more)" if len(stopped) > 1 else ""),
            run.run, value=len(stopped), threshold=0, details={"stopped": stopped})
    straggler = ranks.get("straggler")
    if isinstance(straggler, Mapping):
        share = float(straggler.get("wait_share") or 0.0)
        message = (f"rank {straggler.get('rank')} is a straggler: the other ranks wait {share:.0%} of each step "
                   f"for it (limit {limit:.0%})")
        status = Status.WARN if share > limit else Status.PASS
        return RuleResult("ranks", status, message, run.run, value=share, threshold=limit, details=dict(straggler))
    return RuleResult("ranks", Status.PASS, f"{len(ranks['ranks'])} ranks, no straggler, none stopped early",
                      run.run, value=0.0, threshold=limit)


def _share_regression(candidate: float, reference: list[float], limit: float) -> tuple[bool, float, float]:
    """Whether ``candidate`` exceeds the baseline median by more than ``limit`` (or the seeds' spread, if wider)."""
    middle = float(statistics.median(reference))
    allowed = max(limit, max(reference) - min(reference))
    return candidate > middle + allowed, middle, middle + allowed


def rule_communication(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
    """A distributed run against the baseline: no rise of the communication share or of the straggler wait."""
    if baseline is None:
        return RuleResult("communication", Status.SKIP, "no baseline given (--baseline)", run.run)
    limit = float(params.get("max_increase", 0.10))
    compared: list[str] = []
    details: dict[str, Any] = {"max_increase": limit}
    failures: list[str] = []
    worst_value = worst_threshold = None
    for key, label in (("straggler_wait_share", "straggler wait"), ("communication_share", "communication share")):
        mine = getattr(run, key)
        reference = [v for v in (getattr(r, key) for r in baseline.runs) if v is not None]
        if mine is None or not reference:
            continue
        failed, middle, threshold = _share_regression(mine, reference, limit)
        details[key] = {"candidate": mine, "baseline": middle, "threshold": threshold}
        what = f"{label} {mine:.0%} (baseline {middle:.0%}, limit {threshold:.0%})"
        if key == "straggler_wait_share" and run.straggler_rank is not None:
            what = f"rank {run.straggler_rank} straggles: " + what
        compared.append(what)
        if failed:
            failures.append(what)
        if worst_value is None or mine - threshold > worst_value - worst_threshold:
            worst_value, worst_threshold = mine, threshold
    if not compared:
        return RuleResult("communication", Status.SKIP, "no communication timers or ranks measured in both the run "
                          "and the baseline", run.run)
    if failures:
        return RuleResult("communication", Status.FAIL, "; ".join(failures), run.run, value=worst_value,
                          threshold=worst_threshold, details=details)
    return RuleResult("communication", Status.PASS, "; ".join(compared), run.run, value=worst_value,
                      threshold=worst_threshold, details=details)


def _findings_rule(name: str, section: str) -> Rule:
    def rule(run: RunSummary, baseline: Baseline | None, params: Mapping[str, Any]) -> RuleResult:
        result = run.diagnosis.get(section)
        if not result:
            return RuleResult(name, Status.SKIP, f"no {section.replace('_', ' ')} data in this run", run.run)
        findings = result.get("findings", []) if isinstance(result, dict) else []
        errors = [f for f in findings if f.get("severity") == "error"]
        warnings = [f for f in findings if f.get("severity") == "warning"]
        worst = errors or warnings
        if not worst:
            return RuleResult(name, Status.PASS, f"no {section.replace('_', ' ')} problems", run.run, value=0)
        status = Status.FAIL if errors else Status.WARN
        head = worst[0]
        more = f" (+{len(worst) - 1} more)" if len(worst) > 1 else ""
        return RuleResult(name, status, f"{head.get('message')}{more}", run.run, value=len(worst),
                          details={"findings": worst})

    rule.__doc__ = f"No error-level (fail) or warning-level (warn) findings in {section}."
    return rule


RULES: dict[str, Rule] = {
    "nonfinite_loss": rule_nonfinite_loss,
    "divergence": rule_divergence,
    "verdict": rule_verdict,
    "run_status": rule_run_status,
    "validation_loss": rule_validation_loss,
    "throughput": rule_throughput,
    "gradient_health": _findings_rule("gradient_health", "gradients"),
    "loss_progress": _findings_rule("loss_progress", "progress"),
    "ranks": rule_ranks,
    "communication": rule_communication,
}


def run_checks(
    candidates: Sequence[RunSummary],
    baseline: Baseline | None,
    policy: CheckPolicy | None = None,
    *,
    candidate_source: str = "",
) -> CheckReport:
    """Apply every enabled rule to every candidate run."""
    policy = policy or CheckPolicy()
    results: list[RuleResult] = []
    for run in candidates:
        for name, rule in RULES.items():
            if name in policy.disabled:
                continue
            result = rule(run, baseline, policy.params.get(name, {}))
            if name in policy.warn_only and result.status is Status.FAIL:
                result = replace(result, status=Status.WARN, message=result.message + " (warn-only rule)")
            results.append(result)
    return CheckReport(
        candidate=candidate_source,
        baseline=baseline.source if baseline else None,
        rules=tuple(results),
        runs=tuple(candidates),
        baseline_runs=tuple(baseline.runs) if baseline else (),
    )
