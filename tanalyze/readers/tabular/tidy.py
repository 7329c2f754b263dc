"""Scalars already in the long shape: one row per point (``run, tag, step, value``), and TensorBoard's downloads.

Three writers leave them:

* ``tanalyze parse -o scalars.csv`` and tbparse (``SummaryReader(...).scalars.to_csv(...)``: ``step, tag, value``
  with ``dir_name``, ``wall_time`` … when asked for, often with pandas' unnamed index first), and
  TensorBoard.dev's ``experiment.get_scalars()`` (``run, tag, step, value``): a **tidy CSV**. Each distinct
  ``run`` (tbparse: ``dir_name``) is a run of its own, named by it (no run column: the file is one run); the
  ``wall_time``, ``epoch`` and ``rank`` columns are kept when present, other columns are named in a note. A
  run named like a Keras split (``fit/train``, ``fit/validation``) is joined into its parent, as below.
* TensorBoard's scalar dashboard, "download CSV" / "download JSON" of one chart: ``Wall time,Step,Value``
  rows (JSON: ``[[wall time, step, value], …]``) in a file the browser names ``run-<run>-tag-<tag>.csv``
  (``/`` in either written ``_``). The files of one TensorBoard run in a folder are one run; the tag comes from
  the name (a renamed file: its stem). A run named like a Keras split (``<run>_train``, ``validation``) joins
  its parent, its tags under the split (``train/epoch_loss``), as the event files themselves are joined.

Values are read as written (``nan`` and ``inf`` kept); a row whose step is not a whole number, or whose value
is not a number, is skipped and counted in a warning that names the file.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import name_list, read_head
from tanalyze.readers.tabular.widecsv import sniff_header
from tanalyze.schema import scalar_frame

__all__ = ["TidyReader", "download_name"]

#: The columns of a TensorBoard chart download, as it writes them.
DOWNLOAD_HEADER = ["Wall time", "Step", "Value"]
#: ``run-<run>-tag-<tag>``: the name TensorBoard's download gives (``/`` written ``_``).
_DOWNLOAD_NAME = re.compile(r"^run-(?P<run>.*?)-tag-(?P<tag>.+)$")
#: A tidy table's run column: tanalyze's and TensorBoard.dev's ``run``, tbparse's ``dir_name``.
_RUN_COLUMNS = ("run", "dir_name")
_KEPT = {"tag", "step", "value", "wall_time", "epoch", "rank"}
#: the run names of a Keras ``TensorBoard`` callback's splits (and other writers' train/evaluation folders)
_SPLITS = frozenset({"train", "training", "validation", "val", "valid", "eval", "evaluation", "test"})


def _tidy_header(header: list[str]) -> bool:
    names = {name.strip().lower() for name in header}
    return {"tag", "step", "value"} <= names


def download_name(path: Path) -> tuple[str, str, str]:
    """(run, split, tag) of a TensorBoard download: from its ``run-<run>-tag-<tag>`` name, the run's Keras split
    (``train`` …) set apart; a renamed file is its folder's run, its stem the tag."""
    m = _DOWNLOAD_NAME.match(path.stem)
    if m is None:
        return "", "", path.stem
    run, tag = m.group("run"), m.group("tag")
    head, _, last = run.rpartition("_")
    if run.lower() in _SPLITS:
        return "", run, tag
    if last.lower() in _SPLITS and head:
        return head, last, tag
    return ("" if run == "." else run), "", tag


def _is_download_json(head: bytes) -> bool:
    return re.match(rb"\s*\[\s*\[\s*-?[\d.]+(?:[eE][-+]?\d+)?\s*,\s*-?\d+\s*,", head) is not None


class TidyReader(Reader):
    """Long-shaped scalars: a tidy CSV (many runs a file) or TensorBoard chart downloads (one tag a file)."""

    name = "tidy"
    description = ("scalars in the long shape: a tidy CSV (run, tag, step, value: tanalyze parse, tbparse, "
                   "TensorBoard.dev), TensorBoard chart downloads (run-<run>-tag-<tag>.csv / .json)")

    def sniff(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix == ".json":
            return _is_download_json(head)
        if suffix != ".csv":
            return False
        header = sniff_header(head)
        return header is not None and (header == DOWNLOAD_HEADER or _tidy_header(header))

    def group(self, files: list[Path]) -> list[list[Path]]:
        """A tidy CSV alone (its runs are in its rows); downloads by their TensorBoard run (its splits joined)."""
        groups: dict[str, list[Path]] = defaultdict(list)
        for path in sorted(files):
            if path.suffix.lower() == ".csv" and not self._is_download(path):
                groups[f"\0{path.name}"].append(path)
            else:
                groups[download_name(path)[0]].append(path)
        return list(groups.values())

    @staticmethod
    def _is_download(path: Path) -> bool:
        return sniff_header(read_head(path)) == DOWNLOAD_HEADER

    def read(self, files: list[Path]) -> list[RunData]:
        if len(files) == 1 and files[0].suffix.lower() == ".csv" and not self._is_download(files[0]):
            return _read_tidy(files[0])
        return [_read_downloads(files)]


def _merged(codes: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes of tags that are one name as text (``1`` and ``"1"`` in a column of mixed cells) made one."""
    index: dict[str, int] = {}
    remap = np.array([index.setdefault(name, len(index)) for name in names], dtype=np.int64)
    if len(index) == len(names):
        return codes, names
    return np.where(codes >= 0, remap[np.maximum(codes, 0)], codes), list(index)


def _read_tidy(path: Path) -> list[RunData]:
    """Each run of a tidy CSV: its rows, in file order."""
    try:
        header = pd.read_csv(path, nrows=0).columns
        columns = {str(name).strip().lower(): name for name in header}
        # (no NA words in the names: a run or tag called "NA" or "null" stays one; run and tag are read as text
        # without a dtype given, which pandas does several times quicker)
        table = pd.read_csv(path, keep_default_na=False,
                            na_values={columns[key]: ["", "nan", "NaN"] for key in ("value", "wall_time", "epoch")
                                       if key in columns})
        for key in ("run", "dir_name", "tag"):  # names that look like numbers ("007") read again as written
            if key in columns and not pd.api.types.is_string_dtype(table[columns[key]]):
                table[columns[key]] = pd.read_csv(path, usecols=[columns[key]], dtype=str,
                                                  keep_default_na=False).iloc[:, 0]
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, ValueError) as error:
        raise FormatError(path, f"not a readable CSV ({str(error).splitlines()[0] if str(error) else error})") from None
    missing = [key for key in ("tag", "step", "value") if key not in columns]
    if missing:
        found = ", ".join(repr(str(name)) for name in header[:8])
        raise FormatError(path, f"not a tidy table: no {' or '.join(repr(k) for k in missing)} column (its columns: "
                                f"{found or 'none'})")
    run_column = next((columns[name] for name in _RUN_COLUMNS if name in columns), None)
    other = [name for key, name in columns.items()
             if key not in _KEPT and name != run_column and not key.startswith("unnamed:") and key]
    step, bad_step = _numbers(table[columns["step"]])
    value, bad_value = _numbers(table[columns["value"]])
    steps = step.to_numpy(dtype=np.float64)
    bad = bad_step | bad_value | ~np.isfinite(steps) | (steps != np.round(steps))
    if run_column is None:
        run_codes, run_names = np.zeros(len(table), dtype=np.int64), [""]
    else:
        run_codes, found = pd.factorize(table[run_column])
        run_names = [str(name) for name in found]
    # a Keras split's rows join its parent run, their tags under the split
    split_of = [_split_of(name) for name in run_names]
    parents = sorted({parent for parent, _ in split_of}, key=[parent for parent, _ in split_of].index)
    parent_codes = np.array([parents.index(parent) for parent, _ in split_of], dtype=np.int64)[run_codes] \
        if len(run_names) else run_codes
    tag_codes, found = pd.factorize(table[columns["tag"]])
    tag_names = [str(tag) for tag in found]
    if any(split for _, split in split_of):  # tags named per (split, tag)
        pairs = run_codes * len(tag_names) + tag_codes
        distinct, tag_codes = np.unique(pairs, return_inverse=True)
        tag_names = [f"{split_of[p // len(tag_names)][1]}/{tag_names[p % len(tag_names)]}"
                     if split_of[p // len(tag_names)][1] else tag_names[p % len(tag_names)]
                     for p in distinct.tolist()]
    optional = {key: pd.to_numeric(table[columns[key]], errors="coerce").to_numpy(dtype=np.float64)
                for key in ("wall_time", "epoch") if key in columns}
    rank = (pd.to_numeric(table[columns["rank"]], errors="coerce").fillna(-1).to_numpy().astype(np.int64)
            if "rank" in columns else None)
    tag_codes, tag_names = _merged(tag_codes, tag_names)
    values = value.to_numpy(dtype=np.float64)
    order = np.argsort(parent_codes, kind="stable")
    bounds = np.searchsorted(parent_codes[order], np.arange(len(parents) + 1))
    out = []
    for index, parent in enumerate(parents):
        rows = order[bounds[index]:bounds[index + 1]]
        keep = rows[~bad[rows]]
        tags = pd.Categorical.from_codes(tag_codes[keep], categories=tag_names).remove_unused_categories()
        frame = scalar_frame(run="", tag=pd.Series(tags, copy=False),
                             step=steps[keep].astype(np.int64), value=values[keep],
                             **{key: column[keep] for key, column in optional.items()})
        if rank is not None:
            frame["rank"] = rank[keep]
        data = RunData(scalars=frame, name=parent or None)
        by = f", its runs by {run_column!r}" if run_column else ""
        data.notes.append(f"a tidy table of scalars (one row per point{by}): tags, steps and values as written")
        if other:
            data.notes.append(f"column(s) not read: {name_list(other)}")
        skipped = len(rows) - len(keep)
        if skipped:
            data.warnings.append(ReadWarning(str(path), f"{skipped} row(s) of run {parent!r} without a whole-number "
                                             "step or a numeric value; skipped", count=skipped))
        out.append(data)
    if not out:
        out.append(RunData(warnings=[ReadWarning(str(path), "no rows")]))
    return out


def _split_of(run: str) -> tuple[str, str]:
    """(parent run, split) of a run named like a Keras split (``fit/train``, ``train``), else (run, "")."""
    parent, _, last = run.rpartition("/")
    return (parent, last) if last.lower() in _SPLITS else (run, "")


def _numbers(column: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """A column's numbers (an empty cell or ``nan``: NaN, a logged value) and which cells are text, no number."""
    if pd.api.types.is_numeric_dtype(column):
        return column.astype(np.float64), np.zeros(len(column), dtype=bool)
    numbers = pd.to_numeric(column, errors="coerce")
    text = column.astype("string").str.strip().str.lower()
    missing = text.isna() | text.isin(["", "nan", "-nan", "+nan"])
    return numbers, (numbers.isna() & ~missing).fillna(False).to_numpy(dtype=bool)


def _read_downloads(files: list[Path]) -> RunData:
    """TensorBoard chart downloads of one run: a tag a file."""
    frames: list[np.ndarray] = []
    warnings: list[ReadWarning] = []
    tags: list[str] = []
    counts: list[int] = []
    run_name = ""
    for path in sorted(files):
        run, split, tag = download_name(path)
        run_name = run_name or run
        tag = f"{split}/{tag}" if split else tag
        try:
            rows = _download_rows(path)
        except FormatError as error:
            warnings.append(ReadWarning(str(path), error.reason))
            continue
        finite_step = np.isfinite(rows[:, 1]) & (rows[:, 1] == np.round(rows[:, 1]))
        if not finite_step.all():
            count = int((~finite_step).sum())
            warnings.append(ReadWarning(str(path), f"{count} row(s) without a whole-number step; skipped", count=count))
            rows = rows[finite_step]
        tags.append(tag)
        counts.append(len(rows))
        frames.append(rows)
    rows = np.concatenate(frames) if frames else np.empty((0, 3))
    data = RunData(scalars=scalar_frame(run="", tag=[tag for tag, n in zip(tags, counts, strict=True) for _ in range(n)],
                                        step=rows[:, 1].astype(np.int64), value=rows[:, 2], wall_time=rows[:, 0]),
                   warnings=warnings, name=run_name or None)
    data.notes.append(f"TensorBoard chart downloads, one tag a file ({name_list(sorted(tags))}): the tag and run from "
                      "each file's name (run-<run>-tag-<tag>), a Keras split's under its split")
    return data


def _download_rows(path: Path) -> np.ndarray:
    """The (wall time, step, value) rows of one download, as floats."""
    try:
        if path.suffix.lower() == ".json":
            rows = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(rows, list) or not all(isinstance(row, list) and len(row) == 3 for row in rows):
                raise FormatError(path, "not a TensorBoard download: rows of [wall time, step, value] expected")
            return np.array(rows, dtype=np.float64).reshape(-1, 3)
        table = pd.read_csv(path)
        return table[DOWNLOAD_HEADER].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    except FormatError:
        raise
    except RecursionError:
        raise FormatError(path, "cannot be read (JSON nested deeper than any download)") from None
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError, pd.errors.ParserError) as error:
        raise FormatError(path, f"cannot be read ({type(error).__name__}: {error})") from None
