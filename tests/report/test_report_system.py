"""The resources panel: system metrics drawn per run (static SVG and chart data), their findings, JSON + schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

import tanalyze
from tanalyze.report import build_report, report_dict
from tanalyze.report.chartdata import aux_roles, run_chart
from tanalyze.report.html import render_html
from tests.conftest import real_log
from tests.report import browser
from tests.report.htmlcheck import json_scripts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysmetrics"
SCHEMA = json.loads((Path(tanalyze.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


def report_of(*paths):
    logs = tanalyze.load([str(p) for p in paths] if len(paths) > 1 else paths[0], cache=False)
    return build_report(logs, tanalyze.diagnose(logs), generated_at="2026-01-01T00:00:00Z")


@pytest.fixture(scope="module")
def fixtures_report():
    return build_report(*_logs_and_diagnoses(FIXTURES), generated_at="2026-01-01T00:00:00Z")


def _logs_and_diagnoses(path):
    logs = tanalyze.load(path, cache=False)
    return logs, tanalyze.diagnose(logs)


def test_cpu_fixtures_get_a_resources_panel(fixtures_report):
    runs = {r.format: r for r in fixtures_report.runs}
    wandb, lightning = runs["wandb-local"], runs["lightning_csv"]
    for run, axis, tags in (
        (wandb, "seconds", ["system/cpu", "system/memory_percent"]),
        (lightning, "step", ["DeviceStatsMonitor.on_train_batch_end/cpu_percent",
                             "DeviceStatsMonitor.on_train_batch_end/cpu_vm_percent"]),
    ):
        chart = run_chart(run)
        panels = chart["resources"]
        assert [p["kind"] for p in panels] == ["cpu", "host_memory"]
        assert [p["series"][0]["tag"] for p in panels] == tags
        assert {p["axis"] for p in panels} == {axis} and {p["unit"] for p in panels} == {"%"}
    # the W&B samples are every second for ~40 s: drawn on seconds since the start, not on training steps
    steps = [sum(wandb_panel["series"][0]["dx"]) for wandb_panel in run_chart(wandb)["resources"]]
    assert all(30 <= s <= 60 for s in steps)


def test_html_has_the_panel_and_the_json_matches_the_schema(fixtures_report):
    page = render_html(fixtures_report)
    assert page.count('<figure class="fig-resources') == 2
    assert "System metrics on minutes since the run started" in page
    assert "System metrics on training steps" in page
    charts = json.loads(json_scripts(page)["tz-charts"])
    assert sum(1 for run in charts["runs"].values() if run.get("resources")) == 2
    report = report_dict(fixtures_report)
    jsonschema.Draft202012Validator(SCHEMA).validate(report)
    systems = [r["system"] for r in report["runs"]]
    assert all(s is not None and {x["kind"] for x in s["series"]} == {"cpu", "host_memory"} for s in systems)


def test_real_run_panel_findings_and_no_wall_clock_memory_on_the_step_axis():
    path = real_log("wandb_local/jackokeefe11__nanoGPT/wandb/run-20240214_195452-kt2awly2")
    data = report_of(path)
    (run,) = data.runs
    chart = run_chart(run)
    kinds = [p["kind"] for p in chart["resources"]]
    assert kinds == ["gpu_util", "gpu_memory", "gpu_temp", "gpu_power", "cpu", "host_memory"]
    temp = next(p for p in chart["resources"] if p["kind"] == "gpu_temp")
    assert [s["device"] for s in temp["series"]] == ["gpu0", "gpu1", "gpu2"] and temp["unit"] == "°C"
    # W&B's gpu.0.memoryAllocated is sampled on a clock: no gpu_memory role, no step-axis panel
    assert "gpu_memory" not in run.roles and "gpu_memory" not in aux_roles(run)
    assert chart["resource_steps"] == [list(p) for p in run.diagnosis["system"]["step_at"]]
    # the throttling GPU's plateau is marked on the temperature chart (6.5 min), nothing on the others
    assert temp["marks"] == [{"kind": "onset", "step": 6.5, "label": "gpu0 hot from here (87 °C)"}]
    assert all(p["marks"] == [] for p in chart["resources"] if p["kind"] != "gpu_temp")
    page = render_html(data)
    assert "thermal_throttling" in page and "GPU thermal throttling" in page
    assert "Dashed line: where a throttling GPU reached its temperature plateau." in page
    assert re.search(r'<figure class="fig-resources cols-3"><svg', page)
    report = report_dict(data)
    jsonschema.Draft202012Validator(SCHEMA).validate(report)
    (throttle,) = [t for t in report["runs"][0]["system"]["throttling"] if t["detected"]]
    assert throttle["device"] == "gpu0" and throttle["signal"] == "step time"


HOVER = """<script>
(async function () {
  var out = {};
  try {
    document.querySelectorAll("section.run").forEach(function (s) { tanalyzeCharts.draw(s.id); });
    await new Promise(function (done) { setTimeout(done, 50); });
    var box = document.querySelector("figure.fig-resources .tz-aux-cell");
    var over = box.querySelector(".u-over"), r = over.getBoundingClientRect();
    over.dispatchEvent(new MouseEvent("mousemove", { bubbles: true, clientX: r.left + 0.5 * r.width,
                                                     clientY: r.top + r.height / 2, view: window }));
    await new Promise(function (done) { setTimeout(done, 50); });
    out.readout = box.querySelector(".tz-readout").textContent;
  } catch (e) { out.error = String(e && e.stack || e); }
  document.body.setAttribute("data-out", JSON.stringify(out));
})();
</script>"""


@pytest.mark.slow
def test_hovering_a_wall_clock_panel_reads_out_minutes_and_the_step(tmp_path):
    """The W&B CPU run: hover the CPU chart half-way; the read-out gives the minute and the training step then."""
    data = build_report(*_logs_and_diagnoses(FIXTURES / "wandb_cpu"), generated_at="2026-01-01T00:00:00Z")
    page = tmp_path / "hover.html"
    page.write_text(render_html(data, csp=False).replace("</body>", HOVER + "</body>"), encoding="utf-8")
    done = browser.load(page)
    found = re.search(r'<body[^>]*data-out="([^"]*)"', done.dom)
    assert found, done.stderr[-2000:]
    import html as html_module

    out = json.loads(html_module.unescape(found.group(1)))
    assert "error" not in out, out["error"]
    assert re.search(r"· minutes 0\.\d · ≈ step [\d,]+ · host · system/cpu = ", out["readout"]), out["readout"]


@pytest.mark.slow
def test_the_page_draws_the_resources_panel_in_a_browser(fixtures_report, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(fixtures_report), encoding="utf-8")
    done = browser.load(page, "--window-size=1280,6000")
    live = re.findall(r'<figure class="fig-resources[^"]*live', done.dom)
    assert len(live) == 2
    assert "minutes since the start" in done.dom and not [c for c in done.console if "Error" in c]


def test_drop_and_capacity_marks_follow_the_findings(fixtures_report):
    from dataclasses import replace

    from tanalyze.report.figures import FigureMaker
    from tanalyze.report.model import resource_marks

    run = next(r for r in fixtures_report.runs if r.format == "wandb-local")
    system = dict(run.diagnosis["system"])
    system["drops"] = [{"device": "gpu0", "periodic": True, "starts": [60, 360, 660]}]
    system["memory"] = [{"kind": "host_memory", "device": "host", "samples_above": 3}]
    assert resource_marks(replace(run, diagnosis={**run.diagnosis, "system": system})) == {}  # no finding: no mark
    system["findings"] = [{"code": "gpu_util_drops"}, {"code": "memory_near_capacity"}]
    marked = replace(run, diagnosis={**run.diagnosis, "system": system})
    assert resource_marks(marked) == {
        "gpu_util": [("drop", 60.0, "gpu0 drop"), ("drop", 360.0, "gpu0 drop"), ("drop", 660.0, "gpu0 drop")],
        "host_memory": [("limit", 90.0, "90% of capacity")]}
    figure = FigureMaker().resources(marked)
    assert "Dotted red line: 90% of capacity." in figure.note  # the host-memory panel draws it
