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
    "tanalyze.readers.tensorboard.reader:TensorBoardReader",
    # W&B: after tensorboard, before generic CSV/JSON and text
    "tanalyze.readers.wandb.local:WandbLocalReader",
    "tanalyze.readers.wandb.export:WandbChartExportReader",
    "tanalyze.readers.wandb.export:WandbRunsTableReader",
    "tanalyze.readers.wandb.api:WandbHistoryExportReader",
    # experiment trackers' local stores
    "tanalyze.readers.mlflow.store:MLflowReader",
    "tanalyze.readers.tabular.dvclive:DVCLiveReader",
    "tanalyze.readers.tabular.sacred:SacredReader",
    "tanalyze.readers.tabular.ray_tune:RayTuneReader",
    # structured logs written by trainers (JSON, CSV), most specific first
    "tanalyze.readers.tabular.hf_trainer_state:HFTrainerStateReader",
    "tanalyze.readers.tabular.llamafactory:LlamaFactoryReader",
    "tanalyze.readers.tabular.detectron2:Detectron2Reader",
    "tanalyze.readers.tabular.detr:DetrReader",
    "tanalyze.readers.tabular.mmengine:MMEngineReader",
    "tanalyze.readers.tabular.mmdet2:MMDet2Reader",
    "tanalyze.readers.tabular.history_json:HistoryJsonReader",
    "tanalyze.readers.tabular.jsonl:JsonlReader",
    "tanalyze.readers.tabular.sb3_monitor:MonitorReader",
    "tanalyze.readers.tabular.tidy:TidyReader",
    "tanalyze.readers.tabular.csv_loggers:LightningCSVReader",
    "tanalyze.readers.tabular.csv_loggers:YoloResultsReader",
    "tanalyze.readers.tabular.yolo_txt:YoloResultsTxtReader",
    "tanalyze.readers.tabular.csv_loggers:KerasCSVReader",
    "tanalyze.readers.tabular.csv_loggers:GenericCSVReader",
    # console logs (text): after every structured format, specific before generic
    "tanalyze.readers.text.megatron:MegatronReader",
    "tanalyze.readers.text.llmc:LlmcReader",
    "tanalyze.readers.text.pytorch_lm:PyTorchLMReader",
    "tanalyze.readers.text.fairseq:FairseqReader",
    # before the HF console, which a CLU log's '[Hyperparameters] {'learning_rate': …}' line would give it
    "tanalyze.readers.text.clu:CLUReader",
    "tanalyze.readers.text.hf_console:HFConsoleReader",
    "tanalyze.readers.text.keras_console:KerasConsoleReader",
    "tanalyze.readers.text.deepspeed:DeepSpeedReader",
    "tanalyze.readers.text.modded_nanogpt:ModdedNanoGPTReader",
    "tanalyze.readers.text.build_nanogpt:BuildNanoGPTReader",
    "tanalyze.readers.text.nanogpt:NanoGPTReader",
    # before the generic reader, which takes tqdm's redraws for noise and timm's test meters alone
    "tanalyze.readers.text.tqdm_console:TqdmConsoleReader",
    "tanalyze.readers.text.timm_console:TimmConsoleReader",
    "tanalyze.readers.text.nnunet:NnUNetReader",
    "tanalyze.readers.text.darknet:DarknetReader",
    "tanalyze.readers.text.ultralytics_console:UltralyticsConsoleReader",
    "tanalyze.readers.text.console_table:ConsoleTableReader",
    "tanalyze.readers.text.sb3_console:SB3ConsoleReader",
    "tanalyze.readers.text.paddle:PaddleReader",
    "tanalyze.readers.text.opennmt:OpenNMTReader",
    "tanalyze.readers.text.espnet:ESPnetReader",
    "tanalyze.readers.text.torchtitan:TorchtitanReader",
    "tanalyze.readers.text.maxtext:MaxTextReader",
    "tanalyze.readers.text.olmo:OLMoReader",
    "tanalyze.readers.text.composer:ComposerReader",
    "tanalyze.readers.text.litgpt:LitGPTReader",
    "tanalyze.readers.text.gan_loss_log:GanLossLogReader",
    "tanalyze.readers.text.minimind:MiniMindReader",
    "tanalyze.readers.text.generic:GenericTextReader",
    # after the generic reader: a log it reads keeps it; these templates are the rest of the hand-written loops
    "tanalyze.readers.text.torch_examples:TorchExamplesReader",
    # claims nothing by content: discovery gives it the consoles of jobs that failed before any metric
    "tanalyze.readers.text.job_console:JobConsoleReader",
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
