import numpy as np
import pytest

from tanalyze.curves import (
    Curve,
    bin_medians,
    debiased_ema,
    loss_space,
    mad,
    noise_sigma,
    robust_z,
    theil_sen,
    trailing_median,
)
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


def _ema_loop(values, weight):
    out, last, count = np.empty_like(values), 0.0, 0
    for i, value in enumerate(values):
        if not np.isfinite(value):
            out[i] = value
            continue
        last = last * weight + (1 - weight) * value
        count += 1
        out[i] = last / (1 - weight**count)
    return out


def test_vectorised_ema_equals_the_reference_loop():
    rng = np.random.default_rng(0)
    values = rng.normal(size=500)
    values[[3, 50, 51]] = [np.nan, np.inf, -np.inf]
    for weight in (0.0, 0.3, 0.9, 0.99):
        assert np.allclose(debiased_ema(values, weight), _ema_loop(values, weight), equal_nan=True)
    with pytest.raises(ValueError, match="smoothing weight"):
        debiased_ema(values, 1.0)


def test_mad_and_robust_z():
    values = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    assert mad(values) == 1.0
    z = robust_z(values, 3.0, 1.0)
    assert z[-1] == pytest.approx(97 / 1.4826)


def test_collapse_steps_averages_points_of_one_step_and_keeps_nonfinite():
    curve = Curve.from_arrays([1, 1, 1, 2, 3, 3], [1.0, 2.0, 3.0, 5.0, 1.0, np.nan])
    assert curve.duplicate_steps == 3
    collapsed = curve.collapse_steps()
    assert collapsed.steps.tolist() == [1, 2, 3]
    assert collapsed.values[:2].tolist() == [2.0, 5.0] and np.isnan(collapsed.values[2])
    assert collapsed.duplicate_steps == 0


def test_value_at_is_the_last_point_at_or_before_a_step():
    curve = Curve.from_arrays([10, 20, 30], [1.0, 2.0, 3.0])
    assert curve.value_at(25) == 2.0 and curve.value_at(30) == 3.0 and np.isnan(curve.value_at(5))


def test_noise_sigma_ignores_a_linear_trend():
    rng = np.random.default_rng(1)
    x = np.arange(5000.0)
    noisy = 100 - 0.01 * x + rng.normal(0, 0.5, x.size)
    assert noise_sigma(noisy) == pytest.approx(0.5, rel=0.1)
    assert noise_sigma(100 - 0.01 * x) == pytest.approx(0.0, abs=1e-9)
    assert np.isnan(noise_sigma(np.array([1.0, 2.0, 3.0])))


def test_theil_sen_resists_outliers():
    x = np.arange(20.0)
    y = 2 * x + 1
    y[[3, 7]] = 1000
    slope, intercept = theil_sen(x, y)
    assert slope == pytest.approx(2.0) and intercept == pytest.approx(1.0)
    assert np.isnan(theil_sen(np.array([1.0, 1.0]), np.array([1.0, 2.0]))[0])


def test_bin_medians_uses_every_point_in_equal_groups():
    x = np.arange(10.0)
    bx, by = bin_medians(x, x * 10, 3)
    assert bx.tolist() == [1.0, 4.5, 8.0]  # groups 0-2, 3-6, 7-9
    assert by.tolist() == [10.0, 45.0, 80.0]
    assert bin_medians(x, x, 50)[0].tolist() == x.tolist()


def test_trailing_median_excludes_the_current_point():
    values = np.array([1.0, 1.0, 1.0, 1.0, 9.0, 1.0])
    out = trailing_median(values, 3)
    assert np.isnan(out[0])
    assert out[4] == 1.0  # the spike is not part of its own reference
    assert out[5] == 1.0


def test_loss_space_takes_logs_only_of_positive_curves():
    y, is_log = loss_space(np.array([1.0, np.e, np.nan]))
    assert is_log and y[1] == pytest.approx(1.0)
    y, is_log = loss_space(np.array([-3.0, -1.0, 2.0]))
    assert not is_log and y.tolist() == [-3.0, -1.0, 2.0]


def test_segment_medians_in_one_sort():
    from tanalyze.curves import segment_medians

    values = np.array([5.0, 1, 3, 2, 8, 7, 6, 4])
    out = segment_medians(values, np.array([0, 3, 3, 6]), np.array([3, 3, 6, 8]))
    assert out[0] == 3 and np.isnan(out[1]) and out[2] == 7 and out[3] == 5
    rng = np.random.default_rng(0)
    values = rng.normal(size=1000)
    edges = np.sort(rng.choice(1000, 30, replace=False))
    starts, ends = edges[:-1], edges[1:]
    expected = [np.median(values[a:b]) for a, b in zip(starts, ends, strict=True)]
    assert np.allclose(segment_medians(values, starts, ends), expected)


def test_segment_medians_of_very_uneven_segments():
    from tanalyze.curves import segment_medians

    values = np.random.default_rng(1).normal(size=6000)
    starts, ends = np.array([0, 10, 5000]), np.array([10, 5000, 5003])
    expected = [np.median(values[a:b]) for a, b in zip(starts, ends, strict=True)]
    assert np.allclose(segment_medians(values, starts, ends), expected)
