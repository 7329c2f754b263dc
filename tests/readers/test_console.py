"""parse_console_file, and console logs across the whole corpus: every real text log is a run."""

import pytest

from tanalyze import load
from tanalyze.cli import main
from tanalyze.readers import READERS, get_reader
from tanalyze.readers.text.console import console_readers, detect_console_format, parse_console_file
from tests.readers.text_helpers import check, notes_text, write

TEXT_FORMATS = ["megatron", "llmc", "pytorch_lm", "fairseq", "clu", "hf_console", "keras_console", "deepspeed", "modded_nanogpt", "build_nanogpt", "nanogpt",
                "tqdm_console", "timm_console", "nnunet", "darknet", "ultralytics_console", "console_table", "sb3_console", "paddle", "opennmt", "espnet", "torchtitan", "maxtext", "olmo", "composer", "litgpt",
                "gan_loss_log", "minimind", "text",
                "torch_examples"]

SAMPLES = {
    "console_table": "epoch     train_loss  valid_loss  time\n0         0.9         0.8         00:01\n",
    "sb3_console": "-----------------------\n| rollout/   |        |\n|    ep_rew_mean | 21.7 |\n"
                   "|    total_timesteps | 512 |\n-----------------------\n",
    "paddle": "2021-08-14 08:05:32 [INFO]\t[TRAIN] epoch: 1, iter: 20/6000, loss: 2.5284, lr: 0.009937\n"
              "2021-08-14 08:05:42 [INFO]\t[TRAIN] epoch: 1, iter: 40/6000, loss: 2.1284, lr: 0.009917\n",
    "opennmt": "[2020-09-22 16:31:24,717 INFO] Step 50/ 1000; acc:   7.21; ppl: 6659.24; xent: 8.80; lr: 1.00000; "
               "19307/19183 tok/s;      6 sec\n[2020-09-22 16:31:30,779 INFO] Step 100/ 1000; acc:   9.26; "
               "ppl: 1989.38; xent: 7.60; lr: 1.00000; 19281/19312 tok/s;     12 sec\n",
    "pytorch_lm": "| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 45.68 | loss  7.63 | ppl  2050.44\n"
                  "| epoch   1 |   400/ 2983 batches | lr 20.00 | ms/batch 45.11 | loss  6.85 | ppl   945.93\n",
    "torchtitan": "[titan] 2025-03-12 11:10:21,511 - root - INFO - step: 22  loss:  6.2250  memory:  1.41GiB(1.79%)  "
                  "tps: 193,831  tflops: 18.36  mfu: 1.86%\n[titan] 2025-03-12 11:10:21,611 - root - INFO - step: 23  "
                  "loss:  6.1250  memory:  1.41GiB(1.79%)  tps: 193,831  tflops: 18.36  mfu: 1.86%\n",
    "maxtext": "completed step: 1, seconds: 5.658, TFLOP/s/device: 135.158, Tokens/s/device: 8687.815, total_weights: "
               "196608, loss: 11.689\ncompleted step: 2, seconds: 5.661, TFLOP/s/device: 135.1, Tokens/s/device: 8680.1, "
               "total_weights: 196608, loss: 11.2\n",
    "olmo": "2024-04-17 09:42:26.534\tgpu-node-07:0\tolmo.train:816\tINFO\t[step=1/739328]\n"
            "    train/CrossEntropyLoss=11.25\n    train/Perplexity=76,631\n"
            "2024-04-17 09:42:38.424\tgpu-node-07:0\tolmo.train:816\tINFO\t[step=2/739328]\n"
            "    train/CrossEntropyLoss=10.73\n    train/Perplexity=45,773\n",
    "composer": "[batch=1/100]:\n\t Train time/batch: 0\n\t Train loss/train/total: 7.1234\n"
                "[batch=2/100]:\n\t Train time/batch: 1\n\t Train loss/train/total: 6.9876\n",
    "litgpt": "Epoch 1 | iter 4 step 1 | loss train: 10.772, val: n/a | iter time: 212.41 ms (step) remaining time: "
              "2:37:17\nEpoch 1 | iter 8 step 2 | loss train: 10.595, val: n/a | iter time: 194.76 ms (step) remaining "
              "time: 1:39:52\n",
    "clu": "I0325 14:11:17.857037 130245504009792 logging_writer.py:48] [100] train_accuracy=0.40, train_loss=3.38\n"
           "I0325 14:12:17.857037 130245504009792 logging_writer.py:48] [200] train_accuracy=0.41, train_loss=3.28\n",
    "espnet": "[host] 2020-04-05 16:34:56,315 (trainer:453) INFO: 2epoch:train:1-10batch: iter_time=0.006, loss=50.873\n"
              "[host] 2020-04-05 16:34:58,046 (trainer:453) INFO: 2epoch:train:11-20batch: iter_time=0.004, loss=44.369\n",
    "darknet": " 1: 719.302734, 719.302734 avg loss, 0.001000 rate, 3.5 seconds, 64 images\n"
               " 2: 700.1, 717.4 avg loss, 0.001000 rate, 3.5 seconds, 128 images\n",
    "nnunet": "2026-01-01 10:00:00.000001: Epoch 0 \n2026-01-01 10:01:00.000001: train_loss -0.2 \n",
    "megatron": " iteration       10/     100 | lm loss: 1.000000E+01 | grad norm: 2.5 |\n",
    "hf_console": "{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 5e-05, 'epoch': 0.5}\n",
    "deepspeed": "[2024-01-01 00:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.1], mom=[0.9]\n",
    "nanogpt": "iter 10: loss 2.5000, time 10.00ms, mfu 5.00%\n",
    "llmc": "s:0 tel:11.0079\ns:0 trl:11.0097 lr:0.000001 norm:15.08\n",
    "fairseq": "| epoch 001:     10 / 31621 loss=15.180, ppl=37113.65, num_updates=11, lr=1.1e-07\n",
    "modded_nanogpt": "step:1/6200 train_loss:10.9184 train_time:74701ms step_avg:nanms\n",
    "build_nanogpt": "0 val 10.9310\n0 hella 0.2413\n0 train 10.934416\n",
    "text": "Epoch 1/2\nTrain Loss: 2.0\nEpoch 2/2\nTrain Loss: 1.0\n",
    "torch_examples": "Epoch [1/2], Step [10/20], Loss: 2.3\nEpoch [1/2], Step [20/20], Loss: 2.1\n",
    "tqdm_console": "".join(f"Epoch 0: {k}0%|###| {k}/9 [00:01<00:01, 9.1it/s, loss={2 - k / 10}]\r" for k in range(4)),
    "timm_console": "Train: 0 [   0/9 ( 11%)]  Loss: 2.3 (2.3)  LR: 1.000e-03\nTrain: 0 [   8/9 (100%)]  Loss: 2.1 (2.2)\n",
    "keras_console": "Epoch 1/2\n50/50 - 1s - loss: 1.3280 - val_loss: 1.1175 - 517ms/epoch - 10ms/step\n",
    "ultralytics_console": ("\n      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
                            "        1/2      2.61G      1.596      2.455      1.443         39        640: 100%|####| 58/58 "
                            "[00:21<00:00,  2.70it/s]\n"
                            "        2/2      2.61G      1.496      2.355      1.343         39        640: 100%|####| 58/58 "
                            "[00:21<00:00,  2.70it/s]\n"),
}


def test_console_formats_are_the_registrys_text_readers_in_registry_order():
    names = [reader.name for reader in console_readers()]
    assert names == TEXT_FORMATS
    positions = [next(i for i, entry in enumerate(READERS) if entry.endswith(":" + type(r).__name__))
                 for r in console_readers()]
    assert positions == sorted(positions)


@pytest.mark.parametrize("format_name", sorted(SAMPLES))
def test_parse_console_file_recognises_each_format(tmp_path, format_name):
    path = write(tmp_path / "output.log", SAMPLES[format_name])
    assert detect_console_format(path).name == format_name
    run = parse_console_file(path)
    assert run.notes[0] == f"console output read as {format_name}"
    assert len(run.scalars) >= 1 and run.warnings == []


def test_parse_console_file_on_noise_and_on_a_missing_file(tmp_path):
    run = parse_console_file(write(tmp_path / "output.log", "hello\nworld\n"))
    assert len(run.scalars) == 0 and "no known console format recognised" in notes_text(run)
    assert "no text metric line could be read" in run.warnings[0].message
    from tanalyze.errors import FormatError

    with pytest.raises(FormatError, match="cannot read"):
        parse_console_file(tmp_path / "missing.log")


def test_dirty_console_output_everything_at_once(tmp_path):
    data = (
        b"\x1b[32mstarting\x1b[0m\r\n"
        b"iter 0: loss 4.0000, time 100.00ms, mfu -100.00%\r\n"
        b"  5%|\xe2\x96\x88    | 1/20\r 10%|\xe2\x96\x88\xe2\x96\x88   | 2/20\riter 1: loss 3.5000, time 50.00ms, mfu 7.00%\n"
        b"garbage \xff\xfe bytes\x00\x00\n"
        b"iter 2: loss 3.0000, time 50.00ms, mfu 7.10%\n"
        b"iter 3: loss 2.9"
    )
    run = parse_console_file(write(tmp_path / "output.log", data))
    check(run.scalars, "loss", {0: 4.0, 1: 3.5, 2: 3.0}, count=3)
    check(run.scalars, "mfu", {1: 7.0, 2: 7.1}, count=2)
    notes = notes_text(run)
    for expected in ("1 'mfu -100.00%'", "2 undecodable byte", "2 NUL byte", "2 bare carriage return", "2 ANSI escape"):
        assert expected in notes
    (warning,) = run.warnings
    assert "iter 3: loss 2.9" in warning.message and warning.location == "line 6"


@pytest.mark.parametrize("content", [b"", bytes(range(256)) * 80])
@pytest.mark.parametrize("name", TEXT_FORMATS)
def test_empty_or_binary_files_read_directly_give_a_warning(tmp_path, content, name):
    (run,) = get_reader(name).read([write(tmp_path / "bad.log", content)])
    assert run.scalars.empty
    assert run.warnings and "could be read" in run.warnings[0].message


def test_binary_and_wandb_files_are_not_console_logs(tmp_path):
    event = write(tmp_path / "events.out.tfevents.1700000000.host.1.0", b"\x18\x00\x00\x00" * 64)
    inside = write(tmp_path / "wandb" / "run-20240101_000000-abc123" / "files" / "output.log", SAMPLES["nanogpt"])
    for name in TEXT_FORMATS:
        reader = get_reader(name)
        assert not reader.sniff(event, event.read_bytes())
        assert not reader.sniff(inside, inside.read_bytes())


def test_every_real_console_log_is_a_run(real_logs):
    logs = load(real_logs, formats=TEXT_FORMATS)
    formats = {name: info.format for name, info in logs.runs.items()}
    expected = {
        "deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training/"
        "step1_supervised_finetuning/training_log_output": "deepspeed",
        "deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training/"
        "step2_dpo_finetuning/training_log_output": "deepspeed",
        "deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training/"
        "step2_reward_model_finetuning/training_log_output": "deepspeed",
        "deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training/"
        "step3_rlhf_finetuning/training_log_output": "deepspeed",
        "hf_text_log/Jaong__Checkpoint-of-CPT": "hf_console",
        "hf_text_log/Nicolassalvan__mti881-projet2/ResultsEtape1/default (learning rate 5e-5)": "hf_console",
        "hf_text_log/Nicolassalvan__mti881-projet2/ResultsEtape4/NouveauWeightLossSansOptunaHyperparamByDefault": "hf_console",
        "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/MoE/log": "megatron",
        "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/random_ltd/log/"
        "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-baseline.log": "megatron",
        "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/random_ltd/log/"
        "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log": "megatron",
        "other_text/0Xero7__slm_training/classic.txt": "text",
        "other_text/0Xero7__slm_training/experimental.txt": "text",
        "other_text/microsoft__DeepSpeedExamples/data_efficiency/vit_finetuning/out/cifar": "deepspeed",
    }
    for name, format_name in expected.items():
        assert formats.get(name) == format_name, name
    for name in expected:
        info = logs.runs[name]
        assert info.warnings == (), (name, info.warnings)
        assert len(logs.scalars_of(name)) > 0, name
    # W&B run folders are the W&B reader's; CSV loggers and binary files are not console logs
    assert not any("wandb_local" in name or "keras_csvlogger" in name or "tfevents" in name for name in formats)


def test_cli_lists_console_runs_with_notes(real_logs, capsys):
    folder = real_logs / "megatron_text_log"
    assert main(["runs", str(folder), "-q", "--max-tags", "2"]) == 0
    out = capsys.readouterr().out
    assert "random_ltd/log/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4.log  [megatron]" in out
    assert "note: 9 Python traceback(s)" in out
    assert "3 run(s) in 1 format(s) (megatron)" in out
