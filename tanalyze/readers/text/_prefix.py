"""Rank prefixes that launchers put before every line of a distributed job's console.

A launcher that gathers the output of several processes into one stream marks each line
with the process it came from:

- ``torchrun --tee`` / ``accelerate launch --tee`` (and ``torchrun`` on its own for the
  tracebacks it forwards): ``[default0]:`` (the worker role, ``default`` unless ``--role``,
  then the local rank), ``[rank0]:``; both nest (``[default0]:[rank0]: Traceback …``);
- Lightning's rank-prefixed messages: ``[rank: 0] …``;
- SLURM ``srun --label``: ``0: …`` (the task id, padded with spaces to the width of the largest);
- both, on several nodes: ``srun --label torchrun --tee 3 …``: ``0: [default3]:`` (node task, local rank);
- Open MPI ``mpirun --tag-output``: ``[1,0]<stdout>:`` / ``[1,0]<stderr>:`` (job, rank);
- Ray: ``(TaskRunner pid=123)`` before its actors' lines: no rank, only removed.

:func:`detect` decides, from the first lines of a file, whether its lines carry such a prefix
(most of them must, so that an ordinary log's ``3: …`` line is no prefix); :func:`split` then
strips it line by line and hands each rank its own lines, so any console format reads each rank
as if it had its own file. Lines without the prefix (the launcher's own) go to rank -1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LOGGING", "PREFIXES", "RankPrefix", "detect", "detect_logging", "split", "split_lines", "strip_window"]


@dataclass(frozen=True)
class RankPrefix:
    """One launcher's line prefix: ``pattern`` matches it at a line start, group ``rank`` is the process."""

    name: str
    pattern: re.Pattern[str]
    #: the share of non-blank lines among the first ones that must carry it
    share: float


PREFIXES: tuple[RankPrefix, ...] = (
    RankPrefix("open-mpi", re.compile(r"\[\d+,(?P<rank>\d{1,6})\]<std(?:out|err)>: ?"), 0.3),
    # torchrun's [default0]: (role, local rank) or [0]: (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[${rank}]:"),
    # torch's own [rank0]: (on the tracebacks and warnings of a process in a group), Lightning's [rank: 0]
    RankPrefix("torchrun", re.compile(
        r"\[(?:(?P<role>[A-Za-z][\w-]*?)?(?P<rank>\d{1,6})\]:|rank: (?P<lrank>\d{1,6})\] )"), 0.3),
    RankPrefix("srun", re.compile(r" {0,5}(?P<rank>\d{1,6}): "), 0.8),
    # Ray's actor prefix: a process, not a rank (its lines are read as one log, the prefix removed)
    RankPrefix("ray", re.compile(r"\([A-Za-z_][\w.]* pid=\d+(?:, ip=[\d.]+)?\) ?"), 0.3),
)
#: A logging library's line prefix (no rank; removed only, and only by readers that ask for it: see
#: :func:`detect_logging`): Python ``logging`` formats (``2024-01-01 12:00:00,123 - __main__ - INFO - ``,
#: ``[INFO] 2021-12-25 21:43:42,093 : ``,
#: ``INFO:root:``, ``12/06/2024 10:00:00 - INFO - __main__ - ``, hydra's ``[time][name][INFO] - ``), loguru's
#: ``2024-01-01 12:00:00.123 | INFO     | module:function:42 - ``, absl/glog's ``I0101 12:00:00.123456 42 f.py:7] ``.
#: A prefix is a run of such parts and holds a time or a level.
LOGGING = "logging"
_TIME = (r"(?:\d{4}[-/.]\d{2}[-/.]\d{2}[ T_]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?: ?(?:Z|UTC|[+-]\d{2}:?\d{2}))?"
         r"|\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?|\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)")
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|SUCCESS)"
_PART_SEP = r"(?: - | \| |: | |)"
_KEY_PART = (rf"(?:\[ *(?:{_TIME}|{_LEVEL}) *\]{_PART_SEP}|{_TIME}(?: - | \| |: | : | )|{_LEVEL} *(?: - | \| |: | : | )"
             rf"|{_LEVEL}:[\w.<>-]+:|[IWEF]\d{{4}} \d{{2}}:\d{{2}}:\d{{2}}\.\d+ +\d+ [\w.-]+:\d+\] ?)")
#: (a logger's name may be a path: ``logging.getLogger("log\\train.log")``; a bracket that holds a training counter,
#: ``[Epoch 1/60]``, ``[step 100]``, is the message's, not the prefix's)
_OTHER_PART = (r"(?:\[(?![ \t]*(?i:epoch|step|iter|iteration|batch)\b[ \t]*[:=]?[ \t]*\d)[^\]\n]{1,80}\]"
               rf"{_PART_SEP}|[\w.<>/\\-]+(?::[\w.<>/\\-]+){{0,2}}(?: - | \| ))")
#: (a few blanks before it: a line a stray space was printed before, `` 2025-07-07 15:40:58.345 INFO: …``)
_LOGGING_PREFIX = re.compile(rf"[ \t]{{0,4}}(?:{_OTHER_PART})*{_KEY_PART}(?:{_KEY_PART}|{_OTHER_PART})*")
#: at least this share of the first lines must carry it
LOGGING_SHARE = 0.5
#: what torch's ``[rankN]:`` prefixes on its own (a traceback, a warning): no sign of a launcher
_TORCH_OWN = re.compile(r"\s|Traceback|\[[WEIF]\d|\w+(?:Error|Exception)\b|\^|$")
_NESTED = re.compile(r"\[(?:default|rank)\d{1,6}\]: ?")
#: each prefix as it is spelled at a line start (no groups: ``findall`` gives the spellings)
_SPELLING = {
    "open-mpi": r"\[\d+,\d{1,6}\]<std(?:out|err)>: ?",
    "torchrun": r"\[(?:[A-Za-z][\w-]*?\d{1,6}\]:|\d{1,6}\]:|rank: \d{1,6}\] )",
    "srun": r" {0,5}\d{1,6}: ",
    "ray": r"\([A-Za-z_][\w.]* pid=\d+(?:, ip=[\d.]+)?\) ?",
}
#: more distinct prefixes than this in a chunk are split line by line
_FAST_SPELLINGS = 64
#: at least this many prefixed lines before a file counts as prefixed
MIN_LINES = 3
#: lines looked at to decide
SAMPLE_LINES = 2000


def _rank(match: re.Match[str]) -> int:
    """The rank a prefix names; -1 for a prefix that names none (Ray's actors)."""
    groups = match.groupdict()
    value = groups.get("rank") or groups.get("lrank")
    return int(value) if value is not None else -1


def detect(window: str) -> str | None:
    """The name of the prefix the first lines of ``window`` carry, or None.

    ``srun``'s bare ``N: `` needs most lines with it and ranks that are small and dense, so that a log
    whose lines happen to start with a number and a colon is not taken for one.
    """
    lines = [line for line in window.split("\n", SAMPLE_LINES)[:SAMPLE_LINES] if line.strip()]
    if len(lines) > 1 and not window.endswith("\n"):
        lines = lines[:-1]  # the last line may be cut by the window
    if not lines:
        return None
    for prefix in PREFIXES:
        ranks = [_rank(m) for m, line in zip(map(prefix.pattern.match, lines), lines, strict=True)
                 if m and not _torch_own(m, line)]
        if len(ranks) < MIN_LINES or len(ranks) < prefix.share * len(lines):
            continue
        seen = set(ranks)
        if prefix.name == "srun" and (len(ranks) < 2 * len(seen) or max(seen) >= 2 * len(seen) + 8):
            continue  # task ids are few, dense from 0 and each on many lines; a numbered list is not
        if prefix.name == "srun":
            return _nested_torchrun(lines, prefix) or prefix.name
        return prefix.name
    return None


#: torchrun's own prefix inside srun's (``srun --label torchrun --tee 3 …`` on several nodes): ``0: [default3]:``
_ROLE = re.compile(r"\[[A-Za-z][\w-]*?(\d{1,6})\]:")
NESTED_SRUN = "srun+torchrun:"


def _nested_torchrun(lines: list[str], srun: RankPrefix) -> str | None:
    """``srun+torchrun:<local ranks per node>`` when most srun-labelled lines also carry torchrun's prefix:
    then a line's rank is ``task × local ranks per node + local rank`` (srun starts one torchrun per node)."""
    local = []
    labelled = 0
    for line in lines:
        m = srun.pattern.match(line)
        if m is None:
            continue
        labelled += 1
        inner = _ROLE.match(line, m.end())
        if inner:
            local.append(int(inner.group(1)))
    if not local or len(local) < 0.5 * labelled:
        return None
    return f"{NESTED_SRUN}{max(local) + 1}"


def _split_nested(text: str, per_node: int) -> dict[int, list[str]]:
    """Lines labelled by srun's task (a node) and torchrun's local rank, by global rank; the rest -1."""
    srun = _prefix("srun").pattern
    lanes: dict[int, list[str]] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        m = srun.match(line)
        inner = _ROLE.match(line, m.end()) if m else None
        if inner is None:
            lanes.setdefault(-1, []).append(line[m.end():] if m else line)
            continue
        rest = line[inner.end():]
        nested = _NESTED.match(rest)
        rank = int(m.group("rank")) * per_node + int(inner.group(1))
        lanes.setdefault(rank, []).append(rest[nested.end():] if nested else rest)
    return lanes


def _torch_own(match: re.Match[str], line: str) -> bool:
    """Whether a ``[rankN]:`` line is torch's own (a traceback or warning a process printed), which a
    single process's log has too: such lines do not make a log a launcher's."""
    if match.groupdict().get("role") != "rank":
        return False
    return _TORCH_OWN.match(line, match.end() + (line[match.end():match.end() + 1] == " ")) is not None


def _prefix(name: str) -> RankPrefix:
    return next(p for p in PREFIXES if p.name == name)


def detect_logging(window: str) -> bool:
    """Whether most of the first lines of ``window`` carry a logging library's prefix (see :data:`LOGGING`)."""
    lines = [line for line in window.split("\n", SAMPLE_LINES)[:SAMPLE_LINES] if line.strip()]
    if len(lines) > 1 and not window.endswith("\n"):
        lines = lines[:-1]
    prefixed = sum(1 for line in lines if _LOGGING_PREFIX.match(line))
    return prefixed >= MIN_LINES and prefixed >= LOGGING_SHARE * len(lines)


_LOGGING_AT_LINE_START = re.compile("^" + _LOGGING_PREFIX.pattern, re.M)


def _without_logging(text: str) -> str:
    return _LOGGING_AT_LINE_START.sub("", text)


def split(text: str, name: str) -> dict[int, list[str]]:
    """The lines of ``text`` (whole lines, ``\\n``-terminated) by rank, prefix stripped; -1: unprefixed lines.

    Each rank's lines are gathered by one regex pass per distinct prefix (the usual case: a few ranks, each
    with one spelling of its prefix); else line by line (:func:`split_lines`), with the same result.
    """
    if not text:
        return {}
    if name.startswith(NESTED_SRUN):
        return _split_nested(text, int(name[len(NESTED_SRUN):]))
    if name == LOGGING:
        return split_lines(text, name)
    body = "\n" + (text[:-1] if text.endswith("\n") else text)  # every line after a line break: regexes that
    # begin with a literal are searched fast
    prefix = _prefix(name)
    spellings = set(re.findall("\n(" + _SPELLING[name] + ")", body))
    if len(spellings) > _FAST_SPELLINGS:
        return split_lines(text, name)
    by_rank: dict[int, str] = {}
    for spelling in spellings:
        m = prefix.pattern.match(spelling)
        rank = _rank(m) if m is not None and m.end() == len(spelling) else None
        if rank is None or rank in by_rank:  # one rank spelled two ways: keep the lines' order
            return split_lines(text, name)
        by_rank[rank] = spelling
    nested = _NESTED.pattern if name == "torchrun" else ""
    lanes: dict[int, list[str]] = {}
    for rank, spelling in sorted(by_rank.items()):
        lanes[rank] = re.findall(r"\n" + re.escape(spelling) + r"(?:" + nested + r")?([^\n]*)", body)
    if sum(map(len, lanes.values())) < body.count("\n"):  # lines without the prefix: the launcher's
        lanes[-1] = re.findall(r"\n(?!" + _SPELLING[name] + r")([^\n]*)", body)
    return lanes


def split_lines(text: str, name: str) -> dict[int, list[str]]:
    """:func:`split`, line by line."""
    if name == LOGGING:  # no rank: every line in one lane, the prefix removed in one pass
        lines = _without_logging(text).split("\n")
        return {-1: lines[:-1] if lines and lines[-1] == "" else lines}
    pattern = _prefix(name).pattern
    match = pattern.match
    lanes: dict[int, list[str]] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        m = match(line)
        if m is None:
            lanes.setdefault(-1, []).append(line)
            continue
        rest = line[m.end():]
        if rest.startswith("[") and name == "torchrun":
            inner = _NESTED.match(rest)
            if inner:
                rest = rest[inner.end():]
        lanes.setdefault(_rank(m), []).append(rest)
    return lanes


def strip_window(window: str, name: str) -> str:
    """``window`` with the prefix ``name`` removed from every line that has it (for sniffing formats)."""
    if name.startswith(NESTED_SRUN):
        lanes = _split_nested(window, int(name[len(NESTED_SRUN):]))
        return "\n".join(line for lane in lanes.values() for line in lane)
    if name == LOGGING:
        return _without_logging(window)
    pattern = _prefix(name).pattern
    out = []
    for line in window.split("\n"):
        m = pattern.match(line)
        if m is not None:
            line = line[m.end():]
            if name == "torchrun":
                inner = _NESTED.match(line)
                if inner:
                    line = line[inner.end():]
        out.append(line)
    return "\n".join(out)
