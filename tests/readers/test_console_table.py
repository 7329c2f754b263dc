"""Per-epoch console tables: fastai's, from the real fit in ``tests/fixtures/console_table/generate.py`` (its
progress bars redrawn between the rows), and skorch's lines as it prints them."""

import re

import pandas as pd

from tanalyze import load
from tanalyze.readers import HEAD_BYTES, get_reader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FASTAI = REPO / "tests" / "fixtures" / "console_table" / "fastai_fit.log"


def test_a_real_fastai_console_with_two_fits():
    logs = load(FASTAI.parent, cache=False)
    (name,) = logs.runs
    info = logs.runs[name]
    assert info.format == "console_table"
    frame = logs.scalars_of(name)
    # fit_one_cycle(6), then fit_one_cycle(3): the second table's epochs 0-2 follow as steps 6-8
    check(frame, "train_loss", {0: 0.684848, 5: 0.658808, 6: 0.64504, 8: 0.633357}, count=9)
    check(frame, "valid_loss", {0: 0.689365, 8: 0.622995}, count=9)
    check(frame, "error_rate", {0: 0.5, 3: 0.366667}, count=9)
    check(frame, "epoch_time_s", {0: 0.0}, count=9)
    assert [(p.first_step, p.last_step) for p in info.phases] == [(0, 5), (6, 8)]
    assert "2 per-epoch table(s)" in notes_text(info) and not info.warnings


def test_skorchs_table_with_its_rule_and_marks(tmp_path):
    text = ("  epoch    train_loss    valid_acc    valid_loss     dur\n"
            "-------  ------------  -----------  ------------  ------\n"
            "      1        0.6905       0.5600        0.6813  0.0359\n"
            "      2        0.6712       0.6100+       0.6601+ 0.0301\n"
            "      3        0.6511       0.6400+       0.6420+ 1:02\n")
    path = write(tmp_path / "skorch.log", text)
    reader = get_reader("console_table")
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    assert curve(run.scalars, "valid_acc") == {1: 0.56, 2: 0.61, 3: 0.64}
    assert curve(run.scalars, "epoch_time_s") == {1: 0.0359, 2: 0.0301, 3: 62}  # skorch's dur; a clock in seconds


def test_unmeasured_cells_and_rows_of_another_width(tmp_path):
    text = ("epoch     train_loss  valid_loss  accuracy  time\n"
            "0         0.9         #na#        #na#      01:02:03\n"
            "1         0.7         0.8         0.6\n"
            "2         0.5         0.6         0.7       00:10\n")
    (run,) = get_reader("console_table").read([write(tmp_path / "train.log", text)])
    assert curve(run.scalars, "train_loss") == {0: 0.9, 2: 0.5}
    assert curve(run.scalars, "epoch_time_s") == {0: 3723, 2: 10}
    notes = notes_text(run)
    assert "2 cell(s) of '#na#' (not measured) skipped" in notes
    assert "1 row(s) under no header or with another number of cells skipped" in notes
    (warning,) = run.warnings  # the row that was not read is named
    assert warning.location == "line 3"


def test_a_time_column_of_clocks_and_numbers(tmp_path):
    """Clocks of either length and plain seconds in one column: each read as what it is."""
    text = ("epoch     train_loss  time\n"
            "0         0.9         0.03\n"
            "1         0.8         1:02:03\n"
            "2         0.7         00:10\n")
    (run,) = get_reader("console_table").read([write(tmp_path / "train.log", text)])
    assert curve(run.scalars, "epoch_time_s") == {0: 0.03, 1: 3723, 2: 10}
    (run,) = get_reader("console_table").read([write(tmp_path / "train.log", text + "3         0.6         #na#\n")])
    assert curve(run.scalars, "epoch_time_s") == {0: 0.03, 1: 3723, 2: 10}  # (no point at epoch 3)
    assert "1 cell(s) of '#na#' (not measured) skipped" in notes_text(run)


def test_numbers_in_other_logs_are_no_table(tmp_path):
    for text in ("epoch 1 loss 0.5\n2 0.4\n", "Epoch     Loss\n1 0.5 0.7\n", "step loss\n1 0.5\n"):
        path = write(tmp_path / "train.log", text)
        assert not get_reader("console_table").sniff(path, path.read_bytes())


def test_epochs_that_go_back_under_one_header_are_a_restart_at_their_line(tmp_path):
    text = ("epoch     train_loss  time\n"
            "0         0.9         00:10\n"
            "1         0.8         00:10\n"
            "2         0.7         00:10\n"
            "1         0.75        00:11\n"
            "2         0.65        00:11\n")
    (run,) = get_reader("console_table").read([write(tmp_path / "train.log", text)])
    (restart,) = run.restarts
    assert (restart.step, restart.until) == (1, 2) and "(line 5)" in restart.detail
    assert curve(run.scalars, "train_loss") == {0: 0.9, 1: 0.75, 2: 0.65}  # the later values kept


ODD_CELLS = ["1.2.3", "INF", "nan", "NaN", "inf", "Infinity", "INFINITY", "1_0", "0.5+", "0.5++", "#na#", "#na#+",
             "1:02", "1:123:45", "01:02:03", "00:10+", "1e5", "5e", "+.5", "-2.", "\u0661\u0662", "x", "0.1\x0c2"]


def test_row_shaped_lines_with_words_that_are_no_cells_read_as_the_exact_row_pattern_reads_them(tmp_path, monkeypatch):
    """The reader finds row-shaped lines with any words and tells the cells after: it reads exactly what a pattern
    of whole cells (clock, number, #na#) reads, with the same notes, warnings and restarts."""
    lines = ["epoch     train_loss  valid_loss  time"]
    for k, cell in enumerate(ODD_CELLS):
        lines += [f"{k}         0.5         {cell}      00:{k:02d}", f"{k}  {cell}  0.1  0.2  0.3",
                  f"{100 - k}     {cell}    0.25    1:00:00"]
    lines += ["99999999999999999999999   0.5   0.5   00:01", "7 " + " 0.1" * 41, "3   0.5   0.6   00:02",
              "epoch     loss", "1   " + ODD_CELLS[0], "2   0.5+", "3   #na#"]
    path = write(tmp_path / "train.log", "\n".join(lines) + "\n")
    (loose,) = get_reader("console_table").read([path])
    from tanalyze.readers.text import console_table
    exact = re.compile(rf"\n[ \t]*+(?=[0-9e])(?:({console_table._HEADER})|({console_table._ROW}))[ \t]*+(?=\n)")
    monkeypatch.setattr(console_table.ConsoleTableParser, "line", exact)
    (whole_cells,) = get_reader("console_table").read([path])
    pd.testing.assert_frame_equal(loose.scalars, whole_cells.scalars, check_exact=True)
    assert (loose.notes, loose.warnings, loose.restarts) == (whole_cells.notes, whole_cells.warnings,
                                                             whole_cells.restarts)
    assert len(loose.scalars) > 60 and loose.restarts and loose.warnings  # (the test reads something)


def test_an_epoch_too_long_to_be_a_step_is_named_not_a_crash(tmp_path):
    text = ("epoch     train_loss  time\n0         0.9         00:10\n"
            "99999999999999999999999         0.8         00:10\n2         0.7         00:10\n")
    (run,) = get_reader("console_table").read([write(tmp_path / "train.log", text)])
    assert curve(run.scalars, "train_loss") == {0: 0.9, 2: 0.7}
    (warning,) = run.warnings
    assert "1 line(s) look like console table metrics but could not be read, e.g. line 3" in warning.message
