"""The binary .wandb reader: framing, damage handling, decoding, schema against the wandb package."""

from __future__ import annotations

import sys

import pytest

from tanalyze.errors import FormatError
from tanalyze.readers.wandb._records import (
    _SCALARS,
    BLOCK,
    SCHEMA,
    WANDB_NAMES,
    read_wandb_file,
    record_class,
)
from tests.conftest import real_log
from tests.readers import wandb_make as make

ALPACA = "wandb_local/0-KaiKai-0__stanford_alpaca/wandb/run-20231102_032820-iqu955sp/run-iqu955sp.wandb"
ALPACA_ABORTED = "wandb_local/0-KaiKai-0__stanford_alpaca/wandb/run-20231104_073205-5qvjca60/run-5qvjca60.wandb"
NANO = "wandb_local/jackokeefe11__nanoGPT/wandb"


def test_real_complete_run_decodes_every_record():
    log = read_wandb_file(real_log(ALPACA))
    assert (log.records, len(log.history), len(log.stats), log.console_lines) == (11143, 1219, 156, 9755)
    assert log.framing.bad_chunks == log.framing.orphan_chunks == log.undecodable == 0
    assert log.framing.truncated_at is None and log.finished
    assert log.history[0]["train/loss"] == 1.586 and log.history[0]["_step"] == 0
    assert log.history[-1]["train/train_loss"] == 0.7055165096016353
    assert log.step_metrics == {"*": "train/global_step"}
    assert log.exit == {"exit_code": 0, "runtime": 4701}
    assert log.summary["train/loss"] == 0.3967 and log.config["learning_rate"] == 2e-05
    assert log.run["run_id"] == "iqu955sp" and log.run["project"] == "huggingface"


def test_real_aborted_run_has_no_exit_and_one_row():
    log = read_wandb_file(real_log(ALPACA_ABORTED))
    assert len(log.history) == 1 and log.exit is None and not log.finished
    assert log.history[0]["train/loss"] == 1.6227


@pytest.mark.parametrize(
    ("folder", "rows", "exit_code", "name"),
    [
        ("run-20240214_190909-ilvpsbbn/run-ilvpsbbn.wandb", 0, 255, "mini-gpt"),
        ("run-20240214_191836-mw8ngzqq/run-mw8ngzqq.wandb", 21, 0, "mini-gpt"),
        ("run-20240214_195452-kt2awly2/run-kt2awly2.wandb", 21, 0, "mini-gpt"),
    ],
)
def test_real_nanogpt_files(folder, rows, exit_code, name):
    log = read_wandb_file(real_log(f"{NANO}/{folder}"))
    assert len(log.history) == rows and log.exit["exit_code"] == exit_code
    assert log.run["display_name"] == name and log.framing.bad_chunks == 0


def test_record_spanning_blocks_is_joined(tmp_path):
    big = "x" * (3 * BLOCK)
    path = tmp_path / "run-a.wandb"
    path.write_bytes(make.frame([make.history({"a": 1.0, "_step": 0}), make.history({"note": big, "a": 2.0, "_step": 1}),
                                 make.history({"a": 3.0, "_step": 2})]))
    log = read_wandb_file(path)
    assert [row["a"] for row in log.history] == [1.0, 2.0, 3.0]
    assert log.history[1]["note"] == big


def test_damaged_block_is_skipped_and_counted_and_later_blocks_read(tmp_path):
    rows = [make.history({"loss": float(i), "_step": i}) for i in range(3000)]
    data = bytearray(make.frame(rows))
    assert len(data) > 3 * BLOCK
    data[BLOCK + 100] ^= 0xFF  # inside block 1
    path = tmp_path / "run-a.wandb"
    path.write_bytes(bytes(data))
    log = read_wandb_file(path)
    assert log.framing.bad_chunks == 1 and log.framing.bad_chunk_offsets[0] >= BLOCK
    steps = [row["_step"] for row in log.history]
    assert steps[0] == 0 and steps[-1] == 2999  # blocks after the damage are read
    lost = 3000 - len(steps)
    assert 0 < lost < 1000  # only the rest of the damaged block


def test_truncated_file_keeps_whole_records(tmp_path):
    data = make.frame([make.history({"loss": 1.0, "_step": 0}), make.history({"loss": 2.0, "_step": 1})])
    path = tmp_path / "run-a.wandb"
    path.write_bytes(data[:-5])
    log = read_wandb_file(path)
    assert [row["loss"] for row in log.history] == [1.0]
    assert log.framing.truncated_at is not None


def test_not_a_wandb_file_is_a_format_error(tmp_path):
    path = tmp_path / "run-a.wandb"
    path.write_bytes(b"PK\x03\x04 something else entirely")
    with pytest.raises(FormatError, match="no ':W&B' header") as info:
        read_wandb_file(path)
    assert info.value.path == str(path)


def test_typed_and_nested_history_values(tmp_path):
    record = record_class()()
    record.history.item.add(key="n", number=0.5)
    record.history.item.add(key="i", integer=-7)
    record.history.item.add(key="b", boolean=True)
    record.history.item.add(nested_key=["opt", "lr"], value_json="0.001")
    record.history.item.add(key="bad", value_json="{not json")
    record.history.step.num = 4
    path = tmp_path / "run-a.wandb"
    path.write_bytes(make.frame([record.SerializeToString()]))
    log = read_wandb_file(path)
    assert log.history == [{"n": 0.5, "i": -7, "b": True, "opt.lr": 0.001, "bad": None, "_step": 4}]
    assert log.bad_values == 1


def test_reading_does_not_need_the_wandb_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # any "import wandb" now fails
    log = read_wandb_file(real_log(ALPACA))
    assert len(log.history) == 1219


def test_schema_subset_matches_the_wandb_package():
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    from google.protobuf import timestamp_pb2
    from google.protobuf.descriptor import FieldDescriptor

    for ours, theirs in WANDB_NAMES.items():
        package, _, name = theirs.rpartition(".")
        message = timestamp_pb2.Timestamp if package == "google.protobuf" else getattr(pb, name)
        fields = {f.number: f for f in message.DESCRIPTOR.fields}
        for number, field_name, type_name, label, _ in SCHEMA[ours]:
            assert number in fields, f"{theirs} has no field {number} ({field_name})"
            assert fields[number].name == field_name, f"{theirs} field {number}"
            assert fields[number].is_repeated == (label == "repeated"), f"{theirs}.{field_name}"
            if type_name in _SCALARS:
                expected = {_SCALARS[type_name]} | ({FieldDescriptor.TYPE_ENUM} if type_name == "int32" else set())
                assert fields[number].type in expected, f"{theirs}.{field_name} type"
            else:
                assert fields[number].message_type is not None, f"{theirs}.{field_name} is a message"


def test_unknown_file_version_is_a_format_error(tmp_path):
    path = tmp_path / "run-a.wandb"
    path.write_bytes(b":W&B\xe1\xbe\x07" + b"\0" * 20)
    with pytest.raises(FormatError, match="unsupported W&B transaction log version 7"):
        read_wandb_file(path)


def test_empty_file_is_a_format_error(tmp_path):
    path = tmp_path / "run-a.wandb"
    path.write_bytes(b"")
    with pytest.raises(FormatError, match="empty file"):
        read_wandb_file(path)
