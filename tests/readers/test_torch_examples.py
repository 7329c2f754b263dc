"""The console lines of PyTorch's examples and tutorials, printed by small real torch trainings
(tests/fixtures/torch_examples) with the templates of their sources."""

from __future__ import annotations

from pathlib import Path

import pytest

import tanalyze
from tanalyze.readers import get_reader
from tanalyze.readers.text.console import detect_console_format

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch_examples"


def _points(name: str) -> dict[tuple[str, int], float]:
    (run,) = get_reader("torch_examples").read([FIXTURES / name])
    assert not run.warnings, run.warnings
    frame = run.scalar_table()
    return {(str(t), int(s)): float(v) for t, s, v in zip(frame["tag"], frame["step"], frame["value"], strict=True)}


def test_the_mnist_examples_lines_are_at_the_samples_seen_and_its_test_summary_at_the_epochs_end():
    points = _points("mnist_example.log")
    assert points[("train/loss", 0)] == 2.689019 and points[("train/loss", 640)] == 1.937855
    assert points[("test/loss", 6000)] == 0.4405 and points[("test/accuracy", 6000)] == pytest.approx(0.954)
    assert max(step for tag, step in points if tag == "test/loss") == 4 * 6000
    assert {tag for tag, _ in points} == {"train/loss", "test/loss", "test/accuracy"}


def test_the_tutorials_epoch_and_step_counters_give_the_step_and_the_epochs_line_its_end():
    points = _points("tutorial_overfit.log")
    assert points[("Loss", 2)] == 2.1306 and points[("Loss", 4)] == 1.4859 and points[("Loss", 6)] == 0.8890
    assert points[("Validation Loss", 4)] == 1.2041 and points[("Validation Accuracy", 4)] == 74.02
    assert points[("Validation Loss", 160)] == 0.9324


def test_the_cifar_tutorials_epoch_and_batch_pairs_are_placed_by_the_largest_batch():
    (run,) = get_reader("torch_examples").read([FIXTURES / "cifar_tutorial.log"])
    frame = run.scalar_table()
    assert frame["step"].tolist() == [500 * k for k in range(1, 7)] + [3000 + 500 * k for k in range(1, 7)]
    assert frame["value"].tolist()[:2] == [0.690, 0.080] and frame["value"].tolist()[6] == 0.020
    assert any("3,000 being the largest batch printed" in note for note in run.notes)


def test_a_step_counter_in_brackets_is_the_step():
    points = _points("step_counter.log")
    assert points[("Loss", 20)] == 2.1012 and points[("LR", 20)] == 3.3e-4 and max(s for _, s in points) == 600


@pytest.mark.parametrize(("name", "truth"), [("mnist_example.log", "normal"), ("tutorial_overfit.log", "overfitting"),
                                             ("cifar_tutorial.log", "normal"), ("step_counter.log", "normal")])
def test_verdicts_of_the_trainings_whose_truth_is_known(name, truth):
    (diagnosis,) = tanalyze.diagnose(tanalyze.load(FIXTURES / name, cache=False)).values()
    assert diagnosis.format == "torch_examples" and diagnosis.verdict.label == truth


def test_finished_training_is_an_end_marker():
    status = tanalyze.run_status([str(FIXTURES / "cifar_tutorial.log")])
    assert status.status == "finished" and "Finished Training" in status.reason


@pytest.mark.parametrize("text", [
    "Epoch [1/10] starting\n",  # a counter without any pair
    "[1, 2] is a list\n",
])
def test_lines_without_pairs_are_not_claimed(text, tmp_path):
    path = tmp_path / "train.log"
    path.write_text(text * 5)
    assert detect_console_format(path) is None


def test_a_line_read_by_the_generic_reader_keeps_the_file_there(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {i} | loss {2 - i / 10:.3f}\n" for i in range(10))
                    + "[Step 3/10] Loss: 1.7\n[Step 4/10] Loss: 1.6\n")
    assert detect_console_format(path).name == "text"


@pytest.mark.parametrize("name", ["mnist_example.log", "tutorial_overfit.log", "cifar_tutorial.log",
                                  "step_counter.log"])
def test_the_mnist_lines_read_at_once_equal_them_read_line_by_line(name, tmp_path, monkeypatch):
    from tanalyze.readers.text.torch_examples import TorchExamplesParser
    from tests.readers.text_helpers import read_both_ways

    read_both_ways("torch_examples", TorchExamplesParser, FIXTURES / name, monkeypatch, (None, 300))
    # the same log with lines that break the usual shape: another width, a NaN, a resumed epoch, junk
    text = (FIXTURES / "mnist_example.log").read_text().splitlines(keepends=True)
    text[3] = "Train Epoch: 1 [1920/6000 (32%)]\tLoss: nan\n"
    text[20:20] = ["Train Epoch: 1 [0/6000 (0%)]\tLoss: 2.5\n", "Train Epoch: 1 [640/6000]\tloss=2.4\n", "junk [\n"]
    read_both_ways("torch_examples", TorchExamplesParser, write(tmp_path / "x.log", "".join(text)), monkeypatch,
                   (None, 300))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_mnist_lines_behind_pythons_logging_prefix_are_read(tmp_path):
    """The MNIST example printed through ``logging`` (as Kubeflow's copy does): its prefix is removed first."""
    import logging

    path = tmp_path / "train.log"
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-8s %(message)s", "%Y-%m-%dT%H:%M:%SZ"))
    logger = logging.getLogger("mnist-fixture")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        for line in (FIXTURES / "mnist_example.log").read_text().splitlines():
            if line.strip():
                logger.info(line.replace("\tLoss: ", "\tloss="))
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert detect_console_format(path).name == "torch_examples"  # (a W&B run's output.log is read so too)
    (run,) = get_reader("torch_examples").read([path])
    frame = run.scalar_table()
    assert len(frame) == len(_points("mnist_example.log")) and run.notes[0].startswith("the logging prefix")
    assert frame["value"].iloc[0] == 2.689019 and frame["tag"].iloc[0] == "train/loss"


def test_lines_of_another_mode_among_the_train_lines_are_read_not_dropped(tmp_path):
    """A fork that prints its validation progress as 'Valid Epoch: e [seen/size]' between the train lines: those
    lines are read (they were dropped where the train lines around them were read at once)."""
    lines = []
    for epoch in (1, 2):
        for batch in range(0, 938, 10):
            lines.append(f"Train Epoch: {epoch} [{batch * 64}/60000 ({100. * batch / 938:.0f}%)]\tLoss: {2 / epoch:.6f}\n")
            if batch % 200 == 0:
                lines.append(f"Valid Epoch: {epoch} [{batch * 64}/60000 ({100. * batch / 938:.0f}%)]\tLoss: "
                             f"{1 / epoch + batch / 1e4:.6f}\n")
        lines.append("\nTest set: Average loss: 0.5000, Accuracy: 9000/10000 (90%)\n\n")
    (run,) = get_reader("torch_examples").read([write(tmp_path / "train.log", "".join(lines))])
    valid = run.scalars[run.scalars["tag"] == "valid/loss"]
    assert len(valid) == 10 and (run.scalars["tag"] == "train/loss").sum() == 188
    assert valid["step"].tolist()[:2] == [0, 200 * 64] and valid["value"].tolist()[:2] == [1.0, 1.02]


def test_paddlevits_epoch_summaries_after_dashes_are_read_at_the_end_of_their_epoch(tmp_path):
    """PaddleViT's training scripts log ``Epoch[001/100], Step[0100/0196], Avg Loss: …`` and, after each epoch,
    ``----- Epoch[001/100], Train Loss: …, Train Acc: …, time: …`` and its validation: the summaries were dropped."""
    import logging

    path = tmp_path / "log_train.txt"
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger = logging.getLogger("paddlevit-fixture")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        for epoch in range(1, 4):
            logger.info(f"Now training epoch {epoch}. LR=0.000033")
            for step in (0, 100):
                logger.info(f"Epoch[{epoch:03d}/100], Step[{step:04d}/0196], Avg Loss: {1 - epoch / 10:.4f}, "
                            f"Avg Acc: {0.7 + epoch / 100:.4f}")
            logger.info(f"----- Epoch[{epoch:03d}/100], Train Loss: {1.02 - epoch / 10:.4f}, Train Acc: "
                        f"{0.75 + epoch / 100:.4f}, time: 173.49")
            logger.info(f"----- Epoch[{epoch:03d}/100], Validation Loss: {0.9 - epoch / 20:.4f}, Validation Acc@1: "
                        f"{0.8 + epoch / 100:.4f}, Validation Acc@5: 0.9500, time: 20.10")
    finally:
        logger.removeHandler(handler)
        handler.close()
    (run,) = get_reader("torch_examples").read([path])
    points = {(str(t), int(s)): float(v) for t, s, v in run.scalar_table()[["tag", "step", "value"]].itertuples(
        index=False)}
    assert points[("Avg Loss", 100)] == 0.9 and points[("Avg Loss", 196 + 100)] == 0.8
    assert points[("Train Loss", 196)] == 0.92 and points[("Train Acc", 3 * 196)] == 0.78
    assert points[("Validation Loss", 196)] == 0.85 and points[("Validation Acc@1", 2 * 196)] == 0.82


def test_a_log_of_epoch_lines_that_a_relaunch_starts_over_keeps_each_launch_as_a_session(tmp_path):
    """Three launches of one script appended to its ``training.log`` (``Epoch [1/50], Train Loss: …, Val Loss: …``
    from epoch 1 again each time): every launch is kept, as its own session, the later ones marked new starts; the
    run is judged on the last."""
    lines = []
    for launch, epochs in enumerate((10, 8, 11)):
        lines.append(f"2025-04-2{4 + launch} 21:17:53,828 - INFO - Starting training")
        for e in range(1, epochs + 1):
            lines.append(f"2025-04-2{4 + launch} 21:17:53,828 - INFO - Epoch [{e}/50], Train Loss: "
                         f"{1.95 - e / 20 + launch / 100:.4f}, Train Acc: {20 + e:.2f}%, Val Loss: "
                         f"{1.9 - e / 25 + launch / 100:.4f}, Val Acc: {18 + e:.2f}%")
    path = tmp_path / "training.log"
    path.write_text("\n".join(lines) + "\n")
    (logs,) = [tanalyze.load(path, cache=False)]
    (info,) = logs.runs.values()
    assert [(p.first_step, p.last_step) for p in info.phases] == [(1, 10), (11, 18), (19, 29)]
    assert len(logs.scalars[logs.scalars["tag"] == "Train Loss"]) == 29
    (d,) = tanalyze.diagnose(logs).values()
    assert d.phase.note.startswith("judged phase 3 of 3 (steps 19-29")
