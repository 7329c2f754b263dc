"""llm.c: the real console logs of HectorFCardenas/llm.c (SLURM stdout of train_gpt2cu) and main.log records.

The ``main.log`` lines below have the shapes llm.c's logger writes (``"s:%d tel:%.4f"``,
``"s:%d trl:%.4f lr:%.6f norm:%.2f"``, ``"s:%d eval:%.4f"`` in ``llmc/logger.h``); the corpus
has no real main.log (the repository's is a Git-LFS pointer), so their values are those of
the real console log of the same run, rounded as the logger rounds them.
"""

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanalyze import load
from tanalyze.readers import get_reader
from tanalyze.readers.text.console import detect_console_format
from tanalyze.readers.text.llmc import LlmcReader
from tests.conftest import real_log
from tests.readers.text_helpers import check, notes_text, write

FOLDER = "llmc_logs/HectorFCardenas__llm.c"
COMPLETE = f"{FOLDER}/gpt2_train.11685414.log"
CUT = f"{FOLDER}/gpt2_train.11672114.log"

MAIN_LOG = """s:0 tel:11.0079
s:0 trl:11.0097 lr:0.000001 norm:15.08
s:1 trl:10.9566 lr:0.000002 norm:15.24
s:2 trl:10.8488 lr:0.000003 norm:14.77
s:250 tel:6.2022
s:250 eval:0.2483
s:250 trl:6.1558 lr:0.000215 norm:0.76
"""


def _read(relative):
    path = real_log(relative)
    reader = LlmcReader()
    assert reader.sniff(path, path.read_bytes()[:4096])
    (run,) = reader.read([path])
    return run


def test_complete_run_console_log():
    run = _read(COMPLETE)
    frame = run.scalars
    # 'step    1/19560 | loss 11.009662 (+nanz)| norm 15.0789 (+nanz)| lr 8.57e-07 | 4230.95 ms | 31.9% bf16 MFU | 123917 tok/s'
    check(frame, "train/loss", {1: 11.009662, 250: 6.155867, 19560: 3.253402}, count=19559)
    check(frame, "grad_norm", {1: 15.0789, 250: 0.7611})
    check(frame, "lr", {1: 8.57e-07, 250: 2.14e-04})
    check(frame, "time_ms", {1: 4230.95})
    check(frame, "mfu", {1: 31.9})
    check(frame, "tok_per_s", {1: 123917.0})
    check(frame, "loss_zscore", {250: -1.41}, count=19431)  # '(+nanz)' until the window is full
    # 'val loss' / 'HellaSwag' lines carry no step: the step of the last update printed before them
    check(frame, "val/loss", {0: 11.007921, 250: 6.202221, 19560: 3.264775}, count=80)
    check(frame, "hellaswag/acc", {250: 0.248257, 19560: 0.304621}, count=79)
    assert run.hparams["train_num_batches"] == 19560
    # the settings table printed first: '| learning rate (LR)    | 6.000000e-04 |', '| precision | BF16 |' …
    assert {k: run.hparams[k] for k in ("learning rate (LR)", "weight decay", "micro batch size B", "num_layers L",
                                        "precision", "LR scheduler", "warmup iterations")} == {
        "learning rate (LR)": 6e-4, "weight decay": 0.1, "micro batch size B": 32, "num_layers L": 12,
        "precision": "BF16", "LR scheduler": "cosine", "warmup iterations": 700}
    assert "Parameter" not in run.hparams
    notes = notes_text(run)
    assert "256 '(+nanz)' z-score(s) (not computed yet) skipped" in notes
    assert "9,954 bare carriage return(s)" in notes
    # one step line was overwritten mid-line by the sampler's error message: counted, not lost silently
    (warning,) = run.warnings
    assert warning.count == 1 and warning.location == "line 19761"
    assert "step 19528/19560" in warning.message and "Token out of vocabulary" in warning.message
    assert 19528 not in set(frame[frame["tag"] == "train/loss"]["step"])


def test_run_cancelled_mid_hellaswag_by_the_time_limit():
    run = _read(CUT)
    frame = run.scalars
    check(frame, "train/loss", {1: 11.010252, 750: 4.763922}, count=750)
    check(frame, "val/loss", {0: 11.008742, 250: 6.208999, 750: 4.723455}, count=4)
    check(frame, "hellaswag/acc", {250: 0.248954, 500: 0.243079}, count=2)  # the third was cut off
    assert run.warnings == [] and run.restarts == []


def test_main_log_steps_agree_with_the_console(tmp_path):
    run = LlmcReader().read([write(tmp_path / "log124M" / "main.log", MAIN_LOG)])[0]
    frame = run.scalars
    check(frame, "train/loss", {1: 11.0097, 2: 10.9566, 3: 10.8488, 251: 6.1558}, count=4)
    check(frame, "val/loss", {0: 11.0079, 250: 6.2022}, count=2)
    check(frame, "hellaswag/acc", {250: 0.2483}, count=1)
    check(frame, "lr", {1: 0.000001, 251: 0.000215})
    check(frame, "grad_norm", {1: 15.08, 251: 0.76})
    assert "'s:N trl' (update N+1, done) at step N+1" in notes_text(run)
    assert run.warnings == []


def test_main_log_junk_lines_cut_last_line_and_resume(tmp_path):
    text = MAIN_LOG + "s:3 trl:oops lr:0.1 norm:1\nrandom noise\ns:3 trl:10.70 lr:0.000004 norm:12.9\ns:1 trl:10.99 lr:0.000002 norm:15.0\ns:2 tr"
    run = LlmcReader().read([write(tmp_path / "main.log", text)])[0]
    frame = run.scalars
    check(frame, "train/loss", {2: 10.99, 4: 10.70}, count=5)  # relaunched: the later write wins
    messages = " | ".join(w.message for w in run.warnings)
    assert "1 line(s) look like llm.c metrics but could not be read" in messages and "trl:oops" in messages
    assert "the last line ends without a line break" in messages and "s:2 tr" in messages
    assert [restart.step for restart in run.restarts] == [4, 2]  # two launches appended to the same main.log


def test_empty_and_binary_files_give_a_warning(tmp_path):
    for data in (b"", bytes(range(256)) * 40):
        (run,) = LlmcReader().read([write(tmp_path / "main.log", data)])
        assert run.scalars.empty and run.warnings


def test_console_detection_and_discovery(real_logs, tmp_path):
    assert detect_console_format(real_log(COMPLETE)).name == "llmc"
    assert detect_console_format(write(tmp_path / "main.log", MAIN_LOG)).name == "llmc"
    logs = load(real_logs / "llmc_logs")
    assert {name: info.format for name, info in logs.runs.items()} == {
        "HectorFCardenas__llm.c/gpt2_train.11672114.log": "llmc", "HectorFCardenas__llm.c/gpt2_train.11685414.log": "llmc"}
    assert get_reader("llmc") is not None


def test_nan_runs_of_the_crash_corpus_are_read_with_their_nans():
    # 'step    1/19560 | loss     nan (+nanz)| norm    nan (+nanz)| lr 8.57e-07 | …' (printf pads NaN)
    run = _read("crash_logs/HectorFCardenas__llm.c/gpt2_train.11679031.log")
    frame = run.scalars
    loss = frame[frame["tag"] == "train/loss"]
    assert len(loss) == 16255 and loss["value"].isna().all()
    check(frame, "lr", {1: 8.57e-07})
    (warning,) = run.warnings  # the last step line, cut by the scheduler's cancel message
    assert "step 16256/19560" in warning.message and "CANCELLED" in warning.message
    # died after the first validation ('val loss nan', then a cuBLAS error): one NaN point, at step 0
    early = _read("crash_logs/HectorFCardenas__llm.c/gpt2_train.11679004.log")
    assert early.scalars[["tag", "step"]].values.tolist() == [["val/loss", 0]]
    assert early.scalars["value"].isna().all()


def _main_log(first: int, last: int, damaged: dict[int, str] | None = None) -> str:
    """main.log records of loop steps first..last as llm.c's logger writes them, with some lines replaced."""
    lines = []
    for step in range(first, last + 1):
        if step % 250 == 0:
            lines.append(f"s:{step} tel:{3 + 8 / (step + 1):.4f}\n")
            if step % 500 == 0:
                lines.append(f"s:{step} eval:{0.25 + step / 1e5:.4f}\n")
        lines.append(f"s:{step} trl:{3 + 8 / (step + 1) + (step % 7) / 100:.4f} lr:{6e-4 * min(1, step / 700):.6f} "
                     f"norm:{0.3 + (step % 11) / 10:.2f}\n")
        if damaged and step in damaged:
            lines[-1] = damaged[step]
    return "".join(lines)


MAIN_IRREGULAR = (
    _main_log(0, 1200, {
        7: "s:7 trl:nan lr:0.000006 norm:inf\n",  # a diverged step: NaN and inf are values
        90: "s:90 trl:3.1 lr:1,000 norm:-0.5\n",  # a thousands separator
        300: "s:300\ttrl:3.0  lr:0.000257 norm:0.4 \n",  # tabs, two blanks, a blank at the end
        401: "s:401 trl:3.0 lr:0.0004 norm:0.4 grad_accum:8 a_very_long_key_name_x:1\n",  # keys llm.c does not write
        402: "s:402 trl:3.0 lr:0.0004 norm:0.4 a_very_long_key_name_y:2\n",  # differs from the one above at byte 22
        500: "s:500 trl:oops lr:0.1 norm:1\n",  # not a number: counted as unreadable
        600: "s:600 trl:3.0 lr:0.0001 norm:0.5\r\n",
        700: "s:99999999999999999999 trl:3.0\n",  # beyond 64 bits
        800: "random noise\n",
        900: "s:900 trl:1e2 lr:1:2 norm:0.3\n",
        950: "s:0950 trl:2.9 lr:0.0005 norm:0.3 x:1_0\n",
    })
    + _main_log(1000, 1300)  # relaunched from a checkpoint: steps go back
    + "s:1301 trl:2.5 lr:0.0006 norm:0.3\ns:1302 tr"
)


@pytest.mark.parametrize("text", [MAIN_LOG, _main_log(0, 3000), MAIN_IRREGULAR], ids=["short", "clean", "irregular"])
def test_main_log_read_at_once_equals_every_line_read_on_its_own(text, tmp_path, monkeypatch):
    """Chunks of main.log records are read at once (numpy, not a line at a time): the same rows, notes,
    warnings and restarts as every line on its own, whatever the chunk size."""
    from tanalyze.readers.text import _parts
    from tanalyze.readers.text.llmc import LlmcParser

    path = write(tmp_path / "main.log", text)
    for chunk_chars in (_parts.CHUNK_CHARS, 1 << 12):
        monkeypatch.setattr(_parts, "CHUNK_CHARS", chunk_chars)
        (at_once,) = LlmcReader().read([path])
        monkeypatch.setattr(LlmcParser, "line_by_line", True)
        (by_line,) = LlmcReader().read([path])
        monkeypatch.setattr(LlmcParser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True)
        assert (at_once.notes, at_once.warnings, at_once.restarts, at_once.hparams) == (
            by_line.notes, by_line.warnings, by_line.restarts, by_line.hparams)
    if text is MAIN_IRREGULAR:
        frame = at_once.scalars
        check(frame, "lr", {91: 1000.0, 301: 0.000257})
        check(frame, "a_very_long_key_name_x", {402: 1.0}, count=1)
        check(frame, "a_very_long_key_name_y", {403: 2.0}, count=1)
        assert [r.step for r in at_once.restarts] == [1001]  # (not from the garbled step of line 706)
        unreadable = at_once.warnings[0]
        assert unreadable.count == 3 and all(f"line {n}:" in unreadable.message for n in (506, 706, 907))
        assert "3.0" not in set(frame[frame["step"] == 501]["value"].astype(str))


def test_a_chunk_of_main_log_records_is_read_at_once():
    from tanalyze.readers.text.llmc import _main_records

    keys, key_of_pair, line_of_pair, values, loop_steps = _main_records(
        "s:0 tel:11.0079\ns:0 trl:11.0097 lr:0.000001 norm:15.08\ns:1\ttrl:1,234  a_sixteen_byte_k:2 \n")
    assert keys == ["tel", "trl", "lr", "norm", "a_sixteen_byte_k"]
    assert key_of_pair.tolist() == [0, 1, 2, 3, 1, 4] and line_of_pair.tolist() == [0, 1, 1, 1, 2, 2]
    assert values.tolist() == [11.0079, 11.0097, 0.000001, 15.08, 1234.0, 2.0] and loop_steps.tolist() == [0, 0, 1]
    for other in ("s:0 trl:1\nnoise\n", "s:0 trl:1", "s:0 trl:x\n", "s:1.5 trl:1\n", "s:0 a_seventeen_byte_:1\n",
                  "s:0 trl:1\r\n", "s:0 trl:1µ\n", " s:0 trl:1\n", "s:0 trl:1:2\n"):
        assert _main_records(other) is None, other


_MAIN_KEYS = ("trl", "tel", "lr", "norm", "eval", "grad_accum", "a_key_of_sixteen", "s")
_MAIN_VALUES = ("3.5", "0.000100", "nan", "-inf", "1,234", "1e-3", "x", "1:2", "", "7")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.tuples(st.integers(0, 3000), st.lists(st.tuples(st.sampled_from(_MAIN_KEYS), st.sampled_from(_MAIN_VALUES)),
                                            min_size=1, max_size=4), st.sampled_from((" ", "\t", "  ")),
              st.sampled_from(("", " ", "\r"))),
    st.sampled_from(("noise line", "s:", "s:12", "", " s:3 trl:1"))), min_size=1, max_size=40),
    st.booleans())
def test_main_log_records_read_at_once_equal_line_by_line(tmp_path, monkeypatch, lines, cut):
    """Random main.log texts (steps up and down, odd keys, values that are no numbers, blanks, junk): the chunks
    read at once give what every line read on its own gives."""
    from tanalyze.readers.text import _parts
    from tanalyze.readers.text.llmc import LlmcParser

    text = "".join(line + "\n" if isinstance(line, str) else
                   f"s:{line[0]}" + "".join(f"{line[2]}{k}:{v}" for k, v in line[1]) + line[3] + "\n" for line in lines)
    path = write(tmp_path / "main.log", text[:-1] if cut else text)
    monkeypatch.setattr(_parts, "CHUNK_CHARS", 256)
    (at_once,) = LlmcReader().read([path])
    monkeypatch.setattr(LlmcParser, "line_by_line", True)  # (the fixture lives across examples: set back below)
    (by_line,) = LlmcReader().read([path])
    monkeypatch.setattr(LlmcParser, "line_by_line", False)
    pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True)
    assert (at_once.notes, [w.message for w in at_once.warnings], at_once.restarts) == (
        by_line.notes, [w.message for w in by_line.warnings], by_line.restarts)
