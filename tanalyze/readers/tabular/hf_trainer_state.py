"""Hugging Face Trainer ``trainer_state.json`` (also TRL trainers), with the results files beside it.

``log_history`` is a list of dicts, one per ``Trainer.log`` call: train rows
(``loss``, ``grad_norm``, ``learning_rate``), eval rows (``eval_*``), predict
rows (``predict_*``, written without a ``step``), and one final summary row
(``train_runtime``, ``train_loss``, ``train_samples_per_second`` …). Every
numeric key becomes a tag at the row's ``step``; ``epoch`` goes to the epoch
column. Decisions:

* the summary row stays as tags at the final step (throughput is data) and is
  also copied to ``hparams["summary"]``;
* rows without a ``step`` take the step of the nearest row before them that has
  one (the eval they follow), and a note says how many;
* ``epoch`` may go backwards while steps go on (a resumed job on a streaming
  dataset restarts its epoch counter): kept as logged, with a note. Only steps
  that really repeat are a restart (last write wins);
* the top-level fields (``global_step``, ``max_steps``, ``num_train_epochs``,
  ``train_batch_size``, ``logging_steps``, ``best_metric`` …) and
  ``all_results.json``/``train_results.json``/``eval_results.json`` become hparams;
* the model's ``config.json`` and a PEFT ``adapter_config.json`` beside the state (or in the output
  folder above a checkpoint) become ``hparams["model_config"]`` / ``hparams["adapter_config"]``: they tell
  a fine-tune of a trained language model (see :mod:`tanalyze.analysis.pretrained`);
* an output folder holding ``checkpoint-N/trainer_state.json`` copies is one run
  (see :meth:`HFTrainerStateReader.run_directory`): each copy is a prefix of the
  same growing history, so only the latest one is read and the others are named
  in a note. The checkpoints of another training saved into the same folder (a
  script run again with other settings) start another history, told by its first
  logged entry: each such training is a run of its own, named after its newest
  checkpoint folder (``own_files`` says which states are whose).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import (
    PointBuffer,
    as_step,
    is_number,
    load_config,
    name_list,
    read_text,
    settle_rewrites,
)

__all__ = ["HFTrainerStateReader"]

STATE_NAME = "trainer_state.json"
RESULT_NAMES = ("all_results.json", "train_results.json", "eval_results.json", "test_results.json",
                "predict_results.json")
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_GLOBAL_STEP = re.compile(rb'"global_step"\s*:\s*(\d+)')
#: top-level fields that describe the process, not the run
_NOT_HPARAMS = frozenset({"log_history", "stateful_callbacks", "is_local_process_zero", "is_world_process_zero"})
_STEP_EPOCH = frozenset({"step", "epoch"})
_SUMMARY_KEYS = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second"})
MAX_STATE_BYTES = 2 * 1024**3
#: Files a Trainer saves beside its state that describe the model: (file name, hparams key, a key it always holds).
_MODEL_FILES = (("config.json", "model_config", ("architectures", "model_type")),
                ("adapter_config.json", "adapter_config", ("peft_type",)))


def _is_state_head(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and b'"log_history"' in head


class HFTrainerStateReader(Reader):
    """Hugging Face Trainer state: ``trainer_state.json`` (+ ``all_results.json`` …)."""

    name = "hf_trainer_state"
    cache_version = 3  # 2: the model's config.json / adapter_config.json beside the state; 3: another training's
    #                    checkpoints in the same folder its own run
    description = "Hugging Face Trainer trainer_state.json (+ all/train/eval_results.json, checkpoint-N copies)"

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.name == STATE_NAME:
            return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
        if path.name in RESULT_NAMES:
            return _has_state(path.parent)
        return path.suffix.lower() == ".json" and _is_state_head(head) and b'"global_step"' in head

    def run_directory(self, path: Path) -> Path:
        """``out/checkpoint-N/trainer_state.json`` belongs to the run ``out``: one run per output folder."""
        if _CHECKPOINT.match(path.parent.name):
            return path.parent.parent
        return path.parent

    def group(self, files: list[Path]) -> list[list[Path]]:
        renamed = sorted(f for f in files if f.name != STATE_NAME and f.name not in RESULT_NAMES)
        main = sorted(f for f in files if f not in renamed)
        groups = [[f] for f in renamed]
        if any(f.name == STATE_NAME for f in main) or not groups:
            groups.insert(0, main)
        elif main:  # results files beside renamed states only: attach them to the first
            groups[0] = groups[0] + main
        return groups

    def read(self, files: list[Path]) -> list[RunData]:
        states = [f for f in files if f.name not in RESULT_NAMES]
        results = [f for f in files if f.name in RESULT_NAMES]
        if not states:
            raise FormatError(files[0], "results file without a trainer_state.json")
        ordered = sorted(states, key=_recency, reverse=True)
        trainings, failures = _trainings(ordered)
        runs = [self._training(paths, chosen, state, damage, ordered[0]) for paths, chosen, state, damage in trainings]
        main = runs[0]
        main.warnings.extend(failures)
        if len(runs) > 1:
            main.notes.append(
                f"{len(runs) - 1} other training(s) saved checkpoints in this folder (their first logged values "
                f"differ: not copies of this history), each read as its own run: {name_list([r.name for r in runs[1:]])}")
            for run, (paths, _, _, _) in zip(runs, trainings, strict=True):
                run.own_files = list(paths) + (results if run is main else [])
        for result in sorted(results):
            text, _ = read_text(result, limit=64 * 1024 * 1024)
            try:
                data = json.loads(text)
            except (ValueError, RecursionError) as exc:
                main.warnings.append(ReadWarning(str(result), f"not valid JSON: {exc}"))
                continue
            main.hparams = {**main.hparams, result.stem: data}
        return runs

    def _training(self, paths: list[Path], chosen: Path, state: dict[str, Any], damage: list[ReadWarning],
                  newest: Path) -> RunData:
        """One training's run from the state read of its states (``paths``, newest first), the others named as its
        copies; named after that state's folder unless it holds the newest state of the output folder."""
        run = RunData()
        if len(paths) > 1:
            others = [_label(p, chosen) for p in paths if p != chosen]
            run.notes.append(
                f"read the latest state {_label(chosen, chosen)!r}; {len(others)} older copy(ies) of the same "
                f"history not read: {name_list(others)}"
            )
        run.warnings.extend(damage)
        self._history(state, chosen, run)
        run.hparams = {**_hparams(state), **run.hparams}
        if chosen != newest:
            run.name = _label(chosen, newest).rsplit("/", 1)[0] if "/" in _label(chosen, newest) else chosen.stem
        _read_model_files(chosen, run)
        return run

    def _history(self, state: dict[str, Any], path: Path, run: RunData) -> None:
        history = state.get("log_history")
        if not isinstance(history, list):
            raise FormatError(path, "no 'log_history' list: not a Trainer state")
        if not history:
            run.warnings.append(ReadWarning(str(path), "log_history is empty: the job logged nothing"))
        points = PointBuffer()
        steps = _steps(history)
        skipped_keys: set[str] = set()
        not_dicts = 0
        derived: Counter[str] = Counter()
        summary: dict[str, Any] = {}
        for index, entry in enumerate(history):
            if not isinstance(entry, dict):
                not_dicts += 1
                continue
            step, was_derived = steps[index]
            if step is None:
                not_dicts += 1
                continue
            if was_derived:
                derived[_kind(entry)] += 1
            epoch = entry.get("epoch")
            epoch = float(epoch) if is_number(epoch) else math.nan
            skipped_keys.update(points.add_record(index, step, entry, _STEP_EPOCH, epoch))  # null: not logged
            if _SUMMARY_KEYS & entry.keys():
                summary = {k: v for k, v in entry.items() if k != "step"}
        frame = points.frame()
        settled = settle_rewrites(frame, str(path))
        settled.into(run)
        if summary:
            run.hparams = {"summary": summary}
        for kind, count in sorted(derived.items()):
            run.notes.append(f"{count} {kind} entr(ies) have no step: given the step of the entry before them")
        if skipped_keys:
            run.notes.append(f"non-numeric values skipped under: {name_list(sorted(skipped_keys))}")
        if not_dicts:
            run.warnings.append(ReadWarning(str(path), f"{not_dicts} log_history entr(ies) unusable "
                                            "(not objects, or no step anywhere); skipped", count=not_dicts))
        note = _epoch_note(history, steps)
        if note:
            run.notes.append(note)


def _read_model_files(state: Path, run: RunData) -> None:
    """The model's config and adapter config saved beside ``state`` (else in the output folder above its
    checkpoint folder) into the run's hparams; files of that name that are not a model's are left alone."""
    folders = [state.parent] + ([state.parent.parent] if _CHECKPOINT.match(state.parent.name) else [])
    for name, key, marks in _MODEL_FILES:
        path = next((folder / name for folder in folders if (folder / name).is_file()), None)
        if path is None:
            continue
        data, warning = load_config(path)
        if isinstance(data, dict) and any(mark in data for mark in marks):
            run.hparams = {**run.hparams, key: data}
            run.extra_files.append(path)
        elif warning is not None:
            run.warnings.append(warning)


def _has_state(folder: Path) -> bool:
    if (folder / STATE_NAME).is_file():
        return True
    try:
        return any(_CHECKPOINT.match(p.name) and (p / STATE_NAME).is_file() for p in folder.iterdir())
    except OSError:
        return False


def _recency(path: Path) -> tuple[int, int]:
    """(global step, 1 for the output folder's own state) — the newest state sorts last."""
    match = _CHECKPOINT.match(path.parent.name)
    if match:
        return int(match.group(1)), 0
    try:
        with open(path, "rb") as handle:
            found = _GLOBAL_STEP.search(handle.read(8192))
    except OSError:
        found = None
    return (int(found.group(1)) if found else 2**62), 1


def _label(path: Path, chosen: Path) -> str:
    root = chosen.parent.parent if _CHECKPOINT.match(chosen.parent.name) else chosen.parent
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


#: the bytes of a state read to find the first entry of its history (it comes right after the top-level fields)
_HEAD_BYTES = 64 * 1024


def _trainings(ordered: list[Path]) -> tuple[list[tuple[list[Path], Path, dict[str, Any], list[ReadWarning]]],
                                             list[ReadWarning]]:
    """The states (newest first) grouped by training, the one holding the newest state first: each training's
    states, the one read (the newest whole one, else the newest damaged one), its content and its damage; and the
    states that could not be read.

    Checkpoint copies of one training share the start of their history; a folder may also hold the checkpoints of
    another training (a tutorial run again with other settings into the same ``output_dir``), whose first logged
    values differ. The first entry is read from each state's head; a state whose head shows none goes with the
    newest training. Only the state read of each training is parsed whole."""
    groups: dict[str, list[Path]] = {}
    unknown: list[Path] = []
    for path in ordered:
        key = _first_entry(path)
        (unknown if key is None else groups.setdefault(key, [])).append(path)
    members = list(groups.values()) or [[]]
    members[0] = sorted(members[0] + unknown, key=ordered.index)
    trainings, failures = [], []
    for paths in members:
        salvaged = None
        for path in paths:
            try:
                state, warnings = _load_state(path)
            except FormatError as exc:
                failures.append(ReadWarning(exc.path, exc.reason, exc.location))
                continue
            if not warnings:
                trainings.append((paths, path, state, []))
                break
            salvaged = salvaged or (paths, path, state, warnings)
        else:
            if salvaged is not None:
                trainings.append(salvaged)
    if not trainings:
        first = failures[0] if failures else ReadWarning(str(ordered[0]), "unreadable")
        raise FormatError(first.file, first.message, first.location)
    return trainings, failures


def _first_entry(path: Path) -> str | None:
    """The first entry of a state's history with a step, as canonical JSON, read from the state's head (None: the
    head shows none: no history, damage, or top-level fields longer than the head)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    start = head.find('"log_history"')
    bracket = head.find("[", start) if start >= 0 else -1
    if bracket < 0:
        return None
    decoder = json.JSONDecoder()
    position = bracket + 1
    while True:
        while position < len(head) and head[position] in " \t\r\n,":
            position += 1
        if position >= len(head) or head[position] == "]":
            return None
        try:
            entry, position = decoder.raw_decode(head, position)
        except (ValueError, RecursionError):
            return None
        if isinstance(entry, dict) and "step" in entry:
            return json.dumps(entry, sort_keys=True, default=str)


def _load_state(path: Path) -> tuple[dict[str, Any], list[ReadWarning]]:
    text, undecodable = read_text(path, limit=MAX_STATE_BYTES)
    warnings = []
    if undecodable:
        warnings.append(ReadWarning(str(path), f"{undecodable} byte(s) are not UTF-8; replaced", count=undecodable))
    try:
        state = json.loads(text)
    except (ValueError, RecursionError) as exc:
        state, warning = _salvage(text, path, exc)
        warnings.append(warning)
    if not isinstance(state, dict):
        raise FormatError(path, "not a JSON object: not a Trainer state")
    return state, warnings


def _salvage(text: str, path: Path, error: ValueError | RecursionError) -> tuple[dict[str, Any], ReadWarning]:
    """Keep the log entries before the damage of a cut-off or corrupted state file."""
    where = f"line {error.lineno} column {error.colno}" if isinstance(error, json.JSONDecodeError) else None
    start = text.find('"log_history"')
    bracket = text.find("[", start) if start >= 0 else -1
    if bracket < 0:
        raise FormatError(path, f"not valid JSON ({error.args[0] if error.args else error})", where)
    decoder = json.JSONDecoder()
    entries: list[Any] = []
    position = bracket + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        try:
            entry, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            break
        entries.append(entry)
    state: dict[str, Any] = {"log_history": entries}
    for key in ("global_step", "max_steps", "num_train_epochs", "train_batch_size", "logging_steps"):
        match = re.search(rf'"{key}"\s*:\s*(\d+)', text)
        if match:
            state[key] = int(match.group(1))
    return state, ReadWarning(str(path), f"not complete JSON (cut off or damaged); {len(entries)} log entr(ies) "
                              "before the damage were read", where)


def _steps(history: list[Any]) -> list[tuple[int | None, bool]]:
    """Each entry's step, and whether it was taken from a neighbour (entries without one)."""
    own: list[int | None] = []
    for entry in history:
        step = entry.get("step") if isinstance(entry, dict) else None
        own.append(as_step(step))
    out: list[tuple[int | None, bool]] = []
    previous: int | None = None
    for step in own:
        if step is not None:
            previous = step
            out.append((step, False))
        else:
            out.append((previous, True))
    following = next((s for s in own if s is not None), None)
    return [(following, True) if s is None else (s, d) for s, d in out]


def _kind(entry: dict[str, Any]) -> str:
    prefixes = {key.split("_", 1)[0] for key in entry if key != "epoch" and "_" in key}
    return "/".join(sorted(f"{p}_*" for p in prefixes)) if prefixes else "log"


def _epoch_note(history: list[Any], steps: list[tuple[int | None, bool]]) -> str | None:
    backwards = []
    previous: float | None = None
    previous_step: int | None = None
    for entry, (step, _) in zip(history, steps, strict=True):
        epoch = entry.get("epoch") if isinstance(entry, dict) else None
        if not is_number(epoch) or step is None:
            continue
        stepped_on = previous_step is None or step >= previous_step
        if previous is not None and epoch < previous and stepped_on:  # steps going back are restarts
            backwards.append(f"{previous:g} → {epoch:g} at step {step}")
        previous, previous_step = epoch, step
    if not backwards:
        return None
    return (
        f"epoch went backwards {len(backwards)} time(s) while steps kept increasing ({name_list(backwards, 4)}): "
        "a resumed job restarted its epoch counter (streaming datasets do); step is the axis, epoch is kept as logged"
    )


def _hparams(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in _NOT_HPARAMS}
