"""Python's cyclic garbage collector paused while a batch of short-lived objects is made."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector paused (restored on exit; nested uses are free).

    Parsing a log makes millions of short-lived tuples, match objects and small tables and almost no
    reference cycles, so reference counting frees them; left running, the collector walks every live object
    of the process again and again: a tenth to a sixth of the time to read a 50 MB log
    (``bench/bench_text.py``), half the time to read a W&B runs table of 10,000 runs. Cycles made meanwhile
    are collected once it runs again."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
