"""A run's hyperparameters as one flat mapping, from what its logs hold and from its folder names.

Every reader keeps the configuration it found in ``RunInfo.hparams`` in the shape of its source: TensorBoard's
hparams plugin (flat, numbers as floats), Lightning's ``hparams.yaml`` and W&B's ``config.yaml`` (nested, W&B with
``{desc, value}`` wrappers and its ``_wandb`` internals, plus ``_summary``: results, not settings), HF's
``trainer_state.json``/``TrainingArguments`` (with result keys such as ``best_metric`` beside the settings, and
``trial_params`` from a hyperparameter search), MLflow's ``params`` (strings parsed) and ``tag.*`` (labels).
:func:`normalise_hparams` turns any of them into ``{dotted.key: number | str | bool}`` and drops what is not a
setting. :func:`folder_hparams` reads settings from run names such as ``lr=3e-4/seed_2``, ``lr0.001_bs64`` or
``lr_1e-3-wd_0.1``. :func:`is_seed_key` tells seeds apart: they repeat a configuration, they never are one.

Pure string and mapping work: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["HparamValue", "normalise_hparams", "folder_hparams", "is_seed_key", "parse_scalar", "canonical_key"]

#: A setting's value after normalisation.
HparamValue = float | str | bool

#: Top-level keys that hold results or bookkeeping, never settings (W&B, HF, MLflow, tanalyze readers).
_NOT_SETTINGS = frozenset({
    "_wandb", "_summary", "summary", "wandb_version", "all_results", "train_results", "eval_results",
    "best_metric", "best_model_checkpoint", "best_global_step", "global_step", "epoch", "total_flos",
    "log_history", "stateful_callbacks", "is_local_process_zero", "is_world_process_zero", "trial_name",
    "last_checkpoint", "peak_memory_allocated_mib", "peak_memory_reserved_mib",
})
#: Keys naming where things go or who ran them: they differ per run and set nothing.
_IDENTIFIERS = re.compile(
    r"(^|[._])(output_dir|logging_dir|log_dir|logdir|run_name|run_id|name|id|dir|path|save_dir|hub_model_id|"
    r"exp_name|experiment_name|project|entity|group|job_type|notes|tags|host|hostname|timestamp|date|time|"
    r"resume_from_checkpoint|checkpoint_path|ckpt_path|data_path|data_dir|cache_dir)$",
    re.IGNORECASE,
)
_SEED_KEY = re.compile(r"(^|[._-])(seed|seeds|random_state|random_seed|rng|rng_seed|data_seed|init_seed)($|[._-])"
                       r"|seed$", re.IGNORECASE)
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER_RE = re.compile(rf"^{_NUMBER}$")
#: ``key=value``, ``key_value``, ``key-value`` or ``keyvalue`` where value is a number (in run-name parts).
_FOLDER_PAIR = re.compile(rf"(?<![A-Za-z0-9.])([A-Za-z][A-Za-z_]*?)[=:_-]?({_NUMBER})(?![A-Za-z0-9.])")
#: Parts of run names that are ids, not settings: W&B run folders, a display name's ``(run id)``.
_ID_PARTS = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-\w+$|\([^)]*\)")
#: Words in run names followed by numbers that count runs, not settings (``version_3``, ``run-20240101``).
_INDEX_WORDS = frozenset({
    "version", "v", "run", "runs", "trial", "exp", "experiment", "job", "id", "idx", "index", "rank", "checkpoint",
    "ckpt", "epoch", "step", "iter", "offline_run", "part", "fold", "worker", "node", "gpu", "day", "date", "time",
})


def canonical_key(key: str) -> str:
    """A key as compared across sources: lower case, separators unified (``Learning-Rate`` → ``learning_rate``)."""
    return re.sub(r"[\s\-]+", "_", key.strip()).lower()


def is_seed_key(key: str) -> bool:
    """Whether a setting is a seed (``seed``, ``data_seed``, ``random_state``, ``rng``…): seeds repeat a
    configuration, they never are one. (``s1``-style names are decided by :func:`folder_hparams`' caller.)"""
    return bool(_SEED_KEY.search(key))


def parse_scalar(value: Any) -> HparamValue | None:
    """A setting's value as a number, bool or short string; None when it is not a scalar setting."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else str(number)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return parse_scalar(value.item())
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER_RE.match(text):
            return float(text)
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        if text.lower() in ("none", "null", ""):
            return "None"
        return text if len(text) <= 200 else None
    if value is None:
        return "None"
    return None


def _unwrap(value: Any) -> Any:
    """W&B's ``{"desc": …, "value": v}`` wrapper as ``v``."""
    if isinstance(value, Mapping) and "value" in value and set(value) <= {"value", "desc"}:
        return value["value"]
    return value


def _flatten(value: Any, prefix: str, out: dict[str, Any], depth: int) -> None:
    value = _unwrap(value)
    if isinstance(value, Mapping) and depth < 6:
        for key, inner in value.items():
            _flatten(inner, f"{prefix}{key}.", out, depth + 1)
        return
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, int | float | str | bool) for v in value) and len(value) <= 16:
            out[prefix[:-1]] = ",".join(str(v) for v in value)  # a short list (layer widths) is one setting
        return
    out[prefix[:-1]] = value


def normalise_hparams(hparams: Mapping[str, Any]) -> dict[str, HparamValue]:
    """A reader's ``RunInfo.hparams`` as flat ``{dotted.key: value}`` settings (see the module doc).

    Dropped: W&B internals and summaries, HF result keys, MLflow ``tag.*`` labels, identifiers and paths,
    values that are not scalars. HF search trials (``trial_params.lr``) keep their own names (``lr``).
    """
    flat: dict[str, Any] = {}
    for key, value in hparams.items():
        key = str(key)
        if key in _NOT_SETTINGS or key.startswith("tag.") or key.startswith("_"):
            continue
        if key == "trial_params" and isinstance(value, Mapping):
            _flatten(value, "", flat, 0)
            continue
        _flatten(value, f"{key}.", flat, 0)
    out: dict[str, HparamValue] = {}
    for key, value in flat.items():
        if not key or _IDENTIFIERS.search(key):
            continue
        parsed = parse_scalar(value)
        if parsed is not None:
            out[key] = parsed
    return out


def folder_hparams(name: str) -> dict[str, float]:
    """Settings written into a run's name or folders: ``"sweep/lr=3e-4/seed_2"`` → ``{"lr": 3e-4, "seed": 2}``.

    Each part of the path is read for ``key=value``, ``key_value``, ``key-value`` and ``keyvalue`` pairs whose
    value is a number (``lr0.001_bs64``, ``lr_1e-3-wd_0.1``). Words that count runs (``version_3``, ``run-12``,
    ``trial_7``) are not settings. A key met twice keeps its last (innermost) value.
    """
    out: dict[str, float] = {}
    for part in name.replace("\\", "/").split("/"):
        part = _ID_PARTS.sub(" ", part)
        for match in _FOLDER_PAIR.finditer(part):
            key, text = match.group(1).rstrip("_"), match.group(2)
            if not key or key.lower() in _INDEX_WORDS:
                continue
            if "_" in key and not key.startswith("_"):
                # "run_lr0.1": a word glued before a setting; keep known multi-word names whole (weight_decay)
                head, _, tail = key.rpartition("_")
                if head.lower() in _INDEX_WORDS:
                    key = tail
            try:
                value = float(text)
            except ValueError:
                continue
            if math.isfinite(value):
                out[key] = value
    return out
