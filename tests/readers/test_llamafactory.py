"""LLaMA-Factory's trainer_log.jsonl, written by a real LLaMA-Factory SFT run (tests/fixtures/llamafactory)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import tanalyze
from tanalyze.readers import get_reader

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "llamafactory" / "sft_tiny_llama"


def test_each_record_is_read_at_its_optimizer_step_with_exact_values():
    (run,) = get_reader("llamafactory").read([FIXTURE / "trainer_log.jsonl"])
    assert not run.warnings and run.hparams["total_steps"] == 60
    frame = run.scalar_table()
    loss = frame[frame["tag"] == "loss"]
    assert loss["step"].tolist() == list(range(5, 65, 5))
    assert loss["value"].iloc[0] == 5.3276927947998045
    lr = frame[frame["tag"] == "lr"]
    assert lr["value"].iloc[0] == 0.0018666666666666666
    evals = frame[frame["tag"] == "eval_loss"]
    assert evals["step"].tolist() == [20, 40, 60] and evals["value"].iloc[0] == 5.258332252502441
    assert set(frame["tag"]) == {"loss", "lr", "eval_loss"}  # percentage and the times are no metrics


def test_beside_the_trainers_state_it_is_its_twin_and_agrees_on_every_point():
    logs = tanalyze.load(FIXTURE, cache=False)
    (info,) = logs.runs.values()
    assert info.format == "hf_trainer_state"
    [twin] = [n for n in info.notes if n.startswith("twin: trainer_log.jsonl (llamafactory)")]
    assert "it agrees on all 27 common points of 3 tag(s)" in twin  # its lr is the state's learning_rate


def test_the_tiny_model_from_scratch_is_underfitting():
    (d,) = tanalyze.diagnose(tanalyze.load(FIXTURE / "trainer_log.jsonl", cache=False)).values()
    assert d.format == "llamafactory" and d.verdict.label == "underfitting"
    assert d.roles["val_loss"] == "eval_loss" and d.roles["learning_rate"] == "lr"


def test_records_a_second_process_wrote_again_are_counted_not_read_as_restarts(tmp_path):
    records = [json.loads(line) for line in (FIXTURE / "trainer_log.jsonl").read_text().splitlines()]
    doubled = []
    for record in records:
        doubled.append(record)
        if "loss" in record:  # the other process's copy: the same step, its own loss
            doubled.append({**record, "loss": record["loss"] + 1e-4, "elapsed_time": "0:00:01"})
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in doubled))
    (run,) = get_reader("llamafactory").read([path])
    assert not run.restarts and not run.warnings
    assert any(note.startswith("12 record(s) repeating the step") for note in run.notes)
    loss = run.scalar_table().query("tag == 'loss'")["value"].to_numpy()
    assert np.array_equal(loss, [r["loss"] for r in records if "loss" in r])


def test_numbers_written_as_text_are_read(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps({"current_steps": s, "total_steps": 30, "loss": 2.0 - s / 100,
                                        "throughput": f"{1000 + s:.2f}", "elapsed_time": "0:00:24"}) + "\n"
                            for s in range(10, 40, 10)))
    (run,) = get_reader("llamafactory").read([path])
    frame = run.scalar_table()
    assert frame[frame["tag"] == "throughput"]["value"].tolist() == [1010.0, 1020.0, 1030.0]
    assert "3 number(s) written as text read as numbers" in run.notes


def test_its_last_step_at_total_steps_is_a_finished_run_and_a_stop_in_its_first_tenth_no_underfitting(tmp_path):
    """The last record at current_steps = total_steps: LLaMA-Factory ended the training (status finished). The
    same log cut at its first 5 of 60 planned steps (a job killed in its warm-up) is too short for 'underfitting'."""
    (info,) = tanalyze.load(FIXTURE / "trainer_log.jsonl", cache=False).runs.values()
    assert (info.status.status, info.status.reason) == (
        "finished", "LLaMA-Factory's trainer log reached its last step (current_steps = total_steps = 60)")
    records = [json.loads(line) for line in (FIXTURE / "trainer_log.jsonl").read_text().splitlines()]
    records = [{**r, "total_steps": 1200} for r in records]  # the same records of a run that planned 1,200 steps
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    logs = tanalyze.load(path, cache=False)
    (info,) = logs.runs.values()
    assert info.status.status == "unknown"
    (d,) = tanalyze.diagnose(logs).values()
    assert d.verdict.label == "insufficient_data"
    assert d.verdict.reasons[0] == ("the run's last logged step is 60 of the 1,200 its trainer planned (5.0%): too "
                                    "early to judge whether it underfits")


def test_a_log_of_progress_records_only_says_so(tmp_path):
    records = [{"current_steps": s, "total_steps": 20, "epoch": s / 20, "percentage": 5.0 * s,
                "elapsed_time": "0:00:01", "remaining_time": "0:00:01"} for s in range(1, 21)]
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (run,) = get_reader("llamafactory").read([path])
    assert [w.message for w in run.warnings] == ["no metric in its step records (progress only)"]


def test_a_fine_tunes_small_fall_near_ln_7_is_no_classifier_at_chance(tmp_path):
    """An SFT of a trained model as LLaMA-Factory logs it (records of the fixture's fields, 400 of them, a cosine
    schedule): its loss falls from 2.35 to about 1.97 in its first tenth and stays there, 9% below the median of its
    first points. It was 'underfitting ... at ln(7) = 1.946, the loss of uniform guesses among 7 classes': a language
    model's loss per token is no 7-class classifier's, and a start far below ln of any real vocabulary is a fine-tune's."""
    rng = np.random.default_rng(0)
    total = 2000
    records = [{"current_steps": step, "total_steps": total,
                "loss": round(1.97 + 0.38 * np.exp(-k / 8) + rng.normal(0, 0.01), 4),
                "lr": 1e-4 * 0.5 * (1 + np.cos(np.pi * step / total)), "epoch": step / total,
                "percentage": round(100 * step / total, 2), "elapsed_time": "0:00:01", "remaining_time": "0:00:01"}
               for k, step in enumerate(range(5, total + 1, 5))]
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (d,) = tanalyze.diagnose(tanalyze.load(path, cache=False)).values()
    assert d.format == "llamafactory" and d.verdict.label == "normal", d.verdict.reasons
    assert "chance_level" not in d.verdict.evidence
    assert any("started from trained weights" in reason and "ln(1000)" in reason for reason in d.verdict.reasons)
