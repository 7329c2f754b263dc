"""Many numbers read at once: bit for bit what ``float()`` reads, token by token."""

from __future__ import annotations

import random
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanalyze.readers.text._numbers import parse_numbers, parse_some_numbers


def one_by_one(text: str) -> np.ndarray | None:
    try:
        return np.array([float(token) for token in text.split(" ")], dtype=np.float64)
    except ValueError:
        return None


def assert_same(text: str) -> None:
    got, expected = parse_numbers(text), one_by_one(text)
    if expected is None:
        assert got is None, text
    else:
        assert got is not None and got.tobytes() == expected.tobytes(), text  # NaN and -0.0 included


@pytest.mark.parametrize("text", [
    "1", "-0", "-0.0", "+5", ".5", "5.", "-.5", "00012.50", "2490 0.555 -3.25", "123456789012345", "1234567890123456",
    "0.000000000000001", "0.0000000000000001", "nan -inf Infinity 1_000 ९", "1.5e-05 2E+3", "-", ".", "1.2.3", "1-2",
    "1  2", " 1", "1 ", "", "x", "0x10", "1e", "12.34ms",
    # exponents, read with the other decimals: where the power of ten is small, and otherwise
    "1.e5", ".e5", "e5", "1e+", "1e5.", "1e5e3", "+-1", "1e-+5", "1e-22 1e22", "1e-23 1e23", "123456789012345e22",
    "-0e5", "1E0005", "1e99999", "5e-324", "9.65e-06 8.57e-07 6.0e-4 1.5E+02", "1.2e3.4", "1e5 2.5 nan 3e-1",
])
def test_tokens_of_every_kind(text):
    assert_same(text)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from([*"0123456789.-+eE_x:%,() ", "nan", "inf", "Infinity", "12.5", "-0", "٣"]),
                min_size=1, max_size=40).map("".join))
def test_any_text(text):
    assert_same(text)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["0.555", "1.220e-04", "23:52:47", "1", "2490", "nan", "x", "-0.0", "1_0", "12."]),
                min_size=1, max_size=60))
def test_some_numbers_read_where_others_are_not(tokens):
    values, valid = parse_some_numbers(" ".join(tokens))
    for token, value, ok in zip(tokens, values.tolist(), valid.tolist(), strict=True):
        try:
            expected = float(token)
        except ValueError:
            assert not ok and np.isnan(value), token
        else:
            assert ok and np.float64(value).tobytes() == np.float64(expected).tobytes(), token


@settings(max_examples=500, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=80),
       st.sampled_from(["repr", "%.4f", "%.2f", "%.17f", "%.6E", "%g", "%d"]))
def test_numbers_as_trainers_print_them(values, form):
    if form == "%d":
        values = [v for v in values if np.isfinite(v)] or [0.0]
    assert_same(" ".join(repr(v) if form == "repr" else form % v for v in values))


def test_text_with_exponents_read_in_one_pass_equals_float_of_each_token():
    import random

    rng = random.Random(1)
    tokens = []
    for _ in range(20000):
        kind = rng.randrange(4)
        if kind == 0:
            tokens.append(f"{rng.uniform(-1, 1) * 10 ** rng.randrange(-300, 300):.{rng.randrange(0, 20)}e}")
        elif kind == 1:
            tokens.append(repr(rng.random() * 10 ** rng.randrange(-20, 20)))
        elif kind == 2:
            tokens.append(f"{rng.uniform(-1e6, 1e6):.{rng.randrange(0, 18)}f}")
        else:
            tokens.append(rng.choice(["nan", "-inf", "Infinity", "-0.0", "+5", "5.", "-.5", "1E5", "+1.5e+07"]))
    numbers = parse_numbers(" ".join(tokens))
    expected = np.array([float(t) for t in tokens])
    assert numbers is not None and np.array_equal(numbers, expected, equal_nan=True)
    assert (np.signbit(numbers) == np.signbit(expected)).all()
    # tokens numpy's reader takes and float() does not, or the other way round: read as float() reads them
    for odd in ("nan(1)", "1_0", "1e5x", "1,5"):
        numbers, valid = parse_some_numbers(f"1.5e-3 {odd} 2e0")
        try:
            value = float(odd)
        except ValueError:
            value = None
        assert valid.tolist() == [True, value is not None, True], odd
        assert numbers[0] == 1.5e-3 and numbers[2] == 2.0 and (value is None or numbers[1] == value)


def test_long_decimals_and_half_way_points_between_doubles():
    """16 to 18 digits (Python prints a float with up to 17) and powers up to 27, read in extended precision where
    there is one: each token as float() reads it, also where the long double lies half-way between two doubles."""
    rng = random.Random(7)
    tokens = [repr(rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 12)) for _ in range(3000)]
    tokens += [f"{float(np.float32(rng.random() * 10.0 ** rng.randint(-8, 8))):.17g}" for _ in range(3000)]
    tokens += [str(rng.randint(2**53 - 10, 10**18 - 1)) for _ in range(1000)] + [str(2**53 + k) for k in range(-5, 5)]
    for _ in range(3000):  # (a double and the next one: their half-way point to 17 and 18 digits, and exactly)
        low = rng.randint(2**52, 2**53 - 1) * 2.0 ** rng.randint(-20, 40)
        middle = (Decimal(low) + Decimal(np.nextafter(low, np.inf))) / 2
        tokens += [format(middle, ".16e"), format(middle, ".17e"), format(middle.normalize(), "e")]
    tokens += ["1234567890123456789", "0.00015999999595806003", "-12345678901234567e10", "1.234567890123456789e27"]
    assert_same(" ".join(tokens))
