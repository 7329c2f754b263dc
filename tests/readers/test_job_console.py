"""The run of a failed job's console that holds no line of a known metric format."""

from tanalyze.readers.text.job_console import JobConsoleReader


def test_lines_that_look_like_metrics_are_named_in_a_warning(tmp_path):
    """A console of a print format no reader knows: its metric-looking lines (a loss word, then a number) are
    counted and the first shown, with the way to read them; a traceback's ``loss.backward()`` or ``compute_loss``
    and a banner's numbers are none."""
    console = tmp_path / "slurm-7.out"
    console.write_text("Loss function: CrossEntropy\nFile \"train.py\", line 88, in compute_loss\n    loss.backward()\n"
                       "End of epoch 0 / 100\nGenerator Loss: 3844.1664, Discriminator Loss: 1286.4466\n"
                       "End of epoch 1 / 100\nGenerator Loss: 3053.6426, Discriminator Loss: 696.8782\n")
    [run] = JobConsoleReader().read([console])
    [warning] = run.warnings
    assert warning.location == "line 5" and warning.count == 2
    assert "2 line(s) look like metric lines" in warning.message
    assert "'Generator Loss: 3844.1664, Discriminator Loss: 1286.4466'" in warning.message
    assert "--pattern REGEX" in warning.message


def test_one_such_line_is_no_metric_log(tmp_path):
    console = tmp_path / "slurm-8.out"
    console.write_text("Starting training\nbest val_loss so far: 0.5\nTraceback (most recent call last):\n")
    [run] = JobConsoleReader().read([console])
    assert run.warnings == []
