"""An environment Monitor's episode records: the real ``monitor.csv`` of the PPO training in
``tests/fixtures/sb3/generate.py``, and files as SB3's ``ResultsWriter`` writes them (its header, its columns)."""

import pytest

from tanalyze import load
from tanalyze.readers import HEAD_BYTES, get_reader
from tests.conftest import REPO
from tests.readers.text_helpers import curve, notes_text, write

MONITOR = REPO / "tests" / "fixtures" / "sb3" / "ppo" / "monitor.csv"
T_START = 1796617085.983946  # the fixture's header


def _read(*paths):
    (run,) = get_reader("sb3_monitor").read(list(paths))
    return run


def _monitor(t_start: float, episodes: list[tuple[float, int, float]], extra: str = "") -> str:
    lines = [f'#{{"t_start": {t_start}, "env_id": "CartPole-v1"}}', "r,l,t" + extra]
    lines += [f"{r},{length},{t}" for r, length, t in episodes]
    return "\n".join(lines) + "\n"


def test_the_real_monitor_of_a_ppo_training():
    assert get_reader("sb3_monitor").sniff(MONITOR, MONITOR.read_bytes()[:HEAD_BYTES])
    run = _read(MONITOR)
    reward = curve(run.scalars, "episode/reward")
    assert list(reward.items())[:3] == [(11, 11.0), (20, 9.0), (32, 12.0)]  # step: the steps of the episodes so far
    assert curve(run.scalars, "episode/length")[20] == 9
    assert len(reward) == 66 and max(reward) == 1979
    first = run.scalars[run.scalars["step"] == 11]
    assert first["wall_time"].tolist() == [T_START + 1.120416] * 2
    assert run.hparams == {"env_id": "CartPole-v1"} and not run.warnings
    assert "66 episode(s)" in notes_text(run)


def test_copies_of_a_vectorized_environment_are_one_run_in_the_order_episodes_ended(tmp_path):
    first = write(tmp_path / "0.monitor.csv", _monitor(100.0, [(10.0, 10, 1.0), (30.0, 30, 4.0)]))
    second = write(tmp_path / "1.monitor.csv", _monitor(100.5, [(20.0, 20, 1.0), (5.0, 5, 4.0)], ))
    other = write(tmp_path / "eval.monitor.csv", _monitor(100.0, [(50.0, 50, 2.0)]))
    reader = get_reader("sb3_monitor")
    assert reader.group([second, other, first]) == [[first, second], [other]]
    run = _read(first, second)
    # ended at 101.0 (10 steps), 101.5 (20), 104.0 (30), 104.5 (5)
    assert curve(run.scalars, "episode/reward") == {10: 10.0, 30: 20.0, 60: 30.0, 65: 5.0}
    assert "of 2 environment copies" in notes_text(run)
    assert len(load(tmp_path, cache=False).runs) == 2


def test_a_reopened_monitor_goes_on_and_a_cut_line_is_skipped(tmp_path):
    text = (_monitor(100.0, [(10.0, 10, 1.0), (12.0, 12, 2.0)], ",is_success")
            .replace("10.0,10,1.0", "10.0,10,1.0,0").replace("12.0,12,2.0", "12.0,12,2.0,1")
            + _monitor(200.0, [(15.0, 15, 1.0)]) + "16.0,1")  # the job stopped mid-line
    run = _read(write(tmp_path / "monitor.csv", text))
    assert curve(run.scalars, "episode/reward") == {10: 10.0, 22: 12.0, 37: 15.0}
    assert curve(run.scalars, "episode/is_success") == {10: 0.0, 22: 1.0}
    assert run.scalars[run.scalars["step"] == 37]["wall_time"].iloc[0] == 201.0
    (warning,) = run.warnings
    assert "1 line(s) that are not episode records skipped" in warning.message


@pytest.mark.parametrize("text", ["r,l,t\n1,2,3\n", '#{"t_start": 1}\nreward,length\n1,2\n'])
def test_other_csv_files_are_no_monitor(tmp_path, text):
    path = write(tmp_path / "monitor.csv", text)
    assert not get_reader("sb3_monitor").sniff(path, path.read_bytes())


def test_the_real_monitors_of_two_environment_copies_are_one_run():
    """``make_vec_env(n_envs=2, monitor_dir=…)`` of a real A2C training: the two files are one run, each episode at
    the steps of the episodes of both copies ended before it."""
    logs = load(MONITOR.parents[1] / "a2c_monitor", cache=False)
    (name,) = logs.runs
    assert logs.runs[name].format == "sb3_monitor"
    reward = curve(logs.scalars_of(name), "episode/reward")
    # copy 1's 33 and 29 and 16 ended before copy 0's first episode (86 steps)
    assert list(reward.items())[:4] == [(33, 33.0), (62, 29.0), (78, 16.0), (164, 86.0)]
    assert len(reward) == 25


def test_files_of_one_name_that_ran_one_after_the_other_are_runs_of_their_own(tmp_path):
    """Seeds trained in turn, each with its own monitor (``basic_0monitor.csv``, ``basic_1monitor.csv``): the second
    began after the first had ended, so they are two runs, not two copies of one vectorized environment."""
    first = [(-400.0, 800, 0.2), (100.0, 500, 300.5), (690.0, 500, 525.3)]
    write(tmp_path / "seeds" / "basic_0monitor.csv", _monitor(1626119472.97, first))
    write(tmp_path / "seeds" / "basic_1monitor.csv", _monitor(1626120000.68, [(-390.0, 16, 0.1), (680.0, 500, 500.0)]))
    logs = load(tmp_path / "seeds", cache=False)
    assert sorted(name.rsplit("/", 1)[-1] for name in logs.runs) == ["basic_0monitor.csv", "basic_1monitor.csv"]
    # the same files side by side (the second began while the first ran): one run of two copies
    write(tmp_path / "copies" / "basic_0monitor.csv", _monitor(1626119472.97, first))
    write(tmp_path / "copies" / "basic_1monitor.csv", _monitor(1626119473.50, [(-390.0, 16, 0.1), (680.0, 500, 500.0)]))
    (name,) = load(tmp_path / "copies", cache=False).runs
    assert "2 environment copies" in notes_text(load(tmp_path / "copies", cache=False).runs[name])
