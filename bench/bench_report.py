"""Bench: the whole report (read + diagnose + render) of 50 runs x 20,000 scalars vs tbparse reading them.

Target: the report takes less than a quarter of the time tbparse alone needs to
read the same event files, both measured in this run on this machine.

    python bench/bench_report.py                 # writes bench/_data/ once (tensorboardX), then measures
    python bench/bench_report.py --runs 10       # smaller, for a quick look

The event files go to bench/_data/ (git-ignored); the report to bench/out/.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import shutil
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

TAGS_PER_STEP = ("train/loss", "train/lr", "train/grad_norm", "perf/samples_per_sec")
VAL_EVERY = 25
KINDS = ("normal", "overfitting", "diverged", "unstable", "normal")


def _curves(kind: str, steps: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    span = float(steps[-1])
    loss = 2.5 * np.exp(-steps / (span / 4)) + 0.3 + rng.normal(0, 0.03, steps.size)
    val = 2.5 * np.exp(-steps / (span / 4)) + 0.35 + rng.normal(0, 0.005, steps.size)
    if kind == "overfitting":
        val += np.maximum(0, steps - 0.4 * span) / span * 1.5
    if kind == "diverged":
        cut = int(0.75 * steps.size)
        loss[cut:] = np.geomspace(1.0, 1e6, steps.size - cut)
        loss[-10:] = np.nan
    if kind == "unstable":
        loss *= np.exp(rng.normal(0, 0.4, steps.size))
    return {
        "train/loss": loss,
        "val/loss": val,
        "train/lr": 1e-3 * np.minimum(1.0, (steps + 1) / 500) * np.cos(np.pi * steps / span / 2.1),
        "train/grad_norm": np.abs(rng.normal(1.0, 0.2, steps.size)),
        "perf/samples_per_sec": 1200 + rng.normal(0, 20, steps.size),
    }


def _write_run(writer, steps: np.ndarray, curves: dict[str, np.ndarray], scalars: int) -> None:
    written = 0
    for j, step in enumerate(steps):
        for tag in TAGS_PER_STEP:
            writer.add_scalar(tag, float(curves[tag][j]), int(step), walltime=1.7e9 + j)
            written += 1
        if j % VAL_EVERY == 0:
            writer.add_scalar("val/loss", float(curves["val/loss"][j]), int(step), walltime=1.7e9 + j)
            written += 1
    while written < scalars:  # top up to exactly ``scalars`` points
        writer.add_scalar("train/loss", float(curves["train/loss"][-1]), int(steps[-1]) + 10 * (scalars - written))
        written += 1


def write_data(root: Path, runs: int, scalars: int) -> None:
    """``runs`` folders of one tensorboardX event file each, ``scalars`` points per run."""
    from tensorboardX import SummaryWriter

    per_step = len(TAGS_PER_STEP) + 1 / VAL_EVERY
    n_steps = int(scalars / per_step)
    for i in range(runs):
        kind = KINDS[i % len(KINDS)]
        rng = np.random.default_rng(i)
        steps = np.arange(n_steps) * 10
        curves = _curves(kind, steps, rng)
        writer = SummaryWriter(str(root / f"{kind}-{i:03d}"), flush_secs=3600, max_queue=10_000)
        with contextlib.redirect_stdout(io.StringIO()):  # tensorboardX prints a line per NaN
            _write_run(writer, steps, curves, scalars)
        writer.close()
        print(f"\r  wrote {i + 1}/{runs} runs", end="", flush=True)
    print()


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the report's worker processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def time_tbparse(root: Path) -> tuple[float, float, int]:
    from tbparse import SummaryReader

    start, cpu = time.perf_counter(), _cpu()
    frame = SummaryReader(str(root), pivot=False, extra_columns={"dir_name", "wall_time"}).scalars
    return time.perf_counter() - start, _cpu() - cpu, len(frame)


def time_report(root: Path, out: Path, jobs: int | None) -> dict[str, float]:
    """What ``tanalyze report ROOT -o ... --json ...`` does, timed in its two phases."""
    from tanalyze.report import report_paths, write_report

    times: dict[str, float] = {}
    start, cpu = time.perf_counter(), _cpu()
    data = report_paths([root], jobs=jobs)
    times["read+diagnose+draw runs"] = time.perf_counter() - start
    mark = time.perf_counter()
    sizes = write_report(data, out / "report.html", out / "report.json", jobs=jobs)
    times["compare+page+write"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - start
    times["cpu"] = _cpu() - cpu
    times["points"] = float(sum(run.points for run in data.runs))
    times["runs"] = float(len(data.runs))
    times["html_mb"] = sizes["html"] / 1e6
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--scalars", type=int, default=20_000, help="scalar points per run")
    parser.add_argument("--regenerate", action="store_true", help="write the event files again")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: automatic, as the CLI)")
    args = parser.parse_args()

    root = HERE / "_data" / f"report_{args.runs}x{args.scalars}"
    out = HERE / "out"
    out.mkdir(parents=True, exist_ok=True)
    if args.regenerate and root.exists():
        shutil.rmtree(root)
    if not root.exists():
        print(f"writing {args.runs} runs x {args.scalars:,} scalars with tensorboardX to {root.relative_to(HERE.parent)}")
        write_data(root, args.runs, args.scalars)

    from tanalyze.report.parallel import default_workers

    ours = time_report(root, out, args.jobs)
    anchor, anchor_cpu, anchor_rows = time_tbparse(root)

    print(f"input: {int(ours['runs'])} runs, {int(ours['points']):,} scalar points (tbparse read {anchor_rows:,})")
    print(f"tbparse read:            {anchor:8.2f} s   (anchor; {anchor_cpu:.2f} s CPU)")
    jobs = args.jobs if args.jobs is not None else default_workers()
    for key in ("read+diagnose+draw runs", "compare+page+write"):
        print(f"  {key:<23} {ours[key]:8.2f} s   ({jobs} worker process(es))")
    print(f"tanalyze report total:   {ours['total']:8.2f} s   ({ours['cpu']:.2f} s CPU in all processes)"
          f" -> {ours['html_mb']:.1f} MB HTML in {out.relative_to(HERE.parent)}")
    print(f"CPU-time ratio:          {ours['cpu'] / anchor_cpu:8.3f}     (what the machine's other load does not change)")
    ratio = ours["total"] / anchor
    verdict = "OK" if ratio < 0.25 else "TOO SLOW"
    print(f"ratio report/tbparse:    {ratio:8.3f}     (target < 0.25: {verdict})")
    return 0 if ratio < 0.25 else 1


if __name__ == "__main__":
    sys.exit(main())
