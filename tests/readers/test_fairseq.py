"""fairseq logs. fairseq is not installed: the fixtures in tests/fixtures/fairseq reproduce record lines of
real public logs (see its README.md): fairseq 0.12 simple-format lines of a GLAT run on WMT16 en-ro (2023),
the legacy ``| epoch 001 | …`` shapes from public READMEs/scripts, and ``hydra_train.log`` lines (JSON
interval records of a public MoE run, 2024; a wav2vec-U validation line, 2026).
"""

import calendar
import math

import pandas as pd
import pytest

from tanalyze import load
from tanalyze.readers.text.console import detect_console_format
from tanalyze.readers.text.fairseq import FairseqReader
from tests.conftest import REPO
from tests.readers.text_helpers import check, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "fairseq"


def _read(path):
    reader = FairseqReader()
    assert reader.sniff(path, path.read_bytes()[:4096])
    (run,) = reader.read([path])
    return run


def test_modern_simple_format():
    run = _read(FIXTURES / "modern" / "train.log")
    frame = run.scalars
    check(frame, "train_inner/loss", {40100: 3.147, 40200: 3.153, 40300: 3.14, 40600: 3.12}, count=6)
    check(frame, "train_inner/lr", {40100: 0.000157917})
    check(frame, "train_inner/wps", {40200: 132396.0})
    check(frame, "train/loss", {40297: 3.14, 40579: 3.122}, count=2)  # epoch averages
    check(frame, "train/loss_scale", {40297: 32768.0})
    check(frame, "valid/loss", {40297: 12.677, 40579: 12.66}, count=2)
    check(frame, "valid/bleu", {40297: 29.52, 40579: 29.03})
    check(frame, "valid/best_bleu", {40297: 30.53})
    assert "train_inner/num_updates" not in set(frame["tag"]) and "train_inner/epoch" not in set(frame["tag"])
    row = frame[(frame["tag"] == "train_inner/loss") & (frame["step"] == 40100)].iloc[0]
    assert row["wall_time"] == calendar.timegm((2023, 6, 13, 17, 31, 8))
    assert row["epoch"] == pytest.approx(142 + 85 / 282)
    assert frame[(frame["tag"] == "valid/loss")]["epoch"].tolist() == [143.0, 144.0]
    assert "step = num_updates" in notes_text(run)
    assert run.warnings == [] and run.restarts == []


def test_legacy_pipe_format():
    run = _read(FIXTURES / "legacy" / "train.log")
    frame = run.scalars
    check(frame, "train_inner/loss", {11: 15.180}, count=1)
    check(frame, "train_inner/ppl", {11: 37113.65})
    check(frame, "valid/loss", {10000: 8.185, 27301: 1.066}, count=2)
    check(frame, "valid/best_accuracy", {27301: 0.843871})
    check(frame, "train/accuracy", {27301: 0.96072})
    check(frame, "train/wall", {27301: 248855.0})
    assert frame["wall_time"].isna().all()
    assert run.warnings == []


def test_hydra_json_records_and_a_cut_last_line():
    run = _read(FIXTURES / "hydra" / "hydra_train.log")
    frame = run.scalars
    check(frame, "train_inner/loss", {10: 21.229, 20: 15.052}, count=2)  # JSON values are strings
    check(frame, "train_inner/ppl", {10: 1.98043e06})
    check(frame, "train_inner/lr", {10: 7.33333e-06, 20: 1.4e-05})
    check(frame, "valid/accuracy", {20: 60.0})
    check(frame, "valid/loss", {20: 4.0})
    check(frame, "valid/weighted_lm_ppl", {1000: 578.344})
    row = frame[(frame["tag"] == "train_inner/loss") & (frame["step"] == 10)].iloc[0]
    assert row["wall_time"] == pytest.approx(calendar.timegm((2024, 2, 29, 8, 0, 28)) + 0.233)
    assert math.isclose(row["epoch"], 0.012)  # 'update': the fraction of epochs done
    (warning,) = run.warnings
    assert "the last line ends without a line break" in warning.message and '"loss": "12.' in warning.message


def test_junk_lines_restart_and_empty_file(tmp_path):
    text = ("| epoch 001:     10 / 100 loss=2.0, num_updates=10\n"
            "| epoch 001:     20 / 100 loss=1.5, num_updates=20\n"
            "| epoch 001:     30 / 100 loss=oops, num_updates=lots\n"
            "hello\n"
            "| epoch 001:     10 / 100 loss=1.9, num_updates=10\n")
    run = _read(write(tmp_path / "train.log", text))
    # back to its first update: a new session appended (a phase), shifted to follow the first one
    check(run.scalars, "train_inner/loss", {10: 2.0, 20: 1.5, 21: 1.9}, count=3)
    assert [(p.first_step, p.last_step, p.offset) for p in run.phases] == [(10, 20, 0), (21, 21, 11)]
    assert run.restarts == []
    (warning,) = run.warnings
    assert "1 line(s) look like fairseq metrics but could not be read" in warning.message
    (empty,) = FairseqReader().read([write(tmp_path / "empty.log", b"")])
    assert empty.scalars.empty and empty.warnings


def test_discovery_and_console_detection():
    assert detect_console_format(FIXTURES / "hydra" / "hydra_train.log").name == "fairseq"
    logs = load(FIXTURES)
    assert {name: info.format for name, info in logs.runs.items()} == {
        "hydra": "fairseq", "legacy": "fairseq", "modern": "fairseq"}


def _inner(updates: int, prefix: str = "2023-06-13 17:31:08 | INFO | train_inner | ", **changed: str) -> str:
    fields = {"loss": f"{3 + updates % 7 / 10:.3f}", "nll_loss": f"{1 + updates % 5 / 100:.3f}", "ppl": "8.86",
              "wps": f"{72384.3 + updates}", "num_updates": str(updates), "lr": f"{1.5e-4 * updates / 1e5:.6g}",
              "gnorm": "0.489", "wall": "0", **changed}
    return (f"{prefix}epoch 143: {updates % 282:>6} / 282 "
            + ", ".join(f"{k}={v}" for k, v in fields.items() if v != "-") + "\n")


IRREGULAR = "".join([
    "2023-06-13 17:29:55 | INFO | fairseq.trainer | begin training epoch 143\n",
    *(_inner(u) for u in range(100, 3000, 100)),
    "2023-06-13 17:32:41 | INFO | valid | epoch 143 | valid on 'valid' subset | loss 12.677 | num_updates 2900\n",
    *(_inner(u) for u in range(3000, 4000, 100)),
    _inner(4000, loss="nan"), _inner(4100, loss="1_0"), _inner(4200, loss="1,234"), _inner(4300, wps="oops"),
    _inner(4400, num_updates="4400.5"), _inner(4500, lr="-"), _inner(4600).replace("\n", "  \n"),
    _inner(4700, prefix="[2023-06-13 17:31:08,123][train_inner][INFO] - "), _inner(4800, prefix="| "),
    _inner(4900, num_updates="99999999999999999999"),
    '[2023-06-13 17:31:09,123][train_inner][INFO] - {"epoch": 143, "update": 143.5, "loss": "3.1", "num_updates": "5000"}\n',
    *(_inner(u) for u in range(5100, 6000, 100)),
    *(_inner(u) for u in range(2000, 2500, 100)),  # a new session appended
    "2023-06-13 17:32:53 | INFO | train | epoch 143 | loss 3.14 | num_updates 2400 | lr 0.00015753\n",
    *(_inner(u, prefix="| ") for u in range(2500, 3000, 100)),
    _inner(3000)[:60],  # still being written
])


def test_records_read_at_once_equal_every_line_read_on_its_own(tmp_path, monkeypatch):
    """The interval records of a chunk read at once (one pattern, numbers in bulk) give what reading every line
    on its own gives: rows in order, values bit for bit, notes, warnings, phases."""
    from bench.text_logs import make_fairseq
    from tanalyze.readers.text import _parts
    from tanalyze.readers.text.fairseq import FairseqParser

    generated = tmp_path / "bench.log"
    make_fairseq(generated, 1)
    files = [*sorted(FIXTURES.rglob("*.log")), generated, write(tmp_path / "irregular.log", IRREGULAR)]
    reader = FairseqReader()
    for path in files:
        for chunk_chars in (_parts.CHUNK_CHARS, 1 << 14):
            monkeypatch.setattr(_parts, "CHUNK_CHARS", chunk_chars)
            (at_once,) = reader.read([path])
            monkeypatch.setattr(FairseqParser, "line_by_line", True)
            (by_line,) = reader.read([path])
            monkeypatch.setattr(FairseqParser, "line_by_line", False)
            pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True, obj=str(path))
            assert (at_once.notes, at_once.warnings, at_once.restarts, at_once.hparams, at_once.phases) == (
                by_line.notes, by_line.warnings, by_line.restarts, by_line.hparams, by_line.phases), path
    assert len(at_once.scalars) > 300
    assert [r.step for r in at_once.restarts] == [5000, 2000]  # after the 20-digit step, and the new session
    assert [w.message[:22] for w in at_once.warnings] == ["1 line(s) look like fa", "the last line ends wit",
                                                         "7 point(s) skipped: th"]


HYDRA = "[2021-03-02 10:00:01,000][train_inner][INFO] - "


def _record(updates: int, prefix: str = HYDRA, end: str = "\n", **changed: str) -> str:
    """A JSON interval record as fairseq writes it; ``changed`` values are written as given (quotes included),
    '-' drops the key."""
    fields = {"epoch": "3", "update": f"{2 + updates / 5000:.3f}", "loss": f'"{3 + updates % 7 / 10:.3f}"',
              "nll_loss": f'"{1 + updates % 5 / 100:.3f}"', "ppl": '"8.86"', "wps": f'"{72384.3 + updates}"',
              "num_updates": f'"{updates}"', "lr": f'"{1.5e-4 * updates / 1e5:.6g}"', "gnorm": '"0.489"',
              "wall": f'"{updates // 2}"', **changed}
    return prefix + "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items() if v != "-") + "}" + end


#: a chunk with these lines is read line by line whole (a step not whole, one beyond 2**53, a simple-format
#: record)
ODD_JSON = (_record(12050, num_updates='"12050.5"') + _record(12100, num_updates='"99999999999999999999"')
            + "2021-03-02 10:02:12 | INFO | train_inner | epoch 003:     10 / 282 loss=2.0, num_updates=12150\n")
IRREGULAR_JSON = "".join([
    "[2021-03-02 09:59:00,000][fairseq_cli.train][INFO] - {'_name': None, 'common': {'log_format': 'json'}}\n",
    "[2021-03-02 09:59:01,000][fairseq.trainer][INFO] - begin training epoch 3\n",
    *(_record(u) for u in range(100, 3000, 100)),
    '[2021-03-02 10:02:10,004][valid][INFO] - {"epoch": 3, "valid_loss": "4.2", "valid_num_updates": "2900", '
    '"valid_best_loss": "4.1"}\n',
    *(_record(u) for u in range(3000, 6000, 100)),
    _record(6000, loss='"nan"'), _record(6100, loss='"inf"', gnorm='"-inf"'), _record(6200, loss='"NaN"'),
    _record(6300, loss='"1e400"'), _record(6400, loss='"1_000"'), _record(6500, loss='"1,234"'),
    _record(6600, wps='"oops"'), _record(6700, wps='""'), _record(6800, loss='" 3.1"'), _record(6900, loss='"3.1\u00a0"'),
    _record(7000, loss='"\u0663.5"'), _record(7100, loss="3.5"), _record(7200, loss="-0"), _record(7300, loss="-0.0"),
    _record(7400, update='"2.5"'), _record(7500, update='"n/a"'),
    _record(7700, num_updates='"7.7e3"'), _record(7800, num_updates="7800"), _record(7900, clip='"0"'),
    _record(8000, lr="-"), _record(8100, loss='"3\\u002e1"'), _record(8200, loss='true'), _record(8300, loss="null"),
    _record(8400).replace('"ppl"', '"loss"'), _record(8500).replace("\n", " \t\n"), _record(8600).replace(": ", ":"),
    _record(8700, loss='"3.1}"'), _record(8800, update="0.0100"), _record(8900, update="1E2"),
    _record(9000)[:60] + "\n",  # a cut dict
    "some junk {not json}\n",
    HYDRA + '{"epoch": 3, broken json}\n',
    _record(9100, prefix="[2021-03-02 10:00:01,000][train][INFO] - "),
    _record(9200, prefix="| "), _record(9300, prefix=""), _record(9400, prefix="2023-06-13 17:31:08 | INFO | train_inner | "),
    _record(9500, prefix="[2021-03-02 10:00:01,000][fairseq.trainer][INFO] - "),
    '[2021-03-02 10:00:01,000][train_inner][INFO] - {"num_updates": "9600", "loss": "1.5"}\n',
    *(_record(u) for u in range(9700, 12000, 100)),
    *(_record(u) for u in range(12200, 13000, 100)),
    '[2021-03-02 10:02:11,004][train][INFO] - {"epoch": 3, "train_loss": "3.14", "train_num_updates": "12900"}\n',
    *(_record(u, wps='"oops"' if u == 2500 else f'"{u}"') for u in range(2000, 4000, 100)),  # a new session
])


@pytest.mark.parametrize("tail", ["complete", "cut"])
def test_json_records_read_at_once_equal_every_line_read_on_its_own(tmp_path, monkeypatch, real_logs, tail):
    """JSON interval records (``--log-format json``) read a chunk at once (one pattern, values cut out by
    position, numbers in bulk) give what reading every line on its own gives: rows in order, every column bit
    for bit, notes, warnings, restarts; on the fixtures, real fairseq logs, a clean log and an irregular one."""
    from bench.text_logs import make_fairseq_json
    from tanalyze.readers.text import _parts
    from tanalyze.readers.text.fairseq import FairseqParser, detect_fairseq

    clean = tmp_path / "clean.log"
    make_fairseq_json(clean, 1)
    last = _record(13000, end="") if tail == "complete" else _record(13000)[:70]
    at = IRREGULAR_JSON.index(_record(12200))
    irregular = write(tmp_path / "irregular.log", IRREGULAR_JSON + last)
    odd = write(tmp_path / "odd.log", IRREGULAR_JSON[:at] + ODD_JSON + IRREGULAR_JSON[at:] + last)
    real = [path for path in sorted(real_logs.rglob("*.log")) + sorted(real_logs.rglob("*.txt"))
            if path.is_file() and detect_fairseq(path.read_bytes()[:1 << 16].decode("utf-8", "replace"))]
    reader = FairseqReader()
    default_chunk = _parts.CHUNK_CHARS
    taken = []
    json_at_once = FairseqParser._json_at_once
    monkeypatch.setattr(FairseqParser, "_json_at_once", lambda self, chunk: taken.append(json_at_once(self, chunk))
                        or taken[-1])
    for path in [*sorted(FIXTURES.rglob("*.log")), *real, clean, odd, irregular]:
        for chunk_chars in (_parts.CHUNK_CHARS, 1 << 14):
            monkeypatch.setattr(_parts, "CHUNK_CHARS", chunk_chars)
            (at_once,) = reader.read([path])
            monkeypatch.setattr(FairseqParser, "line_by_line", True)
            (by_line,) = reader.read([path])
            monkeypatch.setattr(FairseqParser, "line_by_line", False)
            pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True, obj=str(path))
            assert (at_once.notes, at_once.warnings, at_once.restarts, at_once.hparams, at_once.phases) == (
                by_line.notes, by_line.warnings, by_line.restarts, by_line.hparams, by_line.phases), path
    taken.clear()
    monkeypatch.setattr(_parts, "CHUNK_CHARS", default_chunk)
    reader.read([irregular])
    assert taken[0] is True  # read at once: its lines of other shapes, a restart, junk did not stop it
    frame = at_once.scalars
    assert len(frame) > 800
    assert [r.step for r in at_once.restarts] == [2000]  # a new session
    loss = frame[frame["tag"] == "train_inner/loss"].set_index("step")["value"]
    assert math.isnan(loss[6000]) and loss[6100] == math.inf and loss[6500] == 1234.0 and loss[6800] == 3.1
    assert math.copysign(1, loss[7200]) == 1 and math.copysign(1, loss[7300]) == -1  # json: -0 is the int 0
    assert any("value(s) that are not numbers skipped" in note for note in at_once.notes)
    cut = any("the last line ends without a line break" in warning.message for warning in at_once.warnings)
    assert cut == (tail == "cut")


def test_json_records_of_a_clean_log_are_read_at_once(tmp_path, monkeypatch):
    """On a clean JSON log only the lines that are not interval records (config dump, validations, epoch
    averages) are read line by line: every interval record is read with its chunk, at once."""
    from bench.text_logs import make_fairseq_json
    from tanalyze.readers.text.fairseq import FairseqParser

    path = tmp_path / "hydra_train.log"
    make_fairseq_json(path, 2)
    calls = []
    on_json = FairseqParser._on_json
    monkeypatch.setattr(FairseqParser, "_on_json", lambda self, m, chunk: (calls.append(m), on_json(self, m, chunk)))
    (run,) = FairseqReader().read([path])
    lines = path.read_text().splitlines()
    records = sum("[train_inner]" in line for line in lines)
    assert records > 5000
    assert len(calls) == sum("{" in line and "[train_inner]" not in line for line in lines)
    assert (run.scalars["tag"].str.startswith("train_inner/")).sum() == records * 13
    assert run.warnings == [] and run.restarts == []
