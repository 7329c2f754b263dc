"""Speed and peak memory of tanalyze's TensorBoard reader against tbparse, CRC checks on.

Usage::

    python bench/bench_tensorboard.py                 # every case, both readers
    python bench/bench_tensorboard.py --cases a c --repeat 3
    python bench/bench_tensorboard.py --no-tbparse    # ours only (tbparse needs minutes)
    python bench/bench_tensorboard.py --stages        # where our time goes, stage by stage

Cases (generated once under ``bench/_data/`` and reused):

a. one file of 1,000,000 scalar events (10 tags x 100,000 steps) written by tensorboardX;
b. 50 runs x 20,000 scalars (4 tags x 5,000 steps each), tensorboardX;
c. 1,000,000 TF2-style scalars: 0-d DT_FLOAT tensors in ``tensor_content`` with
   ``scalars`` plugin metadata on every event, as ``tf.summary.scalar`` writes them
   (tensorboardX's protos and event writer; TensorFlow is not needed).

Every measurement runs in a fresh subprocess and reports its own peak RSS
(``ru_maxrss``, which includes the interpreter and its imports), so the two
readers never share memory or caches. Times are wall-clock seconds of the read
alone (``tanalyze.load`` vs ``SummaryReader(...).scalars``), best of
``--repeat`` / ``--tbparse-repeat`` runs, so that a busy machine distorts the
ratio less. tbparse gets the same folder; for case c its rows are in
``.tensors`` (TF2 scalars are tensors to it). The anchor is tbparse measured in
the same run: the table prints the ratio tbparse time / our time.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
REPO = HERE.parent
TAGS = [f"train/metric_{i}" for i in range(10)]
CASES = {
    "a": ("1M scalars, 1 file (tensorboardX)", "a_scalars_1m"),
    "b": ("50 runs x 20k scalars (tensorboardX)", "b_50_runs"),
    "c": ("1M TF2 tensor scalars, 1 file", "c_tf2_tensors_1m"),
}


def _value(step: int, tag_index: int) -> float:
    return math.exp(-step / 30000) * (1 + tag_index) + 0.01 * math.sin(step * 0.7 + tag_index)


def _make_scalars(folder: Path, tags: list[str], steps: int) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(folder), max_queue=10000, flush_secs=3600)
    for step in range(steps):
        for index, tag in enumerate(tags):
            writer.add_scalar(tag, _value(step, index), step)
    writer.close()


def _make_tf2_tensors(folder: Path, tags: list[str], steps: int) -> None:
    from tensorboardX.event_file_writer import EventFileWriter
    from tensorboardX.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

    writer = EventFileWriter(str(folder), max_queue_size=10000, flush_secs=3600, filename_suffix=".v2")
    templates = []
    for tag in tags:
        value = summary_pb2.Summary.Value(
            tag=tag,
            tensor=tensor_pb2.TensorProto(dtype=1, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                          tensor_content=b"\0\0\0\0"),
            metadata=summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")),
        )
        templates.append(event_pb2.Event(summary=summary_pb2.Summary(value=[value])))
    start = time.time()
    for step in range(steps):
        for index, template in enumerate(templates):
            event = event_pb2.Event()
            event.CopyFrom(template)
            event.wall_time = start + step * 0.01
            event.step = step
            event.summary.value[0].tensor.tensor_content = struct.pack("<f", _value(step, index))
            writer.add_event(event)
    writer.close()


def ensure_data(case: str) -> Path:
    folder = DATA / CASES[case][1]
    done = folder / ".complete"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    print(f"generating case {case} in {folder} (once) …", file=sys.stderr, flush=True)
    if case == "a":
        _make_scalars(folder, TAGS, 100_000)
    elif case == "b":
        for run in range(50):
            _make_scalars(folder / f"run_{run:02d}", TAGS[:4], 5_000)
    else:
        _make_tf2_tensors(folder, TAGS, 100_000)
    done.touch()
    return folder


def _child(reader: str, case: str) -> None:
    """Runs in the subprocess: read the case with one reader, print JSON figures."""
    folder = DATA / CASES[case][1]
    if reader == "ours":
        sys.path.insert(0, str(REPO))
        import tanalyze

        start = time.perf_counter()
        logs = tanalyze.load(folder)
        rows = len(logs.scalars)
    else:
        from tbparse import SummaryReader

        start = time.perf_counter()
        summary = SummaryReader(str(folder), pivot=False, extra_columns={"wall_time"})
        rows = len(summary.tensors if case == "c" else summary.scalars)
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rows": rows, "peak_mb": peak_mb}))


def stages(case: str, repeat: int) -> dict[str, float]:
    """CPU seconds of each stage of our reader on the case's first event file (best of ``repeat``)."""
    sys.path.insert(0, str(REPO))
    import tanalyze
    from tanalyze.readers.tensorboard._events import decode_events
    from tanalyze.readers.tensorboard.reader import TensorBoardReader, _mapped, _tfrecord

    folder = ensure_data(case)
    path = next(folder.rglob("events.out.tfevents.*"))
    best: dict[str, float] = {}

    def timed(name, function, *args):
        start = time.process_time()
        result = function(*args)
        best[name] = min(best.get(name, math.inf), time.process_time() - start)
        return result

    for _ in range(repeat):
        with _mapped(path) as buf:
            view, views = memoryview(buf), _tfrecord._Views(buf)
            offsets, _ = timed("frames + length CRCs", _tfrecord._walk, views, view, 0, {})
            timed("data CRCs", _tfrecord._data_ok, views, view, offsets)
            records = _tfrecord.scan_records(buf)
            timed("decode events", decode_events, buf, records.starts, records.lengths)
            del view, views
        timed("read() of the file", TensorBoardReader().read, [path])
        timed("load() of the case", tanalyze.load, folder)
    return best


def measure(reader: str, case: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", reader, case], capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"{reader} failed on case {case}:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    parser.add_argument("--repeat", type=int, default=5, help="runs of our reader per case (best time is shown)")
    parser.add_argument("--tbparse-repeat", type=int, default=2, help="runs of tbparse per case (best time is shown)")
    parser.add_argument("--no-tbparse", action="store_true", help="skip the tbparse anchor")
    parser.add_argument("--stages", action="store_true", help="where our time goes: CPU seconds per stage")
    parser.add_argument("--child", nargs=2, metavar=("READER", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    if args.stages:
        for case in args.cases:
            figures = stages(case, args.repeat)
            print(f"{case}. {CASES[case][0]} (first file; CPU s, best of {args.repeat})")
            for name, seconds in figures.items():
                print(f"    {name:<22} {seconds:6.3f}")
        return 0

    header = f"{'case':<40} {'ours s':>8} {'tbparse s':>10} {'ratio':>7} {'ours MB':>8} {'tbparse MB':>11} {'rows':>10}"
    lines = [header, "-" * len(header)]
    print(header, "\n" + lines[1], flush=True)
    for case in args.cases:
        ensure_data(case)
        ours = min((measure("ours", case) for _ in range(args.repeat)), key=lambda r: r["seconds"])
        theirs = None
        if not args.no_tbparse:
            theirs = min((measure("tbparse", case) for _ in range(args.tbparse_repeat)), key=lambda r: r["seconds"])
        if theirs and theirs["rows"] != ours["rows"]:
            print(f"  note: row counts differ (ours {ours['rows']:,}, tbparse {theirs['rows']:,})")
        ratio = f"{theirs['seconds'] / ours['seconds']:.1f}x" if theirs else "-"
        line = (
            f"{case + '. ' + CASES[case][0]:<40} {ours['seconds']:>8.2f} "
            f"{(theirs['seconds'] if theirs else float('nan')):>10.2f} {ratio:>7} "
            f"{ours['peak_mb']:>8.0f} {(theirs['peak_mb'] if theirs else float('nan')):>11.0f} {ours['rows']:>10,}"
        )
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
