"""Thousands of runs: serial vs process pool vs Dask, cold vs warm cache, re-read after appends, peak memory.

    python bench/bench_scale.py                  # 2,000 runs x 5,000 scalars (generated once into bench/_data/)
    python bench/bench_scale.py --runs 200       # a quicker look
    python bench/bench_scale.py --repeat 3       # best and spread of 3 measurements each
    python bench/bench_scale.py --runs 200 --steps 10000 --skip dask --skip report   # fewer, longer runs
    python bench/bench_scale.py --skip report-only   # only the report through the cache: cold, warm, one run grew

Runs are written with tensorboardX: a few distinct runs (normal, overfitting,
diverging, noisy …), each copied to make up the number asked (parsing cost
depends on the bytes, not on the values). Every figure is measured in the same
invocation, so ratios compare like with like on a shared machine. Each
measurement runs in a fresh child process (its peak RSS, children included, is
read from the OS), with its own cache folder where the cache matters.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data" / "scale"
STEPS = 1000  # x 5 tags = 5,000 scalars per run (--steps)
TAGS = ("train/loss", "val/loss", "train/lr", "train/grad_norm", "perf/samples_per_sec")
TEMPLATES = 20


def _curves(kind: int, steps: np.ndarray, total: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    t = steps / total
    train = 2.5 * np.exp(-3 * t) + 0.3 + 0.05 * rng.standard_normal(len(t))
    val = 2.5 * np.exp(-3 * t) + 0.35 + 0.03 * rng.standard_normal(len(t))
    if kind % 4 == 1:  # overfitting
        val = val + 0.8 * np.clip(t - 0.4, 0, None)
    elif kind % 4 == 2:  # diverging
        train = np.where(t > 0.7, train * np.exp(12 * (t - 0.7)), train)
    elif kind % 4 == 3:  # noisy
        train = train + 0.4 * np.abs(rng.standard_normal(len(t)))
    return {
        "train/loss": train, "val/loss": val, "train/lr": 3e-4 * np.minimum(1, steps / 100) * (1 - 0.9 * t),
        "train/grad_norm": 1 + 0.2 * rng.standard_normal(len(t)) ** 2,
        "perf/samples_per_sec": 900 + 30 * rng.standard_normal(len(t)),
    }


def _write(folder: Path, kind: int, first: int, count: int, total: int) -> Path:
    from tensorboardX import SummaryWriter

    rng = np.random.default_rng(kind * 1000 + first)
    steps = np.arange(first, first + count)
    curves = _curves(kind, steps, total, rng)
    writer = SummaryWriter(str(folder), flush_secs=3600)
    for i, step in enumerate(steps.tolist()):
        for tag in TAGS:
            writer.add_scalar(tag, float(curves[tag][i]), step, walltime=1.7e9 + step)
    writer.close()
    return next(folder.glob("events.out.tfevents.*"))


def _records_after_header(path: Path) -> bytes:
    """An event file's bytes without its first record (the file-version header)."""
    data = path.read_bytes()
    first = 8 + 4 + int.from_bytes(data[:8], "little") + 4
    return data[first:]


def _templates(steps: int) -> Path:
    return DATA / ("_templates" if steps == STEPS else f"_templates-{steps}")


def generate(runs: int, steps: int = STEPS) -> Path:
    """``runs`` run folders under bench/_data/scale/<runs>[-<steps>]/ (reused when complete) and the 1% appendix."""
    root = DATA / (str(runs) if steps == STEPS else f"{runs}-{steps}")
    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    templates = _templates(steps)
    if not (templates / ".complete").exists():
        shutil.rmtree(templates, ignore_errors=True)
        for kind in range(TEMPLATES):
            path = _write(templates / f"t{kind:02d}", kind, 0, steps, steps)
            tail = _write(templates / f"t{kind:02d}-more", kind, steps, steps // 100, steps)  # 1% more steps
            (templates / f"t{kind:02d}.append").write_bytes(_records_after_header(tail))
            shutil.rmtree(tail.parent)
            path.rename(path.with_name("events.out.tfevents.1700000000.bench.1.0"))
        (templates / ".complete").write_text("ok")
    for index in range(runs):
        kind = index % TEMPLATES
        target = root / f"sweep/lr{index % 7}/run{index:05d}"
        target.mkdir(parents=True)
        shutil.copyfile(templates / f"t{kind:02d}" / "events.out.tfevents.1700000000.bench.1.0",
                        target / "events.out.tfevents.1700000000.bench.1.0")
    done.write_text("ok")
    return root


def grow_one_run(root: Path, steps: int = STEPS) -> Path:
    """Append 1% more steps to the first run only (the others stay unchanged); its event file."""
    path = sorted(root.glob("sweep/*/run*/events.out.tfevents.*"))[0]
    with open(path, "ab") as handle:
        handle.write((_templates(steps) / f"t{int(path.parent.name[3:]) % TEMPLATES:02d}.append").read_bytes())
    return path


def append_one_percent(root: Path, steps: int = STEPS) -> None:
    templates = _templates(steps)
    appendix = {kind: (templates / f"t{kind:02d}.append").read_bytes() for kind in range(TEMPLATES)}
    for path in sorted(root.glob("sweep/*/run*/events.out.tfevents.*")):
        with open(path, "ab") as handle:
            handle.write(appendix[int(path.parent.name[3:]) % TEMPLATES])


# --- one measurement = one child process ----------------------------------------------------------------------

_CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, {repo!r})
import tanalyze
from tanalyze.cache import Cache
args = json.loads({args!r})
cache = Cache(args["cache"]) if args["cache"] else False
client = None
if args["what"].endswith("dask"):
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=args["jobs"], processes=True, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster)
cpu_before = sum(u.ru_utime + u.ru_stime for u in
                 (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))
start = time.perf_counter()
if args["what"].startswith("load"):
    logs = tanalyze.load(args["path"], jobs=args["jobs"], cache=cache, client=client)
    size = len(logs.scalars)
elif args["what"].startswith("report"):
    from tanalyze.report import Report, report_paths
    data = report_paths([args["path"]], jobs=args["jobs"], cache=cache, client=client)
    Report(data).save(args["out"], args["out"] + ".json", jobs=args["jobs"])
    size = len(data.runs)
else:
    from tanalyze.pipeline import diagnose_path
    size = len(diagnose_path(args["path"], jobs=args["jobs"], cache=cache, client=client))
elapsed = time.perf_counter() - start
usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
cpu = sum(u.ru_utime + u.ru_stime for u in usage) - cpu_before
if client is not None:
    client.close(); cluster.close()
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({{"seconds": elapsed, "cpu": cpu, "size": size, "rss_self_mb": own / 1024, "rss_children_mb": kids / 1024}}))
"""


def measure(what: str, path: Path, *, jobs: int, cache: Path | None, out: Path | None = None) -> dict:
    args = json.dumps({"what": what, "path": str(path), "jobs": jobs, "cache": str(cache) if cache else "",
                       "out": str(out) if out else ""})
    code = _CHILD.format(repo=str(HERE.parent), args=args)
    peak = _PeakRSS()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    peak.watch(proc)
    stdout, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{what} failed (exit {proc.returncode})")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["peak_tree_mb"] = peak.peak / 1e6
    return result


class _PeakRSS:
    """Peak of the summed RSS of a process and all its descendants, sampled every 50 ms."""

    def __init__(self) -> None:
        self.peak = 0

    def watch(self, proc: subprocess.Popen) -> None:
        import threading

        def loop() -> None:
            import psutil

            try:
                root = psutil.Process(proc.pid)
            except psutil.NoSuchProcess:
                return
            while proc.poll() is None:
                total = 0
                try:
                    for p in [root, *root.children(recursive=True)]:
                        try:
                            total += p.memory_info().rss
                        except psutil.NoSuchProcess:
                            pass
                except psutil.NoSuchProcess:
                    break
                self.peak = max(self.peak, total)
                time.sleep(0.05)

        threading.Thread(target=loop, daemon=True).start()


def best(values: list[float]) -> str:
    spread = f" (spread {min(values):.2f}-{max(values):.2f}, n={len(values)})" if len(values) > 1 else ""
    return f"{min(values):7.2f} s{spread}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--steps", type=int, default=STEPS, help=f"steps per run, 5 scalars each (default {STEPS})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip", action="append", default=[], choices=["dask", "report", "report-cache", "report-only"],
                        help="leave a part out (report-only: everything but the report through the cache)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    t = time.perf_counter()
    if args.steps < 100:
        parser.error("--steps must be at least 100 (1%% of it is appended)")
    root = generate(args.runs, args.steps)
    print(f"data: {args.runs} runs x {args.steps * len(TAGS):,} scalars in {root} (ready in {time.perf_counter() - t:.1f} s)")
    work = HERE / "_data" / "scale-work"
    shutil.rmtree(work, ignore_errors=True)
    copy = work / "runs"
    caches = work / "caches"

    figures: dict[str, list[float]] = {}
    extra: dict[str, dict] = {}

    def run(label: str, what: str, *, jobs: int, cache: Path | None, out: Path | None = None) -> dict:
        result = measure(what, copy, jobs=jobs, cache=cache, out=out)
        figures.setdefault(label, []).append(result["seconds"])
        extra[label] = result
        figures.setdefault(label + " (CPU)", []).append(result["cpu"])
        print(f"  {label:<34} {result['seconds']:7.2f} s ({result['cpu']:6.2f} s CPU)   "
              f"peak RSS (tree) {result['peak_tree_mb']:6.0f} MB", flush=True)
        return result

    for attempt in range(args.repeat):
        print(f"round {attempt + 1}/{args.repeat} (load average {os.getloadavg()[0]:.2f})")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(root, copy)  # a fresh copy each round: appends must not touch the generated data
        os.sync()  # the copy's writeback is not billed to the measurements that follow
        if "report" not in args.skip and "report-cache" not in args.skip:
            out = work / "report.html"
            cache = caches / f"r{attempt}"
            run("report serial, cold cache", "report", jobs=1, cache=cache, out=out)
            run("report serial, warm cache", "report", jobs=1, cache=cache, out=out)
            grown = grow_one_run(copy, args.steps)
            os.sync()
            run("report serial, one run grew", "report", jobs=1, cache=cache, out=out)
            shutil.copy2(root / grown.relative_to(copy), grown)  # that run as generated again
            os.sync()
        if "report-only" in args.skip:
            continue
        run("load serial, no cache", "load", jobs=1, cache=None)
        run(f"load --jobs {args.jobs}, no cache", "load", jobs=args.jobs, cache=None)
        if "dask" not in args.skip:
            run(f"load dask {args.jobs} workers, no cache", "load-dask", jobs=args.jobs, cache=None)
        cache = caches / f"c{attempt}"
        run("load serial, cold cache", "load", jobs=1, cache=cache)
        run("load serial, warm cache", "load", jobs=1, cache=cache)
        append_one_percent(copy, args.steps)
        os.sync()
        run("load serial, after 1% appended", "load", jobs=1, cache=cache)
        if "report" not in args.skip:
            out = work / "report.html"
            run("report serial, no cache", "report", jobs=1, cache=None, out=out)
            run(f"report --jobs {args.jobs}, no cache", "report", jobs=args.jobs, cache=None, out=out)
            if "dask" not in args.skip:
                run(f"report dask {args.jobs} workers", "report-dask", jobs=args.jobs, cache=None, out=out)

    def ratio(a: str, b: str) -> str:
        if a not in figures or b not in figures:
            return "n/a"
        return f"{min(figures[a]) / min(figures[b]):.2f}x"

    print("\nsummary (best of each; ratios of bests)")
    for label, values in figures.items():
        print(f"  {label:<34} {best(values)}")
    print(f"  --jobs {args.jobs} vs serial (load):       {ratio('load serial, no cache', f'load --jobs {args.jobs}, no cache')}  (target >= 1.7x)")
    if "report" not in args.skip:
        print(f"  --jobs {args.jobs} vs serial (report):     {ratio('report serial, no cache', f'report --jobs {args.jobs}, no cache')}  (target >= 1.7x)")
    print(f"  warm vs cold cache (load):      {ratio('load serial, cold cache', 'load serial, warm cache')}  (target >= 10x)")
    print(f"  1% append vs cold (load):       {ratio('load serial, cold cache', 'load serial, after 1% appended')}  (target >= 5x)")
    for unit in ("", " (CPU)"):
        cold, warm = "report serial, cold cache" + unit, "report serial, warm cache" + unit
        print(f"  warm vs cold cache (report){unit + ':':<7} {ratio(cold, warm)}  (target >= 10x); "
              f"one run grew: {ratio(cold, 'report serial, one run grew' + unit)}")
    peaks = {label: r["peak_tree_mb"] for label, r in extra.items()}
    if "report" not in args.skip:
        worst = max(v for k, v in peaks.items() if k.startswith("report"))
        print(f"  peak RSS of the report (process tree): {worst:.0f} MB  (target < 2000 MB)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
