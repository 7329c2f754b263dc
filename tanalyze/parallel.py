"""Map the per-run pipeline over runs: in this process, in a process pool, or on a Dask cluster.

The per-run pipeline is a pure function of small picklable arguments (a
:class:`~tanalyze.discover.RunSpec` and options), so any executor can run it.
:func:`map_runs` takes a top-level function and the items, and returns one
result per item **in the items' order** (so output does not depend on timing),
while results arrive in completion order and ``progress(done, total, name)`` is
called as each one does.

Failures stay with their run. An exception in the function becomes a
:class:`Failure` naming the run and the error (the other runs go on). A worker
process that dies (a crash, the OOM killer) breaks the pool: the runs in flight
then are tried again one at a time, and a run whose worker dies again is given
up as a :class:`Failure`; the others go on in a new pool.

Process pools fork this process when that is safe (a platform with ``fork``,
no other thread running): workers start at once with everything imported, and
scripts need no ``if __name__ == "__main__":`` guard. Otherwise they use
``forkserver`` (workers fork from a server that imported tanalyze once) or
``spawn``; every task is a module-level function with picklable arguments, so
all three work (the latter two import the main script again: guard it). Runs
are submitted in chunks with a bounded number in flight, and the pool is
replaced after ``MAX_TASKS_PER_POOL`` chunks so that worker memory cannot creep
up over thousands of runs.

A task may come with a ``many`` form that does a chunk of runs at once (reading
on the logs of a sweep that each grew a little parses them together): each chunk,
here or in a worker, then goes to it, and a chunk it fails on as a whole is done
again run by run, so failures still stay with their run.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

__all__ = ["Failure", "map_runs", "default_jobs", "resolve_jobs", "MAX_TASKS_PER_POOL"]

#: Chunks a pool runs before its workers are replaced by fresh ones.
MAX_TASKS_PER_POOL = 256
#: Below this many runs, ``jobs=None`` reads in this process (a pool costs more than it saves).
MIN_RUNS_FOR_POOL = 8
#: Runs per chunk given to a task's ``many`` form in this process (progress is reported chunk by chunk).
SERIAL_CHUNK = 64
_PRELOAD = ("tanalyze.pipeline", "tanalyze.diagnose")

ProgressCallback = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Failure:
    """A run whose pipeline raised or whose worker died: its name and what happened."""

    name: str
    error: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.name}: {self.error}"


def default_jobs() -> int:
    """The CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def resolve_jobs(jobs: int | None, runs: int) -> int:
    """Worker processes for ``runs`` runs: ``jobs`` as given, or (None) the CPUs when there are enough runs."""
    if jobs is None:
        return default_jobs() if runs >= MIN_RUNS_FOR_POOL else 1
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    return jobs


def _failed(exc: BaseException) -> tuple[bool, Any]:
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {os.path.basename(where.filename)}:{where.lineno})" if where else ""
    return False, (f"{type(exc).__name__}: {exc}{at}", "".join(traceback.format_exception(exc, limit=-8)))


def _guarded(func: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    try:
        return True, func(item)
    except Exception as exc:  # noqa: BLE001 - one run's bug must not stop the others
        return _failed(exc)


#: A chunk-at-once form of a task: one result, or the exception the run raised, per item.
Many = Callable[[Sequence[Any]], Sequence[Any]]


def run_chunk(func: Callable[[Any], Any], items: Sequence[Any], many: Many | None = None) -> list[tuple[bool, Any]]:
    """Run ``func`` on each item in a worker (or ``many`` on them all); each outcome is (True, result) or
    (False, (error, detail))."""
    if many is not None and len(items) > 1:
        try:
            results = list(many(items))
        except Exception:  # noqa: BLE001 - a bug in the shared part: each run alone then says whose it is
            results = []
        if len(results) == len(items):
            return [_failed(r) if isinstance(r, Exception) else (True, r) for r in results]
    return [_guarded(func, item) for item in items]


def _context(preload: Sequence[str] = ()) -> multiprocessing.context.BaseContext:
    """Fork when safe; else forkserver (``preload`` imported once in the server; only the first pool of a
    process sets them); else spawn."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        for module in (*_PRELOAD, *preload):  # imported once here rather than in every worker
            importlib.import_module(module)
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(dict.fromkeys((*_PRELOAD, *preload))))
        return context
    return multiprocessing.get_context("spawn")


def _chunks(indices: list[int], workers: int, chunk_size: int | None) -> list[list[int]]:
    size = chunk_size or max(1, min(16, len(indices) // (workers * 8)))
    return [indices[i:i + size] for i in range(0, len(indices), size)]


class _Collector:
    """Results by index, progress as they come."""

    def __init__(self, names: Sequence[str], progress: ProgressCallback | None) -> None:
        self.names = names
        self.results: list[Any] = [None] * len(names)
        self.progress = progress
        self.done = 0

    def put(self, index: int, outcome: tuple[bool, Any]) -> None:
        ok, value = outcome
        self.results[index] = value if ok else Failure(self.names[index], value[0], value[1])
        self.finish(index)

    def fail(self, index: int, error: str) -> None:
        self.results[index] = Failure(self.names[index], error)
        self.finish(index)

    def finish(self, index: int) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, len(self.names), self.names[index])


def map_runs(
    func: Callable[[Any], Any],
    items: Sequence[Any],
    names: Sequence[str],
    *,
    jobs: int | None = None,
    client: Any = None,
    progress: ProgressCallback | None = None,
    chunk_size: int | None = None,
    preload: Sequence[str] = (),
    many: Many | None = None,
) -> list[Any]:
    """``[func(item) for item in items]``, each a result or a :class:`Failure`, computed by ``jobs``
    processes (None: automatic, 1: this process) or on a Dask ``client``. ``func`` must be a
    module-level function and the items picklable. ``preload``: modules worker processes import
    before their first task (heavy imports paid once). ``many``: ``func``'s chunk-at-once form
    (picklable too), returning per item its result or the exception it raised."""
    collector = _Collector(names, progress)
    if client is not None:
        _map_dask(client, func, items, collector, chunk_size, many)
        return collector.results
    workers = min(resolve_jobs(jobs, len(items)), max(1, len(items)))
    if workers <= 1:
        step = SERIAL_CHUNK if many is not None else 1
        for first in range(0, len(items), step):
            outcomes = run_chunk(func, items[first:first + step], many)
            for index, outcome in enumerate(outcomes, start=first):
                collector.put(index, outcome)
        return collector.results
    _map_pool(func, items, collector, workers, chunk_size, _context(preload), many)
    return collector.results


def _map_pool(func, items, collector: _Collector, workers: int, chunk_size: int | None, context, many) -> None:
    pending = _chunks(list(range(len(items))), workers, chunk_size)
    while pending:
        pending, lost = _run_pool(func, items, collector, workers, pending, 2 * workers, context, many)
        # The runs that were in flight when a worker died are suspects: each is tried again alone,
        # so that a second death names the run that causes it and spares the others.
        suspects = [[index] for index in lost]
        while suspects:
            suspects, lost_again = _run_pool(func, items, collector, 1, suspects, 1, context, many)
            for index in lost_again:
                collector.fail(index, "the worker process reading this run died twice (it crashed or was killed, "
                                      "e.g. for lack of memory); the run was given up")


def _run_pool(func, items, collector: _Collector, workers: int, chunks: list[list[int]], limit: int, context,
              many):
    """Run chunks (at most ``limit`` in flight) until done or the pool breaks; return (chunks not
    started, indices lost in the break)."""
    queue = list(reversed(chunks))
    in_flight: dict[Future, list[int]] = {}
    submitted = 0
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        try:
            while (queue and submitted < MAX_TASKS_PER_POOL) or in_flight:
                while queue and len(in_flight) < limit and submitted < MAX_TASKS_PER_POOL:
                    submitted += 1
                    chunk = queue[-1]  # (taken off the queue once submitted: a broken pool refuses it)
                    in_flight[pool.submit(run_chunk, func, [items[i] for i in chunk], many)] = chunk
                    queue.pop()
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcomes = future.result()  # raises BrokenProcessPool when a worker died
                    for index, outcome in zip(in_flight.pop(future), outcomes, strict=True):
                        collector.put(index, outcome)
        except BrokenProcessPool:
            lost = [i for chunk in in_flight.values() for i in chunk]
            return list(reversed(queue)), lost
    return list(reversed(queue)), []  # chunks left when the pool has run its share: a fresh pool goes on


def _map_dask(client, func, items, collector: _Collector, chunk_size: int | None, many) -> None:
    from distributed import as_completed

    workers = max(1, len(client.scheduler_info().get("workers", {})) or 1)
    chunks = _chunks(list(range(len(items))), workers, chunk_size)
    futures = {}
    for chunk in chunks:
        future = client.submit(run_chunk, func, [items[i] for i in chunk], many, pure=False)
        futures[future] = chunk
    for future in as_completed(futures):
        chunk = futures[future]
        try:
            outcomes = future.result()
        except Exception as exc:  # noqa: BLE001 - a lost worker (KilledWorker) or a transfer error
            for index in chunk:
                collector.fail(index, f"the cluster could not run this run: {type(exc).__name__}: {exc}")
            continue
        for index, outcome in zip(chunk, outcomes, strict=True):
            collector.put(index, outcome)
        future.release()
