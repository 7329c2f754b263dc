"""The redraws of tqdm bars in a chunk, found at once with numpy (the fast path of :mod:`.tqdm_console`).

A chunk of a job's stderr is mostly bar redraws, each a line here::

    Epoch 1:  44%|████▍     | 22/50 [00:00<00:00, 152.15it/s, v_num=0, train_loss=0.0485, val_loss=0.136]

Their structural characters (line breaks, ``|``, ``[``, ``]``, ``,``, ``=``) are found in the chunk's bytes, one
comparison each, and each redraw's parts are cut out between them: the description before the first ``|``, the
count and total after the second, the postfix after the second comma inside ``[…]``, and in the postfix its
``name=value`` pieces. :func:`find_bars` gives exactly what ``tqdm_console.BAR`` and ``_PAIR`` find, or None
when a line could make them differ (a line with two ``|`` that is no bar of this form, a piece with no ``=`` or
two, a name that is no name, a long description): the caller then reads the chunk redraw by redraw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tanalyze.readers.text._shaped import stretches

__all__ = ["NAME", "Bars", "Posts", "Words", "carried_forward", "find_bars", "postfix_pieces"]

_BLANK = np.zeros(256, dtype=bool)
_BLANK[[32, 9]] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[48:58] = True
#: a postfix name as ``tqdm_console._PAIR`` takes it (ASCII)
NAME = re.compile(r"[A-Za-z_][0-9A-Za-z_./-]{0,63}")
#: the longest count field (" 22/50 ") and description read here; longer ones go to the line-by-line path
_COUNT_WIDTH = 32
_DESC_BYTES = 120  # (``BAR``'s description is at most 120 characters: as many bytes is at most that many)
_BAR_BYTES = 200
#: the count fields of bars, each with a line break after it (digits: at most 18, an int64's)
_COUNT_FIELDS = re.compile(rb"(?:[ \t]*+[0-9]{1,18}+/(?:[0-9]{1,18}+|\?)[ \t]*+\n)*+")
_NAME_BYTES = 64
_LEADING_BLANKS = 4


@dataclass
class Posts:
    """The ``name=value`` pieces of some postfixes: per postfix its pieces (``first`` into the piece arrays,
    ``pieces`` many); per piece where its name and its value (as printed, blanks included) are."""

    first: np.ndarray
    pieces: np.ndarray
    piece_start: np.ndarray
    name_start: np.ndarray
    name_end: np.ndarray
    value_start: np.ndarray
    value_end: np.ndarray


@dataclass
class Bars:
    """The bar redraws of a chunk (every line ``BAR`` matches), in order: the chunk's bytes, each redraw's
    description (``descs[desc[i]]``), count, total (-1 for ``?``) and postfix (start and end; -1 without one)."""

    data: bytes
    chars: np.ndarray
    lines: np.ndarray  # (indices of the chunk's lines: ``line_starts`` and ``line_ends`` hold all of them)
    line_starts: np.ndarray
    line_ends: np.ndarray
    commas: np.ndarray
    equals: np.ndarray
    descs: list[str]
    desc: np.ndarray
    count: np.ndarray
    total: np.ndarray
    post_start: np.ndarray
    post_end: np.ndarray
    words: Words

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", errors="replace")


def _first_after(positions: np.ndarray, after: np.ndarray, size: int) -> np.ndarray:
    """The first of ``positions`` (sorted) greater than each of ``after``; ``size`` when there is none."""
    extended = np.append(positions, size)
    return extended[np.searchsorted(positions, after, side="right")]


class Words:
    """The 8 bytes from each position of a text as one integer (an unaligned view, no copy per position): a
    segment of up to 24 bytes is then three integers, compared at once."""

    def __init__(self, data: bytes) -> None:
        self.padded = data + bytes(_WORDS * _WORD)  # (the words of the last positions run past the end)
        self.words = np.ndarray((len(data) + (_WORDS - 1) * _WORD + 1,), dtype="<u8", buffer=self.padded, strides=(1,))

    def same(self, start: np.ndarray, end: np.ndarray, other_start: np.ndarray, other_end: np.ndarray) -> np.ndarray:
        """Whether each segment ``[start, end)`` holds the same bytes as ``[other_start, other_end)``."""
        length = end - start
        same = length == other_end - other_start
        longest = int(length.max()) if len(length) else 0
        for word in range(min(_WORDS, -(-longest // _WORD))):
            bytes_in = np.clip(length - word * _WORD, 0, _WORD)
            mask = _MASKS[bytes_in]
            same &= ((self.words[start + word * _WORD] ^ self.words[other_start + word * _WORD]) & mask) == 0
        long = np.flatnonzero(same & (length > _WORDS * _WORD))
        if len(long):
            chars = np.frombuffer(self.padded, dtype=np.uint8)
            sizes = length[long]
            mine = chars[stretches(start[long], start[long] + sizes)]
            theirs = chars[stretches(other_start[long], other_start[long] + sizes)]
            same[long] = np.add.reduceat(mine != theirs, np.cumsum(sizes) - sizes) == 0
        return same


_WORD, _WORDS = 8, 3
#: the low ``k`` bytes of a little-endian word
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(_WORD + 1)], dtype=np.uint64)


def _counts(chars: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The count and total of each ``[ \\t]*\\d+/(\\d+|\\?)[ \\t]*`` at ``chars[start:end]`` (total -1 for
    ``?``); None when one has another form."""
    if not len(start):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    fields = chars[stretches(start, end + 1)].copy()
    fields[np.cumsum(end + 1 - start) - 1] = 10  # (each with a line break after it)
    joined = fields.tobytes()
    if _COUNT_FIELDS.fullmatch(joined) is None:
        return None
    numbers = np.fromstring(joined.replace(b"/", b" ").replace(b"?", b"-1"), dtype=np.int64, sep=" ")
    if len(numbers) != 2 * len(start):
        return None
    return numbers[0::2].copy(), numbers[1::2].copy()


def find_bars(data: bytes) -> Bars | None:
    """The bar redraws of a chunk's text (``data``: its UTF-8 bytes), or None when a line may be read otherwise than
    ``BAR`` reads it (the caller reads the chunk redraw by redraw)."""
    chars = np.frombuffer(data, dtype=np.uint8)
    size = len(chars)
    breaks, pipes, opens, closes, commas, equals = (np.flatnonzero(chars == code) for code in b"\n|[],=")
    line_starts = np.concatenate(([0], breaks + 1))
    line_ends = np.append(breaks, size)
    pipe_line = np.searchsorted(breaks, pipes)
    firsts = np.flatnonzero(np.diff(pipe_line, prepend=-1) != 0)
    two = firsts[(firsts + 1 < len(pipes))]
    two = two[pipe_line[two + 1] == pipe_line[two]]
    lines = pipe_line[two]
    start, end = line_starts[lines], line_ends[lines]
    first_pipe, second_pipe = pipes[two], pipes[two + 1]
    if (first_pipe - start > _DESC_BYTES).any() or (second_pipe - first_pipe - 1 > _BAR_BYTES).any():
        return None
    bracket = _first_after(opens, second_pipe, size)
    if (bracket >= end).any():
        return None
    if (bracket - second_pipe - 1 > _COUNT_WIDTH).any():
        return None
    counts = _counts(chars, second_pipe + 1, bracket)
    if counts is None:
        return None
    count, total = counts
    # inside "[…]": the elapsed time, the rate, then the postfix, up to the first "]" after the second comma
    comma1 = _first_after(commas, bracket, size)
    close1 = _first_after(closes, bracket, size)
    comma2 = _first_after(commas, comma1, size)
    close2 = _first_after(closes, comma1, size)
    if (close1 >= end).any():
        return None  # (no "]": not a bar)
    has_rate = comma1 < close1
    has_post = has_rate & (comma2 < close2)
    if (has_rate & (close2 >= end)).any():
        return None
    post_start = np.where(has_post, comma2 + 1, -1)
    for _ in range(_LEADING_BLANKS + 1):  # (the blanks before it)
        blank = has_post & (post_start < close2) & _BLANK[chars[np.minimum(np.maximum(post_start, 0), size - 1)]]
        post_start = np.where(blank, post_start + 1, post_start)
    if (has_post & (post_start < close2) & _BLANK[chars[np.minimum(np.maximum(post_start, 0), size - 1)]]).any():
        return None
    post_end = np.where(has_post, close2, -1)
    words = Words(data)
    descs, desc = _descriptions(data, chars, words, start, first_pipe)
    if descs is None:
        return None
    return Bars(data, chars, lines, line_starts, line_ends, commas, equals, descs, desc, count, total, post_start,
                post_end, words)


def _descriptions(data: bytes, chars: np.ndarray, words: Words, start: np.ndarray, end: np.ndarray
                  ) -> tuple[list[str] | None, np.ndarray]:
    """The description of each bar: what ``BAR``'s lazy ``desc`` leaves of the text before the first ``|``
    (``:?[ \\t]*(?:\\d{1,3}%)?`` taken off its end, longest first), as an index into a list of them: only where
    it differs from the bar before is its text looked at."""
    index = np.zeros(len(start), dtype=np.int64)
    if not len(start):
        return [], index
    stop = end.copy()
    at = np.maximum(stop - 1, start)
    percent = (stop > start) & (chars[at] == 37)
    digits = np.zeros(len(start), dtype=np.int64)
    for k in range(1, 4):  # the digits before "%" (at most three: a fourth is the description's)
        inside = percent & (digits == k - 1) & (stop - 1 - k >= start)
        digits += inside & _DIGIT[chars[np.maximum(stop - 1 - k, 0)]]
    stop = np.where(percent & (digits > 0), stop - 1 - digits, stop)
    while True:
        blank = (stop > start) & _BLANK[chars[np.maximum(stop - 1, 0)]]
        if not blank.any():
            break
        stop = np.where(blank, stop - 1, stop)
    stop = np.where((stop > start) & (chars[np.maximum(stop - 1, 0)] == 58), stop - 1, stop)  # ":"
    changed = np.ones(len(start), dtype=bool)
    changed[1:] = ~words.same(start[1:], stop[1:], start[:-1], stop[:-1])
    descs: list[str] = []
    known: dict[bytes, int] = {}
    rows = np.flatnonzero(changed)
    for row, a, b in zip(rows.tolist(), start[rows].tolist(), stop[rows].tolist(), strict=True):
        number = known.setdefault(data[a:b], len(descs))
        if number == len(descs):
            descs.append(data[a:b].decode("utf-8", errors="replace"))
        index[row] = number
    return descs, carried_forward(changed, index)


def carried_forward(changed: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` where ``changed``, else the value of the last changed row before."""
    last = np.maximum.accumulate(np.where(changed, np.arange(len(changed)), 0))
    return values[last]


def postfix_pieces(chars: np.ndarray, start: np.ndarray, end: np.ndarray, equals: np.ndarray,
                   commas: np.ndarray) -> Posts | None:
    """The ``name=value`` pieces of the postfixes at ``chars[start:end]`` (split at commas); None when a piece
    has no ``=`` or two, more than a few blanks before its name, a name longer than 64 bytes (``NAME`` takes no
    longer one; the caller checks each distinct name against it) or an empty value."""
    low = np.searchsorted(commas, start)
    high = np.searchsorted(commas, end)
    pieces = high - low + 1
    first = np.cumsum(pieces) - pieces
    post = np.repeat(np.arange(len(start)), pieces)
    k = np.arange(int(pieces.sum())) - first[post]
    last = k == pieces[post] - 1
    comma_at = np.minimum(low[post] + k, max(len(commas) - 1, 0))
    piece_start = np.where(k == 0, start[post], commas[np.maximum(low[post] + k - 1, 0)] + 1 if len(commas) else 0)
    piece_end = np.where(last, end[post], commas[comma_at] if len(commas) else 0)
    after = np.append(equals, len(chars))
    equal_low = np.searchsorted(equals, piece_start)
    equal = after[equal_low]
    if not ((equal < piece_end) & (after[equal_low + 1] >= piece_end)).all():
        return None  # (no "=" in a piece, or two)
    name_start = piece_start
    for _ in range(_LEADING_BLANKS + 1):
        blank = _BLANK[chars[np.minimum(name_start, len(chars) - 1)]] & (name_start < equal)
        if not blank.any():
            break
        name_start = np.where(blank, name_start + 1, name_start)
    name_length = equal - name_start
    if not ((name_length >= 1) & (name_length <= _NAME_BYTES) & (equal + 1 < piece_end)).all():
        return None
    return Posts(first, pieces, piece_start, name_start, equal, equal + 1, piece_end)
