"""Is diagnosing runs cheaper than reading them? Both measured in the same run.

Writes ``runs`` synthetic TensorBoard runs of ``points`` training steps each
with tensorboardX into ``bench/_data/`` (once; delete it to regenerate): the
training loss, gradient norm and learning rate every step, the validation loss
every 1 % of the run. Then times

* reading them: ``tanalyze.load`` when a registered reader claims the files,
  else tbparse (what users would otherwise do);
* ``tanalyze.diagnose`` on what was read (every point, every analyzer);

after a warm-up on one run (imports are paid once per process), best of 3,
and prints both, their ratio, and the time per run and per million points.

Run on demand: ``python bench/bench_analysis.py [runs] [points] [repeat]`` (defaults 100, 10,000, 3).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import tanalyze
from tanalyze.datasets import KINDS, make_curve
from tanalyze.errors import NoLogsError
from tanalyze.logs import Logs, RunInfo
from tanalyze.schema import concat_frames, empty_histograms, scalar_frame

DATA = Path(__file__).resolve().parent / "_data"


def write_runs(root: Path, runs: int, points: int) -> None:
    from tensorboardX import SummaryWriter

    for i in range(runs):
        folder = root / f"run-{i:03d}"
        if folder.exists():
            continue
        kind = KINDS[i % len(KINDS)]
        frame, _ = make_curve(kind, n_steps=points, seed=i, eval_every=max(1, points // 100))
        writer = SummaryWriter(logdir=str(folder), flush_secs=3600)
        for row in frame.itertuples(index=False):
            writer.add_scalar(str(row.tag), float(row.value), int(row.step), walltime=float(row.wall_time))
        writer.close()


def read_with_tbparse(root: Path) -> Logs:
    from tbparse import SummaryReader

    frames, infos = [], {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = SummaryReader(str(folder), pivot=False, extra_columns={"wall_time"}).scalars
        name = folder.name
        frames.append(scalar_frame(run=name, tag=df["tag"].astype(str).to_numpy(), step=df["step"].to_numpy(),
                                   value=df["value"].to_numpy(dtype=np.float64),
                                   wall_time=df["wall_time"].to_numpy(dtype=np.float64)))
        infos[name] = RunInfo(name=name, format="tensorboard (tbparse)", directory=str(folder), files=())
    return Logs(scalars=concat_frames(frames), histograms=empty_histograms(), runs=infos, root=str(root))


def main(runs: int = 100, points: int = 10_000, repeat: int = 3) -> None:
    root = DATA / f"analysis_{runs}x{points}"
    root.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    write_runs(root, runs, points)
    print(f"data: {root} ({time.perf_counter() - start:.1f} s to make or find)")

    # Warm up both sides on one run (module imports are paid once per process, not per run).
    try:
        tanalyze.diagnose(tanalyze.load(root / "run-000"))
    except NoLogsError:
        pass

    read_s = diagnose_s = float("inf")
    for _ in range(repeat):  # best of `repeat`: the machine is shared, the minimum is the least disturbed
        start = time.perf_counter()
        try:
            logs = tanalyze.load(root)
            reader = "tanalyze.load"
            if len(logs.scalars) == 0:
                raise NoLogsError("nothing read")
        except NoLogsError:
            logs = read_with_tbparse(root)
            reader = "tbparse (no registered reader claims these files yet)"
        read_s = min(read_s, time.perf_counter() - start)
        n_points = len(logs.scalars)

        start = time.perf_counter()
        diagnoses = tanalyze.diagnose(logs)
        diagnose_s = min(diagnose_s, time.perf_counter() - start)
        if reader.startswith("tbparse"):
            break  # tbparse takes minutes: once is enough

    labels = pd.Series([d.verdict.label for d in diagnoses.values()]).value_counts().to_dict()
    print(f"{len(logs.runs)} runs, {n_points:,} points ({n_points / max(len(logs.runs), 1):,.0f} per run)")
    print(f"read     {read_s:8.2f} s  with {reader}")
    print(f"diagnose {diagnose_s:8.2f} s  = {1e3 * diagnose_s / max(len(diagnoses), 1):.1f} ms per run, "
          f"{diagnose_s / max(n_points, 1) * 1e6:.2f} s per million points")
    print(f"diagnose / read = {diagnose_s / read_s:.3f}  ({'faster' if diagnose_s < read_s else 'SLOWER'} than reading)")
    print(f"verdicts: {labels}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    main(*args)
