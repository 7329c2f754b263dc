"""Bench: the whole report (read + diagnose + render) of 50 runs x 20,000 scalars vs tbparse reading them.

Target: the report takes less than a quarter of the time tbparse alone needs to
read the same event files, both measured in this run on this machine.

    python bench/bench_report.py                 # writes bench/_data/ once (tensorboardX), then measures
    python bench/bench_report.py --runs 10       # smaller, for a quick look

Scale (issue targets): a 2,000-run page weighs < 30 MB and first-paints in < 3 s in headless
Chromium; a warm report (results cache) of unchanged runs is >= 10x faster than a cold one:

    python bench/bench_report.py --runs 2000 --scalars 2000 --no-anchor --first-paint --warm

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


def time_report(root: Path, out: Path, jobs: int | None, cache: Path | None = None) -> dict[str, float]:
    """What ``tanalyze report ROOT -o ... --json ...`` does, timed in its two phases. ``cache``: the cache
    folder (None: a new empty one, so that nothing of an earlier bench is reused)."""
    import tempfile

    from tanalyze.report import Report, report_paths

    if cache is None:
        with tempfile.TemporaryDirectory(prefix="tz-bench-cache-") as fresh:
            return time_report(root, out, jobs, Path(fresh))
    times: dict[str, float] = {}
    start, cpu = time.perf_counter(), _cpu()
    data = report_paths([root], jobs=jobs, cache=str(cache))
    times["read+diagnose+draw runs"] = time.perf_counter() - start
    mark = time.perf_counter()
    sizes = Report(data).save(out / "report.html", out / "report.json", jobs=jobs)
    times["compare+page+write"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - start
    times["cpu"] = _cpu() - cpu
    times["points"] = float(sum(run.points for run in data.runs))
    times["runs"] = float(len(data.runs))
    times["html_mb"] = sizes["html"] / 1e6
    return times


def warm_vs_cold(root: Path, out: Path, jobs: int | None, cache: Path, cold: dict[str, float]) -> int:
    """After the report through a new cache (``cold``): again with nothing changed (warm), then after one run grew."""
    warm = time_report(root, out, jobs, cache)
    grown = sorted(p for p in root.iterdir() if p.is_dir())[0]
    _grow(grown)
    after = time_report(root, out, jobs, cache)
    ratio = cold["total"] / warm["total"]
    print(f"results cache: cold {cold['total']:.2f} s, warm {warm['total']:.2f} s -> {ratio:.1f}x "
          f"(target >= 10x: {'OK' if ratio >= 10 else 'TOO SLOW'}); after {grown.name} grew: {after['total']:.2f} s")
    return int(ratio < 10)


def _grow(run: Path) -> None:
    """Add a few steps to a run (a new event file beside its first, as a resumed run writes)."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(run), flush_secs=3600)
    for step in range(10):
        writer.add_scalar("train/loss", 0.3, 10_000_000 + step)
    writer.close()


PAINT_PROBE = """<script>
(function () {
  var b = document.body, fcp = performance.getEntriesByName("first-contentful-paint")[0];
  b.setAttribute("data-parsed-ms", String(Math.round(performance.now())));
  b.setAttribute("data-fcp-ms", fcp ? String(Math.round(fcp.startTime)) : "");
})();
</script>"""


def first_paint(page: Path) -> dict[str, float]:
    """First contentful paint and end of parsing of ``page`` in headless Chromium (ms after navigation start).

    A copy of the page without its CSP gets a probe script at its end (the report's own script is
    left in place and runs as usual); the wall time of the whole browser run is reported too.
    """
    import re
    import subprocess
    import tempfile

    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if binary is None:
        raise SystemExit("no Chromium found (Debian: apt-get install -y chromium)")
    html = page.read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
    probe = page.with_name("paint-probe.html")
    probe.write_text(html.replace("</body>", PAINT_PROBE + "</body>"), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="tz-bench-chromium-") as profile:
        start = time.perf_counter()
        done = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--window-size=1280,900", f"--user-data-dir={profile}", "--dump-dom",
                               probe.resolve().as_uri()], capture_output=True, text=True, timeout=600, check=False)
        wall = time.perf_counter() - start
    found = dict(re.findall(r'data-(parsed-ms|fcp-ms)="([^"]*)"', done.stdout))
    if "parsed-ms" not in found:
        raise SystemExit(f"the probe did not run: {done.stderr[-1500:]}")
    fcp = float(found["fcp-ms"]) if found.get("fcp-ms") else float("nan")
    return {"fcp_s": fcp / 1000, "parsed_s": float(found["parsed-ms"]) / 1000, "browser_wall_s": wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--scalars", type=int, default=20_000, help="scalar points per run")
    parser.add_argument("--regenerate", action="store_true", help="write the event files again")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: automatic, as the CLI)")
    parser.add_argument("--no-anchor", action="store_true", help="skip the tbparse anchor (and its ratio target)")
    parser.add_argument("--first-paint", action="store_true", help="measure the page in headless Chromium")
    parser.add_argument("--warm", action="store_true",
                        help="report twice through a fresh results cache: cold, then warm (nothing changed)")
    args = parser.parse_args()

    root = HERE / "_data" / f"report_{args.runs}x{args.scalars}"
    out = HERE / "out"
    out.mkdir(parents=True, exist_ok=True)
    if args.regenerate and root.exists():
        shutil.rmtree(root)
    if not root.exists():
        print(f"writing {args.runs} runs x {args.scalars:,} scalars with tensorboardX to {root.relative_to(HERE.parent)}")
        write_data(root, args.runs, args.scalars)

    import tempfile

    from tanalyze.report.parallel import default_workers

    sys.stdout.reconfigure(line_buffering=True)  # lines show while the bench runs, also into a file
    cache = Path(tempfile.mkdtemp(prefix="tz-bench-cache-"))  # new and empty: the first report is cold
    try:
        ours = time_report(root, out, args.jobs, cache)
        status = 0
        print(f"input: {int(ours['runs'])} runs, {int(ours['points']):,} scalar points")
        print(f"cold report (empty cache): {ours['total']:.2f} s; page: {ours['html_mb']:.1f} MB HTML"
              " (target < 30 MB at 2,000 runs)")
        if args.first_paint:
            paint = first_paint(out / "report.html")
            print(f"headless Chromium: first contentful paint {paint['fcp_s']:.2f} s, parsed {paint['parsed_s']:.2f} s,"
                  f" browser run {paint['browser_wall_s']:.1f} s wall (target: first paint < 3 s)")
            status |= int(not paint["fcp_s"] < 3)
        if args.warm:
            status |= warm_vs_cold(root, out, args.jobs, cache, ours)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if args.no_anchor:
        print(f"tanalyze report total:   {ours['total']:8.2f} s   ({ours['cpu']:.2f} s CPU in all processes)")
        return status
    anchor, anchor_cpu, anchor_rows = time_tbparse(root)

    print(f"tbparse read {anchor_rows:,} points")
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
    return status | (0 if ratio < 0.25 else 1)


if __name__ == "__main__":
    sys.exit(main())
