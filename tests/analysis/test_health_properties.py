"""Property tests: the health analyzers never raise on odd data and always return JSON-ready results."""

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanalyze.analysis.gradients import analyze_gradients
from tanalyze.analysis.resources import analyze_resources
from tanalyze.analysis.throughput import analyze_throughput, compare_throughput
from tanalyze.curves import Curve

values = st.lists(
    st.one_of(
        st.floats(min_value=-1e3, max_value=1e6, allow_nan=False),
        st.sampled_from([np.nan, np.inf, -np.inf, 0.0]),
    ),
    max_size=80,
)
steps_mode = st.sampled_from(["dense", "sparse", "repeated"])


def make_curve(vals, mode):
    n = len(vals)
    steps = {"dense": np.arange(n), "sparse": np.arange(n) * 7 + 3, "repeated": np.arange(n) // 2}[mode]
    return Curve.from_arrays(steps, vals, tag="x", wall_time=1e9 + np.arange(n) * 0.5)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(values, steps_mode, st.sampled_from(["samples_per_s", "step_time_ms", "wall_time"]))
def test_analyze_throughput_total(vals, mode, kind):
    r = analyze_throughput(make_curve(vals, mode), kind=kind)
    json.dumps(r.to_dict())
    assert r.n_points + r.n_invalid <= max(len(vals), 1)


@SETTINGS
@given(values, values, steps_mode)
def test_compare_throughput_total(a, b, mode):
    c = compare_throughput(make_curve(a, mode), make_curve(b, mode), kind="step_time_s")
    json.dumps(c.to_dict())
    assert c.verdict in {"regression", "improvement", "no_change", "inconclusive"}


@SETTINGS
@given(values, steps_mode)
def test_analyze_gradients_total(vals, mode):
    c = make_curve(vals, mode)
    r = analyze_gradients(c, max_norm=1.0, loss_scale=c, skipped=c)
    json.dumps(r.to_dict())
    assert r.n_points == len(vals)


@SETTINGS
@given(values, steps_mode)
def test_analyze_resources_total(vals, mode):
    c = make_curve(vals, mode)
    r = analyze_resources(
        gpu_memory=c, capacity_bytes=1e6, attention_entropy=[c], step_time_by_rank={0: c, 1: c}
    )
    json.dumps(r.to_dict())
