"""Cache entries on disk: named numeric arrays plus a JSON header, in one file, written atomically.

Two storages, one layout: Parquet (with pyarrow; each array is a one-row list
column, so arrays of any lengths share a file) or ``.npz`` (numpy only). Neither
uses pickle: an entry holds numbers and JSON, never code, so a cache folder
shared with others cannot run anything here. A missing, truncated or corrupt
entry reads as ``None`` (the caller reads the logs again and rewrites it). An
entry is written to a temporary file beside its place and renamed over it, so
readers and concurrent writers never see half an entry.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["STORAGES", "default_storage", "write_entry", "read_entry", "suffix"]

STORAGES = ("parquet", "npz")
_HEADER = "__header__"
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
    """Parquet when pyarrow is installed, else ``.npz``."""
    return "parquet" if _have_pyarrow() else "npz"


def suffix(storage: str) -> str:
    return {"parquet": ".parquet", "npz": ".npz"}[storage]


def _check(arrays: Mapping[str, np.ndarray]) -> None:
    for name, array in arrays.items():
        if array.ndim != 1 or array.dtype.kind not in _ALLOWED_KINDS:
            raise TypeError(f"cache arrays are 1-d numbers; {name!r} is {array.dtype} with shape {array.shape}")


def write_entry(path: Path, arrays: Mapping[str, np.ndarray], header: Mapping[str, Any], storage: str) -> None:
    """Write one entry atomically (temp file + rename). Raises ``OSError``/``TypeError``/``ValueError``."""
    _check(arrays)
    body = dict(header)
    body["__dtypes__"] = {name: array.dtype.str for name, array in arrays.items()}
    text = json.dumps(body, allow_nan=True, separators=(",", ":"))
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            if storage == "parquet":
                _write_parquet(out, arrays, text)
            else:
                _write_npz(out, arrays, text)
        os.replace(temp, path)
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
            data = handle.read()
    except OSError:
        return None
    try:
        arrays, text = _read_parquet(data) if storage == "parquet" else _read_npz(data)
        header = json.loads(text)
        dtypes = header.pop("__dtypes__")
        if not isinstance(header, dict) or set(dtypes) != set(arrays):
            return None
        out = {}
        for name, array in arrays.items():
            dtype = np.dtype(dtypes[name])
            if dtype.kind not in _ALLOWED_KINDS or array.ndim != 1:
                return None
            out[name] = array.astype(dtype, copy=False)
        return out, header
    except Exception:  # noqa: BLE001 - any damage to a cache file means "not cached", never an error
        return None


def _write_npz(out, arrays: Mapping[str, np.ndarray], text: str) -> None:
    payload = {f"a{i}": array for i, array in enumerate(arrays.values())}
    payload[_HEADER] = np.frombuffer(json.dumps([list(arrays), text]).encode("utf-8"), dtype=np.uint8)
    np.savez(out, **payload)


def _read_npz(data: bytes) -> tuple[dict[str, np.ndarray], str]:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        names, text = json.loads(archive[_HEADER].tobytes().decode("utf-8"))
        arrays = {name: archive[f"a{i}"] for i, name in enumerate(names)}
    return arrays, text


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
