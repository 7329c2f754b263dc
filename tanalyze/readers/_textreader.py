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

import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from tanalyze.readers import _textparts
from tanalyze.readers._lines import TEXT_SUFFIXES, looks_like_text, sniff_window
from tanalyze.readers._textparse import ParsedFile, TextParser, dedupe
from tanalyze.readers.base import FilePart, ReadWarning, ResumableReader, RunData
from tanalyze.schema import concat_frames, empty_scalars

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


def _group_files(files: list[Path]) -> list[list[Path]]:
    files = sorted(files)
    groups: list[list[Path]] = []
    rest: list[Path] = []
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


def runs_from_parsed(parsed: list[ParsedFile], ranks: dict[Path, int] | None) -> RunData:
    """Combine the parsed files of one run: concatenate, apply last-write-wins, gather notes."""
    several = len(parsed) > 1
    frames = []
    for part in parsed:
        rank = ranks.get(part.path) if ranks else None
        frames.append(part.rows.frame(rank=rank, source=part.path.name if several and ranks else None))
    frame = concat_frames(frames) if frames else empty_scalars()
    frame, dropped = dedupe(frame)
    notes: list[str] = []
    if ranks:
        notes.append(f"{len(ranks)} per-rank log file(s) read as one run; the rank column tells them apart")
    restarts = [r for part in parsed for r in part.restarts]
    warnings = [w for part in parsed for w in part.warnings]
    hparams: dict = {}
    for part in parsed:
        prefix = f"{part.path.name}: " if several and ranks else ""
        notes.extend(prefix + note for note in part.notes)
        for key, value in part.hparams.items():
            hparams.setdefault(key, value)
    if frame.empty and not warnings:
        names = ", ".join(str(part.path) for part in parsed)
        family = parsed[0].family if parsed else "console"
        warnings.append(
            ReadWarning(names, f"no {family} metric line could be read from this file (empty, binary or another format)")
        )
    if dropped:
        why = "after a restart" if restarts else "twice at the same step"
        notes.append(f"{dropped:,} point(s) logged {why} were replaced by the later write (last write wins)")
    return RunData(scalars=frame, hparams=hparams, warnings=warnings, restarts=restarts, notes=notes)


class TextReader(ResumableReader):
    """A console-log format: subclasses set ``name``, ``description``, ``parser`` and ``detect``.

    Resumable (see :mod:`._textparts`): a log that grew is read on from its last line break.
    """

    parser: ClassVar[type[TextParser]]
    cache_version = 2

    def detect(self, window: str) -> bool:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def sniff(self, path: Path, head: bytes) -> bool:
        if not is_console_candidate(path, head):
            return False
        return self.detect(sniff_window(path))

    def group(self, files: list[Path]) -> list[list[Path]]:
        return _group_files(files)

    def read_part(self, path: Path, start: int = 0, state: Mapping[str, Any] | None = None) -> FilePart:
        path = Path(path)
        return _textparts.read_part(path, self.parser(path), start, state)

    def join_parts(self, head: FilePart, tail: FilePart) -> FilePart:
        return _textparts.join(head, tail)

    def combine(self, files: list[Path], parts: list[FilePart]) -> list[RunData]:
        files = [Path(f) for f in files]
        ranks = rank_layout(files) if len(files) > 1 or _RANK_WORD.search(files[0].name) else None
        if ranks:
            by_file = dict(zip(files, parts, strict=True))
            parsed = [_textparts.finish_parts([f], [by_file[f]], self.parser) for f in sorted(files, key=ranks.get)]
        else:
            parsed = [_textparts.finish_parts(files, parts, self.parser)]
        return [runs_from_parsed(parsed, ranks)]
