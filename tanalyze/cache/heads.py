"""The tags of event files' first records, kept between discoveries of a folder while each file keeps its stamp.

Run identity looks at the tags of each file's first records (an ``add_scalars``
sub-writer holds one tag, an hparams sub-run ``_hparams_/…`` records); decoding
them for thousands of files is most of what discovering a large sweep costs. One
entry per discovered folder (``DIR/v1/heads/``) holds, for each file, the reader,
its size and ``mtime_ns`` when its head was read (stat taken before the read),
and the tags found. A file whose stamp differs has its head decoded again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.cache import Cache

__all__ = ["StoredHeadTags", "KIND"]

#: The folder of these entries inside a cache's layout.
KIND = "heads"


class StoredHeadTags:
    """A :class:`tanalyze.discover.HeadTagsMemo` for the folder ``root``, kept in ``cache``; :meth:`save` after
    discovery stores what it saw (only when something changed)."""

    def __init__(self, cache: Cache, root: str | os.PathLike[str]) -> None:
        from tanalyze._version import __version__

        self._cache = cache
        self._key = {"root": os.path.abspath(root), "tanalyze": __version__}
        entry = cache.load(KIND, self._key)
        known = entry.header.get("files") if entry is not None else None
        self._known: dict[str, Any] = known if isinstance(known, dict) else {}
        self._seen: dict[str, list[Any]] = {}

    def stamp(self, path: Path) -> tuple[int, int] | None:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        return stat.st_size, stat.st_mtime_ns

    def tags(self, path: Path, reader: str, stamp: object, compute: Callable[[], tuple[str, ...]]) -> tuple[str, ...]:
        name = str(path)
        size, mtime = stamp  # type: ignore[misc]  # made by stamp() above
        old = self._known.get(name)
        if (isinstance(old, list) and len(old) == 4 and old[:3] == [reader, size, mtime]
                and isinstance(old[3], list) and all(isinstance(t, str) for t in old[3])):
            found = tuple(old[3])
        else:
            found = tuple(compute())
        self._seen[name] = [reader, size, mtime, list(found)]
        return found

    def save(self) -> bool:
        """Store the tags seen by this discovery (files gone are dropped); False when nothing changed or not stored."""
        if self._seen == self._known:
            return False
        return self._cache.save(KIND, self._key, {"none": np.zeros(0, dtype=np.int8)}, {"files": self._seen})
