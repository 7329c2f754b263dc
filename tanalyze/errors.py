"""Errors raised by tanalyze.

Every error the toolkit raises on purpose derives from :class:`TanalyzeError`,
so callers can catch one type::

    TanalyzeError
    ├── InputError          the path or arguments cannot be used (CLI exit code 2)
    │   └── NoLogsError     the path exists but holds no log file tanalyze can read
    ├── FormatError         one file is not what its format promised (reported as a run warning)
    └── ConfigError         a config or baseline file is invalid (CLI exit code 2)

Readers raise :class:`FormatError` for a file they cannot read at all; ``load``
turns it into a warning on the run, so one bad file never stops a load.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TanalyzeError", "InputError", "NoLogsError", "FormatError", "ConfigError"]


class TanalyzeError(Exception):
    """Base class of every error tanalyze raises on purpose."""


class InputError(TanalyzeError):
    """A path or argument given by the user cannot be used."""


class NoLogsError(InputError):
    """A path exists but holds no training log that any reader recognises."""


class FormatError(TanalyzeError):
    """A file cannot be read as the format it was taken for.

    The message always names the file; ``location`` says where (byte offset or line).
    """

    def __init__(self, path: str | Path, message: str, location: str | None = None) -> None:
        self.path = str(path)
        self.reason = message
        self.location = location
        where = f" at {location}" if location else ""
        super().__init__(f"{self.path}{where}: {message}")


class ConfigError(TanalyzeError):
    """A config, policy or baseline file is invalid."""
