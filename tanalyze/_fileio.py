"""Reads at an offset on raw descriptors, alike on every platform.

``os.pread``/``os.preadv`` read at an offset without moving the descriptor's
position; Windows has neither, so there the descriptor (always one opened for
that read alone) seeks and reads. Descriptors are opened in binary mode: on
Windows the C runtime would otherwise translate line ends in what is read and
written.
"""

from __future__ import annotations

import os

__all__ = ["open_fd", "pread", "pread_into"]

_BINARY = getattr(os, "O_BINARY", 0)
_POSITIONAL = hasattr(os, "pread") and hasattr(os, "preadv")


def open_fd(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` in binary mode."""
    return os.open(path, flags | _BINARY)


def pread(fd: int, count: int, offset: int) -> bytes:
    """Up to ``count`` bytes at ``offset`` (fewer at the end of the file)."""
    if _POSITIONAL:
        return os.pread(fd, count, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, count)


def pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Read into ``view`` from ``offset``: how many bytes (0 at the end of the file)."""
    if _POSITIONAL:
        return os.preadv(fd, [view], offset)
    os.lseek(fd, offset, os.SEEK_SET)
    data = os.read(fd, len(view))
    view[:len(data)] = data
    return len(data)
