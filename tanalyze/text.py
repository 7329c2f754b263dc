"""Making log-derived text safe to show in a terminal."""

from __future__ import annotations

import re

__all__ = ["distinct", "safe_text", "writable"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_text(text: object, limit: int = 2000) -> str:
    """Text from a log, with control characters (ANSI escapes, bidi overrides) made visible and length capped.

    Log files are untrusted: a run name with an escape sequence must not be able
    to rewrite the user's terminal.
    """
    value = str(text)
    if len(value) > limit:
        value = value[:limit] + f"…[{len(value) - limit} more chars]"
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def writable(text: str) -> str:
    """``text`` as it can be written to a UTF-8 file: bytes of a file name that were not UTF-8 (which Python
    keeps as lone surrogates, ``\\udce9``) and other lone surrogates (a JSON ``"\\ud800"`` escape) become
    U+FFFD instead of failing the write."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            return _SURROGATE.sub("\ufffd", text)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def distinct(names: list[str]) -> list[str]:
    """``names`` with each one already taken numbered ``name#2``, ``name#3`` … in order."""
    used: set[str] = set()
    out = []
    for name in names:
        final, suffix = name, 2
        while final in used:
            final, suffix = f"{name}#{suffix}", suffix + 1
        used.add(final)
        out.append(final)
    return out
