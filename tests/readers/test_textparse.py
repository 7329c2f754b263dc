"""The shared machinery of the console parsers: last-write-wins, rows, time stamps."""

import calendar
import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest

from tanalyze.readers.text import _regex
from tanalyze.readers.text._regex import (
    SPACE_CHARS,
    all_but,
    first_after_blanks,
    first_characters,
    ordered_matches,
    required_literal,
)
from tanalyze.readers.text._rows import Rows, dedupe
from tanalyze.readers.values import parse_timestamp, parse_timestamps
from tanalyze.schema import keep_last_write


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_rank", [False, True])
def test_dedupe_is_keep_last_write(seed, with_rank):
    rng = np.random.default_rng(seed)
    n = 2000
    frame = pd.DataFrame(
        {
            "run": pd.Categorical([""] * n),
            "tag": pd.Categorical(rng.choice(["loss", "lr", "acc", "grad norm"], n)),
            "step": rng.integers(-5, 300 if seed % 2 else 5000, n),
            "value": rng.normal(size=n),
            "wall_time": np.full(n, np.nan),
        }
    )
    if with_rank:
        ranks = rng.integers(0, 3, n)
        frame["rank"] = pd.arrays.IntegerArray(ranks, mask=ranks == 0)
    keys = ("tag", "step", "rank") if with_rank else ("tag", "step")
    expected, expected_dropped = keep_last_write(frame, keys=keys)
    got, dropped = dedupe(frame)
    assert dropped == expected_dropped
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


@pytest.mark.parametrize("seed", range(4))
def test_dedupe_of_rows_in_step_order_is_keep_last_write(seed):
    """Steps written in order, a few rows each (the usual log): repeats close together are found quickly."""
    rng = np.random.default_rng(seed)
    steps = np.sort(rng.integers(0, 400, 3000))
    tags = rng.choice(["loss", "lr", "acc"], len(steps))
    frame = pd.DataFrame({"run": pd.Categorical([""] * len(steps)), "tag": pd.Categorical(tags), "step": steps,
                          "value": rng.normal(size=len(steps)), "wall_time": np.full(len(steps), np.nan)})
    expected, expected_dropped = keep_last_write(frame, keys=("tag", "step"))
    got, dropped = dedupe(frame)
    assert dropped == expected_dropped > 0
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))
    distinct = frame.drop_duplicates(["tag", "step"], keep="last").reset_index(drop=True)
    untouched, none = dedupe(distinct)
    assert none == 0 and untouched is distinct


def test_repeats_of_a_step_are_found_alike_by_bits_and_by_distances(monkeypatch):
    """Whether a step's rows repeat a group: one pass with a bit per group (up to 64 groups) answers as the
    comparison at every distance within a step does."""
    from tanalyze.readers.text import _rows

    rng = np.random.default_rng(0)
    cases = [(rng.integers(0, rng.integers(1, 70), n), np.sort(rng.integers(0, rng.integers(1, 20), n)))
             for n in rng.integers(2, 60, 2000)]
    by_bits = [_rows._repeats_in_order(group, steps) for group, steps in cases]
    monkeypatch.setattr(_rows, "_bitwise_count", None)
    assert by_bits == [_rows._repeats_in_order(group, steps) for group, steps in cases]
    assert 100 < sum(by_bits) < 1900


def test_dedupe_without_duplicates_returns_the_frame_untouched():
    frame = Rows()
    frame.add("loss", 1, 0.5)
    frame.add("loss", 2, 0.4)
    frame.add("lr", 1, 0.1)
    table = frame.frame()
    got, dropped = dedupe(table)
    assert dropped == 0 and got is table


def test_rows_only_carry_optional_columns_that_were_used():
    rows = Rows()
    rows.add("loss", 1, 1.0)
    assert list(rows.frame().columns) == ["run", "tag", "step", "value", "wall_time"]
    rows.add("loss", 2, 0.5, epoch=0.5, rank=3, wall=10.0)
    table = rows.frame()
    assert math.isnan(table["epoch"][0]) and table["epoch"][1] == 0.5
    assert table["rank"].isna()[0] and table["rank"][1] == 3
    assert math.isnan(table["wall_time"][0]) and table["wall_time"][1] == 10.0


def test_rows_of_whole_lines_equal_the_rows_added_one_by_one():
    by_line, one_by_one = Rows(), Rows()
    one_by_one.add("loss", 0, 9.0)
    by_line.add("loss", 0, 9.0)
    by_line.extend_lines(("lr", "loss"), [10, 20], [0.1, 8.5, 0.2, 8.0], walls=[100.5, 200.25], rank=3)
    for step, lr, loss, wall in ((10, 0.1, 8.5, 100.5), (20, 0.2, 8.0, 200.25)):
        one_by_one.add("lr", step, lr, rank=3, wall=wall)
        one_by_one.add("loss", step, loss, rank=3, wall=wall)
    pd.testing.assert_frame_equal(by_line.frame(), one_by_one.frame())
    with pytest.raises(OverflowError):  # nothing appended: the caller reads such lines one by one
        by_line.extend_lines(("loss",), [30, 2**70], [7.0, 6.0])
    assert len(by_line) == 5


def test_time_stamps_are_read_as_utc():
    assert parse_timestamp("2023-04-18 01:46:59,142") == pytest.approx(calendar.timegm((2023, 4, 18, 1, 46, 59)) + 0.142)
    assert parse_timestamp("2023/08/05 08:15:04") == calendar.timegm((2023, 8, 5, 8, 15, 4))
    assert parse_timestamp("2024-05-01T10:00:00") == calendar.timegm((2024, 5, 1, 10, 0, 0))
    assert math.isnan(parse_timestamp("not a time stamp"))
    assert math.isnan(parse_timestamp("2023-13-45 99:99:99"))


@pytest.mark.parametrize(
    "stamps",
    [
        ["2022-10-31 10:59:51,434", "2022-10-31 10:59:56,281", "2024-02-29 23:59:59,999", "1970-01-01 00:00:00,001"],
        ["2022/10/31 10:59:51.434", "2022-10-31 10:59:51.007"],
        ["2022-10-31 10:59:51,434", "2022-13-31 10:59:51,434"],  # a month that does not exist: NaN
        ["0000-01-01 00:00:00,000", "2022-10-31 10:59:51,434"],  # no year 0: NaN
        ["2022-10-31 10:59:51,434", "2022-10-31 10:59:51"],  # another shape
        ["2022-10-31 10:59:51,434", "2022-10-31 10:59:5x,434", "2022-10-31T10:59:51,434"],
        [],
    ],
)
def test_time_stamps_read_together_are_the_same_floats(stamps):
    together = parse_timestamps(stamps)
    one_by_one = [parse_timestamp(stamp) for stamp in stamps]
    assert len(together) == len(one_by_one)
    for got, expected in zip(together, one_by_one, strict=True):
        assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert any(math.isnan(v) for v in together) == any("13-" in s or s.startswith("0000") or "5x" in s for s in stamps)


def test_many_time_stamps_read_together_with_or_without_milliseconds_or_microseconds():
    seconds = [f"2023-{1 + i % 12:02d}-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{(7 * i) % 60:02d}" for i in range(200)]
    micros = [s + f".{(7919 * i) % 1_000_000:06d}" for i, s in enumerate(seconds)]  # Python's str(datetime)
    for stamps in (seconds, [s + f",{i % 1000:03d}" for i, s in enumerate(seconds)], micros,
                   [*seconds[:100], "2023-13-01 00:00:00"], [*seconds[:100], "2023-01-01 00:00:00,5"],
                   [*micros[:100], "2023-01-01 00:00:00.12345x"]):
        together = parse_timestamps(stamps)
        one_by_one = [parse_timestamp(s) for s in stamps]
        assert together[:-1] == one_by_one[:-1]
        assert together[-1] == one_by_one[-1] or math.isnan(together[-1]) and math.isnan(one_by_one[-1])


@pytest.mark.parametrize(("source", "flags", "literal"), [
    (r"^ppl: (\d+)", re.M, "ppl: "),
    (r"^\*\*\*\*\* Evaluating (\w+)", re.M, "***** Evaluating "),
    (r"^\|E2E latency=([^\n]*)$", re.M, "|E2E latency="),
    (r"^abcd+", re.M, "abc"),  # the repeated character is not certain, what precedes it is
    (r"^ab?cd", re.M, None),  # "a" alone is too short to be worth a test
    (r"^(?:foo|bar)baz", re.M, None),
    (r"^abc|^xyz", re.M, None),  # the second branch need not contain "abc"
    (r"^abc(?:d|e)", re.M, "abc"),
    (r"^abc[|]d", re.M, "abc"),
    (r"^abc[]|]d|x", re.M, None),
    (r"^[ \t]*Epoch", re.M, None),
    (r"ppl: (\d+)", 0, None),  # not anchored: the engine finds its literal prefix itself
    (r"^ppl: (\d+)", re.M | re.I, None),
    (r"^ppl # comment", re.M | re.X, None),
])
def test_required_literal_of_an_anchored_pattern(source, flags, literal):
    assert required_literal(re.compile(source, flags)) == literal


def _text_patterns():
    """The line patterns of every console parser, and its look-alike patterns."""
    from tanalyze.readers.text.console import console_readers

    out = []
    for reader in console_readers():
        parser = reader.parser
        out.append(tuple(parser.patterns))
        lookalikes = getattr(parser, "lookalike", None)
        if lookalikes is not None:
            out.append(tuple((pattern, "lookalike") for pattern in
                             (lookalikes if isinstance(lookalikes, tuple) else (lookalikes,))))
    return out


def test_patterns_skipped_by_their_guards_would_have_matched_nothing(real_logs):
    """Every text file of the corpus: the matches with guards are exactly the matches of every pattern."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for folder in ("deepspeed_text_log", "megatron_text_log",
             "hf_text_log", "other_text") for p in sorted((real_logs / folder).rglob("*")) if p.is_file()]
    texts.append("INFO worker 3 prefetched batch [ok]\nppl: 3.5\n  * Acc@1 70.1 Acc@5 90.2\nTest: [ 10/100] loss 1.2\n")
    assert len(texts) > 5
    for patterns in _text_patterns():
        for text in texts:
            guarded = [(kind, m.span()) for kind, m in ordered_matches(text, patterns)]
            every = sorted((m.start(), index, kind, m.span()) for index, (pattern, kind) in enumerate(patterns)
                           for m in pattern.finditer(text))
            assert guarded == [(kind, span) for _, _, kind, span in every]


@pytest.fixture(scope="module")
def long_texts_and_their_matches(real_logs):
    """The corpus's console logs as one long text (and as ASCII), two ranges of it, and for each console parser's
    patterns and each text and range, every match of every pattern in order (``finditer``: the reference; made
    once for the three ways of scanning below)."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for folder in ("deepspeed_text_log", "megatron_text_log",
             "hf_text_log", "other_text") for p in sorted((real_logs / folder).rglob("*")) if p.is_file()]
    text = "".join(texts) + ("ppl: 3.5\nppl: 3.5ppl: 4\n\nppl: 5\n\n\n  step: 3 | loss 2\n \t Epoch 3/20\n   \n"
                             "\t\tval_loss: 0.5\n * Acc@1 70.1 Acc@5 90.2\n  \t")
    assert len(text) > 1 << 16 and not text.isascii()
    ascii_text = text.encode("ascii", "replace").decode("ascii")  # lines are found by their first bytes in ASCII
    window = (len(text) // 7, len(text) - len(text) // 5)
    cases = []
    for patterns in _text_patterns():
        for scanned, (start, end) in itertools.product((text, ascii_text), ((0, len(text)), window)):
            every = sorted((m.start(), index, kind, m.span()) for index, (pattern, kind) in enumerate(patterns)
                           for m in pattern.finditer(scanned, start, end))
            cases.append((patterns, scanned, start, end, [(kind, span) for _, _, kind, span in every]))
    return cases


@pytest.mark.parametrize("chars_per_try", [0, _regex._CHARS_PER_TRY, 10**12],
                         ids=["lines-always", "lines-when-few", "lines-never"])
def test_long_texts_give_every_pattern_its_finditer_matches(long_texts_and_their_matches, monkeypatch, chars_per_try):
    """Texts longer than a few pages are scanned another way (a pattern tried at the lines it can start on, or
    its literal found first): the same matches, on the whole text and on a window of it."""
    monkeypatch.setattr(_regex, "_CHARS_PER_TRY", chars_per_try)
    for patterns, scanned, start, end, every in long_texts_and_their_matches:
        assert [(kind, m.span()) for kind, m in ordered_matches(scanned, patterns, start, end)] == every


@pytest.mark.parametrize(("source", "flags", "firsts"), [
    (r"^ppl: (\d+)", re.M, "p"),
    (r"^\*\*\*\*\* Evaluating", re.M, "*"),
    (r"^[ \t]*(iter|step)[ \t]*:", re.M | re.I, " \tISis"),
    (r"^(?:a|b)?c", re.M, "abc"),
    # \s crosses an empty line (its "first character" is the break) and takes what str.isspace() takes
    (r"^\s*\d", re.M, " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f0123456789"),
    (r"^(?i:ppl)", re.M, None),  # case ignored inside a group: not worked out, no dispatch
    (r"^(?=x)y", re.M, "y"),  # a look-ahead is taken to allow anything: what follows decides
    (r"^(?P<pre>[^\n]*?)name", re.M, None),  # any character
    (r"^(?:a|b)*", re.M, None),  # matches an empty line
    (r"^$", re.M, None),
    (r"^ppl", 0, None),  # the text's start only
    (r"ppl: (\d+)", re.M, None),  # not anchored
    (r"^\u212a", re.M | re.I, None),  # the Kelvin sign matches an ASCII 'k' when case is ignored
    (r"^\u212a", re.M, ""),  # it cannot begin a line of ASCII text
])
def test_first_characters_of_an_anchored_pattern(source, flags, firsts):
    found = first_characters(re.compile(source, flags))
    assert (None if found is None else "".join(sorted(map(chr, found)))) == (
        None if firsts is None else "".join(sorted(firsts)))


@pytest.mark.parametrize(("source", "flags", "firsts"), [
    (r"^[ \t]*Epoch[ \t]*(\d+)", re.M, "E"),
    (r"^ \* (Acc@1 [^\n]*)$", re.M, "*"),  # a literal blank, then the first other character
    (r"^[ \t]*(iter|step)[ \t]*:", re.M | re.I, "ISis"),
    (r"^ {2,}\t?x", re.M, "x"),
    (r"^[ \t]*+\n", re.M, "\n"),  # a line of blanks: its break
    (r"^ppl: (\d+)", re.M, "p"),  # no blanks: the first character
    (r"^[ \t]*[ a]", re.M, None),  # what follows the blanks may be a blank
    (r"^\s*\d", re.M, None),  # \s is more than spaces and tabs
    (r"^[ \t]*$", re.M, None),
    (r"^[ \t]*(?i:ppl)", re.M, None),
    (r"^[ \t]*\u212a", re.M | re.I, None),
    (r"[ \t]*ppl", re.M, None),  # not anchored
])
def test_first_characters_after_the_blanks_of_an_anchored_pattern(source, flags, firsts):
    found = first_after_blanks(re.compile(source, flags))
    assert (None if found is None else "".join(sorted(map(chr, found)))) == (
        None if firsts is None else "".join(sorted(firsts)))


@pytest.mark.parametrize("token", ["0", "12", "-3", "+4.", ".5", "1.25", "-0.001", "1e-05", "2.5E+10", "3e4", "nan",
                                   "-nan", "NaN", "inf", "-Infinity", "12.", "7.5e", "1..2", "e5", "-", "1e+"])
@pytest.mark.parametrize("after", [", ", " avg", "%", ")", ""])
def test_the_possessive_number_matches_what_the_number_matches(token, after):
    """NUMBER_ONCE gives back nothing it took: where a comma, a blank, a word or the end follows, it matches
    exactly what NUMBER does."""
    from tanalyze.readers.values import NUMBER, NUMBER_ONCE

    text = token + after
    plain, once = re.match(f"({NUMBER}){re.escape(after)}$", text), re.match(f"({NUMBER_ONCE}){re.escape(after)}$", text)
    assert (plain and plain.group(1)) == (once and once.group(1))


@pytest.mark.parametrize("negated, excluded", [
    (r"[^\s=,'\"{}\[\]]", SPACE_CHARS + "=,'\"{}[]"), (r"[^\]\n]", "]\n"), (r"[\s\S]", ""),
    (r"[^\x00\U0010ffff\-\^\\]", "\x00\U0010ffff-^\\")])
def test_all_but_is_the_negated_class_on_every_character(negated, excluded):
    everything = "".join(map(chr, range(0x110000)))
    assert SPACE_CHARS == "".join(char for char in everything if char.isspace())
    assert re.findall(all_but(excluded), everything) == re.findall(negated, everything)
