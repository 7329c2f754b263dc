"""Many decimal numbers read at once, exactly as ``float()`` reads each.

The console parsers end up with the fields of thousands of lines as one text of
space-separated tokens; :func:`parse_numbers` turns it into a float64 array.
Fixed-point tokens (``[+-]digits[.digits]``, at most 15 digits: ``2.3456``,
``12.34``, ``2490``), the bulk of what trainers print, are read about twice as
fast as ``float()`` one by one: the digits as one integer ``m`` (numpy reads all
of them in one C pass) divided by ``10**f`` for ``f`` digits after the dot. With
``m < 2**53`` both operands are exact doubles and IEEE division rounds the one
operation correctly, so the result is the correctly rounded value of the
decimal, which is what ``float()`` gives (the fast path of Clinger's algorithm).
Other tokens (``1.5e-05``, ``nan``, ``inf``, more digits, ``1_000`` …) are read by
``float()`` itself (many at once); a text made mostly of exponents is read by numpy's own reader in one C
pass (it rounds as ``float()`` does; tested), or token by token when that refuses a token.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["parse_numbers", "parse_some_numbers"]

_POW10 = 10.0 ** np.arange(23)  # exact doubles
_SHAPE_BYTES = b"0123456789.-+ "
_OTHER = np.ones(256, dtype=bool)
_OTHER[list(_SHAPE_BYTES)] = False
# ASCII characters float() never takes (it takes digits, signs, dots, exponents, underscores between digits
# and the letters of nan, inf and infinity): a token with one is no number, without asking float()
_NEVER = np.zeros(256, dtype=bool)
_NEVER[[c for c in range(128) if chr(c) not in "0123456789.+-eE_nNaAiIfFtTyY \t\n\r\x0b\x0c"]] = True
_MAX_DIGITS = 15  # 10**15 < 2**53: the mantissa is an exact double


def parse_numbers(text: str) -> np.ndarray | None:
    """``[float(t) for t in text.split(" ")]`` as a float64 array (the same numbers, bit for bit), or None
    when a token is not a number (an empty token included)."""
    numbers, valid = parse_some_numbers(text)
    return numbers if valid.all() else None


def parse_some_numbers(text: str) -> tuple[np.ndarray, np.ndarray]:
    """``float(t)`` of each token of ``text.split(" ")`` (NaN where it raises) and which tokens are numbers."""
    parsed = _parse(text) if text else None
    if parsed is not None:
        return parsed
    tokens = text.split(" ")
    out = np.full(len(tokens), np.nan)
    valid = np.zeros(len(tokens), dtype=bool)
    for index, token in enumerate(tokens):
        try:
            out[index] = float(token)
            valid[index] = True
        except ValueError:
            pass
    return out, valid


def _parse(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The numbers of ``text`` and which tokens are numbers; None to read it token by token instead (a text
    that is not ASCII, or has an empty token, or mostly exponents and a token that is not a number)."""
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        return None
    exponents = raw.count(b"e") + raw.count(b"E")
    if exponents > len(raw) // 16:  # mostly numbers with exponents: numpy's reader (float()'s rounding), in C
        numbers = _in_c(text, raw.count(b" ") + 1) if b"(" not in raw else None
        if numbers is not None:
            return numbers, np.ones(len(numbers), dtype=bool)
        return _one_by_one(text)
    chars = np.frombuffer(raw, dtype=np.uint8)
    starts, ends = _bounds(chars)
    if starts is None:
        return None
    m, frac, odd, never = _mantissas(raw, chars, starts, ends)
    out = m / _POW10[frac]
    return _finish(out, m, chars[starts] == 45, odd, never, text, starts, ends)


def _bounds(chars: np.ndarray) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """Where each token starts and ends; (None, None) when one is empty."""
    seps = np.flatnonzero(chars == 32)
    starts = np.empty(len(seps) + 1, np.int64)
    ends = np.empty(len(seps) + 1, np.int64)
    starts[0], starts[1:] = 0, seps + 1
    ends[:-1], ends[-1] = seps, len(chars)
    if not (ends > starts).all():
        return None, None
    return starts, ends


def _mantissas(raw: bytes, chars: np.ndarray, starts: np.ndarray, ends: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For tokens ``[+-]digits[.digits]``: the digits as an integer, how many follow the dot, which tokens are
    of another shape (their integer is 0: to be read otherwise) and which of those cannot be numbers."""
    n = len(starts)
    odd = np.zeros(n, dtype=bool)
    never = np.zeros(n, dtype=bool)
    spaces = chars == 32
    token = np.cumsum(spaces, dtype=np.int32)  # the token of each character (a blank: the one after it)
    other = raw.translate(None, _SHAPE_BYTES)
    if other:
        odd[token[_OTHER[chars]]] = True
        never[token[_NEVER[chars]]] = True
    first = chars[starts]
    signed = (first == 45) | (first == 43)
    dots = np.flatnonzero(chars == 46)
    dot_token = token[dots]
    has_dot = np.zeros(n, dtype=bool)
    has_dot[dot_token] = True
    if len(dot_token) > 1:
        twice = dot_token[1:] == dot_token[:-1]
        odd[dot_token[1:][twice]] = True
    signs = np.flatnonzero((chars == 45) | (chars == 43))
    odd[token[signs[signs != starts[token[signs]]]]] = True
    digits = ends - starts - signed - has_dot
    odd |= (digits < 1) | (digits > _MAX_DIGITS)
    frac = np.zeros(n, dtype=np.int64)
    frac[dot_token] = ends[dot_token] - dots - 1
    work = raw
    if odd.any():
        copy = chars.copy()
        copy[odd[token] & ~spaces] = 48  # "000…": an integer to the reader below, set apart
        work = copy.tobytes()
        frac[odd] = 0
    m = np.fromstring(work.replace(b".", b""), dtype=np.int64, sep=" ")
    if len(m) != n:  # cannot happen with the checks above; read them all one by one then
        m, frac, odd = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool)
        never[:] = False
    return m, frac, odd, never


def _finish(out: np.ndarray, m: np.ndarray, negative: np.ndarray, odd: np.ndarray, never: np.ndarray, text: str,
            starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The signs (a negative zero keeps its sign) and the tokens of another shape, read by ``float()`` (but
    those with a character it never takes)."""
    out[negative & (m == 0)] = -0.0
    valid = ~never
    out[never] = np.nan
    tokens = np.flatnonzero(odd & ~never)
    if len(tokens) > 8:  # all at once, each by float() in C; one by one below when one is not a number
        try:
            out[tokens] = np.array([text[a:b] for a, b in zip(starts[tokens].tolist(), ends[tokens].tolist(),
                                                               strict=True)], dtype=np.float64)
            return out, valid
        except ValueError:
            pass
    for token in tokens.tolist():
        try:
            out[token] = float(text[starts[token]:ends[token]])
        except ValueError:
            out[token], valid[token] = np.nan, False
    return out, valid


def _in_c(text: str, tokens: int) -> np.ndarray | None:
    """``text``'s ``tokens`` numbers read by numpy in one C pass (correctly rounded, as ``float()``); None when
    a token is not a number to it (numpy then warns: taken as an error here) or is empty (numpy skips it).
    It takes ``nan(…)``, which ``float()`` does not: the caller keeps such text away."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            numbers = np.fromstring(text, dtype=np.float64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return numbers if len(numbers) == tokens else None


def _one_by_one(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Each token read by numpy (which calls ``float()`` on it); None when one is not a number."""
    try:
        numbers = np.array(text.split(" "), dtype=np.float64)
    except ValueError:
        return None
    return numbers, np.ones(len(numbers), dtype=bool)
