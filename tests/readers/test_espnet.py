"""ESPnet2's train.log: lines as ESPnet's docs and public tutorials show them from real trainings (ESPnet's training
needs a recipe's data preparation, which cannot run here; ``tests/fixtures/espnet``), with their values."""

from tanalyze.readers import HEAD_BYTES, get_reader
from tanalyze.readers.values import parse_timestamp
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

DOCS = REPO / "tests" / "fixtures" / "espnet" / "asr_train" / "train.log"

BATCH = ("[hostname] 2023-10-27 13:{minute:02d}:46,484 (trainer:753) INFO: {epoch}epoch:train:{first}-{last}batch: "
         "iter_time=1.924e-04, forward_time=0.040, loss_ctc={ctc:.3f}, loss_att=145.106, acc={acc:.3f}, loss={loss:.3f}, "
         "backward_time=0.049, grad_norm=156.442, clip=100.000, loss_scale=1.000, optim_step_time=0.015, "
         "optim0_lr0=1.007e-05, train_time=0.127")
RESULTS = ("[hostname] 2023-10-27 14:{minute:02d}:05,691 (trainer:338) INFO: {epoch}epoch results: [train] "
           "iter_time=1.5e-04, loss={loss:.3f}, acc=0.28, time=20 minutes and 52.3 seconds, total_count={total}, "
           "gpu_max_cached_mem_GB=7.2, [valid] loss_ctc=120.5, loss_att=95.4, acc={acc:.3f}, cer=0.6, wer=0.9, "
           "loss={valid:.3f}, time=31.9 seconds, total_count=300, gpu_max_cached_mem_GB=7.2, [att_plot] time=1.2 "
           "seconds, total_count=0, gpu_max_cached_mem_GB=7.2")


def _epochs(count: int, batches: int = 8050, per_line: int = 805, results: bool = True) -> str:
    lines = []
    for epoch in range(1, count + 1):
        lines.append(f"[hostname] 2023-10-27 13:29:13,321 (trainer:298) INFO: {epoch}/{count}epoch started")
        for first in range(1, batches, per_line):
            loss = 150 / epoch - first / 1e4
            lines.append(BATCH.format(minute=epoch % 60, epoch=epoch, first=first, last=first + per_line - 1,
                                      ctc=loss * 1.2, acc=0.2 + epoch / 100, loss=loss))
        if results:
            lines.append(RESULTS.format(minute=epoch % 60, epoch=epoch, loss=140 / epoch, total=batches * epoch,
                                        acc=0.3 + epoch / 100, valid=100 / epoch))
    return "\n".join(lines) + "\n"


def test_the_docs_lines():
    reader = get_reader("espnet")
    assert reader.sniff(DOCS, DOCS.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([DOCS])
    check(run.scalars, "loss", {10: 50.873, 20: 44.369}, count=2)
    check(run.scalars, "lr_0", {10: 1.0}, count=2)
    check(run.scalars, "iter_time", {20: 4.28e-05}, count=2)
    assert run.scalars["wall_time"].iloc[0] == parse_timestamp("2020-04-05 16:34:56,315")
    # (a log that begins at its second epoch: the iterations before it are not known)
    assert "1 epoch(s) with no results line before them" in notes_text(run)


def test_steps_are_the_iterations_so_far_and_the_validation_at_an_epochs_last(tmp_path):
    path = write(tmp_path / "exp" / "asr_train" / "train.log", _epochs(3))
    (run,) = get_reader("espnet").read([path])
    frame = run.scalars
    check(frame, "loss", {805: 150.0, 8050: 149.275, 8050 + 805: 75.0}, count=30)  # (as printed, to 3 decimals)
    check(frame, "optim0_lr0", {805: 1.007e-05}, count=30)
    # each epoch's [valid] section at its total_count; its times and counts, [train] and [att_plot] not read
    check(frame, "valid/loss", {8050: 100.0, 16100: 50.0, 24150: 33.333}, count=3)
    check(frame, "valid/cer", {8050: 0.6}, count=3)
    assert not {"valid/time", "valid/total_count", "time", "total_count"} & set(frame["tag"])
    assert "3 epoch result(s)" in notes_text(run) and "no results line" not in notes_text(run)
    assert not run.warnings and not run.restarts


def test_an_epoch_without_results_goes_on_after_the_batches_of_the_one_before(tmp_path):
    (run,) = get_reader("espnet").read([write(tmp_path / "train.log", _epochs(2, results=False))])
    check(run.scalars, "loss", {8050: 149.275, 8050 + 805: 75.0}, count=20)
    assert "1 epoch(s) with no results line before them" in notes_text(run)


def test_funasrs_updates_are_the_step(tmp_path):
    lines = [f"[bach-gpu011024008134] 2023-04-23 18:59:48,924 (trainer:777) INFO: 2epoch:train:{k * 50 + 1}-"
             f"{k * 50 + 50}batch:{k * 50 + 50}num_updates: iter_time=0.008, forward_time=0.302, loss_att=0.186, "
             f"acc=0.942, loss_pre=0.005, loss={0.192 - k / 1000:.3f}, backward_time=0.231, optim_step_time=0.117, "
             "optim0_lr0=7.484e-06, train_time=0.753" for k in range(3)]
    (run,) = get_reader("espnet").read([write(tmp_path / "log.txt", "\n".join(lines) + "\n")])
    assert curve(run.scalars, "loss") == {50: 0.192, 100: 0.191, 150: 0.19}


def test_training_lines_read_at_once_by_their_template_as_each_on_its_own(tmp_path, monkeypatch):
    from tanalyze.readers.text.espnet import ESPnetParser
    from tests.readers.text_helpers import read_both_ways

    text = _epochs(4, batches=2000, per_line=20).replace("acc=0.230", "acc=nan").replace("loss_scale=1.000, optim",
                                                                                         "optim", 7)
    run = read_both_ways("espnet", ESPnetParser, write(tmp_path / "train.log", text), monkeypatch,
                         chunk_chars=(None, 4096, 1 << 14))
    check(run.scalars, "loss", {20: 150.0}, count=400)
    check(run.scalars, "loss_scale", {20 * 8: 1.0}, count=393)
    check(run.scalars, "valid/acc", {8000: 0.34}, count=4)


def test_a_training_line_that_cannot_be_read_is_named_and_a_restart_recorded(tmp_path):
    lines = _epochs(1).splitlines()
    cut = "[hostname] 2023-10-27 13:59:46,484 (trainer:753) INFO: 1epoch:train:8051-"
    again = lines[1]  # the first batches again, after the epoch's results: a restart
    (run,) = get_reader("espnet").read([write(tmp_path / "train.log", "\n".join([*lines, cut, again]) + "\n")])
    (warning,) = run.warnings
    assert "1 line(s) look like ESPnet metrics but could not be read, e.g. line 13" in warning.message
    (restart,) = run.restarts
    assert restart.step == 805 and "after step 8050 (line 14)" in restart.detail


def test_other_logs_are_not_espnets(tmp_path):
    for text in ("1epoch:train:1-10batch: loss=50.8\n1epoch:train:11-20batch: loss=44.3\n",
                 "epoch 1 train loss=0.5\nepoch 2 train loss=0.4\n"):
        path = write(tmp_path / "train.log", text)
        assert not get_reader("espnet").sniff(path, path.read_bytes()[:HEAD_BYTES])
