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

import numpy as np

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
    bytes_read: int = 0  # the file offset reading got to

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

    __slots__ = (
        "text", "first_line", "incomplete", "stop", "_raw", "_raw_bytes", "_lines", "_cursor_pos", "_cursor_line",
        "_cursor_byte", "_bytes_exact", "_bytes", "line_index",
    )

    def __init__(
        self,
        text: str,
        first_line: int,
        raw: str | None = None,
        incomplete: bool = False,
        raw_bytes: bytes | bytearray | None = None,
        lines: int | None = None,
        data: bytes | bytearray | None = None,
    ) -> None:
        self.text = text
        self.first_line = first_line
        self.incomplete = incomplete
        #: The file offset right after this chunk when it ends with the file's own line break (a point a
        #: later read can start from); None for a piece of a long line and for what follows the last line break.
        self.stop: int | None = None
        self._raw = raw
        self._raw_bytes = raw_bytes  # the UTF-8 bytes with bare CRs, decoded only if a line number is asked
        self._lines = lines
        self._cursor_pos = 0
        self._cursor_line = first_line
        self._cursor_byte = 0
        self._bytes_exact: bool | None = None
        self._bytes = data  # the cleaned UTF-8 bytes: searching them is cheaper than searching the text
        #: where the chunk's lines start, made by the first scan that needs it and shared by the others
        #: (see ``_regex.line_index``); it goes with the chunk
        self.line_index: object | None = None

    @property
    def redraws(self) -> bool:
        """Whether the chunk had bare carriage returns (progress bars captured redraw by redraw)."""
        return self._raw_bytes is not None or self._raw is not None

    def utf8(self) -> bytes:
        """The chunk's text as UTF-8 (the cleaned bytes it was decoded from, when kept), as ``bytes``."""
        if self._bytes is None:
            return self.text.encode("utf-8")
        return self._bytes if isinstance(self._bytes, bytes) else bytes(self._bytes)

    def contains(self, marker: str) -> bool:
        """Whether the chunk holds the ASCII ``marker`` (a quick test before a full regex scan)."""
        if self._bytes is not None:
            return marker.encode("ascii") in self._bytes
        return marker in self.text

    def count(self, marker: str) -> int:
        """How often the ASCII ``marker`` occurs in the chunk."""
        if self._bytes is not None:
            return self._bytes.count(marker.encode("ascii"))
        return self.text.count(marker)

    def _source(self) -> str:
        if self._raw is None and self._raw_bytes is not None:
            self._raw = self._raw_bytes.decode("utf-8", errors="replace")
            self._raw_bytes = None
        return self._raw if self._raw is not None else self.text

    def line_of(self, pos: int) -> int:
        """Physical (1-based) line number of position ``pos``; cheap for increasing positions."""
        if pos < self._cursor_pos:
            self._cursor_pos, self._cursor_line, self._cursor_byte = 0, self.first_line, 0
        raw_bytes = self._raw_bytes
        if raw_bytes is not None and self._bytes_exact is None:
            self._bytes_exact = "\ufffd" not in self.text  # text and bytes then align character for character
        if raw_bytes is not None and self._raw is None and self._bytes_exact:
            # count line ends in the bytes that still have the bare CRs, without decoding them
            segment = self.text[self._cursor_pos : pos]
            size = len(segment) if segment.isascii() else len(segment.encode("utf-8"))
            self._cursor_line += raw_bytes.count(b"\n", self._cursor_byte, self._cursor_byte + size)
            self._cursor_byte += size
        else:
            self._cursor_line += self._source().count("\n", self._cursor_pos, pos)
        self._cursor_pos = pos
        return self._cursor_line

    def after_carriage_return(self, pos: int) -> bool:
        """Whether the line holding ``pos`` began at a bare carriage return (a redraw on the same physical line)."""
        start = self.text.rfind("\n", 0, pos)
        return start >= 0 and self.redraws and self._source()[start] == "\r"

    def line_start(self, pos: int) -> int:
        return self.text.rfind("\n", 0, pos) + 1

    def line_at(self, pos: int) -> str:
        """The (cleaned) line that contains position ``pos``."""
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        return self.text[start : end if end >= 0 else len(self.text)]

    @property
    def physical_lines(self) -> int:
        if self._lines is None:
            self._lines = self._source().count("\n")
        return self._lines


_ESCAPE_TAIL = re.compile(r"\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-_]")


#: the kinds of byte of an escape sequence: a control sequence's parameters, its intermediates, its final byte; the
#: second byte of a two-byte sequence (``[@-_]``)
_PARAMETER, _INTERMEDIATE, _FINAL, _SECOND = (np.zeros(256, dtype=bool) for _ in range(4))
_PARAMETER[0x30:0x40], _INTERMEDIATE[0x20:0x30], _FINAL[0x40:0x7F], _SECOND[0x40:0x60] = True, True, True, True
#: where an operating system command (``ESC ]``) ends: before its terminator (BEL or ``ESC \\``) or a line end
_COMMAND_END = re.compile(rb"[\x07\x1b\n]")
#: sequences at most this long are removed by one numpy pass an offset; longer ones (commands) one by one
_SHORT = 8


def _strip_escape_bytes(data: bytes | bytearray) -> tuple[bytes | bytearray, int]:
    """``data`` without its ANSI escape sequences and lone ESC bytes, and how many sequences there were.

    The same as removing every match of ``ESC(?:\\[[0-?]*[ -/]*[@-~]|\\][^BEL ESC \\n]*(?:BEL|ESC \\\\)?|[@-_])``
    left to right, then every ESC left, but the length of the sequence at every ESC is found at once with numpy
    (a regex's ``subn`` pays for each of the hundreds of thousands of colour codes a big log can hold): no
    sequence holds an ESC but a command's terminator, so each ESC begins one (or is a lone one) on its own.
    """
    chars = np.frombuffer(data, dtype=np.uint8)
    size = len(chars)
    esc = np.flatnonzero(chars == 27)
    if not len(esc):
        return data, 0

    def at(positions: np.ndarray) -> np.ndarray:
        """The bytes at ``positions`` (0, which no class holds, past the end)."""
        return np.where(positions < size, chars[np.minimum(positions, size - 1)], 0)

    second = at(esc + 1)
    length = np.where(_SECOND[second], 2, 1)  # a two-byte sequence, or a lone ESC (1)
    control = np.flatnonzero(second == 0x5B)  # "[": a control sequence, else "ESC [" (two bytes)
    if len(control):
        ends = esc[control] + 2
        for kind in (_PARAMETER, _INTERMEDIATE):  # (no backtracking can end a sequence elsewhere)
            going = np.arange(len(ends))
            while len(going):
                going = going[kind[at(ends[going])]]
                ends[going] += 1
        final = _FINAL[at(ends)]
        length[control[final]] = ends[final] + 1 - esc[control[final]]
    for index in np.flatnonzero(second == 0x5D).tolist():  # "]": a command, up to its terminator, which it takes
        start = int(esc[index])
        stop = _COMMAND_END.search(data, start + 2)
        end = size if stop is None else stop.start()
        if end < size and data[end] == 7:
            end += 1
        elif data[end : end + 2] == b"\x1b\\":
            length[index + 1] = 0  # (the terminator's ESC, the next one: no sequence of its own)
            end += 2
        length[index] = end - start
    keep = np.ones(size, dtype=bool)
    short = length <= _SHORT
    for offset in range(int(length[short].max(initial=0))):
        keep[esc[short & (length > offset)] + offset] = False
    for start, count in zip(esc[~short].tolist(), length[~short].tolist(), strict=True):
        keep[start : start + count] = False
    return chars[keep].tobytes(), int(np.count_nonzero(length > 1))


def _clean_utf8(data: bytes | bytearray, stats: TextStats, line: int, incomplete: bool = False) -> Chunk:
    """A chunk from UTF-8 bytes of whole lines: every repair is on ASCII bytes, before decoding.

    Safe because no byte of a multi-byte UTF-8 sequence is below 0x80, and
    chunks are cut at ``\\n`` so no escape sequence or CRLF pair is split.
    """
    if b"\x00" in data:
        stats.nul_bytes += data.count(b"\x00")
        data = data.replace(b"\x00", b"")
    if b"\x1b" in data:
        data, n = _strip_escape_bytes(data)
        stats.ansi_sequences += n
    raw = None
    if b"\r" in data:
        returns, pairs = _carriage_returns(data)
        if pairs:
            data = data.replace(b"\r\n", b"\n")
        bare = returns - pairs
        if bare:
            stats.carriage_returns += bare
            raw = data
            data = data.replace(b"\r", b"\n")
    lines = (raw if raw is not None else data).count(b"\n")
    text = data.decode("utf-8", errors="replace")
    if not data.isascii() and "\ufffd" in text:
        stats.replaced_chars += text.count("\ufffd") - data.count(_UTF8_REPLACEMENT)
    return Chunk(text, line, incomplete=incomplete, raw_bytes=raw, lines=lines, data=data)


def _carriage_returns(data: bytes) -> tuple[int, int]:
    """How many carriage returns ``data`` has, and how many of them a line feed follows (one pass over the
    bytes: searching for the two-byte CRLF takes several times longer)."""
    chars = np.frombuffer(data, dtype=np.uint8)
    after = np.flatnonzero(chars == 13) + 1
    return len(after), int(np.count_nonzero(chars[after[after < len(chars)]] == 10))


def _utf8_boundary(data: bytes, cut: int) -> int:
    """The largest position <= ``cut`` that does not split a UTF-8 character (at the end of ``data``, one that
    does not cut its last character short: its other bytes are still to be read)."""
    if cut >= len(data):
        cut = len(data)
        lead = cut - 1
        while lead > max(0, cut - 4) and (data[lead] & 0xC0) == 0x80:
            lead -= 1
        if lead < 0 or data[lead] < 0xC0:
            return cut  # ends with ASCII, or with stray continuation bytes (no character to keep whole)
        length = 2 if data[lead] < 0xE0 else 3 if data[lead] < 0xF0 else 4
        return lead if lead + length > cut else cut
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut


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


def iter_chunks(path: str | os.PathLike[str], stats: TextStats, chunk_chars: int = CHUNK_CHARS, *, start: int = 0,
                line: int = 1) -> Iterator[Chunk]:
    """Yield cleaned chunks of whole lines from ``path``, counting repairs into ``stats``.

    A last line without a line end (a job killed mid-write, or a file that just
    lacks the final newline) comes last, on its own, as a chunk with
    ``incomplete=True`` (and a ``\\n`` appended so line patterns apply); it is
    also kept in ``stats.incomplete_last_line`` for the caller to judge.

    ``start`` (with ``line``, the physical line number there) reads on from a
    line start of a UTF-8 file that an earlier read stopped at (a chunk's ``stop``).
    """
    with open(path, "rb") as handle:
        if start:
            handle.seek(start)
            stats.encoding = "utf-8"
            yield from _utf8_chunks(handle, b"", stats, chunk_chars, line, start)
            return
        head = handle.read(4)
        encoding = _encoding_for(head)
        stats.encoding = encoding
        if encoding == "utf-8":
            offset = 0
            if head.startswith(b"\xef\xbb\xbf"):
                head, offset = head[3:], 3
            yield from _utf8_chunks(handle, head, stats, chunk_chars, line, offset)
        else:
            yield from _decoded_chunks(handle, head, encoding, stats, chunk_chars)


def _utf8_chunks(handle, head: bytes, stats: TextStats, chunk_bytes: int, line: int = 1,
                 offset: int = 0) -> Iterator[Chunk]:
    """``offset``: the file offset of ``head``'s first byte (chunks that end a line get their ``stop``)."""
    pending: bytes | bytearray = head
    in_long_line = False
    eof = False
    while not eof:
        # read into a buffer after what is pending, and hand over the buffer itself cut after its last line break
        # (no copy of the chunk but the read; the few bytes after the cut start the next buffer)
        size = max(chunk_bytes - len(pending), _READ_BYTES) if chunk_bytes >= _READ_BYTES else chunk_bytes
        data = bytearray(len(pending) + size)
        data[: len(pending)] = pending
        got = handle.readinto(memoryview(data)[len(pending) :])
        del data[len(pending) + got :]
        eof = not got
        pending = b""
        while len(data) >= chunk_bytes or (eof and b"\n" in data):
            cut = data.rfind(b"\n", 0, chunk_bytes)
            if cut < 0:
                if len(data) < chunk_bytes:
                    break
                redraw = data.rfind(b"\r", 0, chunk_bytes - 1)
                if redraw > 0:
                    # A progress bar redrawn on one line longer than a chunk: cut after a redraw (no "\n" follows
                    # it), so that each redraw stays whole.
                    cut = redraw + 1
                else:
                    # A line longer than a whole chunk: hand it over in pieces.
                    if not in_long_line:
                        stats.long_lines += 1
                        in_long_line = True
                    cut = _utf8_boundary(data, chunk_bytes) or chunk_bytes
                chunk = _clean_utf8(data[:cut], stats, line)
                data = data[cut:]
                offset += cut
                line += chunk.physical_lines
                yield chunk
                continue
            in_long_line = False
            if cut == len(data) - 1:
                piece, data = data, bytearray()
            else:
                rest = data[cut + 1 :]
                del data[cut + 1 :]
                piece, data = data, rest
            chunk = _clean_utf8(piece, stats, line)
            offset += len(piece)
            chunk.stop = offset
            line += chunk.physical_lines
            stats.lines += chunk.physical_lines
            yield chunk
        pending = data
    stats.bytes_read = offset + len(pending)
    if pending:
        chunk = _clean_utf8(pending, stats, line)
        text = chunk.text
        cut = text.rfind("\n")
        if cut >= 0:  # progress-bar redraws before the cut: those segments are whole lines
            yield Chunk(text[: cut + 1], line)
            text = text[cut + 1 :]
        if text.strip():
            stats.incomplete_last_line = text
            stats.incomplete_last_line_no = line
            stats.lines += 1
            yield Chunk(text + "\n", line, incomplete=True)


def _decoded_chunks(handle, head: bytes, encoding: str, stats: TextStats, chunk_chars: int) -> Iterator[Chunk]:
    """Non-UTF-8 files (UTF-16 with a byte-order mark): decode first, then clean the text."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    stats.bytes_read = len(head)
    pending = ""
    data = head
    line = 1
    in_long_line = False
    eof = False
    flags = (True, True, True)
    while not eof:
        block = handle.read(_READ_BYTES)
        eof = not block
        stats.bytes_read += len(block)
        data += block
        text = decoder.decode(data, final=eof)
        if "\ufffd" in text:
            stats.replaced_chars += text.count("\ufffd")
        data = b""
        pending += text
        while len(pending) >= chunk_chars or (eof and "\n" in pending):
            cut = pending.rfind("\n", 0, chunk_chars)
            if cut < 0:
                if len(pending) < chunk_chars:
                    break
                if not in_long_line:
                    stats.long_lines += 1
                    in_long_line = True
                piece, pending = pending[:chunk_chars], pending[chunk_chars:]
                cleaned, raw = _clean(piece, stats, flags)
                yield Chunk(cleaned, line, raw)
                continue
            in_long_line = False
            piece, pending = pending[: cut + 1], pending[cut + 1 :]
            cleaned, raw = _clean(piece, stats, flags)
            chunk = Chunk(cleaned, line, raw)
            line += chunk.physical_lines
            stats.lines += chunk.physical_lines
            yield chunk
    if pending:
        cleaned, raw = _clean(pending, stats)
        cut = cleaned.rfind("\n")
        if cut >= 0:
            yield Chunk(cleaned[: cut + 1], line, raw[: cut + 1] if raw is not None else None)
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
