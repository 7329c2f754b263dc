"""The Python check API on the real throughput sample runs: loaded logs in, a report that shows and plots itself."""

import matplotlib
import pytest

import tanalyze
from tanalyze.checks import Status
from tests.conftest import SAMPLE_RUNS

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def throughput():
    return tanalyze.load(SAMPLE_RUNS / "throughput")


@pytest.fixture(scope="module")
def slowed(throughput):
    """The slowed job against the three noise-only copies, taken as seeds of one baseline."""
    return tanalyze.check(throughput.select("slow_loader"), baseline=throughput.select(["baseline", "control_*"]))


def test_slowed_run_fails_against_the_seed_band(slowed):
    rule = {r.name: r for r in slowed.rules}["throughput"]
    assert not slowed.passed and rule.status is Status.FAIL and rule.run == "slow_loader"
    assert len(rule.details["baseline_run_medians"]) == 3
    assert 0.70 < rule.value < 0.85 and rule.p_value < 0.002
    assert slowed.baseline == f"{SAMPLE_RUNS / 'throughput'} [baseline, control_a, control_b]"


def test_noise_only_copy_passes_and_paths_work_like_logs(throughput):
    from_logs = tanalyze.check(throughput.select("control_b"), baseline=throughput.select("control_a"))
    from_paths = tanalyze.check(SAMPLE_RUNS / "throughput" / "control_b", baseline=SAMPLE_RUNS / "throughput" / "control_a")
    assert from_logs.passed and from_paths.passed
    assert [r.to_dict() for r in from_logs.rules] == [r.to_dict() for r in from_paths.rules]


def test_repr_is_one_line_per_run(slowed, throughput):
    lines = repr(slowed).splitlines()
    assert lines[0].startswith("<CheckReport FAILED (5 pass, 1 fail, 4 skip): ")
    assert lines[1].startswith("  slow_loader: FAIL — throughput: throughput regression: candidate median")
    several = tanalyze.check(throughput, baseline=throughput.select("baseline"))
    assert [line.split(":")[0].strip() for line in repr(several).splitlines()[1:]] == list(throughput.runs)


def test_plot_draws_what_the_check_kept_without_recomputing(slowed, monkeypatch):
    import sys

    import tanalyze.analysis.throughput_compare as analysis
    import tanalyze.logs

    def boom(*args, **kwargs):
        raise AssertionError("plot() recomputed")

    monkeypatch.setattr(analysis, "compare_throughput", boom)
    monkeypatch.setattr(tanalyze.logs, "load", boom)
    monkeypatch.setattr(sys.modules["tanalyze.diagnose"], "diagnose_run", boom)
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    assert slowed.plot(ax=ax) is ax
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[0] == "baseline runs" and "slow_loader" in labels
    details = {r.name: r for r in slowed.rules}["throughput"].details
    medians = sorted(line.get_ydata()[0] for line in ax.get_lines() if "median" in line.get_label())
    assert medians == sorted([details["candidate_median"], details["baseline_median"]])
    plt.close("all")


def test_plot_without_throughput_says_why():
    report = tanalyze.check(tanalyze.load(SAMPLE_RUNS / "normal_hf" / "trainer_state.json"))
    with pytest.raises(ValueError, match="no candidate run logs throughput"):
        report.plot()
    with pytest.raises(KeyError, match="no run 'other'"):
        report.plot("other")
