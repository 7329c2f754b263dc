"""Run identity: which of the log sources discovery found are one training job.

Discovery finds *sources*: one reader's files in one folder (an event-file folder, a
``metrics.csv``, a ``trainer_state.json`` …). A run is what its owner trained, and
writers spread one run over several sources. The rules, in the order they apply
(``docs/run-identity.md`` describes them with examples):

1. **hparams sub-run** — ``SummaryWriter.add_hparams`` (and HF's TensorBoard callback)
   writes a sub-folder named by a timestamp (``1700000000.123``) holding the hparams
   records: it belongs to the run of its parent folder (its scalars keep their tags).
2. **Splits** — Keras' ``TensorBoard`` callback writes ``log_dir/train/`` and
   ``log_dir/validation/``; TF1 Estimator writes ``model_dir/eval/`` beside its own
   events. Event-file folders named like a split (``train``, ``validation``, ``val``,
   ``eval``, ``eval_*``, ``test`` …) are one run with their parent when the parent has
   a train and a validation split, when an ``eval`` split sits beside the parent's own
   events, or when a lone ``train``/``validation`` folder holds Keras' ``epoch_*`` tags.
   Their tags get the split as a prefix: ``validation/epoch_loss``.
3. **add_scalars** — ``add_scalars(main_tag, {key: value})`` writes one sub-folder per
   key (``Loss_train/`` by torch, ``Loss/train/`` by old tensorboardX) holding the single
   tag ``main_tag``: such a folder is one run with the folder it was written under (which
   has events of its own, or a second key of the same ``main_tag``), and its tag becomes
   ``main_tag/key`` (``Loss/train``, ``Loss/val``).
4. **Twins** — several sinks of one job in one folder (Ultralytics ``results.csv`` + event
   file, detectron2 ``metrics.json`` + event file, Lightning's CSV and TensorBoard loggers
   in one ``version_N/``), an HF output folder whose ``trainer_state.json`` has its
   TensorBoard events under ``runs/<date>_<host>/``, and build-nanogpt's ``log/log.txt``
   below the folder holding the job's captured console, the job's captured console beside
   the ``wandb/`` folder of its one W&B run, and a Keras or Lightning job's console above the one
   run its logger wrote: one run. One source is read as the
   run (the framework's own structured record first, see :data:`PRECEDENCE`, unless a
   twin goes on to later steps); the others are listed with it and compared, not added
   twice.
5. **Per-rank writers** — one TensorBoard writer per process of a distributed job writes
   sibling folders named by the rank (``rank_0/``, ``rank1/``, ``worker_0/``, ``node0_rank1/`` …):
   two or more such siblings with distinct ranks, holding only event files with tags in common
   (rank 0 may log more), are one run (their parent folder) with a ``rank`` column; tags keep their names.
   torchrun's ``--log-dir`` (``<run id>/attempt_<n>/<local rank>/stdout.log`` + ``stderr.log``): the rank
   folders of all attempts (restarts) of one run id are one run, named by the run id's folder.

A run is named by its folder relative to the path given (the path's own name when the
run is the path itself). ``join=False`` turns rules 1–5 off: one run per folder and
format, as folders are laid out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tanalyze.text import distinct

__all__ = ["Source", "RunPart", "PRECEDENCE", "identify", "SPLIT_NAMES", "unique_names", "run_name"]

#: Which twin is read as the run, best first: a framework's own structured record (exact values,
#: evaluation rows, its step axis), then event files, then other tables, then console text.
PRECEDENCE: tuple[str, ...] = (
    "hf_trainer_state",
    "llamafactory",
    "detectron2",
    "mmengine",
    "mmdet2",
    "detr",
    "ray_tune",
    "yolo_csv",
    "yolo_txt",
    "lightning_csv",
    "keras_csv",
    "history_json",
    "wandb-local",
    "mlflow",
    "dvclive",
    "tensorboard",
    "wandb-history",
    "csv",
)

#: Folder names of the splits writers make: train-like and evaluation-like.
TRAIN_SPLITS = frozenset({"train", "training"})
EVAL_SPLITS = frozenset({"validation", "val", "valid", "eval", "evaluation", "test"})
SPLIT_NAMES = TRAIN_SPLITS | EVAL_SPLITS
_EVAL_NAMED = re.compile(r"eval(?:_.+)?")  # Estimator: eval/ and eval_<name>/
_TIMESTAMP = re.compile(r"\d{9,11}\.\d+")  # str(time.time()): add_hparams' sub-run folder
_KERAS_TAG = re.compile(r"(epoch|batch|evaluation)_")
_HPARAMS_PREFIX = "_hparams_/"
#: A folder named by the rank of the process that wrote it: rank_0, rank1, worker-0, node0_rank1, gpu_3 …
_RANK_FOLDER = re.compile(
    r"(?:node[_-]?\d+[_-])?(?:rank|worker|proc|process|gpu|local_rank)[_-]?(\d+)", re.IGNORECASE)


#: torchrun's ``--log-dir`` keeps each restart of a job in ``<run id>/attempt_<n>/``
_ATTEMPT = re.compile(r"attempt_(\d+)")


@dataclass
class Source:
    """One reader's files in one folder (one group of them): what discovery hands to identity."""

    directory: Path
    format: str
    files: list[Path]
    pattern: str | None = None
    tags: tuple[str, ...] = ()  # tags named in the files' first bytes (event files), for rules 1 and 3


@dataclass(frozen=True)
class RunPart:
    """One source of a run written to several places, and how its tags join the run's.

    ``kind`` is ``main`` (read as the run), ``split``, ``add_scalars``, ``hparams`` (joined
    into the run, tags renamed to ``tag_prefix + tag + tag_suffix``), ``rank`` (one process's
    writer: its rows get ``rank``) or ``twin`` (the same run written by another sink: read,
    compared and listed, its points not added).
    """

    format: str
    directory: str
    files: tuple[str, ...]
    kind: str = "main"
    label: str = ""
    tag_prefix: str = ""
    tag_suffix: str = ""
    pattern: str | None = None
    rank: int | None = None  # the process that wrote this part (kind ``rank``)

    def rename(self, tag: str) -> str:
        return f"{self.tag_prefix}{tag}{self.tag_suffix}"

    def to_dict(self) -> dict[str, object]:
        return {
            "format": self.format,
            "directory": self.directory,
            "files": list(self.files),
            "kind": self.kind,
            "label": self.label,
            **({"rank": self.rank} if self.rank is not None else {}),
        }


@dataclass
class _Member:
    source: Source
    kind: str = "main"
    label: str = ""
    prefix: str = ""
    suffix: str = ""
    rank: int | None = None


@dataclass
class IdentifiedRun:
    """A run as identity decided it: its folder, name and members (sources), main members first."""

    directory: Path
    name: str
    members: list[_Member] = field(default_factory=list)

    @property
    def joined(self) -> bool:
        return len(self.members) > 1 or any(m.prefix or m.suffix for m in self.members)

    def parts(self) -> tuple[RunPart, ...]:
        return tuple(
            RunPart(
                format=m.source.format,
                directory=str(m.source.directory),
                files=tuple(str(f) for f in sorted(m.source.files)),
                kind=m.kind,
                label=m.label,
                tag_prefix=m.prefix,
                tag_suffix=m.suffix,
                pattern=m.source.pattern,
                rank=m.rank,
            )
            for m in self.members
        )


def identify(
    root: Path,
    sources: Sequence[Source],
    *,
    single_file: bool = False,
    join: bool = True,
    label_of: Callable[[list[Path]], str] | None = None,
) -> list[IdentifiedRun]:
    """Group ``sources`` into runs and name them (see the module doc for the rules)."""
    owner: dict[int, tuple[Path, _Member]] = {}
    if join and not single_file:
        by_dir: dict[Path, list[int]] = defaultdict(list)
        for index, source in enumerate(sources):
            by_dir[source.directory].append(index)
        _join_hparams(sources, by_dir, owner)
        _join_ranks(sources, by_dir, owner)
        _join_torchrun(sources, by_dir, owner)
        _join_add_scalars(root, sources, by_dir, owner)  # before splits: tensorboardX nests keys as Loss/train/
        _join_splits(sources, by_dir, owner)
        _join_log_folder(sources, by_dir, owner)
        _join_wandb_console(sources, by_dir, owner)
        _join_console_above(sources, by_dir, owner)

    members: dict[Path, list[_Member]] = defaultdict(list)
    for index, source in enumerate(sources):
        directory, member = owner.get(index, (source.directory, _Member(source)))
        members[directory].append(member)

    runs: list[IdentifiedRun] = []
    for directory in sorted(members, key=str):
        runs.extend(_runs_of_folder(root, directory, members[directory], single_file, join, label_of))
    if join and not single_file:
        runs = _join_hf_output(root, runs)
        runs = _join_lightning_loggers(runs)
    return runs


def _is_tensorboard_only(sources: Sequence[Source], indices: list[int]) -> bool:
    return len(indices) == 1 and sources[indices[0]].format == "tensorboard"


def _join_hparams(sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    for directory, indices in by_dir.items():
        if not _is_tensorboard_only(sources, indices) or not _TIMESTAMP.fullmatch(directory.name):
            continue
        source = sources[indices[0]]
        if directory.parent in by_dir and any(t.startswith(_HPARAMS_PREFIX) for t in source.tags):
            owner[indices[0]] = (directory.parent, _Member(source, "hparams", "hparams sub-run (add_hparams)"))


def _join_torchrun(sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    """Rule 5b: torchrun's ``--log-dir`` (``<run id>/attempt_<n>/<local rank>/stdout.log``): the rank folders of
    every attempt of one run id (the restarts of one job) are one run, named by the run id's folder."""
    jobs: dict[Path, list[tuple[int, int, int]]] = defaultdict(list)
    for directory, indices in by_dir.items():
        attempt = _ATTEMPT.fullmatch(directory.parent.name)
        if directory.name.isdigit() and attempt and len(indices) == 1 and indices[0] not in owner:
            jobs[directory.parent.parent].append((int(attempt.group(1)), int(directory.name), indices[0]))
    for job, found in jobs.items():
        if len(found) < 2 or len({sources[index].format for _, _, index in found}) != 1:
            continue
        attempts = {attempt for attempt, _, _ in found}
        for attempt, rank, index in sorted(found):
            label = f"rank {rank}" + (f" (attempt {attempt})" if len(attempts) > 1 else "")
            owner[index] = (job, _Member(sources[index], "rank", label, rank=rank))


def _join_ranks(sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    """Rule 5: sibling per-rank event-file folders with the same tags are one run with a ``rank`` column."""
    children: dict[Path, list[tuple[int, int]]] = defaultdict(list)
    for directory, indices in by_dir.items():
        match = _RANK_FOLDER.fullmatch(directory.name)
        if match and _is_tensorboard_only(sources, indices) and indices[0] not in owner:
            children[directory.parent].append((int(match.group(1)), indices[0]))
    for parent, found in children.items():
        ranks = [rank for rank, _ in found]
        tag_sets = [frozenset(t for t in sources[i].tags if not t.startswith(_HPARAMS_PREFIX)) for _, i in found]
        shared = frozenset.intersection(*tag_sets) if tag_sets else frozenset()
        # the same metrics (rank 0 often logs a few more: evaluation, learning rate)
        if len(found) < 2 or len(set(ranks)) != len(ranks) or not shared:
            continue
        for rank, index in found:
            label = f"rank {rank} ({sources[index].directory.name})"
            owner[index] = (parent, _Member(sources[index], "rank", label, rank=rank))


def _join_splits(sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    children: dict[Path, list[int]] = defaultdict(list)
    for directory, indices in by_dir.items():
        name = directory.name.lower()
        if _is_tensorboard_only(sources, indices) and (name in SPLIT_NAMES or _EVAL_NAMED.fullmatch(name)):
            if indices[0] not in owner:
                children[directory.parent].append(indices[0])
    for parent, indices in children.items():
        names = {sources[i].directory.name.lower() for i in indices}
        parent_has_events = any(sources[i].format == "tensorboard" for i in by_dir.get(parent, ()))
        paired = bool(names & TRAIN_SPLITS) and bool(names & EVAL_SPLITS)
        for index in indices:
            source = sources[index]
            name = source.directory.name
            lowered = name.lower()
            keras = lowered in {"train", "validation"} and any(_KERAS_TAG.match(t) for t in source.tags)
            estimator = parent_has_events and bool(_EVAL_NAMED.fullmatch(lowered))
            if paired or keras or estimator:
                owner[index] = (parent, _Member(source, "split", f"{name} split", prefix=f"{name}/"))


#: Formats whose script writes its records to a ``log/`` folder below the one it runs in (``logs/`` in forks)
_LOG_FOLDER_FORMATS = frozenset({"build_nanogpt"})
_LOG_FOLDERS = frozenset({"log", "logs"})


def _join_log_folder(sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    """Rule 4b: build-nanogpt writes its records to ``log/log.txt`` below the folder it runs in, where the job's
    captured console (``nohup``, a scheduler's ``.out``) is kept: the one console of that format in the folder
    above is the run, ``log/`` its twin (the one that goes on to later steps is read, see ``assemble``)."""
    for directory, indices in by_dir.items():
        if directory.name not in _LOG_FOLDERS or len(indices) != 1 or indices[0] in owner:
            continue
        source = sources[indices[0]]
        above = [i for i in by_dir.get(directory.parent, ()) if sources[i].format == source.format]
        if source.format in _LOG_FOLDER_FORMATS and len(above) == 1 and above[0] not in owner:
            owner[indices[0]] = (directory.parent,
                                 _Member(source, "twin", f"twin: {_describe(source)} in {directory.name}"))


#: Readers of a job's captured console (its stdout/stderr as text)
CONSOLE_FORMATS = frozenset({"text", "nanogpt", "build_nanogpt", "modded_nanogpt", "llmc", "hf_console", "deepspeed",
                             "megatron", "fairseq", "keras_console", "tqdm_console", "torch_examples"})
#: Consoles whose job also writes its run below the folder the console is kept in, and what that run is written
#: as: Keras's ``TensorBoard`` callback or ``CSVLogger``; Lightning's default loggers (``lightning_logs/version_N``)
_CONSOLE_ABOVE_ITS_RUN = {"keras_console": frozenset({"tensorboard", "keras_csv"}),
                          "tqdm_console": frozenset({"lightning_csv", "tensorboard"})}


def _join_wandb_console(sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    """Rule 4c: the job's captured console (``python train.py | tee train.log``) in the folder where W&B wrote
    its ``wandb/`` folder is the one W&B run there written twice: one run, the W&B run read, the console its
    twin (compared, and read where it goes on further). Not when ``wandb/`` holds several runs (which one
    the console belongs to cannot be told) or the folder several consoles."""
    for directory, indices in by_dir.items():
        if len(indices) != 1 or indices[0] in owner or sources[indices[0]].format not in CONSOLE_FORMATS:
            continue
        wandb_runs = [i for folder, found in by_dir.items() if folder.parent == directory / "wandb"
                      for i in found if sources[i].format == "wandb-local"]
        if len(wandb_runs) == 1 and wandb_runs[0] not in owner:
            console = sources[indices[0]]
            owner[indices[0]] = (sources[wandb_runs[0]].directory,
                                 _Member(console, "twin", f"twin: {_describe(console)} (the job's console)"))


def _join_console_above(sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    """Rule 4e: a job's captured console (``python train.py > train.log``) in the folder below which the job's
    logger wrote its run: Keras's ``TensorBoard`` callback (``logs/``, ``logs/fit/<time>/`` with ``train/`` and
    ``validation/``) or ``CSVLogger``, Lightning's loggers (``lightning_logs/version_0/``). When everything below
    that folder is that one run, the console is its twin. Not when the folder holds other sources or several
    runs lie below it."""
    for directory, indices in by_dir.items():
        if len(indices) != 1 or indices[0] in owner or sources[indices[0]].format not in _CONSOLE_ABOVE_ITS_RUN:
            continue
        sinks = _CONSOLE_ABOVE_ITS_RUN[sources[indices[0]].format]
        below = [i for folder, found in by_dir.items() if directory in folder.parents for i in found]
        runs = {owner[i][0] if i in owner else sources[i].directory for i in below}
        mains = [i for i in below if i not in owner]
        if below and len(runs) == 1 and len(mains) <= 1 and all(sources[i].format in sinks for i in below):
            console = sources[indices[0]]
            owner[indices[0]] = (runs.pop(), _Member(console, "twin", f"twin: {_describe(console)} (the job's console)"))


def _join_add_scalars(root: Path, sources: Sequence[Source], by_dir: dict[Path, list[int]], owner: dict) -> None:
    candidates: dict[tuple[Path, str], list[tuple[int, str]]] = defaultdict(list)
    for directory, indices in by_dir.items():
        if not _is_tensorboard_only(sources, indices) or indices[0] in owner:
            continue
        tags = [t for t in sources[indices[0]].tags if not t.startswith(_HPARAMS_PREFIX)]
        if len(tags) != 1:
            continue
        main_tag = tags[0]
        flat_tag = main_tag.replace("/", "_") + "_"
        for ancestor in directory.parents:
            if ancestor != root and root not in ancestor.parents:
                break
            flat = directory.relative_to(ancestor).as_posix().replace("/", "_")
            if flat.startswith(flat_tag) and len(flat) > len(flat_tag):
                candidates[(ancestor, main_tag)].append((indices[0], flat[len(flat_tag):]))
                break
    for (ancestor, main_tag), found in candidates.items():
        ancestor_has_events = any(sources[i].format == "tensorboard" for i in by_dir.get(ancestor, ()))
        if not ancestor_has_events and len(found) < 2:
            continue
        for index, key in found:
            label = f"add_scalars '{main_tag}' key '{key}'"
            owner[index] = (ancestor, _Member(sources[index], "add_scalars", label, suffix=f"/{key}"))


def _rank(fmt: str) -> int:
    return PRECEDENCE.index(fmt) if fmt in PRECEDENCE else len(PRECEDENCE)


def _runs_of_folder(
    root: Path,
    directory: Path,
    members: list[_Member],
    single_file: bool,
    join: bool,
    label_of: Callable[[list[Path]], str] | None,
) -> list[IdentifiedRun]:
    """The runs whose folder is ``directory``: its own sources and those joined into it."""
    base = root.name if single_file else run_name(root, directory)
    own_formats: dict[str, int] = defaultdict(int)
    for member in members:
        if member.kind == "main":
            own_formats[member.source.format] += 1
    joined_formats = {m.source.format for m in members if m.kind != "main"}
    formats = set(own_formats) | joined_formats
    twins = join and len(formats) > 1 and all(count <= 1 for count in own_formats.values())
    if len(formats) <= 1 or twins:
        if len(formats) <= 1 and own_formats and max(own_formats.values()) > 1:
            pass  # several groups of one format: one run each (below)
        else:
            primary = min(formats, key=_rank)
            ordered = sorted(members, key=lambda m: (m.source.format != primary, m.kind != "main", str(m.source.directory)))
            for member in ordered:
                if member.source.format != primary:
                    member.kind, member.label = "twin", f"twin: {_describe(member.source)}"
            return [IdentifiedRun(directory, base, ordered)]

    runs = []
    many_formats = len(formats) > 1
    by_format: dict[str, list[_Member]] = defaultdict(list)
    for member in members:
        by_format[member.source.format].append(member)
    for fmt in sorted(by_format):
        mains = [m for m in by_format[fmt] if m.kind == "main"]
        extras = [m for m in by_format[fmt] if m.kind != "main"]
        for member in mains:
            name = base
            if len(mains) > 1:
                label = label_of(member.source.files) if label_of else member.source.files[0].name
                name = f"{base}/{label}" if base else label
            if many_formats:
                name = f"{name} [{fmt}]"
            runs.append(IdentifiedRun(directory, name, [member] + (extras if len(mains) == 1 else [])))
        if len(mains) != 1:
            for extra in extras:
                runs.append(IdentifiedRun(extra.source.directory, f"{base}/{extra.source.directory.name}", [extra]))
    return runs


def _describe(source: Source) -> str:
    names = sorted({f.name for f in source.files})
    shown = names[0] if len(names) == 1 else f"{len(names)} files"
    return f"{shown} ({source.format})"


#: The sinks an HF ``Trainer`` writes beside its ``trainer_state.json``: TensorBoard (``report_to``, in
#: ``logging_dir``: ``runs/<date_host>`` by default, often a folder of the user's choosing) and its console.
_HF_SINKS = ("tensorboard", "hf_console")


def _join_hf_output(root: Path, runs: list[IdentifiedRun]) -> list[IdentifiedRun]:
    """An HF output folder's ``trainer_state.json`` and the one TensorBoard run / one HF console below it: one run.

    Below the output folder, a sink is the Trainer's only when it is the one run of its format there
    (an output folder reused by several runs has several ``runs/<date_host>`` folders: none is joined).
    """
    del root
    absorbed: set[int] = set()
    for run in runs:
        if not any(m.source.format == "hf_trainer_state" and m.kind == "main" for m in run.members):
            continue
        below: dict[str, list[IdentifiedRun]] = defaultdict(list)
        for other in runs:
            formats = {m.source.format for m in other.members}
            if (other is not run and id(other) not in absorbed and len(formats) == 1
                    and run.directory in other.directory.parents and formats <= set(_HF_SINKS)):
                below[next(iter(formats))].append(other)
        for format_name in _HF_SINKS:
            if len(below[format_name]) != 1:
                continue
            twin_run = below[format_name][0]
            for member in twin_run.members:
                member.kind = "twin"
                where = member.source.directory.relative_to(run.directory)
                member.label = f"twin: {_describe(member.source)} in {where}"
                run.members.append(member)
            absorbed.add(id(twin_run))
    return [run for run in runs if id(run) not in absorbed]


def unique_names(names: Iterable[str], labels: Sequence[str] | None = None) -> list[str]:
    """Run names made distinct, the one way every command does it.

    With ``labels`` (one per name: the input path each run came from), a name that occurs under
    several inputs is prefixed by its input's label (``label:name``); any name still taken is
    numbered ``name#2``, ``name#3`` … in order.
    """
    names = list(names)
    if labels is not None:
        inputs_of: dict[str, set[str]] = {}
        for name, label in zip(names, labels, strict=True):
            inputs_of.setdefault(name, set()).add(label)
        names = [name if len(inputs_of[name]) == 1 else f"{label}:{name}"
                 for name, label in zip(names, labels, strict=True)]
    return distinct(names)


_VERSION = re.compile(r"version_(\d+)")


def _join_lightning_loggers(runs: list[IdentifiedRun]) -> list[IdentifiedRun]:
    """Lightning's CSV and TensorBoard loggers of one ``Trainer`` in sibling ``version_N`` folders: one run.

    Each logger picks the next free version, so ``Trainer(logger=[TensorBoardLogger(d), CSVLogger(d)])``
    writes ``version_0/`` (events) and ``version_1/`` (``metrics.csv``). Paired: adjacent version numbers
    under one folder, one holding only event files and the other only a Lightning ``metrics.csv``, whose
    ``hparams.yaml`` files are identical (both are written when ``fit`` starts).
    """
    def kind(run: IdentifiedRun) -> str | None:
        formats = {m.source.format for m in run.members}
        if not _VERSION.fullmatch(run.directory.name) or len(formats) != 1 or len(run.members) != 1:
            return None
        return next(iter(formats)) if formats <= {"tensorboard", "lightning_csv"} else None

    by_parent: dict[Path, list[IdentifiedRun]] = defaultdict(list)
    for run in runs:
        if kind(run):
            by_parent[run.directory.parent].append(run)
    absorbed: set[int] = set()
    for siblings in by_parent.values():
        siblings.sort(key=lambda r: int(_VERSION.fullmatch(r.directory.name).group(1)))  # type: ignore[union-attr]
        for first, second in zip(siblings, siblings[1:], strict=False):
            if id(first) in absorbed or id(second) in absorbed or kind(first) == kind(second):
                continue
            if int(second.directory.name[8:]) - int(first.directory.name[8:]) != 1:
                continue
            hparams = [_read_small(r.directory / "hparams.yaml") for r in (first, second)]
            if hparams[0] is None or hparams[0] != hparams[1]:
                continue
            csv_run, tb_run = (first, second) if kind(first) == "lightning_csv" else (second, first)
            for member in tb_run.members:
                member.kind = "twin"
                member.label = f"twin: {_describe(member.source)} in {member.source.directory.name} (the same Trainer)"
                csv_run.members.append(member)
            absorbed.add(id(tb_run))
            if csv_run is second:  # named by the first folder the Trainer wrote
                csv_run.directory, csv_run.name = tb_run.directory, tb_run.name
    return [run for run in runs if id(run) not in absorbed]


def _read_small(path: Path, limit: int = 1 << 16) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


def run_name(root: Path, directory: Path) -> str:
    """A run's name: its folder relative to the path given, or that path's own name when it is the run."""
    try:
        rel = directory.relative_to(root)
    except ValueError:
        return root.resolve().name
    return root.resolve().name if str(rel) == "." else rel.as_posix()
