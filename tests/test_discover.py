"""Discovery: which unclaimed console logs speak for which run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tanalyze.discover import discover


def _csv_run(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "metrics.csv").write_text("step,train_loss\n" + "".join(f"{i},{2 - i / 10}\n" for i in range(10)))


def _consoles(root: Path) -> dict[str, tuple[str, ...]]:
    """Each run's folder and the consoles it was given; a failed job's console that no run took is its own run
    (``job-console``), listed by its file's name."""
    return {Path(run.files[0]).name if run.format == "job-console" else Path(run.directory).name:
            tuple(Path(c).name for c in run.consoles) for run in discover(root).runs}


def test_a_console_above_one_run_is_that_runs(tmp_path):
    _csv_run(tmp_path / "job" / "csv")
    (tmp_path / "job" / "train.log").write_text("Traceback (most recent call last):\nValueError: boom\n")
    assert _consoles(tmp_path) == {"csv": ("train.log",)}


def test_a_console_above_several_runs_is_given_to_none_of_them_unless_named_after_one(tmp_path):
    for name in ("lr1", "lr2", "lr3"):
        _csv_run(tmp_path / "sweep" / name)
    (tmp_path / "sweep" / "train.log").write_text("Traceback (most recent call last):\nValueError: boom\n")
    (tmp_path / "sweep" / "lr2.log").write_text("Killed\n")
    assert _consoles(tmp_path) == {"lr1": (), "lr2": ("lr2.log",), "lr3": (), "train.log": ()}


def test_a_runs_own_folder_console_wins_over_one_above(tmp_path):
    for name in ("a", "b"):
        _csv_run(tmp_path / name)
    (tmp_path / "a" / "stdout.log").write_text("done\n")
    (tmp_path / "train.log").write_text("Killed\n")
    assert _consoles(tmp_path) == {"a": ("stdout.log",), "b": (), "train.log": ()}


def test_a_failed_jobs_console_without_metrics_is_a_run_named_by_its_folder_or_file(tmp_path):
    _csv_run(tmp_path / "ok")
    (tmp_path / "ok" / "notes.txt").write_text("lr sweep, see wiki\n")  # no status: stays not read
    (tmp_path / "oom").mkdir()
    (tmp_path / "oom" / "slurm-7.out").write_text(
        "loading model\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    (tmp_path / "jobs").mkdir()
    for name in ("a.log", "b.log"):
        (tmp_path / "jobs" / name).write_text("Traceback (most recent call last):\nValueError: boom\n")
    found = discover(tmp_path)
    failed = {run.name: run.files for run in found.runs if run.format == "job-console"}
    assert failed == {"oom": (str(tmp_path / "oom" / "slurm-7.out"),),
                      "jobs/a.log": (str(tmp_path / "jobs" / "a.log"),), "jobs/b.log": (str(tmp_path / "jobs" / "b.log"),)}
    assert found.unrecognized == (str(tmp_path / "ok" / "notes.txt"),)
    assert not [run for run in discover(tmp_path, formats=("csv",)).runs if run.format == "job-console"]


def test_a_folder_and_a_file_named_in_bytes_that_are_not_utf8_are_read_named_and_reported(tmp_path):
    import os

    import tanalyze

    root = os.fsencode(tmp_path)
    try:
        os.makedirs(root + b"/r\xe9sum\xe9")
        open(root + b"/r\xe9sum\xe9/notes_\xff.bin", "wb").close()
    except OSError as exc:  # a file system that only takes UTF-8 names
        pytest.skip(f"cannot create a non-UTF-8 name here: {exc}")
    folder = Path(os.fsdecode(root + b"/r\xe9sum\xe9"))
    (folder / "metrics.csv").write_text("step,train_loss\n" + "".join(f"{i},{2 - i / 10}\n" for i in range(10)))
    logs = tanalyze.load(tmp_path, cache=False)
    assert list(logs.runs) == ["r\ufffdsum\ufffd"] and len(logs.scalars_of("r\ufffdsum\ufffd")) == 10
    report = tanalyze.report(logs)
    sizes = report.save(tmp_path / "report.html", tmp_path / "report.json")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert sizes["html"] > 0 and "notes_\ufffd.bin" in page and "r\ufffdsum\ufffd" in page


def test_a_folder_whose_runs_are_symlinks_says_so_when_nothing_is_read(tmp_path):
    """Symlinked run folders are not followed (a link may point anywhere, loops included): a folder holding only
    such links names them in its error rather than 'no training logs found' alone."""
    from tanalyze.errors import NoLogsError

    real = tmp_path / "elsewhere" / "run1"
    real.mkdir(parents=True)
    (real / "metrics.csv").write_text("step,loss\n1,2.0\n2,1.5\n3,1.2\n")
    links = tmp_path / "runs"
    links.mkdir()
    (links / "run1").symlink_to(real, target_is_directory=True)
    with pytest.raises(NoLogsError, match=r"1 symlink\(s\) not followed \(run1\): give a link itself"):
        discover(links)
    assert [run.name for run in discover(links / "run1").runs] == ["run1"]
