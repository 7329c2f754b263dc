"""Logs in a notebook: repr one line per run, select by name or pattern, overlay one tag across runs."""

import pickle
from types import MappingProxyType

import matplotlib
import numpy as np
import pytest

import tanalyze
from tanalyze.datasets import make_curve
from tanalyze.discover import discover
from tanalyze.logs import Logs, RunInfo, read_run
from tanalyze.schema import HISTOGRAM_COLUMNS, concat_frames, empty_histograms
from tests.conftest import SAMPLE_RUNS

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def throughput():
    return tanalyze.load(SAMPLE_RUNS / "throughput")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _logs(names, kind="normal"):
    frames = [make_curve(kind, n_steps=200, seed=i, run=n)[0] for i, n in enumerate(names)]
    infos = {n: RunInfo(n, "synthetic", n, ()) for n in names}
    return Logs(scalars=concat_frames(frames), histograms=empty_histograms(), runs=MappingProxyType(infos))


def test_repr_lists_each_run_with_its_points(throughput):
    lines = repr(throughput).splitlines()
    assert lines[0].startswith("<Logs 4 run(s), 9,600 scalar points")
    assert len(lines) == 5
    assert lines[1].split() == ["baseline", "tensorboard,", "4", "tag(s),", "2,400", "points,", "steps", "1-600"]


def test_repr_caps_long_collections_and_makes_names_terminal_safe():
    logs = _logs([f"run-{i}\x1b[2J" for i in range(30)])
    lines = repr(logs).splitlines()
    assert "\x1b" not in repr(logs) and "run-0\\x1b[2J" in lines[1]
    assert len(lines) == 1 + 20 + 1 and lines[-1].strip() == "… and 10 more run(s); see .summary()"


def test_select_by_name_and_pattern_keeps_only_those_runs(throughput):
    picked = throughput.select(["control_*", "baseline"])
    assert list(picked.runs) == ["baseline", "control_a", "control_b"]  # load order, not argument order
    assert set(picked.scalars["run"].astype(str)) == {"baseline", "control_a", "control_b"}
    assert list(picked.scalars["run"].cat.categories) == ["baseline", "control_a", "control_b"]
    assert len(picked.scalars) == 3 * 2400
    with pytest.raises(KeyError, match="no run matches 'nope'; runs: baseline, control_a"):
        throughput.select("nope")


def test_scalars_of_is_one_runs_rows_and_the_old_name_warns(throughput):
    rows = throughput.scalars_of("control_a")
    assert set(rows["run"].astype(str)) == {"control_a"} and len(rows) == 2400
    with pytest.raises(KeyError, match="no run 'nope'; runs: baseline, control_a"):
        throughput.scalars_of("nope")
    with pytest.warns(DeprecationWarning, match=r"use Logs.scalars_of\(name\)"):
        assert throughput.run("control_a").equals(rows)


def test_plot_overlays_a_tag_with_raw_and_smoothed_lines(throughput):
    ax = throughput.plot("perf/samples_per_sec", ["baseline", "slow_loader"])
    labelled = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in labelled] == ["baseline", "slow_loader"]
    assert len(ax.get_lines()) == 4  # a faint raw line under each smoothed one
    raw = throughput.series("slow_loader", "perf/samples_per_sec")
    np.testing.assert_array_equal(ax.get_lines()[2].get_ydata(), raw.to_numpy())
    smoothed = labelled[1].get_ydata()
    assert smoothed[0] == raw.iloc[0] and np.std(smoothed) < np.std(raw.to_numpy())
    assert len(throughput.plot("train/loss", smooth=0).get_lines()) == 4  # no smoothing: raw lines only
    import matplotlib.pyplot as plt

    _, given = plt.subplots()
    assert throughput.plot("train/loss", "control_*", ax=given) is given  # draws on the axes it is given


def test_plot_draws_nonfinite_points_as_gaps_and_escapes_labels():
    logs = _logs(["$x_1", "_hidden"], kind="diverged")
    ax = logs.plot("train/loss", smooth=0)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == [r"\$x_1", "\u200b_hidden"]  # no mathtext, not dropped from the legend
    y = ax.get_lines()[0].get_ydata()
    assert np.isnan(y).any() and not np.isinf(y).any()
    ax.figure.canvas.draw()


def test_plot_errors_name_what_is_missing(throughput):
    with pytest.raises(KeyError, match="no chosen run logs the tag 'val/loss'; their tags: perf/samples_per_sec"):
        throughput.plot("val/loss")
    with pytest.raises(ValueError, match="smooth must be in"):
        throughput.plot("train/loss", smooth=1.0)


def test_plot_draws_a_step_logged_twice_with_its_last_write():
    from tanalyze.schema import scalar_frame

    # a job restarted from step 1 after logging step 3: steps 2 and 3 written again, with other values
    frame = scalar_frame(run="r", tag=["loss"] * 5, step=[1, 2, 3, 2, 3], value=[1.0, 2.0, 3.0, 20.0, 30.0])
    logs = Logs(scalars=frame, histograms=empty_histograms(), runs=MappingProxyType({"r": RunInfo("r", "x", "r", ())}))
    steps, values = logs.plot("loss", smooth=0).get_lines()[0].get_data()
    assert list(steps) == [1, 2, 3] and list(values) == [1.0, 20.0, 30.0]


def test_run_results_cross_processes_without_empty_tables_and_with_their_histograms():
    specs = {spec.name: spec for spec in discover(SAMPLE_RUNS).runs}
    [plain] = read_run(specs["diverged_tensorboard"])
    again = pickle.loads(pickle.dumps(plain))
    assert not plain.has_histograms and not again.has_histograms
    assert list(again.histograms.columns) == list(HISTOGRAM_COLUMNS) and len(again.histograms) == 0
    assert again.points == plain.points and again.scalars.equals(plain.scalars)
    with_histograms = [r for spec in specs.values() for r in read_run(spec) if r.has_histograms]
    assert with_histograms, "sample_runs has a run with histograms"
    moved = pickle.loads(pickle.dumps(with_histograms[0]))
    assert moved.has_histograms and moved.histograms.equals(with_histograms[0].histograms)


def test_logs_compare_and_hash_by_identity():
    """A Logs holds DataFrames: == must not raise (it is identity), and it can be a dict key or in a set."""
    from tanalyze.logs import Logs
    from tanalyze.schema import empty_histograms, empty_scalars

    a = Logs(scalars=empty_scalars(), histograms=empty_histograms(), runs={})
    b = Logs(scalars=empty_scalars(), histograms=empty_histograms(), runs={})
    assert a == a and a != b
    assert len({a, b, a}) == 2
