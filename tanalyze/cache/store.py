"""Cache entries on disk: named numeric arrays plus a JSON header, in one file, written atomically.

Two storages, one content. ``raw`` (the default, numpy only): a magic line, the
JSON header with each array's dtype and length, then the arrays' bytes, aligned
(reading one is a single ``read`` and zero-copy views: about 0.1 ms for a run
of 5,000 points, where ``.npz`` takes 0.4 ms and Parquet 1.4 ms). ``parquet``
(with pyarrow; each array is a one-row list column, zstd-compressed): about 3x
smaller, for a cache on a network share where bytes cost more than CPU. Neither
uses pickle: an entry holds numbers and JSON, never code, so a cache folder
shared with others cannot run anything here. A missing, truncated or corrupt
entry reads as ``None`` (the caller reads the logs again and rewrites it). An
entry is written to a temporary file beside its place and renamed into it, so
readers and concurrent writers never see half an entry.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["STORAGES", "default_storage", "write_entry", "read_entry", "suffix"]

STORAGES = ("raw", "parquet")
_HEADER = "__header__"
_MAGIC = b"TANALYZE-CACHE-1\n"
_ALIGN = 8
_ALLOWED_KINDS = "biuf"  # bool, signed, unsigned, float: nothing that needs pickle


@cache
def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def default_storage() -> str:
    """``$TANALYZE_CACHE_FORMAT`` when set (``raw`` or ``parquet``), else ``raw``."""
    chosen = os.environ.get("TANALYZE_CACHE_FORMAT", "raw")
    if chosen not in STORAGES:
        raise ValueError(f"TANALYZE_CACHE_FORMAT must be one of {', '.join(STORAGES)}, not {chosen!r}")
    if chosen == "parquet" and not _have_pyarrow():
        return "raw"
    return chosen


def suffix(storage: str) -> str:
    return {"parquet": ".parquet", "raw": ".arrays"}[storage]


def _check(arrays: Mapping[str, np.ndarray]) -> None:
    for name, array in arrays.items():
        if array.ndim != 1 or array.dtype.kind not in _ALLOWED_KINDS:
            raise TypeError(f"cache arrays are 1-d numbers; {name!r} is {array.dtype} with shape {array.shape}")


def _narrow(array: np.ndarray) -> np.ndarray:
    """The same numbers in fewer bytes when no value changes: small integers, float64 that are float32
    (TensorBoard stores scalars as float32). Read back, they are cast to their dtype again."""
    if not len(array):
        return array
    if array.dtype.kind == "i" and array.dtype.itemsize > 1:
        low, high = int(array.min()), int(array.max())
        for dtype in (np.int8, np.int16, np.int32):
            if np.dtype(dtype).itemsize >= array.dtype.itemsize:
                break
            info = np.iinfo(dtype)
            if info.min <= low and high <= info.max:
                return array.astype(dtype)
    elif array.dtype == np.float64:
        with np.errstate(over="ignore"):
            if not _same_bits(array[:8].astype(np.float32), array[:8]):  # most arrays that do not fit show it early
                return array
            narrow = array.astype(np.float32)
            if _same_bits(narrow, array):
                return narrow
    return array


def _same_bits(narrow: np.ndarray, array: np.ndarray) -> bool:
    """Whether float32 ``narrow`` widens back to exactly the bits of float64 ``array`` (NaNs included)."""
    return bool(np.array_equal(narrow.astype(np.float64).view(np.int64), array.view(np.int64)))


def write_entry(path: Path, arrays: Mapping[str, np.ndarray], header: Mapping[str, Any], storage: str) -> None:
    """Write one entry atomically (temp file + rename). Raises ``OSError``/``TypeError``/``ValueError``."""
    _check(arrays)
    body = dict(header)
    body["__dtypes__"] = {name: array.dtype.str for name, array in arrays.items()}
    arrays = {name: _narrow(array) for name, array in arrays.items()}
    text = json.dumps(body, allow_nan=True, separators=(",", ":"))
    try:
        handle, temp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:  # the entry's folder is new (or the cache was deleted meanwhile)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            if storage == "parquet":
                _write_parquet(out, arrays, text)
            else:
                _write_raw(out, arrays, text)
        # Not os.replace over the old entry: ext4 flushes a file renamed over another to disk before going
        # on (auto_da_alloc, ~1 ms per entry). Removing the old one first leaves a moment with no entry,
        # which readers take as "not cached"; they never see a partial one either way.
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.rename(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def read_entry(path: Path, storage: str) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """The arrays and header of an entry; None when it is missing or cannot be read as one."""
    try:
        with open(path, "rb") as handle:
            data = bytearray(os.fstat(handle.fileno()).st_size)  # writable: arrays are views of it
            if handle.readinto(data) != len(data):
                return None
    except OSError:
        return None
    try:
        arrays, text = _read_parquet(bytes(data)) if storage == "parquet" else _read_raw(data)
        header = json.loads(text)
        dtypes = header.pop("__dtypes__")
        if not isinstance(header, dict) or set(dtypes) != set(arrays):
            return None
        out = {}
        for name, array in arrays.items():
            dtype = np.dtype(dtypes[name])
            if dtype.kind not in _ALLOWED_KINDS or array.ndim != 1:
                return None
            out[name] = array.astype(dtype, copy=False)  # narrowed numbers widened again, exactly
        return out, header
    except Exception:  # noqa: BLE001 - any damage to a cache file means "not cached", never an error
        return None


def _write_raw(out, arrays: Mapping[str, np.ndarray], text: str) -> None:
    layout = []
    offset = 0
    for name, array in arrays.items():
        layout.append([name, array.dtype.str, len(array), offset])
        offset += -(-array.nbytes // _ALIGN) * _ALIGN
    head = json.dumps({"arrays": layout, "header": text}).encode("utf-8")
    head += b" " * (-(len(_MAGIC) + 8 + len(head)) % _ALIGN)
    out.write(_MAGIC + len(head).to_bytes(8, "little") + head)
    for array in arrays.values():
        data = np.ascontiguousarray(array).tobytes()
        out.write(data + bytes(-len(data) % _ALIGN))


def _read_raw(data: bytearray) -> tuple[dict[str, np.ndarray], str]:
    if not data.startswith(_MAGIC):
        raise ValueError("not a tanalyze cache entry")
    start = len(_MAGIC) + 8
    length = int.from_bytes(data[len(_MAGIC):start], "little")
    head = json.loads(bytes(data[start:start + length]))
    base = start + length
    arrays = {}
    for name, dtype, count, offset in head["arrays"]:
        kind = np.dtype(dtype)
        if kind.kind not in _ALLOWED_KINDS or base + offset + count * kind.itemsize > len(data):
            raise ValueError("damaged cache entry")
        arrays[name] = np.frombuffer(data, dtype=kind, count=count, offset=base + offset)
    return arrays, head["header"]


def _write_parquet(out, arrays: Mapping[str, np.ndarray], text: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {}
    for name, array in arrays.items():
        values = pa.array(np.ascontiguousarray(array))
        columns[name] = pa.ListArray.from_arrays(pa.array([0, len(array)], pa.int32()), values)
    table = pa.table(columns) if columns else pa.table({"__none__": pa.array([0], pa.int8())})
    table = table.replace_schema_metadata({_HEADER: text})
    pq.write_table(table, out, compression="zstd", use_dictionary=False, write_statistics=False)


def _read_parquet(data: bytes) -> tuple[dict[str, np.ndarray], str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data))
    text = table.schema.metadata[_HEADER.encode()].decode("utf-8")
    arrays = {}
    for name in table.column_names:
        if name == "__none__":
            continue
        column = table.column(name).combine_chunks()
        arrays[name] = column.flatten().to_numpy(zero_copy_only=False)
    return arrays, text
