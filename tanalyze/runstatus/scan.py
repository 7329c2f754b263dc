"""Scanners for a run's status: each reads only a bounded piece of one source.

- :func:`scan_console` reads the last :data:`TAIL_BYTES` of a console log (stdout/stderr as a batch
  system keeps it, W&B's ``output.log``, an HF / Lightning / llm.c console) and returns the
  :class:`~tanalyze.runstatus.model.Signal` s in it, with line numbers.
- :func:`wandb_exit` takes what the W&B reader already found (``hparams["_wandb"]``), :func:`tracker_end`
  what the MLflow or Sacred reader found (``hparams["_mlflow"]``, ``hparams["_sacred"]``).
- :func:`run_status` puts a run's sources together and calls the pure classifier.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from tanalyze.runstatus.model import (
    RUNNING_WITHIN_S,
    Evidence,
    RunStatus,
    Signal,
    TrackerEnd,
    WandbExit,
    classify,
)
from tanalyze.runstatus.nccl import NCCL_FAILURE

__all__ = ["TAIL_BYTES", "following", "is_console_log", "may_show_a_failure", "scan_console", "trainer_end",
           "tracker_end", "wandb_exit", "run_status"]

_FOLLOWING: ContextVar[bool] = ContextVar("tanalyze_following_live_runs", default=False)


@contextmanager
def following() -> Iterator[None]:
    """Within this block the runs read are being followed as they are written (``tanalyze watch``): a file
    changed in the last minutes is taken as a run still running, whatever else its folder holds.

    Outside it a recent change alone does not say "running": logs copied or checked out a moment ago
    look just as fresh. There a run is running only when its files show a writer at work — the newest
    changed recently while others of the run were last written well before (a live run's configuration
    and first files stay as old as the run)."""
    token = _FOLLOWING.set(True)
    try:
        yield
    finally:
        _FOLLOWING.reset(token)

#: How much of the end of a console log is read (a traceback, an end marker, a cancel line fit easily).
TAIL_BYTES = 128 * 1024
#: Line numbers are counted only when the part before the tail is at most this long (else None).
_COUNT_LINES_UP_TO = 64 * 1024 * 1024
#: A line shown as evidence is cut to this many characters (around what matched).
_SHOWN = 240

_CONSOLE_SUFFIXES = {".log", ".out", ".err", ".txt"}
_CONSOLE_NAMES = re.compile(r"^(stdout|stderr|output|console|slurm-[\w.-]+|train|log)$", re.IGNORECASE)
#: a rank's log of a launcher (PaddlePaddle's ``workerlog.0``) and a rotated log (``train.log.1``)
_NUMBERED_LOG = re.compile(r"^(?:workerlog|[\w.-]+\.(?:log|out|err|txt))\.\d+$", re.IGNORECASE)

#: Formats whose console log prints an end marker when training completes: without it, the run was stopped.
END_MARKER_FORMATS = frozenset({"hf_console", "llmc", "megatron", "detectron2", "fairseq", "torchtitan", "pytorch_lm"})

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: what launchers put before a rank's lines: torch's [rank0]:, DeepSpeed's [Rank 0], torchrun --tee's [default0]:
#: (nested: [default0]:[rank0]:), Open MPI --tag-output's [1,0]<stderr>:, Ray's (Actor pid=N), and srun --label's
#: "0: " before a traceback's lines (only there: elsewhere a number and a colon is too common)
_RANK_PREFIX = re.compile(
    r"^(?:\[(?:rank|Rank)\s*\d+\]:?\s?|\(\w+ pid=\d+(?:, ip=[\d.]+)?\)\s?|\[[A-Za-z][\w-]*?\d+\]:|\[\d+,\d+\]<std(?:out|err)>:\s?"
    r"| {0,5}\d{1,5}: (?=Traceback|\s+File \"|[\w.]*(?:Error|Exception|Interrupt)\b))+")

_FINISHED = [
    (re.compile(r"['\"]train_runtime['\"]\s*:|^\s*train_runtime\s*="), "HF Trainer printed its final train_runtime"),
    (re.compile(r"`?Trainer\.fit`? stopped"), "Lightning: Trainer.fit stopped"),
    (re.compile(r"Signaling Trainer to stop"), "Lightning: early stopping ended the training"),
    (re.compile(r"^Training completed\. Do not forget to share your model"), "HF Trainer: training completed"),
    (re.compile(r"total average iteration time"), "llm.c printed its final timing"),
    (re.compile(r"after training is done"), "Megatron: after training is done"),
    (re.compile(r"Overall training speed: \d+ iterations"), "detectron2 printed its overall training speed"),
    (re.compile(r"done training in [\d.]+ seconds"), "fairseq: done training"),
    (re.compile(r"\d+ epochs completed in [\d.]+ hours"), "Ultralytics: epochs completed"),
    (re.compile(r"^peak memory (?:allocated|consumption)"), "modded-nanogpt printed its final peak memory"),
    (re.compile(r"^Epoch \d+: early stopping"), "Keras: early stopping ended the fit"),
    (re.compile(r"^\s*Finished [Tt]raining\.?\s*$"), "the script printed 'Finished Training' (PyTorch's tutorials)"),
    (re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: Training done\.\s*$"), "nnU-Net: training done"),
    (re.compile(r" - INFO - Training completed\s*$"), "torchtitan: training completed"),
    (re.compile(r"^\| End of training \|"), "PyTorch's word-language-model example: the test after training"),
    (re.compile(r"INFO\] Training finished after not improving\. Early Stop!"),
     "OpenNMT-py: early stopping ended the training"),
    # a hand-written loop's own last words, alone on their line ("Training complete.", "=== Training Complete ===",
    # "Training completed in 3 days", "Early stopping!", "Early stopping triggered at epoch 12")
    (re.compile(r"^[\s=*#-]*Training (?:complete|completed|finished|done)\b(?:[.!]|\s+in\s[^\n]{0,60})?[\s=*#!.-]*$",
                re.IGNORECASE), "the script printed that its training completed"),
    (re.compile(r"^\s*Early stopping(?: triggered)?(?: at epoch \d+)?[.!]*\s*$", re.IGNORECASE),
     "the script's early stopping ended the training"),
]
_LAST_STEP = re.compile(r"^\s*step\s+(\d+)\s*/\s*(\d+)\b")
#: Keras's header of a fit's last epoch ("Epoch 20/20"), and the update that ends an epoch ("63/63 ━━━", "63/63 - 1s")
_LAST_EPOCH = re.compile(r"^\s*Epoch (\d+)/\1\s*$")
_EPOCH_END = re.compile(r"(\d+)/\1 (?:\[=+\]|━|- )|^\s*(?:- )?\d+s(?: \S+/step)? - \w+: ")  # (then old Keras's)
#: any Keras epoch header: one after a fit's end means the log went on (another fit, the job not ended there)
_EPOCH_HEADER = re.compile(r"^\s*Epoch \d+/\d+\s*$")
#: lines after the last epoch's header within which its end is looked for (Keras callbacks print in between)
_EPOCH_END_WITHIN = 6
_STARTED = re.compile(r"\*\*\*\*\* Running training \*\*\*\*\*|^\s*\|\s*Name\s*\|\s*Type\s*\|"
                      r"|^\s*\d+\s+Trainable params|^GPU available: ")
_KILLED = [
    (re.compile(r"\*\*\* (?:JOB|STEP) [\w.]+ ON \S+ CANCELLED AT \S+(?: DUE TO ([A-Z ]+?))? \*\*\*"), "slurm"),
    (re.compile(r"^(?:.*line \d+:\s+\d+\s+)?(Killed|Terminated)(?:\s|$)"), "signal"),
    (re.compile(r"Received (\d+) death signal, shutting down workers"), "elastic"),
    (re.compile(r"Signal (\d+) \((SIG(?:TERM|KILL|INT|HUP|USR1|USR2|QUIT|XCPU))\) received by PID"), "elastic"),
    (re.compile(r"[Rr]equeu?ing job|job was requeued"), "requeued"),
    (re.compile(r"\b[Rr]eceived (?:signal )?(SIGTERM|SIGINT|SIGKILL|SIGHUP|SIGUSR1|SIGUSR2|SIGQUIT)\b"), "received"),
    (re.compile(r"PBS: job killed: (\w+)|TERM_(RUNLIMIT|PREEMPT|OWNER|MEMLIMIT)"), "batch"),
]
_OOM = re.compile(
    r"CUDA out of memory|HIP out of memory|OutOfMemoryError|can't allocate memory|\bout of memory\b"
    r"|oom[-_]kill|Out of memory: Killed process|RESOURCE_EXHAUSTED|OOM when allocating|std::bad_alloc"
    r"|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED|^MemoryError\b", re.IGNORECASE)
_ALLOCATION = [
    re.compile(r"Tried to allocate ([\d.]+ ?[KMGT]i?B)"),
    re.compile(r"you tried to allocate (\d+) bytes"),
    re.compile(r"OOM when allocating tensor with shape\s*\[([^\]]*)\]"),
]
_ALLOCATING_LINE = re.compile(r"allocat\w* ([\d.]+ ?[KMGT]i?B(?: for [\w ]+)?)", re.IGNORECASE)
_NCCL = NCCL_FAILURE  # shared with the NCCL scanner (runstatus/nccl.py)
_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_ROOT_CAUSE_LINES = 12  # torch elastic's "Root Cause" block: a rank's time, host, rank, exit code, traceback
_FATAL = [
    (re.compile(r"\[CUDA ERROR\] at file (\S+?):?$|\[CUDA ERROR\]"), "CUDA error"),
    (re.compile(r"\[cuBLAS ERROR\]:?\s*(.*)"), "cuBLAS error"),
    (re.compile(r"Assertion .* failed"), "assertion failed"),
    (re.compile(r"terminate called after throwing an instance of '([^']+)'"), "C++ exception"),
    (re.compile(r"Fatal Python error: (.+)"), "fatal Python error"),
    (re.compile(r"Segmentation fault|received signal SIGSEGV|Signal 11 \(SIGSEGV\) received by PID"), "SIGSEGV"),
    (re.compile(r"Signal 6 \(SIGABRT\) received by PID"), "SIGABRT"),
    (re.compile(r"Aborted \(core dumped\)|^Aborted$"), "SIGABRT"),
    (re.compile(r"Bus error \(core dumped\)|Illegal instruction \(core dumped\)"), "signal"),
]
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
#: Ray Tune's error.txt: each failure of a trial opens with this line, then the error (after Ray's actor line)
_TUNE_FAILURE = re.compile(r"^Failure # \d+ \(occurred at [^)]*\)")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:\([\w.]+\))?)(?::\s?(.*))?$")
_NOT_EXCEPTION = ("During handling", "The above exception", "Traceback")


@lru_cache(maxsize=4096)  # asked for each run of a file that holds thousands (a runs table)
def is_console_log(path: str | os.PathLike[str]) -> bool:
    """True for a file that looks like a run's console output (``*.log``, ``*.out``, ``*.err``, ``stdout``,
    ``workerlog.0``, ``train.log.1`` …)."""
    p = Path(path)
    if p.name.startswith("events.out.tfevents"):
        return False
    return (p.suffix.lower() in _CONSOLE_SUFFIXES or bool(_CONSOLE_NAMES.match(p.stem)) and not p.suffix
            or _NUMBERED_LOG.match(p.name) is not None)


def _tail(path: Path, size: int) -> tuple[list[str], int | None]:
    """The last lines of a file (at most ``TAIL_BYTES``) and the 1-based number of the first one (None: not counted)."""
    start = max(0, size - TAIL_BYTES)
    with open(path, "rb") as handle:
        first_line: int | None = 1
        if start:
            if start <= _COUNT_LINES_UP_TO:
                count, left = 0, start
                while left:
                    chunk = handle.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    count += chunk.count(b"\n")
                    left -= len(chunk)
                first_line = count + 1
            else:
                first_line = None
        handle.seek(start)
        data = handle.read(TAIL_BYTES)
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if start and lines:  # the first piece is the end of a line cut by the window
        lines = lines[1:]
        first_line = first_line + 1 if first_line is not None else None
    if lines and lines[-1] == "":
        lines.pop()
    return lines, first_line


def _clean(line: str) -> str:
    line = _ANSI.sub("", line).rstrip("\r")
    if "\r" in line:  # a progress bar redrawn with bare carriage returns: what is on screen is the last part
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    return _RANK_PREFIX.sub("", line)


def _shown(line: str, match: re.Match[str] | None = None) -> str:
    if len(line) <= _SHOWN:
        return line.strip()
    start = max(0, (match.start() if match else 0) - 40)
    return line[start:start + _SHOWN].strip() + " …"


#: Words one of which every line that can be a signal holds (lower case): the tail is searched for them in
#: one pass each, and only the lines holding one go through the patterns (most lines of a log hold none).
_KEYWORDS = (
    "traceback", "train_runtime", "trainer.fit", "signaling trainer", "training completed", "total average iteration",
    "after training is done", "overall training speed", "done training", "epochs completed", "peak memory",
    "cancelled", "killed", "terminated", "death signal", "received", "pbs: job", "term_", "reque", "of memory", "memoryerror",
    "oom", "alloc", "resource_exhausted", "nccl", "collective", "processgroup", "timed out", "distbackend",
    "distnetwork", "diststore", "closed by peer", "heartbeat", "cuda error", "cublas", "assertion",
    "terminate called", "fatal python", "segmentation", "sigsegv", "sigabrt", "aborted", "bus error",
    "illegal instruction", "running training", "| name", "trainable params", "gpu available", "failures:",
    "root cause", "keyboardinterrupt", "early stopping", "finished training", "failure # ", "training done",
    "training complete", "training finished",
    "end of training",
)


def _candidates(lines: list[str]) -> list[int]:
    """The indices of the lines that hold a keyword, or look like ``step N/M``, in order."""
    text = "\n".join(lines).lower()
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    found: set[int] = set()
    for word in _KEYWORDS:
        at = text.find(word)
        while at != -1:
            index = bisect_right(starts, at) - 1
            found.add(index)
            at = text.find(word, starts[index + 1] if index + 1 < len(starts) else len(text))
    for i, line in enumerate(lines):  # llm.c-style "step N/M", Keras's "Epoch N/M": only when it is the last
        head = line.lstrip()[:5]
        if head[:4] == "step" and "/" in line:
            got = _LAST_STEP.search(line)
            if got and got.group(1) == got.group(2):
                found.add(i)
        elif head == "Epoch" and _LAST_EPOCH.match(line):
            found.add(i)
    return sorted(found)


def scan_console(path: str | os.PathLike[str]) -> list[Signal]:
    """The status signals in the tail of one console log, in file order. An unreadable file gives none."""
    file = Path(path)
    try:
        lines, first = _tail(file, file.stat().st_size)
    except OSError:
        return []
    name = str(path)
    signals: list[Signal] = []
    cleaned = [_clean(line) for line in lines]
    in_failures = False  # torch elastic's "Failures:" block lists other ranks, not the root cause
    in_root_cause, root_start = False, 0
    next_free = 0  # lines a traceback already took are not looked at again
    for index in _candidates(cleaned):
        if index < next_free:
            continue
        line = cleaned[index]
        number = None if first is None else first + index
        if line.startswith("Failures:"):
            in_failures, in_root_cause = True, False
        elif line.startswith("Root Cause"):
            in_failures, in_root_cause, root_start = False, True, index
        signal, skip = _line_signal(cleaned, index, name, number, in_failures)
        if signal is not None:
            if in_root_cause and signal.kind == "killed" and index - root_start <= _ROOT_CAUSE_LINES:
                ranks = [m.group(1) for m in map(_ROOT_RANK.match, cleaned[root_start:index]) if m]
                who = f"rank {ranks[-1]}" if ranks else "a rank"
                signal = replace(signal, root_cause=True,
                                 detail=f"{who} was killed ({signal.detail.removeprefix('the launcher received ')}), "
                                        "the launcher's first failure")
            signals.append(signal)
        next_free = index + 1 + skip
    if not any(signal.kind == "finished" for signal in signals):
        end = _nanogpt_end(file, cleaned, first, name)
        if end is not None:  # (in file order: a failure after it still ends the job)
            signals.append(end)
            signals.sort(key=lambda signal: signal.evidence.line if signal.evidence.line is not None else -1)
    return _without_ends_trained_past(signals, cleaned, first)


#: nanoGPT's iteration line, and the max_iters and log_interval its config dump prints (``Overriding config with
#: config/x.py:`` then the file; ``Overriding: max_iters = 5000`` for a command-line setting, printed after it)
_NANOGPT_ITER = re.compile(r"^iter (\d+): loss [-+\d.]+")
_NANOGPT_SETTING = re.compile(r"^(?:Overriding: )?(max_iters|log_interval) = (\d+)\s*$", re.M)
#: the bytes of a nanoGPT log's head where its config dump is looked for
_CONFIG_HEAD = 256 * 1024


def _nanogpt_end(file: Path, cleaned: list[str], first: int | None, name: str) -> Signal | None:
    """A nanoGPT run's end, which it prints no marker for: its last iteration line is the last one its loop logs
    before ``max_iters`` (within ``log_interval`` of it), as its config dump gives them; None otherwise."""
    last = next((index for index in range(len(cleaned) - 1, -1, -1) if cleaned[index].startswith("iter ")
                 and _NANOGPT_ITER.match(cleaned[index])), None)
    if last is None:
        return None
    try:
        with open(file, "rb") as handle:
            head = handle.read(_CONFIG_HEAD).decode("utf-8", errors="replace")
    except OSError:
        return None
    settings = dict(_NANOGPT_SETTING.findall(head))  # (the last of each: a command line's, after the file's)
    if "max_iters" not in settings:
        return None
    iteration, most, every = int(_NANOGPT_ITER.match(cleaned[last]).group(1)), int(settings["max_iters"]), max(
        int(settings.get("log_interval", 1)), 1)
    if not most - every < iteration <= most:
        return None
    return Signal("finished", Evidence(name, None if first is None else first + last, _shown(cleaned[last])),
                  f"nanoGPT: its last iteration logged, {iteration:,}, is the last before max_iters = {most:,}")


def _without_ends_trained_past(signals: list[Signal], cleaned: list[str], first: int | None) -> list[Signal]:
    """The signals without a Keras fit's end (its early stop, its last epoch) that a later epoch header follows: a
    script that calls ``fit()`` again went on training, and what ended the job is to be found after it."""
    ends = [s for s in signals if s.kind == "finished" and s.detail.startswith("Keras:")]
    if not ends:
        return signals
    start = first if first is not None else 0
    headers = [start + i for i, line in enumerate(cleaned) if line[:12].lstrip()[:5] == "Epoch" and _EPOCH_HEADER.match(line)]
    if not headers:
        return signals
    last_header = headers[-1]
    return [s for s in signals if s not in ends or s.evidence.line is None or s.evidence.line >= last_header]


#: Lower-case words without which a family of patterns cannot match: the costly patterns run only on lines
#: that hold one (a log's long lines, e.g. TensorFlow's cost-model dumps, would otherwise dominate).
_GUARDS = {
    "finished": ("train_runtime", "trainer.fit", "signaling trainer", "training completed", "total average",
                 "after training", "overall training", "done training", "epochs completed", "peak memory",
                 "early stopping", "finished training", "training done", "end of training", "training complete",
                 "training finished"),
    "nccl": ("nccl", "collective", "processgroup", "timed out", "dist", "closed by peer", "heartbeat"),
    "oom": ("memory", "oom", "alloc", "resource_exhausted", "memoryerror"),
    "fatal": ("error", "assert", "terminate called", "fatal", "segment", "sigsegv", "sigabrt", "aborted",
              "bus error", "illegal"),
    "killed": ("cancel", "killed", "terminated", "signal", "received", "pbs", "term_", "reque"),
    "started": ("running training", "name", "trainable", "gpu available"),
}


#: Lower-case words without which no line shows a failed job (a crash, OOM, kill, hang, or a start with no end):
#: every keyword but those only an end marker needs
_FAILURE_WORDS = tuple(w for w in _KEYWORDS if w not in _GUARDS["finished"])


def may_show_a_failure(text: bytes) -> bool:
    """Whether ``text`` (a whole small file) holds a word some failure signal needs: one without any cannot give
    a failed status, so its tail need not be scanned."""
    low = text.lower()
    return any(word.encode() in low for word in _FAILURE_WORDS)


def _may(low: str, family: str) -> bool:
    return any(word in low for word in _GUARDS[family])


def _line_signal(lines: list[str], index: int, name: str, number: int | None,
                 in_failures: bool) -> tuple[Signal | None, int]:
    line = lines[index]
    if not line.strip():
        return None, 0
    if "Traceback" in line and _TRACEBACK.search(line):
        return _traceback(lines, index, name, number)
    if line.startswith("Failure # ") and _TUNE_FAILURE.match(line):
        return _tune_failure(lines, index, name, number)
    low = line.lower()
    if _may(low, "finished"):
        for pattern, detail in _FINISHED:
            if pattern.search(line):
                return Signal("finished", Evidence(name, number, _shown(line)), detail), 0
    if line.lstrip()[:5] == "Epoch" and _LAST_EPOCH.match(line):
        for after in lines[index + 1:index + 1 + _EPOCH_END_WITHIN]:
            if _EPOCH_END.search(after.replace("\b", "")):
                epochs = _LAST_EPOCH.match(line).group(1)
                return Signal("finished", Evidence(name, number, _shown(line)),
                              f"Keras: the fit's last epoch ({epochs}/{epochs}) ended"), 0
        return None, 0
    last_step = _LAST_STEP.search(line) if "step" in low else None
    if last_step and last_step.group(1) == last_step.group(2) and int(last_step.group(1)) > 0:
        return Signal("finished", Evidence(name, number, _shown(line, last_step)),
                      f"reached its last step ({last_step.group(1)}/{last_step.group(2)})"), 0
    nccl = _NCCL.search(line) if _may(low, "nccl") else None
    if nccl:
        return Signal("nccl", Evidence(name, number, _shown(line, nccl)),
                      "a collective operation timed out or failed (distributed hang)"), 0
    oom = _OOM.search(line) if _may(low, "oom") else None
    if oom:
        return _oom(lines, index, name, number, line, oom), 0
    if _may(low, "fatal"):
        for pattern, what in _FATAL:
            found = pattern.search(line)
            if found:
                return _fatal(lines, index, name, number, line, found, what)
    if not in_failures and _may(low, "killed"):
        for pattern, source in _KILLED:
            found = pattern.search(line)
            if found:
                return Signal("killed", Evidence(name, number, _shown(line, found)), _killed_detail(found, source)), 0
    if _may(low, "started") and _STARTED.search(line):
        return Signal("started", Evidence(name, number, _shown(line)), "training started"), 0
    return None, 0


def _killed_detail(found: re.Match[str], source: str) -> str:
    groups = [g for g in found.groups() if g]
    if source == "slurm":
        return f"cancelled by SLURM ({groups[0].lower()})" if groups else "cancelled by SLURM"
    if source == "elastic":
        return f"the launcher received signal {' '.join(groups)}"
    if source == "requeued":
        return "pre-empted and requeued by the batch system"
    if source == "received":
        return f"the job received {groups[0]}"
    if source == "batch":
        return f"stopped by the batch system ({groups[0].lower()})" if groups else "stopped by the batch system"
    return "killed by a signal" if found.group(1) == "Killed" else "terminated (SIGTERM)"


def _oom(lines: list[str], index: int, name: str, number: int | None, line: str, found: re.Match[str]) -> Signal:
    allocation = ""
    for pattern in _ALLOCATION:
        got = pattern.search(line)
        if got:
            allocation = got.group(1) + (" bytes" if got.group(1).isdigit() else "")
            break
    if not allocation:  # llm.c and others print what they allocate just before it fails
        for before in reversed(lines[max(0, index - 5):index]):
            got = _ALLOCATING_LINE.search(before)
            if got:
                allocation = got.group(1)
                break
    shown = line
    if len(line.strip()) < 20 and index:  # "out of memory" on its own line: show what came with it
        shown = f"{lines[index - 1].strip()} {line.strip()}"
    exception = _EXCEPTION.match(line.strip())
    kind = "host" if re.search(r"can't allocate memory|^MemoryError|oom[-_]kill|Killed process|bad_alloc", line,
                               re.IGNORECASE) else "device" if re.search(r"CUDA|HIP|cuda|CUBLAS", shown) else ""
    detail = {"host": "host out of memory", "device": "GPU out of memory"}.get(kind, "out of memory")
    return Signal("oom", Evidence(name, number, _shown(shown, found)), detail,
                  exception=exception.group(1) if exception and exception.group(2) is not None else "",
                  allocation=allocation)


def _fatal(lines: list[str], index: int, name: str, number: int | None, line: str, found: re.Match[str],
           what: str) -> tuple[Signal, int]:
    detail = what
    if what == "CUDA error" and index + 1 < len(lines) and lines[index + 1].strip():
        message = lines[index + 1].strip()  # llm.c prints the message on the next line
        if _OOM.search(message):
            oom = _oom(lines, index + 1, name, None if number is None else number + 1, message, _OOM.search(message))
            return oom, 1
        detail = f"CUDA error: {message}"
        line = f"{line.strip()} {message}"
    elif found.groups() and found.group(1):
        detail = f"{what}: {found.group(1)}"
    elif what == "assertion failed":
        detail = _shown(line[found.start():])
    return Signal("fatal", Evidence(name, number, _shown(line, found)), detail, exception=what), 0


def _tune_failure(lines: list[str], index: int, name: str, number: int | None) -> tuple[Signal | None, int]:
    """A failure in Ray Tune's ``error.txt``: the traceback that follows the ``Failure # N`` line (Ray prints the
    actor's ``ray::Trainable.train() (pid=…)`` line in place of the ``Traceback`` header; an exception line
    ends it as any traceback's does)."""
    start = index + 1 if index + 1 < len(lines) and lines[index + 1].startswith("ray::") else index
    signal, skip = _traceback(lines, start, name, None if number is None else number + start - index)
    return signal, skip + start - index


def _traceback(lines: list[str], index: int, name: str, number: int | None) -> tuple[Signal | None, int]:
    """The exception line that ends the traceback starting at ``index``, with its last frame."""
    frame = ""
    for offset in range(index + 1, min(len(lines), index + 400)):
        text = lines[offset]
        got = _FRAME.match(text)
        if got:
            frame = f'{got.group(1)}:{got.group(2)} in {got.group(3).strip()}'
            continue
        if not text.strip() or text[:1].isspace() or text.startswith(_NOT_EXCEPTION):
            if text.startswith("Traceback"):
                return None, offset - index - 1  # a chained traceback follows: that one ends the story
            continue
        exception = _EXCEPTION.match(text.strip())
        if exception is None:
            continue
        at = None if number is None else number + (offset - index)
        kind_name, message = exception.group(1), (exception.group(2) or "").strip()
        evidence = Evidence(name, at, _shown(text))
        if kind_name.endswith("KeyboardInterrupt"):
            return Signal("killed", evidence, "interrupted (KeyboardInterrupt)", exception=kind_name, frame=frame), \
                offset - index
        if _OOM.search(text):
            oom = _oom(lines, offset, name, at, text, _OOM.search(text))
            return Signal("oom", evidence, oom.detail, exception=kind_name, frame=frame,
                          allocation=oom.allocation), offset - index
        if _NCCL.search(text):
            return Signal("nccl", evidence, "a collective operation timed out or failed (distributed hang)",
                          exception=kind_name, frame=frame), offset - index
        reason = f"{kind_name}: {message}" if message else kind_name
        return Signal("traceback", evidence, _shown(reason), exception=kind_name, frame=frame), offset - index
    if frame and index + 400 >= len(lines):  # the log ends in it, cut before its exception line: an exception still
        evidence = Evidence(name, number, _shown(lines[index]))
        return Signal("traceback", evidence, f"a traceback the log ends in, cut before its exception line (last frame "
                      f"{_shown(frame)})", frame=frame), len(lines) - index - 1
    return None, 0


def wandb_exit(hparams: Mapping[str, Any], files: Iterable[str]) -> WandbExit | None:
    """The W&B exit record the W&B reader found (``hparams["_wandb"]``); None for a run without a .wandb log."""
    info = hparams.get("_wandb")
    record = next((f for f in files if f.endswith(".wandb")), None)
    if not isinstance(info, Mapping) or record is None:
        return None
    code = info.get("exit_code")
    runtime = info.get("runtime_s")
    return WandbExit(record, code if isinstance(code, int) and not isinstance(code, bool) else None,
                     float(runtime) if isinstance(runtime, int | float) and not isinstance(runtime, bool) else None)


#: where a tracker's reader keeps the run's recorded status in hparams, and the tracker's name
_TRACKER_KEYS = (("_mlflow", "MLflow"), ("_sacred", "Sacred"), ("_jsonl", "its JSON-lines log"))


def tracker_end(hparams: Mapping[str, Any]) -> TrackerEnd | None:
    """The run status a tracker's reader found (MLflow's ``hparams["_mlflow"]``, Sacred's ``hparams["_sacred"]``, a
    JSON-lines log's final ``{"status": …}`` record, ``hparams["_jsonl"]``,
    with the failure's last trace line when it kept one); None for a run without one."""
    for key, tracker in _TRACKER_KEYS:
        info = hparams.get(key)
        if not isinstance(info, Mapping) or not isinstance(info.get("status"), str) or not info["status"]:
            continue
        ended, trace, frame = info.get("ended"), info.get("trace"), info.get("frame")
        return TrackerEnd(tracker, str(info.get("record") or ""), info["status"],
                          ended if isinstance(ended, str) else None, trace if isinstance(trace, str) else "",
                          frame if isinstance(frame, str) else "")
    return None


def trainer_end(hparams: Mapping[str, Any], run_format: str, files: Iterable[str]) -> TrackerEnd | None:
    """The end an HF Trainer state records (``trainer_state.json``): the end-of-training summary it logs when
    ``train()`` returns (``train_runtime``), or its last step reached (``global_step == max_steps``); None when
    it records neither (a checkpoint's state, saved while the run went on)."""
    if run_format == "wandb-runs-csv":
        return _runs_table_state(hparams, files)
    if run_format == "yolo_csv":
        return _yolo_end(hparams, files)
    if run_format == "llamafactory":
        step, last = hparams.get("current_steps"), hparams.get("total_steps")
        if isinstance(step, int) and isinstance(last, int) and 0 < last <= step:
            record = next((f for f in files if f.endswith(".jsonl")), "")
            return TrackerEnd("LLaMA-Factory", record, "FINISHED", detail=f"LLaMA-Factory's trainer log reached its "
                              f"last step (current_steps = total_steps = {last:,})")
        return None
    if run_format != "hf_trainer_state":
        return None
    summary = hparams.get("summary")
    runtime = summary.get("train_runtime") if isinstance(summary, Mapping) else None
    step, last = hparams.get("global_step"), hparams.get("max_steps")
    record = _state_read(files, step)
    steps = isinstance(step, int) and isinstance(last, int) and not isinstance(step, bool) and last > 0
    of = f" at step {step:,} of max_steps {last:,}" if steps else ""
    if isinstance(runtime, int | float) and not isinstance(runtime, bool):
        early = " (before max_steps: early stopping or a callback ended it)" if steps and step < last else ""
        return TrackerEnd("HF Trainer", record, "FINISHED", detail=f"the HF Trainer logged its end-of-training "
                          f"summary (train_runtime {runtime:,.0f} s){of}{early}")
    if steps and step == last:
        return TrackerEnd("HF Trainer", record, "FINISHED",
                          detail=f"the HF Trainer state reached its last step (global_step = max_steps = {last:,})")
    return None


def _yolo_end(hparams: Mapping[str, Any], files: Iterable[str]) -> TrackerEnd | None:
    """A YOLO ``results.csv`` holding as many epochs as its ``args.yaml`` (``opt.yaml``) planned: a finished run
    (Ultralytics writes a row as each epoch ends; a crash, a kill or an early stop leaves fewer); None otherwise."""
    planned, written = hparams.get("epochs"), hparams.get("_epochs_written")
    if not isinstance(planned, int) or isinstance(planned, bool) or planned <= 0 or not isinstance(written, list) \
            or len(written) != 2:
        return None
    first, last = written
    if last - first + 1 < planned:
        return None
    record = next((f for f in files if Path(f).name == "results.csv"), next(iter(files), ""))
    return TrackerEnd("Ultralytics", record, "FINISHED", detail=f"results.csv holds the {planned} epochs its "
                      f"configuration planned (epochs {first}-{last})")


def _state_read(files: Iterable[str], step: Any) -> str:
    """Which ``trainer_state.json`` of a run the reader read (the newest): the output folder's own, else the copy
    in ``checkpoint-<global_step>``, else the first."""
    states = [f for f in files if f.endswith("trainer_state.json")]
    own = [f for f in states if not re.fullmatch(r"checkpoint-\d+", Path(f).parent.name)]
    at_step = [f for f in states if Path(f).parent.name == f"checkpoint-{step}"]
    return next(iter(own + at_step + states), "")


def _runs_table_state(hparams: Mapping[str, Any], files: Iterable[str]) -> TrackerEnd | None:
    """The State a W&B runs-table export gives its run's row (finished, failed, crashed, killed, running)."""
    info = hparams.get("_wandb")
    state = info.get("State") if isinstance(info, Mapping) else None
    if not isinstance(state, str) or not state.strip():
        return None
    return TrackerEnd("W&B", next(iter(files), ""), state.strip())


def run_status(files: Iterable[str], *, consoles: Iterable[str] = (), run_format: str = "",
               hparams: Mapping[str, Any] | None = None, now: float | None = None) -> RunStatus:
    """How a run ended, from its console logs (its own text files and ``consoles`` beside it),
    its W&B exit record and its files' modification times (``now`` defaults to the clock)."""
    import time

    files = list(files)
    texts = list(dict.fromkeys([f for f in files if is_console_log(f)] + list(consoles)))
    newest, newest_file, oldest = None, "", None
    for f in dict.fromkeys(files + texts):
        try:
            mtime = os.stat(f).st_mtime
        except OSError:
            continue
        if newest is None or mtime > newest:
            newest, newest_file = mtime, f
        oldest = mtime if oldest is None else min(oldest, mtime)
    live = _FOLLOWING.get() or (newest is not None and oldest is not None and newest - oldest >= RUNNING_WITHIN_S)
    signals: list[Signal] = []
    by_time = sorted(texts, key=lambda f: _mtime(f))
    for f in by_time:  # the console written last speaks last
        signals.extend(scan_console(f))
    started = any(s.kind == "started" for s in signals)
    decisive = [s for s in signals if s.kind != "started"]
    if signals and signals[-1].kind == "started":  # a new session began after what ended the last one
        decisive = []
    # (the end marker is printed in a console: a run read from its metrics file alone expects none)
    expects = bool(by_time) and (run_format in END_MARKER_FORMATS or started)
    tracker = tracker_end(hparams or {}) or trainer_end(hparams or {}, run_format, files)
    return classify(decisive, wandb=wandb_exit(hparams or {}, files), tracker=tracker,
                    newest_mtime=newest if live else None,
                    newest_file=newest_file, now=time.time() if now is None else now, expects_end_marker=expects,
                    last_line=_last_line(by_time[-1]) if expects and not decisive and by_time else None)


def _last_line(path: str) -> Evidence | None:
    """The last non-empty line of a console log (what it ended on), with its number."""
    try:
        lines, first = _tail(Path(path), os.stat(path).st_size)
    except OSError:
        return None
    for index in range(len(lines) - 1, -1, -1):
        text = _clean(lines[index]).strip()
        if text:
            return Evidence(path, None if first is None else first + index, _shown(text))
    return None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
