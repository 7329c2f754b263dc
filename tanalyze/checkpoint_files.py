"""The checkpoints a run saved, found by their names (never loaded, never opened, except small json).

Where a run keeps its checkpoints, from the folder of its logs (``directory``):

* the folder itself, and its checkpoint sub-folders (``checkpoints/``, ``ckpt/``, ``weights/`` …);
* Hugging Face Trainer: ``<output_dir>/checkpoint-<step>/`` folders; a run read from TensorBoard files in
  ``<output_dir>/runs/<name>/`` looks in ``<output_dir>`` too, when that is an output folder (a
  ``trainer_state.json``, ``training_args.bin`` or ``checkpoint-N`` in it: ``runs/`` is a common name).
  ``trainer_state.json`` (at the top, else in the newest ``checkpoint-N``) gives ``best_model_checkpoint``,
  ``best_metric``, ``save_steps``;
* MMEngine: logs in ``<work_dir>/<timestamp>/vis_data/`` look in ``<work_dir>``, as a run read from
  ``<work_dir>`` does (``epoch_N.pth``, ``iter_N.pth``, ``best_<metric>_epoch_N.pth``).

What a name says:

=============================================  ==================================================
``checkpoint-120/`` (HF), ``global_step120/``  step 120
``epoch=3-step=40-val_loss=0.1234.ckpt``       Lightning: epoch 3, step 40, ``val_loss`` 0.1234 (any ``key=value``)
``last.ckpt``, ``last-v1.ckpt``                the weights at the end of training (``kind="last"``)
``epoch_12.pth``, ``iter_5000.pth``            MMEngine: epoch 12 / step 5000
``best_coco_bbox_mAP_epoch_12.pth``            MMEngine's best: metric ``coco_bbox_mAP``, epoch 12
``model_0004999.pth``, ``step_800.pt``         a step in the name (``step``, ``iter``, ``it``, ``model``, ``ckpt`` + number)
``ckpt.pt``                                    nanoGPT's one checkpoint, overwritten: no step (a note says so)
``best.pt``, ``model_best.pth``                the trainer's own best, no step (``kind="best"``; Ultralytics, timm …)
=============================================  ==================================================

A weight file (``.pt``, ``.pth``, ``.ckpt``, ``.safetensors``, ``.bin``) whose name carries no step is listed in
``ignored`` with a note, except a final model (``model.safetensors``, ``pytorch_model.bin``, ``model_final.pth``).
The scan is bounded: at most :data:`MAX_ENTRIES` directory entries in all, hidden folders are not entered, nothing
is followed through a symlinked folder. This module sits beside :mod:`tanalyze.runstatus` (run folders scanned
below the analysis); :mod:`tanalyze.analysis.checkpoints` judges what it found.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

__all__ = ["MAX_ENTRIES", "SavedCheckpoint", "TrainerBest", "CheckpointScan", "NO_CHECKPOINTS", "parse_name",
           "scan_checkpoints", "scanned_folders", "with_training_args"]

#: Directory entries looked at, over every folder of one scan.
MAX_ENTRIES = 20_000
#: A ``trainer_state.json`` larger than this is not read (its top-level fields are all that is needed).
MAX_STATE_BYTES = 16 * 1024 * 1024
#: Entries of a folder looked at to tell whether it is an HF output folder.
_LOOK = 2_000
#: Names shown in ``ignored`` at most (the count is in the note).
_SHOWN = 20

WEIGHT_SUFFIXES = frozenset({".pt", ".pth", ".ckpt", ".safetensors", ".bin"})
_SUBFOLDERS = frozenset({"checkpoints", "checkpoint", "ckpt", "ckpts", "weights", "models", "saved_models"})
_HF_FOLDER = re.compile(r"^checkpoint-(\d+)$")
_DS_FOLDER = re.compile(r"^global_step(\d+)$")
_KEY_VALUE = re.compile(r"(?:^|[-_])([A-Za-z][\w./]*?)=(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?=-|$)")
_MM_BEST = re.compile(r"^best_(.+)_(epoch|iter)_(\d+)$")
_MM_PLAIN = re.compile(r"^(epoch|iter)_(\d+)$")
_EPOCH = re.compile(r"(?:^|[_\-.])(?:epoch|ep)[_\-]?(\d+)(?=$|[_\-.])", re.IGNORECASE)
_STEP = re.compile(r"(?:^|[_\-.])(?:global_step|step|steps|iteration|iter|it|model|ckpt|checkpoint)[_\-]?(\d+)(?=$|[_\-.])",
                   re.IGNORECASE)
_FINAL = frozenset({"model.safetensors", "pytorch_model.bin", "model_final.pth", "final.pt", "final.pth",
                    "training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth", "adapter_model.safetensors",
                    "adapter_model.bin", "scaler.pt"})
_TIMESTAMP = re.compile(r"^\d{8}_\d{6}$")


@dataclass(frozen=True)
class SavedCheckpoint:
    """One checkpoint on disk, as its name describes it (``name`` relative to the scanned folder)."""

    name: str
    kind: str  # hf, lightning, mmengine, best, last, named, deepspeed, nanogpt
    step: int | None = None
    epoch: int | None = None
    metric: str | None = None  # a metric in the name (Lightning ``val_loss=0.12``, MMEngine ``best_<metric>``)
    value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "step": self.step, "epoch": self.epoch, "metric": self.metric,
                "value": self.value}


@dataclass(frozen=True)
class TrainerBest:
    """What a Hugging Face ``trainer_state.json`` (and the run's training arguments) say about the best model."""

    source: str  # the state file, relative to the scanned folder
    best_model_checkpoint: str | None = None
    best_step: int | None = None
    best_metric: float | None = None
    save_steps: int | None = None
    eval_steps: int | None = None
    global_step: int | None = None
    #: from the training arguments logged with the run (TensorBoard ``args`` text), when there
    metric_for_best_model: str | None = None
    greater_is_better: bool | None = None
    load_best_model_at_end: bool | None = None
    save_total_limit: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class CheckpointScan:
    """The checkpoints found for one run, what the trainer said about its best, and what was not understood."""

    folder: str = ""  # the folder the names are relative to ("" when nothing was scanned)
    checkpoints: tuple[SavedCheckpoint, ...] = ()
    trainer: TrainerBest | None = None
    ignored: tuple[str, ...] = ()  # weight files whose names carry no step (at most _SHOWN)
    notes: tuple[str, ...] = ()
    #: a metric the checkpoint names carry (Lightning ``ModelCheckpoint(monitor=…)`` file names)
    monitor: str | None = None
    truncated: bool = False

    @property
    def empty(self) -> bool:
        return not self.checkpoints and self.trainer is None and not self.ignored and not self.notes

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "checkpoints": [c.to_dict() for c in self.checkpoints],
                "trainer": None if self.trainer is None else self.trainer.to_dict(), "ignored": list(self.ignored),
                "notes": list(self.notes), "monitor": self.monitor, "truncated": self.truncated}


NO_CHECKPOINTS = CheckpointScan()


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_name(name: str, *, is_dir: bool = False) -> SavedCheckpoint | None:
    """The checkpoint a file or folder name describes; None when it is no checkpoint or carries no step."""
    if is_dir:
        match = _HF_FOLDER.match(name)
        if match:
            return SavedCheckpoint(name, "hf", step=int(match.group(1)))
        match = _DS_FOLDER.match(name)
        return SavedCheckpoint(name, "deepspeed", step=int(match.group(1))) if match else None
    suffix = Path(name).suffix.lower()
    if suffix not in WEIGHT_SUFFIXES:
        return None
    stem = name[: -len(suffix)]
    if stem == "ckpt" and suffix == ".pt":
        return SavedCheckpoint(name, "nanogpt")
    last = stem == "last" or re.match(r"^last-v\d+$", stem) is not None
    if "=" in stem:
        pairs = {k: v for k, v in _KEY_VALUE.findall(stem)}
        step = int(float(pairs.pop("step"))) if "step" in pairs else None
        epoch = int(float(pairs.pop("epoch"))) if "epoch" in pairs else None
        metric, value = next(((k, _number(v)) for k, v in pairs.items()), (None, None))
        if step is not None or epoch is not None or metric is not None:
            return SavedCheckpoint(name, "last" if stem.startswith("last") else "lightning", step=step, epoch=epoch,
                                   metric=metric, value=value)
    if last:
        return SavedCheckpoint(name, "last")
    match = _MM_BEST.match(stem)
    if match:
        number = int(match.group(3))
        return SavedCheckpoint(name, "best", step=number if match.group(2) == "iter" else None,
                               epoch=number if match.group(2) == "epoch" else None, metric=match.group(1))
    match = _MM_PLAIN.match(stem)
    if match:
        number = int(match.group(2))
        return SavedCheckpoint(name, "mmengine", step=number if match.group(1) == "iter" else None,
                               epoch=number if match.group(1) == "epoch" else None)
    step_match, epoch_match = _STEP.search(stem), _EPOCH.search(stem)
    best = stem.lower().startswith("best") or stem.lower().endswith("best")
    if step_match or epoch_match:
        return SavedCheckpoint(name, "best" if best else "named",
                               step=int(step_match.group(1)) if step_match else None,
                               epoch=int(epoch_match.group(1)) if epoch_match else None)
    return SavedCheckpoint(name, "best") if best else None


class _Budget:
    """How many directory entries a scan may still look at."""

    def __init__(self, entries: int) -> None:
        self.left = entries
        self.exhausted = False

    def entries(self, folder: Path) -> list[os.DirEntry[str]]:
        out: list[os.DirEntry[str]] = []
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    if self.left <= 0:
                        self.exhausted = True
                        break
                    self.left -= 1
                    out.append(entry)
        except OSError:
            return []
        return sorted(out, key=lambda e: e.name)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_hf_output(folder: Path) -> bool:
    """Whether ``folder`` is an HF Trainer output folder: a ``trainer_state.json``, ``training_args.bin`` or a
    ``checkpoint-N`` folder in it (at most :data:`_LOOK` entries looked at)."""
    if (folder / "trainer_state.json").is_file() or (folder / "training_args.bin").is_file():
        return True
    try:
        with os.scandir(folder) as it:
            for n, entry in enumerate(it):
                if n >= _LOOK:
                    return False
                if _HF_FOLDER.match(entry.name) and _is_dir(entry):
                    return True
    except OSError:
        return False
    return False


def _roots(directory: Path) -> list[Path]:
    """The folders where a run whose logs are in ``directory`` keeps its checkpoints (see the module doc)."""
    roots = [directory]
    # HF: <output_dir>/runs/<name>/events... (only an output folder: "runs/" is a common name for anything)
    if directory.parent.name == "runs" and _is_hf_output(directory.parent.parent):
        roots.append(directory.parent.parent)
    if directory.name == "vis_data" and _TIMESTAMP.match(directory.parent.name):  # MMEngine <work_dir>/<ts>/vis_data
        roots.append(directory.parent.parent)
    return list(dict.fromkeys(roots))


def scanned_folders(directory: str | os.PathLike[str]) -> list[str]:
    """The folders a scan of ``directory`` lists (that exist): a change in any of them (a checkpoint saved or
    deleted) changes its modification time, which is what the results cache stamps."""
    out = []
    for root in _roots(Path(directory)):
        if root.is_dir():
            out.append(str(root))
            out.extend(str(root / name) for name in sorted(_SUBFOLDERS) if (root / name).is_dir())
    return out


def _read_state(path: Path) -> dict[str, Any] | None:
    """A small ``trainer_state.json``'s top-level fields (None when absent, too large or not json)."""
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        else None


def _trainer_best(state: Mapping[str, Any], source: str) -> TrainerBest:
    path = state.get("best_model_checkpoint")
    path = str(path)[:500] if isinstance(path, str) else None
    best_step = _int(state.get("best_global_step"))
    if best_step is None and path:
        match = _HF_FOLDER.match(Path(path.replace("\\", "/")).name)
        best_step = int(match.group(1)) if match else None
    metric = state.get("best_metric")
    return TrainerBest(source=source, best_model_checkpoint=path, best_step=best_step,
                       best_metric=float(metric) if _int(metric) is not None or isinstance(metric, float) else None,
                       save_steps=_int(state.get("save_steps")), eval_steps=_int(state.get("eval_steps")),
                       global_step=_int(state.get("global_step")))


def scan_checkpoints(directory: str | os.PathLike[str], *, max_entries: int = MAX_ENTRIES,
                     excluded: frozenset[str] = frozenset()) -> CheckpointScan:
    """The checkpoints saved by the run whose logs are in ``directory`` (see the module doc); never raises
    for an unreadable folder (it is skipped). Folders in ``excluded`` (paths as written) are another run's: the
    checkpoints of another training saved into the same output folder."""
    base = Path(directory)
    budget = _Budget(max_entries)
    found: dict[str, SavedCheckpoint] = {}
    ignored: list[str] = []
    states: list[tuple[int, Path, str]] = []  # (rank, path, shown name): the top-level state wins, then the newest
    notes: list[str] = []
    roots = _roots(base)
    top = roots[-1]

    def shown(path: Path) -> str:
        try:
            name = path.relative_to(top).as_posix()
        except ValueError:
            name = path.as_posix()
        # a name that is not valid UTF-8 is shown with U+FFFD (it is only ever shown, never opened)
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")

    def visit(folder: Path, depth: int) -> None:
        for entry in budget.entries(folder):
            path = Path(entry.path)
            if entry.name.startswith(".") or entry.path in excluded:
                continue
            if _is_dir(entry):
                saved = parse_name(entry.name, is_dir=True)
                if saved is not None:
                    found.setdefault(shown(path), replace(saved, name=shown(path)))
                    if saved.kind == "hf":
                        states.append((saved.step or 0, path / "trainer_state.json", shown(path / "trainer_state.json")))
                elif depth == 0 and entry.name.lower() in _SUBFOLDERS:
                    visit(path, depth + 1)
                continue
            if entry.name == "trainer_state.json":
                states.append((2**62, path, shown(path)))
                continue
            saved = parse_name(entry.name)
            if saved is not None:
                found.setdefault(shown(path), replace(saved, name=shown(path)))
            elif Path(entry.name).suffix.lower() in WEIGHT_SUFFIXES and entry.name not in _FINAL:
                ignored.append(shown(path))

    for root in roots:
        visit(root, 0)
    trainer = None
    for _, path, name in sorted(states, key=lambda s: s[0], reverse=True):
        state = _read_state(path)
        if state is not None:
            trainer = _trainer_best(state, name)
            break
    checkpoints = tuple(sorted(found.values(), key=lambda c: (c.step is None, c.step or 0, c.epoch or 0, c.name)))
    if any(c.kind == "nanogpt" for c in checkpoints):
        notes.append("ckpt.pt carries no step: nanoGPT overwrites one checkpoint (with always_save_checkpoint=False "
                     "only when the validation loss improved)")
    if ignored:
        notes.append(f"{len(ignored)} weight file(s) with no step or epoch in their names not matched to the curve: "
                     + ", ".join(ignored[:5]) + (" …" if len(ignored) > 5 else ""))
    if budget.exhausted:
        notes.append(f"more than {max_entries} entries in the run's folders: the checkpoint scan stopped there")
    metrics = {c.metric for c in checkpoints if c.kind in {"lightning", "last"} and c.metric}
    monitor = next(iter(metrics)) if len(metrics) == 1 else None
    if not checkpoints and not ignored and (trainer is None or trainer.best_step is None
                                            and trainer.best_model_checkpoint is None):
        return NO_CHECKPOINTS  # a trainer state that names no best, and nothing on disk: nothing to judge
    return CheckpointScan(folder=top.as_posix(), checkpoints=checkpoints, trainer=trainer,
                          ignored=tuple(ignored[:_SHOWN]), notes=tuple(notes), monitor=monitor,
                          truncated=budget.exhausted)


def _args_from_text(texts: Mapping[str, str]) -> dict[str, Any]:
    """The HF training arguments a TensorBoard run logged as text (``args/text_summary``); {} when absent."""
    for key, value in texts.items():
        if key.split("/")[0] == "args" and isinstance(value, str) and len(value) < 1_000_000:
            try:
                args = json.loads(value)
            except ValueError:
                continue
            if isinstance(args, dict):
                return args
    return {}


def _with_pointer(scan: CheckpointScan, hparams: Mapping[str, Any]) -> CheckpointScan:
    """``scan`` with a note when the run's ``last_checkpoint`` file (detectron2, MMEngine: read into its hparams)
    names a checkpoint that is not among those found."""
    pointer = hparams.get("last_checkpoint")
    if not isinstance(pointer, str) or not pointer.strip():
        return scan
    base = pointer.strip().replace("\\", "/").rsplit("/", 1)[-1][:200]
    if any(c.name.rsplit("/", 1)[-1] == base for c in scan.checkpoints):
        return scan
    saved = parse_name(base)
    where = f" (step {saved.step:,})" if saved and saved.step is not None else \
        f" (epoch {saved.epoch})" if saved and saved.epoch is not None else ""
    note = f"last_checkpoint names {base}{where}, which is not on disk beside the logs"
    return replace(scan, notes=(*scan.notes, note))


def with_training_args(scan: CheckpointScan, texts: Mapping[str, str], hparams: Mapping[str, Any]) -> CheckpointScan:
    """``scan`` with the best-model settings of the run's training arguments (``metric_for_best_model``,
    ``greater_is_better``, ``load_best_model_at_end``, ``save_total_limit``) from its logged text or hparams, and
    a note when its ``last_checkpoint`` (detectron2, MMEngine) names a checkpoint not on disk."""
    scan = _with_pointer(scan, hparams)
    if scan.empty:
        return scan
    args: dict[str, Any] = {**{k: v for k, v in hparams.items() if isinstance(k, str)}, **_args_from_text(texts)}
    metric = args.get("metric_for_best_model")
    greater = args.get("greater_is_better")
    at_end = args.get("load_best_model_at_end")
    limit = _int(args.get("save_total_limit"))
    if not any(isinstance(v, str | bool) for v in (metric, greater, at_end)) and limit is None:
        return scan
    trainer = scan.trainer or TrainerBest(source="training arguments")
    trainer = replace(trainer, metric_for_best_model=metric if isinstance(metric, str) else None,
                      greater_is_better=greater if isinstance(greater, bool) else None,
                      load_best_model_at_end=at_end if isinstance(at_end, bool) else None, save_total_limit=limit)
    return replace(scan, trainer=trainer)

