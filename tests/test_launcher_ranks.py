"""Per-rank console output of the common launchers is one run with a ``rank`` column (#22).

The fixtures in tests/fixtures/distributed/launchers/ were written by really running multi-process
torch DDP jobs (gloo, CPU) under torchrun (``--tee``, ``--log-dir``) and, for srun's ``--label`` and
per-task files and Open MPI's ``--tag-output``, with their line formats: see generate.py and
TRUTH.json there.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import tanalyze
from tanalyze.readers.text import _prefix

LAUNCHERS = Path(__file__).parent / "fixtures" / "distributed" / "launchers"
TRUTH = json.loads((LAUNCHERS / "TRUTH.json").read_text())
CASES = sorted(TRUTH["cases"])
#: a rank's step line as each case prints it, with the launcher's prefix (the rank) before it
_STEP = re.compile(r"^(?P<prefix>.*?)(?:iter|step) (?P<step>\d+)(?::| \|) loss (?P<loss>[\d.]+)", re.M)


def _expected_losses(case: str) -> dict[int, dict[int, float]]:
    """Each rank's loss by step, read from the fixture with a plain pattern (the rank from the layout)."""
    found: dict[int, dict[int, float]] = {}
    for path in sorted(p for p in (LAUNCHERS / case).rglob("*") if p.is_file()):
        for m in _STEP.finditer(path.read_text()):
            if case == "srun_tasks_stopped":
                rank = path.stem.rsplit("_", 1)[1]
            elif case == "torchrun_logdir_stopped":
                rank = path.parent.name
            else:
                rank = re.search(r"\d+(?=\]:|: |\]<)", m.group("prefix")).group(0)
            found.setdefault(int(rank), {})[int(m.group("step"))] = float(m.group("loss"))
    return found


def _load(path: Path, **kwargs) -> tanalyze.Logs:
    return tanalyze.load(path, cache=kwargs.pop("cache", False), **kwargs)


@pytest.mark.parametrize("case", CASES)
def test_one_run_per_job_with_every_ranks_values(case):
    truth = TRUTH["cases"][case]
    logs = _load(LAUNCHERS / case)
    assert len(logs.runs) == truth["runs"] == 1
    frame = logs.scalars
    assert str(frame["rank"].dtype) == "Int64"
    assert sorted(frame["rank"].dropna().unique().tolist()) == truth["ranks"]
    loss = frame[frame["tag"] == "loss"]
    assert loss["rank"].notna().all()
    expected = _expected_losses(case)
    assert sorted(expected) == truth["ranks"]
    for rank, by_step in expected.items():
        mine = loss[loss["rank"] == rank].set_index("step")["value"].to_dict()
        assert mine == by_step, rank
        assert max(mine) == truth["last_steps"][str(rank)]


@pytest.mark.parametrize("case", [c for c in CASES if TRUTH["cases"][c]["straggler"] is not None])
def test_the_straggler_rank_is_named(case):
    logs = _load(LAUNCHERS / case)
    (name,) = logs.runs
    findings = [f for f in tanalyze.diagnose(logs)[name].findings if f.code == "straggler_rank"]
    assert len(findings) == 1
    assert findings[0].message.startswith(f"Rank {TRUTH['cases'][case]['straggler']} is a straggler")


@pytest.mark.parametrize("case", [c for c in CASES if TRUTH["cases"][c]["stopped"] is not None])
def test_the_stopped_rank_is_found(case):
    truth = TRUTH["cases"][case]
    logs = _load(LAUNCHERS / case)
    (name,) = logs.runs
    diagnosis = tanalyze.diagnose(logs)[name]
    (finding,) = [f for f in diagnosis.findings if f.code == "rank_stopped"]
    stopped = truth["stopped"]
    last = truth["last_steps"][str(stopped)]
    assert finding.message.startswith(f"Rank {stopped} stopped logging at step {last}")


def test_torchrun_log_dir_is_one_run_named_by_its_run_id_with_each_ranks_stderr():
    logs = _load(LAUNCHERS / "torchrun_logdir_stopped")
    (name,) = logs.runs
    (job,) = (LAUNCHERS / "torchrun_logdir_stopped" / "logs").iterdir()
    assert name == f"logs/{job.name}"
    info = logs.runs[name]
    assert sorted(Path(f).relative_to(job).as_posix() for f in info.files) == [
        "attempt_0/0/stderr.log", "attempt_0/0/stdout.log", "attempt_0/1/stderr.log", "attempt_0/1/stdout.log"]
    assert sorted(p.rank for p in info.sources) == [0, 1]
    assert info.status.status == "crashed" and info.status.exception.startswith("RuntimeError")  # rank 0's stderr: the all-reduce failed when rank 1 died
    assert logs.not_read == ()


def test_torchrun_restarts_are_attempts_of_one_run(tmp_path):
    (job,) = (LAUNCHERS / "torchrun_logdir_stopped" / "logs").iterdir()
    copy = tmp_path / "logs" / job.name
    shutil.copytree(job / "attempt_0", copy / "attempt_0")
    shutil.copytree(job / "attempt_0", copy / "attempt_1")  # the restart logged the same steps again
    logs = _load(tmp_path / "logs")
    assert list(logs.runs) == [job.name]
    loss = logs.scalars[logs.scalars["tag"] == "loss"]
    assert loss.groupby("rank").size().to_dict() == {
        int(r): s + 1 for r, s in TRUTH["cases"]["torchrun_logdir_stopped"]["last_steps"].items()}
    assert "rank 1 (attempt 1)" in "\n".join(logs.runs[job.name].notes)


def test_no_join_keeps_torchrun_rank_folders_apart():
    logs = _load(LAUNCHERS / "torchrun_logdir_stopped", join=False)
    assert len(logs.runs) == 2


def test_a_grown_prefixed_log_read_on_through_the_cache_equals_a_fresh_read(tmp_path, monkeypatch):
    from tanalyze.readers.text import _ranked

    joined = []
    join = _ranked.join
    monkeypatch.setattr(_ranked, "join", lambda head, tail: joined.append(tail.state["lanes"].keys()) or join(head, tail))
    source = (LAUNCHERS / "torchrun_tee_straggler" / "console.log").read_bytes()
    cut = source.index(b"[default1]:iter 17")
    cut = cut + 9  # mid-line: the last line is cut, and the rest comes later
    log = tmp_path / "run" / "console.log"
    log.parent.mkdir()
    log.write_bytes(source[:cut])
    cache = tmp_path / "cache"
    first = _load(log.parent, cache=cache)
    assert first.scalars["step"].max() < 29
    with open(log, "ab") as handle:
        handle.write(source[cut:])
    grown = _load(log.parent, cache=cache)
    assert [sorted(keys) for keys in joined] == [["-1", "0", "1", "2"]]  # read on from the cut, lane by lane
    fresh = _load(log.parent)
    columns = ["tag", "rank", "step"]
    a = grown.scalars.sort_values(columns).reset_index(drop=True)
    b = fresh.scalars.sort_values(columns).reset_index(drop=True)
    assert a.equals(b)
    assert len(b) == 2 * 3 * 30
    assert grown.runs["run"].notes == fresh.runs["run"].notes


@pytest.mark.parametrize("lines, expected", [
    ([f"[default{i % 2}]:iter {i}: loss 1.0" for i in range(6)], "torchrun"),
    ([f"[trainer{i % 2}]:step {i}" for i in range(6)], "torchrun"),
    ([f"[{i % 2}]:step {i}" for i in range(6)], "torchrun"),
    ([f"[1,{i % 2}]<stdout>:step {i}" for i in range(6)], "open-mpi"),
    ([f"{i % 2}: step {i}" for i in range(6)], "srun"),
    ([f"{i % 12:>2}: step {i}" for i in range(48)], "srun"),
    # no launcher: torch's own [rank0]: on a traceback, a numbered list, DeepSpeed's [Rank 0]
    (["step 1 loss 2", "[rank0]: Traceback (most recent call last):", "[rank0]:   File \"x.py\", line 1",
      "[rank0]: RuntimeError: boom"], None),
    ([f"{i}: item number {i}" for i in range(1, 30)], None),
    ([f"[Rank 0] step={i}, skipped=0, lr=[0.1]" for i in range(6)], None),
    (["epoch 1: loss 2", "epoch 2: loss 1", "done"], None),
    ([f"(TaskRunner pid=625502) step:{i} - loss:1.0" for i in range(6)], "ray"),
])
def test_prefix_detection(lines, expected):
    assert _prefix.detect("\n".join(lines) + "\n") == expected


def test_nested_prefixes_are_stripped_and_unprefixed_lines_are_the_launchers():
    text = "W1203 launcher warning\n[default1]:iter 0: loss 1\n[default0]:[rank0]: Traceback (most recent call last):\n"
    assert _prefix.split(text, "torchrun") == {
        -1: ["W1203 launcher warning"], 1: ["iter 0: loss 1"], 0: ["Traceback (most recent call last):"]}


def test_no_real_log_is_taken_for_a_launchers_prefixed_output(real_logs):
    from tanalyze.readers.text._lines import sniff_window

    prefixed = []
    for path in sorted(real_logs.rglob("*")):
        if path.is_file() and path.suffix in (".log", ".txt", ".out", "") and path.stat().st_size < 50 << 20:
            found = _prefix.detect(sniff_window(path))
            if found:
                prefixed.append((path.relative_to(real_logs).as_posix(), found))
    # only the one log whose lines carry Ray's actor prefix
    assert prefixed == [("distributed_logs/Foo1szz__verl/train.out", "ray")]


def test_a_ray_job_is_read_with_the_actor_prefix_removed(real_logs):
    # verl's PPO driver prints "(TaskRunner pid=625502) step:1 - actor/entropy:0.4634… - …" (PROVENANCE.md:
    # 21 steps, step 20 printed twice around a checkpoint save, then a RayTaskError)
    logs = _load(real_logs / "distributed_logs" / "Foo1szz__verl")
    (info,) = logs.runs.values()
    assert info.format == "text" and "rank" not in logs.scalars.columns
    entropy = logs.scalars[logs.scalars["tag"] == "actor/entropy"]
    assert entropy["step"].tolist() == list(range(1, 22))
    assert entropy["value"].iloc[0] == 0.463403582572937
    assert info.status.status == "crashed" and "RayTaskError(ActorUnavailableError)" in info.status.exception
    assert "the launcher's line prefix (ray) removed before reading" in info.notes


def test_an_srun_labelled_log_that_crashed_says_so_with_its_exception(tmp_path):
    lines = []
    for step in range(10):
        lines += [f"0: step {step} | loss {1 / (step + 1):.4f}", f"1: step {step} | loss {1 / (step + 2):.4f}"]
    lines += ["1: Traceback (most recent call last):", '1:   File "train.py", line 3, in <module>', "1: RuntimeError: boom"]
    (tmp_path / "slurm-77.out").write_text("\n".join(lines) + "\n")
    logs = _load(tmp_path)
    info = logs.runs[tmp_path.name]
    assert info.status.status == "crashed" and info.status.exception == "RuntimeError" and "RuntimeError: boom" in info.status.reason
    loss = logs.scalars[logs.scalars["tag"] == "loss"]
    assert loss.groupby("rank")["value"].last().to_dict() == {0: 0.1, 1: round(1 / 11, 4)}


def test_a_prefixed_log_names_its_file_in_its_warnings_and_keeps_the_other_ranks(tmp_path):
    # rank 1's last line was cut mid-write: a warning for it, every other line read
    text = "".join(f"[default{r}]:iter {s}: loss {s + r}.5, time 1.0ms\n" for s in range(5) for r in (0, 1))
    (tmp_path / "console.log").write_text(text + "[default1]:iter 5: loss 2.")
    logs = _load(tmp_path)
    loss = logs.scalars[logs.scalars["tag"] == "loss"]
    assert loss.groupby("rank")["step"].max().to_dict() == {0: 4, 1: 4}
    (warning,) = logs.runs[tmp_path.name].warnings
    assert "console.log" in warning.file and "without a line break" in warning.message


@pytest.mark.parametrize("name, spell", [
    ("torchrun", "[default{}]:"), ("torchrun", "[{}]:"), ("open-mpi", "[1,{}]<stderr>: "), ("srun", "{:>2}: ")])
def test_the_fast_split_equals_the_line_by_line_one(name, spell):
    lines = []
    for i in range(200):  # ranks interleaved, launcher lines, blank lines, nested prefixes, no final line break
        rank = (i * 7) % 12
        lines.append("" if i % 17 == 0 else f"launcher {i}" if i % 13 == 0 else
                     spell.format(rank) + (f"[rank{rank}]: Traceback" if i % 11 == 0 else f"iter {i}: loss 1"))
    text = "\n".join(lines)
    assert _prefix.split(text, name) == _prefix.split_lines(text, name)
    assert _prefix.split(text + "\n", name) == _prefix.split_lines(text + "\n", name)
    assert len(_prefix.split(text, name)) == 13


def test_one_rank_spelled_two_ways_keeps_its_lines_in_order():
    text = "[default0]:iter 1: loss 1\n[0]:iter 2: loss 1\n[default0]:iter 3: loss 1\n"
    assert _prefix.split(text, "torchrun") == {0: ["iter 1: loss 1", "iter 2: loss 1", "iter 3: loss 1"]}


@pytest.mark.parametrize("relative", [
    "hf_text_log/Jaong__Checkpoint-of-CPT/cmd.txt",
    "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/MoE/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log",
    "deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training/"
    "step2_reward_model_finetuning/training_log_output/opt-350m_globalBatchSize-64.log",
    "modded_nanogpt_logs/KellerJordan__modded-nanogpt/records/track_1_short/2026-07-17_FP8DownProjection/baseline/"
    "1d7c6c03-846f-4dc8-9809-dcb1e42496da.txt",
    "other_text/0Xero7__slm_training/classic.txt",
])
def test_any_console_format_reads_the_same_under_a_launchers_prefix(real_logs, tmp_path, relative):
    # a real log as rank 0 printed it under torchrun --tee, with rank 1's warnings between its lines
    source = real_logs / relative
    if not source.is_file():
        pytest.skip(f"{relative} is not in the corpus")
    plain = _load(source)
    lines = []
    for index, line in enumerate(source.read_text(errors="replace").splitlines()):
        lines.append("[default0]:" + line)
        if index % 50 == 0:
            lines.append("[default1]:W1203 a warning on rank 1")
    prefixed = tmp_path / source.name
    prefixed.write_text("\n".join(lines) + "\n")
    logs = _load(prefixed)
    assert [info.format for info in logs.runs.values()] == [info.format for info in plain.runs.values()]
    mine = logs.scalars
    assert set(mine["rank"].dropna()) == {0}
    columns = ["tag", "step", "value"]
    assert mine[columns].reset_index(drop=True).equals(plain.scalars[columns].reset_index(drop=True))


def test_srun_label_around_torchrun_on_two_nodes_gives_global_ranks(tmp_path):
    # srun --label starts one torchrun --tee per node: "<node task>: [default<local rank>]:<line>"
    node = (LAUNCHERS / "torchrun_tee_straggler" / "console.log").read_text().splitlines()
    lines = [f"{task}: {line}" for line in node for task in (0, 1)]
    (tmp_path / "slurm-99.out").write_text("\n".join(lines) + "\n")
    logs = _load(tmp_path)
    loss = logs.scalars[logs.scalars["tag"] == "loss"]
    assert sorted(loss["rank"].unique().tolist()) == [0, 1, 2, 3, 4, 5]
    by_rank = {rank: group.set_index("step")["value"].to_dict() for rank, group in loss.groupby("rank")}
    expected = _expected_losses("torchrun_tee_straggler")
    for rank in range(3):
        assert by_rank[rank] == by_rank[rank + 3] == expected[rank]
    (name,) = logs.runs
    findings = [f for f in tanalyze.diagnose(logs)[name].findings if f.code == "straggler_rank"]
    # ranks 2 and 5 (local rank 2 of each node) are the slow ones: one finding names one of them
    assert len(findings) == 1 and re.match(r"Rank [25] is a straggler", findings[0].message)
