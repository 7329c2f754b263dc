"""What ``tanalyze check`` compares: a small summary per run, and baselines saved from them.

A baseline is either a run folder (read and diagnosed on the spot) or a small
JSON file written by ``tanalyze baseline save RUN -o baseline.json``, so CI does
not need to keep the baseline's logs. Several runs in a baseline are taken as
seeds of one job: their spread is the noise band.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze._version import __version__
from tanalyze.analysis.results import to_jsonable
from tanalyze.curves import Curve
from tanalyze.errors import ConfigError

__all__ = ["ThroughputSample", "RunSummary", "Baseline", "summarize_run", "BASELINE_SCHEMA"]

BASELINE_SCHEMA = "tanalyze.baseline/1"
#: Throughput points kept per run in a baseline file (evenly thinned beyond this).
MAX_THROUGHPUT_POINTS = 20_000


@dataclass(frozen=True)
class ThroughputSample:
    """The throughput-like curve of a run: samples/s, tokens/s or step time, with its kind."""

    kind: str
    tag: str
    steps: tuple[int, ...]
    values: tuple[float, ...]

    def curve(self) -> Curve:
        return Curve.from_arrays(np.array(self.steps, dtype=np.int64), np.array(self.values, dtype=np.float64), tag=self.tag)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "tag": self.tag, "steps": list(self.steps), "values": to_jsonable(list(self.values))}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThroughputSample:
        values = [float(v) for v in data["values"]]  # float("nan") parses the "nan" strings back
        return cls(kind=str(data["kind"]), tag=str(data["tag"]), steps=tuple(int(s) for s in data["steps"]), values=tuple(values))


@dataclass(frozen=True)
class RunSummary:
    """The numbers the check rules need from one run, plus its diagnosis as a plain dict."""

    run: str
    format: str
    roles: Mapping[str, str] = field(default_factory=dict)
    diagnosis: Mapping[str, Any] = field(default_factory=dict)
    loss_tags: tuple[str, ...] = ()
    nonfinite_loss_points: int = 0
    first_nonfinite_step: int | None = None
    best_val_loss: float | None = None
    final_val_loss: float | None = None
    throughput: ThroughputSample | None = None
    #: median share of a step spent communicating (framework timers; None: not measured)
    communication_share: float | None = None
    #: share of each step the other ranks wait for the straggler (0.0: several ranks, no straggler; None: one rank)
    straggler_wait_share: float | None = None
    straggler_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "format": self.format,
            "roles": dict(self.roles),
            "verdict": to_jsonable(self.diagnosis.get("verdict")),
            "loss_tags": list(self.loss_tags),
            "nonfinite_loss_points": self.nonfinite_loss_points,
            "first_nonfinite_step": self.first_nonfinite_step,
            "best_val_loss": to_jsonable(self.best_val_loss),
            "final_val_loss": to_jsonable(self.final_val_loss),
            "throughput": self.throughput.to_dict() if self.throughput else None,
            "communication_share": to_jsonable(self.communication_share),
            "straggler_wait_share": to_jsonable(self.straggler_wait_share),
            "straggler_rank": self.straggler_rank,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSummary:
        def number(value: Any) -> float | None:
            return None if value is None else float(value)

        throughput = data.get("throughput")
        return cls(
            run=str(data["run"]),
            format=str(data.get("format", "")),
            roles=dict(data.get("roles", {})),
            diagnosis={"verdict": data.get("verdict") or {}},
            loss_tags=tuple(data.get("loss_tags", ())),
            nonfinite_loss_points=int(data.get("nonfinite_loss_points", 0)),
            first_nonfinite_step=data.get("first_nonfinite_step"),
            best_val_loss=number(data.get("best_val_loss")),
            final_val_loss=number(data.get("final_val_loss")),
            throughput=ThroughputSample.from_dict(throughput) if throughput else None,
            communication_share=number(data.get("communication_share")),
            straggler_wait_share=number(data.get("straggler_wait_share")),
            straggler_rank=None if data.get("straggler_rank") is None else int(data["straggler_rank"]),
        )


def _throughput_kind(role: str, tag: str) -> str:
    lowered = tag.lower()
    if role == "throughput":
        return "tokens_per_s" if "token" in lowered else "samples_per_s"
    if "ms" in lowered.replace("(ms)", " ms ").split() or lowered.endswith(("_ms", "(ms)")) or "(ms)" in lowered:
        return "step_time_ms"
    return "step_time_s"


def summarize_run(frame: pd.DataFrame, diagnosis: Mapping[str, Any], *, fmt: str = "") -> RunSummary:
    """Summarise one diagnosed run (``frame`` is its tidy table, ``diagnosis`` its ``to_dict()``)."""
    roles = dict(diagnosis.get("roles") or {})
    loss_tags = tuple(t for t in (roles.get("train_loss"), roles.get("val_loss")) if t)
    nonfinite = 0
    first_bad: int | None = None
    for tag in loss_tags:
        rows = frame[frame["tag"] == tag]
        bad = ~np.isfinite(rows["value"].to_numpy(dtype=np.float64))
        if bad.any():
            nonfinite += int(bad.sum())
            step = int(rows["step"].to_numpy()[bad].min())
            first_bad = step if first_bad is None else min(first_bad, step)
    best = final = None
    val_tag = roles.get("val_loss")
    if val_tag:
        rows = frame[frame["tag"] == val_tag].sort_values("step", kind="stable")
        values = rows["value"].to_numpy(dtype=np.float64)
        finite = values[np.isfinite(values)]
        if finite.size:
            best = float(finite.min())
        if values.size:
            final = float(values[-1])
    throughput = None
    for role in ("throughput", "step_time"):
        tag = roles.get(role)
        if not tag:
            continue
        rows = frame[frame["tag"] == tag].sort_values("step", kind="stable")
        if rows.empty:
            continue
        steps = rows["step"].to_numpy(dtype=np.int64)
        values = rows["value"].to_numpy(dtype=np.float64)
        if len(steps) > MAX_THROUGHPUT_POINTS:
            keep = np.linspace(0, len(steps) - 1, MAX_THROUGHPUT_POINTS).astype(int)
            steps, values = steps[keep], values[keep]
        throughput = ThroughputSample(_throughput_kind(role, tag), tag, tuple(steps.tolist()), tuple(values.tolist()))
        break
    communication = diagnosis.get("communication")
    share = _finite(communication.get("median_share")) if isinstance(communication, Mapping) else None
    ranks = diagnosis.get("ranks")
    wait = straggler_rank = None
    if isinstance(ranks, Mapping) and ranks.get("ranks"):
        straggler = ranks.get("straggler")
        wait = _finite(straggler.get("wait_share")) if isinstance(straggler, Mapping) else 0.0
        straggler_rank = int(straggler["rank"]) if isinstance(straggler, Mapping) and "rank" in straggler else None
    return RunSummary(
        run=str(diagnosis.get("run", "")),
        format=fmt or str(diagnosis.get("format", "")),
        roles=roles,
        diagnosis=diagnosis,
        loss_tags=loss_tags,
        nonfinite_loss_points=nonfinite,
        first_nonfinite_step=first_bad,
        best_val_loss=best if best is None or math.isfinite(best) else None,
        final_val_loss=final,
        throughput=throughput,
        communication_share=share,
        straggler_wait_share=wait,
        straggler_rank=straggler_rank,
    )


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class Baseline:
    """One or more reference runs (several are taken as seeds of one job)."""

    source: str
    runs: tuple[RunSummary, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": BASELINE_SCHEMA,
            "tanalyze_version": __version__,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source": self.source,
            "runs": [r.to_dict() for r in self.runs],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Baseline:
        """Read a baseline file; a clear :class:`ConfigError` for anything that is not one."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: baseline file not found") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: not a readable baseline file: {exc}") from None
        if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise ConfigError(f"{path}: not a tanalyze baseline (schema {found!r}, expected {BASELINE_SCHEMA!r})")
        try:
            runs = tuple(RunSummary.from_dict(r) for r in data["runs"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: malformed baseline run entry: {exc}") from None
        if not runs:
            raise ConfigError(f"{path}: baseline holds no runs")
        return cls(source=str(data.get("source") or path), runs=runs)

    @classmethod
    def from_summaries(cls, source: str, summaries: Sequence[RunSummary]) -> Baseline:
        if not summaries:
            raise ConfigError(f"{source}: baseline holds no runs")
        return cls(source=source, runs=tuple(summaries))
