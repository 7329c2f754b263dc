"""The code in docs/python-api.md runs as written, from a folder that holds sample_runs/, and says what it shows."""

from __future__ import annotations

import re

import matplotlib
import pytest

from tests.conftest import REPO, SAMPLE_RUNS

DOC = REPO / "docs" / "python-api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    return [m.group(1) for m in BLOCK.finditer(text)]


@pytest.fixture(scope="module")
def namespace(tmp_path_factory) -> dict:
    """The doc's python blocks run in order in one namespace, in a temporary folder linked to sample_runs/."""
    matplotlib.use("Agg")
    folder = tmp_path_factory.mktemp("docs")
    (folder / "sample_runs").symlink_to(SAMPLE_RUNS, target_is_directory=True)
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    ns: dict = {"__name__": "__doc_example__", "__folder__": folder}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        for index, block in enumerate(blocks):
            try:
                exec(compile(block, f"{DOC.name}[block {index}]", "exec"), ns)  # noqa: S102
            except Exception as exc:  # the block's own text in the failure says which one broke
                raise AssertionError(f"block {index} of {DOC.name} failed: {exc!r}\n{block}") from exc
    return ns


def test_blocks_are_extracted_in_order():
    blocks = python_blocks("text\n```python\na = 1\n```\n```bash\nls\n```\n```python\nb = a\n```\n")
    assert blocks == ["a = 1\n", "b = a\n"]


def test_doc_examples_run_and_show_what_the_comments_say(namespace):
    logs, run, gate = namespace["logs"], namespace["run"], namespace["gate"]
    # 20 sample runs (the HF consoles and TensorBoard files, build-nanogpt's log.txt are twins of their runs) and the 36 of the sweep
    assert len(logs.runs) == 20 + 36 and list(namespace["slowed"].runs) == [
        "throughput/baseline", "throughput/control_a", "throughput/control_b", "throughput/slow_loader"]
    assert (run.verdict.label, run.divergence.step) == ("diverged", 552)
    assert "resume from a checkpoint at or before step 444" in run.divergence.restart.text
    assert gate.counts() == {"pass": 5, "warn": 0, "fail": 1, "skip": 4}  # run_status: not known; ranks, communication: one rank, no timers
    mine, wide = namespace["mine"], namespace["wide"]
    assert list(mine.runs) == ["diverged"] and len(mine.scalars) == 2170
    assert wide.scalars.groupby("tag", observed=True).size().to_dict() == {"train/loss": 3, "val/loss": 1}
    assert wide.runs["my-wandb-run"].notes[0].endswith("step = W&B's _step (one per wandb.log call; no training-step key found)")
    assert not namespace["seeds"].passed
    folder = namespace["__folder__"]
    assert (folder / "report.html").stat().st_size == namespace["sizes"]["html"] > 100_000
    assert (folder / "report.json").stat().st_size == namespace["sizes"]["json"]


def test_doc_names_only_public_api():
    import tanalyze

    used = set(re.findall(r"tanalyze\.([A-Za-z_]+)", DOC.read_text(encoding="utf-8")))
    public = set(tanalyze.__all__) | {"report"}  # the report package is documented on its own
    assert used <= public, used - public
