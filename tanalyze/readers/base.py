"""What every reader is and returns.

A reader knows one family of log files. ``sniff`` says whether a file is one of
its own (by name and by content), ``group`` splits the files it claimed in one
folder into runs, and ``read`` turns one run's files into :class:`RunData`.
Readers never print and never raise for damaged content: they keep what is
intact and describe the rest in ``warnings``. A file that cannot be read at all
raises :class:`~tanalyze.errors.FormatError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from tanalyze.schema import empty_histograms, empty_scalars

__all__ = ["Reader", "RunData", "ReadWarning", "Restart", "HEAD_BYTES"]

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

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "file": self.file, "detail": self.detail}


@dataclass
class RunData:
    """One run as a reader returns it (mutable while the reader builds it).

    ``scalars`` is a tidy table; its ``run`` column is filled in by ``load``.
    ``name`` is set only when one file holds several runs (a W&B chart export):
    it is appended to the run's folder name.
    """

    scalars: pd.DataFrame = field(default_factory=empty_scalars)
    histograms: pd.DataFrame = field(default_factory=empty_histograms)
    hparams: Mapping[str, Any] = field(default_factory=dict)
    warnings: list[ReadWarning] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    text: Mapping[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    name: str | None = None
    extra_files: list[Path] = field(default_factory=list)


class Reader(ABC):
    """A log format family. Subclasses set ``name`` and ``description``."""

    name: ClassVar[str]
    description: ClassVar[str]

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

    @abstractmethod
    def read(self, files: list[Path]) -> list[RunData]:
        """Read one run's files. Usually returns one ``RunData``; several when a file holds several runs."""
