"""What every reader is and returns.

A reader knows one family of log files. ``sniff`` says whether a file is one of
its own (by name and by content), ``group`` splits the files it claimed in one
folder into runs, and ``read`` turns one run's files into :class:`RunData`.
Readers never print and never raise for damaged content: they keep what is
intact and describe the rest in ``warnings``. A file that cannot be read at all
raises :class:`~tanalyze.errors.FormatError`.

Resuming (for the incremental cache). Log files only grow, so a reader of a
format with record or line boundaries can subclass :class:`ResumableReader`:
``read_part(path, start, state)`` parses one file from byte ``start`` (a boundary
a previous part ended at, with that part's ``state``) and returns a
:class:`FilePart` of the new rows, the offset where it stopped (the end of the
last *complete* record; a partial record being written is left for next time)
and the state to go on from there. ``join_parts`` appends a later part to an
earlier one, and ``combine`` turns one part per file into the run (run-level
rules such as restarts or last-write-wins are applied there, from the parts).
The contract: ``join_parts(read_part(f, 0), read_part(f, B, S))`` equals
``read_part(f, 0)`` whenever ``B, S`` came from a part of the same file's
prefix. Every other reader is cached whole, per run, and re-read on any change.

A resumable reader may also ``extend`` a run it combined before with what its
files gained since (the parts read from where each file's last part ended),
when the new rows simply continue the run; otherwise it returns None and the run
is combined again from whole parts. That keeps a re-read of a growing log
proportional to what was appended, not to the run. ``read_parts`` reads many
files on at once (the cache hands it every grown file of a chunk of runs); a
reader may override it to share its fixed costs between them, as long as each
part equals what ``read_part`` gives.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tanalyze.schema import ScalarColumns, empty_histograms, empty_scalars

__all__ = ["Reader", "ResumableReader", "FilePart", "RunData", "ReadWarning", "Restart", "Phase", "HEAD_BYTES"]

#: How many leading bytes of every file discovery hands to ``sniff``.
HEAD_BYTES = 4096


@dataclass(frozen=True)
class ReadWarning:
    """Something a reader skipped or doubted, with where it was.

    ``count`` is how many records/lines this warning covers, so that nothing
    dropped goes uncounted even when examples are abbreviated.
    """

    file: str
    message: str
    location: str | None = None
    count: int = 1

    def __str__(self) -> str:
        where = f" ({self.location})" if self.location else ""
        return f"{self.file}{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "message": self.message, "location": self.location, "count": self.count}


@dataclass(frozen=True)
class Restart:
    """A resumed job: steps from ``step`` on were logged again and the later write was kept."""

    step: int
    file: str | None = None
    detail: str = ""
    #: the highest step the abandoned attempt had logged (None: not known); ``until - step`` steps were redone
    until: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "file": self.file, "detail": self.detail}
        if self.until is not None:
            out["until"] = self.until
        return out


@dataclass(frozen=True)
class Phase:
    """One training session of a run whose log holds several, on the run's one step axis.

    A log that a second session was appended to (Keras ``CSVLogger(append=True)``
    across two ``fit()`` calls, a second ``fit()`` into the same TensorBoard
    folder) starts its steps over. Each session is a phase: its own steps are
    shifted by ``offset`` so that it continues right after the previous phase
    (``first_step``/``last_step`` are on the run's axis, after the shift; the
    source wrote ``first_step - offset`` …). ``unit`` names what a step counts
    in this source (``step``, ``epoch``, ``iteration``). A run with one session
    has no phases.
    """

    index: int
    first_step: int
    last_step: int
    offset: int = 0
    file: str | None = None
    detail: str = ""
    unit: str = "step"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "first_step": self.first_step, "last_step": self.last_step,
                "offset": self.offset, "file": self.file, "detail": self.detail, "unit": self.unit}


@dataclass
class RunData:
    """One run as a reader returns it (mutable while the reader builds it).

    ``scalars`` is a tidy table, or its columns as arrays (:class:`~tanalyze.schema.ScalarColumns`:
    ``load`` joins the arrays of thousands of runs without a table per run); its ``run`` column is
    filled in by ``load``.
    ``name`` is set only when one file holds several runs (a W&B chart export):
    it is appended to the run's folder name. ``phases`` lists the sessions of a
    log that holds several (see :class:`Phase`); empty for one session.
    """

    scalars: pd.DataFrame | ScalarColumns = field(default_factory=empty_scalars)
    histograms: pd.DataFrame = field(default_factory=empty_histograms)
    hparams: Mapping[str, Any] = field(default_factory=dict)
    warnings: list[ReadWarning] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    text: Mapping[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    name: str | None = None
    extra_files: list[Path] = field(default_factory=list)
    #: Which of the read files hold this run, when they hold several (an MLflow store): None for all of them.
    own_files: list[Path] | None = None
    #: The name the run's owner knows it by, when the files say (a W&B run's display name and id):
    #: it replaces the last part of the folder-based name.
    title: str | None = None

    def scalar_table(self) -> pd.DataFrame:
        """The scalars as a tidy table (built from the arrays when they are held as such; ``run`` left empty)."""
        if isinstance(self.scalars, ScalarColumns):
            return self.scalars.frame("") if len(self.scalars) else empty_scalars()
        return self.scalars


class Reader(ABC):
    """A log format family. Subclasses set ``name`` and ``description``.

    ``cache_version``: bump it whenever a change to the reader changes what it
    returns for the same bytes, so that cached results of the old code are not used.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    cache_version: ClassVar[int] = 1

    @abstractmethod
    def sniff(self, path: Path, head: bytes) -> bool:
        """Whether ``path`` (whose first bytes are ``head``) is a file of this format."""

    def run_directory(self, path: Path) -> Path:
        """The folder that is the run a claimed file belongs to (default: the file's own folder).

        Formats that spread one run over sub-folders (a W&B run keeps ``files/`` and
        ``logs/`` under ``run-*/``) return the run's top folder here.
        """
        return path.parent

    def group(self, files: list[Path]) -> list[list[Path]]:
        """Split the files this reader claimed in one folder into runs (default: one run)."""
        return [sorted(files)]

    def companion(self, path: Path, claimed: set[Path]) -> bool:
        """Whether ``path``, which no reader claims, belongs with files this reader claimed in its folder
        (``claimed``): a job's stderr beside its stdout (default: no)."""
        return False

    def head_tags(self, head: bytes) -> tuple[str, ...]:
        """The tags a file's first bytes already name (default: none known).

        Discovery uses them to recognise how one run was split over folders by its writer
        (see :mod:`tanalyze.identity`) without reading whole files.
        """
        return ()

    @abstractmethod
    def read(self, files: list[Path]) -> list[RunData]:
        """Read one run's files. Usually returns one ``RunData``; several when a file holds several runs."""


@dataclass
class FilePart:
    """What a :class:`ResumableReader` read of one file, from a boundary up to ``end``.

    Plain data only, so that the cache can store it without pickle: ``columns``
    are equal-length row arrays (numeric dtypes), ``meta`` and ``state`` JSON
    values (the reader's lists, counts, warnings as dicts …). ``tail`` describes the
    bytes after ``end`` (an unfinished record): valid only for this exact file
    size, it is replaced, not joined, when the file is read on.
    """

    end: int
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    tail: dict[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    @property
    def clean_end(self) -> bool:
        """Whether the part ends at a boundary with nothing pending after it (``tail`` holds only the size)."""
        return not any(value for key, value in self.tail.items() if key != "size")

    @classmethod
    def unreadable(cls, path: Path, exc: OSError) -> FilePart:
        """The part of a file that could not be opened: no rows, a warning in ``tail["warnings"]``."""
        warning = ReadWarning(str(path), f"could not read: {exc.strerror or exc}")
        return cls(end=0, tail={"unreadable": True, "warnings": [warning.to_dict()]})


class ResumableReader(Reader):
    """A reader that can parse a file from where an earlier read stopped (see the module doc)."""

    @abstractmethod
    def read_part(self, path: Path, start: int = 0, state: Mapping[str, Any] | None = None) -> FilePart:
        """Parse ``path`` from byte ``start`` (0, or the ``end`` of an earlier part with its ``state``)."""

    def read_parts(self, requests: Sequence[tuple[Path, int, Mapping[str, Any] | None]]) -> list[FilePart | OSError]:
        """``read_part(path, start, state)`` for each request, an ``OSError`` in place of a part that raised one.

        Many files read on at once (a sweep's logs that each grew a little): a reader may
        override this to parse them together, paying its fixed costs once rather than per
        file; each part must equal what ``read_part`` gives for its request.
        """
        out: list[FilePart | OSError] = []
        for path, start, state in requests:
            try:
                out.append(self.read_part(path, start, state))
            except OSError as exc:
                out.append(exc)
        return out

    @abstractmethod
    def join_parts(self, head: FilePart, tail: FilePart) -> FilePart:
        """One part of a file from its first part and the part read on from ``head.end``."""

    @abstractmethod
    def combine(self, files: list[Path], parts: list[FilePart]) -> list[RunData]:
        """The run(s) of ``files`` from one part per file (in the order of ``files``).

        ``scalars`` may be a :class:`~tanalyze.schema.ScalarColumns` here (arrays: thousands
        of runs are then joined without a pandas table each); :meth:`read` makes it a table.
        """

    def extend(self, files: list[Path], runs: list[RunData], tails: list[FilePart]) -> list[RunData] | None:
        """``runs`` (what ``combine`` made of ``files`` before) with ``tails`` (one part per file, read on from
        where that file's last part ended, cleanly) appended; None when that needs a full ``combine``.

        The default always says None. An override must return exactly what ``combine`` would return for
        the joined parts, or None.
        """
        return None

    def read(self, files: list[Path]) -> list[RunData]:
        files = [Path(f) for f in files]
        runs = self.combine(files, [self.read_part_or_warn(f) for f in files])
        label = files[0].parent.name if files else ""
        for run in runs:
            if isinstance(run.scalars, ScalarColumns):
                run.scalars = run.scalars.frame(label)
        return runs

    def read_part_or_warn(self, path: Path, start: int = 0, state: Mapping[str, Any] | None = None) -> FilePart:
        """``read_part``, with a file that cannot be opened turned into a part that says so."""
        try:
            return self.read_part(path, start, state)
        except OSError as exc:
            return FilePart.unreadable(path, exc)
