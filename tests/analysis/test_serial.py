import math

import numpy as np
import pytest

from tanalyze.analysis.serial import (
    autocorrelation_time,
    binary_segmentation,
    block_bootstrap_medians,
    mann_whitney_p,
    min_attainable_p,
    thin,
)


def ar1(n, rho, seed):
    rng = np.random.default_rng(seed)
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


def test_autocorrelation_time_of_white_noise_and_ar1():
    assert autocorrelation_time(np.random.default_rng(0).normal(size=5000)) == pytest.approx(1.0, abs=0.2)
    # AR(1): tau = (1 + rho) / (1 - rho) = 5.67 for rho = 0.7
    assert autocorrelation_time(ar1(20000, 0.7, 1)) == pytest.approx(5.67, rel=0.15)


def test_autocorrelation_time_edge_cases():
    assert autocorrelation_time(np.array([])) == 1.0
    assert autocorrelation_time(np.full(100, 3.0)) == 1.0
    assert autocorrelation_time(np.array([1.0, np.nan, 2.0])) == 1.0


def test_thin_takes_every_stride_th_point_from_mid_stride():
    assert thin(np.arange(10), 3).tolist() == [1, 4, 7]
    assert thin(np.arange(3), 0).tolist() == [0, 1, 2]


def test_binary_segmentation_finds_planted_changes():
    rng = np.random.default_rng(2)
    x = np.r_[np.zeros(300), np.full(200, 1.0), np.full(300, -0.5)] + rng.normal(0, 0.2, 800)
    cuts = binary_segmentation(x, penalty=2 * 0.04 * math.log(800), min_size=5)
    assert cuts == [300, 500]


def test_binary_segmentation_without_change_and_too_short():
    x = np.random.default_rng(3).normal(0, 1, 500)
    assert binary_segmentation(x, penalty=2 * math.log(500) * 2, min_size=5) == []
    assert binary_segmentation(np.arange(5.0), penalty=0.0, min_size=5) == []


def test_min_attainable_p_follows_asv_rule():
    assert min_attainable_p(3, 3) == pytest.approx(2 / 20)
    assert min_attainable_p(0, 10) == 1.0
    assert min_attainable_p(20, 20) < 0.002
    assert min_attainable_p(500_000, 500_000) == 0.0  # no overflow for long runs


def test_mann_whitney_p_on_ties_and_shift():
    assert mann_whitney_p(np.ones(10), np.ones(10)) == 1.0
    assert mann_whitney_p(np.arange(30.0), np.arange(30.0) + 100) < 1e-6
    assert math.isnan(mann_whitney_p(np.array([]), np.ones(3)))


def test_block_bootstrap_is_deterministic_and_centred():
    x = 1 + 0.1 * ar1(3000, 0.5, 4)
    a = block_bootstrap_medians([x], block=4, n_boot=300, seed=1)
    b = block_bootstrap_medians([x], block=4, n_boot=300, seed=1)
    assert np.array_equal(a, b)
    assert np.median(a) == pytest.approx(np.median(x), abs=0.01)
    big = block_bootstrap_medians([np.r_[x, x, x]], block=4, n_boot=50, seed=1, max_points=1000)
    assert big.shape == (50,)
