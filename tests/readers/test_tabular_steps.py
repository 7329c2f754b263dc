"""Steps of tabular logs: per-batch rows, counter columns, cumulative clocks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tanalyze import diagnose, load
from tanalyze.readers.tabular.common import PointBuffer, derive_step_times, settle_rewrites
from tanalyze.readers.tabular.csv_loggers import GenericCSVReader, YoloResultsReader
from tests.readers.structured_helpers import curve, epoch_at


def read_csv(tmp_path, text: str, name: str = "metrics.csv", reader=None):
    path = tmp_path / name
    path.write_text(text)
    (run,) = (reader or GenericCSVReader()).read([path])
    return run


# --- per-batch rows --------------------------------------------------------------------------------


def test_epoch_and_batch_columns_make_a_global_step(tmp_path):
    rows = [f"{e},{b},{e + b / 10:.1f},{-e - b / 10:.1f}" for e in range(3) for b in range(4)]
    run = read_csv(tmp_path, "Epoch,Batch,Gen Loss,Disc Loss\n" + "\n".join(rows) + "\n")
    gen = curve(run.scalars, "Gen Loss")
    assert list(gen.index) == list(range(12))  # every row kept: it used to be 3 points (step = epoch)
    assert gen[0] == 0.0 and gen[5] == 1.1 and gen[11] == 2.3
    assert curve(run.scalars, "Disc Loss")[7] == -1.3
    assert set(run.scalars["tag"]) == {"Gen Loss", "Disc Loss"}  # Batch is a counter, not a metric
    assert epoch_at(run.scalars, "Gen Loss", 7) == 1.0
    assert not run.restarts and not run.phases
    assert ("'Batch' counts batches within an epoch (0-based; 4 per epoch = the largest seen + 1): "
            "step = Epoch × 4 + Batch; the epoch column holds 'Epoch'") in run.notes


def test_one_based_batches_and_epochs(tmp_path):
    rows = [f"{e},{b},{10 * e + b}" for e in (1, 2) for b in (1, 2, 3)]
    run = read_csv(tmp_path, "epoch,batch,loss\n" + "\n".join(rows) + "\n")
    # 1-based batches are made 0-based; the epoch is used as written (epoch 1 starts at step 3)
    assert curve(run.scalars, "loss").to_dict() == {3: 11.0, 4: 12.0, 5: 13.0, 6: 21.0, 7: 22.0, 8: 23.0}
    assert any("(1-based; 3 per epoch" in n and "step = epoch × 3 + batch - 1" in n for n in run.notes)


@pytest.mark.parametrize("counter", ["iter", "step_in_epoch", "batch_idx"])
def test_a_counter_that_restarts_every_epoch(tmp_path, counter):
    rows = [f"{e},{i * 10},{e}.{i}" for e in range(2) for i in range(3)]
    run = read_csv(tmp_path, f"epoch,{counter},loss\n" + "\n".join(rows) + "\n")
    assert curve(run.scalars, "loss").to_dict() == {0: 0.0, 10: 0.1, 20: 0.2, 21: 1.0, 31: 1.1, 41: 1.2}


def test_a_global_iteration_column_stays_the_step(tmp_path):
    rows = [f"{e},{e * 3 + i},{e}.{i}" for e in range(2) for i in range(3)]
    run = read_csv(tmp_path, "epoch,iter,loss\n" + "\n".join(rows) + "\n")
    assert curve(run.scalars, "loss").to_dict() == {0: 0.0, 1: 0.1, 2: 0.2, 3: 1.0, 4: 1.1, 5: 1.2}
    assert not any("counts batches" in n for n in run.notes)


def test_a_step_column_named_with_blanks_is_the_step(tmp_path):
    """A hand-written logger's ``total timesteps`` (``Global Step``) is the step, as ``total_timesteps`` is, and no
    metric."""
    run = read_csv(tmp_path, "num_episodes,total_loss,total timesteps\n68,0.36,5120\n140,0.22,10240\n213,0.22,15360\n",
                   name="progress.csv")
    assert curve(run.scalars, "total_loss").to_dict() == {5120: 0.36, 10240: 0.22, 15360: 0.22}
    assert "total timesteps" not in set(run.scalars["tag"])
    run = read_csv(tmp_path, "Global Step,Epoch,Train Loss\n10,0,2.5\n20,0,2.25\n30,1,2.0\n", name="log.csv")
    assert curve(run.scalars, "Train Loss").to_dict() == {10: 2.5, 20: 2.25, 30: 2.0}
    assert set(run.scalars["tag"]) == {"Train Loss"}


def test_rows_with_an_epoch_but_no_batch_are_at_the_end_of_their_epoch(tmp_path):
    text = "epoch,batch,loss,val_loss\n0,0,1.0,\n0,1,0.9,\n0,,,0.95\n1,0,0.8,\n1,1,0.7,\n1,,,0.85\n"
    run = read_csv(tmp_path, text)
    assert curve(run.scalars, "val_loss").to_dict() == {1: 0.95, 3: 0.85}
    assert curve(run.scalars, "loss").to_dict() == {0: 1.0, 1: 0.9, 2: 0.8, 3: 0.7}
    assert any("2 row(s) without a batch index placed at the last step of their epoch" in n for n in run.notes)


def test_a_per_batch_csv_written_twice_is_two_phases(tmp_path):
    rows = [f"{e},{b},{e}.{b}" for e in range(2) for b in range(3)]
    run = read_csv(tmp_path, "epoch,batch,loss\n" + "\n".join(rows + rows[:3]) + "\n")
    # the first epoch again with the same values is no new session: a restart from step 0 (a rerun that was
    # stopped after one epoch), whose abandoned attempt is dropped and counted
    assert curve(run.scalars, "loss").to_dict() == {0: 0.0, 1: 0.1, 2: 0.2} and not run.phases
    (restart,) = run.restarts
    assert restart.step == 0 and "3 point(s) of the abandoned attempt after step 0 dropped" in restart.detail
    changed = [f"{e},{b},9.{b}" for e in range(1) for b in range(3)]
    run = read_csv(tmp_path, "epoch,batch,loss\n" + "\n".join(rows + changed) + "\n")
    assert curve(run.scalars, "loss").to_dict() == {0: 0.0, 1: 0.1, 2: 0.2, 3: 1.0, 4: 1.1, 5: 1.2,
                                                    6: 9.0, 7: 9.1, 8: 9.2}
    assert [(p.first_step, p.last_step) for p in run.phases] == [(0, 5), (6, 8)]


# --- counters ----------------------------------------------------------------------------------------


def test_counter_columns_are_not_metrics_and_are_noted(tmp_path):
    text = ",step,global_step,_step,loss,iteration\n0,10,10,0,1.0,0.5\n1,20,20,1,0.9,1.5\n2,30,30,2,0.8,2.5\n"
    run = read_csv(tmp_path, text)
    assert set(run.scalars["tag"]) == {"loss", "iteration"}  # 'iteration' holds fractions: a metric
    assert curve(run.scalars, "loss").to_dict() == {10: 1.0, 20: 0.9, 30: 0.8}
    assert ("counter column(s) not kept as metrics (step, epoch, batch or row indices): 'column_1' (3 value(s)), "
            "'global_step' (3 value(s)), '_step' (3 value(s))") in run.notes


# --- cumulative clocks -------------------------------------------------------------------------------


YOLO81 = ("epoch,time,train/box_loss,train/cls_loss,metrics/mAP50(B),val/box_loss,lr/pg0\n"
          "1,41.5,1.5,2.5,0.1,1.6,0.07\n2,80.75,1.4,2.2,0.2,1.5,0.06\n3,120.5,1.3,2.0,0.3,1.45,0.05\n"
          "4,161.0,1.2,1.8,0.35,1.4,0.04\n5,200.0,1.1,1.7,0.4,1.38,0.03\n")


def test_ultralytics_cumulative_time_becomes_time_per_epoch_and_wall_time(tmp_path):
    run = read_csv(tmp_path, YOLO81, "results.csv", YoloResultsReader())
    per_epoch = curve(run.scalars, "time/per_epoch")
    assert per_epoch.to_dict() == {1: 41.5, 2: 39.25, 3: 39.75, 4: 40.5, 5: 39.0}  # epoch 1 took 41.5 s
    assert "time" not in set(run.scalars["tag"])
    box = run.scalars[run.scalars["tag"] == "train/box_loss"].set_index("step")["wall_time"]
    assert box.to_dict() == {1: 41.5, 2: 80.75, 3: 120.5, 4: 161.0, 5: 200.0}
    assert ("'time' only grows: seconds since the start (5 value(s)). Kept as the wall_time of the points at its "
            "epochs and turned into 'time/per_epoch': seconds per epoch between consecutive rows, and for the first "
            "row of a session its time over its epoch (both counted from 0)") in run.notes


def test_healthy_ultralytics_run_has_no_slowdown_finding(tmp_path):
    rows = [f"{e},{40.0 * e + (e % 3) * 0.5:.2f},{2.0 / e:.4f},{1.0 / e:.4f},{0.1 * e:.3f},{2.2 / e:.4f},0.01"
            for e in range(1, 31)]
    (tmp_path / "results.csv").write_text(YOLO81.splitlines()[0] + "\n" + "\n".join(rows) + "\n")
    (d,) = diagnose(load(tmp_path, cache=False)).values()
    assert d.throughput is None or not any("slower" in f.message for f in d.throughput.findings)
    assert not any("slower" in f.message for f in d.findings)


def test_a_per_step_time_is_left_alone():
    buffer = PointBuffer()
    for row, (step, seconds) in enumerate([(10, 0.50), (20, 0.51), (30, 0.55), (40, 0.56), (50, 0.60)]):
        buffer.add(row, "time", step, seconds)  # rising a little, never falling: still a time per step
        buffer.add(row, "loss", step, 1.0 / step)
    settled = settle_rewrites(buffer.frame(), "f")
    assert set(settled.frame["tag"]) == {"time", "loss"} and not settled.notes


def test_clock_rules():
    frame = PointBuffer()
    for row, step in enumerate((0, 10, 20)):
        frame.add(row, "train/elapsed", step, 5.0 + 2.0 * step)
    table, notes = derive_step_times(frame.frame().drop(columns="_row"))
    assert curve(table, "train/elapsed/per_step").to_dict() == {10: 2.0, 20: 2.0}
    assert len(notes) == 1
    decreasing = PointBuffer()
    for row, value in enumerate((5.0, 9.0, 8.0, 12.0)):
        decreasing.add(row, "time", row, value)
    table, notes = derive_step_times(decreasing.frame().drop(columns="_row"))
    assert set(table["tag"]) == {"time"} and not notes
    nan = PointBuffer()
    for row, value in enumerate((5.0, math.nan, 8.0, 12.0)):
        nan.add(row, "time", row, value)
    assert derive_step_times(nan.frame().drop(columns="_row"))[1] == []


def test_clock_and_per_batch_at_scale_keep_row_order(tmp_path):
    epochs, batches = 5, 200
    e, b = np.divmod(np.arange(epochs * batches), batches)
    seconds = np.cumsum(np.full(len(e), 0.25))
    lines = [f"{x},{y},{t:.2f},{1 / (1 + i):.6f}" for i, (x, y, t) in enumerate(zip(e, b, seconds, strict=True))]
    run = read_csv(tmp_path, "epoch,batch,elapsed,loss\n" + "\n".join(lines) + "\n")
    per_step = curve(run.scalars, "elapsed/per_step")
    assert len(per_step) == epochs * batches - 1 and np.allclose(per_step.to_numpy(), 0.25)
    assert run.scalars["step"].is_monotonic_increasing
