"""Run status: exact statuses of jobs that really crashed, ran out of memory, were killed or hung,
and of the real crash / distributed logs of the corpus."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tanalyze.logs import load
from tanalyze.runstatus import (
    Evidence,
    RunStatus,
    Signal,
    WandbExit,
    classify,
    following,
    run_status,
    scan_console,
)
from tests.conftest import real_log

CRASHES = Path(__file__).resolve().parents[1] / "fixtures" / "crashes"
LATER = time.time() + 10 * 86400  # long after the fixtures were written: nothing counts as running


@pytest.mark.parametrize(
    ("job", "status", "exception", "line", "allocation"),
    [
        ("lightning_finished", "finished", "", 17, ""),
        ("lightning_crashed", "crashed", "ValueError", 91, ""),
        ("lightning_host_oom", "oom", "RuntimeError", 92, "17179869184 bytes"),
        ("wandb_crashed", "crashed", "RuntimeError", 35, ""),
        ("gloo_timeout", "nccl_timeout", "", 20, ""),
    ],
)
def test_console_of_a_real_job(job, status, exception, line, allocation):
    got = run_status([str(CRASHES / job / "train.log")], now=LATER)
    assert got.status == status
    assert got.evidence[0].line == line
    assert got.evidence[0].file.endswith(f"{job}/train.log")
    if exception:
        assert got.exception == exception
    assert got.allocation == allocation


def test_traceback_gives_exception_and_last_frame():
    got = run_status([str(CRASHES / "lightning_crashed" / "train.log")], now=LATER)
    assert got.reason == "ValueError: loss went bad at step 25"
    assert got.frame.endswith("lightning_crashed/job.py:21 in training_step")
    assert got.evidence[0].text == "ValueError: loss went bad at step 25"


@pytest.mark.parametrize("name", ["workerlog.0", "train.log.1"])
def test_a_ranks_log_of_a_launcher_or_a_rotated_log_is_a_console_whose_traceback_counts(tmp_path, name):
    """PaddlePaddle's distributed launch writes each rank's console to ``log/workerlog.N``; a rotated log ends in a
    number: a crash at their end is read as in any console."""
    shutil.copy(CRASHES / "lightning_crashed" / "train.log", tmp_path / name)
    got = run_status([str(tmp_path / name)], now=LATER)
    assert got.status == "crashed" and got.reason == "ValueError: loss went bad at step 25"


def test_gloo_timeout_names_the_timed_out_collective():
    got = run_status([str(CRASHES / "gloo_timeout" / "train.log")], now=LATER)
    assert "Timed out waiting 5000ms for recv operation" in got.evidence[0].text
    # the launcher's summary lists rank 1's SIGTERM among the failures: not what ended the job
    assert got.status != "killed"


def test_killed_job_without_end_marker_is_killed_once_quiet_and_running_while_it_grows():
    log = str(CRASHES / "lightning_killed" / "train.log")
    assert run_status([log], now=LATER).status == "killed"
    with following():  # tanalyze watch: a log that changed a moment ago is being written
        assert run_status([log], now=os.stat(log).st_mtime + 10).status == "running"


def test_a_fresh_copy_of_a_killed_run_is_not_running(tmp_path):
    # logs copied or checked out a moment ago all look fresh: without a writer at work, the log decides
    log = tmp_path / "train.log"
    log.write_bytes((CRASHES / "lightning_killed" / "train.log").read_bytes())
    assert run_status([str(log)]).status == "killed"
    config = tmp_path / "hparams.yaml"
    config.write_text("lr: 0.1\n")
    old = os.stat(log).st_mtime - 3600  # a live run: its configuration as old as the run, its log growing
    os.utime(config, (old, old))
    assert run_status([str(log), str(config)]).status == "running"


def _aged_copy(tmp_path: Path, job: str) -> Path:
    target = tmp_path / job
    shutil.copytree(CRASHES / job, target)
    old = time.time() - 86400
    for path in target.rglob("*"):
        os.utime(path, (old, old))
    return target


@pytest.mark.parametrize(
    ("job", "status"),
    [("lightning_finished", "finished"), ("lightning_crashed", "crashed"), ("lightning_host_oom", "oom"),
     ("lightning_killed", "killed"), ("wandb_crashed", "crashed"), ("wandb_killed", "killed")],
)
def test_load_attaches_the_status_to_each_run(tmp_path, job, status):
    logs = load(_aged_copy(tmp_path, job), cache=False)
    (info,) = logs.runs.values()
    assert info.status.status == status
    assert info.to_dict()["status"]["status"] == status


def test_wandb_exit_record_alone_decides(tmp_path):
    folder = _aged_copy(tmp_path, "wandb_crashed")
    (folder / "train.log").unlink()  # no console: the run record's exit code speaks
    (info,) = load(folder, cache=False).runs.values()
    assert info.status.status == "crashed"
    assert info.status.reason.startswith("W&B recorded exit code 1")
    assert info.status.evidence[0].file.endswith(".wandb")
    folder = _aged_copy(tmp_path, "wandb_killed")
    (folder / "train.log").unlink()
    (info,) = load(folder, cache=False).runs.values()
    assert info.status.status == "killed"
    assert "no exit record" in info.status.reason


@pytest.mark.parametrize(
    ("relative", "status", "line", "detail"),
    [
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11672072.log", "oom", 63, "39612 MiB for activations"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11672087.log", "oom", 63, "39612 MiB for activations"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11672096.log", "oom", 63, "39612 MiB for activations"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11672255.log", "killed", 976, "cancelled by SLURM (time limit)"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11673594.log", "crashed", 1, "Assertion `total_batch_size"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11678978.log", "crashed", 68, "CUDA error: misaligned address"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11679004.log", "crashed", 69, "cuBLAS error: 13"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11679010.log", "killed", 168, "cancelled by SLURM (time limit)"),
        ("crash_logs/HectorFCardenas__llm.c/gpt2_train.11679031.log", "killed", 16463, "cancelled by SLURM"),
        ("llmc_logs/HectorFCardenas__llm.c/gpt2_train.11672114.log", "killed", 824, "cancelled by SLURM (time limit)"),
        ("llmc_logs/HectorFCardenas__llm.c/gpt2_train.11685414.log", "finished", 19800, "last step (19560/19560)"),
        ("distributed_logs/Foo1szz__verl/train.out", "crashed", 969, "RayTaskError(ActorUnavailableError)"),
        ("distributed_logs/HEISENYAN__openvla-oft/slurm.out", "killed", 3915, "cancelled by SLURM"),
        ("crash_logs/MinhwaCho__hyphae_yolov7/wandb/run-20240111_171811-jb3cut2s/files/output.log", "crashed", 92,
         "Exception: Dataset not found."),
    ],
)
def test_real_logs_exact_status_of_crashes_and_distributed_jobs(relative, status, line, detail):
    path = real_log(relative)
    got = run_status([str(path)], run_format="llmc" if "llm.c" in relative else "", now=LATER)
    assert (got.status, got.evidence[0].line) == (status, line)
    assert detail in got.reason + " " + got.allocation


MEGATRON = "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/"


@pytest.mark.parametrize(
    ("relative", "fmt", "status", "line", "detail"),
    [
        (MEGATRON + "random_ltd/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log", "megatron",
         "killed", 3225, "the job received SIGTERM"),
        (MEGATRON + "random_ltd/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log", "megatron",
         "killed", 4684, "the job received SIGTERM"),
        (MEGATRON + "MoE/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log", "megatron",
         "killed", 2753, "ends without the end marker"),
        ("hf_text_log/Jaong__Checkpoint-of-CPT/cmd.txt", "hf_console", "finished", 457, "train_runtime"),
        ("wandb_local/jackokeefe11__nanoGPT/wandb/run-20240216_065242-ibal0bht/files/output.log", "", "oom", 46,
         "48.00 MiB"),
        ("wandb_local/druidowm__nanoGPT/wandb/run-20241022_232419-18kjtmnl/files/output.log", "", "crashed", 102,
         "BackendCompilerFailed"),
        ("wandb_local/druidowm__nanoGPT/wandb/run-20241012_160630-jqe8zy9r/files/output.log", "", "killed", 2594,
         "KeyboardInterrupt"),
        ("modded_nanogpt_logs/KellerJordan__modded-nanogpt/records/track_2_medium", "", "finished", None,
         "peak memory"),
    ],
)
def test_real_logs_exact_status_of_other_formats(relative, fmt, status, line, detail):
    path = real_log(relative)
    files = sorted(str(p) for p in path.rglob("*.txt"))[:1] if path.is_dir() else [str(path)]
    got = run_status(files, run_format=fmt, now=LATER)
    assert got.status == status
    if line is not None:
        assert got.evidence[0].line == line
    assert detail in got.reason + " " + got.allocation + " " + got.evidence[0].text


def test_real_crashed_wandb_run_loaded(real_logs):
    logs = load(real_logs / "crash_logs" / "MinhwaCho__hyphae_yolov7", cache=False)
    (info,) = logs.runs.values()
    assert info.status.status == "crashed"
    assert info.status.exception == "Exception"
    assert info.status.frame.endswith("utils/general.py:173 in check_dataset")


def test_tail_is_bounded_and_line_numbers_exact(tmp_path):
    log = tmp_path / "train.log"
    lines = [f"step {i} loss 1.0" for i in range(40000)]  # ~700 kB: more than the tail read
    lines += ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
              "    main()", "KeyError: 'labels'"]
    log.write_text("\n".join(lines) + "\n")
    (signal,) = scan_console(log)
    assert (signal.kind, signal.exception, signal.evidence.line) == ("traceback", "KeyError", 40004)
    assert signal.frame == "train.py:9 in <module>"


def test_unreadable_or_binary_console_gives_no_signal(tmp_path):
    assert scan_console(tmp_path / "missing.log") == []
    junk = tmp_path / "junk.log"
    junk.write_bytes(bytes(range(256)) * 100)
    assert all(isinstance(s, Signal) for s in scan_console(junk))


def test_classifier_last_event_decides_and_oom_before_a_kill_is_oom():
    def sig(kind, line, **kw):
        return Signal(kind, Evidence("x.log", line, kind), **kw)

    assert classify([sig("traceback", 10, exception="ValueError"), sig("finished", 50)]).status == "finished"
    assert classify([sig("finished", 10), sig("killed", 50)]).status == "killed"
    assert classify([sig("oom", 40, allocation="2.00 GiB"), sig("killed", 45)]).status == "oom"
    assert classify([sig("oom", 40), sig("traceback", 60, exception="RuntimeError")]).status == "oom"
    assert classify([sig("nccl", 30), sig("traceback", 60, exception="x.ChildFailedError")]).status == "nccl_timeout"
    assert classify([], wandb=WandbExit("r.wandb", 137)).status == "killed"
    assert classify([], wandb=WandbExit("r.wandb", 0)).status == "finished"
    assert classify([]) == RunStatus("unknown", classify([]).reason)
    assert classify([], newest_mtime=100.0, newest_file="a.log", now=150.0).status == "running"


def test_report_json_and_summary_table_show_the_status(tmp_path):
    import json

    import jsonschema

    import tanalyze
    from tanalyze.cli import main

    folder = tmp_path / "runs"
    for job in ("lightning_crashed", "lightning_finished"):
        _aged_copy(folder, job)
    out_html, out_json = tmp_path / "r.html", tmp_path / "r.json"
    assert main(["report", str(folder), "-o", str(out_html), "--json", str(out_json), "-q", "--no-cache",
                 "-j", "1"]) == 0
    report = json.loads(out_json.read_text())
    schema = json.loads((Path(tanalyze.__file__).parent / "schemas" / "report.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(report)
    status = {r["run"].split("/")[0]: r["status"] for r in report["runs"]}
    assert status["lightning_crashed"]["status"] == "crashed"
    assert status["lightning_crashed"]["exception"] == "ValueError"
    assert status["lightning_crashed"]["evidence"][0]["line"] == 91
    assert status["lightning_finished"]["status"] == "finished"
    html = out_html.read_text()
    assert 'data-status="crashed"' in html and 'data-status="finished"' in html
    broken = json.loads(json.dumps(report))
    broken["runs"][0]["status"]["status"] = "exploded"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)


def test_check_fails_a_crashed_candidate_with_the_reason(tmp_path, capsys):
    from tanalyze.cli import main

    folder = _aged_copy(tmp_path, "lightning_host_oom")
    code = main(["check", str(folder), "--no-cache", "-j", "1"])
    out = capsys.readouterr().out
    assert code == 1
    line = next(x for x in out.splitlines() if "run_status" in x)
    assert "FAIL" in line and "oom: host out of memory (failed allocation: 17179869184 bytes)" in line
    assert "train.log:92" in line
    folder = _aged_copy(tmp_path, "lightning_finished")
    main(["check", str(folder), "--no-cache", "-j", "1"])
    line = next(x for x in capsys.readouterr().out.splitlines() if "run_status" in x)
    assert "PASS" in line and "finished" in line


def test_runs_cli_shows_status_of_runs_and_of_consoles_without_metrics(tmp_path, capsys):
    from tanalyze.cli import main

    folder = _aged_copy(tmp_path, "lightning_killed")
    assert main(["runs", str(folder), "--no-cache", "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert "status: KILLED  the log ends without the end marker" in out
    gloo = _aged_copy(tmp_path, "gloo_timeout")
    assert main(["runs", str(gloo), "--no-cache"]) == 0  # no metrics, but a failed job: a run of its own
    captured = capsys.readouterr()
    assert "[job-console]  1 file(s), 0 tag(s), 0 points" in captured.out
    assert "status: NCCL_TIMEOUT" in captured.out and "train.log:20:" in captured.out
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "train.log").write_text("Training completed. Do not forget to share your model\n")
    assert main(["runs", str(tmp_path / "notes"), "--no-cache"]) == 2  # finished, no metrics: not a run
    captured = capsys.readouterr()
    assert "status: FINISHED" in captured.out and "no training logs found" in captured.err


def test_watchdog_timeout_then_abort_and_cancel_is_a_distributed_hang(tmp_path):
    # the shape of a torchrun job whose NCCL watchdog fired: the rank aborts (SIGABRT), the launcher reports
    # it as the root cause, then the batch system cancels the job
    log = tmp_path / "slurm-42.out"
    log.write_text(
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1201, OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=600000) ran for 600046 milliseconds "
        "before timing out.\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "Root Cause (first observed failure):\n[0]:\n  exitcode  : -6 (pid: 812)\n"
        "  traceback : Signal 6 (SIGABRT) received by PID 812\n"
        "slurmstepd: error: *** JOB 42 ON node1 CANCELLED AT 2024-01-01T00:00:00 ***\n")
    got = run_status([str(log)], now=LATER)
    assert got.status == "nccl_timeout"
    assert got.evidence[0].line == 1 and "Watchdog caught collective operation timeout" in got.evidence[0].text


@pytest.mark.parametrize(
    ("tail", "status", "reason"),
    [
        ("Epoch 7: val_loss did not improve. Signaling Trainer to stop.\n", "finished", "early stopping"),
        ("Training completed. Do not forget to share your model on huggingface.co/models =)\n", "finished",
         "training completed"),
        ("slurmstepd: error: Detected 1 oom_kill event in StepId=7.0. Some of your processes may have been killed "
         "by the cgroup out-of-memory handler.\nslurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2024-01-01T00:00:00 "
         "***\n", "oom", "host out of memory"),
        ("[rank: 0] Received SIGTERM: 15\nRequeing job 123...\n", "killed", "requeued"),
        ("[rank0]:[titan] 2025-03-12 11:10:40,120 - root - INFO - Training completed\n", "finished",
         "torchtitan: training completed"),
        ("=" * 89 + "\n| End of training | test loss  5.01 | test ppl   150.01\n" + "=" * 89 + "\n", "finished",
         "the test after training"),
        ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nRoot Cause (first observed failure):\n"
         "[0]:\n  exitcode  : -9 (pid: 9)\n  traceback : Signal 9 (SIGKILL) received by PID 9\n", "killed",
         "SIGKILL"),
        # a hand-written loop's own last words
        ("Epoch [300/300] - Train Loss: 1.2, Valid Loss: 1.9\nTraining complete.\n", "finished",
         "training completed"),
        ("=== Training Complete ===\nTraining completed in 3 days, 4:02:11\n", "finished", "training completed"),
        ("Epoch 41: val acc 0.91\nEarly stopping!\n", "finished", "early stopping ended"),
        ("[2024-05-08 04:08:04,516 INFO] Training finished after not improving. Early Stop!\n[2024-05-08 04:08:04,516 "
         "INFO] Best model found at step 1200\n", "finished", "OpenNMT-py: early stopping"),
        ("Early stopping!\nTraceback (most recent call last):\n  File \"save.py\", line 3\nOSError: disk full\n",
         "crashed", "OSError"),
    ],
)
def test_common_endings(tmp_path, tail, status, reason):
    log = tmp_path / "job.out"
    log.write_text("step 1 loss 2.0\nstep 2 loss 1.9\n" + tail)
    got = run_status([str(log)], now=LATER)
    assert got.status == status
    assert reason in got.reason


_ELASTIC_ROOT_CAUSE = (
    "Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-03_15:39:17\n  host      : localhost\n"
    "  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 6554)  (SIGKILL)\n  error_file: <N/A>\n"
    "  traceback : Signal 9 (SIGKILL) received by PID 6554\n"
    "============================================================\n")


def test_a_rank_killed_from_outside_is_killed_though_the_others_lost_their_connection(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(
        "[default0]:[rank0]: RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        "[127.0.0.1]:43731. This is typically caused by a remote worker crashing.\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + _ELASTIC_ROOT_CAUSE)
    got = run_status([str(log)], now=LATER)
    assert (got.status, got.reason) == ("killed", "rank 1 was killed (signal 9 SIGKILL), the launcher's first failure")


def test_a_watchdog_timeout_before_a_killed_root_cause_stays_a_distributed_hang(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=600000) ran for 600046 milliseconds\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + _ELASTIC_ROOT_CAUSE)
    assert run_status([str(log)], now=LATER).status == "nccl_timeout"


def test_a_small_file_without_a_failures_word_needs_no_tail_scan():
    from tanalyze.runstatus.scan import may_show_a_failure

    assert not may_show_a_failure(b"0 0.5123 0.4410 0.1 0.2\n1 0.3 0.7 0.05 0.05\n")  # a YOLO label file
    for line in (b"Traceback (most recent call last):", b"Killed", b"torch.OutOfMemoryError: CUDA out of memory",
                 b"***** Running training *****"):  # (a start with no end is a kill too)
        assert may_show_a_failure(b"noise\n" + line + b"\n"), line


def test_an_hf_trainer_state_says_the_run_finished_when_it_logged_its_end(real_logs, tmp_path):
    """trainer_state.json holds no status word, but the Trainer logs its end-of-training summary (train_runtime)
    when train() returns, and a state at global_step == max_steps is the run's last: finished. A checkpoint's state
    before the end says nothing of how the run ended."""
    (info,) = load(real_logs / "hf_trainer_state" / "CoralReefFish__whisper-tiny-nbaiLab", cache=False).runs.values()
    assert (info.format, info.status.status) == ("hf_trainer_state", "finished")
    assert info.status.reason == ("the HF Trainer logged its end-of-training summary (train_runtime 623,384 s) at step "
                                  "100,000 of max_steps 100,000")
    assert info.status.evidence[0].file.endswith("trainer_state.json")
    (info,) = load(real_logs / "hf_trainer_state" / "Ray-Cheng-11__Tau-Bench-Model-Training", cache=False).runs.values()
    assert info.status.reason == "the HF Trainer state reached its last step (global_step = max_steps = 12)"
    # the state of a checkpoint saved on the way (step 110 of 120), alone: no end recorded
    fixture = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "hf_best_off" / "checkpoint-110"
    shutil.copy(fixture / "trainer_state.json", tmp_path / "trainer_state.json")
    (info,) = load(tmp_path, cache=False).runs.values()
    assert info.status.status == "unknown"


def test_an_hf_trainer_states_end_names_the_state_that_records_it(tmp_path):
    """Checkpoint copies alone (no top-level state): the end is recorded by the newest, ``checkpoint-120`` (global_step
    = max_steps = 120), read by the reader; the evidence named the first file, ``checkpoint-110``'s (global_step 110)."""
    fixture = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "hf_best_off"
    for name in ("checkpoint-110", "checkpoint-120"):
        (tmp_path / name).mkdir()
        shutil.copy(fixture / name / "trainer_state.json", tmp_path / name / "trainer_state.json")
    (info,) = load(tmp_path, cache=False).runs.values()
    assert info.status.status == "finished" and "max_steps = 120" in info.status.reason
    assert Path(info.status.evidence[0].file).parent.name == "checkpoint-120"


def test_a_metrics_file_alone_expects_no_console_end_marker(real_logs):
    """detectron2 prints its end marker in its console (log.txt), not in metrics.json: a run read from its metrics
    file alone is not 'killed' for lacking it."""
    metrics = real_logs / "detectron2_metrics" / "Kevindic0214__detectron2_training" / "output" / "metrics.json"
    got = run_status([str(metrics)], run_format="detectron2", now=LATER)
    assert got.status == "unknown"


def test_a_keras_fits_end_that_later_epochs_follow_is_not_the_jobs_end(tmp_path):
    """A script that calls fit() again: the first fit's early stop is not how the job ended when epochs of another
    fit follow it (killed mid-fit here); the last fit's own end is."""
    keras = Path(__file__).parents[1] / "fixtures" / "keras_console"
    first = (keras / "keras3_verbose2.log").read_text()
    assert run_status([str(keras / "keras3_verbose2.log")], now=LATER).status == "finished"
    log = tmp_path / "train.log"
    log.write_text(first + (keras / "keras3_killed.log").read_text())
    assert run_status([str(log)], now=LATER).status != "finished"
    old = keras / "keras1_verbose2.log"  # four fits, the second early-stopped, the last run to its last epoch
    got = run_status([str(old)], now=LATER)
    assert got.status == "finished" and got.reason.startswith("Keras: the fit's last epoch"), got.reason


@pytest.mark.parametrize(("settings", "status"), [
    ("max_iters = 500\nlog_interval = 10\n", "finished"),
    ("max_iters = 505\nlog_interval = 10\n", "finished"),  # (its loop logs no later iteration before 505)
    ("max_iters = 5000\nlog_interval = 10\n", "unknown"),
    ("max_iters = 5000\nlog_interval = 10\n\nOverriding: max_iters = 500\n", "finished"),  # (the command line's wins)
    ("log_interval = 10\n", "unknown"),
])
def test_a_nanogpt_run_that_logged_its_last_iteration_before_max_iters_finished(tmp_path, settings, status):
    """nanoGPT prints no end marker: a run whose last iteration line is the last its loop logs before max_iters (as
    the config dump at its head gives it) finished; one that stopped earlier says nothing of how it ended. The real
    nanoGPT run of sample_runs/normal_nanogpt (its last line 'iter 500: …') under a config dump."""
    source = Path(__file__).parents[2] / "sample_runs" / "normal_nanogpt" / "train.log"
    log = tmp_path / "train.log"
    log.write_text("Overriding config with config/train_shakespeare_char.py:\n" + settings + "\n" + source.read_text())
    (info,) = load(tmp_path, cache=False).runs.values()
    assert info.format == "nanogpt" and info.status.status == status
    if status == "finished":
        assert info.status.reason.startswith("nanoGPT: its last iteration logged, 500, is the last before max_iters")


def test_a_nanogpt_run_that_crashed_after_its_last_iteration_did_not_finish(tmp_path):
    source = Path(__file__).parents[2] / "sample_runs" / "normal_nanogpt" / "train.log"
    (tmp_path / "train.log").write_text("max_iters = 500\nlog_interval = 10\n" + source.read_text()
                                        + "Traceback (most recent call last):\n  File \"train.py\", line 336, in "
                                        "<module>\n    torch.save(checkpoint, path)\nOSError: [Errno 28] No space left "
                                        "on device\n")
    (info,) = load(tmp_path, cache=False).runs.values()
    assert info.status.status == "crashed"


def test_a_json_lines_logs_final_status_record_is_the_runs_end():
    """A loop's own metrics.jsonl that ends with ``{"status": "COMPLETED", …}`` (tests/fixtures/jsonl, a real CPU
    training): the record says how the run ended, as an MLflow or Sacred run's does."""
    fixture = Path(__file__).parents[1] / "fixtures" / "jsonl" / "char_lm"
    (info,) = load(fixture, cache=False).runs.values()
    assert info.format == "jsonl" and info.status.status == "finished"
    assert info.status.reason == "its JSON-lines log recorded the run as COMPLETED"


@pytest.mark.real_logs
def test_a_yolo_results_csv_holding_every_planned_epoch_is_a_finished_run(real_logs, tmp_path):
    """Ultralytics writes a row of results.csv as each epoch ends: one holding the epochs its args.yaml (YOLOv5's
    opt.yaml) planned ran to its end. A file cut before them (a crash, a kill, an early stop) says nothing."""
    folder = real_logs / "yolo_results_csv" / "Abonia1__YOLOv8-Fire-and-Smoke-Detection" / "runs" / "detect" / "train"
    (info,) = load(folder, cache=False).runs.values()
    assert (info.format, info.status.status) == ("yolo_csv", "finished")
    assert info.status.reason == "results.csv holds the 25 epochs its configuration planned (epochs 0-24)"
    assert info.status.evidence[0].file.endswith("results.csv")
    v5 = real_logs / "yolo_results_csv" / "483172__yolov5-custom_lego_dataset-2022-06-15" / "runs" / "train" / "exp"
    (info,) = load(v5, cache=False).runs.values()
    assert info.status.reason == "results.csv holds the 50 epochs its configuration planned (epochs 0-49)"
    lines = (folder / "results.csv").read_text().splitlines()
    (tmp_path / "results.csv").write_text("\n".join(lines[:20]) + "\n")  # 19 of 25 epochs
    shutil.copy(folder / "args.yaml", tmp_path / "args.yaml")
    (info,) = load(tmp_path, cache=False).runs.values()
    assert (info.format, info.status.status) == ("yolo_csv", "unknown")


def test_a_log_that_ends_in_a_traceback_cut_before_its_exception_line_crashed(tmp_path):
    """A TRL run's console: its last step done, then its tracker's exit hook raised, and the log ends in the middle of
    that traceback's frames. It had been KILLED ("the log ends without the end marker"): a traceback is an exception
    raised, whether or not its last line was written."""
    lines = ["***** Running training *****", "{'loss': 0.0582, 'learning_rate': 1e-05, 'epoch': 2.99}",
             "100%|##########| 321/321 [07:20<00:00,  1.26s/it]swanlab: Error happened while training",
             "Error in sys.excepthook:", "Traceback (most recent call last):",
             '  File "/venv/lib/python3.11/site-packages/swanlab/data/callbacker/callback.py", line 81, in _except_handler',
             "    get_run().finish(SwanLabRunState.CRASHED, error=error)",
             '  File "/venv/lib/python3.11/site-packages/swanlab/data/run/main.py", line 237, in finish',
             "    getattr(run, \"_SwanLabRun__cleanup\")(error)", '  File "/venv/lib/python3.11/site-pa']
    (tmp_path / "train.log").write_text("\n".join(lines))
    got = run_status([str(tmp_path / "train.log")], now=LATER)
    assert got.status == "crashed"
    assert got.reason.startswith("a traceback the log ends in, cut before its exception line (last frame "
                                 "/venv/lib/python3.11/site-packages/swanlab/data/run/main.py:237 in finish)")
