"""Values as trainers print them, shared by every family of readers.

A number (with nan/inf spellings), a config value, a shortened example, and
timestamps (``2024-01-02 03:04:05,678``) parsed fast and memoised per minute.
"""

from __future__ import annotations

import calendar
import datetime
import math
import re
from collections.abc import Sequence

import numpy as np

#: A number as trainers print it, including nan/inf spellings.
NUMBER = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[nN]a[nN]|[iI]nf(?:inity)?)"
#: The same, possessive (a part once taken is not given back): quicker, and the same matches wherever the text
#: after the number cannot begin with a digit, a dot or an exponent (a comma, a blank, a word)
NUMBER_ONCE = r"[-+]?+(?:(?:\d++\.?+\d*+|\.\d++)(?:[eE][-+]?+\d++)?+|[nN]a[nN]|[iI]nf(?:inity)?+)"
#: A run of the characters a number may have, nan and inf spelled every way (possessive): quicker than ``NUMBER`` in
#: a line's pattern, each run then checked when it is parsed (``float()`` takes such a run exactly when ``NUMBER``
#: matches it, but for the spellings of nan and inf ``NUMBER`` has not: ``NUMBER_PATTERN`` tells those)
NUMBER_CHARS = r"[-+.0-9eEnNaAiIfFtTyY]++"
#: ``NUMBER`` compiled: ``NUMBER_PATTERN.fullmatch(token)`` tells a number as trainers print it (``float()`` takes
#: more: ``1_0``, ``INFINITY``)
NUMBER_PATTERN = re.compile(NUMBER)
#: The largest step (or epoch, count) a line is read at: a larger one is no exact double, a garbled line's digits
LARGEST_STEP = 2**53

NAN = math.nan




def to_float(text: str) -> float | None:
    """``float(text)`` or None; accepts nan/inf spellings and thousands separators."""
    try:
        return float(text)
    except ValueError:
        pass
    text = text.strip()
    if "," in text:
        try:
            return float(text.replace(",", ""))
        except ValueError:
            return None
    return None


def config_value(text: str) -> object:
    """A printed config value as int, float, bool, None or the text itself."""
    text = text.strip()
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    number = to_float(text)
    return number if number is not None and "," not in text else text


def short(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TIMESTAMP = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[,.](\d{1,6}))?")


_MINUTES: dict[str, float] = {}
_FRACTION = re.compile(r"\d{1,6}")


_LAST_SECOND = ["", 0.0]


def parse_timestamp(text: str) -> float:
    """Seconds since the epoch of a ``YYYY-MM-DD HH:MM:SS[,mmm]`` stamp read as UTC (NaN if none)."""
    if len(text) >= 19 and text[13] == ":" and text[16] == ":" and text[4] in "-/" and text[7] in "-/":
        second = text[:19]
        if second == _LAST_SECOND[0]:  # consecutive lines share their second more often than not
            seconds = _LAST_SECOND[1]
        else:
            minute = _MINUTES.get(text[:16])
            try:
                if minute is None:
                    minute = _minute(text)
                seconds = minute + int(text[17:19])
            except (ValueError, OverflowError):
                return NAN
            _LAST_SECOND[0], _LAST_SECOND[1] = second, seconds
        if len(text) > 20 and text[19] in ",.":
            if len(text) == 23 and text[20:23].isdigit():  # the common ',mmm'
                return seconds + int(text[20:23]) / 1000
            fraction = _FRACTION.match(text, 20)
            if fraction:
                digits = fraction.group(0)
                seconds += int(digits) / 10 ** len(digits)
        return seconds
    m = _TIMESTAMP.match(text)
    return parse_timestamp(m.group(0).replace("T", " ")) if m and "T" in m.group(0) else NAN


# 'YYYY-MM-DD HH:MM:SS,mmm': where the digits are, and which characters the separators may be
_STAMP_DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22])
_STAMP_SEPARATORS = ((4, b"-/"), (7, b"-/"), (13, b":"), (16, b":"), (19, b",."))
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def parse_timestamps(texts: Sequence[str]) -> list[float]:
    """:func:`parse_timestamp` of every text, the same floats; stamps of the usual
    ``YYYY-MM-DD HH:MM:SS,mmm``, ``YYYY-MM-DD HH:MM:SS`` or ``YYYY-MM-DD HH:MM:SS.ffffff`` shape (all of one) are
    computed together with numpy."""
    if len(texts) < 64:  # numpy's fixed costs outweigh what it saves
        return list(map(parse_timestamp, texts))
    joined = "".join(texts)
    width = next((w for w in (19, 23, 26) if len(joined) == w * len(texts)), 0)
    if not width or not joined.isascii():
        return list(map(parse_timestamp, texts))
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).reshape(len(texts), width)
    if width == 19:  # whole seconds: no milliseconds
        chars = np.hstack([chars, np.frombuffer(b",000", dtype=np.uint8)[None, :].repeat(len(texts), axis=0)])
    digits = chars[:, _STAMP_DIGITS].astype(np.int64) - ord("0")
    if width == 26:  # microseconds (Python's str(datetime)): three digits more
        micro = chars[:, 23:].astype(np.int64) - ord("0")
        if ((micro < 0) | (micro > 9)).any():
            return list(map(parse_timestamp, texts))
    if ((digits < 0) | (digits > 9)).any() or not all(
        np.isin(chars[:, column], np.frombuffer(allowed, dtype=np.uint8)).all() for column, allowed in _STAMP_SEPARATORS
    ):
        return list(map(parse_timestamp, texts))
    year = digits[:, 0] * 1000 + digits[:, 1] * 100 + digits[:, 2] * 10 + digits[:, 3]
    month, day, hour, minute, second = (digits[:, i] * 10 + digits[:, i + 1] for i in range(4, 14, 2))
    months, which = np.unique(year * 100 + month, return_inverse=True)
    try:  # calendar.timegm's days: the first of the month (year 1-9999, month 1-12), then days past it
        firsts = np.array([datetime.date(int(m) // 100, int(m) % 100, 1).toordinal() - _EPOCH_ORDINAL for m in months])
    except ValueError:
        return list(map(parse_timestamp, texts))
    days = firsts[which.ravel()] + day - 1
    seconds = (((days * 24 + hour) * 60 + minute) * 60 + second).astype(np.float64)
    millis = digits[:, 14] * 100 + digits[:, 15] * 10 + digits[:, 16]
    if width == 26:
        micros = millis * 1000 + micro[:, 0] * 100 + micro[:, 1] * 10 + micro[:, 2]
        return (seconds + micros.astype(np.float64) / 1_000_000).tolist()
    return (seconds + millis.astype(np.float64) / 1000).tolist()


def _minute(text: str) -> float:
    if len(_MINUTES) > 100_000:
        _MINUTES.clear()
    fields = (int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]), 0, 0, 0, 0)
    minute = _MINUTES[text[:16]] = float(calendar.timegm(fields))
    return minute


