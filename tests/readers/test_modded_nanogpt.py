"""modded-nanogpt (NanoGPT speedrun) logs: the real record logs of KellerJordan/modded-nanogpt and a fork."""

from tanalyze import load
from tanalyze.readers.text.console import detect_console_format
from tanalyze.readers.text.modded_nanogpt import ModdedNanoGPTReader
from tests.conftest import real_log
from tests.readers.text_helpers import check, notes_text, write

RECORDS = "modded_nanogpt_logs/KellerJordan__modded-nanogpt/records"
MUON = f"{RECORDS}/track_1_short/2024-10-10_Muon/eb5659d0-fb6a-49e5-a311-f1f89412f726.txt"
MEDIUM = f"{RECORDS}/track_2_medium/2025-11-12_BlockMaskRedundantOp/000_3b22a9d4-b52e-4916-99bf-3d48b38747a7.txt"
FP8 = f"{RECORDS}/track_1_short/2026-07-17_FP8DownProjection/baseline/1d7c6c03-846f-4dc8-9809-dcb1e42496da.txt"
FORK = "modded_nanogpt_logs/snimu__modded-nanogpt-experiments/experiments/00003-value-embeddings/" \
       "036_61ef4351-7b68-4897-b440-a99221a1a629.txt"


def _read(relative):
    path = real_log(relative)
    reader = ModdedNanoGPTReader()
    assert reader.sniff(path, path.read_bytes()[:4096])
    (run,) = reader.read([path])
    return run


def test_muon_record_with_train_loss_and_nan_step_avg():
    run = _read(MUON)
    frame = run.scalars
    check(frame, "train/loss", {1: 10.9184, 2: 8.6834, 6200: 3.2533}, count=6200)
    check(frame, "val/loss", {0: 10.9264, 125: 5.2017, 6200: 3.2785}, count=51)
    check(frame, "train_time_ms", {0: 285.0, 1: 74701.0, 6200: 1339065.0}, count=6201)  # the train line's
    check(frame, "step_avg_ms", {6200: 216.33}, count=6188)
    notes = notes_text(run)
    assert "13 NaN value(s) ('step_avg:nanms', not measured yet) skipped" in notes
    assert "100 timing(s) of validation lines not repeated" in notes
    assert run.warnings == [] and run.restarts == []


def test_the_source_code_dump_gives_no_point():
    # the 2026 log holds ~3,300 lines of train_gpt.py (with the f-strings that print the step lines) first
    run = _read(FP8)
    frame = run.scalars
    assert set(frame["tag"]) == {"val/loss", "train_time_ms", "step_avg_ms"}  # no train loss in this era
    check(frame, "val/loss", {0: 10.8296, 250: 4.4779, 1390: 3.2821}, count=7)
    check(frame, "step_avg_ms", {1: 90.29, 1390: 57.99}, count=1391)
    assert frame["step"].min() == 0 and frame["step"].max() == 1390
    assert run.hparams == {"num_iterations": 1390, "peak_memory_allocated_mib": 30908, "peak_memory_reserved_mib": 46472}
    assert "3,296 of 4,693 line(s) carry no metrics" in notes_text(run)


def test_medium_track_and_a_fork():
    check(_read(MEDIUM).scalars, "val/loss", {0: 10.825837, 5960: 2.918512}, count=49)
    check(_read(FORK).scalars, "val/loss", {0: 10.82584, 5820: 2.919093}, count=48)


def test_junk_cut_line_and_empty_file(tmp_path):
    text = ("import torch\n    print0(f'step:{step}/{n} val_loss:{v:.4f}')\n"
            "step:0/10 val_loss:10.5 train_time:0ms step_avg:nanms\n"
            "step:1/10 train_loss:10.1 train_time:90ms step_avg:90.00ms\n"
            "step:2/10 train_loss:abc\n"
            "step:3/10 train_lo")
    run = ModdedNanoGPTReader().read([write(tmp_path / "log.txt", text)])[0]
    check(run.scalars, "train/loss", {1: 10.1}, count=1)
    check(run.scalars, "val/loss", {0: 10.5}, count=1)
    messages = " | ".join(w.message for w in run.warnings)
    assert "1 line(s) look like modded-nanogpt metrics but could not be read" in messages and "step:2/10" in messages
    assert "the last line ends without a line break" in messages and "step:3/10 train_lo" in messages
    (empty,) = ModdedNanoGPTReader().read([write(tmp_path / "empty.txt", b"")])
    assert empty.scalars.empty and empty.warnings


def test_discovery_finds_every_real_log(real_logs):
    assert detect_console_format(real_log(MUON)).name == "modded_nanogpt"
    logs = load(real_logs / "modded_nanogpt_logs")
    assert sorted(info.format for info in logs.runs.values()) == ["modded_nanogpt"] * 4
    assert all(info.warnings == () for info in logs.runs.values())
