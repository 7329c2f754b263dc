import json
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

import tanalyze
from tanalyze.report import build_report, report_dict
from tanalyze.report.downsample import METHOD
from tanalyze.report.html import render_html
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of, three_runs
from tests.report.htmlcheck import parse, raw_scripts, sha256_source

NAMES = ["normal-run", "overfitting-run", "diverged-run"]


@pytest.fixture(scope="module")
def page():
    logs, diags = three_runs()
    data = build_report(logs, diags, title="Nightly runs", generated_at="2024-05-01T12:00:00Z")
    return data, render_html(data, embed_json=report_dict(data))


def _keys(element):
    """The HTML legend entries under a figure: (style, text)."""
    return [(next(c for c in li.classes() if c.startswith("key-"))[4:], li.text_content())
            for ul in element.find_all("ul") if "keys" in ul.classes() for li in ul.find_all("li")]


def _svg_text(section):
    return " ".join(t.text_content() for t in section.find_all("text"))


def test_every_run_is_in_the_summary_with_its_verdict(page):
    _, html = page
    doc = parse(html)
    assert html.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    assert doc.find_all("title")[0].text_content() == "Nightly runs"
    rows = doc.find_all("table", id="tz-summary")[0].find_all("tr")[1:]
    assert [r.attrs["data-verdict"] for r in rows] == ["normal", "overfitting", "diverged"]
    for row, name, label in zip(rows, NAMES, ["normal", "overfitting", "diverged"], strict=True):
        cells = row.find_all("td")
        assert cells[1].text_content().strip() == name
        assert cells[2].text_content().strip().endswith(label)
    # the overfitting onset and divergence step columns carry the diagnosis' steps
    assert rows[1].find_all("td")[6].text_content() == "6,000"
    assert rows[2].find_all("td")[7].text_content().startswith("10,500")


def test_every_run_has_a_section_with_badge_and_figures(page):
    _, html = page
    doc = parse(html)
    for index, (name, label) in enumerate(zip(NAMES, ["normal", "overfitting", "diverged"], strict=True), start=1):
        section = doc.find_all("section", id=f"run-{index}")[0]
        why = [p for p in section.find_all("p") if "evidence" in p.classes()][0]
        assert why.text_content() == f"Why: judged {label} from the loss curves"
        assert name in section.find_all("h2")[0].text_content()
        badges = [e for e in section.iter() if "badge" in e.classes()]
        assert f"v-{label}" in badges[0].classes()
        svgs = section.find_all("svg")
        assert len(svgs) == 2
        assert svgs[0].attrs["aria-label"] == f"Loss curves of run {name}"
        assert svgs[1].attrs["aria-label"].startswith("learning rate, gradient norm, throughput")


def test_loss_chart_marks_what_the_diagnosis_found(page):
    _, html = page
    doc = parse(html)
    overfit_figure = doc.find_all("section", id="run-2")[0].find_all("figure")[0]
    overfit = _svg_text(overfit_figure)
    stats = build_report(*three_runs()).runs[1].summary["val_loss"]
    assert _keys(overfit_figure) == [
        ("train", "train \u00b7 train/loss"), ("val", "val \u00b7 val/loss"), ("onset", "overfitting onset 6,000"),
        ("early", "early stop 7,500"), ("best", f"best val {stats['best']:.4g} at {stats['best_step']:,}"),
        ("spike", "1 spike"),
    ]
    diverged_figure = doc.find_all("section", id="run-3")[0].find_all("figure")[0]
    diverged = _svg_text(diverged_figure)
    assert [k for k in _keys(diverged_figure) if k[0] in ("diverged", "blowup", "resume", "nonfinite")] == [
        ("diverged", "diverged (explosion) at step 10,500"), ("blowup", "blow-up onset 10,400"),
        ("resume", "resume at or before 10,000"), ("nonfinite", "train NaN/inf: 5 points from step 14,950"),
    ]
    # the axis stops three decades above the pre-blow-up peak and says how far the loss went
    peak = np.nanmax(curves("diverged", seed=2)["train/loss"][1])
    assert f"\u2191 off the scale above: up to {peak:.3g}" in diverged and peak > 9000
    assert "loss (log scale)" in diverged  # 0.3 .. 1e4 spans more than 1.5 decades
    assert "loss (log scale)" not in overfit
    aux = doc.find_all("section", id="run-1")[0].find_all("figure")[1]
    assert "fig-aux" in aux.classes()
    assert aux.find_all("figcaption")[0].text_content() == (
        "Gradient norm: green band: healthy range 0.2\u20133; 1 \u25b2 explosion. "
        "Throughput: grey dashed: steady median 1202; grey dotted: warm-up ends (step 200); "
        "orange dashed: 1 lasting change; 1 \u25cf stall.")
    red_marks = [u for u in aux.find_all("svg")[0].iter() if u.tag == "use" and "fill: #dc2626" in u.attrs.get("style", "")]
    assert len(red_marks) == 2  # the explosion and the stall


def test_nothing_is_fetched_from_anywhere(page):
    _, html = page
    doc = parse(html)
    for element in doc.iter():
        assert element.tag not in {"link", "iframe", "object", "embed", "base", "form"}
        for key, value in element.attrs.items():
            if key.startswith("xmlns"):
                continue  # namespace names, never fetched
            assert not (value or "").lower().startswith(("http:", "https:", "//", "javascript:")), (element.tag, key)
            if key in ("href", "xlink:href"):
                assert value.startswith("#"), value
            if key == "src":
                assert value.startswith("data:image/png;base64,"), value
    for style in doc.find_all("style"):
        assert "url(" not in style.text_content() and "@import" not in style.text_content()


def test_csp_allows_exactly_the_inline_script(page):
    _, html = page
    doc = parse(html)
    metas = [m for m in doc.find_all("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert len(metas) == 1
    policy = dict(part.strip().split(" ", 1) for part in metas[0].attrs["content"].split(";"))
    assert policy["default-src"] == "'none'" and policy["img-src"] == "data:"
    assert policy["style-src"] == "'unsafe-inline'"
    scripts = raw_scripts(html)
    executable = [body for tag, body in scripts if "application/json" not in tag]
    assert len(executable) == 1
    assert policy["script-src"] == sha256_source(executable[0])
    # the CSP comes before anything it governs
    assert html.index("Content-Security-Policy") < html.index("<style>") < html.index("<script")


def test_embedded_json_is_the_report(page):
    data, html = page
    doc = parse(html)
    block = doc.find_all("script", id="tanalyze-data")[0]
    assert block.attrs["type"] == "application/json"
    assert json.loads(block.text_content()) == report_dict(data)


def test_footnotes_say_how_lines_are_drawn(page):
    _, html = page
    assert METHOD in html
    assert "computed from every logged point" in html


def test_rendering_leaves_matplotlib_global_state_alone():
    before = dict(matplotlib.rcParams)
    backend = matplotlib.get_backend()
    logs, diags = three_runs()
    tanalyze.report(logs, diags).to_html()
    assert dict(matplotlib.rcParams) == before
    assert matplotlib.get_backend() == backend


def test_fragment_for_jupyter_has_no_page_wrapper_and_no_script():
    logs, diags = three_runs()
    fragment = tanalyze.report(logs, diags).to_html(fragment=True)
    assert fragment.lstrip().startswith("<style>")
    assert "<html" not in fragment and "<script" not in fragment and "<!DOCTYPE" not in fragment
    assert 'class="tz tz-fragment"' in fragment
    # every rule of the style is scoped to the report's own class, so a notebook keeps its look
    style = re.search(r"<style>(.*?)</style>", fragment, re.S).group(1)
    selectors = re.findall(r"(?:^|})\s*([^{}@]+)\{", style)
    assert selectors and all(sel.strip().startswith(".tz") for s in selectors for sel in s.split(",")), selectors


def test_run_fragment_with_and_without_curves():
    logs, diags = three_runs()
    with_curves = parse(tanalyze.report(diags["overfitting-run"], scalars=logs).to_html(fragment=True))
    assert len(with_curves.find_all("svg")) == 2
    assert "Keep the checkpoint of step 6,000." in with_curves.text_content()
    bare = parse(tanalyze.report(diags["overfitting-run"]).to_html(fragment=True))
    assert bare.find_all("svg") == []
    assert "No loss curve to draw" in bare.text_content()


def test_compare_and_seed_groups_sections():
    runs, diags = {}, {}
    for k in range(3):
        name = f"base-s{k}"
        runs[name] = (frame_for(name, curves("normal", n=400, seed=k)), info(name))
        diags[name] = diagnosis(name, "normal")
    data = build_report(logs_of(runs), diags)
    doc = parse(render_html(data))
    compare = doc.find_all("section", id="compare")[0]
    labels = [s.attrs["aria-label"] for s in compare.find_all("svg")]
    assert labels == ["train loss 'train/loss' of 3 runs", "validation loss 'val/loss' of 3 runs"]
    seeds = doc.find_all("section", id="seeds")[0]
    assert "base" in seeds.find_all("h3")[0].text_content() and "3 seeds" in seeds.text_content()
    assert len(seeds.find_all("svg")) == 2


def test_many_runs_compare_highlights_the_five_best():
    runs, diags = {}, {}
    for k in range(14):
        name = f"trial{k:02d}"
        by_tag = curves("normal", n=200, seed=k)
        steps, values = by_tag["train/loss"]
        by_tag = {"train/loss": (steps, values + 0.01 * k)}
        runs[name] = (frame_for(name, by_tag), info(name, hparams={"trial": k}))
        diags[name] = diagnosis(name, "normal", roles={"train_loss": "train/loss"})
    html = render_html(build_report(logs_of(runs), diags))
    compare = parse(html).find_all("section", id="compare")[0]
    assert _keys(compare) == [("c0", "trial00"), ("c1", "trial01"), ("c2", "trial02"), ("c3", "trial03"),
                              ("c4", "trial04"), ("other", "9 other runs")]
    assert "five lowest final values are coloured" in compare.text_content()


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "\u2014"), ("nan", "NaN"), ("inf", "inf"), ("-inf", "\u2212inf"), (1234567, "1,234,567"),
     (0.123456, "0.1235"), (1234.5678, "1,235"), (3.0, "3"), (1e-7, "1e-07"), (2.5e16, "2.5e+16"), (True, "true"),
     ("<b>", "<b>")],
)
def test_number_formatting(value, text):
    from tanalyze.report.html import fmt_num

    assert fmt_num(value) == text


def test_run_fragment_draws_the_curves_a_diagnosis_object_keeps():
    from tanalyze.curves import Curve

    class Diagnosed:  # what a RunDiagnosis offers: to_dict() and the loss curves it analysed
        def __init__(self, d, curves):
            self._d, self.curves = d, curves

        def to_dict(self):
            return self._d

    steps, values = curves("overfitting")["val/loss"]
    train_steps, train_values = curves("overfitting")["train/loss"]
    obj = Diagnosed(diagnosis("r", "overfitting"), {"train_loss": Curve.from_arrays(train_steps, train_values, "train/loss"),
                                                   "val_loss": Curve.from_arrays(steps, values, "val/loss")})
    doc = parse(tanalyze.report(obj).to_html(fragment=True))
    svg = doc.find_all("svg")
    assert len(svg) == 1 and svg[0].attrs["aria-label"] == "Loss curves of run r"
    assert ("onset", "overfitting onset 6,000") in _keys(doc)


def test_multi_path_report_stops_at_a_missing_path_before_reading(tmp_path):
    from tanalyze.errors import InputError
    from tanalyze.report import report_paths

    with pytest.raises(InputError, match="nope: no such file or folder"):
        report_paths([tmp_path, tmp_path / "nope"])


def test_findings_past_three_fold_away_and_the_headline_explains_the_verdict():
    findings = [
        {"code": "plateau", "severity": "info", "step": 1, "message": "p1", "recommendation": "r"},
        {"code": "grad_explosion", "severity": "error", "step": 10, "message": "grad exploded", "recommendation": "clip"},
        {"code": "loss_spike", "severity": "info", "step": 2, "message": "s1", "recommendation": "r"},
        {"code": "diverged_nonfinite", "severity": "error", "step": 50, "message": "loss became NaN", "recommendation": "resume"},
        {"code": "early_stopping", "severity": "info", "step": 3, "message": "e1", "recommendation": "r"},
    ]
    runs = {"r": (frame_for("r", curves("diverged", n=200)), info("r"))}
    data = build_report(logs_of(runs), {"r": diagnosis("r", "diverged", findings=findings)})
    doc = parse(render_html(data))
    section = doc.find_all("section", id="run-1")[0]
    column = [d for d in section.find_all("div") if "findings" in d.classes()][0]
    shown = column.find_all("ol")[0]
    assert [li.find_all("code")[0].text_content() for li in shown.children] == ["grad_explosion", "diverged_nonfinite", "plateau"]
    more = [d for d in column.find_all("details") if "more" in d.classes()][0]
    assert more.find_all("summary")[0].text_content() == "2 more findings (2 info)"
    attention = doc.find_all("section", id="attention")[0]
    assert "loss became NaN" in attention.text_content() and "grad exploded" not in attention.text_content()


def test_step_times_below_a_second_are_shown_in_milliseconds():
    runs = {"r": (frame_for("r", curves(n=100)), info("r"))}
    throughput = {"tag": None, "unit": "s/step", "higher_is_better": False, "steady_median": 0.00104}
    data = build_report(logs_of(runs), {"r": diagnosis("r", "normal", throughput=throughput)})
    assert data.runs[0].summary["throughput"] == {"role": "step_time", "tag": None, "median": pytest.approx(1.04),
                                                  "unit": "ms/step"}
    row = parse(render_html(data)).find_all("table", id="tz-summary")[0].find_all("tr")[1]
    assert row.find_all("td")[8].text_content() == "1.04 ms/step"


def test_small_panels_go_under_the_loss_chart_when_findings_are_long():
    roles = {"train_loss": "train/loss", "learning_rate": "train/lr"}
    two = [{"code": c, "severity": "warning", "step": 1, "message": c, "recommendation": "r"} for c in ("plateau", "slow_progress")]
    runs = {name: (frame_for(name, curves(n=300)), info(name)) for name in ("long", "short")}
    diags = {"long": diagnosis("long", "normal", roles=roles, findings=two),
             "short": diagnosis("short", "normal", roles=roles, findings=two[:1])}
    doc = parse(render_html(build_report(logs_of(runs), diags)))
    for index, beside in ((1, True), (2, False)):
        section = doc.find_all("section", id=f"run-{index}")[0]
        left = [d for d in section.find_all("div") if "left" in d.classes()][0]
        aux = [f for f in section.find_all("figure") if "fig-aux" in f.classes()][0]
        assert (aux in left.children) is beside


DISTRIBUTED = Path(__file__).parent.parent / "fixtures" / "distributed_timers"


def test_per_rank_panel_marks_the_straggler_with_each_ranks_time_and_communication_share():
    logs = tanalyze.load(DISTRIBUTED / "ranks" / "straggler", cache=False)
    diagnosis = tanalyze.diagnose(logs)["straggler"]
    doc = parse(tanalyze.report(logs).to_html())
    (table,) = doc.find_all("table", **{"class": "ranks"})
    rows = [[c.text_content().strip() for c in r.find_all("td")] for r in table.find_all("tr")[1:]]
    stats = {r.rank: r for r in diagnosis.ranks.ranks}
    shares = {r.rank: r.median_share for r in diagnosis.communication.per_rank}
    assert [row[0] for row in rows] == ["0", "1"]
    for row in rows:
        rank = int(row[0])
        assert row[1] == f"{stats[rank].step_seconds * 1000:.3g} ms"
        assert row[3] == f"{shares[rank] * 100:.2g}%"
    assert rows[0][5].startswith("straggler: the others wait") and rows[1][5] == ""
    flagged = [r for r in table.find_all("tr") if "rank-flag" in r.classes()]
    assert len(flagged) == 1 and flagged[0].find_all("td")[0].text_content() == "0"
    bars = [b.attrs["style"] for b in table.find_all("span", **{"class": "bar"})]
    assert bars[0] == "width:120px" and bars[1] == f"width:{round(120 * stats[1].step_seconds / stats[0].step_seconds)}px"
    assert "step time less communication" in table.find_all("caption")[0].text_content()
    (comm,) = [p for p in doc.find_all("p") if "comm" in p.classes()]
    assert comm.text_content().startswith(f"Communication: {diagnosis.communication.median_share * 100:.2g}% of each step")


def test_nccl_text_in_the_panel_is_escaped(tmp_path):
    log = tmp_path / "job" / "train.log"
    log.parent.mkdir()
    log.write_text((DISTRIBUTED / "console" / "balanced" / "train.log").read_text()
                   + "host-a:1:1 [0] NCCL INFO Using network <img/src=x/onerror=alert(1)>\n"
                   + "host-b:2:2 [0] NCCL INFO Using network <img/src=x/onerror=alert(1)>\n")
    html = tanalyze.report(tanalyze.load(tmp_path, cache=False)).to_html()
    assert "<img/src=x" not in html and "&lt;img/src=x/onerror=alert(1)&gt;" in html
    (nccl,) = [p for p in parse(html).find_all("p") if "nccl" in p.classes()]
    assert "network <img/src=x/onerror=alert(1)>" in nccl.text_content() and "2 host(s)" in nccl.text_content()
