"""Driving a real headless Chromium from tests: load a page, get its DOM after scripts ran, its console, a screenshot.

Skips (with the reason) when no Chromium is installed; on Debian: ``apt-get install -y chromium``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=5000",
)
_CONSOLE = re.compile(r":(?:INFO|WARNING|ERROR):CONSOLE[^\]]*\]\s*(.*)")


def chromium() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium found (Debian: apt-get install -y chromium); browser tests need a real browser")


@dataclass
class PageRun:
    dom: str
    console: list[str]
    stderr: str


def _run(page: Path, *extra: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    binary = chromium()
    with tempfile.TemporaryDirectory(prefix="tz-chromium-") as profile:
        return subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout, check=False,
        )


def load(page: Path, *extra: str) -> PageRun:
    """The DOM after the page's scripts ran, and what the page logged to the console (``extra``: more flags,
    e.g. ``--window-size=1280,4000`` so that more of the page is in view)."""
    done = _run(page, *extra, "--dump-dom")
    if "<html" not in done.stdout:
        pytest.fail(f"Chromium did not return a DOM (exit {done.returncode}): {done.stderr[-2000:]}")
    console = [m.group(1) for m in _CONSOLE.finditer(done.stderr)]
    return PageRun(done.stdout, console, done.stderr)


def screenshot(page: Path, out: Path, width: int = 1280, height: int = 3000) -> Path:
    done = _run(page, f"--window-size={width},{height}", f"--screenshot={out}")
    if not out.exists():
        pytest.fail(f"Chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")
    return out
