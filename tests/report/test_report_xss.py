"""Text from logs is untrusted: payloads in every field that reaches the page must stay inert text.

Checked statically (nothing unescaped in the HTML, only our own scripts, no handler
attributes) and in a real headless Chromium, with and without the CSP, so that
escaping alone is shown to hold and the CSP is a second wall, not the only one.
Executed payload code would assemble the marker ``EXE`` + ``CUTED`` at run time,
so the marker never appears in the page unless something ran.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tanalyze.readers import ReadWarning, Restart
from tanalyze.report import build_report, report_dict
from tanalyze.report.html import render_html
from tests.report import browser
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of
from tests.report.htmlcheck import PAGE_SCRIPTS, json_scripts, parse, raw_scripts, script_kinds

RUN = "document.title='EXE'+'CUTED';document.documentElement.setAttribute('data-'+'pwned','1')"
PAYLOADS = [
    f"<script>{RUN}</script>",
    f'"onload="{RUN}" x="',
    f"'><svg onload=\"{RUN}\">",
    f"</script><script>{RUN}</script>",
    f"javascript:{RUN}",
    f"<img src=x onerror=\"{RUN}\">",
    "{{7*7}}",
    "$\\frac{a}{b}$",
    "line\u2028sep\u2029para",
    f"</title></style></textarea><script>{RUN}</script>",
    f"]]><!--<script>{RUN}</script>-->",
    f"<a href=\"javascript:{RUN}\">click</a>",
]
ACTIVE = [p for p in PAYLOADS if any(c in p for c in "<>\"")]


def _xss_data():
    runs, diags = {}, {}
    for k, payload in enumerate(PAYLOADS[:4]):
        name = f"run{k} {payload}"
        by_tag = curves("overfitting" if k % 2 else "diverged", n=300, seed=k)
        renamed = {
            f"train/{PAYLOADS[(k + 1) % len(PAYLOADS)]}": by_tag["train/loss"],
            f"val/{PAYLOADS[7]}": by_tag["val/loss"],
            f"lr {PAYLOADS[(k + 5) % len(PAYLOADS)]}": by_tag["train/lr"],
            f"gn {PAYLOADS[9]}": by_tag["train/grad_norm"],
        }
        roles = dict(zip(("train_loss", "val_loss", "learning_rate", "grad_norm"), renamed, strict=True))
        hparams = {p: p for p in PAYLOADS} | {"nested": {PAYLOADS[0]: [PAYLOADS[1], {"deep": PAYLOADS[3]}]}, "seed": k}
        runs[name] = (
            frame_for(name, renamed),
            info(name, hparams=hparams, files=tuple(PAYLOADS), directory=PAYLOADS[2],
                 warnings=tuple(ReadWarning(p, p, p, 3) for p in PAYLOADS),
                 restarts=(Restart(10, PAYLOADS[0], PAYLOADS[1]),), notes=tuple(PAYLOADS),
                 text={p: p * 2 for p in PAYLOADS}),
        )
        d = diagnosis(name, "overfitting" if k % 2 else "diverged", roles=roles)
        d["verdict"]["evidence"] = {p: p for p in PAYLOADS[:6]} | {"value": np.nan}
        d["divergence"] = {"step": 100, "kind": PAYLOADS[5]} if k % 2 == 0 else None
        d["findings"] = [{"code": p, "severity": "error", "step": 5, "message": p, "recommendation": p,
                          "evidence": {p: [p, p]}} for p in PAYLOADS]
        d["warnings"] = list(PAYLOADS)
        d["spikes"] = [{"step": 50, "note": PAYLOADS[6]}]
        d["extra " + PAYLOADS[0]] = {PAYLOADS[1]: PAYLOADS[2]}
        diags[name] = d
    logs = logs_of(runs, root=PAYLOADS[3])
    return build_report(logs, diags, title="Report " + PAYLOADS[9], generated_at="2024-05-01T12:00:00Z")


@pytest.fixture(scope="module")
def data():
    return _xss_data()


@pytest.fixture(scope="module")
def pages(data):
    report = report_dict(data)
    return {"csp": render_html(data, embed_json=report), "no-csp": render_html(data, csp=False, embed_json=report)}


@pytest.mark.parametrize("kind", ["csp", "no-csp"])
def test_no_payload_reaches_the_html_unescaped(pages, kind):
    html = pages[kind]
    for payload in ACTIVE:
        assert payload not in html
    assert "EXECUTED" not in html
    doc = parse(html)
    # the report JSON, the runs' chart data (JSON, never markup), and one script
    assert script_kinds(html) == PAGE_SCRIPTS
    for key, body in json_scripts(html).items():
        assert "<" not in body and ">" not in body and "\u2028" not in body, key  # no way out of the element
        json.loads(body)
    for element in doc.iter():
        assert element.tag not in {"iframe", "object", "embed", "base", "form", "img", "link", "meta"} or (
            element.tag == "meta" and "javascript" not in str(element.attrs))
        for key, value in element.attrs.items():
            assert not key.startswith("on"), (element.tag, key, value)
            if key in ("href", "xlink:href"):
                assert value.startswith("#"), value
    assert sum(1 for e in doc.find_all("script") if e.attrs.get("type") != "application/json") == 1
    assert not any(e.tag in ("script", "foreignobject") for svg in doc.find_all("svg") for e in svg.iter())


def test_payloads_are_shown_as_text(pages, data):
    doc = parse(pages["csp"])
    text = doc.text_content()
    assert text.count("{{7*7}}") >= 10  # a template expression in data is data, not evaluated
    assert doc.find_all("title")[0].text_content() == data.title
    for run in data.runs:
        assert run.name in text  # names are shown verbatim, as text
    svg_text = " ".join(t.text_content() for svg in doc.find_all("svg") for t in svg.find_all("text"))
    assert "$\\frac{a}{b}$" in svg_text  # math text stays literal in figure labels
    assert "<img src=x onerror=" in svg_text  # and tags with markup are labels, not markup
    legends = " ".join(li.text_content() for li in doc.find_all("li") if "key" in li.classes())
    assert PAYLOADS[1] in legends and PAYLOADS[7] in legends  # legend entries carry tags as text


def test_embedded_json_round_trips_every_payload(pages, data):
    body = dict(raw_scripts(pages["csp"]))['<script type="application/json" id="tanalyze-data">']
    assert "</" not in body and "\u2028" not in body and "<" not in body
    assert json.loads(body) == report_dict(data)
    assert json.loads(body)["runs"][0]["info"]["hparams"]["line\u2028sep\u2029para"] == "line\u2028sep\u2029para"


@pytest.mark.parametrize("kind", ["csp", "no-csp"])
def test_nothing_executes_in_a_real_browser(pages, kind, tmp_path):
    page = tmp_path / f"xss-{kind}.html"
    page.write_text(pages[kind], encoding="utf-8")
    result = browser.load(page)
    assert "EXECUTED" not in result.dom
    assert "data-pwned" not in result.dom
    # our own script ran (allowed by its hash under the CSP) and found the table
    assert re.search(r'<div class="tz js">', result.dom), "the report's script did not run"
    assert 'class="controls"' in result.dom
    problems = [line for line in result.console if "Content Security Policy" in line or "Uncaught" in line
                or "rror" in line]
    assert problems == []


def test_the_browser_check_would_see_a_payload_run(pages, tmp_path):
    """Positive control: the same payload, deliberately left unescaped in a page without CSP, does run."""
    page = tmp_path / "control.html"
    page.write_text(pages["no-csp"].replace("</body>", f"{PAYLOADS[5]}</body>"), encoding="utf-8")
    result = browser.load(page)
    assert "EXECUTED" in result.dom and 'data-pwned="1"' in result.dom


def test_the_csp_alone_would_block_a_payload(pages, tmp_path):
    """Second wall: an unescaped handler in the CSP page is blocked, and the browser reports it."""
    page = tmp_path / "csp-control.html"
    page.write_text(pages["csp"].replace("</body>", f"{PAYLOADS[5]}</body>"), encoding="utf-8")
    result = browser.load(page)
    assert "EXECUTED" not in result.dom
    assert any("Content Security Policy" in line for line in result.console)


def test_chart_data_carries_payloads_as_json_strings(pages, data):
    """Each run's chart data names its run and tags exactly, as JSON strings in a non-executable element."""
    charts = json.loads(json_scripts(pages["csp"])["tz-charts"])["runs"]
    assert sorted(charts) == sorted(run.anchor for run in data.runs)
    for run in data.runs:
        chart = charts[run.anchor]
        assert chart["run"] == run.name
        assert [s["tag"] for s in chart["loss"]["series"]] == [run.series["train_loss"].tag, run.series["val_loss"].tag]


@pytest.mark.slow
def test_charts_drawn_from_payload_data_execute_nothing(pages, tmp_path):
    """Every run's interactive chart drawn (a tall window puts all in view): names and tags stay text."""
    page = tmp_path / "xss-charts.html"
    page.write_text(pages["csp"], encoding="utf-8")
    result = browser.load(page, "--window-size=1280,12000")
    assert result.dom.count('data-drawn="1"') == 4
    assert "EXECUTED" not in result.dom and "data-pwned" not in result.dom
    assert not [line for line in result.console if "Content Security Policy" in line or "Uncaught" in line]
