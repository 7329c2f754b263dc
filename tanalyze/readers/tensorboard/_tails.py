"""The new records of many event files, read on together.

A sweep's event files each gain a few records between two reads. Parsed one by
one, a tail of 50 records costs ~200 us, nearly all of it the fixed cost of the
vectorised scan and decode; here the tails are joined into one buffer, framed
and CRC-checked in one scan and decoded in one pass (100,000 records in ~70 ms),
then split back into one part per file.

Only what provably equals a read of each file alone is kept from the joint pass:

* a file's bytes must be one unbroken chain of intact frames from its start to its
  end (no damage, no bad CRC, no record cut short at the end): the scan of the
  joined buffer then found exactly the frames a scan of the file alone finds;
* the joint decode must have needed no protobuf fallback and named no new plugin
  and skipped nothing: then every record is one scalar whose meaning depends only
  on its own bytes and the plugins the files already had (grouped by them), and
  the rows of each file are those of its records.

Every other file (and a group whose decode was not that simple) is read alone
with ``read_part``, so the result is the same either way; only the time differs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze._fileio import open_fd, pread
from tanalyze.readers.base import FilePart
from tanalyze.readers.tensorboard._events import canonical_tags, decode_events
from tanalyze.readers.tensorboard._tfrecord import _FRAME, _HEADER, scan_records

__all__ = ["read_tails", "MAX_TAIL"]

#: Tails larger than this are read alone (in bounded windows, as ``read_part`` does).
MAX_TAIL = 1 << 20

Request = tuple[Path, int, Mapping[str, Any] | None]


def _read_bytes(path: Path, start: int) -> tuple[bytes, int] | None:
    """The bytes from ``start`` to the end and the end's offset; None when the file is not simply longer
    than ``start`` by at most :data:`MAX_TAIL` (read it alone)."""
    handle = open_fd(path, os.O_RDONLY)
    try:
        size = os.fstat(handle).st_size
        if not start < size <= start + MAX_TAIL:
            return None
        data = pread(handle, size - start, start)
    finally:
        os.close(handle)
    return (data, size) if len(data) == size - start else None


def _chained(offsets: np.ndarray, lengths: np.ndarray, begin: int, end: int) -> bool:
    """Whether the frames at ``offsets`` run back to back from ``begin`` to exactly ``end``."""
    if not len(offsets) or offsets[0] != begin:
        return False
    ends = offsets + lengths + _FRAME
    return bool(ends[-1] == end and np.array_equal(offsets[1:], ends[:-1]))


def read_tails(requests: Sequence[Request], read_alone: Callable[[Path, int, Mapping[str, Any] | None], FilePart]
               ) -> list[FilePart | OSError]:
    """One part per request ``(path, start, state)``, each equal to ``read_alone(path, start, state)``."""
    out: list[FilePart | OSError | None] = [None] * len(requests)
    groups: dict[tuple, list[tuple[int, bytes, int, dict[str, str]]]] = {}
    for index, (path, start, state) in enumerate(requests):
        try:
            found = _read_bytes(path, start) if start > 0 else None
        except OSError:
            found = None  # read_alone raises it again, or reads what is there now
        if found is None:
            continue
        plugins = dict((state or {}).get("plugins", {}))
        groups.setdefault(tuple(sorted(plugins.items())), []).append((index, *found, plugins))
    for key, members in groups.items():
        _read_group(members, dict(key), out)
    for index, part in enumerate(out):
        if part is None:
            path, start, state = requests[index]
            try:
                out[index] = read_alone(path, start, state)
            except OSError as exc:
                out[index] = exc
    return out  # type: ignore[return-value]


def _read_group(members: list[tuple[int, bytes, int, dict[str, str]]], plugins: dict[str, str], out: list) -> None:
    """Scan and decode the tails of files that share their plugins; fill ``out`` for those that split cleanly."""
    sizes = np.array([len(data) for _, data, _, _ in members], np.int64)
    bases = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    joined = b"".join(data for _, data, _, _ in members)
    records = scan_records(joined)
    frames = records.starts - _HEADER
    bounds = np.searchsorted(frames, np.concatenate((bases, [len(joined)])))
    troubled = np.sort(np.array([d.start for d in records.damage] + [d.end - 1 for d in records.damage if d.end > d.start]
                                + list(records.bad_data_crc), np.int64))
    clean = []
    for position, (base, size) in enumerate(zip(bases.tolist(), sizes.tolist(), strict=True)):
        lo, hi = int(bounds[position]), int(bounds[position + 1])
        hit = np.searchsorted(troubled, [base, base + size])
        if hit[0] == hit[1] and _chained(frames[lo:hi], records.lengths[lo:hi], base, base + size):
            clean.append((position, lo, hi))
    if clean:
        _decode(np.frombuffer(joined, dtype=np.uint8), records, clean, members, plugins, out)


def _decode(buf: np.ndarray, records, clean: list[tuple[int, int, int]], members, plugins: dict[str, str],
            out: list) -> None:
    """Decode the records of the ``clean`` files (position in ``members``, first and last frame) in one pass and
    split the rows by file; when that pass meets more than plain scalars, each half is tried on its own (a file
    whose tail holds a histogram or hparams is then read alone, the others still together)."""
    keep = np.concatenate([np.arange(lo, hi) for _, lo, hi in clean])
    events = decode_events(buf, records.starts[keep], records.lengths[keep], plugins)
    if events.plugins != plugins or events.skipped or events.problems or events.histograms or events.text \
            or events.hparams or events.session_starts:
        if len(clean) > 1:
            half = len(clean) // 2
            _decode(buf, records, clean[:half], members, plugins, out)
            _decode(buf, records, clean[half:], members, plugins, out)
        return  # a single file with more than plain scalars: read alone
    counts = np.array([hi - lo for _, lo, hi in clean], np.int64)
    firsts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rows = np.searchsorted(events.records, np.stack([firsts, firsts + counts], axis=1).ravel()).reshape(-1, 2)
    for (position, _, _), begin, count, (row_lo, row_hi) in zip(clean, firsts.tolist(), counts.tolist(),
                                                                   rows.tolist(), strict=True):
        index, _, size, own = members[position]
        codes, tags = canonical_tags(events.tag_codes[row_lo:row_hi], events.tags)
        out[index] = FilePart(
            end=size,
            columns={"records": events.records[row_lo:row_hi] - begin, "codes": codes,
                     "steps": events.steps[row_lo:row_hi], "wall_times": events.wall_times[row_lo:row_hi],
                     "values": events.values[row_lo:row_hi]},
            meta={"records": count, "tags": tags, "histograms": [], "hparams": {}, "text": {}, "skipped": {},
                  "session_starts": [], "problems": [], "damage": [], "bad_data_crc": []},
            state={"plugins": own},
            tail={"size": size, "damage": None},
        )
