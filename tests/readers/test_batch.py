"""Column helpers of the console parsers' fast paths."""

import pytest

from tanalyze.readers.text._batch import floats, interleave, repeated, rising


def test_columns_become_rows_in_line_order():
    assert interleave(["s1", "s2"], ["lr1", "lr2"]) == ["s1", "lr1", "s2", "lr2"]
    assert list(repeated([10, 20], 3, "q")) == [10, 10, 10, 20, 20, 20]
    assert list(repeated([0.5], 2, "d")) == [0.5, 0.5]


def test_a_step_beyond_64_bits_is_refused():
    with pytest.raises(OverflowError):
        repeated([1, 2**64], 2, "q")


def test_floats_and_rising_steps():
    assert floats([" 1.5 ", "nan", "1e3"])[::2] == [1.5, 1000.0]
    assert floats(["1.5", "n/a"]) is None
    assert rising([1, 2, 5]) and not rising([1, 1, 2]) and rising([1, 1, 2], strictly=False)
    assert not rising([3, 2], strictly=False) and rising([])
