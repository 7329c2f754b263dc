"""Console logs read in parts, so that a log that grew is read on from where the last read stopped.

:func:`read_part` feeds one file, from byte ``start`` (0, or where an earlier part
ended) with the state that part left, to a parser, chunk by chunk, and returns a
:class:`~tanalyze.readers.base.FilePart`:

- ``end``: the offset after the file's last line break. What follows it (a line
  still being written, or progress-bar redraws with no line break yet) is read
  too, but provisionally: into ``tail`` (its rows and the state after it), which
  is valid for this file size only and replaced, not joined, when the file is
  read on. A part whose ``tail`` holds only the size ends cleanly.
- ``columns``: the rows (``tag`` codes into ``meta["tags"]``, ``step``, ``value``,
  the optional ``epoch``, ``rank``, ``wall``) and the parser's own per-event
  columns (``x.`` + name, see :meth:`TextParser.aux_columns`);
- ``meta``: tags, restarts and hparams found in the part, ``base`` (the index in
  the file of its first row) and ``patches`` (new values of rows of earlier parts);
- ``state``: the line number, the cleaning counts, tracebacks, the number of rows
  so far and the parser's :meth:`~TextParser.snapshot`, all at ``end``.

:func:`join` appends a later part to an earlier one, and :func:`finish_parts`
turns the parts of one job's files into a :class:`ParsedFile` (``finish`` runs
there, on the whole file). Files that are not UTF-8 (UTF-16 with a byte-order
mark) are read whole every time (``state["reread"]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze._gc import collector_paused
from tanalyze.errors import FormatError
from tanalyze.readers.base import FilePart, ReadWarning, Restart
from tanalyze.readers.text._lines import CHUNK_CHARS, Chunk, TextStats, iter_chunks
from tanalyze.readers.text._parser import ParsedFile, TextParser
from tanalyze.readers.text._rows import Rows
from tanalyze.readers.values import short

__all__ = ["read_part", "join", "finish_parts", "parse_path", "AUX"]

#: Prefix of a parser's own columns in a part (its logging events, throughput lines …).
AUX = "x."
_ROW_COLUMNS = ("tag", "step", "value", "epoch", "rank", "wall")
_DEFAULTS = {"epoch": np.nan, "rank": -1, "wall": np.nan}
_DTYPES = {"tag": np.int32, "step": np.int64, "value": np.float64, "epoch": np.float64, "rank": np.int64,
           "wall": np.float64}

_TRACEBACK_LINE = "Traceback (most recent call last):"
_TRACEBACK = re.compile(re.escape(_TRACEBACK_LINE))
_EXCEPTION = re.compile(
    r"^(?:\[rank\d+\]:\s*)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure))(?::[ \t]*([^\n]*))?$",
    re.M,
)


class _Tracebacks:
    """Counts tracebacks and remembers the last exception line after the first one."""

    def __init__(self, count: int = 0, last: str | None = None) -> None:
        self.count = count
        self.last = last

    def scan(self, chunk: Chunk) -> None:
        if not self.count and not chunk.contains(_TRACEBACK_LINE):  # (a long literal: searched 2-5x quicker)
            return
        text = chunk.text
        start = 0
        if not self.count:
            first = _TRACEBACK.search(text)
            if first is None:
                return
            start = first.end()
        self.count += len(_TRACEBACK.findall(text))
        for m in _EXCEPTION.finditer(text, start):
            self.last = m.group(1) + (f": {m.group(2).strip()}" if m.group(2) else "")

    def note(self) -> str | None:
        if not self.count:
            return None
        tail = f"; last exception: {short(self.last, 200)}" if self.last else ""
        return f"{self.count} Python traceback(s) in the log{tail}"


@dataclass
class _Mark:
    """Where a part ends and what was read up to there (taken before the first chunk after the last line break)."""

    offset: int
    state: dict[str, Any]
    rows: int  # rows held by the parser then
    restarts: int
    hparams: int
    aux: dict[str, int]
    patches: dict[int, float] = field(default_factory=dict)


def _counts(stats: TextStats) -> dict[str, Any]:
    """The cleaning counts of a file so far (not how far reading got: that is the part's business)."""
    counts = asdict(stats)
    del counts["bytes_read"]
    return counts


def _state(parser: TextParser, line: int, stats: dict[str, Any], tracebacks: _Tracebacks) -> dict[str, Any]:
    return {"line": line, "rows": parser.rows.total, "stats": stats, "tracebacks": [tracebacks.count, tracebacks.last],
            "parser": parser.snapshot()}


def _mark(parser: TextParser, offset: int, line: int, stats: dict[str, Any], tracebacks: _Tracebacks) -> _Mark:
    rows = parser.rows
    mark = _Mark(offset, _state(parser, line, stats, tracebacks), len(rows), len(parser.restarts), len(parser.hparams), {k: len(v) for k, v in parser.aux_columns().items()},
                 rows.patches)
    rows.patches = {}
    rows.freeze()  # what is read after the mark may still change these rows: as patches, for the tail
    return mark


def read_part(path: Path, parser: TextParser, start: int = 0, state: Mapping[str, Any] | None = None,
              chunk_chars: int | None = None) -> FilePart:
    """Feed ``path`` from byte ``start`` (0, or the ``end`` of an earlier part, with its ``state``) to ``parser``
    (new, for this file) and return the part read; ``OSError`` when the file cannot be read."""
    whole = False
    if state is not None and state.get("reread"):
        start, state, whole = 0, None, start > 0
    line, stats, tracebacks = 1, TextStats(), _Tracebacks()
    settled = True
    if start and state is not None:
        line = state["line"]
        stats = TextStats(**state["stats"])
        tracebacks = _Tracebacks(*state["tracebacks"])
        parser.restore(state["parser"])
        parser.rows.base = parser.rows.frozen = state["rows"]
        settled = not parser.finish_changes_rows()
    mark: _Mark | None = None
    offset = start
    counted = _counts(stats)  # the counts at the last line end (the next chunk is cleaned before it is seen)
    with collector_paused():
        for chunk in iter_chunks(path, stats, chunk_chars or CHUNK_CHARS, start=start, line=line):
            if chunk.stop is None and mark is None and stats.encoding == "utf-8":
                mark = _mark(parser, offset, line, counted, tracebacks)
            parser.feed(chunk)
            parser.end_chunk(chunk)
            tracebacks.scan(chunk)
            if chunk.stop is not None:
                offset, line = chunk.stop, chunk.first_line + chunk.physical_lines
                counted = _counts(stats)
                if mark is not None:  # a line longer than a chunk ended after all: the last line end so far
                    parser.rows.patches = {**mark.patches, **parser.rows.patches}
                    mark = None
    size = max(stats.bytes_read, offset)
    reread = stats.encoding != "utf-8"
    if reread:
        offset = size
    clean = mark is None
    if clean:
        mark = _mark(parser, offset, line, _counts(stats), tracebacks)
    assert mark is not None
    part = _main_part(parser, mark)
    part.meta["settled"] = settled  # whether finishing the file as it was before would have added no row
    if reread:
        part.state["reread"] = True
    if whole:
        part.meta["whole"] = True
    part.tail = {"size": size} if clean else {"size": size, **_tail(parser, mark, stats, tracebacks)}
    return part


def _first_use(codes: np.ndarray, tags: list[str]) -> tuple[np.ndarray, list[str]]:
    """``codes`` into ``tags`` as codes into the tags they use, in order of first use: one coding for the
    same rows, whatever order a parser met their tags in."""
    if not len(codes):
        return codes, []
    first = np.full(len(tags), len(codes), dtype=np.int64)
    np.minimum.at(first, codes, np.arange(len(codes)))  # each tag's first row, in one pass (no sort)
    used = np.flatnonzero(first < len(codes))
    used = used[np.argsort(first[used])]
    if np.array_equal(used, np.arange(len(tags))):
        return codes, list(tags)
    remap = np.zeros(len(tags), dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    return remap[codes], [tags[code] for code in used.tolist()]


def _main_part(parser: TextParser, mark: _Mark) -> FilePart:
    rows = parser.rows
    columns = {name: column[: mark.rows] for name, column in rows.columns().items()}
    patches = _apply(columns["value"], rows.base, mark.patches)
    columns["tag"], tags = _first_use(columns["tag"], rows.tag_names)
    for name, array in parser.aux_columns().items():
        columns[AUX + name] = np.array(array[: mark.aux[name]])
    meta = {"base": rows.base, "tags": tags,
            "restarts": [r.to_dict() for r in parser.restarts[: mark.restarts]],
            "hparams": dict(list(parser.hparams.items())[: mark.hparams]), "patches": patches}
    return FilePart(end=mark.offset, columns=columns, meta=meta, state=mark.state)


def _apply(values: np.ndarray, base: int, patches: Mapping[int, float]) -> list[list[float]]:
    """Set the patched values of rows held in ``values`` (row ``base`` first); the patches of earlier rows."""
    earlier = []
    for index, value in sorted(patches.items()):
        if index >= base:
            values[index - base] = value
        else:
            earlier.append([index, value])
    return earlier


def _tail(parser: TextParser, mark: _Mark, stats: TextStats, tracebacks: _Tracebacks) -> dict[str, Any]:
    """What was read after the last line break: its rows (JSON lists; ``tag`` codes into the tags these rows
    use, in order of first use) and the state after it."""
    rows = parser.rows
    columns = rows.columns(mark.rows)
    columns["tag"], tags = _first_use(columns["tag"], rows.tag_names)
    return {
        "rows": {name: column.tolist() for name, column in columns.items()},
        "tags": tags,
        "restarts": [r.to_dict() for r in parser.restarts[mark.restarts:]],
        "hparams": dict(list(parser.hparams.items())[mark.hparams:]),
        "patches": [[index, value] for index, value in sorted(rows.patches.items())],
        "aux": {name: list(array[mark.aux[name]:]) for name, array in parser.aux_columns().items()},
        "state": _state(parser, 0, _counts(stats), tracebacks),
    }


def _remap(codes: np.ndarray, tags: list[str], new: list[str]) -> tuple[np.ndarray, list[str]]:
    """``codes`` into ``new`` as codes into ``tags`` extended with the tags it lacks."""
    index = {tag: code for code, tag in enumerate(tags)}
    remap = np.array([index.setdefault(tag, len(index)) for tag in new], dtype=np.int32)
    return (remap[codes] if len(codes) else codes.astype(np.int32)), list(index)


def _row_columns(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: columns[name] for name in _ROW_COLUMNS if name in columns}


def _concat(first: Mapping[str, np.ndarray], second: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Row columns one after the other; an optional column one side lacks is filled with its default."""
    n, m = len(first["step"]), len(second["step"])
    out = {}
    for name in _ROW_COLUMNS:
        if name not in first and name not in second:
            continue
        a = first[name] if name in first else np.full(n, _DEFAULTS[name], _DTYPES[name])
        b = second[name] if name in second else np.full(m, _DEFAULTS[name], _DTYPES[name])
        out[name] = np.concatenate([np.asarray(a, _DTYPES[name]), np.asarray(b, _DTYPES[name])])
    return out


def _merged_hparams(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(first)
    for key, value in second.items():
        out.setdefault(key, value)
    return out


def join(head: FilePart, tail: FilePart) -> FilePart:
    """``head`` followed by ``tail``, the part read on from ``head.end`` with ``head.state``."""
    if tail.meta.get("whole"):  # read again from the start (a file that is not UTF-8)
        meta = {key: value for key, value in tail.meta.items() if key != "whole"}
        return FilePart(end=tail.end, columns=tail.columns, meta=meta, state=tail.state, tail=tail.tail)
    a, b = head.meta, tail.meta
    codes, tags = _remap(tail.columns["tag"], a["tags"], b["tags"])
    columns = _concat(_row_columns(head.columns), {**_row_columns(tail.columns), "tag": codes})
    patches = _apply(columns["value"], a["base"], {i: v for i, v in [*a["patches"], *b["patches"]]})
    for name in head.columns:
        if name.startswith(AUX):
            columns[name] = np.concatenate([head.columns[name], tail.columns[name]])
    meta = {"base": a["base"], "tags": tags, "restarts": [*a["restarts"], *b["restarts"]],
            "hparams": _merged_hparams(a["hparams"], b["hparams"]), "patches": patches, "settled": a["settled"]}
    return FilePart(end=tail.end, columns=columns, meta=meta, state=tail.state, tail=tail.tail)


# -- a whole file from its part -------------------------------------------------------------------------------


def _load(parser: TextParser, part: FilePart) -> tuple[TextStats, _Tracebacks]:
    """Give ``parser`` (new) what ``part`` (read from byte 0) holds, its tail included: rows, events,
    restarts, hparams and the state at the end of the file."""
    meta, tail = part.meta, part.tail
    columns = _row_columns(part.columns)
    tags = list(meta["tags"])
    restarts = list(meta["restarts"])
    hparams = dict(meta["hparams"])
    aux = {name[len(AUX):]: column for name, column in part.columns.items() if name.startswith(AUX)}
    state = part.state
    patches = dict(meta["patches"]) if meta["patches"] else {}
    if "state" in tail:
        more = {name: np.asarray(values, _DTYPES[name]) for name, values in tail["rows"].items()}
        more["tag"], tags = _remap(more["tag"], tags, tail["tags"])
        columns = _concat(columns, more)
        restarts += tail["restarts"]
        hparams = _merged_hparams(hparams, tail["hparams"])
        aux = {name: np.concatenate([column, np.asarray(tail["aux"][name], column.dtype)])
               for name, column in aux.items()}
        patches.update((index, value) for index, value in tail["patches"])
        state = tail["state"]
    if patches:
        columns["value"] = columns["value"].copy()
        _apply(columns["value"], 0, patches)
    parser.rows = Rows.from_columns(tags, columns)
    parser.restore(state["parser"])
    parser.load_aux(aux)
    parser.restarts = [Restart(**r) for r in restarts]
    parser.hparams = hparams
    return TextStats(**state["stats"]), _Tracebacks(*state["tracebacks"])


def _file_notes(parser: TextParser, stats: TextStats, tracebacks: _Tracebacks) -> list[str]:
    notes = stats.notes()
    traceback_note = tracebacks.note()
    if traceback_note:
        notes.append(traceback_note)
    other = stats.lines - parser.parsed_lines
    if other > 0:
        notes.append(
            f"{other:,} of {stats.lines:,} line(s) carry no metrics (banners, INFO logs, progress bars) and were skipped"
        )
    return notes


def finish_parts(paths: list[Path], parts: list[FilePart], make_parser: Callable[[Path], TextParser],
                 hparams: Mapping[str, Any] | None = None) -> ParsedFile:
    """One job's files (``paths``, in order: stderr before stdout) from their parts, each read from byte 0.

    (Given a part read on from a later point, and the ``hparams`` of the run up to there, it gives what the
    rows of that part add to the run, with the notes and warnings of the whole file: see ``TextReader.extend``.)
    """
    parsers: list[TextParser] = []
    counts: list[tuple[TextStats, _Tracebacks] | None] = []
    for path, part in zip(paths, parts, strict=True):
        parser = make_parser(path)
        parsers.append(parser)
        if part.tail.get("unreadable"):
            parser.warnings.extend(ReadWarning(**w) for w in part.tail.get("warnings", ()))
            counts.append(None)
        else:
            counts.append(_load(parser, part))
    if hparams is not None:
        parsers[0].hparams = _merged_hparams(hparams, parsers[0].hparams)
    return _finish(paths, parsers, counts)


def _finish(paths: list[Path], parsers: list[TextParser], counts: list[tuple[TextStats, _Tracebacks] | None]
            ) -> ParsedFile:
    """Each file's parser closed on its own, then the later ones absorbed by the first, which finishes for all."""
    notes: list[str] = []
    for path, parser, count in zip(paths, parsers, counts, strict=True):
        if count is None:
            continue
        stats, tracebacks = count
        parser.close_file(stats)
        prefix = f"{path.name}: " if len(paths) > 1 else ""
        notes.extend(prefix + note for note in _file_notes(parser, stats, tracebacks))
    main = parsers[0]
    for other in parsers[1:]:
        main.absorb(other)
    main.finish()
    if main.rows.out_of_range:
        count = main.rows.out_of_range
        main.warnings.append(ReadWarning(
            ", ".join(str(p) for p in paths),
            f"{count:,} point(s) skipped: their step or rank does not fit in 64 bits (garbled digits?)", count=count))
    return ParsedFile(path=paths[0], family=main.family, rows=main.rows, notes=main.notes + notes,
                      warnings=main.warnings, restarts=main.restarts, hparams=main.hparams)


def parse_path(path: Path, parser: TextParser) -> ParsedFile:
    """Read one file whole with ``parser`` (new, for it) and finish it. A file that cannot be opened
    raises ``FormatError``."""
    try:
        part = read_part(path, parser)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    rows = parser.rows
    if rows.patches:  # changes the tail made to earlier rows
        _apply(np.frombuffer(rows.values, dtype=np.float64), 0, rows.patches)
        rows.patches = {}
    state = part.tail.get("state", part.state)
    return _finish([path], [parser], [(TextStats(**state["stats"]), _Tracebacks(*state["tracebacks"]))])
