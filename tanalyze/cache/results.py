"""The results cache: a run's analysis results (JSON), kept until its files change.

A report of runs that did not change since the last one need not diagnose them
again: each run's results are stored under ``DIR/v1/results/`` keyed by what
they depend on (the run's files and format, the options of the analysis, the
analysis version and the tanalyze version), with the *stamp* of its files when
they were read (size, ``mtime_ns`` and hashes of their first and last bytes,
the folder's mtime, as for parsed files). An entry whose stamp differs from the
files now is not used: that run is analysed again and its entry rewritten, so a
run that grew is re-analysed and the others are served from here.

Entries hold JSON only (no pickle: nothing in a cache folder is ever run as code);
a damaged or foreign entry reads as "not cached".
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.cache import Cache
from tanalyze.cache.reading import prefix_hashes
from tanalyze.checkpoint_files import scanned_folders

__all__ = ["results_key", "files_stamp", "load_results", "save_results", "load_entry", "KIND"]

#: The folder of the results cache inside a cache's layout.
KIND = "results"


def results_key(name: str, fmt: str, files: Sequence[str], directory: str, *, analysis: str,
                options: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's results depend on besides its files' bytes (those are the stamp)."""
    from tanalyze._version import __version__

    return {"run": name, "format": fmt, "files": sorted(os.path.abspath(f) for f in files),
            "directory": os.path.abspath(directory), "analysis": analysis, "tanalyze": __version__,
            "options": dict(options)}


def files_stamp(files: Sequence[str], directory: str) -> dict[str, Any] | None:
    """Size, mtime and end hashes of each file, the folder's mtime and those of the folders where its checkpoints
    are looked for (a checkpoint saved or deleted changes the checkpoint result); None when one cannot be read."""
    stamps: dict[str, Any] = {}
    try:
        for f in files:
            stat = os.stat(f)
            stamps[os.path.abspath(f)] = [stat.st_size, stat.st_mtime_ns, prefix_hashes(Path(f), stat.st_size)]
        folder = os.stat(directory).st_mtime_ns
        saved = {os.path.abspath(d): os.stat(d).st_mtime_ns for d in scanned_folders(directory)}
    except OSError:
        return None
    return {"files": stamps, "folder_mtime_ns": folder, "checkpoint_folders_mtime_ns": saved}


def load_entry(cache: Cache, key: Mapping[str, Any],
               stamp: Mapping[str, Any] | None) -> tuple[dict[str, Any], Mapping[str, np.ndarray]] | None:
    """The header (``results`` and any ``extra``) and arrays stored for ``key`` when the files still have
    ``stamp``; None otherwise."""
    if stamp is None:
        return None
    entry = cache.load(KIND, dict(key))
    if entry is None or entry.header.get("stamp") != stamp or not isinstance(entry.header.get("results"), list):
        return None
    return entry.header, entry.arrays


def load_results(cache: Cache, key: Mapping[str, Any], stamp: Mapping[str, Any] | None) -> list[Any] | None:
    """The results stored for ``key`` when the files still have ``stamp``; None otherwise."""
    found = load_entry(cache, key, stamp)
    return None if found is None else found[0]["results"]


def save_results(cache: Cache, key: Mapping[str, Any], stamp: Mapping[str, Any] | None, results: list[Any],
                 *, extra: Any = None, arrays: Mapping[str, np.ndarray] | None = None) -> bool:
    """Store ``results`` (JSON-ready values) for ``key`` at ``stamp``, with what a presenter keeps beside
    them (``extra``: JSON-ready; ``arrays``: named numeric arrays); False when not stored."""
    if stamp is None:
        return False
    stored = dict(arrays) if arrays else {"none": np.zeros(0, dtype=np.int8)}
    return cache.save(KIND, dict(key), stored, {"stamp": dict(stamp), "results": results, "extra": extra})
