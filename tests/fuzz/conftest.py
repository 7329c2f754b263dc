"""Hypothesis profiles for the fuzz suites, and a count of the inputs tried per reader.

``ci`` (the default) keeps the whole suite within about a minute and is derandomized, so a
test run gives the same verdict on every machine; ``HYPOTHESIS_PROFILE=long`` tries a hundred
times more inputs from a random seed, to hunt for new failures (add each one found to
``test_regressions.py``). The profiles apply to the fuzz tests only (through
:data:`FUZZ`), so other property tests keep their own settings.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.fuzz.harness import TRIED

_COMMON = {
    "deadline": None,
    "database": None,  # no example database: runs are reproducible from the seed hypothesis prints
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
}
settings.register_profile("ci", max_examples=12, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=1500, derandomize=False, **_COMMON)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    PROFILE = "ci"
#: The settings every fuzz test uses (``@FUZZ`` or ``@settings(FUZZ, max_examples=...)``).
FUZZ = settings.get_profile(PROFILE)


def scaled(examples: int) -> int:
    """``examples`` under the ci profile, a hundred times more under ``long``."""
    return examples if PROFILE == "ci" else examples * 100


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not TRIED:
        return
    terminalreporter.section(f"fuzz inputs tried (profile {PROFILE})")
    for name, count in sorted(TRIED.items()):
        terminalreporter.write_line(f"{name:>18}: {count:,}")
    terminalreporter.write_line(f"{'total':>18}: {sum(TRIED.values()):,}")
