"""Property-based fuzzing of every reader: damaged real files give a table with warnings or a named error.

Each registered reader (and the user-pattern reader) gets its smallest real runs
as seeds; hypothesis damages one file (bit flips, truncation, zeroed or inserted
bytes, huge length fields, NULs, invalid UTF-8, broken lines …) and the harness
checks the outcome (see :mod:`tests.fuzz.harness`). ``HYPOTHESIS_PROFILE=long``
tries a hundred times more inputs.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.conftest import FUZZ, scaled
from tests.fuzz.harness import PATTERN_FORMAT, Seed, exercise, read_loaded, reader_names, seeds, time_limit
from tests.fuzz.mutations import KINDS, TOKENS, apply

NAMES = reader_names()

OPS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 40), st.integers(0, 1 << 40),
              st.integers(0, len(TOKENS) - 1)),
    min_size=1, max_size=4,
)


def _seeds(name: str) -> tuple[Seed, ...]:
    found = seeds(name)
    if not found:
        pytest.skip(f"no seed run of format {name!r} (sample runs or real-log corpus) small enough to fuzz")
    return found


def _pick(found: tuple[Seed, ...], index: int, file_index: int) -> tuple[Seed, str]:
    seed = found[index % len(found)]
    return seed, seed.read[file_index % len(seed.read)]


@pytest.mark.parametrize("name", NAMES)
@settings(FUZZ, max_examples=scaled(40))
@given(index=st.integers(0, 10), file_index=st.integers(0, 10), ops=OPS)
def test_damaged_file_is_read_or_named(name, index, file_index, ops, tmp_path_factory):
    seed, target = _pick(_seeds(name), index, file_index)
    exercise(seed, lambda data: apply(data, ops), tmp_path_factory.mktemp("run"), target=target)


@pytest.mark.parametrize("name", NAMES)
@settings(FUZZ, max_examples=scaled(8))
@given(index=st.integers(0, 10), ops=OPS)
def test_damaged_run_loads(name, index, ops, tmp_path_factory):
    """The same through ``load`` (discovery, sniffing, run naming, merging)."""
    seed, target = _pick(_seeds(name), index, 0)
    exercise(seed, lambda data: apply(data, ops), tmp_path_factory.mktemp("run"), target=seed.main, via_load=True)


@pytest.mark.parametrize("name", NAMES)
@settings(FUZZ, max_examples=scaled(12))
@given(index=st.integers(0, 10), keep=st.integers(0, 4096), tail=st.binary(min_size=0, max_size=4096))
def test_valid_header_then_random_bytes(name, index, keep, tail, tmp_path_factory):
    """A file that starts like the real thing (its first bytes kept) and continues as random bytes."""
    seed = _seeds(name)[index % len(_seeds(name))]
    exercise(seed, lambda data: data[: keep % (len(data) + 1)] + tail, tmp_path_factory.mktemp("run"),
             via_load=keep % 3 == 0)


@pytest.mark.parametrize("name", NAMES)
@settings(FUZZ, max_examples=scaled(2))
@given(index=st.integers(0, 10), ops=OPS)
def test_damaged_run_is_diagnosed_and_reported(name, index, ops, tmp_path_factory):
    """Past the readers: whatever a damaged run yields, diagnosis and the HTML report take it."""
    import tanalyze
    from tanalyze.diagnose import diagnose

    seed = _seeds(name)[index % len(_seeds(name))]
    root = tmp_path_factory.mktemp("run")
    exercise(seed, lambda data: apply(data, ops), root, target=seed.main)
    logs = read_loaded(root, pattern=name == PATTERN_FORMAT)
    if isinstance(logs, Exception):
        return
    with time_limit(120):
        page = tanalyze.report(logs, diagnose(logs)).to_html()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
