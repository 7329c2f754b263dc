"""Verdicts on public real runs whose story is known (from their authors or their curves).

The files are simple CSV/console logs; they are turned into the tidy table here
with pandas so that these checks do not depend on any reader.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from tanalyze.diagnose import diagnose_run
from tanalyze.schema import scalar_frame
from tests.conftest import real_log

pytestmark = pytest.mark.real_logs


def csv_run(relative: str, step: str = "epoch") -> pd.DataFrame:
    wide = pd.read_csv(real_log(relative), skipinitialspace=True)
    long = wide.melt(id_vars=[step], var_name="tag").dropna(subset=["value"])
    return scalar_frame(run=relative, tag=long["tag"].to_numpy(), step=long[step].to_numpy(),
                        value=long["value"].to_numpy(dtype=np.float64))


def nanogpt_run(relative: str) -> pd.DataFrame:
    rows = []
    for line in real_log(relative).read_text(errors="replace").splitlines():
        if m := re.match(r"step (\d+): train loss ([\d.]+)(?: BPC)?, val loss ([\d.]+)", line):
            rows += [("train/loss", int(m[1]), float(m[2])), ("val/loss", int(m[1]), float(m[3]))]
        elif m := re.match(r"iter (\d+): loss ([\d.]+)(?: BPC)?, time", line):
            rows.append(("loss", int(m[1]), float(m[2])))
    tags, steps, values = zip(*rows, strict=True)
    return scalar_frame(run=relative, tag=list(tags), step=list(steps), value=list(values))


def test_keras_car_cnn_overfits():
    # The author describes this model as overfitting: val_loss bottoms out near epoch 42 while loss keeps falling.
    d = diagnose_run(csv_run("keras_csvlogger/BurakErguvn__Car-Prediction-CNN-Model/training.log"))
    assert d.roles == {"train_loss": "loss", "val_loss": "val_loss"}
    assert d.verdict.label == "overfitting"
    assert 35 <= d.overfitting.onset_step <= 60 and d.overfitting.gap_trend == "growing"
    assert d.overfitting.train_end < 0.8 * d.overfitting.train_at_onset


def test_resnet18_val_loss_stalls_while_train_falls():
    d = diagnose_run(csv_run("other_csv/ZeroToMax-ZYZ__study_tensorboard/logs/logs_upload/"
                             "04_ResNet18_SGD_20260216-194827/metrics.csv"))
    assert d.verdict.label == "overfitting" and d.overfitting.pattern == "widening_gap"
    lo, hi = d.overfitting.min_window
    assert lo <= 43 <= hi and d.overfitting.val_min == pytest.approx(0.73981, abs=1e-4)


def test_alexnet_still_improving_is_normal():
    d = diagnose_run(csv_run("other_csv/ZeroToMax-ZYZ__study_tensorboard/logs/logs_upload/"
                             "01_AlexNet_SGD_20260128-181343/metrics.csv"))
    assert d.verdict.label == "normal" and d.overfitting is None and d.divergence is None


def test_lightning_probe_that_does_not_learn_is_underfitting():
    d = diagnose_run(csv_run("lightning_metrics_csv/Goreg12345__nlp2-probing-lms/lightning_logs/version_0/metrics.csv",
                             step="step"))
    assert d.roles["train_loss"] == "train_loss"
    assert d.verdict.label == "underfitting"
    assert d.verdict.evidence["start_level"] == pytest.approx(2.347229, abs=1e-5)
    assert "rose" in d.verdict.reasons[0]


def test_keras_emotion_val_spike_at_epoch_1():
    d = diagnose_run(csv_run("keras_csvlogger/Aditya24jar__Emotion-Detection-Resnet50/training.log"))
    [spike] = d.spikes
    assert spike.tag == "val_loss" and spike.onset_step == 1 and spike.end_step == 2
    assert spike.peak_value == pytest.approx(7.41715, abs=1e-4) and spike.magnitude == pytest.approx(7.41715 / 1.44358, rel=1e-3)
    assert any(f.code == "loss_spike" and f.step == 1 for f in d.findings)
    assert d.verdict.label in {"normal", "overfitting"}  # mild: val 1.024 at epoch 10, 1.07-1.13 after


@pytest.mark.parametrize(("run", "onset"), [("run-20240214_195452-kt2awly2", 1250), ("run-20240214_191836-mw8ngzqq", 1750)])
def test_nanogpt_bpc_runs_overfit(run, onset):
    d = diagnose_run(nanogpt_run(f"wandb_local/jackokeefe11__nanoGPT/wandb/{run}/files/output.log"))
    assert d.roles["train_loss"] == "loss" and d.roles["val_loss"] == "val/loss"
    assert d.verdict.label == "overfitting" and d.overfitting.onset_step == onset
    assert d.early_stopping.stop_step is not None and d.early_stopping.best_step == onset
