"""Big allocations without numpy's huge-page hint, on kernels where the hint stalls them.

On Linux numpy marks every array of 4 MB or more ``MADV_HUGEPAGE``. Where the
kernel's ``transparent_hugepage/defrag`` setting is ``madvise``,
``defer+madvise`` or ``always`` (Ubuntu's and Debian's default is ``madvise``),
a page fault in such an array with no free huge page at hand waits for the kernel
to reclaim and compact memory: first writes into a new 80 MB array were measured
at ~185 ms with the hint against ~25 ms without (numpy issue #31590). Joining
thousands of runs writes a few such arrays, so the join turns the hint off while
it allocates them and puts it back after. Elsewhere (other settings, other
systems, a numpy without the switch) nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

__all__ = ["no_stalling_hugepages"]

_DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
_STALLING = {"always", "madvise", "defer+madvise"}  # settings under which a hinted fault compacts synchronously


@cache
def _switch() -> Callable[[bool], bool] | None:
    """numpy's setter of the hint (it returns the previous setting), when the kernel setting makes it stall."""
    try:
        with open(_DEFRAG, encoding="ascii") as handle:
            chosen = handle.read().split("[", 1)[1].split("]", 1)[0]
    except (OSError, IndexError):
        return None
    if chosen not in _STALLING:
        return None
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray
    return getattr(multiarray, "_set_madvise_hugepage", None)


@contextmanager
def no_stalling_hugepages() -> Iterator[None]:
    """Within: numpy does not ask for huge pages where asking would stall (process-wide while it lasts)."""
    switch = _switch()
    if switch is None:
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)
