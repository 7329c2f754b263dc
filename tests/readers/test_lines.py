"""Cleaning dirty console text: escapes, progress bars, line ends, bad bytes, cut lines."""

import random
import re

from tanalyze.readers.text._lines import (
    TextStats,
    _strip_escape_bytes,
    iter_chunks,
    looks_like_text,
    sniff_window,
)
from tests.readers.text_helpers import write


def _read(path, chunk_chars=4 << 20):
    stats = TextStats()
    chunks = list(iter_chunks(path, stats, chunk_chars=chunk_chars))
    return chunks, stats


def test_ansi_crlf_and_progress_bars_are_cleaned_and_counted(tmp_path):
    path = write(
        tmp_path / "a.log",
        "\x1b[92m[OKAY]\x1b[0m ready\r\n"
        " 10%|#   | 1/10\r 20%|##  | 2/10\r{'loss': 1.5}\r\n"
        "\x1b]0;title\x07done\n",
    )
    chunks, stats = _read(path)
    text = "".join(c.text for c in chunks)
    assert text == "[OKAY] ready\n 10%|#   | 1/10\n 20%|##  | 2/10\n{'loss': 1.5}\ndone\n"
    assert stats.ansi_sequences == 3
    assert stats.carriage_returns == 2
    assert stats.lines == 3
    assert "2 bare carriage return(s)" in " ".join(stats.notes())


#: the escape sequences removed, as a regex (left to right, then the lone ESCs left): what the numpy removal equals
_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-_])")


def test_escape_removal_equals_the_regex_on_random_and_edge_bytes():
    pieces = [b"\x1b", b"[", b"]", b"\\", b"\x07", b"\n", b"0", b"3", b";", b"m", b" ", b"!", b"A", b"~", b"a", b"?",
              b"/", b"@", b"_", b"`", b"\x7f", b"\xc3\xa9", b"\x1b[35m", b"\x1b[0m", b"\x1b]" + b"t" * 20]
    rng = random.Random(0)
    cases = [b"", b"\x1b", b"a\x1b", b"\x1b[", b"\x1b]", b"\x1b]x\x1b", b"\x1b]x\x1b\\\x1b\\", b"\x1b\x1b[0m[50]",
             b"\x1b[1;2;3;4;5;6;7;8;9m", b"\x1b]" + b"x" * 100 + b"\x07\x1b[m"]
    cases += [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(5000)]
    for data in cases:
        expected, count = _ESCAPE.subn(b"", data)
        out, n = _strip_escape_bytes(bytearray(data))
        assert (bytes(out), n) == (expected.replace(b"\x1b", b""), count), data


def test_a_carriage_return_before_a_crlf_and_one_at_the_end_are_bare(tmp_path):
    path = write(tmp_path / "a.log", "a\r\nbar 1\rbar 2\r\r\nlast\r")
    chunks, stats = _read(path)
    assert "".join(c.text for c in chunks) == "a\nbar 1\nbar 2\n\nlast\n"
    assert stats.carriage_returns == 3  # after "bar 1", before the CRLF, the last byte


def test_physical_line_numbers_survive_carriage_return_splitting(tmp_path):
    path = write(tmp_path / "a.log", "one\nbar\rbar\rtarget here\nlast\n")
    (chunk,), _ = _read(path)
    assert chunk.line_of(chunk.text.index("target")) == 2
    assert chunk.line_of(chunk.text.index("last")) == 3
    assert chunk.line_at(chunk.text.index("target")) == "target here"


def test_bad_utf8_and_nul_bytes_are_replaced_and_counted(tmp_path):
    path = write(tmp_path / "a.log", b"loss \xff\xfe 1.0\nx\x00\x00y\nreal \xef\xbf\xbd kept\n")
    (chunk,), stats = _read(path)
    assert chunk.text == "loss \ufffd\ufffd 1.0\nxy\nreal \ufffd kept\n"
    assert stats.replaced_chars == 2  # the U+FFFD already in the file is not counted
    assert stats.nul_bytes == 2
    notes = " ".join(stats.notes())
    assert "2 undecodable byte sequence(s)" in notes and "2 NUL byte(s)" in notes


def test_utf16_with_byte_order_mark_is_decoded(tmp_path):
    path = write(tmp_path / "a.log", b"\xff\xfe" + "iter 1: loss 2.0\r\n".encode("utf-16-le"))
    (chunk,), stats = _read(path)
    assert chunk.text == "iter 1: loss 2.0\n"
    assert stats.encoding == "utf-16"


def test_last_line_without_line_end_comes_alone_and_flagged(tmp_path):
    path = write(tmp_path / "a.log", "first\nsecond\nthird cut mi")
    chunks, stats = _read(path)
    assert [c.incomplete for c in chunks] == [False, True]
    assert chunks[1].text == "third cut mi\n"
    assert chunks[1].first_line == 3
    assert stats.incomplete_last_line == "third cut mi"


def test_chunks_hold_whole_lines_whatever_the_chunk_size(tmp_path):
    lines = [f"iter {i}: loss {i / 7:.4f}" for i in range(2000)]
    path = write(tmp_path / "a.log", "\n".join(lines) + "\n")
    chunks, stats = _read(path, chunk_chars=1000)
    assert len(chunks) > 20
    assert all(c.text.endswith("\n") for c in chunks)
    assert "".join(c.text for c in chunks).splitlines() == lines
    assert chunks[5].first_line == 1 + sum(c.text.count("\n") for c in chunks[:5])
    assert stats.lines == 2000


def test_a_line_longer_than_a_chunk_is_read_in_pieces(tmp_path):
    path = write(tmp_path / "a.log", "a\n" + "x" * 5000 + "\nb\n")
    chunks, stats = _read(path, chunk_chars=1000)
    assert stats.long_lines == 1
    assert "".join(c.text for c in chunks) == "a\n" + "x" * 5000 + "\nb\n"


def test_binary_heads_are_not_text():
    assert looks_like_text(b"epoch 1 loss 0.5\n")
    assert not looks_like_text(b"\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7f\x0b\x00\t\x00\x00\x00" * 10)
    assert not looks_like_text(b"")


def test_sniff_window_is_bounded_and_cleaned(tmp_path):
    path = write(tmp_path / "a.log", "\x1b[1mhello\x1b[0m\n" + "y" * 100 + "\n")
    assert sniff_window(path, limit=8) == "hello\nyy"
    assert sniff_window(tmp_path / "missing.log") == ""


def test_non_ascii_text_with_carriage_returns_keeps_positions_and_line_numbers(tmp_path):
    path = write(tmp_path / "a.log", "épilogue\n 10%|█   | 1/10\r 20%|██  | 2/10\rcible ✓\nfin\n")
    (chunk,), stats = _read(path)
    assert chunk.text == "épilogue\n 10%|█   | 1/10\n 20%|██  | 2/10\ncible ✓\nfin\n"
    assert chunk.line_of(chunk.text.index("cible")) == 2
    assert chunk.line_of(chunk.text.index("fin")) == 3
    assert stats.carriage_returns == 2 and stats.lines == 3


def test_multibyte_characters_are_never_split_between_pieces(tmp_path):
    line = "█é✓" * 700  # 2100 characters, 6300 bytes, no line break
    path = write(tmp_path / "a.log", line + "\nafter\n")
    chunks, stats = _read(path, chunk_chars=1000)
    assert "".join(c.text for c in chunks) == line + "\nafter\n"
    assert stats.replaced_chars == 0 and stats.long_lines == 1


def test_crlf_pairs_split_across_reads_are_one_line_end(tmp_path):
    text = "".join(f"line {i}\r\n" for i in range(500))
    chunks, stats = _read(write(tmp_path / "a.log", text), chunk_chars=997)
    assert "".join(c.text for c in chunks) == text.replace("\r\n", "\n")
    assert stats.carriage_returns == 0 and stats.lines == 500


def test_a_long_line_that_fills_the_chunk_exactly_is_read_whole(tmp_path):
    """Data of exactly a chunk's size with no line break in it (a found crash: the boundary was looked for
    past its end), ending in the middle of a character or not."""
    for size in range(990, 1010):
        for tail in ("", "é", "✓"):
            line = "x" * (size - len(tail.encode())) + tail
            for text in (line, line + "\nafter\n", line + tail * 400):
                path = write(tmp_path / "a.log", text)
                for chunk_chars in (size, 1000, len(text.encode())):
                    chunks, stats = _read(path, chunk_chars=chunk_chars)
                    read = "".join(c.text for c in chunks)  # (a cut last line may be given a break)
                    assert read.removesuffix("\n") == text.removesuffix("\n") and stats.replaced_chars == 0
                assert sniff_window(path, size)


def test_a_progress_bar_redrawn_on_one_line_longer_than_a_chunk_is_cut_after_a_redraw(tmp_path):
    """A loop's bar redrawn after ``\\r`` without ever ending its line (``leave=False``): a line longer than a
    chunk, cut after one of its redraws, so that each redraw stays whole and nothing is called a long line."""
    redraws = [f"Epoch 1: {i:3d}%|##  | {i}/100 [00:01<00:02, 7.10it/s, loss={1 / (i + 1):.4f}]" for i in range(100)]
    path = write(tmp_path / "a.log", "\r".join(redraws) + "\nafter\n")
    chunks, stats = _read(path, chunk_chars=500)
    assert len(chunks) > 10 and stats.long_lines == 0
    assert all(chunk.text.endswith("\n") for chunk in chunks)
    assert "".join(chunk.text for chunk in chunks).splitlines() == [*redraws, "after"]
    assert [chunk.first_line for chunk in chunks[:2]] == [1, 1] and chunks[-1].line_of(len(chunks[-1].text) - 2) == 2
