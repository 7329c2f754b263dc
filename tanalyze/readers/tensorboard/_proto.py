"""The TensorBoard protobuf messages the event reader decodes, declared here instead of importing ``tensorboard``.

The reader needs three generated modules of the ``tensorboard`` package (``event_pb2``,
``summary_pb2`` and the hparams plugin's ``plugin_data_pb2``), and that package brings a web
server, gRPC, Werkzeug, Markdown and more. So, as :mod:`tanalyze.readers.wandb._records` does for W&B, this module
declares the subset of TensorBoard's ``.proto`` schema the reader reads and builds message classes
from it at import time, in a private descriptor pool (nothing clashes with ``tensorboard``'s own
registrations when both are imported in one process).

Field numbers are TensorBoard's wire contract (``tensorboard/compat/proto/*.proto`` and
``tensorboard/plugins/hparams/*.proto``, copied from TensorFlow's): a writer can never change them
without breaking every event file written before. Fields not declared here are skipped by the
protobuf runtime; every member of a ``oneof`` the reader inspects is declared, so ``WhichOneof``
names what was written. Enums are declared as ``int32`` (the same varint on the wire; the reader
compares numbers). Messages keep TensorBoard's names and packages under a ``tanalyze.`` prefix,
so a test compares every declared field with the installed ``tensorboard`` package when there is one.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

__all__ = ["Event", "SummaryMetadata", "HParamsPluginData", "SESSION_START", "SCHEMA", "PREFIX"]

#: Our packages are TensorBoard's with this prefix.
PREFIX = "tanalyze."

# package -> message (nested ones dotted) -> [(number, name, type, label, oneof)];
# type is a scalar name or a message's full name (ours without PREFIX, or ``google.protobuf.Value``).
SCHEMA: dict[str, dict[str, list[tuple[int, str, str, str, str | None]]]] = {
    "tensorboard": {
        "Event": [
            (1, "wall_time", "double", "", None),
            (2, "step", "int64", "", None),
            (3, "file_version", "string", "", "what"),
            (4, "graph_def", "bytes", "", "what"),
            (5, "summary", "tensorboard.Summary", "", "what"),
            (6, "log_message", "tensorboard.LogMessage", "", "what"),
            (7, "session_log", "tensorboard.SessionLog", "", "what"),
            (8, "tagged_run_metadata", "tensorboard.TaggedRunMetadata", "", "what"),
            (9, "meta_graph_def", "bytes", "", "what"),
        ],
        "LogMessage": [],  # counted, not read
        "SessionLog": [(1, "status", "int32", "", None)],  # enum SessionStatus
        "TaggedRunMetadata": [],  # counted, not read
        "Summary": [(1, "value", "tensorboard.Summary.Value", "repeated", None)],
        "Summary.Image": [  # read only by images.py (the report's images), counted by the event reader
            (1, "height", "int32", "", None),
            (2, "width", "int32", "", None),
            (3, "colorspace", "int32", "", None),
            (4, "encoded_image_string", "bytes", "", None),
        ],
        "Summary.Audio": [],  # counted, not read
        "Summary.Value": [
            (7, "node_name", "string", "", None),
            (1, "tag", "string", "", None),
            (9, "metadata", "tensorboard.SummaryMetadata", "", None),
            (2, "simple_value", "float", "", "value"),
            (3, "obsolete_old_style_histogram", "bytes", "", "value"),
            (4, "image", "tensorboard.Summary.Image", "", "value"),
            (5, "histo", "tensorboard.HistogramProto", "", "value"),
            (6, "audio", "tensorboard.Summary.Audio", "", "value"),
            (8, "tensor", "tensorboard.TensorProto", "", "value"),
        ],
        "SummaryMetadata": [(1, "plugin_data", "tensorboard.SummaryMetadata.PluginData", "", None)],
        "SummaryMetadata.PluginData": [
            (1, "plugin_name", "string", "", None),
            (2, "content", "bytes", "", None),
        ],
        "HistogramProto": [
            (1, "min", "double", "", None),
            (2, "max", "double", "", None),
            (3, "num", "double", "", None),
            (4, "sum", "double", "", None),
            (5, "sum_squares", "double", "", None),
            (6, "bucket_limit", "double", "repeated", None),
            (7, "bucket", "double", "repeated", None),
        ],
        "TensorProto": [
            (1, "dtype", "int32", "", None),  # enum DataType
            (2, "tensor_shape", "tensorboard.TensorShapeProto", "", None),
            (4, "tensor_content", "bytes", "", None),
            (13, "half_val", "int32", "repeated", None),
            (5, "float_val", "float", "repeated", None),
            (6, "double_val", "double", "repeated", None),
            (7, "int_val", "int32", "repeated", None),
            (8, "string_val", "bytes", "repeated", None),
            (10, "int64_val", "int64", "repeated", None),
            (11, "bool_val", "bool", "repeated", None),
            (16, "uint32_val", "uint32", "repeated", None),
            (17, "uint64_val", "uint64", "repeated", None),
        ],
        "TensorShapeProto": [
            (2, "dim", "tensorboard.TensorShapeProto.Dim", "repeated", None),
            (3, "unknown_rank", "bool", "", None),
        ],
        "TensorShapeProto.Dim": [(1, "size", "int64", "", None), (2, "name", "string", "", None)],
    },
    "tensorboard.hparams": {
        "HParamsPluginData": [
            (1, "version", "int32", "", None),
            (2, "experiment", "tensorboard.hparams.Experiment", "", "data"),
            (3, "session_start_info", "tensorboard.hparams.SessionStartInfo", "", "data"),
            (4, "session_end_info", "tensorboard.hparams.SessionEndInfo", "", "data"),
        ],
        "Experiment": [],  # not read
        "SessionEndInfo": [],  # not read
        "SessionStartInfo": [
            (1, "hparams", "tensorboard.hparams.SessionStartInfo.HparamsEntry", "repeated", None),
            (4, "group_name", "string", "", None),
            (5, "start_time_secs", "double", "", None),
        ],
        "SessionStartInfo.HparamsEntry": [  # map<string, google.protobuf.Value> hparams
            (1, "key", "string", "", None),
            (2, "value", "google.protobuf.Value", "", None),
        ],
    },
}

#: Messages that are the entries of a ``map`` field.
MAP_ENTRIES = {"tensorboard.hparams.SessionStartInfo.HparamsEntry"}

#: ``SessionLog.SessionStatus.START``: a writer (re)started; later events supersede earlier ones.
SESSION_START = 1

_TYPES = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "double": _TYPES.TYPE_DOUBLE,
    "float": _TYPES.TYPE_FLOAT,
    "int64": _TYPES.TYPE_INT64,
    "uint64": _TYPES.TYPE_UINT64,
    "int32": _TYPES.TYPE_INT32,
    "uint32": _TYPES.TYPE_UINT32,
    "bool": _TYPES.TYPE_BOOL,
    "string": _TYPES.TYPE_STRING,
    "bytes": _TYPES.TYPE_BYTES,
}


def _file(package: str, messages: dict[str, list[tuple[int, str, str, str, str | None]]]) -> descriptor_pb2.FileDescriptorProto:
    """One ``.proto`` file of ``SCHEMA`` (its nested messages declared inside their parents)."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"tanalyze/{package.replace('.', '_')}_subset.proto", package=PREFIX + package, syntax="proto3",
    )
    if any(field[2].startswith("google.protobuf.") for fields in messages.values() for field in fields):
        proto.dependency.append(struct_pb2.DESCRIPTOR.name)
    declared: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name, fields in messages.items():  # parents come before their nested messages
        parent, _, short = name.rpartition(".")
        message = (declared[parent].nested_type if parent else proto.message_type).add(name=short)
        declared[name] = message
        if f"{package}.{name}" in MAP_ENTRIES:
            message.options.map_entry = True
        oneofs: list[str] = []
        for number, field_name, type_name, label, oneof in fields:
            fd = message.field.add(name=field_name, number=number)
            fd.label = _TYPES.LABEL_REPEATED if label == "repeated" else _TYPES.LABEL_OPTIONAL
            if type_name in _SCALARS:
                fd.type = _SCALARS[type_name]
            else:
                fd.type = _TYPES.TYPE_MESSAGE
                fd.type_name = "." + (type_name if type_name.startswith("google.") else PREFIX + type_name)
            if oneof is not None:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                fd.oneof_index = oneofs.index(oneof)
    return proto


def _build() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    for package, messages in SCHEMA.items():
        pool.Add(_file(package, messages))
    return pool


POOL = _build()


def _message_class(name: str) -> type:
    descriptor = POOL.FindMessageTypeByName(PREFIX + name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(POOL).GetPrototype(descriptor)  # protobuf < 4.22


#: ``tensorboard.Event``: one record of an event file.
Event = _message_class("tensorboard.Event")
#: ``tensorboard.SummaryMetadata``: names the plugin that wrote a tag.
SummaryMetadata = _message_class("tensorboard.SummaryMetadata")
#: ``tensorboard.hparams.HParamsPluginData``: the hparams plugin's metadata content.
HParamsPluginData = _message_class("tensorboard.hparams.HParamsPluginData")
