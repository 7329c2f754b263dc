"""The TensorBoard messages tanalyze declares itself: the same wire contract as the ``tensorboard`` package
(field by field, and by decoding what tensorboard's own classes wrote), and event files read without it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.json_format import MessageToDict

from tanalyze.readers.tensorboard._proto import (
    MAP_ENTRIES,
    POOL,
    PREFIX,
    SCHEMA,
    SESSION_START,
    Event,
    HParamsPluginData,
    SummaryMetadata,
)
from tanalyze.readers.tensorboard.reader import TensorBoardReader, head_tags
from tests.conftest import SAMPLE_RUNS
from tests.readers.test_tensorboard import by_tag, tbparse_scalars

event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
plugin_data_pb2 = pytest.importorskip("tensorboard.plugins.hparams.plugin_data_pb2")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")


def theirs(name: str):
    """tensorboard's descriptor of one message (its modules are imported above, so it is in the default pool)."""
    return descriptor_pool.Default().FindMessageTypeByName(name)


def declared_messages() -> list[str]:
    return [f"{package}.{name}" for package, messages in SCHEMA.items() for name in messages]


# ---------------------------------------------------------------- the schema, field by field

@pytest.mark.parametrize("name", declared_messages())
def test_every_declared_field_is_tensorboards(name):
    ours, tb = POOL.FindMessageTypeByName(PREFIX + name), theirs(name)
    assert ours.GetOptions().map_entry == tb.GetOptions().map_entry == (name in MAP_ENTRIES)
    for field in ours.fields:
        other = tb.fields_by_number.get(field.number)
        assert other is not None, f"{name} has no field {field.number} ({field.name})"
        assert other.name == field.name, f"{name} field {field.number}"
        assert other.is_repeated == field.is_repeated, f"{name}.{field.name} label"
        if other.type == FieldDescriptor.TYPE_ENUM:
            assert field.type == FieldDescriptor.TYPE_INT32, f"{name}.{field.name}: an enum is read as int32"
        else:
            assert other.type == field.type, f"{name}.{field.name} type"
        if field.message_type is not None:
            assert field.message_type.full_name.removeprefix(PREFIX) == other.message_type.full_name, \
                f"{name}.{field.name} message type"
        ours_oneof = field.containing_oneof.name if field.containing_oneof else None
        tb_oneof = other.containing_oneof.name if other.containing_oneof else None
        assert ours_oneof == tb_oneof, f"{name}.{field.name} oneof"


@pytest.mark.parametrize("name", declared_messages())
def test_every_oneof_has_all_its_members(name):
    """An undeclared member would make WhichOneof answer None for what a writer did write."""
    ours, tb = POOL.FindMessageTypeByName(PREFIX + name), theirs(name)
    for oneof in ours.oneofs:
        assert {f.number for f in oneof.fields} == {f.number for f in tb.oneofs_by_name[oneof.name].fields}, \
            f"{name}.{oneof.name}"


def test_session_start_is_tensorboards():
    assert SESSION_START == event_pb2.SessionLog.START


def test_our_pool_is_private():
    """tensorboard's registrations and ours live side by side: same wire contract, different classes."""
    assert Event.DESCRIPTOR.full_name == "tanalyze.tensorboard.Event"
    assert Event is not event_pb2.Event
    assert theirs("tensorboard.Event") is event_pb2.Event.DESCRIPTOR
    with pytest.raises(KeyError):
        descriptor_pool.Default().FindMessageTypeByName("tanalyze.tensorboard.Event")


# ---------------------------------------------------------------- decoding what tensorboard's classes wrote

def declared_part(data: dict, descriptor) -> dict:
    """``data`` (MessageToDict of a tensorboard message) without the fields ``descriptor`` does not declare."""
    out = {}
    for key, value in data.items():
        field = descriptor.fields_by_name.get(key)
        if field is None:
            continue
        sub = field.message_type
        if sub is not None and not sub.GetOptions().map_entry and not sub.full_name.startswith("google.protobuf."):
            value = [declared_part(v, sub) for v in value] if field.is_repeated else declared_part(value, sub)
        out[key] = value
    return out


def as_dict(message) -> dict:
    return MessageToDict(message, preserving_proto_field_name=True, use_integers_for_enums=True)


def assert_decodes_the_same(tb_message, our_class) -> None:
    ours = our_class.FromString(tb_message.SerializeToString())
    assert as_dict(ours) == declared_part(as_dict(tb_message), ours.DESCRIPTOR)
    for oneof in ours.DESCRIPTOR.oneofs:
        assert ours.WhichOneof(oneof.name) == tb_message.WhichOneof(oneof.name)


def summary_event():
    event = event_pb2.Event(wall_time=1.7e9 + 0.25, step=42)
    event.source_metadata.writer = "undeclared"  # skipped, not an error
    scalar = event.summary.value.add(tag="loss", simple_value=0.5)
    scalar.metadata.plugin_data.plugin_name = "scalars"
    scalar.metadata.plugin_data.content = b"\x08\x01"
    scalar.metadata.display_name = "undeclared"
    event.summary.value.add(node_name="old/node", obsolete_old_style_histogram=b"\x01\x02")
    histo = event.summary.value.add(tag="weights").histo
    histo.min, histo.max, histo.num, histo.sum, histo.sum_squares = -1.5, 2.5, 10.0, 3.25, 9.5
    histo.bucket_limit.extend([-1.0, 0.0, 2.5])
    histo.bucket.extend([2.0, 5.0, 3.0])
    tensor = event.summary.value.add(tag="everything").tensor
    tensor.dtype = 19
    tensor.version_number = 7  # undeclared
    dim = tensor.tensor_shape.dim.add(size=2, name="rows")
    tensor.tensor_shape.dim.add(size=3)
    assert dim.size == 2
    tensor.tensor_content = b"\x00\x3c\x00\x40"
    tensor.half_val.extend([0x3C00, 0x4000])
    tensor.float_val.extend([1.5, -2.0])
    tensor.double_val.extend([1e300, -0.0])
    tensor.int_val.extend([-3, 2**31 - 1])
    tensor.string_val.extend([b"caf\xc3\xa9", b"\xff not utf-8"])
    tensor.int64_val.extend([-(2**40)])
    tensor.bool_val.extend([True, False])
    tensor.uint32_val.extend([2**32 - 1])
    tensor.uint64_val.extend([2**64 - 1])
    tensor.scomplex_val.extend([1.0, 2.0])  # undeclared
    event.summary.value.add(tag="picture").image.encoded_image_string = b"\x89PNG"
    event.summary.value.add(tag="sound").audio.sample_rate = 16000.0
    return event


def test_a_summary_event_decodes_like_tensorboards():
    event = summary_event()
    assert_decodes_the_same(event, Event)
    ours = Event.FromString(event.SerializeToString())
    assert [v.WhichOneof("value") for v in ours.summary.value] == [
        "simple_value", "obsolete_old_style_histogram", "histo", "tensor", "image", "audio"]
    assert list(ours.summary.value[3].tensor.uint64_val) == [2**64 - 1]
    assert ours.summary.value[3].tensor.string_val[1] == b"\xff not utf-8"


@pytest.mark.parametrize("what", ["file_version", "graph_def", "log_message", "session_log",
                                  "tagged_run_metadata", "meta_graph_def"])
def test_each_kind_of_event_decodes_like_tensorboards(what):
    event = event_pb2.Event(wall_time=1.7e9, step=3)
    if what == "file_version":
        event.file_version = "brain.Event:2"
    elif what in ("graph_def", "meta_graph_def"):
        setattr(event, what, b"\x0a\x03abc")
    elif what == "log_message":
        event.log_message.level = event_pb2.LogMessage.WARN
        event.log_message.message = "careful"
    elif what == "session_log":
        event.session_log.status = event_pb2.SessionLog.START
        event.session_log.checkpoint_path = "ckpt"
    else:
        event.tagged_run_metadata.tag = "step3"
        event.tagged_run_metadata.run_metadata = b"\x01"
    assert_decodes_the_same(event, Event)


def test_summary_metadata_decodes_like_tensorboards():
    metadata = summary_pb2.SummaryMetadata(display_name="Loss", summary_description="d", data_class=1)
    metadata.plugin_data.plugin_name = "histograms"
    metadata.plugin_data.content = b"\x00\xff"
    assert_decodes_the_same(metadata, SummaryMetadata)
    assert SummaryMetadata.FromString(metadata.SerializeToString()).plugin_data.plugin_name == "histograms"


def test_hparams_plugin_data_decodes_like_tensorboards():
    data = plugin_data_pb2.HParamsPluginData(version=0)
    start = data.session_start_info
    start.hparams["lr"].number_value = 3e-4
    start.hparams["optimizer"].string_value = "adam"
    start.hparams["nesterov"].bool_value = True
    start.hparams["layers"].list_value.values.add().number_value = 64
    start.hparams["nothing"].null_value = 0
    start.group_name, start.start_time_secs, start.model_uri = "g", 1.7e9, "undeclared"
    assert_decodes_the_same(data, HParamsPluginData)
    hparams = HParamsPluginData.FromString(data.SerializeToString()).session_start_info.hparams
    assert {key: MessageToDict(hparams[key]) for key in hparams} == {
        "lr": 3e-4, "optimizer": "adam", "nesterov": True, "layers": [64], "nothing": None}
    for other in ("experiment", "session_end_info"):
        data = plugin_data_pb2.HParamsPluginData()
        getattr(data, other).SetInParent()
        if other == "session_end_info":
            data.session_end_info.status = 1
        assert_decodes_the_same(data, HParamsPluginData)


# ---------------------------------------------------------------- reading without the tensorboard package

def event_files(tmp_path: Path) -> dict[str, Path]:
    """Two sample runs' event files (torch's SummaryWriter; Keras's TF2 tensors) and one of tensorboardX's hparams."""
    from tensorboardX import SummaryWriter

    with SummaryWriter(str(tmp_path / "hp")) as writer:
        writer.add_hparams({"lr": 0.01, "optimizer": "sgd", "layers": 3}, {"hp/loss": 0.5})
    [hp_file] = [p for p in (tmp_path / "hp").rglob("*tfevents*") if p.parent != tmp_path / "hp"]
    return {
        "torch": next((SAMPLE_RUNS / "normal_tensorboard").glob("*tfevents*")),
        "keras": next((SAMPLE_RUNS / "overfit_keras" / "train").glob("*tfevents*")),
        "hparams": hp_file,
    }


def test_event_files_are_read_without_tensorboard(tmp_path, monkeypatch):
    """Scalars (simple values and TF2 tensors), histograms and hparams, with tensorboard unimportable,
    are what tbparse (which needs tensorboard) reads from the same files; the tags discovery sees are
    tensorboard's own loader's."""
    from tbparse import SummaryReader
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    files = event_files(tmp_path)
    expected_scalars = {key: by_tag(tbparse_scalars(path)) for key, path in files.items()}
    expected_histograms = SummaryReader(str(files["torch"]), pivot=False).histograms
    expected_head_tags = {key: tuple(dict.fromkeys(value.tag for event in LegacyEventFileLoader(str(path)).Load()
                                                   for value in event.summary.value))
                          for key, path in files.items()}
    for name in [name for name in sys.modules if name.split(".")[0] == "tensorboard"] + ["tensorboard"]:
        monkeypatch.setitem(sys.modules, name, None)  # any import of it now fails, even of a loaded module
    with pytest.raises(ImportError):
        from tensorboard.compat.proto.summary_pb2 import SummaryMetadata  # noqa: F401

    runs = {key: TensorBoardReader().read([path])[0] for key, path in files.items()}
    # discovery's look at a file's first records (here the whole file)
    assert {key: head_tags(path.read_bytes()) for key, path in files.items()} == expected_head_tags
    for key, run in runs.items():
        assert not run.warnings, (key, run.warnings)
        assert by_tag(run.scalars) == expected_scalars[key], key
    assert len(runs["torch"].scalars) > 1000 and len(runs["keras"].scalars) > 10
    histograms = runs["torch"].histograms.sort_values(["tag", "step"], kind="stable")
    expected_histograms = expected_histograms.sort_values(["tag", "step"], kind="stable")  # tbparse: by tag
    assert len(histograms) == len(expected_histograms) > 0
    for mine, row in zip(histograms.itertuples(index=False), expected_histograms.itertuples(index=False),
                         strict=True):
        assert (mine.tag, mine.step) == (row.tag, row.step)
        np.testing.assert_array_equal(mine.bucket_limits, row.limits)
        np.testing.assert_array_equal(mine.bucket_counts, row.counts)
    assert runs["hparams"].hparams == {"lr": 0.01, "optimizer": "sgd", "layers": 3.0}
