"""Readers are grouped by family; a family's private modules (``_name``) are used only inside it."""

from __future__ import annotations

import ast
from pathlib import Path

import tanalyze.readers

READERS = Path(tanalyze.readers.__file__).parent
FAMILIES = ("tensorboard", "wandb", "mlflow", "tabular", "text")


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["tanalyze", "readers"] and parts[2] in FAMILIES else None


def test_every_format_module_lives_in_a_family():
    loose = sorted(p.name for p in READERS.glob("*.py"))
    assert loose == ["__init__.py", "base.py", "phases.py", "values.py"]
    for family in FAMILIES:
        assert (READERS / family / "__init__.py").is_file()


def test_no_private_module_is_imported_from_outside_its_family():
    package_root = READERS.parent.parent
    crossings = []
    for path in sorted(package_root.joinpath("tanalyze").rglob("*.py")):
        module = ".".join(path.relative_to(package_root).with_suffix("").parts)
        own_family = _family(module + ".x")
        for imported in _imported_modules(path):
            family = _family(imported)
            private = any(part.startswith("_") and part != "__init__" for part in imported.split(".")[3:4])
            if family and private and family != own_family:
                crossings.append(f"{module} imports {imported}")
    assert crossings == []


def test_the_registry_names_only_modules_inside_families():
    for entry in tanalyze.readers.READERS:
        module = entry.partition(":")[0]
        assert _family(module) is not None, entry
