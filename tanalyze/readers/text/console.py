"""One entry point for console logs of any supported format.

:func:`parse_console_file` recognises the format of one console capture by
its content and reads it. The formats tried, and their order, are those of
the registry (:data:`tanalyze.readers.READERS`): every registered
:class:`~tanalyze.readers.text._reader.TextReader`, specific before generic,
so adding a console format there is enough. Other readers use this for
console text they find inside their own formats, e.g.
``wandb/run-*/files/output.log``.
"""

from __future__ import annotations

from pathlib import Path

from tanalyze.readers import get_readers
from tanalyze.readers.base import RunData
from tanalyze.readers.text._lines import sniff_window
from tanalyze.readers.text._parts import parse_path
from tanalyze.readers.text._reader import NO_METRIC_LINES, TextReader, runs_from_parsed
from tanalyze.readers.text.generic import GenericTextParser

__all__ = ["NO_METRIC_LINES", "console_readers", "detect_console_format", "parse_console_file"]


def console_readers() -> tuple[TextReader, ...]:
    """The registered console formats, in registry order (the order they are tried in)."""
    return tuple(reader for reader in get_readers() if isinstance(reader, TextReader))


def detect_console_format(path: Path) -> TextReader | None:
    """The console reader whose format ``path``'s content matches, or None."""
    window = sniff_window(Path(path))
    for reader in console_readers():
        if reader.detect(window):
            return reader
    # (then behind a logging library's line prefix, for the formats read there too)
    return next((reader for reader in console_readers() if reader.behind_logging_prefix(Path(path))), None)


def parse_console_file(path: Path) -> RunData:
    """Read one console log, whatever supported format it is in.

    Never raises for content: a file with no recognisable metric line gives a
    ``RunData`` without points whose notes say so (and name the last exception
    when the log ends in a traceback). A file that cannot be opened raises
    :class:`~tanalyze.errors.FormatError`.
    """
    path = Path(path)
    reader = detect_console_format(path)
    if reader is None:
        run = runs_from_parsed([parse_path(path, GenericTextParser(path))], None)
        run.notes.insert(0, "no known console format recognised")
        return run
    run = reader.read([path])[0]
    run.notes.insert(0, f"console output read as {reader.name}")
    return run
