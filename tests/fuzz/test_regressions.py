"""One test per crash the fuzzers found: the smallest input that crashed a reader, and what it now gives."""

from __future__ import annotations

import json
import os
import struct

import pytest

from tanalyze import load
from tanalyze.readers import get_reader
from tanalyze.readers.tensorboard.reader import TensorBoardReader
from tanalyze.readers.text.pattern import read_with_pattern

DEEP_ARRAY = "[" * 100_000
DEEP_OBJECT = '{"a": ' * 50_000


def messages(run) -> str:
    return "\n".join(str(w) for w in run.warnings)


@pytest.mark.parametrize("line", [DEEP_ARRAY, DEEP_OBJECT], ids=["array", "object"])
def test_detectron2_line_nested_too_deep_is_one_skipped_line(tmp_path, line):
    """Was: RecursionError from json.loads escaped the reader."""
    rows = [json.dumps({"iteration": i, "total_loss": 1.0 / (i + 1)}) for i in range(19, 100, 20)]
    path = tmp_path / "metrics.json"
    path.write_text("\n".join(rows[:2] + [line] + rows[2:]) + "\n")
    [run] = get_reader("detectron2").read([path])
    assert sorted(run.scalars["step"].unique().tolist()) == [19, 39, 59, 79, 99]
    [warning] = [w for w in run.warnings if "line 3" in (w.location or "") or "line 3" in w.message]
    assert warning.count == 1


def test_wandb_history_line_nested_too_deep_is_one_skipped_line(tmp_path):
    """Was: RecursionError from json.loads in the W&B history reader."""
    rows = [json.dumps({"_step": i, "loss": 2.0 - i / 10}) for i in range(6)]
    path = tmp_path / "wandb-history.jsonl"
    path.write_text("\n".join(rows[:3] + [DEEP_OBJECT] + rows[3:]) + "\n")
    [run] = get_reader("wandb-history").read([path])
    assert run.scalars[run.scalars["tag"] == "loss"]["step"].tolist() == [0, 1, 2, 3, 4, 5]
    assert sum(w.count for w in run.warnings if "line" in (str(w.location) + w.message)) == 1


@pytest.mark.parametrize(("folder", "name"), [("version_0", "hparams.yaml"), ("run", "config.json")])
def test_config_nested_too_deep_is_a_warning(tmp_path, folder, name):
    """Was: RecursionError from the YAML/JSON parser of a config beside a CSV log."""
    run_dir = tmp_path / folder
    run_dir.mkdir()
    (run_dir / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    (run_dir / name).write_text(DEEP_ARRAY if name.endswith("yaml") else DEEP_OBJECT)
    logs = load(tmp_path)
    assert logs.scalars["value"].tolist() == [1.0, 0.5]
    [info] = logs.runs.values()
    assert any(w.file.endswith(name) for w in info.warnings), info.warnings


def test_tensorboard_hparams_yaml_nested_too_deep_is_a_warning(tmp_path):
    from tests.fuzz.events import event_file, scalar_events

    event_file(tmp_path / "events.out.tfevents.1.host.1.0", scalar_events(5))
    (tmp_path / "hparams.yaml").write_text(DEEP_ARRAY)
    [run] = TensorBoardReader().read([tmp_path / "events.out.tfevents.1.host.1.0"])
    assert len(run.scalars) == 5
    assert "could not read hparams" in messages(run)


@pytest.mark.parametrize("size", range(1, 12))
def test_tensorboard_file_shorter_than_a_record_header(tmp_path, size):
    """Was: IndexError in the vectorised frame check for files of 8 to 11 bytes."""
    path = tmp_path / "events.out.tfevents.1.host.1.0"
    path.write_bytes(bytes(size))
    [run] = TensorBoardReader().read([path])
    assert run.scalars.empty
    assert "no intact record" in messages(run)


@pytest.mark.parametrize("step", ["nan", "inf", "-inf", "1e30", "9" * 400], ids=["nan", "inf", "-inf", "1e30", "400-digits"])
def test_pattern_step_that_is_not_a_whole_64_bit_number(tmp_path, step):
    """Was: ValueError/OverflowError from int(float) on a step of nan or inf."""
    path = tmp_path / "train.log"
    path.write_text(f"step 1 loss 0.5\nstep {step} loss 0.4\nstep 3 loss 0.3\n")
    [run] = read_with_pattern([path], r"step (?P<step>\S+) loss (?P<loss>\S+)")
    assert run.scalars["step"].tolist() == [1, 3]
    assert "1 matched value(s) are not numbers" in messages(run)


def test_pattern_rank_that_is_not_a_number_defaults(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("rank nan step 1 loss 0.5\nrank 1 step 2 loss 0.4\n")
    [run] = read_with_pattern([path], r"rank (?P<rank>\S+) step (?P<step>\d+) loss (?P<loss>\S+)")
    assert run.scalars["step"].tolist() == [1, 2]


@pytest.mark.parametrize("digits", [20, 400])
def test_console_step_beyond_64_bits_is_skipped_and_counted(tmp_path, digits):
    """Was: OverflowError from the int64 step column (nanoGPT; every console reader shares the row store)."""
    path = tmp_path / "train.log"
    lines = [f"iter {i}: loss {2.0 - i / 10:.4f}, time 10.00ms, mfu 1.00%" for i in range(5)]
    lines.insert(2, f"iter {'9' * digits}: loss 1.0000, time 10.00ms, mfu 1.00%")
    path.write_text("\n".join(lines) + "\n")
    [run] = get_reader("nanogpt").read([path])
    assert sorted(run.scalars["step"].unique().tolist()) == [0, 1, 2, 3, 4]
    [warning] = [w for w in run.warnings if "64 bits" in w.message]
    assert warning.count == 3  # loss, time_ms and mfu of that line


def test_csv_with_a_million_columns_is_read_in_bounded_time(tmp_path):
    """Was: about 0.2 ms per column (a header of a million columns took minutes); now one pass per chunk."""
    columns = 50_000  # (the old 0.2 ms per column: 10 s here; now a few seconds, most of it pandas building columns)
    header = "step," + ",".join(f"m{i}" for i in range(columns))
    path = tmp_path / "metrics.csv"
    path.write_text(header + "\n1," + ",".join(["0.5"] * columns) + "\n2,0.25\n")
    [run] = get_reader("csv").read([path])
    assert len(run.scalars) == columns
    assert set(run.scalars["value"].tolist()) == {0.5}
    [ragged] = [w for w in run.warnings if "different number of fields" in w.message]
    assert ragged.count == 1 and ragged.location == "line 3"


def test_event_record_frame_helper_roundtrip(tmp_path):
    """The test helper frames records the way TensorBoard does (its CRCs verify with our scanner)."""
    from tanalyze.readers.tensorboard._tfrecord import scan_records
    from tests.fuzz.events import event_file, scalar_events

    data = event_file(tmp_path / "events.out.tfevents.1.h.1.0", scalar_events(3)).read_bytes()
    records = scan_records(data)
    assert len(records.starts) == 4 and not records.damage
    assert struct.unpack_from("<Q", data, 0)[0] == records.lengths[0]



def test_wandb_history_undecodable_bytes_are_counted(tmp_path):
    """Found by the line-damage property: a garbled key was read under a new name and nothing said so."""
    path = tmp_path / "wandb-history.jsonl"
    path.write_bytes(b'{"_step": 0, "loss": 1.0}\n{"_step": 1, "l\xffss": 0.5}\n{"_step": 2, "loss": 0.25}\n')
    [run] = get_reader("wandb-history").read([path])
    assert run.scalars[run.scalars["tag"] == "loss"]["step"].tolist() == [0, 2]
    [warning] = [w for w in run.warnings if "not UTF-8" in w.message]
    assert warning.count == 1


def test_wandb_config_larger_than_any_config_is_not_loaded(tmp_path):
    """A hostile 17 MB config.yaml is refused by size (with a warning) instead of being parsed into memory."""
    run = tmp_path / "wandb" / "run-20240101_000000-abcd1234"
    (run / "files").mkdir(parents=True)
    (run / "files" / "config.yaml").write_bytes(b"k: [" + b"1, " * 6_000_000 + b"1]\n")
    (run / "files" / "wandb-summary.json").write_text('{"loss": 0.5, "_step": 3}')
    [data] = get_reader("wandb-local").read(sorted(p for p in run.rglob("*") if p.is_file()))
    [warning] = [w for w in data.warnings if w.file.endswith("config.yaml")]
    assert "config not read" in warning.message and "more than the 16,777,216 bytes" in warning.message


def test_wandb_file_shrinking_while_read_keeps_what_was_read(tmp_path):
    """Was: the .wandb file was memory-mapped, and a file cut while read killed the process with SIGBUS."""
    from tanalyze.readers.wandb import _records as _wandb_records
    from tanalyze.readers.wandb._records import read_wandb_file
    from tests.readers import wandb_make as make

    path = tmp_path / "run-a.wandb"
    path.write_bytes(make.frame([make.history({"loss": float(i), "_step": i}) for i in range(4000)]))
    size = path.stat().st_size
    blocks = _wandb_records._Blocks.__getitem__
    seen: set[int] = set()

    def cutting(self, item):
        seen.add((item.start or 0) // _wandb_records.BLOCK)
        if len(seen) == 3 and path.stat().st_size == size:
            os.truncate(path, 2 * _wandb_records.BLOCK + 100)  # another process rewrites the file
        return blocks(self, item)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_wandb_records._Blocks, "__getitem__", cutting)
        log = read_wandb_file(path)
    steps = [row["_step"] for row in log.history]
    assert steps == list(range(len(steps))) and len(steps) > 500  # the first blocks' rows, in order
    assert log.framing.truncated_at is not None or log.framing.bad_chunks


HF_CONSOLE = (
    "***** Running training *****\n  Num examples = 1,000\n  Num Epochs = 2\n  Total optimization steps = 100\n"
    "{{'loss': 2.0, 'learning_rate': 0.001, 'epoch': 0.2}}\n"
    "{odd}\n"
    "{{'loss': 1.5, 'learning_rate': 0.0009, 'epoch': 0.4}}\n"
    "{{'train_runtime': {runtime}, 'train_steps_per_second': 5.0, 'train_loss': 1.7, 'epoch': 0.4}}\n"
)


@pytest.mark.parametrize("odd", [
    "{'loss': 1.8, 'learning_rate': 0.001, 'epoch': 3.3e98}",  # found by atheris: a digit run in the epoch
    "{'loss': 1.8, 'learning_rate': 0.001, 'epoch': inf}",
    "{'loss': 1.8, 'learning_rate': 0.001, 'epoch': 0.3, 'step': 1e30}",
    "{'loss': 1.8, 'learning_rate': 0.001, 'epoch': 0.3, 'step': nan}",
], ids=["huge epoch", "inf epoch", "huge step key", "nan step key"])
@pytest.mark.parametrize("runtime", ["20.0", "inf"])
def test_hf_console_step_beyond_64_bits_keeps_the_dict_and_says_so(tmp_path, odd, runtime):
    """Was: OverflowError when a derived or given step did not fit the int64 step column."""
    path = tmp_path / "train.log"
    path.write_text(HF_CONSOLE.format(odd=odd, runtime=runtime), encoding="utf-8")
    [run] = get_reader("hf_console").read([path])
    loss = run.scalars[run.scalars["tag"] == "loss"]
    kept = sorted(loss["value"].tolist())
    # the odd dict is kept, or (keyed by its position, at a step a later dict also logs) replaced and counted
    assert kept == [1.5, 1.8, 2.0] or (kept == [1.5, 2.0] and any("replaced by the later write" in n for n in run.notes))
    assert loss["step"].abs().max() < 2**62
    if "step" in odd:
        assert any("not below 2**62" in note for note in run.notes)
    else:
        assert any("epoch value(s) that are not finite" in note for note in run.notes)


@pytest.mark.parametrize(("name", "line_index", "kind", "salt"), [
    ("detectron2", 1, "garble_byte", 2248),  # the damaged record began a relaunch: its own key lost, no other
    ("megatron", 38510, "garble_byte", 0),  # timer lines take the step of the iteration line before them
    ("hf_console", 112067, "cut_half", 0),  # was: a metrics-block line cut before its '=' ended the block
    ("hf_console", 454, "megabyte_line", 0),  # was: a junk line inside a metrics block ended it
    ("hf_console", 1376, "garble_byte", 2),  # the final dict's train_loss kept, the block's rounded twin not
])
def test_damaged_lines_the_long_fuzz_run_found(name, line_index, kind, salt, tmp_path_factory):
    from tests.fuzz.test_no_silent_loss import test_a_damaged_line_costs_that_line_only

    test_a_damaged_line_costs_that_line_only.hypothesis.inner_test(name, line_index, kind, salt, tmp_path_factory)


def _lone_surrogate_files(tmp_path):
    """Files of JSON formats whose metric key holds a lone surrogate escape (``"\\ud800"``): a string no
    UTF-8 file or Arrow column can hold."""
    key = '"\\ud800_loss"'
    detr = tmp_path / "detr" / "log.txt"
    detr.parent.mkdir()
    detr.write_text("".join(f'{{"train_loss": {2 - e / 10}, {key}: {e}, "epoch": {e}, "n_parameters": 41}}\n'
                            for e in range(3)))
    mmdet = tmp_path / "mmdet" / "20210422_141751.log.json"
    mmdet.parent.mkdir()
    mmdet.write_text('{"env_info": "x", "config": "y"}\n' + "".join(
        f'{{"mode": "train", "epoch": 1, "iter": {i}, "lr": 0.001, "loss": {2 - i / 100}, {key}: 1.0}}\n'
        for i in (50, 100, 150)))
    detectron2 = tmp_path / "d2" / "metrics.json"
    detectron2.parent.mkdir()
    detectron2.write_text("".join(f'{{"iteration": {i}, "total_loss": 1.0, {key}: 0.5}}\n' for i in (19, 39)))
    history = tmp_path / "wandb" / "wandb-history.jsonl"
    history.parent.mkdir()
    history.write_text("".join(f'{{"_step": {i}, "loss": 1.0, {key}: 0.5}}\n' for i in range(3)))
    return {"detr": detr, "mmdet2": mmdet, "detectron2": detectron2, "wandb-history": history}


@pytest.mark.parametrize("name", ["detr", "mmdet2", "detectron2", "wandb-history"])
def test_metric_name_with_a_lone_surrogate_escape_is_read_with_a_replacement_character(tmp_path, name):
    """Was (found by the long fuzz run on DETR and MMDetection logs): a JSON key "\\ud800…" made a tag name
    pandas' Arrow strings cannot encode, and the read failed with a UnicodeEncodeError."""
    path = _lone_surrogate_files(tmp_path)[name]
    [run] = get_reader(name).read([path])
    tags = set(run.scalar_table()["tag"].astype(str))
    assert "\ufffd_loss" in tags and not any("\ud800" in tag for tag in tags)


def test_run_named_with_a_lone_surrogate_escape_keeps_its_points(tmp_path):
    """Was: an MLflow run whose meta.yaml names it "r\\ud800n" (a YAML escape), or with a metric file whose
    name is not UTF-8, lost all its points: its run or tag column could not be built ("could not be read:
    UnicodeEncodeError")."""
    run = tmp_path / "mlruns" / "0" / "abc123"
    (run / "metrics").mkdir(parents=True)
    (tmp_path / "mlruns" / "0" / "meta.yaml").write_text(
        "artifact_location: x\nexperiment_id: '0'\nlifecycle_stage: active\nname: Default\n")
    (run / "meta.yaml").write_text('run_id: abc123\nrun_name: "r\\ud800n"\nexperiment_id: \'0\'\nstatus: 3\n'
                                   "start_time: 1\nend_time: 2\nlifecycle_stage: active\n")
    (run / "metrics" / "loss").write_text("1 0.5 0\n2 0.4 1\n3 0.3 2\n")
    if os.name == "posix":  # a metric file whose name is not UTF-8 ("acc_\xe9"): its tag gets U+FFFD
        (run / "metrics" / os.fsdecode(b"acc_\xe9")).write_text("1 0.1 0\n2 0.2 1\n")
    logs = load(tmp_path, cache=False)
    assert list(logs.runs) == ["mlruns/r\ufffdn"]
    by_tag = logs.scalars.groupby("tag", observed=True)["value"].apply(list).to_dict()
    assert by_tag["loss"] == [0.5, 0.4, 0.3]
    assert by_tag.get("acc_\ufffd", [0.1, 0.2]) == [0.1, 0.2] and len(by_tag) == (2 if os.name == "posix" else 1)
    assert not logs.runs["mlruns/r\ufffdn"].warnings


@pytest.mark.parametrize("text", ["", "\n", "   "], ids=["empty", "line-break", "blanks"])
def test_yolov5_results_txt_with_no_line_is_a_run_without_points(tmp_path, text):
    """Was: numpy's string partition of no rows raised ValueError (a results.txt cut to nothing)."""
    path = tmp_path / "results.txt"
    path.write_text(text)
    [run] = get_reader("yolo_txt").read([path])
    assert len(run.scalars) == 0


def test_a_tidy_table_whose_header_lost_a_column_name_is_a_named_error(tmp_path):
    """Was: KeyError: 'value' (a bit flip in the header of a tidy CSV: 'valud')."""
    from tanalyze.errors import FormatError

    path = tmp_path / "scalars.csv"
    path.write_text("run,tag,step,valud\nr,loss,0,1.5\n")
    with pytest.raises(FormatError, match=r"scalars\.csv.*no 'value' column"):
        get_reader("tidy").read([path])


def test_a_monitor_csv_without_one_whole_episode_is_a_run_with_a_warning(tmp_path):
    """Was: KeyError: 't' (no line of a damaged monitor.csv an episode record: its columns all dropped)."""
    path = tmp_path / "monitor.csv"
    path.write_text('#{"t_start": 1.0, "env_id": "CartPole-v1"}\nr,l,t\n11.0,x1,?\n')
    [run] = get_reader("sb3_monitor").read([path])
    assert len(run.scalars) == 0
    assert "1 line(s) that are not episode records skipped" in messages(run)


def test_monitor_lengths_too_large_for_a_step_are_skipped_lines(tmp_path):
    """Was: OverflowError (a 400-digit length) and an invalid cast of an infinite one to the step."""
    path = tmp_path / "monitor.csv"
    path.write_text('#{"t_start": 1.0}\nr,l,t\n11.0,11,1.0\n12,' + "9" * 400 + ",2.0\n13,1e300,3\n14,inf,4\n15,15,5\n")
    [run] = get_reader("sb3_monitor").read([path])
    reward = run.scalars[run.scalars["tag"] == "episode/reward"]
    assert list(zip(reward["step"], reward["value"], strict=True)) == [(11, 11.0), (26, 15.0)]
    assert "3 line(s) that are not episode records skipped" in messages(run)


def test_a_tidy_tag_a_keras_split_names_again_is_one_tag(tmp_path):
    """Was: ValueError (categories must be unique): the split run ``exp/train``'s ``loss`` and the run ``exp``'s
    ``train/loss`` are both ``train/loss`` of the run ``exp``."""
    path = tmp_path / "scalars.csv"
    path.write_text("run,tag,step,value\nexp/train,loss,0,1.5\nexp,train/loss,1,1.2\nexp/validation,loss,0,2.0\n")
    [run] = get_reader("tidy").read([path])
    assert run.scalars[["tag", "step", "value"]].astype({"tag": str}).values.tolist() == [
        ["train/loss", 0, 1.5], ["train/loss", 1, 1.2], ["validation/loss", 0, 2.0]]


def test_a_monitor_header_nested_past_any_real_one_is_no_header(tmp_path):
    """Was: RecursionError from json.loads of a damaged monitor.csv header."""
    path = tmp_path / "monitor.csv"
    path.write_text("#" + DEEP_ARRAY + "\nr,l,t\n11.0,11,1.0\n")
    [run] = get_reader("sb3_monitor").read([path])
    assert run.scalars[run.scalars["tag"] == "episode/reward"]["value"].tolist() == [11.0]


def test_a_fairseq_line_with_a_count_past_any_real_one_is_named_not_read(tmp_path):
    """Was: OverflowError (int too large to convert to float) from the epoch's fraction done."""
    line = "| epoch 001:     10 / {total} loss=15.180, ppl=37113.65, num_updates={step}, lr=1.1e-07\n"
    path = tmp_path / "train.log"
    path.write_text(line.format(total=31621, step=10) + line.format(total="9" * 400, step=11)
                    + line.format(total=31621, step=12))
    [run] = get_reader("fairseq").read([path])
    assert sorted(set(run.scalars["step"].tolist())) == [10, 12]
    assert any("line 2" in (w.location or "") for w in run.warnings)


def test_a_tensorboard_download_nested_past_any_real_one_is_a_warning(tmp_path):
    """Was: RecursionError from json.loads of a damaged chart download (``run-…-tag-….json``); the other downloads
    of the run are still read."""
    bad = tmp_path / "run-validation-tag-epoch_loss.json"
    bad.write_text(DEEP_ARRAY)
    good = tmp_path / "run-train-tag-epoch_loss.json"
    good.write_text("[[1700000000.0, 0, 0.5], [1700000010.0, 1, 0.4]]")
    [run] = get_reader("tidy").read([bad, good])
    assert run.scalars["value"].tolist() == [0.5, 0.4]
    [warning] = run.warnings
    assert warning.file.endswith("run-validation-tag-epoch_loss.json") and "nested deeper" in warning.message


def test_json_nested_past_any_real_one_in_a_sniffed_head_or_a_tune_config_cell(tmp_path):
    """A history's first line or a Ray Tune ``progress.csv`` config cell nested 100,000 deep: no RecursionError
    (sniffing says no; the cell stays text)."""
    from tanalyze.readers.tabular.history_json import _json_lines
    from tanalyze.readers.tabular.ray_tune import _cell

    assert _json_lines(DEEP_ARRAY + "\n{}\n") is False
    assert _cell(DEEP_ARRAY) == DEEP_ARRAY


@pytest.mark.parametrize(("name", "line"), [
    ("darknet", " {step}: 1.0, 1.0 avg loss, 0.001000 rate, 1.000000 seconds, 64 images"),
    ("console_table", "{step}         0.9         00:10"),
    ("paddle", "[2022/08/08 16:28:28] ppocr INFO: epoch: [1/200], global_step: {step}, lr: 0.1, loss: 1.8"),
    ("opennmt", "[2020-09-22 16:31:24,717 INFO] Step {step}/ 1000; acc:   7.21; ppl: 66.24; xent: 8.80; lr: 1.00000; "
                "1930/1918 tok/s;      6 sec"),
    ("maxtext", "completed step: {step}, seconds: 5.658, TFLOP/s/device: 135.158, Tokens/s/device: 8687.815, "
                "total_weights: 196608, loss: 11.689"),
    ("torchtitan", "[titan] 2025-03-12 11:10:21,511 - root - INFO - step: {step}  loss:  6.2250  memory:  1.41GiB(1.79%)  "
                   "tps: 193,831  tflops: 18.36  mfu: 1.86%"),
])
def test_findall_readers_name_a_step_too_long_to_be_one(tmp_path, name, line):
    """Was: OverflowError from the int64 step column (darknet, the console tables): a whole log unread. Now the
    line is named as one that could not be read, and the others are read."""
    head = "epoch     train_loss  time\n" if name == "console_table" else ""
    steps = ("1", "9" * 23, "3")
    path = tmp_path / "train.log"
    path.write_text(head + "".join(line.format(step=step) + "\n" for step in steps))
    [run] = get_reader(name).read([path])
    assert sorted(run.scalars["step"].unique().tolist()) == [1, 3]
    [warning] = run.warnings
    assert "1 line(s) look like" in warning.message and "99999999999999999999999" in warning.message


def test_an_olmo_metric_value_with_a_blank_inside_is_named_not_two_values(tmp_path):
    """Was: ValueError (columns of different lengths): the block's values read at once as blank-separated tokens,
    "2 31.7" two of them. Now that line is named and the rest of the block read."""
    head = "2024-08-06 09:59:26.181\tintern-studio-160750:0\tolmo.train:908\tINFO\t[step={step}/739328,epoch=0]\n"
    text = "".join(head.format(step=step) + f"    optim/total_grad_norm={grad}\n    train/CrossEntropyLoss=12.18\n"
                   for step, grad in ((1, "2 31.7"), (2, "2.317")))
    path = tmp_path / "console.log"
    path.write_text(text)
    [run] = get_reader("olmo").read([path])
    frame = run.scalars
    assert frame[frame["tag"] == "train/CrossEntropyLoss"]["step"].tolist() == [1, 2]
    assert frame[frame["tag"] == "optim/total_grad_norm"]["value"].tolist() == [2.317]
    assert "optim/total_grad_norm=2 31.7" in messages(run)


def test_a_clu_log_cut_in_its_last_line_after_a_line_read_is_that_line_named(tmp_path):
    """Was: IndexError when the last chunk, the cut line alone, had no line that could be read. Now the lines
    before it are read and the cut line is named."""
    line = "I0919 19:04:52.914754 139814060566272 logging_writer.py:35] [{step}] steps_per_second=8.07, train_loss=0.78"
    path = tmp_path / "console.log"
    cut = line.format(step=300).split(", ")[0][:-4] + "+"  # ("… [300] steps_per_second=+": its value cut)
    path.write_text("\n".join(line.format(step=step) for step in (100, 200)) + "\n" + cut)
    [run] = get_reader("clu").read([path])
    assert sorted(set(run.scalars["step"].tolist())) == [100, 200]
    assert "[300] steps_per_second=+" in messages(run) and "could not be read" in messages(run)
