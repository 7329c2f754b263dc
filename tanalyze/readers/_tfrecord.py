"""TFRecord framing: find every intact record of a file, verify its CRCs, survive damage.

A TFRecord file is a sequence of frames::

    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

:func:`scan_records` returns where each intact record's data lies and what was
skipped. It never raises for content and never allocates from a length field
(lengths only index into the bytes already there). Damage in the middle does not
end the scan: it searches forward, byte by byte, for the next position whose
length and length-CRC verify and whose data CRC verifies too, and resumes there.

Speed: one tight loop follows the length fields and computes each record's data
CRC with the C ``crc32c`` package; everything else is checked afterwards for all
frames at once with numpy (length CRCs once per distinct length: they repeat).
A frame that fails those checks marks where the loop went astray, and the scan
resumes from there.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass, field

import crc32c
import numpy as np

__all__ = ["Records", "Damage", "scan_records", "masked_crc"]

_HEADER = 12  # length + length CRC
_FRAME = 16  # header + data CRC
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_BLOCK = 1 << 16  # frames checked together
_SYNC_WINDOW = 1 << 16  # first resynchronisation window; it grows 8x per miss up to:
_SYNC_WINDOW_MAX = 1 << 20


def masked_crc(data: bytes | memoryview) -> int:
    """The masked CRC32C TFRecord stores beside a length and beside data."""
    return _mask(crc32c.crc32c(data))


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _mask_all(crcs: np.ndarray) -> np.ndarray:
    crcs = crcs.astype(np.uint64)
    return (((crcs >> np.uint64(15)) | (crcs << np.uint64(17))) + np.uint64(_MASK_DELTA)) & np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class Damage:
    """A byte range that yielded no record, and why."""

    start: int
    end: int
    reason: str


@dataclass
class Records:
    """Where the intact records of one file are: data offsets and lengths, in file order."""

    starts: np.ndarray  # int64 offset of each record's data
    lengths: np.ndarray  # int64 length of each record's data
    size: int
    damage: list[Damage] = field(default_factory=list)
    bad_data_crc: list[int] = field(default_factory=list)  # frame offsets of records whose data CRC failed


class _Views:
    """Little-endian integers at any byte offset of the buffer."""

    def __init__(self, buf: np.ndarray) -> None:
        self.size = len(buf)
        self.u64 = np.ndarray((max(self.size - 7, 0),), dtype="<u8", buffer=buf, strides=(1,))
        self.u32 = np.ndarray((max(self.size - 3, 0),), dtype="<u4", buffer=buf, strides=(1,))


def _header_ok(view: memoryview, offset: int) -> bool:
    return masked_crc(view[offset : offset + 8]) == _U32.unpack_from(view, offset + 8)[0]


def _frame_ok(view: memoryview, offset: int, size: int) -> bool:
    """Whether a whole frame at ``offset`` fits and both its CRCs verify."""
    if offset + _FRAME > size or not _header_ok(view, offset):
        return False
    length = _U64.unpack_from(view, offset)[0]
    start = offset + _HEADER
    if length > size - _FRAME - offset:
        return False
    return masked_crc(view[start : start + length]) == _U32.unpack_from(view, start + length)[0]


def _walk(view: memoryview, start: int) -> tuple[array, array]:
    """Follow length fields from ``start`` trusting them, computing each data CRC; stop at the end of the bytes.

    A wrong length sends the walk astray; the checks afterwards find where.
    """
    offsets = array("q")
    crcs = array("I")
    add_offset = offsets.append
    add_crc = crcs.append
    unpack = _U64.unpack_from
    crc = crc32c.crc32c
    offset = start
    try:
        while True:
            (length,) = unpack(view, offset)  # raises once fewer than 8 bytes are left
            data_start = offset + _HEADER
            data_end = data_start + length
            add_crc(crc(view[data_start:data_end]))  # the slice is cut at the end of the bytes
            add_offset(offset)
            offset = data_end + 4
    except (struct.error, OverflowError):  # past the end (OverflowError: a garbage length sent it far past)
        pass
    return offsets, crcs


def _check(views: _Views, offsets: np.ndarray, crcs: np.ndarray, lengths_crc: dict[int, int]) -> tuple[int, np.ndarray]:
    """How many leading frames are sound (fit, length CRC verifies), and which of those have good data."""
    size = views.size
    data_ok = np.empty(len(offsets), bool)
    for first in range(0, len(offsets), _BLOCK):
        block = offsets[first : first + _BLOCK]
        lengths = views.u64[block]
        room = (size - _FRAME - block).clip(min=0).astype(np.uint64)
        fits = (lengths <= room) & (block + _FRAME <= size)
        distinct, inverse = np.unique(lengths, return_inverse=True)
        expected = np.array(
            [lengths_crc.setdefault(n, masked_crc(_U64.pack(n))) for n in distinct.tolist()], dtype=np.uint32
        )
        stored_length_crc = views.u32[np.minimum(block + 8, size - 4)]
        sound = fits & (expected[inverse] == stored_length_crc)
        ends = np.where(sound, block + _HEADER + lengths.astype(np.int64, copy=False), 0)
        data_ok[first : first + len(block)] = sound & (_mask_all(crcs[first : first + len(block)]) == views.u32[ends])
        if not sound.all():
            bad = first + int(np.argmin(sound))
            return bad, data_ok[:bad]
    return len(offsets), data_ok


def _resync(view: memoryview, buf: np.ndarray, start: int, size: int) -> int | None:
    """The first position at or after ``start`` where a whole, CRC-verified record begins."""
    window = _SYNC_WINDOW
    position = start
    while position <= size - _FRAME:
        stop = min(size - _FRAME + 1, position + window)
        # Only positions whose 8 bytes read as a length that fits are worth a CRC.
        lengths = np.ndarray((stop - position,), dtype="<u8", buffer=buf, offset=position, strides=(1,))
        offsets = np.arange(position, stop, dtype=np.int64)
        fits = lengths <= (size - _FRAME - offsets).astype(np.uint64)
        for offset in offsets[fits].tolist():
            if _frame_ok(view, offset, size):
                return offset
        position = stop
        window = min(window * 8, _SYNC_WINDOW_MAX)
    return None


def _recoverable(view: memoryview, start: int, end: int) -> bool:
    """Whether [start, end) is one frame whose length field is damaged but whose data CRC verifies."""
    data_end = end - 4
    if data_end < start + _HEADER:
        return False
    return masked_crc(view[start + _HEADER : data_end]) == _U32.unpack_from(view, data_end)[0]


def scan_records(data: bytes | memoryview | np.ndarray) -> Records:
    """Locate every intact record in ``data`` (a whole file's bytes).

    Records with a bad data CRC are dropped (their frame offsets are listed in
    ``bad_data_crc``; framing continues since their length was verified). Byte
    ranges that held no verifiable frame are listed in ``damage``. A frame whose
    length field alone is damaged is recovered when the next intact frame follows
    it directly and its data CRC verifies over the bytes in between.
    """
    view = memoryview(data).cast("B")
    size = len(view)
    buf = np.frombuffer(view, dtype=np.uint8)
    views = _Views(buf)
    lengths_crc: dict[int, int] = {}
    offsets_kept: list[np.ndarray] = []
    lengths_kept: list[np.ndarray] = []
    bad_data: list[int] = []
    damage: list[Damage] = []
    position = 0
    while position < size:
        walked, crcs = _walk(view, position)
        offsets = np.frombuffer(walked, dtype=np.int64) if len(walked) else np.empty(0, np.int64)
        sound, data_ok = _check(views, offsets, np.frombuffer(crcs, dtype=np.uint32), lengths_crc)
        good = offsets[:sound][data_ok]
        offsets_kept.append(good)
        lengths_kept.append(views.u64[good].astype(np.int64))
        bad_data.extend(offsets[:sound][~data_ok].tolist())
        # Where the walk went wrong, or (every frame sound) where it ran out of bytes.
        stop = int(offsets[sound]) if sound < len(offsets) else _walk_end(views, offsets, position)
        if stop >= size:
            break
        left = size - stop
        if left < _HEADER:
            damage.append(Damage(stop, size, f"file ends inside a record header ({left} bytes)"))
            break
        resume = _resync(view, buf, stop + 1, size)
        if resume is None:
            if _header_ok(view, stop):  # a verified length that runs past the end: cut while writing
                claimed = _U64.unpack_from(view, stop)[0]
                reason = f"file ends inside a record: its frame needs {claimed + _FRAME:,} bytes, {left:,} remain"
            else:
                reason = "no valid record from here to the end of the file"
            damage.append(Damage(stop, size, reason))
            break
        if _recoverable(view, stop, resume):
            offsets_kept.append(np.array([stop], np.int64))
            lengths_kept.append(np.array([resume - stop - _FRAME], np.int64))
            damage.append(Damage(stop, stop, "record length field damaged; record recovered (its data CRC verifies)"))
        else:
            damage.append(Damage(stop, resume, "damaged bytes (a record length or its CRC does not verify)"))
        position = resume
    offsets = np.concatenate(offsets_kept) if offsets_kept else np.empty(0, np.int64)
    lengths = np.concatenate(lengths_kept) if lengths_kept else np.empty(0, np.int64)
    return Records(offsets + _HEADER, lengths, size, damage, bad_data)


def _walk_end(views: _Views, offsets: np.ndarray, position: int) -> int:
    """The byte after the last frame walked (``position`` when none was)."""
    if not len(offsets):
        return position
    last = int(offsets[-1])
    return last + _FRAME + int(views.u64[last])
