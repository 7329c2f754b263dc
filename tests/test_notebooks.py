"""The notebooks run top to bottom on sample_runs/ with no edits, and are committed without outputs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # a notebook kernel / a real browser: `pytest -m "not slow"` skips them

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need the test extra (nbformat, nbclient, ipykernel)")
nbclient = pytest.importorskip("nbclient", reason="the notebook tests need the test extra (nbformat, nbclient, ipykernel)")
pytest.importorskip("ipykernel", reason="the notebook tests need the test extra (nbformat, nbclient, ipykernel)")

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
NAMES = [p.name for p in NOTEBOOKS]


def _kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    # The notebooks import the package of this checkout, whether or not it is installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    return env


@pytest.fixture(scope="module")
def executed() -> dict[str, object]:
    """Every notebook, executed once in a fresh kernel whose working folder is notebooks/."""
    import warnings

    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    out = {}
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        client = nbclient.NotebookClient(
            notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(path.parent)}}
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # jupyter_client/zmq internals, not the notebooks
            client.execute(env=_kernel_env())
        out[path.name] = notebook
    return out


def test_the_three_notebooks_exist():
    assert {"01_quickstart.ipynb", "02_divergence.ipynb", "03_compare_runs.ipynb"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_clean(executed, name):
    """Every cell ran (an error would have stopped execution), wrote nothing to stderr, and showed something."""
    notebook = executed[name]
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    stderr = [o.get("text", "") for c in code for o in c.outputs if o.get("name") == "stderr"]
    assert stderr == [], f"{name} wrote to stderr (warnings?): {stderr}"
    shown = [o for c in code for o in c.outputs]
    assert any("image/png" in o.get("data", {}) for o in shown), f"{name} drew no figure"
    assert any("text/html" in o.get("data", {}) for o in shown), f"{name} displayed no rich result"


@pytest.mark.parametrize("name", NAMES)
def test_committed_without_outputs(name):
    notebook = nbformat.read(REPO / "notebooks" / name, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: run `python notebooks/strip.py`"


def test_strip_script_turns_an_executed_notebook_back_into_the_committed_one(executed, tmp_path):
    name = NAMES[0]
    path = tmp_path / name
    nbformat.write(executed[name], path)
    check = [sys.executable, str(REPO / "notebooks" / "strip.py"), "--check", str(path)]
    dirty = subprocess.run(check, capture_output=True, text=True)
    assert dirty.returncode == 1 and f"{path}: holds outputs" in dirty.stdout
    done = subprocess.run([sys.executable, str(REPO / "notebooks" / "strip.py"), str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert subprocess.run(check, capture_output=True, text=True).returncode == 0
    assert nbformat.read(path, as_version=4) == nbformat.read(REPO / "notebooks" / name, as_version=4)
