"""Nothing silent in the tabular readers: every numeric cell is a point, or it is counted with its reason.

Hypothesis writes a table (steps that go on, repeat, go back to a later step or
start over; numbers, nan/inf, empty and None-like cells, text; ragged rows and
rows without a usable step) in the format of each tabular reader, reads it, and
checks the balance:

* no invention: every point's value is a value of its column in the input;
* rows that cannot be read are counted exactly (ragged rows, rows without a step);
* text cells in a numeric column are counted exactly, per column; a column of text only is named;
* numeric cells of readable rows = points + the points that restarts say they replaced or dropped
  + the points that notes say were written twice (and kept once) + counter values the notes count.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanalyze.readers.tabular.csv_loggers import (
    GenericCSVReader,
    KerasCSVReader,
    LightningCSVReader,
    YoloResultsReader,
)
from tanalyze.readers.tabular.detectron2 import Detectron2Reader
from tanalyze.readers.wandb.export import WandbChartExportReader

NUMBERS = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda v: round(v, 6)),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0]),
)
CELL = st.one_of(
    NUMBERS.map(lambda v: ("number", v)),
    st.just(("empty", None)),
    st.sampled_from(["None", "null", "NA"]).map(lambda w: ("missing", w)),
    st.sampled_from(["oops", "n/a?", "1.2.3"]).map(lambda w: ("text", w)),
)


@dataclass
class Table:
    metrics: list[str]
    steps: list[object]  # an int, or a bad cell ("", "x", 2.5)
    cells: list[list[tuple[str, object]]]  # one per row, one per metric
    ragged: set[int] = field(default_factory=set)  # rows written with one field too many

    def usable(self, row: int) -> bool:
        return isinstance(self.steps[row], int) and row not in self.ragged


@st.composite
def tables(draw, names: list[str], *, bad_steps: bool = True, ragged: bool = True) -> Table:
    metrics = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    n = draw(st.integers(1, 30))
    steps: list[object] = []
    step = draw(st.integers(0, 5))
    for _ in range(n):
        move = draw(st.sampled_from(["next", "next", "next", "same", "back", "restart", "bad"]))
        if move == "next":
            step += draw(st.integers(1, 3))
        elif move == "back" and steps:
            step = max(0, step - draw(st.integers(1, 4)))
        elif move == "restart":
            step = draw(st.integers(0, 2))
        if move == "bad" and bad_steps:
            steps.append(draw(st.sampled_from(["", "x", 2.5])))
        else:
            steps.append(step)
    cells = [[draw(CELL) for _ in metrics] for _ in range(n)]
    bad_rows = draw(st.sets(st.integers(0, n - 1), max_size=3)) if ragged else set()
    if bad_rows == {n - 1}:
        bad_rows = set()  # a lone ragged last line is reported as cut off (tested in test_csv_loggers)
    return Table(metrics, steps, cells, bad_rows)


def _text(kind: str, value: object) -> str:
    if kind == "number":
        return repr(float(value))
    if kind == "empty":
        return ""
    return str(value)


def _step_text(step: object) -> str:
    return str(step) if not isinstance(step, float) else repr(step)


def write_csv(path: Path, table: Table, step_name: str, *, prefix: list[str] | None = None, pad: int = 0) -> None:
    header = [step_name, *table.metrics]
    lines = [",".join(f"{h:>{pad}}" for h in header)]
    for row, step in enumerate(table.steps):
        fields = [_step_text(step), *(_text(k, v) for k, v in table.cells[row])]
        if row in table.ragged:
            fields.append("9")
        lines.append(",".join(f"{f:>{pad}}" for f in fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def write_json_lines(path: Path, table: Table) -> None:
    out = []
    for row, step in enumerate(table.steps):
        record: dict[str, object] = {"iteration": step if isinstance(step, int) else str(step)}
        for metric, (kind, value) in zip(table.metrics, table.cells[row], strict=True):
            if kind == "number":
                record[metric] = value
            elif kind == "missing":
                record[metric] = None
            elif kind == "text":
                record[metric] = value
        out.append(json.dumps(record))  # NaN/Infinity as Python's json writes them
    path.write_text("\n".join(out) + "\n")


# --- the balance -------------------------------------------------------------------------------------------

_COUNTED = [
    re.compile(r"(\d+) earlier point\(s\) replaced"),
    re.compile(r"(\d+) point\(s\) of the abandoned attempt"),
    re.compile(r"(\d+) point\(s\) at \w+s \S+ were written twice with identical values"),
    re.compile(r"(\d+) point\(s\) were logged twice at one \w+ within a restart"),
    re.compile(r"(\d+) value\(s\) of \d+ epoch\(s\) with every validation value exactly 0"),
]


def _counted(texts: list[str]) -> int:
    return sum(int(m.group(1)) for text in texts for pattern in _COUNTED for m in pattern.finditer(text))


def _key(value: float) -> object:
    return "nan" if math.isnan(value) else value


def check_balance(table: Table, run, tag_of: dict[str, str] | None = None, *, whole_rows: bool = False) -> None:
    """``whole_rows``: a record without a step is skipped whole (JSON lines), its text cells not looked at."""
    tag_of = tag_of or {m: m for m in table.metrics}
    frame = run.scalars
    messages = [w.message for w in run.warnings]
    texts = [r.detail for r in run.restarts] + list(run.notes)
    readable = [r for r in range(len(table.steps)) if table.usable(r)]
    # rows that cannot be read are counted exactly
    ragged = len(table.ragged)
    if ragged:
        assert any(f"{ragged} row(s) have a different number of fields" in m for m in messages), messages
    bad = sum(1 for r, s in enumerate(table.steps) if not isinstance(s, int) and r not in table.ragged)
    if bad:
        assert any(re.match(rf"{bad} (row|line)\(s\) ", m) for m in messages), (bad, messages)
    cells = 0
    for column, metric in enumerate(table.metrics):
        tag = tag_of[metric]
        values = [table.cells[r][column][1] for r in readable if table.cells[r][column][0] == "number"]
        looked_at = readable if whole_rows else [r for r in range(len(table.steps)) if r not in table.ragged]
        texts_here = sum(1 for r in looked_at if table.cells[r][column][0] == "text")
        points = frame.loc[frame["tag"] == tag, "value"].tolist()
        assert not Counter(_key(v) for v in points) - Counter(_key(float(v)) for v in values), (tag, points, values)
        if texts_here and values:
            assert any(f"{texts_here} cell(s) are not numbers" in m and repr(tag) in m for m in messages) or \
                any(f"{texts_here} non-numeric cell(s) in column {tag!r}" in m for m in messages) or \
                any(f"{tag} ({texts_here})" in n for n in run.notes), (tag, messages, run.notes)
        if texts_here and not values:
            assert any(tag in n for n in run.notes + messages), (tag, run.notes, messages)
        cells += len(values)
    assert cells == len(frame) + _counted(texts), (cells, len(frame), texts)


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])
METRICS = ["loss", "acc", "val_loss", "lr", "grad_norm", "m/x"]


@SETTINGS
@given(table=tables(METRICS))
def test_generic_csv(table, tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "metrics.csv"
    write_csv(path, table, "step")
    (run,) = GenericCSVReader().read([path])
    check_balance(table, run)


@SETTINGS
@given(table=tables(METRICS))
def test_lightning_csv(table, tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "version_0" / "metrics.csv"
    write_csv(path, table, "step")
    (run,) = LightningCSVReader().read([path])
    check_balance(table, run)


@SETTINGS
@given(table=tables(sorted(["accuracy", "loss", "val_accuracy", "val_loss"])))
def test_keras_csv(table, tmp_path_factory):
    table.metrics.sort()
    path = tmp_path_factory.mktemp("run") / "training.log"
    write_csv(path, table, "epoch")
    (run,) = KerasCSVReader().read([path])
    check_balance(table, run)


@SETTINGS
@given(table=tables(["train/box_loss", "metrics/mAP50(B)", "val/box_loss", "lr/pg0"]), pad=st.sampled_from([0, 12]))
def test_yolo_csv(table, pad, tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "results.csv"
    write_csv(path, table, "epoch", pad=pad)
    (run,) = YoloResultsReader().read([path])
    check_balance(table, run)


@SETTINGS
@given(table=tables(["run-a - loss", "run-a - acc", "run-b - loss"], ragged=False))
def test_wandb_chart_export(table, tmp_path_factory):
    for row, step in enumerate(table.steps):  # the chart's x-axis: whole numbers, or rows without one
        if isinstance(step, int) and row and table.steps[row - 1] == step:
            table.steps[row] = step + 1
    path = tmp_path_factory.mktemp("run") / "wandb_export.csv"
    write_csv(path, table, "Step")
    runs = {run.name: run for run in WandbChartExportReader().read([path])}
    for name, run in runs.items():
        mine = Table([m for m in table.metrics if m.startswith(name + " - ")], table.steps,
                     [[c for m, c in zip(table.metrics, row, strict=True) if m.startswith(name + " - ")]
                      for row in table.cells])
        check_balance(mine, run, {m: m.split(" - ", 1)[1] for m in mine.metrics})


@SETTINGS
@given(table=tables(["total_loss", "lr", "loss_cls", "bbox/AP"], ragged=False))
def test_detectron2_json_lines(table, tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "metrics.json"
    write_json_lines(path, table)
    (run,) = Detectron2Reader().read([path])
    check_balance(table, run, whole_rows=True)
