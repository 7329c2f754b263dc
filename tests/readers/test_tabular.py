import math

import pandas as pd

from tanalyze.readers.tabular.common import JsonLines, PointBuffer, load_config, settle_rewrites


def _frame(rows):
    """rows: (row, tag, step, value) in write order."""
    buffer = PointBuffer()
    for row, tag, step, value in rows:
        buffer.add(row, tag, step, value)
    return buffer.frame()


def test_point_buffer_orders_by_row_and_sorts_tag_categories():
    buffer = PointBuffer()
    buffer.add(1, "zeta", 2, 2.0, epoch=0.5)
    buffer.add(0, "alpha", 1, 1.0)
    frame = buffer.frame()
    assert frame["tag"].tolist() == ["alpha", "zeta"] and frame["_row"].tolist() == [0, 1]
    assert list(frame["tag"].cat.categories) == ["alpha", "zeta"]
    assert math.isnan(frame["epoch"].iloc[0]) and frame["epoch"].iloc[1] == 0.5


def test_no_rewrites_leaves_the_table_alone():
    settled = settle_rewrites(_frame([(0, "loss", 1, 1.0), (1, "acc", 1, 0.5), (2, "loss", 2, 0.9)]), "f")
    assert len(settled.frame) == 3 and "_row" not in settled.frame.columns
    assert settled.restarts == [] and settled.notes == []


def test_two_restarts_are_two_events_and_orphans_are_dropped():
    rows = [
        (0, "loss", 1, 1.0), (1, "loss", 2, 0.9), (1, "val", 2, 5.0), (2, "loss", 3, 0.8),
        (3, "loss", 2, 0.7),  # restart 1 at step 2: val@2 of the abandoned attempt is an orphan
        (4, "loss", 3, 0.6), (5, "loss", 4, 0.5),
        (6, "loss", 4, 0.4),  # restart 2 at step 4
        (7, "loss", 5, 0.3),
    ]
    settled = settle_rewrites(_frame(rows), "run.log")
    loss = settled.frame[settled.frame["tag"] == "loss"].set_index("step")["value"].to_dict()
    assert loss == {1: 1.0, 2: 0.7, 3: 0.6, 4: 0.4, 5: 0.3}
    assert "val" not in set(settled.frame["tag"])
    first, second = settled.restarts
    assert (first.step, second.step) == (2, 4) and first.file == "run.log"
    assert "2 earlier point(s) replaced" in first.detail and "1 point(s) of the abandoned attempt" in first.detail
    assert "1 earlier point(s) replaced" in second.detail


def test_identical_rewrites_are_a_note_not_a_restart():
    settled = settle_rewrites(_frame([(0, "loss", 1, 1.0), (1, "loss", 2, math.nan), (2, "loss", 2, math.nan)]),
                              "f")
    assert settled.restarts == [] and len(settled.frame) == 2
    assert settled.notes == ["1 point(s) at steps 2–2 were written twice with identical values; kept once"]


def test_restart_names_the_source_of_its_first_row():
    buffer = PointBuffer()
    buffer.mark_source(0, "a/scalars.json")
    buffer.add(0, "loss", 1, 1.0)
    buffer.add(1, "loss", 2, 0.9)
    buffer.mark_source(2, "b/scalars.json")
    buffer.add(2, "loss", 2, 0.8)
    frame = buffer.frame()
    assert frame["source"].tolist() == ["a/scalars.json", "a/scalars.json", "b/scalars.json"]
    (restart,) = settle_rewrites(frame, "unused").restarts
    assert restart.file == "b/scalars.json"


def test_load_config_yaml_json_and_bad_files(tmp_path):
    good = tmp_path / "hparams.yaml"
    good.write_text("lr: 0.1\nns: !!python/object:argparse.Namespace\n  depth: 3\nfn: !!python/name:os.system ''\n")
    data, warning = load_config(good)
    assert warning is None and data == {"lr": 0.1, "ns": {"depth": 3}, "fn": ""}
    empty = tmp_path / "empty.yaml"
    empty.write_text("{}\n")
    assert load_config(empty) == ({}, None)
    listing = tmp_path / "args.yaml"
    listing.write_text("- 1\n- 2\n")
    assert load_config(listing) == ({"value": [1, 2]}, None)
    broken = tmp_path / "config.json"
    broken.write_text('{"lr": ')
    data, warning = load_config(broken)
    assert data is None and warning.file == str(broken) and "config not read" in warning.message
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("a: [1, 2\n")
    assert load_config(bad_yaml)[1] is not None


def test_json_lines_bom_blank_lines_and_undecodable_bytes(tmp_path):
    path = tmp_path / "scalars.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n{"b": "\xff"}\r\n{"c": 3}\n')
    lines = JsonLines(path)
    records = list(lines)
    assert [r for _, r in records] == [{"a": 1}, {"b": "\ufffd"}, {"c": 3}]
    assert [n for n, _ in records] == [1, 3, 4]
    assert lines.undecodable_bytes == 1 and not lines.bad_lines
    (warning,) = lines.warnings(str(path))
    assert "not UTF-8" in warning.message


def test_frame_of_an_empty_buffer_is_an_empty_tidy_table():
    frame = PointBuffer().frame()
    assert frame.empty and isinstance(frame["tag"].dtype, pd.CategoricalDtype)
    assert settle_rewrites(frame, "f").frame.empty
