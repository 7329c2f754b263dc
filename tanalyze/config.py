"""User configuration: ``tanalyze.toml`` or ``[tool.tanalyze]`` in ``pyproject.toml``.

Only known keys are accepted, so a typo is an error that names the key rather
than a setting silently ignored::

    [tool.tanalyze.roles]          # or [roles] in tanalyze.toml
    val_loss = "eval/loss"

    [tool.tanalyze.check]          # or [check]
    warn_only = ["gradient_health"]
    disable = ["loss_progress"]

    [tool.tanalyze.check.throughput]
    min_change = 0.15

    [tool.tanalyze.runs]           # or [runs]
    join = false                   # one run per folder and format (see tanalyze.identity)
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tanalyze.errors import ConfigError

__all__ = ["Config", "load_config", "find_config", "join_runs_setting"]

CONFIG_NAMES = ("tanalyze.toml", "pyproject.toml")
TOP_LEVEL_KEYS = {"roles", "check", "patterns", "runs"}
RUNS_KEYS = {"join"}


@dataclass(frozen=True)
class Config:
    """The parsed ``[tool.tanalyze]`` table (or a whole ``tanalyze.toml``), and where it came from."""

    source: str | None = None
    roles: dict[str, str] = field(default_factory=dict)
    check: dict[str, Any] = field(default_factory=dict)
    patterns: Any = None
    runs: dict[str, Any] = field(default_factory=dict)


def find_config(start: str | Path | None = None, *, upwards: bool = False) -> Path | None:
    """``tanalyze.toml`` in ``start`` (default: the current folder), else a ``pyproject.toml`` there
    that has a ``[tool.tanalyze]`` table; with ``upwards``, the nearest such file in ``start`` or
    any folder above it (for settings that travel with a folder of logs)."""
    folder = Path(start) if start is not None else Path.cwd()
    if folder.is_file():
        folder = folder.parent
    folders = (folder, *folder.resolve().parents) if upwards else (folder,)
    for directory in folders:
        candidate = directory / "tanalyze.toml"
        if candidate.is_file():
            return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
                continue
            if "tanalyze" in data.get("tool", {}):
                return pyproject
    return None


def load_config(path: str | Path | None = None, *, search: bool = True) -> Config:
    """Read the config at ``path``; without a path, the one :func:`find_config` finds (or defaults)."""
    if path is None:
        found = find_config() if search else None
        if found is None:
            return Config()
        path = found
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("tanalyze", {})
        prefix = "tool.tanalyze."
    else:
        table = data.get("tool", {}).get("tanalyze", data)
        prefix = ""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{prefix.rstrip('.') or 'tanalyze'}] must be a table")
    unknown = set(table) - TOP_LEVEL_KEYS
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) {', '.join(prefix + k for k in sorted(unknown))}; "
            f"known: {', '.join(prefix + k for k in sorted(TOP_LEVEL_KEYS))}"
        )
    roles = table.get("roles", {})
    if not isinstance(roles, dict) or not all(isinstance(v, str) for v in roles.values()):
        raise ConfigError(f"{path}: [{prefix}roles] must map role names to tag names (strings)")
    check = table.get("check", {})
    if not isinstance(check, dict):
        raise ConfigError(f"{path}: [{prefix}check] must be a table")
    runs = table.get("runs", {})
    if not isinstance(runs, dict):
        raise ConfigError(f"{path}: [{prefix}runs] must be a table")
    unknown = set(runs) - RUNS_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(f'{prefix}runs.{k}' for k in sorted(unknown))}; "
                          f"known: {', '.join(f'{prefix}runs.{k}' for k in sorted(RUNS_KEYS))}")
    if "join" in runs and not isinstance(runs["join"], bool):
        raise ConfigError(f"{path}: {prefix}runs.join must be true or false")
    return Config(source=str(path), roles=dict(roles), check=dict(check), patterns=table.get("patterns"),
                  runs=dict(runs))


def join_runs_setting(start: str | Path) -> bool:
    """``[runs] join`` of the nearest config at or above ``start`` (default true: join what one job wrote)."""
    path = find_config(Path(start).resolve(), upwards=True)
    if path is None:
        return True
    return bool(load_config(path).runs.get("join", True))
