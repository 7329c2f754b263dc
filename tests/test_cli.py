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


def test_diagnose_prints_the_checkpoints_line(capsys):
    from pathlib import Path

    from tanalyze.cli import main as cli_main

    folder = Path(__file__).parent / "fixtures" / "checkpoints" / "hf_best_off"
    assert cli_main(["diagnose", str(folder)]) == 0
    out = capsys.readouterr().out
    assert ("    checkpoints: 2 on disk; best evaluation step 20 (eval_loss 0.1039); not kept; best on disk "
            "checkpoint-120 (0.1774, +70.7%); top-3 would keep steps 20, 40, 50\n") in out
    assert "WARNING step 20" in out and "best_checkpoint_missing" in out


def test_diagnose_names_the_files_it_gave_no_verdict_for(tmp_path, capsys):
    """A folder with a run and files no reader knows: the diagnosis says which were not read, in its text and its
    JSON, and so does the Python API's result."""
    import json
    import shutil
    from pathlib import Path

    import tanalyze

    runs = tmp_path / "runs"
    shutil.copytree(Path(__file__).parents[1] / "sample_runs" / "normal_nanogpt", runs / "normal_nanogpt")
    (runs / "train_loss.txt").write_text("2.31\n2.05\n1.98\n")
    assert main(["diagnose", str(runs), "--no-cache", "-q", "--json", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    assert f"not read: {runs / 'train_loss.txt'}: no reader recognises it" in out
    assert out.rstrip().endswith("; 1 file(s) not read")
    payload = json.loads((tmp_path / "d.json").read_text())
    assert [item["path"] for item in payload["not_read"]] == [str(runs / "train_loss.txt")]
    assert [item.path for item in tanalyze.diagnose(runs).not_read] == [str(runs / "train_loss.txt")]
