"""Walk a path and group its log files into runs.

A run is the folder that holds its log files; its name is that folder's path
relative to the path given (a file given directly is its own run). Each file
goes to the first registered reader whose ``sniff`` claims it. Hidden folders
(``.git``, ``.ipynb_checkpoints`` …) are not entered, symlinked folders are not
followed (no loops, no leaving the given path), and files nobody claims are
listed so the caller can say what was ignored.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Protocol

from tanalyze.errors import InputError, NoLogsError
from tanalyze.identity import RunPart, Source, identify, run_name
from tanalyze.readers import HEAD_BYTES, Reader, get_readers
from tanalyze.readers.text.generic import GenericTextReader
from tanalyze.readers.text.job_console import JOB_CONSOLE_FORMAT
from tanalyze.readers.text.pattern import PATTERN_FORMAT, PatternReader, UserPattern, match_pattern
from tanalyze.runstatus.scan import is_console_log, may_show_a_failure, run_status
from tanalyze.text import writable

__all__ = ["RunSpec", "Discovery", "NotRead", "HeadTagsMemo", "discover"]


class HeadTagsMemo(Protocol):
    """The tags of files' first records, remembered from an earlier discovery while a file keeps its stamp
    (run identity needs them; decoding thousands of heads again costs more than the rest of discovery).
    :class:`tanalyze.cache.heads.StoredHeadTags` keeps them in the cache."""

    def stamp(self, path: Path) -> object | None:
        """The file's stamp, taken before its head is read (None: not remembered)."""

    def tags(self, path: Path, reader: str, stamp: object, compute: Callable[[], tuple[str, ...]]) -> tuple[str, ...]:
        """The tags remembered for ``path`` read by ``reader`` at ``stamp``, else ``compute()`` (then remembered)."""

_WEIGHTS = {".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".h5", ".keras", ".onnx", ".pb", ".npz", ".npy", ".pkl",
            ".index", ".data-00000-of-00001", ".msgpack", ".gguf"}
_IMAGES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".bmp", ".webp", ".tif", ".tiff", ".mp4", ".avi"}
_CONFIGS = {".yaml", ".yml", ".toml", ".cfg", ".ini", ".py", ".sh", ".md", ".ipynb", ".html", ".pdf"}
_TEXTS = {".log", ".txt", ".out", ".err", ".csv", ".json", ".jsonl", ".tsv", ""}


@dataclass(frozen=True)
class NotRead:
    """A file or folder under the path that is in no run, and why."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


def unrecognised_reason(path: str) -> str:
    """Why no reader took a file, with what the user can do about it."""
    suffix = Path(path).suffix.lower()
    if suffix in _WEIGHTS:
        return "model weights or arrays, not a log"
    if suffix in _IMAGES:
        return "an image or video, not a log"
    if suffix in _CONFIGS:
        return "a config, script or document, not a log"
    if suffix in _TEXTS or suffix[1:].isdigit():
        return ("no reader recognises it; if it is a training log, read it with --pattern REGEX "
                "(named groups: step and one per metric) or name its format with --format")
    return "no reader recognises it"


@dataclass(frozen=True)
class RunSpec:
    """Everything needed to read one run: a pure description, cheap to send to another process."""

    name: str
    directory: str
    format: str
    files: tuple[str, ...]
    pattern: str | None = None  # the user regex, for runs of format "pattern"
    parts: tuple[RunPart, ...] = ()  # set when the run was written to several places (see tanalyze.identity)
    #: console logs no reader claims in the run's folder or the nearest folder above it that has some
    #: (stdout/stderr a batch system kept): read for the run's status only
    consoles: tuple[str, ...] = ()

    def part_specs(self) -> tuple[RunSpec, ...]:
        """One spec per part of a joined run (each read by its own reader); the spec itself otherwise."""
        if not self.parts:
            return (self,)
        return tuple(
            RunSpec(name=self.name, directory=p.directory, format=p.format, files=p.files, pattern=p.pattern)
            for p in self.parts
        )


@dataclass(frozen=True)
class Discovery:
    root: str
    runs: tuple[RunSpec, ...]
    unrecognized: tuple[str, ...] = ()
    skipped_dirs: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default=())

    @property
    def not_read(self) -> tuple[NotRead, ...]:
        """Every file or folder under the path that no run holds, with its reason."""
        found = [NotRead(f, unrecognised_reason(f)) for f in self.unrecognized]
        found += [NotRead(d, "hidden or symlinked: not entered (symlinks are not followed)") for d in self.skipped_dirs]
        for error in self.errors:
            path, _, why = error.partition(": ")
            found.append(NotRead(path, why or error))
        return tuple(found)


def _read_head(path: Path, errors: list[str] | None = None) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError as exc:
        if errors is not None:  # said, not just "not recognised": the file may well be a log
            errors.append(f"{path}: could not read: {exc.strerror or exc}")
        return None


def _claim(path: Path, readers: tuple[Reader, ...], errors: list[str] | None = None) -> tuple[Reader | None, bytes]:
    """The first reader that claims ``path``, and the file's first bytes."""
    head = _read_head(path, errors)
    if head is None:
        return None, b""
    for reader in readers:
        if reader.sniff(path, head):
            return reader, head
    return None, head


def _walk(root: Path, errors: list[str], skipped: list[str]):
    def on_error(exc: OSError) -> None:
        errors.append(f"{exc.filename}: {exc.strerror or exc}")

    inside = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        kept = []
        for d in sorted(dirnames):
            if d.startswith(".") or os.path.islink(os.path.join(dirpath, d)):  # symlinked folders: never entered
                skipped.append(os.path.join(dirpath, d))
            else:
                kept.append(d)
        dirnames[:] = kept
        for filename in sorted(filenames):
            full = Path(dirpath) / filename
            if full.is_symlink() and not _resolves_inside(full, inside):
                skipped.append(str(full))
                continue
            yield full


def _resolves_inside(link: Path, inside: Path) -> bool:
    """Whether a symlinked file points into the folder given (a loop or a dangling link does not)."""
    try:
        return link.resolve(strict=True).is_relative_to(inside)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def discover(
    path: str | os.PathLike[str],
    *,
    formats: tuple[str, ...] | None = None,
    patterns: Sequence[UserPattern] = (),
    join: bool | None = None,
    heads: HeadTagsMemo | None = None,
) -> Discovery:
    """Find the runs under ``path``.

    ``formats`` restricts discovery to those reader names. ``patterns`` are user
    line patterns (:mod:`tanalyze.readers.text.pattern`): one with a glob takes the
    files it matches before any reader; one without takes text files that no
    reader claims, or only the generic text reader (a guess), and in which it matches. ``join`` applies the run-identity rules of
    :mod:`tanalyze.identity` (folders one writer split a run over, twins); False gives
    one run per folder and format; None takes ``[runs] join`` from the nearest config
    file at or above ``path`` (default true). Raises
    :class:`InputError` when the path does not exist or cannot be read and
    :class:`NoLogsError` when it holds no log any reader recognises. ``heads`` remembers the tags of the
    files' first records between discoveries (same answer, less decoding).
    """
    root = Path(path)
    if not root.exists():
        raise InputError(f"{root}: no such file or folder")
    readers = get_readers()
    if formats:
        unknown = set(formats) - {r.name for r in readers} - {PATTERN_FORMAT}
        if unknown:
            raise InputError(f"unknown format(s) {sorted(unknown)}; known: {', '.join(r.name for r in readers)}")
        readers = tuple(r for r in readers if r.name in formats)

    if join is None:
        from tanalyze.config import join_runs_setting

        join = join_runs_setting(root)
    errors: list[str] = []
    skipped: list[str] = []
    single_file = root.is_file()
    if single_file:
        if not os.access(root, os.R_OK):
            raise InputError(f"{root}: permission denied")
        files = [root]
    else:
        if not os.access(root, os.R_OK | os.X_OK):
            raise InputError(f"{root}: permission denied")
        files = list(_walk(root, errors, skipped))

    claimed: dict[tuple[Path, str], list[Path]] = defaultdict(list)
    head_tags: dict[Path, tuple[str, ...]] = {}
    by_name = {r.name: r for r in readers}
    unrecognized: list[str] = []
    quiet: set[str] = set()  # unrecognised files read whole that hold no word of a failure
    use_patterns = bool(patterns) and (not formats or PATTERN_FORMAT in formats)
    by_pattern: dict[tuple[Path, str], list[Path]] = defaultdict(list)
    base = root.parent if single_file else root
    for file in files:
        user = match_pattern(file, base, patterns, None) if use_patterns else None
        stamp = heads.stamp(file) if heads is not None and join and user is None else None  # before the head is read
        reader, head = _claim(file, readers, errors) if user is None else (None, b"")
        if (reader is None or reader.name == GenericTextReader.name) and user is None and use_patterns:
            # a user's pattern is meant; the generic reader's reading of custom lines is a guess
            user = match_pattern(file, base, patterns, head or _read_head(file))
        if user is not None:
            by_pattern[(file.parent, user.regex)].append(file)
        elif reader is None:
            unrecognized.append(str(file))
            if len(head) < HEAD_BYTES and not may_show_a_failure(head):
                quiet.add(str(file))  # all of it read: no line a failed job's tail shows
        else:
            directory = reader.run_directory(file)
            if not single_file and not _within(directory, root):
                directory = root  # a run folder above the path given: the path itself is the run
            claimed[(directory, reader.name)].append(file)
            if join:
                found = (reader.head_tags(head) if stamp is None
                         else heads.tags(file, reader.name, stamp, partial(reader.head_tags, head)))
                if found:
                    head_tags[file] = found
    unrecognized = _companions(unrecognized, claimed, by_name)
    for (directory, _), group_files in by_pattern.items():
        claimed[(directory, PATTERN_FORMAT)].extend(group_files)
    pattern_of = {f: regex for (_, regex), group_files in by_pattern.items() for f in group_files}
    if by_pattern:
        by_name[PATTERN_FORMAT] = PatternReader()

    sources: list[Source] = []
    for (directory, reader_name), group_files in sorted(claimed.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        reader = by_name[reader_name]
        groups = reader.group(group_files)
        if reader_name == PATTERN_FORMAT:  # one run never mixes two patterns
            groups = [g for group in groups for g in _split_by(group, pattern_of)]
        for group in groups:
            tags: dict[str, None] = {}
            for file in group:
                tags.update(dict.fromkeys(head_tags.get(file, ())))
            pattern = pattern_of.get(group[0]) if reader_name == PATTERN_FORMAT else None
            sources.append(Source(directory, reader_name, sorted(group), pattern, tuple(tags)))

    runs: list[RunSpec] = []
    for run in identify(root, sources, single_file=single_file, join=join, label_of=_group_label):
        main = run.members[0].source
        parts = run.parts() if run.joined else ()
        files = tuple(f for part in parts for f in part.files) if parts else tuple(str(f) for f in sorted(main.files))
        runs.append(
            RunSpec(
                name=writable(run.name),  # a folder name that is not UTF-8 still names the run
                directory=str(run.directory),
                format=main.format,
                files=files,
                pattern=main.pattern,
                parts=parts,
            )
        )
    runs = _with_consoles(runs, unrecognized, root)
    if not formats or JOB_CONSOLE_FORMAT in formats:
        failed = _failed_jobs(runs, [f for f in unrecognized if f not in quiet], root, single_file)
        if failed:
            taken = {f for run in failed for f in run.files}
            unrecognized = [f for f in unrecognized if f not in taken]
            runs += failed
    if not runs:
        detail = ""
        if unrecognized:
            shown = ", ".join(os.path.relpath(f, root) if not single_file else f for f in unrecognized[:5])
            more = f" and {len(unrecognized) - 5} more" if len(unrecognized) > 5 else ""
            detail = (f"; {len(unrecognized)} file(s) not recognised ({shown}{more}). A text log no reader knows "
                      "can be read with --pattern REGEX (named groups: step and one per metric); --format NAME "
                      "names a reader (tanalyze runs --help lists them)")
        if errors:
            detail += f"; {len(errors)} could not be read ({errors[0]}{', …' if len(errors) > 1 else ''})"
        links = [path for path in skipped if os.path.islink(path)]
        if links:
            detail += (f"; {len(links)} symlink(s) not followed ({os.path.relpath(links[0], root)}"
                       f"{', …' if len(links) > 1 else ''}): give a link itself to read what it points to")
        raise NoLogsError(f"{root}: no training logs found{detail}")
    return Discovery(
        root=str(root),
        runs=tuple(runs),
        unrecognized=tuple(unrecognized),
        skipped_dirs=tuple(skipped),
        errors=tuple(errors),
    )


def _companions(unrecognized: list[str], claimed: dict[tuple[Path, str], list[Path]],
                by_name: dict[str, Reader]) -> list[str]:
    """Unclaimed files that a reader takes with its claimed ones (a job's stderr beside its stdout): moved into
    that reader's group; the rest stay not read."""
    if not unrecognized:
        return unrecognized
    by_folder: dict[Path, list[tuple[Path, str]]] = defaultdict(list)
    for (directory, name), group_files in claimed.items():
        for file in group_files:
            by_folder[file.parent].append((directory, name))
    rest = []
    for text in unrecognized:
        file = Path(text)
        for directory, name in dict.fromkeys(by_folder.get(file.parent, ())):
            files = claimed[(directory, name)]
            if by_name[name].companion(file, set(files)):
                files.append(file)
                break
        else:
            rest.append(text)
    return rest


def _with_consoles(runs: list[RunSpec], unrecognized: list[str], root: Path) -> list[RunSpec]:
    """Each run with the unclaimed console logs that speak for it, up to ``root``.

    The console logs of the nearest folder at or above the run are its own when that folder holds no other
    run. A folder above several runs (a sweep's ``train.log``) says nothing about which of them it belongs
    to: a run there gets only a console named after it (``lr1.log`` beside ``lr1/``), never all of them.
    """
    by_folder: dict[Path, list[str]] = defaultdict(list)
    for file in unrecognized:
        if is_console_log(file):
            by_folder[Path(file).parent].append(file)
    if not by_folder:
        return runs
    top = root if root.is_dir() else root.parent
    owners: dict[Path, int] = defaultdict(int)  # console folder -> runs at or below it
    nearest: list[Path | None] = []
    for run in runs:
        folder = Path(run.directory)
        found = None
        if not any(is_console_log(f) for f in run.files):  # its own console speaks for it
            while True:
                if folder in by_folder:
                    found = folder
                    break
                if folder == top or folder.parent == folder or not _within(folder, top):
                    break
                folder = folder.parent
        nearest.append(found)
        for folder in (Path(run.directory), *Path(run.directory).parents):
            if folder in by_folder:
                owners[folder] += 1
    out = []
    for run, folder in zip(runs, nearest, strict=True):
        if folder is not None:
            consoles = by_folder[folder]
            if owners[folder] > 1:
                names = {Path(run.directory).name, run.name.rsplit("/", 1)[-1]}
                consoles = [c for c in consoles if Path(c).stem in names]
            if consoles:
                run = replace(run, consoles=tuple(sorted(consoles)))
        out.append(run)
    return out


def _failed_jobs(runs: list[RunSpec], unrecognized: list[str], root: Path, single_file: bool) -> list[RunSpec]:
    """A run for each unclaimed console log that no run took as its own and whose tail shows its job failed
    (crashed, out of memory, killed, hung): a job that ended before it logged a metric is still a run.

    Named like the other runs: its folder, or folder/file where the folder holds other runs or several such logs.
    """
    attached = {c for run in runs for c in run.consoles}
    found = [Path(f) for f in unrecognized if f not in attached and is_console_log(f) and run_status([f]).failed]
    if not found:
        return []
    per_folder = Counter(f.parent for f in found)
    with_runs = {Path(run.directory) for run in runs}
    taken = {run.name for run in runs}
    out = []
    for file in found:
        base = root.name if single_file else run_name(root, file.parent)
        name = base if per_folder[file.parent] == 1 and file.parent not in with_runs else f"{base}/{file.name}"
        if name in taken:
            name = f"{name} [{JOB_CONSOLE_FORMAT}]"
        taken.add(name)
        out.append(RunSpec(name=writable(name), directory=str(file.parent), format=JOB_CONSOLE_FORMAT,
                           files=(str(file),)))
    return out


def _within(directory: Path, root: Path) -> bool:
    try:
        directory.relative_to(root)
    except ValueError:
        return False
    return True


def _split_by(group: list[Path], pattern_of: dict[Path, str]) -> list[list[Path]]:
    parts: dict[str, list[Path]] = defaultdict(list)
    for file in group:
        parts[pattern_of[file]].append(file)
    return list(parts.values())


def _group_label(files: list[Path]) -> str:
    """A short label for a group of files of one run: the common stem of their names."""
    stems = sorted(f.name for f in files)
    if len(stems) == 1:
        return stems[0]
    prefix = os.path.commonprefix(stems).rstrip("._-")
    return prefix or stems[0]
