import numpy as np
import pytest

from tanalyze.curves import debiased_ema
from tanalyze.report.groups import seed_base, seed_groups
from tanalyze.report.model import RunSource, Series, build_report
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of, three_runs


def test_drawn_smoothing_is_tensorboards_debiased_ema():
    """The report draws with the one EMA helper; checked against TensorBoard's loop, written plainly."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=500)
    values[[3, 40, 41]] = [np.nan, np.inf, -np.inf]
    for weight in (0.0, 0.6, 0.99):
        last, count, expected = 0.0, 0, values.copy()
        for i, v in enumerate(values):
            if np.isfinite(v):
                last, count = last * weight + (1 - weight) * v, count + 1
                expected[i] = last / (1 - weight**count) if weight else v
        ours = debiased_ema(values, weight)
        assert np.array_equal(np.isfinite(ours), np.isfinite(expected))
        np.testing.assert_allclose(ours[np.isfinite(ours)], expected[np.isfinite(expected)], rtol=1e-10)
    with pytest.raises(ValueError, match="smoothing weight"):
        debiased_ema(values, 1.0)


def test_series_stats_use_every_point_and_skip_non_finite():
    s = Series("loss", np.array([0, 10, 20, 30, 40]), np.array([3.0, 0.5, 2.0, 1.0, np.nan]))
    stats = s.stats()
    assert stats == {"tag": "loss", "points": 5, "non_finite": 1, "final": 1.0, "final_step": 30,
                     "best": 0.5, "best_step": 10}
    empty = Series("loss", np.array([1]), np.array([np.nan])).stats()
    assert empty["final"] is None and empty["best"] is None


def test_build_report_reads_roles_and_summarises_full_data():
    logs, diags = three_runs()
    data = build_report(logs, diags, generated_at="2024-01-01T00:00:00Z")
    assert [r.name for r in data.runs] == ["normal-run", "overfitting-run", "diverged-run"]
    assert [r.verdict for r in data.runs] == ["normal", "overfitting", "diverged"]
    normal = data.runs[0]
    steps, values = curves("normal", seed=0)["val/loss"]
    assert normal.summary["val_loss"]["final"] == values[-1]
    assert normal.summary["val_loss"]["best"] == values.min()
    assert normal.summary["val_loss"]["best_step"] == steps[values.argmin()]
    assert normal.summary["throughput"] == {"role": "throughput", "tag": "perf/samples_per_sec", "median": 1201.5,
                                            "unit": "samples/s"}
    assert normal.points == 1500 * 4 + 30
    diverged = data.runs[2]
    assert diverged.summary["train_loss"]["non_finite"] == 5
    assert data.inputs == ("logs",)
    assert data.verdict_counts() == [("diverged", 1), ("overfitting", 1), ("normal", 1)]


def test_missing_diagnosis_keys_are_filled_and_undiagnosed_runs_kept():
    logs, diags = three_runs()
    diags["normal-run"] = {"run": "normal-run", "verdict": {"label": "normal", "confidence": 1.0, "evidence": None}}
    del diags["overfitting-run"]
    data = build_report(logs, diags)
    normal, undiagnosed = data.runs[0], data.runs[1]
    assert normal.diagnosis["findings"] == [] and normal.diagnosis["divergence"] is None
    assert normal.series == {}  # no roles given: nothing to draw, nothing guessed
    assert undiagnosed.verdict == "insufficient_data"
    assert undiagnosed.diagnosis["verdict"]["evidence"] == {"reason": "not diagnosed"}


def test_equal_names_from_two_inputs_are_told_apart():
    frame = frame_for("exp", curves(n=100))
    sources = [RunSource("exp", frame, info("exp"), diagnosis("exp", "normal")) for _ in range(2)]
    data = build_report(sources, input_labels=["a", "b"])
    assert [r.name for r in data.runs] == ["a:exp", "b:exp"]
    assert [r.diagnosis["run"] for r in data.runs] == ["a:exp", "b:exp"]


@pytest.mark.parametrize(
    ("name", "base"),
    [("exp-s1", "exp"), ("exp_seed2", "exp"), ("lr3e-4/seed=3", "lr3e-4"), ("a.b_s10", "a.b"),
     ("exp", None), ("bs_16", None), ("resnet50", None), ("seed1", None), ("version_0", None)],
)
def test_seed_suffixes(name, base):
    assert seed_base(name) == base


def _runs(names_and_hparams):
    runs = {}
    for name, hparams in names_and_hparams:
        runs[name] = (frame_for(name, curves(n=50)), info(name, hparams=hparams))
    return build_report(logs_of(runs), {n: diagnosis(n, "normal") for n in runs}).runs


def test_seed_groups_by_name_and_by_hparams():
    runs = _runs([
        ("big-s1", {}), ("big-s2", {}), ("small", {"lr": 0.1, "seed": 1}), ("small-again", {"lr": 0.1, "seed": 2}),
        ("other", {"lr": 0.2, "seed": 1}), ("alone_seed5", {}),
    ])
    groups = seed_groups(runs)
    assert [(g.label, g.runs, g.reason) for g in groups] == [("big", (1, 2), "name"), ("small", (3, 4), "hparams")]


def test_hparams_without_seed_key_or_only_seed_do_not_group():
    runs = _runs([("a", {"lr": 0.1}), ("b", {"lr": 0.1}), ("c", {"seed": 1}), ("d", {"seed": 2})])
    assert seed_groups(runs) == []
