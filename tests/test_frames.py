"""tanalyze.from_frame: a DataFrame the user already has, as Logs.

The long frames come from tbparse itself (on the bundled sample runs and on real event files), and
their points must be exactly those tanalyze.load reads from the same files. The W&B frame is the real
history of the bundled W&B run; the MLflow frame is the metric history of a real MLflow file store.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tbparse import SummaryReader

import tanalyze
from tanalyze import InputError
from tanalyze.readers.wandb._records import read_wandb_file
from tests.conftest import SAMPLE_RUNS, real_log

TENSORBOARD_RUNS = ["normal_tensorboard", "resumed_tensorboard", "diverged_tensorboard", "truncated_tensorboard",
                    "underfit_tensorboardx"]
POINT = ["tag", "step", "value", "wall_time"]


def points(logs: tanalyze.Logs, run: str | None = None) -> pd.DataFrame:
    """A run's points as plain columns, sorted (row order is not part of the promise)."""
    frame = logs.scalars if run is None else logs.scalars[logs.scalars["run"] == run]
    out = frame[POINT].astype({"tag": str}).sort_values(["tag", "step"], kind="stable")
    return out.reset_index(drop=True)


def loaded_last(path: Path) -> pd.DataFrame:
    """tanalyze.load's points of a one-run folder, a repeated (tag, step) reduced to its last write."""
    logs = tanalyze.load(path, cache=False)
    assert len(logs.runs) == 1
    frame = logs.scalars.drop_duplicates(["tag", "step"], keep="last")
    return points(tanalyze.Logs(frame, logs.histograms, logs.runs))


# --- tbparse ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", TENSORBOARD_RUNS)
def test_tbparse_scalars_with_dir_name_and_wall_time_equal_load(name):
    frame = SummaryReader(str(SAMPLE_RUNS / name), extra_columns={"dir_name", "wall_time"}).scalars
    logs = tanalyze.from_frame(frame, run=name)
    assert list(logs.runs) == [name] and logs.runs[name].format == "frame:tbparse"
    pd.testing.assert_frame_equal(points(logs), loaded_last(SAMPLE_RUNS / name))
    assert logs.scalars["step"].dtype == np.int64 and isinstance(logs.scalars["tag"].dtype, pd.CategoricalDtype)


def test_plain_tbparse_scalars_have_no_wall_time_and_the_default_run_name():
    frame = SummaryReader(str(SAMPLE_RUNS / "normal_tensorboard")).scalars
    assert list(frame.columns) == ["step", "tag", "value"]
    logs = tanalyze.from_frame(frame)
    assert list(logs.runs) == ["frame"] and len(logs.scalars) == 2480
    expected = loaded_last(SAMPLE_RUNS / "normal_tensorboard")
    pd.testing.assert_frame_equal(points(logs)[["tag", "step", "value"]], expected[["tag", "step", "value"]])
    assert logs.scalars["wall_time"].isna().all()


def test_resumed_run_keeps_the_later_write_and_says_how_many_rows_it_replaced():
    frame = SummaryReader(str(SAMPLE_RUNS / "resumed_tensorboard"), extra_columns={"wall_time"}).scalars
    assert len(frame) == 1860
    logs = tanalyze.from_frame(frame)
    assert len(logs.scalars) == 1550
    assert logs.runs["frame"].notes == (
        "310 row(s) gave a (tag, step) that a later row gives again; the last row of each was kept",)
    loss = logs.scalars[(logs.scalars["tag"] == "train/loss") & (logs.scalars["step"] == 201)]
    assert loss["value"].tolist() == [pytest.approx(0.307367, abs=1e-6)]  # the second file's value


def test_tbparse_dir_names_are_runs_and_the_root_takes_run():
    frame = SummaryReader(str(SAMPLE_RUNS / "throughput"), extra_columns={"dir_name", "wall_time"}).scalars
    logs = tanalyze.from_frame(frame)
    assert sorted(logs.runs) == ["baseline", "control_a", "control_b", "slow_loader"]
    for name in logs.runs:
        pd.testing.assert_frame_equal(points(logs, name), loaded_last(SAMPLE_RUNS / "throughput" / name))

    nested = SummaryReader(str(SAMPLE_RUNS / "normal_add_scalars"), extra_columns={"dir_name"}).scalars
    logs = tanalyze.from_frame(nested, run="add_scalars")
    assert list(logs.runs) == ["add_scalars", "Loss_train", "Loss_val"]
    counts = nested.assign(dir_name=nested["dir_name"].replace("", "add_scalars")).groupby("dir_name").size()
    assert logs.summary().set_index("run")["points"].to_dict() == counts.to_dict()


@pytest.mark.real_logs
def test_tbparse_on_a_real_detectron2_event_file_equals_load():
    folder = real_log("tfevents/Kevindic0214__detectron2_training/output")
    frame = SummaryReader(str(folder), extra_columns={"dir_name", "wall_time"}).scalars
    logs = tanalyze.from_frame(frame, run="detectron2")
    assert len(logs.scalars) == 315 and logs.scalars["tag"].nunique() == 21
    pd.testing.assert_frame_equal(points(logs), loaded_last(folder))
    assert logs.runs["detectron2"].warnings == ()


@pytest.mark.real_logs
def test_tbparse_tensors_of_a_real_tf2_run_keep_scalars_and_count_images():
    folder = real_log("tfevents/Harry0415__TensorFlow-Object-Detection-API-implement/workspace/training_demo/"
                      "models/my_ssd_resnet50_v1_fpn/train")
    frame = SummaryReader(str(folder), extra_columns={"wall_time"}).tensors  # TF2 writes scalars as tensors
    logs = tanalyze.from_frame(frame)
    pd.testing.assert_frame_equal(points(logs), loaded_last(folder))
    (warning,) = logs.runs["frame"].warnings
    assert warning.message == "52 value(s) that are not numbers left out: train_input_images (52)"
    assert warning.count == 52 and len(logs.scalars) + 52 == len(frame)


# --- tanalyze's own tidy table -----------------------------------------------------------------------------

def test_the_tidy_table_comes_back_with_its_runs_and_optional_columns():
    loaded = tanalyze.load(SAMPLE_RUNS, cache=False)
    logs = tanalyze.from_frame(loaded.scalars)
    assert list(logs.runs) == list(loaded.runs) and logs.runs["normal_hf"].format == "frame:tidy"
    expected = loaded.scalars.drop_duplicates(["run", "tag", "step"], keep="last").reset_index(drop=True)
    pd.testing.assert_frame_equal(logs.scalars.astype({"run": str, "tag": str, "source": str}),
                                  expected.astype({"run": str, "tag": str, "source": str}))
    replaced = {name: info.notes for name, info in logs.runs.items() if info.notes}
    assert len(loaded.scalars) == len(expected) and replaced == {}  # load already kept the last write of each


def test_long_frame_keeps_nan_values_and_counts_rows_without_a_step_or_a_number():
    frame = pd.DataFrame({
        "tag": ["loss", "loss", "loss", "loss", None, "loss"],
        "step": [1, 2, None, 4, 5, 6],
        "value": [1.0, float("nan"), 3.0, "oops", 5.0, "0.5"],
    })
    logs = tanalyze.from_frame(frame)
    got = points(logs)
    assert got["step"].tolist() == [1, 2, 6] and got["value"].iloc[0] == 1.0 and math.isnan(got["value"].iloc[1])
    assert got["value"].iloc[2] == 0.5
    assert [(w.message, w.count) for w in logs.runs["frame"].warnings] == [
        ("1 row(s) have no step (empty or not a number); left out", 1),
        ("1 row(s) have no tag; left out", 1),
        ("1 value(s) that are not numbers left out: loss (1)", 1),
    ]


def test_columns_a_long_frame_does_not_use_are_named_unless_empty():
    frame = pd.DataFrame({"tag": ["a"], "step": [0], "value": [1.0], "file_name": ["x.tfevents"], "unused": [None]})
    logs = tanalyze.from_frame(frame)
    assert logs.runs["frame"].notes == ("column(s) not used: ['file_name']",)


# --- W&B history -------------------------------------------------------------------------------------------

def wandb_history() -> pd.DataFrame:
    """The bundled W&B run's history rows as a frame: what run.history() holds for it (all rows)."""
    (path,) = (SAMPLE_RUNS / "overfit_wandb").rglob("*.wandb")
    rows: list[dict] = []
    read_wandb_file(path, on_history=rows.append)
    return pd.DataFrame(rows)


def test_a_wandb_history_equals_load_of_the_run_and_gets_its_verdict():
    frame = wandb_history()
    assert {"_step", "_runtime", "_timestamp", "train/loss", "val/loss"} <= set(frame.columns)
    assert frame["val/loss"].isna().sum() > 0  # validation is logged every few rows only
    logs = tanalyze.from_frame(frame, run="overfit")
    loaded = tanalyze.load(SAMPLE_RUNS / "overfit_wandb", cache=False)
    # the run folder also holds W&B's system metrics (system/*, from the stats records): not history rows
    loaded_points = points(loaded)
    system = loaded_points["tag"].str.startswith("system/")
    assert set(loaded_points.loc[system, "tag"]) >= {"system/cpu", "system/memory_percent"}
    pd.testing.assert_frame_equal(points(logs), loaded_points[~system].reset_index(drop=True))
    info = logs.runs["overfit"]
    assert info.format == "frame:wandb" and info.notes == (
        "DataFrame: step = W&B's _step (one per wandb.log call; no training-step key found)",
        "W&B's own column(s) not kept as metrics: ['_runtime']")
    ours, theirs = tanalyze.diagnose(logs)["overfit"], next(iter(tanalyze.diagnose(loaded).values()))
    assert ours.verdict.label == theirs.verdict.label == "overfitting"
    assert ours.key_steps() == theirs.key_steps()


def lightning_history(n: int = 6) -> pd.DataFrame:
    """run.history() of a Lightning run: train and val rows apart, trainer/global_step in each, an image column."""
    rows = []
    for i in range(n):
        rows.append({"_step": 2 * i, "_runtime": 10.0 * i, "_timestamp": 1.7e9 + 10 * i,
                     "trainer/global_step": 100 * i, "train/loss": 5.0 - i, "val/loss": np.nan,
                     "samples": {"_type": "image-file", "path": f"media/{i}.png"} if i % 2 else None})
        rows.append({"_step": 2 * i + 1, "_runtime": 10.0 * i + 1, "_timestamp": 1.7e9 + 10 * i + 1,
                     "trainer/global_step": 100 * i, "train/loss": np.nan, "val/loss": 6.0 - i, "samples": None})
    return pd.DataFrame(rows)


def test_a_wandb_history_uses_the_training_step_and_lists_what_it_does_not_keep():
    logs = tanalyze.from_frame(lightning_history())
    got = points(logs)
    assert got[got["tag"] == "val/loss"][["step", "value", "wall_time"]].values.tolist() == [
        [100 * i, 6.0 - i, 1.7e9 + 10 * i + 1] for i in range(6)]
    assert set(got["tag"]) == {"train/loss", "val/loss"}
    notes = logs.runs["frame"].notes
    assert notes[0] == "DataFrame: step = logged 'trainer/global_step' (logged in the rows); W&B's _step counter is not used"
    assert "column(s) with no numbers, not kept: samples (3 value(s), e.g. '{'_type': 'image-file', 'path': 'media/1…[6 more chars]')" in notes
    assert "W&B's own column(s) not kept as metrics: ['_step', '_runtime']" in notes
    assert logs.runs["frame"].warnings == ()


def test_a_sampled_wandb_history_says_so_and_step_can_be_chosen():
    frame = pd.DataFrame({"_step": range(500), "_timestamp": 1.7e9 + np.arange(500), "epoch": np.arange(500) // 100,
                          "loss": np.linspace(2, 1, 500)})
    logs = tanalyze.from_frame(frame)
    assert any(n.startswith("exactly 500 rows: run.history() returns a sample") for n in logs.runs["frame"].notes)
    assert logs.scalars["step"].max() == 499  # _step: 'epoch' repeats too often to be the step
    by_epoch = tanalyze.from_frame(frame, step="epoch")
    assert sorted(set(by_epoch.scalars["step"])) == [0, 1, 2, 3, 4]
    assert by_epoch.scalars[by_epoch.scalars["tag"] == "loss"]["value"].iloc[-1] == 1.0  # the last write of epoch 4


# --- any wide frame ----------------------------------------------------------------------------------------

def test_a_wide_frame_with_an_epoch_column():
    frame = pd.DataFrame({
        "epoch": [0, 1, 2, None, 3],
        "train_loss": [2.0, 1.5, 1.2, 9.9, 1.0],
        "val_loss": [2.1, np.nan, 1.4, np.nan, 1.6],
        "phase": ["a", "b", "c", "d", "e"],
        "when": pd.to_datetime(["2024-01-01"] * 5),
        "wall_time": [10.0, 20.0, 30.0, 40.0, 50.0],
    })
    logs = tanalyze.from_frame(frame, run="mine")
    got = points(logs)
    assert got[got["tag"] == "train_loss"][["step", "value", "wall_time"]].values.tolist() == [
        [0, 2.0, 10.0], [1, 1.5, 20.0], [2, 1.2, 30.0], [3, 1.0, 50.0]]
    assert got[got["tag"] == "val_loss"]["step"].tolist() == [0, 2, 3]  # NaN: not logged at that row
    info = logs.runs["mine"]
    assert info.format == "frame:wide" and info.notes == (
        "step = column 'epoch'",
        "column(s) with no numbers, not kept: phase (5 value(s), e.g. 'a'), when (5 value(s), e.g. '2024-01-01 00:00:00')")
    assert [(w.message, w.count) for w in info.warnings] == [
        ("1 value(s) in 1 row(s) without a step ('epoch' empty or not a number); left out", 1)]


def test_a_wide_frame_indexed_by_step_with_a_run_column():
    frame = pd.DataFrame({"step": [0, 1, 0, 1], "run": ["a", "a", "b", "b"], "loss": [1.0, 0.5, 2.0, 1.5]})
    logs = tanalyze.from_frame(frame.set_index("step"))
    assert list(logs.runs) == ["a", "b"]
    assert points(logs, "b")[["step", "value"]].values.tolist() == [[0, 2.0], [1, 1.5]]


def test_a_pivot_of_the_tidy_table_comes_back():
    loaded = tanalyze.load(SAMPLE_RUNS / "normal_tensorboard", cache=False)
    wide = loaded.scalars.pivot_table(index="step", columns="tag", values="value", aggfunc="last", observed=True)
    logs = tanalyze.from_frame(wide)  # the step is the index
    pd.testing.assert_frame_equal(points(logs)[["tag", "step", "value"]],
                                  points(loaded)[["tag", "step", "value"]])


# --- MLflow ------------------------------------------------------------------------------------------------

MLFLOW_STORE = "mlflow_mlruns/VladimirMCorteza__Pytorch-MLflow-Tensorboard/mlruns/0"
MLFLOW_RUN = "90f02488153247d0a9ba9de8a2821635"


def mlflow_history(run_folder: Path) -> pd.DataFrame:
    """MlflowClient().get_metric_history(run, key) for every key of a file-store run, as the frame
    ``pd.DataFrame([m.to_dictionary() for m in history])`` (MLflow 3 adds model and dataset fields).
    The file store keeps each metric as lines ``timestamp value step`` in ``metrics/<key>``."""
    frames = []
    for path in sorted((run_folder / "metrics").iterdir()):
        lines = pd.read_csv(path, sep=" ", names=["timestamp", "value", "step"])
        frames.append(lines.assign(key=path.name, model_id=None, dataset_name=None, dataset_digest=None,
                                   run_id=run_folder.name))
    frame = pd.concat(frames, ignore_index=True)
    return frame[["key", "value", "timestamp", "step", "model_id", "dataset_name", "dataset_digest", "run_id"]]


@pytest.mark.real_logs
def test_an_mlflow_metric_history_matches_the_event_file_the_same_run_wrote():
    run_folder = real_log(f"{MLFLOW_STORE}/{MLFLOW_RUN}")
    frame = mlflow_history(run_folder)
    logs = tanalyze.from_frame(frame)
    assert list(logs.runs) == [MLFLOW_RUN] and logs.runs[MLFLOW_RUN].format == "frame:mlflow"
    assert logs.runs[MLFLOW_RUN].notes == ()  # the model/dataset fields are empty: nothing unsaid
    train = points(logs).query("tag == 'train_loss'")
    # the script logged train_loss to MLflow and to TensorBoard; the run2 event file is this run's
    events = tanalyze.load(run_folder / "artifacts" / "events" / "run2", cache=False)
    board = points(events).query("tag == 'train_loss'")
    assert len(train) == 50 and train["step"].tolist() == board["step"].tolist()
    assert train["value"].tolist() == board["value"].tolist()
    assert np.abs(train["wall_time"].to_numpy() - board["wall_time"].to_numpy()).max() < 1.0  # ms → s
    first = frame.iloc[0]
    assert logs.scalars["wall_time"].iloc[0] == first["timestamp"] / 1000


@pytest.mark.real_logs
def test_mlflow_histories_of_several_runs_are_one_run_each():
    store = real_log(MLFLOW_STORE)
    folders = sorted(p for p in store.iterdir() if (p / "metrics").is_dir())
    assert len(folders) == 3
    frame = pd.concat([mlflow_history(folder) for folder in folders], ignore_index=True)
    logs = tanalyze.from_frame(frame)
    assert sorted(logs.runs) == [p.name for p in folders]
    assert logs.summary().set_index("run")["points"].to_dict() == frame.groupby("run_id").size().to_dict()


# --- the rest of the toolkit on a frame ----------------------------------------------------------------------

def test_diagnose_gives_the_loaded_verdict_on_a_tbparse_frame():
    name = "diverged_tensorboard"
    frame = SummaryReader(str(SAMPLE_RUNS / name), extra_columns={"wall_time"}).scalars
    ours = tanalyze.diagnose(tanalyze.from_frame(frame, run=name))[name]
    theirs = tanalyze.diagnose(tanalyze.load(SAMPLE_RUNS / name, cache=False))[name]
    assert (ours.verdict.label, ours.divergence.step) == (theirs.verdict.label, theirs.divergence.step) == (
        "diverged", 552)


def test_check_and_report_accept_a_frame(tmp_path):
    frame = SummaryReader(str(SAMPLE_RUNS / "throughput"), extra_columns={"dir_name", "wall_time"}).scalars
    logs = tanalyze.from_frame(frame)
    report = tanalyze.check(logs.select("slow_loader"), baseline=logs.select(["baseline", "control_*"]))
    loaded = tanalyze.load(SAMPLE_RUNS / "throughput", cache=False)
    expected = tanalyze.check(loaded.select("slow_loader"), baseline=loaded.select(["baseline", "control_*"]))
    assert not report.passed and report.counts() == expected.counts()
    assert [(r.name, r.status, r.message) for r in report.rules] == [
        (r.name, r.status, r.message) for r in expected.rules]

    evil = frame.assign(dir_name=frame["dir_name"].replace("baseline", "<b>baseline</b>"))
    evil_logs = tanalyze.from_frame(evil)
    tanalyze.report(evil_logs, tanalyze.diagnose(evil_logs)).save_html(tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "&lt;b&gt;baseline&lt;/b&gt;" in html and "<b>baseline</b>" not in html


# --- frames that cannot be used ------------------------------------------------------------------------------

@pytest.mark.parametrize(("frame", "kwargs", "message"), [
    ([{"step": 1}], {}, "from_frame needs a pandas DataFrame, got list"),
    (pd.DataFrame(), {}, "the frame has no columns (tbparse's SummaryReader(path).scalars is empty"),
    (pd.DataFrame({"tag": [], "step": [], "value": []}), {}, "the frame has no rows (columns: ['tag', 'step', 'value'])"),
    (pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "loss"), ("b", "loss")])), {},
     "columns are a MultiIndex"),
    (pd.DataFrame([[1, 2, 3]], columns=["step", "loss", "loss"]), {}, "columns named more than once: ['loss']"),
    (pd.DataFrame({"time": [1.0], "loss": [2.0]}), {},
     "cannot tell the shape of this frame from its columns ['time', 'loss']; from_frame accepts\n  long: tag, step, value"),
    (pd.DataFrame({"tag": ["a"], "step": [1], "val": [2.0]}), {},
     "the frame has a 'tag' column but no ['value']: a long frame needs tag, step, value"),
    (pd.DataFrame({"run_id": ["x"], "metrics.loss": [1.0], "params.lr": ["0.1"]}), {},
     "this looks like mlflow.search_runs(): one row per run"),
    (pd.DataFrame({"step": [1], "loss": [2.0]}), {"step": "iteration"},
     "step='iteration' is not a column of the frame; its columns are ['step', 'loss']"),
    (pd.DataFrame({"tag": ["a"], "step": [1], "value": [2.0]}), {"step": "step"}, "step= is for wide frames"),
    (pd.DataFrame({"epoch": [0.0, 0.5, 1.0], "loss": [3.0, 2.0, 1.0]}), {},
     "column 'epoch' holds 1 step(s) that are not whole numbers (first: 0.5 in row 1) (pass step= a column of whole steps)"),
    (pd.DataFrame({"_step": [0, 1], "epoch": [0.5, 1.0], "loss": [3.0, 2.0]}), {"step": "epoch"},
     "column 'epoch' holds 1 step(s) that are not whole numbers (first: 0.5 in row 0)"),
    (pd.DataFrame({"tag": ["a"], "step": [pd.Timestamp("2024-01-01")], "value": [1.0]}), {},
     "column 'step' holds times, not steps"),
    (pd.DataFrame({"dir_name": ["", "frame"], "tag": ["a", "a"], "step": [1, 1], "value": [1.0, 2.0]}), {},
     "run name 'frame' is both a value of column 'dir_name' and the name given to rows without one"),
    (pd.DataFrame({"tag": ["a"], "step": [1], "value": [2.0]}), {"run": ""}, "run= must be a non-empty string"),
])
def test_frames_that_cannot_be_used_raise_a_clear_input_error(frame, kwargs, message):
    with pytest.raises(InputError) as caught:
        tanalyze.from_frame(frame, **kwargs)
    assert message in str(caught.value)


def test_a_shapeless_frame_lists_every_accepted_shape():
    with pytest.raises(InputError) as caught:
        tanalyze.from_frame(pd.DataFrame({"a\x1b[31m": [1]}))
    text = str(caught.value)
    assert "['a\\x1b[31m']" in text and "\x1b" not in text  # column names escaped
    assert "MLflow metric history: key, value, timestamp (ms), step" in text
    assert "wide: a step column (step, global_step, iteration, iter, epoch, W&B's _step, or step=...)" in text


# --- every row accounted for ---------------------------------------------------------------------------------

def accounted(logs: tanalyze.Logs) -> int:
    """Points kept, plus what the warnings count, plus the rows the last-write rule replaced."""
    total = len(logs.scalars)
    for info in logs.runs.values():
        total += sum(w.count for w in info.warnings)
        total += sum(int(n.split(" ", 1)[0]) for n in info.notes if "the last row of each was kept" in n)
    return total


CELLS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.none(),
                  st.sampled_from(["x", "1.5", "nan", "<b>"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "a", "b"]), st.sampled_from(["loss", "lr", None]),
                          st.one_of(st.integers(0, 4), st.none(), st.just("?")), CELLS), min_size=1, max_size=40))
def test_every_row_of_a_long_frame_is_kept_or_counted(rows):
    frame = pd.DataFrame(rows, columns=["dir_name", "tag", "step", "value"])
    logs = tanalyze.from_frame(frame, run="root")
    assert accounted(logs) == len(frame)
    assert set(logs.runs) == {name or "root" for name in frame["dir_name"]}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(0, 4), st.none()), CELLS, CELLS), min_size=1, max_size=40))
def test_every_cell_of_a_wide_frame_is_kept_or_counted(rows):
    frame = pd.DataFrame(rows, columns=["iteration", "loss", "acc"])
    logs = tanalyze.from_frame(frame)
    cells = frame[["loss", "acc"]]
    text = {c: cells[c].dropna().astype(str).str.strip().str.lower() for c in cells.columns}
    numeric = [c for c, t in text.items()
               if pd.to_numeric(t, errors="coerce").notna().any() or t.isin(["nan", "-nan", "+nan"]).any()]
    # a column with no number at all is named in the notes instead of counted
    assert accounted(logs) == int(cells[numeric].notna().sum().sum())
    for column in set(cells.columns) - set(numeric):
        assert cells[column].isna().all() or any(f"{column} (" in n for n in logs.runs["frame"].notes)
