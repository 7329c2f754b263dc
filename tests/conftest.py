"""Shared fixtures: the real-log corpus beside the checkout and the bundled sample runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_RUNS = REPO / "sample_runs"
REAL_LOGS = Path(os.environ.get("TANALYZE_REAL_LOGS", REPO.parent / "shared" / "real_logs"))


def real_log(relative: str) -> Path:
    """Path of a file in the real-log corpus; skips the test (with the reason) when the corpus is absent."""
    if not REAL_LOGS.is_dir():
        pytest.skip(f"real-log corpus not found at {REAL_LOGS} (set TANALYZE_REAL_LOGS)")
    path = REAL_LOGS / relative
    if not path.exists():
        pytest.fail(f"expected real log {relative} is missing from the corpus at {REAL_LOGS}")
    return path


@pytest.fixture(scope="session")
def real_logs() -> Path:
    """The real-log corpus root (skips when absent)."""
    if not REAL_LOGS.is_dir():
        pytest.skip(f"real-log corpus not found at {REAL_LOGS} (set TANALYZE_REAL_LOGS)")
    return REAL_LOGS


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Tests never read or fill the user's cache folder: the session gets one of its own."""
    previous = os.environ.get("TANALYZE_CACHE_DIR")
    os.environ["TANALYZE_CACHE_DIR"] = str(tmp_path_factory.mktemp("tanalyze-cache"))
    yield
    if previous is None:
        os.environ.pop("TANALYZE_CACHE_DIR", None)
    else:
        os.environ["TANALYZE_CACHE_DIR"] = previous
