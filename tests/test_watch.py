"""tanalyze watch on a log that a real subprocess appends to while watch runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tanalyze.watch import Watcher, parse_until

REPO = Path(__file__).resolve().parents[1]

WRITER = textwrap.dedent("""
    import math, sys, time
    path, pause = sys.argv[1], float(sys.argv[2])
    with open(path, "a") as log:
        for i in range(0, 400, 10):
            loss = 4 * math.exp(-i / 200) + 1 if i < 300 else float("nan")
            log.write(f"iter {i}: loss {loss:.4f}, time 12.34ms, mfu 5.00%\\n")
            log.flush()
            time.sleep(pause)
        log.write("Traceback (most recent call last):\\n  File \\"train.py\\", line 3, in <module>\\n"
                  "    raise RuntimeError('loss is nan')\\nRuntimeError: loss is nan\\n")
""")

NOTIFIER = textwrap.dedent("""
    import json, os, sys
    with open(sys.argv[1], "a") as out:
        out.write(json.dumps([os.environ["TANALYZE_CODE"], json.loads(os.environ["TANALYZE_FINDING"])["run"]]) + "\\n")
""")


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), TANALYZE_CACHE_DIR=str(tmp_path / "cache"))


def test_watch_follows_a_growing_log_prints_each_finding_once_and_exits_with_the_check_code(tmp_path):
    runs = tmp_path / "runs" / "job"
    runs.mkdir(parents=True)
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "notify.py").write_text(NOTIFIER)
    notified = tmp_path / "notified.jsonl"
    watch = subprocess.Popen(
        [sys.executable, "-m", "tanalyze", "watch", str(tmp_path / "runs"), "--interval", "0.3", "--json",
         "--until", "status:crashed", "--timeout", "120",
         "--on-finding", f"{sys.executable} {tmp_path / 'notify.py'} {notified}"],
        cwd=REPO, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = subprocess.run([sys.executable, str(tmp_path / "writer.py"), str(runs / "train.log"), "0.08"],
                            timeout=120, check=True)
    assert writer.returncode == 0
    out, err = watch.communicate(timeout=150)
    assert watch.returncode == 1, err  # the check fails: the run diverged and crashed
    events = [json.loads(line) for line in out.splitlines()]
    keys = [(e["run"], e["kind"], e["code"], e["step"]) for e in events]
    assert len(keys) == len(set(keys)), "an event was printed twice"
    codes = [e["code"] for e in events]
    assert "diverged_nonfinite" in codes and "crashed" in codes
    assert codes.index("diverged_nonfinite") < codes.index("crashed")  # seen while the log grew, before the end
    crash = next(e for e in events if e["code"] == "crashed")
    assert crash["kind"] == "status" and crash["evidence"]["evidence"][0]["line"] == 44
    assert "FAIL  run_status" in err
    told = [json.loads(line) for line in notified.read_text().splitlines()]
    assert [code for code, _ in told] == codes  # the command ran once per printed finding, with it in its env


def test_watch_until_needs_a_known_condition(tmp_path, capsys):
    from tanalyze.cli import main

    assert main(["watch", str(tmp_path), "--until", "sometime"]) == 2
    assert "unknown --until condition 'sometime'" in capsys.readouterr().err
    with pytest.raises(ValueError):
        parse_until("finding:")


def test_poll_before_anything_is_written_and_nothing_new_twice(tmp_path):
    watcher = Watcher(tmp_path, cache=tmp_path / "cache")
    assert watcher.poll() == []
    (tmp_path / "train.log").write_text("".join(f"iter {i}: loss {5 - i / 100:.3f}, time 1.0ms, mfu 1.00%\n"
                                                for i in range(0, 300, 10)) + "iter 300: loss nan, time 1.0ms\n"
                                        "iter 310: loss nan, time 1.0ms\n")
    first = watcher.poll()
    assert [e.code for e in first if e.kind == "finding"]
    assert watcher.poll() == []  # nothing changed: nothing reported again


def test_until_failed_stops_at_the_first_error_finding(tmp_path):
    (tmp_path / "train.log").write_text("".join(f"iter {i}: loss {5 - i / 100:.3f}, time 1.0ms, mfu 1.00%\n"
                                                for i in range(0, 300, 10)) + "iter 300: loss nan, time 1.0ms\n"
                                        "iter 310: loss nan, time 1.0ms\n")
    done = subprocess.run([sys.executable, "-m", "tanalyze", "watch", str(tmp_path), "--interval", "0.2",
                           "--until", "failed", "--timeout", "60"], cwd=REPO, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "diverged_nonfinite" in done.stdout and "FAIL  nonfinite_loss" in done.stderr
