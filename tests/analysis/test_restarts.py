"""Restarts as time lost: exact costs on a TensorBoard run really resumed three times, and on a real log."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tanalyze import diagnose, load
from tanalyze.analysis.restarts import Boundary, analyze_restarts, format_duration

RESUMED = Path(__file__).resolve().parents[1] / "fixtures" / "restarts"


@pytest.fixture(scope="module")
def resumed():
    logs = load(RESUMED, cache=False)
    (name,) = logs.runs
    return logs, diagnose(logs)[name]


def test_three_resumes_cost_the_queue_waits_plus_the_redone_work(resumed):
    logs, d = resumed
    (info,) = logs.runs.values()
    assert [(r.step, r.until) for r in info.restarts] == [(3050, 3400), (7050, 7800), (10050, 10500)]
    cost = d.restarts
    assert cost.restarts == 3
    assert cost.steps_redone == 350 + 750 + 450
    assert cost.seconds_per_step == pytest.approx(0.5)
    # waits 3,600 + 7,200 + 1,800 s and 400 + 800 + 500 steps of 0.5 s computed twice
    assert [e.lost_s for e in cost.events] == pytest.approx([3800.0, 7600.0, 2050.0])
    assert cost.time_lost_s == pytest.approx(13450.0)
    assert cost.summary == "3 restarts, 3.7 h lost, 1,550 steps redone"
    (finding,) = [f for f in d.findings if f.code == "restarts_time_lost"]
    assert finding.severity == "warning"
    assert finding.message.startswith("3 restarts, 3.7 h lost, 1,550 steps redone (")
    assert finding.evidence["events"][1]["step"] == 7050
    assert d.to_dict()["restarts"]["time_lost_s"] == pytest.approx(13450.0)


def test_real_resumed_mmengine_run_redid_ten_steps(real_logs):
    folder = real_logs / "mmengine_logs" / "hwh12345678900123__event-yolo"
    logs = load(folder, cache=False)
    found = {name: d.restarts for name, d in diagnose(logs).items() if d.restarts is not None}
    assert len(found) == 1
    (cost,) = found.values()
    assert (cost.restarts, cost.steps_redone, cost.events[0].step) == (1, 10, 1325)


def test_sessions_cost_their_downtime_and_no_steps():
    steps = np.array([0, 10, 20, 30, 40, 50])
    wall = np.array([0.0, 10.0, 20.0, 620.0, 630.0, 640.0])  # 10 min between the sessions, 1 s per step
    cost = analyze_restarts(steps, wall, [Boundary(30, "session")])
    assert (cost.restarts, cost.steps_redone) == (1, 0)
    assert cost.time_lost_s == pytest.approx(590.0)
    assert cost.summary == "1 session appended to the log, 9.8 min lost, 0 steps redone"  # (no restart: a session)


def test_without_wall_time_only_steps_are_counted():
    cost = analyze_restarts(np.arange(0, 100, 10), np.full(10, np.nan), [Boundary(50, "restart", until=80)])
    assert (cost.time_lost_s, cost.steps_redone) == (None, 30)
    assert cost.summary == "1 restart, 30 steps redone"
    assert analyze_restarts(np.arange(3), np.zeros(3), []) is None


@pytest.mark.parametrize(("seconds", "text"), [(45, "45 s"), (750, "12.5 min"), (18720, "5.2 h"), (3 * 86400, "3.0 d")])
def test_durations_read_as_people_say_them(seconds, text):
    assert format_duration(seconds) == text


def test_restarts_that_cost_seconds_are_information():
    """A run of seconds whose writers restarted (a loop reopening its SummaryWriter) lost seconds, not "half
    its time": information, and no share of a wall time under a second; a minute or more lost still warns."""
    steps = np.arange(0, 100, 10)
    quick = analyze_restarts(steps, np.linspace(0.0, 0.5, 10), [Boundary(50, "restart", until=80)])
    assert quick.steps_redone == 30 and quick.time_lost_s < 1
    assert quick.findings[0].severity == "info" and "wall time" not in quick.findings[0].message
    slow = analyze_restarts(steps, np.r_[np.arange(5) * 10.0, 650.0 + np.arange(5) * 10.0],
                            [Boundary(50, "restart", until=80)])
    assert slow.time_lost_s >= 60 and slow.findings[0].severity == "warning"


def test_a_new_start_from_scratch_costs_no_lost_time_and_is_information():
    steps = np.arange(200)
    wall = np.concatenate([np.arange(100) * 0.1, 2100.0 + np.arange(100) * 0.1])  # 35 min between two launches
    cost = analyze_restarts(steps, wall, [Boundary(100, "fresh", None, "step went back from 99 to 0")])
    assert cost.time_lost_s is None and cost.steps_redone is None
    (finding,) = cost.findings
    assert finding.severity == "info" and finding.message.startswith("1 new start from scratch at step 100 (")
    # (which session is judged is the diagnosis' to say: the longest, when the last is too short for a verdict)
    assert finding.message.endswith("a new launch into the same log, not a resume)")
    mixed = analyze_restarts(steps, wall, [Boundary(100, "fresh"), Boundary(150, "restart", 170)])
    assert "; 1 other restart, " in mixed.findings[0].message


@pytest.mark.real_logs
def test_two_launches_of_a_tutorial_into_one_folder_are_new_starts_not_a_resume(real_logs):
    # two event files, each steps 0-99, the second back at the first's untrained loss (4.83 against 4.93) after
    # the first ended at 0.23: a new launch 35 minutes later, not 35 minutes lost
    d = diagnose(load(real_logs / "tfevents/ZeroToMax-ZYZ__study_tensorboard/runs/my_first_experiment"))
    (run,) = d.values()
    (finding,) = [f for f in run.findings if f.code == "restarts_time_lost"]
    assert finding.severity == "info" and finding.message.startswith("1 new start from scratch at step 100")
    assert run.restarts.time_lost_s is None


def test_a_second_fit_that_goes_on_from_its_loss_is_a_session_not_a_new_start():
    # Keras CSVLogger(append=True) over two fit() calls: epochs start over at 0, the loss goes on from 0.80
    logs = load(Path(__file__).resolve().parents[1] / "fixtures" / "layouts" / "keras_csvlogger_append", cache=False)
    (run,) = diagnose(logs).values()
    assert [e.kind for e in run.restarts.events] == ["session"]
