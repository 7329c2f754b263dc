"""The interactive charts' data: downsampled lines that keep every extreme, markers from the diagnosis,
no non-finite number, compact enough for thousands of runs; and the vendored uPlot as pinned."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from tanalyze.report import build_report, report_dict
from tanalyze.report.assets import SCRIPT, UPLOT_DIR, UPLOT_JS, UPLOT_VERSION
from tanalyze.report.chartdata import COLUMNS, COLUMNS_MANY, DIGITS, chart_columns, decode_steps, run_chart
from tanalyze.report.html import json_for_script
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of


def _view(kind: str, n: int = 20_000):
    name = f"r-{kind}"
    data = build_report(logs_of({name: (frame_for(name, curves(kind, n=n, seed=3)), info(name))}),
                        {name: diagnosis(name, kind)})
    return data.runs[0]


def test_lines_are_downsampled_but_keep_the_extremes():
    run = _view("normal")
    chart = run_chart(run, COLUMNS)
    train = next(s for s in chart["loss"]["series"] if s["key"] == "train")
    train["x"] = decode_steps(train["dx"])
    full = run.series["train_loss"]
    assert len(train["x"]) == len(train["y"]) <= 4 * COLUMNS < len(full.steps)
    assert train["x"][0] == int(full.steps[0]) and train["x"][-1] == int(full.steps[-1])
    assert max(train["y"]) == float(f"{full.values.max():.{DIGITS}g}")  # M4 keeps the highest point
    assert min(train["y"]) == float(f"{full.values.min():.{DIGITS}g}")
    assert train["x"] == sorted(train["x"])
    val = next(s for s in chart["loss"]["series"] if s["key"] == "val")
    assert decode_steps(val["dx"]) == run.series["val_loss"].steps.tolist()  # short lines come whole


def test_markers_come_from_the_diagnosis():
    diverged = run_chart(_view("diverged"))
    marks = {m["kind"]: m["step"] for m in diverged["loss"]["marks"]}
    assert marks == {"diverged": 10500, "blowup": 10400, "resume": 10000, "early": 7500}
    run = _view("diverged")
    train = run.series["train_loss"]
    assert diverged["loss"]["nonfinite"] == train.steps[~train.finite].tolist()  # the 5 NaN steps at the end
    cap = diverged["loss"]["cap"]  # the blow-up to 1e4 is cut at 3 decades above the loss before it (log axis)
    before = train.values[(train.steps < 10400) & train.finite]
    assert cap["log"] == float(f"{before.max() * 1e3:.4g}") and cap["top"] == float(f"{np.nanmax(train.values):.4g}")
    assert diverged["loss"]["spikes"] == {"x": [5000.0], "y": [1.9]}
    assert diverged["loss"]["log"] is True  # the explosion spans decades
    overfit = run_chart(_view("overfitting"))
    assert {m["kind"]: m["step"] for m in overfit["loss"]["marks"]} == {"onset": 6000, "early": 7500}
    val = overfit["loss"]["series"][1]
    i = int(np.argmin(val["y"]))
    assert overfit["loss"]["best"] == [decode_steps(val["dx"])[i], val["y"][i]]
    assert [p["role"] for p in overfit["aux"]] == ["learning_rate", "grad_norm", "throughput"]


def test_non_finite_points_are_left_out_and_the_json_is_strict():
    chart = run_chart(_view("diverged"))
    text = json_for_script(chart)  # allow_nan=False: raises on NaN or inf
    train = chart["loss"]["series"][0]
    assert all(np.isfinite(train["y"]))
    assert "<" not in text and ">" not in text


def test_many_runs_use_fewer_columns_and_stay_small():
    assert chart_columns(10) == COLUMNS and chart_columns(2000) == COLUMNS_MANY
    size = len(json_for_script(run_chart(_view("normal", n=200_000), chart_columns(2000))))
    assert size < 7_000  # 2,000 runs' chart data under 14 MB, however long the runs


def test_no_curve_no_chart():
    name = "empty"
    data = build_report(logs_of({name: (frame_for(name, {}), info(name))}), {name: diagnosis(name, "normal")})
    assert run_chart(data.runs[0]) is None


def test_vendored_uplot_is_the_pinned_release_with_its_licence():
    assert UPLOT_JS.startswith(f"/*! https://github.com/leeoniya/uPlot (v{UPLOT_VERSION}) */")
    licence = (UPLOT_DIR / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("The MIT License (MIT)") and "Leon Sorokin" in licence
    notes = (UPLOT_DIR / "VENDORED.md").read_text(encoding="utf-8")
    assert f"**{UPLOT_VERSION}**" in notes
    for name in ("uPlot.iife.min.js", "uPlot.min.css", "LICENSE"):
        digest = hashlib.sha256((UPLOT_DIR / name).read_bytes()).hexdigest()
        assert re.search(rf"`{re.escape(name)}` {digest}", notes), f"{name} differs from the vendored release"
    assert UPLOT_JS in SCRIPT and "innerHTML" not in SCRIPT.replace(UPLOT_JS, "")  # our code sets text only
    json.loads(json_for_script({"ok": True}))


def test_over_the_static_limit_sections_have_charts_from_data_only(monkeypatch):
    """Many runs: no static figure per run (the page stays small); each run's chart data is in the page."""
    import tanalyze.report.html as page
    from tests.report.htmlcheck import json_scripts

    names = [f"r{k}" for k in range(3)]
    data = build_report(logs_of({n: (frame_for(n, curves("normal", n=500, seed=k)), info(n)) for k, n in enumerate(names)}),
                        {n: diagnosis(n, "normal") for n in names})
    monkeypatch.setattr(page, "STATIC_FIGURES_MAX_RUNS", 2)
    html = page.render_html(data, jobs=1, embed_json=report_dict(data))
    sections = html[html.index('<section class="run"'):html.index("<footer>")]
    assert "<svg" not in sections and sections.count("static-off") == 3
    assert "static figures are left out" in html[html.index("<footer>"):]
    assert "<h3>Early stopping</h3>" not in sections and 'id="tanalyze-data"' not in html  # in the JSON file instead
    charts = json.loads(json_scripts(html)["tz-charts"])["runs"]
    assert sorted(charts) == ["run-1", "run-2", "run-3"]
    monkeypatch.setattr(page, "STATIC_FIGURES_MAX_RUNS", 200)
    small = page.render_html(data, jobs=1, embed_json=report_dict(data))
    assert parse_svg_count(small) >= 3 and "<h3>Early stopping</h3>" in small and 'id="tanalyze-data"' in small


def parse_svg_count(html: str) -> int:
    return html[html.index('<section class="run"'):html.index("<footer>")].count("<svg")
