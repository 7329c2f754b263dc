"""The contract every registered reader keeps, checked for each one (one parametrised test per rule).

Adding a reader? Add one line to ``CONTRACT_EXAMPLES``: the reader's name and a real log of its format
in the corpus (a file or a folder, relative to the corpus root; ``sample_runs:`` or ``fixtures:`` for a bundled
one when the corpus has none), whose steps increase within each tag.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tanalyze.discover import discover
from tanalyze.errors import FormatError
from tanalyze.readers import Reader, RunData, get_readers
from tanalyze.schema import validate_scalars
from tests.conftest import SAMPLE_RUNS, real_log

CONTRACT_EXAMPLES: dict[str, str] = {
    "tensorboard": "tfevents/Battam1111__DeepSC/lightning_logs/version_0",
    "mlflow": "mlflow_mlruns/VladimirMCorteza__Pytorch-MLflow-Tensorboard/mlruns",
    "hf_trainer_state": "hf_trainer_state/Jaong__Checkpoint-of-CPT",
    "detectron2": "detectron2_metrics/Kevindic0214__detectron2_training/output",
    "detr": "detr_log_txt/PukarBaral__sten_detr/outputs",
    "mmengine": "mmengine_logs/hwh12345678900123__event-yolo/work_dirs/yolov5_s-v61_fast_1xb12-40e_image",
    "mmdet2": "mmdet2_json/masati91__ELTD/work_dirs/eltd_r50_fpn_1x_coco",
    "lightning_csv": "lightning_metrics_csv/0Xero7__slm_training/lightning_logs/version_0",
    "yolo_csv": "yolo_results_csv/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train",
    "keras_csv": "keras_csvlogger/Aditya24jar__Emotion-Detection-Resnet50/training.log",
    "csv": "other_csv/ZeroToMax-ZYZ__study_tensorboard/logs/logs_upload/04_ResNet18_SGD_20260216-194827",
    "megatron": "megatron_text_log/microsoft__Megatron-DeepSpeed/examples/MoE/log",
    "hf_console": "hf_text_log/Jaong__Checkpoint-of-CPT/cmd.txt",
    "deepspeed": "deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training/"
    "step1_supervised_finetuning/training_log_output",
    "text": "other_text/0Xero7__slm_training/classic.txt",
    # fairseq: no real log in the corpus; the bundled fixture reproduces lines of a public one
    "fairseq": "fixtures:fairseq/modern",
    # no Keras console in the corpus; the bundled ones were written by real Keras fits (their generate.py)
    "keras_console": "fixtures:keras_console/keras3_file.log",
    # no such console in the corpus; the bundled ones were printed by real torch trainings (their generate.py)
    "torch_examples": "fixtures:torch_examples/mnist_example.log",
    "tqdm_console": "fixtures:tqdm_console/custom_tqdm.log",
    "timm_console": "fixtures:timm_console/vit_train.log",
    # no fastai console in the corpus; the bundled one was printed by a real fastai fit (its generate.py)
    "console_table": "fixtures:console_table/fastai_fit.log",
    # no Stable-Baselines3 log in the corpus; the bundled ones were written by real SB3 trainings (their generate.py)
    "sb3_console": "fixtures:sb3/console.log",
    "sb3_monitor": "fixtures:sb3/ppo/monitor.csv",
    # no PaddlePaddle console in the corpus; the bundled one was printed by a real PaddleSeg training (its generate.py)
    "paddle": "fixtures:paddle/paddleseg/train.log",
    # no OpenNMT-py log in the corpus; the bundled one was printed by a real OpenNMT-py training (its generate.py)
    "opennmt": "fixtures:opennmt/toy/train.log",
    # no such console in the corpus; the bundled ones were printed by real trainings of the example's loop (generate.py)
    "pytorch_lm": "fixtures:pytorch_lm/word_lm.log",
    # no torchtitan log in the corpus and its training needs CUDA devices: the bundled lines are from its source and PRs
    "torchtitan": "fixtures:torchtitan/console.log",
    # no MaxText log in the corpus; the bundled ones were printed by real (CPU) trainings of maxtext 0.2.5
    "maxtext": "fixtures:maxtext/cpu_train/train.log",
    # no OLMo log in the corpus and its training needs CUDA devices: the bundled lines are its source's and issues'
    "olmo": "fixtures:olmo/console.log",
    # no Composer log in the corpus; the bundled ones were printed by real (CPU) Composer trainings (its generate.py)
    "composer": "fixtures:composer/toy/batches.log",
    # no LitGPT log in the corpus; its fixtures are its source's lines and a public issue's (its README says which)
    "litgpt": "fixtures:litgpt/lit_gpt_finetune_lora/console.log",
    "gan_loss_log": "fixtures:gan_loss_log/checkpoints/pix2pix_tiny/loss_log.txt",
    "jsonl": "fixtures:jsonl/char_lm/metrics.jsonl",
    "minimind": "fixtures:minimind/pretrain/train.log",
    # no CLU log in the corpus; the bundled ones were printed by real (CPU) trainings logging through CLU (README.md)
    "clu": "fixtures:clu/cpu_mlp/console.log",
    # no ESPnet log in the corpus, and its training needs a recipe's data preparation: the bundled lines are its docs'
    "espnet": "fixtures:espnet/asr_train/train.log",
    # no darknet log in the corpus and darknet cannot be built here: the bundled log reproduces public logs' lines
    "darknet": "fixtures:darknet/train.log",
    "ultralytics_console": "fixtures:ultralytics_console/detect/train.log",
    # no nnU-Net log in the corpus; the bundled fold was trained by real nnU-Net v2 (its generate.py)
    "nnunet": "fixtures:nnunet/Dataset001_Blobs/nnUNetTrainer_5epochs__nnUNetPlans__2d/fold_0",
    # no LLaMA-Factory run in the corpus; the bundled one was written by a real LLaMA-Factory SFT (its generate.py)
    "llamafactory": "fixtures:llamafactory/sft_tiny_llama/trainer_log.jsonl",
    "llmc": "llmc_logs/HectorFCardenas__llm.c/gpt2_train.11672114.log",
    "modded_nanogpt": "modded_nanogpt_logs/KellerJordan__modded-nanogpt/records/track_1_short/2024-10-10_Muon",
    # The corpus's nanoGPT consoles live inside W&B run folders (the W&B reader's); a standalone one is bundled.
    "nanogpt": "sample_runs:normal_nanogpt",
    # no build-nanogpt log.txt in the corpus; the bundled one was written by its training loop
    "build_nanogpt": "sample_runs:normal_build_nanogpt",
    "wandb-local": "wandb_local/jackokeefe11__nanoGPT/wandb/run-20240214_195452-kt2awly2",
    "wandb-chart-csv": "wandb_csv_export/druidowm__nanoGPT/wandb_export.csv",
    "wandb-runs-csv": "wandb_csv_export/Lucas-longxutang__Comp3242_Group_Project_nanoGPT/training_records/wandb_export.csv",
    # no real API export exists; the old local history file holds the same rows the API returns
    "wandb-history": "wandb_local/mfts__spaceinvaders-wandb-challenge/wandb/wandb-history.jsonl",
    # no saved history in the corpus; the bundled ones were written by real Keras fits (their generate.py)
    "history_json": "fixtures:history_json/keras_classifier/history.json",
    # no Ray Tune trial in the corpus; the bundled experiment was written by a real Tuner.fit (its generate.py)
    "ray_tune": "fixtures:ray_tune/tiny_sgd",
    # no DVCLive folder in the corpus; the bundled ones were written by real dvclive runs (their generate.py)
    "dvclive": "fixtures:dvclive/sgd",
    # no Sacred run in the corpus; the bundled ones were written by the real sacred package (their generate.py)
    "sacred": "fixtures:sacred/runs/1",
    # no long-shaped table in the corpus; the bundled ones were written by tbparse and TensorBoard (their generate.py)
    "tidy": "fixtures:tidy/tbparse/scalars.csv",
    # no YOLOv5 results.txt in the corpus: the bundled one is written with YOLOv5's own format strings
    "yolo_txt": "fixtures:yolo_txt/runs/train/exp",
    # a job that ran out of memory while allocating, before its first step
    "job-console": "crash_logs/HectorFCardenas__llm.c/gpt2_train.11672072.log",
}
#: Readers whose runs hold no points by design, and why (the points tests do not apply to them).
WITHOUT_POINTS = {"job-console": "a failed job's console without metric lines: its run is how the job ended"}

READERS = get_readers()
RNG = np.random.default_rng(20240501)
HEADS = {
    "empty": b"",
    "random": RNG.integers(0, 256, 4096, dtype=np.uint8).tobytes(),
    "zeros": bytes(4096),
    "nul-and-high": b"\x00\xff\xfe" * 100,
    "text": b"step,loss\n1,0.5\n" * 10,
    "one-byte": b"{",
}


def example_path(reader: Reader) -> Path:
    if reader.name not in CONTRACT_EXAMPLES:
        pytest.fail(f"reader {reader.name!r} has no real example: add a line to CONTRACT_EXAMPLES in "
                    f"tests/readers/test_contract.py naming a real log of its format")
    example = CONTRACT_EXAMPLES[reader.name]
    if example.startswith("sample_runs:"):
        return SAMPLE_RUNS / example.removeprefix("sample_runs:")
    if example.startswith("fixtures:"):
        return SAMPLE_RUNS.parent / "tests" / "fixtures" / example.removeprefix("fixtures:")
    return real_log(example)


def example_files(reader: Reader) -> list[list[Path]]:
    """The runs (lists of files) discovery finds in the reader's example."""
    found = discover(example_path(reader), formats=(reader.name,))
    return [[Path(f) for f in spec.files] for spec in found.runs]


def test_names_are_unique_and_described():
    names = [reader.name for reader in READERS]
    assert len(names) == len(set(names)), names
    for reader in READERS:
        assert isinstance(reader.name, str) and reader.name.strip(), reader
        assert isinstance(reader.description, str) and reader.description.strip(), reader.name


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
@pytest.mark.parametrize("head", HEADS.values(), ids=HEADS.keys())
def test_sniff_answers_a_bool_and_never_raises(reader, head, tmp_path):
    example = example_path(reader)
    names = ["data.bin", "notes", example.name] + ([] if example.is_file() else [p.name for p in example.iterdir()])
    for name in names:
        assert isinstance(reader.sniff(tmp_path / name, head), bool), (reader.name, name)


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
@pytest.mark.parametrize("content", ["empty", "random"])
def test_unreadable_file_gives_warnings_or_format_error(reader, content, tmp_path):
    if reader.name in WITHOUT_POINTS:
        pytest.skip(WITHOUT_POINTS[reader.name])
    data = b"" if content == "empty" else RNG.integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    for files in example_files(reader):
        bad = tmp_path / files[0].name
        bad.write_bytes(data)
        try:
            runs = reader.read([bad])
        except FormatError as error:
            assert str(bad) in str(error)
            continue
        assert isinstance(runs, list) and all(isinstance(run, RunData) for run in runs)
        assert any(run.warnings for run in runs), f"{reader.name} read {content} bytes without a warning"
        assert not any(len(run.scalars) for run in runs)


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_real_example_gives_a_valid_tidy_table(reader):
    if reader.name in WITHOUT_POINTS:
        pytest.skip(WITHOUT_POINTS[reader.name])
    runs = [run for files in example_files(reader) for run in reader.read(files)]
    assert runs and any(len(run.scalars) for run in runs), f"{reader.name} read no points from its example"
    for run in runs:
        frame = run.scalar_table()
        assert frame["step"].dtype == np.int64 and frame["value"].dtype == np.float64
        assert frame["wall_time"].dtype == np.float64
        validate_scalars(frame)
        for tag, rows in frame.groupby("tag", observed=True, sort=False):
            steps = rows["step"].to_numpy()
            assert (np.diff(steps) >= 0).all(), f"{reader.name}: tag {tag!r} is not in write (step) order"
        assert not run.warnings, run.warnings
