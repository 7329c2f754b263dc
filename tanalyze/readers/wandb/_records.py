"""Reading the binary ``run-<id>.wandb`` transaction log of a W&B run, without the wandb package.

The W&B client writes every record of a run (config, history rows, summary,
system stats, console lines, exit) to this file before syncing, and offline
runs keep their history only here. The framing is the LevelDB log format with
W&B's own choices: a 7-byte file header ``":W&B" | uint16 0xBEE1 | uint8 0``,
32 KiB blocks, and per chunk ``uint32 crc | uint16 length | uint8 type``
(1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST), where ``crc`` is the zlib CRC-32 of the
data seeded with the CRC-32 of the type byte (not LevelDB's masked CRC-32C).

Each record is a protobuf ``wandb_internal.Record``. Recent wandb releases no
longer ship a Python reader for this file (syncing moved to a Go binary), so
instead of depending on the large ``wandb`` package we declare the subset of
its message schema we read. Protobuf field numbers are a wire contract W&B
cannot change without breaking ``wandb sync`` of old files; fields we do not
declare are skipped by the protobuf runtime. A test checks this subset against
the installed ``wandb`` package when there is one.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from tanalyze.errors import FormatError

__all__ = ["WandbFile", "read_wandb_file", "iter_chunks", "record_class", "SCHEMA"]

FILE_HEADER = struct.Struct("<4sHB")
FILE_IDENT, FILE_MAGIC, FILE_VERSION = b":W&B", 0xBEE1, 0
BLOCK = 32768
CHUNK_HEADER = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (FULL, FIRST, MIDDLE, LAST)}

# message -> [(number, name, type, label, oneof)]; type is a scalar name or a message of this schema.
SCHEMA: dict[str, list[tuple[int, str, str, str, str | None]]] = {
    "Timestamp": [(1, "seconds", "int64", "", None), (2, "nanos", "int32", "", None)],
    "Empty": [],
    "HistoryItem": [
        (1, "key", "string", "", None),
        (2, "nested_key", "string", "repeated", None),
        (3, "none", "int32", "", "value"),
        (4, "boolean", "bool", "", "value"),
        (5, "integer", "sint64", "", "value"),
        (6, "number", "double", "", "value"),
        (7, "text", "string", "", "value"),
        (8, "json", "string", "", "value"),
        (16, "value_json", "string", "", None),
    ],
    "HistoryStep": [(1, "num", "int64", "", None)],
    "HistoryRecord": [(1, "item", "HistoryItem", "repeated", None), (2, "step", "HistoryStep", "", None)],
    "KeyValue": [
        (1, "key", "string", "", None),
        (2, "nested_key", "string", "repeated", None),
        (16, "value_json", "string", "", None),
    ],
    "UpdateRecord": [(1, "update", "KeyValue", "repeated", None), (2, "remove", "KeyValue", "repeated", None)],
    "StatsRecord": [
        (1, "stats_type", "int32", "", None),
        (2, "timestamp", "Timestamp", "", None),
        (3, "item", "KeyValue", "repeated", None),
    ],
    "OutputRecord": [
        (1, "output_type", "int32", "", None),
        (2, "timestamp", "Timestamp", "", None),
        (3, "line", "string", "", None),
    ],
    "MetricRecord": [
        (1, "name", "string", "", None),
        (2, "glob_name", "string", "", None),
        (4, "step_metric", "string", "", None),
    ],
    "GitRepoRecord": [(1, "remote_url", "string", "", None), (2, "commit", "string", "", None)],
    "RunRecord": [
        (1, "run_id", "string", "", None),
        (2, "entity", "string", "", None),
        (3, "project", "string", "", None),
        (4, "config", "UpdateRecord", "", None),
        (5, "summary", "UpdateRecord", "", None),
        (6, "run_group", "string", "", None),
        (7, "job_type", "string", "", None),
        (8, "display_name", "string", "", None),
        (9, "notes", "string", "", None),
        (10, "tags", "string", "repeated", None),
        (12, "sweep_id", "string", "", None),
        (13, "host", "string", "", None),
        (14, "starting_step", "int64", "", None),
        (17, "start_time", "Timestamp", "", None),
        (18, "resumed", "bool", "", None),
        (20, "runtime", "int32", "", None),
        (21, "git", "GitRepoRecord", "", None),
        (22, "forked", "bool", "", None),
    ],
    "RunExitRecord": [
        (1, "exit_code", "int32", "", None),
        (2, "runtime", "int32", "", None),
        (3, "not_complete", "bool", "", None),
    ],
    "Record": [
        (1, "num", "int64", "", None),
        (2, "history", "HistoryRecord", "", "record_type"),
        (3, "summary", "UpdateRecord", "", "record_type"),
        (4, "output", "OutputRecord", "", "record_type"),
        (5, "config", "UpdateRecord", "", "record_type"),
        (7, "stats", "StatsRecord", "", "record_type"),
        (12, "metric", "MetricRecord", "", "record_type"),
        (13, "output_raw", "OutputRecord", "", "record_type"),
        (17, "run", "RunRecord", "", "record_type"),
        (18, "exit", "RunExitRecord", "", "record_type"),
        (20, "final", "Empty", "", "record_type"),
        (21, "header", "Empty", "", "record_type"),
        (22, "footer", "Empty", "", "record_type"),
        (23, "preempting", "Empty", "", "record_type"),
    ],
}

#: Which wandb_internal message each of ours stands for (for the schema test against the wandb package).
WANDB_NAMES: dict[str, str] = {
    "Timestamp": "google.protobuf.Timestamp",
    "HistoryItem": "wandb_internal.HistoryItem",
    "HistoryStep": "wandb_internal.HistoryStep",
    "HistoryRecord": "wandb_internal.HistoryRecord",
    "KeyValue": "wandb_internal.SummaryItem",
    "UpdateRecord": "wandb_internal.SummaryRecord",
    "StatsRecord": "wandb_internal.StatsRecord",
    "OutputRecord": "wandb_internal.OutputRawRecord",
    "MetricRecord": "wandb_internal.MetricRecord",
    "GitRepoRecord": "wandb_internal.GitRepoRecord",
    "RunRecord": "wandb_internal.RunRecord",
    "RunExitRecord": "wandb_internal.RunExitRecord",
    "Record": "wandb_internal.Record",
}

_SCALARS = {
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "sint64": descriptor_pb2.FieldDescriptorProto.TYPE_SINT64,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
}
_PACKAGE = "tanalyze_wandb"


@cache
def record_class() -> type:
    """The protobuf class of our ``Record`` subset, built once in a private descriptor pool."""
    proto = descriptor_pb2.FileDescriptorProto(name="tanalyze_wandb_records.proto", package=_PACKAGE, syntax="proto3")
    for message_name, fields in SCHEMA.items():
        message = proto.message_type.add(name=message_name)
        oneofs: list[str] = []
        for number, name, type_name, label, oneof in fields:
            fd = message.field.add(name=name, number=number)
            fd.label = (
                descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
                if label == "repeated"
                else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
            )
            if type_name in _SCALARS:
                fd.type = _SCALARS[type_name]
            else:
                fd.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
                fd.type_name = f".{_PACKAGE}.{type_name}"
            if oneof is not None:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                fd.oneof_index = oneofs.index(oneof)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName(f"{_PACKAGE}.Record")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)  # protobuf < 4.22


@dataclass
class Framing:
    """What the chunk reader met besides records: damage it skipped, counted."""

    bad_chunks: int = 0
    bad_chunk_offsets: list[int] = field(default_factory=list)
    orphan_chunks: int = 0
    truncated_at: int | None = None


def iter_chunks(data: bytes | mmap.mmap, path: str, framing: Framing) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, payload)`` of each whole record in a ``.wandb`` file's bytes.

    Raises :class:`FormatError` when the file header is not W&B's. Damaged chunks
    (bad CRC, impossible length) skip the rest of their block, as LevelDB does,
    and are counted in ``framing``; a record cut off at the end of the file is
    noted as ``framing.truncated_at``.
    """
    if len(data) < FILE_HEADER.size:
        raise FormatError(path, f"too short for a W&B transaction log ({len(data)} bytes)")
    ident, magic, version = FILE_HEADER.unpack(data[: FILE_HEADER.size])
    if ident != FILE_IDENT or magic != FILE_MAGIC:
        raise FormatError(path, "not a W&B transaction log (no ':W&B' header)", "byte 0")
    if version != FILE_VERSION:
        raise FormatError(path, f"unsupported W&B transaction log version {version}", "byte 6")
    pos = FILE_HEADER.size
    size = len(data)
    pending: list[bytes] | None = None
    pending_at = 0
    while pos < size:
        block_left = BLOCK - pos % BLOCK
        if block_left < CHUNK_HEADER.size:
            pos += block_left  # trailer padding
            continue
        if pos + CHUNK_HEADER.size > size:
            framing.truncated_at = pos
            break
        header = data[pos : pos + CHUNK_HEADER.size]
        if len(header) < CHUNK_HEADER.size:  # the file shrank while it was read
            framing.truncated_at = pos
            break
        crc, length, kind = CHUNK_HEADER.unpack(header)
        start = pos + CHUNK_HEADER.size
        if kind == 0 and length == 0:  # zeroed (preallocated) space: nothing more in this block
            pos += block_left
            continue
        if start + length > size:
            framing.truncated_at = pos
            break
        if length > block_left - CHUNK_HEADER.size or kind not in _TYPE_CRC:
            _bad(framing, pos)
            pending = None
            pos += block_left
            continue
        payload = data[start : start + length]
        if zlib.crc32(payload, _TYPE_CRC[kind]) != crc:
            _bad(framing, pos)
            pending = None
            pos += block_left
            continue
        pos = start + length
        if kind == FULL:
            if pending is not None:
                framing.orphan_chunks += 1
                pending = None
            yield pos - length - CHUNK_HEADER.size, payload
        elif kind == FIRST:
            if pending is not None:
                framing.orphan_chunks += 1
            pending, pending_at = [payload], pos - length - CHUNK_HEADER.size
        elif pending is None:  # MIDDLE/LAST without its FIRST (after damage)
            framing.orphan_chunks += 1
        elif kind == MIDDLE:
            pending.append(payload)
        else:
            pending.append(payload)
            yield pending_at, b"".join(pending)
            pending = None
    if pending is not None and framing.truncated_at is None:
        framing.truncated_at = pending_at


def _bad(framing: Framing, offset: int) -> None:
    framing.bad_chunks += 1
    if len(framing.bad_chunk_offsets) < 5:
        framing.bad_chunk_offsets.append(offset)


@dataclass
class WandbFile:
    """The content of one ``.wandb`` file that analysis needs, in write order."""

    path: str
    history: list[dict[str, Any]] = field(default_factory=list)
    stats: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    step_metrics: dict[str, str] = field(default_factory=dict)
    exit: dict[str, Any] | None = None
    finished: bool = False
    console_lines: int = 0
    history_rows: int = 0
    records: int = 0
    undecodable: int = 0
    bad_values: int = 0
    framing: Framing = field(default_factory=Framing)


def read_wandb_file(path: Path, on_history: Callable[[dict[str, Any]], None] | None = None) -> WandbFile:
    """Decode the records of one ``run-<id>.wandb`` file.

    History rows go to ``on_history`` one by one when it is given (a long run's
    rows need not all be held as dicts), else into ``WandbFile.history``.
    Raises :class:`FormatError` when the file is not a W&B transaction log;
    damaged or undecodable records are skipped and counted in the result.
    """
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                raise FormatError(path, "empty file, not a W&B transaction log")
            return _decode_all(_Blocks(handle), path, on_history)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc


class _Blocks:
    """A file's bytes read a block at a time, for :func:`iter_chunks` (whose slices never cross a block).

    Plain reads instead of a memory map: memory stays one block whatever the file's size, and a file that
    shrinks while it is read (another process rewrote it) gives short reads instead of a SIGBUS that would
    kill the process.
    """

    def __init__(self, handle) -> None:
        self._handle = handle
        self._size = os.fstat(handle.fileno()).st_size
        self._index = -1
        self._block = b""

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, item: slice) -> bytes:
        start = item.start or 0
        index = start // BLOCK
        if index != self._index:
            self._handle.seek(index * BLOCK)
            self._block, self._index = self._handle.read(BLOCK), index
        base = index * BLOCK
        return self._block[start - base : item.stop - base]


def _decode_all(data: Any, path: Path, on_history: Callable[[dict[str, Any]], None] | None) -> WandbFile:
    out = WandbFile(path=str(path))
    keep = out.history.append if on_history is None else on_history
    record_type = record_class()
    for _, payload in iter_chunks(data, str(path), out.framing):
        try:
            record = record_type.FromString(payload)
        except DecodeError:
            out.undecodable += 1
            continue
        out.records += 1
        kind = record.WhichOneof("record_type")
        if kind == "history":
            out.history_rows += 1
            keep(_history_row(record.history, out))
        elif kind == "stats":
            stamp = record.stats.timestamp
            out.stats.append((stamp.seconds + stamp.nanos / 1e9, _items(record.stats.item, out)))
        elif kind == "config":
            _apply(out.config, record.config, out)
        elif kind == "summary":
            _apply(out.summary, record.summary, out)
        elif kind == "run":
            _run_info(record.run, out)
        elif kind == "metric":
            metric = record.metric
            if metric.step_metric:
                out.step_metrics[metric.name or metric.glob_name] = metric.step_metric
        elif kind in ("output", "output_raw"):
            out.console_lines += 1
        elif kind == "exit":
            out.exit = {"exit_code": record.exit.exit_code, "runtime": record.exit.runtime}
        elif kind in ("final", "footer"):
            out.finished = True
    return out


def _decode(text: str, out: WandbFile) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        out.bad_values += 1
        return None


def _key(item: Any) -> str:
    return item.key if item.key else ".".join(item.nested_key)


def _history_row(history: Any, out: WandbFile) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for item in history.item:
        if item.value_json:
            try:  # numbers are nearly all of a history, and float() reads JSON numbers, NaN and Infinity
                value = float(item.value_json)
            except ValueError:
                value = _decode(item.value_json, out)
        else:
            which = item.WhichOneof("value")
            if which is None or which == "none":
                value = None
            elif which == "json":
                value = _decode(item.json, out)
            else:
                value = getattr(item, which)
        row[_key(item)] = value
    if "_step" not in row and history.HasField("step"):
        row["_step"] = history.step.num
    return row


def _items(items: Any, out: WandbFile) -> dict[str, Any]:
    return {_key(item): _decode(item.value_json, out) for item in items}


def _apply(target: dict[str, Any], update: Any, out: WandbFile) -> None:
    for item in update.update:
        target[_key(item)] = _decode(item.value_json, out)
    for item in update.remove:
        target.pop(_key(item), None)


def _run_info(run: Any, out: WandbFile) -> None:
    info = out.run
    for name in ("run_id", "entity", "project", "display_name", "run_group", "job_type", "notes", "sweep_id", "host"):
        value = getattr(run, name)
        if value:
            info[name] = value
    if run.tags:
        info["tags"] = list(run.tags)
    if run.HasField("start_time"):
        info["start_time"] = run.start_time.seconds + run.start_time.nanos / 1e9
    if run.resumed:
        info["resumed"] = True
    if run.starting_step:
        info["starting_step"] = run.starting_step
    if run.forked:
        info["forked"] = True
    if run.HasField("git") and (run.git.commit or run.git.remote_url):
        info["git"] = {"remote": run.git.remote_url, "commit": run.git.commit}
    _apply(out.config, run.config, out)
    _apply(out.summary, run.summary, out)

