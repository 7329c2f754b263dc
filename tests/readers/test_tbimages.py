"""The image summaries of a TensorBoard run (readers/tensorboard/images.py): decoded exactly, bounded, checked."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage
from tensorboardX.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

from tanalyze import load
from tanalyze.readers.tensorboard.images import has_images, image_kind, read_images
from tests.conftest import real_log
from tests.readers.test_tensorboard import write_events

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "images"
TRUTH = json.loads((FIXTURES / "TRUTH.json").read_text(encoding="utf-8"))
YOLOV5 = "tfevents/483172__yolov5-custom_lego_dataset-2022-06-15/runs/train/exp"
TF2_OD = "tfevents/Harry0415__TensorFlow-Object-Detection-API-implement/workspace/training_demo/models/my_ssd_resnet50_v1_fpn/train"


def png(width: int = 8, height: int = 8, shade: int = 0) -> bytes:
    out = io.BytesIO()
    PILImage.new("L", (width, height), shade).save(out, format="PNG")
    return out.getvalue()


def image_event(tag: str, step: int, data: bytes, width: int = 8, height: int = 8) -> event_pb2.Event:
    image = summary_pb2.Summary.Image(height=height, width=width, colorspace=1, encoded_image_string=data)
    return event_pb2.Event(wall_time=1.7e9 + step, step=step,
                           summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=image)]))


def scalar_event(tag: str, step: int, value: float) -> event_pb2.Event:
    return event_pb2.Event(wall_time=1.7e9 + step, step=step,
                           summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]))


def files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*tfevents*"))


@pytest.mark.parametrize("name", ["torch_images", "tf2_images"])
def test_fixtures_decode_to_their_exact_tags_steps_and_sizes(name):
    images = read_images(files(FIXTURES / name))
    truth = TRUTH[name]
    assert sorted(s.tag for s in images.series) == sorted(truth)
    for series in images.series:
        want = truth[series.tag]
        assert [i.step for i in series.images] == want["steps"]
        assert series.logged == len(want["steps"])
        assert series.samples == want.get("samples", 1)
        assert {(i.kind, i.width, i.height) for i in series.images} == {("png", want["width"], want["height"])}
        # each image is really that picture: PIL agrees on the size
        for image in series.images:
            assert PILImage.open(io.BytesIO(image.data)).size == (want["width"], want["height"])
            assert image.data_uri().startswith("data:image/png;base64,iVBORw0KGgo")
    assert images.notes == ()


def test_the_pictures_differ_by_step():
    [attention] = [s for s in read_images(files(FIXTURES / "torch_images")).series if s.tag == "attention/head0"]
    assert len({i.data for i in attention.images}) == len(attention.images)


def test_the_event_reader_notes_say_when_there_are_images():
    logs = load(FIXTURES / "torch_images", cache=False)
    [info] = logs.runs.values()
    assert has_images(info.notes)
    assert not has_images(["skipped 1 graph (tanalyze reads scalars, histograms, hparams and text)"])
    assert set(logs.scalars["tag"]) == {"train/loss"}  # images never enter the tidy table


def test_a_corrupt_image_gives_a_note_and_the_rest_is_kept(tmp_path):
    path = write_events(tmp_path / "events.out.tfevents.1700000000.host.1.0", [
        scalar_event("loss", 0, 1.0),
        image_event("good", 0, png(shade=10)),
        image_event("broken", 0, b"\x89PNG\r\n\x1a\n" + b"\x00" * 5),  # a PNG cut short: no header
        image_event("broken", 1, b"<svg onload=alert(1)>"),  # not an image at all: never embedded
        image_event("good", 1, png(shade=20)),
    ])
    images = read_images([path])
    assert [(s.tag, [i.step for i in s.images]) for s in images.series] == [("good", [0, 1])]
    assert images.notes == (
        "image 'broken' at step 0: not a valid PNG, JPEG or GIF image (13 bytes); not shown",
        "image 'broken' at step 1: not a valid PNG, JPEG or GIF image (21 bytes); not shown",
    )


def test_an_oversized_image_gives_a_note(tmp_path):
    big = png(64, 64) + b"\x00" * 4000  # trailing bytes: still a valid PNG header, but large
    # a tiny file whose header declares a huge picture (the browser would decode it)
    bomb = bytearray(png(8, 8))
    bomb[16:24] = struct.pack(">II", 100_000, 100_000)
    path = write_events(tmp_path / "events.out.tfevents.1700000000.host.1.0", [
        image_event("big", 3, big), image_event("bomb", 4, bytes(bomb)), image_event("small", 5, png()),
    ])
    images = read_images([path], max_image_bytes=2000)
    assert [s.tag for s in images.series] == ["small"]
    assert images.notes[0] == f"image 'big' at step 3: {len(big):,} bytes, over the 2,000-byte limit per image; not embedded"
    assert images.notes[1].startswith("image 'bomb' at step 4: 100,000×100,000 pixels, over the ")


def test_many_steps_keep_an_even_spread_with_the_last(tmp_path):
    path = write_events(tmp_path / "events.out.tfevents.1700000000.host.1.0",
                        [image_event("a", step, png(shade=step)) for step in range(0, 250, 10)])
    [series] = read_images([path], per_tag=10).series
    steps = [i.step for i in series.images]
    assert len(steps) == 10 and steps[0] == 0 and steps[-1] == 240 and steps == sorted(steps)
    assert series.logged == 25


def test_a_step_logged_twice_shows_the_newest(tmp_path):
    path = write_events(tmp_path / "events.out.tfevents.1700000000.host.1.0",
                        [image_event("a", 0, png(shade=1)), image_event("a", 0, png(shade=2))])
    [series] = read_images([path]).series
    assert [i.data for i in series.images] == [png(shade=2)]


def test_the_run_budget_keeps_the_last_image_of_every_tag(tmp_path):
    events = [image_event(tag, step, png(32, 32, shade=step * 7 + len(tag)) + bytes(300))
              for step in range(10) for tag in ("a", "b")]
    path = write_events(tmp_path / "events.out.tfevents.1700000000.host.1.0", events)
    full = read_images([path])
    one = len(full.series[0].images[0].data)
    images = read_images([path], max_run_bytes=5 * one)
    assert images.total_bytes <= 5 * one
    assert [s.images[-1].step for s in images.series] == [9, 9]
    assert images.notes == (f"15 image(s) not embedded to keep this run's images under {5 * one:,} bytes",)


def test_a_truncated_file_gives_the_images_before_the_cut(tmp_path):
    [source] = files(FIXTURES / "torch_images")
    data = source.read_bytes()
    cut = tmp_path / source.name
    cut.write_bytes(data[: len(data) * 2 // 3])
    images = read_images([cut])  # no exception; what is intact is there
    assert images.series and all(i.step <= 4 for s in images.series for i in s.images)


def test_tf2_tensor_with_an_unreadable_size_still_uses_the_bytes(tmp_path):
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="images"))
    tensor = tensor_pb2.TensorProto(dtype=7, tensor_shape=tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=3)]), string_val=[b"x", b"y", png(5, 7)])
    value = summary_pb2.Summary.Value(tag="t", tensor=tensor, metadata=meta)
    empty = tensor_pb2.TensorProto(dtype=7, string_val=[b"1", b"1"])
    path = write_events(tmp_path / "events.out.tfevents.1700000000.host.1.0", [
        event_pb2.Event(step=2, summary=summary_pb2.Summary(value=[value])),
        event_pb2.Event(step=3, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="t", tensor=empty)])),
    ])
    images = read_images([path])
    assert [(i.step, i.width, i.height) for i in images.series[0].images] == [(2, 5, 7)]
    assert images.notes == ("image 't' at step 3: an images tensor holds no image; not shown",)


def test_image_kind_checks_magic_numbers_and_headers():
    assert image_kind(png(3, 5)) == ("png", 3, 5)
    jpeg, gif = io.BytesIO(), io.BytesIO()
    PILImage.new("RGB", (9, 4)).save(jpeg, format="JPEG")
    PILImage.new("P", (6, 2)).save(gif, format="GIF")
    assert image_kind(jpeg.getvalue()) == ("jpeg", 9, 4)
    assert image_kind(gif.getvalue()) == ("gif", 6, 2)
    assert image_kind(b"\xff\xd8\xff\xe0\x00\x02") is None  # a JPEG with no frame header
    assert image_kind(b"GIF89a") is None
    assert image_kind(b"BM....") is None  # BMP, SVG, anything else: never embedded
    assert image_kind(b"") is None


def test_real_yolov5_plots():
    images = read_images(files(real_log(YOLOV5)))
    assert [(s.tag, [i.step for i in s.images], s.images[-1].width, s.images[-1].height) for s in images.series] == [
        ("results", [49], 2400, 1200), ("confusion_matrix", [49], 3000, 2250), ("F1_curve", [49], 2250, 1500),
        ("PR_curve", [49], 2250, 1500), ("P_curve", [49], 2250, 1500), ("R_curve", [49], 2250, 1500),
    ]


def test_real_tf2_object_detection_input_batches():
    [series] = read_images(files(real_log(TF2_OD))).series
    assert (series.tag, series.logged, series.samples, len(series.images)) == ("train_input_images", 52, 3, 10)
    assert series.images[0].step == 0 and series.images[-1].step == 5100
    assert {(i.kind, i.width, i.height) for i in series.images} == {("png", 512, 512)}


@settings(max_examples=300, deadline=None)
@given(prefix=st.sampled_from([b"", b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", b"GIF89a",
                               b"\xff\xd8\xff", b"\xff\xd8\xff\xc0"]), rest=st.binary(max_size=64))
def test_image_kind_never_raises_and_gives_a_positive_size(prefix, rest):
    kind = image_kind(prefix + rest)
    assert kind is None or (kind[0] in ("png", "jpeg", "gif") and kind[1] > 0 and kind[2] > 0)
