"""Scalars in the long shape: tanalyze's own ``parse -o`` CSV read back, tbparse's CSV and TensorBoard's chart
downloads written by the real tools from a real training's event files (``tests/fixtures/tidy/generate.py``)."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from tanalyze import load
from tanalyze.cli import main
from tanalyze.readers import HEAD_BYTES, get_reader
from tests.conftest import REPO, SAMPLE_RUNS
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "tidy"
TRAIN_LOSS = {0: 0.5840332508087158, 1: 0.515280544757843}
VAL_LOSS = {0: 0.5783876180648804, 1: 0.5049096941947937}


def _sorted(frame: pd.DataFrame, prefix: str = "") -> pd.DataFrame:
    columns = ["run", "tag", "step", "value", "wall_time"]
    out = frame[columns].astype({"run": str, "tag": str})
    out["run"] = out["run"].str.removeprefix(prefix)
    return out.sort_values(["run", "tag", "step"]).reset_index(drop=True)


def test_what_tanalyze_parse_writes_reads_back_point_for_point(tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("diverged_nanogpt", "overfit_keras", "normal_add_scalars"):  # NaNs, Keras splits, add_scalars
        shutil.copytree(SAMPLE_RUNS / name, runs / name)
    out = tmp_path / "out" / "scalars.csv"
    out.parent.mkdir()
    assert main(["parse", str(runs), "-o", str(out), "--no-cache"]) == 0
    original = load(runs, cache=False).scalars
    again = load(out.parent, cache=False)
    assert again.runs[next(iter(again.runs))].format == "tidy"
    a, b = _sorted(original), _sorted(again.scalars, "out/")
    assert a[["run", "tag", "step"]].equals(b[["run", "tag", "step"]])
    assert np.array_equal(a["value"], b["value"], equal_nan=True)  # the NaNs written as empty cells included
    assert np.array_equal(a["wall_time"], b["wall_time"], equal_nan=True)


def test_tensorboard_chart_downloads_of_a_keras_layout_are_one_run():
    logs = load(FIXTURES / "downloads", cache=False)
    (name,) = logs.runs
    frame = logs.scalars_of(name)
    check(frame, "train/epoch_loss", TRAIN_LOSS, count=40)
    check(frame, "validation/epoch_loss", VAL_LOSS, count=40)
    check(frame, "validation/epoch_accuracy", {0: 0.9200000166893005}, count=40)
    wall = curve(frame.rename(columns={"value": "v", "wall_time": "value"}), "train/epoch_loss")
    assert wall[0] == 1765000000.25 and wall[39] == 1765000000.25 + 60 * 39
    assert "TensorBoard chart downloads, one tag a file" in notes_text(logs.runs[name])


def test_a_json_download_reads_as_its_csv_twin():
    (json_run,) = get_reader("tidy").read(sorted((FIXTURES / "downloads_json").glob("*.json")))
    csv = pd.read_csv(FIXTURES / "downloads" / "run-validation-tag-epoch_loss.csv")
    assert curve(json_run.scalars, "validation/epoch_loss") == dict(zip(csv["Step"], csv["Value"], strict=True))


def test_tbparse_csv_with_its_index_and_dir_name_joins_the_splits():
    logs = load(FIXTURES / "tbparse", cache=False)
    (name,) = logs.runs
    assert name.endswith("/fit")  # dir_name fit/train and fit/validation: one run, as the event files are
    frame = logs.scalars_of(name)
    check(frame, "train/epoch_loss", TRAIN_LOSS, count=40)
    check(frame, "validation/epoch_loss", VAL_LOSS, count=40)
    assert "its runs by 'dir_name'" in notes_text(logs.runs[name])


def test_a_tidy_csv_with_bad_rows_and_other_columns(tmp_path):
    text = ("run,tag,step,value,note\na,loss,0,1.5,x\na,loss,1,,y\na,loss,1.5,1.0,z\na,loss,2,oops,w\n"
            "b,loss,0,2.5,v\nb,loss,1,inf,u\n")
    path = write(tmp_path / "scalars.csv", text)
    assert get_reader("tidy").sniff(path, path.read_bytes()[:HEAD_BYTES])
    a, b = get_reader("tidy").read([path])
    assert (a.name, b.name) == ("a", "b")
    values = curve(a.scalars, "loss")
    assert values[0] == 1.5 and np.isnan(values[1]) and 2 not in values  # an empty cell is a logged NaN
    assert curve(b.scalars, "loss") == {0: 2.5, 1: np.inf}
    (warning,) = a.warnings
    assert warning.count == 2 and "without a whole-number step or a numeric value" in warning.message
    assert "column(s) not read: note" in notes_text(a)
    numbered = get_reader("tidy").read([write(tmp_path / "ids.csv", "run,tag,step,value\n007,NA,0,1.0\n010,NA,0,2.0\n")])
    assert [(run.name, list(run.scalars["tag"].astype(str))) for run in numbered] == [("007", ["NA"]), ("010", ["NA"])]


@pytest.mark.parametrize("content", [b"step,loss\n0,1.0\n", b"epoch,train_loss,val_loss\n0,1,2\n",
                                     b"[[1, 2], [3, 4]]", b'[{"epoch": 1}]'])
def test_wide_tables_and_other_json_are_not_taken(tmp_path, content):
    path = write(tmp_path / ("a.json" if content.startswith(b"[") else "a.csv"), content)
    assert not get_reader("tidy").sniff(path, content)


def test_a_renamed_download_is_its_folders_run_with_its_stem_as_the_tag(tmp_path):
    source = (FIXTURES / "downloads" / "run-train-tag-epoch_loss.csv").read_bytes()
    write(tmp_path / "exp1" / "train_loss.csv", source)
    logs = load(tmp_path / "exp1", cache=False)
    (name,) = logs.runs
    check(logs.scalars_of(name), "train_loss", TRAIN_LOSS, count=40)
    assert json.dumps(name).count("exp1") == 1
