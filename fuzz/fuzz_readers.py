"""Coverage-guided fuzzing of the readers with atheris (libFuzzer), run on demand.

    python fuzz/fuzz_readers.py --reader tensorboard -runs=20000
    python fuzz/fuzz_readers.py --reader all -max_total_time=600      # every reader in turn
    python fuzz/fuzz_readers.py --list

The fuzzer mutates the bytes of one file of a real run (the seeds of
``tests/fuzz/harness.py``: sample runs and the real-log corpus) and reads the
run with the reader directly and, every few inputs, through ``tanalyze.load``.
The rule is the one the property tests check: a table with warnings or a
``tanalyze`` error naming the file. Anything else is a crash: libFuzzer writes
the input to ``crash-*`` and stops. Hangs are caught by libFuzzer's
``-timeout`` (30 s by default here). Needs ``pip install atheris``.

A corpus input is one byte choosing the seed run, then the file's bytes.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LOAD_EVERY = 8  # one input in this many is also read through load()
UNINSTRUMENTED = ("tanalyze.readers.tensorboard._tfrecord", "tanalyze.readers.tensorboard._fast", "tanalyze.readers.tensorboard._windows",
                  "tanalyze.readers.tabular.widecsv", "tanalyze.readers.tensorboard._sessions", "tanalyze.schema")


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=True)
    parser.add_argument("--reader", default="tensorboard", help="a reader name, 'pattern', or 'all'")
    parser.add_argument("--list", action="store_true", help="list the readers and their seeds, then exit")
    parser.add_argument("--corpus", type=Path, default=REPO / "fuzz" / "_corpus",
                        help="where the per-reader corpora live (seeded from real runs on first use)")
    return parser.parse_known_args(argv)


def _setup_corpus(reader: str, folder: Path, seeds) -> Path:
    target = folder / reader
    target.mkdir(parents=True, exist_ok=True)
    for index, seed in enumerate(seeds):
        path = target / f"seed-{index}"
        if not path.exists():
            path.write_bytes(bytes([index]) + seed.files[seed.main])
    return target


def _run_all(args: argparse.Namespace, extra: list[str]) -> int:
    """Each reader in its own process (libFuzzer runs one target per process)."""
    from tests.fuzz.harness import reader_names

    failures = 0
    for name in reader_names():
        print(f"=== {name}", flush=True)
        command = [sys.executable, __file__, "--reader", name, "--corpus", str(args.corpus), *extra]
        failures += subprocess.call(command) != 0
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    args, extra = _parse(sys.argv[1:] if argv is None else argv)
    if args.reader == "all" and not args.list:
        return _run_all(args, extra)

    import atheris

    # Not instrumented: the numpy-vectorised modules. atheris's comparison tracing keeps a reference to
    # numpy arrays compared with ==/< (measured: +570 MB over 3,000 comparisons of a 200,000-element
    # array), which made long runs on event files end in libFuzzer's out-of-memory; the leak is the
    # fuzzer's, not the reader's (the same inputs read in a plain loop keep a flat RSS).
    with atheris.instrument_imports(include=["tanalyze"], exclude=list(UNINSTRUMENTED)):
        import tanalyze.logs  # noqa: F401 - load(), discovery
        from tanalyze.readers import get_readers

        get_readers()  # readers are imported lazily: import (and instrument) them all now
        import tanalyze.readers.text.pattern  # noqa: F401
    from tests.fuzz import harness

    if args.list:
        for name in harness.reader_names():
            print(name, [seed.label for seed in harness.seeds(name)])
        return 0
    seeds = harness.seeds(args.reader)
    if not seeds:
        print(f"no seed run of format {args.reader!r}", file=sys.stderr)
        return 2
    corpus = _setup_corpus(args.reader, args.corpus, seeds)
    scratch = Path(tempfile.mkdtemp(prefix="tanalyze-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    atexit.register(shutil.rmtree, scratch, True)
    atexit.register(lambda: print(f"inputs tried: {dict(harness.TRIED)}", file=sys.stderr))
    count = 0

    def one_input(data: bytes) -> None:
        nonlocal count
        count += 1
        if not data:
            return
        seed = seeds[data[0] % len(seeds)]
        files = dict(seed.files)
        files[seed.main] = data[1:]
        root = harness.write_run(files, scratch / "run")
        harness.read_direct(seed.reader, root, seed.read, limit=0)  # libFuzzer's -timeout catches hangs
        if count % LOAD_EVERY == 0:
            harness.read_loaded(root, pattern=seed.reader == harness.PATTERN_FORMAT, limit=0)

    biggest = max(len(seed.files[seed.main]) for seed in seeds) + 1
    defaults = [f"-max_len={max(biggest * 2, 4096)}", "-timeout=30", "-rss_limit_mb=4096"]
    given = {arg.split("=")[0] for arg in extra}
    reproducing = any(os.path.isfile(arg) for arg in extra)  # crash-… files given: run just those
    libfuzzer_args = ([sys.argv[0]] + [d for d in defaults if d.split("=")[0] not in given] + extra
                      + ([] if reproducing else [str(corpus)]))
    atheris.Setup(libfuzzer_args, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
