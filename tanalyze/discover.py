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
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tanalyze.errors import InputError, NoLogsError
from tanalyze.readers import HEAD_BYTES, Reader, get_readers

__all__ = ["RunSpec", "Discovery", "discover"]


@dataclass(frozen=True)
class RunSpec:
    """Everything needed to read one run: a pure description, cheap to send to another process."""

    name: str
    directory: str
    format: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class Discovery:
    root: str
    runs: tuple[RunSpec, ...]
    unrecognized: tuple[str, ...] = ()
    skipped_dirs: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default=())


def _read_head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return None


def _claim(path: Path, readers: tuple[Reader, ...]) -> Reader | None:
    head = _read_head(path)
    if head is None:
        return None
    for reader in readers:
        if reader.sniff(path, head):
            return reader
    return None


def _walk(root: Path, errors: list[str], skipped: list[str]):
    def on_error(exc: OSError) -> None:
        errors.append(f"{exc.filename}: {exc.strerror or exc}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        kept = []
        for d in sorted(dirnames):
            if d.startswith("."):
                skipped.append(os.path.join(dirpath, d))
            else:
                kept.append(d)
        dirnames[:] = kept
        for filename in sorted(filenames):
            full = Path(dirpath) / filename
            if full.is_symlink() and not full.resolve().is_relative_to(root.resolve()):
                skipped.append(str(full))
                continue
            yield full


def _run_name(root: Path, directory: Path, single_file: bool) -> str:
    if single_file:
        return directory.name
    rel = directory.relative_to(root)
    return root.resolve().name if str(rel) == "." else rel.as_posix()


def discover(path: str | os.PathLike[str], *, formats: tuple[str, ...] | None = None) -> Discovery:
    """Find the runs under ``path``.

    ``formats`` restricts discovery to those reader names. Raises
    :class:`InputError` when the path does not exist or cannot be read and
    :class:`NoLogsError` when it holds no log any reader recognises.
    """
    root = Path(path)
    if not root.exists():
        raise InputError(f"{root}: no such file or folder")
    readers = get_readers()
    if formats:
        unknown = set(formats) - {r.name for r in readers}
        if unknown:
            raise InputError(f"unknown format(s) {sorted(unknown)}; known: {', '.join(r.name for r in readers)}")
        readers = tuple(r for r in readers if r.name in formats)

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
    by_name = {r.name: r for r in readers}
    unrecognized: list[str] = []
    for file in files:
        reader = _claim(file, readers)
        if reader is None:
            unrecognized.append(str(file))
        else:
            directory = reader.run_directory(file)
            if not single_file and not directory.is_relative_to(root):
                directory = root  # a run folder above the given path: the given path is the run
            claimed[(directory, reader.name)].append(file)

    # A folder can hold several formats (e.g. a CSV and a TensorBoard logger) or
    # several unrelated runs of one format; both get distinguishing names.
    formats_per_dir: dict[Path, int] = defaultdict(int)
    for directory, _ in claimed:
        formats_per_dir[directory] += 1

    runs: list[RunSpec] = []
    for (directory, reader_name), group_files in sorted(claimed.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        reader = by_name[reader_name]
        base = root.name if single_file else _run_name(root, directory, False)
        groups = reader.group(group_files)
        for group in groups:
            name = base
            if len(groups) > 1:
                name = f"{base}/{_group_label(group)}" if base else _group_label(group)
            if formats_per_dir[directory] > 1:
                name = f"{name} [{reader_name}]"
            runs.append(
                RunSpec(
                    name=name,
                    directory=str(directory),
                    format=reader_name,
                    files=tuple(str(f) for f in sorted(group)),
                )
            )
    if not runs:
        detail = f"; {len(unrecognized)} file(s) not recognised" if unrecognized else ""
        raise NoLogsError(f"{root}: no training logs found{detail}")
    return Discovery(
        root=str(root),
        runs=tuple(runs),
        unrecognized=tuple(unrecognized),
        skipped_dirs=tuple(skipped),
        errors=tuple(errors),
    )


def _group_label(files: list[Path]) -> str:
    """A short label for a group of files of one run: the common stem of their names."""
    stems = sorted(f.name for f in files)
    if len(stems) == 1:
        return stems[0]
    prefix = os.path.commonprefix(stems).rstrip("._-")
    return prefix or stems[0]
