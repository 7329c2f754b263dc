"""Realistic synthetic console logs of each text format, for the benchmarks (written once, reused).

Each is modelled on the real logs of its format in ``../shared/real_logs``: the
banners, argument or config dumps and noise lines real jobs print, evaluation
lines at their usual interval, and the odd line the parser has to care about
(fp16 overflow messages, ``mfu -100.00%`` before nanoGPT has measured, tqdm
redraws with ``\\r``). Numbers come from a seeded generator: the same file each time.
"""

from __future__ import annotations

import math
import random
import struct
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

__all__ = ["MAKERS"]


def _write(path: Path, megabytes: int, head: str, block: Callable[[int], str]) -> None:
    """``head``, then ``block(i)`` for i = 0, 1, … until the file holds ``megabytes`` MiB."""
    target = megabytes << 20
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write(head)
        written, index = len(head), 0
        while written < target:
            text = block(index)
            out.write(text)
            written += len(text.encode())
            index += 1


def make_megatron(path: Path, megabytes: int) -> None:
    """Megatron-DeepSpeed: argument dump, DeepSpeed step/timer lines, iteration, timer and validation lines,
    NCCL chatter, checkpoint messages (the ``random_ltd`` logs of microsoft/Megatron-DeepSpeed)."""
    rng = random.Random(0)
    head = "------------------------ arguments ------------------------\n" + "".join(
        f"  argument_{i} {'.' * (40 - len(str(i)))} {rng.choice(['None', 'True', '0.1', '1024'])}\n" for i in range(2700)
    ) + "-------------------- end of arguments ---------------------\n"

    def block(index: int) -> str:
        iteration = 10 * (index + 1)
        lr = 3e-4 * min(1.0, iteration / 2000)
        loss = 11.0 * (iteration + 100) ** -0.15 + rng.random() * 0.05
        text = (
            f"[2022-10-31 10:59:51,434] [INFO] [logging.py:68:log_dist] [Rank 0] step={iteration}, skipped=0, "
            f"lr=[{lr}, {lr}], mom=[(0.9, 0.95), (0.9, 0.95)]\n"
            f"[2022-10-31 10:59:51,436] [INFO] [timer.py:198:stop] 0/{iteration}, RunningAvgSamplesPerSec="
            f"{428 + rng.random()}, CurrSamplesPerSec={431 + rng.random()}, MemAllocated=1.64GB, MaxMemAllocated=7.01GB\n"
            f" iteration {iteration:>8}/  171661 | consumed samples: {iteration * 256:>12} | consumed tokens: "
            f"{iteration * 524288:>12} | elapsed time per iteration (ms): {480 + rng.random() * 20:.1f} | "
            f"learning rate: {lr:.3E} | global batch size:   256 | lm loss: {loss:.6E} | loss scale: 2048.0 | "
            f"grad norm: {1 + rng.random():.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
            f"time (ms) | forward-compute: {260 + rng.random():.2f} | backward-compute: {191 + rng.random():.2f} | "
            f"backward-embedding-all-reduce: 0.01 | optimizer: {14 + rng.random():.2f} | batch-generator: 9.85\n"
        )
        if iteration % 100 == 0:
            text += (
                "-" * 95 + "\n"
                f" validation loss at iteration {iteration} | lm loss value: {loss + 0.1:.6E} | "
                f"lm loss PPL: {2.718 ** (loss + 0.1):.6E} | \n" + "-" * 95 + "\n"
            )
        if rng.random() < 0.5:
            text += f"azwus2f200000DQ:22480:24741 [4] NCCL INFO Channel {rng.randrange(32)}/32 :    0\n"
        if iteration % 1000 == 0:
            text += f"saving checkpoint at iteration {iteration:>7} to /checkpoints\n"
        return text

    _write(path, megabytes, head, block)


def make_hf(path: Path, megabytes: int) -> None:
    """A Hugging Face Trainer console capture: tqdm bars redrawn with ``\\r``, training dicts, INFO lines,
    evaluation bars and dicts (the SLURM captures of Nicolassalvan/mti881-projet2)."""
    rng = random.Random(1)
    total = 1_000_000
    head = ("***** Running training *****\n  Num examples = 1,000,000\n  Num Epochs = 100\n"
            f"  Total optimization steps = {total:,}\n  Number of trainable parameters = 124,439,808\n")

    def block(index: int) -> str:
        parts = []
        for k in range(10):
            step = index * 10 + k + 1
            pct = step * 100 // total
            parts.append(f"\r{pct:3d}%|{'█' * (pct // 10):<10}| {step}/{total} [1:02:03<10:11:12,  {20 + rng.random():.2f}it/s]")
        step = index * 10 + 10
        epoch = step / (total / 100)
        parts.append(
            f"\n{{'loss': {2 * rng.random():.4f}, 'grad_norm': {rng.random() * 3}, "
            f"'learning_rate': {5e-5 * (1 - step / total)}, 'epoch': {epoch:.2f}}}\n"
        )
        if step % 1000 == 0:
            parts.append("[INFO|trainer.py:3984] 2025-04-13 01:53:07,703 >> Saving model checkpoint to out/ckpt\n")
            parts.append("".join(f"\r{i * 10:3d}%|#####     | {i}/10 [00:00<00:00]\x1b[A" for i in range(11)))
            parts.append(
                f"\n{{'eval_loss': {rng.random()}, 'eval_accuracy': {rng.random()}, 'eval_runtime': 3.2, "
                f"'eval_samples_per_second': 900.1, 'epoch': {epoch:.2f}}}\n"
            )
        return "".join(parts)

    _write(path, megabytes, head, block)


def make_nanogpt(path: Path, megabytes: int) -> None:
    """nanoGPT's ``train.py`` with ``log_interval = 1``: its startup lines, an evaluation and a checkpoint every
    2,000 iterations, ``mfu -100.00%`` for the first five, a torch warning now and then (karpathy/nanoGPT
    consoles captured by W&B in druidowm/nanoGPT and jackokeefe11/nanoGPT)."""
    rng = random.Random(2)
    head = (
        "Overriding config with config/train_gpt2.py:\n# config for training GPT-2 (124M)\nwandb_log = True\n"
        "batch_size = 12\nblock_size = 1024\ngradient_accumulation_steps = 5 * 8\nmax_iters = 600000\n"
        "tokens per iteration will be: 491,520\nInitializing from OpenAI GPT-2 weights: gpt2\n"
        "loading weights from pretrained gpt: gpt2\nforcing vocab_size=50257, block_size=1024, bias=True\n"
        "number of parameters: 123.65M\nnum decayed parameter tensors: 50, with 124,318,464 parameters\n"
        "num non-decayed parameter tensors: 98, with 121,344 parameters\nusing fused AdamW: True\n"
        "compiling the model... (takes a ~minute)\n"
    )

    def block(index: int) -> str:
        lines = []
        for iteration in range(index * 100, index * 100 + 100):
            loss = 11.0 * (iteration + 100) ** -0.12 + rng.random() * 0.1
            if iteration % 2000 == 0:
                lines.append(f"step {iteration}: train loss {loss:.4f}, val loss {loss + 0.02 + rng.random() * 0.01:.4f}\n")
                if iteration:
                    lines.append("saving checkpoint to out\n")
            mfu = "-100.00" if iteration < 5 else f"{40 + rng.random() * 5:.2f}"
            time = 22640.22 if iteration == 0 else 300 + rng.random() * 20
            lines.append(f"iter {iteration}: loss {loss:.4f}, time {time:.2f}ms, mfu {mfu}%\n")
            if iteration % 50_000 == 7:
                lines.append("/usr/lib/python3/torch/_inductor/compile_fx.py:140: UserWarning: TensorFloat32 tensor "
                             "cores for float32 matrix multiplication available but not enabled.\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_deepspeed(path: Path, megabytes: int) -> None:
    """DeepSpeed-Chat step-1 fine-tuning: the launcher's lines, the engine's step and timer lines every 10
    steps, fp16 overflow messages (many while the loss scale settles, then two every 100 steps as in the real
    log), a perplexity evaluation and an epoch banner every 460 micro-batches (microsoft/DeepSpeedExamples'
    training_log_output)."""
    rng = random.Random(3)
    head = (
        "cmd = deepspeed main.py --data_path Dahoas/rm-static --model_name_or_path facebook/opt-1.3b "
        "--per_device_train_batch_size 8 --gradient_accumulation_steps 2 --zero_stage 2 --deepspeed\n"
        "[2023-04-18 01:40:09,216] [INFO] [launch.py:229:main] WORLD INFO DICT: {'localhost': [0, 1, 2, 3, 4, 5, 6, 7]}\n"
        "[2023-04-18 01:40:09,216] [INFO] [launch.py:235:main] nnodes=1, num_local_procs=8, node_rank=0\n"
        "[2023-04-18 01:40:14,390] [INFO] [comm.py:586:init_distributed] Initializing TorchBackend in DeepSpeed "
        "with backend nccl\n***** Running training *****\n"
    )
    state = {"skipped": 0}

    def stamp(step: int, extra: int) -> str:
        seconds = 6000 + step * 0.75 + extra * 0.003
        return f"[2023-04-18 {int(seconds // 3600) % 24:02d}:{int(seconds // 60) % 60:02d}:{int(seconds) % 60:02d},{extra:03d}]"

    def block(index: int) -> str:
        lines = []
        epoch, micro = divmod(index * 20, 460)
        if micro == 0:
            lines.append(f"***** Evaluating perplexity, Epoch {epoch}/16 *****\nppl: {2 + 4000 / (index + 1):.6f}\n")
            lines.append(f"Beginning of Epoch {epoch + 1}/16, Total Micro Batches 460\n")
        step = 10 * (index + 1)
        # the loss scale settles in the first steps, then grows back every 100 steps (the scale window
        # DeepSpeed-Chat sets) and overflows at once: a message with hysteresis, then one that reduces it
        if (index < 30 and rng.random() < 0.6) or index % 10 == 5:
            state["skipped"] += 2
            scale = 2 ** (16 - min(index, 8) // 2)
            lines.append(f"{stamp(step, 1)} [INFO] [loss_scaler.py:188:update_scale] [deepspeed] OVERFLOW! Rank 0 "
                         f"Skipping step. Attempted loss scale: {scale}, but hysteresis is 2. Reducing hysteresis to 1\n")
            lines.append(f"{stamp(step, 2)} [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
                         f"Skipping step. Attempted loss scale: {scale}, reducing to {scale // 2}\n")
        lr = 9.65e-6 * (1 - step / 1e7)
        lines.append(f"{stamp(step, 414)} [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, "
                     f"skipped={state['skipped']}, lr=[{lr}, {lr}], mom=[(0.9, 0.95), (0.9, 0.95)]\n")
        lines.append(f"{stamp(step, 442)} [INFO] [timer.py:199:stop] epoch={epoch}/micro_step={micro + 20}/"
                     f"global_step={step}, RunningAvgSamplesPerSec={171 + rng.random()}, "
                     f"CurrSamplesPerSec={171 + rng.random()}, MemAllocated=3.96GB, MaxMemAllocated=22.95GB\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_text(path: Path, megabytes: int) -> None:
    """An MMDetection 2 text log (what the generic reader reads): the environment and config dump, then
    ``Epoch [e][i/791]`` meter lines every 50 iterations, checkpoint and COCO evaluation lines after each
    epoch (masati91/ELTD's work_dirs)."""
    rng = random.Random(4)
    head = "2021-04-22 14:17:51,316 - mmdet - INFO - Environment info:\n" + "-" * 60 + "\n" + "".join(
        f"config_key_{i} = dict(type='Value{i}', setting={rng.random():.4f})\n" for i in range(200)
    )
    batches = 791

    def block(index: int) -> str:
        epoch, rest = divmod(index, 16)
        epoch += 1
        lines = []
        if rest < 15:
            i = (rest + 1) * 50
            loss = 300 * (index + 1) ** -0.3
            lines.append(
                f"2021-04-22 14:{index // 60 % 60:02d}:{index % 60:02d},659 - mmdet - INFO - Epoch [{epoch}][{i}/{batches}]\t"
                f"lr: {1e-3 * min(1, index / 100):.3e}, eta: {20 + index % 3}:{index % 60:02d}:27, time: "
                f"{0.25 + rng.random() * 0.2:.3f}, data_time: {0.01 + rng.random() * 0.1:.3f}, memory: 2490, loss_cls: "
                f"{loss * 0.2:.4f}, loss_conf: {loss * 0.3:.4f}, loss_xy: {loss * 0.4:.4f}, loss_wh: {loss * 0.1:.4f}, "
                f"loss: {loss:.4f}, grad_norm: {1000 * rng.random():.4f}\n"
            )
        else:
            lines.append(f"2021-04-22 15:00:00,000 - mmdet - INFO - Saving checkpoint at {epoch} epochs\n")
            lines.append("2021-04-22 15:00:30,000 - mmdet - INFO - Evaluating bbox...\n")
            lines.append("".join(
                f" Average Precision  (AP) @[ IoU=0.50:0.95 | area= {area:>6} | maxDets=100 ] = {rng.random():.3f}\n"
                for area in ("all", "small", "medium", "large")))
            lines.append(f"2021-04-22 15:00:34,365 - mmdet - INFO - Epoch(val) [{epoch}][{batches}]\tbbox_mAP: "
                         f"{rng.random():.4f}, bbox_mAP_50: {rng.random():.4f}\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_llmc(path: Path, megabytes: int) -> None:
    """llm.c ``train_gpt2cu`` console (a SLURM ``.log``): the parameter table, then one step line per update with
    z-scores once the window is full, ``val loss`` every 250 steps and a HellaSwag line after it (the SLURM logs
    of HectorFCardenas/llm.c)."""
    rng = random.Random(5)
    head = "Multi-GPU support is disabled. Using a single GPU.\n+" + "-" * 23 + "+" + "-" * 52 + "+\n" + "".join(
        f"| parameter {i:<11} | {rng.choice(['5000', 'dev/data/fineweb10B', '0.0006', '1'])!s:<50} |\n"
        for i in range(40)) + "num_parameters: 124475904 => bytes: 248951808\n=> setting grad_accum_steps=1\n"

    def block(index: int) -> str:
        lines = []
        for step in range(index * 250 + 1, index * 250 + 251):
            loss = 11.0 * (step + 100) ** -0.12 + rng.random() * 0.1
            zl = "+nanz" if step < 128 else f"{rng.random() * 4 - 2:+.2f}z"
            zn = "+nanz" if step < 128 else f"{rng.random() * 4 - 2:+.2f}z"
            lines.append(f"step {step:>4}/1000000 | loss {loss:.6f} ({zl})| norm {rng.random() + 0.3:.4f} ({zn})| "
                         f"lr {6e-4 * min(1, step / 700):.2e} | {4100 + rng.random() * 200:.2f} ms | "
                         f"{30 + rng.random() * 3:.1f}% bf16 MFU | {120000 + rng.random() * 5000:.0f} tok/s\n")
        lines.append(f"val loss {loss + 0.05:.6f}\nHellaSwag: {2400 + index % 600}/10042 = "
                     f"{(2400 + index % 600) / 10042:.6f}\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_llmc_main(path: Path, megabytes: int) -> None:
    """llm.c's ``main.log`` (the ``-o`` folder's metrics file): a train record per update, a validation record
    every 250 steps and a HellaSwag record every 500, with the formats of ``llmc/logger.h``."""
    rng = random.Random(7)

    def block(index: int) -> str:
        lines = []
        for step in range(index * 250, index * 250 + 250):
            loss = 11.0 * (step + 100) ** -0.12 + rng.random() * 0.1
            lines.append(f"s:{step} trl:{loss:.4f} lr:{6e-4 * min(1, (step + 1) / 700):.6f} "
                         f"norm:{rng.random() + 0.3:.2f}\n")
        step = index * 250 + 250
        lines.append(f"s:{step} tel:{loss + 0.05:.4f}\n")
        if step % 500 == 0:
            lines.append(f"s:{step} eval:{0.24 + step / 1e7:.4f}\n")
        return "".join(lines)

    _write(path, megabytes, "s:0 tel:11.0079\n", block)


def make_build_nanogpt(path: Path, megabytes: int) -> None:
    """build-nanogpt's ``log/log.txt``: a train record per step, a validation and a HellaSwag record every 250
    (its ``f.write`` statements)."""
    rng = random.Random(8)

    def block(index: int) -> str:
        step = index * 250
        lines = [f"{step} val {3 + 8 * (step + 100) ** -0.3 + rng.random() * 0.01:.4f}\n",
                 f"{step} hella {0.24 + step / 1e7:.4f}\n"]
        lines += [f"{n} train {3 + 8 * (n + 100) ** -0.3 + rng.random() * 0.1:.6f}\n" for n in range(step, step + 250)]
        return "".join(lines)

    _write(path, megabytes, "", block)


def make_build_nanogpt_console(path: Path, megabytes: int) -> None:
    """build-nanogpt's console: a step line per step, the validation and HellaSwag lines before the step line of
    every 250th loop (its ``print`` statements)."""
    rng = random.Random(9)
    head = "using device: cuda\ntotal desired batch size: 524288\n=> calculated gradient accumulation steps: 32\n"

    def block(index: int) -> str:
        step = index * 250
        correct = 2400 + index % 600
        lines = [f"validation loss: {3 + 8 * (step + 100) ** -0.3 + rng.random() * 0.01:.4f}\n",
                 f"HellaSwag accuracy: {correct}/10042={correct / 10042:.4f}\n"]
        for n in range(step, step + 250):
            dt = 0.33 + rng.random() / 100
            lines.append(f"step {n:5d} | loss: {3 + 8 * (n + 100) ** -0.3 + rng.random() * 0.1:.6f} | "
                         f"lr {6e-4 * min(1, (n + 1) / 715):.4e} | norm: {0.2 + rng.random():.4f} | dt: {dt * 1000:.2f}ms | "
                         f"tok/sec: {524288 / dt:.2f}\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_modded_nanogpt(path: Path, megabytes: int) -> None:
    """A modded-nanogpt speedrun log: the training script's source and ``nvidia-smi`` on top, then a line per
    step (``train_time``/``step_avg`` only, as the later records write) and a validation line every 125 steps
    (KellerJordan/modded-nanogpt's records)."""
    rng = random.Random(6)
    head = "".join(f"    x = model.block_{i}(x)  # print(f'step:{{step}}/{{num_iterations}} val_loss:{{v}}')\n"
                   for i in range(600)) + "=" * 100 + "\n| NVIDIA-SMI 550.90.07 |\n" + "=" * 100 + "\n"

    def block(index: int) -> str:
        lines = []
        for step in range(index * 125 + 1, index * 125 + 126):
            lines.append(f"step:{step}/5820000 train_time:{step * 222 + rng.randrange(100)}ms "
                         f"step_avg:{222 + rng.random():.2f}ms\n")
        lines.append(f"step:{step}/5820000 val_loss:{3 + 8 * (step + 1) ** -0.3:.6f} train_time:{step * 222 + 200}ms "
                     f"step_avg:{223 + rng.random():.2f}ms\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_fairseq(path: Path, megabytes: int) -> None:
    """fairseq-train's console with ``--log-format simple --log-interval 100``: INFO lines of the trainer, an
    interval record every 100 updates, then per epoch a validation and the epoch averages (the train.log of
    a fairseq NAT model, as in tests/fixtures/fairseq)."""
    rng = random.Random(7)
    head = "".join(f"2023-06-13 17:2{i // 60 % 10}:{i % 60:02d} | INFO | fairseq_cli.train | Namespace(arg_{i}=...)\n"
                   for i in range(300))
    fields = ("nll_loss", "glat_accu", "word_ins", "length", "ppl", "wps", "ups", "wpb", "bsz")

    def stamp(index: int, second: int) -> str:
        return f"2023-06-{13 + index // 1440:02d} {index // 60 % 24:02d}:{index % 60:02d}:{second:02d}"

    def block(index: int) -> str:
        epoch = index + 1
        lines = [f"{stamp(index, 0)} | INFO | fairseq.trainer | begin training epoch {epoch}\n"]
        for i in range(28):
            updates = index * 2820 + (i + 1) * 100
            values = ", ".join(f"{name}={rng.random() * 10:.4g}" for name in fields)
            lines.append(f"{stamp(index, i + 1)} | INFO | train_inner | epoch {epoch:03d}:    {i * 100 + 85:>3} / 2820 "
                         f"loss={3 + rng.random():.3f}, {values}, num_updates={updates}, lr={1.5e-4 * rng.random():.6g}, "
                         f"gnorm={rng.random():.3f}, clip=0, loss_scale=32768, train_wall=48, gb_free=10.2, wall={updates}\n")
        updates = (index + 1) * 2820
        lines.append(f"{stamp(index, 40)} | INFO | fairseq_cli.train | begin validation on \"valid\" subset\n")
        lines.append(f"{stamp(index, 43)} | INFO | valid | epoch {epoch:03d} | valid on 'valid' subset | loss "
                     f"{12 + rng.random():.3f} | nll_loss 11.546 | ppl 6550.94 | bleu {29 + rng.random():.2f} | wps 88225 | "
                     f"wpb 21176.3 | bsz 666.3 | num_updates {updates} | best_bleu 30.53\n")
        lines.append(f"{stamp(index, 50)} | INFO | fairseq_cli.train | end of epoch {epoch} (average epoch stats below)\n")
        lines.append(f"{stamp(index, 50)} | INFO | train | epoch {epoch:03d} | loss {3 + rng.random():.3f} | nll_loss 1.23 | "
                     f"ppl 8.82 | wps 106814 | ups 1.77 | wpb 60411 | bsz 2157.9 | num_updates {updates} | lr 0.00015753 | "
                     "gnorm 0.485 | clip 0 | loss_scale 32768 | train_wall 260 | wall 0\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_fairseq_json(path: Path, megabytes: int) -> None:
    """fairseq-hydra-train's ``hydra_train.log`` with ``--log-format json --log-interval 100``: the config dump,
    INFO lines of the trainer, a JSON interval record every 100 updates (values as strings, as fairseq writes
    them), then per epoch a JSON validation and the epoch averages, every key prefixed with the subset (as
    in tests/fixtures/fairseq/hydra)."""
    rng = random.Random(11)
    head = "".join(f"[2021-03-02 09:5{i // 60 % 10}:{i % 60:02d},{i % 1000:03d}][fairseq_cli.train][INFO] - "
                   f"{{'_name': None, 'common': {{'log_format': 'json', 'log_interval': 100, 'seed': {i}}}}}\n"
                   for i in range(200))
    keys = ("loss", "nll_loss", "ppl", "wps", "ups", "wpb", "bsz")

    def stamp(index: int, second: int) -> str:
        return (f"[2021-03-{2 + index // 1440:02d} {index // 60 % 24:02d}:{index % 60:02d}:{second:02d},"
                f"{rng.randrange(1000):03d}]")

    def block(index: int) -> str:
        epoch = index + 1
        lines = [f"{stamp(index, 0)}[fairseq.trainer][INFO] - begin training epoch {epoch}\n"]
        for i in range(28):
            updates = index * 2820 + (i + 1) * 100
            values = ", ".join(f'"{key}": "{rng.random() * 10:.4g}"' for key in keys)
            lines.append(f'{stamp(index, i + 1)}[train_inner][INFO] - {{"epoch": {epoch}, "update": '
                         f'{index + (i + 1) / 28.2:.3f}, {values}, "num_updates": "{updates}", '
                         f'"lr": "{1.5e-4 * rng.random():.6g}", "gnorm": "{rng.random():.3f}", "loss_scale": "64", '
                         f'"train_wall": "55", "gb_free": "9.9", "wall": "{updates // 2}"}}\n')
        updates = (index + 1) * 2820
        lines.append(f'{stamp(index, 40)}[fairseq_cli.train][INFO] - begin validation on "valid" subset\n')
        lines.append(f'{stamp(index, 43)}[valid][INFO] - {{"epoch": {epoch}, "valid_loss": "{3 + rng.random():.3f}", '
                     f'"valid_nll_loss": "2.1", "valid_ppl": "4.29", "valid_wps": "88225", "valid_wpb": "21176.3", '
                     f'"valid_bsz": "666.3", "valid_num_updates": "{updates}", "valid_best_loss": "3.02"}}\n')
        lines.append(f"{stamp(index, 50)}[fairseq_cli.train][INFO] - end of epoch {epoch} (average epoch stats below)\n")
        lines.append(f'{stamp(index, 50)}[train][INFO] - {{"epoch": {epoch}, "train_loss": "{3 + rng.random():.3f}", '
                     f'"train_nll_loss": "2.2", "train_ppl": "4.6", "train_wps": "80123", "train_ups": "1.8", '
                     f'"train_num_updates": "{updates}", "train_lr": "0.00015753", "train_wall": "{updates // 2}"}}\n')
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_text_imagenet(path: Path, megabytes: int) -> None:
    """The PyTorch ImageNet example's console (``main.py --print-freq 10``): "name value (average)" meters of
    every tenth batch, ``Epoch: [e][ i/n]`` first, and a checkpoint message per epoch."""
    rng = random.Random(8)
    head = "".join(f"=> argument_{i}: {rng.choice(['resnet50', '0.1', '256', 'True'])}\n" for i in range(40))

    def block(index: int) -> str:
        lines = []
        for batch in range(0, 5005, 10):
            lines.append(f"Epoch: [{index}][{batch:>4}/5005]\tTime  {rng.random():.3f} ( {rng.random():.3f})\t"
                         f"Data  {rng.random() / 10:.3f} ( {rng.random() / 10:.3f})\tLoss {rng.random() * 6:.4e} "
                         f"({rng.random() * 6:.4e})\tAcc@1 {rng.random() * 100:6.2f} ({rng.random() * 100:6.2f})\t"
                         f"Acc@5 {rng.random() * 100:6.2f} ({rng.random() * 100:6.2f})\n")
        lines.append(f"=> saving checkpoint 'checkpoint_{index}.pth.tar'\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_text_kv(path: Path, megabytes: int) -> None:
    """A custom loop's key-value lines (what the generic reader reads as "kv_step"): a config dump, then
    ``iter N | loss … | lr … | grad_norm … | tokens/s …`` every 10 iterations, an evaluation line of another
    shape and a checkpoint message every 500 (nanoGPT-like scripts printing with ``|``)."""
    rng = random.Random(5)
    head = "Starting training with config:\n" + "".join(
        f"  {name}_{i}: {rng.choice(['None', 'True', '0.1', '1024', 'adamw'])}\n"
        for i, name in enumerate(["lr", "batch_size", "warmup", "optimizer"] * 25)
    )

    def block(index: int) -> str:
        iteration = 10 * (index + 1)
        loss = 11.0 * (iteration + 100) ** -0.15 + rng.random() * 0.05
        text = (f"iter {iteration} | loss {loss:.4f} | lr {6e-4 * min(1.0, iteration / 2000):.6f} | "
                f"grad_norm {0.2 + rng.random():.3f} | tokens/s {50000 + rng.random() * 2000:.0f}\n")
        if iteration % 500 == 0:
            text += (f"iter {iteration} | val_loss {loss + 0.1:.4f} | val_ppl {2.718 ** (loss + 0.1):.2f}\n"
                     f"saving checkpoint to out/ckpt_{iteration}.pt\n")
        return text

    _write(path, megabytes, head, block)


def make_text_epochs(path: Path, megabytes: int) -> None:
    """Epoch blocks (the generic reader's "epoch_header" and "pair_line"): an ``Epoch N/M`` line, then
    ``Train Loss: … - Train Acc: …`` and ``Val Loss: … - Val Acc: …``, a saved-model message now and then
    (Keras-like hand-written loops; a real log has an epoch per block, so a large one is synthetic)."""
    rng = random.Random(6)
    head = "Loading dataset...\nModel: ResNet18 (11,689,512 parameters)\n"
    epochs = 10 ** 7

    def block(index: int) -> str:
        epoch = index + 1
        loss = 2.5 * epoch ** -0.1
        text = (f"Epoch {epoch}/{epochs}\n"
                f"Train Loss: {loss + rng.random() * 0.01:.4f} - Train Acc: {1 - loss / 3 + rng.random() * 0.01:.4f}\n"
                f"Val Loss: {loss + 0.05 + rng.random() * 0.01:.4f} - Val Acc: {1 - loss / 2.8:.4f}\n")
        if epoch % 25 == 0:
            text += f"Saved best model to checkpoints/best_{epoch}.pt\n"
        return text

    _write(path, megabytes, head, block)


def make_keras_console(path: Path, megabytes: int) -> None:
    """``model.fit(verbose=1)`` of tf.keras redirected to a file, as ``tests/fixtures/keras_console`` holds it
    from real fits: an ``Epoch N/M`` line, then one long line per epoch in which the bar's updates (every
    50 ms of a minute-long epoch of 1,875 batches) run on, the last one with the epoch's metrics; Keras
    callbacks' messages now and then, ``model.evaluate`` at the end of nothing (the file is cut at size)."""
    rng = random.Random(7)
    head = "Model: \"sequential\"\nTotal params: 1,863,690\nTrainable params: 1,863,690\n"
    epochs, batches = 10 ** 5, 1875

    def bar(done: int) -> str:
        filled = 30 * done // batches
        return "[" + "=" * filled + (">" + "." * (29 - filled) if filled < 30 else "") + "]"

    def block(index: int) -> str:
        epoch = index + 1
        loss = 2.3 * epoch ** -0.2
        parts = [f"Epoch {epoch}/{epochs}\n"]
        for done in range(1, batches, 1875 // 1200 + 1):
            parts.append(f"{done:>4}/{batches} {bar(done)} - ETA: {(batches - done) // 30}s - loss: "
                         f"{loss + rng.random() * 0.05:.4f} - accuracy: {1 - loss / 3:.4f}")
        parts.append(f"{batches}/{batches} {bar(batches)} - 61s 32ms/step - loss: {loss:.4f} - accuracy: "
                     f"{1 - loss / 3:.4f} - val_loss: {loss + 0.05 + rng.random() * 0.01:.4f} - val_accuracy: "
                     f"{1 - loss / 2.8:.4f}\n")
        if epoch % 10 == 0:
            parts.append(f"\nEpoch {epoch}: val_loss improved, saving model to checkpoints/model_{epoch:03d}.h5\n")
        return "".join(parts)

    _write(path, megabytes, head, block)


def make_torch_examples(path: Path, megabytes: int) -> None:
    """PyTorch's MNIST example as ``tests/fixtures/torch_examples`` holds it from a real training: a
    ``Train Epoch: e [seen/60000 (p%)]\tLoss: …`` line every 10 batches of 64, the ``Test set:`` summary
    after each epoch, between blank lines (an epoch per block: a large log is many epochs)."""
    rng = random.Random(8)
    size, batches = 60000, 938

    def block(index: int) -> str:
        epoch = index + 1
        loss = 2.3 * epoch ** -0.3
        lines = [f"Train Epoch: {epoch} [{b * 64}/{size} ({100. * b / batches:.0f}%)]\tLoss: "
                 f"{loss * (0.8 + rng.random() * 0.4):.6f}\n" for b in range(0, batches, 10)]
        correct = int(size / 6 * (1 - loss / 4))
        lines.append(f"\nTest set: Average loss: {loss * 0.9:.4f}, Accuracy: {correct}/10000 "
                     f"({100. * correct / 10000:.0f}%)\n\n")
        return "".join(lines)

    _write(path, megabytes, "", block)


def make_tqdm_console(path: Path, megabytes: int) -> None:
    """Lightning's ``TQDMProgressBar`` in a job's stderr, as ``tests/fixtures/tqdm_console`` holds it from a real
    fit: every batch redrawn twice after ``\r`` (the count moving on, then the new ``train_loss``), ``v_num`` and
    the last ``val_loss`` on the bar, a validation bar after each epoch of 500 batches."""
    rng = random.Random(9)
    batches = 500
    head = "GPU available: True (cuda), used: True\nTPU available: False, using: 0 TPU cores\n"
    state = {"val": None}

    def bar(epoch: int, done: int, post: str) -> str:
        filled = 10 * done // batches
        return (f"\rEpoch {epoch}: {100 * done // batches:3d}%|{'█' * filled}{' ' * (10 - filled)}| {done}/{batches} "
                f"[00:{done // 60:02d}<00:{(batches - done) // 60:02d}, {7 + rng.random():.2f}it/s, {post}]")

    def block(epoch: int) -> str:
        parts = []
        val = state["val"]
        loss = 3.0 * (epoch + 1) ** -0.3
        previous = f"v_num=0, train_loss={loss:.3g}" + (f", val_loss={val:.3g}" if val else "")
        for done in range(1, batches + 1):
            parts.append(bar(epoch, done, previous))
            value = loss * (0.8 + rng.random() * 0.4)
            previous = f"v_num=0, train_loss={value:.3g}" + (f", val_loss={val:.3g}" if val else "")
            parts.append(bar(epoch, done, previous))
        parts.append("\n\rValidation DataLoader 0: 100%|██████████| 20/20 [00:01<00:00, 15.20it/s]\x1b[A")
        state["val"] = loss * 1.1
        parts.append(bar(epoch, batches, f"v_num=0, train_loss={value:.3g}, val_loss={state['val']:.3g}"))
        return "".join(parts)

    _write(path, megabytes, head, block)


def make_timm_console(path: Path, megabytes: int) -> None:
    """timm's ``train.py`` on ImageNet as ``tests/fixtures/timm_console`` holds it from a real training: a
    ``Train:`` line every 50 of 1,251 updates and the last, then the validation's ``Test:`` lines every 10 of
    49 batches and the last (an epoch per block: a large log is many epochs)."""
    rng = random.Random(10)
    updates = 1251

    def block(epoch: int) -> str:
        loss = 6.9 * (epoch + 1) ** -0.3
        lines = []
        for i in sorted({*range(0, updates, 50), updates - 1}):
            now, rate = loss * (0.9 + rng.random() * 0.2), 1900 + rng.random() * 200
            lines.append(f"Train: {epoch} [{i:>4d}/{updates} ({100. * (i + 1) / updates:>3.0f}%)]  Loss: {now:#.3g} "
                         f"({loss:#.3g})  Time: {1024 / rate:.3f}s, {rate:>7.2f}/s  ({0.520:.3f}s, {1969.23:>7.2f}/s)  "
                         f"LR: {1e-3 / (epoch + 1):.3e}  Data: {0.012:.3f} ({0.035:.3f})\n")
        for i in sorted({*range(0, 48, 10), 48}):
            top1 = 100 - 20 * loss / 3
            lines.append(f"Test: [{i:>4d}/48]  Time: {0.945:.3f} ({0.512:.3f})  Loss: {loss:>7.3f} ({loss:>6.3f})  "
                         f"Acc@1: {top1:>7.3f} ({top1:>7.3f})  Acc@5: {top1 + 5:>7.3f} ({top1 + 5:>7.3f})\n")
        return "".join(lines)

    _write(path, megabytes, "", block)


def make_nnunet(path: Path, megabytes: int) -> None:
    """nnU-Net v2's ``training_log_*.txt`` as ``tests/fixtures/nnunet`` holds it from a real training: each line
    after its time and followed by a space, an epoch's lines (start, learning rate, losses, the pseudo Dice of
    three classes, its time, a new best EMA Dice most epochs) per block, the banner and settings first."""
    rng = random.Random(11)
    head = ("\n" + "#" * 71 + "\nPlease cite the following paper when using nnU-Net:\n" + "#" * 71 + "\n \n"
            "2026-12-07 01:40:38.957767: Desired fold for training: 0 \n"
            "2026-12-07 01:40:38.958037: This split has 16 training and 4 validation cases. \n")

    def block(epoch: int) -> str:
        second = 1_796_607_638 + 40 * epoch
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second))
        loss = -0.95 * (1 - 0.9 ** (epoch + 1))
        dice = ", ".join(f"np.float32({min(1.0, -loss + rng.random() * 0.05):.4f})" for _ in range(3))
        lines = [f"{stamp}.{rng.randrange(10**6):06d}: {text} \n" for text in (
            "", f"Epoch {epoch}", f"Current learning rate: {round(0.01 * (1 - epoch % 1000 / 1000) ** 0.9, 5)}",
            f"train_loss {round(loss + rng.random() * 0.01, 4)}", f"val_loss {round(loss + 0.02, 4)}",
            f"Pseudo dice [{dice}]", f"Epoch time: {round(38 + rng.random() * 4, 2)} s")]
        if rng.random() < 0.6:
            lines.append(f"{stamp}.999999: Yayy! New best EMA pseudo Dice: {-loss:.16g} \n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_darknet(path: Path, megabytes: int) -> None:
    """AlexeyAB darknet's console as public YOLOv4 training logs hold it: each iteration's three ``v3 (…)`` region
    lines and its bbox count, the iteration line, ``Loaded:``; an ``-map`` evaluation every 1,000 iterations."""
    rng = random.Random(12)
    head = " CUDA-version: 11020 (11040), cuDNN: 8.1.0, GPU count: 1  \nTotal BFLOPS 59.585 \n"
    region = ("v3 (iou loss, Normalizer: (iou: 0.07, obj: 1.00, cls: 1.00) Region {r} Avg (IOU: {iou:.6f}), count: 5, "
              "class_loss = 2.807, iou_loss = 1.23, total_loss = 4.03 \n")

    def block(index: int) -> str:
        step = index + 1
        loss = 1400 * math.exp(-step / 300) + 1.5 + rng.random()
        lines = [region.format(r=r, iou=rng.random()) for r in (139, 150, 161)]
        lines.append(f" total_bbox = {15 * step}, rewritten_bbox = 0.000000 % \n\n")
        lines.append(f" {step}: {loss:.6f}, {loss * 1.01:.6f} avg loss, 0.001000 rate, {5 + rng.random():.6f} seconds, "
                     f"{64 * step} images, {12.3 - step / 1e5:.6f} hours left\nLoaded: 0.000035 seconds\n")
        if step % 1000 == 0:
            lines.append(f" class_id = 0, name = smoke, ap = {60 + rng.random() * 10:.2f}%   \t (TP = 245, FP = 30) \n"
                         f" for conf_thresh = 0.25, precision = 0.89, recall = 0.83, F1-score = 0.86 \n"
                         f" mean average precision (mAP@0.50) = {0.6 + rng.random() / 10:.6f}, or 65.00 % \n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_console_table(path: Path, megabytes: int) -> None:
    """fastai's console as ``tests/fixtures/console_table`` holds it from a real fit: the table's header, then each
    epoch's progress bar redrawn after carriage returns and its row (a long fit: one table)."""
    rng = random.Random(13)
    header = "epoch     train_loss  valid_loss  error_rate  time    \n"

    def block(epoch: int) -> str:
        bars = "".join(f"\rEpoch {epoch + 1} : |{'#' * i}{'-' * (40 - i)}| {i * 2.5:.2f}% [{i}/40 00:0{i % 10}<00:00]"
                       for i in range(0, 41, 5))
        row = (f"{epoch:<10d}{0.9 * math.exp(-epoch / 2e4) + rng.random() / 50:<12.6f}"
               f"{0.8 * math.exp(-epoch / 2e4) + rng.random() / 50:<12.6f}{rng.random() / 3:<12.6f}"
               f"00:{12 + epoch % 40:02d}     ")
        return bars + "\r" + row + "\n"

    _write(path, megabytes, header, block)


def make_sb3_console(path: Path, megabytes: int) -> None:
    """Stable-Baselines3's PPO logger tables as ``tests/fixtures/sb3`` holds them from a real training: a section
    row before its indented keys, floats with three significant digits, columns as wide as the longest cell (one
    table per rollout of 2,048 steps)."""
    rng = random.Random(14)

    def block(index: int) -> str:
        steps = 2048 * (index + 1)
        rows = {"rollout/ep_len_mean": f"{min(500.0, 20 + index / 50):<8.3g}",
                "rollout/ep_rew_mean": f"{min(500.0, 20 + index / 50 + rng.random()):<8.3g}",
                "time/fps": str(1400 + rng.randrange(300)), "time/iterations": str(index + 1),
                "time/time_elapsed": str(steps // 1500), "time/total_timesteps": str(steps),
                "train/approx_kl": f"{rng.random() / 100:.10g}", "train/clip_fraction": f"{rng.random() / 10:<8.3g}",
                "train/clip_range": "0.2", "train/entropy_loss": f"{-0.69 + index / 1e6:<8.3g}",
                "train/explained_variance": f"{rng.random():<8.3g}", "train/learning_rate": "0.0003",
                "train/loss": f"{30 * rng.random():<8.3g}", "train/n_updates": str(10 * (index + 1)),
                "train/policy_gradient_loss": f"{-rng.random() / 100:<8.3g}",
                "train/value_loss": f"{60 * rng.random():<8.3g}"}
        lines, section = [], ""
        for key, value in rows.items():
            head = key[: key.find("/") + 1]
            if head != section:
                section = head
                lines.append((head, ""))
            lines.append(("   " + key[len(head):], value.strip()))
        width, value_width = max(len(k) for k, _ in lines), max(len(v) for _, v in lines)
        rule = "-" * (width + value_width + 7)
        return "\n".join([rule, *(f"| {k:<{width}} | {v:<{value_width}} |" for k, v in lines), rule]) + "\n"

    _write(path, megabytes, "Using cpu device\nLogging to logs/ppo\n", block)


def make_paddle(path: Path, megabytes: int) -> None:
    """PaddleOCR's ``train.log`` of a PP-OCR recognition model as its docs show one: the config dump, a training
    line every 10 steps, an evaluation every 2,000 (its progress bar, ``cur metric``, the best model saved and
    ``best metric``)."""
    rng = random.Random(15)
    head = "".join(f"[2026/08/06 10:00:00] ppocr INFO: {key} : {value}\n" for key, value in (
        ("Global", ""), ("  epoch_num", 50), ("  print_batch_step", 10), ("  eval_batch_step", "[0, 2000]"),
        ("Architecture", ""), ("  algorithm", "SVTR_LCNet"), ("Optimizer", ""), ("  name", "Adam")))

    def block(index: int) -> str:
        step = 10 * (index + 1)
        loss = 2.5 * math.exp(-step / 2e5) + rng.random() / 5
        second = step // 10 % 60
        line = (f"[2026/08/06 10:{step // 600 % 60:02d}:{second:02d}] ppocr INFO: epoch: [{step // 20000 + 1}/50], "
                f"global_step: {step}, lr: 0.000099, acc: {rng.random():.6f}, norm_edit_dis: {rng.random():.6f}, "
                f"CTCLoss: {loss / 3:.6f}, NRTRLoss: {loss * 2 / 3:.6f}, loss: {loss:.6f}, "
                f"avg_reader_cost: {rng.random() / 100:.5f} s, avg_batch_cost: {0.15 + rng.random() / 50:.5f} s, "
                f"avg_samples: 17.0, ips: {100 + rng.random() * 5:.5f} samples/s, eta: {index % 10}:04:14, "
                "max_mem_reserved: 5140 MB, max_mem_allocated: 4339 MB\n")
        if step % 2000:
            return line
        acc = min(0.99, step / 2e6 + rng.random() / 10)
        return (line + "eval model:: 100%|##########| 63/63 [00:03<00:00, 17.45it/s]\n"
                f"[2026/08/06 10:00:00] ppocr INFO: cur metric, acc: {acc!r}, norm_edit_dis: {rng.random()!r}, "
                f"fps: {1600 + rng.random()!r}\n[2026/08/06 10:00:01] ppocr INFO: save best model is to "
                "./output/rec/best_accuracy\n[2026/08/06 10:00:01] ppocr INFO: best metric, acc: "
                f"{acc!r}, is_float16: False, norm_edit_dis: 0.98, fps: 1602.5, best_epoch: 1\n")

    _write(path, megabytes, head, block)


def make_opennmt(path: Path, megabytes: int) -> None:
    """OpenNMT-py's training log as its quickstart prints it: the options and model dump, a step line every 50 steps
    (numbers padded to their widths), the corpus reloaded now and then, a validation every 1,000 steps."""
    rng = random.Random(16)
    head = "".join(f"[2020-09-22 16:31:18,{i:03d} INFO] {text}\n" for i, text in enumerate((
        "Missing transforms field for corpus_1 data, set to default: [].", "Parsed 2 corpora from -data.",
        "Building model...", "NMTModel(", "encoder: 16506880", "decoder: 25886233",
        "* number of parameters: 42393113", "Starting training on GPU: [0]",
        "Start training loop and validate every 1000 steps...")))

    def block(index: int) -> str:
        step = 50 * (index + 1)
        xent = 9 * math.exp(-step / 4e5) + rng.random() / 10
        line = (f"[2020-09-22 16:{step // 3000 % 60:02d}:{step // 50 % 60:02d},{index % 1000:03d} INFO] Step "
                f"{step}/100000; acc: {100 - 10 * xent:6.2f}; ppl: {math.exp(xent):5.2f}; xent: {xent:4.2f}; "
                f"lr: {min(1.0, step / 8000):7.5f}; {18000 + rng.randrange(2000)}/{18000 + rng.randrange(2000)} tok/s; "
                f"{step // 8:6d} sec\n")
        if index % 7 == 3:
            line += ("[2020-09-22 16:31:28,225 INFO] Loading ParallelCorpus(toy-ende/src-train.txt, "
                     "toy-ende/tgt-train.txt, align=None)...\n")
        if step % 1000 == 0:
            line += (f"[2020-09-22 16:33:40,079 INFO] Validation perplexity: {math.exp(xent) * 1.2:g}\n"
                     f"[2020-09-22 16:33:40,080 INFO] Validation accuracy: {90 - 10 * xent:g}\n"
                     f"[2020-09-22 16:33:40,455 INFO] Saving checkpoint run/model_step_{step}.pt\n")
        return line

    _write(path, megabytes, head, block)


def make_espnet(path: Path, megabytes: int) -> None:
    """ESPnet2's ``train.log`` as its docs show one: the model dump, each epoch's start, a line per 100 batches of
    its 8,050, and the epoch's results (``[train]``, ``[valid]``, ``[att_plot]`` sections)."""
    rng = random.Random(17)
    head = "".join(f"[host] 2023-10-27 13:29:0{i},321 (asr:{i}) INFO: {text}\n" for i, text in enumerate((
        "Vocabulary size: 5000", "ESPnetASRModel(", "Model summary: Number of parameters: 116.15 M",
        "Optimizer: Adam(lr: 0.002)", "Scheduler: WarmupLR(warmup_steps=25000)")))

    def block(epoch: int) -> str:
        lines = [f"[host] 2023-10-27 13:29:13,321 (trainer:298) INFO: {epoch + 1}/1000epoch started\n"]
        for first in range(1, 8050, 100):
            loss = 150 * math.exp(-(epoch * 8050 + first) / 4e5) + rng.random()
            lines.append(f"[host] 2023-10-27 13:37:46,{first % 1000:03d} (trainer:753) INFO: {epoch + 1}epoch:train:"
                         f"{first}-{first + 99}batch: iter_time={rng.random() / 1000:.3e}, forward_time=0.040, "
                         f"loss_ctc={loss * 1.2:.3f}, loss_att={loss * 0.9:.3f}, acc={1 - loss / 200:.3f}, loss={loss:.3f}, "
                         f"backward_time=0.049, grad_norm={100 + rng.random() * 50:.3f}, clip=100.000, loss_scale=1.000, "
                         f"optim_step_time=0.015, optim0_lr0={1e-5 * (epoch + 1):.3e}, train_time=0.127\n")
        lines.append(f"[host] 2023-10-27 14:01:05,691 (trainer:338) INFO: {epoch + 1}epoch results: [train] "
                     f"iter_time=1.5e-04, loss=130.1, acc=0.28, time=20 minutes and 52.3 seconds, "
                     f"total_count={8050 * (epoch + 1)}, gpu_max_cached_mem_GB=7.2, [valid] loss_ctc=120.5, "
                     f"loss_att=95.4, acc=0.35, cer=0.6, wer=0.9, loss={100 / (epoch + 1):.3f}, time=31.9 seconds, "
                     "total_count=300, gpu_max_cached_mem_GB=7.2, [att_plot] time=1.2 seconds, total_count=0\n")
        return "".join(lines)

    _write(path, megabytes, head, block)


def make_pytorch_lm(path: Path, megabytes: int) -> None:
    """PyTorch's word-language-model example on Wikitext-2 as its README shows it: a line every 200 of an epoch's
    2,983 batches, then the epoch's summary between lines of dashes (an epoch per block: a large log is many)."""
    rng = random.Random(18)

    def block(epoch: int) -> str:
        lines = []
        for batch in range(200, 2983, 200):
            loss = 7.6 * math.exp(-(epoch * 2983 + batch) / 2e6) + rng.random() / 10
            lines.append(f"| epoch {epoch + 1:3d} | {batch:5d}/ 2983 batches | lr {20 / 4 ** (epoch // 40):02.2f} | "
                         f"ms/batch {45 + rng.random():5.2f} | loss {loss:5.2f} | ppl {math.exp(loss):8.2f}\n")
        valid = 7.2 * math.exp(-(epoch + 1) * 2983 / 2e6)
        dashes = "-" * 89 + "\n"
        lines += [dashes, f"| end of epoch {epoch + 1:3d} | time: {140 + rng.random():5.2f}s | valid loss {valid:5.2f} | "
                  f"valid ppl {math.exp(valid):8.2f}\n", dashes]
        return "".join(lines)

    _write(path, megabytes, "", block)


def make_torchtitan(path: Path, megabytes: int) -> None:
    """torchtitan's console of a Llama 3 8B training as ``run_train.sh`` leaves it (``[rank0]:``, colour codes):
    the start-up lines, a metrics line every 10 steps (2026's, with grad_norm), the periodic GC line every 50, a
    validation and a checkpoint every 500, the dataset re-looped now and then."""
    rng = random.Random(19)
    red, green, yellow, blue, magenta, cyan, reset = (f"\033[{c}m" for c in (31, 32, 33, 34, 35, 36, 39))
    orange, turquoise = "\033[38;2;180;60;0m", "\033[38;2;54;234;195m"
    start = 1_779_120_264.201

    def prefix(second: float, level: str = "INFO") -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second))
        return f"[rank0]:[titan] {stamp},{int(second * 1000) % 1000:03d} - root - {level} - "

    head = "".join(prefix(start) + line + "\n" for line in (
        "Starting job: Llama 3 8B training", "Building 1-D device mesh with ['dp_shard'], [8]",
        "CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory",
        "Model llama3 8B size: 8,030,261,248 total parameters", "Peak FLOPS used for computing MFU: 9.890e+14",
        "CUDA memory usage for model: 3.77GiB(4.77%)", "Training starts at step 1."))

    def block(index: int) -> str:
        step = 1 if index == 0 else 10 * index
        at = prefix(start + 1.1 * step)
        loss = 12.0 * (step + 50) ** -0.12 + rng.random() * 0.05
        tps = rng.randint(6800, 7400)
        out = (at + f"{red}step: {step:2}  {green}loss: {loss:8.5f}  {orange}grad_norm: {rng.random() * 2:7.4f}  "
               f"{turquoise}memory: {63.5 + rng.random():5.2f}GiB({80.2 + rng.random():.2f}%)  {blue}tps: {tps:,}  "
               f"{cyan}tflops: {tps * 0.0542:,.2f}  {magenta}mfu: {tps * 0.00548:.2f}%{reset}\n")
        if step % 50 == 0:
            out += at + "[GC] Performing periodical GC collection 0.05 seconds\n"
        if step % 500 == 0:
            out += (at + f"{yellow}validate step: {step:2}  {green}loss: {loss + 0.1:7.4f}  "
                    f"{turquoise}memory: {64.1:5.2f}GiB({81.0:.2f}%)  {blue}tps: {tps * 3:,}{reset}\n"
                    + at + "Saving the checkpoint (or staging if async is enabled).\n")
        if index % 997 == 5:
            out += prefix(start + 1.1 * step, "WARNING") + "Dataset c4 is being re-looped\n"
        return out

    _write(path, megabytes, head, block)


def make_maxtext(path: Path, megabytes: int) -> None:
    """MaxText's console of a long pre-training as newer trees print it (absl's prefix before every line): the
    config dump and system information, a training line every step (with lm_loss and perplexity), the tensorboard
    hint every 100 steps, an evaluation every 1,000 steps (its start, its batches' running averages, its summary,
    printed before the line of its step), a checkpoint every 2,000."""
    rng = random.Random(20)
    clock = [0.0]

    def prefix(where: str = "max_utils.py:695") -> str:
        clock[0] += 5.668
        t = clock[0]
        return (f"I{8 + int(t // 86400) % 3:02d}{11 + int(t // 86400) % 17:02d} {int(t // 3600) % 24:02d}:"
                f"{int(t // 60) % 60:02d}:{int(t) % 60:02d}.{int(t * 1e6) % 1000000:06d} 138304841739136 {where}] ")

    head = "".join(f"{prefix()}Config param {name}: {value}\n" for name, value in (
        ("base_emb_dim", 4096), ("base_num_decoder_layers", 48), ("per_device_batch_size", 24), ("steps", 100000)))
    head += f"{prefix()}System Information: Jax Version: 0.8.1\n{prefix()}number parameters: 15.706 billion\n"

    def block(step: int) -> str:
        seconds = 5.668 + rng.uniform(-0.003, 0.003) if step else 44.923
        loss = 8 + 4 * math.exp(-step / 3000) + rng.uniform(-0.02, 0.02)
        text = (f"{prefix('metric_logger.py:226')}completed step: {step}, seconds: {seconds:.3f}, "
                f"TFLOP/s/device: {764.65 / seconds:.3f}, Tokens/s/device: {49152 / seconds:.3f}, total_weights: "
                f"196608, loss: {loss:.3f}, lm_loss: {loss:.3f}, perplexity: {math.exp(loss):.3f}\n")
        if step % 100 == 0:
            text += f"{prefix('metric_logger.py:333')}To see full metrics 'tensorboard --logdir=gs://b/run/tensorboard/'\n"
        if step % 1000 == 999:
            text += f"{prefix('train.py:913')}Starting eval after train step {step}\n"
            for k in range(5):
                text += (f"{prefix('metric_logger.py:328')}Completed eval step: {k}, seconds: 1.234, running "
                         f"loss={loss + 0.1:.3f}, running perplexity={math.exp(loss + 0.1):.3f}, running "
                         f"total_weights={196608.0 * (k + 1)}\n")
            text = (f"{prefix('metric_logger.py:302')}Completed eval after train step {step}, loss={loss + 0.1:.3f}, "
                    f"perplexity={math.exp(loss + 0.1):.3f}, total_weights=983040.0, avg_z_loss=0.000\n") + text
        if step % 2000 == 1999:
            text += f"{prefix('checkpointing.py:880')}Saving checkpoint for step {step}\n"
        return text

    _write(path, megabytes, head, block)


def _olmo_float(value: float) -> str:
    """A number as OLMo's trainer prints it (``format_float`` of its ``train.py``)."""
    if value < 0.0001:
        return str(value)
    elif value > 1000:
        return f"{int(value):,d}"
    elif value > 100:
        return f"{value:.1f}"
    elif value > 10:
        return f"{value:.2f}"
    elif value > 1:
        return f"{value:.3f}"
    else:
        return f"{value:.4f}"


def make_olmo(path: Path, megabytes: int) -> None:
    """OLMo's console (v0.4+ trainer, stdout to a file): the start-up lines and model dump (indented lines that
    are no metrics), a block per step (grad norm, loss, perplexity, Z-loss, tokens, FLOPs, throughput, memory every
    10 steps), every 1,000 steps an evaluation (its progress lines and block, 11 perplexity sets) and 4 downstream
    evaluators, and a checkpoint."""
    rng = random.Random(21)
    start = 1_722_938_327.318

    def prefix(second: float, where: str = "olmo.train:908", level: str = "INFO") -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second))
        return f"{stamp}.{int(second * 1000) % 1000:03d}\tjupiter-cs-aus-132.reviz.ai2.in:0\t{where}\t{level}\t"

    head = "".join(prefix(start, "train:100") + line + "\n" for line in (
        "Saving config to /results/config.yaml", "Number of parameters: 1,176,764,416",
        "Number of non-embedding parameters: 1,073,741,824", "Peak GPU Memory (MB) before FSDP: 4,796",
        "Wrapping model with FDSP...", "Model:"))
    head += ("FullyShardedDataParallel(\n  (_fsdp_wrapped_module): OLMo(\n    (transformer): ModuleDict(\n"
             "      (wte): Embedding(50304, 2048)\n      (emb_drop): Dropout(p=0.0, inplace=False)\n"
             "      (ln_f): LayerNorm()\n      (blocks): ModuleList(\n"
             + "".join(f"        ({i}): OLMoSequentialBlock(\n          (dropout): Dropout(p=0.0, inplace=False)\n"
                       f"          (act): SwiGLU()\n        )\n" for i in range(16))
             + "      )\n    )\n  )\n)\n")
    head += prefix(start + 2, "train:200") + "Starting training...\n"
    head += prefix(start + 3) + "Pre-train system metrics\n    System/Peak GPU Memory (MB)=6,784\n"
    sets = ("c4_en", "dolma_books", "dolma_common-crawl", "dolma_pes2o", "dolma_reddit", "dolma_stack",
            "dolma_wiki", "ice", "m2d2_s2orc", "pile", "wikitext_103")

    def block(index: int) -> str:
        step = index + 1
        at = start + 39.3 * step
        loss = 2.6 + 9 * math.exp(-step / 5000) + rng.random() * 0.05
        tokens = 4_194_304 * step
        gflops = 4.87 * tokens
        tps = 23000 + rng.random() * 300
        lines = [prefix(at) + f"[step={step}/739328,epoch=0]",
                 f"    optim/total_grad_norm={_olmo_float(0.2 + rng.random())}",
                 f"    train/CrossEntropyLoss={_olmo_float(loss)}",
                 f"    train/Perplexity={_olmo_float(math.exp(loss))}",
                 f"    train/ZLoss={_olmo_float(1e-4 + rng.random() * 1e-3)}",
                 f"    throughput/total_tokens={_olmo_float(tokens)}",
                 f"    throughput/total_training_Gflops={_olmo_float(gflops)}",
                 f"    throughput/total_training_log_Gflops={_olmo_float(math.log(gflops))}"]
        if step > 1:
            lines += [f"    throughput/device/tokens_per_second={_olmo_float(tps)}",
                      f"    throughput/device/batches_per_second={_olmo_float(tps / 4096)}"]
        if step < 3 or step % 10 == 0:
            lines.append("    System/Peak GPU Memory (MB)=53,695")
        if step % 1000 == 0:
            lines.append(prefix(at + 1, "olmo.train:933") + "Running evaluation for 'v3-small-ppl-validation'...")
            lines += [prefix(at + 1 + i, "olmo.train:957") + f"[eval_step={i}/-1]" for i in range(1, 21)]
            lines.append(prefix(at + 22) + "v3-small-ppl-validation")
            for name in sets:
                value = loss + rng.random() * 0.3
                lines += [f"    eval/v3-small-{name}-validation/CrossEntropyLoss={_olmo_float(value)}",
                          f"    eval/v3-small-{name}-validation/Perplexity={_olmo_float(math.exp(value))}"]
            for task in ("piqa", "hellaswag", "arc_easy", "winogrande"):
                lines.append(prefix(at + 30, "olmo.train:933") + f"Running evaluation for '{task}'...")
                lines.append(prefix(at + 31, "olmo.train:957") + "[eval_step=1/-1]")
                lines.append(prefix(at + 32) + task)
                lines.append(f"    eval/downstream/{task}_len_norm={_olmo_float(0.3 + rng.random() * 0.4)}")
            lines.append(prefix(at + 40, "olmo.train:1049") + "Saving checkpoint...")
            lines.append(prefix(at + 49, "olmo.train:1057") + f"Checkpoint saved to /results/step{step}")
        if index % 977 == 13:
            lines.append(prefix(at, "olmo.data.iterable_dataset:89", "WARNING") + "Dataset worker 3 is slow")
        return "\n".join(lines) + "\n"

    _write(path, megabytes, head, block)


def _composer_value(value: float | int) -> str:
    """A value as Composer's ConsoleLogger prints it: an integer as it is, a float to four places."""
    return str(value) if isinstance(value, int) else f"{value:.4f}"


def make_composer(path: Path, megabytes: int) -> None:
    """llm-foundry's train.py console of an MPT-1B pretraining on 8 GPUs (max_duration in batches, a block every
    batch): its logging lines, the Config block with the whole (nested) configuration, memory_monitor's keys, the
    speed monitor's throughput once its window is full, lr and the runtime estimate; an evaluation every 1,000
    batches (its decile progress lines, then LanguageCrossEntropy, perplexity and two ICL tasks); a checkpoint
    message and a data-loader warning now and then."""
    rng = random.Random(5)
    config = ["max_seq_len: 2048", "global_seed: 17", "run_name: mpt-1b", "model:", "  name: mpt_causal_lm",
              "  d_model: 2048", "  n_heads: 16", "  n_layers: 24", "  attn_config:", "    attn_impl: flash",
              "optimizer:", "  name: decoupled_adamw", "  lr: 0.0002", "  betas:", "  - 0.9", "  - 0.95",
              "max_duration: 24800ba", "eval_interval: 1000ba", "global_train_batch_size: 512",
              "device_train_microbatch_size: 8", "precision: amp_bf16"]
    config += [f"callbacks_{i}:\n  option_{i}: {rng.choice(['true', '0.1', 'null', 'hours'])}" for i in range(150)]
    head = ("2024-10-02 17:21:08,406: rank0[4127][MainThread]: INFO: __main__: Building tokenizer...\n"
            "2024-10-02 17:21:08,406: rank0[4127][MainThread]: INFO: __main__: Starting training...\n"
            + "*" * 30 + "\nConfig:\ncomposer_version: 0.23.5\nnum_gpus_per_node: 8\nnum_nodes: 1\n"
            + "\n".join(sorted(config)) + "\n\n" + "*" * 30 + "\n")
    total = 24800

    def block(index: int) -> str:
        n = index + 1
        loss = 2.2 + 9 * math.exp(-n / 3000) + rng.uniform(-0.03, 0.03)
        data: dict[str, float | int] = {}
        if index == 0:
            data["time/epoch"] = 0
        data.update({"time/batch": index, "time/sample": index * 512, "time/batch_in_epoch": index,
                     "time/sample_in_epoch": index * 512, "time/token": index * 512 * 2048,
                     "time/token_in_epoch": index * 512 * 2048})
        for key in ("current_allocated_mem", "current_active_mem", "current_inactive_mem", "current_reserved_mem",
                    "peak_allocated_mem", "peak_active_mem", "peak_inactive_mem", "peak_reserved_mem"):
            data[f"memory/{key}"] = rng.uniform(0.4, 60)
        data["memory/alloc_retries"] = 0
        data["trainer/device_train_microbatch_size"] = 8
        data["loss/train/total"] = loss
        data["metrics/train/LanguageCrossEntropy"] = loss
        data["metrics/train/LanguagePerplexity"] = math.exp(loss)
        data["metrics/train/TokenAccuracy"] = 0.5 - loss / 30
        if n > 10:
            bps = 0.61 + rng.uniform(-0.01, 0.01)
            data.update({"throughput/batches_per_sec": bps, "throughput/samples_per_sec": bps * 512,
                         "throughput/device/batches_per_sec": bps / 8, "throughput/device/samples_per_sec": bps * 64,
                         "throughput/tokens_per_sec": bps * 512 * 2048,
                         "throughput/device/tokens_per_sec": bps * 64 * 2048})
        data.update({"time/train": n / 2200, "time/val": (n // 1000) * 0.002, "time/total": n / 2200 + (n // 1000) * 0.002})
        if n > 1:
            data["time/remaining_estimate"] = (total - n) / 2200
        data["lr-DecoupledAdamW/group0"] = 2e-4 * min(1.0, n / 500)
        text = f"[batch={n}/{total}]:\n" + "".join(f"\t Train {k}: {_composer_value(v)}\n" for k, v in data.items())
        if n % 1000 == 0:
            for i in (1, 2, 3, 4, 5, 6, 8, 9, 10, 11):
                text += f"[Eval batch={i}/12] Eval on eval data\n"
            text += ("[Eval batch=12/12] Eval on eval data:\n"
                     f"\t Eval metrics/eval/LanguageCrossEntropy: {loss + 0.05:.4f}\n"
                     f"\t Eval metrics/eval/LanguagePerplexity: {math.exp(loss + 0.05):.4f}\n"
                     f"\t Eval metrics/eval/TokenAccuracy: {0.5 - loss / 30:.4f}\n")
            for task in ("lambada_openai", "hellaswag/10-shot"):
                text += (f"[Eval batch=50/50] Eval on {task} data:\n"
                         f"\t Eval metrics/{task}/InContextLearningLMAccuracy: {rng.random():.4f}\n")
            text += ("2024-10-02 19:21:08,406: rank0[4127][MainThread]: INFO: composer.callbacks.checkpoint_saver: "
                     f"Saving checkpoint to ./mpt-1b/checkpoints/ep0-ba{n}-rank0.pt\n")
        if n % 5000 == 17:
            text += "/usr/lib/python3/site-packages/streaming/base/dataset.py:412: UserWarning: shard 42 slow\n"
        return text

    _write(path, megabytes, head, block)


#: what ``litgpt pretrain`` prints before its first step (its settings, the model's size)
LITGPT_HEAD = """{'data': {'class_path': 'litgpt.data.TinyLlama',
          'init_args': {'data_path': 'data',
                        'num_workers': 8,
                        'seed': 42}},
 'devices': 'auto',
 'eval': {'final_validation': True,
          'initial_validation': False,
          'interval': 1000,
          'max_iters': 100,
          'max_new_tokens': None},
 'initial_checkpoint_dir': None,
 'logger_name': 'tensorboard',
 'model_config': {'bias': False,
                  'block_size': 2048,
                  'n_embd': 2048,
                  'n_head': 32,
                  'n_layer': 22,
                  'name': 'tiny-llama-1.1b'},
 'out_dir': PosixPath('out/pretrain/tiny-llama'),
 'resume': False,
 'seed': 42,
 'train': {'global_batch_size': 512,
           'log_interval': 1,
           'lr_warmup_steps': 2000,
           'max_norm': 1.0,
           'max_tokens': 3000000000000,
           'micro_batch_size': 4,
           'save_interval': 1000}}
Seed set to 42
Time to instantiate model: 0.13 seconds.
Total parameters: 1,100,048,384
Verifying settings ...
Measured TFLOPs: 6.09
"""


#: the eight losses CycleGAN's loss_log.txt prints
_CYCLEGAN_LOSSES = ("D_A", "G_A", "cycle_A", "idt_A", "D_B", "G_B", "cycle_B", "idt_B")


def make_gan_loss_log(path: Path, megabytes: int) -> None:
    """A long CycleGAN training's ``loss_log.txt`` (pytorch-CycleGAN-and-pix2pix's Visualizer): 300,000 images an
    epoch at batch_size 1, a line every 100 (print_freq): ``(epoch: e, iters: i, time: t, data: d) D_A: … `` with the
    eight losses at %.3f and the trailing blank, under its ``Training Loss`` header."""
    rng = random.Random(0)
    target = megabytes << 20
    size, print_freq = 300_000, 100
    written = total = 0
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("================ Training Loss (Sun Mar  1 12:00:00 2020) ================\n")
        for epoch in range(1, 10_000):
            first = total
            text = []
            for total in range((first // print_freq + 1) * print_freq, first + size + 1, print_freq):
                k = epoch / 200
                losses = (0.25 + rng.random() * 0.1, 0.5 + rng.random() * 0.3, 2.5 - k + rng.random(),
                          1.1 - k / 2 + rng.random() * 0.3, 0.24 + rng.random() * 0.1, 0.45 + rng.random() * 0.3,
                          2.3 - k + rng.random(), 1.2 - k / 2 + rng.random() * 0.3)
                text.append(f"(epoch: {epoch}, iters: {total - first}, time: {0.2 + rng.random() * 0.2:.3f}, "
                            f"data: {rng.random() * 0.01:.3f}) "
                            + "".join(f"{name}: {value:.3f} " for name, value in zip(_CYCLEGAN_LOSSES, losses,
                                                                                       strict=True)) + "\n")
            total = first + size
            chunk = "".join(text)
            out.write(chunk)
            written += len(chunk)
            if written >= target:
                return


def make_minimind(path: Path, megabytes: int, old: bool = False) -> None:
    """MiniMind's pretraining console: the model size lines, then a line every 100 steps of 44,160 per epoch (the
    current version's; or the 2024 versions'), each epoch's last step too, a resume notice now and then."""
    rng = random.Random(3)
    head = "Model Params: 25.83M\nTrainable Params: 25.830M\n"
    per_epoch = 44160

    def block(index: int) -> str:
        epoch, within = divmod(index * 100, per_epoch)
        within = within or 1
        loss = 2 + 7 * math.exp(-index / 300) + rng.random() / 10
        lr = 5e-4 * (0.1 + 0.45 * (1 + math.cos(math.pi * index / 2000)))
        left = (per_epoch - within) * 0.61 // 60
        if old:
            line = (f"Epoch:[{epoch + 1}/6]({within}/{per_epoch}) loss:{loss:.3f} lr:{lr:.12f} "
                    f"epoch_Time:{left}min:\n")
        else:
            line = (f"Epoch:[{epoch + 1}/6]({within}/{per_epoch}), loss: {loss:.4f}, logits_loss: {loss:.4f}, "
                    f"aux_loss: 0.0000, lr: {lr:.8f}, epoch_time: {left:.1f}min\n")
        if index % 5000 == 4999:
            line += "Model Params: 25.83M\nTrainable Params: 25.830M\n"
            line += f"Epoch [{epoch + 1}/6]: 跳过前{within}个step，从step {within + 1}开始\n"
        return line

    _write(path, megabytes, head, block)


def make_litgpt(path: Path, megabytes: int) -> None:
    """``litgpt pretrain``: a line every optimizer step (log_interval 1, 16 iters per step), each '(step)' with the
    remaining time (days past 24 h), a validation every 1,000 steps, a checkpoint after it."""
    rng = random.Random(3)
    acc, max_iters = 16, 16 * 5_000_000

    def block(index: int) -> str:
        step = index + 1
        it = step * acc
        loss = 2.0 + 9.0 * math.exp(-step / 3000) + rng.random() * 0.05
        done = (step - 1) // 1000 * 1000  # (the last validation before this line)
        val = "n/a" if not done else f"{2.0 + 9.0 * math.exp(-done / 3000):.3f}"
        remaining = timedelta(seconds=int((max_iters - it) * 0.09))
        line = (f"Epoch {1 + step // 200_000} | iter {it} step {step} | loss train: {loss:.3f}, val: {val} | "
                f"iter time: {180 + rng.random() * 20:.2f} ms (step) remaining time: {remaining!s}\n")
        if step % 1000 == 0:
            line += ("Validating ...\n"
                     f"iter {it}: val loss {2.0 + 9.0 * math.exp(-step / 3000):.4f}, val time: "
                     f"{6000 + rng.random() * 500:.2f} ms\n"
                     f"Saving checkpoint to 'out/pretrain/tiny-llama/step-{step:08d}/lit_model.pth'\n")
        return line

    _write(path, megabytes, LITGPT_HEAD, block)


#: the threads of a flax example: its training loop's and CLU's writer's (which logs the metrics)
MAIN, WRITER = 130295542103168, 130245504009792


def make_clu(path: Path, megabytes: int) -> None:
    """A flax example's console (absl's prefix on every line): the config dump, then per 100 steps 'Gathering training
    metrics.' and the train metrics (learning_rate, train_accuracy, train_loss; numpy float32 printed as float64
    repr), ReportProgress every ~60 s (work unit notes + steps_per_sec + uptime lines, at ~11.6 steps/s: every 700
    steps), an evaluation every 1,000 steps (its gathering line, 3 metrics), sample texts every 2,000."""
    rng = random.Random(7)
    clock = [0.0]

    def prefix(thread: int, where: str) -> str:
        clock[0] += 0.7
        t = clock[0]
        return (f"I{3 + int(t // 86400) % 3:02d}{10 + int(t // 86400) % 17:02d} {int(t // 3600) % 24:02d}:"
                f"{int(t // 60) % 60:02d}:{int(t) % 60:02d}.{int(t * 1e6) % 1000000:06d} {thread} {where}] ")

    def f32(x: float) -> str:  # (a float32 metric as CLU prints it: its float64's repr)
        return repr(struct.unpack("f", struct.pack("f", x))[0])

    head = "".join(f"{prefix(MAIN, 'train.py:540')}Config param {k}: {v}\n" for k, v in
                   (("batch_size", 512), ("learning_rate", 0.0016), ("num_train_steps", 500000), ("eval_every", 1000)))
    head += f"{prefix(MAIN, 'train.py:612')}Starting training loop.\n"

    def block(index: int) -> str:
        step = 100 * (index + 1)
        loss = 2.5 + 8 * math.exp(-step / 3000) + rng.uniform(-0.05, 0.05)
        text = f"{prefix(MAIN, 'train.py:665')}Gathering training metrics.\n"
        text += (f"{prefix(WRITER, 'logging_writer.py:48')}[{step}] learning_rate={f32(0.0016 * min(1, step / 1000))}, "
                 f"train_accuracy={f32(0.6 - 0.5 * math.exp(-step / 4000))}, train_loss={f32(loss)}\n")
        if step % 700 == 0:
            sps = 11.6 + rng.uniform(-0.3, 0.3)
            text += (f"{prefix(MAIN, 'local.py:41')}Setting work unit notes: {sps:.1f} steps/s, {step / 5000:.1f}% "
                     f"({step + 1}/500000), ETA: 11h59m (11m : 1.8% data, 31.9% eval, 1.9% generate_text, 59.4% "
                     "train_step, 0.0% training_metrics)\n")
            text += f"{prefix(WRITER, 'logging_writer.py:48')}[{step + 1}] steps_per_sec={sps:.6g}\n"
            text += f"{prefix(WRITER, 'logging_writer.py:48')}[{step + 1}] uptime={clock[0]:.6g}\n"
        if step % 1000 == 0:
            text += f"{prefix(MAIN, 'train.py:420')}Gathering evaluation metrics.\n"
            text += (f"{prefix(WRITER, 'logging_writer.py:48')}[{step}] eval_accuracy={f32(0.62 - 0.5 * math.exp(-step / 4000))}, "
                     f"eval_loss={f32(loss - 0.2)}, eval_perplexity={f32(math.exp(loss - 0.2))}\n")
        if step % 2000 == 0:
            text += (f"{prefix(WRITER, 'logging_writer.py:64')}[{step}] Got texts: {{'samples': ['Paris is a the "
                     "capital of France , and the French capital is the largest city in Europe .', 'Flax is a former "
                     "chairman of the Federal Reserve Bank of New York .']}.\n")
        return text

    _write(path, megabytes, head, block)


def make_clu_big_vision(path: Path, megabytes: int) -> None:
    """big_vision's console: a metric per line (``utils.py:1268] ESC[35m[step]ESC[0m name = value``) every 50 steps,
    its progress note (a line with three more after it), a minival evaluation and its timing every 500 steps."""
    rng = random.Random(22)
    names = ("global_schedule", "training_loss", "l2_grads", "l2_params", "l2_updates", "uptime", "examples_seen",
             "progress", "epoch", "img/sec/core", "core_hours_TPU v3", "core_hours")

    def block(index: int) -> str:
        step = 50 * (index + 1)
        prefix = (f"I0603 08:{index // 60 % 60:02d}:{index % 60:02d}.318439 140529512351552 utils.py:1268] "
                  f"\x1b[35m[{step}]\x1b[0m ")
        text = "".join(f"{prefix}{name} = {rng.random() * 10}\n" for name in names)
        text += (f"I0603 08:14:19.320154 140529512351552 train.py:114] \x1b[33mNOTE\x1b[0m: Steps:{step}/111477 "
                 "[0.0%]\nWalltime:3m26s (0s eval)\nETA:6h26m\nTotal train time:6h26m\n")
        if step % 500 == 0:
            text += "".join(f"{prefix}{name} = {rng.random()}\n" for name in ("minival/prec@1", "minival/loss",
                                                                             "z/secs/eval/minival"))
            text += "I0603 08:13:08.691560 140529512351552 utils.py:571] TIMING[z/secs/eval/minival]: 24.5\n"
        return text

    _write(path, megabytes, "", block)


#: Each text reader's name and the maker of its log.


_ULTRA_BANNER = """\x1b[34m\x1b[1mengine/trainer: \x1b[0magnostic_nms=False, amp=True, augment=False, batch=16, box=7.5, \
cache=False, cls=0.5, data=data.yaml, device=0, epochs={epochs}, imgsz=640, lr0=0.01, model=yolo11s.pt, \
optimizer=auto, patience=100, seed=0, task=detect, warmup_epochs=3.0, workers=8
Ultralytics 8.4.190 \U0001f680 Python-3.11.7 torch-2.13.0+cu130 CUDA:0 (NVIDIA A10G, 22592MiB)
YOLO11s summary: 181 layers, 9,430,114 parameters, 9,430,098 gradients, 21.6 GFLOPs
\x1b[34m\x1b[1mtrain: \x1b[0mScanning /data/labels/train.cache... 8000 images, 0 backgrounds, 0 corrupt: 100% \
━━━━━━━━━━━━ 8000/8000 1.2Mit/s 0.0s
\x1b[34m\x1b[1moptimizer:\x1b[0m AdamW(lr=0.001, momentum=0.9) with parameter groups 81 weight(decay=0.0), 88 \
weight(decay=0.0005), 87 bias(decay=0.0)
Image sizes 640 train, 640 val
Using 8 dataloader workers
Logging results to \x1b[1mruns/detect/train\x1b[0m
Starting training for {epochs} epochs...
"""
_ULTRA_HEADER = "\n" + "%11s" * 7 % ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances", "Size") + "\n"
_ULTRA_VAL = ("%22s" + "%11s" * 6) % ("Class", "Images", "Instances", "Box(P", "R", "mAP50", "mAP50-95)")
_ULTRA_BATCHES, _ULTRA_VAL_BATCHES, _ULTRA_EPOCHS = 500, 25, 10_000


def _new_bar(i: int, n: int) -> str:
    frac = i / n
    filled = int(frac * 12)
    bar = "━" * filled + "─" * (12 - filled)
    left = f"<{(n - i) / 7.3:.1f}s" if 0 < i < n else ""
    return f"{int(frac * 100)}% {bar} {i}/{n} 7.3it/s {i / 7.3:.1f}s{left}"


def _old_bar(i: int, n: int) -> str:
    filled = 10 * i // n
    return (f"{100 * i // n:3d}%|{'█' * filled}{' ' * (10 - filled)}| {i}/{n} "
            f"[00:{i // 60 % 60:02d}<00:{(n - i) // 60 % 60:02d}, {7 + (i % 10) / 10:.2f}it/s]")


def _make_ultralytics(path: Path, megabytes: int, new: bool) -> None:
    """Ultralytics YOLO's console (8.4: every batch's redraw after ``\\r\\x1b[K`` with its own bar; 8.0–8.3: tqdm's),
    500 batches an epoch, the header before each, the validation bar's redraws and its ``all`` row, coloured banner
    lines, the final validation of best.pt with per-class rows."""
    rng = random.Random(3)
    bar = _new_bar if new else _old_bar
    redraw = "\r\x1b[K" if new else "\r"
    target = megabytes << 20
    with open(path, "w", encoding="utf-8", newline="") as out:
        banner = _ULTRA_BANNER.format(epochs=_ULTRA_EPOCHS)
        out.write(banner)
        written = len(banner.encode())
        epoch = 0
        while written < target and epoch < _ULTRA_EPOCHS:
            epoch += 1
            parts = [_ULTRA_HEADER]
            losses = [1.6 / epoch ** 0.3, 2.4 / epoch ** 0.4, 1.4 / epoch ** 0.2]
            for i in range(_ULTRA_BATCHES + 1):
                values = [v * (0.8 + 0.4 * rng.random()) for v in losses]
                desc = ("%11s" * 2 + "%11.4g" * 5) % (f"{epoch}/{_ULTRA_EPOCHS}", f"{2 + rng.random():.3g}G", *values,
                                                     rng.randint(1, 60), 640)
                parts.append(f"{redraw}{desc}: {bar(i, _ULTRA_BATCHES)}")
            parts.append("\n")
            for i in range(_ULTRA_VAL_BATCHES + 1):
                parts.append(f"{redraw}{_ULTRA_VAL}: {bar(i, _ULTRA_VAL_BATCHES)}")
            metrics = [rng.random() for _ in range(4)]
            parts.append("\n" + ("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("all", 925, 1248, *metrics) + "\n")
            text = "".join(parts)
            out.write(text)
            written += len(text.encode())
        out.write(f"\n{epoch} epochs completed in 5.089 hours.\n\nValidating runs/detect/train/weights/best.pt...\n"
                  f"{redraw}{_ULTRA_VAL}: {bar(_ULTRA_VAL_BATCHES, _ULTRA_VAL_BATCHES)}\n"
                  + ("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("all", 925, 1248, 0.866, 0.942, 0.981, 0.785) + "\n"
                  + ("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("green", 328, 414, 0.968, 0.973, 0.99, 0.794) + "\n"
                  "Speed: 0.4ms preprocess, 4.1ms inference, 0.0ms loss, 2.6ms postprocess per image\n")


def make_ultralytics_console(path: Path, megabytes: int) -> None:
    _make_ultralytics(path, megabytes, new=True)


def make_ultralytics_console_tqdm(path: Path, megabytes: int) -> None:
    _make_ultralytics(path, megabytes, new=False)


MAKERS: dict[str, Callable[[Path, int], None]] = {
    "megatron": make_megatron,
    "hf_console": make_hf,
    "deepspeed": make_deepspeed,
    "nanogpt": make_nanogpt,
    "text": make_text,
    "text_kv": make_text_kv,
    "text_epochs": make_text_epochs,
    "text_imagenet": make_text_imagenet,
    "llmc": make_llmc,
    "llmc_main": make_llmc_main,
    "modded_nanogpt": make_modded_nanogpt,
    "build_nanogpt": make_build_nanogpt,
    "build_nanogpt_console": make_build_nanogpt_console,
    "fairseq": make_fairseq,
    "fairseq_json": make_fairseq_json,
    "nnunet": make_nnunet,
    "darknet": make_darknet,
    "console_table": make_console_table,
    "sb3_console": make_sb3_console,
    "paddle": make_paddle,
    "opennmt": make_opennmt,
    "espnet": make_espnet,
    "pytorch_lm": make_pytorch_lm,
    "torchtitan": make_torchtitan,
    "maxtext": make_maxtext,
    "olmo": make_olmo,
    "composer": make_composer,
    "litgpt": make_litgpt,
    "gan_loss_log": make_gan_loss_log,
    "minimind": make_minimind,
    "clu": make_clu,
    "clu_big_vision": make_clu_big_vision,
    "keras_console": make_keras_console,
    "torch_examples": make_torch_examples,
    "tqdm_console": make_tqdm_console,
    "timm_console": make_timm_console,
    "ultralytics_console": make_ultralytics_console,
    "ultralytics_console_tqdm": make_ultralytics_console_tqdm,
}
