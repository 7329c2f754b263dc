"""What showing TensorBoard image summaries costs: the report's second pass over a run's event files, against
the scalar read it follows, and the page it makes.

    python bench/bench_images.py                # 4 tags × 500 steps of ~100 KB PNGs + 200,000 scalars (~200 MB)
    python bench/bench_images.py --steps 100    # smaller, quicker

The event file is generated once under bench/_data/ (noise PNGs, so that they do not compress). Printed: the
scalar read (``load``, no cache), the image pass (``read_images``), the peak memory of the image pass (tracemalloc),
the images kept and the page size of the report of that run.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO / "bench" / "_data"


def _png(rng: np.random.Generator, side: int) -> bytes:
    """A side×side RGB PNG of noise (incompressible: its size is about 3 × side² bytes)."""
    raw = b"".join(b"\x00" + rng.integers(0, 256, side * 3, dtype=np.uint8).tobytes() for _ in range(side))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def _generate(path: Path, tags: int, steps: int, scalars_per_step: int, side: int) -> None:
    from tensorboardX.proto import event_pb2, summary_pb2
    from tensorboardX.record_writer import masked_crc32c

    rng = np.random.default_rng(0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        def write(event) -> None:
            data = event.SerializeToString()
            header = struct.pack("<Q", len(data))
            out.write(header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data)))

        for step in range(steps):
            for k in range(scalars_per_step):
                value = summary_pb2.Summary.Value(tag=f"train/metric{k % 8}", simple_value=float(step * 7 + k))
                write(event_pb2.Event(wall_time=1.7e9 + step, step=step * scalars_per_step + k,
                                      summary=summary_pb2.Summary(value=[value])))
            for tag in range(tags):
                image = summary_pb2.Summary.Image(height=side, width=side, colorspace=3,
                                                  encoded_image_string=_png(rng, side))
                value = summary_pb2.Summary.Value(tag=f"images/{tag}", image=image)
                write(event_pb2.Event(wall_time=1.7e9 + step, step=(step + 1) * scalars_per_step - 1,
                                      summary=summary_pb2.Summary(value=[value])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tags", type=int, default=4)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--scalars-per-step", type=int, default=400)
    parser.add_argument("--side", type=int, default=180, help="image side in pixels (~3 × side² bytes each)")
    args = parser.parse_args()
    folder = DATA / f"images_{args.tags}x{args.steps}x{args.scalars_per_step}x{args.side}" / "run"
    path = folder / "events.out.tfevents.1700000000.host.1.0"
    if not path.exists():
        print(f"generating {path} …", flush=True)
        _generate(path, args.tags, args.steps, args.scalars_per_step, args.side)
    print(f"file: {os.path.getsize(path) / 1e6:,.0f} MB, {args.tags} tags × {args.steps} images, "
          f"{args.steps * args.scalars_per_step:,} scalars")

    from tanalyze import load
    from tanalyze.readers.tensorboard.images import read_images
    from tanalyze.report import report_paths
    from tanalyze.report.html import render_html

    start = time.perf_counter()
    logs = load(folder, cache=False, jobs=1)
    read = time.perf_counter() - start
    print(f"scalar read (load, no cache): {read:.2f} s, {len(logs.scalars):,} rows")
    start = time.perf_counter()
    images = read_images([path])
    second = time.perf_counter() - start
    tracemalloc.start()  # a second pass for the memory: tracing slows it down
    read_images([path])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    kept = sum(len(s.images) for s in images.series)
    print(f"image pass (read_images): {second:.2f} s ({second / read:.0%} of the read), peak {peak / 1e6:,.0f} MB "
          f"traced; kept {kept} images, {images.total_bytes / 1e6:.1f} MB; notes: {list(images.notes)}")
    data = report_paths([folder], jobs=1, cache=False)
    page = render_html(data).encode("utf-8")
    print(f"report page: {len(page) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
