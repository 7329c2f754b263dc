"""History rows to tidy points: which key is the step, carried steps, histograms, what is skipped."""

from __future__ import annotations

import numpy as np
import pytest

from tanalyze.readers.wandb.history import choose_step_key, history_to_tidy, sparse_from_rows, system_to_tidy


def tidy(rows, declared=None):
    return history_to_tidy(sparse_from_rows(rows), file="dir/h.jsonl", declared_step=declared)


def pairs(history, tag):
    rows = history.scalars[history.scalars["tag"] == tag]
    return list(zip(rows["step"].tolist(), rows["value"].tolist(), strict=True))


@pytest.mark.parametrize(
    ("rows", "declared", "expected"),
    [
        ([{"_step": 0, "global_step": 5, "loss": 1}], None, "global_step"),
        ([{"_step": 0, "epoch": 0.5, "loss": 1}], None, "_step"),
        ([{"_step": 0, "step": 1.5, "loss": 1}, {"_step": 1, "step": 2.5, "loss": 1}], None, "_step"),
        ([{"_step": i, "iter": 0, "loss": 1} for i in range(8)], None, "_step"),  # a constant is no step
        ([{"_step": 0, "my_x": 3, "loss": 1}], "my_x", "my_x"),
        ([{"loss": 1}], None, None),
    ],
)
def test_choose_step_key(rows, declared, expected):
    assert choose_step_key(sparse_from_rows(rows), declared) == expected


def test_rows_without_the_step_key_take_the_last_one_and_earlier_values_are_counted():
    history = tidy([
        {"_step": 0, "warmup": 1.0},
        {"_step": 1, "global_step": 10, "loss": 2.0},
        {"_step": 2, "val": 3.0},
        {"_step": 3, "global_step": 20, "loss": 1.0},
    ])
    assert pairs(history, "loss") == [(10, 2.0), (20, 1.0)]
    assert pairs(history, "val") == [(10, 3.0)]
    assert pairs(history, "warmup") == []
    assert history.warnings[0].count == 1 and "no usable 'global_step'" in history.warnings[0].message


def test_nested_values_histograms_and_skips():
    history = tidy([
        {"_step": 0, "opt": {"lr": 0.1, "name": "adam"}, "grad": {"_type": "histogram", "bins": [0, 1, 2],
                                                                  "values": [3, 1]},
         "img": {"_type": "image-file", "path": "a.png"}, "flag": True},
        {"_step": 1, "opt": {"lr": 0.05}, "grad": {"_type": "histogram", "bins": [0, 1], "values": [1, 2]}},
    ])
    assert pairs(history, "opt.lr") == [(0, 0.1), (1, 0.05)]
    assert pairs(history, "flag") == [(0, 1.0)]
    assert len(history.histograms) == 1
    row = history.histograms.iloc[0]
    assert (row["tag"], row["step"], row["min"], row["max"], row["num"]) == ("grad", 0, 0.0, 2.0, 4.0)
    assert np.array_equal(row["bucket_limits"], [1.0, 2.0]) and np.array_equal(row["bucket_counts"], [3.0, 1.0])
    assert any("2 media/table value(s) skipped" in n for n in history.notes)  # the image and the bad histogram
    assert history.warnings[0].message == "1 non-numeric value(s) skipped: opt.name (1)"


def test_system_samples_step_in_seconds():
    history = system_to_tidy([(100.0, None, {"gpu.0.temp": 50}), (130.4, None, {"gpu.0.temp": 55})],
                             file="x.wandb", start_time=90.0)
    assert pairs(history, "system/gpu.0.temp") == [(10, 50.0), (40, 55.0)]
    assert history.scalars["wall_time"].tolist() == [100.0, 130.4]


def test_steps_that_cannot_be_steps_are_counted_not_crashed_on():
    history = tidy([{"_step": 0, "loss": 1.0}, {"_step": 1e300, "loss": 2.0}, {"_step": float("nan"), "loss": 3.0},
                    {"_step": 3, "loss": 4.0}])
    assert pairs(history, "loss") == [(0, 1.0), (3, 4.0)]  # a NaN step takes the one before: 1e300, unusable
    assert history.warnings[0].count == 2
