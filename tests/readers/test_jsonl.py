"""Plain JSON-lines metric logs of hand-written loops, written by a real CPU training (tests/fixtures/jsonl)."""

from __future__ import annotations

import json
import math
from importlib import import_module
from pathlib import Path

import pytest

from tanalyze.readers import READERS
from tanalyze.readers.tabular.jsonl import JsonlReader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CHAR_LM = FIXTURES / "jsonl" / "char_lm" / "metrics.jsonl"
RESUMED = FIXTURES / "jsonl" / "resumed" / "metrics.jsonl"
#: where the lead engineer puts the reader: right after the last reader of another JSON-lines format
ENTRY = "tanalyze.readers.tabular.jsonl:JsonlReader"
AFTER = "tanalyze.readers.tabular.history_json:HistoryJsonReader"


def _read(path: Path):
    (run,) = JsonlReader().read([path])
    return run


def _point(run, tag: str, step: int):
    frame = run.scalar_table()
    (row,) = frame[(frame["tag"] == tag) & (frame["step"] == step)].itertuples()
    return row


def _sniff(path: Path) -> bool:
    with open(path, "rb") as handle:
        return JsonlReader().sniff(path, handle.read(4096))


def _write(path: Path, records: list, extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records) + extra)
    return path


def test_every_number_of_a_train_record_is_a_tag_at_its_step_with_epoch_and_wall_time():
    assert _sniff(CHAR_LM)  # its first line is the config record: it does not stop the sniff
    run = _read(CHAR_LM)
    assert not run.warnings and not run.restarts
    frame = run.scalar_table()
    assert set(frame["tag"]) == {"loss", "lr", "grad_norm", "tokens_per_second", "val_loss", "val_ppl"}
    first = _point(run, "loss", 5)
    assert first.value == 3.34224 and first.epoch == 0.1064 and first.wall_time == 1796675016.053
    assert _point(run, "lr", 5).value == 0.00075 and _point(run, "grad_norm", 5).value == 1.7073
    assert _point(run, "tokens_per_second", 200).value == 28287.3
    assert frame[frame["tag"] == "loss"]["step"].tolist() == list(range(5, 205, 5))
    # validation records: their own tags at their step, no time and no epoch in them
    val = _point(run, "val_loss", 50)
    assert val.value == 1.54694 and math.isnan(val.wall_time) and math.isnan(val.epoch)
    assert frame[frame["tag"] == "val_ppl"]["step"].tolist() == [50, 100, 150, 200]
    assert len(frame) == 40 * 4 + 4 * 2  # 40 train records of 4 tags, 4 val records of 2


def test_the_final_status_record_is_kept_in_hparams_and_the_config_record_counted():
    run = _read(CHAR_LM)
    assert run.hparams == {"_jsonl": {"status": "COMPLETED", "record": f"{CHAR_LM}:46", "final_step": 200}}
    notes = " | ".join(run.notes)
    assert "the log ends with a status record (line 46): status 'COMPLETED' (final_step=200)" in notes
    assert "1 record(s) without 'step' not read as points (a config, a status …); their keys: config" in notes
    assert "step = 'step'" in notes and "epoch column = 'epoch'" in notes and "wall_time = 'time'" in notes


def test_a_run_resumed_from_an_earlier_checkpoint_is_a_restart_and_the_later_write_wins():
    run = _read(RESUMED)
    (restart,) = run.restarts
    assert (restart.step, restart.until) == (105, 150)
    assert "42 earlier point(s) replaced by the later writes" in restart.detail
    # step 105 was logged at line 24, then again by the relaunch at line 36: the relaunch is kept
    kept = _point(run, "tokens_per_second", 105)
    assert kept.value == 15118.7 and kept.wall_time == 1796675016.562
    assert _point(run, "val_loss", 150).value == 0.57791
    assert len(run.scalar_table()) == 168 and not run.warnings
    notes = " | ".join(run.notes)
    assert "2 record(s) without 'step'" in notes and "event, from_checkpoint" in notes
    assert run.hparams["_jsonl"]["status"] == "COMPLETED"


def test_lines_that_are_not_json_and_steps_that_are_no_steps_are_named(tmp_path):
    path = _write(tmp_path / "train_log.jsonl", [
        {"step": 1, "loss": 2.5, "val": {"loss": 2.75, "acc": {"top1": 0.25}}, "phase": "warmup", "ok": True},
        "Traceback (most recent call last):",
        {"step": 2, "loss": float("nan"), "lr": float("inf")},
        "{\"step\": 3, \"loss\": 1.",  # cut
        {"step": 2**53 + 1, "loss": 1.0},
        {"step": 1e300, "loss": 1.0},
        {"step": 2.5, "loss": 1.0},
        {"step": 4, "löss/é": -1.5, "损失": 0.5},
        "\x00\x01 junk ×",
        [1, 2],
    ])
    assert _sniff(path)
    run = _read(path)
    messages = [f"{w.message} [{w.location}] x{w.count}" for w in run.warnings]
    assert "3 line(s) are not valid JSON and were skipped [line 2, 4, 9] x3" in messages
    assert "1 line(s) are JSON but not objects; skipped [None] x1" in messages
    assert "3 record(s) whose 'step' is not a whole number of at most 2**53; skipped [line 5, 6, 7] x3" in messages
    assert len(messages) == 3
    assert _point(run, "val/loss", 1).value == 2.75 and _point(run, "val/acc/top1", 1).value == 0.25
    assert math.isnan(_point(run, "loss", 2).value) and _point(run, "lr", 2).value == math.inf  # kept as logged
    assert _point(run, "löss/é", 4).value == -1.5 and _point(run, "损失", 4).value == 0.5
    assert "2 non-numeric value(s) (text, booleans, lists) skipped under: ok, phase" in run.notes
    assert set(run.scalar_table()["step"]) == {1, 2, 4}


def test_a_cut_last_line_is_said_to_be_a_truncated_file(tmp_path):
    path = _write(tmp_path / "metrics.jsonl", [{"step": 1, "loss": 1.0}], extra='{"step": 2, "lo')
    (warning,) = _read(path).warnings
    assert warning.message == "1 line(s) are not valid JSON and were skipped (the last line is cut off: file " \
                              "truncated?)" and warning.location == "line 2"


def test_epoch_is_the_step_when_no_other_step_key_and_unix_milliseconds_are_wall_time(tmp_path):
    path = _write(tmp_path / "history.jsonl", [{"epoch": 1, "loss": 0.5, "timestamp": 1700000000123},
                                               {"epoch": 2, "loss": 0.25, "timestamp": 1700000060123}])
    run = _read(path)
    point = _point(run, "loss", 2)
    assert point.value == 0.25 and point.wall_time == 1700000060.123 and math.isnan(point.epoch)
    assert set(run.scalar_table()["tag"]) == {"loss"}
    # a time that is no UNIX time (seconds per iteration) is a metric
    per_iter = _read(_write(tmp_path / "other" / "log.jsonl", [{"iter": 10, "loss": 1.0, "time": 0.35}]))
    assert _point(per_iter, "time", 10).value == 0.35 and math.isnan(_point(per_iter, "loss", 10).wall_time)


def test_a_status_record_is_the_runs_end_only_when_it_is_the_last(tmp_path):
    path = _write(tmp_path / "metrics.jsonl", [{"step": 1, "loss": 1.0}, {"status": "running"},
                                               {"step": 2, "loss": 0.5}])
    run = _read(path)
    assert run.hparams == {}
    assert "1 record(s) without 'step' not read as points (a config, a status …); their keys: status" in run.notes


@pytest.mark.parametrize(("name", "lines", "claimed"), [
    ("metrics.jsonl", ['{"step": 1, "loss": 2.0}'], True),
    ("train_log.jsonl", ['{"model": "gpt2", "n_layer": 12}', '{"status": "started"}', '{"it": 0, "loss": 2.0}'],
     True),
    ("metrics.json", ['{"global_step": 10, "reward": -3}'], True),
    ("train_log.log", ['{"iteration": 10, "loss": 1.0}'], True),
    ("history.json", ['{"update": 10, "fps": 1200}'], True),
    ("rollout.jsonl", ['{"total_timesteps": 2048, "ep_rew_mean": 1.5}'], True),
    ("results.json", ['{"step": 1, "loss": 2.0}'], False),  # a .json not named as a log
    ("train.log", ['{"step": 1, "loss": 2.0}'], False),
    ("metrics.jsonl", ['{"step": 1}'], False),  # no number besides the step
    ("metrics.jsonl", ['{"step": "one", "loss": 2.0}'], False),
    ("metrics.jsonl", ['{"loss": 2.0}', '{"loss": 1.0}'], False),  # no step key at all
    ("metrics.jsonl", ["step 1 loss 2.0", '{"step": 1, "loss": 2.0}'], False),  # its first line is no JSON object
    ("metrics.jsonl", ['{"step": 9007199254740993, "loss": 2.0}'], False),  # a step above 2**53
    ("trainer_log.jsonl", ['{"current_steps": 10, "total_steps": 20, "loss": 1.0}'], False),  # LLaMA-Factory
    ("result.jsonl", ['{"training_iteration": 1, "trial_id": "a", "loss": 1.0}'], False),  # Ray Tune
    ("history.jsonl", ['{"_step": 1, "step": 1, "loss": 1.0}'], False),  # W&B
])
def test_sniff(tmp_path, name, lines, claimed):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    assert _sniff(path) is claimed


def test_sniff_reads_on_when_the_first_record_is_longer_than_the_head(tmp_path):
    record = {"step": 1, **{f"layer_{i}/grad_norm": 0.5 for i in range(400)}}
    path = _write(tmp_path / "metrics.jsonl", [record])
    assert len(json.dumps(record)) > 4096 and _sniff(path)


def _registry_with_jsonl() -> list:
    entries = list(READERS)
    if ENTRY not in entries:
        entries.insert(entries.index(AFTER) + 1, ENTRY)
    readers = []
    for entry in entries:
        module, _, name = entry.partition(":")
        readers.append(getattr(import_module(module), name)())
    return readers


def _first_claim(readers: list, path: Path) -> str | None:
    with open(path, "rb") as handle:
        head = handle.read(4096)
    return next((reader.name for reader in readers if reader.sniff(path, head)), None)


def test_with_the_reader_registered_the_other_json_lines_formats_keep_their_files(tmp_path):
    readers = _registry_with_jsonl()
    detectron2 = _write(tmp_path / "d2" / "output" / "metrics.json",
                        [{"data_time": 0.01, "iteration": 19, "lr": 0.001, "total_loss": 2.1, "time": 0.4}])
    mmengine = _write(tmp_path / "mm" / "20230805_113504" / "vis_data" / "scalars.json",
                      [{"lr": 0.01, "data_time": 0.02, "loss": 1.5, "time": 0.3, "epoch": 1, "iter": 10, "step": 10}])
    wandb = _write(tmp_path / "wandb" / "run-20191220_140518-5gikewie" / "wandb-history.jsonl",
                   [{"loss": 1.0, "_step": 0, "_runtime": 3.0, "_timestamp": 1576850719.0}])
    expected = {
        FIXTURES / "llamafactory" / "sft_tiny_llama" / "trainer_log.jsonl": "llamafactory",
        detectron2: "detectron2",
        mmengine: "mmengine",
        wandb: "wandb-local",
        FIXTURES / "dvclive" / "sgd" / "dvclive" / "metrics.json": "dvclive",
        FIXTURES / "sacred" / "runs" / "1" / "metrics.json": "sacred",
        FIXTURES / "history_json" / "torch_loop_records" / "log.json": "history_json",
        FIXTURES / "history_json" / "torch_loop" / "history.json": "history_json",
        CHAR_LM: "jsonl",
        RESUMED: "jsonl",
    }
    results = sorted((FIXTURES / "ray_tune" / "tiny_sgd").glob("*/result.json"))
    assert len(results) == 3
    expected.update(dict.fromkeys(results, "ray_tune"))
    assert {path: _first_claim(readers, path) for path in expected} == expected
    # detectron2's metrics.json would be this reader's on its own (its 'iteration' is a step): the order keeps it
    assert _sniff(detectron2) and not _sniff(mmengine)
