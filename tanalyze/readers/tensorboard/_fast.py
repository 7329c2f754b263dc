"""Vectorised decoding of the event layouts that make up nearly every scalar log.

Writers serialise one scalar per event, fields in number order, so almost every
record of a scalar log is, byte for byte::

    09 <f64 wall_time>  10 <varint step>  2a <len> 0a <len>
        0a <len> <tag>  ( 15 <f32 simple_value>  |  42 <len> <tensor> )  [ 4a <len> <metadata> ]

(``wall_time``/``step`` are left out when zero.) PyTorch/tensorboardX write
``simple_value``; TF2/Keras write a 0-d tensor plus ``scalars`` plugin metadata.
This module checks that shape for all records at once with numpy and gathers
the fields of those that have it; every other record (several values, images,
histograms, text, hparams, odd tensors …) is left to the protobuf path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["FastEvents", "decode_fast", "factorize_spans"]

_BLOCK = 1 << 14  # records decoded together (small blocks stay in cache and bound the temporaries)
_PRIME = np.uint64(0x9E3779B97F4A7C15)
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)

# The tensor encodings of one number read here: ``tensor_content`` (field 4) for every
# fixed-width dtype, ``float_val``/``double_val`` (fields 5/6, packed or not); the shape
# written as an empty message or left out. TensorProto dtype code -> payload dtype:
_DTYPES = {
    1: "<f4", 2: "<f8", 3: "<i4", 9: "<i8", 19: "<f2", 14: "bf16",
    5: "<i2", 6: "i1", 4: "u1", 17: "<u2", 22: "<u4", 23: "<u8",
}


def _tensor_table() -> dict[tuple[int, int], tuple[int, str]]:
    """(header width, header bytes as a little-endian int) -> (payload bytes, payload dtype)."""
    table = {}
    for shape in (b"\x12\x00", b""):
        headers = [(bytes([0x08, code]) + shape + bytes([0x22, 2 if dtype == "bf16" else np.dtype(dtype).itemsize]),
                    dtype) for code, dtype in _DTYPES.items()]
        headers += [(b"\x08\x01" + shape + b"\x2a\x04", "<f4"), (b"\x08\x01" + shape + b"\x2d", "<f4"),
                    (b"\x08\x02" + shape + b"\x32\x08", "<f8"), (b"\x08\x02" + shape + b"\x31", "<f8")]
        for header, dtype in headers:
            size = 2 if dtype == "bf16" else np.dtype(dtype).itemsize
            table[(len(header), int.from_bytes(header, "little"))] = (size, dtype)
    return table


_TENSOR_TABLE = _tensor_table()


@dataclass
class FastEvents:
    """Records decoded by the vectorised path (indices refer to the records given)."""

    records: np.ndarray  # int64 record index, ascending
    steps: np.ndarray  # int64
    wall_times: np.ndarray  # float64 (NaN where the event had none)
    values: np.ndarray  # float64
    tag_codes: np.ndarray  # int32 into ``tags``
    tags: list
    is_tensor: np.ndarray  # bool: value came from a tensor (plugin decides whether it is a scalar)
    meta_codes: np.ndarray  # int32 into ``metas`` or -1
    metas: list[bytes]
    rest: np.ndarray  # int64 record indices left to the protobuf path


class _Bytes:
    """Overlapping typed views of a byte buffer: ``view('<f8')[i]`` is the float64 at byte ``i``."""

    def __init__(self, buf: np.ndarray) -> None:
        self.u8 = buf
        self.size = len(buf)
        self._views: dict[str, np.ndarray] = {}

    def view(self, dtype: str) -> np.ndarray:
        if dtype not in self._views:
            width = np.dtype(dtype).itemsize
            count = max(self.size - width + 1, 0)
            self._views[dtype] = np.ndarray((count,), dtype=dtype, buffer=self.u8, strides=(1,))
        return self._views[dtype]

    def byte(self, pos: np.ndarray) -> np.ndarray:
        """The byte at each position (positions of rows already rejected may be anything: clipped)."""
        return self.u8.take(pos, mode="clip")

    def word(self, pos: np.ndarray) -> np.ndarray:
        """The 8 bytes from ``pos`` as a little-endian uint64, zero-filled past the end of the buffer."""
        last = self.size - 8
        if not len(pos) or pos.max() <= last:
            return self.view("<u8")[pos]  # (not .take: it would copy the overlapping view whole)
        clamped = np.minimum(pos, last)  # spans ending within 8 bytes of the end of the file
        return self.view("<u8")[clamped] >> ((pos - clamped).clip(0, 7).astype(np.uint64) * np.uint64(8))


def _varint(data: _Bytes, pos: np.ndarray, end: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode one varint at ``pos`` for every row where ``ok``; return value, position after it, ok."""
    first = data.byte(pos)
    good = ok & (pos < end)
    cur = pos + 1
    if not len(first) or first.max() < 0x80:  # all one byte (field lengths nearly always are)
        value = first.astype(np.uint64)
        value[~good] = 0
        return value, cur, good
    value = (first & 0x7F).astype(np.uint64)
    active = np.flatnonzero(good & (first >= 0x80))  # most varints here are one byte: done above
    for i in range(1, 10):
        if not len(active):
            break
        inside = cur[active] < end[active]
        good[active[~inside]] = False
        active = active[inside]
        byte = data.u8[cur[active]]
        value[active] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        cur[active] += 1
        active = active[(byte & 0x80) != 0]
    good[active] = False  # more than ten bytes: not a varint
    value[~good] = 0
    return value, cur, good


def _expect(data: _Bytes, pos: np.ndarray, end: np.ndarray, ok: np.ndarray, key: int) -> np.ndarray:
    return ok & (pos < end) & (data.byte(pos) == key)


def _length_delimited(data, pos, end, ok, key):
    """Expect field ``key`` with a length; return (start of payload, its length, ok)."""
    ok = _expect(data, pos, end, ok, key)
    length, start, ok = _varint(data, pos + 1, end, ok)
    ok &= length <= (end - start).clip(0).astype(np.uint64)
    return start, length.astype(np.int64), ok


#: Up to this many spans, grouping them in a dict is quicker than hashing them with numpy.
_FEW_SPANS = 128


def factorize_spans(data: _Bytes, pos: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
    """Group equal byte strings ``data[pos:pos+length]``: codes (first-appearance order) and the distinct strings.

    Hashes 8 bytes at a time, then verifies every row against its group's first
    row, so a hash collision can cost time but never a wrong answer.
    """
    if not len(pos):
        return np.empty(0, np.int64), []
    if len(pos) <= _FEW_SPANS:  # hashing in numpy has a fixed cost that a dict of a few strings undercuts
        return _factorize_exact(data, pos, length)
    words = []
    hashed = length.astype(np.uint64) * _PRIME
    for offset in range(0, int(length.max()), 8):
        left = (length - offset).clip(0, 8).astype(np.uint64)
        word = data.word(pos + offset)
        if left.min() < 8:  # spans ending in this word: keep only their own bytes
            word &= np.where(left >= 8, _ALL_ONES, (np.uint64(1) << (left * np.uint64(8)) % np.uint64(64)) - np.uint64(1))
        words.append(word)
        hashed = (hashed ^ word) * _PRIME
    codes, _ = pd.factorize(hashed)
    codes = np.asarray(codes, dtype=np.int64)
    # Codes are numbered by first appearance: a group starts where the running maximum grows.
    first = np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)
    same = length == length[first][codes]
    for word in words:
        same &= word == word[first][codes]
    if not same.all():
        return _factorize_exact(data, pos, length)
    return codes, [data.u8[p : p + n].tobytes() for p, n in zip(pos[first].tolist(), length[first].tolist(), strict=True)]


def _factorize_exact(data: _Bytes, pos: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
    seen: dict[bytes, int] = {}
    raw = memoryview(data.u8)
    codes = np.fromiter(
        (seen.setdefault(bytes(raw[p : p + n]), len(seen)) for p, n in zip(pos.tolist(), length.tolist(), strict=True)),
        dtype=np.int64,
        count=len(pos),
    )
    return codes, list(seen)


def _tensor_values(data: _Bytes, pos: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values of tensors that hold one number in a known encoding; and which rows matched."""
    values = np.full(len(pos), np.nan)
    matched = np.zeros(len(pos), bool)
    if not len(pos):
        return values, matched
    # Header width: dtype field, optional empty shape, then a 2-byte (packed/content) or 1-byte field key.
    shaped = (data.byte(pos + 2) == 0x12) & (data.byte(pos + 3) == 0x00)
    key_at = pos + np.where(shaped, 4, 2)
    width = key_at - pos + np.where(np.isin(data.byte(key_at), (0x22, 0x2A, 0x32)), 2, 1)
    bits = (width * 8).astype(np.uint64)
    head = data.word(pos) & ((np.uint64(1) << bits) - np.uint64(1))
    inverse, kinds = pd.factorize(head | (width.astype(np.uint64) << np.uint64(56)))  # headers are <= 6 bytes
    for index, kind in enumerate(kinds.tolist()):
        kind_width = kind >> 56
        entry = _TENSOR_TABLE.get((kind_width, kind & ((1 << 56) - 1)))
        if entry is None:
            continue
        size, dtype = entry
        rows = np.flatnonzero((inverse == index) & (length == kind_width + size))
        at = pos[rows] + kind_width
        if dtype == "bf16":
            values[rows] = (data.view("<u2")[at].astype(np.uint32) << np.uint32(16)).view(np.float32)
        else:
            values[rows] = data.view(dtype)[at]
        matched[rows] = True
    return values, matched


def decode_fast(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> FastEvents:
    """Decode every record that has the one-scalar layout; list the others in ``rest``.

    Works through the records a block at a time, so that its temporary arrays
    stay small whatever the size of the file.
    """
    data = _Bytes(buf)
    n = len(starts)
    if n <= _BLOCK:  # one block (a log's new tail, a small file): its codes are already the file's
        out = _decode_block(data, starts, lengths)
        out.tag_codes = out.tag_codes.astype(np.int32)
        out.tags = [t.decode("utf-8", "replace") for t in out.tags]
        return out
    tags: dict[bytes, int] = {}
    metas: dict[bytes, int] = {}
    # Filled block by block: nearly every record of a scalar log takes this path, so
    # arrays sized for all records waste little and avoid concatenating copies.
    out = FastEvents(
        records=np.empty(n, np.int64), steps=np.empty(n, np.int64), wall_times=np.empty(n), values=np.empty(n),
        tag_codes=np.empty(n, np.int32), tags=[], is_tensor=np.empty(n, bool), meta_codes=np.empty(n, np.int32),
        metas=[], rest=np.empty(0, np.int64),
    )
    filled = 0
    rest = []
    for first in range(0, n, _BLOCK):
        block = _decode_block(data, starts[first : first + _BLOCK], lengths[first : first + _BLOCK])
        done = slice(filled, filled + len(block.records))
        out.records[done] = block.records + first
        out.steps[done] = block.steps
        out.wall_times[done] = block.wall_times
        out.values[done] = block.values
        out.is_tensor[done] = block.is_tensor
        out.tag_codes[done] = _remap(block.tag_codes, block.tags, tags)
        with_meta = block.meta_codes >= 0
        block.meta_codes[with_meta] = _remap(block.meta_codes[with_meta], block.metas, metas)
        out.meta_codes[done] = block.meta_codes
        filled += len(block.records)
        rest.append(block.rest + first)
    for name in ("records", "steps", "wall_times", "values", "tag_codes", "is_tensor", "meta_codes"):
        setattr(out, name, getattr(out, name)[:filled])
    out.tags = [t.decode("utf-8", "replace") for t in tags]
    out.metas = list(metas)
    out.rest = np.concatenate(rest) if rest else np.empty(0, np.int64)
    return out


def _remap(codes: np.ndarray, names: list, table: dict) -> np.ndarray:
    """Block-local codes of ``names`` as codes of the file-wide ``table`` (extended as needed)."""
    index = np.array([table.setdefault(name, len(table)) for name in names], dtype=np.int32)
    return index[codes] if len(codes) else codes.astype(np.int32)


def _decode_block(data: _Bytes, starts: np.ndarray, lengths: np.ndarray) -> FastEvents:
    n = len(starts)
    end = starts + lengths
    ok = lengths > 0
    pos = starts.copy()

    has_wall = _expect(data, pos, end, ok, 0x09) & (pos + 9 <= end)
    wall = np.full(n, np.nan)
    wall[has_wall] = data.view("<f8")[pos[has_wall] + 1]
    pos = pos + 9 * has_wall

    has_step = _expect(data, pos, end, ok, 0x10)
    step, after, step_ok = _varint(data, pos + 1, end, has_step)
    ok &= ~has_step | step_ok
    pos = np.where(has_step, after, pos)

    for key in (0x2A, 0x0A):  # Event.summary, then Summary.value: each must fill the rest of the record
        start, length, ok = _length_delimited(data, pos, end, ok, key)
        ok &= start + length == end
        pos = start
    tag_pos, tag_len, ok = _length_delimited(data, pos, end, ok, 0x0A)
    pos = tag_pos + tag_len

    is_simple = _expect(data, pos, end, ok, 0x15) & (pos + 5 <= end)
    value_pos = pos + 1
    maybe_tensor = ok & ~is_simple
    if maybe_tensor.any():
        tensor_pos, tensor_len, is_tensor = _length_delimited(data, pos, end, maybe_tensor, 0x42)
        ok &= is_simple | is_tensor
        pos = np.where(is_simple, pos + 5, tensor_pos + tensor_len)
    else:  # every record left holds a simple value (tensorboardX, TF1)
        tensor_pos = tensor_len = np.zeros(n, np.int64)
        is_tensor = np.zeros(n, bool)
        pos = pos + 5

    has_meta = _expect(data, pos, end, ok, 0x4A)
    if has_meta.any():  # metadata comes with a tag's first value only
        meta_pos, meta_len, meta_ok = _length_delimited(data, pos, end, has_meta, 0x4A)
        ok &= ~has_meta | meta_ok
        pos = np.where(has_meta, meta_pos + meta_len, pos)
    else:
        meta_pos = meta_len = np.zeros(n, np.int64)
    ok &= pos == end

    values = np.full(n, np.nan)
    simple_rows = np.flatnonzero(ok & is_simple)
    values[simple_rows] = data.view("<f4")[value_pos[simple_rows]]
    tensor_rows = np.flatnonzero(ok & is_tensor)
    tensor_values, matched = _tensor_values(data, tensor_pos[tensor_rows], tensor_len[tensor_rows])
    values[tensor_rows] = tensor_values
    ok[tensor_rows[~matched]] = False

    rows = np.flatnonzero(ok)
    if len(rows) == n:  # the usual block: every record decoded, no gathering needed
        rows = slice(None)
    tag_codes, tags = factorize_spans(data, tag_pos[rows], tag_len[rows])
    meta_codes = np.full(len(tag_codes), -1, np.int32)
    with_meta = np.flatnonzero(has_meta[rows])
    codes, metas = factorize_spans(data, meta_pos[rows][with_meta], meta_len[rows][with_meta])
    meta_codes[with_meta] = codes
    return FastEvents(
        records=np.flatnonzero(ok),
        steps=step[rows].view(np.int64),
        wall_times=wall[rows],
        values=values[rows],
        tag_codes=tag_codes,
        tags=tags,
        is_tensor=is_tensor[rows],
        meta_codes=meta_codes,
        metas=metas,
        rest=np.flatnonzero(~ok),
    )
