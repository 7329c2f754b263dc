"""CLU's LoggingWriter and big_vision's metric lines through absl: real trainings with CLU's writers on a CPU
(``tests/fixtures/clu``: one run, a resumed one, one without absl's ``app.run``), the lines of Flax's Gemma example's
README and of a pasted run of Flax's ImageNet example (older CLU), big_vision's lines written from its source (raw
ANSI escapes), and the lines CLU's own test expects, with their values."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from tanalyze.readers.base import HEAD_BYTES
from tanalyze.readers.text import _parts
from tanalyze.readers.text.clu import CLUParser, CLUReader, detect_clu
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "clu"
CPU = FIXTURES / "cpu_mlp" / "console.log"
RESUMED = FIXTURES / "cpu_mlp_resumed" / "console.log"
NO_APP_RUN = FIXTURES / "cpu_mlp_no_app_run" / "console.log"
GEMMA = FIXTURES / "flax_gemma" / "console.log"
IMAGENET = FIXTURES / "flax_imagenet_paste" / "console.log"
IMAGENET_FULL = FIXTURES / "flax_imagenet_paste_full" / "console.log"
BIG_VISION = FIXTURES / "big_vision" / "console.log"

PREFIX = "I0325 14:{minute:02d}:{second:02d}.474070 130245504009792 logging_writer.py:48] "
#: the lines CLU's own test of its LoggingWriter expects (clu/metric_writers/logging_writer_test.py, test_collection)
CLU_TEST = ["INFO:absl:[0] collection=train a=3, b=0.15",
            "INFO:absl:[4] collection=train Got images: {'input_images': (2, 28, 28, 3)}.",
            "INFO:absl:[4] collection=train Got texts: {'samples': 'bla'}.",
            "INFO:absl:[4] collection=train Histogram for 'a' = {[-0.1, 0.1): 1, [0.1, 0.3]: 2}",
            "INFO:absl:[Hyperparameters] collection=train {'learning_rate': 0.1}",
            "INFO:absl:[2] a=5e-07, b=0.007"]


def read(path: Path):
    (run,) = CLUReader().read([path])
    return run


def sniffed(path: Path) -> bool:
    return CLUReader().sniff(path, path.read_bytes()[:HEAD_BYTES])


def test_a_real_training_on_a_cpu():
    assert sniffed(CPU)
    run = read(CPU)
    frame = run.scalars
    check(frame, "train_loss", {100: 0.47996512055397034, 500: 0.24028414487838745, 1500: 0.21310663223266602},
          count=15)
    check(frame, "train_accuracy", {100: 0.8165624737739563, 1500: 0.9214062094688416}, count=15)
    check(frame, "learning_rate", {100: 0.02500000037252903, 500: 0.04371276870369911, 1500: 0.0}, count=15)
    # ReportProgress's scalars, each on a line of its own at its step
    check(frame, "steps_per_sec", {250: 392.965, 500: 1998.22, 1500: 850.354}, count=6)
    check(frame, "uptime", {250: 1.4537, 1500: 2.61832}, count=6)
    check(frame, "eval_accuracy", {500: 0.8984375, 1500: 0.923828125}, count=3)
    check(frame, "eval_loss", {500: 0.24350953102111816, 1500: 0.20854806900024414}, count=3)
    # the second writer's collection (as t5x's) prefixes its names
    check(frame, "train/loss", {100: 0.47996512055397034, 1500: 0.21310663223266602}, count=15)
    check(frame, "train/timing/steps_per_second", {100: 72.4934, 1500: 649.826}, count=15)
    check(frame, "train/timing/train_iter_warmup", {0: 0.814341}, count=1)
    assert len(frame) == 15 * 5 + 6 * 2 + 3 * 2 + 1
    # texts, histograms, images, hyperparameters and the work unit's notes are no scalars (and no look-alikes)
    assert not any(tag.startswith(("Got", "Histogram", "dense_0", "samples", "[")) for tag in set(frame["tag"]))
    assert frame["wall_time"].isna().all()  # (absl's prefix has no year)
    text = notes_text(run)
    assert "step = the bracketed step" in text and "no wall time (absl's line prefix has no year)" in text
    assert "16 line(s) of a writer's collection (t5x's 'collection=train'): tags <collection>/<name>" in text
    assert not run.warnings and not run.restarts


def test_a_resumed_training_is_one_restart_and_the_later_values_are_kept():
    run = read(RESUMED)
    (restart,) = run.restarts  # (one for every kind of line that goes back: the train, collection and progress ones)
    assert restart.step == 1100 and restart.until == 1250
    assert "step 1100 logged again after step 1250 (line 80)" in restart.detail
    frame = run.scalars
    # (the checkpoint restored: the same losses again)
    check(frame, "train_loss", {1100: 0.20729795098304749, 1500: 0.21310663223266602}, count=15)
    # the resumed job's values win at the steps logged twice
    check(frame, "train/timing/steps_per_second", {1100: 41.8906, 1200: 1669.95, 1500: 1818.75}, count=15)
    check(frame, "uptime", {1250: 2.47557, 1500: 2.60957}, count=6)
    check(frame, "train/timing/train_iter_warmup", {0: 1.65794}, count=1)
    check(frame, "eval_accuracy", {1000: 0.9130859375, 1500: 0.923828125}, count=3)
    assert "point(s) logged after a restart were replaced by the later write" in notes_text(run)
    assert not run.warnings


def test_python_loggings_absl_prefix_without_app_run():
    assert sniffed(NO_APP_RUN)
    run = read(NO_APP_RUN)
    frame = run.scalars
    check(frame, "train_loss", {100: 0.47996512055397034, 600: 0.20901796221733093}, count=6)
    check(frame, "steps_per_sec", {200: 208.224, 400: 572.857, 600: 1279.44}, count=3)
    check(frame, "eval_loss", {300: 0.24660715460777283, 600: 0.20907635986804962}, count=2)
    check(frame, "train/timing/train_iter_warmup", {0: 1.29172}, count=1)
    assert not run.warnings and not run.restarts


def test_the_lines_of_flaxs_gemma_example():
    assert sniffed(GEMMA)
    run = read(GEMMA)
    frame = run.scalars
    check(frame, "train_accuracy", {2000: 0.37408044934272766, 4000: 0.4054645895957947, 8000: 0.42618998885154724},
          count=4)
    check(frame, "train_loss", {4000: 3.389246940612793}, count=4)
    check(frame, "eval_perplexity", {2000: 24.50796127319336, 4000: 19.85456085205078}, count=4)
    check(frame, "eval_loss", {8000: 2.7938599586486816}, count=4)
    # a step's lines add up: the evaluation at 4000 beside its training metrics, the progress at 4001
    check(frame, "steps_per_sec", {1: 0.014434, 1934: 13.14, 4001: 3.0123, 8001: 3.01689}, count=14)
    check(frame, "uptime", {4001: 894.341, 8001: 1578.22}, count=14)
    assert set(frame[frame["step"] == 4000]["tag"]) == {"train_accuracy", "train_loss", "eval_accuracy", "eval_loss",
                                                       "eval_perplexity"}
    assert not run.warnings and not run.restarts


def test_an_older_clus_lines_pasted_from_flaxs_imagenet_example():
    run = read(IMAGENET)
    frame = run.scalars
    check(frame, "steps_per_second", {100: 2.183623, 400: 6.861116, 6200: 8.069629}, count=7)
    check(frame, "train_learning_rate", {100: 0.003165467409417033}, count=7)
    check(frame, "train_loss", {6100: 2.8847763538360596}, count=7)
    check(frame, "eval_accuracy", {6255: 0.3712972104549408}, count=1)
    run = read(IMAGENET_FULL)
    check(run.scalars, "train_learning_rate", {124800: 8.642912689538207e-06, 125100: 2.3615361044448946e-07},
          count=7)
    check(run.scalars, "eval_loss", {125100: 0.9426663517951965}, count=1)
    assert not run.warnings and not run.restarts


def test_big_visions_lines_with_their_colour_codes():
    assert b"\x1b[35m[0]\x1b[0m minival/prec@1 = 0.0009765625" in BIG_VISION.read_bytes()  # (as absl writes them)
    assert sniffed(BIG_VISION)
    run = read(BIG_VISION)
    frame = run.scalars
    check(frame, "minival/prec@1", {0: 0.0009765625, 500: 0.021157803013920784}, count=2)
    check(frame, "minival/loss", {500: 6.5135064125061035}, count=2)
    check(frame, "z/secs/eval/minival", {0: 24.56570253028101, 500: 11.899910839285404}, count=2)
    check(frame, "z/secs/update0", {1: 41.92301034927368}, count=1)
    check(frame, "global_schedule", {1: 0.0, 2: 1.0000000116860974e-07}, count=19)
    check(frame, "core_hours_TPU v3", {850: 0.40218595632945864}, count=17)  # (a name with a blank)
    assert not any("TIMING" in tag or "NOTE" in tag for tag in set(frame["tag"]))
    text = notes_text(run)
    assert "235 big_vision line(s) ('[step] name = value')" in text and "ANSI escape sequence(s) removed" in text
    assert not run.warnings and not run.restarts


def test_the_lines_clus_own_test_expects(tmp_path):
    run = read(write(tmp_path / "log.txt", "\n".join(CLU_TEST) + "\n"))
    frame = run.scalars
    assert curve(frame, "train/a") == {0: 3.0} and curve(frame, "train/b") == {0: 0.15}
    assert curve(frame, "a") == {2: 5e-07} and curve(frame, "b") == {2: 0.007}
    assert len(frame) == 4 and not run.warnings


def test_a_line_that_looks_like_a_metric_line_but_cannot_be_read_is_named(tmp_path):
    lines = [PREFIX.format(minute=1, second=k) + f"[{100 * k}] train_loss={3 - k / 10}, train_accuracy=0.{k}"
             for k in range(1, 6)]
    lines.insert(2, PREFIX.format(minute=2, second=0) + "[200] per_class_accuracy=[0.5 0.25]")  # (an array)
    lines.insert(4, "I0603 08:13:08.691496 140529512351552 utils.py:1268] [300] val/confusion = (10, 10)")  # (a shape)
    lines.append(PREFIX.format(minute=3, second=0) + "[9007199254740993] train_loss=1.5, train_accuracy=0.5")
    lines.append(PREFIX.format(minute=3, second=1) + "[600] train_loss=NAN, train_accuracy=0.5")  # (float()'s only)
    lines.append(PREFIX.format(minute=3, second=2) + "[700] train_loss=nan, train_accuracy=-inf")
    run = read(write(tmp_path / "console.log", "\n".join(lines) + "\n"))
    (warning,) = run.warnings
    assert ("4 line(s) look like CLU metrics but could not be read, e.g. line 3: "
            "'I0325 14:02:00.474070 130245504009792 logging_writer.py:48] [200] per_class_accuracy=[0.5 0.25]'; "
            "line 5: 'I0603 08:13:08.691496 140529512351552 utils.py:1268] [300] val/confusion = (10, 10)'; "
            "line 8: ") in warning.message
    assert "[9007199254740993]" in warning.message and warning.count == 4
    frame = run.scalars
    assert curve(frame, "train_loss")[500] == 2.5 and math.isnan(curve(frame, "train_loss")[700])
    assert curve(frame, "train_accuracy")[700] == -math.inf
    assert sorted(curve(frame, "train_loss")) == [100, 200, 300, 400, 500, 700]  # (the step too large: not read)
    assert not run.restarts


def test_non_ascii_and_junk_lines(tmp_path):
    lines = [PREFIX.format(minute=0, second=1) + "[100] précision=0.5, train_loss=2.25",
             "\x00\x01 garbage \ufffd [12] ===",
             "Ünïcödé line without metrics: [3] ok",
             PREFIX.format(minute=0, second=2) + "[200] précision=0.75, train_loss=2.0",
             "[300] a=1, b",
             "[ 400] a=1"]
    run = read(write(tmp_path / "console.log", "\n".join(lines) + "\n"))
    assert curve(run.scalars, "précision") == {100: 0.5, 200: 0.75}
    assert curve(run.scalars, "train_loss") == {100: 2.25, 200: 2.0}
    (warning,) = run.warnings
    assert "1 line(s) look like CLU metrics" in warning.message and "line 5: '[300] a=1, b'" in warning.message


def test_detect_needs_two_lines_of_the_format(tmp_path):
    one = PREFIX.format(minute=0, second=1) + "[100] train_loss=2.25, train_accuracy=0.5\n"
    two = one + PREFIX.format(minute=0, second=2) + "[200] train_loss=2.0, train_accuracy=0.75\n"
    assert not detect_clu(one) and detect_clu(two)
    assert detect_clu("[0] minival/prec@1 = 0.0009765625\n[0] minival/loss = 6.91\n")  # (a captured message)
    assert detect_clu("INFO:absl:[0] a=3, b=0.15\nINFO:absl:[2] a=5e-07, b=0.007\n")
    for text in (
        # other formats' lines: MaxText's behind absl, a dict of HF's Trainer, a custom '[step] name: value' loop
        "I0811 21:54:55.531340 138304841739136 metric_logger.py:226] completed step: 1, seconds: 0.631, loss: 12.979\n"
        "I0811 21:54:56.531340 138304841739136 metric_logger.py:226] completed step: 2, seconds: 0.631, loss: 12.9\n",
        "{'loss': 2.3, 'learning_rate': 5e-05, 'epoch': 0.1}\n{'loss': 2.1, 'learning_rate': 5e-05, 'epoch': 0.2}\n",
        "2023-09-28 22:12:30 WARNING  [16] loss: 25162.9921875, accuracy: 0.001220703125\n"
        "2023-09-28 22:12:30 WARNING  [32] loss: 22856.90234375, accuracy: 0.0\n",
        # CLU's lines that are no scalars
        "INFO:absl:[4] Got texts: {'samples': 'a=1'}.\nINFO:absl:[4] Histogram for 'a' = {[-0.1, 0.1): 1}\n",
        # a look-alike and a line with more after its numbers
        "[100] loss=[0.5 0.4]\n[200] loss=0.3 (best)\n",
    ):
        assert not detect_clu(text), text
        path = write(tmp_path / "other.log", text * 3)
        assert not sniffed(path)


def test_lines_of_writers_on_threads_of_their_own_are_no_restart(tmp_path):
    """Two asynchronous writers: the collection's line of step 600 comes after the training line of 700."""
    lines = ["[500] train_loss=0.5", "[500] collection=train loss=0.5", "[600] train_loss=0.4",
             "[700] train_loss=0.3", "[600] collection=train loss=0.4", "[700] collection=train loss=0.3",
             "[701] steps_per_sec=3.0", "[700] eval_loss=0.35"]
    run = read(write(tmp_path / "console.log", "\n".join(lines) + "\n"))
    assert not run.restarts and curve(run.scalars, "train/loss") == {500: 0.5, 600: 0.4, 700: 0.3}


def _mixed(count: int) -> str:
    """Lines of every kind: CLU's behind absl's prefix, behind ``INFO:absl:`` and bare, a collection's, big_vision's
    (in colour), texts, histograms, hyper-parameters, notes, look-alikes, odd numbers, a resumed job."""
    lines = []
    for k in range(count):
        half = count // 2  # (the second half goes back to the middle of the first: a resumed job)
        step = 100 * (k + 1 if k < half else k - half + half // 2 + 1)
        absl = PREFIX.format(minute=k // 60 % 60, second=k % 60)
        head = (absl, "INFO:absl:", "")[k % 3]
        loss = "nan" if k % 41 == 40 else "inf" if k % 43 == 42 else f"{2 + 1 / (k + 1):.17g}"
        lines.append(f"{head}[{step}] learning_rate={step / 1e6:.6g}, train_accuracy={k / (count + 1)}, "
                     f"train_loss={loss}")
        lines.append(f"{head}[{step}] collection=train loss={loss}, timing/steps_per_second={1000 + k}")
        if k % 5 == 0:
            lines.append(f"I0325 14:00:00.000000 130295542103168 local.py:41] Setting work unit notes: {k} steps/s")
            lines.append(f"{head}[{step + 1}] steps_per_sec={3 + k / 7:.6g}")
            lines.append(f"{head}[{step + 1}] uptime={k * 1.5:.6g}")
        if k % 7 == 0:
            lines.append(f"I0603 08:14:19.318439 140529512351552 utils.py:1268] \x1b[35m[{step}]\x1b[0m "
                         f"minival/prec@1 = {k / 1000}")
            lines.append(f"\x1b[35m[{step}]\x1b[0m core_hours_TPU v3 = {k * 0.01}")
            lines.append(f"{head}[{step}] Got texts: {{'samples': 'x={k}'}}.")
            lines.append(f"{head}[{step}] Histogram for 'w' = {{[-0.1, 0.1): {k}}}")
        if k % 11 == 0:
            lines.append(f"{head}[{step}] eval_accuracy={k / count}, eval_loss=1e-{k % 9 + 1}, eval_perplexity=1E+05")
        if k % 13 == 0:
            lines.append(f"{head}[{step}] per_class=[0.5 0.25]")  # (a look-alike)
        if k % 17 == 0:
            lines.append(f"{head}[{step}] odd=INF")  # (float() takes it, NUMBER does not: a look-alike)
        if k % 19 == 0:
            lines.append(f"{head}[Hyperparameters] {{'learning_rate': 0.1, 'step': {k}}}")
    return "\n".join(lines) + "\n"


def read_both_ways(path: Path, monkeypatch, chunk_chars: tuple[int | None, ...] = (None,)):
    """``path`` read with a chunk's lines at once and with every line on its own, at each chunk size: the same rows
    exactly, notes, warnings, restarts. The run read at once (at the last size)."""
    run = None
    for size in chunk_chars:
        if size is not None:
            monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        run = read(path)
        monkeypatch.setattr(CLUParser, "line_by_line", True)
        by_line = read(path)
        monkeypatch.setattr(CLUParser, "line_by_line", False)
        pd.testing.assert_frame_equal(run.scalars, by_line.scalars, check_exact=True)
        assert (run.notes, run.warnings, run.restarts) == (by_line.notes, by_line.warnings, by_line.restarts)
    return run


@pytest.mark.parametrize("count", [10, 400])
def test_lines_read_at_once_as_each_on_its_own(tmp_path, monkeypatch, count):
    path = write(tmp_path / "console.log", _mixed(count))
    run = read_both_ways(path, monkeypatch, chunk_chars=(None, 4096, 1 << 14))
    half = count // 2
    again = 100 * (half // 2 + 1)  # (the step the resumed job goes back to)
    check(run.scalars, "learning_rate", {100: 0.0001, again: again / 1e6, 100 * half: half / 1e4},
          count=half // 2 + count - half)
    check(run.scalars, "minival/prec@1", {100: 0.0}, count=len(
        {100 * (k + 1 if k < half else k - half + half // 2 + 1) for k in range(0, count, 7)}))
    (restart,) = run.restarts  # (one for every kind of line that goes back)
    assert restart.step == again and restart.until == 100 * half
    (warning,) = run.warnings
    lookalikes = sum(1 for k in range(count) if k % 13 == 0) + sum(1 for k in range(count) if k % 17 == 0)
    assert f"{lookalikes:,} line(s) look like CLU metrics but could not be read" in warning.message
    assert {"train/loss", "train/timing/steps_per_second", "core_hours_TPU v3", "eval_perplexity"} <= set(
        run.scalars["tag"])
    assert not {"odd", "per_class"} & set(run.scalars["tag"])


def test_the_fixtures_read_at_once_as_each_on_its_own(monkeypatch):
    for path in (CPU, RESUMED, GEMMA, BIG_VISION):
        read_both_ways(path, monkeypatch, chunk_chars=(None, 2048))


def test_lines_of_one_pair_each_read_at_once_as_each_on_its_own(tmp_path, monkeypatch):
    # (big_vision's lines, CLU's of one pair, with a collection or not: a chunk of them is read without cutting)
    head = "I0325 14:11:17.857037 130245504009792 logging_writer.py:48] "
    lines = []
    for step in range(1, 60):
        lines.append(f"I0603 08:14:19.318439 140529512351552 utils.py:1268] \x1b[35m[{step}]\x1b[0m z/secs = {step / 3}")
        lines.append(f"{head}[{step}] steps_per_sec={step * 1.5:.6g}")
        lines.append(f"{head}[{step}] collection=train loss=1e-{step % 9 + 1}")
        if step % 10 == 0:
            lines.append(f"{head}[{step}] collection=train x = nan")
    run = read_both_ways(write(tmp_path / "console.log", "\n".join(lines) + "\n"), monkeypatch, (None, 512))
    check(run.scalars, "train/loss", {1: 0.01, 8: 1e-9}, count=59)
    check(run.scalars, "z/secs", {3: 1.0}, count=59)
    assert math.isnan(curve(run.scalars, "train/x")[10])
