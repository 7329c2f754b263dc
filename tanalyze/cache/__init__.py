"""The incremental cache: what readers parsed, kept so that logs are not parsed twice.

Layout (``DIR`` is ``--cache-dir``, ``$TANALYZE_CACHE_DIR``, else
``$XDG_CACHE_HOME/tanalyze`` or ``~/.cache/tanalyze``)::

    DIR/v1/CACHEDIR.TAG              marks the folder as a cache for backup tools
    DIR/v1/runs/cd/cdef01….arrays    one run: the reader's whole result for its files
    DIR/v1/files/ab/abcdef….arrays   one file of a resumable reader (TensorBoard …): what was read of it

(see :mod:`.store` for what a file holds). An
entry's name is a hash of its *key*: the absolute path(s), the reader's name and
``cache_version``, and the tanalyze version; the key is stored inside too and
checked. Inside is the *stamp* the data was read at: size and ``mtime_ns`` of
each file with hashes of its bytes (all of them up to 8 KiB, else the first and
last 4 KiB), and for a file part the offset it was read up to.

Using an entry (see :mod:`.reading`): a run whose files, side files and folder
are unchanged is served from its entry. When its files only grew, with the bytes
read before unchanged, a resumable reader reads the new bytes alone and extends
the cached result (or, when they do not simply continue it, reads each file
from where its last read stopped and combines them). Anything else (shorter,
same size but a new mtime, a changed prefix, a corrupt entry, another version)
is read whole and the entry rewritten.

The cache is safe to delete at any time; an entry is replaced atomically or
extended by a verified frame, so it is never read half-written.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from tanalyze.cache.store import SUFFIX, Entry, append_entry, read_entry, write_entry

__all__ = ["Cache", "default_cache_dir", "resolve_cache", "LAYOUT"]

#: Bumped when the layout or the meaning of entries changes (old entries are then ignored).
LAYOUT = "v1"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# A tanalyze cache folder: safe to delete.\n"


def default_cache_dir() -> Path:
    """``$TANALYZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tanalyze``, else ``~/.cache/tanalyze``."""
    configured = os.environ.get("TANALYZE_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "tanalyze"


@dataclass(frozen=True)
class Cache:
    """A cache folder. Small and picklable: sent to worker processes and cluster workers as is."""

    directory: str

    @property
    def root(self) -> Path:
        return Path(self.directory) / LAYOUT

    def entry_path(self, kind: str, key: dict) -> Path:
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()
        return Path(os.path.join(self.directory, LAYOUT, kind, digest[:2], digest + SUFFIX))

    def load(self, kind: str, key: dict) -> Entry | None:
        """The entry for ``key``, or None (missing, unreadable, or another key's)."""
        found = read_entry(self.entry_path(kind, key))
        if found is None or found.header.get("key") != key:
            return None
        return found

    def save(self, kind: str, key: dict, arrays, header: dict, *, previous: Entry | None = None) -> bool:
        """Store an entry; False when it could not be written (the cache is best effort).

        With ``previous`` (the entry as loaded), arrays that only gained rows at
        their end are added to it as a frame rather than rewriting it whole.
        """
        reuse = previous is not None and previous.path is not None and previous.header.get("key") == key
        path = previous.path if reuse else self.entry_path(kind, key)
        header = {**header, "key": key}
        try:
            if previous is not None and append_entry(path, previous, arrays, header):
                return True
            self._tag()
            write_entry(path, arrays, header)
        except Exception:  # noqa: BLE001 - a full disk, a read-only folder: not cached, never an error
            return False
        return True

    def usage(self) -> tuple[int, int]:
        """(entries, bytes) stored under this folder's layout."""
        count = size = 0
        for path in self.root.rglob("*") if self.root.is_dir() else ():
            if path.is_file() and path.name != "CACHEDIR.TAG":
                count += 1
                size += path.stat().st_size
        return count, size

    def clear(self) -> int:
        """Delete this layout's entries (only a folder this cache tagged as its own); return how many."""
        import shutil

        if not (self.root / "CACHEDIR.TAG").is_file():
            return 0
        count, _ = self.usage()
        shutil.rmtree(self.root)
        return count

    def _tag(self) -> None:
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            tag.write_text(_TAG, encoding="utf-8")


def resolve_cache(cache: Cache | str | os.PathLike[str] | bool | None) -> Cache | None:
    """``True``/``None``: the default folder; ``False``: no cache; a path: that folder."""
    if cache is False:
        return None
    if isinstance(cache, Cache):
        return cache
    if cache is None or cache is True:
        return Cache(str(default_cache_dir()))
    return Cache(os.fspath(cache))
