"""Bad input through the real command line: a clear message naming the path, the right exit code, no traceback.

Exit codes: 0 success (runs that could not be read are listed with why), 1 a check failed,
2 usage or input errors only. Tests run ``python -m tanalyze`` in a subprocess with the
checkout on ``PYTHONPATH``, as a user would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tanalyze.cli import main
from tests.conftest import REPO, SAMPLE_RUNS

ESC = "\x1b"


def tanalyze(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "tanalyze", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300, check=False)


def assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("command", ["runs", "diagnose", "report", "check"])
def test_missing_path_exits_2_naming_it(tmp_path, command):
    missing = tmp_path / "no such folder"
    args = [command, str(missing)] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    done = tanalyze(*args)
    assert_clean(done)
    assert done.returncode == 2
    assert str(missing) in done.stderr and ("no such file" in done.stderr or "does not exist" in done.stderr)


def test_empty_folder_exits_2(tmp_path):
    done = tanalyze("runs", str(tmp_path))
    assert_clean(done)
    assert done.returncode == 2
    assert f"{tmp_path}: no training logs found" in done.stderr


def test_unsupported_files_exit_2_and_say_how_many(tmp_path):
    (tmp_path / "model.bin").write_bytes(os.urandom(5000))
    (tmp_path / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(100))
    done = tanalyze("runs", str(tmp_path))
    assert_clean(done)
    assert done.returncode == 2
    assert "no training logs found; 2 file(s) not recognised" in done.stderr


def test_unknown_format_is_a_usage_error(tmp_path):
    done = tanalyze("runs", str(SAMPLE_RUNS / "normal_nanogpt"), "--format", "nope")
    assert_clean(done)
    assert done.returncode == 2 and "unknown format(s) ['nope']" in done.stderr


def test_bad_arguments_exit_2(tmp_path):
    done = tanalyze("runs")
    assert done.returncode == 2 and "usage:" in done.stderr
    done = tanalyze("parse", str(SAMPLE_RUNS / "normal_nanogpt"), "-o", str(tmp_path / "out.xlsx"))
    assert_clean(done)
    assert done.returncode == 2 and "unknown output type '.xlsx'" in done.stderr


@pytest.fixture
def mixed(tmp_path):
    """Two good runs and three bad ones: an event file of noise, an empty event file, an empty CSV log."""
    root = tmp_path / "mixed"
    shutil.copytree(SAMPLE_RUNS / "normal_nanogpt", root / "good_nanogpt")
    shutil.copytree(SAMPLE_RUNS / "normal_tensorboard", root / "good_tb")
    (root / "noise_tb").mkdir()
    (root / "noise_tb" / "events.out.tfevents.1700000000.host.1.0").write_bytes(os.urandom(3000))
    (root / "empty_tb").mkdir()
    (root / "empty_tb" / "events.out.tfevents.1700000000.host.2.0").write_bytes(b"")
    (root / "version_0").mkdir()
    (root / "version_0" / "metrics.csv").write_text("")
    (root / "version_0" / "hparams.yaml").write_text("lr: 0.1\n")
    return root


def test_mixed_good_and_bad_runs_report_the_good_and_say_why_for_the_bad(mixed):
    done = tanalyze("runs", str(mixed))
    assert_clean(done)
    assert done.returncode == 0
    out = done.stdout
    assert "good_nanogpt  [nanogpt]" in out and "good_tb  [tensorboard]" in out
    assert "not a TensorBoard event file: no intact record in 3,000 bytes" in out
    assert "empty file: no events were written" in out
    assert "empty file: no CSV header" in out  # a Lightning job that stopped before its first flush
    blocks = {block.split("  [")[0]: block for block in out.split("\n") if "  [" in block}
    assert {"good_nanogpt", "good_tb", "noise_tb", "empty_tb", "version_0"} <= set(blocks)
    assert "0 points" in blocks["noise_tb"] and "0 points" in blocks["empty_tb"]
    assert ", 0 points" not in blocks["good_tb"]


def test_mixed_runs_parse_writes_the_good_rows(mixed, tmp_path):
    out = tmp_path / "table.csv"
    done = tanalyze("parse", str(mixed), "-o", str(out))
    assert_clean(done)
    assert done.returncode == 0
    import pandas as pd

    table = pd.read_csv(out)
    assert set(table["run"]) == {"good_nanogpt", "good_tb"}
    assert "warning(s)" in done.stderr


def test_parse_into_a_missing_folder_is_a_clear_error_before_any_reading(mixed, tmp_path):
    done = tanalyze("parse", str(mixed), "-o", str(tmp_path / "no_such_folder" / "table.csv"))
    assert_clean(done)
    assert done.returncode == 2
    assert "table.csv: cannot write there, folder" in done.stderr and "does not exist" in done.stderr


def test_mixed_runs_report_lists_the_unreadable_runs(mixed, tmp_path):
    page = tmp_path / "r.html"
    done = tanalyze("report", str(mixed), "-o", str(page), "--jobs", "1")
    assert_clean(done)
    assert done.returncode == 0, done.stderr[-2000:]
    html = page.read_text(encoding="utf-8")
    assert "good_tb" in html and "noise_tb" in html
    assert "no intact record in 3,000 bytes" in html


# ------------------------------------------------------------------ permissions

def _root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.mark.skipif(_root(), reason="running as root: permission bits are not enforced (the simulated test covers it)")
def test_unreadable_file_and_folder_through_the_cli(tmp_path):
    folder = tmp_path / "locked"
    shutil.copytree(SAMPLE_RUNS / "normal_nanogpt", folder)
    os.chmod(folder, 0)
    try:
        done = tanalyze("runs", str(folder))
    finally:
        os.chmod(folder, 0o755)
    assert_clean(done)
    assert done.returncode == 2 and f"{folder}: permission denied" in done.stderr
    log = folder / "train.log"
    os.chmod(log, 0)
    try:
        done = tanalyze("runs", str(log))
    finally:
        os.chmod(log, 0o644)
    assert done.returncode == 2 and f"{log}: permission denied" in done.stderr


@pytest.mark.parametrize("target", ["folder", "file"])
def test_permission_denied_is_a_clear_input_error(tmp_path, monkeypatch, capsys, target):
    """Simulated (tests may run as root, where permission bits do not apply): os.access says no."""
    folder = tmp_path / "locked"
    shutil.copytree(SAMPLE_RUNS / "normal_nanogpt", folder)
    path = folder if target == "folder" else folder / "train.log"
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == path else real_access(p, mode, **kw))
    assert main(["runs", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"tanalyze: error: {path}: permission denied"


def test_unreadable_file_inside_a_folder_is_listed_with_why(tmp_path, monkeypatch, capsys):
    """A file that cannot be opened (permissions, vanished) is named with the reason, not just 'not recognised'."""
    root = tmp_path / "runs"
    shutil.copytree(SAMPLE_RUNS / "normal_nanogpt", root / "a")
    shutil.copytree(SAMPLE_RUNS / "normal_tensorboard", root / "b")
    [event] = (root / "b").glob("*tfevents*")
    real_open = open

    def refusing_open(file, *args, **kwargs):
        if Path(str(file)) == event and args and "b" in args[0]:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    import builtins

    monkeypatch.setattr(builtins, "open", refusing_open)
    assert main(["runs", str(root)]) == 0
    out = capsys.readouterr().out
    assert "a  [nanogpt]" in out
    assert f"not read: {event}: could not read: Permission denied" in out
    assert out.rstrip().endswith("1 file(s) not recognised, 1 could not be read")


# ------------------------------------------------------------------ the terminal

def test_escape_sequences_in_names_tags_and_notes_are_neutralised(tmp_path):
    """A run name, tag or note that carries terminal escapes cannot rewrite the user's terminal."""
    evil = "run \x1b[2J\x1b]0;owned\x07 \x1b[31mred\u202e"
    run = tmp_path / "logs" / evil
    run.mkdir(parents=True)
    lines = [f"iter {i}: loss {2.0 / (i + 1):.4f}, time 10.00ms, mfu 30.00%" for i in range(30)]
    lines += ["Traceback (most recent call last):", f"ValueError: \x1b[2Jboom\x07{evil}"]
    (run / "train.log").write_text("\n".join(lines) + "\n")
    for args in (["runs", "-v"], ["diagnose"], ["check"]):
        done = tanalyze(*args, str(tmp_path / "logs"))
        assert_clean(done)
        assert done.returncode in (0, 1), (args, done.stderr[-2000:])
        for stream in (done.stdout, done.stderr):
            assert ESC not in stream and "\x07" not in stream and "\u202e" not in stream, (args, stream[:500])
        assert "\\x1b[2J" in done.stdout, args  # shown, made visible
    done = tanalyze("runs", str(tmp_path / "logs" / evil / "missing"))
    assert done.returncode == 2 and ESC not in done.stderr and "\\x1b[2J" in done.stderr


def test_unreadable_subfolder_is_listed_and_the_rest_is_read(tmp_path, monkeypatch, capsys):
    """A folder of runs that cannot be listed is named with the reason; its siblings are read."""
    root = tmp_path / "runs"
    shutil.copytree(SAMPLE_RUNS / "normal_nanogpt", root / "a")
    shutil.copytree(SAMPLE_RUNS / "normal_nanogpt", root / "locked")
    real_scandir = os.scandir

    def refusing(path="."):
        if Path(path) == root / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    assert main(["runs", str(root)]) == 0
    out = capsys.readouterr().out
    assert "a  [nanogpt]" in out and "locked  [" not in out
    assert f"not read: {root / 'locked'}: Permission denied" in out
