"""``name: value |`` fields: the pattern learnt from one line reads every line that repeats its names."""

from tanalyze.readers.text._fields import MAX_SHAPE_FIELDS, FieldShape, fields_into

HEAD = r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|"
LINE = " iteration {it:>6}/    1000 | lm loss: {loss} | grad norm: {norm} |\n"


def _iteration_shape(first: str) -> FieldShape:
    shape = FieldShape(HEAD)
    assert shape.learn(first)
    return shape


def test_lines_with_the_learnt_names_are_read_together():
    shape = _iteration_shape(" lm loss: 9.0 | grad norm: 1.5 |")
    text = "banner\n" + "".join(LINE.format(it=i, loss=10 - i / 10, norm=i / 4) for i in (10, 20, 30)) + "tail\n"
    matches, (steps, totals), values = shape.read(text)
    assert list(steps) == ["10", "20", "30"] and set(totals) == {"1000"}
    assert values == [9.0, 2.5, 8.0, 5.0, 7.0, 7.5]
    assert shape.tags == ["lm loss", "grad norm"]
    assert [text[m.start() : m.start() + 9] for m in matches] == ["iteration"] * 3


def test_a_line_with_other_names_or_a_word_for_a_value_leaves_the_chunk_to_the_careful_path():
    shape = _iteration_shape(" lm loss: 9.0 | grad norm: 1.5 |")
    good = LINE.format(it=10, loss=9.0, norm=1.5)
    assert shape.read(good + " iteration 20/ 1000 | lm loss: 8.0 |\n") is None  # a field less
    assert shape.read(good + LINE.format(it=20, loss=8.0, norm="n/a")) is None
    assert shape.read(good + LINE.format(it=20, loss=8.0, norm=1.5)[:-3] + "\n") is None  # cut before its last '|'
    assert shape.read("no iteration here\n") == ([], [], [])


def test_timer_lines_may_end_without_a_bar():
    shape = FieldShape(r"time \(ms\) *\|", prefix="time (ms)/", closed=False)
    assert shape.learn(" forward-compute: 467.20 | optimizer: 301.68")
    _, _, values = shape.read("time (ms) | forward-compute: 1.5 | optimizer: 2.5\ntime (ms) | forward-compute: 3 | optimizer: 4 |\n")
    assert values == [1.5, 2.5, 3.0, 4.0] and shape.tags == ["time (ms)/forward-compute", "time (ms)/optimizer"]


def test_only_plain_fields_of_a_sane_count_are_learnt():
    shape = FieldShape(HEAD)
    assert not shape.learn(" lm loss: 9.0 | grad norm: 1.5")  # no closing '|': a cut line
    assert not shape.learn(" lm loss: 9:0 |")
    assert not shape.learn(" : 9.0 |")
    assert not shape.learn("".join(f" f{i}: 1 |" for i in range(MAX_SHAPE_FIELDS + 1)))
    assert shape.pattern is None


def test_fields_count_values_that_are_not_numbers():
    names: list[str] = []
    values: list[float] = []
    bad = [0]
    assert fields_into(" a: 1 | b: n/a | c: | d: 1,234 | e: nan |", names, values, bad, {}) == 3
    assert names == ["a", "d", "e"] and values[:2] == [1.0, 1234.0] and bad == [2]
