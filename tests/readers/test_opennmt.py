"""OpenNMT-py's training log: a real training's console (``tests/fixtures/opennmt/generate.py``, OpenNMT-py 3.5), and
the lines of OpenNMT-py 2.x's quickstart on toy-ende as public tutorials print them, with their values."""

import math

from tanalyze import diagnose, load
from tanalyze.readers import HEAD_BYTES, get_reader
from tanalyze.readers.values import parse_timestamp
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

TOY = REPO / "tests" / "fixtures" / "opennmt" / "toy" / "train.log"

QUICKSTART = """[2020-09-22 16:31:18,572 INFO] corpus's transforms: TransformPipe()
[2020-09-22 16:31:18,574 INFO] Loading ParallelCorpus(toy-ende/src-train.txt, toy-ende/tgt-train.txt, align=None)...
[2020-09-22 16:31:24,717 INFO] Step 50/ 1000; acc:   7.21; ppl: 6659.24; xent: 8.80; lr: 1.00000; 19307/19183 tok/s;      6 sec
[2020-09-22 16:31:28,225 INFO] Loading ParallelCorpus(toy-ende/src-train.txt, toy-ende/tgt-train.txt, align=None)...
[2020-09-22 16:31:30,779 INFO] Step 100/ 1000; acc:   9.26; ppl: 1989.38; xent: 7.60; lr: 1.00000; 19281/19312 tok/s;     12 sec
[2020-09-22 16:31:36,770 INFO] Step 150/ 1000; acc:  10.16; ppl: 1374.93; xent: 7.23; lr: 1.00000; 18835/18653 tok/s;     18 sec
[2020-09-22 16:31:42,944 INFO] Step 200/ 1000; acc:  11.11; ppl: 1114.67; xent: 7.02; lr: 1.00000; 19001/18907 tok/s;     24 sec
[2020-09-22 16:33:12,454 INFO] Step 850/ 1000; acc:  24.39; ppl: 188.56; xent: 5.24; lr: 1.00000; 18979/18915 tok/s;    114 sec
[2020-09-22 16:33:18,704 INFO] Step 900/ 1000; acc:  25.39; ppl: 169.35; xent: 5.13; lr: 1.00000; 18709/18341 tok/s;    120 sec
[2020-09-22 16:33:24,976 INFO] Step 950/ 1000; acc:  26.46; ppl: 150.88; xent: 5.02; lr: 1.00000; 18393/18571 tok/s;    126 sec
[2020-09-22 16:33:31,180 INFO] Step 1000/ 1000; acc:  27.87; ppl: 132.36; xent: 4.89; lr: 1.00000; 18655/18517 tok/s;    133 sec
[2020-09-22 16:33:31,182 INFO] Loading ParallelCorpus(toy-ende/src-val.txt, toy-ende/tgt-val.txt, align=None)...
[2020-09-22 16:33:40,079 INFO] Validation perplexity: 218.311
[2020-09-22 16:33:40,080 INFO] Validation accuracy: 21.7181
"""

VERSION_3 = """[2022-09-27 12:31:29,844 INFO] Start training loop and validate every 10000 steps...
[2022-09-27 12:32:51,247 INFO] Step 100/40000; acc:   4.41; ppl: 1654.45; xent: 7.41; lr: 0.00001; 21889/22994 tok/s;     81 sec;
[2022-09-27 12:34:09,895 INFO] Step 200/40000; acc:   7.15; ppl: 829.36; xent: 6.72; lr: 0.00002; 19791/18806 tok/s;    160 sec;
[2022-09-27 12:35:31,677 INFO] Step 300/40000; acc:  15.58; ppl: 315.70; xent: 5.75; lr: 0.00004; 28579/25610 tok/s;    242 sec;
"""


def test_a_real_opennmt_py_3_training():
    (run,) = get_reader("opennmt").read([TOY])
    frame = run.scalars
    check(frame, "acc", {10: 13.8, 300: 29.2}, count=30)
    check(frame, "xent", {10: 3.5, 100: 3.3, 300: 2.5}, count=30)
    check(frame, "sents", {10: 320.0}, count=30)
    check(frame, "src_tok/s", {10: 134.0, 20: 23614.0}, count=30)
    check(frame, "tgt_tok/s", {20: 28244.0}, count=30)
    assert "bsz" not in set(frame["tag"])  # (its "176/ 208/32": the batch's sizes)
    check(frame, "valid/ppl", {100: 29.8694, 200: 25.1999, 300: 11.686}, count=3)
    check(frame, "valid/acc", {300: 29.2537}, count=3)
    assert frame[frame["tag"] == "acc"]["wall_time"].iloc[0] == parse_timestamp("2026-12-07 07:37:42,245")
    assert "3 validation(s)" in notes_text(run) and not run.warnings
    logs = load(TOY.parent, cache=False)
    assert [info.format for info in logs.runs.values()] == ["opennmt"]


def test_the_quickstarts_training_and_validation(tmp_path):
    path = write(tmp_path / "toy-ende" / "run" / "train.log", QUICKSTART)
    reader = get_reader("opennmt")
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    frame = run.scalars
    check(frame, "acc", {50: 7.21, 1000: 27.87}, count=8)
    check(frame, "ppl", {50: 6659.24, 200: 1114.67}, count=8)
    check(frame, "xent", {100: 7.60, 1000: 4.89}, count=8)
    check(frame, "lr", {50: 1.0}, count=8)
    check(frame, "src_tok/s", {50: 19307.0}, count=8)
    check(frame, "tgt_tok/s", {50: 19183.0}, count=8)
    assert curve(frame, "valid/ppl") == {1000: 218.311} and curve(frame, "valid/acc") == {1000: 21.7181}
    first = frame[frame["tag"] == "acc"].iloc[0]
    assert first["wall_time"] == parse_timestamp("2020-09-22 16:31:24,717")
    assert "1 validation(s) as valid/ppl, valid/acc" in notes_text(run) and not run.warnings


def test_version_3_lines_end_with_a_semicolon(tmp_path):
    (run,) = get_reader("opennmt").read([write(tmp_path / "train.log", VERSION_3)])
    check(run.scalars, "xent", {100: 7.41, 200: 6.72, 300: 5.75}, count=3)
    check(run.scalars, "tgt_tok/s", {300: 25610.0}, count=3)


def test_its_cross_entropy_is_the_training_loss_and_its_validation_perplexity_the_validation_loss(tmp_path):
    write(tmp_path / "run" / "train.log", QUICKSTART)
    logs = load(tmp_path / "run", cache=False)
    (result,) = diagnose(logs).values()
    roles = result.roles
    assert roles["train_loss"] == "xent" and roles["val_loss"] == "log(valid/ppl)"  # (no validation loss logged)
    assert roles["throughput"] in {"src_tok/s", "tgt_tok/s"}


def _lines(count: int) -> str:
    """Training lines of several templates (padding that changes with the numbers' widths, version 3's ``sents`` and
    ``bsz``), odd numbers among them, validations between."""
    lines = []
    for k in range(count):
        step = 10 * (k + 1)
        acc = f"{k / 4:6.2f}" if k != 77 else "   nan"
        extra = f"sents: {k * 7:7.0f}; bsz: 4096/4000/{k % 90:2d}; " if 150 <= k < 200 else ""
        lines.append(f"[2022-09-27 12:{k // 60 % 60:02d}:{k % 60:02d},{k % 1000:03d} INFO] Step {step:5d}/{10 * count:5d}; "
                     f"acc: {acc}; ppl: {2 ** (12 - k / 40):5.2f}; xent: {(12 - k / 40) * 0.69:4.2f}; "
                     f"lr: {1e-5 * (k + 1):7.5f}; {extra}{20000 + k}/{19000 + k} tok/s; {k * 3:6.0f} sec;")
        if k % 100 == 99:
            lines += [f"[2022-09-27 13:00:00,000 INFO] Validation perplexity: {100 - k / 10:g}",
                      f"[2022-09-27 13:00:00,001 INFO] Validation accuracy: {k / 10:g}"]
    return "\n".join(lines) + "\n"


def test_training_lines_read_at_once_by_their_template_as_each_on_its_own(tmp_path, monkeypatch):
    from tanalyze.readers.text.opennmt import OpenNMTParser
    from tests.readers.text_helpers import read_both_ways

    path = write(tmp_path / "train.log", _lines(400))
    run = read_both_ways("opennmt", OpenNMTParser, path, monkeypatch, chunk_chars=(None, 4096, 1 << 14))
    check(run.scalars, "xent", {10: 8.28, 4000: 1.40}, count=400)
    assert math.isnan(curve(run.scalars, "acc")[780])
    check(run.scalars, "sents", {1510: 1050.0}, count=50)
    assert "bsz" not in set(run.scalars["tag"])
    check(run.scalars, "valid/ppl", {1000: 90.1}, count=4)
    for text in (QUICKSTART, VERSION_3):
        read_both_ways("opennmt", OpenNMTParser, write(tmp_path / "q.log", text), monkeypatch, chunk_chars=(None, 1024))


def test_a_step_line_that_cannot_be_read_is_named_and_a_restart_recorded(tmp_path):
    lines = QUICKSTART.splitlines()
    cut = "[2020-09-22 16:33:41,000 INFO] Step 1050/ 10"  # (cut short)
    again = lines[2]  # step 50 again, after 1000: a restart
    (run,) = get_reader("opennmt").read([write(tmp_path / "train.log", "\n".join([*lines, cut, again]) + "\n")])
    (warning,) = run.warnings
    assert "1 line(s) look like OpenNMT-py metrics but could not be read, e.g. line 15" in warning.message
    (restart,) = run.restarts
    assert restart.step == 50 and "after step 1000 (line 16)" in restart.detail


def test_other_logs_are_not_opennmts(tmp_path):
    for text in ("[INFO] Step 100/1000, Loss: 2.5\n[INFO] Step 200/1000, Loss: 2.4\n",
                 "Step 100/ 1000; acc: 7.2; ppl: 66.1\nStep 200/ 1000; acc: 7.3; ppl: 60.1\n"):
        path = write(tmp_path / "train.log", text)
        assert not get_reader("opennmt").sniff(path, path.read_bytes()[:HEAD_BYTES])
