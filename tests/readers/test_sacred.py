"""Sacred's FileStorageObserver: fixtures written by the real sacred package (``tests/fixtures/sacred/generate.py``,
pinned in its ``requirements.txt``): five runs of one tiny regression, a normal one, one that diverged to
Infinity and NaN and raised (FAILED), one that logged batch losses without a step, one that failed before
logging anything and one interrupted with Ctrl-C.
"""

import json
import math
import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from tanalyze import load
from tanalyze.discover import discover
from tanalyze.readers.tabular.sacred import SacredReader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "sacred"
RUNS = FIXTURES / "runs"
SOURCE = RUNS / "_sources" / "train_d56b2cb4e3c941a824367b541a662e5e.py"
CONFIG_1 = {"batch_size": 32, "epochs": 8, "log_batches": False, "lr": 0.05,
            "model": {"features": 4, "kind": "linear"}, "pause_after": -1, "seed": 1}
TRACE_2 = "FloatingPointError: train/loss is nan at epoch 28: training diverged"


def _utc(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()


@pytest.fixture(scope="module")
def logs():
    return load(RUNS, formats=("sacred",))


def test_runs_are_named_by_experiment_and_run_id(logs):
    assert sorted(logs.runs) == [f"tiny_regression/{i}" for i in range(1, 6)]
    assert {info.format for info in logs.runs.values()} == {"sacred"}


def test_a_normal_run_reads_every_metric_config_and_time(logs):
    frame = logs.scalars_of("tiny_regression/1")
    check(frame, "train/loss", {0: 0.9295572139015849, 1: 0.2982910174608131, 7: 0.010214786464265758}, count=8)
    check(frame, "val/loss", {0: 0.44113118475459473, 7: 0.011167544050438225}, count=8)
    check(frame, "lr", dict.fromkeys(range(8), 0.05), count=8)
    assert len(frame) == 24
    wall = frame[(frame["tag"] == "val/loss") & (frame["step"] == 7)]["wall_time"].iloc[0]
    assert wall == _utc(2026, 12, 7, 1, 20, 19, 702191)  # "2026-12-07T01:20:19.702191": utcnow(), read as UTC
    first = frame[(frame["tag"] == "train/loss") & (frame["step"] == 0)]["wall_time"].iloc[0]
    assert first == _utc(2026, 12, 7, 1, 20, 19, 701239)
    info = logs.runs["tiny_regression/1"]
    assert {k: v for k, v in info.hparams.items() if k != "_sacred"} == CONFIG_1
    assert info.hparams["_sacred"]["status"] == "COMPLETED"
    assert info.warnings == ()
    assert ("Sacred run 1 of experiment 'tiny_regression', status COMPLETED, 2026-12-07 01:20:19 UTC → "
            "2026-12-07 01:20:19 UTC, host fixture-host, command 'train'") in notes_text(info)
    assert "result (what the main function returned): 0.011167544050438225" in notes_text(info)
    assert json.loads(info.text["info.json"]) == {"best_val_loss": 0.011167544050438225}
    assert str(SOURCE) in info.files and str(RUNS / "1" / "cout.txt") in info.files
    assert info.status.status == "finished"
    assert info.status.reason == "Sacred recorded the run as COMPLETED (ended 2026-12-07 01:20:19 UTC)"


def test_a_diverged_run_keeps_infinity_and_nan_and_has_crashed_with_its_trace(logs):
    frame = logs.scalars_of("tiny_regression/2")
    check(frame, "train/loss", {0: 1.1129698591711797e17, 1: 9.579786461525747e38, 11: 6.3803780830114956e258,
                                   12: 6.1257428005260335e280},
          count=29)
    loss = curve(frame, "train/loss")
    assert loss[14] == math.inf and math.isnan(loss[28])
    assert sum(not math.isfinite(v) for v in loss.values()) == 15  # 14 × Infinity, then NaN
    assert sum(not math.isfinite(v) for v in curve(frame, "val/loss").values()) == 16
    check(frame, "lr", {0: 30.0, 28: 30.0}, count=29)  # logged as the int 30
    info = logs.runs["tiny_regression/2"]
    assert info.warnings == ()
    status = info.status
    assert status.status == "crashed" and status.failed
    assert status.reason == f"Sacred recorded the run as FAILED (ended 2026-12-07 01:20:20 UTC): {TRACE_2}"
    assert status.exception == "FloatingPointError"
    assert status.frame == "/tmp/sacred-fixture/job/train.py:57 in train"
    assert status.evidence[0].text == TRACE_2 and status.evidence[0].file == str(RUNS / "2" / "run.json")
    assert f"status FAILED ({TRACE_2})" in notes_text(info)


def test_metrics_logged_without_a_step_are_at_sacreds_count(logs):
    frame = logs.scalars_of("tiny_regression/3")
    batch = curve(frame, "train/batch_loss")
    assert sorted(batch) == list(range(18))  # 6 batches × 3 epochs, counted 0, 1, 2 … by Sacred
    check(frame, "train/batch_loss", {0: 3.883792526797245, 1: 4.28040965324586, 17: 0.09425041754565099})
    check(frame, "train/loss", {0: 2.5484051668987386, 2: 0.15039439716915504}, count=3)
    assert logs.runs["tiny_regression/3"].hparams["log_batches"] is True


def test_a_run_that_failed_before_logging_is_a_run_with_its_status(logs):
    info = logs.runs["tiny_regression/4"]
    assert len(logs.scalars_of("tiny_regression/4")) == 0
    (warning,) = info.warnings
    assert warning.file == str(RUNS / "4" / "metrics.json")  # Sacred wrote {} at the end
    assert warning.message == "no metric values: the run (status FAILED) logged no metric with log_scalar"
    assert info.status.status == "crashed" and info.status.exception == "ValueError"
    assert info.status.reason.endswith("ValueError: batch_size must be positive, got 0")
    assert info.hparams["batch_size"] == 0


def test_an_interrupted_run_was_killed(logs):
    frame = logs.scalars_of("tiny_regression/5")
    check(frame, "val/loss", {2: 0.057064541921270404}, count=3)
    status = logs.runs["tiny_regression/5"].status
    assert status.status == "killed"
    assert status.reason == "Sacred recorded the run as INTERRUPTED (ended 2026-12-07 01:20:21 UTC)"


def _copy(run: str, tmp_path: Path) -> Path:
    folder = tmp_path / "runs" / run
    shutil.copytree(RUNS / run, folder)
    return folder


def test_a_run_folder_without_metrics_json_is_a_run_that_says_so(tmp_path):
    folder = _copy("4", tmp_path)
    (folder / "metrics.json").unlink()  # killed before its first heartbeat
    logs = load(tmp_path / "runs", formats=("sacred",))
    (name,) = logs.runs
    info = logs.runs[name]
    assert name == "tiny_regression/4" and len(logs.scalars) == 0
    (warning,) = info.warnings
    assert warning.file == str(folder) and warning.message.startswith("no metrics.json: the run (status FAILED)")
    assert info.status.status == "crashed"


def test_a_cut_metrics_json_keeps_the_metrics_before_the_cut(tmp_path):
    folder = _copy("1", tmp_path)
    metrics = folder / "metrics.json"
    data = metrics.read_bytes()
    metrics.write_bytes(data[:data.index(b'"val/loss"') + 60])  # cut inside the third metric
    (run,) = SacredReader().read(sorted(folder.iterdir()))
    frame = run.scalar_table()
    check(frame, "train/loss", {0: 0.9295572139015849, 7: 0.010214786464265758}, count=8)
    check(frame, "lr", {7: 0.05}, count=8)
    assert "val/loss" not in set(frame["tag"])
    (warning,) = run.warnings
    assert warning.file == str(metrics)
    assert warning.message.startswith("not valid JSON (")
    assert "the 2 metric(s) complete before the damage were read; 'val/loss' and any metric after it are lost" \
        in warning.message


@pytest.mark.parametrize("content", [b"", b"\x00\xff garbage {", b'{\n  "loss": {\n    "steps": [\n      0,'])
def test_an_unreadable_metrics_json_is_a_warning_naming_it(tmp_path, content):
    folder = _copy("1", tmp_path)
    (folder / "metrics.json").write_bytes(content)
    (run,) = SacredReader().read(sorted(folder.iterdir()))
    assert len(run.scalars) == 0
    assert [w.file for w in run.warnings] == [str(folder / "metrics.json")]
    assert run.warnings[0].message.startswith("not valid JSON (") and "no metric could be read" in run.warnings[0].message
    assert run.hparams["seed"] == 1  # the rest of the run is read


def test_values_and_steps_that_are_not_numbers_are_counted_and_steps_that_go_back_are_sessions(tmp_path):
    folder = _copy("1", tmp_path)
    write(folder / "metrics.json", json.dumps({
        "acc": {"steps": [0, 1, 2.0, 2.5, 4], "values": [0.5, "high", None, 0.7, {"py/object": "torch.Tensor"}],
                "timestamps": ["2026-01-01T00:00:00", "2026-01-01T00:00:01.5+01:00", "2026-01-01T00:00:02",
                               "2026-01-01T00:00:03", "2026-01-01T00:00:04"]},
        "loss": {"steps": [0, 1, 2, 0, 1], "values": [5, 4, 3, 2.5, 1.5],
                 "timestamps": [f"2026-01-01T00:01:0{i}.25" for i in range(5)]},
        "short": {"steps": [0, 1, 2], "values": [1.0, 2.0], "timestamps": ["2026-01-01T00:00:30"]},
        "notes": "not a metric",
    }, sort_keys=True, indent=2))
    (run,) = SacredReader().read(sorted(folder.iterdir()))
    frame = run.scalar_table()
    check(frame, "acc", {0: 0.5}, count=1)  # step 1 text, step 2.0 null, 2.5 not whole, step 4 an object
    # loss starts over (a second training loop): a second session, after the first on the step axis
    check(frame, "loss", {0: 5.0, 1: 4.0, 2: 3.0, 3: 2.5, 4: 1.5}, count=5)
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(0, 2, 0), (3, 4, 3)]
    check(frame, "short", {0: 1.0, 1: 2.0}, count=2)
    walls = {f"{tag}@{step}": wall for tag, step, wall in zip(frame["tag"], frame["step"], frame["wall_time"],
                                                                 strict=True)}
    assert walls["acc@0"] == _utc(2026, 1, 1) and walls["loss@4"] == _utc(2026, 1, 1, 0, 1, 4, 250000)
    assert walls["short@0"] == _utc(2026, 1, 1, 0, 0, 30) and np.isnan(walls["short@1"])  # no timestamp for it
    messages = {w.message for w in run.warnings}
    assert all(w.file == str(folder / "metrics.json") for w in run.warnings)
    assert messages == {
        "not a Sacred metric ({steps, values, timestamps} lists), skipped: notes",
        "1 value(s) that are not numbers (text) skipped, under acc",
        "1 value(s) that are not numbers (null) skipped, under acc",
        "1 value(s) that are not numbers (objects Sacred pickled: a tensor logged without .item()?) skipped, "
        "under acc",
        "1 point(s) whose step is not a whole number skipped, under acc",
        "metric 'short' has 3 steps for 2 values: the pairs beyond the shorter list are skipped",
    }
    assert "1 point(s) without a readable timestamp have no wall_time: short" in notes_text(run)


def test_a_timestamp_with_a_zone_keeps_its_zone(tmp_path):
    folder = _copy("1", tmp_path)
    write(folder / "metrics.json", json.dumps({"loss": {
        "steps": [0, 1], "values": [1.0, 0.5], "timestamps": ["2026-01-01T01:00:00+01:00", "2026-01-01T00:00:01Z"]}}))
    (run,) = SacredReader().read(sorted(folder.iterdir()))
    assert run.scalar_table()["wall_time"].tolist() == [_utc(2026, 1, 1), _utc(2026, 1, 1, 0, 0, 1)]


def test_a_run_sacred_still_records_as_running_is_unknown_once_its_files_stop_changing(tmp_path):
    folder = _copy("1", tmp_path)
    entry = json.loads((folder / "run.json").read_text())
    entry["status"] = "RUNNING"
    del entry["stop_time"]
    write(folder / "run.json", json.dumps(entry, sort_keys=True, indent=2))
    old = time.time() - 3600
    for path in folder.iterdir():
        os.utime(path, (old, old))
    info = load(tmp_path / "runs", formats=("sacred",)).runs["tiny_regression/1"]
    assert info.status.status == "unknown"
    assert info.status.reason.startswith("Sacred still records the run as RUNNING, with no end")


def test_discovery_lists_each_run_folder_as_a_run_and_nothing_of_sacreds_as_unrecognised():
    found = discover(RUNS)
    assert [(Path(spec.directory).name, spec.format) for spec in found.runs] == [(str(i), "sacred") for i in range(1, 6)]
    assert found.runs[0].files == tuple(str(RUNS / "1" / name) for name in
                                        ("config.json", "cout.txt", "info.json", "metrics.json", "run.json"))
    assert found.unrecognized == () and found.errors == ()
    whole = discover(FIXTURES)  # with the job's script and this fixture's generator beside the runs
    assert len(whole.runs) == 5
    assert sorted(Path(f).name for f in whole.unrecognized) == ["generate.py", "requirements.txt", "train.py"]


def test_sniff_claims_only_sacreds_files(tmp_path):
    reader = SacredReader()
    detectron2 = b'{"data_time": 0.01, "eta_seconds": 100.0, "iteration": 19, "loss": 1.2, "lr": 0.001}\n'
    assert not reader.sniff(tmp_path / "metrics.json", detectron2)
    assert not reader.sniff(tmp_path / "metrics.json", b'{"loss": 0.25, "step": 9}')  # a summary of the last values
    assert not reader.sniff(tmp_path / "metrics.json", b"{}")  # empty, and no Sacred run.json beside it
    assert reader.sniff(tmp_path / "metrics.json", b'{\n  "loss": {\n    "steps": [\n      0,')
    assert not reader.sniff(tmp_path / "run.json", b'{"status": "ok", "name": "x"}')
    write(tmp_path / "other" / "config.json", '{"lr": 0.1}')
    assert not reader.sniff(tmp_path / "other" / "config.json", b'{"lr": 0.1}')
    write(tmp_path / "project" / "_sources" / "train.py", "print(1)\n")
    assert not reader.sniff(tmp_path / "project" / "_sources" / "train.py", b"print(1)\n")
    for path in sorted(RUNS.rglob("*")):
        if path.is_file():
            assert reader.sniff(path, path.read_bytes()[:4096]), path
