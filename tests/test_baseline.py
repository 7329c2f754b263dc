import json

import numpy as np
import pytest

from tanalyze.baseline import Baseline, summarize_run
from tanalyze.errors import ConfigError
from tanalyze.schema import scalar_frame


def frame():
    steps = np.arange(1, 11)
    return scalar_frame(
        run="r",
        tag=["loss"] * 10 + ["val_loss"] * 10 + ["train_samples_per_second"] * 10,
        step=np.concatenate([steps, steps, steps]),
        value=np.concatenate([1 / steps, [0.9, 0.8, 0.7, 0.65, 0.6, 0.62, 0.64, 0.66, 0.7, np.nan], np.full(10, 100.0)]),
    )


DIAG = {"run": "r", "format": "t", "roles": {"train_loss": "loss", "val_loss": "val_loss",
                                              "throughput": "train_samples_per_second"},
        "verdict": {"label": "overfitting", "confidence": 0.8}}


def test_summary_measures_val_loss_and_non_finite_points():
    s = summarize_run(frame(), DIAG)
    assert s.best_val_loss == 0.6
    assert np.isnan(s.final_val_loss)
    assert s.nonfinite_loss_points == 1 and s.first_nonfinite_step == 10
    assert s.throughput.kind == "samples_per_s" and len(s.throughput.values) == 10


def test_baseline_file_round_trip(tmp_path):
    base = Baseline.from_summaries("runs/base", [summarize_run(frame(), DIAG)])
    path = tmp_path / "baseline.json"
    base.save(path)
    data = json.loads(path.read_text())
    assert data["schema"] == "tanalyze.baseline/1"
    again = Baseline.load(path)
    assert again.runs[0].best_val_loss == 0.6
    assert again.runs[0].throughput.curve().values.tolist() == [100.0] * 10
    assert again.runs[0].diagnosis["verdict"]["label"] == "overfitting"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("not json", "not a readable baseline file"),
        ('{"schema": "tanalyze.report/1", "runs": []}', "not a tanalyze baseline"),
        ('{"schema": "tanalyze.baseline/1", "runs": []}', "holds no runs"),
        ('{"schema": "tanalyze.baseline/1", "runs": [{"format": "x"}]}', "malformed baseline run entry"),
    ],
)
def test_bad_baseline_files_are_named(tmp_path, content, fragment):
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as excinfo:
        Baseline.load(path)
    assert fragment in str(excinfo.value) and "b.json" in str(excinfo.value)
