"""Turn one event file's intact records into scalars, histograms, hparams and text.

Common one-scalar records go through the vectorised path (:mod:`._fast`);
every other record is parsed with protobuf here. TensorBoard's rules are kept:
a tag's plugin is named by the first metadata written for it; ``simple_value``
is always a scalar; a tensor is a scalar when its tag's plugin is ``scalars``
(or, with no plugin at all, when it holds one number); ``histograms`` tensors
are ``[k, 3]`` (left edge, right edge, count); ``text`` tensors hold strings.
What is not analysed (images, audio, graphs, PR curves …) is counted, never
silently dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tanalyze.readers.tensorboard._fast import decode_fast

__all__ = ["FileEvents", "decode_events", "canonical_tags", "SKIPPED_LABELS"]

#: Names (singular, plural) of what is counted but not read, keyed by plugin or field name.
SKIPPED_LABELS = {
    "image": ("image summary", "image summaries"),
    "images": ("image summary", "image summaries"),
    "audio": ("audio summary", "audio summaries"),
    "pr_curves": ("PR-curve summary", "PR-curve summaries"),
    "graph": ("graph", "graphs"),
    "run_metadata": ("run-metadata record", "run-metadata records"),
    "log_message": ("log message", "log messages"),
    "old_histogram": ("old-style histogram", "old-style histograms"),
    "tensor": ("tensor summary without a plugin", "tensor summaries without a plugin"),
}
_TEXT_SUFFIX = "/text_summary"
_MAX_ELEMENTS = 1 << 22  # tensors tanalyze reads (scalars, histograms, text) are far smaller
_HPARAMS_TAG = "_hparams_/session_start_info"
_DTYPES = {
    1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 9: np.int64,
    10: np.bool_, 17: np.uint16, 19: np.float16, 22: np.uint32, 23: np.uint64, 14: "bfloat16",
}


@dataclass
class FileEvents:
    """Everything read from one event file, in write order. ``records`` index the file's intact records."""

    tags: list[str]
    tag_codes: np.ndarray
    records: np.ndarray
    steps: np.ndarray
    wall_times: np.ndarray
    values: np.ndarray
    histograms: list[dict[str, Any]] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    session_starts: list[tuple[int, int]] = field(default_factory=list)  # (record, step) of SessionLog.START
    problems: list[tuple[int, str]] = field(default_factory=list)  # (record, what was wrong)
    plugins: dict[str, str] = field(default_factory=dict)  # tag -> plugin named by its first metadata


@dataclass
class _Pending:
    record: int
    sub: int
    tag: str
    step: int
    wall_time: float
    tensor: Any


@dataclass
class _Slow:
    rows: list[tuple[int, int, str, int, float, float]] = field(default_factory=list)
    tensors: list[_Pending] = field(default_factory=list)
    histograms: list[dict[str, Any]] = field(default_factory=list)
    first_meta: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    session_starts: list[tuple[int, int]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)


def tensor_array(tensor: Any) -> np.ndarray | None:
    """A TensorProto as a numpy array (None for dtypes tanalyze does not read and for inconsistent tensors)."""
    shape = [dim.size for dim in tensor.tensor_shape.dim]
    if any(size < 0 for size in shape) or np.prod(shape, dtype=np.float64) > _MAX_ELEMENTS:
        return None
    try:
        return _tensor_array(tensor, shape, int(np.prod(shape)) if shape else 1)
    except ValueError:  # sizes that do not match the shape
        return None


def _tensor_array(tensor: Any, shape: list[int], size: int) -> np.ndarray | None:
    dtype = _DTYPES.get(tensor.dtype)
    if tensor.dtype == 7:
        values = [v.decode("utf-8", "replace") for v in tensor.string_val]
        return _fill(np.array(values, dtype=object), size, shape)
    if dtype is None:
        return None
    if tensor.tensor_content:
        if dtype == "bfloat16":
            bits = np.frombuffer(tensor.tensor_content, "<u2").astype(np.uint32) << np.uint32(16)
            array = bits.view(np.float32)
        else:
            array = np.frombuffer(tensor.tensor_content, np.dtype(dtype).newbyteorder("<"))
        return array.reshape(shape) if array.size == size else None
    if tensor.dtype in (19, 14):
        bits = np.array(tensor.half_val, dtype=np.uint16)
        array = bits.view(np.float16) if tensor.dtype == 19 else (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    else:
        source = {
            1: tensor.float_val, 2: tensor.double_val, 9: tensor.int64_val, 10: tensor.bool_val,
            22: tensor.uint32_val, 23: tensor.uint64_val,
        }.get(tensor.dtype, tensor.int_val)
        array = np.array(source, dtype=dtype)
    return _fill(array, size, shape)


def _fill(array: np.ndarray, size: int, shape: list[int]) -> np.ndarray | None:
    """TensorFlow's convention: fewer values than elements repeat the last one."""
    if array.size == size:
        return array.reshape(shape)
    if array.size == 0 or array.size > size:
        return None
    return np.concatenate([array, np.repeat(array[-1:], size - array.size)]).reshape(shape)


def _wall(seconds: float) -> float:
    return seconds if seconds else np.nan


def _decode_slow(view: memoryview, starts: list[int], lengths: list[int], records: list[int]) -> _Slow:
    from tanalyze.readers.tensorboard._proto import SESSION_START, Event

    out = _Slow()
    for start, length, record in zip(starts, lengths, records, strict=True):
        try:
            event = Event.FromString(view[start : start + length])
        except (DecodeError, ValueError) as exc:
            out.problems.append((record, f"not a valid event ({exc})"))
            continue
        what = event.WhichOneof("what")
        if what == "summary":
            _decode_summary(event, record, out)
        elif what == "session_log":
            if event.session_log.status == SESSION_START:
                out.session_starts.append((record, event.step))
        elif what in ("graph_def", "meta_graph_def"):
            out.skipped["graph"] += 1
        elif what == "tagged_run_metadata":
            out.skipped["run_metadata"] += 1
        elif what == "log_message":
            out.skipped["log_message"] += 1
    return out


def _decode_summary(event: Any, record: int, out: _Slow) -> None:
    step, wall = event.step, _wall(event.wall_time)
    for sub, value in enumerate(event.summary.value):
        tag = value.tag or value.node_name
        if value.HasField("metadata") and tag not in out.first_meta:
            plugin = value.metadata.plugin_data
            out.first_meta[tag] = (record, plugin.plugin_name, plugin.content)
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            out.rows.append((record, sub, tag, step, wall, value.simple_value))
        elif kind == "histo":
            out.histograms.append(_histogram_row(record, tag, step, wall, value.histo))
        elif kind == "tensor":
            out.tensors.append(_Pending(record, sub, tag, step, wall, value.tensor))
        elif kind == "image" or kind == "audio":
            out.skipped[kind] += 1
        elif kind == "obsolete_old_style_histogram":
            out.skipped["old_histogram"] += 1


def _histogram_row(record: int, tag: str, step: int, wall: float, histo: Any) -> dict[str, Any]:
    return {
        "record": record, "tag": tag, "step": step, "wall_time": wall,
        "min": histo.min, "max": histo.max, "num": histo.num, "sum": histo.sum, "sum_squares": histo.sum_squares,
        "bucket_limits": np.array(histo.bucket_limit, dtype=np.float64),
        "bucket_counts": np.array(histo.bucket, dtype=np.float64),
    }


def _tensor_histogram(item: _Pending, array: np.ndarray) -> dict[str, Any]:
    """A TF2 ``[k, 3]`` histogram tensor as a histogram row (sum and sum of squares are not stored: NaN)."""
    data = array.astype(np.float64)
    counts = data[:, 2]
    return {
        "record": item.record, "tag": item.tag, "step": item.step, "wall_time": item.wall_time,
        "min": data[0, 0] if len(data) else np.nan, "max": data[-1, 1] if len(data) else np.nan,
        "num": float(counts.sum()), "sum": np.nan, "sum_squares": np.nan,
        "bucket_limits": data[:, 1].copy(), "bucket_counts": counts.copy(),
    }


def _plugin_names(fast, slow: _Slow, known: Mapping[str, str]) -> dict[str, str]:
    """Each tag's plugin, named by the first metadata written for it (TensorBoard's rule); ``known`` are
    the plugins of tags whose first metadata came earlier in the file (when reading on from an offset)."""
    from tanalyze.readers.tensorboard._proto import SummaryMetadata

    first: dict[str, tuple[int, str]] = {tag: (-1, name) for tag, name in known.items()}
    with_meta = np.flatnonzero(fast.meta_codes >= 0)
    if len(with_meta):
        names = []
        for blob in fast.metas:
            try:
                names.append(SummaryMetadata.FromString(blob).plugin_data.plugin_name)
            except DecodeError:
                names.append("")
        codes, index = np.unique(fast.tag_codes[with_meta], return_index=True)
        for code, row in zip(codes.tolist(), with_meta[index].tolist(), strict=True):
            if fast.tags[code] not in known:
                first[fast.tags[code]] = (int(fast.records[row]), names[fast.meta_codes[row]])
    for tag, (record, name, _content) in slow.first_meta.items():
        if tag not in first or record < first[tag][0]:
            first[tag] = (record, name)
    return {tag: name for tag, (_record, name) in first.items()}


def _hparams(slow: _Slow, known: Mapping[str, str]) -> dict[str, Any]:
    meta = slow.first_meta.get(_HPARAMS_TAG)
    if meta is None or meta[1] != "hparams" or _HPARAMS_TAG in known:
        return {}
    from google.protobuf.json_format import MessageToDict

    from tanalyze.readers.tensorboard._proto import HParamsPluginData

    try:
        data = HParamsPluginData.FromString(meta[2])
    except DecodeError:
        slow.problems.append((meta[0], "hparams session_start_info could not be decoded"))
        return {}
    hparams = data.session_start_info.hparams
    return {key: MessageToDict(hparams[key]) for key in sorted(hparams)}


def _resolve_tensors(slow: _Slow, plugins: dict[str, str], text: dict[str, str]) -> list[tuple]:
    """Sort the protobuf path's tensors into scalars, histograms, text and counted skips."""
    rows = []
    for item in slow.tensors:
        plugin = plugins.get(item.tag, "")
        if plugin == "hparams":  # its data is in the metadata, read by _hparams
            continue
        if plugin not in ("", "scalars", "histograms", "text"):
            slow.skipped[plugin] += 1
            continue
        array = tensor_array(item.tensor)
        if array is None:
            slow.problems.append((item.record, f"tensor of tag {item.tag!r} has an unreadable dtype or size"))
            continue
        numeric = array.dtype.kind in "fiub"
        if plugin == "text":
            text[item.tag.removesuffix(_TEXT_SUFFIX)] = "\n".join(str(v) for v in array.ravel())
        elif plugin == "histograms" and numeric and array.ndim == 2 and array.shape[1] == 3:
            slow.histograms.append(_tensor_histogram(item, array))
        elif plugin == "scalars" and numeric and array.size == 1:
            rows.append((item.record, item.sub, item.tag, item.step, item.wall_time, float(array.ravel()[0])))
        elif plugin == "" and numeric and array.ndim == 0:
            rows.append((item.record, item.sub, item.tag, item.step, item.wall_time, float(array)))
        elif plugin == "":
            slow.skipped["tensor"] += 1
        else:
            slow.problems.append((item.record, f"{plugin} tensor of tag {item.tag!r} has shape {list(array.shape)}"))
    return rows


def decode_events(
    buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, known_plugins: Mapping[str, str] | None = None
) -> FileEvents:
    """Decode the records of one file (data offsets ``starts``, ``lengths`` into ``buf``).

    ``known_plugins``: when these records continue a file read before, the plugins its earlier records
    named (a tag's metadata is written with its first value only). Record indices count from 0 here.
    """
    known = known_plugins or {}
    fast = decode_fast(buf, starts, lengths)
    rest = fast.rest
    slow = _decode_slow(memoryview(buf), starts[rest].tolist(), lengths[rest].tolist(), rest.tolist()) \
        if len(rest) else _Slow()
    plugins = _plugin_names(fast, slow, known)
    text: dict[str, str] = {}
    slow_rows = slow.rows + _resolve_tensors(slow, plugins, text)

    tag_index: dict[str, int] = {}
    remap = np.array([tag_index.setdefault(tag, len(tag_index)) for tag in fast.tags], dtype=np.int32)
    columns = [fast.records, remap[fast.tag_codes], fast.steps, fast.wall_times, fast.values]
    if fast.is_tensor.any():
        scalar_tag = np.array([plugins.get(tag, "") in ("", "scalars") for tag in fast.tags], dtype=bool)
        keep = ~fast.is_tensor | scalar_tag[fast.tag_codes]
        for code in np.unique(fast.tag_codes[~keep]).tolist():
            slow.skipped[plugins.get(fast.tags[code], "")] += int((fast.tag_codes[~keep] == code).sum())
        if not keep.all():
            columns = [column[keep] for column in columns]
    if slow_rows:
        # In write order: by record, then by position in the event; then slotted in among the fast rows.
        record, _sub, tag, step, wall, value = zip(*sorted(slow_rows, key=lambda row: row[:2]), strict=True)
        extra = [np.array(record, np.int64), np.array([tag_index.setdefault(t, len(tag_index)) for t in tag], np.int32),
                 np.array(step, np.int64), np.array(wall, np.float64), np.array(value, np.float64)]
        at = np.searchsorted(columns[0], extra[0])
        columns = [np.insert(column, at, values) for column, values in zip(columns, extra, strict=True)]
    records, codes, steps, walls, values = columns
    histograms = sorted(slow.histograms, key=lambda row: row["record"])
    return FileEvents(
        tags=list(tag_index), tag_codes=codes, records=records, steps=steps, wall_times=walls, values=values,
        histograms=histograms, hparams=_hparams(slow, known), text=text, skipped=slow.skipped,
        session_starts=slow.session_starts, problems=sorted(slow.problems), plugins=plugins,
    )


def canonical_tags(codes: np.ndarray, tags: list[str]) -> tuple[np.ndarray, list[str]]:
    """Tags numbered by first appearance in the rows, unused ones dropped: the same numbering
    whether a file is read at once or in parts."""
    if not len(codes):
        return codes.astype(np.int32, copy=False), []
    if len(codes) <= 256:  # a tail of a few records: in Python, without numpy's fixed costs
        order = np.array(list(dict.fromkeys(codes.tolist())), np.int64)
    else:
        used, first = np.unique(codes, return_index=True)
        order = used[np.argsort(first, kind="stable")]
    remap = np.full(len(tags), -1, np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return remap[codes], [tags[i] for i in order.tolist()]
