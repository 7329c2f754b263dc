"""Which runs belong together: repeats of one configuration that differ only by seed.

Two runs are seeds of one experiment when their names differ only by a seed
suffix (``-s1``, ``_seed2``, ``/seed=3``) or when their hyper-parameters are
equal except for keys named like ``seed``. Such groups are drawn as a median
with a min–max band, because one seed alone says little about a configuration.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SeedGroup", "seed_groups", "seed_base", "is_seed_key"]

_SEED_SUFFIX = re.compile(r"(?:[-_.](?:seed|s)|(?:^|/)seed)[-_=]?(\d+)$", re.IGNORECASE)
_SEED_KEY = re.compile(r"seed", re.IGNORECASE)


@dataclass(frozen=True)
class SeedGroup:
    """Runs (by their index in the report) that repeat one configuration with different seeds."""

    label: str
    runs: tuple[int, ...]
    reason: str  # "name" or "hparams"


def seed_base(name: str) -> str | None:
    """The run name without its seed suffix, or None when it has none (``"exp-lr3_seed2"`` → ``"exp-lr3"``)."""
    match = _SEED_SUFFIX.search(name)
    if match is None:
        return None
    base = name[: match.start()].rstrip("/")
    return base or None


def is_seed_key(key: str) -> bool:
    return bool(_SEED_KEY.search(key))


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: value}


def _config_key(hparams: Mapping[str, Any] | None) -> str | None:
    """The hyper-parameters without seed keys, as a comparable string (None when there is no seed key)."""
    if not hparams:
        return None
    flat = _flatten(hparams)
    if not any(is_seed_key(k) for k in flat):
        return None
    rest = {k: v for k, v in flat.items() if not is_seed_key(k)}
    if not rest:
        return None
    return json.dumps(rest, sort_keys=True, default=str)


def seed_groups(runs: Sequence[Any]) -> list[SeedGroup]:
    """Groups of at least two runs that differ only by seed, in report order.

    ``runs`` are :class:`~tanalyze.report.model.RunView` (anything with
    ``index``, ``name`` and ``info.hparams``).
    """
    parent = {run.index: run.index for run in runs}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    reason: dict[int, str] = {}
    by_key: dict[tuple[str, str], int] = {}
    for run in runs:
        hparams = run.info.hparams if run.info is not None else None
        keys = []
        base = seed_base(run.name)
        if base is not None:
            keys.append(("name", base))
        config = _config_key(hparams)
        if config is not None:
            keys.append(("hparams", config))
        for key in keys:
            if key in by_key:
                root_a, root_b = find(by_key[key]), find(run.index)
                if root_a != root_b:
                    parent[root_b] = root_a
                    reason.setdefault(root_a, key[0])
            else:
                by_key[key] = run.index
    members: dict[int, list[int]] = {}
    for run in runs:
        members.setdefault(find(run.index), []).append(run.index)
    names = {run.index: run.name for run in runs}
    groups = []
    for root, indices in members.items():
        if len(indices) < 2:
            continue
        why = reason.get(root, "name")
        bases = {seed_base(names[i]) for i in indices}
        if why == "name" or (len(bases) == 1 and None not in bases):
            label = seed_base(names[indices[0]]) or names[indices[0]]
        else:
            label = _common_prefix([names[i] for i in indices]) or f"{names[indices[0]]} and {len(indices) - 1} more"
        groups.append(SeedGroup(label=label, runs=tuple(indices), reason=why))
    groups.sort(key=lambda g: g.runs[0])
    return groups


def _common_prefix(names: list[str]) -> str:
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return prefix.rstrip("-_./ ")
