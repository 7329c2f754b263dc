"""timm's train.py console, printed by a small real ViT training with its format strings
(tests/fixtures/timm_console)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tanalyze
from tanalyze.readers import get_reader
from tanalyze.readers.text.console import detect_console_format

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "timm_console"


def _points() -> dict[tuple[str, int], float]:
    (run,) = get_reader("timm_console").read([FIXTURES / "vit_train.log"])
    assert not run.warnings, run.warnings
    frame = run.scalar_table()
    return {(str(t), int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"], strict=True)}


def test_train_lines_give_the_current_values_and_test_lines_the_means_of_the_whole_validation():
    points = _points()
    assert points[("train_loss", 0)] == 1.49 and points[("train_loss", 39)] == 0.304  # not the running means
    assert points[("lr", 0)] == 2.5e-05 and points[("samples_per_s", 0)] == 978.89
    assert points[("train_loss", 2 * 40 + 39)] == 0.101
    # the last Test line of epoch 0 (batch 11 of 11): its means, at the epoch's last update
    assert points[("eval_loss", 39)] == 0.232 and points[("eval_top1", 39)] == 91.667
    assert points[("eval_loss", 239)] == 0.048 and points[("eval_top1", 119)] == 96.667
    assert points[("eval_top5", 39)] == 100.0
    assert sorted(step for tag, step in points if tag == "eval_loss") == [39 + 40 * k for k in range(6)]


def test_the_vit_trainings_verdict_and_roles():
    (d,) = tanalyze.diagnose(tanalyze.load(FIXTURES / "vit_train.log", cache=False)).values()
    assert d.format == "timm_console" and d.verdict.label == "normal"
    assert (d.roles["train_loss"], d.roles["val_loss"], d.roles["throughput"]) == (
        "train_loss", "eval_loss", "samples_per_s")


@pytest.mark.parametrize("text", ["Train: 0 [   0/40 (  2%)]  Loss: 1.49 (1.49)\n",  # one line: a quote
                                  "Test: [   0/11]  Loss: 0.2 (0.2)\n" * 4])
def test_a_stray_line_does_not_make_a_timm_log(text, tmp_path):
    path = tmp_path / "notes.log"
    path.write_text(text)
    reader = detect_console_format(path)
    assert reader is None or reader.name != "timm_console"


def test_train_lines_read_at_once_equal_them_read_line_by_line(tmp_path, monkeypatch):
    from tanalyze.readers.text.timm_console import TimmConsoleParser
    from tests.readers.text_helpers import read_both_ways

    read_both_ways("timm_console", TimmConsoleParser, FIXTURES / "vit_train.log", monkeypatch, (None, 400))
    # older timm's six decimals, a NaN loss, a resumed epoch and a line cut short among the usual ones
    lines = (FIXTURES / "vit_train.log").read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace("Loss: 0.955 ", "Loss:  0.954871 ")
    lines[5] = lines[5].replace("Loss: 0.498 ", "Loss: nan ")
    lines[15:15] = [lines[3], "Train: 1 [  20/40 ( 52%)]  Loss: 0.4\n"]
    path = tmp_path / "train.log"
    path.write_text("".join(lines))
    read_both_ways("timm_console", TimmConsoleParser, path, monkeypatch, (None, 400))
