"""fairseq logs. fairseq is not installed: the fixtures in tests/fixtures/fairseq reproduce record lines of
real public logs (see its README.md): fairseq 0.12 simple-format lines of a GLAT run on WMT16 en-ro (2023),
the legacy ``| epoch 001 | …`` shapes from public READMEs/scripts, and ``hydra_train.log`` lines (JSON
interval records of a public MoE run, 2024; a wav2vec-U validation line, 2026).
"""

import calendar
import math

import pytest

from tanalyze import load
from tanalyze.readers.text.console import detect_console_format
from tanalyze.readers.text.fairseq import FairseqReader
from tests.conftest import REPO
from tests.readers.text_helpers import check, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "fairseq"


def _read(path):
    reader = FairseqReader()
    assert reader.sniff(path, path.read_bytes()[:4096])
    (run,) = reader.read([path])
    return run


def test_modern_simple_format():
    run = _read(FIXTURES / "modern" / "train.log")
    frame = run.scalars
    check(frame, "train_inner/loss", {40100: 3.147, 40200: 3.153, 40300: 3.14, 40600: 3.12}, count=6)
    check(frame, "train_inner/lr", {40100: 0.000157917})
    check(frame, "train_inner/wps", {40200: 132396.0})
    check(frame, "train/loss", {40297: 3.14, 40579: 3.122}, count=2)  # epoch averages
    check(frame, "train/loss_scale", {40297: 32768.0})
    check(frame, "valid/loss", {40297: 12.677, 40579: 12.66}, count=2)
    check(frame, "valid/bleu", {40297: 29.52, 40579: 29.03})
    check(frame, "valid/best_bleu", {40297: 30.53})
    assert "train_inner/num_updates" not in set(frame["tag"]) and "train_inner/epoch" not in set(frame["tag"])
    row = frame[(frame["tag"] == "train_inner/loss") & (frame["step"] == 40100)].iloc[0]
    assert row["wall_time"] == calendar.timegm((2023, 6, 13, 17, 31, 8))
    assert row["epoch"] == pytest.approx(142 + 85 / 282)
    assert frame[(frame["tag"] == "valid/loss")]["epoch"].tolist() == [143.0, 144.0]
    assert "step = num_updates" in notes_text(run)
    assert run.warnings == [] and run.restarts == []


def test_legacy_pipe_format():
    run = _read(FIXTURES / "legacy" / "train.log")
    frame = run.scalars
    check(frame, "train_inner/loss", {11: 15.180}, count=1)
    check(frame, "train_inner/ppl", {11: 37113.65})
    check(frame, "valid/loss", {10000: 8.185, 27301: 1.066}, count=2)
    check(frame, "valid/best_accuracy", {27301: 0.843871})
    check(frame, "train/accuracy", {27301: 0.96072})
    check(frame, "train/wall", {27301: 248855.0})
    assert frame["wall_time"].isna().all()
    assert run.warnings == []


def test_hydra_json_records_and_a_cut_last_line():
    run = _read(FIXTURES / "hydra" / "hydra_train.log")
    frame = run.scalars
    check(frame, "train_inner/loss", {10: 21.229, 20: 15.052}, count=2)  # JSON values are strings
    check(frame, "train_inner/ppl", {10: 1.98043e06})
    check(frame, "train_inner/lr", {10: 7.33333e-06, 20: 1.4e-05})
    check(frame, "valid/accuracy", {20: 60.0})
    check(frame, "valid/loss", {20: 4.0})
    check(frame, "valid/weighted_lm_ppl", {1000: 578.344})
    row = frame[(frame["tag"] == "train_inner/loss") & (frame["step"] == 10)].iloc[0]
    assert row["wall_time"] == pytest.approx(calendar.timegm((2024, 2, 29, 8, 0, 28)) + 0.233)
    assert math.isclose(row["epoch"], 0.012)  # 'update': the fraction of epochs done
    (warning,) = run.warnings
    assert "the last line ends without a line break" in warning.message and '"loss": "12.' in warning.message


def test_junk_lines_restart_and_empty_file(tmp_path):
    text = ("| epoch 001:     10 / 100 loss=2.0, num_updates=10\n"
            "| epoch 001:     20 / 100 loss=1.5, num_updates=20\n"
            "| epoch 001:     30 / 100 loss=oops, num_updates=lots\n"
            "hello\n"
            "| epoch 001:     10 / 100 loss=1.9, num_updates=10\n")
    run = _read(write(tmp_path / "train.log", text))
    # back to its first update: a new session appended (a phase), shifted to follow the first one
    check(run.scalars, "train_inner/loss", {10: 2.0, 20: 1.5, 21: 1.9}, count=3)
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(10, 20, 0), (21, 21, 11)]
    assert run.restarts == []
    (warning,) = run.warnings
    assert "1 line(s) look like fairseq metrics but could not be read" in warning.message
    (empty,) = FairseqReader().read([write(tmp_path / "empty.log", b"")])
    assert empty.scalars.empty and empty.warnings


def test_discovery_and_console_detection():
    assert detect_console_format(FIXTURES / "hydra" / "hydra_train.log").name == "fairseq"
    logs = load(FIXTURES)
    assert {name: info.format for name, info in logs.runs.items()} == {
        "hydra": "fairseq", "legacy": "fairseq", "modern": "fairseq"}
