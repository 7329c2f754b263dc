"""A console log whose lines carry a launcher's rank prefix, read as one file per rank (see :mod:`._prefix`).

The file is read once, chunk by chunk, as :func:`._parts.read_part` does; each chunk's lines are
split by rank, the prefix stripped, and each rank's lines go to a parser of its own (a *lane*;
rank -1 holds the launcher's unprefixed lines), so ranks that interleave do not break each
other's step anchors and any console format reads each rank. The part of such a file packs one
ordinary part per lane: columns named ``<rank>/<column>``, ``meta["lanes"]`` and
``state["lanes"]`` by rank, and ``tail["lanes"]`` for the lanes with something after the last
line break. :func:`join` and :func:`lane_parts` unpack it; a grown log is read on per lane.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tanalyze.readers.base import FilePart
from tanalyze.readers.text import _parts, _prefix
from tanalyze.readers.text._lines import CHUNK_CHARS, SNIFF_BYTES, Chunk, TextStats, iter_chunks, sniff_window
from tanalyze.readers.text._parser import TextParser

__all__ = ["prefix_of", "console_window", "is_ranked", "read_part", "join", "lane_parts"]

#: TextStats fields that count repairs of the whole file (kept by the launcher's lane, rank -1)
_REPAIRS = ("replaced_chars", "nul_bytes", "carriage_returns", "ansi_sequences", "long_lines")
_LAUNCHER = -1


@lru_cache(maxsize=16)
def _window_prefix(path: str, size: int, mtime_ns: int) -> str | None:
    return _prefix.detect(sniff_window(Path(path), SNIFF_BYTES))


def prefix_of(path: Path) -> str | None:
    """The rank prefix the first lines of ``path`` carry (see :func:`._prefix.detect`), or None."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _window_prefix(str(path), info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=4)
def _stripped_window(path: str, size: int, mtime_ns: int, name: str) -> str:
    return _prefix.strip_window(sniff_window(Path(path)), name)


def console_window(path: Path) -> str:
    """The first lines of ``path`` as formats sniff them: a launcher's rank prefix removed."""
    name = prefix_of(path)
    if not name:
        return sniff_window(path)
    try:
        info = os.stat(path)
    except OSError:
        return ""
    return _stripped_window(str(path), info.st_size, info.st_mtime_ns, name)


def is_ranked(part: FilePart) -> bool:
    """Whether ``part`` is a prefixed file's part (one lane per rank)."""
    return "lanes" in part.state


@dataclass
class _Lane:
    rank: int
    parser: TextParser
    stats: TextStats = field(default_factory=TextStats)
    tracebacks: _parts._Tracebacks = field(default_factory=_parts._Tracebacks)
    line: int = 1
    mark: _parts._Mark | None = None
    counted: dict[str, Any] = field(default_factory=dict)
    settled: bool = True


def _lane_counts(lane: _Lane, shared: TextStats) -> dict[str, Any]:
    """A lane's cleaning counts: its own lines; the launcher's lane also the file's repairs."""
    counts = _parts._counts(lane.stats)
    if lane.rank == _LAUNCHER:
        for name in _REPAIRS:
            counts[name] = getattr(shared, name)
        counts["encoding"] = shared.encoding
    return counts


def _lane_stats(lane: _Lane, shared: TextStats) -> TextStats:
    return TextStats(**_lane_counts(lane, shared))


def read_part(path: Path, name: str, make_parser: Callable[[Path], TextParser], start: int = 0,
              state: Mapping[str, Any] | None = None, chunk_chars: int | None = None) -> FilePart:
    """Read ``path`` (lines prefixed as ``name``) from ``start`` with ``state`` (of an earlier ranked part)."""
    whole = False
    if state is not None and state.get("reread"):
        start, state, whole = 0, None, start > 0
    shared = TextStats()
    lanes: dict[int, _Lane] = {}

    def lane_of(rank: int) -> _Lane:
        lane = lanes.get(rank)
        if lane is None:
            lane = lanes[rank] = _Lane(rank, make_parser(path))
            lane.counted = _lane_counts(lane, shared)
        return lane

    if start and state is not None:
        for key, saved in state["lanes"].items():
            lane = lane_of(int(key))
            lane.line = saved["line"]
            lane.stats = TextStats(**saved["stats"])
            lane.tracebacks = _parts._Tracebacks(*saved["tracebacks"])
            lane.parser.restore(saved["parser"])
            lane.parser.rows.base = lane.parser.rows.frozen = saved["rows"]
            lane.settled = not lane.parser.finish_changes_rows()
            if lane.rank == _LAUNCHER:  # the file's repairs so far go on counting from there
                for count in _REPAIRS:
                    setattr(shared, count, saved["stats"][count])
                lane.stats = TextStats(lines=saved["stats"]["lines"])
            lane.counted = _lane_counts(lane, shared)
    lane_of(_LAUNCHER)
    offset = start
    for chunk in iter_chunks(path, shared, chunk_chars or CHUNK_CHARS, start=start):
        for rank, lines in _prefix.split(chunk.text, name).items():
            lane = lane_of(rank)
            text = "\n".join(lines) + "\n"
            sub = Chunk(text, lane.line, incomplete=chunk.incomplete)
            if chunk.stop is None and lane.mark is None and shared.encoding == "utf-8":
                lane.mark = _parts._mark(lane.parser, offset, lane.line, lane.counted, lane.tracebacks)
            lane.parser.feed(sub)
            lane.parser.end_chunk(sub)
            lane.tracebacks.scan(sub)
            if chunk.incomplete:
                lane.stats.incomplete_last_line = lines[-1]
                lane.stats.incomplete_last_line_no = lane.line + len(lines) - 1
            lane.stats.lines += len(lines)
            lane.line += len(lines)
        if chunk.stop is not None:
            offset = chunk.stop
            for lane in lanes.values():
                lane.counted = _lane_counts(lane, shared)
                if lane.mark is not None:  # a long line ended after all
                    lane.parser.rows.patches = {**lane.mark.patches, **lane.parser.rows.patches}
                    lane.mark = None
    size = max(shared.bytes_read, offset)
    reread = shared.encoding != "utf-8"
    if reread:
        offset = size
    columns: dict[str, Any] = {}
    meta: dict[str, Any] = {"prefix": name, "lanes": {}}
    states: dict[str, Any] = {}
    tails: dict[str, Any] = {}
    for rank in sorted(lanes):
        lane = lanes[rank]
        # (a lane with no line after the last line break may still count that line's repairs: the file's, on the
        # launcher's lane; its mark keeps the counts at the line break, its tail those after)
        clean = lane.mark is None and lane.counted == _lane_counts(lane, shared)
        mark = lane.mark if lane.mark is not None else _parts._mark(
            lane.parser, offset, lane.line, lane.counted, lane.tracebacks)
        sub = _parts._main_part(lane.parser, mark)
        sub.meta["settled"] = lane.settled
        key = str(rank)
        columns.update((f"{key}/{column}", array) for column, array in sub.columns.items())
        meta["lanes"][key] = sub.meta
        states[key] = sub.state
        if not clean:
            tails[key] = _parts._tail(lane.parser, mark, _lane_stats(lane, shared), lane.tracebacks)
    meta["settled"] = all(lane.settled for lane in lanes.values())
    if whole:
        meta["whole"] = True
    part_state: dict[str, Any] = {"prefix": name, "lanes": states}
    if reread:
        part_state["reread"] = True
    tail: dict[str, Any] = {"size": size}
    if tails:
        tail["lanes"] = tails
    return FilePart(end=offset, columns=columns, meta=meta, state=part_state, tail=tail)


def _lane(part: FilePart, key: str) -> FilePart:
    """One lane of a ranked part as an ordinary part (its tail included)."""
    head = key + "/"
    columns = {name[len(head):]: array for name, array in part.columns.items() if name.startswith(head)}
    lane_tail = part.tail.get("lanes", {}).get(key)
    tail = {"size": part.tail.get("size", part.end), **(lane_tail or {})}
    return FilePart(end=part.end, columns=columns, meta=part.meta["lanes"][key], state=part.state["lanes"][key],
                    tail=tail)


def lane_parts(part: FilePart) -> dict[int, FilePart]:
    """The lanes of a ranked part by rank (-1: the launcher's unprefixed lines)."""
    return {int(key): _lane(part, key) for key in part.meta["lanes"]}


def join(head: FilePart, tail: FilePart) -> FilePart:
    """``head`` followed by ``tail`` (read on from ``head.end`` with ``head.state``), lane by lane."""
    if tail.meta.get("whole"):
        meta = {key: value for key, value in tail.meta.items() if key != "whole"}
        return FilePart(end=tail.end, columns=tail.columns, meta=meta, state=tail.state, tail=tail.tail)
    columns: dict[str, Any] = {}
    lanes: dict[str, Any] = {}
    for key in tail.meta["lanes"]:
        later = _lane(tail, key)
        later.tail = {}
        joined = _parts.join(_lane(head, key), later) if key in head.meta["lanes"] else later
        columns.update((f"{key}/{column}", array) for column, array in joined.columns.items())
        lanes[key] = joined.meta
    meta = {"prefix": tail.meta["prefix"], "lanes": lanes, "settled": head.meta["settled"]}
    return FilePart(end=tail.end, columns=columns, meta=meta, state=tail.state, tail=tail.tail)
