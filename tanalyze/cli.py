"""The ``tanalyze`` command: a thin layer that maps arguments to the library and returns an exit code.

Exit codes: 0 success, 1 a check failed, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tanalyze import __version__
from tanalyze.errors import InputError, TanalyzeError
from tanalyze.logs import Logs, load
from tanalyze.readers.pattern import UserPattern
from tanalyze.text import safe_text

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _progress(args: argparse.Namespace):
    """A progress callback writing to stderr when it is a terminal and not silenced."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        return None

    def report(done: int, total: int, name: str) -> None:
        width = 30
        filled = int(width * done / max(total, 1))
        label = safe_text(name)[-40:]
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<40}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report


def _load(args: argparse.Namespace) -> Logs:
    glob = getattr(args, "pattern_glob", None)
    patterns = [UserPattern(regex, glob, "--pattern") for regex in getattr(args, "pattern", None) or ()]
    if glob and not patterns:
        raise InputError("--pattern-glob needs a --pattern")
    return load(args.path, formats=args.format or None, progress=_progress(args), patterns=patterns)


def cmd_runs(args: argparse.Namespace) -> int:
    logs = _load(args)
    tags = logs.tag_summary()
    out = sys.stdout
    for name, info in logs.runs.items():
        run_tags = tags[tags["run"] == name]
        points = int(run_tags["points"].sum()) if len(run_tags) else 0
        out.write(f"{safe_text(name)}  [{info.format}]  {len(info.files)} file(s), {len(run_tags)} tag(s), {points:,} points\n")
        if args.verbose:
            for file in info.files:
                out.write(f"    file  {safe_text(file)}\n")
        shown = run_tags if args.verbose else run_tags.head(args.max_tags)
        for row in shown.itertuples(index=False):
            bad = f", {row.non_finite} non-finite" if row.non_finite else ""
            out.write(f"    {safe_text(row.tag):<40} {row.points:>8,} pts  steps {row.first_step}..{row.last_step}{bad}\n")
        if len(run_tags) > len(shown):
            out.write(f"    … {len(run_tags) - len(shown)} more tag(s) (--verbose shows all)\n")
        for restart in info.restarts:
            out.write(f"    restart at step {restart.step}: {safe_text(restart.detail)}\n")
        for note in info.notes:
            out.write(f"    note: {safe_text(note)}\n")
        for warning in info.warnings:
            out.write(f"    warning: {safe_text(str(warning))}\n")
    n_warn = sum(len(i.warnings) for i in logs.runs.values())
    formats = sorted({i.format for i in logs.runs.values()})
    out.write(
        f"{len(logs.runs)} run(s) in {len(formats)} format(s) ({', '.join(formats)}), "
        f"{len(logs.scalars):,} scalar points, {len(logs.histograms):,} histograms, "
        f"{n_warn} warning(s), {len(logs.unrecognized)} file(s) not recognised\n"
    )
    return EXIT_OK


def cmd_parse(args: argparse.Namespace) -> int:
    logs = _load(args)
    output = Path(args.output)
    suffix = output.suffix.lower()
    frame = logs.scalars
    if suffix == ".csv":
        frame.to_csv(output, index=False)
    elif suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            sys.stderr.write("tanalyze: writing Parquet needs pyarrow: pip install 'tanalyze[parquet]'\n")
            return EXIT_USAGE
        frame.to_parquet(output, index=False)
    else:
        sys.stderr.write(f"tanalyze: {output}: unknown output type {suffix!r}; use .csv or .parquet\n")
        return EXIT_USAGE
    n_warn = sum(len(i.warnings) for i in logs.runs.values())
    sys.stderr.write(f"wrote {len(frame):,} rows from {len(logs.runs)} run(s) to {output} ({n_warn} warning(s))\n")
    return EXIT_OK


def _add_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a log file or a folder of runs")
    parser.add_argument("--format", action="append", metavar="NAME", help="only use this reader (repeatable)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    parser.add_argument(
        "--pattern",
        action="append",
        metavar="REGEX",
        help="read text logs no reader knows with this regex; named groups: step, epoch, rank, "
        "one per metric (or tag + value); repeatable",
    )
    parser.add_argument(
        "--pattern-glob", metavar="GLOB", help="apply --pattern to the files matching GLOB, before any reader"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tanalyze", description="Post-hoc analysis of ML training logs.")
    parser.add_argument("--version", action="version", version=f"tanalyze {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    runs = sub.add_parser("runs", help="list the runs found under a path")
    _add_input(runs)
    runs.add_argument("-v", "--verbose", action="store_true", help="list every tag and file")
    runs.add_argument("--max-tags", type=int, default=8, help="tags shown per run (default 8)")
    runs.set_defaults(handler=cmd_runs)

    parse = sub.add_parser("parse", help="write the tidy table (run, tag, step, value, wall_time)")
    _add_input(parse)
    parse.add_argument("-o", "--output", required=True, help="output file: .csv or .parquet")
    parse.set_defaults(handler=cmd_parse)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return int(args.handler(args))
    except TanalyzeError as exc:
        sys.stderr.write(f"tanalyze: error: {safe_text(str(exc))}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("tanalyze: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
