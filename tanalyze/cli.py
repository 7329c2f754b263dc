"""The ``tanalyze`` command: a thin layer that maps arguments to the library and returns an exit code.

Exit codes: 0 success, 1 a check failed, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tanalyze._version import __version__
from tanalyze.errors import InputError, NoLogsError, TanalyzeError
from tanalyze.logs import Logs, load
from tanalyze.readers.text.pattern import UserPattern
from tanalyze.runstatus import RunStatus, is_console_log, run_status
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


def _patterns(args: argparse.Namespace) -> list[UserPattern]:
    glob = getattr(args, "pattern_glob", None)
    patterns = [UserPattern(regex, glob, "--pattern") for regex in getattr(args, "pattern", None) or ()]
    if glob and not patterns:
        raise InputError("--pattern-glob needs a --pattern")
    return patterns


def _load(args: argparse.Namespace) -> Logs:
    return load(args.path, formats=args.format or None, progress=_progress(args), patterns=_patterns(args),
                join=_join(args), **_engine(args))


def _join(args: argparse.Namespace) -> bool | None:
    """False with --no-join; None leaves it to the config file (default: join)."""
    return False if getattr(args, "no_join", False) else None


def _engine(args: argparse.Namespace) -> dict:
    """How runs are read: ``jobs``, ``cache`` and ``client`` from --jobs, --cache-dir/--no-cache, --scheduler."""
    cache = False if args.no_cache else (args.cache_dir or True)
    return {"jobs": args.jobs, "cache": cache, "client": args.client}


def _connect(args: argparse.Namespace) -> None:
    """Connect to the Dask scheduler of --scheduler (``args.client``; None without one)."""
    args.client = None
    if getattr(args, "scheduler", None):
        try:
            from distributed import Client
        except ImportError:
            raise InputError("--scheduler needs Dask: pip install 'tanalyze[dask]'") from None
        try:
            args.client = Client(args.scheduler, timeout=30)
        except OSError as exc:
            raise InputError(f"cannot reach the Dask scheduler at {args.scheduler}: {exc}") from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_engine(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scale (many runs)")
    group.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                       help="processes reading and analysing runs side by side (default: the CPUs; 1 = serial)")
    group.add_argument("--cache-dir", metavar="DIR",
                       help="the incremental cache (default: $TANALYZE_CACHE_DIR, else ~/.cache/tanalyze)")
    group.add_argument("--no-cache", action="store_true", help="read every log in full, use no cache")
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="run the per-run work on this Dask cluster (tcp://host:8786) instead of local processes")


#: Files not read listed by ``tanalyze runs`` without --verbose.
_NOT_READ_SHOWN = 10


def _not_read_line(item) -> str:
    """The line that names a file no run holds, and why."""
    return f"not read: {safe_text(item.path)}: {safe_text(item.reason)}\n"


#: Console logs whose status ``tanalyze runs`` shows when a path holds no run at all.
_CONSOLES_SHOWN = 200


def _console_statuses(path: str) -> None:
    """How the jobs of the console logs under ``path`` ended, for a path no reader finds metrics in
    (a job that crashed before its first step leaves only its console)."""
    root = Path(path)
    if root.is_file():
        found = [root] if is_console_log(root) else []
    else:
        found = []
        for folder, _, names in os.walk(root):
            found.extend(Path(folder) / n for n in sorted(names) if is_console_log(n))
            if len(found) >= _CONSOLES_SHOWN:
                break
    for file in found[:_CONSOLES_SHOWN]:
        status = run_status([str(file)])
        sys.stdout.write(f"{safe_text(file)}  [console, no metrics]\n")
        _write_status(sys.stdout, status)


def cmd_runs(args: argparse.Namespace) -> int:
    try:
        logs = _load(args)
    except NoLogsError:
        _console_statuses(args.path)
        raise
    tags = logs.tag_summary()
    out = sys.stdout
    for name, info in logs.runs.items():
        run_tags = tags[tags["run"] == name]
        points = int(run_tags["points"].sum()) if len(run_tags) else 0
        out.write(f"{safe_text(name)}  [{info.format}]  {len(info.files)} file(s), {len(run_tags)} tag(s), {points:,} points\n")
        _write_status(out, info.status)
        if args.verbose:
            for file in info.files:
                out.write(f"    file  {safe_text(file)}\n")
        shown = run_tags if args.verbose else run_tags.head(args.max_tags)
        for row in shown.itertuples(index=False):
            bad = f", {row.non_finite} non-finite" if row.non_finite else ""
            out.write(f"    {safe_text(row.tag):<40} {row.points:>8,} pts  steps {row.first_step}..{row.last_step}{bad}\n")
        if len(run_tags) > len(shown):
            out.write(f"    … {len(run_tags) - len(shown)} more tag(s) (--verbose shows all)\n")
        _write_extras(out, logs, name, info, args.verbose)
        for restart in info.restarts:
            out.write(f"    restart at step {restart.step}: {safe_text(restart.detail)}\n")
        for phase in info.phases:
            out.write(f"    session {phase.index + 1} of {len(info.phases)}: steps {phase.first_step}-{phase.last_step}"
                      f" ({safe_text(phase.detail)})\n")
        for note in info.notes:
            out.write(f"    note: {safe_text(note)}\n")
        for warning in info.warnings:
            out.write(f"    warning: {safe_text(str(warning))}\n")
    shown_not_read = logs.not_read if args.verbose else logs.not_read[:_NOT_READ_SHOWN]
    for item in shown_not_read:
        out.write(_not_read_line(item))
        if is_console_log(item.path):  # a console log with no metrics still says how its job ended
            status = run_status([item.path])
            if status.status != "unknown":
                _write_status(out, status)
    if len(logs.not_read) > len(shown_not_read):
        out.write(f"… {len(logs.not_read) - len(shown_not_read)} more not read (--verbose lists every one)\n")
    n_warn = sum(len(i.warnings) for i in logs.runs.values())
    formats = sorted({i.format for i in logs.runs.values()})
    unreadable = f", {len(logs.errors)} could not be read" if logs.errors else ""
    out.write(
        f"{len(logs.runs)} run(s) in {len(formats)} format(s) ({', '.join(formats)}), "
        f"{len(logs.scalars):,} scalar points, {len(logs.histograms):,} histograms, "
        f"{n_warn} warning(s), {len(logs.unrecognized)} file(s) not recognised{unreadable}\n"
    )
    return EXIT_OK


def _write_status(out, status: RunStatus | None) -> None:
    """How a run ended, and the first line of evidence (file:line: the line)."""
    if status is None:
        return
    out.write(f"    status: {status.status.upper()}  {safe_text(status.reason, 300)}\n")
    if status.frame:
        out.write(f"      at {safe_text(status.frame, 300)}\n")
    for evidence in status.evidence[:1]:
        out.write(f"      {safe_text(str(evidence), 400)}\n")


#: what a reader keeps of a tracker's run record for the run's status (shown as the status, not as hparams)
_TRACKER_RECORDS = frozenset({"_wandb", "_mlflow", "_sacred"})


def _write_extras(out, logs: Logs, name: str, info, verbose: bool) -> None:
    """Histograms, hparams and text of one run, briefly."""
    hist = logs.histograms[logs.histograms["run"] == name] if len(logs.histograms) else logs.histograms
    if len(hist):
        out.write(f"    histograms: {hist['tag'].nunique()} tag(s), {len(hist):,} histogram(s)\n")
    items = [(k, v) for k, v in info.hparams.items() if k not in _TRACKER_RECORDS]
    if items:
        shown = items if verbose else items[:4]
        listed = ", ".join(f"{safe_text(k, 60)}={safe_text(v, 60)}" for k, v in shown)
        more = f", … {len(items) - len(shown)} more" if len(items) > len(shown) else ""
        out.write(f"    hparams: {len(items)} ({listed}{more})\n")
    if info.text:
        out.write(f"    text: {', '.join(safe_text(tag, 60) for tag in info.text)}\n")


def _check_writable(target: str) -> None:
    """Refuse, before any work, an output whose folder does not exist."""
    parent = Path(target).resolve().parent
    if not parent.is_dir():
        raise InputError(f"{target}: cannot write there, folder {parent} does not exist")


def cmd_parse(args: argparse.Namespace) -> int:
    output = Path(args.output)
    suffix = output.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        sys.stderr.write(f"tanalyze: {output}: unknown output type {suffix!r}; use .csv or .parquet\n")
        return EXIT_USAGE
    _check_writable(args.output)
    logs = _load(args)
    frame = logs.scalars
    try:
        if suffix == ".csv":
            from tanalyze.csvout import write_csv

            write_csv(frame, output)
        else:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                sys.stderr.write("tanalyze: writing Parquet needs pyarrow: pip install 'tanalyze[parquet]'\n")
                return EXIT_USAGE
            frame.to_parquet(output, index=False)
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from exc
    n_warn = sum(len(i.warnings) for i in logs.runs.values())
    sys.stderr.write(f"wrote {len(frame):,} rows from {len(logs.runs)} run(s) to {output} ({n_warn} warning(s))\n")
    return EXIT_OK


def _parse_roles(pairs: list[str] | None) -> dict[str, str]:
    roles: dict[str, str] = {}
    for pair in pairs or []:
        role, sep, tag = pair.partition("=")
        if not sep or not role or not tag:
            raise InputError(f"--role expects ROLE=TAG, got {pair!r}")
        roles[role.strip()] = tag
    return roles


def cmd_check(args: argparse.Namespace) -> int:
    from tanalyze.check_output import emit_github, format_text, write_json, write_junit
    from tanalyze.check_runner import check

    report = check(
        args.candidate,
        baseline=args.baseline,
        config=args.config,
        roles=_parse_roles(args.role),
        progress=_progress(args),
        **_engine(args),
    )
    sys.stdout.write(format_text(report))
    if args.json:
        write_json(report, args.json)
    if args.junit:
        write_junit(report, args.junit)
    emit_github(report, sys.stdout)
    return EXIT_OK if report.passed else EXIT_FAILED


def cmd_watch(args: argparse.Namespace) -> int:
    """Follow the logs under PATH: print each new finding once; stop with the check's code when --until holds."""
    import json
    import shlex
    import subprocess
    import time

    from tanalyze.watch import Watcher, parse_until, until_holds

    try:
        until = parse_until(args.until) if args.until else None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    command = shlex.split(args.on_finding) if args.on_finding else None
    cache = False if args.no_cache else (args.cache_dir or True)
    watcher = Watcher(args.path, cache=cache, roles=_parse_roles(args.role) or None, formats=args.format or None)
    reported = []
    started = time.monotonic()
    out = sys.stdout
    while True:
        cpu = time.process_time()
        for event in watcher.poll():
            reported.append(event)
            if args.json:
                out.write(json.dumps(event.to_dict(), allow_nan=False) + "\n")
            else:
                step = f"step {event.step}" if event.step is not None else "-"
                out.write(f"{event.severity.upper():<7} {safe_text(event.run, 80)}  {step:<12} {event.code}: "
                          f"{safe_text(event.message, 400)}\n")
            out.flush()
            if command:
                env = dict(os.environ, TANALYZE_FINDING=json.dumps(event.to_dict(), allow_nan=False),
                           TANALYZE_RUN=event.run, TANALYZE_CODE=event.code, TANALYZE_SEVERITY=event.severity,
                           TANALYZE_MESSAGE=event.message)
                try:
                    subprocess.run(command, env=env, check=False, timeout=60)
                except (OSError, subprocess.TimeoutExpired) as exc:
                    sys.stderr.write(f"tanalyze watch: --on-finding {safe_text(args.on_finding)}: {exc}\n")
        if until is not None and until_holds(until, watcher, reported):
            from tanalyze.check_output import format_text
            from tanalyze.check_runner import check

            report = check(watcher.logs, config=args.config, roles=_parse_roles(args.role), jobs=1, cache=cache)
            sys.stderr.write(format_text(report))
            return EXIT_OK if report.passed else EXIT_FAILED
        if args.timeout is not None and time.monotonic() - started >= args.timeout:
            return EXIT_OK
        # Looking again costs what reading and diagnosing the grown runs cost (more as a run grows): the
        # pause stretches so that watching takes at most --cpu-budget of one core.
        cost = time.process_time() - cpu
        pause = max(args.interval, cost * (1 / args.cpu_budget - 1))
        if args.timeout is not None:
            pause = min(pause, max(0.0, args.timeout - (time.monotonic() - started)))
        time.sleep(pause)


def cmd_baseline_save(args: argparse.Namespace) -> int:
    from tanalyze.baseline import Baseline
    from tanalyze.check_runner import summarize_path
    from tanalyze.config import load_config

    config = load_config(args.config)
    roles = {**config.roles, **_parse_roles(args.role)}
    summaries = summarize_path(args.run, roles=roles, progress=_progress(args), **_engine(args))
    Baseline.from_summaries(str(args.run), summaries).save(args.output)
    sys.stderr.write(f"saved baseline of {len(summaries)} run(s) to {args.output}\n")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from tanalyze.config import load_config
    from tanalyze.report import Report, report_paths

    config = load_config(args.config)
    roles = {**config.roles, **_parse_roles(args.role)}
    for target in filter(None, (args.output, args.json)):
        _check_writable(target)
    progress = _progress(args)
    engine = _engine(args)
    data = report_paths(args.paths, formats=args.format or None, roles=roles, title=args.title,
                        smoothing=args.smoothing, progress=progress, jobs=engine["jobs"],
                        cache=engine["cache"], client=engine["client"], join=_join(args))
    try:
        sizes = Report(data).save(args.output, args.json, progress=progress, jobs=args.jobs)
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc}") from exc
    verdicts = ", ".join(f"{n} {label.replace('_', ' ')}" for label, n in data.verdict_counts())
    written = f"{args.output} ({sizes['html'] / 1e6:.1f} MB)"
    if args.json:
        written += f" and {args.json}"
    sys.stderr.write(f"wrote {safe_text(written)}: {len(data.runs)} run(s): {verdicts}\n")
    return EXIT_OK


def _smoothing(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


def cmd_diagnose(args: argparse.Namespace) -> int:
    import json

    from tanalyze.analysis.results import to_jsonable
    from tanalyze.config import load_config
    from tanalyze.pipeline import diagnose_path

    roles = {**load_config(args.config).roles, **_parse_roles(args.role)}
    diagnoses = diagnose_path(args.path, formats=args.format or None, patterns=_patterns(args), join=_join(args),
                              progress=_progress(args), roles=roles or None, num_classes=args.num_classes,
                              **_engine(args))
    out = sys.stdout
    labels: dict[str, int] = {}
    for name, d in diagnoses.items():
        labels[d.verdict.label] = labels.get(d.verdict.label, 0) + 1
        also = f"; also {', '.join(d.verdict.also)}" if d.verdict.also else ""
        out.write(f"{safe_text(name)}  [{safe_text(d.format or '?')}]  {d.verdict.label.upper()} "
                  f"(confidence {d.verdict.confidence:.2f}{also})\n")
        _write_status(out, d.status)
        distributed = d.distributed_line()
        if distributed:
            out.write(f"    distributed: {safe_text(distributed, 400)}\n")
        steps = ", ".join(f"{k} {v}" for k, v in d.key_steps().items())
        if steps:
            out.write(f"    key steps: {steps}\n")
        if d.checkpoints is not None:
            out.write(f"    checkpoints: {safe_text(d.checkpoints.summary, 400)}\n")
        if d.roles:
            roles = ", ".join(f"{role}={safe_text(tag, 80)}" for role, tag in d.roles.items())
            out.write(f"    roles: {roles}\n")
        if d.verdict.reasons:
            out.write(f"    why: {safe_text(d.verdict.reasons[0], 300)}\n")
        for finding in d.findings[: args.max_findings]:
            step = f"step {finding.step}" if finding.step is not None else "-"
            out.write(f"    {finding.severity.upper():<7} {step:<12} {finding.code}: {safe_text(finding.message, 300)}\n")
        if len(d.findings) > args.max_findings:
            out.write(f"    … {len(d.findings) - args.max_findings} more finding(s) (--max-findings, --json)\n")
        for warning in d.warnings[:3]:
            out.write(f"    note: {safe_text(warning, 300)}\n")
    for item in diagnoses.not_read[:_NOT_READ_SHOWN]:  # (no verdict for these: the user should know)
        out.write(_not_read_line(item))
    if len(diagnoses.not_read) > _NOT_READ_SHOWN:
        out.write(f"… {len(diagnoses.not_read) - _NOT_READ_SHOWN} more not read ('tanalyze runs --verbose' lists "
                  "every one)\n")
    counts = ", ".join(f"{n} {label}" for label, n in sorted(labels.items()))
    not_read = f"; {len(diagnoses.not_read)} file(s) not read" if diagnoses.not_read else ""
    out.write(f"{len(diagnoses)} run(s): {counts}{not_read}\n")
    if args.json:
        payload = {"schema": "tanalyze.diagnose/1", "tanalyze_version": __version__, "input": str(args.path),
                   **diagnoses.to_dict()}
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(to_jsonable(payload), handle, indent=1)
        sys.stderr.write(f"wrote the diagnoses of {len(diagnoses)} run(s) to {args.json}\n")
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from tanalyze.config import load_config
    from tanalyze.diagnose import diagnose
    from tanalyze.sweeps import sweep, sweep_dict

    roles = {**load_config(args.config).roles, **_parse_roles(args.role)}
    logs = _load(args)
    diagnoses = diagnose(logs, roles=roles or None)
    result = sweep(logs, metric=args.metric, higher=args.higher, target=args.target, diagnoses=diagnoses)
    out = sys.stdout
    for line in result.summary_lines():
        out.write(safe_text(line, 600) + "\n")
    if not result.experiments:
        out.write(f"no sweep found among {len(logs.runs)} run(s): an experiment is at least 4 runs that logged "
                  "the same tags and differ in a setting other than the seed\n")
    if args.json:
        from tanalyze.report.jsonout import dumps

        try:
            Path(args.json).write_text(dumps(sweep_dict(result, str(args.path))), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{args.json}: cannot write: {exc}") from exc
        sys.stderr.write(f"wrote {len(result.experiments)} experiment(s) to {safe_text(str(args.json))}\n")
    return EXIT_OK


def cmd_cache(args: argparse.Namespace) -> int:
    from tanalyze.cache import Cache, default_cache_dir

    cache = Cache(str(args.cache_dir or default_cache_dir()))
    if args.cache_command == "clear":
        removed = cache.clear()
        sys.stderr.write(f"removed {removed:,} cache entr{'y' if removed == 1 else 'ies'} from {safe_text(str(cache.root))}\n")
        return EXIT_OK
    count, size = cache.usage()
    sys.stdout.write(f"{safe_text(str(cache.root))}: {count:,} entries, {size / 1e6:,.1f} MB)\n")
    return EXIT_OK


def _add_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a log file or a folder of runs")
    parser.add_argument("--format", action="append", metavar="NAME", help="only use this reader (repeatable)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    parser.add_argument(
        "--pattern",
        action="append",
        metavar="REGEX",
        help="read text logs no reader knows (or only the generic one) with this regex; named groups: step, epoch, "
        "rank, "
        "one per metric (or tag + value); repeatable",
    )
    parser.add_argument(
        "--pattern-glob", metavar="GLOB", help="apply --pattern to the files matching GLOB, before any reader"
    )
    _add_no_join(parser)
    _add_engine(parser)


def _add_no_join(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-join", action="store_true",
        help="one run per folder and format: do not join what one job wrote to several places (Keras "
        "train/+validation/, add_scalars sub-folders, results.csv + events twins); config: [runs] join = false",
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

    diag = sub.add_parser("diagnose", help="verdict, key steps and findings for every run")
    _add_input(diag)
    diag.add_argument("--role", action="append", metavar="ROLE=TAG", help="use TAG for ROLE, e.g. val_loss=eval/loss")
    diag.add_argument("--config", help="config file with [tool.tanalyze.roles] (default: ./tanalyze.toml, ./pyproject.toml)")
    diag.add_argument("--json", metavar="FILE", help="write every diagnosis as JSON")
    diag.add_argument("--num-classes", type=int, metavar="C", help="classes of a classifier: enables the chance-level check")
    diag.add_argument("--max-findings", type=int, default=3, metavar="N", help="findings shown per run (default 3)")
    diag.set_defaults(handler=cmd_diagnose)

    check = sub.add_parser(
        "check",
        help="CI gate: exit 1 when a rule fails (divergence, verdict, val loss or throughput vs a baseline)",
    )
    check.add_argument("candidate", help="the run (or folder of runs) to check")
    check.add_argument("--baseline", help="a baseline run folder or a file from 'tanalyze baseline save'")
    check.add_argument("--config", help="tanalyze.toml or pyproject.toml with [tool.tanalyze.check] (default: ./tanalyze.toml, ./pyproject.toml)")
    check.add_argument("--role", action="append", metavar="ROLE=TAG", help="use TAG for ROLE, e.g. val_loss=eval/loss")
    check.add_argument("--json", metavar="FILE", help="write the results as JSON (schema tanalyze.check/1)")
    check.add_argument("--junit", metavar="FILE", help="write the results as JUnit XML, one test case per rule")
    check.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    _add_engine(check)
    check.set_defaults(handler=cmd_check)

    watch = sub.add_parser(
        "watch", help="follow growing logs: print each new finding once (a line each), stop when --until holds")
    watch.add_argument("path", help="a log file or a folder of runs (need not exist yet)")
    watch.add_argument("--interval", type=_seconds, default=5.0, metavar="S", help="seconds between looks (default 5)")
    watch.add_argument("--json", action="store_true", help="one JSON object per finding and line (for machines)")
    watch.add_argument("--on-finding", metavar="CMD",
                       help="run CMD for each new finding, with TANALYZE_FINDING (JSON), TANALYZE_RUN, TANALYZE_CODE, "
                       "TANALYZE_SEVERITY and TANALYZE_MESSAGE in its environment (no shell: use sh -c '...' for one)")
    watch.add_argument("--until", metavar="COND",
                       help="stop when COND holds and exit with the check's code (0 pass, 1 fail): ended (no run still "
                       "growing), failed (a run crashed, ran out of memory, was killed or hung, or an error finding), "
                       "finding:CODE, status:NAME")
    watch.add_argument("--timeout", type=_seconds, metavar="S", help="stop after S seconds (exit 0)")
    watch.add_argument("--cpu-budget", type=_share, default=0.05, metavar="F",
                       help="the most of one core watching may take (default 0.05): looks are spaced out as the "
                       "runs grow and each look costs more")
    watch.add_argument("--format", action="append", metavar="NAME", help="only use this reader (repeatable)")
    watch.add_argument("--role", action="append", metavar="ROLE=TAG", help="use TAG for ROLE, e.g. val_loss=eval/loss")
    watch.add_argument("--config", help="the check's config for --until (default: ./tanalyze.toml, ./pyproject.toml)")
    watch.add_argument("--cache-dir", metavar="DIR", help="the incremental cache (default: $TANALYZE_CACHE_DIR)")
    watch.add_argument("--no-cache", action="store_true", help="read every log in full at every look")
    watch.set_defaults(handler=cmd_watch)

    baseline = sub.add_parser("baseline", help="save a baseline for 'tanalyze check'")
    baseline_sub = baseline.add_subparsers(dest="baseline_command", required=True, metavar="ACTION")
    save = baseline_sub.add_parser("save", help="summarise a run (or seeds of one job) into a small JSON file")
    save.add_argument("run", help="the baseline run or folder of seed runs")
    save.add_argument("-o", "--output", required=True, help="the baseline file to write (.json)")
    save.add_argument("--config", help="config file with role overrides")
    save.add_argument("--role", action="append", metavar="ROLE=TAG", help="use TAG for ROLE")
    save.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    _add_engine(save)
    save.set_defaults(handler=cmd_baseline_save)

    sweep = sub.add_parser("sweep", help="many runs as one experiment: what drives the metric, the best configuration")
    _add_input(sweep)
    sweep.add_argument("--metric", metavar="TAG",
                       help="the tag to compare runs by (default: each run's validation loss); its direction is "
                       "inferred from its name (accuracy, mAP, F1, BLEU … higher is better)")
    direction = sweep.add_mutually_exclusive_group()
    direction.add_argument("--higher-better", dest="higher", action="store_const", const=True, default=None,
                           help="the metric improves upward (overrides the inferred direction)")
    direction.add_argument("--lower-better", dest="higher", action="store_const", const=False,
                           help="the metric improves downward (overrides the inferred direction)")
    sweep.add_argument("--target", choices=("final", "best"), default="final",
                       help="score each run by its last value (default) or the best it reached")
    sweep.add_argument("--role", action="append", metavar="ROLE=TAG", help="use TAG for ROLE, e.g. val_loss=eval/loss")
    sweep.add_argument("--config", help="config file with role overrides")
    sweep.add_argument("--json", metavar="FILE", help="write the experiments as JSON (schema tanalyze.sweep/1)")
    sweep.set_defaults(handler=cmd_sweep)

    cache = sub.add_parser("cache", help="show or clear the incremental cache of parsed logs")
    cache.add_argument("cache_command", choices=("info", "clear"), metavar="ACTION",
                       help="info: where it is and its size; clear: delete its entries (safe at any time)")
    cache.add_argument("--cache-dir", metavar="DIR", help="the cache folder (default: $TANALYZE_CACHE_DIR, else ~/.cache/tanalyze)")
    cache.set_defaults(handler=cmd_cache)

    report = sub.add_parser(
        "report", help="write one self-contained HTML report (and optionally JSON) of every run under the paths"
    )
    report.add_argument("paths", nargs="+", metavar="PATH", help="log files or folders of runs")
    report.add_argument("-o", "--output", default="report.html", help="the HTML file to write (default report.html)")
    report.add_argument("--json", metavar="FILE", help="also write the results as JSON (schema tanalyze.report/1)")
    report.add_argument("--title", help="the page title (default: 'Training report: PATH')")
    report.add_argument("--smoothing", type=_smoothing, default=0.6, metavar="W",
                        help="TensorBoard-style EMA weight for drawn curves, in [0, 1) (default 0.6; 0 = none)")
    report.add_argument("--format", action="append", metavar="NAME", help="only use this reader (repeatable)")
    report.add_argument("--config", help="tanalyze.toml or pyproject.toml with role overrides")
    report.add_argument("--role", action="append", metavar="ROLE=TAG", help="use TAG for ROLE, e.g. val_loss=eval/loss")
    report.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    _add_no_join(report)
    _add_engine(report)
    report.set_defaults(handler=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        _connect(args)
        return int(args.handler(args))
    except TanalyzeError as exc:
        sys.stderr.write(f"tanalyze: error: {safe_text(str(exc))}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("tanalyze: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader of our output went away (e.g. `tanalyze runs … | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        if getattr(args, "client", None) is not None:
            args.client.close()


if __name__ == "__main__":
    sys.exit(main())
