"""CPU share of ``tanalyze watch`` following a run that logs 1,000 scalars/s (run on demand).

    python bench/bench_watch.py                 # 60 s, 10 tags x 100 steps/s, watch --interval 5
    python bench/bench_watch.py --seconds 120 --interval 2

A writer subprocess logs with tensorboardX (``SummaryWriter``, flushed every second) 10 tags at 100
steps per second into a fresh folder; ``tanalyze watch`` runs beside it in its own process for the
same time (``--timeout``), with its own cache. The watch process's CPU time (user + system, from
``wait4``) over its wall time is the figure: the budget is 5% of one core. Its start-up (Python and
the imports) is measured alone too and reported apart, since it is paid once.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WRITER = """
import math, sys, time
from tensorboardX import SummaryWriter
folder, seconds, tags, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
writer = SummaryWriter(folder, flush_secs=1)
start = time.monotonic()
step = 0
while time.monotonic() - start < seconds:
    for t in range(tags):
        writer.add_scalar(f"train/metric_{t}" if t else "train/loss", 3 * math.exp(-step / 5000) + 0.01 * t, step)
    step += 1
    time.sleep(max(0.0, start + step / rate - time.monotonic()))
writer.close()
print(step * tags)
"""


def _cpu_of(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(cpu seconds, wall seconds, exit code, stdout) of a child process."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read().decode() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, time.monotonic() - started, proc.returncode, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--tags", type=int, default=10)
    parser.add_argument("--rate", type=int, default=100, help="steps per second")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        env = dict(os.environ, PYTHONPATH=str(REPO), TANALYZE_CACHE_DIR=str(root / "cache"))
        folder = root / "runs" / "job"
        folder.mkdir(parents=True)
        startup, _, _, _ = _cpu_of([sys.executable, "-c", "import tanalyze.cli, tanalyze.watch"], env)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(args.seconds), str(args.tags),
                                   str(args.rate)], stdout=subprocess.PIPE, text=True)
        cpu, wall, code, out = _cpu_of([sys.executable, "-m", "tanalyze", "watch", str(root / "runs"), "--interval",
                                        str(args.interval), "--timeout", str(args.seconds), "--json"], env)
        written = int(writer.communicate()[0].strip() or 0)
        findings = len(out.splitlines())
    steady = max(0.0, cpu - startup)
    print(f"writer: {written:,} scalars in {args.seconds:.0f} s ({written / args.seconds:,.0f}/s)")
    print(f"watch --interval {args.interval:g}: {cpu:.2f} s CPU over {wall:.1f} s = {100 * cpu / wall:.1f}% of one core "
          f"(start-up {startup:.2f} s; without it {100 * steady / wall:.1f}%); exit {code}, {findings} finding line(s)")


if __name__ == "__main__":
    main()
