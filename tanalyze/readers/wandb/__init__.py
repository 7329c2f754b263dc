"""Weights & Biases: a local run folder (``local``: the ``.wandb`` record file, ``wandb-history.jsonl``,
config and summary), the UI's chart and runs-table exports (``export``), a history saved through the
public API (``api``). ``history`` turns W&B's sparse history into tidy rows for all of them.
"""

from tanalyze.readers.wandb.api import WandbHistoryExportReader
from tanalyze.readers.wandb.export import WandbChartExportReader, WandbRunsTableReader
from tanalyze.readers.wandb.local import WandbLocalReader

__all__ = ["WandbLocalReader", "WandbChartExportReader", "WandbRunsTableReader", "WandbHistoryExportReader"]
