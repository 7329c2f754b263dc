"""TFRecord framing: find every intact record of a file, verify its CRCs, survive damage.

A TFRecord file is a sequence of frames::

    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

:func:`scan_records` returns where each intact record's data lies and what was
skipped. It never raises for content and never allocates from a length field
(lengths only index into the bytes already there). Damage in the middle does not
end the scan: it searches forward, byte by byte, for the next position whose
length and length-CRC verify and whose data CRC verifies too, and resumes there.

Speed: the frames are found by following the length fields, in Python one by
one until the lengths repeat a cycle (a scalar log cycles through its tags), then
a block at a time with numpy; the length CRCs are checked for all frames at once
(once per distinct length: they repeat) and the data CRCs with the C ``crc32c``
package. A frame that fails the checks marks where the walk went astray, and the
scan resumes from there.
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
_PROBE = 64  # lengths read one by one before looking for a cycle
_FEW = 256  # up to this many frames, numpy's fixed costs outweigh its speed: plain Python instead
_PREDICT = 1 << 10  # first block of offsets predicted from a cycle (grows while predictions hold)
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


def _walk_some(view: memoryview, offset: int, count: int, offsets: array, lengths: array) -> tuple[int, bool]:
    """Follow up to ``count`` length fields from ``offset``, trusting them; return where it got and whether the
    bytes ended (fewer than 8 left, or a garbage length pointing past them)."""
    unpack = _U64.unpack_from
    add_offset = offsets.append
    add_length = lengths.append
    try:
        for _ in range(count):
            (length,) = unpack(view, offset)
            add_offset(offset)
            add_length(length)
            offset += length + _FRAME
    except (struct.error, OverflowError):
        return offset, True
    return offset, False


def _period(lengths: array) -> np.ndarray | None:
    """The shortest cycle the recent lengths repeat (scalar logs cycle through their tags), or None."""
    recent = np.frombuffer(lengths, dtype=np.uint64)[-_PROBE:]
    for period in range(1, len(recent) // 2 + 1):
        if np.array_equal(recent[period:], recent[:-period]):
            return recent[-period:]
    return None


def _predict(views: _Views, offset: int, cycle: np.ndarray, count: int) -> tuple[np.ndarray, int]:
    """Offsets the walk would visit from ``offset`` if lengths keep repeating ``cycle``, checked against the
    length fields: returns the verified ones and the offset that follows them.

    Exact, not a guess: every returned offset is where the one-by-one walk goes,
    since the length read at each offset leads to the next.
    """
    lengths = np.tile(cycle, -(-count // len(cycle)))[:count]
    steps = (lengths + np.uint64(_FRAME)).astype(np.int64)
    offsets = offset + np.concatenate(([0], np.cumsum(steps[:-1])))
    inside = offsets <= views.size - 8
    matches = inside.copy()
    matches[inside] = views.u64[offsets[inside]] == lengths[inside]
    verified = count if matches.all() else int(np.argmin(matches))
    following = int(offsets[verified]) if verified < count else int(offsets[-1] + steps[-1])
    return offsets[:verified], following


def _walk(views: _Views, view: memoryview, start: int, lengths_crc: dict[int, int]) -> tuple[np.ndarray, int]:
    """Offsets of the sound frames from ``start`` on (they fit and their length CRC verifies), and where
    the first unsound one is (or where the bytes ran out).

    Lengths are read one by one in Python until they repeat a cycle; then whole
    blocks of offsets are predicted from the cycle and verified at once with numpy,
    falling back to one by one where the cycle breaks. Each block is checked as it
    comes, so a damaged region (say, zeros) ends the walk at once.
    """
    chunks: list[np.ndarray] = [np.empty(0, np.int64)]
    offset = start
    block = _PREDICT
    probe_size = _PROBE
    while True:
        offsets, lengths = array("q"), array("Q")
        offset, ended = _walk_some(view, offset, probe_size, offsets, lengths)
        probe = np.frombuffer(offsets, dtype=np.int64) if len(offsets) else np.empty(0, np.int64)
        sound = _sound(views, probe, lengths_crc)
        chunks.append(probe[:sound])
        if sound < len(probe):
            return np.concatenate(chunks), int(probe[sound])
        if ended:
            return np.concatenate(chunks), offset
        cycle = _period(lengths)
        # Lengths that do not cycle (tags logged at irregular intervals): walk longer stretches one by one
        # before looking for a cycle again, so the search does not cost more than the walk it would save.
        probe_size = _PROBE if cycle is not None else min(probe_size * 4, _BLOCK)
        while cycle is not None and offset <= views.size - 8:
            predicted, following = _predict(views, offset, cycle, block)
            sound = _sound(views, predicted, lengths_crc)
            chunks.append(predicted[:sound])
            if sound < len(predicted):
                return np.concatenate(chunks), int(predicted[sound])
            offset = following
            if len(predicted) < block:
                block = _PREDICT
                break
            block = min(block * 4, _BLOCK)


def _length_crc_ok(views: _Views, offsets: np.ndarray, lengths_crc: dict[int, int]) -> np.ndarray:
    """Whether the length CRC beside each length verifies (computed once per distinct length: they repeat)."""
    lengths = views.u64[offsets]
    if len(lengths) <= _FEW:  # a few frames (a log's new tail): looking each up beats sorting them
        known = lengths_crc.get
        expected = np.array([known(n) or lengths_crc.setdefault(n, masked_crc(_U64.pack(n)))
                             for n in lengths.tolist()], dtype=np.uint32)
        return expected == views.u32[offsets + 8]
    distinct, inverse = np.unique(lengths, return_inverse=True)
    expected = np.array(
        [lengths_crc.setdefault(n, masked_crc(_U64.pack(n))) for n in distinct.tolist()], dtype=np.uint32
    )
    return expected[inverse] == views.u32[offsets + 8]


def _sound(views: _Views, offsets: np.ndarray, lengths_crc: dict[int, int]) -> int:
    """How many leading frames are sound: they fit in the bytes and their length CRC verifies."""
    size = views.size
    for first in range(0, len(offsets), _BLOCK):
        block = offsets[first : first + _BLOCK]
        room = (size - _FRAME - block).clip(min=0).astype(np.uint64)
        fits = (block + _FRAME <= size) & (views.u64[np.minimum(block, size - 8)] <= room)
        sound = fits & _length_crc_ok(views, np.minimum(block, size - 12), lengths_crc)
        if not sound.all():
            return first + int(np.argmin(sound))
    return len(offsets)


def _data_ok(views: _Views, view: memoryview, offsets: np.ndarray) -> np.ndarray:
    """Whether each sound frame's data CRC matches (computed in C, a block at a time to bound memory)."""
    crc = crc32c.crc32c
    ok = np.empty(len(offsets), bool)
    for first in range(0, len(offsets), _BLOCK):
        starts = offsets[first : first + _BLOCK] + _HEADER
        ends = starts + views.u64[starts - _HEADER].astype(np.int64)
        computed = np.array([crc(view[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)], np.uint64)
        ok[first : first + len(starts)] = _mask_all(computed) == views.u32[ends]
    return ok


def _resync(views: _Views, view: memoryview, start: int, lengths_crc: dict[int, int]) -> int | None:
    """The first position at or after ``start`` where a whole, CRC-verified record begins.

    Every byte position is a candidate; those whose 8 bytes read as a length that
    fits and whose length CRC verifies are found with numpy a window at a time,
    and only they get their data CRC checked.
    """
    size = views.size
    window = _SYNC_WINDOW
    position = start
    while position <= size - _FRAME:
        stop = min(size - _FRAME + 1, position + window)
        offsets = np.arange(position, stop, dtype=np.int64)
        fits = views.u64[offsets] <= (size - _FRAME - offsets).astype(np.uint64)
        offsets = offsets[fits]
        for offset in offsets[_length_crc_ok(views, offsets, lengths_crc)].tolist():
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
    if 0 < size < _HEADER:  # not even one length and its CRC (the vectorised checks assume that much)
        damage.append(Damage(0, size, f"file ends inside a record header ({size} bytes)"))
        position = size
    while position < size:
        offsets, stop = _walk(views, view, position, lengths_crc)
        data_ok = _data_ok(views, view, offsets)
        good = offsets[data_ok]
        offsets_kept.append(good)
        lengths_kept.append(views.u64[good].astype(np.int64))
        bad_data.extend(offsets[~data_ok].tolist())
        if stop >= size:
            break
        left = size - stop
        if left < _HEADER:
            damage.append(Damage(stop, size, f"file ends inside a record header ({left} bytes)"))
            break
        resume = _resync(views, view, stop + 1, lengths_crc)
        if resume is None:
            if _header_ok(view, stop):  # a verified length that runs past the end: cut while writing
                claimed = _U64.unpack_from(view, stop)[0]
                reason = (f"file ends inside a record (still being written, or cut off): its frame needs "
                          f"{claimed + _FRAME:,} bytes, {left:,} remain")
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
