"""An event file read in windows: bounded memory whatever its size, and safe when it shrinks while read.

Mapping a whole file (mmap) makes every page it touches resident (a 2 GB file of
images costs 2 GB of RSS) and kills the process with SIGBUS if another process
truncates the file while it is read (``cp`` over it, ``rsync --inplace``, a job
restarting). Here the file is read with plain reads, a window at a time
(:data:`WINDOW` bytes, or one whole record when a record is larger): memory is one
window plus what is decoded, and a file that shrinks simply ends sooner.

Each window is scanned with :func:`~._tfrecord.scan_records`; what follows its
last whole record (a record cut by the window's edge, or damage running up to
it) is not judged there but scanned again at the start of the next window, so
the records and damage found are the same as in one scan of the whole file.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from tanalyze._fileio import pread_into
from tanalyze.readers.tensorboard._events import FileEvents
from tanalyze.readers.tensorboard._tfrecord import (
    _FRAME,
    _HEADER,
    _U64,
    Damage,
    _length_crc_ok,
    _Views,
    masked_crc,
    scan_records,
)

__all__ = ["WINDOW", "Window", "scan_file", "join_events"]

#: Bytes read per window (a larger record gets a window of its own size).
WINDOW = 32 << 20
_EDGE_REASONS = ("file ends inside a record", "no valid record from here to the end")


@dataclass
class Window:
    """The intact records of one stretch of a file. Offsets in ``damage`` and ``bad_data_crc`` are file offsets;
    ``starts`` index ``buf`` (the window's bytes, which begin at file offset ``base``)."""

    base: int
    buf: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    damage: list[Damage] = field(default_factory=list)
    bad_data_crc: list[int] = field(default_factory=list)
    end: int = 0  # file offset where the next window starts (the file's size after the last one)


def _read_at(handle, offset: int, count: int) -> np.ndarray:
    """Up to ``count`` bytes at ``offset`` (fewer if the file ends sooner, even if it shrank meanwhile)."""
    data = np.empty(count, dtype=np.uint8)  # not zero-filled: every byte kept is overwritten by the read
    view = memoryview(data)
    got = 0
    while got < count:
        n = pread_into(handle.fileno(), view[got:], offset + got)
        if n <= 0:
            break
        got += n
    return data[:got]


def _next_candidate(buf: np.ndarray, base: int, size: int) -> int:
    """Where the next record may start after damage that ran to the window's edge: the first position whose
    length verifies and points inside the file (its frame did not fit the window), else just short of the edge."""
    n = len(buf)
    if n <= _HEADER:
        return 1
    views = _Views(buf)
    offsets = np.arange(1, n - _HEADER + 1, dtype=np.int64)
    fits = views.u64[offsets] <= (size - _FRAME - base - offsets).clip(min=0).astype(np.uint64)
    offsets = offsets[fits]
    verified = offsets[_length_crc_ok(views, offsets, {})]
    return int(verified[0]) if len(verified) else n - _HEADER + 1


def _header_length(buf: np.ndarray) -> int | None:
    """The verified length of the frame at the start of ``buf`` (None when its length CRC fails)."""
    if len(buf) < _HEADER:
        return None
    head = buf[:_HEADER].tobytes()
    if masked_crc(head[:8]) != int.from_bytes(head[8:12], "little"):
        return None
    return _U64.unpack_from(head, 0)[0]


def _shift(damage: list[Damage], base: int) -> list[Damage]:
    return [Damage(d.start + base, d.end + base, d.reason) for d in damage]


def scan_file(path: str | os.PathLike[str], *, start: int = 0, window: int | None = None) -> Iterator[Window]:
    """The windows of an event file from byte ``start`` (a record boundary), in file order.

    Together they hold exactly the records and damage one :func:`scan_records` of the
    whole file finds (damage that spans windows is reported once, merged).
    """
    window = window or WINDOW
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        pos = start
        want = window
        pending: Damage | None = None  # damage running into the next window, to be merged with what follows
        while pos < size:
            count = min(want, size - pos)
            buf = _read_at(handle, pos, count)
            shrunk = None
            if len(buf) < count:  # the file shrank while being read: it ends here now
                shrunk = Damage(pos + len(buf), size, "the file shrank while it was read (truncated or rewritten "
                                "by another process); read up to where it ends now")
                size = pos + len(buf)
            last = pos + len(buf) >= size
            records = scan_records(buf)
            damage = _shift(records.damage, pos)
            bad = [o + pos for o in records.bad_data_crc]
            starts, lengths = records.starts, records.lengths
            if not last:
                ends = [int(s + n + 4) for s, n in zip(starts[-1:].tolist(), lengths[-1:].tolist(), strict=True)]
                ends += [o + _FRAME + int(_U64.unpack_from(buf[o:o + 8].tobytes())[0]) for o in records.bad_data_crc]
                cut = max(ends, default=0)
                if cut == 0:  # nothing whole in this window
                    length = _header_length(buf)
                    if length is not None and length + _FRAME <= size - pos and length + _FRAME > len(buf):
                        want = length + _FRAME  # one record larger than the window: read it whole
                        continue
                    cut = _next_candidate(buf, pos, size)
                    damage = [Damage(pos, pos + cut, "damaged bytes (a record length or its CRC does not verify)")]
                else:
                    damage = [d for d in damage if d.end <= pos + cut and not d.reason.startswith(_EDGE_REASONS)]
                    bad = [o for o in bad if o < pos + cut]
            damage, pending = _merge_damage(pending, damage, last, pos + (len(buf) if last else cut))
            if shrunk is not None:
                damage.append(shrunk)
            yield Window(pos, buf, starts, lengths, damage, bad, pos + len(buf) if last else pos + cut)
            if last:
                return
            pos += cut
            want = window
        if pending is not None:
            yield Window(pos, np.empty(0, np.uint8), np.empty(0, np.int64), np.empty(0, np.int64), [pending], [], pos)


def _merge_damage(pending: Damage | None, damage: list[Damage], last: bool, end: int
                  ) -> tuple[list[Damage], Damage | None]:
    """Join damage that continues across a window edge into one entry, as one scan of the file reports it.

    Damage that reaches ``end`` (this window's cut) may go on in the next window: it is held back."""
    out = list(damage)
    if pending is not None:
        if out and out[0].start == pending.end:
            first = out[0]
            reason = first.reason if first.reason.startswith(_EDGE_REASONS) else pending.reason
            out[0] = Damage(pending.start, first.end, reason)
        else:
            out.insert(0, pending)
    held = None
    if not last and out and out[-1].end == end and out[-1].end > out[-1].start:
        held = out.pop()
    return out, held


def join_events(parts: list[tuple[int, FileEvents]]) -> FileEvents:
    """One file's events from the events of its windows; each part is (records before it, its events)."""
    if len(parts) == 1 and parts[0][0] == 0:
        return parts[0][1]
    tags: dict[str, int] = {}
    codes, records, steps, walls, values = [], [], [], [], []
    histograms, session_starts, problems = [], [], []
    hparams: dict = {}
    text: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    plugins: dict[str, str] = {}
    for shift, events in parts:
        remap = np.array([tags.setdefault(tag, len(tags)) for tag in events.tags], dtype=np.int32)
        codes.append(remap[events.tag_codes] if len(events.tag_codes) else np.empty(0, np.int32))
        records.append(events.records + shift)
        steps.append(events.steps)
        walls.append(events.wall_times)
        values.append(events.values)
        histograms += [{**row, "record": row["record"] + shift} for row in events.histograms]
        session_starts += [(record + shift, step) for record, step in events.session_starts]
        problems += [(record + shift, message) for record, message in events.problems]
        hparams = hparams or events.hparams
        text.update(events.text)
        skipped.update(events.skipped)
        plugins.update(events.plugins)

    def cat(arrays: list[np.ndarray], dtype) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype)

    return FileEvents(
        tags=list(tags), tag_codes=cat(codes, np.int32), records=cat(records, np.int64), steps=cat(steps, np.int64),
        wall_times=cat(walls, np.float64), values=cat(values, np.float64), histograms=histograms, hparams=hparams,
        text=text, skipped=skipped, session_starts=session_starts, problems=problems, plugins=plugins,
    )
