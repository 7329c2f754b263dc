"""tqdm bars with metrics in their postfix, drawn by real trainings (tests/fixtures/tqdm_console): Lightning's
TQDMProgressBar and a hand-written loop's set_postfix."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tanalyze
from tanalyze.readers import get_reader
from tanalyze.readers.text.console import detect_console_format

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tqdm_console"


def _frame(path: Path):
    (run,) = get_reader("tqdm_console").read([path])
    assert not run.warnings, run.warnings
    return run.scalar_table()


def test_lightnings_bar_agrees_point_for_point_with_its_own_csvlogger():
    """Each batch's train_loss at Lightning's own step (batch index from 0), val_loss at the last batch of its
    epoch: the console read beside the CSVLogger's metrics.csv agrees on every common point."""
    logs = tanalyze.load(FIXTURES / "lightning_tqdm", cache=False)
    (info,) = logs.runs.values()
    assert info.format == "lightning_csv" and info.status.status == "finished"
    [twin] = [note for note in info.notes if note.startswith("twin: train.log (tqdm_console)")]
    assert "it agrees on all 408 common points of 2 tag(s)" in twin  # 400 batches, 8 evaluations: all of them
    frame = _frame(FIXTURES / "lightning_tqdm" / "train.log")
    val = frame[frame["tag"] == "val_loss"]
    assert val["step"].tolist() == [49 + 50 * k for k in range(8)] and val["value"].tolist()[:2] == [0.136, 0.0399]
    train = frame[frame["tag"] == "train_loss"]
    assert train["step"].tolist() == list(range(400)) and train["value"].tolist()[:2] == [9.52, 12.6]
    assert "v_num" not in set(frame["tag"])


def test_a_loops_own_bar_whose_count_lags_is_stepped_by_its_postfix():
    frame = _frame(FIXTURES / "custom_tqdm.log")
    loss = frame[frame["tag"] == "loss"]
    # 6 epochs of 40 batches. In the first, the bar's count stood at 10 while two pairs of batches in a row printed
    # the same loss (1.14, 1.09): each pair is one point, so that epoch has 38; the count catching up at its end
    # is a redraw, and the next epoch starts at step 40 again
    assert loss["step"].tolist() == list(range(38)) + list(range(40, 240))
    assert loss["value"].tolist()[:3] == [1.36, 1.4, 1.35] and loss["value"].tolist()[-1] == 0.103
    assert set(frame[frame["tag"] == "lr"]["value"]) == {0.05}


@pytest.mark.parametrize(("name", "truth"), [("lightning_tqdm/train.log", "normal"), ("custom_tqdm.log", "normal"),
                                             ("lightning_overfit.log", "overfitting"),
                                             ("custom_val_overfit.log", "overfitting")])
def test_verdicts_of_the_trainings_whose_truth_is_known(name, truth):
    (diagnosis,) = tanalyze.diagnose(tanalyze.load(FIXTURES / name, cache=False)).values()
    assert diagnosis.format == "tqdm_console" and diagnosis.verdict.label == truth


def test_bars_without_metrics_are_not_claimed(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"Loading shards: {k * 25}%|{'#' * k}| {k}/4 [00:0{k}<00:00, 1.2it/s]\r" for k in range(5))
                    + "\n" + "Map: 100%|##########| 500/500 [00:00<00:00, 9000.00 examples/s]\n" * 3)
    assert detect_console_format(path) is None


def test_two_bars_with_metrics_in_another_log_do_not_make_it_a_tqdm_log(tmp_path):
    path = tmp_path / "train.log"
    bar = "Epoch 1: 100%|##########| 5/5 [00:00<00:00, 9.0it/s, loss=0.5]\n"
    path.write_text(bar * 2 + "".join(f"step {i} | loss {2 - i / 10:.3f}\n" for i in range(10)))
    assert detect_console_format(path).name == "text"


def test_a_loops_printed_evaluations_between_its_bars_are_read_at_the_last_batch_before_them():
    """A loop that draws a tqdm bar per epoch and prints ``Epoch e: val_loss=… val_acc=…`` after it: the printed
    validation is read too (without it the overfitting this run shows could not be seen)."""
    path = FIXTURES / "custom_val_overfit.log"
    frame = _frame(path)
    val = frame[frame["tag"] == "val_loss"]
    assert val["step"].tolist()[:3] == [2, 5, 8] and val["value"].iloc[0] == 1.1662  # 3 batches an epoch
    assert len(val) == 40 and frame[frame["tag"] == "val_acc"]["value"].iloc[-1] == 0.670
    (d,) = tanalyze.diagnose(tanalyze.load(path, cache=False)).values()
    assert d.verdict.label == "overfitting" and d.roles["val_loss"] == "val_loss"


def test_a_printed_evaluation_is_named_without_the_counter_printed_before_it(tmp_path):
    """``Epoch 1/10 - Validation Loss: 0.6523`` after the epoch's bar: one ``Validation Loss`` curve, not a tag per
    epoch."""
    bar = "Epoch {e}/10 - Training: 100%|{fill}| 2533/2533 [09:33<00:00,  4.41it/s, loss={loss}]\n"
    text = "".join(bar.format(e=e, fill="#" * 40, loss=loss) + f"Epoch {e}/10 - Validation Loss: {val}\n"
                   for e, loss, val in ((1, 0.0625, 0.6523), (2, 0.156, 0.7410), (3, 0.05, 0.52)))
    path = tmp_path / "output.log"
    path.write_text(text)
    frame = _frame(path)
    assert set(frame["tag"]) == {"loss", "Validation Loss"}
    val = frame[frame["tag"] == "Validation Loss"]
    assert val["step"].tolist() == [2532, 5065, 7598] and val["value"].tolist() == [0.6523, 0.7410, 0.52]


_DESCS = ("Epoch 0", "Epoch 1", "Epoch 2/5", "Epoch: 3", "Validation DataLoader 0", "Training", "Sanity Checking",
          "ep 1", "Epoch 12345")
_NAMES = ("v_num", "train_loss", "val_loss", "loss", "lr", "test/acc", "interval")
_VALUES = ("0.5", "1.25", "nan", "x", " 0.5", "1e-3", "0.5 ", "7", "0.5")
_ODD_NAMES = ("x" * 70, "a b", "")
_ODD_VALUES = ("1 2", "", "1=2")
_OTHER_LINES = ("\n", "noise\n", "Epoch 3: val_loss=0.52 val_acc=0.81\n", "| a | b |\n",
                "Validation: |          | 0/? [00:00<?, ?it/s]\n", "x|y| 3/4 [a]\n", "µ\n")


def _bars(names, values):
    return st.tuples(st.sampled_from(_DESCS), st.sampled_from((":", "")), st.sampled_from(("44%", "", "1234%", " 5%")),
                     st.integers(0, 6), st.sampled_from(("6", "?", "3")),
                     st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(names), st.sampled_from(values)),
                                                   max_size=4)),
                     st.sampled_from(("\r", "\r", "\n")))


def _capture(items) -> str:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
            continue
        desc, colon, percent, count, total, post, end = item
        pairs = "" if post is None else "".join(f", {name}={value}" for name, value in post)
        out.append(f"{desc}{colon} {percent}|███▍   | {count}/{total} [00:00<00:01, 7.10it/s{pairs}]{end}")
    return "".join(out)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_bars(_NAMES, _VALUES), min_size=1, max_size=80), st.booleans())
def test_redraws_read_at_once_equal_them_read_one_by_one(tmp_path, monkeypatch, items, cut):
    """Random captures of bars (descriptions with and without an epoch, counts and totals that lag, resumed
    epochs, postfixes of batch and evaluation values that change or not): what each chunk read at once gives, its
    state carried to the next, is what reading each redraw on its own gives."""
    from tanalyze.readers.text.tqdm_console import TqdmConsoleParser
    from tests.readers.text_helpers import read_both_ways, write

    text = _capture(items)
    read_both_ways("tqdm_console", TqdmConsoleParser, write(tmp_path / "train.log", text[:-1] if cut else text),
                   monkeypatch, (None, 200, 700))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_bars(_NAMES + _ODD_NAMES, _VALUES + _ODD_VALUES), st.sampled_from(_OTHER_LINES)),
                min_size=1, max_size=60), st.booleans())
def test_odd_lines_and_pieces_among_redraws_give_what_reading_one_by_one_gives(tmp_path, monkeypatch, items, cut):
    """Lines that are no bars (printed evaluations, tables, noise), names no pair takes whole, values that are no
    numbers: the chunks that hold them are read redraw by redraw, the others at once, the same rows."""
    from tanalyze.readers.text.tqdm_console import TqdmConsoleParser
    from tests.readers.text_helpers import read_both_ways, write

    text = _capture(items)
    read_both_ways("tqdm_console", TqdmConsoleParser, write(tmp_path / "train.log", text[:-1] if cut else text),
                   monkeypatch, (None, 300))


@pytest.mark.parametrize("name", ["custom_tqdm.log", "custom_val_overfit.log", "lightning_overfit.log",
                                  "lightning_tqdm/train.log"])
def test_the_real_captures_read_at_once_equal_them_read_one_by_one(name, monkeypatch):
    """The captures of real trainings, cut into chunks anywhere (a batch's redraws split between two chunks, a line
    of redraws longer than a chunk cut after one of them): read at once, chunk by chunk, as redraw by redraw, and
    the same rows whatever the chunk size."""
    import pandas as pd

    from tanalyze.readers.text.tqdm_console import TqdmConsoleParser
    from tests.readers.text_helpers import read_both_ways

    (whole,) = get_reader("tqdm_console").read([FIXTURES / name])
    small = read_both_ways("tqdm_console", TqdmConsoleParser, FIXTURES / name, monkeypatch, (None, 397, 211, 150))
    pd.testing.assert_frame_equal(small.scalars, whole.scalars, check_exact=True)


@pytest.mark.parametrize("name", ["raw.log", "screen.log", "wide.log"])
def test_bars_tqdm_cut_at_the_terminals_width_and_lightnings_messages_agree_with_its_csvlogger(name):
    """Lightning on a terminal 100 columns wide: tqdm cuts each bar there (no closing ']'; EarlyStopping's message
    runs on after the cut, or on the next line once the screen wraps it). The bar's complete pairs are read, the
    one the cut may have cut is not; ModelCheckpoint's 'val_accuracy' reached V at global step S is V at S - 1,
    the results table of trainer.test at the last step; every value agrees with the same job's CSVLogger (the bar
    prints 3 significant digits, the message 5 decimals, the table all), and no name of a checkpoint's path becomes
    a tag."""
    frame = _frame(FIXTURES / "terminal" / name)
    truth = pd.read_csv(FIXTURES / "terminal" / "lightning_logs" / "version_0" / "metrics.csv")
    expected_tags = {"train_loss", "train_acc", "val_accuracy", "test_accuracy", "test_loss"}
    assert expected_tags <= set(frame["tag"]) <= expected_tags | {"val_loss"}
    last = int(truth["step"].max())
    for tag, tolerance in [("train_loss", 5e-3), ("train_acc", 5e-3), ("val_loss", 5e-3), ("val_accuracy", 5e-6),
                           ("test_accuracy", 1e-12), ("test_loss", 1e-12)]:
        read = frame[frame["tag"] == tag]
        known = truth.dropna(subset=[tag]).groupby("step")[tag].last()
        if tag.startswith("test"):
            assert read["step"].tolist() == [last - 1] and read["value"].iloc[0] == pytest.approx(known.iloc[0], abs=tolerance)
            continue
        for step, value in zip(read["step"], read["value"], strict=True):
            assert value == pytest.approx(known[step], abs=tolerance), (tag, step)
    epochs = truth.dropna(subset=["val_accuracy"])["step"].tolist()
    assert frame[frame["tag"] == "val_accuracy"]["step"].tolist() == epochs  # every epoch's, from its message
    assert set(frame[frame["tag"] == "train_loss"]["step"]) >= set(epochs)
