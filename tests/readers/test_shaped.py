"""Templated lines read at once (``tanalyze.readers.text._shaped``): the fields of every line of a shape, as
``float()`` reads each, whatever the pieces between them hold."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tanalyze.readers.text._shaped import line_shape, read_fields, shape_runs, value_runs

#: pieces between fields: some end with a number's character ("acc@1", "e"), some hold several runs of them
_PIECES = (" | loss ", "\tAcc@1", " (", ")\tTime", "][", "/", " lr1e", " x-y.z ", ": ", "=")
_NUMBERS = ("0", "7", "12", "3.5", "-0.25", "1.5e-05", "2E+3", ".5", "5.", "+4", "1e5")
_PADS = ("", "*", "+")


@st.composite
def _shaped_lines(draw):
    """A shape (pieces, pads, which fields are skipped) and lines of it: numbers, and blanks where pads allow."""
    width = draw(st.integers(1, 5))
    pieces = ["step "] + [draw(st.sampled_from(_PIECES)) for _ in range(width - 1)] + [draw(st.sampled_from(("", " ms", ")")))]
    pads = [draw(st.sampled_from(_PADS)) for _ in range(width)]
    skipped = [draw(st.booleans()) for _ in range(width)]
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        values = [draw(st.sampled_from(_NUMBERS)) for _ in range(width)]
        blanks = [" " * draw(st.integers(pad == "+", 3)) if pad else draw(st.sampled_from(("", "", " ")))
                  for pad in pads]  # (a blank where no pad is: a line of another shape)
        lines.append((values, blanks))
    return pieces, pads, skipped, lines


def _line(pieces, values, blanks):
    return pieces[0] + "".join(blank + value + piece for value, blank, piece in zip(values, blanks, pieces[1:],
                                                                                    strict=True))


@settings(max_examples=400, deadline=None)
@given(_shaped_lines())
def test_fields_read_at_once_are_each_line_read_on_its_own(case):
    pieces, pads, skipped, lines = case
    texts = [_line(pieces, values, blanks) for values, blanks in lines]
    shape = line_shape(texts[0], _spans(pieces, *lines[0]), [False] * len(pieces[1:]), pads, skipped)
    if shape is None:  # (two fields that would touch, a piece after a field that begins like a number)
        return
    text = "\n".join(texts) + "\n"
    runs = shape_runs(text, (shape,), exact=False)
    starts = np.array([0] + [len(t) + 1 for t in texts[:-1]]).cumsum()
    in_runs = [any(a <= start < b for a, b in runs) for start in starts]
    expected_in = [line_shape(t, _spans(pieces, values, blanks), [False] * len(values), pads, skipped) == shape
                   for t, (values, blanks) in zip(texts, lines, strict=True)]
    assert in_runs == expected_in
    kept = starts[np.array(in_runs)]
    chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    (grid,) = read_fields(chars, [(kept, shape)], value_runs(chars))
    expected = [[float(value) for value, skip in zip(values, skipped, strict=True) if not skip]
                for (values, _), inside in zip(lines, in_runs, strict=True) if inside]
    assert grid.tolist() == expected


def _spans(pieces, values, blanks):
    spans, at = [], len(pieces[0])
    for value, blank, piece in zip(values, blanks, pieces[1:], strict=True):
        at += len(blank)
        spans.append((at, at + len(value)))
        at += len(value) + len(piece)
    return spans


def test_a_piece_that_ends_like_a_number_before_a_field():
    """"lr1e" then "5": the piece's "1e" and the field touch (one run of a number's characters); the field is
    what comes after the piece."""
    text = "step 1 lr1e5 x\nstep 2 lr1e7 x\n"
    shape = line_shape("step 1 lr1e5 x", [(5, 6), (11, 12)], [True, False])
    chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    (grid,) = read_fields(chars, [(np.array([0, 15]), shape)], value_runs(chars))
    assert grid.tolist() == [[1.0, 5.0], [2.0, 7.0]]
