"""Many decimal numbers read at once, exactly as ``float()`` reads each.

The console parsers end up with the fields of thousands of lines as one text of
space-separated tokens; :func:`parse_numbers` turns it into a float64 array.
Decimal tokens (``[+-]digits[.digits][e[+-]digits]``, at most 15 digits before
the exponent: ``2.3456``, ``2490``, ``1.5e-05``), the bulk of what trainers print,
are read about twice as fast as ``float()`` one by one: the digits as one integer
``m`` and the exponent as another (numpy reads all of them in one C pass), then
``m * 10**k`` or ``m / 10**-k`` for the power ``k`` of ten they scale ``m`` by.
With ``m < 2**53`` and ``|k| <= 22`` both operands are exact doubles and IEEE
arithmetic rounds the one operation correctly, so the result is the correctly
rounded value of the decimal, which is what ``float()`` gives (the fast path of
Clinger's algorithm). Where numpy's long double has a 64-bit mantissa (x86's),
16 to 18 digits and powers up to 27 are read the same way in it (both operands
still exact, the one operation rounded correctly to 64 bits) and then rounded
to a double: the same as rounding once, but where the long double lies half-way
between two doubles (those few are read by ``float()``). Python prints a float
with up to 17 digits, which ``float()`` reads several times slower than 15.
Other tokens (``nan``, ``inf``, more digits, a larger power, ``1_000`` …) are
read by ``float()`` itself (many at once).
"""

from __future__ import annotations

import numpy as np

__all__ = ["parse_numbers", "parse_some_numbers"]

_POW10 = 10.0 ** np.arange(23)  # exact doubles
_MAX_POWER = 22
#: a long double of a 64-bit mantissa: every integer below 2**64 and 10**27 (5**27 < 2**64) are exact in it
_EXTENDED = np.finfo(np.longdouble).nmant >= 63
_LONG_POW10 = np.cumprod(np.array([1] + [10] * 27, dtype=np.longdouble))  # exact (each product is)
_MAX_LONG_POWER = 27 if _EXTENDED else _MAX_POWER
#: 10**15 < 2**53: the mantissa is an exact double; 10**18 < 2**63: an exact long double (and int64)
_MAX_DIGITS = 18 if _EXTENDED else 15
_EXACT_DOUBLE = 2**53
_MAX_EXPONENT_DIGITS = 4  # an exponent numpy reads as an int64 without overflow (larger: float())
_DECIMAL_BYTES = b"0123456789.-+eE "
# ASCII characters float() never takes (it takes digits, signs, dots, exponents, underscores between digits
# and the letters of nan, inf and infinity): a token with one is no number, without asking float()
_NEVER = np.zeros(256, dtype=bool)
_NEVER[[c for c in range(128) if chr(c) not in "0123456789.+-eE_nNaAiIfFtTyY \t\n\r\x0b\x0c"]] = True
_EXPONENT_TO_BLANK = bytes.maketrans(b"eE", b"  ")  # the exponent becomes an integer of its own


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
    that is not ASCII, or has an empty token)."""
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        return None
    chars = np.frombuffer(raw, dtype=np.uint8)
    spaces = chars == 32
    seps = np.flatnonzero(spaces)
    starts = np.empty(len(seps) + 1, np.int64)
    ends = np.empty(len(seps) + 1, np.int64)
    starts[0], starts[1:] = 0, seps + 1
    ends[:-1], ends[-1] = seps, len(chars)
    if not (ends > starts).all():
        return None
    decimals = _Decimals(raw, chars, np.cumsum(spaces, dtype=np.int32), starts, ends)
    m, power = decimals.integers()
    odd, never = decimals.odd, decimals.never
    if decimals.exponents:
        odd |= np.abs(power) > _MAX_LONG_POWER  # (read by float())
        power[odd] = 0
        magnitude = np.abs(power)
        scale = _POW10[np.minimum(magnitude, _MAX_POWER)]
        out = np.where(power < 0, m / scale, m * scale)
        wide = magnitude > _MAX_POWER
    else:  # no exponent: at most 18 digits after the dot (the usual case, in fewer passes)
        out = m / _POW10[-power]
        wide = np.zeros(len(m), dtype=bool)
    if _EXTENDED:
        wide |= (m >= _EXACT_DOUBLE) | (m <= -_EXACT_DOUBLE)
        if wide.any():
            tokens = np.flatnonzero(wide)
            out[tokens], halfway = _rounded_twice(m[tokens], power[tokens])
            odd[tokens[halfway]] = True
    return _finish(out, m, chars[starts] == 45, odd, never, text, starts, ends)


def _rounded_twice(m: np.ndarray, power: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``m * 10**power`` rounded to a long double, then to a double, and where the long double lies half-way
    between two doubles (the one case where rounding twice may differ from rounding once: a double's half-way point
    between the decimal and the long double would be a long double nearer the decimal)."""
    exact = m.astype(np.longdouble)
    scale = _LONG_POW10[np.abs(power)]
    wide = np.where(power < 0, exact / scale, exact * scale)
    out = wide.astype(np.float64)
    rounded = out.astype(np.longdouble)
    rest = wide - rounded  # (exact)
    other = np.nextafter(out, np.where(rest > 0, np.inf, -np.inf)).astype(np.longdouble)
    return out, (rest != 0) & (wide == (rounded + other) / 2)  # (the half-way point is exact in 64 bits)


class _Decimals:
    """Where each token's parts are (found per kind of character, not per character), which tokens have
    another shape than ``[+-]digits[.digits][e[+-]digits]`` with at most ``_MAX_DIGITS`` digits (``odd``: read otherwise)
    and which cannot be numbers at all (``never``)."""

    def __init__(self, raw: bytes, chars: np.ndarray, token: np.ndarray, starts: np.ndarray,
                 ends: np.ndarray) -> None:
        """``token``: the token of each character (the blanks' own do not matter)."""
        self.raw, self.chars, self.token, self.starts, self.ends = raw, chars, token, starts, ends
        n = len(starts)
        self.odd = odd = np.zeros(n, dtype=bool)
        self.never = np.zeros(n, dtype=bool)
        if raw.translate(None, _DECIMAL_BYTES):
            folded = chars | 32  # comparisons run many times faster than a table look-up per character
            decimal = ((chars - 48) < 10) | (chars == 46) | (chars == 45) | (chars == 43) | (folded == 101) | (chars == 32)
            other = np.flatnonzero(~decimal)
            odd[token[other]] = True
            self.never[token[other[_NEVER[chars[other]]]]] = True
        self.exponents = b"e" in raw or b"E" in raw
        e_at = np.flatnonzero((chars | 32) == 101) if self.exponents else np.empty(0, np.int64)  # 'e' or 'E'
        self.has_e, self.e_at = self._single(token, e_at, ends)
        has_dot, dot_at = self._single(token, np.flatnonzero(chars == 46), ends)
        signs = np.flatnonzero((chars == 43) | (chars == 45)) if b"-" in raw or b"+" in raw else e_at[:0]
        sign_token = token[signs]
        placed = signs == starts[sign_token]
        leading = np.zeros(n, dtype=bool)
        leading[sign_token[placed]] = True
        if self.exponents:
            odd |= has_dot & (dot_at > self.e_at)  # a dot in the exponent
            exponent_sign = np.zeros(n, dtype=bool)
            after_e = self.has_e[sign_token] & (signs == self.e_at[sign_token] + 1)
            exponent_sign[sign_token[after_e]] = True
            placed |= after_e
            exponent_digits = ends - self.e_at - 1 - exponent_sign
            odd |= self.has_e & ((exponent_digits < 1) | (exponent_digits > _MAX_EXPONENT_DIGITS))
        odd[sign_token[~placed]] = True
        digits = self.e_at - starts - leading - has_dot
        odd |= (digits < 1) | (digits > _MAX_DIGITS)
        self.fraction = np.where(has_dot, self.e_at - dot_at - 1, 0)

    def _single(self, tokens: np.ndarray, positions: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which tokens hold one of ``positions`` and where (a token's end when none); a token with two is odd."""
        token = tokens[positions]
        has = np.zeros(len(ends), dtype=bool)
        has[token] = True
        if len(token) > 1:
            self.odd[token[1:][token[1:] == token[:-1]]] = True
        at = ends.copy()
        at[token] = positions
        return has, at

    def integers(self) -> tuple[np.ndarray, np.ndarray]:
        """Each token's digits as an integer (0 for odd tokens) and the power of ten that scales it."""
        odd, has_e, chars = self.odd, self.has_e, self.chars
        work = self.raw
        if odd.any():
            tokens = np.flatnonzero(odd)
            lengths = self.ends[tokens] - self.starts[tokens]
            before = np.cumsum(lengths) - lengths  # the characters of the odd tokens before each
            copy = chars.copy()
            # "000…": an integer to the reader below, set apart
            copy[np.arange(before[-1] + lengths[-1]) + np.repeat(self.starts[tokens] - before, lengths)] = 48
            work = copy.tobytes()
            has_e = has_e & ~odd
        numbers = np.fromstring(work.translate(_EXPONENT_TO_BLANK if self.exponents else None, b"."), dtype=np.int64,
                                sep=" ")
        n = len(odd)
        if len(numbers) != n + int(has_e.sum()):  # cannot happen with the checks above; all read one by one then
            odd[:] = True
            self.never[:] = False
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        fraction = np.where(odd, 0, self.fraction)
        if not self.exponents:
            return numbers, -fraction
        index = np.arange(n) + np.cumsum(has_e) - has_e  # each token's first integer: exponents come between
        exponent = np.where(has_e, numbers[np.minimum(index + 1, len(numbers) - 1)], 0)
        return numbers[index], exponent - fraction


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
