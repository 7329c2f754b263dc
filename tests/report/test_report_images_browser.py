"""The image summaries in a real headless Chromium, under the page's own Content-Security-Policy: the data: images
decode, the step slider swaps them, nothing is refused; with scripts off, the last image of each tag shows."""

from __future__ import annotations

import base64
import hashlib
import html as html_module
import json
import re
from pathlib import Path

import pytest

from tanalyze.report import report_paths
from tanalyze.report.html import render_html
from tests.report import browser

pytestmark = pytest.mark.slow  # a real browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "images"
TRUTH = json.loads((FIXTURES / "TRUTH.json").read_text(encoding="utf-8"))

# Reads every image figure once the page (and its images) loaded, then moves the attention slider to its
# second position as a reader would. Results go to a body attribute.
DRIVE = """
window.addEventListener("load", function () {
  var out = {figures: []};
  try {
    document.querySelectorAll("figure.img-series").forEach(function (figure) {
      var images = Array.prototype.slice.call(figure.querySelectorAll(".frames img"));
      var slider = figure.querySelector("input.img-slider");
      out.figures.push({
        tag: figure.querySelector("code").textContent,
        shown: images.filter(function (i) { return !i.hidden; }).map(function (i) { return i.getAttribute("data-step"); }),
        decoded: images.map(function (i) { return [i.complete, i.naturalWidth, i.naturalHeight]; }),
        slider: slider ? {hidden: slider.hidden, visible: slider.offsetWidth > 0, max: slider.max, value: slider.value} : null,
        label: figure.querySelector(".img-step").textContent
      });
    });
    var figure = Array.prototype.find.call(document.querySelectorAll("figure.img-series"), function (f) {
      return f.querySelector("code").textContent === "attention/head0";
    });
    var slider = figure.querySelector("input.img-slider");
    slider.value = "1";
    slider.dispatchEvent(new Event("input"));
    var visible = Array.prototype.filter.call(figure.querySelectorAll(".frames img"), function (i) { return !i.hidden; });
    out.moved = {shown: visible.map(function (i) { return i.getAttribute("data-step"); }),
                 painted: visible.map(function (i) { return i.offsetWidth > 0; }),
                 label: figure.querySelector(".img-step").textContent,
                 valuetext: slider.getAttribute("aria-valuetext")};
  } catch (e) { out.error = String(e && e.stack || e); }
  document.body.setAttribute("data-out", JSON.stringify(out));
});
"""


def _with_driver(page_html: str) -> str:
    """The page with the driver script added, its hash added to the page's own CSP (nothing else loosened)."""
    digest = base64.b64encode(hashlib.sha256(DRIVE.encode("utf-8")).digest()).decode("ascii")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', page_html)
    assert csp, "the page has no CSP"
    policy = html_module.unescape(csp.group(1))
    assert "img-src data:;" in policy and "default-src 'none'" in policy
    widened = policy.replace("script-src ", f"script-src 'sha256-{digest}' ")
    page_html = page_html.replace(csp.group(0), csp.group(0).replace(csp.group(1), html_module.escape(widened)))
    return page_html.replace("</body>", f"<script>{DRIVE}</script></body>")


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    data = report_paths([FIXTURES / "torch_images"], jobs=1, cache=False)
    page = tmp_path_factory.mktemp("images") / "drive.html"
    page.write_text(_with_driver(render_html(data)), encoding="utf-8")
    result = browser.load(page, "--window-size=1280,4000")
    found = re.search(r'<body[^>]*data-out="([^"]*)"', result.dom)
    assert found, result.stderr[-2000:]
    out = json.loads(html_module.unescape(found.group(1)))
    assert "error" not in out, out["error"]
    return out, result


def test_images_decode_under_the_csp_and_the_last_is_shown(driven):
    out, result = driven
    refused = [line for line in result.console if "Content Security Policy" in line or "Uncaught" in line
               or "rror" in line]
    assert refused == []
    truth = TRUTH["torch_images"]
    by_tag = {f["tag"]: f for f in out["figures"]}
    assert set(by_tag) == set(truth)
    for tag, want in truth.items():
        figure = by_tag[tag]
        # every embedded image was allowed (img-src data:) and decoded to its real size
        assert figure["decoded"] == [[True, want["width"], want["height"]]] * len(want["steps"])
        assert figure["shown"] == [str(want["steps"][-1])]
        assert figure["label"] == f"step {want['steps'][-1]}"
        if len(want["steps"]) > 1:
            assert figure["slider"] == {"hidden": False, "visible": True, "max": str(len(want["steps"]) - 1),
                                        "value": str(len(want["steps"]) - 1)}
        else:
            assert figure["slider"] is None


def test_the_slider_swaps_the_image(driven):
    out, _ = driven
    steps = TRUTH["torch_images"]["attention/head0"]["steps"]
    assert out["moved"] == {"shown": [str(steps[1])], "painted": [True], "label": f"step {steps[1]}",
                            "valuetext": f"step {steps[1]}"}


def test_without_scripts_the_last_image_shows_and_no_slider(tmp_path):
    """Scripts off: the page's CSP allowing no script at all (the page's script refused, as in a reader that
    blocks scripts); the last image of each tag is shown, decoded, and no slider."""
    data = report_paths([FIXTURES / "torch_images"], jobs=1, cache=False)
    page_html = render_html(data)
    no_script = re.sub(r"script-src &#39;sha256-[^&]*&#39;", "script-src &#39;none&#39;", page_html)
    assert no_script != page_html
    page = tmp_path / "report.html"
    page.write_text(no_script, encoding="utf-8")
    result = browser.load(page, "--window-size=1280,4000")
    assert "tz js" not in result.dom  # the page's script did not run
    shown = re.findall(r'<img src="data:image/png;base64,[^"]*"[^>]*data-step="(\d+)"(?![^>]*hidden)[^>]*>', result.dom)
    truth = TRUTH["torch_images"]
    assert sorted(shown) == sorted(str(t["steps"][-1]) for t in truth.values())
    sliders = re.findall(r'<input type="range" class="img-slider"[^>]*>', result.dom)
    assert len(sliders) == sum(len(t["steps"]) > 1 for t in truth.values()) and all("hidden" in s for s in sliders)
    assert not [line for line in result.console if "Refused to load the image" in line]
    shot = browser.screenshot(page, tmp_path / "images.png", height=2400)
    print(f"\nscreenshot: {shot}")


def test_hostile_tags_and_bytes_stay_inert_in_a_browser(tmp_path):
    """Tags that are markup, an SVG with a script and a corrupt PNG as image bytes: in a real browser (with the
    CSP, and without it: escaping alone), nothing runs and every image element is one of the checked PNGs."""
    from tests.readers.test_tbimages import image_event, png, scalar_event
    from tests.readers.test_tensorboard import write_events

    payload = "<img src=x onerror=\"document.title='EXECUTED'\">"
    run = tmp_path / "logs" / "hostile"
    run.mkdir(parents=True)
    write_events(run / "events.out.tfevents.1700000000.host.1.0", [
        *[scalar_event("loss", step, 1.0 / (step + 1)) for step in range(4)],
        image_event(payload, 0, png(6, 6, shade=40)), image_event(payload, 1, png(6, 6, shade=90)),
        image_event("svg", 1, b'<svg xmlns="http://www.w3.org/2000/svg" onload="document.title=\'EXECUTED\'"/>'),
        image_event("corrupt", 2, b"\x89PNG\r\n\x1a\n\x00\x00"),
    ])
    data = report_paths([tmp_path / "logs"], jobs=1, cache=False)
    for csp in (True, False):
        page = tmp_path / f"page-{csp}.html"
        page.write_text(render_html(data, csp=csp), encoding="utf-8")
        result = browser.load(page, "--window-size=1280,3000")
        assert re.search(r"<title>([^<]*)</title>", result.dom).group(1) != "EXECUTED"  # the payloads ran not
        srcs = re.findall(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", result.dom)
        assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
        assert result.dom.count('<input type="range" class="img-slider"') == 1
