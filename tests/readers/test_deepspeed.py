"""DeepSpeed / DeepSpeed-Chat console logs: the real logs of microsoft/DeepSpeedExamples and dirty cases."""

import calendar

import pandas as pd
import pytest

from tanalyze import load
from tanalyze.readers.text.deepspeed import DeepSpeedReader
from tests.conftest import real_log
from tests.readers.text_helpers import check, curve, notes_text, points, write

CHAT = "deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training"
SFT = f"{CHAT}/step1_supervised_finetuning/training_log_output/opt-1.3b-globalBatchSize128.log"
DPO = f"{CHAT}/step2_dpo_finetuning/training_log_output/opt-350M_globalBatchSize-32.log"
REWARD = f"{CHAT}/step2_reward_model_finetuning/training_log_output/opt-350m_globalBatchSize-64.log"
RLHF = f"{CHAT}/step3_rlhf_finetuning/training_log_output/actor_opt-1.3b_critic_opt-350m_globalBatchSize64.log"
VIT = "other_text/microsoft__DeepSpeedExamples/data_efficiency/vit_finetuning/out/cifar/training.log"


def _read(path):
    reader = DeepSpeedReader()
    assert reader.sniff(path, path.read_bytes()[:4096])
    (run,) = reader.read([path])
    return run


def test_sft_log_overflows_and_per_epoch_perplexity():
    run = _read(real_log(SFT))
    frame = run.scalars
    check(frame, "lr", {10: 9.649992967150629e-06, 2000: 8.051513941607355e-06}, count=736)
    check(frame, "skipped", {10: 6, 2000: 36, 7360: 139}, count=736)
    check(frame, "CurrSamplesPerSec", {2000: 171.52381463561755}, count=736)
    check(frame, "MaxMemAllocated (GB)", {10: 22.95}, count=736)
    # 16 epochs of 460 steps, evaluated before training and after each epoch
    check(frame, "eval_ppl", {0: 4998.29638671875, 8 * 460: 1.8435580730438232, 7360: 1.8085135221481323}, count=17)
    assert curve(frame, "eval_ppl").keys() == {460 * e for e in range(17)}
    # the 6 OVERFLOW lines before step 10 land on step 10, as DeepSpeed's own skipped=6 says
    check(frame, "overflow_skips", {10: 6}, count=73)
    check(frame, "loss_scale", {10: 2048.0}, count=73)
    assert frame[frame["tag"] == "overflow_skips"]["value"].sum() == 139
    lr = frame[(frame["tag"] == "lr") & (frame["step"] == 10)].iloc[0]
    assert lr["wall_time"] == pytest.approx(calendar.timegm((2023, 4, 18, 1, 46, 59)) + 0.142)
    assert lr["rank"] == 0
    assert run.warnings == [] and run.restarts == []
    assert "139 fp16 overflow (skipped step) message(s)" in notes_text(run)


def test_dpo_log_eval_rewards_and_per_micro_batch_throughput():
    run = _read(real_log(DPO))
    frame = run.scalars
    check(frame, "lr", {0: 5e-05, 1200: 2.4666365824494565e-05}, count=236)
    check(frame, "skipped", {2350: 21})
    check(frame, "eval_chosen", {0: 0.0, 2354: -31.9375}, count=2)
    check(frame, "eval_rejected", {0: 0.0, 2354: -33.96875}, count=2)
    check(frame, "eval_loss", {0: 0.693359375, 2354: 0.6650807857513428}, count=2)
    # 4,708 micro-batch lines, gradient accumulation 2: the second of each pair is the step's
    check(frame, "Latency", {1: 0.49, 1200: 0.55, 2354: 0.54}, count=2354)
    check(frame, "Samples/sec", {1: 4.06, 1200: 3.67, 2354: 3.68}, count=2354)
    assert frame[frame["tag"] == "overflow_skips"]["value"].sum() == 20
    assert "gradient accumulation 2 (the timer lines)" in notes_text(run)
    assert run.warnings == []


def test_reward_model_log():
    run = _read(real_log(REWARD))
    frame = run.scalars
    check(frame, "eval_chosen_last_scores", {0: 2.8115079402923584, 1840: 2.243525981903076}, count=2)
    check(frame, "eval_acc", {0: 0.4924241304397583, 1840: 0.6994950175285339}, count=2)
    check(frame, "epoch_loss", {1840: 0.5754789632299672}, count=1)
    check(frame, "overflow_skips", {10: 10}, count=8)
    check(frame, "loss_scale", {10: 64.0})
    check(frame, "skipped", {10: 10, 920: 17, 1840: 20}, count=184)
    check(frame, "lr", {920: 2.5725537721753102e-05}, count=184)
    check(frame, "CurrSamplesPerSec", {920: 215.78447553774203}, count=184)
    assert frame[frame["tag"] == "overflow_skips"]["value"].sum() == 20
    assert run.warnings == []


def test_rlhf_log_with_two_engines():
    run = _read(real_log(RLHF))
    frame = run.scalars
    check(frame, "act_loss", {0: 0.2099609375, 238: 0.0137481689453125, 476: -0.03875732421875}, count=477)
    check(frame, "cri_loss", {476: -0.0131072998046875}, count=477)
    check(frame, "average reward score", {0: -0.67919921875, 238: 3.599609375}, count=477)
    check(frame, "E2E latency", {0: 7.99}, count=476)
    check(frame, "CurSamplesPerSec", {0: 8.01}, count=476)
    # actor and critic both log step=10: two engines, two sets of tags
    check(frame, "lr", {10: 5.79e-07, 470: 3.279803335027593e-08}, count=47)
    check(frame, "engine1/lr", {10: 3.5000000000000004e-07, 470: 1.6993799663355403e-08}, count=47)
    check(frame, "skipped", {10: 4})
    check(frame, "engine1/skipped", {10: 3})
    check(frame, "RunningAvgSamplesPerSec", {10: 86.76512302357848}, count=47)
    # the two hysteresis overflows before the first PPO step are counted at step 0, scale unchanged
    check(frame, "overflow_skips", {0: 2})
    check(frame, "loss_scale", {0: 65536.0})
    assert frame[frame["tag"] == "overflow_skips"]["value"].sum() == 14
    assert frame[frame["tag"] == "act_loss"]["epoch"].eq(0).all()
    notes = notes_text(run)
    assert "prefixed 'engine1/'" in notes and "477 generation batches" in notes
    assert run.warnings == [] and run.restarts == []


def test_vit_finetuning_log_with_meters_and_iter_lines():
    run = _read(real_log(VIT))
    frame = run.scalars
    check(frame, "Loss", {0: 3.436, 391 * 7: 1.5624, 391 * 13: 0.05626}, count=14)  # current value, not the average
    check(frame, "Acc@1", {0: 7.81}, count=14)
    check(frame, "val/Loss", {391: 3.6274, 391 * 8: 2.0598, 391 * 14: 0.071221}, count=14)
    check(frame, "val_acc", {391: 10.969999313354492, 3128: 33.2599983215332, 5474: 97.97000122070312}, count=14)
    check(frame, "layer_token", {391: 9476288.0}, count=14)
    check(frame, "lr", {0: 0.0001, 5400: 0.0001}, count=28)
    assert "current value is kept" in notes_text(run)


DS_STEP = "[2024-01-01 00:00:{s:02d},000] [INFO] [logging.py:96:log_dist] [Rank {rank}] step={step}, skipped={skipped}, lr=[{lr}], mom=[0.9]\n"
OVERFLOW = "[2024-01-01 00:00:00,500] [INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. Skipping step. Attempted loss scale: {a}, reducing to {b}\n"


def test_newer_overflow_wording_and_overflows_after_the_last_step(tmp_path):
    text = OVERFLOW.format(a=65536, b=32768.0) + DS_STEP.format(s=1, rank=0, step=10, skipped=1, lr=0.1)
    text += OVERFLOW.format(a=32768.0, b=16384.0) + OVERFLOW.format(a=16384.0, b=8192.0)
    run = _read(write(tmp_path / "ds.log", text))
    check(run.scalars, "overflow_skips", {10: 3}, count=1)
    check(run.scalars, "loss_scale", {10: 8192.0}, count=1)
    assert "(2 after the last logged step, counted at it)" in notes_text(run)


def test_per_rank_files_are_one_run_with_a_rank_column(tmp_path):
    for rank in (0, 1, 2):
        lines = "".join(DS_STEP.format(s=step // 10, rank=rank, step=step, skipped=0, lr=0.1 * (rank + 1))
                        for step in (10, 20))
        write(tmp_path / "job" / f"log_rank{rank}.txt", "DeepSpeed info: version=0.14\n" + lines)
    write(tmp_path / "other" / "run.log", DS_STEP.format(s=1, rank=0, step=10, skipped=0, lr=0.5))
    logs = load(tmp_path)
    assert sorted(logs.runs) == ["job", "other"]
    job = logs.scalars_of("job")
    assert job["rank"].dtype == "Int64"
    assert sorted(job[job["tag"] == "lr"]["rank"].tolist()) == [0, 0, 1, 1, 2, 2]
    by_rank = job[(job["tag"] == "lr") & (job["step"] == 20)].set_index("rank")["value"]
    assert by_rank.to_dict() == pytest.approx({0: 0.1, 1: 0.2, 2: 0.30000000000000004})
    assert "3 per-rank log file(s) read as one run" in "\n".join(logs.runs["job"].notes)
    assert logs.runs["job"].restarts == ()


def test_numbered_rank_files_need_a_rank_zero(tmp_path):
    line = DS_STEP.format(s=1, rank=0, step=10, skipped=0, lr=0.1)
    for name in ("train-0.out", "train-1.out", "slurm-41.out", "slurm-42.out"):
        write(tmp_path / name, line)
    logs = load(tmp_path)
    assert sorted(logs.runs) == [
        f"{tmp_path.name}/slurm-41.out",
        f"{tmp_path.name}/slurm-42.out",
        f"{tmp_path.name}/train",
    ]
    assert points(logs.scalars_of(f"{tmp_path.name}/train"), "lr") == 2


def _sft_like(steps: int) -> str:
    """Step and timer lines with overflow messages before some steps, between a step's lines and after the
    last one, an evaluation every few steps, a line of a generic shape and a look-alike left unread."""
    out = []
    for i in range(1, steps + 1):
        stamp = f"[2023-04-18 02:{i // 60 % 60:02d}:{i % 60:02d},{i % 1000:03d}]"
        if i % 7 in (0, 1):
            out.append(f"{stamp} [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
                       f"Attempted loss scale: {2 ** (16 - i % 5)}, reducing to {2 ** (15 - i % 5)}\n")
        out.append(f"{stamp} [INFO] [logging.py:96:log_dist] [Rank 0] step={i * 10}, skipped={i // 7}, "
                   f"lr=[{1e-5 * i}, {1e-5 * i}], mom=[(0.9, 0.95), (0.9, 0.95)]\n")
        if i % 11 == 0:
            out.append(f"{stamp} [INFO] [stage_1_and_2.py:1770:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
                       "Attempted loss scale: 4096, but hysteresis is 2. Reducing hysteresis to 1\n")
        out.append(f"{stamp} [INFO] [timer.py:199:stop] epoch=0/micro_step={i * 20}/global_step={i * 10}, "
                   f"RunningAvgSamplesPerSec={170 + i / 100}, CurrSamplesPerSec={171 + i / 50}, MemAllocated=3.96GB, "
                   "MaxMemAllocated=22.95GB\n")
        if i % 23 == 0:
            out.append(f"***** Evaluating perplexity, Epoch {i // 23}/9 *****\nppl: {100 / i}\n"
                       f"Beginning of Epoch {i // 23 + 1}/9, Total Micro Batches 460\n")
        if i == 50:
            out.append("val_loss: 1.25 | val_acc: 0.5\nstep=3, skipped= garbled\n")
    out.append("[2023-04-18 03:00:00,000] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
               "Skipping step. Attempted loss scale: 1024, reducing to 512\n")
    return "".join(out)


def test_lines_read_at_once_equal_every_line_read_on_its_own(tmp_path, monkeypatch, real_logs):
    """Step and timer lines (and the overflow messages among them) are read a chunk or a span at once; the
    same rows, notes and warnings as reading every line on its own, on the real logs and on a made one."""
    from tanalyze.readers.text.deepspeed import DeepSpeedParser
    from tests.readers.text_helpers import read_both_ways

    files = sorted((real_logs / "deepspeed_text_log").rglob("*.log"))
    files += [real_logs / "other_text/microsoft__DeepSpeedExamples/data_efficiency/vit_finetuning/out/cifar/training.log",
              write(tmp_path / "sft.log", _sft_like(400))]
    for path in files:
        (at_once,) = DeepSpeedReader().read([path])
        monkeypatch.setattr(DeepSpeedParser, "line_by_line", True)
        (by_line,) = DeepSpeedReader().read([path])
        monkeypatch.setattr(DeepSpeedParser, "line_by_line", False)
        pd.testing.assert_frame_equal(at_once.scalars, by_line.scalars, check_exact=True)
        assert (at_once.notes, at_once.warnings, at_once.restarts) == (by_line.notes, by_line.warnings,
                                                                       by_line.restarts), path
    # chunks that end between overflow messages and the step they count at
    read_both_ways("deepspeed", DeepSpeedParser, files[-1], monkeypatch, (700, 2048, 8192))
    frame = by_line.scalars[by_line.scalars["tag"] == "overflow_skips"]
    skips = dict(zip(zip(frame["step"], frame["rank"].fillna(-1), strict=True), frame["value"], strict=True))
    # before a step line: counted at it (its rank); between it and its timer line: at the timer line (no rank);
    # after the last line: at the last step, with the message before it
    assert skips[(10, 0)] == 1 and skips[(110, -1)] == 1 and skips[(4000, 0)] == 2
    assert sum(skips.values()) == 152 and len(skips) == 151  # every message counted once
    (unread,) = by_line.warnings
    assert "step=3, skipped= garbled" in unread.message


BREAKDOWN = ("[2024-04-04 09:09:{s:02d},313] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd_microstep: {f:.2f} "
             "| bwd_microstep: {b:.2f} | bwd_inner_microstep: {i:.2f} | bwd_allreduce_microstep: {a:.2f} | "
             "step_microstep: {t:.2f}\n"
             "[2024-04-04 09:09:{s:02d},313] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd: {f:.2f} | "
             "bwd: {b:.2f} | bwd_inner: {i:.2f} | bwd_allreduce: {a:.2f} | step: {t:.2f}\n")


@pytest.mark.parametrize("line_by_line", [False, True])
def test_wall_clock_breakdown_timers_and_the_communication_share(tmp_path, monkeypatch, line_by_line):
    """DeepSpeed's wall_clock_breakdown lines (the engine's format: '[Rank 0] time (ms) | fwd: … | bwd_allreduce:
    … | step: …'): 'time (ms)/<timer>' at the step line's step; set-up timers before the first step left out."""
    from tanalyze.analysis.communication import analyze_communication, timer_curves
    from tanalyze.curves import Curve
    from tanalyze.readers.text.deepspeed import DeepSpeedParser

    monkeypatch.setattr(DeepSpeedParser, "line_by_line", line_by_line)
    text = "[2024-04-04 09:09:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | init_optimizer_state: 0.00\n"
    for n, step in enumerate((1, 2, 3, 4)):
        text += DS_STEP.format(s=n, rank=0, step=step, skipped=0, lr=0.1)
        text += BREAKDOWN.format(s=n, f=50.0, b=100.0 + 10 * n, i=60.0, a=40.0 + 10 * n, t=10.0)
    run = _read(write(tmp_path / "ds.log", text))
    check(run.scalars, "time (ms)/bwd_allreduce", {1: 40.0, 2: 50.0, 3: 60.0, 4: 70.0}, count=4)
    check(run.scalars, "time (ms)/fwd_microstep", {1: 50.0, 2: 50.0, 3: 50.0, 4: 50.0}, count=4)
    assert "time (ms)/init_optimizer_state" not in set(run.scalars["tag"])
    frame = run.scalars
    curves = {t: Curve.from_frame(frame, t) for t in frame["tag"].unique()}
    result = analyze_communication(timer_curves(curves))
    assert result.step_source == "fwd + bwd + step" and result.comm_timers == ("bwd_allreduce",)
    assert result.median_share == pytest.approx(60.0 / (50 + 120 + 10))  # steps 2-4: 50/170, 60/180, 70/190


def test_a_long_e2e_line_of_words_is_read_in_time(tmp_path):
    """Found by the long fuzz run: a damaged line break joined an E2E line to a long line of words, and the pairs'
    pattern looked for an "=" from every word start to the line's end (a read of minutes). The pairs before the
    words are read; the read is guarded so that a return of the old pattern fails instead of hanging."""
    from tests.fuzz.harness import read_direct

    text = ("epoch: 0|step: 0|ppo_ep: 1|act_loss: 0.25|cri_loss: 0.125|unsuper_loss: 0.0\n"
            "|E2E latency=2.51s |Generate time=1.43s (57.00%) |CurSamplesPerSec=3.2 "
            + "then many words without an equals sign " * 5000 + "\n")
    (tmp_path / "train.log").write_text(text)
    [run] = read_direct("deepspeed", tmp_path, ("train.log",), limit=20.0)
    frame = run.scalar_table()
    assert frame[frame["tag"] == "E2E latency"]["value"].tolist() == [2.51]
    assert frame[frame["tag"] == "CurSamplesPerSec"]["value"].tolist() == [3.2]
    assert frame[frame["tag"] == "act_loss"]["value"].tolist() == [0.25]
