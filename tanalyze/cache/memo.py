"""Results made from many runs (a chart of every run's loss, a sweep's importances), kept by a digest of their inputs.

A report of unchanged runs computes its cross-run parts from the same numbers as
the last one; :func:`digest` condenses those numbers (arrays, text, JSON-ready
values) into a key, and an entry under ``DIR/v1/memo/`` holds the JSON value made
from them. A different input is a different digest, so an entry is never stale:
it is only unused (and the cache may be cleared at any time). Values are JSON,
never pickle.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tanalyze.cache import Cache

__all__ = ["Digest", "load_memo", "save_memo", "source_digest", "KIND"]

#: The folder of these entries inside a cache's layout.
KIND = "memo"


class Digest:
    """A running BLAKE2b of inputs: arrays by dtype, shape and bytes; anything else by its JSON text."""

    def __init__(self) -> None:
        self._hash = hashlib.blake2b(digest_size=20)

    def add(self, *values: Any) -> Digest:
        for value in values:
            if isinstance(value, np.ndarray):
                array = np.ascontiguousarray(value)
                self._hash.update(f"a{array.dtype.str}{array.shape}".encode())
                self._hash.update(array.view(np.uint8).data if array.size else b"")
            else:
                text = json.dumps(value, sort_keys=True, default=str, allow_nan=True)
                self._hash.update(f"j{len(text)}:".encode() + text.encode("utf-8"))
        return self

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def _key(what: str, digest: str) -> dict[str, Any]:
    from tanalyze._version import __version__

    return {"what": what, "digest": digest, "tanalyze": __version__}


def load_memo(cache: Cache | None, what: str, digest: str) -> Any | None:
    """The value stored for ``what`` made from inputs of this ``digest``; None when there is none."""
    if cache is None:
        return None
    entry = cache.load(KIND, _key(what, digest))
    return None if entry is None else entry.header.get("value")


def save_memo(cache: Cache | None, what: str, digest: str, value: Any) -> bool:
    """Keep ``value`` (JSON-ready) for ``what`` made from inputs of this ``digest``; False when not stored."""
    if cache is None:
        return False
    return cache.save(KIND, _key(what, digest), {"none": np.zeros(0, dtype=np.int8)}, {"value": value})


@cache
def source_digest(*modules: Any, versions: tuple[str, ...] = ()) -> str:
    """The source of the modules that make a result, and the ``versions`` of the libraries it depends on (a new
    release or a local edit is a new digest)."""
    digest = Digest().add(*versions)
    for module in modules:
        try:
            digest.add(Path(module.__file__).read_text(encoding="utf-8"))
        except (OSError, TypeError):
            digest.add(module.__name__)
    return digest.hexdigest()
