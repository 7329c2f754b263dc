"""Reading through the cache: serve, resume or re-read each file, and keep the entries current."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tanalyze._fileio import open_fd, pread
from tanalyze.cache import Cache
from tanalyze.cache.codec import (
    CODEC_VERSION,
    Uncacheable,
    decode_part,
    decode_runs,
    encode_part,
    encode_runs,
)
from tanalyze.cache.store import Entry
from tanalyze.readers.base import FilePart, Reader, ResumableReader, RunData

__all__ = ["read_parts", "read_runs", "read_many", "prefix_hashes", "WINDOW"]

#: Bytes hashed at each end of the part of a file read so far (the whole of it when it is at most twice this).
WINDOW = 4096


def _version() -> str:
    from tanalyze._version import __version__

    return __version__


def prefix_hashes(path: Path, end: int) -> list[str] | None:
    """Hashes of the first and last ``WINDOW`` bytes before ``end`` (of all of them when few); None if unreadable."""
    spans = [(0, end)] if end <= 2 * WINDOW else [(0, WINDOW), (end - WINDOW, end)]
    out = []
    try:
        handle = open_fd(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        for start, stop in spans:
            data = pread(handle, stop - start, start)
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
            "tanalyze": _version(), "codec": CODEC_VERSION}


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


@dataclass
class _Lookup:
    """One run's cache lookup: served from its entry, to be extended with its files' new bytes, or to be read."""

    files: list[Path]
    directory: Path
    key: dict[str, Any]
    before: dict[str, Any] | None
    found: Entry | None = None
    now: dict[str, Any] | None = None
    served: list[RunData] | None = None  # the entry, current as it is
    cached: list[RunData] | None = None  # the entry's runs, when its files only grew
    tails: list[FilePart | None] = field(default_factory=list)  # per file: None while its new bytes are to be read
    requests: list[tuple[Path, int, Any]] = field(default_factory=list)  # (file, from, state) for read_parts


def _growth(files: list[Path], header: dict[str, Any], now: dict[str, Any]) -> list[FilePart | None] | None:
    """Per file, where its last read ended (an empty part there when it did not grow; None when it grew); None
    unless nothing else changed: the same side files and folder, every file at least as long as before with the
    bytes read then unchanged."""
    resume, then = header.get("resume"), header.get("stamp", {})
    if resume is None or then.get("extra") != now["extra"] or then.get("folder_mtime_ns") != now["folder_mtime_ns"]:
        return None
    tails: list[FilePart | None] = []
    for path, end, state in zip(files, resume["ends"], resume["states"], strict=True):
        old, new = then["files"].get(str(path)), now["files"][str(path)]
        if old is None or old["size"] != end or new["size"] < end:
            return None
        if new != old and prefix_hashes(path, end) != old["hashes"]:
            return None
        tails.append(None if new["size"] > end else FilePart(end=end, state=state))
    return tails


def _extended(reader: ResumableReader, lookup: _Lookup, parts: list[FilePart | OSError]
              ) -> tuple[list[RunData], dict[str, Any] | None] | None:
    """The cached runs with only what their files gained since (``parts``: the new bytes of those that grew),
    through ``reader.extend``, and their new resume points; None when the run must be read through its parts."""
    fresh = iter(parts)
    tails = [tail if tail is not None else next(fresh) for tail in lookup.tails]
    if not all(isinstance(tail, FilePart) and tail.clean_end for tail in tails):
        return None
    extended = reader.extend(lookup.files, lookup.cached, tails)
    if extended is None:
        return None
    ends = [tail.end for tail in tails]
    sizes = [lookup.now["files"][str(path)]["size"] for path in lookup.files]
    points = {"ends": ends, "states": [tail.state for tail in tails]} if ends == sizes else None
    return extended, points


def _look_up(reader: Reader, files: list[Path], directory: Path, cache: Cache) -> _Lookup:
    key = {"files": [os.path.abspath(f) for f in files], "reader": reader.name,
           "reader_version": reader.cache_version, "tanalyze": _version(), "codec": CODEC_VERSION}
    lookup = _Lookup(files, directory, key, _run_stamp(files, directory))
    found = cache.load("runs", key) if lookup.before is not None else None
    if found is None:
        return lookup
    header = found.header
    lookup.found = found
    lookup.now = now = {**lookup.before, "extra": _run_stamp([Path(f) for f in header.get("extra_files", [])],
                                                              directory)}
    unchanged = header.get("stamp") == now
    resumable = isinstance(reader, ResumableReader)
    if not (unchanged or resumable):
        return lookup
    try:
        cached = decode_runs(found.arrays, header)
    except (KeyError, TypeError, ValueError, IndexError):
        return lookup
    if unchanged:
        lookup.served = cached
        return lookup
    try:
        tails = _growth(files, header, now)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        tails = None  # a damaged or foreign entry: read the run through its parts
    if tails is not None:
        lookup.cached, lookup.tails = cached, tails
        ends, states = header["resume"]["ends"], header["resume"]["states"]
        lookup.requests = [(path, ends[i], states[i]) for i, path in enumerate(files) if tails[i] is None]
    return lookup


def _complete(reader: Reader, lookup: _Lookup, parts: list[FilePart | OSError], cache: Cache) -> list[RunData]:
    """The run from its lookup (and the new bytes read for it); its entry stored again."""
    if lookup.served is not None:
        return lookup.served
    runs: list[RunData] | None = None
    resume = None
    found, before, files, directory = lookup.found, lookup.before, lookup.files, lookup.directory
    if lookup.cached is not None:
        try:
            extended = _extended(reader, lookup, parts)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            extended = None  # a damaged or foreign entry: read the run through its parts
        if extended is not None:
            runs, resume = extended
    if runs is None:
        if isinstance(reader, ResumableReader):
            file_parts = read_parts(reader, files, cache)
            runs = reader.combine(files, file_parts)
            resume = _resume_points(files, file_parts, before) if before is not None else None
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
        extra_stamp = lookup.now["extra"]  # taken before reading: a side file changed meanwhile shows next time
    else:
        extra_stamp = _run_stamp([Path(f) for f in extra], directory)
    stamp = {**before, "extra": extra_stamp}
    entry = {**body, "stamp": stamp, "extra_files": extra}
    if resume is not None:
        entry["resume"] = resume
    cache.save("runs", lookup.key, arrays, entry, previous=found)
    return runs


def read_runs(reader: Reader, files: list[Path], directory: Path, cache: Cache) -> list[RunData]:
    """One run's result from the cache when none of its files changed.

    When its files only grew, a :class:`ResumableReader` may extend the cached
    result with the new records alone. Otherwise a resumable reader reads each
    file through its part entry (resuming files that grew) and combines them;
    any other reader reads the run whole. Either way the run's entry is then
    stored again: as a frame added to it when its arrays only gained rows.
    """
    [result] = read_many(reader, [(files, directory)], cache)
    if isinstance(result, Exception):
        raise result
    return result


def read_many(reader: Reader, runs: Sequence[tuple[list[Path], Path]], cache: Cache) -> list[list[RunData] | Exception]:
    """:func:`read_runs` for each ``(files, directory)``, with the new bytes of every run whose files only grew
    read in one call of ``reader.read_parts`` (a sweep's logs that each gained a little are parsed together).
    A run that raises gets its exception in its place; the others are read all the same."""
    lookups: list[_Lookup | Exception] = []
    for files, directory in runs:
        try:
            lookups.append(_look_up(reader, files, directory, cache))
        except Exception as exc:  # noqa: BLE001 - the caller reports it for this run alone
            lookups.append(exc)
    growing = [lookup for lookup in lookups if isinstance(lookup, _Lookup) and lookup.requests]
    parts = reader.read_parts([r for lookup in growing for r in lookup.requests]) if growing else []
    given: dict[int, list[FilePart | OSError]] = {}
    position = 0
    for lookup in growing:
        given[id(lookup)] = parts[position:position + len(lookup.requests)]
        position += len(lookup.requests)
    out: list[list[RunData] | Exception] = []
    for lookup in lookups:
        if isinstance(lookup, Exception):
            out.append(lookup)
            continue
        try:
            out.append(_complete(reader, lookup, given.get(id(lookup), []), cache))
        except Exception as exc:  # noqa: BLE001 - the caller reports it for this run alone
            out.append(exc)
    return out
