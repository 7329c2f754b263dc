"""PyTorch's word-language-model console: real trainings of the example's loop (``tests/fixtures/pytorch_lm/
generate.py``), and the example's README lines as public tutorials print them, with their values."""

import math

from tanalyze import diagnose, load
from tanalyze.readers import HEAD_BYTES, get_reader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "pytorch_lm"

#: the example's first epoch on Wikitext-2 (its batches per epoch 2983), its summary, and the test
README = """| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 45.68 | loss  7.63 | ppl  2050.44
| epoch   1 |   400/ 2983 batches | lr 20.00 | ms/batch 45.11 | loss  6.85 | ppl   945.93
| epoch   1 |   600/ 2983 batches | lr 20.00 | ms/batch 45.03 | loss  6.48 | ppl   653.61
-----------------------------------------------------------------------------------------
| end of epoch   1 | time: 140.54s | valid loss  5.54 | valid ppl   254.69
-----------------------------------------------------------------------------------------
| epoch   2 |   200/ 2983 batches | lr 20.00 | ms/batch 45.81 | loss  5.53 | ppl   250.99
-----------------------------------------------------------------------------------------
| end of epoch   2 | time: 141.02s | valid loss  5.31 | valid ppl   202.35
-----------------------------------------------------------------------------------------
=========================================================================================
| End of training | test loss  5.01 | test ppl   150.01
=========================================================================================
"""


def test_a_real_training_of_the_examples_loop():
    (run,) = get_reader("pytorch_lm").read([FIXTURES / "word_lm.log"])
    frame = run.scalars
    check(frame, "loss", {10: 5.74, 20: 5.16, 590: 3.05}, count=54)
    check(frame, "ppl", {10: 311.90, 590: 21.12}, count=54)
    check(frame, "lr", {10: 20.0, 590: 20.0}, count=54)
    check(frame, "ms/batch", {10: 174.34}, count=54)
    check(frame, "valid loss", {100: 3.38, 200: 3.04, 600: 2.86}, count=6)
    check(frame, "valid ppl", {100: 29.26}, count=6)
    assert curve(frame, "test loss") == {590: 2.92} and curve(frame, "test ppl") == {590: 18.58}
    assert "time" not in set(frame["tag"]) and frame["wall_time"].isna().all()
    assert "6 epoch summary(ies)" in notes_text(run) and "1 test(s)" in notes_text(run) and not run.warnings


def test_the_truth_of_the_real_trainings():
    verdicts = {}
    for name in ("word_lm.log", "word_lm_overfit.log"):
        (result,) = diagnose(load(FIXTURES / name, cache=False)).values()
        verdicts[name] = result.verdict.label
        assert result.roles["train_loss"] == "loss" and result.roles["val_loss"] == "valid loss"
    assert verdicts == {"word_lm.log": "normal", "word_lm_overfit.log": "overfitting"}


def test_the_examples_readme_lines(tmp_path):
    path = write(tmp_path / "wikitext2" / "train.log", README)
    reader = get_reader("pytorch_lm")
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    frame = run.scalars
    check(frame, "loss", {200: 7.63, 400: 6.85, 600: 6.48, 3183: 5.53}, count=4)
    check(frame, "ppl", {200: 2050.44}, count=4)
    assert curve(frame, "valid loss") == {2983: 5.54, 5966: 5.31}
    assert curve(frame, "valid ppl") == {2983: 254.69, 5966: 202.35}
    assert curve(frame, "test loss") == {3183: 5.01} and curve(frame, "test ppl") == {3183: 150.01}
    assert [info.format for info in load(path.parent, cache=False).runs.values()] == ["pytorch_lm"]


def test_lines_read_at_once_by_their_template_as_each_on_its_own(tmp_path, monkeypatch):
    from tanalyze.readers.text.pytorch_lm import PyTorchLMParser
    from tests.readers.text_helpers import read_both_ways

    lines = []
    for epoch in range(1, 31):
        for batch in range(50, 1001, 50):
            loss = "  nan" if (epoch, batch) == (7, 300) else f"{9 - epoch / 5 - batch / 5000:5.2f}"
            extra = f" | bpc {epoch / 3:4.2f}" if epoch == 12 else ""  # (a line of another template)
            lines.append(f"| epoch {epoch:3d} | {batch:5d}/ 1000 batches | lr {20 / 4 ** (epoch // 10):02.2f} | "
                         f"ms/batch {40 + batch / 100:5.2f} | loss {loss} | ppl {math.exp(9 - epoch / 5):8.2f}{extra}")
        lines += ["-" * 89, f"| end of epoch {epoch:3d} | time: {epoch * 10:5.2f}s | valid loss {8 - epoch / 6:5.2f} | "
                  f"valid ppl {math.exp(8 - epoch / 6):8.2f}", "-" * 89]
    text = "\n".join([*lines, "=" * 89, "| End of training | test loss  3.01 | test ppl    20.29", "=" * 89]) + "\n"
    run = read_both_ways("pytorch_lm", PyTorchLMParser, write(tmp_path / "train.log", text), monkeypatch,
                         chunk_chars=(None, 4096, 1 << 14))
    check(run.scalars, "loss", {50: 8.79, 30000: 2.8}, count=600)
    assert math.isnan(curve(run.scalars, "loss")[6300])
    check(run.scalars, "bpc", {11050: 4.0}, count=20)
    check(run.scalars, "valid loss", {1000: 7.83, 30000: 3.0}, count=30)
    assert curve(run.scalars, "test loss") == {30000: 3.01}
    read_both_ways("pytorch_lm", PyTorchLMParser, write(tmp_path / "r.log", README), monkeypatch, chunk_chars=(None, 512))


def test_a_line_that_cannot_be_read_is_named_and_a_restart_recorded(tmp_path):
    lines = README.splitlines()
    cut = "| epoch   2 |   400/ 29"  # (cut short)
    huge = f"| epoch {2**60} |   200/ 2983 batches | lr 20.00 | ms/batch 45.81 | loss  5.53 | ppl   250.99"
    again = lines[1]  # step 400 again, after 3183: resumed from a checkpoint
    text = "\n".join([*lines[:7], cut, huge, again, "| epoch   1 |   600/ 2983 batches | lr 20.00 | loss  6.40"]) + "\n"
    (run,) = get_reader("pytorch_lm").read([write(tmp_path / "train.log", text)])
    (warning,) = run.warnings
    assert "2 line(s) look like PyTorch word language model metrics but could not be read, e.g. line 8" in warning.message
    (restart,) = run.restarts
    assert restart.step == 400 and "after step 3183 (line 10)" in restart.detail
    assert curve(run.scalars, "loss")[600] == 6.40  # (the resumed training's: the last write wins)


def test_other_logs_are_not_the_examples(tmp_path):
    for text in ("| epoch 001 | loss 3.14 | nll_loss 1.23 | ppl 8.82 | num_updates 282\n" * 2,  # fairseq
                 "| epoch   1 | loss 7.63 | ppl 2050.44\n" * 2,
                 "| epoch   1 |   200/ 2983 batches | lr 20.00 | loss  7.63\n"):  # (one line alone)
        path = write(tmp_path / "train.log", text)
        assert not get_reader("pytorch_lm").sniff(path, path.read_bytes()[:HEAD_BYTES])
