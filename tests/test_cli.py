import subprocess
import sys

from tanalyze.cli import main


def test_missing_path_is_a_usage_error(tmp_path, capsys):
    code = main(["runs", str(tmp_path / "nope")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "nope" in err


def test_folder_without_logs_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "notes.md").write_text("# not a log\n")
    code = main(["runs", str(tmp_path)])
    assert code == 2
    assert "no training logs found" in capsys.readouterr().err


def test_unknown_subcommand_exits_2():
    assert main(["frobnicate"]) == 2


def test_console_entry_point_runs():
    done = subprocess.run([sys.executable, "-m", "tanalyze", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.startswith("tanalyze ")


def test_closed_pipe_ends_quietly():
    from tests.conftest import SAMPLE_RUNS

    proc = subprocess.Popen(
        [sys.executable, "-m", "tanalyze", "runs", str(SAMPLE_RUNS), "--verbose"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait() == 0
    assert "Traceback" not in err
