"""W&B API history exports (run.history()/scan_history() saved by users). No public example files
exist, so these are written here with pandas the way users save them."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pandas as pd
import pytest

from tanalyze.logs import load
from tanalyze.readers.wandb.api import WandbHistoryExportReader


def points(logs, tag, run=None):
    frame = logs.scalars if run is None else logs.scalars[logs.scalars["run"] == run]
    rows = frame[frame["tag"] == tag]
    return list(zip(rows["step"].tolist(), rows["value"].tolist(), strict=True))


def history_frame(n=6):
    """What run.history() returns for a Lightning run: sparse train/val rows, trainer/global_step in each."""
    rows = []
    for i in range(n):
        rows.append({"_step": 2 * i, "_runtime": 10.0 * i, "_timestamp": 1.7e9 + 10 * i,
                     "trainer/global_step": 100 * i, "train/loss": 5.0 - i, "val/loss": np.nan})
        rows.append({"_step": 2 * i + 1, "_runtime": 10.0 * i + 1, "_timestamp": 1.7e9 + 10 * i + 1,
                     "trainer/global_step": 100 * i, "train/loss": np.nan, "val/loss": 6.0 - i})
    return pd.DataFrame(rows)


def test_history_csv_with_pandas_index(tmp_path):
    path = tmp_path / "history.csv"
    history_frame().to_csv(path)  # pandas writes the index as an unnamed first column
    logs = load(path)
    assert points(logs, "train/loss") == [(100 * i, 5.0 - i) for i in range(6)]
    assert points(logs, "val/loss") == [(100 * i, 6.0 - i) for i in range(6)]
    assert set(logs.scalars["tag"]) == {"train/loss", "val/loss"}
    rows = logs.scalars[logs.scalars["tag"] == "val/loss"]
    assert rows["wall_time"].tolist() == [1.7e9 + 10 * i + 1 for i in range(6)]
    info = next(iter(logs.runs.values()))
    assert info.format == "wandb-history"
    assert any("step = logged 'trainer/global_step'" in n for n in info.notes)
    assert not info.warnings


def test_history_without_a_step_key_uses_wandb_step(tmp_path):
    path = tmp_path / "h.csv"
    pd.DataFrame({"_step": [0, 1, 2], "_runtime": [1.0, 2.0, 3.0], "_timestamp": [1.0, 2.0, 3.0],
                  "loss": [3.0, 2.0, 1.0], "img": ["", "{'_type': 'image-file', 'path': 'a.png'}", ""]}
                 ).to_csv(path, index=False)
    logs = load(path)
    assert points(logs, "loss") == [(0, 3.0), (1, 2.0), (2, 1.0)]
    info = next(iter(logs.runs.values()))
    assert any("step = W&B's _step" in n for n in info.notes)
    assert any("1 media/table value(s) skipped" in n and "img" in n for n in info.notes)


def test_scan_history_jsonl_keeps_nan_and_counts_bad_lines(tmp_path):
    rows = [{"_step": i, "_runtime": float(i), "_timestamp": 1.7e9 + i, "iter": 10 * i,
             "loss": float("nan") if i == 2 else 1.0 / (i + 1)} for i in range(4)]
    lines = [json.dumps(r) for r in rows]
    lines.insert(2, "{truncated")
    path = tmp_path / "scan.jsonl"
    path.write_text("\n".join(lines) + "\n")
    logs = load(path)
    loss = points(logs, "loss")
    assert [s for s, _ in loss] == [0, 10, 20, 30] and math.isnan(loss[2][1]) and loss[3][1] == 0.25
    warning = next(iter(logs.runs.values())).warnings[0]
    assert warning.message == "1 line(s) are not JSON objects; skipped" and warning.location == "line 3"


def test_json_array_with_a_resumed_run(tmp_path):
    # scan_history() of a run resumed from a checkpoint at iter 20: iters 20..30 logged twice
    iters = [0, 10, 20, 30, 20, 30, 40]
    rows = [{"_step": n, "_timestamp": 1.0 + n, "iter": it, "loss": float(n)} for n, it in enumerate(iters)]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    logs = load(path)
    assert points(logs, "loss") == [(0, 0.0), (10, 1.0), (20, 4.0), (30, 5.0), (40, 6.0)]
    info = next(iter(logs.runs.values()))
    assert [r.step for r in info.restarts] == [20]
    assert any("2 point(s) logged again" in n for n in info.notes)


def test_parquet_keeps_logged_nan_apart_from_missing(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "history.parquet"
    table = pa.table({"_step": [0, 1, 2], "_runtime": [0.5, 1.5, 2.5], "_timestamp": [10.0, 11.0, 12.0],
                      "loss": pa.array([1.0, None, float("nan")], type=pa.float64())})
    pq.write_table(table, path)
    logs = load(path)
    loss = points(logs, "loss")
    assert loss[0] == (0, 1.0) and loss[1][0] == 2 and math.isnan(loss[1][1]) and len(loss) == 2


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    path = tmp_path / "history.parquet"
    pd.DataFrame({"_step": [0], "_runtime": [1.0], "loss": [1.0]}).to_parquet(path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    logs = load(path)
    info = next(iter(logs.runs.values()))
    assert len(logs.scalars) == 0
    assert info.warnings[0].file == str(path)
    assert "pip install 'tanalyze[parquet]'" in info.warnings[0].message


def test_run_history_sample_size_is_noted(tmp_path):
    path = tmp_path / "h.csv"
    pd.DataFrame({"_step": range(0, 5000, 10), "_runtime": 1.0, "loss": 1.0}).to_csv(path, index=False)
    logs = load(path)
    assert len(logs.scalars) == 500
    assert any("run.history() returns a sample of 500 rows" in n for n in next(iter(logs.runs.values())).notes)


def test_events_stream_export_is_system_metrics(tmp_path):
    path = tmp_path / "events.csv"
    pd.DataFrame({"_runtime": [30.2, 60.1], "_timestamp": [1.7e9 + 30, 1.7e9 + 60],
                  "system.gpu.0.memoryAllocated": [40.0, 80.0]}).to_csv(path, index=False)
    logs = load(path)
    assert points(logs, "system/gpu.0.memoryAllocated") == [(30, 40.0), (60, 80.0)]


def test_ragged_csv_rows_are_counted(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("_step,_runtime,loss\n0,1.0,2.0\n1,2.0,1.0,extra\n2,3.0,0.5\n")
    logs = load(path)
    assert points(logs, "loss") == [(0, 2.0), (2, 0.5)]
    assert next(iter(logs.runs.values())).warnings[0].message == "1 row(s) with the wrong number of cells skipped"


def test_several_exports_in_one_folder_are_several_runs(tmp_path):
    for name in ("a.csv", "b.csv"):
        pd.DataFrame({"_step": [0], "_timestamp": [1.0], "loss": [1.0]}).to_csv(tmp_path / name, index=False)
    assert sorted(load(tmp_path).runs) == [f"{tmp_path.name}/a.csv", f"{tmp_path.name}/b.csv"]


@pytest.mark.parametrize(
    ("name", "head", "claimed"),
    [
        ("h.csv", b"_step,_runtime,_timestamp,loss\n", True),
        ("h.csv", b",_step,_runtime,loss\n", True),
        ("h.csv", b"step,loss\n", False),
        ("h.jsonl", b'{"loss": 1, "_step": 0, "_runtime": 1.0}\n', True),
        ("h.json", b'[{"_step": 0, "_timestamp": 1.0}]', True),
        ("h.jsonl", b'{"loss": 1, "step": 0}\n', False),
        ("wandb-history.jsonl", b'{"loss": 1, "_step": 0, "_runtime": 1.0}\n', True),  # same rows
        ("h.parquet", b"PAR1....", False),  # no such file to read the footer of
    ],
)
def test_sniff(tmp_path, name, head, claimed):
    assert WandbHistoryExportReader().sniff(tmp_path / name, head) is claimed


def test_empty_json_lines_file_is_a_format_error(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("\n")
    from tanalyze.errors import FormatError

    with pytest.raises(FormatError, match="empty file"):
        WandbHistoryExportReader().read([path])


def test_old_local_history_rows_read_as_an_export(real_logs):
    # the old client's wandb-history.jsonl holds the same rows as scan_history(): a real example of the format
    path = real_logs / "wandb_local/mfts__spaceinvaders-wandb-challenge/wandb/wandb-history.jsonl"
    run = WandbHistoryExportReader().read([path])[0]
    reward = run.scalars[run.scalars["tag"] == "episodic_reward"]
    assert len(reward) == 98 and reward["step"].iloc[-1] == 196 and reward["value"].iloc[-1] == 210.0
    assert reward["wall_time"].iloc[0] == 1582070918.2388577


def test_history_csv_with_number_text_and_json_columns(tmp_path):
    """Number columns are read as numbers, the others by the text rule: "NaN" is a logged NaN, "Infinity" and
    "True" are numbers, media JSON is counted as media and other text as non-numeric; empty cells are not logged."""
    path = tmp_path / "history.csv"
    media = '"{""_type"": ""image-file"", ""path"": ""media/a.png""}"'
    path.write_text(
        ",_step,_runtime,_timestamp,trainer/global_step,loss,mixed,flag,img,note\n"
        f"0,0,1.5,1700000000.25,10,0.1,NaN,True,{media},hello\n"
        "1,1,2.5,1700000001.25,20,,Infinity,False,,\n"
        "2,2,3.5,1700000002.25,30,0.30000000000000004, 2.5 ,,,\n"
        "3,3,4.5,1700000003.25,40,1e-310,-inf,true,,x\n"
        "4,4,5.5,1700000004.25,50,-0.0,,FALSE,,\n")
    logs = load(path)
    frame = logs.scalars
    assert sorted(set(frame["tag"])) == ["flag", "loss", "mixed"]
    assert points(logs, "loss") == [(10, 0.1), (30, 0.30000000000000004), (40, 1e-310), (50, -0.0)]
    assert math.copysign(1, points(logs, "loss")[-1][1]) == -1
    mixed = points(logs, "mixed")
    assert [s for s, _ in mixed] == [10, 20, 30, 40]
    assert math.isnan(mixed[0][1]) and mixed[1:] == [(20, math.inf), (30, 2.5), (40, -math.inf)]
    assert points(logs, "flag") == [(10, 1.0), (20, 0.0), (40, 1.0), (50, 0.0)]
    assert frame.loc[frame["tag"] == "loss", "wall_time"].tolist() == [1700000000.25, 1700000002.25,
                                                                       1700000003.25, 1700000004.25]
    assert frame["step"].dtype == np.int64 and frame["value"].dtype == np.float64
    info = next(iter(logs.runs.values()))
    assert any("1 media/table value(s) skipped (not scalars): img (1)" in n for n in info.notes)
    assert [w.message for w in info.warnings] == ["2 non-numeric value(s) skipped: note (2)"]


def test_history_csv_numbers_are_the_numbers_the_text_rule_reads(tmp_path):
    """The CSV reader lets the parser read number columns as numbers: for every kind of cell W&B and pandas
    write, that gives the very values (and the same logged cells) as reading every column as text."""
    from tanalyze.readers.base import RunData
    from tanalyze.readers.wandb.api import _csv
    from tanalyze.readers.wandb.history import sparse_from_frame

    rng = np.random.default_rng(3)
    n = 2000
    numbers = rng.standard_normal(n) * 10.0 ** rng.integers(-320, 308, n)
    columns = {
        "_step": np.arange(n), "_runtime": np.cumsum(rng.random(n)), "_timestamp": 1.7e9 + np.arange(n) / 3,
        "repr": [repr(float(x)) for x in numbers], "short": [f"{x:.6g}" for x in numbers],
        "long": [f"{x:.25e}" for x in numbers], "ints": rng.integers(-2**63, 2**63 - 1, n),
        "sparse": np.where(np.arange(n) % 3 == 0, rng.random(n), np.nan),
        "big_ints": np.where(np.arange(n) % 2 == 0, "18446744073709551615", "9007199254740993"),
        "bools": np.where(np.arange(n) % 2 == 0, "True", "false"),
        "bools_gaps": np.where(np.arange(n) % 3 == 0, "", np.where(np.arange(n) % 2 == 0, "TRUE", "False")),
        "inf": np.where(np.arange(n) % 4 == 0, "inf", np.where(np.arange(n) % 4 == 1, "-Infinity", "1.25")),
        "nan": np.where(np.arange(n) % 5 == 0, "NaN", "0.5"),
        "blank": np.where(np.arange(n) % 7 == 0, "  ", "3"),
        "media": np.where(np.arange(n) % 9 == 0, '{"_type": "histogram", "bins": [0, 1], "values": [2]}', ""),
        "text": np.where(np.arange(n) % 2 == 0, "abc", " 4 "),
    }
    pd.DataFrame(columns).to_csv(tmp_path / "history.csv")
    read = _csv(tmp_path / "history.csv", RunData())
    as_text = pd.read_csv(tmp_path / "history.csv", dtype=str, keep_default_na=False, na_values=[""])
    assert any(read[c].dtype == np.float64 for c in read.columns)
    ours, text = sparse_from_frame(read), sparse_from_frame(as_text)
    assert ours.rows.keys() == text.rows.keys()
    for key in text.rows:
        np.testing.assert_array_equal(ours.rows[key], text.rows[key])
        assert ours.values[key].tobytes() == text.values[key].tobytes(), key
    assert ours.media == text.media and ours.non_numeric == text.non_numeric
