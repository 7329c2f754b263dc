"""llm.c: the real console logs of HectorFCardenas/llm.c (SLURM stdout of train_gpt2cu) and main.log records.

The ``main.log`` lines below have the shapes llm.c's logger writes (``"s:%d tel:%.4f"``,
``"s:%d trl:%.4f lr:%.6f norm:%.2f"``, ``"s:%d eval:%.4f"`` in ``llmc/logger.h``); the corpus
has no real main.log (the repository's is a Git-LFS pointer), so their values are those of
the real console log of the same run, rounded as the logger rounds them.
"""

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
