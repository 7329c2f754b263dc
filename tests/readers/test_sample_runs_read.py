"""The readers on the bundled sample runs: restarts and truncation where the labels say they are."""

import json

import pytest

import tanalyze
from tests.conftest import SAMPLE_RUNS

LABELS = json.loads((SAMPLE_RUNS / "LABELS.json").read_text())["runs"]


@pytest.fixture(scope="module")
def logs():
    return tanalyze.load(SAMPLE_RUNS)


@pytest.mark.parametrize("run", sorted(k for k, v in LABELS.items() if v.get("restart_step") is not None))
def test_resumed_runs_record_their_restart_step(logs, run):
    label, name = LABELS[run], run
    if label.get("twin_of"):  # read as a twin of another run: its restart shows when it is read alone
        logs = tanalyze.load(SAMPLE_RUNS / run)
        [name] = logs.runs
    info = logs.runs[name]
    assert [r.step for r in info.restarts] == [label["restart_step"]]
    # last write wins: each (tag, step) once
    frame = logs.scalars_of(name)
    loss = frame[frame["tag"] == label["train_loss_tag"]]
    assert not loss["step"].duplicated().any()


@pytest.mark.parametrize("run", sorted(k for k, v in LABELS.items() if v.get("truncated")))
def test_truncated_file_keeps_every_complete_record_and_says_where_it_was_cut(logs, run):
    label = LABELS[run]
    [warning] = logs.runs[run].warnings
    assert "file ends inside a record" in warning.message
    assert warning.file.endswith(label["truncated_file"])  # names the file ...
    assert warning.location == f"byte {label['intact_bytes']:,}"  # ... and where the intact part ends
    assert len(logs.scalars_of(run)) == label["intact_records"] - 1  # every complete record but the file-version header
