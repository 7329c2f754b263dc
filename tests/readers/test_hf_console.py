"""Hugging Face Trainer console output: real SLURM and Windows transcripts, and dirty cases."""

import math
from pathlib import Path

import pytest

from tanalyze import load
from tanalyze.readers import HEAD_BYTES, get_reader
from tanalyze.readers.text.hf_console import HFConsoleReader, parse_dict_literal
from tests.conftest import real_log
from tests.readers.text_helpers import check, curve, notes_text, points, write

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

CPT = "hf_text_log/Jaong__Checkpoint-of-CPT/cmd.txt"
SLURM_1361 = "hf_text_log/Nicolassalvan__mti881-projet2/ResultsEtape1/default (learning rate 5e-5)"
SLURM_1734 = "hf_text_log/Nicolassalvan__mti881-projet2/ResultsEtape4/NouveauWeightLossSansOptunaHyperparamByDefault/slurm-1734.out"


def _read(*paths):
    reader = HFConsoleReader()
    assert all(reader.sniff(p, p.read_bytes()[:4096]) for p in paths)
    (run,) = reader.read(list(paths))
    return run


def test_windows_transcript_with_crlf_and_hms_metrics_block():
    run = _read(real_log(CPT))
    frame = run.scalars
    # 549 steps per epoch from the banner (5,490 / 10); logging every 500 steps
    check(frame, "loss", {500: 1.1409, 2500: 0.3979, 5000: 0.2645}, count=10)
    check(frame, "grad_norm", {500: 2.757542133331299}, count=10)
    check(frame, "learning_rate", {5000: 1.7850637522768672e-06}, count=10)
    check(frame, "eval_loss", {549: 0.6597685217857361, 2745: 0.4893759787082672, 5490: 0.4916660189628601}, count=10)
    check(frame, "eval_rouge-1", {549: 46.5406}, count=10)
    check(frame, "train_runtime", {5490: 64358.151}, count=1)  # the dict's value, not the block's 17:52:38.15
    check(frame, "train_loss", {5490: 0.4479398911550831}, count=1)
    check(frame, "train_samples", {5490: 3290}, count=1)  # only in the block
    loss = frame[frame["tag"] == "loss"].set_index("step")
    assert loss.loc[500, "epoch"] == 0.91 and loss.loc[5000, "epoch"] == 9.11
    notes = notes_text(run)
    assert "round(epoch × 549 steps per epoch)" in notes and "logging_steps 500" in notes
    assert run.hparams["Total optimization steps"] == 5490 and run.hparams["logging_steps"] == 500
    assert run.warnings == [] and run.restarts == []


def test_slurm_stdout_and_stderr_of_one_job_are_one_run():
    folder = real_log(SLURM_1361)
    logs = load(folder, formats=["hf_console"])
    (name,) = logs.runs
    info = logs.runs[name]
    assert [p.rsplit("/", 1)[-1] for p in info.files] == ["slurm-1361.err", "slurm-1361.out"]
    frame = logs.scalars
    check(frame, "loss", {500: 0.7214, 7000: 0.1276, 14500: 0.0222}, count=29)
    check(frame, "eval_loss", {1455: 0.4481896758079529, 7275: 0.4824325442314148, 14550: 0.6760383248329163}, count=10)
    check(frame, "eval_T017_f1", {1455: 0.5514089870525514}, count=10)
    check(frame, "train_runtime", {14550: 805.0349})
    check(frame, "predict_loss", {14550: 0.7005}, count=1)
    check(frame, "predict_runtime", {14550: 3.22}, count=1)  # 0:00:03.22
    notes = "\n".join(info.notes)
    # the banner with the step count is on stderr, the dicts on stdout
    assert "Total optimization steps 14,550 / Num Epochs 10 (banner)" in notes
    assert "slurm-1361.err: 5,362 bare carriage return(s)" in notes
    assert info.hparams["Gradient Accumulation steps"] == 2
    assert info.warnings == ()


def test_slurm_stdout_alone_derives_steps_from_the_final_runtime():
    run = _read(real_log(SLURM_1734))
    frame = run.scalars
    check(frame, "loss", {500: 2.157, 7000: 0.3209, 14000: 0.0716}, count=28)
    check(frame, "eval_loss", {1400: 1.3574057817459106, 7000: 1.386667490005493, 14000: 1.9194862842559814}, count=10)
    check(frame, "train_runtime", {14000: 781.009}, count=1)
    check(frame, "predict_runtime", {14000: 3.25})
    assert "train_runtime × train_steps_per_second ≈ 14,000 steps over 10 epochs" in notes_text(run)
    assert len(frame["tag"].unique()) == 297
    assert run.warnings == []


def test_values_printed_as_strings_by_newer_trainers(tmp_path):
    text = (
        "{'loss': '3.052', 'grad_norm': '1.039', 'learning_rate': '0.0009', 'epoch': '0.02'}\n"
        "{'loss': '2.6', 'grad_norm': '1.2', 'learning_rate': '0.0019', 'epoch': '0.04'}\n"
        "{'eval_loss': '1.976', 'eval_runtime': '0.0649', 'epoch': '0.04'}\n"
        "{'train_runtime': '0.5', 'train_steps_per_second': '40', 'train_loss': '2.8', 'epoch': '0.04'}\n"
    )
    run = _read(write(tmp_path / "train.log", text))
    # 0.5 s × 40 steps/s = 20 steps over 0.04 epochs: 500 steps per epoch
    check(run.scalars, "loss", {10: 3.052, 20: 2.6}, count=2)
    check(run.scalars, "eval_loss", {20: 1.976}, count=1)
    assert "logged value(s) that are not numbers" not in notes_text(run)


def test_dict_literals_are_read_without_eval():
    values, skipped = parse_dict_literal(
        "{'loss': nan, 'grad_norm': inf, 'x': -inf, 'lr': 5e-05, 's': 'a, b', 'l': [1, 2], 'n': None, 'ok': True}"
    )
    assert math.isnan(values["loss"]) and values["grad_norm"] == math.inf and values["x"] == -math.inf
    assert values["lr"] == 5e-05 and set(values) == {"loss", "grad_norm", "x", "lr"}
    assert skipped == 4
    assert parse_dict_literal("{'a': __import__('os').system('x')}") == ({}, 1)


BANNER = (
    "***** Running training *****\n  Num examples = 1,000\n  Num Epochs = 2\n"
    "  Total optimization steps = 200\n  Number of trainable parameters = 10\n"
)


def test_progress_bars_several_dicts_per_line_and_non_finite_values(tmp_path):
    text = (
        BANNER
        + " 10%|#         | 20/200 [00:01<00:10]\r{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.1}\r"
        + " 20%|##        | 40/200 [00:02<00:09]\r{'loss': nan, 'grad_norm': inf, 'epoch': 0.2}\n"
        + "\x1b[A\x1b[A{'eval_loss': 2.0, 'eval_runtime': 1.5, 'epoch': 1.0}\r\n"
        + "{'train_runtime': 10.5, 'train_loss': 1.25, 'epoch': 2.0}\n"
        + "***** train metrics *****\n  epoch = 2.0\n  train_runtime = 0:00:10.50\n  train_samples = 1000\n"
    )
    run = _read(write(tmp_path / "out.log", text))
    frame = run.scalars
    loss = curve(frame, "loss")
    assert loss[10] == 2.5 and math.isnan(loss[20]) and len(loss) == 2
    check(frame, "grad_norm", {20: math.inf})
    check(frame, "eval_loss", {100: 2.0})
    check(frame, "train_runtime", {200: 10.5}, count=1)
    check(frame, "train_samples", {200: 1000})
    assert "round(epoch × 100 steps per epoch)" in notes_text(run)


def test_without_hints_steps_are_counts_and_the_note_says_so(tmp_path):
    text = "{'loss': 3.0, 'epoch': 0.5}\nnoise\n{'loss': 2.0, 'epoch': 0.99}\n{'eval_loss': 2.5, 'epoch': 1.0}\n"
    run = _read(write(tmp_path / "out.txt", text))
    check(run.scalars, "loss", {1: 3.0, 2: 2.0}, count=2)
    check(run.scalars, "eval_loss", {2: 2.5})
    assert "step = count of training logs so far" in notes_text(run)
    assert "keyed by the previous log's step" in notes_text(run)


def test_logging_steps_from_the_argument_dump(tmp_path):
    text = "TrainingArguments(\nlogging_steps=50,\nmax_steps=-1,\n)\n" + "".join(
        f"{{'loss': {1 / k}, 'epoch': {k / 10}}}\n" for k in range(1, 6)
    )
    run = _read(write(tmp_path / "out.log", text))
    check(run.scalars, "loss", {50: 1.0, 250: 0.2}, count=5)
    assert run.hparams["logging_steps"] == 50


def test_resumed_training_is_a_restart(tmp_path):
    first = "".join(f"{{'loss': {10 - k}, 'epoch': {k / 10}}}\n" for k in range(1, 6))
    second = "".join(f"{{'loss': {5 - k / 10}, 'epoch': {k / 10}}}\n" for k in range(3, 8))
    run = _read(write(tmp_path / "out.log", BANNER + first + "resuming from checkpoint-60\n" + second))
    check(run.scalars, "loss", {20: 8.0, 30: 4.7, 50: 4.5, 70: 4.3}, count=7)
    (restart,) = run.restarts
    assert restart.step == 30 and "after step 50" in restart.detail and "line 12" in restart.detail


def test_cut_dict_at_the_end_is_reported(tmp_path):
    path = write(tmp_path / "out.log", BANNER + "{'loss': 1.0, 'epoch': 0.5}\n{'loss': 0.9, 'grad_no")
    run = _read(path)
    assert points(run.scalars, "loss") == 1
    (warning,) = run.warnings
    assert "could not be read" in warning.message and "'grad_no" in warning.message


@pytest.mark.parametrize("line", ["accelerator_config={'split_batches': False, 'x': 1}", "Non-default: {'max_length': 512}"])
def test_config_dicts_are_not_metrics(tmp_path, line):
    run = _read(write(tmp_path / "out.log", BANNER + line + "\n{'loss': 1.0, 'epoch': 1.0}\n"))
    assert set(run.scalars["tag"].unique()) == {"loss"}


def _session(first: int, last: int, total: int, loss: float) -> str:
    """Console of a Trainer session as a file captures it: bar redraws with \\r, tqdm.write for dicts."""
    out = []
    for step in range(first, last + 1):
        out.append(f"\r{100 * step // total:3d}%|#         | {step}/{total} [00:01<00:09, 30.00it/s]")
        if step % 10 == 0:
            out.append("\r" + " " * 60 + "\r")
            out.append(f"{{'loss': '{loss - step / 1000:.4g}', 'learning_rate': '0.001', 'epoch': '{step / 500:.2f}'}}\n")
            out.append(f"\r{100 * step // total:3d}%|#         | {step}/{total} [00:01<00:09, 30.00it/s]")
        if step % 50 == 0:
            out.append("\n\r  0%|          | 0/4 [00:00<?, ?it/s]\x1b[A\r" + " " * 40 + "\r\x1b[A")
            out.append(f"{{'eval_loss': '{loss - step / 900:.4g}', 'eval_runtime': '0.05', 'epoch': '{step / 500:.2f}'}}\n")
            out.append(f"\r{100 * step // total:3d}%|#         | {step}/{total} [00:01<00:09, 30.00it/s]")
    return "".join(out)


def test_steps_from_the_bar_redrawn_after_each_dict_in_a_resumed_capture(tmp_path):
    killed = _session(1, 145, 300, 3.0)  # killed at 145: the line of step 150 never came
    resumed = _session(101, 300, 300, 3.0)  # resume_from_checkpoint: checkpoint-100
    final = "\n{'train_runtime': '5.0', 'train_steps_per_second': '40', 'train_loss': '2.5', 'epoch': '0.6'}\n"
    run = _read(write(tmp_path / "train.log", killed + resumed + final))
    frame = run.scalars
    # train_runtime × train_steps_per_second = 200 steps: the resumed session only, not the job
    check(frame, "loss", {10: 2.99, 140: 2.86, 300: 2.7}, count=30)
    check(frame, "eval_loss", {50: 2.944, 300: 2.667}, count=6)  # printed with 4 significant digits
    check(frame, "train_runtime", {300: 5.0})
    (restart,) = run.restarts
    assert restart.step == 110 and "after step 140" in restart.detail
    assert "N of the progress bar (N/300)" in notes_text(run)
    assert "8 point(s) logged after a restart were replaced" in notes_text(run)  # 110-140: loss + lr


def test_steps_from_the_bar_when_the_capture_lost_its_carriage_returns(tmp_path):
    """A console copied through a tool that drops bare carriage returns: each dict sits on the bar's line after the
    blanks that cleared it, and the bar redrawn after it still gives its step (not the k-th log, 10x too low)."""
    session = _session(1, 100, 300, 3.0).replace("\r", "")
    run = _read(write(tmp_path / "train.log", session))
    check(run.scalars, "loss", {10: 2.99, 50: 2.95, 100: 2.9}, count=10)
    check(run.scalars, "eval_loss", {50: 2.944, 100: 2.889}, count=2)
    assert "N of the progress bar (N/300)" in notes_text(run)
    # a dict after other text on its line is not taken for a cleared bar's
    plain = "".join(f"epoch {e} done {{'loss': {1 - e / 10}, 'epoch': {e / 5:.2f}}}\n" for e in range(1, 4))
    check(_read(write(tmp_path / "plain.log", plain)).scalars, "loss", {1: 0.9, 3: 0.7}, count=3)


def test_a_damaged_line_inside_a_metrics_block_costs_that_line_only(tmp_path):
    import tanalyze

    block = ("{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 1.0}\n"
             "***** train metrics *****\n"
             "{damaged}\n"
             "  train_loss               =     2.5\n"
             "  train_samples            =     3290\n")
    for first, train_samples in (("  epoch                    =        10.0", 1), ("\ufffd# epoch   =   10.0", 1),
                                 ("  epoch             ", 1),  # garbled, or cut before its '='
                                 ("z" * 5000 + "\n  epoch   =   10.0", 1)):  # a junk line before it
        log = tmp_path / "train.log"
        log.write_text(block.replace("{damaged}", first), encoding="utf-8")
        logs = tanalyze.load(log, cache=False)
        tags = list(logs.scalars["tag"].astype(str))
        assert tags.count("train_samples") == train_samples and "train_loss" in tags, tags
    # what ends a block still ends it: the next block's header, a logger's line
    log.write_text(block.replace("{damaged}", "[INFO|trainer.py:2000] Saving model checkpoint to out"), encoding="utf-8")
    assert "train_samples" not in list(tanalyze.load(log, cache=False).scalars["tag"].astype(str))


def test_an_accelerate_no_trainer_scripts_banner_is_not_the_trainers(tmp_path):
    """The ``*_no_trainer.py`` examples print the Trainer's banner from their own logger (``__main__``), then an
    epoch's evaluation per line (accelerate's docs' paste): the generic reader's, not an HF Trainer console that
    reads nothing."""
    lines = ["10/10/2022 22:51:02 - INFO - __main__ - ***** Running training *****",
             "10/10/2022 22:51:02 - INFO - __main__ -   Num examples = 2318",
             "10/10/2022 22:51:02 - INFO - __main__ -   Num Epochs = 5"]
    lines += [f"10/10/2022 22:{50 + e}:29 - INFO - __main__ - epoch {e}: perplexity: {1222.1594275215962 / (e + 1)} "
              f"eval_loss: {7.10837459564209 - e / 10}" for e in range(6)]
    ranked = [line.replace("__main__ - ", "__main__ - [RANK 0] ") for line in lines]  # (accelerate >= 1.13)
    for name, text in (("ranked.log", ranked), ("train.log", lines)):
        path = write(tmp_path / "clm_no_trainer" / name, "\n".join(text) + "\n")
        assert not get_reader("hf_console").sniff(path, path.read_bytes()[:HEAD_BYTES]), name
    path.with_name("ranked.log").unlink()
    (info,) = load(path.parent, cache=False).runs.values()
    assert info.format == "text"
    frame = load(path.parent, cache=False).scalars
    check(frame, "eval_loss", {0: 7.10837459564209, 2: 6.90837459564209}, count=6)
    check(frame, "perplexity", {0: 1222.1594275215962}, count=6)


def test_two_trainings_in_one_console_each_have_their_own_steps_per_epoch():
    """Two ``Trainer.train()`` calls in one script (tests/fixtures/hf_console, the real Trainer): 40 steps per epoch,
    then 5. Each training's summary gives its own: the first training's logs were placed with the second's 5 steps
    per epoch (its 3 epochs at steps 1-15). The second training is a session after the first."""
    (run,) = get_reader("hf_console").read([FIXTURES / "hf_console" / "two_trainings.log"])
    frame = run.scalars
    loss = frame[frame["tag"] == "loss"]
    assert list(zip(loss["step"], loss["value"], strict=True))[:3] == [(10, 0.2816), (20, 0.09437), (30, 0.04058)]
    assert dict(zip(loss["step"], loss["value"], strict=True))[120] == 0.02907
    [(first, last, offset), (first2, last2, offset2)] = [(p.first_step, p.last_step, p.offset) for p in run.phases]
    assert (first, last, offset) == (10, 120, 0) and (first2, last2, offset2) == (121, 166, 116)
    evals = frame[frame["tag"] == "eval_loss"]
    assert dict(zip(evals["step"], evals["value"], strict=True))[121] == 0.2371  # the second training's first epoch: its step 5
    assert "training 1: 40 steps per epoch" in run.notes[0] and "training 2: 5 steps per epoch" in run.notes[0]
