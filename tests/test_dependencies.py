"""The runtime dependencies in pyproject.toml are what the package imports: nothing it imports is missing
from them (or, for what only an extra needs, from that extra), and nothing in them goes unimported."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tanalyze"


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def runtime_dependencies() -> set[str]:
    return {normal(Requirement(text).name) for text in project()["dependencies"]}


def extra_dependencies() -> set[str]:
    """Distributions the extras install: each requirement's, and those its own extras bring (dask[distributed])."""
    out = set()
    for texts in project()["optional-dependencies"].values():
        for text in texts:
            requirement = Requirement(text)
            out.add(normal(requirement.name))
            for extra in requirement.extras:
                for sub in importlib.metadata.requires(requirement.name) or []:
                    sub_requirement = Requirement(sub)
                    if sub_requirement.marker and sub_requirement.marker.evaluate({"extra": extra}):
                        out.add(normal(sub_requirement.name))
    return out


def third_party_imports() -> dict[str, dict[str, bool]]:
    """Top-level module -> {file: imported when the module is (not only inside a function)}."""
    found: dict[str, dict[str, bool]] = {}

    def visit(node: ast.AST, path: str, at_import: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            else:
                inside = at_import and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                visit(child, path, inside)
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "tanalyze":
                    files = found.setdefault(top, {})
                    files[path] = files.get(path, False) or at_import

    for path in sorted(PACKAGE.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(REPO)), True)
    return found


@cache
def installed() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions(module: str) -> set[str]:
    return {normal(name) for name in installed().get(module, [])}


def test_every_import_is_a_declared_dependency():
    runtime, extras = runtime_dependencies(), extra_dependencies()
    for module, files in third_party_imports().items():
        dists = distributions(module)
        assert dists, f"{module} (imported by {sorted(files)}) is not installed here"
        if dists & runtime:
            continue
        assert dists & extras, f"{module} is imported by {sorted(files)} but is in no dependency list"
        at_import = sorted(path for path, eager in files.items() if eager)
        assert not at_import, f"{module} is only an extra's, yet imported when these modules are: {at_import}"


def test_every_runtime_dependency_is_imported():
    imported = set().union(*(distributions(module) for module in third_party_imports()))
    unused = runtime_dependencies() - imported
    assert not unused, f"runtime dependencies the package never imports: {sorted(unused)}"


def test_the_test_oracle_is_not_a_runtime_dependency():
    """tbparse and tensorboard are what the tests compare with and write fixtures with, not what the package reads with.
    (scikit-learn is a runtime dependency: the sweep analysis fits its random forests.)"""
    assert not {"tbparse", "tensorboard"} & runtime_dependencies()
    assert {"tbparse", "tensorboard"} <= {normal(Requirement(text).name) for text in project()["optional-dependencies"]["test"]}
