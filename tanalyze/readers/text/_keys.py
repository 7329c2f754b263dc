"""Short words of a text told apart at once: a code per word, the same for the same bytes.

The fast paths of readers whose records name their values (llm.c's ``main.log`` ``trl:``, build-nanogpt's
``log.txt`` ``train``) find every word's place with numpy; the words themselves are told apart here without a
Python string per word.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["KEY_BYTES", "key_codes"]

#: the longest word llm.c's and build-nanogpt's readers tell apart at once (they go line by line where one is longer)
KEY_BYTES = 16


#: the low ``k`` bytes of a little-endian 8-byte word
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def key_codes(chars: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A code per key (``lengths`` bytes of ``chars`` from ``starts``, at least 1 each), in order of first use: each
    8 bytes of a key read as one integer (an unaligned view of the bytes, the bytes past the key masked off), and
    the codes of those words combined word after word (exact: the same code for the same bytes only)."""
    padded = np.concatenate((chars, np.zeros(8, dtype=np.uint8)))
    words = np.ndarray((len(chars) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    codes = None
    for word in range(0, int(lengths.max()), 8):
        packed = words[np.minimum(starts + word, len(chars))] & _MASKS[np.clip(lengths - word, 0, 8)]
        word_codes = pd.factorize(packed)[0].astype(np.int64)
        codes = word_codes if codes is None else pd.factorize(codes * (int(word_codes.max()) + 1) + word_codes)[0]
    assert codes is not None
    return pd.factorize(codes)[0]
