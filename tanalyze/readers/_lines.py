"""Console logs as clean text, read in bounded chunks.

Trainers' stdout is dirty: tqdm redraws its bar with a bare ``\\r``, Windows
transcripts end lines with CRLF, colour codes (ANSI escapes) sit inside
lines, a crash can leave undecodable bytes or NUL padding, and a killed job
leaves its last line cut mid-write. This module turns a file into chunks of
whole, cleaned lines (``\\n`` only, no escapes, no NULs) and counts every
repair in :class:`TextStats`, so a reader can say what it changed.

Chunks are a few megabytes of text, so regexes can run over many lines at
once (``re.finditer`` over a chunk is much faster than a Python loop over
lines) while memory stays bounded whatever the file size.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = [
    "CHUNK_CHARS",
    "SNIFF_BYTES",
    "TEXT_SUFFIXES",
    "Chunk",
    "TextStats",
    "iter_chunks",
    "looks_like_text",
    "sniff_window",
]

#: Characters of text per chunk handed to the parsers.
CHUNK_CHARS = 4 << 20
#: How much of a file content sniffing looks at (Megatron's first iteration
#: line comes after ~2,700 lines of argument dump, about 240 KB in).
SNIFF_BYTES = 2 << 20
#: File name endings of console logs; files without any suffix are considered too.
TEXT_SUFFIXES = frozenset({".log", ".txt", ".out", ".err"})

_READ_BYTES = 1 << 20
_UTF8_REPLACEMENT = "\ufffd".encode()


@dataclass
class TextStats:
    """What cleaning changed or met in one file (all counts)."""

    lines: int = 0
    replaced_chars: int = 0
    nul_bytes: int = 0
    carriage_returns: int = 0
    ansi_sequences: int = 0
    long_lines: int = 0
    encoding: str = "utf-8"
    incomplete_last_line: str | None = None
    incomplete_last_line_no: int = 0

    def notes(self) -> list[str]:
        """Plain-language notes for the repairs that happened."""
        out = []
        if self.encoding != "utf-8":
            out.append(f"text decoded as {self.encoding} (byte-order mark)")
        if self.replaced_chars:
            out.append(f"{self.replaced_chars:,} undecodable byte sequence(s) replaced by U+FFFD")
        if self.nul_bytes:
            out.append(f"{self.nul_bytes:,} NUL byte(s) removed")
        if self.carriage_returns:
            out.append(
                f"{self.carriage_returns:,} bare carriage return(s) (progress-bar redraws) read as line breaks"
            )
        if self.ansi_sequences:
            out.append(f"{self.ansi_sequences:,} ANSI escape sequence(s) removed")
        if self.long_lines:
            out.append(f"{self.long_lines:,} line(s) longer than {CHUNK_CHARS >> 20} MB read in pieces")
        return out


class Chunk:
    """Whole cleaned lines of a file and where they start.

    ``text`` uses ``\\n`` only. Bare carriage returns became line breaks, so
    physical line numbers (the ones an editor shows) are computed from a copy
    that still has them; replacing ``\\r`` by ``\\n`` keeps every position.
    """

    __slots__ = ("text", "first_line", "incomplete", "_raw", "_cursor_pos", "_cursor_line")

    def __init__(self, text: str, first_line: int, raw: str | None = None, incomplete: bool = False) -> None:
        self.text = text
        self.first_line = first_line
        self.incomplete = incomplete
        self._raw = raw
        self._cursor_pos = 0
        self._cursor_line = first_line

    def line_of(self, pos: int) -> int:
        """Physical (1-based) line number of position ``pos``; cheap for increasing positions."""
        source = self._raw if self._raw is not None else self.text
        if pos < self._cursor_pos:
            self._cursor_pos, self._cursor_line = 0, self.first_line
        self._cursor_line += source.count("\n", self._cursor_pos, pos)
        self._cursor_pos = pos
        return self._cursor_line

    def line_start(self, pos: int) -> int:
        return self.text.rfind("\n", 0, pos) + 1

    def line_at(self, pos: int) -> str:
        """The (cleaned) line that contains position ``pos``."""
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        return self.text[start : end if end >= 0 else len(self.text)]

    @property
    def physical_lines(self) -> int:
        return (self._raw if self._raw is not None else self.text).count("\n")


_ESCAPE_TAIL = re.compile(r"\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\-_]")


def _strip_escapes(text: str, stats: TextStats) -> str:
    """Remove ANSI escape sequences (split on ESC: cheap when there are few)."""
    parts = text.split("\x1b")
    out = [parts[0]]
    for part in parts[1:]:
        m = _ESCAPE_TAIL.match(part)
        if m:
            stats.ansi_sequences += 1
            out.append(part[m.end() :])
        else:
            out.append(part)  # a lone ESC that starts no sequence
    return "".join(out)


def _clean(text: str, stats: TextStats, flags: tuple[bool, bool, bool] = (True, True, True)) -> tuple[str, str | None]:
    """Remove NULs and escapes, normalise line ends; return (text, copy with bare CRs or None).

    ``flags`` say whether the raw bytes held NUL, ESC and CR at all (cheap checks on
    bytes spare the costlier checks on text).
    """
    nul, esc, cr = flags
    if nul and "\x00" in text:
        stats.nul_bytes += text.count("\x00")
        text = text.replace("\x00", "")
    if esc and "\x1b" in text:
        text = _strip_escapes(text, stats)
    raw = None
    if cr and "\r" in text:
        text = text.replace("\r\n", "\n")
        bare = text.count("\r")
        if bare:
            stats.carriage_returns += bare
            raw = text
            text = text.replace("\r", "\n")
    return text, raw


def _encoding_for(head: bytes) -> str:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    return "utf-8"


def iter_chunks(path: str | os.PathLike[str], stats: TextStats, chunk_chars: int = CHUNK_CHARS) -> Iterator[Chunk]:
    """Yield cleaned chunks of whole lines from ``path``, counting repairs into ``stats``.

    A last line without a line end (a job killed mid-write, or a file that just
    lacks the final newline) comes last, on its own, as a chunk with
    ``incomplete=True`` (and a ``\\n`` appended so line patterns apply); it is
    also kept in ``stats.incomplete_last_line`` for the caller to judge.
    """
    with open(path, "rb") as handle:
        head = handle.read(4)
        encoding = _encoding_for(head)
        stats.encoding = encoding
        decoder = codecs.getincrementaldecoder("utf-8-sig" if encoding == "utf-8" else encoding)(errors="replace")
        pieces: list[str] = []
        size = 0
        pending = ""
        data = head
        line = 1
        in_long_line = False
        eof = False
        utf8 = encoding == "utf-8"
        flags = (False, False, False) if utf8 else (True, True, True)
        while not eof:
            block = handle.read(_READ_BYTES)
            eof = not block
            if utf8 and b"\r" in block:
                if block.endswith(b"\r"):  # keep a CRLF pair in one block
                    block += handle.read(1)
                if b"\r\n" in block:
                    block = block.replace(b"\r\n", b"\n")  # line ends: safe on UTF-8 bytes, cheap there
            data += block
            if utf8:  # memchr on bytes is far cheaper than searching the decoded text
                flags = (flags[0] or b"\x00" in data, flags[1] or b"\x1b" in data, flags[2] or b"\r" in data)
            text = decoder.decode(data, final=eof)
            if not data.isascii() and "\ufffd" in text:
                stats.replaced_chars += text.count("\ufffd") - (data.count(_UTF8_REPLACEMENT) if utf8 else 0)
            data = b""
            pieces.append(text)
            size += len(text)
            if size < chunk_chars and not eof:
                continue
            pending = pending + "".join(pieces) if pending else "".join(pieces)
            pieces, size = [], 0
            while len(pending) >= chunk_chars or (eof and "\n" in pending):
                cut = pending.rfind("\n", 0, chunk_chars)
                if cut < 0:
                    if len(pending) < chunk_chars:
                        break
                    # A line longer than a whole chunk: hand it over in pieces.
                    if not in_long_line:
                        stats.long_lines += 1
                        in_long_line = True
                    piece, pending = pending[:chunk_chars], pending[chunk_chars:]
                    cleaned, raw = _clean(piece, stats, flags)
                    yield Chunk(cleaned, line, raw)
                    continue
                in_long_line = False
                if cut == len(pending) - 1:
                    piece, pending = pending, ""
                else:
                    piece, pending = pending[: cut + 1], pending[cut + 1 :]
                cleaned, raw = _clean(piece, stats, flags)
                chunk = Chunk(cleaned, line, raw)
                line += chunk.physical_lines
                stats.lines += chunk.physical_lines
                yield chunk
            size = len(pending)
        if pending:
            cleaned, raw = _clean(pending, stats)
            cut = cleaned.rfind("\n")
            if cut >= 0:  # progress-bar redraws before the cut: those segments are whole lines
                chunk = Chunk(cleaned[: cut + 1], line, raw[: cut + 1] if raw is not None else None)
                yield chunk
                cleaned = cleaned[cut + 1 :]
            if cleaned.strip():
                stats.incomplete_last_line = cleaned
                stats.incomplete_last_line_no = line
                stats.lines += 1
                yield Chunk(cleaned + "\n", line, incomplete=True)


def looks_like_text(head: bytes) -> bool:
    """Whether the first bytes of a file look like text (not a binary event file or archive)."""
    if not head:
        return False
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    sample = head[:4096]
    control = sum(1 for b in sample if b < 0x20 and b not in (0x09, 0x0A, 0x0C, 0x0D, 0x1B, 0x08))
    return control <= len(sample) // 20


@lru_cache(maxsize=16)
def _window(path: str, size: int, mtime_ns: int, limit: int) -> str:
    stats = TextStats()
    parts: list[str] = []
    total = 0
    for chunk in iter_chunks(path, stats, chunk_chars=min(limit, CHUNK_CHARS)):
        parts.append(chunk.text)
        total += len(chunk.text)
        if total >= limit:
            break
    return "".join(parts)[:limit]


def sniff_window(path: Path, limit: int = SNIFF_BYTES) -> str:
    """The cleaned text of the first ``limit`` characters of ``path`` ('' when unreadable).

    Cached, because every text reader sniffs the same candidate files in turn.
    """
    try:
        info = os.stat(path)
    except OSError:
        return ""
    try:
        return _window(str(path), info.st_size, info.st_mtime_ns, limit)
    except OSError:
        return ""
