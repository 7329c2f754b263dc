"""User-supplied line patterns, for console logs no reader knows.

A pattern is a regular expression with named groups, applied to every line::

    iter (?P<step>\\d+) \\| loss (?P<loss>\\S+) \\| acc (?P<acc>\\S+)

Groups: ``step`` (optional: without it the step is the count of matching
lines), ``epoch`` and ``rank`` become columns, every other named group is a
tag with its value. Alternatively ``tag`` and ``value`` groups name the tag in
the line itself (``(?P<tag>\\w+)=(?P<value>\\S+)``).

Patterns come from the command line (``--pattern REGEX``, with
``--pattern-glob GLOB``) or from a config file found in the analysed folder
or above it: ``tanalyze.toml`` (top-level keys) or ``pyproject.toml``
(``[tool.tanalyze]``)::

    patterns = ["iter (?P<step>\\\\d+) loss (?P<loss>\\\\S+)"]   # files no reader claims

    [tool.tanalyze.patterns]                                  # or: glob -> regex,
    "logs/*.txt" = "iter (?P<step>\\\\d+) loss (?P<loss>\\\\S+)"    # for these files always

A pattern without a glob applies to text files that no reader claims and in
which it matches; a pattern with a glob applies to the files that match the
glob (relative to the analysed folder), before any reader is asked.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tanalyze.errors import ConfigError, InputError
from tanalyze.readers.base import ReadWarning, RunData
from tanalyze.readers.text._lines import Chunk, sniff_window
from tanalyze.readers.text._parser import MAX_EXAMPLES, TextParser
from tanalyze.readers.text._parts import parse_path
from tanalyze.readers.text._reader import TextReader, is_console_candidate, rank_layout, runs_from_parsed
from tanalyze.readers.values import NAN, short, to_float

__all__ = [
    "UserPattern",
    "PatternReader",
    "PATTERN_FORMAT",
    "compile_pattern",
    "patterns_from_config",
    "resolve_patterns",
    "match_pattern",
    "read_with_pattern",
]

_SPECIAL = frozenset({"step", "epoch", "rank", "tag", "value"})
CONFIG_NAMES = ("tanalyze.toml", "pyproject.toml")
#: The format name of runs read with a user pattern (not in the reader registry: it needs a pattern).
PATTERN_FORMAT = "pattern"
_STEP_LIMIT = 2**62  # steps and ranks are int64 columns; larger numbers in a line are not steps


@dataclass(frozen=True)
class UserPattern:
    """A line pattern and the files it is for (``glob`` None: files no reader claims)."""

    regex: str
    glob: str | None = None
    origin: str = "--pattern"


def compile_pattern(source: str, origin: str = "--pattern", error: type[Exception] = InputError) -> re.Pattern[str]:
    """Compile and check a user pattern; raise ``error`` naming the problem."""
    if not isinstance(source, str) or not source:
        raise error(f"{origin}: a pattern must be a non-empty string, got {source!r}")
    try:
        regex = re.compile(source, re.M)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise error(f"{origin}: invalid regular expression '{source}': {exc.msg}{where}") from None
    groups = set(regex.groupindex)
    if not groups:
        raise error(
            f"{origin}: the pattern '{source}' has no named groups; name the values to keep, "
            r"e.g. 'step (?P<step>\d+) loss (?P<loss>\S+)'"
        )
    if ("tag" in groups) != ("value" in groups):
        raise error(f"{origin}: the pattern '{source}' has a '{'tag' if 'tag' in groups else 'value'}' group "
                    "without its partner: 'tag' and 'value' go together")
    if not (groups - _SPECIAL) and "value" not in groups:
        raise error(
            f"{origin}: the pattern '{source}' names no value: groups step/epoch/rank are positions, "
            "add a group per metric, e.g. (?P<loss>\\S+)"
        )
    return regex


@lru_cache(maxsize=64)
def _compiled(source: str) -> re.Pattern[str]:
    return compile_pattern(source)


def patterns_from_config(start: str | Path) -> tuple[UserPattern, ...]:
    """Patterns from the nearest ``tanalyze.toml`` / ``pyproject.toml`` at or above ``start``."""
    from tanalyze.config import find_config, load_config

    path = find_config(Path(start).resolve(), upwards=True)
    if path is None:
        return ()
    raw = load_config(path).patterns
    where = "[tool.tanalyze] patterns" if path.name == "pyproject.toml" else "patterns"
    if raw is None:
        return ()
    found: list[UserPattern] = []
    if isinstance(raw, dict):
        for glob, regex in raw.items():
            found.append(UserPattern(regex, glob, f"{path} {where}.{glob!r}"))
    elif isinstance(raw, list):
        for index, item in enumerate(raw):
            origin = f"{path} {where}[{index}]"
            if isinstance(item, str):
                found.append(UserPattern(item, None, origin))
            elif isinstance(item, dict) and isinstance(item.get("regex"), str):
                glob = item.get("glob")
                if glob is not None and not isinstance(glob, str):
                    raise ConfigError(f"{origin}: 'glob' must be a string")
                found.append(UserPattern(item["regex"], glob, origin))
            else:
                raise ConfigError(f"{origin}: expected a regex string or a table with 'regex' (and 'glob')")
    else:
        raise ConfigError(f"{path}: {where} must be a list of regexes or a table of glob = regex")
    for pattern in found:
        compile_pattern(pattern.regex, pattern.origin, ConfigError)
    return tuple(found)


def resolve_patterns(path: str | Path, given: Iterable[str | UserPattern] | None) -> tuple[UserPattern, ...]:
    """Patterns given by the caller (checked) followed by those of the config file."""
    patterns: list[UserPattern] = []
    for item in given or ():
        pattern = item if isinstance(item, UserPattern) else UserPattern(str(item), None, "pattern")
        compile_pattern(pattern.regex, pattern.origin, InputError)
        patterns.append(pattern)
    patterns.extend(patterns_from_config(path))
    return tuple(patterns)


#: Joins the regexes of several patterns that apply to one file (a run's ``pattern`` holds them all).
PATTERN_SEPARATOR = "\x00"


def match_pattern(path: Path, root: Path, patterns: Sequence[UserPattern], head: bytes | None) -> UserPattern | None:
    """The patterns that apply to ``path``, as one: those whose glob matches it, else (``head`` given,
    i.e. no reader claimed the file) every glob-less pattern that matches its text. Several patterns
    read one file together (e.g. one for training lines, one for evaluation lines): the result's
    ``regex`` holds them joined by :data:`PATTERN_SEPARATOR`."""
    relative = path.relative_to(root).as_posix() if path.is_relative_to(root) and path != root else path.name
    found = [p for p in patterns
             if p.glob and (fnmatch.fnmatch(relative, p.glob) or fnmatch.fnmatch(path.name, p.glob))]
    if not found and head is not None and is_console_candidate(path, head):
        window = None
        for pattern in patterns:
            if pattern.glob is None:
                window = window if window is not None else sniff_window(path)
                if _compiled(pattern.regex).search(window):
                    found.append(pattern)
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    return UserPattern(PATTERN_SEPARATOR.join(dict.fromkeys(p.regex for p in found)), found[0].glob,
                       ", ".join(p.origin for p in found))


class PatternParser(TextParser):
    family = "pattern"

    def __init__(self, path: Path, regex: str) -> None:
        super().__init__(path)
        self.regexes = [_compiled(r) for r in regex.split(PATTERN_SEPARATOR)]
        self.regex = self.regexes[0]
        self._values = {r: sorted(set(r.groupindex) - _SPECIAL) for r in self.regexes}
        self._has_step = all("step" in r.groupindex for r in self.regexes)  # else steps count matching lines
        self._count = 0
        self._bad = 0
        self._bad_examples: list[tuple[int, str]] = []

    def _matches(self, text: str):
        """Every pattern's matches in ``text``, in the order of the lines (one pattern: as found)."""
        if len(self.regexes) == 1:
            yield from self.regexes[0].finditer(text)
            return
        found = [m for regex in self.regexes for m in regex.finditer(text)]
        found.sort(key=lambda m: m.start())
        yield from found

    def _bad_value(self, chunk: Chunk, pos: int) -> None:
        self._bad += 1
        if len(self._bad_examples) < MAX_EXAMPLES:
            self._bad_examples.append((chunk.line_of(pos), chunk.line_at(pos)))

    def feed(self, chunk: Chunk) -> None:
        for m in self._matches(chunk.text):
            groups = m.groupdict()
            has_step = "step" in groups
            if has_step and groups["step"] is not None:
                number = to_float(groups["step"])
                if number is None or not math.isfinite(number) or number != int(number) or abs(number) > _STEP_LIMIT:
                    self._bad_value(chunk, m.start())
                    continue
                step = int(number)
            else:
                step = self._count
            epoch = to_float(groups.get("epoch") or "") if groups.get("epoch") else NAN
            rank_value = to_float(groups.get("rank") or "") if groups.get("rank") else None
            rank = int(rank_value) if rank_value is not None and abs(rank_value) < _STEP_LIMIT else -1
            pairs = []
            if "tag" in groups and groups["tag"] is not None:
                value = to_float(groups["value"] or "")
                if value is None:
                    self._bad_value(chunk, m.start())
                else:
                    pairs.append((groups["tag"].strip(), value))
            for name in self._values[m.re]:
                raw = groups[name]
                if raw is None:
                    continue
                value = to_float(raw)
                if value is None:
                    self._bad_value(chunk, m.start())
                else:
                    pairs.append((name, value))
            if not pairs:
                continue
            self._count += 1
            self.mark(chunk, m.start())
            if has_step:
                self.anchor(step, chunk, m.start(), rank=rank)
            self.rows.add_pairs(pairs, step, epoch=epoch if epoch is not None else NAN, rank=rank)

    def finish(self) -> None:
        notes = [f"read with the user pattern {short(r.pattern, 120)!r}" for r in self.regexes]
        if not self._has_step:
            notes.append("a pattern has no 'step' group: step = count of matching lines before (from 0)")
        self.notes[:0] = notes
        if self._bad:
            examples = "; ".join(f"line {n}: {short(t)!r}" for n, t in self._bad_examples)
            self.warnings.append(
                ReadWarning(
                    self.file,
                    f"{self._bad:,} matched value(s) are not numbers and were skipped, e.g. {examples}",
                    location=f"line {self._bad_examples[0][0]}",
                    count=self._bad,
                )
            )


def read_with_pattern(files: list[Path], regex: str) -> list[RunData]:
    """Read one run's files with a user pattern."""
    ranks = rank_layout(files) if len(files) > 1 else None
    ordered = sorted(files, key=lambda f: ranks[f]) if ranks else sorted(files)
    parsed = [parse_path(f, PatternParser(f, regex)) for f in ordered]
    return [runs_from_parsed(parsed, ranks)]


class PatternReader(TextReader):
    """Files read with a user pattern: discovery assigns them (it knows the patterns), so this reader
    is not in the registry and its ``sniff`` never claims a file; it lends discovery its grouping."""

    name = PATTERN_FORMAT
    description = "any text log, read with a user-supplied regular expression (--pattern / tanalyze.toml)"
    parser = TextParser

    def detect(self, window: str) -> bool:
        return False

    def sniff(self, path: Path, head: bytes) -> bool:
        return False

    def read(self, files: list[Path]) -> list[RunData]:
        raise InputError("the pattern reader needs a pattern: give --pattern REGEX or a tanalyze.toml")
