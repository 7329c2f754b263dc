"""Load a folder of training logs into one tidy table plus per-run information."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from fnmatch import fnmatchcase
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tanalyze._display import html as display_html
from tanalyze._gc import collector_paused
from tanalyze.assemble import Assembled, assemble
from tanalyze.checkpoint_files import NO_CHECKPOINTS, CheckpointScan, scan_checkpoints, with_training_args
from tanalyze.discover import Discovery, NotRead, RunSpec, discover
from tanalyze.errors import FormatError
from tanalyze.identity import RunPart, unique_names
from tanalyze.parallel import Failure, ProgressCallback, map_runs
from tanalyze.readers import Phase, ReadWarning, Restart, RunData, get_reader
from tanalyze.readers.base import ResumableReader
from tanalyze.readers.text.pattern import UserPattern, read_with_pattern
from tanalyze.runstatus import RunStatus, is_console_log, run_status
from tanalyze.runstatus.model import UNKNOWN
from tanalyze.runstatus.nccl import NcclScan, scan_nccl
from tanalyze.schema import (
    ScalarColumns,
    concat_frames,
    empty_histograms,
    empty_scalars,
    join_columns,
    validate_scalars,
)
from tanalyze.text import safe_text, writable

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from tanalyze.cache import Cache

__all__ = ["RunInfo", "Logs", "load", "read_run", "read_many", "failed_result", "not_read_by_runs", "discover_runs", "read_specs", "read_task",
           "read_many_task"]

#: Runs listed one per line by ``repr(logs)`` before the rest are counted.
_REPR_RUNS = 20


@dataclass(frozen=True)
class RunInfo:
    """What is known about one run besides its points: format, files, config, what was skipped."""

    name: str
    format: str
    directory: str
    files: tuple[str, ...]
    hparams: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[ReadWarning, ...] = ()
    restarts: tuple[Restart, ...] = ()
    notes: tuple[str, ...] = ()
    text: Mapping[str, str] = field(default_factory=dict)
    #: Where a run written to several places came from (splits, add_scalars keys, twins); empty otherwise.
    sources: tuple[RunPart, ...] = ()
    #: the training sessions of a log that holds several (see :class:`~tanalyze.readers.base.Phase`); () for one
    phases: tuple[Phase, ...] = ()
    #: how the run ended (finished, crashed, oom, killed, nccl_timeout, running, unknown) with its evidence
    status: RunStatus = UNKNOWN
    #: the checkpoints it saved, found by name beside its logs (see :mod:`tanalyze.checkpoint_files`)
    checkpoints: CheckpointScan = NO_CHECKPOINTS
    #: what NCCL printed in the run's console logs (transports, warnings, watchdog timeouts); None: nothing
    nccl: NcclScan | None = None

    def __reduce__(self):
        # Read-only mappings do not pickle; runs cross process boundaries (worker pools, clusters).
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["hparams"], values["text"] = dict(self.hparams), dict(self.text)
        return _run_info, (values,)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.name,
            "format": self.format,
            "directory": self.directory,
            "files": list(self.files),
            "hparams": dict(self.hparams),
            "warnings": [w.to_dict() for w in self.warnings],
            "restarts": [r.to_dict() for r in self.restarts],
            "phases": [p.to_dict() for p in self.phases],
            "notes": list(self.notes),
            "sources": [p.to_dict() for p in self.sources],
            "status": self.status.to_dict(),
            "checkpoints": self.checkpoints.to_dict(),
            "nccl": self.nccl.to_dict() if self.nccl is not None else None,
        }


def _run_info(values: dict[str, Any]) -> RunInfo:
    values["hparams"], values["text"] = MappingProxyType(values["hparams"]), MappingProxyType(values["text"])
    return RunInfo(**values)


class RunResult:
    """One run as read: its info and its tables (the unit that crosses process boundaries).

    The scalars may be held as :class:`~tanalyze.schema.ScalarColumns` until a table is asked
    for: :func:`load` joins thousands of runs' arrays at once instead of building a table per run.
    """

    __slots__ = ("info", "_scalars", "_histograms")

    def __init__(self, info: RunInfo, scalars: pd.DataFrame | ScalarColumns,
                 histograms: pd.DataFrame | None = None) -> None:
        self.info = info
        self._scalars = scalars
        # Most runs have none; an empty table costs ~0.1 ms to unpickle in the parent, so none is kept.
        self._histograms = histograms if histograms is not None and len(histograms) else None

    @property
    def histograms(self) -> pd.DataFrame:
        return self._histograms if self._histograms is not None else empty_histograms()

    @property
    def has_histograms(self) -> bool:
        return self._histograms is not None

    @property
    def scalars(self) -> pd.DataFrame:
        if isinstance(self._scalars, ScalarColumns):
            self._scalars = self._scalars.frame(self.info.name) if len(self._scalars) else empty_scalars()
        return self._scalars

    @property
    def columns(self) -> ScalarColumns | None:
        """The scalars as arrays, while no table has been built from them."""
        return self._scalars if isinstance(self._scalars, ScalarColumns) else None

    @property
    def points(self) -> int:
        return len(self._scalars)

    def __reduce__(self):
        return RunResult, (self.info, self._scalars, self._histograms)


def _constant_category(name: str, n: int) -> pd.Categorical:
    """One run name for ``n`` rows, without building a list of ``n`` strings (runs can have millions of rows)."""
    return pd.Categorical.from_codes(np.zeros(n, np.int8), categories=[name])


def _read_guarded(spec: RunSpec, cache: Cache | None) -> list[RunData]:
    """What one source's reader returns; a file that cannot be read becomes a warning, not an error."""
    try:
        return _read_parts(spec, [Path(f) for f in spec.files], cache)
    except FormatError as exc:
        return [RunData(warnings=[ReadWarning(exc.path, exc.reason, exc.location)])]
    except (OSError, MemoryError) as exc:
        return [RunData(warnings=[ReadWarning(spec.directory, f"could not read: {exc}")])]


def _read_parts(spec: RunSpec, files: list[Path], cache: Cache | None) -> list[RunData] | Assembled:
    if spec.parts:
        return assemble(spec.parts, [_read_guarded(part, cache) for part in spec.part_specs()])
    if spec.pattern is not None:
        return read_with_pattern(files, spec.pattern)
    reader = get_reader(spec.format)
    if cache is None:
        if isinstance(reader, ResumableReader):  # scalars kept as arrays (see RunResult)
            return reader.combine(files, [reader.read_part_or_warn(f) for f in files])
        return reader.read(files)
    from tanalyze.cache.reading import read_runs

    return read_runs(reader, files, Path(spec.directory), cache)


def read_run(spec: RunSpec, *, cache: Cache | None = None) -> list[RunResult]:
    """Read one discovered run (through ``cache`` when given). Never raises for bad content:
    a file that cannot be read becomes a warning on a run with no points."""
    return _results(spec, None, cache)


def read_many(specs: Sequence[RunSpec], *, cache: Cache | None = None) -> list[list[RunResult] | Exception]:
    """:func:`read_run` for each spec (its results, or the exception a bug raised), with the runs of each
    resumable format that the cache holds read together: what their logs gained since is parsed in one go."""
    flat = [(index, part) for index, spec in enumerate(specs) for part in spec.part_specs()]
    read: dict[int, list[RunData] | Exception] = {}
    if cache is not None:
        from tanalyze.cache.reading import read_many as read_many_cached

        by_format: dict[str, list[int]] = {}
        for position, (_, part) in enumerate(flat):
            if part.pattern is None and isinstance(get_reader(part.format), ResumableReader):
                by_format.setdefault(part.format, []).append(position)
        for name, positions in by_format.items():
            runs = [([Path(f) for f in flat[p][1].files], Path(flat[p][1].directory)) for p in positions]
            read.update(zip(positions, read_many_cached(get_reader(name), runs, cache), strict=True))
    out: list[list[RunResult] | Exception] = []
    position = 0
    for spec in specs:
        count = len(spec.part_specs())
        mine = [read.get(p) for p in range(position, position + count)]
        position += count
        try:
            if spec.parts:
                out.append(_results(spec, _assembled(spec, mine, cache), cache))
            else:
                out.append(_results(spec, mine[0], cache))
        except Exception as exc:  # noqa: BLE001 - a bug reading this run: reported with its name, the others go on
            out.append(exc)
    return out


def _assembled(spec: RunSpec, read: list[list[RunData] | Exception | None], cache: Cache | None) -> Assembled:
    """A joined run from what was read of its parts (None: read that part now)."""
    parts = []
    for part, got in zip(spec.part_specs(), read, strict=True):
        if isinstance(got, Exception) and not isinstance(got, FormatError | OSError | MemoryError):
            raise got
        parts.append(_read_guarded(part, cache) if got is None or isinstance(got, Exception) else got)
    return assemble(spec.parts, parts)


def _results(spec: RunSpec, read: list[RunData] | Assembled | Exception | None,
             cache: Cache | None) -> list[RunResult]:
    """The results of one run from what was read of it (None: read it now)."""
    try:
        if read is None:
            read = _read_parts(spec, [Path(f) for f in spec.files], cache)
        elif isinstance(read, Exception):
            raise read
    except FormatError as exc:
        read = [RunData(warnings=[ReadWarning(exc.path, exc.reason, exc.location)])]
    except (OSError, MemoryError) as exc:
        read = [RunData(warnings=[ReadWarning(spec.directory, f"could not read: {exc}")])]
    run_format, sources = spec.format, ()
    if isinstance(read, Assembled):
        run_format, sources, parts = read.format, read.parts, [read.data]
    else:
        parts = read
    results = []
    saved_of: dict[frozenset[str], CheckpointScan] = {}
    nccl_of: dict[tuple[str, ...], NcclScan | None] = {}  # one file can hold thousands of runs (a runs table)
    for part in parts:
        if part.own_files is None:
            own = spec.files
        else:
            mine = {str(p) for p in part.own_files}
            own = tuple(f for f in spec.files if f in mine)
        # (the folders right under the run's folder that hold the files of the other runs read from the same files,
        # another training's checkpoint-N: their checkpoints are not this run's; deeper ones the scan does not enter,
        # so the runs of a store share one scan)
        others = frozenset(str(folder) for folder in (Path(f).parent for f in spec.files if f not in own)
                           if str(folder.parent) == spec.directory)
        if others not in saved_of:
            saved_of[others] = _checkpoints(spec.directory, others)
        saved = saved_of[others]
        files = tuple(dict.fromkeys((*own, *(str(p) for p in part.extra_files))))
        status = _status(files, spec, run_format, part.hparams)
        if files not in nccl_of:
            nccl_of[files] = _nccl(files, spec)
        nccl = nccl_of[files]
        # (a name from a file's contents may hold lone surrogates, as a YAML or JSON "\ud800" escape: U+FFFD)
        name = spec.name if part.name is None else f"{spec.name}/{writable(part.name)}"
        if part.title and part.name is None:
            parent = name.rpartition("/")[0]
            name = f"{parent}/{writable(part.title)}" if parent else writable(part.title)
        scalars = part.scalars
        if isinstance(scalars, ScalarColumns):
            pass  # made a table, with its run name, when one is needed
        elif len(scalars):
            scalars = scalars.assign(run=_constant_category(name, len(scalars)))
            scalars = validate_scalars(scalars)
        else:
            scalars = empty_scalars()
        histograms = part.histograms
        if len(histograms):
            histograms = histograms.assign(run=pd.Categorical([name] * len(histograms)))
        info = RunInfo(
            name=name,
            format=run_format,
            directory=spec.directory,
            files=files,
            hparams=MappingProxyType(dict(part.hparams)),
            warnings=tuple(part.warnings),
            restarts=tuple(part.restarts),
            notes=tuple(part.notes),
            text=MappingProxyType(dict(part.text)),
            sources=sources,
            phases=tuple(part.phases),
            status=status,
            checkpoints=with_training_args(saved, part.text, part.hparams),
            nccl=nccl,
        )
        results.append(RunResult(info, scalars, histograms))
    return results


def _status(files: tuple[str, ...], spec: RunSpec, run_format: str, hparams: Mapping[str, Any]) -> RunStatus:
    """The run's status from the tails of its console logs, its W&B exit record and its files' times."""
    try:
        return run_status(files, consoles=spec.consoles, run_format=run_format, hparams=hparams)
    except (OSError, ValueError) as exc:  # a status is never worth losing the run's points
        return RunStatus("unknown", f"could not read the run's files for its status: {exc}")


def _checkpoints(directory: str, excluded: frozenset[str] = frozenset()) -> CheckpointScan:
    """The checkpoints saved beside the run's logs (by name; none are opened), but in ``excluded`` folders."""
    try:
        return scan_checkpoints(directory, excluded=excluded)
    except (OSError, ValueError):  # checkpoints are never worth losing the run's points
        return NO_CHECKPOINTS


def _nccl(files: tuple[str, ...], spec: RunSpec) -> NcclScan | None:
    """NCCL's lines in the head and tail of the run's console logs (bounded: see :mod:`tanalyze.runstatus.nccl`)."""
    texts = [f for f in files if is_console_log(f)] + list(spec.consoles)
    if not texts:
        return None
    try:
        return scan_nccl(texts)
    except (OSError, ValueError):  # like the status: never worth losing the run's points
        return None


@dataclass(frozen=True, eq=False)  # tables do not compare with ==; a Logs is equal to itself only
class Logs:
    """The result of :func:`load`: the tidy table of every run, histograms, and per-run info.

    ``scalars`` has the columns ``run, tag, step, value, wall_time`` (see
    :mod:`tanalyze.schema`), ``histograms`` one row per histogram, ``runs`` maps
    each run name to its :class:`RunInfo`.
    """

    scalars: pd.DataFrame
    histograms: pd.DataFrame
    runs: Mapping[str, RunInfo]
    root: str = ""
    unrecognized: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()  # files and folders that could not be read, with why
    #: Every file or folder under the path that is in no run, with its reason (nothing is dropped unsaid).
    not_read: tuple[NotRead, ...] = ()

    def __len__(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        head = (
            f"<Logs {len(self.runs)} run(s), {len(self.scalars):,} scalar points, "
            f"{len(self.histograms):,} histograms from {safe_text(self.root, 200)!r}>"
        )
        if not self.runs:
            return head
        counts = self._run_counts()
        names = list(self.runs)
        shown = names if len(names) <= _REPR_RUNS + 5 else names[:_REPR_RUNS]
        width = min(max(len(safe_text(n, 60)) for n in shown), 60)
        lines = [head]
        for name in shown:
            info = self.runs[name]
            tags, points, first, last = counts.get(name, (0, 0, None, None))
            steps = f"steps {first}-{last}" if points else "no points"
            extra = "".join(
                f", {n} {what}" for n, what in ((len(info.warnings), "warning(s)"), (len(info.restarts), "restart(s)"),
                                                (len(info.phases), "sessions")) if n
            )
            lines.append(f"  {safe_text(name, 60):<{width}}  {safe_text(info.format, 30)}, {tags} tag(s), "
                         f"{points:,} points, {steps}{extra}")
        if len(shown) < len(names):
            lines.append(f"  … and {len(names) - len(shown)} more run(s); see .summary()")
        return "\n".join(lines)

    def _run_counts(self) -> dict[str, tuple[int, int, int, int]]:
        """Run name → (tags, points, first step, last step), for runs that have points."""
        if self.scalars.empty:
            return {}
        grouped = self.scalars.groupby("run", observed=True, sort=False).agg(
            tags=("tag", "nunique"), points=("step", "size"), first=("step", "min"), last=("step", "max")
        )
        return {str(name): (int(r.tags), int(r.points), int(r.first), int(r.last)) for name, r in grouped.iterrows()}

    def select(self, runs: str | Iterable[str]) -> Logs:
        """A :class:`Logs` holding only some runs: names or glob patterns (``"throughput/*"``), in load order.

        Raises:
            KeyError: a name or pattern matches no run.
        """
        names = self._match(runs)
        keep = set(names)
        scalars = self.scalars[self.scalars["run"].isin(keep)] if len(self.scalars) else self.scalars
        histograms = self.histograms[self.histograms["run"].isin(keep)] if len(self.histograms) else self.histograms
        return replace(
            self,
            scalars=_drop_unused_runs(scalars),
            histograms=_drop_unused_runs(histograms),
            runs=MappingProxyType({n: self.runs[n] for n in names}),
        )

    def _match(self, runs: str | Iterable[str]) -> list[str]:
        patterns = [runs] if isinstance(runs, str) else list(runs)
        chosen: set[str] = set()
        for pattern in patterns:
            found = [n for n in self.runs if n == pattern or fnmatchcase(n, pattern)]
            if not found:
                raise KeyError(f"no run matches {pattern!r}; runs: {', '.join(self.runs)}")
            chosen.update(found)
        return [n for n in self.runs if n in chosen]

    def plot(
        self,
        tag: str,
        runs: str | Iterable[str] | None = None,
        *,
        ax: Axes | None = None,
        smooth: float = 0.6,
    ) -> Axes:
        """Overlay one tag across runs (every run that has it, or ``runs``: names or glob patterns).

        ``smooth`` is TensorBoard's smoothing weight in [0, 1): the raw points are drawn
        faint under the debiased EMA; 0 draws the raw points only. Non-finite points
        are gaps; a step logged twice shows its last write. Runs are drawn in load order.
        Returns the axes.

        Raises:
            KeyError: a run or pattern matches nothing, or no chosen run logs ``tag``.
        """
        from tanalyze.plotting import axes, label, overlay

        if not 0 <= smooth < 1:
            raise ValueError(f"smooth must be in [0, 1), got {smooth}")
        names = list(self.runs) if runs is None else self._match(runs)
        rows = self.scalars[self.scalars["tag"] == tag]
        curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name, group in rows.groupby("run", observed=True, sort=False):
            if str(name) in names:
                # A step logged twice (a resumed job) is drawn with its last write, as TensorBoard shows it.
                group = group.drop_duplicates("step", keep="last").sort_values("step", kind="stable")
                curves[str(name)] = (group["step"].to_numpy(), group["value"].to_numpy(dtype=np.float64))
        if not curves:
            tags = sorted(pd.unique(self.scalars.loc[self.scalars["run"].isin(names), "tag"].astype(str)))
            raise KeyError(f"no chosen run logs the tag {tag!r}; their tags: {', '.join(tags[:30]) or 'none'}")
        ax = axes(ax)
        overlay(ax, {n: curves[n] for n in names if n in curves}, smooth=smooth)
        ax.set_xlabel("step")
        ax.set_ylabel(label(tag))
        ax.legend(loc="best", fontsize="small")
        return ax

    def scalars_of(self, name: str) -> pd.DataFrame:
        """The scalar rows of one run (``logs.runs[name]`` is what is known about it besides its points)."""
        if name not in self.runs:
            raise KeyError(f"no run {name!r}; runs: {', '.join(self.runs)}")
        return self.scalars[self.scalars["run"] == name]

    def run(self, name: str) -> pd.DataFrame:
        """Deprecated name of :meth:`scalars_of` (``logs.runs[name]`` is a ``RunInfo``, this a table)."""
        warnings.warn("Logs.run(name) is deprecated and will be removed in the next release; use "
                      "Logs.scalars_of(name)", DeprecationWarning, stacklevel=2)
        return self.scalars_of(name)

    def series(self, run: str, tag: str) -> pd.Series:
        """One curve as a Series of values indexed by step."""
        rows = self.scalars[(self.scalars["run"] == run) & (self.scalars["tag"] == tag)]
        return pd.Series(rows["value"].to_numpy(), index=rows["step"].to_numpy(), name=tag)

    def tag_summary(self) -> pd.DataFrame:
        """One row per (run, tag): number of points, first and last step, non-finite count."""
        frame = self.scalars
        if frame.empty:
            return pd.DataFrame(columns=["run", "tag", "points", "first_step", "last_step", "non_finite"])
        grouped = frame.groupby(["run", "tag"], observed=True, sort=True)
        summary = grouped.agg(
            points=("step", "size"),
            first_step=("step", "min"),
            last_step=("step", "max"),
        )
        summary["non_finite"] = grouped["value"].apply(lambda v: int((~np.isfinite(v.to_numpy())).sum()))
        return summary.reset_index()

    def summary(self) -> pd.DataFrame:
        """One row per run: format, files, tags, points, step range, warnings."""
        counts = self.scalars.groupby("run", observed=True).agg(
            tags=("tag", "nunique"), points=("step", "size"), first_step=("step", "min"), last_step=("step", "max")
        )
        rows = []
        for name, info in self.runs.items():
            row = {"run": name, "format": info.format, "files": len(info.files)}
            if name in counts.index:
                row.update(counts.loc[name].to_dict())
            else:
                row.update(tags=0, points=0, first_step=pd.NA, last_step=pd.NA)
            row["warnings"] = len(info.warnings)
            row["restarts"] = len(info.restarts)
            rows.append(row)
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        """Jupyter: one row per run, drawn by the report's templates (names and messages escaped)."""
        return display_html(self)


def _drop_unused_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Remove categories of runs no longer present (so groupby and legends list only the kept runs)."""
    if len(frame) and isinstance(frame["run"].dtype, pd.CategoricalDtype):
        return frame.assign(run=frame["run"].cat.remove_unused_categories())
    return frame




def _merge(results: Iterable[RunResult], discovery: Discovery) -> Logs:
    infos: dict[str, RunInfo] = {}
    kept: list[RunResult] = []
    histograms: list[pd.DataFrame] = []
    results = list(results)
    for result, name in zip(results, unique_names(r.info.name for r in results), strict=True):
        if name != result.info.name:  # two groups ended up with one name: keep both, distinctly
            result = _renamed(result, name)
        infos[name] = result.info
        if result.points:
            kept.append(result)
        if result.has_histograms:
            histograms.append(result.histograms)
    if kept and all(r.columns is not None for r in kept):  # numpy all the way: linear in the runs
        scalar_table = join_columns([r.info.name for r in kept], [r.columns for r in kept])
    else:
        scalar_table = concat_frames([r.scalars for r in kept]) if kept else empty_scalars()
    hist_table = concat_frames(histograms) if histograms else empty_histograms()
    used = {x for i in infos.values() for x in i.files}
    return Logs(
        scalars=scalar_table,
        histograms=hist_table,
        runs=MappingProxyType(infos),
        root=discovery.root,
        # A reader may use a file no reader claims (Lightning's hparams.yaml beside event files).
        unrecognized=tuple(f for f in discovery.unrecognized if f not in used),
        not_read=not_read_by_runs(discovery, infos.values()),
        skipped=discovery.skipped_dirs,
        errors=discovery.errors,
    )


def _renamed(result: RunResult, name: str) -> RunResult:
    from dataclasses import replace

    scalars = result.columns
    if scalars is None:
        scalars = result.scalars.assign(run=_constant_category(name, len(result.scalars)))
    histograms = result.histograms
    if len(histograms):
        histograms = histograms.assign(run=pd.Categorical([name] * len(histograms)))
    return RunResult(replace(result.info, name=name), scalars, histograms)


def failed_result(spec: RunSpec, error: str) -> RunResult:
    """A run whose reading failed unexpectedly (a bug, a dead worker): no points, the error as its warning."""
    warning = ReadWarning(spec.directory, f"could not be read: {error}")
    info = RunInfo(name=spec.name, format=spec.format, directory=spec.directory, files=spec.files, warnings=(warning,))
    return RunResult(info, empty_scalars(), empty_histograms())


def load(
    path: str | os.PathLike[str],
    *,
    formats: Iterable[str] | None = None,
    progress: ProgressCallback | None = None,
    patterns: Iterable[str | UserPattern] | None = None,
    jobs: int | None = None,
    cache: Cache | str | os.PathLike[str] | bool = True,
    client: Any = None,
    join: bool | None = None,
) -> Logs:
    """Read every training log under ``path`` into one tidy table.

    Args:
        path: a log file or a folder of runs.
        formats: only use these readers (names as in ``tanalyze runs``).
        progress: called as ``progress(done, total, run_name)`` after each run.
        patterns: user line patterns (regexes with named groups) for text logs no
            reader knows; those of a ``tanalyze.toml`` / ``[tool.tanalyze]`` at or
            above ``path`` are added (see :mod:`tanalyze.readers.text.pattern`).
        jobs: processes reading runs side by side (None: the CPUs, when there are
            enough runs to pay for starting them; 1: this process only).
        cache: the incremental cache (see :mod:`tanalyze.cache`): True for the
            default folder, a folder, a :class:`~tanalyze.cache.Cache`, or False for none.
        client: a ``distributed.Client``: read the runs on that Dask cluster instead.
        join: join what one training job wrote to several places into one run (Keras
            ``train/``+``validation/``, ``add_scalars`` keys, twins; see :mod:`tanalyze.identity`);
            False: one run per folder and format; None: ``[runs] join`` of a config file, else True.

    The result does not depend on ``jobs``, ``cache`` or ``client``. A run whose
    reading fails unexpectedly gets the error as a warning; the others are read.

    Raises:
        InputError: the path does not exist or cannot be read, or a pattern is invalid.
        ConfigError: the config file or a pattern in it is invalid.
        NoLogsError: nothing under the path is a training log.
    """
    # The collector paused: runs by the thousand make many small tables and results (not while a Dask client's
    # event loop runs in this process: its cycles would pile up for as long as the cluster reads)
    with collector_paused() if client is None else contextlib.nullcontext():
        discovery = discover_runs(path, formats=formats, patterns=patterns, join=join, cache=cache)
        results = read_specs(discovery.runs, jobs=jobs, cache=cache, client=client, progress=progress)
        return _merge(results, discovery)


def read_task(spec: RunSpec, *, cache: Cache | None) -> list[RunResult]:
    """Read one discovered run: the task :func:`read_specs` maps over runs (picklable)."""
    return read_run(spec, cache=cache)


def read_many_task(specs: Sequence[RunSpec], *, cache: Cache | None) -> list[list[RunResult] | Exception]:
    """:func:`read_task` for a chunk of runs at once (see :func:`read_many`)."""
    return read_many(specs, cache=cache)


def discover_runs(path: str | os.PathLike[str], *, formats: Iterable[str] | None = None,
                  patterns: Iterable[Any] | None = None, join: bool | None = None,
                  cache: Cache | str | os.PathLike[str] | bool = False) -> Discovery:
    """Discovery as :func:`load` does it (user patterns from arguments and config files included). With a
    ``cache`` (as for :func:`load`), the tags of the files' first records are remembered there between
    discoveries (:mod:`tanalyze.cache.heads`)."""
    from tanalyze.cache import resolve_cache
    from tanalyze.cache.heads import StoredHeadTags
    from tanalyze.readers.text.pattern import resolve_patterns

    user_patterns = resolve_patterns(path, patterns) if os.path.exists(path) else ()
    folder = resolve_cache(cache)
    heads = StoredHeadTags(folder, path) if folder is not None and os.path.exists(path) else None
    found = discover(path, formats=tuple(formats) if formats else None, patterns=user_patterns, join=join, heads=heads)
    if heads is not None:
        heads.save()
    return found


def read_specs(
    specs: Sequence[RunSpec],
    *,
    jobs: int | None = None,
    cache: Cache | str | os.PathLike[str] | bool = True,
    client: Any = None,
    progress: ProgressCallback | None = None,
) -> list[RunResult]:
    """Read runs (in parallel, through the cache); a run that failed unexpectedly keeps its error as a warning."""
    from tanalyze.cache import resolve_cache

    cache = resolve_cache(cache)
    task, many = partial(read_task, cache=cache), partial(read_many_task, cache=cache)
    results = map_runs(task, specs, [s.name for s in specs], jobs=jobs, client=client, progress=progress, many=many)
    out: list[RunResult] = []
    for spec, result in zip(specs, results, strict=True):
        out.extend([failed_result(spec, result.error)] if isinstance(result, Failure) else result)
    return out


def not_read_by_runs(discovery: Discovery, infos: Iterable[RunInfo]) -> tuple[NotRead, ...]:
    """The files under the path that none of the runs read (a reader may use a file no reader claims: Lightning's
    hparams.yaml beside event files), and why."""
    used = {file for info in infos for file in info.files}
    return tuple(n for n in discovery.not_read if n.path not in used)
