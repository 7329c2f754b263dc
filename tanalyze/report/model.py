"""What a report shows, computed once from the full data: runs, their curves by role, summary numbers.

The HTML page, the JSON file and the Jupyter reprs are all drawn from a
:class:`ReportData`; figures downsample for drawing, but every number here
comes from every logged point.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.analysis.results import to_jsonable
from tanalyze.identity import unique_names
from tanalyze.logs import Logs, RunInfo
from tanalyze.readers.tensorboard.images import RunImages, has_images, read_images

__all__ = [
    "VERDICTS",
    "LOSS_ROLES",
    "AUX_ROLES",
    "Series",
    "RunSource",
    "RunView",
    "ReportData",
    "sources_from",
    "build_report",
    "number",
    "RESOURCE_PANELS",
    "ResourcePanel",
    "resource_panels",
    "resource_key",
    "device_order",
    "resource_marks",
]

#: Verdict labels, worst first (the order the summary table sorts by).
VERDICTS: tuple[str, ...] = ("diverged", "unstable", "overfitting", "underfitting", "insufficient_data", "normal")

#: Roles drawn on the loss chart, and the smaller panels beside it (in this order).
LOSS_ROLES: tuple[str, ...] = ("train_loss", "val_loss")
AUX_ROLES: tuple[str, ...] = ("reward", "policy_entropy", "learning_rate", "grad_norm", "throughput", "step_time",
                              "gpu_memory", "loss_scale")

ROLE_TITLES: dict[str, str] = {
    "train_loss": "train loss",
    "val_loss": "validation loss",
    "learning_rate": "learning rate",
    "grad_norm": "gradient norm",
    "throughput": "throughput",
    "step_time": "step time",
    "gpu_memory": "GPU memory",
    "loss_scale": "loss scale",
    "reward": "reward",
    "policy_entropy": "policy entropy",
}


#: The resources panel: system-metric kinds drawn (in this order) and their titles.
RESOURCE_PANELS: tuple[tuple[str, str], ...] = (
    ("gpu_util", "GPU utilisation"), ("gpu_memory", "GPU memory"), ("gpu_temp", "GPU temperature"),
    ("gpu_power", "GPU power"), ("gpu_clock", "GPU clock"), ("cpu", "CPU"), ("host_memory", "host memory"),
)
#: Key prefix of system-metric curves in :attr:`RunView.series` (beside the roles).
RESOURCE_KEY = "resource/"
#: At most this many devices (lines) per resources panel.
RESOURCE_MAX_DEVICES = 8
_UNIT_TEXT = {"%": "%", "C": "°C", "W": "W", "MHz": "MHz", "bytes": "GiB", "MB": "MiB"}


@dataclass(frozen=True)
class ResourcePanel:
    """One small chart of the resources panel: a kind of system metric, one line per device."""

    kind: str
    title: str
    unit: str  # as drawn: "%", "°C", "W", "MHz", "GiB", "MiB"
    axis: str  # "seconds" (since the run started) or "step"
    lines: tuple[tuple[str, Series], ...]  # (device, curve); GiB already divided for bytes


def resource_panels(run: RunView) -> list[ResourcePanel]:
    """The run's resources panel from its diagnosis' ``system.series`` and the curves kept for them."""
    system = run.diagnosis.get("system")
    listed = system.get("series") if isinstance(system, Mapping) else None
    if not isinstance(listed, list):
        return []
    panels = []
    for kind, title in RESOURCE_PANELS:
        entries = [e for e in listed if isinstance(e, Mapping) and e.get("kind") == kind]
        if not entries:
            continue
        unit = str(entries[0].get("unit"))
        lines = []
        for e in entries:
            key = resource_key(kind, str(e.get("device")), str(e.get("unit")))
            if e.get("unit") != unit or key not in run.series or len(lines) >= RESOURCE_MAX_DEVICES:
                continue
            s = run.series[key]
            if unit == "bytes":
                s = Series(s.tag, s.steps, s.values / 2.0**30)
            if s.finite.any():
                lines.append((str(e.get("device")), s))
        if lines:
            axis = "step" if entries[0].get("clock") == "step" else "seconds"
            panels.append(ResourcePanel(kind, title, _UNIT_TEXT.get(unit, unit), axis, tuple(lines)))
    return panels


def resource_marks(run: RunView) -> dict[str, list[tuple[str, float, str]]]:
    """What the system findings located, per panel kind: (kind of mark, x on the panel's axis, label).
    ``throttle``: where a throttling GPU reached its plateau (temperature panel); ``drop``: the starts of
    periodic utilisation drops (utilisation panel); ``limit``: the capacity threshold (a y value, memory panels)."""
    system = run.diagnosis.get("system")
    if not isinstance(system, Mapping):
        return {}
    out: dict[str, list[tuple[str, float, str]]] = {}
    for t in system.get("throttling") or ():
        if isinstance(t, Mapping) and t.get("detected") and number(t.get("onset")) is not None:
            out.setdefault("gpu_temp", []).append(
                ("throttle", float(t["onset"]), f"{t.get('device')} hot from here ({number(t.get('plateau')) or 0:.0f} °C)"))
    findings = {f.get("code") for f in system.get("findings") or () if isinstance(f, Mapping)}
    for d in system.get("drops") or ():
        if isinstance(d, Mapping) and d.get("periodic") and "gpu_util_drops" in findings:
            for start in list(d.get("starts") or ())[:40]:
                if number(start) is not None:
                    out.setdefault("gpu_util", []).append(("drop", float(start), f"{d.get('device')} drop"))
    if "memory_near_capacity" in findings:
        for m in system.get("memory") or ():
            if isinstance(m, Mapping) and (m.get("samples_above") or 0) > 0 and m.get("kind") in ("gpu_memory", "host_memory"):
                out.setdefault(str(m["kind"]), [("limit", 90.0, "90% of capacity")])
    return out


def device_order(panels: Sequence[ResourcePanel]) -> list[str]:
    """The devices of a resources panel in order of first appearance: each keeps one colour in every chart."""
    order: list[str] = []
    for panel in panels:
        for device, _ in panel.lines:
            if device not in order:
                order.append(device)
    return order


def resource_key(kind: str, device: str, unit: str) -> str:
    return f"{RESOURCE_KEY}{kind}/{device}/{unit}"


def number(value: Any) -> float | None:
    """A float from a diagnosis value (which may be ``"nan"``/``"inf"`` strings or None)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "+inf"):
        return float(value)
    return None


@dataclass(frozen=True, eq=False)
class Series:
    """One tag of one run, every point, sorted by step (write order kept for equal steps)."""

    tag: str
    steps: np.ndarray
    values: np.ndarray

    @property
    def finite(self) -> np.ndarray:
        return np.isfinite(self.values)

    def stats(self) -> dict[str, Any]:
        """Final and best (lowest) finite value with their steps, point and non-finite counts."""
        finite = self.finite
        out: dict[str, Any] = {"tag": self.tag, "points": int(len(self.steps)), "non_finite": int((~finite).sum())}
        if finite.any():
            idx = np.flatnonzero(finite)
            last = idx[-1]
            best = idx[np.argmin(self.values[idx])]
            out.update(
                final=float(self.values[last]),
                final_step=int(self.steps[last]),
                best=float(self.values[best]),
                best_step=int(self.steps[best]),
            )
        else:
            out.update(final=None, final_step=None, best=None, best_step=None)
        return out


@dataclass(frozen=True, eq=False)
class RunSource:
    """One run to report on: its rows of the tidy table, what was known when reading it, its diagnosis."""

    name: str
    scalars: pd.DataFrame
    info: RunInfo | None = None
    diagnosis: Mapping[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class RunView:
    """One run as the report shows it."""

    index: int
    name: str
    format: str
    diagnosis: dict[str, Any]
    info: RunInfo | None
    series: dict[str, Series]  # role -> the full curve of the tag having that role
    summary: dict[str, Any]
    tags: tuple[str, ...]
    points: int
    #: (loss, aux) figures already drawn where the run was read (see pipeline.py), else drawn when rendering
    figures: tuple[Any, Any] | None = None
    #: (columns, chart data as page JSON) made where the run was read (see html.chart_text), else made when rendering
    chart: tuple[int, str | None] | None = None
    #: (digest of its JSON dict, that dict encoded) made where the run was read (see jsonout.run_text and
    #: run_digest), used while the dict has the same digest
    json: tuple[str, str] | None = None
    #: the run's TensorBoard image summaries, bounded (readers/tensorboard/images.py); None: it has none
    images: RunImages | None = None

    @property
    def anchor(self) -> str:
        """An element id made from the run's position, never from its (untrusted) name."""
        return f"run-{self.index}"

    @property
    def verdict(self) -> str:
        label = (self.diagnosis.get("verdict") or {}).get("label")
        return label if label in VERDICTS else "insufficient_data"

    @property
    def roles(self) -> dict[str, str]:
        return dict(self.diagnosis.get("roles") or {})


@dataclass(frozen=True, eq=False)
class ReportData:
    """Everything one report shows."""

    title: str
    inputs: tuple[str, ...]
    generated_at: str
    smoothing: float
    runs: tuple[RunView, ...]
    groups: tuple[Any, ...] = field(default=())  # SeedGroup, see groups.py
    version: str = ""
    not_read: tuple[Any, ...] = ()  # NotRead: files under the inputs that are in no run, with why
    experiments: tuple[Any, ...] = ()  # Experiment (analysis/sweep.py): sweeps among the runs, see report/sweep.py
    #: Where cross-run figures are kept by their inputs between reports (a ``Cache``; see report/memo.py), or None
    cache: Any = None

    def verdict_counts(self) -> list[tuple[str, int]]:
        counts = {label: 0 for label in VERDICTS}
        for run in self.runs:
            counts[run.verdict] += 1
        return [(label, n) for label, n in counts.items() if n]


def _diagnosis_dict(value: Any, name: str, *, plain: bool = False) -> dict[str, Any]:
    """The documented diagnosis shape with every key present (missing ones empty), plain JSON types.
    ``plain``: ``value`` is a dict of plain JSON types already (as read back from JSON)."""
    if value is None:
        raw: dict[str, Any] = {
            "run": name,
            "verdict": {"label": "insufficient_data", "confidence": 0.0, "evidence": {"reason": "not diagnosed"}},
        }
    elif hasattr(value, "to_dict"):
        raw = value.to_dict()
    else:
        raw = dict(value)
    out = dict(raw) if plain else to_jsonable(raw)
    out.setdefault("run", name)
    out.setdefault("format", None)
    out.setdefault("roles", {})
    verdict = dict(out.get("verdict") or {})
    verdict.setdefault("label", "insufficient_data")
    verdict.setdefault("confidence", None)
    verdict.setdefault("evidence", None)
    out["verdict"] = verdict
    for key in ("overfitting", "divergence", "early_stopping", "gradients", "throughput"):
        out.setdefault(key, None)
    for key in ("spikes", "findings", "warnings"):
        out[key] = list(out.get(key) or [])
    return out


def sources_from(logs: Logs, diagnoses: Mapping[str, Any] | None = None) -> list[RunSource]:
    """One :class:`RunSource` per run of ``logs`` (and per diagnosed run that ``logs`` lacks)."""
    diagnoses = diagnoses or {}
    by_run: dict[str, pd.DataFrame] = {}
    if len(logs.scalars):
        for name, rows in logs.scalars.groupby("run", observed=True, sort=False):
            by_run[str(name)] = rows
    sources = []
    for name, info in logs.runs.items():
        frame = by_run.get(name, logs.scalars.iloc[0:0])
        sources.append(RunSource(name=name, scalars=frame, info=info, diagnosis=diagnoses.get(name)))
    for name, diagnosis in diagnoses.items():
        if name not in logs.runs:
            sources.append(RunSource(name=name, scalars=logs.scalars.iloc[0:0], diagnosis=diagnosis))
    return sources


def _series_by_tag(frame: pd.DataFrame, wanted: Iterable[str]) -> dict[str, Series]:
    wanted = set(wanted)
    out: dict[str, Series] = {}
    if frame.empty or not wanted:
        return out
    rows = frame[frame["tag"].isin(list(wanted))]
    for tag, part in rows.groupby("tag", observed=True, sort=False):
        steps = part["step"].to_numpy(dtype=np.int64)
        values = part["value"].to_numpy(dtype=np.float64)
        order = np.argsort(steps, kind="stable")
        out[str(tag)] = Series(str(tag), steps[order], values[order])
    return out


def _throughput_summary(diagnosis: Mapping[str, Any], series: Mapping[str, Series]) -> dict[str, Any] | None:
    """The steady throughput the diagnosis measured, else the median of the throughput (or step-time) curve."""
    measured = diagnosis.get("throughput")
    if isinstance(measured, Mapping):
        median = number(measured.get("steady_median"))
        if median is None:
            median = number(measured.get("median"))
        if median is not None and math.isfinite(median):
            better = measured.get("higher_is_better")
            role = "step_time" if better is False else "throughput"
            tag = measured.get("tag") or (series[role].tag if role in series else None)
            unit = str(measured.get("unit") or ("/s" if role == "throughput" else "s/step"))
            if unit == "s/step" and 0 < median < 1:
                median, unit = median * 1000, "ms/step"
            return {"role": role, "tag": tag, "median": median, "unit": unit}
    for role, unit in (("throughput", "/s"), ("step_time", "per step")):
        curve = series.get(role)
        if curve is None:
            continue
        finite = curve.values[curve.finite]
        if finite.size:
            return {"role": role, "tag": curve.tag, "median": float(np.median(finite)), "unit": unit}
    return None


def _run_view(index: int, source: RunSource) -> RunView:
    diagnosis = _diagnosis_dict(source.diagnosis, source.name)
    info = source.info
    if diagnosis.get("format") is None and info is not None:
        diagnosis["format"] = info.format
    roles = {str(k): str(v) for k, v in (diagnosis.get("roles") or {}).items() if v is not None}
    system = diagnosis.get("system")
    listed = [e for e in (system.get("series") or []) if isinstance(e, Mapping)] if isinstance(system, Mapping) else []
    by_tag = _series_by_tag(source.scalars, [*roles.values(), *(str(e.get("tag")) for e in listed)])
    series = {role: by_tag[tag] for role, tag in roles.items() if tag in by_tag}
    for e in listed:  # the system metrics of the resources panel, beside the roles
        if str(e.get("tag")) in by_tag:
            series[resource_key(str(e.get("kind")), str(e.get("device")), str(e.get("unit")))] = by_tag[str(e["tag"])]
    frame = source.scalars
    summary: dict[str, Any] = {role: series[role].stats() for role in LOSS_ROLES if role in series}
    summary["throughput"] = _throughput_summary(diagnosis, series)
    summary["findings"] = len(diagnosis["findings"])
    steps = frame["step"].to_numpy() if len(frame) else np.empty(0, dtype=np.int64)
    summary["first_step"] = int(steps.min()) if steps.size else None
    summary["last_step"] = int(steps.max()) if steps.size else None
    tags = tuple(str(t) for t in pd.unique(frame["tag"])) if len(frame) else ()
    return RunView(
        index=index,
        name=source.name,
        format=str(diagnosis.get("format") or (info.format if info else "")),
        diagnosis=diagnosis,
        info=info,
        series=series,
        summary=summary,
        tags=tags,
        points=int(len(frame)),
        images=run_images(info),
    )


def run_images(info: RunInfo | None) -> RunImages | None:
    """The run's image summaries (a second, bounded pass over its event files), when reading it counted some
    (whatever the run's format: a run joined from a CSV and its event-file twin has them too)."""
    if info is None or not has_images(info.notes):
        return None
    images = read_images(info.files)
    return images if images.series or images.notes else None


def _unique_names(sources: Sequence[Any], labels: Sequence[str]) -> list[str]:
    """The distinct names of runs (anything with ``name``) from several inputs (see :func:`unique_names`)."""
    return unique_names([source.name for source in sources], labels)


def build_report(
    sources: Sequence[RunSource] | Logs,
    diagnoses: Mapping[str, Any] | None = None,
    *,
    title: str | None = None,
    inputs: Sequence[str] = (),
    smoothing: float = 0.6,
    generated_at: str | None = None,
    input_labels: Sequence[str] | None = None,
) -> ReportData:
    """Compute what the report shows.

    ``sources`` is a :class:`Logs` (with ``diagnoses`` mapping run name to a
    diagnosis or its ``to_dict()``) or a list of :class:`RunSource`.
    ``input_labels`` (one per source) disambiguate equal run names coming from
    different inputs.
    """
    if not 0 <= smoothing < 1:
        raise ValueError(f"smoothing weight must be in [0, 1), got {smoothing}")
    not_read: tuple[Any, ...] = ()
    if isinstance(sources, Logs):
        if not inputs and sources.root:
            inputs = (sources.root,)
        not_read = sources.not_read
        sources = sources_from(sources, diagnoses)
    labels = list(input_labels) if input_labels is not None else [""] * len(sources)
    names = _unique_names(sources, labels)
    views = [_run_view(index, source) for index, source in enumerate(sources, start=1)]
    return assemble(views, names, title=title, inputs=inputs, smoothing=smoothing, generated_at=generated_at,
                    not_read=not_read)


def assemble(
    views: Sequence[RunView],
    names: Sequence[str],
    *,
    title: str | None = None,
    inputs: Sequence[str] = (),
    smoothing: float = 0.6,
    generated_at: str | None = None,
    not_read: Sequence[Any] = (),
    cache: Any = None,
) -> ReportData:
    """The report of these runs, numbered 1..n in order under their final ``names``. ``cache`` (a ``Cache``)
    keeps what is made from all of them (sweep importances, compare charts) for the next report of the same runs."""
    from tanalyze._version import __version__
    from tanalyze.report.groups import seed_groups

    final = []
    for index, (view, name) in enumerate(zip(views, names, strict=True), start=1):
        if name != view.name:
            view.diagnosis["run"] = name
        final.append(replace(view, index=index, name=name))
    stamp = generated_at or datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    if title is None:
        title = "Training report" + (f": {', '.join(inputs)}" if inputs else "")
    data = ReportData(
        title=title,
        inputs=tuple(str(i) for i in inputs),
        generated_at=stamp,
        smoothing=smoothing,
        not_read=tuple(not_read),
        runs=tuple(final),
        version=__version__,
        cache=cache,
    )
    from tanalyze.report.sweep import experiments_of

    label = ", ".join(os.path.basename(os.path.normpath(i)) for i in data.inputs) or None
    return replace(data, groups=tuple(seed_groups(data.runs)), experiments=experiments_of(data.runs, label, cache=cache))
