"""Short words of a text told apart at once: a code per word, the same for the same bytes.

The fast paths of readers whose records name their values (llm.c's ``main.log`` ``trl:``, build-nanogpt's
``log.txt`` ``train``) find every word's place with numpy; the words themselves are told apart here without a
Python string per word.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["KEY_BYTES", "key_codes"]

#: the longest word told apart (two 8-byte integers); a reader goes line by line where one is longer
KEY_BYTES = 16


def key_codes(chars: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A code per key (``lengths`` bytes of ``chars`` from ``starts``, 1 to 16 each), in order of first use: each
    key's bytes packed into two integers (8 bytes each, exact), the pair of them factorized."""
    total = int(lengths.sum())
    begin = np.cumsum(lengths) - lengths
    place = np.arange(total) - np.repeat(begin, lengths)  # each key byte's place in its key
    key_chars = chars[np.repeat(starts, lengths) + place].astype(np.uint64)
    low = np.add.reduceat(np.where(place < 8, key_chars << (8 * np.minimum(place, 7)).astype(np.uint64), 0), begin)
    if lengths.max() <= 8:
        return pd.factorize(low)[0]
    high = np.add.reduceat(np.where(place >= 8, key_chars << (8 * np.maximum(place - 8, 0)).astype(np.uint64), 0),
                           begin)
    low_codes, high_codes = pd.factorize(low)[0], pd.factorize(high)[0]
    return pd.factorize(low_codes.astype(np.int64) * (int(high_codes.max()) + 1) + high_codes)[0]
