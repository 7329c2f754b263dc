"""TensorBoard event files (PyTorch, tensorboardX, TF2/Keras, HF Trainer, Lightning …).

Reads scalars (``simple_value`` and 0-d tensors of any numeric dtype),
histograms (``HistogramProto`` and TF2 ``[k, 3]`` tensors), hparams (the
hparams plugin's session start info, and Lightning's ``hparams.yaml`` beside the
events) and text summaries. Images, audio, graphs, PR curves and other plugins
are counted in a note. Damaged files are read as far as they are intact (see
:mod:`._tfrecord`); several files of one folder are merged as TensorBoard does
(see :mod:`._sessions`).

``wall_time`` is NaN for an event without one: protobuf cannot tell an absent
time from 0.0, and no writer logs at the epoch (tbparse shows 0.0).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.readers.base import FilePart, ReadWarning, Restart, ResumableReader, RunData
from tanalyze.readers.tensorboard._events import (
    SKIPPED_LABELS,
    FileEvents,
    canonical_tags,
    decode_events,
)
from tanalyze.readers.tensorboard._sessions import Session, merge_sessions
from tanalyze.readers.tensorboard._tails import read_tails
from tanalyze.readers.tensorboard._tfrecord import masked_crc
from tanalyze.readers.tensorboard._windows import join_events, scan_file
from tanalyze.schema import ScalarColumns, empty_histograms

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


def _file_order(path: Path) -> tuple[int, tuple[tuple[str, int], ...]]:
    """The order the files were written in: by the creation timestamp in the name, then by name with its numbers
    compared as numbers (a writer reopened within a second names its files ``….PID.2``, ``….PID.10``: Composer's
    TensorBoard logger at every flush)."""
    match = _STAMP.search(path.name)
    parts = re.split(r"(\d+)", path.name)  # (text, number, text, …, text)
    return (int(match.group(1)) if match else 0,
            tuple((text, int(number)) for text, number in zip(parts[0::2], [*parts[1::2], "-1"], strict=True)))


def _lfs_size(head: bytes) -> str:
    match = re.search(rb"^size (\d+)", head, re.MULTILINE)
    return f" (the real file has {int(match.group(1)):,} bytes)" if match else ""


def _offsets(values: list[int]) -> str:
    shown = ", ".join(f"byte {v:,}" for v in values[:_EXAMPLES])
    return shown + (f" and {len(values) - _EXAMPLES:,} more" if len(values) > _EXAMPLES else "")


class TensorBoardReader(ResumableReader):
    name = "tensorboard"
    description = "TensorBoard event files (PyTorch, tensorboardX, TF2/Keras, HF Trainer, Lightning)"
    cache_version = 3  # 2: sessions that start over are phases; 3: files of one second in their order (.2 before .10)

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

    def head_tags(self, head: bytes) -> tuple[str, ...]:
        return head_tags(head)

    def read_part(self, path: Path, start: int = 0, state: Mapping[str, Any] | None = None) -> FilePart:
        """The records of one event file from byte ``start`` (a record boundary) on.

        The part ends after the last intact record: a record still being written
        (or damage running to the end of the file) is described in ``tail`` and
        read again next time. ``state`` carries the tags' plugins (their metadata is
        written with the first value only).
        """
        plugins = dict((state or {}).get("plugins", {}))
        path = os.fspath(path)
        if start:
            size, head = os.stat(path).st_size, b""
        else:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                head = handle.read(4096)
        if size == 0:
            return FilePart(end=0, tail={"size": 0, "empty": True}, state={"plugins": plugins})
        if head.startswith(_LFS):
            return FilePart(end=0, tail={"size": size, "lfs": _lfs_size(head)}, state={"plugins": plugins})
        # Plain reads a window at a time (see _tbwindows): bounded memory, and a file cut while it is
        # read ends there (with a warning) instead of killing the process as a memory map would.
        parts: list[tuple[int, FileEvents]] = []
        frame_offsets: list[np.ndarray] = []
        damage: list[tuple[int, int, str]] = []
        bad_data_crc: list[int] = []
        count = 0
        end_of_data = start
        for window in scan_file(path, start=start):
            events = decode_events(window.buf, window.starts, window.lengths, plugins)
            plugins = events.plugins
            parts.append((count, events))
            count += len(window.starts)
            frame_offsets.append(window.base + window.starts - 12)
            damage += [(d.start, d.end, d.reason) for d in window.damage]
            bad_data_crc += [int(o) for o in window.bad_data_crc]
            end_of_data = max(end_of_data, window.base + len(window.buf), *(d.end for d in window.damage))
        size = max(start, end_of_data) if parts else size
        trailing = damage.pop() if damage and damage[-1][1] >= size else None
        events = join_events(parts) if parts else decode_events(np.empty(0, np.uint8), np.empty(0, np.int64),
                                                                  np.empty(0, np.int64), plugins)
        offsets = np.concatenate(frame_offsets).tolist() if frame_offsets else []
        codes, tags = canonical_tags(events.tag_codes, events.tags)
        return FilePart(
            end=trailing[0] if trailing is not None else size,
            columns={"records": events.records, "codes": codes, "steps": events.steps,
                     "wall_times": events.wall_times, "values": events.values},
            meta={
                "records": count, "tags": tags, "histograms": events.histograms,
                "hparams": events.hparams, "text": events.text, "skipped": dict(events.skipped),
                "session_starts": [list(pair) for pair in events.session_starts],
                "problems": [[offsets[record], message] for record, message in events.problems],
                "damage": [list(d) for d in damage],
                "bad_data_crc": bad_data_crc,
            },
            state={"plugins": events.plugins},
            tail={"size": size, "damage": list(trailing) if trailing is not None else None},
        )

    def read_parts(self, requests: Sequence[tuple[Path, int, Mapping[str, Any] | None]]) -> list[FilePart | OSError]:
        """Many files read on at once: their new records framed and decoded together (see :mod:`._tails`)."""
        return read_tails(requests, self.read_part)

    def join_parts(self, head: FilePart, tail: FilePart) -> FilePart:
        a, b = head.meta, tail.meta
        if not head.columns:
            return tail
        if not tail.columns:
            return FilePart(end=tail.end, columns=head.columns, meta=head.meta, state=tail.state, tail=tail.tail)
        shift = a["records"]
        tags = list(a["tags"])
        index = {tag: i for i, tag in enumerate(tags)}
        remap = np.array([index.setdefault(tag, len(index)) for tag in b["tags"]], dtype=np.int32)
        tags = list(index)
        columns = {
            "records": np.concatenate([head.columns["records"], tail.columns["records"] + shift]),
            "codes": np.concatenate([head.columns["codes"], remap[tail.columns["codes"]] if len(remap)
                                     else tail.columns["codes"]]).astype(np.int32, copy=False),
            **{key: np.concatenate([head.columns[key], tail.columns[key]]) for key in ("steps", "wall_times", "values")},
        }
        skipped = Counter(a["skipped"])
        skipped.update(b["skipped"])
        meta = {
            "records": shift + b["records"], "tags": tags,
            "histograms": list(a["histograms"]) + [{**row, "record": row["record"] + shift} for row in b["histograms"]],
            "hparams": a["hparams"] or b["hparams"], "text": {**a["text"], **b["text"]}, "skipped": dict(skipped),
            "session_starts": list(a["session_starts"]) + [[r + shift, step] for r, step in b["session_starts"]],
            "problems": list(a["problems"]) + list(b["problems"]),
            "damage": list(a["damage"]) + list(b["damage"]),
            "bad_data_crc": list(a["bad_data_crc"]) + list(b["bad_data_crc"]),
        }
        return FilePart(end=tail.end, columns=columns, meta=meta, state=tail.state, tail=tail.tail)

    def combine(self, files: list[Path], parts: list[FilePart]) -> list[RunData]:
        """The run, with its scalars as :class:`~tanalyze.schema.ScalarColumns` (see ``ResumableReader``)."""
        warnings: list[ReadWarning] = []
        tags: dict[str, int] = {}
        hist_tags: dict[str, int] = {}
        sessions: list[Session] = []
        skipped: Counter[str] = Counter()
        hparams: dict[str, Any] = {}
        text: dict[str, str] = {}
        ordered = sorted(zip(files, parts, strict=True), key=lambda pair: _file_order(Path(pair[0])))
        for path, part in ordered:
            events = _file_events(str(path), part, warnings)
            if events is None:
                continue
            skipped.update(events.skipped)
            hparams.update(events.hparams)
            text.update(events.text)
            sessions.extend(_sessions(Path(path).name, events, tags, hist_tags))
        merged = merge_sessions(sessions, len(tags), len(hist_tags))
        tag_names = list(tags)
        for file in merged.overlapping:
            warnings.append(ReadWarning(file, "written while an earlier file of this run was still being "
                                        "written; its steps replaced the earlier file's (two writers in one folder?)"))
        # Built in one go: RunData's defaults would construct empty tables (slow in pandas) only to be replaced.
        data = RunData(
            scalars=_scalar_columns(tag_names, merged.codes, merged.steps, merged.values, merged.wall_times),
            histograms=_histogram_frame(files, list(hist_tags), merged.histograms),
            hparams=hparams, warnings=warnings, text=text,
            restarts=[Restart(step, file, detail, until) for step, file, detail, until in merged.restarts],
            phases=merged.phases,
            notes=_notes(skipped, merged.repeated, tag_names),
        )
        self._read_hparams_yaml(files, data)
        if sessions and not (len(data.scalars) or len(data.histograms) or data.hparams or data.text or skipped):
            data.notes.append("no summaries: the event file(s) hold only their header")
        return [data]

    def extend(self, files: list[Path], runs: list[RunData], tails: list[FilePart]) -> list[RunData] | None:
        """The run with the scalars its last file gained appended, when they simply continue it.

        That is: the run had no restarts, phases or notes, only the last file in
        TensorBoard's order grew, and what it gained is scalars alone (no damage,
        session start, histogram, hparams, text or skipped summary) whose steps go on
        past every step of their tag. Then ``combine`` would append them as they are,
        so this does too; anything else returns None and the run is combined again.
        """
        if len(runs) != 1 or not files:
            return None
        run = runs[0]
        scalars = run.scalars
        if run.restarts or run.phases or run.notes or not isinstance(scalars, ScalarColumns):
            return None
        last = max(range(len(files)), key=lambda i: _file_order(Path(files[i])))
        if any(tail.meta.get("records") for i, tail in enumerate(tails) if i != last):
            return None
        tail = tails[last]
        meta = tail.meta
        if not meta.get("records"):
            return runs
        if any(meta[key] for key in ("damage", "bad_data_crc", "problems", "session_starts", "histograms",
                                     "hparams", "text", "skipped")):
            return None
        index = {tag: code for code, tag in enumerate(scalars.tags)}
        remap = np.array([index.setdefault(tag, len(index)) for tag in meta["tags"]], dtype=np.int32)
        codes = remap[tail.columns["codes"]] if len(remap) else tail.columns["codes"].astype(np.int32)
        steps = tail.columns["steps"].astype(np.int64, copy=False)
        if not _continues(scalars, codes, steps, len(index)):
            return None
        # A chunk after the cached rows, not a copy of them: they are joined with every run's once, at the end.
        extended = scalars.appended(tuple(index), codes, steps, tail.columns["values"].astype(np.float64, copy=False),
                                    tail.columns["wall_times"].astype(np.float64, copy=False))
        return [dataclasses.replace(run, scalars=extended)]

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


def _file_events(name: str, part: FilePart, warnings: list[ReadWarning]) -> FileEvents | None:
    """One file's events from its part, with its warnings added (None when it has no records)."""
    tail = part.tail
    for warning in tail.get("warnings", ()):
        warnings.append(ReadWarning(**warning))
    if tail.get("unreadable"):
        return None
    if tail.get("empty"):
        warnings.append(ReadWarning(name, "empty file: no events were written"))
        return None
    if "lfs" in tail:
        warnings.append(ReadWarning(name, f"Git LFS pointer, not the event file{tail['lfs']}; "
                                    "run `git lfs pull` to fetch it"))
        return None
    meta = part.meta
    if not meta.get("records"):
        warnings.append(ReadWarning(name, f"not a TensorBoard event file: no intact record in {tail['size']:,} bytes",
                                    location="byte 0", count=1))
        return None
    damage = [*meta["damage"], *([tail["damage"]] if tail.get("damage") else [])]
    for start, end, reason in damage:
        skipped_bytes = end - start
        message = f"skipped {skipped_bytes:,} byte(s) up to byte {end:,}: {reason}" if skipped_bytes else reason
        warnings.append(ReadWarning(name, message, location=f"byte {start:,}"))
    if meta["bad_data_crc"]:
        count = len(meta["bad_data_crc"])
        warnings.append(ReadWarning(name, f"{count:,} record(s) whose data CRC does not match skipped",
                                    location=_offsets(meta["bad_data_crc"]), count=count))
    by_message: dict[str, list[int]] = {}
    for offset, message in meta["problems"]:
        by_message.setdefault(message, []).append(offset)
    for message, offsets in by_message.items():
        warnings.append(ReadWarning(name, f"{message}; record skipped", location=_offsets(offsets), count=len(offsets)))
    columns = part.columns
    histograms = [{**row, "bucket_limits": np.asarray(row["bucket_limits"], np.float64),
                   "bucket_counts": np.asarray(row["bucket_counts"], np.float64)} for row in meta["histograms"]]
    return FileEvents(
        tags=list(meta["tags"]), tag_codes=columns["codes"], records=columns["records"], steps=columns["steps"],
        wall_times=columns["wall_times"], values=columns["values"], histograms=histograms,
        hparams=dict(meta["hparams"]), text=dict(meta["text"]), skipped=Counter(meta["skipped"]),
        session_starts=[(int(r), int(step)) for r, step in meta["session_starts"]],
    )


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


def _continues(old: ScalarColumns, new_codes: np.ndarray, new_steps: np.ndarray, n_tags: int) -> bool:
    """Whether every tag's new steps increase and start past the tag's last step in ``old`` (no repeat, no
    going back: appending them then changes no earlier point and repeats no step)."""
    if not len(new_steps):
        return True
    order = np.argsort(new_codes, kind="stable")
    tags, ordered = new_codes[order], new_steps[order]
    same_tag = tags[1:] == tags[:-1]
    if not np.all(ordered[1:][same_tag] > ordered[:-1][same_tag]):
        return False
    highest = max((int(steps.max()) for steps in old.column_chunks("step") if len(steps)), default=None)
    if highest is None or int(ordered.min()) > highest:  # the usual tail: past every step so far
        return True
    last = np.full(n_tags, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, old.codes, old.step)
    firsts = np.flatnonzero(np.concatenate(([True], ~same_tag)))
    return bool(np.all(ordered[firsts] > last[tags[firsts]]))


def _run_label(files: list[Path]) -> str:
    return Path(files[0]).parent.name if files else ""


def _scalar_columns(tag_names, codes, steps, values, wall_times) -> ScalarColumns:
    used = np.flatnonzero(np.bincount(codes, minlength=len(tag_names)))
    compact = np.full(len(tag_names), -1, np.int32)
    compact[used] = np.arange(len(used), dtype=np.int32)
    return ScalarColumns(
        tags=tuple(tag_names[i] for i in used.tolist()), codes=compact[codes],
        step=steps.astype(np.int64, copy=False), value=values.astype(np.float64, copy=False),
        wall_time=wall_times.astype(np.float64, copy=False),
    )


def _histogram_frame(files, hist_names, rows) -> pd.DataFrame:
    if not rows:
        return empty_histograms()
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


def head_tags(head: bytes) -> tuple[str, ...]:
    """The summary tags of the complete, intact records at the start of an event file, in order, once each.

    Discovery uses them to recognise how a writer split one run over folders (an ``add_scalars``
    sub-writer holds a single tag; an hparams sub-run holds ``_hparams_/…`` records) without reading
    whole files: the first few kilobytes already read to recognise the file are enough.
    """
    from google.protobuf.message import DecodeError

    from tanalyze.readers.tensorboard._proto import Event

    tags: dict[str, None] = {}
    offset = 0
    view = memoryview(head)
    while offset + 12 <= len(view):
        length = int.from_bytes(view[offset : offset + 8], "little")
        end = offset + 12 + length + 4
        if end > len(view) or masked_crc(view[offset : offset + 8]) != int.from_bytes(view[offset + 8 : offset + 12], "little"):
            break
        data = view[offset + 12 : offset + 12 + length]
        if masked_crc(data) != int.from_bytes(view[end - 4 : end], "little"):
            break
        try:
            event = Event.FromString(data)
        except DecodeError:
            break
        for value in event.summary.value:
            tags.setdefault(value.tag, None)
        offset = end
    return tuple(tags)
