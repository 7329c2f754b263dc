"""DVCLive folders: fixtures written by the real dvclive package (``tests/fixtures/dvclive/generate.py``,
pinned in its ``requirements.txt``): a normal run (its report deleted, see there), a run stopped mid-epoch and resumed with
``Live(resume=True)``, and a diverged run (``inf``, ``nan``) in a folder of its own name; damaged files
made here.
"""

import math
import shutil

import numpy as np
import pytest

from tanalyze import load
from tanalyze.discover import discover
from tanalyze.readers import get_readers
from tanalyze.readers.tabular.dvclive import DVCLiveReader
from tests.conftest import REPO
from tests.readers.text_helpers import check, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "dvclive"
BASE = 1_700_000_000.0  # generate.py's clock: 1.5 s per timestamped row

# what generate.py logged (the files hold Python's repr of each float)
SGD_TRAIN = {0: 0.54357339563555, 3: 0.10004908048045147, 7: 0.10000265064012513}
SGD_EVAL = {0: 0.6582431118460318, 1: 0.12628546933916313, 7: 0.09204584899903148}
SGD_R2 = {0: 0.9540207029157096, 7: 0.9935704554133}


def _read(folder):
    (run,) = DVCLiveReader().read(sorted(p for p in folder.rglob("*") if p.is_file()))
    return run


def _claimer(path):
    head = path.read_bytes()[:4096]
    return next((reader.name for reader in get_readers() if reader.sniff(path, head)), None)


def test_a_normal_run_written_by_dvclive():
    logs = load(FIXTURES / "sgd", formats=("dvclive",))
    assert list(logs.runs) == ["sgd"]  # named by the project folder that holds dvclive/
    frame = logs.scalars_of("sgd")
    check(frame, "train/loss", SGD_TRAIN, count=8)
    check(frame, "eval/loss", SGD_EVAL, count=8)
    check(frame, "eval/r2", SGD_R2, count=8)
    assert sorted(frame["tag"].unique()) == ["eval/loss", "eval/r2", "train/loss"]  # 'phase' is text
    eval_loss = frame[frame["tag"] == "eval/loss"]
    assert eval_loss["wall_time"].tolist() == [BASE + 1.5 * (i + 1) for i in range(8)]  # timestamp=True: ms → s
    assert frame[frame["tag"] == "train/loss"]["wall_time"].isna().all()  # DVCLive 3 writes no timestamp by default
    info = logs.runs["sgd"]
    assert {k: v for k, v in info.hparams.items() if k != "_summary"} == {
        "model": {"name": "SGDRegressor", "penalty": "l2"}, "lr": 0.01, "epochs": 8, "seed": 0}
    assert info.hparams["_summary"] == {"train/loss": 0.10000265064012513, "eval/loss": 0.09204584899903148,
                                        "eval/r2": 0.9935704554133, "phase": "main", "best_epoch": 7, "step": 7}
    notes = notes_text(info)
    assert "skipped: phase" in notes
    assert "no history (log_metric(…, plot=False)), kept in hparams['_summary']: best_epoch" in notes
    assert "wall_time empty for eval/r2, train/loss" in notes
    assert info.warnings == ()


def test_discovery_one_run_per_dvclive_folder_and_nothing_of_it_unread():
    found = discover(FIXTURES)
    assert sorted((spec.name, spec.format) for spec in found.runs) == [
        ("logs/runs/diverged_lr", "dvclive"), ("resumed", "dvclive"), ("sgd", "dvclive")]
    sgd = next(spec for spec in found.runs if spec.name == "sgd")
    assert sorted(p.rsplit("dvclive/sgd/", 1)[1] for p in sgd.files) == [
        "dvclive/metrics.json", "dvclive/params.yaml", "dvclive/plots/metrics/eval/loss.tsv",
        "dvclive/plots/metrics/eval/r2.tsv", "dvclive/plots/metrics/phase.tsv",
        "dvclive/plots/metrics/train/loss.tsv"]
    # only what is no part of a DVCLive folder: the project's dvc.yaml (DVC's pipeline file) and this script
    assert sorted(p.rsplit("dvclive/", 1)[1] for p in found.unrecognized) == [
        "generate.py", "requirements.txt", "resumed/dvc.yaml", "sgd/dvc.yaml"]


def test_the_path_given_is_the_dvclive_folder_itself_the_run_keeps_its_project_name():
    logs = load(FIXTURES / "sgd" / "dvclive", formats=("dvclive",))
    assert list(logs.runs) == ["sgd"]
    check(logs.scalars_of("sgd"), "train/loss", SGD_TRAIN, count=8)


def test_a_run_stopped_mid_epoch_and_resumed_keeps_the_later_write():
    logs = load(FIXTURES / "resumed", formats=("dvclive",))
    frame = logs.scalars_of("resumed")
    # train/loss.tsv has step 4 twice (0.0968391470183128 from the stopped attempt, then the resumed one)
    check(frame, "train/loss", {0: 2.148246112110402, 4: 0.09572737770897913, 7: 0.095449518727438}, count=8)
    check(frame, "eval/loss", {3: 0.10762976210236191, 4: 0.09340288619273153, 7: 0.09250350065371706}, count=8)
    wall = frame[(frame["tag"] == "eval/loss") & (frame["step"] == 4)]["wall_time"].iloc[0]
    assert wall == BASE + 7.5  # the resumed session's first timestamped row (the stopped one logged none at 4)
    info = logs.runs["resumed"]
    assert "1 value(s) logged again at the step just logged" in notes_text(info)
    assert info.restarts == () and info.warnings == ()
    assert info.hparams["lr"] == 0.005 and info.hparams["_summary"]["step"] == 7


def test_a_diverged_run_in_a_folder_of_its_own_name_keeps_inf_and_nan():
    logs = load(FIXTURES / "logs", formats=("dvclive",))
    assert list(logs.runs) == ["runs/diverged_lr"]  # Live(dir="runs/diverged_lr"): the folder is the run
    frame = logs.scalars_of("runs/diverged_lr")
    check(frame, "train/loss", {0: 879274.040371776, 62: 3.831924813081625e+302}, count=130)
    values = frame[frame["tag"] == "train/loss"].set_index("step")["value"]
    assert values[63] == math.inf and values[126] == math.inf
    assert math.isnan(values[127]) and math.isnan(values[129])
    assert int(np.isinf(values).sum()) == 64 and int(values.isna().sum()) == 3
    info = logs.runs["runs/diverged_lr"]
    assert info.hparams["_summary"] == {"train/loss": "nan", "eval/loss": "nan", "step": 129}
    assert info.warnings == ()


def test_reader_claims_the_files_it_uses_and_no_tsv_elsewhere(tmp_path):
    for relative in ("sgd/dvclive/plots/metrics/train/loss.tsv", "sgd/dvclive/plots/metrics/phase.tsv",
                     "sgd/dvclive/metrics.json", "sgd/dvclive/params.yaml",
                     "logs/runs/diverged_lr/metrics.json"):
        assert _claimer(FIXTURES / relative) == "dvclive", relative
    assert _claimer(FIXTURES / "sgd" / "dvc.yaml") is None
    assert DVCLiveReader().run_directory(FIXTURES / "sgd/dvclive/plots/metrics/eval/loss.tsv") == FIXTURES / "sgd"
    # a TSV of the same shape anywhere else, and a metrics.json that is no DVCLive summary, are not ours
    other = write(tmp_path / "results" / "loss.tsv", "step\tloss\n0\t1.0\n")
    assert not DVCLiveReader().sniff(other, other.read_bytes())
    lines = write(tmp_path / "output" / "metrics.json", '{"iteration": 19, "total_loss": 1.5}\n')
    assert not DVCLiveReader().sniff(lines, lines.read_bytes())
    generic = write(tmp_path / "data" / "plots" / "metrics" / "table.tsv", "name\tcount\nfoo\t3\n")
    assert not DVCLiveReader().sniff(generic, generic.read_bytes())


def test_the_report_images_and_plot_files_are_claimed_with_the_run_and_named(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "sgd", project)
    write(project / "dvclive" / "report.html", "<html><body>DVCLive Report</body></html>")  # Live(report="html")
    write(project / "dvclive" / "plots" / "images" / "sample.png", b"\x89PNG\r\n\x1a\n" + bytes(20))
    write(project / "dvclive" / "plots" / "sklearn" / "confusion_matrix.json", '{"confusion_matrix": []}')
    found = discover(project)
    (spec,) = found.runs
    assert sum(f.endswith(("report.html", "sample.png", "confusion_matrix.json")) for f in spec.files) == 3
    assert [p.rsplit("/", 1)[1] for p in found.unrecognized] == ["dvc.yaml"]
    run = _read(project / "dvclive")
    assert ("not read (tanalyze reads no images or plot data): 1 image(s) (plots/images), "
            "1 sklearn plot file(s) (plots/sklearn)") in notes_text(run)


def test_old_layout_scalars_and_summary_beside_the_folder(tmp_path):
    """DVCLive 0.x: ``dvclive/scalars/<name>.tsv`` (timestamp, step, the whole name) and ``dvclive.json``."""
    live = tmp_path / "exp" / "dvclive"
    write(live / "scalars" / "train" / "loss.tsv",
          "timestamp\tstep\ttrain/loss\n1600000000000\t0\t0.9\n1600000001000\t1\t0.5\n")
    write(live / "scalars" / "acc.tsv", "timestamp\tstep\tacc\n1600000000000\t0\t0.25\n1600000001000\t1\t0.5\n")
    write(tmp_path / "exp" / "dvclive.json", '{\n    "step": 1,\n    "train": {"loss": 0.5}, "acc": 0.5\n}')
    found = discover(tmp_path)
    assert [(spec.name, len(spec.files)) for spec in found.runs] == [("exp", 3)] and not found.unrecognized
    logs = load(tmp_path, formats=("dvclive",))
    frame = logs.scalars_of("exp")
    check(frame, "train/loss", {0: 0.9, 1: 0.5}, count=2)
    assert frame[frame["tag"] == "acc"]["wall_time"].tolist() == [1_600_000_000.0, 1_600_000_001.0]
    assert logs.runs["exp"].hparams["_summary"] == {"step": 1, "train/loss": 0.5, "acc": 0.5}
    # a scalars/ folder with no DVCLive summary beside it is anybody's
    other = write(tmp_path / "other" / "scalars" / "x.tsv", "timestamp\tstep\tx\n1\t0\t1.0\n")
    assert not DVCLiveReader().sniff(other, other.read_bytes())


def _live(tmp_path, body: bytes | str, name: str = "loss"):
    live = tmp_path / "dvclive"
    path = write(live / "plots" / "metrics" / f"{name}.tsv", body)
    return path, _read(live)


def test_a_tsv_cut_mid_line_keeps_every_whole_row_and_says_so(tmp_path):
    path, run = _live(tmp_path, "step\tloss\n0\t1.5\n1\t1.25\n2\t1.0\n3\t0.7")
    check(run.scalars, "loss", {0: 1.5, 1: 1.25, 2: 1.0}, count=3)  # '0.7' may be '0.75' cut short: not kept
    (warning,) = run.warnings
    assert warning.file == str(path) and "last line is cut off" in warning.message and warning.location == "line 5"


def test_junk_rows_and_text_cells_are_skipped_and_counted(tmp_path):
    path, run = _live(tmp_path, "timestamp\tstep\tloss\n1000\t0\t1.5\ngarbage line\n2000\t1\toops\n3000\t2\t-inf\n"
                                "4000\t3.5\t0.5\n5000\t4\tnan\n")
    check(run.scalars, "loss", {0: 1.5, 2: -math.inf}, count=3)
    assert math.isnan(run.scalars[run.scalars["step"] == 4]["value"].iloc[0])
    assert run.scalars["wall_time"].tolist() == [1.0, 3.0, 5.0]
    (warning,) = run.warnings
    assert warning.file == str(path) and warning.count == 3 and warning.location == "line 3, 4, 6"


def test_a_missing_header_is_read_by_its_field_count_with_a_warning(tmp_path):
    path, run = _live(tmp_path, "0\t0.5\n1\t0.25\n")
    check(run.scalars, "loss", {0: 0.5, 1: 0.25}, count=2)
    (warning,) = run.warnings
    assert warning.file == str(path) and "no header line" in warning.message
    assert _claimer(path) == "dvclive"


@pytest.mark.parametrize("body", [b"", b"\x00\xff\xfe" * 50, "épsilon\tbad\nx\ty\n".encode("latin-1")])
def test_unreadable_metric_files_give_a_warning_naming_the_file_never_a_traceback(tmp_path, body):
    path, run = _live(tmp_path, body)
    assert len(run.scalars) == 0
    assert run.warnings and all(w.file == str(path) for w in run.warnings)


def test_metrics_without_next_step_are_spread_and_steps_that_go_back_are_a_restart(tmp_path):
    live = tmp_path / "dvclive"
    write(live / "plots" / "metrics" / "nostep.tsv", "step\tnostep\n0\t3.0\n0\t2.0\n0\t1.0\n")
    write(live / "plots" / "metrics" / "loss.tsv", "step\tloss\n0\t5.0\n1\t4.0\n2\t3.0\n3\t2.5\n1\t3.9\n2\t2.9\n")
    run = _read(live)
    check(run.scalars, "nostep", {0: 3.0, 1: 2.0, 2: 1.0}, count=3)
    check(run.scalars, "loss", {0: 5.0, 1: 3.9, 2: 2.9}, count=3)  # the abandoned step 3 is dropped too
    (restart,) = run.restarts
    assert (restart.step, restart.until) == (1, 3) and "replace 3 earlier point(s)" in restart.detail
    assert "spread over steps 0, 1, 2 … in the order written: nostep" in notes_text(run)


def test_a_broken_summary_or_params_is_a_warning_and_the_metrics_still_read(tmp_path):
    live = tmp_path / "dvclive"
    write(live / "plots" / "metrics" / "loss.tsv", "step\tloss\n0\t1.0\n")
    write(live / "metrics.json", '{"loss": 1.0, ')
    write(live / "params.yaml", "lr: [0.1\n")
    run = _read(live)
    check(run.scalars, "loss", {0: 1.0}, count=1)
    assert sorted(w.file.rsplit("/", 1)[1] for w in run.warnings) == ["metrics.json", "params.yaml"]
