import numpy as np
import pytest

from tanalyze.datasets import KINDS, curves_of, make_curve, make_logs
from tanalyze.schema import SCALAR_COLUMNS


@pytest.mark.parametrize("kind", KINDS)
def test_frame_shape_and_determinism(kind):
    frame, truth = make_curve(kind, n_steps=400, seed=7, first_step=1000)
    again, _ = make_curve(kind, n_steps=400, seed=7, first_step=1000)
    assert list(frame.columns[:5]) == list(SCALAR_COLUMNS) and "epoch" in frame.columns
    assert frame.equals(again)
    assert set(frame["tag"].unique()) == {"train/loss", "val/loss", "train/learning_rate", "train/grad_norm"}
    assert frame["step"].min() == 1000 and truth.first_step == 1000
    assert truth.kind == kind


def test_truths_are_consistent_with_the_curves():
    curves, truth = make_curve("diverged", n_steps=1000, seed=0, output="curves")
    loss = curves["train/loss"]
    first_bad = loss.steps[~np.isfinite(loss.values)][0]
    assert first_bad == truth.divergence_step and truth.explosion_onset < truth.divergence_step
    curves, truth = make_curve("overfitting", n_steps=1000, seed=0, output="curves")
    lo, hi = truth.val_min_window
    assert lo <= truth.val_min_step <= hi and truth.val_min_step in curves["val/loss"].steps
    _, truth = make_curve("normal", n_steps=1000, spikes=3)
    assert len(truth.spike_steps) == 3


def test_make_logs_builds_one_run_per_kind():
    logs, truths = make_logs(n_steps=200)
    assert list(logs.runs) == [f"{k}-{i}" for i, k in enumerate(KINDS)] == list(truths)
    assert set(logs.scalars["run"].unique()) == set(logs.runs)
    assert curves_of(logs.scalars_of("normal-0"))["train/loss"].steps.size == 200


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown kind 'exploding'"):
        make_curve("exploding")
    with pytest.raises(ValueError, match="n_steps must be at least 4"):
        make_curve("normal", n_steps=2)
    with pytest.raises(ValueError, match="output must be"):
        make_curve("normal", output="dict")
