"""Local W&B run folders: ``wandb/run-*/`` and ``wandb/offline-run-*/``, and the old flat layout.

A run folder holds the binary ``run-<id>.wandb`` transaction log (the only
place an offline run keeps its history; read without the wandb package, see
:mod:`tanalyze.readers.wandb._records`), ``files/config.yaml`` (the config, as
``{key: {desc, value}}``), ``files/wandb-summary.json`` (final values),
``files/wandb-metadata.json`` (host, GPU, command line), ``files/output.log``
(the console, parsed by the console reader) and ``logs/debug.log``. Clients
before 0.9 wrote ``wandb-history.jsonl`` (one row per ``wandb.log`` call) and
``wandb-events.jsonl`` (system metrics) instead of the binary log.

Every file under a ``run-*`` folder belongs to that run, so media, code copies
and logs are not reported as unrecognised files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import MAX_CONFIG_BYTES, json_object_lines, read_text
from tanalyze.readers.wandb._records import WandbFile, read_wandb_file
from tanalyze.readers.wandb.history import (
    STEP_KEYS,
    History,
    SparseBuilder,
    as_step,
    combine,
    history_to_tidy,
    sparse_from_rows,
    system_to_tidy,
)
from tanalyze.schema import concat_frames, keep_last_write, scalar_frame

__all__ = ["WandbLocalReader", "run_folder", "unwrap_config"]

_RUN_FOLDER = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-[A-Za-z0-9]+$")
_OLD_DATA = ("wandb-history.jsonl", "wandb-events.jsonl", "wandb-summary.json", "wandb-metadata.json")
_OLD_COMPANIONS = ("config.yaml", "output.log", "debug.log", "debug-internal.log", "requirements.txt", "diff.patch")
_METADATA_FIELDS = (
    "host", "gpu", "gpu_count", "cpu_count", "cudaVersion", "cuda", "os", "python", "program", "args",
    "startedAt", "state", "colab", "name", "project",
)


def run_folder(path: Path) -> Path | None:
    """The ``run-YYYYMMDD_HHMMSS-<id>`` folder ``path`` lies in, if any."""
    for parent in path.parents:
        if _RUN_FOLDER.match(parent.name):
            return parent
    return None


class WandbLocalReader(Reader):
    name = "wandb-local"
    description = "W&B local run folders (run-*/, offline-run-*/: .wandb log, config, summary, console)"
    cache_version = 29  # 2: the run's W&B display name and id (RunData.title); 3: fork fields in nanoGPT console lines; 4: a console
    #                    without metric lines is a note, not a warning; 5: HF console steps when carriage returns were lost;
    #                    6: the generic key-value lines' changes; 7: old Keras verbose=2 lines;
    #                    8: a Keras update at the last batch with an ETA is no epoch's end; 9: nor one a fuller
    #                    update follows; 10: a Keras update a terminal's hard wrap cut is joined back;
    #                    11: tqdm bars cut at the terminal's width, Lightning's checkpoint messages and results;
    #                    12: the generic key-value lines' segments of several pairs; 13: Swin's meters;
    #                    14: generic epoch lines printed several times an epoch;
    #                    15: generic 'loss at step N: value' lines; 16: generic pair lines with blanks between;
    #                    17: COCO evaluation summaries; 18: generic 'iteration' counting epochs;
    #                    19: generic blank-separated pair lines under an epoch header; 20: banner blocks' phase;
    #                    21: torch_examples' epoch lines anchor the step; 22: generic epoch lines whose number of
    #                    epochs changed begin a session; 23: generic 'Episode N | …' lines; 24: a Keras console
    #                    whose head was cut; 25: an HF console's trainings each with its steps per epoch; 26: nanoGPT
    #                    lines ending in blanks; 27: generic 'step N train loss: …' lines, units of time in names;
    #                    28: generic '[Epoch 1/60]' headers, names aligned by blanks; 29: generic epoch counters

    def sniff(self, path: Path, head: bytes) -> bool:
        if run_folder(path) is not None:
            return True
        if path.name in _OLD_DATA:
            return True
        if path.suffix == ".wandb" and head.startswith(b":W&B"):
            return True
        if path.name in _OLD_COMPANIONS:
            return any((path.parent / name).is_file() for name in _OLD_DATA)
        return False

    def run_directory(self, path: Path) -> Path:
        return run_folder(path) or path.parent

    def read(self, files: list[Path]) -> list[RunData]:
        return [_read_run(files)]


def _role(path: Path) -> str | None:
    name = path.name
    if path.suffix == ".wandb":
        return "wandb"
    if name in ("config.yaml", "wandb-summary.json", "wandb-metadata.json", "output.log",
                "wandb-history.jsonl", "wandb-events.jsonl", "debug.log"):
        return name
    return None


def _read_run(files: list[Path]) -> RunData:
    data = RunData()
    by_role: dict[str, list[Path]] = {}
    root = run_folder(files[0]) or files[0].parent if files else Path()
    places = (root, root / "files", root / "logs")  # not files/code/…, files/media/…: those are the user's
    for path in sorted(files):
        role = _role(path) if path.parent in places else None
        if role is not None:
            by_role.setdefault(role, []).append(path)

    config, internal = _config(_first(by_role, "config.yaml"), data)
    summary = _json_object(_first(by_role, "wandb-summary.json"), data) or {}
    metadata = _json_object(_first(by_role, "wandb-metadata.json"), data) or {}
    info: dict[str, Any] = {k: metadata[k] for k in _METADATA_FIELDS if metadata.get(k) not in (None, "", [])}
    if isinstance(metadata.get("git"), Mapping):
        info["git"] = dict(metadata["git"])
    info.update({k: internal[k] for k in ("cli_version", "framework", "python_version") if k in internal})

    histories: list[History] = []
    for path in by_role.get("wandb", []):
        rows = SparseBuilder()
        record = _read_binary(path, data, rows)
        if record is None:
            continue
        histories.append(_binary_history(record, rows, internal.get("start_time"), data, info))
        if not config:
            config, more = unwrap_config(record.config)
            info.update({k: more[k] for k in ("cli_version", "python_version") if k in more})
        if not summary:
            summary = dict(record.summary)
    for path in by_role.get("wandb-history.jsonl", []):
        rows = _jsonl(path, data)
        histories.append(history_to_tidy(sparse_from_rows(rows), file=str(path)))
    for path in by_role.get("wandb-events.jsonl", []):
        rows = _jsonl(path, data)
        samples = [(_float(r.get("_timestamp")), _float(r.get("_runtime")), r) for r in rows]
        histories.append(system_to_tidy(samples, file=str(path)))

    history = combine(histories)
    data.notes.extend(history.notes)
    data.warnings.extend(history.warnings)
    data.restarts.extend(history.restarts)
    data.phases.extend(history.phases)
    scalars = history.scalars
    data.histograms = history.histograms

    for path in by_role.get("output.log", []):
        scalars = _merge_console(scalars, path, data)
    for path in by_role.get("debug.log", []):
        _debug_log(path, data)

    clean_summary = {k: v for k, v in summary.items() if k != "_wandb" and not _is_media(v)}
    if isinstance(summary.get("_wandb"), Mapping) and "runtime" in summary["_wandb"]:
        info.setdefault("runtime_s", summary["_wandb"]["runtime"])
    if len(scalars) == 0 and clean_summary:
        scalars = _summary_points(clean_summary, history.step_key, data)
    elif len(scalars) == 0 and not by_role.get("wandb") and not by_role.get("wandb-history.jsonl"):
        data.notes.append("no history in this run folder (no .wandb file, no wandb-history.jsonl, no console metrics)")

    if isinstance(info.get("name"), str) and info["name"].strip():
        run_id = info.get("run_id")
        data.title = f"{info['name'].strip()} ({run_id})" if isinstance(run_id, str) and run_id else info["name"].strip()
    hparams: dict[str, Any] = dict(config)
    hparams["_wandb"] = info
    if clean_summary:
        hparams["_summary"] = clean_summary
    data.hparams = hparams
    data.scalars = scalars
    return data


def _first(by_role: dict[str, list[Path]], role: str) -> Path | None:
    paths = by_role.get(role)
    return paths[0] if paths else None


def unwrap_config(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """W&B's config (``{key: {desc, value}}`` or plain) as plain values, and its ``_wandb`` internals apart."""
    config: dict[str, Any] = {}
    internal: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, Mapping) and "value" in value and set(value) <= {"desc", "value"}:
            value = value["value"]
        if key == "_wandb":
            if isinstance(value, Mapping):
                internal = {k: v for k, v in value.items() if k not in ("t", "m")}
            continue
        if key == "wandb_version":
            continue
        config[str(key)] = value
    return config, internal


def _config(path: Path | None, data: RunData) -> tuple[dict[str, Any], dict[str, Any]]:
    if path is None:
        return {}, {}
    try:
        raw = yaml.safe_load(read_text(path, limit=MAX_CONFIG_BYTES)[0])
    except FormatError as exc:
        data.warnings.append(ReadWarning(str(path), f"config not read: {exc.reason}"))
        return {}, {}
    except (RecursionError, yaml.YAMLError) as exc:
        data.warnings.append(ReadWarning(str(path), f"config not read: {_short(exc)}"))
        return {}, {}
    if not isinstance(raw, Mapping):
        data.warnings.append(ReadWarning(str(path), "config is not a mapping of keys to values; ignored"))
        return {}, {}
    return unwrap_config(raw)


def _json_object(path: Path | None, data: RunData) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        value = json.loads(read_text(path, limit=MAX_CONFIG_BYTES)[0])
    except FormatError as exc:
        data.warnings.append(ReadWarning(str(path), f"not read: {exc.reason}"))
        return None
    except (ValueError, RecursionError) as exc:
        data.warnings.append(ReadWarning(str(path), f"not read: {_short(exc)}"))
        return None
    if not isinstance(value, dict):
        data.warnings.append(ReadWarning(str(path), "not a JSON object; ignored"))
        return None
    return value


def _jsonl(path: Path, data: RunData) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    bad: list[int] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            rows, bad = json_object_lines(handle)
    except OSError as exc:
        data.warnings.append(ReadWarning(str(path), f"not read: {_short(exc)}"))
    if bad:
        data.warnings.append(
            ReadWarning(str(path), f"{len(bad)} line(s) are not JSON objects; skipped", f"line {bad[0]}", count=len(bad))
        )
    return rows


def _read_binary(path: Path, data: RunData, rows: SparseBuilder) -> WandbFile | None:
    try:
        record = read_wandb_file(path, on_history=rows.add)
    except FormatError as exc:
        data.warnings.append(ReadWarning(exc.path, exc.reason, exc.location))
        return None
    framing = record.framing
    if framing.bad_chunks:
        where = ", ".join(f"byte {o}" for o in framing.bad_chunk_offsets)
        data.warnings.append(ReadWarning(
            str(path), f"{framing.bad_chunks} damaged block(s) (bad checksum or length) skipped with the records in them",
            where, count=framing.bad_chunks))
    if framing.orphan_chunks:
        data.warnings.append(ReadWarning(
            str(path), f"{framing.orphan_chunks} record fragment(s) without their start skipped", count=framing.orphan_chunks))
    if framing.truncated_at is not None:
        data.warnings.append(ReadWarning(
            str(path), "file ends inside a record (the run was still writing or was killed); that record is lost",
            f"byte {framing.truncated_at}"))
    if record.undecodable:
        data.warnings.append(ReadWarning(
            str(path), f"{record.undecodable} record(s) could not be decoded; skipped", count=record.undecodable))
    if record.bad_values:
        data.warnings.append(ReadWarning(
            str(path), f"{record.bad_values} value(s) are not valid JSON; skipped", count=record.bad_values))
    return record


def _binary_history(
    record: WandbFile, rows: SparseBuilder, start_time: Any, data: RunData, info: dict[str, Any]
) -> History:
    name = Path(record.path).name
    run = record.run
    for key, target in (("run_id", "run_id"), ("display_name", "name"), ("project", "project"), ("entity", "entity"),
                        ("run_group", "group"), ("job_type", "job_type"), ("tags", "tags"), ("notes", "notes"),
                        ("host", "host"), ("git", "git"), ("resumed", "resumed"), ("starting_step", "starting_step")):
        if key in run:
            info.setdefault(target, run[key])
    if record.exit is not None:
        info["exit_code"] = record.exit["exit_code"]
        info["runtime_s"] = record.exit["runtime"]
        if record.exit["exit_code"] != 0:
            data.notes.append(f"{name}: the run exited with code {record.exit['exit_code']}")
    elif not record.finished:
        data.notes.append(f"{name}: no exit record: the job was killed, or was still running when the file was copied")
    if record.console_lines:
        data.notes.append(f"{name}: holds {record.console_lines} console line(s); not parsed (files/output.log is)")
    declared = _declared_step(record.step_metrics)
    history = history_to_tidy(rows.build(), file=record.path, declared_step=declared)
    start = run.get("start_time", _float(start_time))
    samples = [(stamp, None, values) for stamp, values in record.stats]
    system = system_to_tidy(samples, file=record.path, start_time=start)
    if not record.history_rows:
        history.notes.append(f"{name}: no history rows were logged")
    return combine([history, system])


def _declared_step(step_metrics: Mapping[str, str]) -> str | None:
    """The x-axis the run declared for all its metrics (``define_metric("*", step_metric=...)``)."""
    if "*" in step_metrics:
        return step_metrics["*"]
    targets = set(step_metrics.values())
    return targets.pop() if len(targets) == 1 else None


def _merge_console(scalars: pd.DataFrame, path: Path, data: RunData) -> pd.DataFrame:
    """Add the metrics the console reader finds in ``output.log``; W&B's value wins where both hold a point."""
    try:
        from tanalyze.readers.text.console import NO_METRIC_LINES, parse_console_file
    except ImportError:
        data.notes.append(f"{path.name}: not parsed (the console reader is not available)")
        return scalars
    try:
        console = parse_console_file(path)
    except FormatError as exc:
        data.warnings.append(ReadWarning(exc.path, exc.reason, exc.location))
        return scalars
    # (a console without metric lines is what most W&B runs have: their metrics are in W&B's own files)
    kept = [w for w in console.warnings if not w.message.endswith(NO_METRIC_LINES)]
    if len(kept) < len(console.warnings):
        data.notes.append(f"{path.name}: no metric line (the console's text only; the metrics are W&B's)")
    data.warnings.extend(kept)
    data.notes.extend(f"{path.name}: {note}" for note in console.notes)
    data.restarts.extend(console.restarts)
    points = console.scalars
    if len(points) == 0:
        return scalars
    points = points.assign(source=pd.Categorical([path.name] * len(points)))
    if len(scalars) == 0:
        return points
    both = concat_frames([points, scalars])  # W&B rows last: they win
    merged, dropped = keep_last_write(both, ("tag", "step"))
    if dropped:
        data.notes.append(f"{path.name}: {dropped} console point(s) also in the W&B history; the W&B value was kept")
    return merged.sort_values(["tag", "step"], kind="stable").reset_index(drop=True)


_DEBUG_TAIL = 1 << 20


def _debug_log(path: Path, data: RunData) -> None:
    """A cheap look at ``debug.log``: does it end with a traceback?"""
    try:
        with open(path, "rb") as handle:  # its last megabyte: the end is what is looked at
            handle.seek(max(0, handle.seek(0, 2) - _DEBUG_TAIL))
            lines = handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError as exc:
        data.warnings.append(ReadWarning(str(path), f"not read: {_short(exc)}"))
        return
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith("Traceback"):
            last = next((line for line in reversed(lines[index:]) if line.strip()), "")
            data.notes.append(f"{path.name}: the W&B client logged a traceback: {last.strip()[:200]}")
            return


def _summary_points(summary: Mapping[str, Any], step_key: str | None, data: RunData) -> pd.DataFrame:
    """The summary's final values as single points, for runs whose history is not here."""
    step_value = None
    for key in (step_key, *STEP_KEYS, "_step"):
        if key and as_step(summary.get(key)) is not None:
            step_value, step_key = as_step(summary[key]), key
            break
    tags = [(k, float(v)) for k, v in summary.items()
            if isinstance(v, int | float) and not k.startswith("_") and k != step_key]
    if not tags:
        return scalar_frame(run="", tag=[], step=[], value=[])
    if step_value is None:
        data.notes.append("the summary's final values are kept as hparams only (no step to place them at)")
        return scalar_frame(run="", tag=[], step=[], value=[])
    data.notes.append(
        f"no history here: the {len(tags)} final value(s) of wandb-summary.json are single points at "
        f"{step_key} = {step_value}")
    wall = _float(summary.get("_timestamp"))
    return scalar_frame(
        run="", tag=[t for t, _ in tags], step=[step_value] * len(tags), value=[v for _, v in tags],
        wall_time=np.nan if wall is None else wall, source=["wandb-summary.json"] * len(tags),
    )


def _is_media(value: Any) -> bool:
    return isinstance(value, Mapping) and "_type" in value


def _float(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
