"""Small helpers shared by the structured-log reader tests."""

from __future__ import annotations

import math

import pandas as pd

from tanalyze.logs import Logs


def curve(frame: pd.DataFrame, tag: str) -> pd.Series:
    """One tag's values indexed by step (fails loudly on duplicate steps)."""
    rows = frame[frame["tag"] == tag]
    series = pd.Series(rows["value"].to_numpy(), index=rows["step"].to_numpy(), name=tag)
    assert series.index.is_unique, f"{tag} has duplicate steps"
    return series


def epoch_at(frame: pd.DataFrame, tag: str, step: int) -> float:
    rows = frame[(frame["tag"] == tag) & (frame["step"] == step)]
    assert len(rows) == 1
    return float(rows["epoch"].iloc[0])


def only_run(logs: Logs):
    """The single run of a load, with its scalar rows."""
    assert len(logs.runs) == 1, list(logs.runs)
    (name, info), = logs.runs.items()
    return name, info, logs.scalars_of(name)


def check_points(series: pd.Series, expected: dict[int, float], count: int) -> None:
    """Exact values at known steps and the number of points."""
    assert len(series) == count
    for step, value in expected.items():
        got = series.loc[step]
        assert (math.isnan(got) and math.isnan(value)) or got == value, (series.name, step, got, value)
