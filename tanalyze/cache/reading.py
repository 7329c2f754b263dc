"""Reading through the cache: serve, resume or re-read each file, and keep the entries current."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from tanalyze.cache import Cache
from tanalyze.cache.codec import Uncacheable, decode_part, decode_runs, encode_part, encode_runs
from tanalyze.readers.base import FilePart, Reader, ResumableReader, RunData

__all__ = ["read_parts", "read_runs", "prefix_hashes", "WINDOW"]

#: Bytes hashed at each end of the part of a file read so far (the whole of it when it is at most twice this).
WINDOW = 4096


def _version() -> str:
    from tanalyze import __version__

    return __version__


def prefix_hashes(path: Path, end: int) -> list[str] | None:
    """Hashes of the first and last ``WINDOW`` bytes before ``end`` (of all of them when few); None if unreadable."""
    spans = [(0, end)] if end <= 2 * WINDOW else [(0, WINDOW), (end - WINDOW, end)]
    out = []
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        for start, stop in spans:
            data = os.pread(handle, stop - start, start)
            if len(data) != stop - start:
                return None
            out.append(hashlib.blake2b(data, digest_size=16).hexdigest())
    except OSError:
        return None
    finally:
        os.close(handle)
    return out


def _file_key(reader: Reader, path: Path) -> dict[str, Any]:
    return {"path": os.path.abspath(path), "reader": reader.name, "reader_version": reader.cache_version,
            "tanalyze": _version()}


def _stamp(stat: os.stat_result) -> dict[str, int]:
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _file_part(reader: ResumableReader, path: Path, cache: Cache) -> FilePart:
    try:
        stat = os.stat(path)  # before reading: a file growing meanwhile is then read on next time
    except OSError as exc:
        return FilePart.unreadable(path, exc)
    key = _file_key(reader, path)
    part = None
    found = cache.load("files", key)
    if found is not None:
        header = found.header
        try:
            cached = decode_part(found.arrays, header["part"])
            old = header["stamp"]
            unchanged_prefix = prefix_hashes(path, cached.end) == header["hashes"]
        except (KeyError, TypeError, ValueError):
            cached, old, unchanged_prefix = None, None, False
        if cached is not None and unchanged_prefix:
            if old == _stamp(stat):
                return cached
            if stat.st_size > old["size"]:  # it grew: read on from where the last read stopped
                try:
                    part = reader.join_parts(cached, reader.read_part(path, cached.end, cached.state))
                except OSError as exc:
                    return FilePart.unreadable(path, exc)
    if part is None:
        try:
            part = reader.read_part(path)
        except OSError as exc:
            return FilePart.unreadable(path, exc)
    if not part.tail.get("unreadable"):
        hashes = prefix_hashes(path, part.end)
        try:
            arrays, body = encode_part(part)
        except Uncacheable:
            return part
        if hashes is not None:
            cache.save("files", key, arrays, {"stamp": _stamp(stat), "hashes": hashes, "part": body}, previous=found)
    return part


def read_parts(reader: ResumableReader, files: list[Path], cache: Cache) -> list[FilePart]:
    """One part per file, each from the cache when it is current, resumed when the file grew."""
    return [_file_part(reader, Path(f), cache) for f in files]


def _run_stamp(files: list[Path], directory: Path) -> dict[str, Any] | None:
    """Size, mtime and end-window hashes of each file, and the folder's mtime (a new side file shows there)."""
    stamps = {}
    try:
        for f in files:
            stat = os.stat(f)
            stamps[str(f)] = {**_stamp(stat), "hashes": prefix_hashes(f, stat.st_size)}
        folder = os.stat(directory).st_mtime_ns
    except OSError:
        return None
    return {"files": stamps, "folder_mtime_ns": folder}


def _resume_points(files: list[Path], parts: list[FilePart], stamp: dict[str, Any]) -> dict[str, Any] | None:
    """Where each file's read ended and the state to go on from, when every part ended cleanly at the file
    size the stamp recorded (so the stamp's hashes cover exactly what was read); else None."""
    ends, states = [], []
    for path, part in zip(files, parts, strict=True):
        if not part.clean_end or part.end != stamp["files"][str(path)]["size"]:
            return None
        ends.append(part.end)
        states.append(part.state)
    return {"ends": ends, "states": states}


def _extended(reader: ResumableReader, files: list[Path], runs: list[RunData], header: dict[str, Any],
              now: dict[str, Any]) -> tuple[list[RunData], dict[str, Any] | None] | None:
    """The cached runs with only what their files gained since, through ``reader.extend``.

    Only when nothing else changed: the same side files and folder, every file
    at least as long as before with the bytes read then unchanged. Returns the
    runs and their new resume points, or None (read the run through its parts).
    """
    resume, then = header.get("resume"), header.get("stamp", {})
    if resume is None or then.get("extra") != now["extra"] or then.get("folder_mtime_ns") != now["folder_mtime_ns"]:
        return None
    tails = []
    for path, end, state in zip(files, resume["ends"], resume["states"], strict=True):
        old, new = then["files"].get(str(path)), now["files"][str(path)]
        if old is None or old["size"] != end or new["size"] < end:
            return None
        if new != old and prefix_hashes(path, end) != old["hashes"]:
            return None
        try:
            tails.append(reader.read_part(path, end, state) if new["size"] > end else FilePart(end=end, state=state))
        except OSError:
            return None
    if not all(tail.clean_end for tail in tails):
        return None
    extended = reader.extend(files, runs, tails)
    if extended is None:
        return None
    ends = [tail.end for tail in tails]
    sizes = [now["files"][str(path)]["size"] for path in files]
    points = {"ends": ends, "states": [tail.state for tail in tails]} if ends == sizes else None
    return extended, points


def read_runs(reader: Reader, files: list[Path], directory: Path, cache: Cache) -> list[RunData]:
    """One run's result from the cache when none of its files changed.

    When its files only grew, a :class:`ResumableReader` may extend the cached
    result with the new records alone. Otherwise a resumable reader reads each
    file through its part entry (resuming files that grew) and combines them;
    any other reader reads the run whole. Either way the run's entry is then
    stored again: as a frame added to it when its arrays only gained rows.
    """
    key = {"files": [os.path.abspath(f) for f in files], "reader": reader.name,
           "reader_version": reader.cache_version, "tanalyze": _version()}
    before = _run_stamp(files, directory)
    found = cache.load("runs", key) if before is not None else None
    runs: list[RunData] | None = None
    resume = None
    if found is not None:
        header = found.header
        now = {**before, "extra": _run_stamp([Path(f) for f in header.get("extra_files", [])], directory)}
        unchanged = header.get("stamp") == now
        if unchanged or isinstance(reader, ResumableReader):
            try:
                cached = decode_runs(found.arrays, header)
            except (KeyError, TypeError, ValueError, IndexError):
                cached = None
            if cached is not None and unchanged:
                return cached
            if cached is not None and isinstance(reader, ResumableReader):
                try:
                    extended = _extended(reader, files, cached, header, now)
                except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                    extended = None  # a damaged or foreign entry: read the run through its parts
                if extended is not None:
                    runs, resume = extended
    if runs is None:
        if isinstance(reader, ResumableReader):
            parts = read_parts(reader, files, cache)
            runs = reader.combine(files, parts)
            resume = _resume_points(files, parts, before) if before is not None else None
        else:
            runs = reader.read(files)
    if before is None:
        return runs
    extra = sorted({str(f) for run in runs for f in run.extra_files})
    try:
        arrays, body = encode_runs(runs)
    except Uncacheable:
        return runs
    if found is not None and extra == found.header.get("extra_files"):
        extra_stamp = now["extra"]  # taken before reading: a side file changed meanwhile shows next time
    else:
        extra_stamp = _run_stamp([Path(f) for f in extra], directory)
    stamp = {**before, "extra": extra_stamp}
    entry = {**body, "stamp": stamp, "extra_files": extra}
    if resume is not None:
        entry["resume"] = resume
    cache.save("runs", key, arrays, entry, previous=found)
    return runs
