"""CSV written by tanalyze: the bytes ``DataFrame.to_csv(index=False)`` writes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tanalyze import csvout
from tanalyze.cli import main
from tests.conftest import SAMPLE_RUNS


def same_as_pandas(frame: pd.DataFrame, tmp_path) -> bytes:
    ours, theirs = tmp_path / "ours.csv", tmp_path / "pandas.csv"
    csvout.write_csv(frame, ours)
    frame.to_csv(theirs, index=False)
    assert ours.read_bytes() == theirs.read_bytes()
    return ours.read_bytes()


def test_every_kind_of_cell_is_written_as_pandas_writes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(csvout, "BLOCK_ROWS", 1000)  # several blocks
    rng = np.random.default_rng(7)
    n = 5000
    floats = rng.integers(0, 2**63, n, dtype=np.int64).view(np.float64)  # any bit pattern: every exponent
    floats[::17] = np.nan
    floats[1::17], floats[2::17], floats[3::17], floats[4::17] = np.inf, -np.inf, -0.0, 5e-324
    names = ["loss", "a,b", 'say "hi"', "two\nlines", "cr\rhere", " padded ", "é✓", ""]
    frame = pd.DataFrame({
        "run": pd.Categorical(rng.choice(names, n)),
        "tag": pd.Categorical(rng.choice(names[:3], n), categories=[*names[:3], "never used"]),
        "step": rng.integers(-(2**62), 2**62, n),
        "value": floats,
        "wall_time": np.where(rng.random(n) < 0.5, np.nan, 1.7e9 + rng.random(n)),
        "epoch": rng.normal(size=n).astype(np.float32).astype(np.float64),
        "rank": pd.array(np.where(rng.random(n) < 0.3, None, rng.integers(0, 8, n)), dtype="Int64"),
    })
    frame.loc[::5, "run"] = None
    text = same_as_pandas(frame, tmp_path).decode()
    assert '"a,b"' in text and '"say ""hi"""' in text and '"two\nlines"' in text
    assert text.splitlines()[0] == "run,tag,step,value,wall_time,epoch,rank"


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"tag": pd.Categorical([]), "step": np.empty(0, np.int64)}),  # no row: the header alone
    pd.DataFrame({"a,b": [1.5, np.nan], "step": [1, 2]}),  # a name to quote
    pd.DataFrame({"note": ["x", None], "step": [1, 2]}),  # a column of objects: pandas writes it
    pd.DataFrame({"value": [0.1, 2.5]}),  # one column: pandas writes it
])
def test_other_tables_too(frame, tmp_path):
    same_as_pandas(frame, tmp_path)


def test_parse_writes_the_loaded_table(tmp_path):
    out = tmp_path / "out.csv"
    assert main(["parse", str(SAMPLE_RUNS), "-o", str(out), "-q"]) == 0
    import tanalyze

    expected = tmp_path / "expected.csv"
    tanalyze.load(SAMPLE_RUNS).scalars.to_csv(expected, index=False)
    assert out.read_bytes() == expected.read_bytes() and out.stat().st_size > 10_000
