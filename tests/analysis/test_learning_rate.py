"""A learning rate of zero to the end of a run."""

from __future__ import annotations

import numpy as np

from tanalyze.analysis.learning_rate import check_learning_rate
from tanalyze.curves import Curve


def _lr(values, start: int = 0, every: int = 100) -> Curve:
    return Curve.from_arrays(np.arange(len(values)) * every + start, values, tag="learning_rate")


def test_a_rate_of_zero_at_every_logged_step_is_a_warning():
    """PaddleDetection's job resumed past its 80 scheduled epochs: 'learning_rate: 0.000000' on all its lines."""
    result = check_learning_rate(_lr([0.0] * 37, start=29480))
    assert result is not None and result.zero_from == 29480 and result.zero_points == 37
    (finding,) = result.findings
    assert finding.code == "lr_zero" and finding.severity == "warning" and finding.step == 29480
    assert "learning_rate is 0 at all 37 logged steps" in finding.message


def test_a_schedule_that_ran_out_before_the_end_is_a_warning_from_where_it_did():
    cosine = list(0.5 * 1e-3 * (1 + np.cos(np.linspace(0, np.pi, 80)))[:-1]) + [0.0] * 21
    result = check_learning_rate(_lr(cosine))
    assert result is not None and result.zero_from == 7900 and result.zero_points == 21
    assert "from step 7900 to the end (21 of 100 logged points)" in result.findings[0].message


def test_a_decay_that_reaches_zero_at_its_last_step_or_a_warm_up_from_zero_is_no_warning():
    linear = list(np.linspace(1e-3, 0.0, 100))  # (HF's linear schedule: 0 at the last step only)
    assert check_learning_rate(_lr(linear)).findings == ()
    warm_up = [0.0, 0.0, 0.0] + list(np.linspace(1e-4, 1e-3, 97))
    assert check_learning_rate(_lr(warm_up)).findings == ()
    assert check_learning_rate(_lr(list(np.linspace(1e-3, 1e-4, 97)) + [0.0] * 3 + [1e-5])).findings == ()
    assert check_learning_rate(_lr([0.0, 0.0])) is None  # too few points to tell
