"""Training histories saved as one JSON document: the fixtures written by real Keras fits and a real PyTorch loop
(``tests/fixtures/history_json/generate.py``), and damaged or look-alike documents."""

import json

import pytest

from tanalyze import diagnose, load
from tanalyze.discover import discover
from tanalyze.errors import FormatError
from tanalyze.readers import HEAD_BYTES, get_reader
from tanalyze.readers.tabular.history_json import HistoryJsonReader
from tests.conftest import REPO
from tests.readers.text_helpers import check, curve, notes_text, write

FIXTURES = REPO / "tests" / "fixtures" / "history_json"


def _read(path):
    reader = HistoryJsonReader()
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    return run


def test_keras_history_dump_one_step_per_epoch_from_zero():
    run = _read(FIXTURES / "keras_classifier" / "history.json")
    frame = run.scalars
    check(frame, "loss", {0: 2.2500579357147217, 11: 0.3400472402572632}, count=12)
    check(frame, "val_loss", {0: 2.1282570362091064, 5: 0.8604480028152466}, count=12)
    check(frame, "val_accuracy", {11: 0.9599999785423279}, count=12)
    check(frame, "learning_rate", {0: 0.0010000000474974513}, count=12)  # ReduceLROnPlateau's list
    assert frame.loc[frame["tag"] == "loss", "epoch"].tolist()[:3] == [0.0, 1.0, 2.0]
    assert "step = the position in the list (the epoch, from 0)" in notes_text(run)
    assert run.warnings == [] and run.restarts == [] and run.hparams == {}


def test_validation_every_third_epoch_is_put_after_its_epochs():
    run = _read(FIXTURES / "keras_validation_freq" / "train_history.json")
    frame = run.scalars
    check(frame, "loss", {0: 2.3670942783355713, 9: 0.9821096062660217}, count=10)
    # validation_freq=3: after epochs 3, 6 and 9 (steps 2, 5, 8)
    assert curve(frame, "val_loss") == {2: 1.7634631395339966, 5: 1.3433996438980103, 8: 1.023158311843872}
    assert "val_accuracy, val_loss (3 values: every 3 steps, assumed: 10 is no multiple of 3)" in notes_text(run)


def test_pandas_to_json_columns_keep_their_index():
    run = _read(FIXTURES / "keras_pandas" / "history.json")
    check(run.scalars, "loss", {0: 1.513810873, 3: 1.0995194912, 5: 0.8850788474}, count=6)
    check(run.scalars, "val_accuracy", {2: 0.5}, count=6)
    assert "pandas to_json columns" in notes_text(run)


def test_a_loops_dict_with_an_epoch_list_and_its_settings():
    run = _read(FIXTURES / "torch_loop" / "history.json")
    frame = run.scalars
    # "history" and "config" only hold the rest: not in the names; the epoch list gives the steps
    assert set(frame["tag"]) == {"train_loss", "val_loss", "val_acc"}
    check(frame, "train_loss", {1: 0.5766260504722596, 15: 0.018836970441043377}, count=15)
    check(frame, "val_loss", {2: 0.18176805973052979}, count=15)
    assert run.hparams == {"lr": 0.05, "hidden": 32}
    assert "step = the list 'epoch' as written" in notes_text(run)


def test_the_same_loop_kept_as_records_reads_the_same():
    records = _read(FIXTURES / "torch_loop_records" / "log.json")
    columns = _read(FIXTURES / "torch_loop" / "history.json")
    for tag in ("train_loss", "val_loss", "val_acc"):
        assert curve(records.scalars, tag) == curve(columns.scalars, tag)
    assert "each record's 'epoch' as written" in notes_text(records)


def test_discovery_finds_one_run_per_history_and_joins_the_csvlogger_twin():
    found = discover(FIXTURES)
    formats = {spec.name: spec.format for spec in found.runs}
    assert formats == {"keras_classifier": "history_json", "keras_overfit": "history_json",
                       "keras_validation_freq": "history_json", "keras_pandas": "history_json",
                       "torch_loop": "history_json", "torch_loop_records": "history_json",
                       "keras_with_csvlogger": "keras_csv", "keras_printed": "history_json"}
    logs = load(FIXTURES / "keras_with_csvlogger")
    (info,) = logs.runs.values()
    assert "twin: history.json (history_json)" in notes_text(info)
    assert "agrees on all 32 common points of 4 tag(s)" in notes_text(info)


def test_a_really_overfit_keras_history_is_judged_overfitting():
    logs = load(FIXTURES / "keras_overfit")
    (result,) = diagnose(logs).values()
    assert result.verdict.label == "overfitting"
    assert result.overfitting.onset_step == 2  # val_loss 0.4645 at epoch 2, 1.454 at the end


@pytest.mark.parametrize("document", [
    {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]},  # a data set's statistics: no metric
    [{"trial": 1, "lr": 0.1, "val_loss": 0.3}, {"trial": 2, "lr": 0.01, "val_loss": 0.25}],  # a sweep's results
    {"images": [{"id": 1, "width": 640}], "annotations": []},  # COCO annotations
    {"log_history": [{"loss": 0.5, "step": 10}], "global_step": 10},  # HF trainer state
])
def test_look_alike_documents_are_not_claimed(tmp_path, document):
    path = write(tmp_path / "stats.json", json.dumps(document))
    assert not HistoryJsonReader().sniff(path, path.read_bytes())


def test_json_lines_with_lists_are_not_one_document(tmp_path):
    lines = "".join(json.dumps({"epoch": i, "losses": [0.5, 0.4]}) + "\n" for i in range(3))
    path = write(tmp_path / "log.json", lines)
    assert not HistoryJsonReader().sniff(path, path.read_bytes())


def test_nested_splits_nulls_and_text_lists(tmp_path):
    document = {"train": {"loss": [1.0, None, 0.5, 0.25]}, "val": {"loss": [1.2, 0.9, 0.8, 0.7]},
                "class_names": ["cat", "dog"], "epochs": 4, "optimizer": "adam"}
    run = _read(write(tmp_path / "history.json", json.dumps(document)))
    assert curve(run.scalars, "train/loss") == {0: 1.0, 2: 0.5, 3: 0.25}
    assert curve(run.scalars, "val/loss") == {0: 1.2, 1: 0.9, 2: 0.8, 3: 0.7}
    assert run.hparams == {"epochs": 4, "optimizer": "adam"}
    assert [(w.message, w.count) for w in run.warnings] == [("1 null value(s) (nothing logged); skipped", 1)]
    assert "not numbers, skipped: class_names" in notes_text(run)


def test_a_loss_per_batch_beside_a_loss_per_epoch(tmp_path):
    document = {"loss": [float(10 - i) / 10 for i in range(10)], "val_loss": [0.8, 0.6]}
    run = _read(write(tmp_path / "history.json", json.dumps(document)))
    assert curve(run.scalars, "val_loss") == {4: 0.8, 9: 0.6}
    assert "val_loss (2 values: every 5 steps)" in notes_text(run)


def test_a_cut_history_names_the_file_and_where_it_stops(tmp_path):
    whole = (FIXTURES / "keras_classifier" / "history.json").read_text()
    path = write(tmp_path / "history.json", whole[: len(whole) // 2])
    assert get_reader("history_json").sniff(path, path.read_bytes()[:HEAD_BYTES])
    with pytest.raises(FormatError, match=r"history\.json at line 1, column \d+: not a whole JSON document"):
        HistoryJsonReader().read([path])
    (info,) = load(tmp_path).runs.values()  # the run is listed with why it holds nothing
    (warning,) = info.warnings
    assert warning.file.endswith("history.json") and "not a whole JSON document" in warning.message


def test_a_saved_hf_log_history_is_read_by_its_step_not_its_fractional_epoch(tmp_path):
    records = [{"loss": 2.5 - i / 10, "learning_rate": 5e-5, "epoch": round(0.32 * (i + 1), 2), "step": 500 * (i + 1)}
               for i in range(5)]
    run = _read(write(tmp_path / "log_history.json", json.dumps(records)))
    assert curve(run.scalars, "loss") == {500: 2.5, 1000: 2.4, 1500: 2.3, 2000: 2.2, 2500: 2.1}
    assert "epoch" in set(run.scalars["tag"].astype(str))  # the fractional epoch stays a curve
    assert not run.warnings


def test_keys_that_name_only_splits_take_the_metric_the_files_name_names(tmp_path):
    """``loss_history.json`` holding ``{"epochs": [1, …], "train": [...], "val": [...]}`` (a loop's own
    ``json.dump``): the series are the training and validation losses; without a metric in its name, no history."""
    document = {"epochs": [1, 2, 3], "train": [3.5, 2.25, 1.5], "val": [3.75, 2.5, 2.0]}
    path = write(tmp_path / "loss_history.json", json.dumps(document))
    reader = HistoryJsonReader()
    assert reader.sniff(path, path.read_bytes()[:HEAD_BYTES])
    (run,) = reader.read([path])
    check(run.scalars, "train_loss", {1: 3.5, 3: 1.5}, count=3)
    check(run.scalars, "val_loss", {2: 2.5}, count=3)
    assert "its keys name only splits: their series are the 'loss' its name names" in notes_text(run)
    other = write(tmp_path / "history.json", json.dumps(document))
    assert not reader.sniff(other, other.read_bytes()[:HEAD_BYTES])


def test_a_history_kept_as_python_prints_it():
    """``f.write(str(history.history))`` into ``training_history.txt`` (a real Keras fit): single quotes, one line.
    It had been claimed by the HF console reader, read as no metric at all and reported as a job KILLED while
    writing its last line (an ERROR)."""
    path = FIXTURES / "keras_printed" / "training_history.txt"
    run = _read(path)
    frame = run.scalars
    check(frame, "loss", {0: 1.3222451210021973, 5: 0.19842346012592316, 19: 0.049481865018606186}, count=20)
    check(frame, "val_loss", {0: 1.1095761060714722, 19: 0.10016079992055893}, count=20)
    check(frame, "val_accuracy", {5: 0.9599999785423279}, count=20)
    assert [spec.format for spec in discover(path.parent).runs] == ["history_json"]
    [d] = diagnose(load(path.parent)).values()
    assert d.status.status != "killed" and not [f for f in d.findings if f.severity == "error"]


@pytest.mark.parametrize(("text", "expected"), [
    ("{'loss': [0.5, nan, inf, -inf, -0.25], 'note': 'it\\'s'}", {"loss": [0.5, None, None, None, -0.25]}),
    ("{'val_loss': [np.float64(0.5), np.float32(0.25)], 'epochs': np.int64(2)}", {"val_loss": [0.5, 0.25]}),
])
def test_python_printed_values_are_turned_into_json_never_evaluated(tmp_path, text, expected):
    run = _read(write(tmp_path / "history.txt", text))
    for tag, values in expected.items():
        got = curve(run.scalars, tag)
        assert [got.get(step) for step in range(len(values))][: len(values)] == [
            got.get(step) if value is None else value for step, value in enumerate(values)]


def test_a_printed_dict_with_a_call_in_it_is_named_not_run(tmp_path):
    path = write(tmp_path / "history.txt", "{'loss': [0.5, __import__('os').getcwd()]}")
    with pytest.raises(FormatError, match="not a whole JSON document"):
        HistoryJsonReader().read([path])


def test_text_files_that_are_no_printed_history_are_not_claimed(tmp_path):
    reader = HistoryJsonReader()
    for text in ("{'mean': [0.5, 0.2], 'std': [0.1, 0.1]}", "loss: 0.5\n", "{'loss': 0.5}\n{'loss': 0.4}\n"):
        path = write(tmp_path / "notes.txt", text)
        assert not reader.sniff(path, path.read_bytes())
