from tanalyze.text import safe_text


def test_escape_sequences_are_made_visible():
    assert safe_text("run\x1b[2J") == "run\\x1b[2J"
    assert safe_text("a\u202eb") == "a\\x202eb"


def test_long_text_is_capped():
    out = safe_text("x" * 5000, limit=10)
    assert out.startswith("x" * 10) and "4990 more chars" in out
