"""A corpus of classic XSS payloads, put where real logs keep text, through the real readers and CLI.

Unlike ``test_report_xss.py`` (fake report data), every payload here travels the
whole way: folder names (run names), TensorBoard tags and text summaries,
``hparams.yaml`` keys and values, CSV column names and cells (which come back in
warnings), console-log exception lines (notes) and file names (warnings name
files). The page is written by ``python -m tanalyze report`` and checked
statically and in headless Chromium, with and without the CSP.

Payload ``i`` that runs sets ``data-pwned<i>`` on the root element; the code is
written so that the text ``data-pwned`` appears only if something ran. A control
page with the corpus pasted in raw shows which payloads are live in this browser,
so the report's "none ran" is a finding, not a blind spot.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.fuzz.events import frame, header_event, scalar_event
from tests.report import browser
from tests.report.htmlcheck import PAGE_SCRIPTS, json_scripts, parse, raw_scripts, script_kinds


def run_js(i: int) -> str:
    return f"document.documentElement.dataset['pwned'+{i}]='1'"


TEMPLATES = [
    "<script>{js}</script>",
    "<ScRiPt>{js}</sCrIpT>",
    "<img src=x onerror=\"{js}\">",
    "<svg onload=\"{js}\">",
    "<svg><script>{js}</script></svg>",
    "<body onload=\"{js}\">",
    "<details open ontoggle=\"{js}\">",
    "<input autofocus onfocus=\"{js}\">",
    "<video><source onerror=\"{js}\"></video>",
    "<iframe srcdoc=\"<script>parent.{js}</script>\"></iframe>",
    "\"><img src=x onerror=\"{js}\">",
    "'><img src=x onerror='{js}'>",
    "\" onmouseover=\"{js}\" autofocus onfocus=\"{js}\" x=\"",
    "</script><script>{js}</script>",
    "</title><script>{js}</script>",
    "</style><script>{js}</script>",
    "</textarea><script>{js}</script>",
    "--><script>{js}</script><!--",
    "]]><script>{js}</script>",
    "<a href=\"javascript:{js}\" id=jsurl>x</a>",
    "javascript:{js}",
    "<iframe src=\"javascript:parent.{js}\"></iframe>",
    "<object data=\"data:text/html,<script>parent.{js}</script>\"></object>",
    "<embed src=\"data:text/html,<script>{js}</script>\">",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:{js}\">",
    "<base href=\"javascript:{js}//\">",
    "<style>@import 'javascript:{js}';body{{background:expression({js})}}</style>",
    "<div style=\"width:expression({js})\">css</div>",
    "<math><mtext><table><mglyph><style><img src=x onerror=\"{js}\">",
    "<noscript><p title=\"</noscript><img src=x onerror={js}>\">",
    "&lt;script&gt;{js}&lt;/script&gt;",
    "&#60;img src=x onerror=&#34;{js}&#34;&#62;",
    "\\u003cscript\\u003e{js}\\u003c/script\\u003e",
    "\"}}];{js};//",
    "'-{js}-'",
    "${{{js}}}",
    "{{{{constructor.constructor('{js}')()}}}}",
    "{{% if 1 %}}{{{{ 7*7 }}}}{{% endif %}}",
    "$\\frac{{a}}{{b}}$ $\\sqrt{{$ \\mathrm{{x}}",
    "line\u2028sep\u2029para\u0085nel",
    "\u202egnp.exe\u202c \x1b[31mred\x1b[0m",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
]
CORPUS = [t.format(js=run_js(i)) for i, t in enumerate(TEMPLATES)]
MARKER = "data-pwned"


def _safe_part(text: str) -> str:
    """A file-name component (no '/', no NUL, not '.'/'..', at most 200 bytes)."""
    part = text.replace("\x00", "").replace("/", "_")
    while len(part.encode()) > 200:
        part = part[:-1]
    return part if part not in ("", ".", "..") else f"_{part}_"


def _folder(root: Path, payload: str) -> Path:
    """A folder whose path below ``root`` reads as the payload: '/' splits it into nested folders."""
    parts = [_safe_part(p) for p in payload.split("/")]
    return root.joinpath(*parts)


def _text_event(tag: str, text: str) -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

    tensor = tensor_pb2.TensorProto(dtype=7, string_val=[text.encode()],
                                    tensor_shape=tensor_shape_pb2.TensorShapeProto())
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    value = summary_pb2.Summary.Value(tag=f"{tag}/text_summary", tensor=tensor, metadata=meta)
    return event_pb2.Event(wall_time=1.7e9, step=1, summary=summary_pb2.Summary(value=[value])).SerializeToString()


def build_corpus_tree(root: Path, payloads: list[str] = CORPUS) -> Path:
    """Runs of several formats whose names, tags, configs, texts and warnings carry the payloads."""
    import yaml

    for i, payload in enumerate(payloads):
        run = _folder(root, f"run{i:02d} {payload}")
        run.mkdir(parents=True, exist_ok=True)
        kind = i % 3
        if kind == 0:  # TensorBoard: payload tags, a text summary, hparams.yaml, an empty event file
            records = [header_event()]
            for step in range(60):
                records.append(scalar_event(f"train/loss {payload}", step, 2.0 / (step + 1)))
                records.append(scalar_event(f"val/{payload}", step, 2.1 / (step + 1) + step / 400))
            records.append(_text_event(payload, f"notes: {payload}"))
            (run / "events.out.tfevents.1700000000.host.1.0").write_bytes(b"".join(frame(r) for r in records))
            (run / f"events.out.tfevents.1700000001.{_safe_part(payload)}.2.0").write_bytes(b"")
            (run / "hparams.yaml").write_text(yaml.safe_dump({payload: payload, "lr": 0.001, "note": payload}))
        elif kind == 1:  # CSV: payload column name, a payload cell (warning example), a payload config value
            rows = [f"{step},{1.5 / (step + 1):.5f},{0.9 - step / 200:.4f}" for step in range(60)]
            rows[10] = f"10,{json.dumps(payload)},0.5"
            header = f"step,{json.dumps('loss ' + payload)},{json.dumps(payload)}"
            (run / "metrics.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
            (run / "config.json").write_text(json.dumps({"lr": 0.01, "name": payload, payload: [payload]}))
        else:  # console log: nanoGPT lines, a traceback whose message is the payload (a note)
            lines = [f"iter {step}: loss {2.0 / (step + 1):.4f}, time 10.00ms, mfu 30.00%" for step in range(60)]
            lines += ["Traceback (most recent call last):", '  File "train.py", line 1, in <module>',
                      f"ValueError: {payload}"]
            (run / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def corpus_pages(tmp_path_factory):
    """The page as the CLI writes it (with CSP) and the same report without CSP, plus its JSON."""
    root = build_corpus_tree(tmp_path_factory.mktemp("xss") / "logs")
    out = tmp_path_factory.mktemp("out")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "tanalyze", "report", str(root), "-o", str(out / "cli.html"), "--json",
         str(out / "cli.json"), "--title", CORPUS[14], "--jobs", "1"],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from tanalyze.report import report_dict, report_paths
    from tanalyze.report.html import render_html

    data = report_paths([str(root)], title=CORPUS[14])
    no_csp = out / "no-csp.html"
    no_csp.write_text(render_html(data, csp=False, embed_json=report_dict(data), jobs=1), encoding="utf-8")
    # The same kinds of runs with plain names: which elements the report itself writes, and how many of each.
    clean_root = tmp_path_factory.mktemp("clean") / "logs"
    plain = build_corpus_tree(clean_root, payloads=[f"plain/name_{i}-with.many_parts/to_break-" * 4 for i in range(6)])
    clean_data = report_paths([str(plain)])
    clean = parse(render_html(clean_data, embed_json=report_dict(clean_data), jobs=1))
    counts: dict[str, int] = {}
    for element in clean.iter():
        counts[element.tag] = counts.get(element.tag, 0) + 1
    return {"cli": out / "cli.html", "no-csp": no_csp, "json": out / "cli.json", "runs": len(data.runs),
            "clean_tags": set(counts), "clean_counts": counts}


def test_every_payload_made_a_run(corpus_pages):
    assert corpus_pages["runs"] == len(CORPUS)


@pytest.mark.parametrize("kind", ["cli", "no-csp"])
def test_no_payload_is_markup_in_the_page(corpus_pages, kind):
    html = corpus_pages[kind].read_text(encoding="utf-8")
    assert MARKER not in html
    body = dict(raw_scripts(html))['<script type="application/json" id="tanalyze-data">']
    assert "<" not in body and "\u2028" not in body and "\u2029" not in body  # no way out of the script block
    json.loads(body)  # and, inside it, every string is a JSON string (a '"' in data comes out as '\"')
    markup = html
    for key, data in json_scripts(html).items():  # every JSON element: escaped, parseable, then set aside
        assert "<" not in data and "\u2028" not in data and "\u2029" not in data, key
        json.loads(data)
        markup = markup.replace(data, "")
    for payload in CORPUS:
        if any(c in payload for c in "<>\""):
            assert payload not in markup, payload
    doc = parse(html)
    [style] = doc.find_all("style")  # the report's own stylesheet, and no other
    assert "javascript" not in style.text_content() and "expression(" not in style.text_content()
    assert script_kinds(html) == PAGE_SCRIPTS
    for element in doc.iter():
        assert element.tag in corpus_pages["clean_tags"], f"<{element.tag}> is not an element the report writes"
    for tag in ("meta", "title", "body", "base", "style", "script", "link"):
        assert len(doc.find_all(tag)) <= corpus_pages["clean_counts"].get(tag, 0), tag  # (no-csp: one meta less)
        for key, value in element.attrs.items():
            assert not key.startswith("on"), (element.tag, key, value)
            assert key not in ("src", "srcdoc", "action", "formaction", "data", "background", "poster"), (key, value)
            if key in ("href", "xlink:href"):
                assert (value or "").startswith("#"), (key, value)  # in-page links only
            if key == "style":
                assert "javascript" not in (value or "") and "expression(" not in (value or ""), value


def test_payloads_are_kept_as_text_everywhere(corpus_pages):
    """Escaped, not dropped: the JSON keeps every payload exactly, and the page shows them as text."""
    report = json.loads(corpus_pages["json"].read_text(encoding="utf-8"))
    blob = json.dumps(report, ensure_ascii=False)
    for payload in CORPUS:
        assert json.dumps(payload, ensure_ascii=False)[1:-1] in blob or _safe_part(payload) in blob, payload
    text = parse(corpus_pages["cli"].read_text(encoding="utf-8")).text_content()
    assert "<script>" + run_js(0) + "</script>" in text


def test_the_corpus_is_live_in_this_browser(tmp_path):
    """Positive control: pasted raw into a page without CSP, most payloads do run (so 'none ran' means something)."""
    page = tmp_path / "control.html"
    page.write_text("<!doctype html><html><head><title>control</title></head><body>"
                    + "\n".join(f"<div>{p}</div>" for p in CORPUS) + "</body></html>", encoding="utf-8")
    result = browser.load(page)
    ran = {int(i) for i in re.findall(r'data-pwned(\d+)="1"', result.dom)}
    assert len(ran) >= 10, f"only {sorted(ran)} of {len(CORPUS)} payloads ran unescaped: is the check blind?"


@pytest.mark.parametrize("kind", ["cli", "no-csp"])
def test_nothing_runs_in_a_real_browser(corpus_pages, kind):
    result = browser.load(corpus_pages[kind])
    assert MARKER not in result.dom, re.findall(r"data-pwned\d+", result.dom)
    assert 'class="controls"' in result.dom, "the report's own script did not run"
    assert not [line for line in result.console if "Uncaught" in line]
