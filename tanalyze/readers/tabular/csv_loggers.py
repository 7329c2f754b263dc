"""CSV files written by training loggers: Lightning, Keras, Ultralytics YOLO, and any wide metrics CSV.

All four are *wide*: a header of metric names, one row per logging event, empty
cells where a metric was not logged (see :mod:`tanalyze.readers.tabular.widecsv` for
the shared rules). They differ in where the step is and which config file sits
beside them:

============  ==================================  =========================  =======================
reader        file                                step                       config beside it
============  ==================================  =========================  =======================
lightning_csv ``version_N/metrics.csv``           ``step`` column            ``hparams.yaml``
keras_csv     CSVLogger file (``training.log``)   ``epoch`` (0-based)        —
yolo_csv      ``results.csv`` (space-padded)      ``epoch`` (0-based)        ``args/hyp/opt.yaml``
csv           any metrics CSV                     step/iteration/epoch/row   ``config.json`` …
============  ==================================  =========================  =======================
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import load_config, name_list, read_head, settle_rewrites
from tanalyze.readers.tabular.widecsv import column_key, read_wide_csv, sniff_header, sniff_separator

__all__ = ["LightningCSVReader", "KerasCSVReader", "YoloResultsReader", "GenericCSVReader", "choose_step_column"]

_VERSION_DIR = re.compile(r"^version_\d+$")


def _second_line(head: bytes) -> str:
    lines = head.decode("utf-8", errors="replace").splitlines()
    return lines[1] if len(lines) > 1 else ""


class _WideCSVReader(Reader):
    """What the CSV logger readers share: one run per log file, configs beside it read as hparams."""

    cache_version = 8  # 2: n_updates / nupdates counters; total_timesteps before iterations as the step (SB3); 3: counter
    #                    names with blanks between words ("total timesteps"); 4: YOLO epochs not validated (all zeros);
    #                    5: Keras CSVLogger: an epoch logged again by the next one-epoch fit() is a new session;
    #                    6: Keras CSVLogger's ';' and tab separators; 7: a losses file's split columns as losses;
    #                    8: the epochs a YOLO results.csv holds (_epochs_written)
    #: config files read into hparams when they sit beside a log
    config_names: ClassVar[tuple[str, ...]] = ()
    #: column names (any case) that fill the epoch column
    epoch_names: ClassVar[tuple[str, ...]] = ("epoch",)
    #: the step column the format always writes (None: chosen from the header)
    step_name: ClassVar[str | None] = None
    #: every row is one whole epoch written once by its fit(), when the epoch is the step: a row at the same
    #: epoch again is that epoch run again (a new session or a resume), never a rewrite of the row
    whole_rows: ClassVar[bool] = False
    #: the characters that may separate the cells, in order of preference (the first the header holds is its)
    separators: ClassVar[str] = ","

    def is_log(self, path: Path, head: bytes) -> bool:
        """Whether ``path`` is a log of this format (by name and header)."""
        raise NotImplementedError

    def is_config(self, path: Path) -> bool:
        """A config file beside a log that this reader (and no reader before it) claims."""
        if path.name not in self.config_names:
            return False
        return any(self._claims(p) for p in _siblings(path, ".csv", ".log", ".txt"))

    def _claims(self, path: Path) -> bool:
        from tanalyze.readers import get_readers  # the registry imports this module

        head = read_head(path)
        for reader in get_readers():
            if reader.sniff(path, head):
                return reader.name == self.name
        return self.is_log(path, head)  # not registered (tests instantiate readers directly)

    def sniff(self, path: Path, head: bytes) -> bool:
        return self.is_log(path, head) or self.is_config(path)

    def group(self, files: list[Path]) -> list[list[Path]]:
        logs = sorted(f for f in files if f.name not in self.config_names)
        configs = sorted(f for f in files if f.name in self.config_names)
        if not logs:
            return [configs]
        if len(logs) == 1:
            return [logs + configs]
        return [[log] for log in logs]  # read() finds the configs beside each log

    def choose_step(self, header: list[str]) -> int | None:
        """Index of the step column in ``header`` (None: the row number is the step)."""
        if self.step_name in header:
            return header.index(self.step_name)
        return choose_step_column(header)

    def notes_for(self, header: list[str], step_column: str | None) -> list[str]:
        return []

    def read(self, files: list[Path]) -> list[RunData]:
        logs = [f for f in files if f.name not in self.config_names]
        run = RunData()
        configs = self._configs(files, logs)
        for config in configs:
            data, warning = load_config(config)
            if warning:
                run.warnings.append(warning)
            if data is not None:
                run.hparams = _merge(run.hparams, data, config.name, several=len(configs) > 1)
            if config not in files:
                run.extra_files.append(config)
        if not logs:
            where = str(configs[0]) if configs else str(files[0])
            run.warnings.append(ReadWarning(where, self.no_log_note()))
            return [run]
        log = logs[0]
        separator = sniff_separator(read_head(log), self.separators) if len(self.separators) > 1 else None
        wide = read_wide_csv(log, choose_step=self.choose_step, epoch_names=self.epoch_names,
                             separator=separator or ",")
        frame = wide.points.frame()
        frame = self.adjust(frame, run)
        unit = self._unit(wide)
        settled = settle_rewrites(frame, str(log), unit=unit, increasing=wide.increasing,
                                  whole_rows=self.whole_rows and unit == "epoch")
        run.scalars = settled.frame
        run.restarts.extend(settled.restarts)
        run.phases.extend(settled.phases)
        run.warnings.extend(wide.warnings)
        run.warnings.extend(settled.warnings)
        if self.step_name and self.step_name not in wide.header:
            fallback = f"{wide.step_column!r}" if wide.step_column else "the row number"
            run.warnings.append(ReadWarning(str(log), f"no {self.step_name!r} column, which this format always "
                                            f"writes; {fallback} used as the step"))
        run.notes.extend(self.notes_for(wide.header, wide.step_column))
        run.notes.extend(wide.notes)
        run.notes.extend(settled.notes)
        if wide.rows == 0:
            run.warnings.append(ReadWarning(str(log), "no data rows below the header"))
        return [run]

    def adjust(self, frame: pd.DataFrame, run: RunData) -> pd.DataFrame:
        """Format-specific fix-ups of the points before last-write-wins (default: none)."""
        return frame

    @staticmethod
    def _unit(wide) -> str:
        """What a step counts: ``epoch`` when the epoch column is the step (one row per epoch), else ``step``."""
        column = (wide.step_column or "").lower()
        return "epoch" if column in EPOCH_NAMES and wide.batch_column is None else "step"

    def no_log_note(self) -> str:
        return "a config file without the log beside it: no metrics"

    def _configs(self, files: list[Path], logs: list[Path]) -> list[Path]:
        found = [f for f in files if f.name in self.config_names]
        folder = logs[0].parent if logs else (found[0].parent if found else None)
        if folder is not None:
            for name in self.config_names:
                candidate = folder / name
                if candidate not in found and candidate.is_file():
                    found.append(candidate)
        return sorted(found, key=lambda p: self.config_names.index(p.name))


def _siblings(path: Path, *suffixes: str) -> list[Path]:
    try:
        return sorted(p for p in path.parent.iterdir() if p.suffix.lower() in suffixes and p.is_file())
    except OSError:
        return []


def _merge(hparams: Any, data: dict[str, Any], name: str, *, several: bool) -> dict[str, Any]:
    """Config files merge flat; a key two files disagree on keeps both, the later under ``file:key``."""
    merged = dict(hparams)
    for key, value in data.items():
        if key in merged and merged[key] != value and several:
            merged[f"{name}:{key}"] = value
        else:
            merged[key] = value
    return merged


# --- Lightning -----------------------------------------------------------------------------


class LightningCSVReader(_WideCSVReader):
    """PyTorch Lightning ``CSVLogger``: ``version_N/metrics.csv`` and ``hparams.yaml``.

    Rows are sparse: a train row, a validation row and an epoch-end row can share
    one step; each cell becomes one point at that row's ``step``. ``epoch`` is a
    column, not a tag; ``LearningRateMonitor`` rows leave it empty, and it is
    filled from another row at the same step. A resumed job that appended to the
    same file re-logs steps: last write wins, with a restart recorded. Separate
    ``version_N`` folders stay separate runs.
    """

    name = "lightning_csv"
    description = "PyTorch Lightning CSVLogger metrics.csv (+ hparams.yaml)"
    config_names = ("hparams.yaml",)

    def is_log(self, path: Path, head: bytes) -> bool:
        if path.name != "metrics.csv":
            return False
        if not head.strip():  # empty: the job stopped before its first flush; claimed so that it gets a warning
            return bool(_VERSION_DIR.match(path.parent.name)) or (path.parent / "hparams.yaml").is_file()
        header = sniff_header(head)
        if not header or "step" not in header:
            return False
        return bool(_VERSION_DIR.match(path.parent.name)) or (path.parent / "hparams.yaml").is_file()

    def is_config(self, path: Path) -> bool:
        if path.name != "hparams.yaml":
            return False
        metrics = path.parent / "metrics.csv"
        if metrics.is_file():
            return self.is_log(metrics, read_head(metrics))
        if not _VERSION_DIR.match(path.parent.name):
            return False
        # a version folder holding only hparams.yaml: a job that stopped before its first flush,
        # unless another logger (TensorBoard) wrote beside it
        try:
            return not any(p.name.startswith("events.out.tfevents") for p in path.parent.iterdir())
        except OSError:
            return False

    step_name = "step"

    def adjust(self, frame: pd.DataFrame, run: RunData) -> pd.DataFrame:
        note = _late_start(frame)
        if note:
            run.notes.append(note)
        missing = frame["epoch"].isna().to_numpy()
        if not missing.any():
            return frame
        epochs = frame["epoch"].to_numpy(dtype=np.float64, copy=True)
        all_steps = frame["step"].to_numpy()
        known_steps, first = np.unique(all_steps[~missing], return_index=True)
        known_epochs = epochs[~missing][first]
        steps = all_steps[missing]
        at = np.clip(np.searchsorted(known_steps, steps), 0, max(len(known_steps) - 1, 0))
        found = known_steps[at] == steps if len(known_steps) else np.zeros(len(steps), dtype=bool)
        filled = np.where(found, known_epochs[at] if len(known_steps) else np.nan, np.nan)
        epochs[missing] = filled
        n_filled = int((~np.isnan(filled)).sum())
        if n_filled:
            run.notes.append(
                f"epoch was empty for {int(missing.sum())} point(s) (LearningRateMonitor rows); "
                f"{n_filled} filled from rows at the same step"
            )
        return frame.assign(epoch=epochs)

    def no_log_note(self) -> str:
        return "hparams.yaml but no metrics.csv: the job wrote no metrics (stopped before the logger's first flush?)"


def _late_start(frame: pd.DataFrame) -> str | None:
    """A note when the first logged step is far beyond the logging interval: a job resumed into a new folder."""
    steps = _distinct(frame["step"].to_numpy())
    if len(steps) < 3:
        return None
    interval = float(np.median(np.diff(steps)))
    first = int(steps[0])
    if first <= max(20 * interval, 1000):
        return None
    epochs = frame.loc[frame["step"] == first, "epoch"].dropna()
    at_epoch = f" (epoch {epochs.iloc[0]:g})" if len(epochs) else ""
    return (f"starts at step {first}{at_epoch}: a job resumed from a checkpoint; its earlier steps are in "
            "another version folder, if kept")


def _distinct(steps: np.ndarray) -> np.ndarray:
    """The distinct steps, sorted (one pass when they are written in order, as they nearly always are)."""
    ordered = steps if len(steps) < 2 or bool((steps[1:] >= steps[:-1]).all()) else np.sort(steps)
    if not len(ordered):
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


# --- Keras ---------------------------------------------------------------------------------


class KerasCSVReader(_WideCSVReader):
    """Keras ``CSVLogger``: ``epoch`` first, then the metrics in sorted order, one row per epoch.

    Often named ``training.log``; recognised by content. The step is the epoch
    as written (0-based); the ``epoch`` column holds it too.

    Each ``fit()`` numbers its epochs from 0 (or its ``initial_epoch``), and
    ``CSVLogger(append=True)`` appends its rows to the same file, one row at the
    end of each epoch: a row whose epoch repeats or goes back is always the next
    ``fit()``. Back to the first epoch of the session (epoch 0 again after a run
    of ``fit(epochs=1)`` calls, each row epoch 0) is a new session, placed after
    the previous one on the step axis; back to a later epoch is a resume from a
    checkpoint (a restart: the later rows replace what they log again). See
    :mod:`tanalyze.readers.phases`.
    """

    name = "keras_csv"
    description = "Keras CSVLogger file (epoch,<sorted metrics>), e.g. training.log"
    separators = ",;\t"  # CSVLogger(separator=";") and ("\t") too

    def is_log(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() not in (".log", ".csv", ".txt", ".tsv"):
            return False
        separator = sniff_separator(head, self.separators)
        header = sniff_header(head, self.separators)
        if separator is None or not header or header[0] != "epoch" or len(header) < 2:
            return False
        if not all(re.fullmatch(r"[A-Za-z_][\w./-]*", name) for name in header[1:]):
            return False
        first = _second_line(head).split(separator, 1)[0].strip()
        if not first.isdigit():
            return False
        if path.suffix.lower() != ".csv":
            return True
        # as a .csv it must look like Keras wrote it (metrics sorted, epochs from 0), else it is a generic CSV
        return header[1:] == sorted(header[1:]) and first == "0"

    step_name = "epoch"
    whole_rows = True

    def notes_for(self, header: list[str], step_column: str | None) -> list[str]:
        return ["one row per epoch: step = epoch as written (0-based); the epoch column holds it too"]


# --- Ultralytics YOLO ----------------------------------------------------------------------


class YoloResultsReader(_WideCSVReader):
    """Ultralytics YOLOv5/v8 ``results.csv``: space-padded cells, one row per epoch.

    Tags keep their names (``metrics/mAP50(B)``); step = epoch as written
    (0-based before Ultralytics 8.1, 1-based since). The ``time`` column of 8.1+
    is seconds since the start: it becomes ``time/per_epoch`` and the wall time
    (see :func:`~tanalyze.readers.tabular.common.derive_step_times`). ``args.yaml``
    (v8), ``opt.yaml`` and ``hyp.yaml`` (v5) become hparams.
    """

    name = "yolo_csv"
    description = "Ultralytics YOLO results.csv (+ args.yaml / opt.yaml / hyp.yaml)"
    config_names = ("args.yaml", "opt.yaml", "hyp.yaml")

    def is_log(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv":
            return False
        header = sniff_header(head)
        if not header or header[0] != "epoch":
            return False
        return any(h.startswith("train/") for h in header) and any(h.startswith("metrics/") for h in header)

    def is_config(self, path: Path) -> bool:
        if path.name not in self.config_names:
            return False
        results = path.parent / "results.csv"
        return results.is_file() and self.is_log(results, read_head(results))

    step_name = "epoch"

    def notes_for(self, header: list[str], step_column: str | None) -> list[str]:
        # YOLOv5 and Ultralytics < 8.1 write 0-based epochs, 8.1 and later 1-based (with a cumulative ``time``)
        return ["one row per epoch: step = epoch as written; the epoch column holds it too"]

    def adjust(self, frame: pd.DataFrame, run: RunData) -> pd.DataFrame:
        """Epochs without a validation: Ultralytics writes 0 in every ``val/*`` and ``metrics/*`` cell of an epoch
        it did not validate (``val=False``, or validation only at the end); those zeros are no measurements. The
        first and last epoch written are kept (``_epochs_written``): as many as the configuration's ``epochs`` is a
        training that ran to its end (a row is written as each epoch ends)."""
        if len(frame):
            run.hparams["_epochs_written"] = [int(frame["step"].min()), int(frame["step"].max())]
        tags = frame["tag"].astype(str)
        validation = tags.str.startswith(("val/", "metrics/"))
        if not validation.any():
            return frame
        zero = frame["value"].eq(0) | ~validation
        steps = frame.loc[validation, "step"]
        all_zero = zero[validation].groupby(steps).all()
        skipped = all_zero.index[all_zero.to_numpy()]
        if not len(skipped):
            return frame
        dropped = validation & frame["step"].isin(skipped)
        run.notes.append(f"{int(dropped.sum())} value(s) of {len(skipped)} epoch(s) with every validation value exactly 0 "
                         "(epochs Ultralytics did not validate: val=False, or validation at the end only) left out of "
                         "val/* and metrics/*")
        return frame[~dropped]


# --- any wide metrics CSV ------------------------------------------------------------------

#: step-like column names, best first (compared in lower case, whole name, then the part after the last '/')
STEP_NAMES = (
    "step", "global_step", "globalstep", "steps", "trainer/global_step",
    "total_timesteps",  # (reinforcement learning's x-axis: Stable-Baselines3's time/total_timesteps, before its
    # time/iterations of rollouts)
    "iteration", "iterations", "iter", "iters", "it", "num_updates", "updates", "update", "timesteps", "timestep",
)
EPOCH_NAMES = ("epoch", "epochs")
_LOG_NAME = re.compile(r"metric|log|history|progress|result|loss|stats|scalar|curve", re.IGNORECASE)
_METRIC = re.compile(r"loss|acc|lr|learning|reward|score|err|perplex|ppl|f1|map|auc|bleu|rouge|wer|return",
                     re.IGNORECASE)
#: a file whose name says its columns are losses (``losses.csv``, ``loss_history.csv``): a column named for its
#: split alone (``train``, ``valid``) is that split's loss
_LOSS_FILE = re.compile(r"loss", re.IGNORECASE)


def choose_step_column(header: list[str]) -> int | None:
    """Index of the column to use as the step (a step/iteration name, else an epoch name), or None."""
    lowered = [column_key(h) for h in header]
    last = [h.rsplit("/", 1)[-1] for h in lowered]
    for names in (STEP_NAMES, EPOCH_NAMES):
        for candidates in (lowered, last):
            for name in names:
                if name in candidates:
                    return candidates.index(name)
    return None


def _is_wandb_export(path: Path, header: list[str]) -> bool:
    if path.name.lower().startswith("wandb"):
        return True
    if "Name" in header and "State" in header:
        return True
    return any(" - " in h for h in header) and any(h.endswith(("__MIN", "__MAX")) for h in header)


class GenericCSVReader(_WideCSVReader):
    """Any wide metrics CSV with a step-like column (step, iteration, epoch …).

    Numeric columns become tags; text columns are skipped and named in a note.
    A CSV without a step-like column is read only when its name says it is a log
    (``metrics``, ``history``, ``progress`` …) and its first row is all numbers;
    the row number is then the step. ``config.json``/``config.yaml``/``hparams``
    files beside it become hparams. W&B exports are left to the W&B reader.
    """

    name = "csv"
    description = "wide metrics CSV with a step/iteration/epoch column (+ config.json beside it)"
    config_names = ("config.json", "config.yaml", "hparams.yaml", "hparams.json", "args.json", "args.yaml",
                    "params.json", "params.yaml")
    epoch_names = EPOCH_NAMES

    def is_log(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".csv":
            return False
        header = sniff_header(head)
        if not header or _is_wandb_export(path, header):
            return False
        step = choose_step_column(header)
        if step is not None:
            return len(header) >= 2
        named = not any(_is_number_text(h) for h in header if h)  # (a first line of numbers is no header)
        if not _LOG_NAME.search(path.stem) or not (any(_METRIC.search(h) for h in header)
                                                   or (_LOSS_FILE.search(path.stem) and named)):
            return False
        cells = _second_line(head).split(",")
        return len(cells) == len(header) and all(_is_number_text(c) for c in cells)

    def read(self, files: list[Path]) -> list[RunData]:
        runs = super().read(files)
        logs = [f for f in files if f.name not in self.config_names]
        if logs and _LOSS_FILE.search(logs[0].stem):
            for run in runs:
                _name_losses(run, logs[0].name)
        return runs

    def notes_for(self, header: list[str], step_column: str | None) -> list[str]:
        if step_column is None:
            return ["no step, iteration or epoch column: the row number (from 0) is the step"]
        if step_column.lower() in EPOCH_NAMES:
            return [f"one row per epoch: step = {step_column!r} as written; the epoch column holds it too"]
        return []


def _name_losses(run: RunData, file: str) -> None:
    """In a file whose name says it holds losses, a column that names no measure (``train``, ``valid``, ``test``)
    becomes ``loss/<column>``: the file's name is what says it is a loss."""
    frame = run.scalars
    if not isinstance(frame, pd.DataFrame) or not len(frame):
        return
    tags = [str(tag) for tag in frame["tag"].cat.categories] if isinstance(frame["tag"].dtype, pd.CategoricalDtype) \
        else sorted(set(frame["tag"].astype(str)))
    renamed = {tag: f"loss/{tag}" for tag in tags if not _METRIC.search(tag) and f"loss/{tag}" not in tags}
    if not renamed:
        return
    run.scalars = frame.assign(tag=frame["tag"].astype(str).replace(renamed).astype("category"))
    run.notes.append(f"{file} names its columns' values losses: {name_list([f'{a} as {b}' for a, b in renamed.items()])}")


def _is_number_text(cell: str) -> bool:
    text = cell.strip()
    if not text:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True
