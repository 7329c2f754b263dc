"""Small helpers for the console-log reader tests."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from tanalyze.readers.base import FilePart, RunData


def curve(frame: pd.DataFrame, tag: str) -> dict[int, float]:
    """step -> value of one tag (fails if a step appears twice)."""
    rows = frame[frame["tag"] == tag]
    steps = rows["step"].tolist()
    assert len(steps) == len(set(steps)), f"duplicate steps in {tag}"
    return dict(zip(steps, rows["value"].tolist(), strict=True))


def points(frame: pd.DataFrame, tag: str) -> int:
    return int((frame["tag"] == tag).sum())


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def check(frame: pd.DataFrame, tag: str, expected: dict[int, float], count: int | None = None) -> None:
    """Exact values at known steps (and the number of points) of one tag."""
    got = curve(frame, tag)
    for step, value in expected.items():
        assert step in got, f"{tag}: no point at step {step}; steps {sorted(got)[:5]}…"
        assert close(got[step], value), f"{tag} at step {step}: {got[step]!r} != {value!r}"
    if count is not None:
        assert len(got) == count, f"{tag}: {len(got)} points, expected {count}"


def notes_text(run: RunData) -> str:
    return "\n".join(run.notes)


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8"))
    else:
        path.write_bytes(data)
    return path


def read_both_ways(name: str, parser: type, path: Path, monkeypatch, chunk_chars: tuple[int | None, ...] = (None,)
                   ) -> RunData:
    """``path`` read by reader ``name`` with its at-once paths and with ``parser`` reading every line on its own,
    at each chunk size (None: as it is set): the same rows exactly, notes, warnings, restarts and hparams. The run
    read at once (at the last size)."""
    from tanalyze.readers import get_reader
    from tanalyze.readers.text import _parts

    reader = get_reader(name)
    for size in chunk_chars:
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        (at_once,) = reader.read([path])
        monkeypatch.setattr(parser, "line_by_line", True)  # (set back below: a fixture may live across examples)
        (by_line,) = reader.read([path])
        monkeypatch.setattr(parser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True, obj=str(path))
        assert (at_once.notes, at_once.warnings, at_once.restarts, at_once.hparams) == (
            by_line.notes, by_line.warnings, by_line.restarts, by_line.hparams), path
    return at_once


def read_on(reader, scratch: Path, data: bytes, cuts: list[int]) -> FilePart:
    """``data`` written to ``scratch`` up to each cut in turn, read on each time from where the last read
    stopped, then written whole and read on once more: the part joined from all those reads (a log still being
    written, read as ``tanalyze watch`` and the cache read it)."""
    part = None
    for size in [*cuts, len(data)]:
        scratch.write_bytes(data[:size])
        part = reader.read_part(scratch) if part is None else reader.join_parts(
            part, reader.read_part(scratch, part.end, part.state))
    assert part is not None
    return part
