"""Runs for the parallel, cache and Dask tests: small sweeps written with tensorboardX, and equality checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from tensorboardX import SummaryWriter

from tanalyze.logs import Logs

TAGS = ("train/loss", "val/loss", "train/lr")


def write_events(folder: Path, *, steps: range, seed: int = 0) -> SummaryWriter:
    """Log ``steps`` of a few tags into a new event file in ``folder``; close the writer to finish it."""
    writer = SummaryWriter(str(folder), flush_secs=3600)
    rng = np.random.default_rng(seed)
    for step in steps:
        for i, tag in enumerate(TAGS):
            writer.add_scalar(tag, float(1.0 / (step + 1) + 0.01 * rng.standard_normal() + i), step,
                              walltime=1.7e9 + step)
    writer.flush()
    return writer


def append_events(folder: Path, scratch: Path, *, steps: range, seed: int = 1) -> None:
    """Append to the event file of ``folder`` what a writer logs for ``steps`` (as a running job's file grows)."""
    write_events(scratch, steps=steps, seed=seed).close()
    data = event_file(scratch).read_bytes()
    header = 8 + 4 + int.from_bytes(data[:8], "little") + 4  # the new file's own file-version record
    with open(event_file(folder), "ab") as handle:
        handle.write(data[header:])


def make_sweep(root: Path, runs: int = 10, steps: int = 60) -> Path:
    """``runs`` run folders of one event file each, under ``root/sweep``."""
    for index in range(runs):
        write_events(root / "sweep" / f"lr{index % 3}" / f"run{index:02d}", steps=range(steps), seed=index).close()
    return root / "sweep"


def event_file(folder: Path) -> Path:
    return next(folder.glob("events.out.tfevents.*"))


def assert_same_logs(a: Logs, b: Logs) -> None:
    """Equal tables (values, dtypes, categories and their order) and equal run information."""
    pd.testing.assert_frame_equal(a.scalars, b.scalars, check_categorical=True, check_exact=True)
    pd.testing.assert_frame_equal(a.histograms.reset_index(drop=True), b.histograms.reset_index(drop=True),
                                  check_exact=True)
    assert list(a.runs) == list(b.runs)
    for name in a.runs:
        assert a.runs[name].to_dict() == b.runs[name].to_dict(), name
        assert dict(a.runs[name].text) == dict(b.runs[name].text), name
    assert a.unrecognized == b.unrecognized
