"""Sessions appended to one console log (``python train.py >> train.log`` twice) are phases, as in the tabular
readers: the later session's steps are shifted to follow the earlier one, nothing of either is replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd

import tanalyze
from tanalyze.cache import Cache
from tanalyze.readers import get_reader
from tests.conftest import real_log
from tests.readers.text_helpers import write

CUT = "llmc_logs/HectorFCardenas__llm.c/gpt2_train.11672114.log"  # stopped after 750 steps
COMPLETE = "llmc_logs/HectorFCardenas__llm.c/gpt2_train.11685414.log"  # 19,560 steps


def _curves(frame: pd.DataFrame) -> dict[str, pd.Series]:
    return {tag: group.set_index("step")["value"] for tag, group in frame.groupby("tag", observed=True)}


def test_two_real_llmc_sessions_in_one_log_are_two_phases(tmp_path):
    first, second = real_log(CUT).read_bytes(), real_log(COMPLETE).read_bytes()
    (run,) = get_reader("llmc").read([write(tmp_path / "train.log", first + second)])
    (alone_1,) = get_reader("llmc").read([real_log(CUT)])
    (alone_2,) = get_reader("llmc").read([real_log(COMPLETE)])
    assert [(p.index, p.first_step, p.last_step, p.offset) for p in run.phases] == [(0, 0, 750, 0),
                                                                                   (1, 751, 20311, 751)]
    assert "step went back from 750 to 0" in run.phases[1].detail and run.restarts == []
    assert not any("replaced" in note for note in run.notes)  # no point of either session lost
    assert len(run.scalars) == len(alone_1.scalars) + len(alone_2.scalars)
    curves, first_curves, second_curves = (_curves(r.scalars) for r in (run, alone_1, alone_2))
    for tag, curve in first_curves.items():
        pd.testing.assert_series_equal(curves[tag][curves[tag].index <= 750], curve, check_names=False)
    for tag, curve in second_curves.items():
        shifted = curves[tag][curves[tag].index > 750]
        assert np.array_equal(shifted.index.to_numpy(), curve.index.to_numpy() + 751), tag
        assert np.array_equal(shifted.to_numpy(), curve.to_numpy(), equal_nan=True), tag
    assert curves["val/loss"][751] == 11.007921  # the second session's first validation, before its step 1


def test_a_cached_log_with_phases_read_on_equals_a_fresh_read(tmp_path):
    first, second = real_log(CUT).read_bytes(), real_log(COMPLETE).read_bytes()
    log = write(tmp_path / "run" / "train.log", first + second[: len(second) // 2])
    cache = Cache(str(tmp_path / "cache"))
    cold = tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
    assert len(cold.runs[next(iter(cold.runs))].phases) == 2
    log.write_bytes(first + second)
    warm = tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
    fresh = tanalyze.load(tmp_path / "run", jobs=1, cache=False)
    pd.testing.assert_frame_equal(warm.scalars, fresh.scalars, check_exact=True)
    assert {n: i.to_dict() for n, i in warm.runs.items()} == {n: i.to_dict() for n, i in fresh.runs.items()}
