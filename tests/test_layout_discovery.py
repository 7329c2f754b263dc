"""Discovery finds, in each layout fixture, the runs its TRUTH.json says, each with its log files.

The fixtures and their truth are in tests/fixtures/layouts/ (written by the real
libraries; tests/test_layout_fixtures.py checks the truth against the files).
Files whose role is ``config`` or ``hparams`` carry no metrics: discovery may
list them with a run or as not read, so they are left out of the comparison.
"""

from __future__ import annotations

import json
import os

import pytest

import tanalyze
from tests.conftest import REPO

LAYOUTS = REPO / "tests" / "fixtures" / "layouts"
CASES: dict[str, dict] = json.loads((LAYOUTS / "TRUTH.json").read_text(encoding="utf-8"))["cases"]
NO_METRICS = {"config", "hparams"}
PENDING: dict[str, str] = {}  # layouts discovery still gets wrong, with what it does instead


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=PENDING[c])) if c in PENDING else c
     for c in sorted(CASES)],
)
def test_discovery_finds_the_runs_of_the_truth(case):
    found = tanalyze.discover(LAYOUTS / case)
    got = {}
    for spec in found.runs:
        files = set(spec.files).union(*(part.files for part in spec.parts or ()))
        got[spec.name] = {os.path.relpath(f, LAYOUTS / case) for f in files}
    want = {run: {f["path"] for f in truth["files"] if f["role"] not in NO_METRICS}
            for run, truth in CASES[case]["runs"].items()}
    assert sorted(got) == sorted(want)
    for run, files in want.items():
        assert got[run] - files <= {f["path"] for t in CASES[case]["runs"].values() for f in t["files"]}
        assert files <= got[run], f"{run}: discovery left out {sorted(files - got[run])}"
