import numpy as np
import pytest

from tanalyze.report.downsample import m4


def test_short_input_comes_back_unchanged():
    x, y = np.arange(10), np.arange(10.0)
    out_x, out_y = m4(x, y, columns=3)
    assert out_x is x and out_y is y


def test_keeps_first_last_min_max_of_every_column():
    rng = np.random.default_rng(1)
    x = np.arange(100_000)
    y = rng.normal(size=x.size)
    y[31_337] = 50.0   # a spike that striding would miss
    y[77_777] = -40.0
    out_x, out_y = m4(x, y, columns=200)
    assert len(out_x) <= 4 * 200
    assert np.all(np.diff(out_x) > 0)
    assert out_x[0] == 0 and out_x[-1] == 99_999
    assert 31_337 in out_x and 77_777 in out_x
    # every column keeps its exact extremes
    columns = (x * 200) // 100_000
    out_columns = (out_x * 200) // 100_000
    for c in (0, 57, 199):
        assert out_y[out_columns == c].max() == y[columns == c].max()
        assert out_y[out_columns == c].min() == y[columns == c].min()


def test_uneven_steps_and_one_repeated_step():
    x = np.r_[np.zeros(50, dtype=np.int64), np.arange(1, 1000) ** 2]
    y = np.sin(np.arange(len(x), dtype=float))
    out_x, out_y = m4(x, y, columns=20)
    assert len(out_x) <= 80
    assert np.all(np.diff(out_x) >= 0)
    same = np.full(500, 7)
    sx, sy = m4(same, np.arange(500.0), columns=10)
    assert sy.min() == 0 and sy.max() == 499 and len(sx) <= 4


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="differ in length"):
        m4(np.arange(3), np.arange(4.0), 2)
    with pytest.raises(ValueError, match="columns must be positive"):
        m4(np.arange(3), np.arange(3.0), 0)
