"""Stable-Baselines3's logger tables (and OpenAI Baselines'): from the real PPO and DQN trainings of
``tests/fixtures/sb3/generate.py`` (their ``log.txt``, ``progress.csv`` and the job's console), and Baselines'
table as its logger prints it."""

import random

import pytest

from tanalyze import load
from tanalyze.readers import HEAD_BYTES, get_reader
from tanalyze.readers.text.sb3_console import SB3ConsoleParser
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, read_both_ways, write

SB3 = REPO / "tests" / "fixtures" / "sb3"


def _read(path):
    (run,) = get_reader("sb3_console").read([path])
    return run


def test_a_real_ppo_log_txt_at_its_total_timesteps():
    run = _read(SB3 / "ppo" / "log.txt")
    frame = run.scalars
    check(frame, "rollout/ep_rew_mean", {256: 18.1, 512: 21.7}, count=8)
    check(frame, "train/loss", {512: 30.7}, count=7)
    check(frame, "train/approx_kl", {512: 0.0051524946})
    check(frame, "train/policy_gradient_loss", {512: -0.00635})
    check(frame, "time/fps", {256: 2876, 512: 1549})
    assert curve(frame, "rollout/ep_rew_mean").keys() == set(range(256, 2049, 256))
    # the counters are where a table is, not tags; time_elapsed is the wall time
    assert not {"time/iterations", "train/n_updates", "time/total_timesteps", "time/time_elapsed"} & set(frame["tag"])
    assert frame["wall_time"].notna().all()
    assert "8 logger table(s)" in notes_text(run) and "'time/total_timesteps'" in notes_text(run)
    assert not run.warnings and not run.restarts


def test_the_folder_is_one_run_read_from_progress_csv_at_the_same_steps():
    """log.txt and progress.csv are two sinks of one logger: progress.csv (whole floats) is read, at
    time/total_timesteps as the console is (not at time/iterations), and the console agrees with it."""
    logs = load(SB3 / "ppo", cache=False)
    (name,) = logs.runs
    info = logs.runs[name]
    assert info.format == "csv"
    frame = logs.scalars_of(name)
    check(frame, "rollout/ep_rew_mean", {256: 18.142857142857142, 512: 21.73913043478261}, count=8)
    check(frame, "train/loss", {512: 30.677879333496094})
    assert "train/n_updates" not in set(frame["tag"])  # a counter, as time/iterations
    assert "twin: log.txt (sb3_console)" in notes_text(info) and "it agrees on all" in notes_text(info)


def test_a_console_of_two_agents_is_two_sessions():
    """DQN's count starts over after PPO's 2,048 steps: a second session, placed after the first."""
    run = _read(SB3 / "console.log")
    first, second = run.phases
    assert (first.first_step, first.last_step) == (256, 2048)
    assert second.first_step == 2049 and "new session" in second.detail
    assert curve(run.scalars, "train/value_loss").keys() == set(range(512, 2049, 256))  # PPO's only
    exploration = curve(run.scalars, "rollout/exploration_rate")  # DQN's 17 tables, its last at 0.05
    assert len(exploration) == 17 and min(exploration) == 2049 and exploration[max(exploration)] == 0.05


def test_baselines_tables_with_whole_keys(tmp_path):
    """OpenAI Baselines' logger (and stable-baselines'): whole keys in alphabetical order, no sections."""
    table = ("---------------------------------------\n"
             "| approxkl           | 0.00022487858  |\n"
             "| eplenmean          | 22.6           |\n"
             "| eprewmean          | {reward:<8.3g}       |\n"
             "| misc/nupdates      | {update:<8}       |\n"
             "| misc/total_timesteps | {steps:<8}     |\n"
             "| policy_entropy     | 0.69           |\n"
             "---------------------------------------\n")
    text = "".join(table.format(reward=20 + i, update=i, steps=2048 * i) for i in range(1, 4))
    path = write(tmp_path / "log.txt", "Logging to /tmp/openai-2019\n" + text)
    assert get_reader("sb3_console").sniff(path, path.read_bytes()[:HEAD_BYTES])
    run = _read(path)
    assert curve(run.scalars, "eprewmean") == {2048: 21, 4096: 22, 6144: 23}
    assert "misc/nupdates" not in set(run.scalars["tag"]) and "misc/total_timesteps" not in set(run.scalars["tag"])


def test_tables_without_timesteps_text_values_and_a_cut_table(tmp_path):
    text = ("-------------------------\n"
            "| eval/            |     |\n"
            "|    mean_reward   | 9.5 |\n"
            "|    env           | CartPole-v1 |\n"
            "-------------------------\n"
            "-------------------------\n"
            "| eval/            |     |\n"
            "|    mean_reward   | 12  |\n"
            "-------------------------\n"
            "-------------------------\n"
            "| eval/            |     |\n"
            "|    mean_reward   | 15  |\n")  # the job stopped before the closing rule
    run = _read(write(tmp_path / "train.log", text))
    assert curve(run.scalars, "eval/mean_reward") == {0: 9.5, 1: 12, 2: 15}
    notes = notes_text(run)
    assert "3 table(s) without timesteps or a counter placed by their number" in notes
    assert "1 value(s) that are no numbers skipped" in notes
    assert "the last table has no closing rule" in notes


def test_markdown_tables_and_other_pipes_are_no_logger_table(tmp_path):
    for text in ("| model | acc |\n|---|---|\n| a | 0.5 |\n| b | 0.7 |\n",
                 "-----\n| loss | 0.5 |\nnothing else\n-----\n"):
        path = write(tmp_path / "README.log", text)
        assert not get_reader("sb3_console").sniff(path, path.read_bytes())


def _random_log(seed: int) -> str:
    """Tables as SB3's and Baselines' loggers print them, with what a log may hold besides: sections and whole
    keys, keys of any length (cut short with '...'), text values, tables without timesteps, a second agent whose
    count starts over, text between tables."""
    rng = random.Random(seed)
    keys = ["rollout/ep_len_mean", "rollout/ep_rew_mean", "time/fps", "time/iterations", "time/time_elapsed",
            "time/total_timesteps", "train/approx_kl", "train/policy_gradient_loss", "train/n_updates",
            "eval/mean_reward", "eprewmean", "misc/serial_timesteps", "loss/a_very_long_key_name_that_was_cut..."]
    out, steps = ["Using cpu device\n"], 0
    for _ in range(rng.randint(5, 40)):
        steps = 0 if rng.random() < 0.05 else steps + rng.choice([128, 2048])
        chosen = sorted(rng.sample(keys, rng.randint(1, len(keys))))
        if rng.random() < 0.8 and "time/total_timesteps" not in chosen:
            chosen.append("time/total_timesteps")
        rows, section = [], ""
        for key in sorted(chosen):
            value = (str(steps) if key.endswith("total_timesteps") else rng.choice(
                [f"{rng.uniform(-50, 50):<8.3g}", str(rng.randint(0, 999)), "nan", "CartPole-v1", "1e+03", ""]))
            head = key[: key.find("/") + 1] if rng.random() < 0.7 else ""
            if head and head != section:
                section = head
                rows.append((head, ""))
            rows.append(("   " + key[len(head):] if head else key, value.strip()))
        width, value_width = max(len(k) for k, _ in rows), max(max(len(v) for _, v in rows), 1)
        rule = "-" * (width + value_width + 7)
        out.append("\n".join([rule, *(f"| {k:<{width}} | {v:<{value_width}} |" for k, v in rows), rule]) + "\n")
        if rng.random() < 0.1:
            out.append("Eval num_timesteps=1000, episode_reward=9.40 +/- 0.66\n")
    return "".join(out)


@pytest.mark.parametrize("seed", range(8))
def test_tables_read_at_once_equal_tables_read_row_by_row(seed, tmp_path, monkeypatch):
    """The whole tables of a chunk read with numpy give the rows, notes and sessions of the row-by-row reading,
    wherever the chunks are cut."""
    path = write(tmp_path / "train.log", _random_log(seed))
    read_both_ways("sb3_console", SB3ConsoleParser, path, monkeypatch, (None, 1 << 10, 1500, 3000))


def test_the_real_logs_read_at_once_equal_row_by_row(monkeypatch):
    for path in (SB3 / "console.log", SB3 / "ppo" / "log.txt", SB3 / "dqn" / "log.txt"):
        read_both_ways("sb3_console", SB3ConsoleParser, path, monkeypatch, (None, 1 << 10, 4096))


def test_tables_between_the_redraws_of_sb3s_progress_bar(tmp_path, monkeypatch):
    """``learn(progress_bar=True)``: rich's bar redrawn after carriage returns between the tables (the logger
    writes its tables through tqdm.write, whole). The same rows as without the bar, at once and row by row."""
    text = (SB3 / "ppo" / "log.txt").read_text()
    bar = "".join(f"\r {p:>3}% {'━' * (p // 4)} {p * 20:,}/2,048  [ 0:00:01 < 0:00:01 , 1,311 it/s ]"
                  for p in (25, 50, 75))
    with_bar = text.replace("-\n-", "-\n" + bar + "\n-")
    assert with_bar != text
    path = write(tmp_path / "console.log", with_bar)
    run = read_both_ways("sb3_console", SB3ConsoleParser, path, monkeypatch, (None, 1 << 10))
    plain = _read(SB3 / "ppo" / "log.txt")
    assert run.scalars[["tag", "step", "value"]].equals(plain.scalars[["tag", "step", "value"]])
