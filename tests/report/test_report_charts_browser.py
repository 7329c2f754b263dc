"""Interactive charts in a real headless Chromium: hover read-out, drag-to-zoom and reset, log scale,
the smoothing slider (the same debiased EMA as the static figures), legend toggling, under the page's CSP."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tanalyze.curves import debiased_ema
from tanalyze.report import build_report, report_dict
from tanalyze.report.html import render_html
from tests.report import browser
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of
from tests.report.htmlcheck import json_scripts

pytestmark = pytest.mark.slow  # a real browser

NAME = "run <b>bold</b> & \"quoted\""


def _data():
    runs, diags = {}, {}
    for k, kind in enumerate(("diverged", "overfitting")):
        name = NAME if k == 0 else f"second-{kind}"
        runs[name] = (frame_for(name, curves(kind, n=2000, seed=k)), info(name))
        diags[name] = diagnosis(name, kind)
    return build_report(logs_of(runs, root="runs"), diags, title="charts")


# Drives run-1's loss chart like a reader: hover at 30% of the width, drag from 20% to 60%, read the zoomed
# range, reset, toggle the log scale and a legend entry, move the smoothing slider. Results go to body attributes.
DRIVE = """<script>
(async function () {
  var out = {};
  function tick() { return new Promise(function (done) { setTimeout(done, 50); }); }
  try {
    tanalyzeCharts.draw("run-1");
    await tick();
    var box = document.querySelector("#run-1 figure.fig-loss .tz-live");
    var u = box.tzChart;
    var over = box.querySelector(".u-over");
    var r = over.getBoundingClientRect();
    function ev(type, fx, target) {
      (target || over).dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, button: 0, buttons: 1, movementX: 5, movementY: 0,
        clientX: r.left + fx * r.width, clientY: r.top + r.height / 2, view: window }));
    }
    out.full = [u.scales.x.min, u.scales.x.max];
    ev("mousemove", 0.3);
    await tick();
    out.readout = box.querySelector(".tz-readout").textContent;
    out.readoutStep = box.getAttribute("data-readout-step");
    out.expectStep = u.posToVal(0.3 * r.width, "x");
    out.expectZoom = [u.posToVal(0.2 * r.width, "x"), u.posToVal(0.6 * r.width, "x")];
    ev("mousedown", 0.2);
    ev("mousemove", 0.4);
    ev("mousemove", 0.6);
    ev("mouseup", 0.6, document);
    await tick();
    out.zoomed = [u.scales.x.min, u.scales.x.max];
    box.querySelector("button.tz-reset").click();
    await tick();
    u = box.tzChart;
    out.reset = [u.scales.x.min, u.scales.x.max];
    var log = box.querySelector(".tz-log input");
    out.logDisabled = log.disabled;
    out.logBefore = [log.checked, u.scales.y.distr];
    log.click();
    await tick();
    u = box.tzChart;
    out.logAfter = [log.checked, u.scales.y.distr];
    var label = box.querySelector(".u-legend .u-series:nth-child(2) th");
    label.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    await tick();
    out.hidden = u.series[1].show === false;
    var slider = box.querySelector(".tz-smooth input");
    slider.value = "0.9";
    slider.dispatchEvent(new Event("input"));
    await tick();
    u = box.tzChart;
    out.sliders = Array.prototype.map.call(document.querySelectorAll(".tz-smooth input"), function (s) { return s.value; });
    out.raw = u.data[1].slice(0, 400);
    out.smoothed = u.data[2].slice(0, 400);
    out.ema = tanalyzeCharts.ema([1, 2, null, 4, 8], 0.6);
  } catch (e) { out.error = String(e && e.stack || e); }
  document.body.setAttribute("data-out", JSON.stringify(out));
})();
</script>"""


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    data = _data()
    html = render_html(data, csp=False)  # the driver script is not in the page's CSP
    page = tmp_path_factory.mktemp("charts") / "drive.html"
    page.write_text(html.replace("</body>", DRIVE + "</body>"), encoding="utf-8")
    result = browser.load(page)
    found = re.search(r'<body[^>]*data-out="([^"]*)"', result.dom)
    assert found, result.stderr[-2000:]
    import html as html_module

    out = json.loads(html_module.unescape(found.group(1)))
    assert "error" not in out, out["error"]
    return data, out


def test_hover_reads_out_run_step_and_values(driven):
    data, out = driven
    run = data.runs[0]
    assert out["readout"].startswith(NAME + " \u00b7 step ")  # the run name as text, markup and all
    step = float(out["readoutStep"])
    train = run.series["train_loss"]
    assert train.steps[0] <= step <= train.steps[-1]
    assert abs(step - out["expectStep"]) <= (train.steps[-1] - train.steps[0]) / 100  # the step under the cursor
    assert "train \u00b7 train/loss = " in out["readout"]


def test_drag_zooms_and_reset_restores(driven):
    _, out = driven
    lo, hi = out["full"]
    zlo, zhi = out["zoomed"]
    assert lo <= zlo < zhi <= hi and (zhi - zlo) < 0.5 * (hi - lo)
    assert zlo == pytest.approx(out["expectZoom"][0], rel=0.02) and zhi == pytest.approx(out["expectZoom"][1], rel=0.02)
    assert out["reset"] == pytest.approx(out["full"])


def test_log_scale_and_legend_toggle(driven):
    _, out = driven
    assert out["logDisabled"] is False
    # the diverged run's loss spans decades: it starts on a log axis (uPlot's distribution 3), and switches off
    assert out["logBefore"] == [True, 3] and out["logAfter"] == [False, 1]
    assert out["hidden"] is True


def test_smoothing_slider_is_the_static_ema(driven):
    _, out = driven
    assert out["sliders"] == ["0.9"] * len(out["sliders"]) and len(out["sliders"]) >= 2  # one setting, every chart
    raw = np.array([np.nan if v is None else v for v in out["raw"]], dtype=float)
    smoothed = np.array([np.nan if v is None else v for v in out["smoothed"]], dtype=float)
    expected = debiased_ema(raw, 0.9)
    finite = np.isfinite(raw)
    np.testing.assert_allclose(smoothed[finite], expected[finite], rtol=1e-9)
    assert out["ema"][:2] == pytest.approx(list(debiased_ema(np.array([1.0, 2.0]), 0.6)))
    assert out["ema"][2] is None
    assert out["ema"][3:] == pytest.approx(list(debiased_ema(np.array([1.0, 2.0, 4.0, 8.0]), 0.6)[2:]))


def test_charts_draw_under_the_csp_with_no_violation(tmp_path):
    data = _data()
    page = tmp_path / "report.html"
    page.write_text(render_html(data, embed_json=report_dict(data)), encoding="utf-8")
    result = browser.load(page, "--window-size=1280,4000")
    problems = [line for line in result.console if "Content Security Policy" in line or "Uncaught" in line
                or "rror" in line]
    assert problems == []
    assert 'id="run-1" aria-labelledby="run-1-h" data-drawn="1"' in result.dom  # the first run's charts were drawn
    assert result.dom.count("u-over") >= 1
    assert 'class="fig-loss live"' in result.dom  # the static figure is replaced, not duplicated
    shot = browser.screenshot(page, tmp_path / "charts.png", height=2200)
    print(f"\nscreenshot: {shot}")


def test_static_figures_remain_for_readers_without_scripts():
    data = _data()
    html = render_html(data, embed_json=report_dict(data))
    section = html[html.index('<section class="run" id="run-1"'):html.index('<section class="run" id="run-2"')]
    assert "<svg" in section  # the static figure is in the page
    charts = json.loads(json_scripts(html)["tz-charts"])
    assert set(charts["runs"]) == {"run-1", "run-2"}  # and the data the script draws from, as JSON
    assert charts["settings"] == {"smoothing": 0.6}


def test_page_works_with_no_network(tmp_path):
    """Everything is inline: the page names no URL to load (scripts, styles, fonts)."""
    data = _data()
    html = render_html(data, embed_json=report_dict(data))
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    assert "@import" not in html and "url(http" not in html
    assert Path(page := tmp_path / "p.html") and page.write_text(html) > 0
