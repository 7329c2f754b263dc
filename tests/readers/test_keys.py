"""Words told apart at once (readers/text/_keys.py): the same code exactly for the same bytes, any length."""

import numpy as np
import pytest

from tanalyze.readers.text._keys import key_codes


@pytest.mark.parametrize("seed", range(5))
def test_codes_are_equal_exactly_where_the_words_are(seed):
    rng = np.random.default_rng(seed)
    # words of 1 to 40 bytes that share long beginnings and ends (they differ in one byte somewhere)
    base = [bytes(rng.integers(97, 100, size=int(rng.integers(1, 41)), dtype=np.uint8)) for _ in range(30)]
    words = [base[i] for i in rng.integers(0, len(base), size=400)]
    text = b" ".join(words)
    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
    codes = key_codes(np.frombuffer(text, np.uint8), starts, np.array([len(w) for w in words]))
    first_use = {}
    expected = [first_use.setdefault(w, len(first_use)) for w in words]
    assert codes.tolist() == expected
