"""Console logs read on from where the last read stopped: the resumable-reader contract and the cache."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tanalyze
from tanalyze.cache import Cache
from tanalyze.readers import get_reader, get_readers
from tanalyze.readers.base import HEAD_BYTES, FilePart
from tanalyze.readers.text import _parts
from tanalyze.readers.text._parts import parse_path
from tanalyze.readers.text._ranked import prefix_of
from tanalyze.readers.text._reader import runs_from_parsed
from tanalyze.readers.text.console import console_readers
from tests.conftest import SAMPLE_RUNS
from tests.readers.text_helpers import read_on, write

TEXT_READERS = {reader.name for reader in console_readers()}
#: Console formats with no log of a real run in the corpus (fairseq: its tests use fixtures reproducing public lines).
NO_REAL_LOG = frozenset({"fairseq", "darknet"})  # (darknet cannot be built here: its fixture reproduces public lines)


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)  # NaN-safe: NaN is written as NaN on both sides


def assert_same_part(a: FilePart, b: FilePart, where: str) -> None:
    assert a.end == b.end, where
    assert a.columns.keys() == b.columns.keys(), where
    for name in a.columns:
        assert a.columns[name].dtype == b.columns[name].dtype, (where, name)
        np.testing.assert_array_equal(a.columns[name], b.columns[name], err_msg=f"{where}: {name}")
    assert _json(a.meta) == _json(b.meta), where
    assert _json(a.state) == _json(b.state), where
    assert _json(a.tail) == _json(b.tail), where


def resumed(reader, path: Path, data: bytes, cuts: list[int], scratch: Path) -> FilePart:
    """:func:`read_on` (``path`` names the file the cuts are of, for the callers' messages)."""
    return read_on(reader, scratch, data, cuts)


def _line_starts(data: bytes) -> list[int]:
    return [i + 1 for i in range(len(data) - 1) if data[i] == 0x0A]


#: The corpus folders that hold console logs (the others hold event files, CSV, JSON …).
CONSOLE_FOLDERS = ("crash_logs", "deepspeed_text_log", "hf_text_log", "llmc_logs", "megatron_text_log", "mmdet2_json",
                   "modded_nanogpt_logs", "other_text")


@functools.cache
def _real_text_logs(root: Path) -> list[tuple[str, Path]]:
    """Every file of those folders a console reader claims, and the nanoGPT consoles inside W&B run folders."""
    found = []
    for path in sorted(p for folder in CONSOLE_FOLDERS for p in (root / folder).rglob("*")):
        if not path.is_file():
            continue
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
        claimed = next((reader for reader in get_readers() if reader.sniff(path, head)), None)
        if claimed is not None and claimed.name in TEXT_READERS:
            found.append((claimed.name, path))
    found += [("nanogpt", p) for p in sorted(root.glob("wandb_local/*nanoGPT/wandb/*/files/output.log"))]
    # (no build-nanogpt log in the corpus: the bundled run's log.txt and console, written by its training loop)
    found += [("build_nanogpt", p) for p in sorted(SAMPLE_RUNS.glob("normal_build_nanogpt/**/*.*"))]
    # (no Keras console in the corpus: the bundled ones, written by real Keras fits)
    keras = Path(__file__).resolve().parents[1] / "fixtures" / "keras_console"
    found += [("keras_console", p) for p in sorted(keras.glob("*.log"))] + [("keras_console", keras / "overfit/train.log")]
    examples = Path(__file__).resolve().parents[1] / "fixtures" / "torch_examples"
    found += [("torch_examples", p) for p in sorted(examples.glob("*.log"))]
    bars = Path(__file__).resolve().parents[1] / "fixtures" / "tqdm_console"
    found += [("tqdm_console", p) for p in sorted(bars.rglob("*.log"))]
    found += [("timm_console", Path(__file__).resolve().parents[1] / "fixtures" / "timm_console" / "vit_train.log")]
    nnunet = Path(__file__).resolve().parents[1] / "fixtures" / "nnunet"
    found += [("nnunet", p) for p in sorted(nnunet.rglob("training_log_*.txt"))]
    found += [("console_table", Path(__file__).resolve().parents[1] / "fixtures" / "console_table" / "fastai_fit.log")]
    sb3 = Path(__file__).resolve().parents[1] / "fixtures" / "sb3"
    found += [("sb3_console", p) for p in (sb3 / "console.log", sb3 / "ppo" / "log.txt", sb3 / "dqn" / "log.txt")]
    found += [("paddle", Path(__file__).resolve().parents[1] / "fixtures" / "paddle" / "paddleseg" / "train.log")]
    found += [("opennmt", Path(__file__).resolve().parents[1] / "fixtures" / "opennmt" / "toy" / "train.log")]
    lm = Path(__file__).resolve().parents[1] / "fixtures" / "pytorch_lm"
    found += [("pytorch_lm", p) for p in sorted(lm.glob("*.log"))]
    titan = Path(__file__).resolve().parents[1] / "fixtures" / "torchtitan"
    found += [("torchtitan", p) for p in sorted(titan.glob("*.log"))]
    maxtext = Path(__file__).resolve().parents[1] / "fixtures" / "maxtext"
    found += [("maxtext", p) for p in sorted(maxtext.rglob("*.log"))]
    olmo = Path(__file__).resolve().parents[1] / "fixtures" / "olmo"
    found += [("olmo", p) for p in sorted(olmo.glob("*.log"))]
    composer = Path(__file__).resolve().parents[1] / "fixtures" / "composer"
    found += [("composer", p) for p in sorted(composer.rglob("*.log"))]
    litgpt = Path(__file__).resolve().parents[1] / "fixtures" / "litgpt"
    found += [("litgpt", p) for p in sorted(litgpt.rglob("*.log"))]
    gan = Path(__file__).resolve().parents[1] / "fixtures" / "gan_loss_log"
    found += [("gan_loss_log", p) for p in (gan / "checkpoints" / "pix2pix_tiny" / "loss_log.txt",
                                            gan / "console" / "train.log")]
    minimind = Path(__file__).resolve().parents[1] / "fixtures" / "minimind"
    found += [("minimind", p) for p in sorted(minimind.rglob("train.log"))]
    clu = Path(__file__).resolve().parents[1] / "fixtures" / "clu"
    found += [("clu", p) for p in sorted(clu.rglob("console.log"))]
    found += [("espnet", Path(__file__).resolve().parents[1] / "fixtures" / "espnet" / "asr_train" / "train.log")]
    ultralytics = Path(__file__).resolve().parents[1] / "fixtures" / "ultralytics_console"
    found += [("ultralytics_console", p) for p in sorted(ultralytics.rglob("*.log"))]
    return found


def test_every_real_console_log_read_on_from_a_cut_equals_reading_it_whole(real_logs, tmp_path):
    """``join_parts(read_part(f, 0), read_part(f, B, S)) == read_part(f, 0)``: each file cut at 3 places
    (each place as is, mid-line, and at the next line start), as if the job were still writing it, and
    read on at all of them in turn."""
    logs = _real_text_logs(real_logs)
    assert {name for name, _ in logs} == TEXT_READERS - NO_REAL_LOG and len(logs) >= 25
    scratch = tmp_path / "train.log"
    copy = tmp_path / "whole" / "train.log"  # (the same name: a restart names its file)
    copy.parent.mkdir()
    for name, path in logs:
        reader = get_reader(name)
        data = path.read_bytes()
        copy.write_bytes(data)
        whole = reader.read_part(copy)
        places = np.linspace(0, len(data), 5).astype(int)[1:-1].tolist()
        cuts = sorted({*places, *(data.find(b"\n", p) + 1 for p in places)} - {0, len(data)})
        for cut in cuts:
            assert_same_part(resumed(reader, scratch, data, [cut], scratch), whole, f"{path} cut at {cut}")
        assert_same_part(resumed(reader, scratch, data, cuts, scratch), whole, f"{path} cut at {cuts}")


def _reproduced_fixtures() -> list[tuple[str, Path]]:
    """The fixtures that reproduce public lines of formats with no real log here (fairseq's, darknet's)."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    return [(name, path) for name in ("fairseq", "darknet") for path in sorted((fixtures / name).rglob("*.log"))]


def test_a_parser_restored_from_its_snapshot_finishes_as_the_parser_that_read_the_file(real_logs):
    """What ``finish`` uses (counts, the total step count of a header, units …) survives the snapshot: the run
    combined from a part (finished by a new parser given the part's state) equals the run of the one parser
    that read the whole file and finished it."""
    logs = [*_real_text_logs(real_logs), *_reproduced_fixtures()]
    assert {name for name, _ in logs} == TEXT_READERS
    for name, path in logs:
        if prefix_of(path):
            continue  # (a launcher's rank prefix: one parser per rank, not one for the file)
        reader = get_reader(name)
        (combined,) = reader.read([path])
        whole = runs_from_parsed([parse_path(path, reader.parser(path))], None)
        a, b = (frame.drop(columns="run").astype({"tag": str}) for frame in (combined.scalars, whole.scalars))
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=str(path))  # tags coded in another order
        assert (combined.notes, combined.hparams) == (whole.notes, whole.hparams), path
        assert [w.to_dict() for w in combined.warnings] == [w.to_dict() for w in whole.warnings], path
        assert combined.restarts == whole.restarts, path


def test_parts_do_not_depend_on_where_chunks_begin(real_logs):
    """The same part whatever the chunk size (any size above the longest line): a part begins a chunk."""
    for name, path in _real_text_logs(real_logs):
        if prefix_of(path):
            continue  # (a launcher's rank prefix: one parser per rank, not one for the file)
        reader = get_reader(name)
        whole = reader.read_part(path)
        longest = max(len(line) for line in path.read_bytes().split(b"\n"))
        for size in (longest + 1, 1 << 16):
            part = _parts.read_part(path, reader.parser(path), chunk_chars=max(size, 1024))
            assert_same_part(part, whole, f"{path} in chunks of {size}")


# -- logs made for the purpose: every construct that spans lines, cut everywhere ---------------------------------

def _hf_session(first: int, last: int, total: int) -> str:
    out = []
    for step in range(first, last + 1):
        out.append(f"\r{100 * step // total:3d}%|#         | {step}/{total} [00:01<00:09, 30.00it/s]")
        if step % 10 == 0:
            out.append("\r" + " " * 60 + "\r")
            out.append(f"{{'loss': {3 - step / 1000:.4g}, 'learning_rate': 0.001, 'epoch': {step / 150:.2f}}}\n")
            out.append(f"\r{100 * step // total:3d}%|#         | {step}/{total} [00:01<00:09, 30.00it/s]")
    return "".join(out)


HF_LOG = (
    "[INFO|trainer.py:2414] 2025-04-13 01:52:42,651 >> ***** Running training *****\n"
    "  Num examples = 1,200\n  Num Epochs = 2\n  Total optimization steps = 300\n"
    "  Number of trainable parameters = 10\n"
    "Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\nlogging_steps=10,\neval_steps=50,\n"
    "output_dir=out,\n)\n"
    + _hf_session(1, 75, 300) + _hf_session(51, 300, 300)
    + "\n{'eval_loss': 2.5, 'eval_runtime': 0.05, 'epoch': 2.0}\n"
    "{'train_runtime': 5.0, 'train_steps_per_second': 60.0, 'train_loss': 2.5, 'epoch': 2.0}\n"
    "***** train metrics *****\n  epoch = 2.0\n  train_runtime = 0:00:05.00\n  train_samples = 1200\n"
    "***** eval metrics *****\n  eval_loss = 2.5\n  eval_samples = 100\n"
    "{'loss': 9.5, 'epoch': 2.0}"  # the last line still being written
)

_STAMP = "[2022-10-31 10:59:{:02d},{:03d}]"


def _megatron_fp16(iterations: int) -> str:
    out = ["------------------------ arguments ------------------------\n",
           "  train_iters ..................................... None\n",
           "  lr .............................................. 0.0001\n",
           "-------------------- end of arguments ---------------------\n"]
    for i in range(1, iterations + 1):
        step, stamp = i * 10, _STAMP.format(i % 60, i)
        out.append(f"{stamp} [INFO] [logging.py:68:log_dist] [Rank 0] step={step}, skipped={i // 4}, lr=[0.0001, 0.0001], "
                   "mom=[(0.9, 0.95)]\n")
        if i % 4 == 0:  # overflow messages before the step's timer line, and between it and the iteration line
            out.append(f"{stamp} [INFO] [stage_1_and_2.py:1770:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
                       f"Attempted loss scale: {2 ** (20 - i % 8)}, reducing to {2 ** (19 - i % 8)}\n")
        out.append(f"{stamp} [INFO] [timer.py:198:stop] 0/{step}, RunningAvgSamplesPerSec={400 + i}.5, "
                   f"CurrSamplesPerSec={410 + i}.25, MemAllocated=1.64GB, MaxMemAllocated=7.01GB\n")
        if i % 4 == 0:
            out.append(f"{stamp} [INFO] [stage_1_and_2.py:1770:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
                       "Attempted loss scale: 4096, reducing to 2048\n")
        if i == 30:
            step = 150  # a restart: the job resumed from the checkpoint of iteration 150
        out.append(f" iteration {step:>8}/     400 | consumed samples: {step * 256:>10} | lm loss: {10 - i / 10:.6E} | "
                   f"loss scale: 2048.0 | grad norm: {1 + i / 100:.3f} | number of skipped iterations:   0 |\n")
        out.append(f"time (ms) | forward-compute: {200 + i}.5 | backward-compute: {150 + i}.25\n")
        if i % 10 == 0:
            out.append(f" validation loss at iteration {step} | lm loss value: {9 - i / 10:.6E} | "
                       f"lm loss PPL: {2 ** (9 - i / 10):.6E} | \n")
            out.append(f"[Rank 0] (after {step} iterations) memory (MB) | allocated: 1.5 | max allocated: 2.5\n")
    out.append("Traceback (most recent call last):\n  File \"pretrain_gpt.py\", line 1\nKeyboardInterrupt\n")
    return "".join(out)


def _deepspeed_chat(steps: int) -> str:
    out = ["Beginning of Epoch 1/2, Total Micro Batches 40\n", "***** Evaluating perplexity, Epoch 0/2 *****\n",
           "ppl: 5000.5\n"]
    for i in range(1, steps + 1):
        stamp = _STAMP.format(i % 60, i)
        out.append(f"Model Parameters: 0.331 B, Latency: 0.{i:02d}s, TFLOPs: {10 + i}.0, Samples/sec: 50.0, "
                   "Time/seq 0.02s, Batch Size: 8, Sequence Length: 512\n")
        if i % 2 == 0:
            out.append(f"{stamp} [INFO] [logging.py:96:log_dist] [Rank 0] step={i // 2}, skipped=0, lr=[9.6e-06, 9.6e-06]\n")
            out.append(f"{stamp} [INFO] [timer.py:199:stop] epoch=0/micro_step={i}/global_step={i // 2}, "
                       "RunningAvgSamplesPerSec=173.4, CurrSamplesPerSec=171.9, MemAllocated=3.96GB, "
                       "MaxMemAllocated=22.95GB\n")
        if i % 20 == 0:
            out.append("***** Evaluating perplexity, Epoch 1/2 *****\n" f"ppl: {100 / i}\n")
    return "".join(out)


def _generic(epochs: int, blocks: bool = True) -> str:
    """Progress meters (PyTorch's ImageNet example) and, with ``blocks``, 'Epoch N/M' blocks keyed by epoch."""
    out = []
    for epoch in range(epochs):
        for batch in range(0, 40, 10):
            out.append(f"Epoch: [{epoch}][{batch:>3}/40]\tTime 0.2 (0.3)\tLoss {4 - epoch - batch / 100:.4e} (3.0)\n")
        out.append(f"Test: [10/10]\tTime 0.1 (0.1)\tLoss {3 - epoch / 10:.3f} (2.0)\n")
        out.append(f" * Acc@1 {50 + epoch}.5 Acc@5 {80 + epoch}.5\n")
        if blocks:
            out.append(f"Epoch {epoch + 1}/{epochs}\n")
            out.append(f"Train Loss: {2 - epoch / 10:.2f} - Train Accuracy: {0.5 + epoch / 100:.2f}\n")
    return "".join(out)


def _nanogpt(iterations: int) -> str:
    out = []
    for i in range(iterations):
        if i % 25 == 0:
            out.append(f"step {i}: train loss {4 - i / 100:.4f} BPC, val loss {4.1 - i / 100:.4f} BPC\n")
            out.append("saving checkpoint to out\n")
        mfu = "-100.00" if i < 5 else f"{30 + i / 10:.2f}"
        step = i if i < 90 else i - 40  # resumed from the checkpoint at 50
        out.append(f"iter {step}: loss {4 - i / 100:.4f}, time {100 + i:.2f}ms, mfu {mfu}%\n")
    return "".join(out)


SYNTHETIC = {
    "hf_console": HF_LOG.encode(),
    "megatron": _megatron_fp16(40).encode(),
    "deepspeed": _deepspeed_chat(60).encode(),
    "text": _generic(6).encode(),
    "nanogpt": _nanogpt(120).encode() + b"iter 80: loss 3.1",
    "crlf": _nanogpt(40).replace("\n", "\r\n").encode(),
    "utf16": b"\xff\xfe" + _nanogpt(30).encode("utf-16-le"),
}


@pytest.mark.parametrize("name", SYNTHETIC)
def test_a_log_cut_at_every_line_and_mid_line_reads_on_to_the_same_part(name, tmp_path):
    data = SYNTHETIC[name]
    reader = get_reader(name if name in TEXT_READERS else "nanogpt")
    path = write(tmp_path / "whole" / "train.log", data)
    whole = reader.read_part(path)
    assert whole.columns["step"].size > 50
    starts = _line_starts(data)
    for cut in starts + [start - 7 for start in starts[3::11]]:
        assert_same_part(resumed(reader, tmp_path / "train.log", data, [cut], tmp_path / "train.log"), whole,
                         f"{name} cut at {cut}")
    assert_same_part(resumed(reader, tmp_path / "train.log", data, starts[5::17], tmp_path / "train.log"), whole,
                     f"{name} read on in {len(starts[5::17]) + 1} steps")
    # and what is made of the part: the run a fresh read gives
    (fresh,) = reader.read([path])
    (run,) = reader.combine([path], [whole])
    run.scalars = run.scalars.frame(path.parent.name) if hasattr(run.scalars, "frame") else run.scalars
    pd.testing.assert_frame_equal(run.scalars, fresh.scalars)
    assert (run.notes, run.warnings, run.restarts, run.hparams) == (fresh.notes, fresh.warnings, fresh.restarts,
                                                                    fresh.hparams)


def test_what_spans_lines_is_read_the_same_when_a_read_stops_in_its_middle(tmp_path):
    """The values of the constructs the cuts above go through, read on from the middle of each."""
    path = write(tmp_path / "train.log", HF_LOG)
    (run,) = get_reader("hf_console").read([path])
    notes = "\n".join(run.notes)
    assert run.hparams["Total optimization steps"] == 300 and run.hparams["eval_steps"] == 50
    assert "N of the progress bar (N/300)" in notes and len(run.restarts) == 1
    frame = run.scalars
    assert frame[frame["tag"] == "train_samples"]["value"].tolist() == [1200.0]  # from the metrics block
    assert frame[frame["tag"] == "eval_samples"]["value"].tolist() == [100.0]
    assert "the last line has no line break; it was complete and was read" in notes
    path = write(tmp_path / "megatron.log", _megatron_fp16(40))
    (run,) = get_reader("megatron").read([path])
    frame = run.scalars
    skips = frame[frame["tag"] == "overflow_skips"].set_index("step")["value"]
    # two messages at each 4th iteration, counted at its timer line and at its iteration line: added up
    assert skips.to_dict() == {step: 2.0 for step in range(40, 401, 40)}
    assert run.hparams["train_iters"] == 400 and run.restarts[0].step == 150


# -- the cache ---------------------------------------------------------------------------------------------------

@pytest.fixture
def parsed(monkeypatch):
    """Every text file parsed, as (file name, start offset)."""
    calls: list[tuple[str, int]] = []
    original = _parts.read_part

    def spy(path, parser, start=0, state=None, chunk_chars=_parts.CHUNK_CHARS):
        calls.append((Path(path).name, start))
        return original(path, parser, start, state, chunk_chars)

    monkeypatch.setattr(_parts, "read_part", spy)
    return calls


@pytest.fixture
def combines(monkeypatch):
    from tanalyze.readers.text._reader import TextReader

    calls: list[str] = []
    original = TextReader.combine

    def spy(self, files, parts):
        calls.append(self.name)
        return original(self, files, parts)

    monkeypatch.setattr(TextReader, "combine", spy)
    return calls


def _assert_same_logs(a: tanalyze.Logs, b: tanalyze.Logs) -> None:
    pd.testing.assert_frame_equal(a.scalars, b.scalars, check_exact=True)
    assert {n: i.to_dict() for n, i in a.runs.items()} == {n: i.to_dict() for n, i in b.runs.items()}


@pytest.mark.parametrize("name", ["nanogpt", "megatron", "text"])
def test_a_line_appended_to_a_cached_log_is_all_that_is_parsed_again(name, tmp_path, parsed, combines):
    data = {"nanogpt": _nanogpt(80), "megatron": _megatron_fp16(20), "text": _generic(6, blocks=False)}[name].encode()
    log = write(tmp_path / "run" / "train.log", data)
    cache = Cache(str(tmp_path / "cache"))
    cold = tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
    assert parsed == [("train.log", 0)] and len(cold.scalars)
    last = {"nanogpt": b"iter 200: loss 1.0000, time 10.00ms, mfu 40.00%\n",
            "megatron": b" iteration      500/     400 | consumed samples:     128000 | lm loss: 1.000000E+00 |\n",
            "text": b"Epoch: [6][ 10/40]\tTime 0.2 (0.3)\tLoss 1.0000e+00 (3.0)\n"}[name]
    with open(log, "ab") as handle:
        handle.write(last)
    parsed.clear()
    combines.clear()
    warm = tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
    assert parsed == [("train.log", len(data))]  # the new line only
    assert combines == []  # appended to the cached run: its other rows were not touched
    assert len(warm.scalars) > len(cold.scalars)
    _assert_same_logs(warm, tanalyze.load(tmp_path / "run", jobs=1, cache=False))


@pytest.mark.parametrize("appended", [
    "iter 10: loss 1.0000, time 10.00ms, mfu 40.00%\n",  # a restart: steps go back
    "iter 300: loss 1.0000 BPC, time 10.00ms, mfu 40.00%\n",  # a unit: a note changes
    "iter 300: loss 1.00",  # a line still being written
    "step 300: train loss 1.0, val loss 1.1\niter 300: loss 1.0000, time 10.00ms, mfu 40.00%\n",
])
def test_appends_that_do_not_simply_continue_are_combined_and_equal_a_fresh_read(appended, tmp_path, parsed):
    data = _nanogpt(120).encode()
    log = write(tmp_path / "run" / "train.log", data)
    cache = Cache(str(tmp_path / "cache"))
    tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
    for _ in range(2):
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(appended)
        parsed.clear()
        grown = tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
        assert parsed and all(start > 0 for _, start in parsed)  # never the whole file again
        _assert_same_logs(grown, tanalyze.load(tmp_path / "run", jobs=1, cache=False))


def test_stdout_and_stderr_of_one_job_are_read_on_each_from_where_it_stopped(tmp_path, parsed):
    err = HF_LOG[: HF_LOG.index("{'eval_loss'")]
    out_lines = [f"{{'loss': {3 - i / 100}, 'epoch': {i / 10:.2f}}}\n" for i in range(1, 40)]
    write(tmp_path / "run" / "slurm-7.err", err[: len(err) // 2])
    write(tmp_path / "run" / "slurm-7.out", "".join(out_lines[:20]))
    cache = Cache(str(tmp_path / "cache"))
    tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
    write(tmp_path / "run" / "slurm-7.err", err)
    write(tmp_path / "run" / "slurm-7.out", "".join(out_lines))
    parsed.clear()
    grown = tanalyze.load(tmp_path / "run", jobs=1, cache=cache)
    assert sorted(name for name, _ in parsed) == ["slurm-7.err", "slurm-7.out"] and all(s > 0 for _, s in parsed)
    _assert_same_logs(grown, tanalyze.load(tmp_path / "run", jobs=1, cache=False))


@pytest.mark.parametrize(("codes", "tag_count"), [
    ([0, 0, 1, 2, 1, 3, 3, 0], 4),  # the usual order: each new code one more than the highest before it
    ([1, 0, 2, 1], 3),  # a later tag used first
    ([0, 2, 1, 2], 3),  # a code skipped, then used
    ([0, 1, 2, 0], 4),  # the last tag never used
    ([0, 1, 3, 0], 4),  # a tag in the middle never used
    ([0], 1),
])
def test_tags_are_coded_in_order_of_first_use(codes, tag_count):
    tags = ["a", "b", "c", "d"][:tag_count]
    recoded, used = _parts._first_use(np.array(codes, dtype=np.int32), tags)
    assert used == [tags[code] for code in dict.fromkeys(codes)]
    assert [used[code] for code in recoded.tolist()] == [tags[code] for code in codes]


def test_reading_a_log_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    import gc

    path = write(tmp_path / "train.log", "".join(f"iter: {i}, loss: {1 / (i + 1):.4f}\n" for i in range(50)))
    assert gc.isenabled()
    parse_path(path, get_reader("text").parser(path))
    assert gc.isenabled()
    gc.disable()
    try:
        parse_path(path, get_reader("text").parser(path))
        assert not gc.isenabled()
    finally:
        gc.enable()
