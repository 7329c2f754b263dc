"""The run-identity fixtures in tests/fixtures/layouts/ agree with their TRUTH.json.

The fixtures were written by the real logging libraries (see the folder's
README.md and generate.py). These tests check the truth file against the files
with tbparse, pandas and json, never with tanalyze's discovery or readers, so
that the discovery tests can trust it: every file is in exactly one run, every
point count is what the file holds, twins hold the same values, and each label
is what the logged curves show.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from tbparse import SummaryReader

from tests.conftest import REPO

LAYOUTS = REPO / "tests" / "fixtures" / "layouts"
TRUTH = json.loads((LAYOUTS / "TRUTH.json").read_text(encoding="utf-8"))
CASES: dict[str, dict] = TRUTH["cases"]
REGIMES = {"normal", "overfitting", "underfitting", "unstable", "diverged"}
FILES = [(case, run, f) for case, c in CASES.items() for run, r in c["runs"].items() for f in r["files"]]
COUNTED = [pytest.param(case, f, id=f"{case}/{f['path']}") for case, _, f in FILES if "points" in f]
LABELLED = [pytest.param(case, run, id=f"{case}/{run}") for case, c in CASES.items() for run, r in c["runs"].items()
            if r["label"] and "val_from" in r["label"]]


# --------------------------------------------------------------------------- independent readers


@cache
def events(path: Path) -> pd.DataFrame:
    """Scalars of one event file, simple values and TF2 tensor scalars alike: step, tag, value."""
    reader = SummaryReader(str(path), pivot=False)
    frames = [f[["step", "tag", "value"]] for f in (reader.scalars, reader.tensors) if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["step", "tag", "value"])


def trainer_state(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["log_history"]


def points_in(path: Path, index: list[str]) -> dict[str, int]:
    """Values per tag (events), non-empty cells per column (CSV) or entries per key (trainer_state.json)."""
    if ".tfevents." in path.name:
        return {str(k): int(v) for k, v in events(path).groupby("tag").size().items()}
    if path.suffix == ".csv":
        frame = pd.read_csv(path)
        return {c: int(frame[c].notna().sum()) for c in frame.columns if c not in index}
    counts: dict[str, int] = {}
    for entry in trainer_state(path):
        for key in set(entry) - {"step", "epoch"}:
            counts[key] = counts.get(key, 0) + 1
    return counts


def series(case: str, run: str, source: dict) -> list[float]:
    """The values a label's ``val_from`` (or ``train_from``) names, in logged order, read from the run's files."""
    files = {f["path"]: f for f in CASES[case]["runs"][run]["files"]}
    if "folder" in source:  # events in a sub-folder of the run
        path = next(LAYOUTS / case / p for p in files if p == f"{run}/{source['folder']}/{Path(p).name}")
        frame = events(path)
        return frame[frame["tag"] == source["tag"]].sort_values("step", kind="stable")["value"].tolist()
    if "column" in source:  # the run's CSV file
        csv_path = next(LAYOUTS / case / p for p in files if p.endswith(".csv"))
        return pd.read_csv(csv_path)[source["column"]].dropna().tolist()
    state = LAYOUTS / case / run / source["file"]
    return [e[source["key"]] for e in trainer_state(state) if source["key"] in e]


# --------------------------------------------------------------------------- the truth file and the folders


def test_every_case_folder_is_in_the_truth_and_back():
    folders = {p.name for p in LAYOUTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(CASES)
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_file_is_in_exactly_one_run(case):
    listed = [f["path"] for run in CASES[case]["runs"].values() for f in run["files"]]
    assert len(listed) == len(set(listed)), "a file is listed twice"
    present = sorted(p.relative_to(LAYOUTS / case).as_posix() for p in (LAYOUTS / case).rglob("*") if p.is_file())
    assert sorted(listed) == present


@pytest.mark.parametrize("case", sorted(CASES))
def test_runs_are_folders_or_files_that_hold_their_files(case):
    for run, truth in CASES[case]["runs"].items():
        assert (LAYOUTS / case / run).exists(), run
        for f in truth["files"]:
            assert f["role"] in TRUTH["roles"], f["role"]
            homes = [run, *truth.get("also_in", [])]  # a run's folder, and other folders the same job wrote to
            assert any(f["path"] == home or f["path"].startswith(home + "/") for home in homes), (run, f["path"])
        label = truth["label"]
        assert label is None or label["regime"] in REGIMES


@pytest.mark.parametrize(("case", "entry"), COUNTED)
def test_points_per_tag_are_what_the_file_holds(case, entry):
    assert points_in(LAYOUTS / case / entry["path"], entry.get("index", [])) == entry["points"]


@pytest.mark.parametrize(("case", "run"), LABELLED)
def test_label_is_what_the_logged_validation_curve_shows(case, run):
    label = CASES[case]["runs"][run]["label"]
    val = series(case, run, label["val_from"])
    assert len(val) == label["val_points"]
    best = min(val)
    assert val.index(best) == label["val_min_index"]
    assert best == pytest.approx(label["val_min"], abs=1e-6) and val[-1] == pytest.approx(label["val_last"], abs=1e-6)
    if label["regime"] == "overfitting":  # the minimum early, then a long climb well above it
        assert label["val_min_index"] < len(val) / 4 and val[-1] > 1.3 * best
    if label["regime"] == "normal":
        assert val[-1] <= 1.1 * best


def test_the_fixtures_stay_small_and_hold_no_machine_paths():
    files = [p for p in LAYOUTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in files) < 3_000_000
    needles = [str(REPO).encode(), (str(Path.home()) + "/").encode()]
    for path in files:
        if path.suffix != ".py":
            data = path.read_bytes()
            assert not any(n in data for n in needles), path


# --------------------------------------------------------------------------- what each layout is made of


def test_keras_split_runs_are_train_and_validation_of_one_log_dir():
    for case in ("keras_callback_overfit", "keras_callback_nan_val"):
        (run, truth), = CASES[case]["runs"].items()
        assert [f["role"] for f in truth["files"]] == ["train split", "validation split"]
        assert [Path(f["path"]).parent.as_posix() for f in truth["files"]] == [f"{run}/train", f"{run}/validation"]
        assert all(f["path"].endswith(".v2") for f in truth["files"])


def test_nan_validation_is_nan_at_every_epoch_while_training_is_finite():
    truth = CASES["keras_callback_nan_val"]["runs"]["logs"]
    train_file, val_file = (LAYOUTS / "keras_callback_nan_val" / f["path"] for f in truth["files"])
    train, val = events(train_file), events(val_file)
    assert train[train["tag"] == "epoch_loss"]["value"].map(math.isfinite).all()
    val_loss = val[val["tag"] == "epoch_loss"].sort_values("step")
    assert val_loss["step"].tolist() == list(range(15)) and val_loss["value"].isna().all()


def test_two_timestamped_runs_side_by_side():
    runs = CASES["keras_callback_two_runs"]["runs"]
    assert len(runs) == 2
    assert all(pd.to_datetime(run.removeprefix("logs/fit/"), format="%Y%m%d-%H%M%S") for run in runs)
    assert sorted(r["label"]["regime"] for r in runs.values()) == ["normal", "underfitting"]


def test_csvlogger_append_is_one_file_with_the_epoch_restarting():
    truth = CASES["keras_csvlogger_append"]["runs"]["logs"]
    frame = pd.read_csv(LAYOUTS / "keras_csvlogger_append" / "logs" / "training_log.csv")
    assert frame.columns.tolist() == truth["files"][0]["header"]
    assert frame["epoch"].tolist() == list(range(5)) + list(range(20))
    assert [p["rows"] for p in truth["phases"]] == [[1, 5], [6, 25]]


@pytest.mark.parametrize("case", ["torch_add_scalars", "tbx_add_scalars"])
def test_add_scalars_sub_folders_hold_the_main_tag(case):
    (run, truth), = CASES[case]["runs"].items()
    keys = [f for f in truth["files"] if f["role"] == "add_scalars key"]
    assert {(f["main_tag"], f["key"]) for f in keys} == {(m, k) for m in ("Loss", "metrics/acc") for k in ("train", "val")}
    for f in keys:
        folder = Path(f["path"]).parent.relative_to(run).as_posix()
        if case == "torch_add_scalars":  # torch: '/' in the main tag becomes '_', then _<key>
            assert folder == f"{f['main_tag'].replace('/', '_')}_{f['key']}"
        else:  # tensorboardX: <main_tag>/<key>, so metrics/acc/train nests two levels
            assert folder == f"{f['main_tag']}/{f['key']}"
        assert set(events(LAYOUTS / case / f["path"])["tag"]) == {f["main_tag"]}
    (parent,) = (f for f in truth["files"] if f["role"] == "add_scalars parent")
    assert Path(parent["path"]).parent.as_posix() == run


def test_estimator_layout_is_model_dir_and_its_eval_folder_at_global_steps():
    (truth,) = CASES["estimator_style_eval"]["runs"].values()
    train, ev = (events(LAYOUTS / "estimator_style_eval" / f["path"]) for f in truth["files"])
    assert sorted(train[train["tag"] == "loss"]["step"]) == list(range(1, 600, 10))
    assert sorted(ev[ev["tag"] == "loss"]["step"]) == list(range(100, 601, 100))
    assert Path(truth["files"][1]["path"]).parent.as_posix() == "model_dir/eval"


@pytest.mark.parametrize("case", ["hf_trainer_output", "hf_trainer_output_v4"])
def test_hf_twins_hold_the_same_losses(case):
    (truth,) = CASES[case]["runs"].values()
    paths = {f["role"]: LAYOUTS / case / f["path"] for f in truth["files"]}
    state = [(e["step"], e["loss"]) for e in trainer_state(paths["twin: trainer_state.json (primary)"]) if "loss" in e]
    tb = events(paths["twin: events"])
    logged = tb[tb["tag"] == "train/loss"].sort_values("step")
    assert logged["step"].tolist() == [s for s, _ in state]
    assert logged["value"].tolist() == pytest.approx([v for _, v in state], rel=1e-6)
    text = SummaryReader(str(paths["twin: events"]), pivot=False).text
    assert sorted(text["tag"]) == ["args", "model_config"]
    snapshots = [LAYOUTS / case / f["path"] for f in truth["files"] if f["role"].startswith("checkpoint snapshot")]
    assert [p.parent.name for p in snapshots] == ["checkpoint-60", "checkpoint-120"]
    full = trainer_state(paths["twin: trainer_state.json (primary)"])
    for snapshot in snapshots:  # a checkpoint's history is the start of the final one
        partial = trainer_state(snapshot)
        assert partial == full[: len(partial)]


def test_hf4_hparams_sub_run_is_a_timestamp_folder_inside_the_run_folder():
    (truth,) = CASES["hf_trainer_output_v4"]["runs"].values()
    (sub,) = (f for f in truth["files"] if f["role"] == "twin: hparams sub-run")
    folder = Path(sub["path"]).parent
    assert folder.parent.as_posix() == truth["tensorboard_dir"] and float(folder.name) > 1e9
    assert sub["points"] == {}
    assert len(SummaryReader(str(LAYOUTS / "hf_trainer_output_v4" / sub["path"]), pivot=False).hparams) > 0


@pytest.mark.parametrize("case", ["lightning_twin_loggers", "lightning_twin_loggers_one_version"])
def test_lightning_twins_hold_the_same_values(case):
    (truth,) = CASES[case]["runs"].values()
    paths = {f["role"]: LAYOUTS / case / f["path"] for f in truth["files"] if f["role"] != "hparams"}
    frame = pd.read_csv(paths["twin: metrics.csv"])
    tb = events(paths["twin: events"])
    for tag in ("train_loss_step", "train_loss_epoch", "val_loss"):
        csv_rows = frame.dropna(subset=[tag])
        tb_rows = tb[tb["tag"] == tag].sort_values("step", kind="stable")
        assert tb_rows["step"].tolist() == csv_rows["step"].tolist()
        assert tb_rows["value"].tolist() == pytest.approx(csv_rows[tag].tolist(), rel=1e-6)
    folders = {p.parent.name for p in paths.values()}
    assert folders == ({"version_0", "version_1"} if case == "lightning_twin_loggers" else {"version_0"})


def test_gan_csv_steps_are_epoch_times_batches_plus_batch():
    frame = pd.read_csv(LAYOUTS / "csv_epoch_batch_gan" / "gan" / "losses.csv")
    assert frame.columns.tolist() == ["Epoch", "Batch", "Gen Loss", "Disc Loss"]
    batches = frame["Batch"].max() + 1
    steps = frame["Epoch"] * batches + frame["Batch"]
    assert steps.tolist() == list(range(20 * batches)) and batches == 60
