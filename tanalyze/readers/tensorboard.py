"""TensorBoard event files (PyTorch, tensorboardX, TF2/Keras, HF Trainer, Lightning …).

Reads scalars (``simple_value`` and 0-d tensors of any numeric dtype),
histograms (``HistogramProto`` and TF2 ``[k, 3]`` tensors), hparams (the
hparams plugin's session start info, and Lightning's ``hparams.yaml`` beside the
events) and text summaries. Images, audio, graphs, PR curves and other plugins
are counted in a note. Damaged files are read as far as they are intact (see
:mod:`._tfrecord`); several files of one folder are merged as TensorBoard does
(see :mod:`._tbsessions`).

``wall_time`` is NaN for an event without one: protobuf cannot tell an absent
time from 0.0, and no writer logs at the epoch (tbparse shows 0.0).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.readers._tbevents import SKIPPED_LABELS, FileEvents, decode_events
from tanalyze.readers._tbsessions import Session, merge_sessions
from tanalyze.readers._tbwindows import join_events, scan_file
from tanalyze.readers._tfrecord import Damage, masked_crc
from tanalyze.readers.base import Reader, ReadWarning, Restart, RunData
from tanalyze.schema import empty_histograms

__all__ = ["TensorBoardReader"]

_LFS = b"version https://git-lfs"
_CANONICAL = "events.out.tfevents."
_STAMP = re.compile(r"tfevents\.(\d+)")
_HPARAMS_YAML = "hparams.yaml"
_EXAMPLES = 3  # byte offsets listed per warning


def _first_record_valid(head: bytes) -> bool:
    return len(head) >= 12 and masked_crc(head[:8]) == int.from_bytes(head[8:12], "little")


def _writer(name: str) -> str:
    """The process that wrote an event file: ``host.pid`` from TensorBoard's naming
    ``events.out.tfevents.<time>.<host>.<pid>.<n>[.v2]``; the name itself when it has none."""
    if not name.startswith(_CANONICAL):
        return name
    fields = name[len(_CANONICAL):].removesuffix(".v2").split(".")
    if len(fields) >= 4 and fields[-1].isdigit() and fields[-2].isdigit():
        return ".".join(fields[1:-1])
    return name


def _file_order(path: Path) -> tuple[int, str]:
    """TensorBoard's order: by the creation timestamp in the name, then by name."""
    match = _STAMP.search(path.name)
    return (int(match.group(1)) if match else 0, path.name)


def _lfs_size(head: bytes) -> str:
    match = re.search(rb"^size (\d+)", head, re.MULTILINE)
    return f" (the real file has {int(match.group(1)):,} bytes)" if match else ""


def _offsets(values: list[int]) -> str:
    shown = ", ".join(f"byte {v:,}" for v in values[:_EXAMPLES])
    return shown + (f" and {len(values) - _EXAMPLES:,} more" if len(values) > _EXAMPLES else "")


class TensorBoardReader(Reader):
    name = "tensorboard"
    description = "TensorBoard event files (PyTorch, tensorboardX, TF2/Keras, HF Trainer, Lightning)"

    def sniff(self, path: Path, head: bytes) -> bool:
        """Files named like event files whose first record verifies; TensorBoard's own
        ``events.out.tfevents.*`` names are claimed whatever they hold, so that an empty,
        damaged or Git-LFS placeholder file gets a warning instead of being ignored."""
        name = path.name
        if "tfevents" not in name:
            return False
        if name.startswith(_CANONICAL):
            return True
        return head.startswith(_LFS) or _first_record_valid(head)

    def read(self, files: list[Path]) -> list[RunData]:
        warnings: list[ReadWarning] = []
        tags: dict[str, int] = {}
        hist_tags: dict[str, int] = {}
        sessions: list[Session] = []
        skipped: Counter[str] = Counter()
        hparams: dict[str, Any] = {}
        text: dict[str, str] = {}
        for path in sorted((Path(f) for f in files), key=_file_order):
            try:
                events = self._read_file(path, warnings)
            except OSError as exc:
                warnings.append(ReadWarning(str(path), f"could not read: {exc.strerror or exc}"))
                continue
            if events is None:
                continue
            skipped.update(events.skipped)
            hparams.update(events.hparams)
            text.update(events.text)
            sessions.extend(_sessions(path.name, events, tags, hist_tags))
        merged = merge_sessions(sessions, len(tags), len(hist_tags))
        tag_names = list(tags)
        for file in merged.overlapping:
            warnings.append(ReadWarning(file, "written while an earlier file of this run was still being "
                                        "written; its steps replaced the earlier file's (two writers in one folder?)"))
        # Built in one go: RunData's defaults would construct empty tables (slow in pandas) only to be replaced.
        data = RunData(
            scalars=_scalar_frame(files, tag_names, merged.codes, merged.steps, merged.values, merged.wall_times),
            histograms=_histogram_frame(files, list(hist_tags), merged.histograms),
            hparams=hparams, warnings=warnings, text=text,
            restarts=[Restart(step, file, detail) for step, file, detail in merged.restarts],
            notes=_notes(skipped, merged.repeated, tag_names),
        )
        self._read_hparams_yaml(files, data)
        if sessions and not (len(data.scalars) or len(data.histograms) or data.hparams or data.text or skipped):
            data.notes.append("no summaries: the event file(s) hold only their header")
        return [data]

    def _read_file(self, path: Path, warnings: list[ReadWarning]) -> FileEvents | None:
        """One file's events, read in windows (see :mod:`._tbwindows`: bounded memory, no SIGBUS if it shrinks)."""
        name = str(path)
        with open(path, "rb") as handle:
            head = handle.read(4096)
        if not head:
            warnings.append(ReadWarning(name, "empty file: no events were written"))
            return None
        if head.startswith(_LFS):
            warnings.append(ReadWarning(name, f"Git LFS pointer, not the event file{_lfs_size(head)}; "
                                        "run `git lfs pull` to fetch it"))
            return None
        parts: list[tuple[int, FileEvents]] = []
        damage: list[Damage] = []
        bad_data_crc: list[int] = []
        problems: list[tuple[int, str]] = []
        plugins: dict[str, str] = {}
        records = size = 0
        for window in scan_file(path):
            size = window.base + len(window.buf)
            damage += window.damage
            bad_data_crc += window.bad_data_crc
            if not len(window.starts):
                continue
            events = decode_events(window.buf, window.starts, window.lengths, plugins)
            plugins = events.plugins
            frame_offsets = (window.base + window.starts - 12).tolist()
            problems += [(frame_offsets[record], message) for record, message in events.problems]
            parts.append((records, events))
            records += len(window.starts)
        if not parts:
            warnings.append(ReadWarning(name, f"not a TensorBoard event file: no intact record in {size:,} bytes",
                                        location="byte 0", count=1))
            return None
        for hole in damage:
            skipped_bytes = hole.end - hole.start
            message = (f"skipped {skipped_bytes:,} byte(s) up to byte {hole.end:,}: {hole.reason}"
                       if skipped_bytes else hole.reason)
            warnings.append(ReadWarning(name, message, location=f"byte {hole.start:,}"))
        if bad_data_crc:
            count = len(bad_data_crc)
            warnings.append(ReadWarning(name, f"{count:,} record(s) whose data CRC does not match skipped",
                                        location=_offsets(bad_data_crc), count=count))
        by_message: dict[str, list[int]] = {}
        for offset, message in problems:
            by_message.setdefault(message, []).append(offset)
        for message, offsets in by_message.items():
            warnings.append(ReadWarning(name, f"{message}; record skipped", location=_offsets(offsets),
                                        count=len(offsets)))
        return join_events(parts)

    def _read_hparams_yaml(self, files: list[Path], data: RunData) -> None:
        """Lightning's ``hparams.yaml``: flattened with ``/`` like Lightning does for the plugin;
        its typed values win over the plugin's (which stores numbers as doubles and lists as text)."""
        import yaml

        for folder in sorted({Path(f).parent for f in files}):
            path = folder / _HPARAMS_YAML
            if not path.is_file():
                continue
            data.extra_files.append(path)
            try:
                loaded = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
            except (yaml.YAMLError, RecursionError) as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f"line {mark.line + 1}" if mark is not None else None
                problem = getattr(exc, "problem", None) or type(exc).__name__
                data.warnings.append(ReadWarning(str(path), f"could not read hparams: {problem}", location=where))
                continue
            if loaded is None:
                continue
            if not isinstance(loaded, dict):
                data.warnings.append(ReadWarning(str(path), f"hparams is a {type(loaded).__name__}, not a mapping"))
                continue
            typed = _flatten(loaded)
            data.hparams = {**typed, **{k: v for k, v in data.hparams.items() if k not in typed}}


def _flatten(mapping: dict[Any, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flatten(value, f"{name}/"))
        else:
            out[name] = value
    return out


def _sessions(file: str, events: FileEvents, tags: dict[str, int], hist_tags: dict[str, int]) -> list[Session]:
    """Split one file's rows at SessionLog.START events; tag codes become run-wide."""
    remap = np.array([tags.setdefault(t, len(tags)) for t in events.tags], dtype=np.int32)
    codes = remap[events.tag_codes] if len(events.tag_codes) else np.empty(0, np.int32)
    histograms = [{**row, "code": hist_tags.setdefault(row["tag"], len(hist_tags))} for row in events.histograms]
    writer = _writer(file)
    bounds = [(0, None)] + [(record, step) for record, step in events.session_starts if record > 0]
    sessions = []
    for index, (first, start_step) in enumerate(bounds):
        last = bounds[index + 1][0] if index + 1 < len(bounds) else np.iinfo(np.int64).max
        lo, hi = np.searchsorted(events.records, [first, last])
        sessions.append(Session(
            file=file, writer=writer, codes=codes[lo:hi], steps=events.steps[lo:hi], wall_times=events.wall_times[lo:hi],
            values=events.values[lo:hi], start_step=start_step,
            histograms=[row for row in histograms if first <= row["record"] < last],
        ))
    return sessions


def _run_label(files: list[Path]) -> str:
    return Path(files[0]).parent.name if files else ""


def _scalar_frame(files, tag_names, codes, steps, values, wall_times) -> pd.DataFrame:
    used = np.flatnonzero(np.bincount(codes, minlength=len(tag_names)))
    compact = np.full(len(tag_names), -1, np.int32)
    compact[used] = np.arange(len(used), dtype=np.int32)
    categories = [tag_names[i] for i in used.tolist()]
    n = len(codes)
    return pd.DataFrame({
        "run": pd.Categorical.from_codes(np.zeros(n, np.int8), categories=[_run_label(files)]),
        "tag": pd.Categorical.from_codes(compact[codes], categories=categories),
        "step": steps.astype(np.int64, copy=False),
        "value": values.astype(np.float64, copy=False),
        "wall_time": wall_times.astype(np.float64, copy=False),
    }, copy=False)


@cache
def _no_histograms() -> pd.DataFrame:
    return empty_histograms()


def _histogram_frame(files, hist_names, rows) -> pd.DataFrame:
    if not rows:
        return _no_histograms().copy()  # a cheap copy-on-write copy of one shared empty table
    frame = pd.DataFrame({
        "run": pd.Categorical([_run_label(files)] * len(rows)),
        "tag": pd.Categorical([row["tag"] for row in rows], categories=sorted({row["tag"] for row in rows})),
        "step": np.array([row["step"] for row in rows], np.int64),
        **{key: np.array([row[key] for row in rows], np.float64)
           for key in ("wall_time", "min", "max", "num", "sum", "sum_squares")},
    })
    frame["bucket_limits"] = pd.Series([row["bucket_limits"] for row in rows], dtype=object)
    frame["bucket_counts"] = pd.Series([row["bucket_counts"] for row in rows], dtype=object)
    return frame


def _notes(skipped: Counter[str], repeated: dict[int, int], tag_names: list[str]) -> list[str]:
    notes = []
    if skipped:
        parts = []
        for kind, count in sorted(skipped.items()):
            singular, plural = SKIPPED_LABELS.get(kind, (f"{kind} summary", f"{kind} summaries"))
            parts.append(f"{count:,} {singular if count == 1 else plural}")
        notes.append(f"skipped {', '.join(parts)} (tanalyze reads scalars, histograms, hparams and text)")
    if repeated:
        total = sum(repeated.values())
        names = sorted(tag_names[code] for code in repeated)
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        notes.append(f"{total:,} point(s) repeat a (tag, step) the same writer had already logged ({shown}); "
                     "all are kept, in write order")
    return notes
