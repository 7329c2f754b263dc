"""The ``results.txt`` of YOLOv5 before v6 (and of Ultralytics' YOLOv3): one line per epoch, no header.

``train.py`` wrote each epoch's line from its own format strings (``'%10s' * 2 + '%10.4g' * 6`` for the
training part, ``'%10.4g' * 7`` for the validation after it)::

          0/299     3.33G   0.08766   0.07192   0.02737    0.1869        46       640    0.1126   0.01245  0.003061 0.0008236   0.06712   0.05102   0.02629

epoch/last epoch, GPU memory, the epoch's mean box, objectness, class and total losses, the last batch's
targets, the image size, then precision, recall, mAP@0.5, mAP@0.5:0.95 and the validation's box,
objectness and class losses. Decisions:

* **step = the epoch** as written (0-based). Tags take the names YOLOv5's later ``results.csv`` gives the
  same columns (``train/box_loss``, ``metrics/mAP_0.5`` …; the total of the three losses is left out, as the
  csv leaves it: the parts are summed as a training loss where a run is judged), so that runs of both compare. Ultralytics' YOLOv3 wrote F1 where YOLOv5 writes mAP@0.5:0.95 (said in a note).
* The GPU memory and the last batch's target count are not curves of the run and are not read; the image
  size and the number of epochs go to hparams, with ``opt.yaml`` and ``hyp.yaml`` beside the file.
* ``--resume`` appends to the file: epochs that go back are a restart, the later write kept.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.errors import FormatError
from tanalyze.readers.base import Reader, ReadWarning, RunData
from tanalyze.readers.tabular.common import PointBuffer, load_config, read_head, read_text, settle_rewrites

__all__ = ["YoloResultsTxtReader"]

#: Where each read column goes (of the 15 fields, 0 is epoch/last; the memory, the total of the three losses, the
#: targets and the image size are no curves of their own).
TAGS = {2: "train/box_loss", 3: "train/obj_loss", 4: "train/cls_loss", 8: "metrics/precision",
        9: "metrics/recall", 10: "metrics/mAP_0.5", 11: "metrics/mAP_0.5:0.95", 12: "val/box_loss",
        13: "val/obj_loss", 14: "val/cls_loss"}
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"
_LINE = re.compile(rf"^\s*(\d+)/(\d+)\s+[\d.]+[GM]?(?:\s+(?:{_NUMBER})){{13}}\s*$", re.IGNORECASE)
_NAME = re.compile(r"^results.*\.txt$", re.IGNORECASE)
_CONFIGS = ("opt.yaml", "hyp.yaml")


def _is_results(path: Path, head: bytes) -> bool:
    lines = [line for line in head.decode("utf-8", errors="replace").splitlines()[:3] if line.strip()]
    if len(head) >= 4096:
        lines = lines[:-1] or lines  # (the last may be cut)
    return bool(lines) and all(_LINE.match(line) for line in lines)


#: More columns than any line of the shape holds: a line with more fields is told by them, not an error
_WIDTH = 24


def _epoch_table(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The epoch lines of a results.txt at once: (epochs, last epochs, image sizes, values of the TAGS columns,
    their line numbers, the line numbers of lines that are not of the shape); blank lines are neither."""
    try:
        table = pd.read_csv(io.StringIO(text), sep=r"\s+", header=None, names=range(_WIDTH), skip_blank_lines=False,
                            dtype={0: str, 1: str}, keep_default_na=False, na_values={c: ["", "nan", "NaN"]
                                                                                      for c in range(2, _WIDTH)})
    except (pd.errors.ParserError, ValueError):  # a line of more fields than any of the shape: one at a time
        lines = [line.split() for line in text.splitlines()]
        table = pd.DataFrame([fields[:_WIDTH] + [None] * (_WIDTH - len(fields[:_WIDTH])) for fields in lines])
    numbers = np.arange(1, len(table) + 1)
    if not len(table) or 0 not in table.columns:  # (nothing but blanks)
        nothing = np.empty(0, dtype=np.int64)
        return nothing, nothing, np.empty(0), np.empty((0, len(TAGS))), nothing, nothing
    present = table.notna()  # (whitespace-separated: a cell is never empty, a missing field is NaN)
    counts = present.sum(axis=1).to_numpy()
    blank = counts == 0
    first = table[0].fillna("").to_numpy(dtype=str)
    epoch, slash, last = np.char.partition(first, "/").T  # (numpy's string functions: C loops, no regex per row)
    epoch_ok = (slash == "/") & np.char.isdigit(epoch) & np.char.isdigit(last)
    values = table[list(range(2, 15))]
    numeric = values.apply(lambda column: column if pd.api.types.is_float_dtype(column)
                           else pd.to_numeric(column, errors="coerce"))
    # a value the line wrote as nan is a value (NaN already); a cell of text is no number
    unreadable = (numeric.isna() & values.notna()).any(axis=1).to_numpy()
    memory = np.char.rstrip(table[1].fillna("").to_numpy(dtype=str), "GM")
    memory_ok = pd.to_numeric(pd.Series(memory), errors="coerce").notna().to_numpy()
    ok = ((counts == 15) & present[list(range(15))].all(axis=1).to_numpy() & epoch_ok & memory_ok & ~unreadable)
    epochs = epoch[ok].astype(np.int64)
    lasts = last[ok].astype(np.int64)
    return (epochs, lasts, numeric.loc[ok, 7].to_numpy(), numeric.loc[ok, list(TAGS)].to_numpy(dtype=np.float64),
            numbers[ok], numbers[~ok & ~blank])


class YoloResultsTxtReader(Reader):
    """YOLOv5 (< v6) and Ultralytics YOLOv3 ``results.txt`` (+ ``opt.yaml``, ``hyp.yaml`` beside it)."""

    name = "yolo_txt"
    description = "YOLOv5 (< v6) / Ultralytics YOLOv3 results.txt: one headerless line per epoch (+ opt.yaml, hyp.yaml)"

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.name in _CONFIGS:
            results = sorted(p for p in path.parent.glob("results*.txt") if _NAME.match(p.name))
            return any(_is_results(p, read_head(p)) for p in results)
        return _NAME.match(path.name) is not None and _is_results(path, head)

    def group(self, files: list[Path]) -> list[list[Path]]:
        """Each results file with the configs of its folder."""
        configs = [f for f in files if f.name in _CONFIGS]
        return [[f, *configs] for f in sorted(files) if f.name not in _CONFIGS]

    def read(self, files: list[Path]) -> list[RunData]:
        configs = [f for f in files if f.name in _CONFIGS]
        path = next((f for f in files if f.name not in _CONFIGS), None)
        if path is None:
            return [RunData(warnings=[ReadWarning(str(files[0]), "YOLOv5 settings without the results.txt beside them")])]
        run = RunData()
        hparams: dict = {}
        for config in configs:
            data, warning = load_config(config)
            if warning is not None:
                run.warnings.append(warning)
            hparams.update(data or {})
        text, _ = read_text(path)
        if "\x00" in text:
            raise FormatError(path, "binary content, not a results.txt")
        epochs, lasts, image_sizes, values, rows, bad = _epoch_table(text)
        last_epoch = int(lasts[-1]) if len(lasts) else None
        image_size = int(image_sizes[-1]) if len(image_sizes) else None
        points = PointBuffer()  # line by line, each line's tags in turn: the order the file wrote them
        codes = np.array([points.code(tag) for tag in TAGS.values()], dtype=np.int64)
        width = len(codes)
        points.add_coded(np.repeat(rows, width), np.tile(codes, len(rows)), np.repeat(epochs, width), values.ravel(),
                         np.repeat(epochs.astype(np.float64), width))
        if last_epoch is not None:
            hparams.setdefault("epochs", last_epoch + 1)
            hparams.setdefault("img_size", image_size)
        if len(bad):
            run.warnings.append(ReadWarning(str(path), f"{len(bad)} line(s) not of YOLOv5's results.txt shape "
                                            "(15 columns after 'epoch/last'); skipped", location=f"line {bad[0]}",
                                            count=len(bad)))
        if not len(points) and not len(bad):
            run.warnings.append(ReadWarning(str(path), "no epoch lines"))
        run.hparams = hparams
        run.notes.append("YOLOv5 results.txt: one line per epoch, step = the epoch as written; tags as YOLOv5's "
                         "results.csv names them (Ultralytics' YOLOv3 wrote F1 where 'metrics/mAP_0.5:0.95' is read)")
        settle_rewrites(points.frame(), str(path), unit="epoch").into(run)
        return [run]
