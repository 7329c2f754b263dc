"""Ray Tune trial folders: the experiment a real ``Tuner.fit`` wrote (tests/fixtures/ray_tune), and damaged copies."""

import json
import math
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from tanalyze import load
from tanalyze.readers import get_readers
from tanalyze.readers.tabular.ray_tune import RayTuneReader
from tests.readers.text_helpers import check, curve, notes_text, write

EXPERIMENT = Path(__file__).resolve().parents[1] / "fixtures" / "ray_tune" / "tiny_sgd"
SLOW = "train_regression_a0529_00000_0_lr=0.0100_2026-12-07_01-22-11"
GOOD = "train_regression_a0529_00001_1_lr=0.0500_2026-12-07_01-22-12"
DIVERGED = "train_regression_a0529_00002_2_lr=0.9500_2026-12-07_01-22-14"
TAGS = {"loss", "val/loss", "val/r2", "improvement", "weight_norm", "time_this_iter_s"}
STATE_FILES = {".validate_storage_marker", "experiment_state-2026-12-07_01-22-11.json", "tuner.pkl"}


def _config(lr):
    return {"lr": lr, "batch_size": 48, "iterations": 12, "seed": 0, "model": {"features": 8, "init": "zeros"}}


def _read(folder: Path, *names: str):
    files = sorted(folder / name for name in names) if names else sorted(p for p in folder.iterdir() if p.is_file())
    reader = RayTuneReader()
    claimed = [f for f in files if reader.sniff(f, f.read_bytes()[:4096])]
    (run,) = reader.read(claimed)
    return run


def _first_claimer(path: Path) -> str | None:
    head = path.read_bytes()[:4096]
    return next((reader.name for reader in get_readers() if reader.sniff(path, head)), None)


def test_trial_read_from_result_json():
    run = _read(EXPERIMENT / GOOD)
    frame = run.scalars
    assert set(frame["tag"]) == TAGS
    check(frame, "loss", {1: 1.9760754293403675, 2: 0.818235162631962, 12: 0.009906864164293273}, count=12)
    check(frame, "val/loss", {1: 2.4055026441597795, 12: 0.011154201747573204}, count=12)
    check(frame, "val/r2", {1: 0.5803136917905709, 12: 0.9980539344806676}, count=12)
    check(frame, "weight_norm", {2: 1.2690453822244723, 12: 2.1362577250518244}, count=12)
    improvement = curve(frame, "improvement")
    assert math.isnan(improvement[1]) and improvement[2] == 1.3931623776743356 and len(improvement) == 12
    times = curve(frame, "time_this_iter_s")
    assert times[1] == 0.0016133785247802734 and len(times) == 12 and all(t > 0 for t in times.values())
    assert (frame["wall_time"] == 1796606534.0).all()  # Tune's timestamp: whole seconds
    assert frame.loc[frame["tag"] == "loss", "epoch"].tolist() == [float(i) for i in range(1, 13)]
    assert run.hparams == _config(0.05)
    notes = notes_text(run)
    assert "non-numeric values skipped under: phase" in notes
    assert "progress.csv: the same results as a wide CSV (12 row(s)); not read again" in notes
    assert "Tune trial a0529_00001" in notes
    assert "params.pkl: pickles, never unpickled" in notes
    assert run.warnings == [] and run.restarts == [] and run.phases == []


def test_experiment_is_one_run_per_trial_with_its_twins():
    logs = load(EXPERIMENT, cache=False)
    assert {name: info.format for name, info in logs.runs.items()} == {SLOW: "ray_tune", GOOD: "ray_tune",
                                                                       DIVERGED: "ray_tune"}
    assert {Path(f).name for f in logs.unrecognized} == STATE_FILES  # the experiment's state: listed, no run
    for name, info in logs.runs.items():
        files = {Path(f).name for f in info.files}
        assert {"result.json", "progress.csv", "params.json", "params.pkl"} <= files
        assert any(f.startswith("events.out.tfevents.") for f in files)
        kinds = {(part.format, part.kind) for part in info.sources}
        assert kinds == {("ray_tune", "main"), ("tensorboard", "twin")}, name
        assert info.warnings == ()
    slow = logs.scalars[logs.scalars["run"] == SLOW]
    check(slow, "loss", {1: 4.092832626184303, 12: 0.6408277504990649}, count=12)
    assert logs.runs[SLOW].hparams == _config(0.01)
    assert len(logs.scalars) == 6 * (12 + 12 + 4)


def test_errored_trial_is_crashed_with_its_error():
    logs = load(EXPERIMENT / DIVERGED, cache=False)
    (info,) = logs.runs.values()
    assert info.status.status == "crashed"
    assert info.status.exception == "FloatingPointError"
    (evidence,) = info.status.evidence
    assert (Path(evidence.file).name, evidence.line) == ("error.txt", 19)
    assert evidence.text == "FloatingPointError: training loss diverged: 1499 at iteration 5"
    assert {"error.txt", "error.pkl"} <= {Path(f).name for f in info.files}
    assert ("the trial failed (1 failure(s) in error.txt): Failure # 1 (occurred at 2026-12-07_01-22-17) … "
            "FloatingPointError: training loss diverged: 1499 at iteration 5") in info.notes
    frame = logs.scalars
    check(frame, "loss", {1: 15.181390117046556, 4: 481.7364116039693}, count=4)
    check(frame, "val/r2", {2: -9.179797685817539}, count=4)
    assert logs.unrecognized == ()
    healthy = load(EXPERIMENT / GOOD, cache=False)
    assert next(iter(healthy.runs.values())).status.status != "crashed"


def test_pickles_are_never_unpickled(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a pickle was loaded")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    run = _read(EXPERIMENT / DIVERGED)
    assert len(curve(run.scalars, "loss")) == 4 and run.hparams == _config(0.95)


def test_progress_csv_alone_is_read_as_the_trial(tmp_path):
    trial = tmp_path / "exp" / GOOD
    shutil.copytree(EXPERIMENT / GOOD, trial)
    (trial / "result.json").unlink()
    assert _first_claimer(trial / "progress.csv") == "ray_tune"
    logs = load(tmp_path / "exp", cache=False)
    (info,) = logs.runs.values()
    assert info.format == "ray_tune" and logs.unrecognized == ()
    frame = logs.scalars
    assert set(frame["tag"]) == TAGS
    check(frame, "loss", {1: 1.9760754293403675, 12: 0.009906864164293273}, count=12)
    check(frame, "val/r2", {1: 0.5803136917905709, 12: 0.9980539344806676}, count=12)
    assert math.isnan(curve(frame, "improvement")[1])
    assert (frame["wall_time"] == 1796606534.0).all()
    assert info.hparams == _config(0.05)  # from params.json
    assert "non-numeric column(s) skipped: phase" in info.notes
    assert not info.warnings


def test_progress_csv_with_a_step_column_is_not_a_generic_csv(tmp_path):
    header = "step,loss,timestamp,training_iteration,trial_id,date,time_this_iter_s,time_total_s\n"
    rows = "".join(f"{10 * i},{1 / i},{1700000000 + i},{i},abc_00000,2024-01-01_00-00-0{i},0.5,{0.5 * i}\n"
                   for i in range(1, 4))
    path = write(tmp_path / "trial" / "progress.csv", header + rows)
    assert _first_claimer(path) == "ray_tune"
    (run,) = RayTuneReader().read([path])
    check(run.scalars, "loss", {1: 1.0, 2: 0.5, 3: 1 / 3}, count=3)
    check(run.scalars, "time_this_iter_s", {3: 0.5}, count=3)
    assert "time_total_s" not in set(run.scalars["tag"]) and "timestamp" not in set(run.scalars["tag"])
    assert run.scalars.loc[run.scalars["tag"] == "loss", "wall_time"].tolist() == [1700000001.0, 1700000002.0,
                                                                                  1700000003.0]


def test_truncated_and_junk_lines_warn_naming_the_file(tmp_path):
    lines = (EXPERIMENT / GOOD / "result.json").read_text().splitlines(keepends=True)
    damaged = lines[:5] + ["this is not json\n"] + lines[5:11] + [lines[11][:80]]
    path = write(tmp_path / "trial" / "result.json", "".join(damaged))
    (run,) = RayTuneReader().read([path])
    check(run.scalars, "loss", {1: 1.9760754293403675, 11: 0.010253323666588475}, count=11)
    (warning,) = run.warnings
    assert warning.file == str(path) and warning.count == 2
    assert warning.message == "2 line(s) are not valid JSON and were skipped (the last line is cut off: file truncated?)"
    # with the whole progress.csv beside it, the CSV (12 rows) holds more: it is read instead, and that is said
    shutil.copy(EXPERIMENT / GOOD / "progress.csv", path.parent / "progress.csv")
    (run,) = RayTuneReader().read([path, path.parent / "progress.csv"])
    check(run.scalars, "loss", {12: 0.009906864164293273}, count=12)
    messages = [(w.file, w.message) for w in run.warnings]
    assert (str(path), "holds 11 result row(s) and progress.csv beside it 12: progress.csv was read instead") in messages


def test_values_nested_text_and_non_finite(tmp_path):
    tune = {"trial_id": "t_00000", "date": "2024-01-01_00-00-00", "time_total_s": 1.0, "pid": 7, "done": False,
            "hostname": "h", "node_ip": "127.0.0.1", "time_since_restore": 1.0}
    rows = [
        {"acc": 0.5, "info": {"learner": {"kl": 0.01, "name": "ppo"}, "grads": [1, 2]}, "flag": True,
         "note": "x", "big": 10**400, "training_iteration": 1, "timestamp": 100, "time_this_iter_s": 1.0,
         "iterations_since_restore": 1, "config": {"lr": 0.1}, **tune},
        {"acc": math.inf, "info": {"learner": {"kl": math.nan}}, "training_iteration": 2, "timestamp": 101,
         "time_this_iter_s": 2.0, "iterations_since_restore": 2, "config": {"lr": 0.1}, **tune},
        # restored from its checkpoint, with a new learning rate (Population Based Training)
        {"acc": 0.7, "training_iteration": 3, "timestamp": 105, "time_this_iter_s": 3.0,
         "iterations_since_restore": 1, "config": {"lr": 0.2}, **tune},
    ]
    path = write(tmp_path / "t" / "result.json", "".join(json.dumps(r) + "\n" for r in rows))
    assert RayTuneReader().sniff(path, path.read_bytes())
    (run,) = RayTuneReader().read([path])
    frame = run.scalars
    assert set(frame["tag"]) == {"acc", "info/learner/kl", "big", "time_this_iter_s"}
    check(frame, "acc", {1: 0.5, 3: 0.7}, count=3)
    assert curve(frame, "acc")[2] == math.inf and curve(frame, "big") == {1: math.inf}  # beyond float64
    assert math.isnan(curve(frame, "info/learner/kl")[2])
    assert frame.loc[frame["tag"] == "acc", "wall_time"].tolist() == [100.0, 101.0, 105.0]
    assert run.hparams == {"lr": 0.2}
    notes = notes_text(run)
    assert "non-numeric values skipped under: flag, info/grads, info/learner/name, note" in notes
    assert "the trial was restored 1 time(s) (iterations_since_restore started over at training_iteration 3)" in notes
    assert "the trial's config changed while it ran (Population Based Training?): hparams are the last config; " \
           "changed: lr" in notes
    assert run.warnings == [] and run.restarts == []


def test_trial_that_failed_before_its_first_report(tmp_path):
    trial = tmp_path / "exp" / "f_00000_0_lr=0.1"
    write(trial / "result.json", b"")
    write(trial / "progress.csv", b"")
    write(trial / "params.json", json.dumps({"lr": 0.1}))
    error = (EXPERIMENT / DIVERGED / "error.txt").read_bytes()
    write(trial / "error.txt", error)
    logs = load(tmp_path / "exp", cache=False)
    (info,) = logs.runs.values()
    assert info.format == "ray_tune" and logs.unrecognized == ()
    assert info.hparams == {"lr": 0.1} and len(logs.scalars) == 0
    assert info.status.status == "crashed"
    assert any(w.file.endswith("result.json") and "no results" in w.message for w in info.warnings)


@pytest.mark.parametrize("line", [
    '{"iteration": 19, "total_loss": 1.0, "lr": 0.1}',  # detectron2
    '{"mode": "train", "epoch": 1, "iter": 50, "loss": 1.0}',  # mmcv
    '{"train_loss": 1.0, "epoch": 0, "n_parameters": 10}',  # DETR
    '{"current_steps": 10, "total_steps": 100, "loss": 2.0}',  # LLaMA-Factory
    '{"training_iteration": 3, "loss": 1.0}',  # no trial_id: not Tune's
    '{"training_iteration": 3, "trial_id": "a", "loss": 1.0}',  # none of Tune's other keys
])
def test_other_json_lines_are_not_tune(line, tmp_path):
    for name in ("result.json", "metrics.json", "log.txt"):
        path = write(tmp_path / name, line + "\n")
        assert not RayTuneReader().sniff(path, path.read_bytes()), (line, name)


def test_result_json_is_claimed_by_content_not_by_name(tmp_path):
    line = (EXPERIMENT / GOOD / "result.json").read_text().splitlines()[0]
    path = write(tmp_path / "renamed.jsonl", line + "\n")
    assert _first_claimer(path) == "ray_tune"
    # a first line longer than the sniffed head (a large config) is read on to judge it
    record = json.loads(line)
    record["config"]["big"] = list(range(3000))
    long = write(tmp_path / "t" / "result.json", json.dumps(record) + "\n")
    assert len(long.read_bytes()) > 4096 and _first_claimer(long) == "ray_tune"
    for name in STATE_FILES - {".validate_storage_marker", "tuner.pkl"}:
        assert _first_claimer(EXPERIMENT / name) is None, name


def test_empty_and_unreadable(tmp_path):
    empty = write(tmp_path / "a" / "result.json", b"")
    (run,) = RayTuneReader().read([empty])
    assert run.scalars.empty and any(w.file == str(empty) for w in run.warnings)
    noise = write(tmp_path / "b" / "result.json", np.random.default_rng(0).integers(0, 256, 5000,
                                                                                  dtype=np.uint8).tobytes())
    (run,) = RayTuneReader().read([noise])
    assert run.scalars.empty and run.warnings and all(w.file == str(noise) for w in run.warnings)


def test_a_second_results_file_is_a_run_of_its_own(tmp_path):
    trial = tmp_path / "exp" / GOOD
    shutil.copytree(EXPERIMENT / GOOD, trial)
    lines = (trial / "result.json").read_text().splitlines(keepends=True)
    write(trial / "result_before_restart.json", "".join(lines[:3]))
    reader = RayTuneReader()
    groups = reader.group(sorted(f for f in trial.iterdir() if reader.sniff(f, f.read_bytes()[:4096])))
    assert [[f.name for f in group] for group in groups][1:] == [["result_before_restart.json"]]
    assert "result.json" in {f.name for f in groups[0]} and "progress.csv" in {f.name for f in groups[0]}
    (run,) = reader.read(groups[1])
    check(run.scalars, "loss", {3: 0.3498649654365293}, count=3)
