"""Small, fully known inputs for report tests: tidy tables built with ``scalar_frame`` and
diagnoses of the documented ``RunDiagnosis.to_dict()`` shape."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.logs import Logs, RunInfo
from tanalyze.readers import ReadWarning, Restart
from tanalyze.schema import concat_frames, empty_histograms, scalar_frame

ROLES = {
    "train_loss": "train/loss",
    "val_loss": "val/loss",
    "learning_rate": "train/lr",
    "grad_norm": "train/grad_norm",
    "throughput": "perf/samples_per_sec",
}


def curves(kind: str = "normal", n: int = 1500, seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Curves of one run by tag: exponential decay plus noise, shaped by ``kind``."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n, dtype=np.int64) * 10
    span = float(steps[-1])
    train = 2.5 * np.exp(-steps / (span / 4)) + 0.3 + rng.normal(0, 0.03, n)
    val_steps = steps[::50]
    val = 2.5 * np.exp(-val_steps / (span / 4)) + 0.35 + rng.normal(0, 0.005, len(val_steps))
    if kind == "overfitting":
        val = val + np.maximum(0, val_steps - 0.4 * span) / span * 1.5
    if kind == "diverged":
        cut = int(0.7 * n)
        train[cut:] = np.geomspace(1.0, 1e4, n - cut)
        train[-5:] = np.nan
    lr = 1e-3 * np.minimum(1.0, (steps + 10) / 2000) * np.cos(np.pi * steps / span / 2.1)
    grad = np.abs(rng.normal(1.0, 0.2, n))
    speed = 1200 + rng.normal(0, 20, n)
    return {
        ROLES["train_loss"]: (steps, train),
        ROLES["val_loss"]: (val_steps, val),
        ROLES["learning_rate"]: (steps, lr),
        ROLES["grad_norm"]: (steps, grad),
        ROLES["throughput"]: (steps, speed),
    }


def frame_for(run: str, by_tag: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    return concat_frames([scalar_frame(run=run, tag=[tag] * len(s), step=s, value=v) for tag, (s, v) in by_tag.items()])


def diagnosis(run: str, label: str, roles: Mapping[str, str] = ROLES, **extra: Any) -> dict[str, Any]:
    """A diagnosis dict of the documented shape; markers at known steps."""
    d: dict[str, Any] = {
        "run": run,
        "format": "tensorboard",
        "roles": dict(roles),
        "verdict": {"label": label, "confidence": 0.8, "evidence": {"train_trend": -0.4, "points": 1500},
                    "reasons": [f"judged {label} from the loss curves"]},
        "overfitting": {"onset_step": 6000, "gap_increase": 0.5} if label == "overfitting" else None,
        "divergence": {"step": 10500, "kind": "explosion", "onset_step": 10400,
                       "restart": {"resume_at_or_before_step": 10000, "text": "resume at or before step 10000"}}
        if label == "diverged" else None,
        "spikes": [{"step": 5000, "onset_step": 4990, "peak_step": 5000, "peak_value": 1.9, "z": 9.0}],
        "early_stopping": {"best_step": 6000, "stop_step": 7500, "patience": 3},
        "gradients": {"tag": roles.get("grad_norm"), "healthy_band": [0.2, 3.0], "median": 1.0, "max_norm": None,
                      "explosions": [{"step": 7000, "step_end": 7010, "value": 2.9, "ratio": 3.0}], "collapses": []},
        "throughput": {"tag": roles.get("throughput"), "kind": "samples_per_s", "unit": "samples/s",
                       "higher_is_better": True, "steady_median": 1201.5, "warmup_end_step": 200,
                       "stalls": [{"step": 3000, "value": 600.0, "times_median": 2.0}],
                       "change_points": [{"step": 9000, "before": 1201.5, "after": 1190.0}]},
        "findings": [],
        "warnings": [],
    }
    if label == "overfitting":
        d["findings"].append({"code": "overfitting", "severity": "warning", "step": 6000,
                              "message": "validation loss rose 45% after step 6,000 while training loss fell",
                              "recommendation": "Keep the checkpoint of step 6,000."})
    if label == "diverged":
        d["findings"].append({"code": "diverged_nonfinite", "severity": "error", "step": 10500,
                              "message": "loss exploded from 1.0 to 1e4 and became NaN at step 14,950",
                              "recommendation": "Resume earlier with a lower learning rate."})
    d.update(extra)
    return d


def info(name: str, **fields: Any) -> RunInfo:
    defaults: dict[str, Any] = {
        "format": "tensorboard",
        "directory": f"logs/{name}",
        "files": (f"logs/{name}/events.out.tfevents.1",),
        "hparams": {"lr": 1e-3, "model": {"depth": 12, "width": 512}},
    }
    defaults.update(fields)
    defaults["hparams"] = MappingProxyType(dict(defaults["hparams"]))
    return RunInfo(name=name, **defaults)


def logs_of(runs: Mapping[str, tuple[pd.DataFrame, RunInfo]], root: str = "logs") -> Logs:
    frames = [frame for frame, _ in runs.values()]
    return Logs(
        scalars=concat_frames(frames),
        histograms=empty_histograms(),
        runs=MappingProxyType({name: i for name, (_, i) in runs.items()}),
        root=root,
    )


def three_runs() -> tuple[Logs, dict[str, dict[str, Any]]]:
    """A normal, an overfitting and a diverged run, with a parse warning, a restart and a note on the last."""
    runs = {}
    diags = {}
    for i, kind in enumerate(("normal", "overfitting", "diverged")):
        name = f"{kind}-run"
        extra = {}
        if kind == "diverged":
            extra = {"warnings": (ReadWarning("logs/diverged-run/events", "truncated record", "byte 120", 2),),
                     "restarts": (Restart(4000, "events.2", "resumed from checkpoint"),), "notes": ("two files",)}
        runs[name] = (frame_for(name, curves(kind, seed=i)), info(name, hparams={"lr": 10.0 ** -(i + 2)}, **extra))
        diags[name] = diagnosis(name, kind)
    return logs_of(runs), diags
