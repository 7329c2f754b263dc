"""A console log that grew by one line, read again through the cache (run on demand).

    python bench/bench_text_cache.py            # a 51 MB nanoGPT log of about 1,000,000 iterations
    python bench/bench_text_cache.py --mb 200

The log (``text_logs.make_nanogpt``, written once under ``bench/_data/``) is copied to
a scratch folder and loaded through an empty cache (cold), then one iteration line is
appended and it is loaded again (re-read): only the appended bytes are parsed and the
cached run is extended with their rows. Both loads build the table (``Logs.scalars``).
The re-read table is checked equal to an uncached load. Wall-clock seconds, in one
process (imports paid before either).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pandas as pd  # noqa: E402

import tanalyze  # noqa: E402
from bench.text_logs import make_nanogpt  # noqa: E402
from tanalyze.cache import Cache  # noqa: E402
from tanalyze.readers.text import _parts as _textparts  # noqa: E402


def _load(folder: Path, cache: Cache | bool) -> tuple[float, pd.DataFrame]:
    start = time.perf_counter()
    table = tanalyze.load(folder, jobs=1, cache=cache).scalars
    return time.perf_counter() - start, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=51, help="size of the log (default 51)")
    args = parser.parse_args()
    source = HERE / "_data" / f"nanogpt_{args.mb}mb.log"
    if not source.exists():
        source.parent.mkdir(parents=True, exist_ok=True)
        make_nanogpt(source, args.mb)
    parsed: list[int] = []
    original = _textparts.read_part

    def counting(path, parser, start=0, state=None, chunk_chars=_textparts.CHUNK_CHARS):
        parsed.append(start)
        return original(path, parser, start, state, chunk_chars)

    _textparts.read_part = counting
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "run"
        folder.mkdir()
        log = folder / "train.log"
        shutil.copyfile(source, log)
        cache = Cache(str(Path(scratch) / "cache"))
        size = log.stat().st_size
        from tanalyze.readers import get_readers

        get_readers()  # their imports, before timing anything
        cold, table = _load(folder, cache)
        last = int(table["step"].max())
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"iter {last + 1}: loss 1.2345, time 301.00ms, mfu 44.00%\n")
        parsed.clear()
        again, grown = _load(folder, cache)
        tail = list(parsed)
        _, fresh = _load(folder, False)
    pd.testing.assert_frame_equal(grown, fresh, check_exact=True)
    print(f"{size / (1 << 20):.1f} MB nanoGPT log, {len(table):,} points; one line appended")
    print(f"cold load (empty cache)     {cold:6.2f} s")
    print(f"re-read after the append    {again:6.2f} s  (parsed from byte {tail} of {size:,}; "
          f"{len(grown) - len(table)} new points)")
    print(f"re-read is {cold / again:.1f}x faster than the cold load; equal to an uncached load: True")
    return 0


if __name__ == "__main__":
    sys.exit(main())
