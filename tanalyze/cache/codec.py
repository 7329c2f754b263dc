"""Readers' results as cache entries: numeric arrays and exact JSON, nothing else.

A value the codec cannot store exactly (an object column, a tuple or a date in
hparams, a non-string category) makes the result uncacheable: it is then read
from the logs every time, never stored approximately.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.cache.store import Chunked, StoredArrays
from tanalyze.readers.base import FilePart, Phase, ReadWarning, Restart, RunData
from tanalyze.schema import ScalarColumns, empty_histograms

__all__ = ["Uncacheable", "encode_part", "decode_part", "encode_runs", "decode_runs", "json_exact", "CODEC_VERSION"]

#: Part of every cache key: bump it whenever what an entry holds changes (2: runs carry their phases).
CODEC_VERSION = 2


class Uncacheable(ValueError):
    """A result that the cache cannot store exactly."""


def json_exact(value: Any) -> bool:
    """Whether ``json.loads(json.dumps(value))`` gives ``value`` back with the same types."""
    if value is None or isinstance(value, bool | str):
        return True
    if isinstance(value, int):
        return type(value) is int
    if isinstance(value, float):
        return type(value) is float
    if type(value) is list:
        return all(json_exact(v) for v in value)
    if type(value) is dict:
        return all(isinstance(k, str) and json_exact(v) for k, v in value.items())
    return False


def _jsonable(value: Any) -> Any:
    """Numpy arrays and scalars inside a part's meta as plain lists and numbers."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def encode_part(part: FilePart) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    body = {"end": part.end, "meta": _jsonable(part.meta), "state": _jsonable(part.state), "tail": _jsonable(part.tail)}
    if not json_exact(body):
        raise Uncacheable("a part's meta holds values JSON cannot keep exactly")
    return dict(part.columns), body


def decode_part(arrays: dict[str, np.ndarray], body: Mapping[str, Any]) -> FilePart:
    return FilePart(end=int(body["end"]), columns=arrays, meta=dict(body["meta"]), state=dict(body["state"]),
                    tail=dict(body["tail"]))


# --- whole runs (readers that cannot resume) ----------------------------------------------------------------


def _encode_frame(frame: pd.DataFrame, prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.start != 0 or frame.index.step != 1:
        raise Uncacheable("a table without a plain row index")
    columns = []
    for i, name in enumerate(frame.columns):
        if not isinstance(name, str):
            raise Uncacheable("a column name that is not a string")
        column = frame[name]
        dtype = column.dtype
        key = f"{prefix}{i}"
        if isinstance(dtype, pd.CategoricalDtype):
            categories = dtype.categories
            if categories.dtype.kind not in "OUT" and not pd.api.types.is_string_dtype(categories.dtype):
                raise Uncacheable(f"column {name!r} has non-string categories")
            values = [str(c) for c in categories]
            if values != list(categories):
                raise Uncacheable(f"column {name!r} has non-string categories")
            arrays[key] = column.cat.codes.to_numpy()
            columns.append({"name": name, "kind": "category", "categories": values, "ordered": bool(dtype.ordered),
                            "categories_dtype": str(categories.dtype)})
        elif isinstance(dtype, pd.StringDtype):
            codes, uniques = pd.factorize(column, use_na_sentinel=True)
            arrays[key] = codes.astype(np.int64)
            columns.append({"name": name, "kind": "string", "dtype": str(dtype), "values": [str(u) for u in uniques]})
        elif isinstance(dtype, np.dtype) and dtype.kind in "biuf":
            arrays[key] = column.to_numpy()
            columns.append({"name": name, "kind": "numpy"})
        elif isinstance(dtype, pd.api.extensions.ExtensionDtype) and getattr(dtype, "numpy_dtype", None) is not None \
                and dtype.numpy_dtype.kind in "biuf":  # nullable Int64, Float64, boolean
            mask = column.isna().to_numpy()
            arrays[key] = column.to_numpy(dtype=dtype.numpy_dtype, na_value=0)
            arrays[key + "m"] = mask
            columns.append({"name": name, "kind": "masked", "dtype": str(dtype)})
        else:
            raise Uncacheable(f"column {name!r} of type {dtype} cannot be stored exactly")
    return {"rows": len(frame), "columns": columns}


@functools.lru_cache(maxsize=1024)
def _category_dtype(categories: tuple[Any, ...], dtype: str, ordered: bool) -> pd.CategoricalDtype:
    """The dtype of a stored categorical column, made (and its categories checked) once for all the runs that
    share it: thousands of runs of one export have the same tags."""
    return pd.CategoricalDtype(pd.Index(list(categories), dtype=dtype), ordered=ordered)


def _decode_frame(spec: Mapping[str, Any], prefix: str, arrays: Mapping[str, np.ndarray]) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for i, column in enumerate(spec["columns"]):
        key = f"{prefix}{i}"
        kind = column["kind"]
        if kind == "category":
            dtype = _category_dtype(tuple(column["categories"]), column["categories_dtype"], column["ordered"])
            data[column["name"]] = pd.Categorical.from_codes(arrays[key], dtype=dtype)
        elif kind == "string":
            codes = arrays[key]
            uniques = np.array(column["values"] + [None], dtype=object)
            data[column["name"]] = pd.array(uniques[codes], dtype=column["dtype"])
        elif kind == "numpy":
            data[column["name"]] = arrays[key]
        else:
            data[column["name"]] = pd.array(arrays[key], dtype=column["dtype"])
            data[column["name"]][arrays[key + "m"]] = pd.NA
    frame = pd.DataFrame(data, copy=False)
    if not spec["columns"]:
        frame = pd.DataFrame(index=pd.RangeIndex(spec["rows"]))
    return frame


def _encode_scalars(scalars: pd.DataFrame | ScalarColumns, prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    if not isinstance(scalars, ScalarColumns):
        return _encode_frame(scalars, prefix, arrays)
    for name, dtype in ScalarColumns.DTYPES.items():  # chunk by chunk: a run read from an entry is not copied
        arrays[f"{prefix}{name}"] = Chunked(tuple(scalars.column_chunks(name)), np.dtype(dtype))
    return {"columns_of_tags": list(scalars.tags)}


def _decode_scalars(spec: Mapping[str, Any], prefix: str, arrays: Mapping[str, np.ndarray]):
    if "columns_of_tags" not in spec:
        return _decode_frame(spec, prefix, arrays)
    tags = tuple(spec["columns_of_tags"])
    if not isinstance(arrays, StoredArrays):
        return ScalarColumns(tags, *(arrays[f"{prefix}{name}"] for name in ScalarColumns.DTYPES))
    columns = []
    for name, dtype in ScalarColumns.DTYPES.items():  # as stored, frame by frame: widened when joined
        chunked = arrays.chunked(f"{prefix}{name}")
        if chunked.dtype != dtype:
            raise ValueError(f"cached {name} are {chunked.dtype}, not {np.dtype(dtype)}")
        columns.append(chunked.pieces)
    return ScalarColumns.of_chunks(tags, zip(*columns, strict=True))


def _encode_histograms(frame: pd.DataFrame) -> dict[str, Any] | None:
    """Histograms as JSON rows (they are few; their buckets are arrays of differing lengths)."""
    if not len(frame):
        return None
    rows = []
    for record in frame.to_dict("records"):
        rows.append({k: (v.tolist() if isinstance(v, np.ndarray) else (v.item() if isinstance(v, np.generic) else v))
                     for k, v in record.items()})
    return {"columns": [str(c) for c in frame.columns], "rows": rows,
            "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()}}


def encode_runs(parts: list[RunData]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A reader's whole result as arrays and a JSON body; raises :class:`Uncacheable`."""
    arrays: dict[str, np.ndarray] = {}
    runs = []
    for index, part in enumerate(parts):
        hparams = dict(part.hparams)
        text = dict(part.text)
        body = {
            "scalars": _encode_scalars(part.scalars, f"{index}s", arrays),
            "histograms": _encode_histograms(part.histograms),
            "hparams": hparams,
            "warnings": [w.to_dict() for w in part.warnings],
            "restarts": [r.to_dict() for r in part.restarts],
            "phases": [p.to_dict() for p in part.phases],
            "text": text,
            "notes": list(part.notes),
            "name": part.name,
            "title": part.title,
            "extra_files": [str(f) for f in part.extra_files],
            "own_files": None if part.own_files is None else [str(f) for f in part.own_files],
        }
        if not json_exact(body):
            raise Uncacheable("hparams, text or notes hold values JSON cannot keep exactly")
        runs.append(body)
    return arrays, {"runs": runs}


def decode_runs(arrays: Mapping[str, np.ndarray], body: Mapping[str, Any]) -> list[RunData]:
    out = []
    for index, run in enumerate(body["runs"]):
        hist = run["histograms"]
        if hist is None:
            histograms = empty_histograms()
        else:
            histograms = pd.DataFrame(hist["rows"], columns=hist["columns"])
            for name, dtype in hist["dtypes"].items():
                if name in ("bucket_limits", "bucket_counts"):
                    histograms[name] = pd.Series([np.asarray(v, np.float64) for v in histograms[name]], dtype=object)
                elif dtype != "object":
                    histograms[name] = histograms[name].astype(dtype)
        out.append(RunData(
            scalars=_decode_scalars(run["scalars"], f"{index}s", arrays),
            histograms=histograms,
            hparams=run["hparams"],
            warnings=[ReadWarning(**w) for w in run["warnings"]],
            restarts=[Restart(**r) for r in run["restarts"]],
            phases=[Phase(**p) for p in run["phases"]],
            text=run["text"],
            notes=list(run["notes"]),
            name=run["name"],
            title=run.get("title"),
            extra_files=[Path(f) for f in run["extra_files"]],
            own_files=None if run.get("own_files") is None else [Path(f) for f in run["own_files"]],
        ))
    return out
