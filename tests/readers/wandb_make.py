"""Building small W&B files for tests: ``.wandb`` transaction logs and run folders."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tanalyze.readers.wandb._records import (
    BLOCK,
    CHUNK_HEADER,
    FILE_HEADER,
    FIRST,
    FULL,
    LAST,
    MIDDLE,
    record_class,
)


def frame(payloads: Iterable[bytes]) -> bytes:
    """Payloads framed as W&B does: file header, 32 KiB blocks, chunks split across blocks."""
    out = bytearray(FILE_HEADER.pack(b":W&B", 0xBEE1, 0))
    for payload in payloads:
        first = True
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < CHUNK_HEADER.size:
                out += b"\0" * left
                continue
            chunk, payload = payload[: left - CHUNK_HEADER.size], payload[left - CHUNK_HEADER.size :]
            kind = (FULL if not payload else FIRST) if first else (LAST if not payload else MIDDLE)
            out += CHUNK_HEADER.pack(zlib.crc32(chunk, zlib.crc32(bytes([kind]))), len(chunk), kind) + chunk
            first = False
            if not payload:
                break
    return bytes(out)


def history(row: Mapping[str, Any], step: int | None = None) -> bytes:
    record = record_class()()
    for key, value in row.items():
        record.history.item.add(key=key, value_json=json.dumps(value))
    if step is not None:
        record.history.step.num = step
    return record.SerializeToString()


def update(kind: str, values: Mapping[str, Any]) -> bytes:
    record = record_class()()
    target = getattr(record, kind)
    for key, value in values.items():
        target.update.add(key=key, value_json=json.dumps(value))
    return record.SerializeToString()


def stats(timestamp: float, values: Mapping[str, float]) -> bytes:
    record = record_class()()
    record.stats.timestamp.seconds = int(timestamp)
    record.stats.timestamp.nanos = int(round((timestamp - int(timestamp)) * 1e9))
    for key, value in values.items():
        record.stats.item.add(key=key, value_json=json.dumps(value))
    return record.SerializeToString()


def run(run_id: str = "abc123", start: float = 1_700_000_000.0, **fields: Any) -> bytes:
    record = record_class()()
    record.run.run_id = run_id
    record.run.start_time.seconds = int(start)
    for key, value in fields.items():
        setattr(record.run, key, value)
    return record.SerializeToString()


def metric(name: str, step_metric: str, glob: bool = False) -> bytes:
    record = record_class()()
    if glob:
        record.metric.glob_name = name
    else:
        record.metric.name = name
    record.metric.step_metric = step_metric
    return record.SerializeToString()


def exit_record(code: int = 0, runtime: int = 10) -> bytes:
    record = record_class()()
    record.exit.exit_code = code
    record.exit.runtime = runtime
    return record.SerializeToString()


def footer() -> bytes:
    record = record_class()()
    record.footer.SetInParent()
    return record.SerializeToString()


def run_folder(root: Path, payloads: list[bytes] | None, *, run_id: str = "abc123",
               files: Mapping[str, str] | None = None) -> Path:
    """A ``wandb/run-20240101_120000-<id>/`` folder with a ``.wandb`` file and ``files/``."""
    folder = root / "wandb" / f"run-20240101_120000-{run_id}"
    (folder / "files").mkdir(parents=True)
    if payloads is not None:
        (folder / f"run-{run_id}.wandb").write_bytes(frame(payloads))
    for name, text in (files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder
