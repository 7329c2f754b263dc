"""W&B web UI CSV exports: chart exports (one run per '<run> - <metric>') and runs-table exports."""

from __future__ import annotations

import numpy as np
import pytest

from tanalyze.discover import discover
from tanalyze.logs import load
from tanalyze.readers.wandb.export import (
    WandbChartExportReader,
    WandbRunsTableReader,
    split_config_summary,
    split_run_metric,
)

CHART = "wandb_csv_export/druidowm__nanoGPT"
TABLE = "wandb_csv_export/Lucas-longxutang__Comp3242_Group_Project_nanoGPT/training_records"


def points(logs, run, tag):
    rows = logs.scalars[(logs.scalars["run"] == run) & (logs.scalars["tag"] == tag)]
    return list(zip(rows["step"].tolist(), rows["value"].tolist(), strict=True))


@pytest.fixture(scope="module")
def chart():
    from tests.conftest import REAL_LOGS

    if not (REAL_LOGS / CHART).is_dir():
        pytest.skip(f"real-log corpus not found at {REAL_LOGS}")
    return load(REAL_LOGS / CHART / "wandb_export.csv")


@pytest.mark.parametrize(
    ("run", "n", "first", "middle", "last"),
    [
        ("gpt2_last_char_to_char1729642919.4054031", 51, 25.48284149169922, (25, 3.998175621032715),
         (50, 3.7747888565063477)),
        ("gpt2_augmented_char_to_token1729630560.5729918", 57, 10.986520767211914, (28, 3.546323299407959),
         (56, 3.8689441680908203)),
        ("gpt2_last_char_token_to_char1729587337.8266432", 166, 24.70099639892578, (83, 8.032105445861816),
         (166, 12.2328462600708)),
        ("gpt2_char_to_token1729578574.2848036", 150, 10.944732666015625, (75, 3.9327807426452637),
         (150, 4.238534450531006)),
        ("gpt2_char_to_token1729534595.422701", 128, 10.993303298950195, (64, 7.525652885437012),
         (127, 6.962632656097412)),
        ("gpt2", 386, 10.95404052734375, (193, 3.316502094268799), (385, 3.2849113941192627)),
        ("gpt2_last_char_token_to_token1729493675.529459", 118, 10.9784517288208, (59, 3.4543707370758057),
         (117, 3.365077495574951)),
        ("gpt2_char_to_token1729491541.2756786", 128, 10.945090293884277, (64, 5.2371320724487305),
         (127, 6.8979668617248535)),
    ],
)
def test_chart_export_runs(chart, run, n, first, middle, last):
    name = f"wandb_export.csv/{run}"
    loss = points(chart, name, "train/loss")
    assert len(loss) == n
    assert loss[0] == (0, first) and last == loss[-1]
    assert middle in loss
    assert set(chart.scalars[chart.scalars["run"] == name]["tag"]) == {"train/loss"}


def test_chart_export_names_notes_and_gaps(chart):
    assert len(chart.runs) == 8
    info = chart.runs["wandb_export.csv/gpt2"]
    assert info.format == "wandb-chart-csv"
    assert any("W&B's _step counter" in n for n in info.notes)
    assert any("train/loss__MIN, train/loss__MAX equal the value at every step" in n for n in info.notes)
    # an empty cell inside a run's range is a missing point, not a value
    steps = [s for s, _ in points(chart, "wandb_export.csv/gpt2_char_to_token1729578574.2848036", "train/loss")]
    assert 147 not in steps and 146 in steps and 148 in steps
    assert all(not i.warnings for i in chart.runs.values())


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (["a - loss", "a - loss__MIN"], [("a", "loss", ""), ("a", "loss", "__MIN")]),
        (["lr=1e-3 - bs 64 - train/loss", "base - train/loss"],
         [("lr=1e-3 - bs 64", "train/loss", ""), ("base", "train/loss", "")]),
        (["x - y - loss"], [("x - y", "loss", "")]),
        # a metric with " - " in its name stays whole when the run names are seen with other metrics
        (["r1 - acc - top1", "r1 - loss", "r2 - acc - top1", "r2 - loss"],
         [("r1", "acc - top1", ""), ("r1", "loss", ""), ("r2", "acc - top1", ""), ("r2", "loss", "")]),
        # nothing tells them apart: the last " - " splits (run names hold " - " more often than metric keys)
        (["r1 - acc - top1", "r2 - acc - top1"], [("r1 - acc", "top1", ""), ("r2 - acc", "top1", "")]),
        (["no separator"], None),
        (["a - "], None),
    ],
)
def test_split_run_metric(columns, expected):
    assert split_run_metric(columns) == expected


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_chart_bands_kept_when_downsampled_and_bad_cells_counted(tmp_path):
    path = write(tmp_path, "export.csv", (
        '"Step","run a - loss","run a - loss__MIN","run a - loss__MAX","b - loss"\n'
        '"0","2.0","1.5","2.5",""\n'
        '"10","1.0","1.0","1.0","oops"\n'
        '"20","","","","0.5"\n'
        '"30","NaN","NaN","NaN","0.25"\n'
        '"40","1","2"\n'
    ))
    logs = load(path)
    run_a, run_b = "export.csv/run a", "export.csv/b"
    assert points(logs, run_a, "loss")[:2] == [(0, 2.0), (10, 1.0)]
    nan_point = points(logs, run_a, "loss")[2]
    assert nan_point[0] == 30 and nan_point[1] != nan_point[1]  # a logged NaN is kept
    assert points(logs, run_a, "loss__MIN")[:2] == [(0, 1.5), (10, 1.0)]
    assert points(logs, run_a, "loss__MAX")[:2] == [(0, 2.5), (10, 1.0)]
    assert points(logs, run_b, "loss") == [(20, 0.5), (30, 0.25)]
    warnings = [w.message for w in logs.runs[run_b].warnings]
    assert "1 non-numeric cell(s) in column 'loss' skipped" in warnings
    assert "1 row(s) have a different number of fields than the header (5); skipped" in warnings


def test_chart_duplicate_run_names_are_told_apart(tmp_path):
    path = write(tmp_path, "export.csv", '"Step","r - loss","r - loss"\n"0","1","2"\n')
    logs = load(path)
    assert points(logs, "export.csv/r", "loss") == [(0, 1.0)]
    assert points(logs, "export.csv/r#2", "loss") == [(0, 2.0)]
    assert "two runs are called 'r'" in logs.runs["export.csv/r#2"].warnings[0].message


def test_chart_with_a_time_axis_numbers_rows(tmp_path):
    path = write(tmp_path, "export.csv", '"Relative Time (Process)","r - loss"\n"0.5","1"\n"1.5","2"\n')
    logs = load(path)
    assert points(logs, "export.csv/r", "loss") == [(0, 1.0), (1, 2.0)]
    assert any("x-axis was 'Relative Time (Process)'" in n for n in logs.runs["export.csv/r"].notes)


@pytest.mark.parametrize(
    ("header", "chart", "table"),
    [
        (b'"Step","a - loss","a - loss__MIN","a - loss__MAX"\n', True, False),
        (b'Step,a - loss\n', True, False),
        (b'"Name","State","Notes","User","Tags","Created","Runtime","Sweep","lr"\n', False, True),
        (b'"Name","Created","Runtime","End Time","ID","Notes","Updated","Tags","lr"\n', False, True),  # State hidden
        (b'"Name","Runtime","End Time","Hostname","Notes","Tags","lr"\n', False, True),
        (b'"Name","ID","Notes","Tags","lr"\n', False, False),  # no W&B column that only W&B writes
        (b'epoch,loss,val_loss\n', False, False),
        (b'run_name,seed,final_val_loss\n', False, False),
        (b'step,train - loss\n', False, False),
    ],
)
def test_sniff(tmp_path, header, chart, table):
    path = tmp_path / "x.csv"
    assert WandbChartExportReader().sniff(path, header) is chart
    assert WandbRunsTableReader().sniff(path, header) is table


def test_sniff_a_header_longer_than_the_head(tmp_path):
    header = ",".join(["Step"] + [f"run{i:03d} - train/loss" for i in range(400)]).encode()
    assert len(header) > 4096
    assert WandbChartExportReader().sniff(tmp_path / "x.csv", header[:4096])


@pytest.fixture(scope="module")
def table():
    from tests.conftest import REAL_LOGS

    if not (REAL_LOGS / TABLE).is_dir():
        pytest.skip(f"real-log corpus not found at {REAL_LOGS}")
    return load(REAL_LOGS / TABLE / "wandb_export.csv")


def test_runs_table_export(table):
    assert len(table.runs) == 64
    name = "wandb_export.csv/G1_ternary_weights (2026-05-25T14:08:33.000Z)"
    info = table.runs[name]
    assert info.format == "wandb-runs-csv"
    assert info.hparams["linear_type"] == "ternary" and info.hparams["seed"] == 6242
    assert info.hparams["learning_rate"] == 0.001 and info.hparams["bias"] is False
    assert info.hparams["_wandb"] == {"State": "finished", "Tags": "full", "Created": "2026-05-25T14:08:33.000Z",
                                      "Runtime": 732}
    assert info.hparams["_summary"] == {"iter": 5000, "lr": 0.0001, "train/loss": 1.038091778755188,
                                        "train/step_loss": 1.124631643295288, "val/loss": 1.4786324501037598}
    assert "iter" not in info.hparams and "val/loss" not in info.hparams
    assert points(table, name, "val/loss") == [(5000, 1.4786324501037598)]
    assert sorted(set(table.scalars[table.scalars["run"] == name]["tag"])) == [
        "lr", "train/loss", "train/step_loss", "val/loss"]
    assert any("it has no curves" in n for n in info.notes)
    assert len(table.scalars) == 64 * 4
    # the row's State is the run's status
    assert (info.status.status, info.status.reason) == ("finished", "W&B recorded the run as FINISHED")
    assert info.status.evidence[0].file.endswith("wandb_export.csv")


def test_runs_table_state_is_each_runs_status(tmp_path):
    rows = ["Name,State,Runtime,lr,loss", "a,finished,100,0.1,0.5", "b,crashed,20,0.2,nan", "c,killed,5,0.3,1.0",
            "d,failed,7,0.4,2.0", "e,running,9,0.5,3.0", "f,,9,0.6,3.0"]
    (tmp_path / "wandb_export.csv").write_text("\n".join(rows) + "\n")
    runs = load(tmp_path / "wandb_export.csv", cache=False).runs
    got = {name.rsplit("/", 1)[-1]: info.status.status for name, info in runs.items()}
    assert got == {"a": "finished", "b": "crashed", "c": "killed", "d": "crashed", "e": "unknown", "f": "unknown"}
    running = next(info for name, info in runs.items() if name.endswith("/e")).status
    assert "W&B still records the run as RUNNING" in running.reason


def test_runs_table_names_repeat_per_seed(table):
    seeds = sorted(info.hparams["seed"] for name, info in table.runs.items() if "/G1_ternary_weights (" in name)
    assert seeds == [2026, 3242, 3740, 6242]


def test_the_project_summary_csv_beside_it_is_not_a_wandb_export(real_logs):
    # metrics.csv there is the project's own table (run_name, config, final_val_loss), not a W&B export
    found = discover(real_logs / TABLE)
    wandb_files = {f.replace("\\", "/").rsplit("/", 1)[-1] for r in found.runs if r.format.startswith("wandb")
                   for f in r.files}
    assert wandb_files == {"wandb_export.csv"}


def test_split_config_summary():
    assert split_config_summary(["a", "b", "z", "iter", "val/loss"]) == 3
    assert split_config_summary(["a", "b"]) is None
    assert split_config_summary(["b", "a", "c", "a"]) is None
    # summary keys sorted with capitals first ("FPR" before "accuracy"): one restart as written, three regardless of
    # case
    assert split_config_summary(["method", "scale", "msg", "per_frame_FPR (False Alarm Rate)", "per_frame_FPS",
                                 "per_frame_accuracy", "per_video_FPR", "per_video_accuracy"]) == 2


def test_runs_table_without_a_clear_split_keeps_everything_as_hparams(tmp_path):
    path = write(tmp_path, "runs.csv", '"Name","State","Created","Runtime","lr","seed"\n"r1","crashed","x","5","0.1","3"\n')
    logs = load(path)
    info = logs.runs["runs.csv/r1"]
    assert info.hparams["lr"] == 0.1 and info.hparams["seed"] == 3 and "_summary" not in info.hparams
    assert len(logs.scalars) == 0
    assert any("cannot be told apart" in n for n in info.notes)


def test_chart_rows_with_unusable_steps_are_counted(tmp_path):
    path = write(tmp_path, "export.csv", '"Step","r - loss"\n"0","1"\n"nan","2"\n"1e300","3"\n"-1","4"\n"2","5"\n')
    logs = load(path)
    assert points(logs, "export.csv/r", "loss") == [(0, 1.0), (2, 5.0)]
    assert logs.runs["export.csv/r"].warnings[0].message == "3 row(s) without a usable step value skipped"


def test_runs_table_with_an_infinite_step_keeps_values_as_hparams(tmp_path):
    path = write(tmp_path, "runs.csv", '"Name","State","Created","Runtime","a","b","_step","loss"\n'
                                       '"r1","finished","x","5","1","2","inf","0.5"\n')
    logs = load(path)
    assert len(logs.scalars) == 0 and logs.runs["runs.csv/r1"].hparams["_summary"]["loss"] == 0.5


def test_runs_table_of_many_runs_gives_each_row_its_own_points(tmp_path):
    """Each run gets exactly its own final points as arrays (``load`` joins them), in summary-column order,
    with its own tags; runs without a step get none."""
    import numpy as np
    import pandas as pd

    from tanalyze.schema import scalar_frame

    lines = ['"Name","State","Notes","Created","batch","lr","acc","iter","loss","val/loss"']
    expected = {}
    for i in range(300):
        val = "" if i % 3 == 0 else f"{i / 7!r}"
        step = "" if i % 10 == 9 else str(100 * i)
        lines.append(f'"run-{i}","finished","-","2024-01-01T00:00:00Z","32","0.001","{i / 3!r}","{step}",'
                     f'"{1 / (i + 1)!r}","{val}"')
        if step:
            tags = ["acc", "loss"] + ([] if i % 3 == 0 else ["val/loss"])
            values = [i / 3, 1 / (i + 1)] + ([] if i % 3 == 0 else [i / 7])
            expected[f"run-{i}"] = scalar_frame(run="", tag=tags, step=[100 * i] * len(tags), value=values)
    path = tmp_path / "wandb_export.csv"
    path.write_text("\n".join(lines) + "\n")
    runs = WandbRunsTableReader().read([path])
    assert [run.name for run in runs] == [f"run-{i}" for i in range(300)]
    for i, run in enumerate(runs):
        assert run.hparams["batch"] == 32 and run.hparams["lr"] == 0.001
        assert run.hparams["_summary"]["acc"] == i / 3
        if run.name in expected:
            pd.testing.assert_frame_equal(run.scalars.frame(""), expected[run.name], check_exact=True)
            assert run.notes[-1] == f"the {len(expected[run.name])} final value(s) are single points at iter = {100 * i}"
        else:
            assert len(run.scalars) == 0 and run.notes[-1].startswith("no step column among the final values")
    assert runs[1].scalars.value.tobytes() == np.array([1 / 3, 1 / 2, 1 / 7]).tobytes()


@pytest.mark.parametrize(("cell", "expected"), [
    ("12", 12), (" -3 ", -3), ("+7", 7), ("0.5", 0.5), ("1e-4", 1e-4), ("3.0", 3.0), ("", None), ("  ", None),
    ("True", True), ("false", False), ("NaN", "nan"), ("-Infinity", float("-inf")), ("1e999", "1e999"),
    ("trial-5", "trial-5"), ("2026-05-25T14:08:33.000Z", "2026-05-25T14:08:33.000Z"), ("-", "-"),
])
def test_runs_table_cells_become_python_values(cell, expected):
    from tanalyze.readers.wandb.export import _value

    got = _value(cell)
    if expected == "nan":
        assert isinstance(got, float) and got != got
    else:
        assert got == expected and type(got) is type(expected)


def test_runs_table_of_many_runs_loads_as_one_table_with_each_runs_points(tmp_path):
    """``load`` joins the runs' arrays: every run keeps its own points, in its own order, with its own
    tags, and a run with no step has none."""
    lines = ['"Name","State","Created","lr","seed","iter","loss","val/loss"']
    for i in range(2000):
        step = "" if i % 7 == 6 else str(10 * i)
        val = "" if i % 2 else f"{i / 9!r}"
        lines.append(f'"r{i}","finished","2024","0.1","{i % 3}","{step}","{1 / (i + 1)!r}","{val}"')
    logs = load(write(tmp_path, "runs.csv", "\n".join(lines) + "\n"))
    assert len(logs.runs) == 2000
    for i in (0, 1, 6, 1999):
        expected = [] if i % 7 == 6 else [(10 * i, 1 / (i + 1))]
        assert points(logs, f"runs.csv/r{i}", "loss") == expected
        assert points(logs, f"runs.csv/r{i}", "val/loss") == ([] if i % 2 or i % 7 == 6 else [(10 * i, i / 9)])
        assert logs.runs[f"runs.csv/r{i}"].hparams["seed"] == i % 3
    assert len(logs.scalars) == sum(0 if i % 7 == 6 else 1 + (i % 2 == 0) for i in range(2000))


@pytest.mark.parametrize("cells", [
    ["0.5", "1e-4", "-2.25", "3.0", "12", " -3 ", "+7", "", "NaN", "-Infinity", "1e999", "1_000.5", "١.٥", "2.5e3"],
    ["0.5", "x", "", "true", "7"],
    [" ", "0.1"],
    [repr(v) for v in np.random.default_rng(3).normal(size=500)] + [str(i) for i in range(-5, 5)],
])
def test_runs_table_columns_of_numbers_read_at_once_give_what_each_cell_gives(cells):
    from tanalyze.readers.wandb.export import _cell_values, _value

    got = _cell_values(np.array(cells, dtype=object)).tolist()
    expected = [_value(cell) for cell in cells]
    assert [(type(v), repr(v)) for v in got] == [(type(v), repr(v)) for v in expected]


@pytest.mark.parametrize("width", [0, 1, 7, 8, 9, 70])
def test_runs_table_point_patterns_are_the_distinct_rows(width):
    from tanalyze.readers.wandb.export import _distinct_rows

    flags = np.random.default_rng(width).random((400, width)) < 0.4
    patterns, which = _distinct_rows(flags)
    assert (patterns[which] == flags).all() and len({row.tobytes() for row in patterns}) == len(patterns)
    if width:
        expected, inverse = np.unique(flags, axis=0, return_inverse=True)
        assert (patterns == expected).all() and (which == inverse.reshape(-1)).all()
