"""The image summaries of a TensorBoard run, for the report: a bounded side channel beside the tidy table.

The event reader counts image summaries and skips them: they never enter the scalar
table or the reader's cache. The report asks for them here, in a second pass over
the run's event files, and only for runs whose reading counted some
(:func:`has_images`). What is kept is bounded:

- per tag, at most :data:`PER_TAG` images at evenly spaced steps, always with the last one;
- per image, at most :data:`MAX_IMAGE_BYTES` bytes and :data:`MAX_PIXELS` pixels;
- per run, at most :data:`MAX_RUN_BYTES` bytes in all (earlier steps go first, the last image per tag last)
  and :data:`MAX_TAGS` tags.

Both kinds of image summary are read: ``Summary.Value.image`` (TF1, PyTorch, tensorboardX) and
TF2 ``tensor`` summaries of the ``images`` plugin (a string tensor: width, height, then the encoded
images; only the first image of a batch is kept). The first pass only notes where each image is;
the chosen ones are then read again by their offsets, so memory holds the kept images, never all.

Every kept image is checked: its bytes must start with the magic number of PNG, JPEG or GIF and
their header must give its size; anything else (a corrupt image, one too large) is left out with
a note naming its tag and step. Nothing here raises on bad data.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tanalyze.readers.tensorboard._events import SKIPPED_LABELS
from tanalyze.readers.tensorboard._fast import decode_fast
from tanalyze.readers.tensorboard._windows import scan_file

__all__ = [
    "Image", "ImageSeries", "RunImages", "read_images", "has_images", "image_kind",
    "PER_TAG", "MAX_IMAGE_BYTES", "MAX_RUN_BYTES", "MAX_PIXELS", "MAX_TAGS",
]

#: Images kept per tag (evenly spaced over its steps, the last always among them).
PER_TAG = 10
#: An image larger than this (encoded bytes) is not embedded.
MAX_IMAGE_BYTES = 512 * 1024
#: An image of more pixels than this is not embedded (a tiny file can declare a huge picture).
MAX_PIXELS = 4096 * 4096
#: Encoded bytes kept per run in all.
MAX_RUN_BYTES = 4 * 1024 * 1024
#: Tags with images kept per run (in order of first appearance).
MAX_TAGS = 24
_MAX_NOTES = 12

_MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif"}
_IMAGE_LABELS = tuple({*SKIPPED_LABELS["image"], *SKIPPED_LABELS["images"]})  # how the event reader counts them


@dataclass(frozen=True, eq=False)
class Image:
    """One image of a tag at one step, its bytes checked to be a PNG, JPEG or GIF of this size."""

    step: int
    wall_time: float
    width: int
    height: int
    kind: str  # "png", "jpeg" or "gif": from the bytes' magic number, never from the log
    data: bytes

    @property
    def mime(self) -> str:
        return _MIME[self.kind]

    def data_uri(self) -> str:
        """The image as a ``data:`` URI (safe in an ``src`` attribute: base64 only)."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def to_dict(self) -> dict[str, Any]:
        """What it is, without its bytes."""
        return {"step": self.step, "width": self.width, "height": self.height, "format": self.kind,
                "bytes": len(self.data)}


@dataclass(frozen=True, eq=False)
class ImageSeries:
    """The images kept of one tag, by step (the last one is the tag's last image)."""

    tag: str
    images: tuple[Image, ...]
    logged: int  # image summaries the tag has in all
    samples: int = 1  # images per summary (a TF2 batch); the first is kept

    def to_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "logged": self.logged, "samples": self.samples,
                "images": [image.to_dict() for image in self.images]}


@dataclass(frozen=True, eq=False)
class RunImages:
    """A run's images as the report shows them, and what was left out (notes)."""

    series: tuple[ImageSeries, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(len(image.data) for s in self.series for image in s.images)

    def to_dict(self) -> dict[str, Any]:
        return {"series": [s.to_dict() for s in self.series], "notes": list(self.notes)}


def has_images(notes: Iterable[str]) -> bool:
    """Whether the event reader's notes of a run count image summaries (then :func:`read_images` has work)."""
    return any(label in note for note in notes for label in _IMAGE_LABELS)


# ---- what the bytes are -------------------------------------------------------------------------

def image_kind(data: bytes) -> tuple[str, int, int] | None:
    """``(kind, width, height)`` of PNG, JPEG or GIF bytes, from their magic number and header; None otherwise."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        if len(data) >= 24 and data[12:16] == b"IHDR":
            width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
            return ("png", width, height) if width and height else None
        return None
    if data.startswith((b"GIF87a", b"GIF89a")):
        if len(data) >= 10:
            width, height = int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
            return ("gif", width, height) if width and height else None
        return None
    if data.startswith(b"\xff\xd8\xff"):
        size = _jpeg_size(data)
        return ("jpeg", *size) if size else None
    return None


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a JPEG's start-of-frame segment (walking the segments, bounded by the data)."""
    at = 2
    n = len(data)
    while at + 4 <= n:
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # no length
            at += 2
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if length < 2:
            return None
        if marker in _SOF:
            if at + 9 > n:
                return None
            height, width = int.from_bytes(data[at + 5 : at + 7], "big"), int.from_bytes(data[at + 7 : at + 9], "big")
            return (width, height) if width and height else None
        if marker == 0xDA:  # start of scan before any frame header
            return None
        at += 2 + length
    return None


# ---- reading --------------------------------------------------------------------------------------

@dataclass
class _Seen:
    """Where one image summary is: read again by offset if it is kept."""

    step: int
    wall_time: float
    path: str
    offset: int  # file offset of the record's data
    length: int
    sub: int  # index of the value in the event's summary


@dataclass
class _Tag:
    seen: list[_Seen] = field(default_factory=list)
    samples: int = 1


def _event_class():
    from tanalyze.readers.tensorboard._proto import Event

    return Event


def _file_order(path: str) -> tuple[int, str]:
    from tanalyze.readers.tensorboard.reader import _file_order as order

    return order(Path(path))


def _scan(path: str, plugins: dict[str, str], tags: dict[str, _Tag]) -> None:
    """Note every image summary of one file (tag, step, where it is); its bytes are not kept."""
    event_cls = _event_class()
    for window in scan_file(path):
        if not len(window.starts):
            continue
        rest = decode_fast(window.buf, window.starts, window.lengths).rest
        view = memoryview(window.buf)
        for record in rest.tolist():
            start, length = int(window.starts[record]), int(window.lengths[record])
            try:
                event = event_cls.FromString(view[start : start + length])
            except (DecodeError, ValueError):
                continue  # the event reader warns about it
            if event.WhichOneof("what") != "summary":
                continue
            for sub, value in enumerate(event.summary.value):
                tag = value.tag or value.node_name
                if value.HasField("metadata") and tag not in plugins:
                    plugins[tag] = value.metadata.plugin_data.plugin_name
                kind = value.WhichOneof("value")
                if kind == "tensor" and plugins.get(tag) == "images":
                    entry = tags.setdefault(tag, _Tag())
                    entry.samples = max(entry.samples, len(value.tensor.string_val) - 2)
                elif kind == "image":
                    entry = tags.setdefault(tag, _Tag())
                else:
                    continue
                wall = event.wall_time if event.wall_time else float("nan")
                entry.seen.append(_Seen(int(event.step), wall, path, window.base + start, length, sub))


def _pick(seen: list[_Seen], count: int) -> list[_Seen]:
    """At most ``count`` of a tag's images at evenly spaced steps, the last one included.
    A step logged twice keeps the image written last (TensorBoard shows the newest)."""
    by_step: dict[int, _Seen] = {}
    for item in seen:
        by_step[item.step] = item
    ordered = [by_step[step] for step in sorted(by_step)]
    if len(ordered) <= count:
        return ordered
    chosen = np.unique(np.linspace(0, len(ordered) - 1, count).round().astype(np.int64))
    return [ordered[i] for i in chosen.tolist()]


def _read_value(handle: Any, item: _Seen) -> Any | None:
    """The summary value of one image summary, read again at its offset (None if it is no longer there)."""
    from tanalyze._fileio import pread_into

    buf = bytearray(item.length)
    got = 0
    view = memoryview(buf)
    while got < item.length:
        n = pread_into(handle.fileno(), view[got:], item.offset + got)
        if n <= 0:
            return None
        got += n
    try:
        event = _event_class().FromString(bytes(buf))
    except (DecodeError, ValueError):
        return None
    values = event.summary.value
    return values[item.sub] if item.sub < len(values) else None


def _encoded(value: Any) -> tuple[bytes, int, int] | str:
    """The encoded bytes of a value with their declared width and height, or why there are none."""
    if value.WhichOneof("value") == "image":
        image = value.image
        return bytes(image.encoded_image_string), int(image.width), int(image.height)
    strings = value.tensor.string_val
    if len(strings) < 3:
        return "an images tensor holds no image"
    try:
        width, height = int(strings[0]), int(strings[1])
    except ValueError:
        width = height = 0
    return bytes(strings[2]), width, height


class _Notes:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.more = 0

    def add(self, text: str) -> None:
        if len(self.items) < _MAX_NOTES:
            self.items.append(text)
        else:
            self.more += 1

    def result(self) -> tuple[str, ...]:
        return (*self.items, *([f"{self.more:,} more image note(s) not shown"] if self.more else []))


def _checked(tag: str, item: _Seen, value: Any, notes: _Notes, max_bytes: int) -> Image | None:
    where = f"image {tag!r} at step {item.step:,}"
    if value is None:
        notes.add(f"{where}: its record could not be read again (the file changed?); not shown")
        return None
    encoded = _encoded(value)
    if isinstance(encoded, str):
        notes.add(f"{where}: {encoded}; not shown")
        return None
    data, _declared_w, _declared_h = encoded
    if len(data) > max_bytes:
        notes.add(f"{where}: {len(data):,} bytes, over the {max_bytes:,}-byte limit per image; not embedded")
        return None
    kind = image_kind(data)
    if kind is None:
        notes.add(f"{where}: not a valid PNG, JPEG or GIF image ({len(data):,} bytes); not shown")
        return None
    name, width, height = kind
    if width * height > MAX_PIXELS:
        notes.add(f"{where}: {width:,}×{height:,} pixels, over the {MAX_PIXELS:,}-pixel limit; not embedded")
        return None
    return Image(step=item.step, wall_time=item.wall_time, width=width, height=height, kind=name, data=data)


def _within_budget(series: list[ImageSeries], budget: int, notes: _Notes) -> list[ImageSeries]:
    """Drop images until the run's bytes fit ``budget``: earlier steps first (of the tag holding most), then
    whole tags from the last."""
    total = sum(len(i.data) for s in series for i in s.images)
    if total <= budget:
        return series
    kept = [list(s.images) for s in series]
    dropped = 0
    while total > budget:
        widest = max(range(len(kept)), key=lambda k: (len(kept[k]), -k))
        if len(kept[widest]) <= 1:
            break
        images = kept[widest]
        drop = len(images) // 2 - 1 if len(images) > 2 else 0  # from the middle-ish: keeps the spread
        total -= len(images[drop].data)
        del images[drop]
        dropped += 1
    while total > budget and any(kept):
        last = max(k for k in range(len(kept)) if kept[k])
        total -= sum(len(i.data) for i in kept[last])
        dropped += len(kept[last])
        kept[last] = []
    if dropped:
        notes.add(f"{dropped:,} image(s) not embedded to keep this run's images under {budget:,} bytes")
    return [ImageSeries(s.tag, tuple(images), s.logged, s.samples)
            for s, images in zip(series, kept, strict=True) if images]


def read_images(files: Sequence[str | os.PathLike[str]], *, per_tag: int = PER_TAG, max_image_bytes: int = MAX_IMAGE_BYTES,
                max_run_bytes: int = MAX_RUN_BYTES, max_tags: int = MAX_TAGS) -> RunImages:
    """The image summaries of one run's event files, bounded as the module says. Files that cannot be read
    are passed over (the event reader has warned about them); other files of the run (``hparams.yaml``) too."""
    paths = [os.fspath(f) for f in files if "tfevents" in os.path.basename(os.fspath(f))]
    plugins: dict[str, str] = {}
    tags: dict[str, _Tag] = {}
    for path in sorted(paths, key=_file_order):
        try:
            _scan(path, plugins, tags)
        except OSError:
            continue
    notes = _Notes()
    if len(tags) > max_tags:
        notes.add(f"{len(tags) - max_tags:,} more tag(s) with images not shown (the first {max_tags} are)")
    series: list[ImageSeries] = []
    handles: dict[str, Any] = {}
    try:
        for tag, entry in list(tags.items())[:max_tags]:
            images = []
            for item in _pick(entry.seen, per_tag):
                handle = handles.get(item.path)
                if handle is None:
                    try:
                        handle = handles[item.path] = open(item.path, "rb")  # noqa: SIM115 (closed below)
                    except OSError:
                        notes.add(f"image {tag!r} at step {item.step:,}: {item.path} could not be opened; not shown")
                        continue
                try:
                    value = _read_value(handle, item)
                except OSError:
                    value = None
                image = _checked(tag, item, value, notes, max_image_bytes)
                if image is not None:
                    images.append(image)
            if images:
                series.append(ImageSeries(tag, tuple(images), logged=len(entry.seen), samples=entry.samples))
    finally:
        for handle in handles.values():
            handle.close()
    series = _within_budget(series, max_run_bytes, notes)
    return RunImages(series=tuple(series), notes=notes.result())
