"""MLflow local stores: the real mlruns of VladimirMCorteza/Pytorch-MLflow-Tensorboard and
saulhazelius/keras-mlflow-sentences-classification, and fixtures written by the real mlflow package
(``tests/fixtures/mlflow/generate.py``, pinned in its ``requirements.txt``): the same four runs in a file
store and in a SQLite store, one of them ended by an exception, one with an MLflow 3 logged model.
"""

import math
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tanalyze import load
from tanalyze.discover import discover
from tanalyze.readers.mlflow.store import MLflowReader
from tests.conftest import REPO, real_log
from tests.readers.text_helpers import check, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "mlflow"
VLADIMIR = "mlflow_mlruns/VladimirMCorteza__Pytorch-MLflow-Tensorboard/mlruns"
SAUL = "mlflow_mlruns/saulhazelius__keras-mlflow-sentences-classification/train/mlruns"

# what generate.py logged (rounded to 6 digits there)
LOSS_01 = {1: 2.76915, 7: 1.254989, 20: 0.24102}
LOSS_03 = {1: 2.216214, 20: 0.009159}
VAL_01_STEP_5 = 1.790576
# the run 'with-model': its scores at step 0, logged before (val_rmse, test_rmse, test_r2) and after (test_mae) its model
SCORES = {"val_rmse": 0.91722, "test_rmse": 1.100664, "test_mae": 0.733776}


def _runs(path):
    logs = load(path, formats=("mlflow",))
    return logs, {name.rsplit("/", 1)[-1]: name for name in logs.runs}


@pytest.mark.parametrize("store", ["file_store", "sqlite"])
def test_fixture_stores_written_by_mlflow(store):
    logs, names = _runs(FIXTURES / store)
    # by mlflow.runName; one experiment: no prefix; the logged model of 'with-model' is no run
    assert sorted(names) == ["crashes-at-step-4", "lr-0.1", "lr-0.3", "with-model"]
    slow, fast = logs.scalars_of(names["lr-0.1"]), logs.scalars_of(names["lr-0.3"])
    check(slow, "train/loss", LOSS_01, count=20)  # a nested key ('train/loss': a sub-folder in the file store)
    check(fast, "train/loss", LOSS_03, count=20)
    nan = fast[(fast["tag"] == "train/loss") & (fast["step"] == 7)]["value"]
    assert math.isnan(nan.iloc[0])  # the file store writes 'nan'; SQLite 0 with is_nan = 1
    check(slow, "val_loss", {5: VAL_01_STEP_5, 20: 0.265122}, count=4)
    check(slow, "lr", {1: 0.1, 20: 0.1}, count=20)
    wall = slow[(slow["tag"] == "val_loss") & (slow["step"] == 20)]["wall_time"].iloc[0]
    assert wall == 1_700_000_020.0
    info = logs.runs[names["lr-0.1"]]
    settings = {k: v for k, v in info.hparams.items() if k != "_mlflow"}
    assert settings == {"lr": 0.1, "model": "linear", "seed": 1, "steps": 20, "tag.purpose": "tanalyze fixture"}
    assert "of experiment 'tiny-regression', status FINISHED" in notes_text(info)
    assert info.warnings == ()
    assert info.status.status == "finished" and "MLflow recorded the run as FINISHED (ended 20" in info.status.reason


@pytest.mark.parametrize("store", ["file_store", "sqlite"])
def test_a_run_that_mlflow_ended_as_failed_has_crashed(store):
    logs, names = _runs(FIXTURES / store)
    info = logs.runs[names["crashes-at-step-4"]]
    check(logs.scalars_of(names["crashes-at-step-4"]), "train/loss", {1: 3.518776, 3: 2.313832}, count=3)
    assert info.status.status == "crashed" and info.status.failed
    assert info.status.reason.startswith("MLflow recorded the run as FAILED (ended 20")
    (evidence,) = info.status.evidence
    assert evidence.text.startswith("status FAILED") and evidence.file.endswith("meta.yaml" if store == "file_store" else
                                                                               "mlflow.db")


def test_a_run_mlflow_still_records_as_running_is_running_while_its_files_change_and_unknown_after(tmp_path):
    import os
    import time

    store = tmp_path / "mlruns"
    run = store / "0" / "feed"
    write(store / "0" / "meta.yaml", "artifact_location: x\nexperiment_id: '0'\nname: Default\n")
    write(run / "meta.yaml", "experiment_id: '0'\nrun_id: feed\nrun_name: r\nstatus: 1\nstart_time: 0\nend_time: null\n")
    write(run / "metrics" / "loss", "1000 3.0 1\n2000 2.0 2\n")
    old = time.time() - 3600
    for path in (run / "meta.yaml", run / "metrics" / "loss", store / "0" / "meta.yaml"):
        os.utime(path, (old, old))
    logs, names = _runs(store)
    status = logs.runs[names["r"]].status
    assert status.status == "unknown" and "MLflow still records the run as RUNNING, with no end" in status.reason
    os.utime(run / "metrics" / "loss")  # a metric written just now: the run goes on
    logs, names = _runs(store)
    assert logs.runs[names["r"]].status.status == "running"


def test_file_store_and_sqlite_agree():
    a, _ = _runs(FIXTURES / "file_store")
    b, _ = _runs(FIXTURES / "sqlite")
    for name in ("lr-0.1", "lr-0.3", "with-model"):
        left = a.scalars_of(f"file_store/{name}")[["tag", "step", "value", "wall_time"]].sort_values(["tag", "step"])
        right = b.scalars_of(f"sqlite/{name}")[["tag", "step", "value", "wall_time"]].sort_values(["tag", "step"])
        assert left.reset_index(drop=True).equals(right.reset_index(drop=True))


def test_real_pytorch_mnist_store():
    logs, names = _runs(real_log(VLADIMIR))
    assert len(names) == 3  # runs without a name are named by their id
    run = logs.scalars_of(names["58a829e452164bf99b1d4fd228830189"])
    # metrics/train_loss: '1642780912552 4.152586936950684 938'
    check(run, "train_loss", {938: 4.152586936950684, 1138: 4.1293745040893555}, count=100)
    assert run[(run["tag"] == "train_loss") & (run["step"] == 938)]["wall_time"].iloc[0] == 1642780912.552
    check(run, "test_accuracy", {}, count=20)
    info = logs.runs[names["58a829e452164bf99b1d4fd228830189"]]
    assert info.hparams["lr"] == 0.001 and info.hparams["epochs"] == 20 and info.hparams["cuda"] is True
    assert "2022-01-21 16:01:52 UTC → 2022-01-21 16:06:15 UTC" in notes_text(info)


def test_real_keras_autolog_store_and_the_tensorboard_artifacts_beside(real_logs):
    logs, names = _runs(real_log(SAUL))
    assert len(names) == 5
    run = logs.scalars_of(names["cee1d5e1975f4c66b0624ec6c27183bc"])
    check(run, "loss", {0: 0.525877833366394, 1: 0.3430648744106293}, count=2)
    single = logs.scalars_of(names["e1147646c9194aeb9b9d16ab348d67c2"])
    check(single, "roc-auc", {0: 0.6883023977279663}, count=1)
    info = logs.runs[names["e1147646c9194aeb9b9d16ab348d67c2"]]
    assert {k: v for k, v in info.hparams.items() if k != "_mlflow"} == {"dropout": 0.1, "hidden-units": 32}
    assert info.hparams["_mlflow"]["status"] == "FINISHED" and info.status.status == "finished"
    # the whole corpus folder: the MLflow runs, plus the TensorBoard logs saved as artifacts (their own runs)
    found = discover(real_logs / "mlflow_mlruns")
    formats = sorted(spec.format for spec in found.runs)
    assert formats == ["mlflow", "mlflow", "tensorboard", "tensorboard", "tensorboard"]
    assert all("/artifacts/" in path for path in found.unrecognized)  # model files; every metric/param/tag is read


def test_metrics_without_step_repeated_steps_junk_and_cut_lines(tmp_path):
    store = tmp_path / "mlruns"
    run = store / "1" / "abc123"
    write(store / "1" / "meta.yaml", "artifact_location: x\nexperiment_id: '1'\nname: exp\n")
    write(run / "meta.yaml", "experiment_id: '1'\nrun_id: abc123\nrun_name: r\nstatus: 4\nstart_time: 0\n")
    write(run / "metrics" / "acc", "1000 0.5 0\n2000 0.6 0\n3000 0.7 0\n")  # no step given
    write(run / "metrics" / "loss", "1000 3.0 1\nnot a line\n2000 2.0 2\n2500 1.5 2\n3000 1.")
    write(run / "metrics" / "empty", "")
    write(run / "params" / "opt", "adam")
    logs, names = _runs(store)
    frame = logs.scalars_of(names["r"])
    check(frame, "acc", {0: 0.5, 1: 0.6, 2: 0.7}, count=3)
    check(frame, "loss", {1: 3.0, 2: 1.5}, count=2)  # 2.0 then 1.5 at step 2: the last write wins
    info = logs.runs[names["r"]]
    notes = notes_text(info)
    assert "spread over steps 0, 1, 2 … in time order: acc" in notes
    assert "status FAILED" in notes and "replaced by the later write" in notes
    (warning,) = info.warnings
    assert "2 line(s) are not 'timestamp value step'; skipped (the last line is cut off" in warning.message
    assert warning.location == "line 2, 5"
    assert info.hparams == {"opt": "adam", "_mlflow": {"run_id": "abc123", "status": "FAILED", "ended": None,
                                                       "record": str(run / "meta.yaml")}}
    assert info.status.status == "crashed"  # status 4: FAILED, with no end time


def test_sqlite_that_is_not_mlflow_and_broken_database(tmp_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE metrics (a, b)")
    reader = MLflowReader()
    assert not reader.sniff(other, other.read_bytes()[:4096])
    copy = tmp_path / "mlflow.db"
    shutil.copy(FIXTURES / "sqlite" / "mlflow.db", copy)
    assert reader.sniff(copy, copy.read_bytes()[:4096])
    broken = write(tmp_path / "broken" / "mlflow.db", copy.read_bytes()[:8192])
    from tanalyze.errors import FormatError

    try:
        runs = reader.read([broken])
    except FormatError as error:
        assert str(broken) in str(error)
    else:
        assert all(run.warnings for run in runs) and all(run.scalars.empty for run in runs)


def test_sniffing_and_reading_databases_leaves_no_file_open(tmp_path):
    import os

    copy = tmp_path / "odd?#name" / "mlflow.db"
    copy.parent.mkdir()
    shutil.copy(FIXTURES / "sqlite" / "mlflow.db", copy)
    reader = MLflowReader()
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(50):
        assert reader.sniff(copy, copy.read_bytes()[:4096])
        assert len(reader.read([copy])) == 4
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) <= before + 2


# --- long runs: every line of a metric file, whatever its size ------------------------------------------------

LONG = 100_000  # lines: about 3.5 MB, past the megabyte at which metric files used to be cut


def _long_store(tmp_path, lines=LONG, tail=b""):
    """A store of one run whose metric 'loss' has ``lines`` points as MLflow writes them
    (``f"{timestamp} {value} {step}"``, values as repr), a NaN, ±inf and values in exponent notation among them."""
    import numpy as np

    store = tmp_path / "mlruns"
    run = store / "0" / "f00d"
    write(store / "0" / "meta.yaml", "artifact_location: x\nexperiment_id: '0'\nname: long\n")
    write(run / "meta.yaml", "experiment_id: '0'\nrun_id: f00d\nrun_name: long\nstatus: 3\nstart_time: 0\n")
    values = np.random.default_rng(0).random(lines) * np.geomspace(1e-9, 1e9, lines)
    values[[10, 20, 30]] = [math.nan, math.inf, -math.inf]
    steps = [3 * i for i in range(lines)]
    text = "".join(f"{1_700_000_000_000 + 7 * s} {v!r} {s}\n" for v, s in zip(values.tolist(), steps, strict=True))
    metric = write(run / "metrics" / "loss", text.encode() + tail)
    return store, metric, values, steps


def test_a_metric_file_of_several_megabytes_is_read_whole(tmp_path):
    store, metric, values, steps = _long_store(tmp_path)
    assert metric.stat().st_size > 3 << 20
    logs, names = _runs(store)
    frame = logs.scalars_of(names["long"])
    assert len(frame) == LONG and frame["step"].tolist() == steps
    assert frame["value"].to_numpy().tobytes() == values.tobytes()  # bit for bit: what float() reads
    assert frame["step"].iloc[-1] == 3 * (LONG - 1) and frame["value"].iloc[-1] == values[-1]
    assert frame["wall_time"].iloc[-1] == (1_700_000_000_000 + 21 * (LONG - 1)) / 1000
    assert logs.runs[names["long"]].warnings == ()


@pytest.mark.parametrize("block", [None, 65536, 16384])
def test_junk_and_a_cut_last_line_in_a_long_file_keep_every_good_line(tmp_path, monkeypatch, block):
    from tanalyze.readers.mlflow import store as module

    if block:  # blocks of a few lines: a bad line near a block's end, the width carried over blocks
        monkeypatch.setattr(module, "_BLOCK_BYTES", block)
    store, metric, values, steps = _long_store(tmp_path, tail=b"1700000700000 0.25")
    data = metric.read_bytes().splitlines(keepends=True)
    data[5_000] = b"1700000035000 0.5 3.0\n"  # a step that int() does not read
    data[70_000] = b"\xff\xfe not a metric line\n"  # not UTF-8
    metric.write_bytes(b"".join(data))
    logs, names = _runs(store)
    frame = logs.scalars_of(names["long"])
    assert len(frame) == LONG - 2
    assert frame["value"].iloc[0] == values[0] and frame["value"].iloc[-1] == values[-1]
    assert 15_000 not in set(frame["step"]) and 210_000 not in set(frame["step"])
    (warning,) = logs.runs[names["long"]].warnings
    assert warning.file == str(metric) and warning.count == 3
    assert "3 line(s) are not 'timestamp value step'; skipped (the last line is cut off" in warning.message
    assert warning.location == f"line 5001, 70001, {LONG + 1}"


def _both_ways(path, monkeypatch):
    """A metric file parsed as the reader does and line by line only (no block parsed at once)."""
    from tanalyze.readers.mlflow import store as module

    fast, clean, at_once = module._Run("r", "e", None, "s"), module._parse_clean, []
    with monkeypatch.context() as patch:
        patch.setattr(module, "_parse_clean", lambda block, state: at_once.append(clean(block, state)) or at_once[-1])
        rows = module._parse_metric(path, fast)
    with monkeypatch.context() as patch:
        patch.setattr(module, "_parse_clean", lambda block, state: None)
        slow = module._Run("r", "e", None, "s")
        reference = module._parse_metric(path, slow)
    return rows, reference, fast.warnings, slow.warnings, [parsed is not None for parsed in at_once]


@pytest.mark.parametrize("damage", ["clean", "old two-field lines", "junk", "odd numbers"])
def test_parsed_at_once_or_line_by_line_the_same_rows(tmp_path, monkeypatch, damage):
    import numpy as np

    _, metric, _, _ = _long_store(tmp_path, lines=5_000)
    lines = metric.read_bytes().splitlines(keepends=True)
    if damage == "old two-field lines":
        lines = [b" ".join(line.split()[:2]) + b"\n" for line in lines]
    elif damage == "junk":
        lines[7:7] = [b"\n", b"x y z\n", b"1 2\n", b"1  2 3\n", b" 1 2 3\n", b"1 2 3 4\n", b"1\t2\t3\n", b"1 nan 2\r\n"]
    elif damage == "odd numbers":  # what float()/int() read but pandas would read otherwise, and the reverse
        lines[7:7] = [b"5.0 1 2\n", b"1 1 5e2\n", b"+5 1 2\n", b"05 1 2\n", b"-0 1 2\n", b"1 -nan 2\n", b"1 NaN 2\n",
                      b"1 1_0 2\n", b"1 1e999 2\n", b"1 Infinity 2\n", b"9223372036854775808 1 2\n", b"1 0x1 2\n"]
    metric.write_bytes(b"".join(lines))
    rows, reference, warnings, reference_warnings, at_once = _both_ways(metric, monkeypatch)
    assert at_once == [damage in ("clean", "old two-field lines")]  # one block; clean: parsed at once
    for got, expected in zip(rows, reference, strict=True):
        assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
    assert warnings == reference_warnings
    # junk: what str.split() makes three fields of ('1  2 3', tabs, '\r\n'); odd: +5, 05, -0, -nan, NaN, 1_0, 1e999, Infinity
    assert len(rows[0]) == 5_000 + {"junk": 4, "odd numbers": 8}.get(damage, 0)
    assert sum(w.count for w in warnings) == {"junk": 3, "odd numbers": 4}.get(damage, 0)
    if damage == "clean":
        assert not warnings and np.isnan(rows[1][10]) and rows[1][20] == math.inf


def test_a_long_run_in_the_sqlite_store_is_read_whole(tmp_path):
    copy = tmp_path / "mlflow.db"
    shutil.copy(FIXTURES / "sqlite" / "mlflow.db", copy)
    with closing(sqlite3.connect(copy)) as db, db:
        (run_id,) = db.execute("SELECT run_uuid FROM runs WHERE name = 'lr-0.1'").fetchone()
        columns = [row[1] for row in db.execute("PRAGMA table_info(metrics)")]
        row = dict.fromkeys(columns, None) | {"key": "long", "run_uuid": run_id, "is_nan": 0}
        db.executemany(f"INSERT INTO metrics ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       [tuple((row | {"value": step / 7, "timestamp": 1_700_000_000_000 + step, "step": step})[c]
                              for c in columns) for step in range(LONG)])
    logs, names = _runs(copy)
    frame = logs.scalars_of(names["lr-0.1"])
    check(frame, "long", {0: 0.0, LONG - 1: (LONG - 1) / 7}, count=LONG)
    check(frame, "train/loss", LOSS_01, count=20)


def test_a_line_longer_than_a_block_is_skipped_and_counted(tmp_path, monkeypatch):
    from tanalyze.readers.mlflow import store as module

    monkeypatch.setattr(module, "_BLOCK_BYTES", 64)
    store, metric, values, _ = _long_store(tmp_path, lines=40)
    lines = metric.read_bytes().splitlines(keepends=True)
    lines[3:3] = [b"9" * 500 + b"\n"]  # a dumped tensor, say: 500 bytes, more than a block
    metric.write_bytes(b"".join(lines) + b"1 2 " + b"3" * 300)  # and a last line cut off, longer than a block
    logs, names = _runs(store)
    frame = logs.scalars_of(names["long"])
    assert len(frame) == 40 and frame["value"].iloc[-1] == values[-1]
    (warning,) = logs.runs[names["long"]].warnings
    assert warning.count == 2 and warning.location == "line 4, 42" and "cut off" in warning.message


def test_each_run_of_a_store_lists_its_own_files_only():
    logs, names = _runs(FIXTURES / "file_store")
    files = {name: set(logs.runs[full].files) for name, full in names.items()}
    shared = set.intersection(*files.values())
    assert [Path(f).parent.parent.name for f in shared] == ["file_store"]  # the experiment's meta.yaml, no more
    model = {f for f in files["with-model"] if "/models/" in f}
    assert len(model) == 14  # its logged model's meta.yaml, 4 metrics, 5 params, 4 tags: the run's too
    for name, own in files.items():
        (folder,) = {Path(f).parents[0] for f in own - model if f.endswith("meta.yaml") and f not in shared
                     and "/outputs/" not in f}
        assert all(Path(f).is_relative_to(folder) for f in own - shared - model), name
    assert len(files["crashes-at-step-4"]) == 7  # two meta.yaml, train/loss and the four tags mlflow wrote
    assert len(files["with-model"]) == 2 + 5 + 1 + 4 + 4 + 14  # meta.yaml ×2, metrics, outputs, params, tags, model
    logs, names = _runs(FIXTURES / "sqlite")
    assert all(info.files == (str(FIXTURES / "sqlite" / "mlflow.db"),) for info in logs.runs.values())


# --- MLflow 3: logged models, and the metric records that logging one repeats ---------------------------------


def _model_note(info):
    (note,) = [n for n in info.notes if n.startswith("MLflow 3 logged model")]
    return note


@pytest.mark.parametrize("store", ["file_store", "sqlite"])
def test_an_mlflow3_logged_model_is_part_of_its_run_not_a_run(store):
    logs, names = _runs(FIXTURES / store)
    assert len(logs.runs) == 4 and not any("linear" in name or "models" in name for name in logs.runs)
    info = logs.runs[names["with-model"]]
    frame = logs.scalars_of(names["with-model"])
    check(frame, "train/loss", {1: 2.864924, 10: 0.841293}, count=10)
    for key, value in SCORES.items():  # one point each at step 0: no copy, no step invented
        check(frame, key, {0: value}, count=1)
    r2 = frame[frame["tag"] == "test_r2"]
    assert len(r2) == 1 and r2["step"].iloc[0] == 0 and math.isnan(r2["value"].iloc[0])  # SQLite's model copy: 0.0
    assert frame[frame["tag"] == "test_rmse"]["wall_time"].iloc[0] == 1_700_000_011.0
    (model,) = info.hparams["_mlflow"]["models"]
    model_id = model["model_id"]
    assert model_id.startswith("m-") and len(model_id) == 34
    record = str(FIXTURES / "sqlite" / "mlflow.db") if store == "sqlite" else \
        next(f for f in info.files if f.endswith(f"models/{model_id}/meta.yaml"))
    assert model == {"model_id": model_id, "name": "linear", "status": "READY", "step": 0, "params": {"features": "x"},
                     "registered": [{"name": "tiny-regression-model", "version": 1}], "record": record}
    assert _model_note(info) == (
        f"MLflow 3 logged model 'linear' ({model_id}) of this run, status READY, registered as "
        "'tiny-regression-model' version 1: not a run of its own; its 4 metric value(s) are copies of its run's; "
        "param(s) of its own: features=x")
    assert {k: v for k, v in info.hparams.items() if k != "_mlflow"} == {"lr": 0.1, "model": "linear", "seed": 4,
                                                                         "steps": 10}
    assert info.warnings == () and info.status.status == "finished"
    repeated = [n for n in info.notes if "repeated whole" in n]
    if store == "file_store":  # Model.log wrote val_rmse, test_rmse and test_r2 to the run's files a second time
        assert repeated == ["3 metric record(s) repeated whole (the same time, value and step as an earlier one) "
                            "read once (MLflow 3 logs a run's metrics again when it logs a model): "
                            "test_r2, test_rmse, val_rmse"]
    else:  # SQLite keeps one row
        assert repeated == []
    assert not any("spread over steps" in n or "replaced by the later write" in n for n in info.notes)


def test_the_model_registry_and_logged_models_are_no_experiment_nor_run():
    found = discover(FIXTURES / "file_store")
    (spec,) = found.runs
    assert spec.format == "mlflow"
    # the registry (mlruns/models/<name>/…) holds no metric: left as not read, not taken for an experiment
    assert sorted(Path(f).relative_to(FIXTURES / "file_store").as_posix() for f in found.unrecognized) == [
        "models/tiny-regression-model/meta.yaml", "models/tiny-regression-model/version-1/meta.yaml"]
    reader = MLflowReader()
    version = FIXTURES / "file_store" / "models" / "tiny-regression-model" / "version-1" / "meta.yaml"
    assert not reader.sniff(version, version.read_bytes())
    (model,) = (FIXTURES / "file_store").glob("*/models/m-*")
    for path in (model / "meta.yaml", model / "metrics" / "test_rmse", model / "params" / "features"):
        assert reader.sniff(path, path.read_bytes()) and reader.run_directory(path) == FIXTURES / "file_store"


def _copy_store(tmp_path):
    store = shutil.copytree(FIXTURES / "file_store", tmp_path / "mlruns")
    (run,) = [f.parent.parent for f in store.glob("*/*/tags/mlflow.runName") if f.read_text() == "with-model"]
    (model,) = store.glob("*/models/m-*")
    return store, run, model


def test_a_model_value_its_run_lacks_is_read_into_the_run_and_said(tmp_path):
    store, run, model = _copy_store(tmp_path)
    (run / "metrics" / "test_mae").unlink()  # a store copied in part: the value is only in the model's copy
    logs, names = _runs(store)
    info = logs.runs[names["with-model"]]
    check(logs.scalars_of(names["with-model"]), "test_mae", {0: SCORES["test_mae"]}, count=1)
    assert f"1 metric value(s) read from MLflow 3 logged model 'linear' ({model.name}), not in this run's own " \
           "metric records: test_mae" in info.notes
    assert "3 of its 4 metric value(s) are copies of run records" in _model_note(info)
    assert info.warnings == ()


def test_a_model_whose_run_is_not_in_the_store_is_warned_about(tmp_path):
    store, run, model = _copy_store(tmp_path)
    shutil.rmtree(run)
    logs, names = _runs(store)
    assert sorted(names) == ["crashes-at-step-4", "lr-0.1", "lr-0.3"]
    for info in logs.runs.values():
        (warning,) = info.warnings
        assert warning.file == str(model / "meta.yaml") and warning.count == 4
        assert warning.message == (f"MLflow 3 logged model 'linear' ({model.name}) is of run {run.name}, not in "
                                   "this store: 4 metric value(s) and 5 param(s) not read")


def test_a_model_metric_line_that_is_not_one_is_counted(tmp_path):
    store, run, model = _copy_store(tmp_path)
    metric = model / "metrics" / "val_rmse"
    metric.write_text(metric.read_text() + "1700000011000 0.5\nnot a line at all\n")
    logs, names = _runs(store)
    (warning,) = logs.runs[names["with-model"]].warnings
    assert (warning.file, warning.location, warning.count) == (str(metric), "line 2, 3", 2)
    assert warning.message == "2 line(s) are not 'timestamp value step run_id'; skipped"


def test_records_repeated_whole_are_one_point_other_repeats_as_before(tmp_path):
    store = tmp_path / "mlruns"
    run = store / "1" / "abc123"
    write(store / "1" / "meta.yaml", "artifact_location: x\nexperiment_id: '1'\nname: exp\n")
    write(run / "meta.yaml", "experiment_id: '1'\nrun_id: abc123\nrun_name: r\nstatus: 3\nstart_time: 0\n")
    write(run / "metrics" / "score", "1700000000500 347.25 0\n1700000000500 347.25 0\n")  # as a real MLflow 3 store
    # no step: three values spread over 0, 1, 2, one of them written twice whole
    write(run / "metrics" / "acc", "1000 0.5 0\n2000 0.6 0\n2000 0.6 0\n3000 0.7 0\n")
    # the same step and time, another value: the later write wins, as before; NaN twice is one
    write(run / "metrics" / "loss", "1000 3.0 1\n1000 2.5 1\n2000 nan 2\n2000 nan 2\n")
    logs, names = _runs(store)
    frame = logs.scalars_of(names["r"])
    check(frame, "score", {0: 347.25}, count=1)
    check(frame, "acc", {0: 0.5, 1: 0.6, 2: 0.7}, count=3)
    loss = frame[frame["tag"] == "loss"]
    assert loss["step"].tolist() == [1, 2] and loss["value"].iloc[0] == 2.5 and math.isnan(loss["value"].iloc[1])
    info = logs.runs[names["r"]]
    assert info.notes[1:] == (
        "3 metric record(s) repeated whole (the same time, value and step as an earlier one) read once: "
        "acc, loss, score",  # no logged model in this run: no word of MLflow 3
        "logged without a step (all at step 0), spread over steps 0, 1, 2 … in time order: acc",
        "1 value(s) logged again at the same step replaced by the later write")
