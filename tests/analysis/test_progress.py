import numpy as np
import pytest

from tanalyze.analysis.progress import analyze_progress
from tanalyze.curves import Curve


def test_relative_decrease_per_epoch_is_exact():
    steps = np.arange(40)
    levels = [2.0, 1.0, 0.9, 0.89]  # -50 %, -10 %, -1.1 %
    loss = np.repeat(levels, 10)
    epochs = Curve.from_arrays(steps, steps / 10, "epoch")
    result = analyze_progress(Curve.from_arrays(steps, loss, "loss"), epochs=epochs)
    assert result.by == "epoch"
    assert [w.epoch for w in result.windows] == [0, 1, 2, 3]
    assert [w.change_rel for w in result.windows][1:] == pytest.approx([-0.5, -0.1, 0.89 / 0.9 - 1])
    assert result.total_change_rel == pytest.approx(0.89 / 2 - 1)


def test_plateau_in_the_middle_is_found_and_reported():
    loss = np.concatenate([np.linspace(3, 2, 300), np.full(400, 2.0), np.linspace(2, 1, 300)])
    result = analyze_progress(Curve.from_arrays(np.arange(1000) + 500, loss, "loss"), windows=10)
    [plateau] = result.plateaus
    assert plateau.start_step == 800 and plateau.end_step == 1199 and not plateau.at_end
    assert result.first_plateau_step == 800
    [finding] = result.findings
    assert finding.code == "plateau" and "stalled from step 800 to 1199" in finding.message


def test_epochs_running_backwards_fall_back_to_windows():
    steps = np.arange(100)
    epochs = Curve.from_arrays(steps, np.concatenate([np.arange(50) / 10, np.arange(50) / 10]), "epoch")
    result = analyze_progress(Curve.from_arrays(steps, np.linspace(2, 1, 100), "loss"), epochs=epochs)
    assert result.by == "window" and "backwards" in result.note


def test_converged_run_has_a_plateau_at_the_end():
    t = np.linspace(0, 1, 500)
    result = analyze_progress(Curve.from_arrays(np.arange(500), 0.3 + 2 * np.exp(-t / 0.05), "loss"))
    assert result.plateaus and result.plateaus[-1].at_end
    assert result.findings and "flat since step" in result.findings[0].message


def test_short_and_missing_curves():
    assert analyze_progress(None).by == "none"
    assert "only 3" in analyze_progress(Curve.from_arrays([1, 2, 3], [3.0, 2.0, 1.0], "loss")).note


def test_a_slow_steady_fall_over_many_epochs_is_progress_not_one_long_plateau():
    # 270 epochs, each about 0.04 % below the one before (a cosine tail): 11 % in all, never a whole-run plateau
    epochs = np.arange(270)
    loss = 1.739 * np.exp(-0.11 * epochs / 269)
    result = analyze_progress(Curve.from_arrays(epochs, loss, "train_loss"),
                              epochs=Curve.from_arrays(epochs, epochs.astype(float), "epoch"))
    assert result.total_change_rel == pytest.approx(-0.104, abs=0.001)
    assert result.plateaus and all(p.length_steps < 0.3 * 269 for p in result.plateaus)
    for plateau in result.plateaus:  # each stays within 3 % of the level before it
        before = next(w.level for w in result.windows if w.start_step == plateau.start_step)
        inside = [w.level for w in result.windows if plateau.start_step < w.start_step <= plateau.end_step]
        assert min(inside) > 0.97 * before
    assert not any("flat since step 0 " in f.message or "100% of the run" in f.message for f in result.findings)


def test_a_plateau_begins_where_the_loss_reached_its_level_not_where_its_window_begins():
    """25 epochs: the loss falls from 1.79 to 1.04 in two epochs, then stays near 1.0. The first window (epochs 0-7)
    holds that fall; the plateau began at epoch 2, not 0 (it said 'flat since step 0, 100% of the run')."""
    values = [1.794, 1.158, 1.042, 1.015, 1.011, 1.008, 1.006, 1.005] + [1.004 - 0.0001 * k for k in range(17)]
    result = analyze_progress(Curve.from_arrays(np.arange(25), values, "train_loss"))
    [plateau] = result.plateaus
    assert plateau.start_step == 2 and plateau.at_end
    [finding] = result.findings
    assert finding.message.startswith("train_loss has been flat since step 2 (")
