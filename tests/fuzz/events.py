"""Event files built record by record, framed with TensorBoard's own CRC code (independent of ours)."""

from __future__ import annotations

import struct
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboardX.record_writer import masked_crc32c


def frame(data: bytes) -> bytes:
    """One TFRecord frame: length, its CRC, data, its CRC."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


def header_event() -> bytes:
    return event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()


def scalar_event(tag: str, step: int, value: float, wall: float = 1.7e9) -> bytes:
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    return event_pb2.Event(wall_time=wall + step, step=step, summary=summary).SerializeToString()


def image_event(tag: str, step: int, size: int) -> bytes:
    """An image summary of ``size`` bytes of pixels (what a reader counts and skips)."""
    image = summary_pb2.Summary.Image(height=1, width=size, colorspace=1, encoded_image_string=bytes(size))
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=image)])
    return event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary).SerializeToString()


def scalar_events(n: int, tags: tuple[str, ...] = ("loss",)) -> list[bytes]:
    """The file-version header, then ``n`` scalar events cycling through ``tags``; values exact in float32."""
    return [header_event()] + [scalar_event(tags[i % len(tags)], i, 1.0 + i / 8) for i in range(n)]


def event_file(path: Path, records: list[bytes]) -> Path:
    path.write_bytes(b"".join(frame(r) for r in records))
    return path
