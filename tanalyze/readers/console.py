"""One entry point for console logs of any supported format.

:func:`parse_console_file` recognises the format of one console capture by
its content (Megatron, HF Trainer, DeepSpeed, nanoGPT, then the generic
shapes) and reads it. Other readers use it for console text they find inside
their own formats, e.g. ``wandb/run-*/files/output.log``.
"""

from __future__ import annotations

from pathlib import Path

from tanalyze.readers._lines import sniff_window
from tanalyze.readers._textparse import parse_path
from tanalyze.readers._textreader import TextReader, runs_from_parsed
from tanalyze.readers.base import RunData
from tanalyze.readers.deepspeed import DeepSpeedReader
from tanalyze.readers.generic_text import GenericTextParser, GenericTextReader
from tanalyze.readers.hf_console import HFConsoleReader
from tanalyze.readers.megatron import MegatronReader
from tanalyze.readers.nanogpt import NanoGPTReader

__all__ = ["CONSOLE_READERS", "detect_console_format", "parse_console_file"]

#: Console formats in the order they are tried (specific before generic).
CONSOLE_READERS: tuple[type[TextReader], ...] = (
    MegatronReader,
    HFConsoleReader,
    DeepSpeedReader,
    NanoGPTReader,
    GenericTextReader,
)


def detect_console_format(path: Path) -> TextReader | None:
    """The console reader whose format ``path``'s content matches, or None."""
    window = sniff_window(Path(path))
    for reader_class in CONSOLE_READERS:
        reader = reader_class()
        if reader.detect(window):
            return reader
    return None


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
