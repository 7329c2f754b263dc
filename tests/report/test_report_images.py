"""TensorBoard image summaries in the report: a figure per tag with its last image and a step slider, checked
bytes only (data: URIs of PNG/JPEG/GIF), notes for what is left out, the JSON listing them without bytes, and
the results cache keeping them while the files are unchanged."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from PIL import Image as PILImage

import tanalyze
from tanalyze.cache import Cache
from tanalyze.readers.tensorboard.images import image_kind
from tanalyze.report import report_dict, report_paths
from tanalyze.report.html import render_html
from tests.readers.test_tbimages import image_event, png, scalar_event
from tests.readers.test_tensorboard import write_events
from tests.report.htmlcheck import parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "images"
TRUTH = json.loads((FIXTURES / "TRUTH.json").read_text(encoding="utf-8"))
SCHEMA = json.loads((Path(tanalyze.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fixture_report():
    return report_paths([FIXTURES], jobs=1, cache=False)


def figures_of(html: str, anchor: str):
    dom = parse(html)
    [section] = dom.find_all("section", id=anchor)
    return [e for e in section.iter() if e.tag == "figure" and "img-series" in e.classes()]


def decoded(src: str) -> bytes:
    match = re.fullmatch(r"data:image/(png|jpeg|gif);base64,([A-Za-z0-9+/=]+)", src)
    assert match, src[:80]
    return base64.b64decode(match.group(2))


def test_each_tag_is_a_figure_with_its_last_image_shown_and_a_slider(fixture_report):
    html = render_html(fixture_report)
    for run in fixture_report.runs:
        truth = TRUTH[run.name]
        figures = figures_of(html, run.anchor)
        assert len(figures) == len(truth)
        for figure in figures:
            tag = figure.find_all("code")[0].text_content()
            steps = truth[tag]["steps"]
            images = figure.find_all("img")
            assert [img.attrs["data-step"] for img in images] == [str(s) for s in steps]
            # without scripts: the last image only
            shown = [img for img in images if "hidden" not in img.attrs]
            assert [img.attrs["data-step"] for img in shown] == [str(steps[-1])]
            assert shown[0].attrs["alt"] == f"{tag} at step {steps[-1]}"
            for img in images:
                data = decoded(img.attrs["src"])
                assert image_kind(data) == ("png", truth[tag]["width"], truth[tag]["height"])
                assert PILImage.open(io.BytesIO(data)).size == (truth[tag]["width"], truth[tag]["height"])
                assert int(img.attrs["width"]) <= 360 and int(img.attrs["height"]) <= 300
            sliders = figure.find_all("input")
            if len(steps) > 1:
                [slider] = sliders
                assert (slider.attrs["type"], slider.attrs["min"], slider.attrs["max"], slider.attrs["value"]) == (
                    "range", "0", str(len(steps) - 1), str(len(steps) - 1))
                assert "hidden" in slider.attrs  # the script shows it; useless without scripts
            else:
                assert sliders == []
            caption = figure.find_all("figcaption")[0].text_content()
            assert f"step {steps[-1]}" in caption


def test_small_images_are_enlarged_by_a_whole_factor(fixture_report):
    html = render_html(fixture_report)
    run = next(r for r in fixture_report.runs if r.name == "torch_images")
    for figure in figures_of(html, run.anchor):
        img = figure.find_all("img")[-1]
        data = decoded(img.attrs["src"])
        _, width, height = image_kind(data)
        factor = int(img.attrs["width"]) / width
        assert factor == int(factor) >= 2 and int(img.attrs["height"]) == height * factor
        assert "px" in img.classes()


def test_json_lists_images_without_their_bytes(fixture_report):
    report = report_dict(fixture_report)
    jsonschema.Draft202012Validator(SCHEMA).validate(report)
    for run in report["runs"]:
        truth = TRUTH[run["run"]]
        listed = {s["tag"]: s for s in run["images"]["series"]}
        assert set(listed) == set(truth)
        for tag, want in truth.items():
            assert [i["step"] for i in listed[tag]["images"]] == want["steps"]
            assert {(i["width"], i["height"], i["format"]) for i in listed[tag]["images"]} == {
                (want["width"], want["height"], "png")}
            assert listed[tag]["samples"] == want.get("samples", 1)
    text = json.dumps(report)
    assert "base64" not in text and "iVBORw0KGgo" not in text


def test_runs_without_images_have_none(tmp_path):
    (tmp_path / "run").mkdir()
    write_events(tmp_path / "run" / "events.out.tfevents.1700000000.host.1.0",
                 [scalar_event("loss", step, 1.0 / (step + 1)) for step in range(5)])
    data = report_paths([tmp_path], jobs=1, cache=False)
    assert data.runs[0].images is None
    assert report_dict(data)["runs"][0]["images"] is None
    assert 'class="images"' not in render_html(data)


def hostile_run(folder: Path) -> Path:
    folder.mkdir(parents=True)
    events = [scalar_event("loss", step, 1.0 / (step + 1)) for step in range(4)]
    events += [
        image_event('<img src=x onerror=alert(1)>"', 0, png(shade=5)),
        image_event("corrupt", 1, b"\x89PNG\r\n\x1a\nnot really"),
        image_event("svg", 2, b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'),
        image_event("huge", 3, png(64, 64) + bytes(700_000)),
        image_event("fine", 3, png(4, 4, shade=9)),
    ]
    return write_events(folder / "events.out.tfevents.1700000000.host.1.0", events)


def test_corrupt_and_oversized_images_give_notes_not_a_crash(tmp_path):
    hostile_run(tmp_path / "logs" / "hostile")
    data = report_paths([tmp_path / "logs"], jobs=1, cache=False)
    [run] = data.runs
    html = render_html(data)
    tags = [f.find_all("code")[0].text_content() for f in figures_of(html, run.anchor)]
    assert tags == ['<img src=x onerror=alert(1)>"', "fine"]
    # the tag is text: escaped in the caption and the alt attribute, never markup
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    notes = run.images.notes
    assert notes[0] == "image 'corrupt' at step 1: not a valid PNG, JPEG or GIF image (18 bytes); not shown"
    assert notes[1].startswith("image 'svg' at step 2: not a valid PNG, JPEG or GIF image")
    assert notes[2].startswith("image 'huge' at step 3: ") and "over the 524,288-byte limit per image" in notes[2]
    for note in notes:
        assert note.replace("'", "&#39;") in html
    # every image in the page is a data: URI of checked PNG bytes; no SVG or other markup is ever embedded
    srcs = re.findall(r'<img src="([^"]*)"', html)
    assert srcs and all(src.startswith("data:image/png;base64,") for src in srcs)
    assert "image/svg" not in html
    report = report_dict(data)
    jsonschema.Draft202012Validator(SCHEMA).validate(report)
    assert report["runs"][0]["images"]["notes"] == list(notes)


def test_the_results_cache_keeps_images_until_the_files_change(tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES / "torch_images", root / "torch_images")
    cache = Cache(str(tmp_path / "cache"))
    cold = report_paths([root], jobs=1, cache=cache)
    warm = report_paths([root], jobs=1, cache=cache)
    assert [i.data for s in warm.runs[0].images.series for i in s.images] == \
        [i.data for s in cold.runs[0].images.series for i in s.images]
    assert warm.runs[0].images.to_dict() == cold.runs[0].images.to_dict()
    assert render_html(warm).count("<img ") == render_html(cold).count("<img ") == 10
    # the run grows: a new image at step 9 replaces nothing, and is the last shown
    [path] = (root / "torch_images").glob("*tfevents*")
    extra = write_events(tmp_path / "extra", [image_event("attention/head0", 9, png(16, 16, shade=200))])
    with open(path, "ab") as handle:
        handle.write(extra.read_bytes())
    grown = report_paths([root], jobs=1, cache=cache)
    [attention] = [s for s in grown.runs[0].images.series if s.tag == "attention/head0"]
    assert [i.step for i in attention.images] == [0, 1, 2, 3, 4, 9]
    assert attention.images[-1].data == png(16, 16, shade=200)


def test_the_page_budget_keeps_the_last_image_of_later_runs(fixture_report, monkeypatch):
    import tanalyze.report.html as html_module

    first, second = fixture_report.runs
    last_only = sum(len(s.images[-1].data) for s in second.images.series)
    monkeypatch.setattr(html_module, "PAGE_IMAGE_BYTES", first.images.total_bytes + last_only)
    html = render_html(fixture_report)
    assert [len(f.find_all("img")) for f in figures_of(html, first.anchor)] == \
        [len(s.images) for s in first.images.series]
    later = figures_of(html, second.anchor)
    assert [len(f.find_all("img")) for f in later] == [1] * len(second.images.series)
    assert [f.find_all("img")[0].attrs["data-step"] for f in later] == [str(s.images[-1].step) for s in second.images.series]
    assert all(f.find_all("input") == [] for f in later)
    assert "only the last image of each tag is embedded" in html
    monkeypatch.setattr(html_module, "PAGE_IMAGE_BYTES", first.images.total_bytes)
    html = render_html(fixture_report)
    assert figures_of(html, second.anchor) == [] and "images not embedded: the page&#39;s images reached" in html


def test_a_cached_image_is_checked_again_when_loaded(fixture_report):
    from tanalyze.report.runcache import dump_views, load_views

    views = list(fixture_report.runs)
    extra, arrays = dump_views(views)
    diagnoses = [v.diagnosis for v in views]
    again = load_views(extra, arrays, diagnoses)
    assert [v.images.to_dict() for v in again] == [v.images.to_dict() for v in views]
    key = next(k for k in arrays if ":image:" in k)
    arrays[key] = np.frombuffer(b"<svg onload=alert(1)>", dtype=np.uint8)
    assert load_views(extra, arrays, diagnoses) is None  # not an image: the entry is not used, the run is read again
