"""Byte- and line-level damage, described by plain tuples so any driver (hypothesis, atheris) can pick them.

An operation is ``(kind, a, b, token)``: ``a`` and ``b`` are non-negative integers
taken modulo what fits (a position, a length, a bit, a line number), ``token``
indexes :data:`TOKENS`. :func:`apply` runs a list of them over a file's bytes.
"""

from __future__ import annotations

import struct

#: Byte strings that break parsers: NULs, invalid UTF-8, extreme numbers, structure characters,
#: code-execution payloads, terminal escapes, and a few very long runs.
TOKENS: tuple[bytes, ...] = (
    b"\x00", b"\x00" * 64, b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80",
    b"nan", b"NaN", b"inf", b"-inf", b"1e999", b"-1e999", b"9" * 400, b"-0", b"0x1F", b"1_000", b"1,000.5",
    b"", b" ", b"\t", b"\r", b"\r\n", b"\n", b"\n\n\n", b'"', b"'", b",", b",,,,,,", b";", b"|", b":", b"=",
    b"{", b"}", b"[", b"]", b"{}", b"[]", b"null", b"true", b'{"a":', b"[" * 5000, b"{\"a\":" * 3000,
    b"__import__('os').system('echo pwned')", b"!!python/object/apply:os.system ['echo pwned']",
    b"\x1b[2J\x1b[31m", "\u202e\u2028".encode(), b"<script>alert(1)</script>",
    b"step 1 loss 0.5", b"iteration 10/ 100 | lm loss: 1.0E+00 |", b"{'loss': 0.5, 'epoch': 0.1}",
    b"step,loss\n", b"," * 20000, b"a" * 70000, b"x" * (1 << 20),
)

KINDS = ("flip", "truncate", "zero", "insert", "delete", "duplicate", "u64", "u32", "overwrite",
         "line_drop", "line_dup", "line_replace", "line_cut", "line_insert", "line_swap")

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_BIG = (1 << 64) - 1, 1 << 63, 1 << 40, 1 << 32, (1 << 31) + 7, 0, 1, 0x7FFFFFFFFFFFFFFF, 0xDEADBEEF


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def apply_one(data: bytes, kind: str, a: int, b: int, token: int) -> bytes:
    """One damage operation (see the module docstring)."""
    size = len(data)
    pos = a % (size + 1)
    tok = TOKENS[token % len(TOKENS)]
    if kind == "flip":
        if not size:
            return data
        i = a % size
        return data[:i] + bytes([data[i] ^ (1 << (b % 8))]) + data[i + 1 :]
    if kind == "truncate":
        return data[:pos]
    if kind == "zero":
        n = b % 4096 + 1
        return data[:pos] + bytes(min(n, size - pos)) + data[pos + n :]
    if kind == "insert":
        return data[:pos] + tok + data[pos:]
    if kind == "delete":
        return data[:pos] + data[pos + b % 4096 + 1 :]
    if kind == "duplicate":
        n = b % 8192 + 1
        return data[: pos + n] + data[pos : pos + n] + data[pos + n :]
    if kind == "u64":
        return data[:pos] + _U64.pack(_BIG[b % len(_BIG)]) + data[pos + 8 :]
    if kind == "u32":
        return data[:pos] + _U32.pack(_BIG[b % len(_BIG)] & 0xFFFFFFFF) + data[pos + 4 :]
    if kind == "overwrite":
        return data[:pos] + tok + data[pos + len(tok) :]
    lines = _lines(data)
    i = a % len(lines)
    if kind == "line_drop":
        del lines[i]
    elif kind == "line_dup":
        lines.insert(i, lines[i])
    elif kind == "line_replace":
        lines[i] = tok
    elif kind == "line_cut":
        lines[i] = lines[i][: b % (len(lines[i]) + 1)]
    elif kind == "line_insert":
        line = lines[i]
        j = b % (len(line) + 1)
        lines[i] = line[:j] + tok + line[j:]
    elif kind == "line_swap":
        j = b % len(lines)
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def apply(data: bytes, ops: list[tuple[str, int, int, int]]) -> bytes:
    """Every operation of ``ops`` in turn."""
    for op in ops:
        data = apply_one(data, *op)
    return data
