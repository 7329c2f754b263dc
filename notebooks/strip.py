"""Strip outputs, execution counts and run metadata from notebooks, so they are committed clean.

    python notebooks/strip.py              # strip every notebook in this folder, in place
    python notebooks/strip.py --check      # exit 1 and list the notebooks that still hold outputs
    python notebooks/strip.py a.ipynb ...  # only these files

Needs ``nbformat`` (in the ``test`` extra).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
#: Cell metadata that records a run (timings, collapsed/scrolled state), not content.
RUN_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


def strip(notebook: nbformat.NotebookNode) -> bool:
    """Strip ``notebook`` in place; True when anything changed."""
    changed = False
    for cell in notebook.cells:
        for key in RUN_METADATA:
            changed |= cell.metadata.pop(key, None) is not None
        if cell.cell_type != "code":
            continue
        if cell.outputs or cell.execution_count is not None:
            cell.outputs, cell.execution_count = [], None
            changed = True
    for key in ("widgets", "papermill"):
        changed |= notebook.metadata.pop(key, None) is not None
    language = notebook.metadata.get("language_info")
    if language is not None and set(language) != {"name"}:  # the kernel's Python version and lexer: machine noise
        notebook.metadata["language_info"] = {"name": language.get("name", "python")}
        changed = True
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="notebooks (default: every *.ipynb beside this script)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a notebook holds outputs")
    args = parser.parse_args(argv)
    dirty = []
    for path in args.files or sorted(HERE.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        if strip(notebook):
            dirty.append(path)
            if not args.check:
                nbformat.write(notebook, path)
    verb = "holds outputs" if args.check else "stripped"
    for path in dirty:
        print(f"{path}: {verb}")
    return 1 if args.check and dirty else 0


if __name__ == "__main__":
    sys.exit(main())
