"""``tanalyze report``: exit codes, outputs and messages."""

from __future__ import annotations

from tanalyze.cli import main


def test_missing_path_is_a_usage_error(tmp_path, capsys):
    code = main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "nope" in err
    assert not (tmp_path / "r.html").exists()


def test_folder_without_logs_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "notes.md").write_text("# not a log\n")
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    assert "no training logs found" in capsys.readouterr().err


def test_output_folder_must_exist(tmp_path, capsys):
    code = main(["report", str(tmp_path), "-o", str(tmp_path / "missing" / "r.html")])
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot write there" in err and "does not exist" in err


def test_smoothing_out_of_range_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--smoothing", "1.5"]) == 2
    assert "must be in [0, 1)" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--smoothing", "abc"]) == 2


def test_bad_role_override_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--role", "val_loss"]) == 2
    assert "ROLE=TAG" in capsys.readouterr().err


def test_no_path_is_a_usage_error(capsys):
    assert main(["report"]) == 2
