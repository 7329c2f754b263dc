"""A reinforcement-learning run in the report: its reward and policy entropy drawn beside the loss chart."""

from __future__ import annotations

from pathlib import Path

import tanalyze
from tanalyze.report import build_report
from tanalyze.report.chartdata import aux_roles, run_chart
from tanalyze.report.html import render_html

HARDCASES = Path(__file__).resolve().parents[2] / "bench" / "hardcases"


def test_an_rl_run_gets_reward_and_entropy_panels_and_its_verdict():
    logs = tanalyze.load(HARDCASES / "rl_entropy_collapse", cache=False)
    data = build_report(logs, tanalyze.diagnose(logs), generated_at="2026-01-01T00:00:00Z")
    (run,) = data.runs
    assert aux_roles(run)[:2] == ["reward", "policy_entropy"]
    panels = {p["role"]: p for p in run_chart(run)["aux"]}
    assert panels["reward"]["tag"] == "episode/reward" and panels["reward"]["title"] == "reward"
    assert panels["policy_entropy"]["tag"] == "policy/entropy" and panels["reward"]["smooth"]
    page = render_html(data)
    assert "RL: the policy became deterministic before it learned" in page
    assert "the policy settled on fixed choices before it learned anything" in page
