import re

import numpy as np
import pytest

from tanalyze.report.figures import FigureMaker, compact, label_text, log_label
from tanalyze.report.model import build_report
from tanalyze.report.svgsafe import UnsafeSVGError, clean_svg
from tests.report.fakes import curves, diagnosis, frame_for, info, logs_of

SVG = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10pt" height="5pt" viewBox="0 0 10 5">{}</svg>'


@pytest.mark.parametrize(
    "inner",
    [
        "<script>alert(1)</script>",
        '<g onload="alert(1)"></g>',
        '<use xlink:href="http://example.com/x.svg#a"/>',
        '<image href="data:image/png;base64,AAAA"/>',
        "<foreignObject><div></div></foreignObject>",
        "< script>",
    ],
)
def test_active_svg_content_is_refused(inner):
    with pytest.raises(UnsafeSVGError):
        clean_svg(SVG.format(inner), "alt")


def test_clean_svg_keeps_drawing_and_drops_the_rest():
    inner = ('<metadata>x</metadata><defs><style>*{a:b}</style><clipPath id="p1"><rect/></clipPath></defs>'
             '<g id="figure_1"><path d="M 1.123456 2.987654 \nL 3.5 4.25 \nL 5 6" clip-path="url(#p1)"/>'
             '<text style="font-size: 8px; font-family: \'DejaVu Sans\', sans-serif; fill: #000" x="1.23456">a &lt;b&gt;</text></g>')
    out = clean_svg(SVG.format(inner), 'run "x" <y>')
    assert out.startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 5" class="chart" role="img"')
    assert 'aria-label="run &quot;x&quot; &lt;y&gt;"' in out
    assert "metadata" not in out and "<style" not in out and "font-family" not in out and "width=" not in out
    assert 'id="p1"' in out and 'id="figure_1"' not in out  # referenced ids stay, the others go
    assert 'd="M 1.1 2.9 3.5 4.2 5 6"' in out
    assert 'x="1.2"' in out and "a &lt;b&gt;" in out


def test_tick_labels_are_plain_text():
    assert [compact(v) for v in (0, 950, 12_000, 1_500_000, 2e9)] == ["0", "950", "12k", "1.5M", "2G"]
    assert [log_label(v) for v in (1e-6, 1e-3, 1.0, 100.0, 1e6, 3e7)] == ["1e-6", "0.001", "1", "100", "1e6", "3e+07"]


def test_labels_keep_leading_underscores_and_show_control_characters():
    assert label_text("_hidden") == "\u200b_hidden"
    assert label_text("a\x1b[31mb") == "a\\x1b[31mb"
    assert len(label_text("x" * 500, 60)) < 100


def test_dense_figures_become_png():
    runs = {"r": (frame_for("r", curves(n=3000)), info("r"))}
    data = build_report(logs_of(runs), {"r": diagnosis("r", "normal")})
    dense = FigureMaker(dense_points=100).loss(data.runs[0])
    assert dense.kind == "png" and dense.markup.startswith('<img class="chart" alt="Loss curves of run r" src="data:image/png;base64,')
    sparse = FigureMaker().loss(data.runs[0])
    assert sparse.kind == "svg" and sparse.points <= 4 * 320 * 2 + 30 * 2


def test_no_loss_role_means_no_loss_figure():
    by_tag = curves(n=100)
    runs = {"r": (frame_for("r", by_tag), info("r"))}
    data = build_report(logs_of(runs), {"r": diagnosis("r", "normal", roles={"learning_rate": "train/lr"})})
    maker = FigureMaker()
    assert maker.loss(data.runs[0]) is None
    aux = maker.aux(data.runs[0], ["learning_rate", "grad_norm"])
    assert aux is not None and "learning rate · train/lr" in aux.markup


def test_all_nan_curve_is_not_drawn():
    steps = np.arange(10)
    runs = {"r": (frame_for("r", {"loss": (steps, np.full(10, np.nan))}), info("r"))}
    data = build_report(logs_of(runs), {"r": diagnosis("r", "diverged", roles={"train_loss": "loss"})})
    assert FigureMaker().loss(data.runs[0]) is None
    assert data.runs[0].summary["train_loss"]["non_finite"] == 10


def _normalised(markup: str) -> str:
    return re.sub(r'(id="|#)[mp][0-9a-f]{10}', r"\1ID", markup)


def test_reused_figures_carry_nothing_over_from_the_previous_run():
    from tests.report.fakes import three_runs

    logs, diags = three_runs()
    data = build_report(logs, diags)
    normal, diverged = data.runs[0], data.runs[2]  # the diverged one has a log axis, spans and NaN marks
    fresh = FigureMaker()
    expected = (_normalised(fresh.loss(normal).markup), _normalised(fresh.aux(normal, ["learning_rate", "grad_norm"]).markup))
    reused = FigureMaker()
    reused.loss(diverged)
    reused.aux(diverged, ["learning_rate", "grad_norm"])
    again = (_normalised(reused.loss(normal).markup), _normalised(reused.aux(normal, ["learning_rate", "grad_norm"]).markup))
    assert again == expected


@pytest.mark.parametrize(
    ("values", "labels"),
    [([0, 2.5, 5, 7.5, 10], ["0", "2.5", "5.0", "7.5", "10.0"]), ([0.6, 1.2, 1.8], ["0.6", "1.2", "1.8"]),
     ([-0.5, 0, 0.5], ["-0.5", "0", "0.5"]), ([1000, 1500, 2000], ["1000", "1500", "2000"]),
     ([1e5, 1.5e5, 2e5], ["100k", "150k", "200k"]), ([1e-4, 2e-4], ["0.0001", "0.0002"]), ([], [])],
)
def test_linear_tick_labels_share_the_decimals_their_spacing_needs(values, labels):
    from tanalyze.report.svgaxes import linear_labels

    assert linear_labels(values) == labels


def test_axis_layer_puts_grid_under_and_labels_over_the_data():
    from tests.report.fakes import three_runs

    logs, diags = three_runs()
    svg = FigureMaker().loss(build_report(logs, diags).runs[1]).markup
    grid = svg.index("stroke: #e5e7eb")
    data = svg.index("stroke: #2563eb")
    labels = svg.index(">step</text>")
    assert grid < data < labels
    # tick values come from matplotlib's locator on the final limits (steps 0 .. 14,990 plus a 1% margin)
    texts = re.findall(r">([^<]+)</text>", svg)
    assert texts == ["0", "3k", "6k", "9k", "12k", "15k", "0.6", "1.2", "1.8", "2.4", "step", "loss"]
