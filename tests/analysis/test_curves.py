import numpy as np
import pytest

from tanalyze.analysis.curves import Curve, debiased_ema, mad, robust_z
from tanalyze.schema import scalar_frame


def test_curve_from_frame_sorts_by_step_and_keeps_nan():
    frame = scalar_frame(
        run="r", tag=["loss", "lr", "loss", "loss"], step=[2, 1, 1, 3], value=[0.5, 1e-3, 0.9, np.nan]
    )
    curve = Curve.from_frame(frame, "loss")
    assert curve.steps.tolist() == [1, 2, 3]
    assert curve.values[:2].tolist() == [0.9, 0.5] and np.isnan(curve.values[2])
    assert len(curve.finite_part()) == 2


def test_from_arrays_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="differ in length"):
        Curve.from_arrays([1, 2], [1.0])


def test_debiased_ema_matches_tensorboard_first_point_and_skips_nan():
    out = debiased_ema(np.array([1.0, np.nan, 3.0]), weight=0.5)
    assert out[0] == pytest.approx(1.0)  # debiasing makes the first point exact
    assert np.isnan(out[1])
    assert out[2] == pytest.approx((0.5 * 0.5 * 1 + 0.5 * 3) / (1 - 0.25))


def test_mad_and_robust_z():
    values = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    assert mad(values) == 1.0
    z = robust_z(values, 3.0, 1.0)
    assert z[-1] == pytest.approx(97 / 1.4826)
