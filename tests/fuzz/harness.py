"""The fuzzing harness shared by the property tests and the coverage-guided fuzzer (``fuzz/``).

One rule is checked for every input: a reader (or ``load``) either returns a
valid tidy table with its warnings, or raises a ``tanalyze`` error that names
the file. Any other exception, a hang past the time limit, or a table that
breaks the schema is a failure, reported with the input that caused it.

Seeds are real runs: the sample runs bundled with the project and, when present,
the real-log corpus. A seed is a run's files (relative path -> bytes), so a
mutated run keeps the names and folder layout its reader expects.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError, InputError, TanalyzeError
from tanalyze.readers import Reader, RunData, get_readers
from tanalyze.readers.base import ReadWarning
from tanalyze.readers.text.pattern import PATTERN_FORMAT, read_with_pattern
from tanalyze.schema import validate_scalars

REPO = Path(__file__).resolve().parents[2]
SAMPLE_RUNS = REPO / "sample_runs"
REAL_LOGS = Path(os.environ.get("TANALYZE_REAL_LOGS", REPO.parent / "shared" / "real_logs"))
FIXTURES = REPO / "tests" / "fixtures"
#: Formats whose seeds are the fixtures their real writer wrote (neither the sample runs nor the corpus has one)
FIXTURE_SEEDS = {name: (name,) for name in (
    "keras_console", "torch_examples", "tqdm_console", "timm_console", "dvclive", "sacred", "ray_tune",
    "history_json", "tidy", "yolo_txt", "fairseq", "nnunet", "darknet", "console_table", "paddle", "opennmt", "espnet",
    "pytorch_lm", "torchtitan", "maxtext", "olmo", "composer", "litgpt", "clu", "ultralytics_console",
    "gan_loss_log", "jsonl", "minimind")} | {
    "sb3_console": ("sb3",), "sb3_monitor": ("sb3",), "csv": ("sb3",)}

#: Seeds larger than this (all files of a run together) are not used: fuzzing speed matters more.
MAX_SEED_BYTES = 420_000
#: How many seeds per reader (the smallest runs of its format).
SEEDS_PER_READER = 3
#: Companion files (configs beside the logs) copied with a seed when at most this big.
MAX_COMPANION_BYTES = 64_000
#: The pattern the harness uses for the user-pattern reader.
FUZZ_PATTERN = r"step[ =:]*(?P<step>\S+)\s+\|?\s*loss[ =:]*(?P<loss>\S+)"

#: Inputs tried per reader in this process (reported at the end of a test session).
TRIED: Counter[str] = Counter()


class Crash(AssertionError):
    """An outcome the rule forbids; the message holds the traceback and how to reproduce it."""


class Hang(BaseException):
    """Raised by the alarm when one read takes longer than its limit (BaseException: readers must not swallow it)."""


@dataclass(frozen=True)
class Seed:
    """One run to mutate: its files and which of them the reader is given."""

    reader: str
    label: str
    files: dict[str, bytes]  # relative path -> content (logs and their companions)
    read: tuple[str, ...]  # the relative paths handed to ``reader.read``

    @property
    def main(self) -> str:
        """The largest of the files read: the one mutations target by default."""
        return max(self.read, key=lambda rel: len(self.files[rel]))


def reader_names() -> list[str]:
    """Every registered reader, plus the user-pattern reader."""
    return [reader.name for reader in get_readers()] + [PATTERN_FORMAT]


def reader_by_name(name: str) -> Reader | None:
    """The registered reader (None for the pattern reader, which needs a pattern)."""
    for reader in get_readers():
        if reader.name == name:
            return reader
    return None


@cache
def _discovered(root: str) -> tuple:
    from tanalyze.discover import discover

    if not Path(root).is_dir():
        return ()
    return discover(root).runs


def _companions(directory: Path, read: list[Path]) -> list[Path]:
    """Small files beside the read files (hparams.yaml, config files) that a reader may open."""
    folders = {p.parent for p in read} | {directory}
    out = []
    for folder in sorted(folders):
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            if entry.is_file() and entry not in read and entry.stat().st_size <= MAX_COMPANION_BYTES:
                out.append(entry)
    return out


@cache
def seeds(reader: str) -> tuple[Seed, ...]:
    """The smallest real runs of the reader's format (sample runs first, then the real-log corpus)."""
    if reader == PATTERN_FORMAT:
        return _pattern_seeds()
    found: list[tuple[int, Seed]] = []
    # a format with no run in either: the bundled fixtures written by its real writer
    roots = (SAMPLE_RUNS, REAL_LOGS, *(FIXTURES / name for name in FIXTURE_SEEDS.get(reader, ())))
    for root in roots:
        for spec in _discovered(str(root)):
            if spec.format != reader:
                continue
            read = [Path(f) for f in spec.files]
            size = sum(p.stat().st_size for p in read)
            if size > MAX_SEED_BYTES:
                continue
            base = Path(spec.directory)
            every = read + _companions(base, read)
            anchor = base if all(p.is_relative_to(base) for p in every) else Path(os.path.commonpath(every))
            files = {p.relative_to(anchor).as_posix(): p.read_bytes() for p in every}
            label = f"{root.name}:{spec.name}"
            found.append((size, Seed(reader, label, files, tuple(p.relative_to(anchor).as_posix() for p in read))))
    if reader == "wandb-history" and REAL_LOGS.is_dir():  # its files sit in W&B run folders the W&B reader claims
        for path in sorted(REAL_LOGS.glob("wandb_local/*/wandb/wandb-history.jsonl")):
            if path.stat().st_size <= MAX_SEED_BYTES:
                found.append((path.stat().st_size, Seed(reader, f"real_logs:{path.parent.relative_to(REAL_LOGS).as_posix()}", {path.name: path.read_bytes()},
                                                        (path.name,))))
    found.sort(key=lambda item: item[0])
    # The smallest, the largest and one between: small seeds fuzz fast, larger ones hold more structure.
    picks = sorted({0, len(found) // 2, len(found) - 1}) if len(found) > SEEDS_PER_READER else range(len(found))
    return tuple(found[i][1] for i in picks)


def _pattern_seeds() -> tuple[Seed, ...]:
    lines = [f"step {i} | loss {2.5 / (i + 1):.4f} | lr 1e-3" for i in range(200)]
    noise = ["warming up", "epoch 1 done", "step=oops loss=?", "\x1b[32mstep 7 loss 0.1\x1b[0m"]
    text = "\n".join(lines[:100] + noise + lines[100:]) + "\n"
    return (Seed(PATTERN_FORMAT, "synthetic:pattern", {"train.log": text.encode()}, ("train.log",)),)


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` when the block runs longer than ``seconds`` (main thread only; else no limit)."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"no result after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def write_run(files: dict[str, bytes], root: Path) -> Path:
    """Write a run's files under a fresh ``root`` and return it."""
    if root.exists():
        shutil.rmtree(root)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def check_run_data(runs: object, where: str) -> list[RunData]:
    """The schema rules every reader result keeps (raises :class:`Crash` naming what broke)."""
    if not isinstance(runs, list) or not all(isinstance(run, RunData) for run in runs):
        raise Crash(f"{where}: read() returned {type(runs).__name__}, not a list of RunData")
    for run in runs:
        frame = run.scalar_table()
        try:
            validate_scalars(frame)
        except Exception as exc:  # noqa: BLE001 - any schema failure is the finding
            raise Crash(f"{where}: invalid scalar table: {exc}") from exc
        if len(frame):
            if frame["step"].dtype != np.int64 or frame["value"].dtype != np.float64:
                raise Crash(f"{where}: step/value dtypes are {frame['step'].dtype}/{frame['value'].dtype}")
            if frame["tag"].isna().any():
                raise Crash(f"{where}: rows without a tag")
        if not isinstance(run.histograms, pd.DataFrame):
            raise Crash(f"{where}: histograms is not a table")
        for warning in run.warnings:
            if not isinstance(warning, ReadWarning) or not isinstance(warning.count, int) or warning.count < 1:
                raise Crash(f"{where}: bad warning {warning!r}")
    return runs


def _format_error_ok(exc: TanalyzeError, paths: list[Path], root: Path) -> bool:
    text = str(exc)
    return any(str(p) in text for p in paths) or str(root) in text


def read_direct(name: str, root: Path, read: tuple[str, ...], *, limit: float = 20.0) -> list[RunData] | TanalyzeError:
    """Read the files ``read`` (relative to ``root``) with the reader ``name``; enforce the rule."""
    paths = [root / rel for rel in read]
    where = f"reader {name} on {', '.join(read)}"
    TRIED[name] += 1
    try:
        with time_limit(limit):
            if name == PATTERN_FORMAT:
                runs = read_with_pattern(paths, FUZZ_PATTERN)
            else:
                reader = reader_by_name(name)
                assert reader is not None, name
                runs = reader.read(paths)
    except (FormatError, InputError) as exc:
        if not _format_error_ok(exc, paths, root):
            raise Crash(f"{where}: {type(exc).__name__} does not name the file: {exc}") from exc
        return exc
    except Hang as exc:
        raise Crash(f"{where}: hang: {exc}\n{traceback.format_exc()}") from None
    except Exception as exc:  # noqa: BLE001 - any other exception is the finding
        raise Crash(f"{where}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}") from exc
    return check_run_data(runs, where)


def read_loaded(root: Path, *, pattern: bool = False, limit: float = 30.0):
    """``tanalyze.load`` over ``root``: Logs, or a NoLogsError; nothing else."""
    from tanalyze import load

    TRIED["load()"] += 1
    try:
        with time_limit(limit):
            # One process and no cache: every input is read, here (a cache entry could outlive a rewrite
            # of the same path within the file system's timestamp granularity).
            logs = load(root, patterns=[FUZZ_PATTERN] if pattern else None, jobs=1, cache=False)
    except InputError as exc:
        if str(root) not in str(exc):
            raise Crash(f"load({root}): {type(exc).__name__} does not name the path: {exc}") from exc
        return exc
    except Hang as exc:
        raise Crash(f"load({root}): hang: {exc}\n{traceback.format_exc()}") from None
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"load({root}): {type(exc).__name__}: {exc}\n{traceback.format_exc()}") from exc
    try:
        validate_scalars(logs.scalars) if len(logs.scalars) else None
        logs.summary()
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"load({root}): result unusable: {type(exc).__name__}: {exc}") from exc
    return logs


def exercise(seed: Seed, mutate: Callable[[bytes], bytes], root: Path, *, target: str | None = None,
             via_load: bool = False) -> list[RunData] | TanalyzeError:
    """Mutate one file of ``seed`` (the main one by default), write the run under ``root``, read it."""
    target = target or seed.main
    files = dict(seed.files)
    files[target] = mutate(files[target])
    write_run(files, root)
    result = read_direct(seed.reader, root, seed.read)
    if via_load:
        read_loaded(root, pattern=seed.reader == PATTERN_FORMAT)
    return result
