"""Join what was read of a run written to several places into one run.

Discovery (:mod:`tanalyze.identity`) decides which sources are one run; each is read by
its own reader (through the cache, like any run). Here their tables become one: the
parts' tags renamed as the writer meant them (``validation/epoch_loss``, ``Loss/val``),
hparams, warnings, restarts and notes kept with the part they came from; the parts' sessions
(phases) are the run's when the parts agree on them. Twins (the
same run written by two sinks) are compared, not added twice: the preferred sink is
read as the run unless another goes on to later steps, and a note says how they agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tanalyze.identity import RunPart
from tanalyze.readers.base import Phase, Restart, RunData
from tanalyze.schema import concat_frames, empty_scalars, keep_last_write

__all__ = ["assemble", "Assembled"]

#: Tag words that only say "training", dropped when matching a tag across twins (``loss`` = ``train/loss``).
_TRAIN_WORDS = frozenset({"train", "training"})
_SAME_WORD = {"validation": "val", "valid": "val"}
_SAME_WORDS = {"lr": ("learning", "rate")}  # (LLaMA-Factory's lr is the Trainer's learning_rate)
_EXAMPLE_TAGS = 5
_RELATIVE_TOLERANCE = 1e-4  # float32 events against JSON/CSV values printed to 5 significant digits


@dataclass
class Assembled:
    """The joined run, the format it was read as, and every part with the role it got."""

    data: RunData
    format: str
    parts: tuple[RunPart, ...]


def _renamed(frame: pd.DataFrame, part: RunPart) -> pd.DataFrame:
    if frame.empty or not (part.tag_prefix or part.tag_suffix):
        return frame
    tags = frame["tag"]
    if isinstance(tags.dtype, pd.CategoricalDtype):
        renamed = tags.cat.rename_categories([part.rename(str(t)) for t in tags.cat.categories])
    else:
        renamed = tags.map(lambda t: part.rename(str(t))).astype("category")
    return frame.assign(tag=renamed)


def _ranked(frame: pd.DataFrame, part: RunPart) -> pd.DataFrame:
    """A per-rank writer's rows with its ``rank`` (identity rule 5)."""
    if part.rank is None or frame.empty:
        return frame
    return frame.assign(rank=pd.array(np.full(len(frame), part.rank), dtype="Int64"))


def _sinks(parts: Sequence[RunPart]) -> list[list[int]]:
    """Part indices grouped by sink: the parts read as the run first, then each twin format."""
    main = [i for i, p in enumerate(parts) if p.kind != "twin"]
    twins: dict[str, list[int]] = {}
    for i, p in enumerate(parts):
        if p.kind == "twin":
            twins.setdefault(p.format, []).append(i)
    return [main, *twins.values()] if main else list(twins.values())


def _last_step(read: Sequence[list[RunData]], indices: list[int]) -> int | None:
    last = None
    for i in indices:
        for data in read[i]:
            table = data.scalar_table()
            if len(table):
                step = int(table["step"].max())
                last = step if last is None else max(last, step)
    return last


def assemble(parts: Sequence[RunPart], read: Sequence[list[RunData]]) -> Assembled:
    """One run from its parts (``read[i]`` is what part ``i``'s reader returned)."""
    sinks = _sinks(parts)
    chosen = 0
    ends = [_last_step(read, sink) for sink in sinks]
    for index in range(1, len(sinks)):
        # a twin that goes on to later steps holds more of the run (the preferred record was saved earlier);
        # one step of slack: 0- and 1-based epoch counters of one run
        best = ends[chosen]
        if ends[index] is not None and (best is None or ends[index] > best + 1):
            chosen = index
    roles = []
    for index, sink in enumerate(sinks):
        for i in sink:
            part = parts[i]
            if index == chosen and part.kind == "twin":
                part = RunPart(part.format, part.directory, part.files, "main", part.label.removeprefix("twin: "),
                               part.tag_prefix, part.tag_suffix, part.pattern, part.rank)
            elif index != chosen and part.kind != "twin":
                part = RunPart(part.format, part.directory, part.files, "twin", f"twin: {part.label or _files(part)}",
                               part.tag_prefix, part.tag_suffix, part.pattern, part.rank)
            roles.append((i, part))
    roles.sort(key=lambda item: (item[1].kind == "twin", item[0]))
    ordered = tuple(part for _, part in roles)

    joined = RunData()
    frames: list[pd.DataFrame] = []
    histograms: list[pd.DataFrame] = []
    hparams: dict[str, object] = {}
    text: dict[str, str] = {}
    twin_frames: dict[str, list[pd.DataFrame]] = {}
    part_phases: list[tuple[RunPart, list[Phase]]] = []
    for i, part in roles:
        for data in read[i]:
            joined.warnings.extend(data.warnings)
            joined.title = joined.title or data.title  # the name its owner knows the run by (a W&B run's)
            for key, value in data.hparams.items():
                hparams.setdefault(key, value)
            if part.kind == "twin":
                twin_frames.setdefault(part.label, []).append(data.scalar_table())
                joined.extra_files.extend(data.extra_files)
                continue
            frames.append(_ranked(_renamed(data.scalar_table(), part), part))
            if len(data.histograms):
                histograms.append(_renamed(data.histograms, part))
            joined.restarts.extend(Restart(r.step, r.file, _labelled(part, r.detail), r.until) for r in data.restarts)
            if data.phases:
                part_phases.append((part, data.phases))
            joined.notes.extend(_labelled(part, note) for note in data.notes)
            text.update({part.rename(key): value for key, value in data.text.items()})
            joined.extra_files.extend(data.extra_files)
    table = concat_frames(frames) if frames else empty_scalars()
    if len(table):
        per_rank = any(p.rank is not None for p in ordered)
        table, dropped = keep_last_write(table, keys=("tag", "step", "rank") if per_rank else ("tag", "step"))
        if dropped:
            joined.notes.append(f"{dropped} point(s) logged at the same tag and step by two parts of the run; "
                                "the later part's kept")
    joined.scalars = table
    joined.phases, note = _joined_phases(part_phases)
    if note:
        joined.notes.append(note)
    if histograms:
        joined.histograms = concat_frames(histograms)
    joined.hparams = hparams
    joined.text = text
    main_parts = [p for p in ordered if p.kind != "twin"]
    if len(main_parts) > 1 or any(p.kind != "main" for p in main_parts):
        joined.notes.insert(0, "one run written to several places: " + "; ".join(_where(p) for p in main_parts))
    chosen_format = main_parts[0].format if main_parts else parts[0].format
    for label, twin in twin_frames.items():
        joined.notes.append(_compare_twin(label, table, concat_frames(twin), chosen_format))
    if chosen != 0:
        preferred = ", ".join(sorted({parts[i].format for i in sinks[0]}))
        chosen_name = chosen_format
        if preferred == chosen_format:  # two sinks of one format: told apart by their files
            chosen_name, preferred = (", ".join(_files(parts[i]) for i in sinks[k]) for k in (chosen, 0))
        joined.notes.append(
            f"read from {chosen_name} rather than {preferred}: it goes on to step {ends[chosen]:,}, "
            f"the other stops at step {ends[0]:,}" if ends[0] is not None else
            f"read from {chosen_name} rather than {preferred}, which holds no points"
        )
    return Assembled(joined, chosen_format, ordered)


def _files(part: RunPart) -> str:
    """A part named by its files and format: ``train.out (build_nanogpt)``."""
    names = sorted({Path(f).name for f in part.files})
    return f"{names[0] if len(names) == 1 else f'{len(names)} files'} ({part.format})"


def _where(part: RunPart) -> str:
    name = part.label or part.format
    if part.tag_prefix or part.tag_suffix:
        return f"{name} (tags {part.rename('<tag>')})"
    return name


def _labelled(part: RunPart, text: str) -> str:
    return f"{part.label}: {text}" if part.kind != "main" and part.label else text


def _key(tag: str) -> tuple[str, ...]:
    """What a tag measures, as words, for pairing a twin's tags with the run's: ``train`` words and Keras's
    ``epoch_`` prefix dropped, ``validation``/``valid`` read as ``val`` (Keras's console ``val_loss`` is its
    TensorBoard callback's ``validation/epoch_loss``), ``lr`` as ``learning rate``; Ray Tune's ``ray/tune/`` prefix
    of its TensorBoard tags dropped."""
    head, _, last = tag.lower().removeprefix("ray/tune/").rpartition("/")
    last = last.removeprefix("epoch_")
    words = [_SAME_WORD.get(w, w) for w in re.split(r"[^0-9a-z]+", f"{head}/{last}") if w and w not in _TRAIN_WORDS]
    return tuple(sorted(w for word in words for w in _SAME_WORDS.get(word, (word,))))


def _by_key(tags) -> dict[tuple[str, ...], str]:
    """Tags by what they measure (:func:`_key`); of two with one key (``loss`` and ``train_loss``), the one whose
    name is the key itself (``loss``): the plain name is the per-step curve, the prefixed one often a summary."""
    out: dict[tuple[str, ...], str] = {}
    for tag in sorted(map(str, tags), key=len, reverse=True):
        out[_key(tag)] = tag  # the shortest name, written last, wins
    return out


def _compare_twin(label: str, main: pd.DataFrame, twin: pd.DataFrame, main_format: str) -> str:
    """A sentence on how a twin sink compares with what was read as the run."""
    if twin.empty:
        return f"{label}: the same run, written by another sink; it holds no points"
    steps = twin["step"]
    head = (f"{label}: the same run, written by another sink; not added twice "
            f"({len(twin):,} points, {twin['tag'].nunique()} tags, steps {int(steps.min()):,}–{int(steps.max()):,})")
    if main.empty:
        return head
    main_tags = _by_key(main["tag"].unique())
    twin_tags = _by_key(twin["tag"].unique())
    shared = [k for k in twin_tags if k in main_tags]
    only = sorted(twin_tags[k] for k in twin_tags if k not in main_tags)
    parts = [head]
    if shared:
        parts.append(_agreement(main, twin, [(main_tags[k], twin_tags[k]) for k in shared]))
    if only:
        shown = ", ".join(only[:_EXAMPLE_TAGS]) + (f" and {len(only) - _EXAMPLE_TAGS} more" if len(only) > _EXAMPLE_TAGS else "")
        parts.append(f"tags only in the twin: {shown} (read it alone with --format to see them)")
    main_end, twin_end = int(main["step"].max()), int(steps.max())
    if twin_end < main_end - 1:
        parts.append(f"it stops at step {twin_end:,}, the run goes on to {main_end:,}")
    return "; ".join(parts)


def _significant_digits(value: float) -> int:
    """How many significant digits ``value`` was written with (the shortest text that reads back as it)."""
    if value.is_integer() and abs(value) < 1e15:
        return len(str(int(abs(value))))  # printed as an integer ("2165"), its zeros included
    digits = repr(abs(value)).lower().split("e")[0].replace(".", "").lstrip("0")
    return max(1, len(digits))


def _same_when_printed(x: float, y: float) -> bool:
    """True when one value is the other rounded to the digits it was printed with (``1.35145`` and ``1.351``).

    Consoles print rounded values (HF rounds to 4 significant digits or 4 decimals): a twin that printed
    fewer digits agrees when the precise value, rounded the same way, reads the same.
    """
    if not (np.isfinite(x) and np.isfinite(y)) or x == 0 or y == 0:
        return False
    for precise, printed in ((x, y), (y, x)):
        digits = _significant_digits(printed)
        if digits < 15 and float(f"{precise:.{digits - 1}e}") == printed:
            return True
        decimals = len(repr(printed).split(".")[1]) if "." in repr(printed) and "e" not in repr(printed) else None
        if decimals is not None and round(precise, decimals) == printed:
            return True
    return False


def _agreement(main: pd.DataFrame, twin: pd.DataFrame, pairs: list[tuple[str, str]]) -> str:
    """Whether matched tags hold the same values at the same steps (or one step apart: 0- vs 1-based epochs)."""
    best: tuple[int, int, int, str] | None = None  # (agreeing, compared, shift, example)
    for shift in (0, 1, -1):
        agreeing = compared = 0
        example = ""
        for main_tag, twin_tag in pairs:
            a = main.loc[main["tag"] == main_tag, ["step", "value"]].drop_duplicates("step", keep="last")
            b = twin.loc[twin["tag"] == twin_tag, ["step", "value"]].drop_duplicates("step", keep="last")
            merged = a.merge(b.assign(step=b["step"] - shift), on="step", suffixes=("_run", "_twin"))
            if merged.empty:
                continue
            x, y = merged["value_run"].to_numpy(float), merged["value_twin"].to_numpy(float)
            same = np.isclose(x, y, rtol=_RELATIVE_TOLERANCE, atol=0.0) | (np.isnan(x) & np.isnan(y))
            for i in np.flatnonzero(~same):
                same[i] = _same_when_printed(float(x[i]), float(y[i]))
            agreeing += int(same.sum())
            compared += len(merged)
            if not example and not same.all():
                row = merged.loc[~same].iloc[0]
                example = f"{main_tag} at step {int(row['step']):,}: {row['value_run']:.6g} vs {row['value_twin']:.6g}"
        if compared and (best is None or agreeing > best[0]):
            best = (agreeing, compared, shift, example)
    if best is None:
        return f"{len(pairs)} tag(s) in common but no step in common"
    agreeing, compared, shift, example = best
    offset = "" if shift == 0 else f" once its steps are shifted by {-shift:+d} (0- vs 1-based counters)"
    if agreeing == compared:
        return f"it agrees on all {compared:,} common points of {len(pairs)} tag(s){offset}"
    return f"it differs at {compared - agreeing:,} of {compared:,} common points{offset} (e.g. {example})"


def _joined_phases(parts: list[tuple[RunPart, list[Phase]]]) -> tuple[list[Phase], str | None]:
    """The run's sessions from its parts': those of the first part that has any (parts written by one job
    start over together: Keras' train/ and validation/ files); a note when another part saw other sessions."""
    if not parts:
        return [], None
    first_part, phases = parts[0]
    spans = [(p.first_step, p.last_step, p.offset) for p in phases]
    others = [part for part, mine in parts[1:] if [(p.first_step, p.last_step, p.offset) for p in mine] != spans]
    if not others:
        return list(phases), None
    return list(phases), (f"the run's sessions are those of {_where(first_part)}; "
                          + "; ".join(_where(part) for part in others) + " saw other sessions")
