"""The episode records of an environment ``Monitor`` (Stable-Baselines3, OpenAI Baselines): ``monitor.csv``::

    #{"t_start": 1796616951.7873013, "env_id": "CartPole-v1"}
    r,l,t
    11.0,11,1.238739
    9.0,9,1.241961

A line per finished episode: its return ``r``, its length ``l`` (environment steps) and ``t``, the seconds from
``t_start`` to its end; ``info_keywords`` add columns (``is_success``). Decisions:

* **step = the environment steps of the episodes ended so far** (the running sum of ``l``): the x-axis of
  SB3's ``progress.csv`` and TensorBoard output, so that a folder's monitor and logger runs compare. Tags:
  ``episode/reward``, ``episode/length`` and ``episode/<column>`` for the others; wall time = ``t_start + t``.
* A vectorized environment writes a file per copy (``0.monitor.csv``, ``1.monitor.csv`` …): the files that differ
  only by that number are one run, their episodes merged in the order they ended and counted together. Copies
  run side by side; files of one name that ran one after the other (each begins after the one before ended: seeds
  trained in turn, ``basic_0monitor.csv`` then ``basic_1monitor.csv``) are runs of their own, as are files of other
  names.
* A monitor reopened without ``override_existing`` appends a header again: its episodes go on from the ones
  before (their own ``t_start``). A line that is not one of the header's numbers is skipped and counted.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import read_text
from tanalyze.readers.values import to_float
from tanalyze.schema import scalar_frame

__all__ = ["MonitorReader"]

_NAME = re.compile(r"^(.*?)(\d*)\.?monitor\.csv$", re.IGNORECASE)
_HEADER = re.compile(rb"^#\s*\{[^\n]*\"t_start\"[^\n]*\}\s*\r?\nr,l,t\b")
_TAGS = {"r": "episode/reward", "l": "episode/length"}


def _stem(path: Path) -> str:
    """A monitor file's name without its copy number (``0.monitor.csv`` → ``""``, ``ppo.monitor.csv`` → ``ppo``)."""
    found = _NAME.match(path.name)
    return found.group(1).rstrip("._-") if found else path.name


class MonitorReader(Reader):
    """An environment ``Monitor``'s ``monitor.csv`` files (one run per name, its numbered copies together)."""

    name = "sb3_monitor"
    description = "Stable-Baselines3 / Baselines Monitor episode records (monitor.csv: '#{\"t_start\": …}', 'r,l,t')"
    cache_version = 2  # 2: files of one name that ran one after the other are runs of their own

    def sniff(self, path: Path, head: bytes) -> bool:
        return _NAME.match(path.name) is not None and _HEADER.match(head) is not None

    def group(self, files: list[Path]) -> list[list[Path]]:
        """The copies of one environment (files that differ by their number, run side by side) together."""
        groups: dict[str, list[Path]] = {}
        for path in sorted(files):
            groups.setdefault(_stem(path), []).append(path)
        out = []
        for group in groups.values():
            out.extend([[path] for path in group] if len(group) > 1 and _one_after_another(group) else [group])
        return out

    def read(self, files: list[Path]) -> list[RunData]:
        run = RunData()
        episodes = []
        for path in sorted(files):
            table, header, skipped = _episodes(path)
            if skipped:
                run.warnings.append(ReadWarning(str(path), f"{skipped} line(s) that are not episode records skipped",
                                                count=skipped))
            episodes.append(table)
            for key, value in header.items():
                if key != "t_start" and isinstance(value, (str, int, float, bool)):
                    run.hparams.setdefault(key, value)
        table = pd.concat(episodes, ignore_index=True) if len(episodes) > 1 else episodes[0]
        if not table["end"].is_monotonic_increasing:
            table = table.sort_values("end", kind="stable", ignore_index=True)
        steps = np.cumsum(table["l"].to_numpy(dtype=np.float64)).astype(np.int64)
        columns = [c for c in table.columns if c not in ("end", "t")]
        # an info keyword's column where a section had none is no point (r and l are in every record)
        kept = [table[c].notna().to_numpy() if c not in _TAGS else np.ones(len(table), dtype=bool) for c in columns]
        tags = [_TAGS.get(c, f"episode/{c}") for c in columns]
        ends = table["end"].to_numpy(dtype=np.float64)
        counts = [int(k.sum()) for k in kept]
        codes = np.repeat(np.arange(len(tags), dtype=np.int32), counts)
        names = sorted(set(tags))
        frame = scalar_frame(
            run="", tag=pd.Series(pd.Categorical.from_codes(codes, categories=tags).reorder_categories(names))
            if len(set(tags)) == len(tags) else pd.Series(pd.Categorical(np.repeat(tags, counts), categories=names)),
            step=np.concatenate([steps[k] for k in kept]) if columns else [],
            value=np.concatenate([table[c].to_numpy(dtype=np.float64)[k] for c, k in zip(columns, kept, strict=True)])
            if columns else [],
            wall_time=np.concatenate([ends[k] for k in kept]) if columns else [])
        count = len(table)
        run.scalars = frame
        copies = f" of {len(files)} environment copies, merged in the order they ended," if len(files) > 1 else ""
        run.notes.append(f"{count} episode(s){copies} at step = the environment steps of the episodes ended so far "
                         "(the running sum of their lengths); wall time = t_start + t")
        if not count:
            run.warnings.append(ReadWarning(str(files[0]), "no episode records"))
        return [run]


def _span(path: Path) -> tuple[float, float] | None:
    """When a monitor file's episodes began (its first ``t_start``) and the last of them ended (its last line's
    ``t`` after it), read from its head and tail; None when either cannot be read."""
    try:
        with open(path, "rb") as handle:
            head = handle.readline()
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 4096))
            tail = handle.read().decode("utf-8", errors="replace").strip().splitlines()
        start = json.loads(head.decode("utf-8", errors="replace").lstrip("#")).get("t_start")
        last = to_float(tail[-1].split(",")[2]) if tail and tail[-1].count(",") >= 2 else None
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(start, int | float) or isinstance(start, bool) or last is None:
        return None
    return float(start), float(start) + last


def _one_after_another(files: list[Path]) -> bool:
    """Whether files of one name ran in turn (each began after every one before it had ended), not side by side."""
    spans = [_span(path) for path in files]
    if any(span is None for span in spans):
        return False
    ordered = sorted(spans)  # type: ignore[type-var]
    return all(start >= max(end for _, end in ordered[:i]) for i, (start, _) in enumerate(ordered) if i)


#: the most steps one episode's record is believed to have (more is a damaged line)
_MOST_STEPS = 1e12


def _floats(column: pd.Series) -> pd.Series:
    """A column as float64: numbers as written, anything else NaN (a number too large for a float too)."""
    if pd.api.types.is_float_dtype(column):
        return column
    try:
        return pd.to_numeric(column, errors="coerce").astype(np.float64)
    except (OverflowError, TypeError, ValueError):
        return column.map(lambda cell: np.nan if (value := to_float(str(cell))) is None else value)


def _episodes(path: Path) -> tuple[pd.DataFrame, dict, int]:
    """A monitor file's episodes (its columns, and ``end``: the wall time each ended), its first header, and how
    many lines were skipped."""
    text, _ = read_text(path)
    if "\x00" in text:
        raise FormatError(path, "binary content, not a monitor.csv")
    starts = [0] if text.startswith("#") else []  # (a header again where the monitor was reopened)
    found = text.find("\n#")
    while found >= 0:
        starts.append(found + 1)
        found = text.find("\n#", found + 1)
    parts, skipped, first = [], 0, {}
    for start, stop in zip(starts, [*starts[1:], len(text)][:len(starts)], strict=True):
        line_end = text.find("\n", start, stop)
        line_end = stop if line_end < 0 else line_end
        body = text[line_end + 1:stop]
        try:
            header = json.loads(text[start + 1:line_end])
        except (json.JSONDecodeError, RecursionError):  # (a damaged header: nested past any real one)
            header = {}
        header = header if isinstance(header, dict) else {}
        first = first or header
        start = float(header.get("t_start", np.nan)) if isinstance(header.get("t_start"), (int, float)) else np.nan
        try:
            table = pd.read_csv(io.StringIO(body), on_bad_lines="skip")
        except (pd.errors.ParserError, pd.errors.EmptyDataError):
            continue
        numbers = table.apply(_floats)
        if not {"r", "l", "t"} <= set(numbers.columns):
            skipped += sum(1 for line in body.splitlines() if line.strip())
            continue
        length = numbers["l"]  # (a whole number of steps, not more than a long run makes)
        usable = (numbers[["r", "t"]].notna().all(axis=1) & (length >= 0) & (length <= _MOST_STEPS)
                  & (length == length.round()))
        lines = body.count("\n") + (not body.endswith("\n")) - 1 - body.count("\n\n")  # (records: no blank line)
        skipped += max(0, lines - int(usable.sum()))
        kept = numbers[usable]
        kept = kept.drop(columns=[c for c in kept.columns if c not in ("r", "l", "t") and kept[c].isna().all()])
        kept["end"] = start + kept["t"]
        parts.append(kept)
    if not parts:
        return pd.DataFrame(columns=["r", "l", "t", "end"]), first, skipped
    return pd.concat(parts, ignore_index=True), first, skipped
