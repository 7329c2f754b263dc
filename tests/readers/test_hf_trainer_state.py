import json
import math
import shutil
from pathlib import Path

import pytest

from tanalyze import load
from tanalyze.errors import FormatError
from tanalyze.readers.tabular.hf_trainer_state import HFTrainerStateReader
from tests.conftest import real_log
from tests.readers.structured_helpers import check_points, curve, epoch_at, only_run

HF = "hf_trainer_state"


def _load(relative: str):
    return only_run(load(real_log(f"{HF}/{relative}")))


# --- real files -------------------------------------------------------------------------


def test_t5_train_rows_summary_row_and_top_level_fields():
    name, info, frame = _load("10844110__t5-summarization-demo")
    assert info.format == "hf_trainer_state"
    check_points(curve(frame, "loss"), {500: 1.9963, 108000: 1.7996, 215000: 1.7423}, 430)
    check_points(curve(frame, "grad_norm"), {500: 3.155489444732666, 215000: 2.5202980041503906}, 430)
    assert curve(frame, "learning_rate")[500] == 4.9883902905678084e-05
    assert epoch_at(frame, "loss", 108000) == 1.504618342412126
    # the final summary row: tags at the final step, and a copy in hparams
    assert curve(frame, "train_runtime").to_dict() == {215337: 54713.1806}
    assert curve(frame, "train_samples_per_second").to_dict() == {215337: 15.743}
    assert curve(frame, "train_loss").to_dict() == {215337: 1.8040490566820844}
    assert info.hparams["summary"]["train_loss"] == 1.8040490566820844
    for key, value in {"global_step": 215337, "max_steps": 215337, "num_train_epochs": 3, "train_batch_size": 4,
                       "logging_steps": 500, "best_metric": None}.items():
        assert info.hparams[key] == value
    assert "log_history" not in info.hparams and "stateful_callbacks" not in info.hparams
    assert not info.warnings and not info.restarts


def test_whisper_epoch_goes_backwards_without_a_restart():
    name, info, frame = _load("CoralReefFish__whisper-tiny-nbaiLab")
    check_points(curve(frame, "loss"), {50: 2.936, 52050: 0.9213, 100000: 0.8333}, 2000)
    check_points(curve(frame, "eval_wer"), {1000: 61.96711327649208, 100000: 24.96954933008526}, 100)
    assert curve(frame, "eval_loss")[100000] == 0.512780487537384
    # the streaming dataset's epoch counter restarted: epoch kept as logged, steps monotonic, no restart
    assert epoch_at(frame, "eval_loss", 5000) == 0.05 and epoch_at(frame, "loss", 5050) == 0.0
    assert epoch_at(frame, "loss", 52000) == 5.06 and epoch_at(frame, "loss", 52050) == 0.0
    assert info.restarts == ()
    (note,) = [n for n in info.notes if "backwards" in n]
    assert "3 time(s)" in note and "5.06 → 0 at step 52050" in note
    assert info.hparams["num_train_epochs"] == 9223372036854775807
    assert info.hparams["best_model_checkpoint"] == "./checkpoint-98000"
    assert info.hparams["best_metric"] == 24.878197320341048
    # all_results.json beside it: the final evaluation of the best checkpoint
    assert info.hparams["all_results"]["eval_loss"] == 0.5099794864654541
    assert len(info.files) == 2


def test_cpt_predict_rows_without_step_take_the_step_of_the_eval_before():
    name, info, frame = _load("Jaong__Checkpoint-of-CPT")
    check_points(curve(frame, "loss"), {500: 1.1409, 3000: 0.3643, 5000: 0.2645}, 10)
    check_points(curve(frame, "eval_loss"), {549: 0.6597685217857361, 3294: 0.48532548546791077,
                                             5490: 0.4916660189628601}, 10)
    check_points(curve(frame, "predict_loss"), {549: 0.6476863622665405, 3294: 0.4631520211696625,
                                                5490: 0.4661196768283844}, 10)
    assert curve(frame, "predict_rouge-l")[5490] == 37.0015
    assert any("10 predict_* entr(ies) have no step" in n for n in info.notes)
    assert info.hparams["all_results"]["train_samples"] == 3290
    assert info.hparams["train_batch_size"] == 6


@pytest.mark.parametrize(
    ("relative", "losses", "n_loss", "f1", "n_eval", "global_step"),
    [
        ("Nicolassalvan__mti881-projet2/ResultsEtape1/default (learning rate 5e-5)",
         {500: 0.7214, 7500: 0.1051, 14500: 0.0219}, 29,
         {1455: 0.5640721605827052, 8730: 0.645174760930388, 14550: 0.6551302072342041}, 10, 14550),
        ("Nicolassalvan__mti881-projet2/ResultsEtape1/optunaTestTotal/checkpoints/trial_9_20250412_153230",
         {500: 0.7203, 4000: 0.2742, 7000: 0.1571}, 14, {}, 0, 7275),
        ("Nicolassalvan__mti881-projet2/ResultsEtape4/NouveauWeightLossSansOptunaHyperparamByDefault",
         {500: 2.157, 7500: 0.2191, 14000: 0.0716}, 28,
         {1400: 0.3366151989688177, 8400: 0.5099418979987088, 14000: 0.5646519268943802}, 10, 14000),
    ],
)
def test_token_classification_runs(relative, losses, n_loss, f1, n_eval, global_step):
    name, info, frame = _load(relative)
    check_points(curve(frame, "loss"), losses, n_loss)
    check_points(curve(frame, "eval_overall_f1"), f1, n_eval)
    assert info.hparams["global_step"] == global_step
    assert not info.warnings and not info.restarts


def test_trl_grpo_nested_names():
    name, info, frame = _load("Ray-Cheng-11__Tau-Bench-Model-Training")
    assert frame["tag"].nunique() == 18 and len(frame) == 18 and set(frame["step"]) == {10}
    assert curve(frame, "rewards/reward_function_wrapper/mean").to_dict() == {10: 0.365625}
    assert curve(frame, "completions/clipped_ratio").to_dict() == {10: 0.9125}
    assert curve(frame, "loss").to_dict() == {10: 0.0}
    assert epoch_at(frame, "loss", 10) == 2.5
    assert info.hparams["num_input_tokens_seen"] == 117284 and info.hparams["logging_steps"] == 10


# --- built in the test ----------------------------------------------------------------------


def _state(history, **top):
    return json.dumps({"global_step": max((e.get("step", 0) for e in history), default=0), **top,
                       "log_history": history}, indent=2)


def _train(step, loss):
    return {"epoch": step / 10, "loss": loss, "learning_rate": 1e-4, "step": step}


def test_checkpoint_folders_are_one_run_read_from_the_latest_state(tmp_path):
    out = tmp_path / "output"
    for last in (2, 4):
        (out / f"checkpoint-{last}").mkdir(parents=True)
        history = [_train(s, 1.0 / s) for s in range(1, last + 1)]
        (out / f"checkpoint-{last}" / "trainer_state.json").write_text(_state(history))
    logs = load(tmp_path)
    name, info, frame = only_run(logs)
    assert name == "output"
    assert curve(frame, "loss").to_dict() == {1: 1.0, 2: 0.5, 3: 1 / 3, 4: 0.25}
    assert any("checkpoint-4/trainer_state.json" in n and "checkpoint-2/trainer_state.json" in n
               for n in info.notes)


def test_top_level_state_is_preferred_over_checkpoint_copies(tmp_path):
    out = tmp_path / "output"
    (out / "checkpoint-2").mkdir(parents=True)
    (out / "checkpoint-2" / "trainer_state.json").write_text(_state([_train(1, 1.0), _train(2, 2.0)]))
    (out / "trainer_state.json").write_text(_state([_train(1, 1.0), _train(2, 2.0), _train(3, 3.0)]))
    (out / "all_results.json").write_text('{"train_loss": 2.0}')
    name, info, frame = only_run(load(out))
    assert curve(frame, "loss").to_dict() == {1: 1.0, 2: 2.0, 3: 3.0}
    assert info.hparams["all_results"] == {"train_loss": 2.0}


TWO_TRAININGS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "hf_two_trainings"


def test_another_trainings_checkpoints_in_the_same_output_folder_are_its_own_run(tmp_path):
    """A real Trainer run twice into one output folder (tests/fixtures/checkpoints/hf_two_trainings): 30 steps at
    lr 1e-3 (``checkpoint-30``), then 80 steps at 3e-3 (``checkpoint-40``, ``checkpoint-80``, the top-level state).
    ``checkpoint-30`` is no older copy of the second training's history: its first logged values differ. It was
    dropped as one, and with it a finished training; the second one's checkpoint advice counted its folder."""
    out = tmp_path / "out"
    shutil.copytree(TWO_TRAININGS, out, ignore=shutil.ignore_patterns("runs"))  # (its TensorBoard twin left out)
    logs = load(out, cache=False)
    assert sorted(logs.runs) == ["out", "out/checkpoint-30"]
    second, first = logs.runs["out"], logs.runs["out/checkpoint-30"]
    frame = logs.scalars
    second_loss = curve(frame[frame["run"] == "out"], "loss")
    first_loss = curve(frame[frame["run"] == "out/checkpoint-30"], "loss")
    assert second_loss[5] == 0.14860562086105347 and len(second_loss) == 16
    assert first_loss[5] == 0.18486467599868775 and len(first_loss) == 6
    assert curve(frame[frame["run"] == "out/checkpoint-30"], "eval_loss")[30] == 0.12621158361434937
    assert first.hparams["max_steps"] == 30 and second.hparams["max_steps"] == 80
    assert first.status.status == "finished" and "max_steps = 30" in first.status.reason
    assert any("1 other training(s) saved checkpoints in this folder" in n and "checkpoint-30" in n
               for n in second.notes)
    assert any("2 older copy(ies)" in n for n in second.notes)
    assert [c.name for c in second.checkpoints.checkpoints] == ["checkpoint-40", "checkpoint-80"]
    assert [c.name for c in first.checkpoints.checkpoints] == ["checkpoint-30"]
    assert all("checkpoint-30" not in f for f in second.files)


def test_repeated_steps_are_a_restart_with_last_write_wins(tmp_path):
    history = [_train(1, 1.0), _train(2, 0.9), _train(3, 0.8), _train(2, 0.7), _train(3, 0.6), _train(4, 0.5)]
    path = tmp_path / "trainer_state.json"
    path.write_text(_state(history))
    (run,) = HFTrainerStateReader().read([path])
    assert curve(run.scalars, "loss").to_dict() == {1: 1.0, 2: 0.7, 3: 0.6, 4: 0.5}
    (restart,) = run.restarts
    assert restart.step == 2 and "steps 2–3" in restart.detail
    assert "4 earlier point(s) replaced" in restart.detail  # loss and learning_rate at steps 2 and 3


def test_truncated_state_keeps_the_entries_before_the_cut(tmp_path):
    text = _state([_train(1, 1.0), _train(2, 0.5), _train(3, 0.25)])
    path = tmp_path / "trainer_state.json"
    path.write_text(text[: text.rindex('"step": 3')])
    (run,) = HFTrainerStateReader().read([path])
    assert curve(run.scalars, "loss").to_dict() == {1: 1.0, 2: 0.5}
    (warning,) = run.warnings
    assert "not complete JSON" in warning.message and "2 log entr(ies)" in warning.message
    assert warning.file == str(path)


def test_unreadable_state_is_a_format_error_and_a_load_warning(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text("{ this is not json")
    with pytest.raises(FormatError, match="trainer_state.json.*not valid JSON"):
        HFTrainerStateReader().read([path])
    name, info, frame = only_run(load(tmp_path))
    assert frame.empty and "not valid JSON" in info.warnings[0].message


def test_bom_non_utf8_bytes_and_non_numeric_values(tmp_path):
    history = [{**_train(1, 1.0), "note": "warmup", "flag": True}, {**_train(2, float("nan"))}]
    path = tmp_path / "trainer_state.json"
    text = _state(history, trial_name="cafe").replace('"cafe"', '"caf\xe9"')
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("latin-1"))  # BOM, then one byte that is not UTF-8
    (run,) = HFTrainerStateReader().read([path])
    loss = curve(run.scalars, "loss")
    assert loss[1] == 1.0 and math.isnan(loss[2])  # a logged NaN is kept
    assert "flag" not in set(run.scalars["tag"])  # booleans are not metrics
    assert any("non-numeric values skipped under: flag, note" in n for n in run.notes)
    assert any("not UTF-8" in w.message for w in run.warnings)
    assert run.hparams["trial_name"] == "caf\ufffd"


def test_the_model_config_and_adapter_config_beside_the_state_become_hparams(tmp_path):
    out = tmp_path / "out"
    checkpoint = out / "checkpoint-20"
    checkpoint.mkdir(parents=True)
    history = [{"step": 10, "epoch": 0.5, "loss": 2.0}, {"step": 20, "epoch": 1.0, "loss": 1.9}]
    state = checkpoint / "trainer_state.json"
    state.write_text(json.dumps({"global_step": 20, "log_history": history}))
    (out / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"], "vocab_size": 50257}))
    (checkpoint / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "task_type": "CAUSAL_LM"}))
    run = HFTrainerStateReader().read([state])[0]
    assert run.hparams["model_config"] == {"architectures": ["GPT2LMHeadModel"], "vocab_size": 50257}
    assert run.hparams["adapter_config"]["task_type"] == "CAUSAL_LM"
    assert sorted(p.name for p in run.extra_files) == ["adapter_config.json", "config.json"]


def test_a_config_json_that_is_not_a_models_is_left_alone(tmp_path):
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"global_step": 10, "log_history": [{"step": 10, "loss": 2.0}]}))
    (tmp_path / "config.json").write_text(json.dumps({"dataset": "wikitext", "lr": 3e-4}))
    run = HFTrainerStateReader().read([state])[0]
    assert "model_config" not in run.hparams and not run.extra_files


def test_a_results_file_that_is_not_json_is_named_and_the_state_still_read(tmp_path):
    (tmp_path / "trainer_state.json").write_text(_state([_train(1, 1.0), _train(2, 0.5)]))
    (tmp_path / "all_results.json").write_text('{"train_loss": 0.7,')
    (run,) = HFTrainerStateReader().read([tmp_path / "all_results.json", tmp_path / "trainer_state.json"])
    assert curve(run.scalars, "loss").to_dict() == {1: 1.0, 2: 0.5}
    [warning] = run.warnings
    assert warning.file.endswith("all_results.json") and warning.message.startswith("not valid JSON")
