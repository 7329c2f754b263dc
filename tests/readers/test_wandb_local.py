"""Local W&B run folders: real run folders from public repos and small synthetic ones."""

from __future__ import annotations

import json
import sys

import pytest

from tanalyze.discover import discover
from tanalyze.logs import load
from tanalyze.readers.wandb.local import WandbLocalReader, unwrap_config
from tests.readers import wandb_make as make

ALPACA = "wandb_local/0-KaiKai-0__stanford_alpaca"
NANO = "wandb_local/jackokeefe11__nanoGPT"
DRUID = "wandb_local/druidowm__nanoGPT"
SPACE = "wandb_local/mfts__spaceinvaders-wandb-challenge"


def points(logs, run, tag):
    rows = logs.scalars[(logs.scalars["run"] == run) & (logs.scalars["tag"] == tag)]
    return list(zip(rows["step"].tolist(), rows["value"].tolist(), strict=True))


@pytest.fixture(scope="module")
def alpaca():
    from tests.conftest import REAL_LOGS

    if not (REAL_LOGS / ALPACA).is_dir():
        pytest.skip(f"real-log corpus not found at {REAL_LOGS}")
    return load(REAL_LOGS / ALPACA)


def test_alpaca_history_only_in_the_binary_file(alpaca):
    run = "wandb/run-20231102_032820-iqu955sp"
    loss = points(alpaca, run, "train/loss")
    assert len(loss) == 1218
    assert loss[0] == (1, 1.586) and loss[609] == (610, 0.6134) and loss[-1] == (1218, 0.3967)
    lr = points(alpaca, run, "train/learning_rate")
    assert len(lr) == 1218 and lr[0] == (1, 5.405405405405406e-07) and lr[-1] == (1218, 0.0)
    assert points(alpaca, run, "train/train_loss") == [(1218, 0.7055165096016353)]
    epoch = points(alpaca, run, "train/epoch")
    assert len(epoch) == 1218 and epoch[-1] == (1218, 3.0)  # the final row re-logs step 1218: later write kept
    rows = alpaca.scalars[(alpaca.scalars["run"] == run) & (alpaca.scalars["tag"] == "train/loss")]
    assert rows["wall_time"].iloc[0] == 1698895708.9586859
    gpu = points(alpaca, run, "system/gpu.0.memoryAllocated")
    assert len(gpu) == 146 and gpu[0] == (61, 71.35) and gpu[-1] == (4702, 98.91)
    info = alpaca.runs[run]
    assert info.hparams["learning_rate"] == 2e-05 and info.hparams["num_train_epochs"] == 3.0
    assert info.hparams["_wandb"]["gpu"] == "NVIDIA A100-SXM4-80GB" and info.hparams["_wandb"]["gpu_count"] == 8
    assert info.hparams["_wandb"]["exit_code"] == 0 and info.hparams["_wandb"]["cli_version"] == "0.15.12"
    assert info.hparams["_summary"]["train/train_loss"] == 0.7055165096016353
    assert "_wandb" not in {k for k in info.hparams if k != "_wandb"} and "wandb_version" not in info.hparams
    assert any("'train/global_step' (declared with define_metric" in n for n in info.notes)
    assert not info.warnings


def test_alpaca_aborted_run(alpaca):
    run = "wandb/run-20231104_073205-5qvjca60"
    assert points(alpaca, run, "train/loss") == [(1, 1.6227)]
    notes = " ".join(alpaca.runs[run].notes)
    assert "no exit record" in notes


@pytest.fixture(scope="module")
def nano():
    from tests.conftest import REAL_LOGS

    if not (REAL_LOGS / NANO).is_dir():
        pytest.skip(f"real-log corpus not found at {REAL_LOGS}")
    return load(REAL_LOGS / NANO)


@pytest.mark.parametrize(
    ("run", "first", "middle", "last", "val_middle"),
    [
        ("wandb/mini-gpt (mw8ngzqq)", 6.185387134552002, 1.3801120519638062, 0.8947880864143372,
         2.155529260635376),
        ("wandb/mini-gpt (kt2awly2)", 6.060142517089844, 0.6265168786048889, 0.11914050579071045,
         2.9482762813568115),
    ],
)
def test_nanogpt_history_steps_are_iterations(nano, run, first, middle, last, val_middle):
    train = points(nano, run, "train/loss")
    assert len(train) == 21
    assert train[0] == (0, first) and train[10] == (2500, middle) and train[-1] == (5000, last)
    assert [s for s, _ in train] == list(range(0, 5001, 250))
    val = points(nano, run, "val/loss")
    assert len(val) == 21 and val[10] == (2500, val_middle)
    assert points(nano, run, "lr")[10] == (2500, 0.000564423209907245)
    assert "iter" not in set(nano.scalars[nano.scalars["run"] == run]["tag"])
    assert nano.runs[run].hparams["eval_interval"] == 250
    assert any("step = logged 'iter'" in n for n in nano.runs[run].notes)


def test_nanogpt_interrupted_and_crashed_runs(nano):
    interrupted = nano.runs["wandb/mini-gpt (ilvpsbbn)"]
    assert any("exited with code 255" in n for n in interrupted.notes)
    assert any("traceback: KeyboardInterrupt" in n for n in interrupted.notes)
    assert interrupted.hparams["out_dir"] == "out-shakespeare-char"
    assert interrupted.hparams["_wandb"]["name"] == "mini-gpt"
    crashed = nano.runs["wandb/run-20240216_065242-ibal0bht"]
    assert crashed.hparams["_summary"]["val/loss"] == 12.648641586303711


def test_old_layout_history_events_and_media():
    from tests.conftest import REAL_LOGS

    if not (REAL_LOGS / SPACE).is_dir():
        pytest.skip("real-log corpus not found")
    logs = load(REAL_LOGS / SPACE)
    run = "apricot-fire-21"  # the W&B display name (wandb-metadata.json), not the folder
    reward = points(logs, run, "episodic_reward")
    assert len(reward) == 98 and reward[0] == (0, 180.0) and reward[-1] == (196, 210.0)
    average = points(logs, run, "cumulative_avg_reward")
    assert len(average) == 98 and average[0] == (1, 136.66666666666666) and average[-1] == (197, 272.75)
    gpu = points(logs, run, "system/gpu.0.gpu")
    assert len(gpu) == 18 and gpu[0] == (28, 4.07) and gpu[-1] == (515, 7.0)
    info = logs.runs[run]
    assert any("2 media/table value(s) skipped" in n and "gameplays" in n for n in info.notes)
    assert info.hparams["learning_rate"] == 0.003 and info.hparams["episodes"] == 100
    assert info.hparams["_wandb"]["name"] == "apricot-fire-21"
    assert "gameplays" not in info.hparams["_summary"]
    assert info.hparams["_summary"]["episodic_reward"] == 210.0


def test_every_file_of_a_run_folder_is_claimed(real_logs):
    found = discover(real_logs / "wandb_local")
    assert found.unrecognized == ()
    assert {r.format for r in found.runs} == {"wandb-local"}
    assert len(found.runs) == 9
    druid = next(r for r in found.runs if r.name.endswith("run-20241012_160630-jqe8zy9r"))
    assert {p.rsplit("/", 1)[-1] for p in druid.files} == {
        "config.yaml", "output.log", "wandb-metadata.json", "wandb-summary.json", "debug.log"}


def test_summary_points_when_no_history(tmp_path):
    folder = make.run_folder(tmp_path, None, files={
        "files/wandb-summary.json": json.dumps({"iter": 2400, "train/loss": 3.5, "_step": 12, "_timestamp": 1.5e9,
                                                "_wandb": {"runtime": 9}}),
        "files/config.yaml": "wandb_version: 1\nlr:\n  desc: null\n  value: 0.1\n",
    })
    logs = load(folder, formats=["wandb-local"])
    run = next(iter(logs.runs))
    assert points(logs, run, "train/loss") == [(2400, 3.5)]
    assert logs.runs[run].hparams["lr"] == 0.1
    assert logs.runs[run].hparams["_wandb"]["runtime_s"] == 9


def test_a_console_without_metric_lines_is_a_note_not_a_warning(tmp_path):
    """Most W&B runs' output.log holds only text (their metrics are W&B's): nothing is wrong with the run."""
    folder = make.run_folder(tmp_path, None, files={
        "files/wandb-summary.json": json.dumps({"iter": 2400, "train/loss": 3.5, "_step": 12}),
        "files/output.log": "GPU available: True (cuda), used: True\n`Trainer.fit` stopped: `max_epochs=3` reached.\n",
    })
    logs = load(folder, formats=["wandb-local"])
    info = next(iter(logs.runs.values()))
    assert not info.warnings
    assert "output.log: no metric line (the console's text only; the metrics are W&B's)" in info.notes


def test_synthetic_binary_run_with_resume_and_damage(tmp_path):
    payloads = [
        make.run(display_name="demo", project="p"),
        make.update("config", {"lr": 0.01, "_wandb": {"cli_version": "0.16.0"}}),
        *[make.history({"loss": 10.0 - i, "iter": i * 10, "_step": i, "_timestamp": 1.7e9 + i}) for i in range(5)],
        # resumed from iter 20: iters 20..30 again, then on
        *[make.history({"loss": 100.0 + i, "iter": i * 10, "_step": 5 + i, "_timestamp": 1.7e9 + 10 + i})
          for i in range(2, 6)],
        make.stats(1.7e9 + 30.2, {"gpu.0.memoryAllocated": 50.0}),
        make.update("summary", {"loss": 105.0, "iter": 50}),
        make.exit_record(1, 40),
        make.footer(),
    ]
    folder = make.run_folder(tmp_path, payloads, files={"files/media/images/a.png": "not an image"})
    logs = load(folder)
    run = next(iter(logs.runs))
    assert points(logs, run, "loss") == [(0, 10.0), (10, 9.0), (20, 102.0), (30, 103.0), (40, 104.0), (50, 105.0)]
    info = logs.runs[run]
    assert [r.step for r in info.restarts] == [20]
    assert "went back from 40 to 20" in info.restarts[0].detail
    assert info.hparams == {"lr": 0.01, "_wandb": {"cli_version": "0.16.0", "name": "demo", "project": "p",
                                                  "run_id": "abc123", "exit_code": 1, "runtime_s": 40},
                            "_summary": {"loss": 105.0, "iter": 50}}
    assert any("exited with code 1" in n for n in info.notes)
    assert points(logs, run, "system/gpu.0.memoryAllocated") == [(30, 50.0)]
    assert logs.unrecognized == ()


def test_bad_companion_files_are_warnings_and_history_is_kept(tmp_path):
    payloads = [make.history({"loss": 1.0, "_step": 0}), make.history({"loss": 0.5, "_step": 1})]
    folder = make.run_folder(tmp_path, payloads, files={
        "files/config.yaml": "a: [unclosed\n",
        "files/wandb-summary.json": "{not json",
        "files/wandb-metadata.json": "[1, 2]",
    })
    logs = load(folder)
    info = next(iter(logs.runs.values()))
    assert len(logs.scalars) == 2
    messages = {w.file.rsplit("/", 1)[-1]: w.message for w in info.warnings}
    assert messages["config.yaml"].startswith("config not read")
    assert messages["wandb-summary.json"].startswith("not read")
    assert messages["wandb-metadata.json"] == "not a JSON object; ignored"


def test_a_file_that_is_not_a_wandb_log_is_a_warning(tmp_path):
    folder = make.run_folder(tmp_path, None, files={"files/config.yaml": "lr:\n  value: 3\n"})
    (folder / "run-abc123.wandb").write_bytes(b"garbage")
    logs = load(folder)
    info = next(iter(logs.runs.values()))
    assert info.hparams["lr"] == 3
    assert [w.message for w in info.warnings] == ["not a W&B transaction log (no ':W&B' header)"]


def test_binary_history_does_not_need_wandb(monkeypatch, real_logs):
    monkeypatch.setitem(sys.modules, "wandb", None)
    logs = load(real_logs / ALPACA / "wandb/run-20231102_032820-iqu955sp")
    assert len(logs.scalars[logs.scalars["tag"] == "train/loss"]) == 1218


def test_a_path_inside_a_run_folder_is_its_own_run(real_logs):
    found = discover(real_logs / NANO / "wandb/run-20240214_195452-kt2awly2/files")
    assert [r.name for r in found.runs] == ["files"]


def test_unwrap_config_layouts():
    config, internal = unwrap_config({
        "wandb_version": 1, "_wandb": {"desc": None, "value": {"cli_version": "0.15", "t": {1: [1]}, "m": []}},
        "lr": {"desc": None, "value": 0.1}, "nested": {"value": {"a": 1}}, "plain": 5, "dictish": {"value": 1, "x": 2},
    })
    assert config == {"lr": 0.1, "nested": {"a": 1}, "plain": 5, "dictish": {"value": 1, "x": 2}}
    assert internal == {"cli_version": "0.15"}


@pytest.mark.parametrize(
    ("relative", "claimed"),
    [
        ("wandb/run-20240101_120000-ab12/files/media/images/x.png", True),
        ("wandb/offline-run-20240101_120000-ab12/logs/debug-internal.log", True),
        ("wandb/run-20240101_120000-ab12/run-ab12.wandb", True),
        ("somewhere/config.yaml", False),
        ("somewhere/output.log", False),
        ("wandb/settings", False),
    ],
)
def test_sniff(tmp_path, relative, claimed):
    path = tmp_path / relative
    assert WandbLocalReader().sniff(path, b"") is claimed


def test_old_layout_companions_are_claimed_only_beside_wandb_files(tmp_path):
    (tmp_path / "config.yaml").write_text("a: 1\n")
    reader = WandbLocalReader()
    assert not reader.sniff(tmp_path / "config.yaml", b"a: 1\n")
    (tmp_path / "wandb-history.jsonl").write_text("{}\n")
    assert reader.sniff(tmp_path / "config.yaml", b"a: 1\n")


def test_console_metrics_are_merged_and_wandb_wins_on_shared_points(tmp_path, monkeypatch):
    """The merge rule alone, with a stand-in console parser (the real one is tested on real output.log files)."""
    import types

    from tanalyze.readers.base import ReadWarning, RunData
    from tanalyze.schema import scalar_frame

    def parse_console_file(path):
        return RunData(
            scalars=scalar_frame(run="", tag=["train/loss", "train/loss", "iter_loss"], step=[0, 10, 10],
                                 value=[6.0601, 5.5, 4.0]),
            warnings=[ReadWarning(str(path), "1 line skipped")], notes=["nanoGPT format"])

    from tanalyze.readers.text.console import NO_METRIC_LINES

    monkeypatch.setitem(sys.modules, "tanalyze.readers.text.console",
                        types.SimpleNamespace(parse_console_file=parse_console_file, NO_METRIC_LINES=NO_METRIC_LINES))
    payloads = [make.history({"train/loss": 6.060142517089844, "iter": 0, "_step": 0})]
    folder = make.run_folder(tmp_path, payloads, files={"files/output.log": "step 0: train loss 6.0601\n"})
    logs = load(folder)
    run = next(iter(logs.runs))
    assert points(logs, run, "train/loss") == [(0, 6.060142517089844), (10, 5.5)]
    assert points(logs, run, "iter_loss") == [(10, 4.0)]
    sources = logs.scalars.set_index(["tag", "step"])["source"]
    assert sources[("train/loss", 0)] == "run-abc123.wandb" and sources[("train/loss", 10)] == "output.log"
    info = logs.runs[run]
    assert "output.log: 1 console point(s) also in the W&B history; the W&B value was kept" in info.notes
    assert "output.log: nanoGPT format" in info.notes
    assert [w.message for w in info.warnings] == ["1 line skipped"]


def test_files_saved_by_the_user_inside_the_run_folder_are_not_taken_for_wandb_files(tmp_path):
    folder = make.run_folder(tmp_path, [make.history({"loss": 1.0, "_step": 0})], files={
        "files/config.yaml": "lr:\n  value: 0.5\n",
        "files/code/config.yaml": "lr: 99\n",
        "files/media/table/wandb-summary.json": "{}",
    })
    logs = load(folder)
    info = next(iter(logs.runs.values()))
    assert info.hparams["lr"] == 0.5 and len(info.files) == 4


def sources(logs, run, tag):
    rows = logs.scalars[(logs.scalars["run"] == run) & (logs.scalars["tag"] == tag)]
    return set(rows["source"].astype(str))


def test_console_only_run_folder(real_logs):
    logs = load(real_logs / DRUID)
    run = "wandb/run-20241012_160630-jqe8zy9r"
    train = points(logs, run, "train/loss")
    assert len(train) == 13 and train[0] == (0, 10.9886) and train[6] == (1200, 4.2432) and train[-1] == (2400, 3.6432)
    loss = points(logs, run, "loss")
    assert len(loss) == 2547 and loss[0] == (0, 10.9766) and loss[-1] == (2546, 3.5074)
    assert sources(logs, run, "loss") == {"output.log"}
    info = logs.runs[run]
    assert info.hparams["gradient_accumulation_steps"] == 40 and info.hparams["_wandb"]["gpu_count"] == 8
    assert info.hparams["_summary"]["iter"] == 2400  # final values stay hparams: the console has the curves
    assert any("last exception: KeyboardInterrupt" in n for n in info.notes)
    crashed = logs.runs["wandb/run-20241022_232419-18kjtmnl"]
    assert len(logs.scalars_of("wandb/run-20241022_232419-18kjtmnl")) == 0
    assert any("TypeError" in n for n in crashed.notes)


def test_console_and_binary_history_merge(nano):
    run = "wandb/mini-gpt (mw8ngzqq)"
    # eval points from both: the W&B history (full precision) is kept
    assert points(nano, run, "train/loss")[-1] == (5000, 0.8947880864143372)
    assert sources(nano, run, "train/loss") == {"run-mw8ngzqq.wandb"}
    # per-iteration loss only in the console
    loss = points(nano, run, "loss")
    assert len(loss) == 501 and loss[0] == (0, 6.1551) and loss[250] == (2500, 1.5596) and loss[-1] == (5000, 1.171)
    assert sources(nano, run, "loss") == {"output.log"}
    info = nano.runs[run]
    assert "output.log: 62 console point(s) also in the W&B history; the W&B value was kept" in info.notes
    oom = nano.runs["wandb/run-20240216_065242-ibal0bht"]
    assert points(nano, "wandb/run-20240216_065242-ibal0bht", "val/loss") == [(0, 12.6486)]
    assert any("CUDA out of memory" in n for n in oom.notes)


def test_summary_with_an_unusable_step_is_kept_as_hparams_only(tmp_path):
    folder = make.run_folder(tmp_path, None, files={
        "files/wandb-summary.json": '{"loss": 1.5, "_step": Infinity}'})
    logs = load(folder)
    info = next(iter(logs.runs.values()))
    assert len(logs.scalars) == 0 and info.hparams["_summary"]["loss"] == 1.5
    assert "the summary's final values are kept as hparams only (no step to place them at)" in info.notes
