"""The reader side of console logs: which files, grouped into which runs.

Every console format shares the same rules, implemented once here:

- candidates are ``.log/.txt/.out/.err`` files and files without a suffix,
  that look like text, except a W&B run's ``output.log`` and debug logs
  (``run-*/files/output.log``: the W&B reader owns them);
- a format claims a file when its content matches (looking at up to the first
  2 MB, cleaned of escapes and progress-bar redraws);
- a distributed job that writes one log per rank (``log_rank0.txt``,
  ``rank_1.log``, ``train-0.out`` + ``train-1.out``) is ONE run with a ``rank``
  column; the stdout and stderr of one job (``slurm-42.out`` + ``slurm-42.err``)
  are one run; every other file is a run of its own.
"""

from __future__ import annotations

import functools
import os
import re
from array import array
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tanalyze.readers.base import FilePart, Phase, ReadWarning, Restart, ResumableReader, RunData
from tanalyze.readers.phases import PHASE_LIMIT, PhaseStart, find_phase_starts, phase_detail, phase_offset
from tanalyze.readers.text import _parts, _prefix, _ranked
from tanalyze.readers.text._lines import TEXT_SUFFIXES, looks_like_text, sniff_window
from tanalyze.readers.text._parser import ParsedFile, TextParser
from tanalyze.readers.text._rows import dedupe, duplicated_rows
from tanalyze.schema import ScalarColumns, concat_frames, empty_scalars

__all__ = ["TextReader", "is_console_candidate", "rank_layout", "runs_from_parsed"]

_WANDB_RUN_DIR = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-[A-Za-z0-9]+$")
_RANK_WORD = re.compile(r"(?i)(?<![a-z])rank[_-]?(\d+)(?!\d)")
_TRAILING_NUMBER = re.compile(r"^(.+?[-_.])(\d+)(\.[A-Za-z]+)?$")
_SUFFIX = re.compile(r"^\.[A-Za-z]{1,5}$")


def _suffix(path: Path) -> str:
    """The file's extension, or '' when the name has none (``lr-3.0e-4`` is not an extension)."""
    suffix = path.suffix
    return suffix.lower() if _SUFFIX.match(suffix) else ""


_WANDB_OWNED = re.compile(r"^(?:output|debug(?:-internal|-core)?)\.log$")


def in_wandb_run(path: Path) -> bool:
    """A W&B run's own console capture or debug log (``run-*/files/output.log``): the W&B reader's."""
    return bool(_WANDB_OWNED.match(path.name)) and any(_WANDB_RUN_DIR.match(part) for part in path.parts[:-1])


@functools.lru_cache(maxsize=16)
def _behind_logging(detect: Callable[[str], bool], path: str, size: int, mtime_ns: int) -> bool:
    if _ranked.prefix_of(Path(path)):
        return False
    window = sniff_window(Path(path))
    return not detect(window) and _prefix.detect_logging(window) and detect(_prefix.strip_window(window, _prefix.LOGGING))


def is_console_candidate(path: Path, head: bytes) -> bool:
    """Whether ``path`` may be a console log at all (name, place, text-like bytes)."""
    if _suffix(path) not in TEXT_SUFFIXES and _suffix(path) != "":
        return False
    if "tfevents" in path.name or in_wandb_run(path):
        return False
    return looks_like_text(head)


def rank_layout(files: list[Path]) -> dict[Path, int] | None:
    """The rank of each file when ``files`` are one job's per-rank logs, else None.

    A name with the word ``rank`` and a number is a rank file even alone; names
    that differ only in a trailing number are rank files when there are several
    and one of them is 0 (``train-0.out``, ``train-1.out``).
    """
    ranks: dict[Path, int] = {}
    templates: set[str] = set()
    for file in files:
        m = _RANK_WORD.search(file.name)
        if m:
            ranks[file] = int(m.group(1))
            templates.add(file.name[: m.start(1)] + "{}" + file.name[m.end(1) :])
    if len(ranks) == len(files) and len(templates) == 1 and len(set(ranks.values())) == len(files):
        return ranks
    if len(files) < 2:
        return None
    ranks.clear()
    templates.clear()
    for file in files:
        m = _TRAILING_NUMBER.match(file.name)
        if not m:
            return None
        ranks[file] = int(m.group(2))
        templates.add(m.group(1) + "{}" + (m.group(3) or ""))
    if len(templates) == 1 and 0 in ranks.values() and len(set(ranks.values())) == len(files):
        return ranks
    return None


#: The stdout file of a job for each name of its stderr (torchrun ``--log-dir``: ``<rank>/stdout.log``)
_STREAM_PAIRS = {"stderr.log": "stdout.log", "stderr.txt": "stdout.txt", "stderr": "stdout"}


def stdout_of(path: Path) -> Path | None:
    """The process's stdout beside ``path`` when ``path`` is its stderr (``stderr.log``), else None."""
    return path.with_name(_STREAM_PAIRS[path.name]) if path.name in _STREAM_PAIRS else None


def _group_files(files: list[Path]) -> list[list[Path]]:
    files = sorted(files)
    groups: list[list[Path]] = []
    rest: list[Path] = []
    present = set(files)
    for err in [f for f in files if stdout_of(f) in present]:  # stderr.log + stdout.log of one process
        files.remove(err)
        files.remove(stdout_of(err))
        groups.append([err, stdout_of(err)])
    by_template: dict[str, list[Path]] = defaultdict(list)
    for file in files:
        m = _RANK_WORD.search(file.name)
        if m:
            by_template["r:" + file.name[: m.start(1)] + "{}" + file.name[m.end(1) :]].append(file)
            continue
        m = _TRAILING_NUMBER.match(file.name)
        if m:
            by_template["n:" + m.group(1) + "{}" + (m.group(3) or "")].append(file)
        else:
            rest.append(file)
    for key, members in by_template.items():
        if rank_layout(members) is not None and (key.startswith("r:") or len(members) > 1):
            groups.append(members)
        else:
            rest.extend(members)
    # stdout + stderr of one job
    by_stem: dict[tuple[Path, str], list[Path]] = defaultdict(list)
    for file in sorted(rest):
        if _suffix(file) in (".out", ".err"):
            by_stem[(file.parent, file.stem)].append(file)
        else:
            groups.append([file])
    for members in by_stem.values():
        if len(members) == 2:
            groups.append(sorted(members, key=lambda f: _suffix(f) != ".err"))  # stderr first: it has the banners
        else:
            groups.extend([m] for m in members)
    return sorted(groups, key=lambda g: str(g[0]))


#: How the note about points replaced by a later write ends (``extend`` leaves such runs to ``combine``).
REPLACED = "were replaced by the later write (last write wins)"


def _scalar_columns(parsed: ParsedFile) -> ScalarColumns | None:
    """The rows of one file as arrays, when they need no column beyond tag, step, value and wall time."""
    rows = parsed.rows
    n = len(rows)
    if rows.ranks is not None and n and (np.frombuffer(rows.ranks, dtype=np.int64) >= 0).any():
        return None
    if rows.epochs is not None and n and not np.isnan(np.frombuffer(rows.epochs, dtype=np.float64)).all():
        return None
    if not n:
        return ScalarColumns(rows.tag_names, np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0),
                             np.empty(0))
    walls = np.frombuffer(rows.walls, dtype=np.float64) if rows.walls is not None else np.full(n, np.nan)
    return ScalarColumns(rows.tag_names, np.frombuffer(rows.tags, dtype=np.int32),
                         np.frombuffer(rows.steps, dtype=np.int64), np.frombuffer(rows.values, dtype=np.float64), walls)


def _deduped(columns: ScalarColumns) -> tuple[ScalarColumns, int]:
    duplicated = duplicated_rows(columns.codes, columns.step)
    if duplicated is None:
        return columns, 0
    keep = ~duplicated
    return ScalarColumns(columns.tags, columns.codes[keep], columns.step[keep], columns.value[keep],
                         columns.wall_time[keep]), int(duplicated.sum())


def _phases(parsed: ParsedFile) -> list[Phase]:
    """Sessions appended to one job's log (its steps go back to its first step: see :mod:`tanalyze.readers.phases`): each
    later one shifted, in ``parsed``'s rows, to follow the one before on one step axis; the restarts that
    were such go-backs are dropped from ``parsed.restarts``. Looked for only when a step went back."""
    rows = parsed.rows
    if not parsed.restarts or not len(rows):
        return []
    codes = np.frombuffer(rows.tags, dtype=np.int32)
    steps = np.frombuffer(rows.steps, dtype=np.int64)
    values = np.frombuffer(rows.values, dtype=np.float64)
    starts, limited = find_phase_starts(np.arange(len(steps)), codes, steps, values)
    found = {start.row for start in starts}
    starts = sorted(starts + [start for start in _trainings_begun(parsed.restarts, codes, steps)
                              if start.row not in found], key=lambda start: start.row)
    if not starts:
        return []
    shifted = steps.copy()
    bounds = [0, *(start.row for start in starts), len(steps)]
    phases: list[Phase] = []
    previous_last: int | None = None
    for index in range(len(bounds) - 1):
        piece = shifted[bounds[index]:bounds[index + 1]]
        offset = 0 if previous_last is None else phase_offset(previous_last, int(piece.min()))
        piece += offset
        detail = ("the first session" if index == 0 else
                  phase_detail("step", starts[index - 1].high, starts[index - 1].step)
                  + (f"; its steps shifted by {offset:+d} to follow the previous session" if offset else ""))
        phases.append(Phase(index=index, first_step=int(piece.min()), last_step=int(piece.max()), offset=offset,
                            file=parsed.path.name, detail=detail))
        previous_last = int(piece.max())
    rows.steps = array("q", shifted.tobytes())
    # the go-back each phase begins with is no restart: the first one (in order) to a step among the first
    # rows of the phase (its main line's step, which may follow an evaluation logged at the step before)
    restarts, at = list(parsed.restarts), 0
    for index in range(1, len(starts) + 1):
        opening = set(steps[bounds[index]:bounds[index] + 64].tolist())
        found = next((i for i in range(at, len(restarts)) if restarts[i].step in opening), None)
        if found is not None:
            del restarts[found]
            at = found
    parsed.restarts = restarts
    if limited:
        parsed.warnings.append(ReadWarning(str(parsed.path), f"steps went back to the start more than {PHASE_LIMIT} "
                                           f"times: the first {PHASE_LIMIT + 1} sessions are phases, later go-backs "
                                           "are restarts (the later write wins)"))
    return phases


def _trainings_begun(restarts: list[Restart], codes: np.ndarray, steps: np.ndarray) -> list[PhaseStart]:
    """Where a parser saw another training begin at the very step the one before ended at (``Epoch 1/1`` then
    ``Epoch 1/8``: a restart at its own ``until``, which the steps alone do not show): the first row, from the last
    such start on, that logs a tag again at that step."""
    out: list[PhaseStart] = []
    after = 0
    for restart in restarts:
        if restart.until != restart.step:
            continue
        seen: set[int] = set()
        for row in np.flatnonzero(steps[after:] == restart.step).tolist():
            code = int(codes[after + row])
            if code in seen:
                after += row
                out.append(PhaseStart(row=after, high=restart.step, step=restart.step))
                break
            seen.add(code)
    return out


def runs_from_parsed(parsed: list[ParsedFile], ranks: dict[Path, int] | None, *, as_columns: bool = False) -> RunData:
    """Combine the parsed files of one run: concatenate, keep appended sessions as phases (one file, or one
    job's stdout and stderr), apply last-write-wins, gather notes.

    ``as_columns``: the scalars as :class:`~tanalyze.schema.ScalarColumns` when one file's rows need no
    other column (see ``ResumableReader.combine``), else a table.
    """
    several = len(parsed) > 1
    lanes = any(part.rank is not None for part in parsed)
    phases = _phases(parsed[0]) if len(parsed) == 1 and not ranks and not lanes else []
    columns = _scalar_columns(parsed[0]) if as_columns and len(parsed) == 1 and not ranks and not lanes else None
    scalars: pd.DataFrame | ScalarColumns
    if columns is not None:
        scalars, dropped = _deduped(columns)
    else:
        frames = []
        for part in parsed:
            rank = part.rank if part.rank is not None else ranks.get(part.path) if ranks else None
            frames.append(part.rows.frame(rank=rank, source=part.path.name if several and ranks else None))
        scalars, dropped = dedupe(concat_frames(frames) if frames else empty_scalars())
    run = _run_info(parsed, ranks, empty=not len(scalars))
    run.scalars = scalars
    run.phases = phases
    if dropped:
        why = "after a restart" if run.restarts else "twice at the same step"
        run.notes.append(f"{dropped:,} point(s) logged {why} {REPLACED}")
    return run


#: the end of the warning on a text file that had no metric line at all
NO_METRIC_LINES = "metric line could be read from this file (empty, binary or another format)"


def _run_info(parsed: list[ParsedFile], ranks: dict[Path, int] | None, empty: bool) -> RunData:
    """Everything of the run but its scalars: notes, warnings, restarts and hparams of its files."""
    several = len(parsed) > 1
    notes: list[str] = []
    if ranks:
        notes.append(f"{len(ranks)} per-rank log file(s) read as one run; the rank column tells them apart")
    restarts = [r for part in parsed for r in part.restarts]
    warnings = [w for part in parsed for w in part.warnings]
    hparams: dict = {}
    for part in parsed:
        prefix = f"{part.label or part.path.name}: " if several and (ranks or part.label) else ""
        notes.extend(prefix + note for note in part.notes)
        for key, value in part.hparams.items():
            hparams.setdefault(key, value)
    if empty and not warnings:
        names = ", ".join(str(part.path) for part in parsed)
        family = parsed[0].family if parsed else "console"
        warnings.append(ReadWarning(names, f"no {family} {NO_METRIC_LINES}"))
    return RunData(hparams=hparams, warnings=warnings, restarts=restarts, notes=notes)


class TextReader(ResumableReader):
    """A console-log format: subclasses set ``name``, ``description``, ``parser`` and ``detect``.

    Resumable (see :mod:`._parts`): a log that grew is read on from its last line break.
    """

    parser: ClassVar[type[TextParser]]
    cache_version = 5  # 3: lines with a launcher's rank prefix, one lane per rank; 4: a line of progress-bar redraws
    #                    longer than a chunk cut after a redraw; 5: a bracketed training counter ('[Epoch 1/60]')
    #                    is the message's, not a logging prefix's
    #: whether its lines are also read behind a logging library's line prefix (Python ``logging``, loguru, absl):
    #: the formats of hand-written loops, which print with ``logging`` as often as with ``print``
    behind_logging: ClassVar[bool] = False

    def detect(self, window: str) -> bool:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def sniff(self, path: Path, head: bytes) -> bool:
        if not is_console_candidate(path, head):
            return False
        return self.detect(_ranked.console_window(path)) or self.behind_logging_prefix(path)

    def behind_logging_prefix(self, path: Path) -> bool:
        """Whether the file's lines are this format only once a logging library's line prefix is removed (a file
        that reads as it is, or whose lines carry a launcher's rank prefix, is read as it is). Decided once per
        file version (sniffing and reading both ask)."""
        if not self.behind_logging:
            return False
        try:
            info = os.stat(path)
        except OSError:
            return False
        return _behind_logging(self.detect, str(path), info.st_size, info.st_mtime_ns)

    def group(self, files: list[Path]) -> list[list[Path]]:
        return _group_files(files)

    def companion(self, path: Path, claimed: set[Path]) -> bool:
        """A job's stderr with no metric line (its tracebacks) beside the stdout this reader claimed."""
        return stdout_of(path) in claimed

    def read_part(self, path: Path, start: int = 0, state: Mapping[str, Any] | None = None) -> FilePart:
        path = Path(path)
        if not (start and state is not None) and self.behind_logging_prefix(path):  # (a grown log goes on as it began)
            return _ranked.read_part(path, _prefix.LOGGING, self.parser, start, state)
        prefix = state.get("prefix") if start and state is not None else _ranked.prefix_of(path)
        if prefix:  # a launcher's rank prefix on its lines: one parser per rank
            return _ranked.read_part(path, prefix, self.parser, start, state)
        return _parts.read_part(path, self.parser(path), start, state)

    def join_parts(self, head: FilePart, tail: FilePart) -> FilePart:
        if _ranked.is_ranked(head) != _ranked.is_ranked(tail):
            raise ValueError("a ranked part joined to a plain one")  # pragma: no cover - read_part keeps the kind
        return _ranked.join(head, tail) if _ranked.is_ranked(head) else _parts.join(head, tail)

    def combine(self, files: list[Path], parts: list[FilePart]) -> list[RunData]:
        files = [Path(f) for f in files]
        ranks = rank_layout(files) if len(files) > 1 or _RANK_WORD.search(files[0].name) else None
        if any(_ranked.is_ranked(part) for part in parts):
            return [self._combine_lanes(files, parts, ranks or {})]
        if ranks:
            by_file = dict(zip(files, parts, strict=True))
            parsed = [_parts.finish_parts([f], [by_file[f]], self.parser) for f in sorted(files, key=ranks.get)]
        else:
            parsed = [_parts.finish_parts(files, parts, self.parser)]
        return [runs_from_parsed(parsed, ranks, as_columns=True)]

    def _combine_lanes(self, files: list[Path], parts: list[FilePart], file_ranks: dict[Path, int]) -> RunData:
        """The run of a job whose lines carry a launcher's rank prefix: each rank's lines (over the job's files:
        stderr, stdout) finished as one file of that rank; the launcher's own lines (rank -1) keep no rank. In a
        per-rank file (``file_ranks``) every line is the file's rank."""
        by_rank: dict[int, list[tuple[Path, FilePart]]] = defaultdict(list)
        prefixes = set()
        for file, part in zip(files, parts, strict=True):
            if _ranked.is_ranked(part):
                prefixes.add(part.state["prefix"])
                for rank, lane in _ranked.lane_parts(part).items():
                    by_rank[file_ranks.get(file, rank)].append((file, lane))
            else:
                by_rank[file_ranks.get(file, -1)].append((file, part))
        parsed = []
        for rank in sorted(by_rank):
            lane_files, lane_parts = zip(*by_rank[rank], strict=True)
            one = _parts.finish_parts(list(lane_files), list(lane_parts), self.parser)
            one.rank = rank if rank >= 0 else None
            one.label = f"rank {rank}" if rank >= 0 else "launcher"
            parsed.append(one)
        ranks = sorted(rank for rank in by_rank if rank >= 0)
        if len(parsed) == 1 and not ranks:  # a prefix that names no rank (Ray's actors): only removed
            parsed[0].label = ""
        run = runs_from_parsed(parsed, None)
        prefix = ", ".join(sorted(prefixes))
        run.notes.insert(0, f"{len(ranks)} rank(s) ({', '.join(map(str, ranks))}) of one job in one log, told apart "
                            f"by the launcher's line prefix ({prefix}), read as one run with a rank column" if ranks
                         else "the logging prefix of its lines (time, level, logger name) removed before reading"
                         if prefix == _prefix.LOGGING else f"the launcher's line prefix ({prefix}) removed before reading")
        return run

    def extend(self, files: list[Path], runs: list[RunData], tails: list[FilePart]) -> list[RunData] | None:
        """The run of one log with the lines it gained, when they simply continue it: no restart, no change
        to earlier rows, no hparams, rows whose steps go on past every step of their tag, and a format whose
        ``finish`` adds or moves no row (not HF's console, whose steps are derived from the whole log; not
        DeepSpeed's with throughput lines or overflow messages pending). Anything else returns None and the
        run is combined again from its files' parts (still read only from where they stopped)."""
        if len(files) != 1 or len(runs) != 1 or _RANK_WORD.search(Path(files[0]).name):
            return None
        if _ranked.is_ranked(tails[0]):
            return None  # combined again from its lanes (each still read only from where it stopped)
        run, tail = runs[0], tails[0]
        if not tail.meta:  # the file did not grow
            return runs
        meta = tail.meta
        if meta.get("whole") or not meta.get("settled") or meta["restarts"] or meta["hparams"] or meta["patches"]:
            return None
        if run.restarts or run.phases or any(note.endswith(REPLACED) for note in run.notes) or "state" in tail.tail:
            return None
        path = Path(files[0])
        parser = self.parser(path)
        new = _parts.finish_parts([path], [tail], self.parser, hparams=run.hparams)
        parser.restore(tail.state["parser"])
        if parser.finish_changes_rows() or new.restarts:
            return None
        scalars = _appended(run.scalars, new)
        if scalars is None:
            return None
        extended = _run_info([new], None, empty=not len(scalars))
        extended.scalars = scalars
        return [extended]


def _appended(old: pd.DataFrame | ScalarColumns, new: ParsedFile) -> pd.DataFrame | ScalarColumns | None:
    """``old`` followed by the rows of ``new`` when they go on past every step of their tag (and rank), so that
    no write replaces another; None otherwise, or when the rows need a column ``old`` lacks."""
    if isinstance(old, ScalarColumns):
        columns = _scalar_columns(new)
        if columns is None:
            return None
        index = {tag: code for code, tag in enumerate(old.tags)}
        remap = np.array([index.setdefault(tag, len(index)) for tag in columns.tags], dtype=np.int32)
        codes = remap[columns.codes] if len(columns.codes) else columns.codes
        steps = list(old.column_chunks("step"))
        if not _continues(lambda: old.codes, None, steps, codes, None, columns.step):
            return None
        return old.appended(tuple(index), codes, columns.step, columns.value, columns.wall_time)
    frame = new.rows.frame()
    if set(frame.columns) - set(old.columns) or not len(old):
        return None  # a column the run had not (epochs or ranks that begin now): combined again
    for name in set(old.columns) - set(frame.columns):
        frame[name] = pd.array([pd.NA] * len(frame), dtype=old[name].dtype) if name == "rank" else np.nan
    frame = frame[list(old.columns)]
    tags = list(dict.fromkeys([*old["tag"].cat.categories, *frame["tag"].cat.categories]))
    codes = [pd.Categorical(f["tag"], categories=tags).codes.astype(np.int64) for f in (old, frame)]
    ranks = [f["rank"].to_numpy(dtype=np.int64, na_value=-1) if "rank" in f else None for f in (old, frame)]
    if not _continues(lambda: codes[0], ranks[0], [old["step"].to_numpy()], codes[1], ranks[1],
                      frame["step"].to_numpy()):
        return None
    return concat_frames([old, frame])


def _continues(old_codes: Callable[[], np.ndarray], old_ranks: np.ndarray | None, old_steps: list[np.ndarray],
               codes: np.ndarray, ranks: np.ndarray | None, steps: np.ndarray) -> bool:
    """Whether the new steps of each tag (and rank) rise and start past its last step before (the old codes
    are only asked for when a new step is not past every old one)."""
    if not len(steps):
        return True
    span = int(max(ranks.max() if ranks is not None else -1, old_ranks.max() if old_ranks is not None else -1)) + 2
    groups = codes.astype(np.int64) * span + (ranks + 1 if ranks is not None else 0)
    order = np.argsort(groups, kind="stable")
    grouped, ordered = groups[order], steps[order]
    same = grouped[1:] == grouped[:-1]
    if not np.all(ordered[1:][same] > ordered[:-1][same]):
        return False
    highest = max((int(chunk.max()) for chunk in old_steps if len(chunk)), default=None)
    if highest is None or int(ordered.min()) > highest:  # the usual tail: past every step so far
        return True
    old_groups = old_codes().astype(np.int64) * span + (old_ranks + 1 if old_ranks is not None else 0)
    last = np.full(int(max(old_groups.max(), grouped.max())) + 1, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, old_groups, np.concatenate(old_steps))
    firsts = np.flatnonzero(np.concatenate(([True], ~same)))
    return bool(np.all(ordered[firsts] > last[grouped[firsts]]))
