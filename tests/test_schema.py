import pickle

import numpy as np
import pandas as pd
import pytest

from tanalyze.schema import (
    ScalarColumns,
    concat_frames,
    empty_histograms,
    empty_scalars,
    join_columns,
    keep_last_write,
    narrowed,
    scalar_frame,
    validate_scalars,
)


def test_scalar_frame_has_canonical_dtypes():
    frame = scalar_frame(run="r", tag=["loss", "loss"], step=[1, 2], value=[0.5, np.nan])
    assert list(frame.columns) == ["run", "tag", "step", "value", "wall_time"]
    assert frame["step"].dtype == np.int64
    assert frame["value"].dtype == np.float64
    assert isinstance(frame["tag"].dtype, pd.CategoricalDtype)
    assert frame["wall_time"].isna().all()
    assert np.isnan(frame["value"].iloc[1])  # NaN is evidence, never dropped


def test_scalar_frame_rejects_unknown_optional_column():
    with pytest.raises(ValueError, match="unknown optional column 'colour'"):
        scalar_frame(run="r", tag=["a"], step=[1], value=[1.0], colour=["red"])


def test_keep_last_write_keeps_the_later_value_of_a_relogged_step():
    frame = scalar_frame(run="r", tag=["loss"] * 4, step=[1, 2, 2, 3], value=[1.0, 2.0, 20.0, 3.0])
    kept, dropped = keep_last_write(frame)
    assert dropped == 1
    assert kept["value"].tolist() == [1.0, 20.0, 3.0]
    assert kept["step"].tolist() == [1, 2, 3]


def test_validate_coerces_and_names_missing_columns():
    frame = pd.DataFrame({"run": ["r"], "tag": ["t"], "step": [1.0], "value": [1], "wall_time": [0]})
    out = validate_scalars(frame)
    assert out["step"].dtype == np.int64 and out["value"].dtype == np.float64
    with pytest.raises(ValueError, match="wall_time"):
        validate_scalars(frame.drop(columns="wall_time"))


def test_concat_keeps_categories():
    a = scalar_frame(run="a", tag=["x"], step=[1], value=[1.0])
    b = scalar_frame(run="b", tag=["y"], step=[1], value=[2.0])
    out = concat_frames([a, b, empty_scalars()])
    assert isinstance(out["run"].dtype, pd.CategoricalDtype)
    assert out["run"].tolist() == ["a", "b"]


def test_empty_tables_are_independent_although_built_once():
    scalars, histograms = empty_scalars(), empty_histograms()
    scalars["extra"] = 1.0
    scalars["tag"] = scalars["tag"].cat.add_categories(["loss"])
    histograms["step"] = histograms["step"].astype("float64")
    again, histograms_again = empty_scalars(), empty_histograms()
    assert "extra" not in again.columns and list(again["tag"].cat.categories) == []
    assert histograms_again["step"].dtype == "int64"
    assert again is not empty_scalars()


def test_joining_hundreds_of_runs_equals_concatenating_their_tables():
    rng = np.random.default_rng(0)
    parts, names = [], []
    for index in range(300):  # over 127 runs and tags: codes wider than int8
        rows = int(rng.integers(0, 20))
        tags = tuple(f"t{j}" for j in rng.choice(200, 5, replace=False))
        parts.append(ScalarColumns(tags, rng.integers(0, 5, rows).astype(np.int32), np.arange(rows),
                                   rng.random(rows), rng.random(rows)))
        names.append(f"run{index}")
    joined = join_columns(names, parts)
    expected = concat_frames([part.frame(name) for name, part in zip(names, parts, strict=True) if len(part)])
    pd.testing.assert_frame_equal(joined, expected)
    assert joined["run"].cat.codes.dtype == np.int16 and joined["tag"].cat.codes.dtype == np.int16


def test_runs_held_in_chunks_of_narrow_dtypes_join_as_if_whole():
    rng = np.random.default_rng(1)
    whole, chunked = [], []
    for index in range(4):
        # The first 200 rows use the run's first two tags (a cached run); the 100 after, all three (its file grew).
        codes = np.concatenate([rng.integers(0, 2, 200), rng.integers(0, 3, 100)]).astype(np.int32)
        steps, walls = np.arange(300, dtype=np.int64), 1.7e9 + rng.random(300)
        values = rng.random(300).astype(np.float32).astype(np.float64)
        tags = ("a", "b", "c") if index % 2 else ("c", "a", "b")
        whole.append(ScalarColumns(tags, codes, steps, values, walls))
        head = ScalarColumns(tags[:2], codes[:200].astype(np.int8), steps[:200].astype(np.int16),
                             values[:200].astype(np.float32), walls[:200])
        chunked.append(head.appended(tags, codes[200:], steps[200:], values[200:], walls[200:]))
    names = [f"run{i}" for i in range(4)]
    pd.testing.assert_frame_equal(join_columns(names, chunked), join_columns(names, whole))
    part = chunked[0]
    assert len(part) == 300 and len(part.chunks) == 2 and part.step.dtype == np.int64
    assert part.codes.dtype == np.int32 and part.value.dtype == np.float64
    assert np.array_equal(part.step, whole[0].step) and np.array_equal(part.codes, whole[0].codes)
    again = pickle.loads(pickle.dumps(part))  # what worker processes send back: as narrow as the numbers allow
    assert len(again.chunks) == 2 and again.tags == part.tags
    assert [a.dtype for a in again.column_chunks("value")] == [np.float32, np.float32]
    assert again.column_chunks("step")[1].dtype == np.int16 and again.column_chunks("wall_time")[1].dtype == np.float64
    pd.testing.assert_frame_equal(again.frame("r"), part.frame("r"))
    with pytest.raises(ValueError, match="start with the run's own tags"):
        part.appended(("z",), np.zeros(1, np.int32), np.zeros(1), np.zeros(1), np.zeros(1))
    with pytest.raises(ValueError, match="one length"):
        ScalarColumns.of_chunks(("a",), [(np.zeros(2, np.int32), np.zeros(1), np.zeros(2), np.zeros(2))])


def test_a_joined_table_can_be_edited_even_when_its_arrays_were_read_only():
    steps = np.arange(5)
    steps.flags.writeable = False
    frame = ScalarColumns(("a",), np.zeros(5, np.int32), steps, np.ones(5), np.ones(5)).frame("run")
    frame.loc[0, "step"] = 9
    assert frame["step"].tolist() == [9, 1, 2, 3, 4] and steps[0] == 0


def test_narrowing_keeps_every_number_bit_for_bit():
    floats = np.array([0.5, -0.0, np.nan, np.inf, float(np.float32(1e-45)), 3.0] * 20)  # a float32 denormal too
    assert narrowed(floats).dtype == np.float32
    assert np.array_equal(narrowed(floats).astype(np.float64).view(np.int64), floats.view(np.int64))
    assert narrowed(np.array([0.1] * 20)).dtype == np.float64  # 0.1 is not a float32
    assert narrowed(np.array([1.0] * 10 + [1e300])).dtype == np.float64  # past float32's range, found late
    assert narrowed(np.array([-128, 127] * 10)).dtype == np.int8
    assert narrowed(np.array([0, 40_000] * 10)).dtype == np.int32
    assert narrowed(np.array([0, 2**40])).dtype == np.int64
    assert narrowed(np.arange(5, dtype=np.int8)).dtype == np.int8 and len(narrowed(np.empty(0))) == 0
