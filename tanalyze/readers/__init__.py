"""The registry of readers.

One explicit, ordered list: the first reader whose ``sniff`` claims a file gets
it, so specific formats come before generic ones. Adding a format is one new
module and one line here. Entries are ``"module:Class"`` strings, imported on
first use so that ``import tanalyze`` stays fast.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from tanalyze.readers.base import HEAD_BYTES, Phase, Reader, ReadWarning, Restart, RunData

__all__ = ["READERS", "Reader", "RunData", "ReadWarning", "Restart", "Phase", "HEAD_BYTES", "get_readers", "get_reader"]

READERS: tuple[str, ...] = (
    "tanalyze.readers.tensorboard:TensorBoardReader",
    # W&B: after tensorboard, before generic CSV/JSON and text
    "tanalyze.readers.wandb_local:WandbLocalReader",
    "tanalyze.readers.wandb_export:WandbChartExportReader",
    "tanalyze.readers.wandb_export:WandbRunsTableReader",
    "tanalyze.readers.wandb_api:WandbHistoryExportReader",
    # experiment trackers' local stores
    "tanalyze.readers.mlflow:MLflowReader",
    # structured logs written by trainers (JSON, CSV), most specific first
    "tanalyze.readers.hf_trainer_state:HFTrainerStateReader",
    "tanalyze.readers.detectron2:Detectron2Reader",
    "tanalyze.readers.detr:DetrReader",
    "tanalyze.readers.mmengine:MMEngineReader",
    "tanalyze.readers.mmdet2:MMDet2Reader",
    "tanalyze.readers.csv_loggers:LightningCSVReader",
    "tanalyze.readers.csv_loggers:YoloResultsReader",
    "tanalyze.readers.csv_loggers:KerasCSVReader",
    "tanalyze.readers.csv_loggers:GenericCSVReader",
    # console logs (text): after every structured format, specific before generic
    "tanalyze.readers.megatron:MegatronReader",
    "tanalyze.readers.llmc:LlmcReader",
    "tanalyze.readers.fairseq:FairseqReader",
    "tanalyze.readers.hf_console:HFConsoleReader",
    "tanalyze.readers.deepspeed:DeepSpeedReader",
    "tanalyze.readers.modded_nanogpt:ModdedNanoGPTReader",
    "tanalyze.readers.nanogpt:NanoGPTReader",
    "tanalyze.readers.generic_text:GenericTextReader",
)


@cache
def get_readers() -> tuple[Reader, ...]:
    """Instances of every registered reader, in registry order."""
    readers = []
    for entry in READERS:
        module_name, _, class_name = entry.partition(":")
        readers.append(getattr(import_module(module_name), class_name)())
    return tuple(readers)


def get_reader(name: str) -> Reader:
    """The registered reader called ``name``; ``KeyError`` lists the known names."""
    for reader in get_readers():
        if reader.name == name:
            return reader
    raise KeyError(f"no reader called {name!r}; known: {', '.join(r.name for r in get_readers())}")
