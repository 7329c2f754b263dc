"""Console logs of hand-written training loops: a few generic line shapes.

No framework prints these, many scripts do:

- progress meters with an epoch and a batch index: the PyTorch ImageNet
  example (``Epoch: [0][ 10/391]\\tTime 0.2 (0.3)\\tLoss 3.4360e+00 (3.4360e+00)``,
  current value then running average: the current value is kept) and MMEngine
  (``Epoch(train)  [1][ 5/44]  lr: 3.0e-04  loss: 1.69``); the step is
  ``epoch × batches per epoch + batch index`` (MMEngine epochs count from 1);
- epoch blocks: an ``Epoch 3/20`` line followed by lines made only of
  ``Name: number`` pairs (``Train Loss: 6.21 - Train Perplexity: 501.06``),
  keyed by the epoch number;
- key-value lines that start with a step (``iter 391 | LR [0.0001]| val_acc 10.9``).
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from itertools import compress, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import (
    line_index,
    matches_by_line,
    ordered_matches,
    require,
    tagged_matches,
)
from tanalyze.readers.text._shaped import (
    DECIMAL_ONCE,
    LineShape,
    line_kinds,
    line_shape,
    line_starts,
    read_fields,
    shape_runs,
    value_runs,
)
from tanalyze.readers.values import NAN, NUMBER, to_float

__all__ = ["GenericRules", "GenericTextParser", "GenericTextReader", "detect_generic"]

#: (words of at most 64 characters, as in the names below: an unbounded word made a long token of letters take
#: time in the square of its length, every letter of it a start that ran to its end and back)
#: (words may be aligned by several blanks: ``Val   Loss: 2.66``, under ``Train Loss: 3.18``; one blank in the tag)
_NAME = r"[A-Za-z][\w./@%()-]{0,63}(?:[ \t]{1,8}[A-Za-z][\w./@%()-]{0,63}){0,3}"
_UNIT = r"(?:[a-zA-Z]{1,3}\b|%)?"

METER = re.compile(
    r"Epoch(?:\((?P<mode>\w+)\)|:)?[ \t]*\[\s*(?P<e>\d+)\s*\]\s*\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\](?P<rest>[^\n]*)"
)
#: Swin Transformer's meter line, ``Train: [0/300][50/1251]\teta 0:12:34 lr 0.000125\t…``: its epochs from 0
#: (its literal first: the engine finds it at C speed; a word before it, ``PreTrain: [``, is told apart by the handler)
SWIN_METER = re.compile(r"Train: \[(?P<e>\d+)/\d+\]\[(?P<i>\d+)/(?P<n>\d+)\](?P<rest>[^\n]*)")
#: a Swin meter line's pair without an average (``lr 0.000125``, ``wd 0.0500``, ``mem 2420MB``)
_BARE_METER_PAIR = re.compile(rf"(?:^|(?<=\s))([A-Za-z_]\w{{0,63}}) ({NUMBER})(?:MB|GB)?(?=\s|$)")
_PROGRESS = re.compile(r"\[\s*\d+\s*/\s*\d+\s*\]")


#: (the look-behind after the "[": a pattern that begins with a literal is searched for fast)
_PROGRESS_NOT_AFTER_BRACKET = re.compile(r"\[(?<!\]\[)\s*\d+\s*/\s*\d+\s*\]")
#: what ends every ``[i/n]``: a test several times quicker in logs full of brackets, done first
_PROGRESS_END = re.compile(r"/\s*\d+\s*\]")


def _named_progress(text: str) -> bool:
    """Whether a ``[i/n]`` of ``text`` follows a name (a letter, or a mode's ``)``, maybe then ``:`` and blanks):
    what every evaluation meter line has (MMDetection's "Epoch [1][50/791]" has not: a ``]`` comes first)."""
    if _PROGRESS_END.search(text) is None or _PROGRESS_NOT_AFTER_BRACKET.search(text) is None:
        return False  # each right after a "]" (the training meters' usual shape)
    for m in _PROGRESS.finditer(text):
        before = text[max(0, m.start() - 64):m.start()].rstrip(" \t")
        before = before[:-1] if before.endswith(":") else before
        if before and (before[-1] == ")" or "a" <= before[-1].lower() <= "z"):
            return True
    return False


EVAL_METER = require(re.compile(
    r"^(?P<pre>[^\n]*?)(?P<name>\b[A-Za-z]+)(?:\((?P<mode>\w+)\))?:?[ \t]*\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\]"
    r"(?P<rest>[^\n]*)$",
    re.M,
), _named_progress)
#: an evaluation's result after its meter lines (the global averages): the PyTorch ImageNet example's `` * Acc@1 …``,
#: the DeiT family's ``* Acc@1 … loss …`` (DeiT, MAE, DINO, BEiT, ConvNeXt), torchvision's references' ``Test:  Acc@1
#: …`` and ``Test: EMA Acc@1 …``
SUMMARY = re.compile(r"^(?: ?\* |(?P<head>Test|Val|Validation|Eval):? +(?:(?P<sub>EMA) +)?)(Acc@1 [^\n]*)$", re.M)
_METER_NAME = r"[A-Za-z@][\w@/.-]{0,63}(?: [A-Za-z@][\w@/.-]{0,63}){0,3}"
_METER_PAIR = re.compile(rf"({_METER_NAME})\s+({NUMBER})\s*\(\s*{NUMBER}\s*\)")
#: the same, the average a group too (where the line's template is learnt)
_AVERAGED_PAIR = re.compile(rf"({_METER_NAME})\s+({NUMBER})\s*\(\s*({NUMBER})\s*\)")
#: (MetricLogger's ``max mem: 1776``, the peak CUDA memory in MB, keeps its two words)
_COLON_PAIR_SOURCE = r"((?:max mem(?=:))|[A-Za-z_][\w/.()@-]{0,127}):\s+(\S+)"
_COLON_PAIR = re.compile(_COLON_PAIR_SOURCE)
#: the same, with the average after the value when there is one (``loss: 0.5405 (0.6120)``: MetricLogger's meters)
_COLON_AVERAGED = re.compile(rf"{_COLON_PAIR_SOURCE}(?:\s+\(\s*({NUMBER})\s*\))?")
_SPACE_PAIR = re.compile(rf"({_NAME}) ({NUMBER})")

EPOCH_HEADER = require(
    # (in brackets, or between rules, too: "[Epoch 1/60]", "===== Epoch 3/20 =====")
    re.compile(r"^[ \t]*(?:[=*#~-]{2,}[ \t]*)?\[?[ \t]*Epoch[ \t]*:?[ \t]*(\d+)[ \t]*(?:/|of)[ \t]*(\d+)[ \t]*\]?[ \t]*:?"
               r"[ \t]*(?:[=*#~-]{2,}[ \t]*)?$", re.M), re.compile("Epoch")
)
_PAIR = rf"{_NAME}[ \t]*[:=][ \t]*{NUMBER}{_UNIT}"
PAIR_LINE = re.compile(rf"^[ \t]*{_PAIR}(?:[ \t]*[-|,;][ \t]*{_PAIR}|[ \t]+{_PAIR})*[ \t]*$", re.M)
_PAIR_ITEM = re.compile(rf"({_NAME})[ \t]*[:=][ \t]*({NUMBER})")

#: One-word pairs separated by blanks only, to the end of the line: ``loss 2.31 lr 3e-4``, ``loss=2.31 lr=3e-4``,
#: ``loss: 2.31 lr: 3e-4`` (what ``print(f"step {step} loss {loss}")`` writes).
_BLANK_PAIR = rf"(?!of\b)[A-Za-z_][\w./@%-]{{0,63}}[ \t]*[:=]?[ \t]*{NUMBER}{_UNIT}"
_BLANK_PAIRS = rf"(?:[ \t]+{_BLANK_PAIR})+[ \t]*$"
#: a name of one or two words, no sentence's full stop in it (``train loss``)
_SHORT_NAME = r"[A-Za-z][\w/@%-]{0,63}(?: [A-Za-z][\w/@%-]{0,63})?"
KV_STEP = re.compile(
    r"^[ \t]*(?:\[(?=[^\]\n]*\d\][ \t]))?"
    r"(?:(?P<token>(?:iter|iteration|global_step|step|episode)(?P<counter>)|epoch|ep)[ \t]*[:=]?[ \t]*"
    r"|(?<=\[)(?=\d+[ \t]*/[ \t]*\d+\]))"  # (or a bare "[200/300000]")
    r"(?P<step>\d+)(?P<total>[ \t]*/[ \t]*\d+)?\]?"
    # (after a bracket, a blank: "[Epoch 5] Train Loss: …, Val Loss: …"; "[Step s/S] …" is PyTorch's examples' line)
    r"(?:[ \t]*(?:[|,:]|[ \t]-[ \t])|(?(counter)(?(total)(?!)|(?<=\])[ \t])|(?<=\])[ \t])"
    # (or the batch of the epoch a counter names: ChineseNER's "iteration:1 step:100/23196, NER loss: …")
    r"|[ \t]+(?=(?:step|iter|batch)[ \t]*[:=]?[ \t]*\d+[ \t]*/[ \t]*\d+)"
    rf"|(?={_BLANK_PAIRS})"
    # (or, after a step, pairs of names of one or two words, blanks between: makemore's "step 500 train loss: 2.22
    # test loss: 2.18"; not an epoch's sentence, "Epoch 1 completed. Average loss: 4.49")
    rf"|(?(counter)(?=(?:[ \t]+{_SHORT_NAME}:[ \t]*{NUMBER}{_UNIT}){{1,8}}[ \t]*$)|(?!)))(?P<rest>[^\n]*)$",
    re.M | re.I,
)
#: a line of pycocotools' summary of a COCO evaluation (detectron2, MMDetection, YOLOX, PaddleDetection, torchvision's
#: references print it): `` Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.231``
COCO_LINE = require(re.compile(
    r"^[ \t]*Average (?:Precision|Recall) +\((?P<kind>AP|AR)\) @\[ *IoU=(?P<iou>[\d.]+(?::[\d.]+)?) *\| *area= *"
    r"(?P<area>[a-z]+) *\| *maxDets= *(?P<dets>\d+) *\] = (?P<value>-?\d+(?:\.\d+)?)[ \t]*$", re.M),
    re.compile(r"Average (?:Precision|Recall) +\(A[PR]\) @\["))
#: what names the kind of a COCO evaluation before its summary (pycocotools', torchvision's references'), looked
#: for this far back
_COCO_TYPE = re.compile(r"(?:Evaluate annotation type \*|IoU metric: )(?P<type>bbox|segm|keypoints)")
_COCO_TYPE_BACK = 4096
#: ``COCO_LINE`` without its line start (its literal first, found at C speed; the caller checks the line start)
_COCO_ANYWHERE = re.compile(
    r"Average (?:Precision|Recall) +\((AP|AR)\) @\[ *IoU=([\d.]+(?::[\d.]+)?) *\| *area= *([a-z]+) *\| *"
    r"maxDets= *(\d+) *\] = (-?\d+(?:\.\d+)?)[ \t]*$", re.M)
_COCO_AREAS = {"all": "", "small": "s", "medium": "m", "large": "l"}


def _coco_type_at(text: str, pos: int) -> str | None:
    """The kind (bbox, segm, keypoints) the last evaluation named before ``pos`` in ``text``, within
    ``_COCO_TYPE_BACK`` characters; None when none is named there."""
    low = max(0, pos - _COCO_TYPE_BACK)
    at = max(text.rfind("Evaluate annotation type *", low, pos), text.rfind("IoU metric: ", low, pos))
    found = _COCO_TYPE.match(text, at, pos) if at >= 0 else None
    return found.group("type") if found is not None else None


@functools.lru_cache(maxsize=64)
def _coco_name(kind: str, iou: str, area: str, dets: str) -> str:
    """detectron2's name of a COCO summary line: ``AP``, ``AP50``, ``AP75``, ``APs``/``APm``/``APl``, ``AR1``,
    ``AR10``, ``AR100``, ``ARs`` … (the detections per image named only for a recall over every area and IoU)."""
    single = "" if ":" in iou else str(round(float(iou) * 100))
    size = _COCO_AREAS.get(area, area)
    count = dets if kind == "AR" and not size and not single else ""
    return f"{kind}{single}{size}{count}"


#: a line of names and numbers with only blanks between them under an ``Epoch e/E`` header (a widely copied BERT
#: fine-tuning tutorial's ``Train loss 0.1417 accuracy 0.9542`` / ``Val   loss 0.1393 accuracy 0.9600``); every
#: name must be a metric's (see _METRIC_NAME); run only where a loss or an accuracy is followed by a number
_BLANK_NAME = r"[A-Za-z][\w./-]{0,40}(?:[ \t]+[A-Za-z][\w./-]{0,40}){0,3}"
BLANK_PAIR_LINE = require(
    re.compile(rf"^(?=[^\n]*?(?:[Ll]oss|[Aa]cc[a-z]*)[ \t]+[-+.\d])"  # (a loss or an accuracy and its number in it)
               rf"[ \t]*{_BLANK_NAME}[ \t]+{NUMBER}(?:[ \t]+{_BLANK_NAME}[ \t]+{NUMBER})*[ \t]*$", re.M),
    lambda text: any(gate.search(text) is not None for gate in _BLANK_GATES))
#: (what every such line holds, found at C speed: chunks without it skip the pattern)
_BLANK_GATES = (re.compile(r"oss[ \t]+[-+.\d]"), re.compile(r"cc[a-z]*[ \t]+[-+.\d]"))
_BLANK_ITEM = re.compile(rf"({_BLANK_NAME})[ \t]+({NUMBER})")
_METRIC_NAME = re.compile(r"loss|acc|f1|auc|precision|recall|ppl|perplexity|error|iou|dice|mae|mse|wer|cer|bleu",
                          re.I)


#: a value named with its step in a sentence: ``Minibatch loss at step 500: 1.234`` (TensorFlow's tutorials and
#: courses), ``Loss at step 3: 8.49``; the lines of ``name: value`` after it are at that step
AT_STEP = require(re.compile(
    rf"^[ \t]*(?P<name>[A-Za-z][\w./-]{{0,40}}(?: [A-Za-z][\w./-]{{0,40}}){{0,3}}) at (?P<token>step|iteration|iter|epoch)"
    rf"[ \t]+(?P<step>\d{{1,15}})[ \t]*[:=][ \t]*(?P<value>{NUMBER})%?[ \t]*$", re.M | re.I),
    re.compile(r" at (?:step|iteration|iter|epoch)[ \t]+\d", re.I))
_KV_SPLIT = re.compile(r"\||,(?![^\[]*\])|\s-\s")
#: a segment of several ``name: value`` pairs (``Train Loss: 0.21 Acc: 0.90``), and each of its pairs
_CHAINED_PAIR_SOURCE = rf"[ \t]*{_NAME}:[ \t]*{NUMBER}{_UNIT}"
_CHAINED_PAIR = re.compile(_CHAINED_PAIR_SOURCE)
_CHAINED_PAIRS = re.compile(rf"(?:{_CHAINED_PAIR_SOURCE}){{2,8}}[ \t]*")
_BLANK_PAIR_AT = re.compile(rf"[ \t]*{_BLANK_PAIR}")
# (a name may end in its unit in parentheses: ``GPU Mem (GB): 12.8``, ``Time (s): 0.52``)
# (and in a number before its colon: ``Loss size 4: 0.61``, ``top 5: 0.93``)
_KV_SEGMENT = re.compile(
    rf"^\s*({_NAME}(?: \d{{1,4}}(?=\s*[:=]))?(?: \([^()\n]{{1,16}}\))?)\s*[:=]?\s*\[?\s*({NUMBER})\s*\]?\s*({_UNIT})\s*$")
#: the units of time a pair's value may end in (``step time 31.25ms``): kept in its name, which alone tells a step time
#: in milliseconds from one in seconds
_TIME_UNITS = frozenset({"ms", "s", "sec"})

_STEP_NAMES = frozenset({"iter", "iteration", "step", "global_step", "it"})
#: a line's counters that may count epochs: beside the batch of its epoch (``step: 100/23196``) an ``iteration`` does
_EPOCH_LIKE = frozenset({"epoch", "iteration", "iter"})
#: at most this many lines from one line keyed by its epoch to the next with the same epoch and names, for them to be
#: a loop's several lines an epoch (a resumed job repeats its last epoch after its start-up lines)
_BATCH_LINES_APART = 3
#: names of a key-value or meter line that are no measure of training: the time left (YOLOX's ``ETA: 1 day, 2:00:00``,
#: PaddleDetection's ``eta: 17 days, 13:50:26``, read as their days)
_NOT_MEASURES = frozenset({"eta"})
#: the batch within its epoch beside a line's epoch (YOLOX's ``epoch: 1/300, iter: 10/1000, …``)
_IN_EPOCH = re.compile(r"^\s*(?:iter|iteration|it|step|batch)\s*[:=]?\s*\[?\s*(\d+)\s*/\s*(\d+)\s*\]?\s*$", re.I)
#: names of a counter beside a line's epoch, with no total: a step, or the batch of the epoch when it starts over
#: with each epoch (``ep: 0, batch: 20, …``)
_COUNTER_NAMES = _STEP_NAMES | {"batch", "batch_idx"}
#: a line that announces an evaluation ("testing in eval mode……", "Validating...", "Evaluating on the test set"): no
#: pair, a phase word (test, valid, eval), short
_PHASE_LINE = re.compile(r"[^\d:=\n]{0,80}?\b(test|valid|eval)[a-z]*\b[^:=\n]{0,80}", re.I)
_PHASE_WORD = re.compile(r"(?:^|[^a-z])(?:val|valid|validation|eval|evaluation|test|dev)(?:[^a-z]|$)", re.I)
_PHASE_PREFIX = {"test": "test", "valid": "val", "eval": "eval"}
#: a rule between a banner and its block (``=====``, ``-----``), and how many lines above a block line its banner may be
_RULE = re.compile(r"[=\-*_#~+ ]{3,}")
_BLOCK_LINES = 12
#: a logging prefix left on a line the chunk holds whole (a banner's): its time and level
_LOGGING_LINE_PREFIX = re.compile(r"^\[?[\d/:., -]{8,30}\]?\s*(?:[A-Z]+\s*[:-]\s*)?")


def _token(m: re.Match[str]) -> str:
    """The step word of a key-value line, ``ep`` spelt out (``step`` for a bare ``[200/300000]``)."""
    token = (m.group("token") or "step").lower()
    return "epoch" if token == "ep" else token


_LINKING_WORD = re.compile(r"\s+(?:is|was|are|=)$", re.I)


def _pair_name(raw: str) -> str:
    """A pair's name as printed, without the verb a sentence put before its value (``loss is: 0.5``)."""
    name = " ".join(raw.split())
    linked = _LINKING_WORD.sub("", name)
    return linked if linked else name


def _segment_name(item: re.Match[str]) -> str:
    """The name of a key-value segment (``_KV_SEGMENT``), with the unit of time its value ends in (``step time
    (ms)``) unless the name gives a unit already."""
    name, unit = _pair_name(item.group(1)), item.group(3)
    if unit not in _TIME_UNITS or name.endswith(")") or name.lower() in _COUNTER_NAMES | _NOT_MEASURES | {"epoch"}:
        return name
    return f"{name} ({unit})"


#: a name that begins with its phase: ``Val Loss``, ``val_acc``, ``Test/accuracy``, ``Train Loss``
_PHASE_HEAD = re.compile(r"(?:train|training|val|valid|validation|eval|evaluation|test|dev)(?:[ _/.-]|(?=[A-Z]))",
                         re.I)


def _phased_names(names: list[str]) -> list[str] | None:
    """A line's pair names, each name printed more than once given the head of the phase whose name came last
    before it (``Train Loss: … Acc: … | Val Loss: … Acc: …`` gives ``Train Acc`` and ``Val Acc``): else the line's
    second value of a name would overwrite its first. None when no name repeats (the usual case)."""
    if len(set(names)) == len(names):
        return None
    repeated = {name for name in names if names.count(name) > 1}
    out, head = [], ""
    for name in names:
        found = _PHASE_HEAD.match(name)
        if found:
            head = found.group(0)
        out.append(head + name if name in repeated and head and not found else name)
    return out


#: a metric's bare name that a line's first, phase-led name lends its phase (``val Loss: 0.23 Acc: 0.91``)
_BARE_METRIC = re.compile(r"(?:acc|accuracy|loss|f1|auc|precision|recall|iou|miou|dice|top-?[15]|mae|mse|rmse|ppl|"
                          r"perplexity|bleu|wer|cer|err|error)", re.I)
_LEADING_PHASE = re.compile(r"(?:train|training|val|valid|validation|test|eval|evaluation|dev) ", re.I)


def _lent_phase(names: list[str]) -> list[str]:
    """A pair line's names, each bare metric name after a first name that begins with its phase (``train Loss``,
    ``val Loss``) given that phase (``train Acc``, ``val Acc``): else the training's and the validation's
    accuracy, printed on two lines at one epoch, would be one tag written over."""
    head = _LEADING_PHASE.match(names[0]) if names else None
    if head is None:
        return names
    return [names[0]] + [head.group(0) + name if _BARE_METRIC.fullmatch(name) else name for name in names[1:]]


def _phase_of(line: str) -> str | None:
    """The phase a line that announces an evaluation names ('test', 'val', 'eval'); None for any other line."""
    m = _PHASE_LINE.fullmatch(line.strip())
    return _PHASE_PREFIX[m.group(1).lower()] if m else None


class GenericRules:
    """Mixin: the generic line shapes, for any parser that wants them (``_init_generic`` first)."""

    generic_patterns = (
        (METER, "meter"),
        (SWIN_METER, "swin_meter"),
        (EVAL_METER, "eval_meter"),
        (SUMMARY, "summary"),
        (EPOCH_HEADER, "epoch_header"),
        (PAIR_LINE, "pair_line"),
        (BLANK_PAIR_LINE, "blank_pair_line"),
        (KV_STEP, "kv_step"),
        (AT_STEP, "at_step"),
        (COCO_LINE, "coco"),
    )

    def _init_generic(self) -> None:
        self._epoch_now: int | None = None
        self._meter_seen = False
        self._meter_batches: int | None = None
        self._eval_meter_seen = False
        self._pairs_seen = False
        self._pairs_at_step_seen = False
        self._kv_seen = False
        self._kv_epoch_seen = False
        self._kv_batches_seen = False
        self._mmengine = False
        self._meter_epoch: int | None = None
        self._eval_mode: str | None = None  # the last evaluation meter's (its summary's tags take it)
        self._epoch_offsets: dict[int, int] = {}  # steps before each epoch's counter (see _step_within_epoch)
        self._counter_last: tuple[int, int] | None = None  # (epoch, counter) of the last line with both
        self._counter_gap = 0  # the counter's printing interval
        self._phase_lines = 0
        self._tail_phase: str | None = None  # the phase the last line of the chunk before announced
        # lines keyed by their epoch printed several times an epoch (see _epoch_line_step): the last one's epoch, names,
        # step and line; in that mode, the step of the next such line and their names
        self._epoch_line_last: list[Any] | None = None
        self._epoch_batch_next: int | None = None
        self._epoch_batch_names: list[str] | None = None
        self._epoch_lines_batched = 0
        self._at_step_seen = False
        self._iteration_first: int | None = None  # an 'iteration' counting epochs: 1 when its first was 1, else 0
        self._coco_type: str | None = None  # the kind of the last COCO evaluation (bbox, segm, keypoints)
        self._coco_lines = 0
        self._coco_missing = 0
        self._epoch_total: str | None = None  # the number of epochs the last line keyed by its epoch alone gave
        # a step counter printed with its total that starts over each epoch ('step=20/289'): the steps of the epochs
        # before (None until it first started over), its total, and how many times it started over
        self._wrap_offset: int | None = None
        self._wrap_total: int | None = None
        self._wraps = 0

    _GENERIC_STATE = ("_epoch_now", "_meter_seen", "_meter_batches", "_eval_meter_seen", "_pairs_seen",
                      "_pairs_at_step_seen", "_kv_seen", "_kv_epoch_seen", "_kv_batches_seen", "_mmengine", "_meter_epoch",
                      "_eval_mode", "_counter_gap", "_phase_lines", "_tail_phase", "_epoch_line_last",
                      "_epoch_batch_next", "_epoch_batch_names", "_epoch_lines_batched", "_at_step_seen", "_iteration_first",
                      "_coco_type", "_coco_lines", "_coco_missing", "_epoch_total", "_wrap_offset", "_wrap_total",
                      "_wraps")

    def _generic_snapshot(self) -> dict[str, Any]:
        return {**{name: getattr(self, name) for name in self._GENERIC_STATE},
                "epoch_offsets": sorted(self._epoch_offsets.items()), "counter_last": self._counter_last}

    def _generic_restore(self, state: dict[str, Any]) -> None:
        for name in self._GENERIC_STATE:
            setattr(self, name, state[name])
        self._epoch_offsets = {int(epoch): int(offset) for epoch, offset in state["epoch_offsets"]}
        last = state["counter_last"]
        self._counter_last = (int(last[0]), int(last[1])) if last is not None else None

    def _generic_absorb(self, other: GenericRules) -> None:
        """The next file's shapes: what was seen in either (its positions go on from the later one)."""
        phase_lines = self._phase_lines + other._phase_lines
        batched = self._epoch_lines_batched + other._epoch_lines_batched
        coco = (self._coco_lines + other._coco_lines, self._coco_missing + other._coco_missing)
        for name in self._GENERIC_STATE:
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, (mine or theirs) if isinstance(mine, bool) else (theirs if theirs is not None else mine))
        self._phase_lines = phase_lines
        self._epoch_lines_batched = batched
        self._coco_lines, self._coco_missing = coco
        self._epoch_offsets = {**self._epoch_offsets, **other._epoch_offsets}

    # helpers the host parser has (TextParser)
    def _taken(self, chunk: Chunk, pos: int) -> bool:
        return chunk.text.rfind("\n", 0, pos) + 1 in self._marked  # type: ignore[attr-defined]

    def _on_meter(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._taken(chunk, m.start()):
            return
        mode = (m.group("mode") or "").lower()
        epoch, index, batches = int(m.group("e")), int(m.group("i")), int(m.group("n"))
        rest = m.group("rest")
        if mode and mode != "train":
            self._eval_pairs(mode, rest, chunk, m, final=index >= batches, epoch=epoch)
            return
        if mode == "train":
            self._mmengine = True
            step = (epoch - 1) * batches + index
        else:
            step = epoch * batches + index
        self._add_meter(self._meter_pairs(rest), step, epoch, batches, chunk, m.start())

    def _on_swin_meter(self, m: re.Match[str], chunk: Chunk) -> None:
        before = chunk.text[m.start() - 1] if m.start() else " "
        if before.isalnum() or before in "_:" or self._taken(chunk, m.start()):
            return
        epoch, index, batches = int(m.group("e")), int(m.group("i")), int(m.group("n"))
        self._add_meter(_swin_pairs(m.group("rest")), epoch * batches + index, epoch, batches, chunk, m.start())

    def _add_meter(self, pairs: list[tuple[str, float]], step: int, epoch: int, batches: int, chunk: Chunk,
                   pos: int) -> None:
        """A training meter line's pairs at its step (nothing without a pair), its line read and anchored."""
        if not pairs:
            return
        self._meter_seen = True
        self._meter_batches = batches
        self._meter_epoch = epoch
        self.mark(chunk, pos)  # type: ignore[attr-defined]
        self.anchor(step, chunk, pos)  # type: ignore[attr-defined]
        self.rows.add_pairs(pairs, step, epoch=float(epoch))  # type: ignore[attr-defined]

    def _meter_pairs(self, rest: str, averaged: bool = False) -> list[tuple[str, float]]:
        """A meter line's pairs: of ``value (average)`` the value, or ``averaged`` the average."""
        if "(" in rest and ":" not in rest:
            if averaged:
                return [(name, float(average)) for name, _, average in _AVERAGED_PAIR.findall(rest)]
            return [(name, float(value)) for name, value in _METER_PAIR.findall(rest)]
        out = []
        found = ([(name, average or value) for name, value, average in _COLON_AVERAGED.findall(rest)] if averaged
                 else _COLON_PAIR.findall(rest))
        for name, value in found:
            number = to_float(value)
            if number is not None and name.lower() not in _NOT_MEASURES:  # (PaddleDetection's "eta: 1 day, …")
                out.append((name, number))
        return out

    def _eval_pairs(
        self, mode: str, rest: str, chunk: Chunk, m: re.Match[str], final: bool, epoch: int | None
    ) -> None:
        # (the average so far: the last line's is the evaluation's result up to its batch; a value is one batch's)
        pairs = self._meter_pairs(rest, averaged=True)
        if not pairs:
            return
        self.mark(chunk, m.start())  # type: ignore[attr-defined]
        if self._mmengine and not final:
            return  # per-batch progress of an evaluation: timings only, the last line has the metrics
        self._eval_meter_seen = True
        self._eval_mode = mode
        step = self._epoch_end_step(epoch)
        tags = [(name if "/" in name else f"{mode}/{name}", value) for name, value in pairs]
        self.rows.add_pairs(tags, step, epoch=float(epoch) if epoch is not None else NAN)  # type: ignore[attr-defined]

    def _epoch_end_step(self, epoch: int | None) -> int:
        """Step at the end of an epoch (evaluation runs after it); the last step when unknown."""
        if epoch is None:
            epoch = self._meter_epoch
        if epoch is None or self._meter_batches is None:
            return self.current_step()  # type: ignore[attr-defined]
        return (epoch if self._mmengine else epoch + 1) * self._meter_batches

    def _on_eval_meter(self, m: re.Match[str], chunk: Chunk) -> None:
        name, mode = m.group("name"), m.group("mode")
        if self._taken(chunk, m.start()):
            return
        if mode:  # MMEngine: Epoch(val) [ 5/66]
            self._mmengine = True
            mode = mode.lower()
        elif name == "Epoch":
            return
        else:
            mode = name.lower()
            if not self._meter_seen and mode not in ("val", "test", "valid", "validation"):
                return
        self._eval_pairs(mode, m.group("rest"), chunk, m, final=int(m.group("i")) >= int(m.group("n")), epoch=None)

    def _on_summary(self, m: re.Match[str], chunk: Chunk) -> None:
        """An evaluation's result: at the step of its meter lines, named as they are (``test/…``, ``ema/…``; ``val/…``
        when none was printed); what it shares with them replaces theirs."""
        if not self._meter_seen:
            return
        head = m.group("sub") or m.group("head")
        mode = head.lower() if head else self._eval_mode or "val"
        pairs = [(f"{mode}/{name}", float(value)) for name, value in _SPACE_PAIR.findall(m.group(3))]
        if pairs:
            self.mark(chunk, m.start())  # type: ignore[attr-defined]
            self.rows.add_pairs(pairs, self._epoch_end_step(None))  # type: ignore[attr-defined]

    def _on_epoch_header(self, m: re.Match[str], chunk: Chunk) -> None:
        self._epoch_now = int(m.group(1))
        self.mark(chunk, m.start())  # type: ignore[attr-defined]
        self.anchor(self._epoch_now, chunk, m.start())  # type: ignore[attr-defined]

    #: read 'Name: value' lines after a key-value step line ('validation loss: 2.1' after 'step 500 | loss …') at
    #: that line's step (a host parser whose own line kinds include such lines leaves them to those)
    pairs_at_step = False

    def _on_pair_line(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._taken(chunk, m.start()):
            return
        if self._epoch_now is not None:
            step, epoch = self._epoch_now, float(self._epoch_now)
        elif self.pairs_at_step and (self._kv_seen or self._at_step_seen):
            step, epoch = self.current_step(), NAN  # type: ignore[attr-defined]
        else:
            return
        found = _PAIR_ITEM.findall(m.group(0))
        names = _lent_phase([_pair_name(name) for name, _ in found])
        if self._epoch_now is None and KV_STEP.match(chunk.text, m.start()):
            return  # a line that names its own step ('step: 7, loss: 2.5'): a key-value line, no evaluation
        if self._epoch_now is None:  # (an evaluation's block after its banner, 'TEST SET EVALUATION': its phase)
            phase = self._block_phase(chunk, m.start())
            names = [name if phase is None or _PHASE_WORD.search(name) else f"{phase}/{name}" for name in names]
        pairs = [(name, float(value)) for name, (_, value) in zip(names, found, strict=True)]
        if pairs:
            if self._epoch_now is None:
                self._pairs_at_step_seen = True
            else:
                self._pairs_seen = True
            self.mark(chunk, m.start())  # type: ignore[attr-defined]
            self.rows.add_pairs(pairs, step, epoch=epoch)  # type: ignore[attr-defined]

    def _on_blank_pair_line(self, m: re.Match[str], chunk: Chunk) -> None:
        """``Train loss 0.1417 accuracy 0.9542`` under an epoch header: each name a metric's, at the epoch."""
        if self._epoch_now is None or self._taken(chunk, m.start()):
            return
        found = _BLANK_ITEM.findall(m.group(0))
        names = [" ".join(name.split()) for name, _ in found]
        if not found or not all(_METRIC_NAME.search(name) for name in names):
            return
        names = _lent_phase(names)
        self._pairs_seen = True
        self.mark(chunk, m.start())  # type: ignore[attr-defined]
        self.rows.add_pairs([(name, float(value)) for name, (_, value) in zip(names, found, strict=True)],
                            self._epoch_now, epoch=float(self._epoch_now))  # type: ignore[attr-defined]

    def _on_kv_step(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._taken(chunk, m.start()):
            return
        token, step = _token(m), int(m.group("step"))
        epoch = float(step) if token == "epoch" else NAN
        pairs = []
        counter = None
        rest = m.group("rest")
        segments = [rest[a:b] for a, b in _kv_bounds(rest) if rest[a:b].strip()]
        within = None
        for segment in segments:
            batch = _IN_EPOCH.match(segment) if token in _EPOCH_LIKE else None
            if batch:  # the batch of the epoch: step = epochs before × batches per epoch + batch
                within = batch
                if token != "epoch":  # an 'iteration' that counts epochs (ChineseNER's): from 1 when the first is 1
                    self._iteration_first = (self._iteration_first if self._iteration_first is not None
                                             else min(int(m.group("step")), 1))
                    epoch = float(m.group("step"))
                first = (1 if m.group("total") else 0) if token == "epoch" else self._iteration_first
                step = (int(m.group("step")) - first) * int(batch.group(2)) + int(batch.group(1))
                continue
            item = _KV_SEGMENT.match(segment)
            if not item:
                continue
            name, value = _segment_name(item), float(item.group(2))
            if name.lower() == "epoch":
                epoch = value
            elif name.lower() in _COUNTER_NAMES and token == "epoch" and within is None:
                counter = int(value)
            elif name.lower() not in _STEP_NAMES and name.lower() not in _NOT_MEASURES:
                pairs.append((name, value))
        if not pairs or len(pairs) * 2 < len(segments):
            return
        names = _phased_names([name for name, _ in pairs])
        if names is not None:
            pairs = list(zip(names, (value for _, value in pairs), strict=True))
        if token in _STEP_NAMES and m.group("total") and within is None and counter is None:
            step = self._counted_on(step, int(m.group("total").replace("/", "")))
        if counter is not None:
            step = self._step_within_epoch(step, counter)
        elif token == "epoch" and within is None:
            step = self._epoch_line_step(step, [name for name, _ in pairs], chunk.line_of(m.start()),
                                         self._phase_before(chunk, m.start()) is not None, m.group("total"))
        if step == self._last_anchor.get(-1) and not any(_PHASE_WORD.search(name) for name, _ in pairs):  # type: ignore[attr-defined]
            phase = self._phase_before(chunk, m.start())
            if phase is not None:  # the same line again at its step, announced as an evaluation
                self._phase_lines += 1
                pairs = [(f"{phase}/{name}", value) for name, value in pairs]
        if within:
            self._kv_batches_seen = True
        elif token == "epoch" and counter is None:
            self._kv_epoch_seen = True
        self._kv_seen = True
        self.mark(chunk, m.start())  # type: ignore[attr-defined]
        anew = within is None and counter is None and self._epochs_anew(token, m.group("total"))
        self.anchor(step, chunk, m.start(), anew=anew)  # type: ignore[attr-defined]
        self.rows.add_pairs(pairs, step, epoch=epoch)  # type: ignore[attr-defined]

    def _counted_on(self, step: int, total: int) -> int:
        """The step of a key-value line whose step counter is printed with its total (``step=20/289``): a counter
        that ran to its total and started over is the batch of the next epoch (``Epoch 2/30 started`` between), so
        the steps go on, epochs before × total + step. It ran to its total when the next interval would have passed
        it: printed every k batches from k, it went back to k from a multiple of k less than k below the total;
        printed from 0, it went back to 0 from the last fifth. A counter that goes back otherwise is a restart,
        recorded as such."""
        offset = self._wrap_offset or 0
        last = self._last_anchor.get(-1)  # type: ignore[attr-defined]
        within = None if last is None else last - offset
        if (within is not None and self._wrap_total in (None, total) and 0 <= step < within <= total
                and (total - within < step and within % step == 0 if step else total - within <= total / 5)):
            offset += total
            self._wrap_offset = offset
            self._wraps += 1
        self._wrap_total = total
        return offset + step

    def _epochs_anew(self, token: str, total: str | None) -> bool:
        """Whether a line keyed by its epoch alone gives a number of epochs (``Epoch 1/8``) other than the last such
        line's: another training."""
        if token != "epoch" or total is None:
            return False
        total = total.replace(" ", "").replace("\t", "")
        last, self._epoch_total = self._epoch_total, total
        return last is not None and last != total

    def _on_at_step(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._taken(chunk, m.start()):
            return
        value = to_float(m.group("value"))
        if value is None:
            return
        step = int(m.group("step"))
        epoch = float(step) if m.group("token").lower() == "epoch" else NAN
        self._at_step_seen = True  # (the 'name: value' lines after it are at its step)
        self.mark(chunk, m.start())  # type: ignore[attr-defined]
        self.anchor(step, chunk, m.start())  # type: ignore[attr-defined]
        self.rows.add_pairs([(m.group("name").strip(), value)], step, epoch=epoch)  # type: ignore[attr-defined]

    def _on_coco(self, m: re.Match[str], chunk: Chunk) -> None:
        if self._taken(chunk, m.start()):
            return
        self.mark(chunk, m.start())  # type: ignore[attr-defined]
        self._coco_type = _coco_type_at(chunk.text, m.start()) or self._coco_type
        tag, value = self._coco_point(*m.group("kind", "iou", "area", "dets", "value"))
        self.rows.add(tag, self.current_step(), value)  # type: ignore[attr-defined]

    def _coco_point(self, kind: str, iou: str, area: str, dets: str, number: str) -> tuple[str, float]:
        """A line of a COCO evaluation's summary (at the last training step): its tag, named as detectron2 names it,
        under the kind of the evaluation last named (``bbox/AP``; ``coco/AP`` when none was), and its value; -1,
        pycocotools' "no object of that size", a missing value."""
        value = float(number)
        if value == -1:
            value = NAN
            self._coco_missing += 1
        self._coco_lines += 1
        return f"{self._coco_type or 'coco'}/{_coco_name(kind, iou, area, dets)}", value

    def _epoch_line_step(self, epoch: int, names: list[str], line: int, announced: bool, total: str | None) -> int:
        """The step of a line keyed by its epoch alone (``epoch: 0 loss: 0.68``): the epoch, unless the loop prints
        such a line several times an epoch (the same names at the same epoch of the same number of epochs
        (``Epoch 1/8``) again, within a few lines, neither after a line announcing an evaluation: not a resumed
        job's repeat, a next training's first epoch (``Epoch 1/1`` then ``Epoch 1/8``), nor the evaluation printed
        with the training's template). From then on each such line is the next step (the epoch kept in its column), and a
        line of other names (``Epoch 1: Val acc is 86.0``) or announced as an evaluation is at the step of the last
        one before it: else every epoch's lines but its last would be written over."""
        last = self._epoch_line_last
        if self._epoch_batch_next is None:
            if (last is None or last[0] != epoch or last[1] != names or line - last[3] > _BATCH_LINES_APART
                    or announced or last[4] or last[5] != total):
                self._epoch_line_last = [epoch, names, epoch, line, announced, total]
                return epoch
            self._epoch_batch_next, self._epoch_batch_names = last[2] + 1, names
            self._epoch_lines_batched += 1  # (the first of them, read at its epoch: the step it keeps)
        if names == self._epoch_batch_names and not announced:
            step = self._epoch_batch_next
            self._epoch_batch_next += 1
            self._epoch_lines_batched += 1
        else:
            step = self._epoch_batch_next - 1
        self._epoch_line_last = [epoch, names, step, line, announced, total]
        return step

    def _step_within_epoch(self, epoch: int, counter: int) -> int:
        """The step of a line's counter beside its epoch: the counter itself, unless it starts over with each epoch;
        then the counter plus the batches of the epochs before, each estimated as its last printed counter plus
        the printing interval (the log does not say how many batches an epoch has)."""
        offsets = self._epoch_offsets
        last = self._counter_last
        if epoch not in offsets:
            if last is None:
                offsets[epoch] = 0
            else:
                previous_epoch, previous = last
                starts_over = epoch > previous_epoch and counter <= previous
                offsets[epoch] = offsets.get(previous_epoch, 0) + (previous + self._counter_gap if starts_over else 0)
        elif last is not None and last[0] == epoch and counter > last[1] and not self._counter_gap:
            self._counter_gap = counter - last[1]
        self._counter_last = (epoch, counter)
        return offsets[epoch] + counter

    def _block_phase(self, chunk: Chunk, pos: int) -> str | None:
        """The phase of the block of ``name: value`` lines that the line at ``pos`` belongs to: the one a banner
        line above it announces (``TEST SET EVALUATION``), over rules (``=====``), blank lines and the block's lines
        before it; None when no banner heads it."""
        text = chunk.text
        end = text.rfind("\n", 0, pos)
        for _ in range(_BLOCK_LINES):
            if end < 0:
                return None
            start = text.rfind("\n", 0, end) + 1
            line = _LOGGING_LINE_PREFIX.sub("", text[start:end], count=1).strip()
            if line and not _RULE.fullmatch(line) and PAIR_LINE.fullmatch(line) is None:
                return _phase_of(line)
            end = start - 1
        return None

    def _phase_before(self, chunk: Chunk, pos: int) -> str | None:
        """The phase ('test', 'val', 'eval') the line before ``pos`` announces (blank lines passed over); None when it
        announces none."""
        text = chunk.text
        end = text.rfind("\n", 0, pos)
        for _ in range(3):
            if end < 0:
                return self._tail_phase
            start = text.rfind("\n", 0, end) + 1
            line = text[start:end]
            if line.strip():
                return _phase_of(line)
            end = start - 1
        return None

    def _generic_notes(self) -> list[str]:
        notes = []
        if self._meter_seen:
            base = "1 (MMEngine)" if self._mmengine else "0"
            notes.append(
                "progress-meter lines: step = epoch × batches per epoch + batch index "
                f"(epochs counted from {base}); of 'value (average)' pairs the current value is kept (of an "
                "evaluation's, the average so far: its last line's is the evaluation's result up to there)"
            )
        if self._eval_meter_seen:
            notes.append(
                "evaluation meter lines carry no training step: they are keyed by the step at the end of "
                "their epoch (the last training step when no epoch is known)"
            )
        if self._pairs_seen:
            notes.append("'Name: value' lines under an 'Epoch N/M' line are keyed by the epoch number (step = epoch)")
        if self._kv_seen:
            notes.append("'iter N | name value | …' lines: step from the line")
        if self._pairs_at_step_seen:
            notes.append("'Name: value' lines after such a line (an evaluation printed on its own line) are keyed by "
                         "that line's step")
        if self._kv_epoch_seen:
            notes.append("'Epoch N: name value, …' lines without a step are keyed by the epoch number (step = epoch)")
        if self._coco_lines:
            notes.append(f"{self._coco_lines:,} line(s) of COCO evaluation summaries (pycocotools) read at the last "
                         "training step before them, named as detectron2 names them (bbox/AP, bbox/AP50, bbox/APs, "
                         "bbox/AR100 …)" + (f"; {self._coco_missing:,} value(s) of -1 (no object of that size) read as "
                                            "missing" if self._coco_missing else ""))
        if self._at_step_seen:
            notes.append("'<name> at step N: value' lines: step from the line")
        if self._epoch_lines_batched:
            notes.append(f"{self._epoch_lines_batched:,} 'epoch N name value' line(s) printed several times an epoch: "
                         "step = the line's place among them (the epoch in the epoch column), a line of other "
                         "names (an evaluation) at the step of the last one before it")
        if any(self._epoch_offsets.values()):
            notes.append("'epoch e, batch b, …' lines whose batch starts over with each epoch: step = b + the batches of "
                         "the epochs before, each estimated as its last printed batch + the printing interval (the log "
                         "does not say how many batches an epoch has)")
        if self._phase_lines:
            notes.append(f"{self._phase_lines} line(s) that repeat the previous line's step and names right after a "
                         "line announcing an evaluation ('testing …', 'Validating …') are read as that evaluation: "
                         "their names take its prefix (test/, val/, eval/)")
        if self._kv_batches_seen:
            notes.append("'epoch: e/E, iter: i/N, …' lines: step = epochs before e × N + i (an epoch written with its "
                         "total counted from 1)")
        if self._wraps:
            notes.append(f"a step counter printed with its total ('step=i/N') started over after reaching it "
                         f"{self._wraps} time(s): each time the next epoch's batch, step = epochs before × N + i")
        return notes


class GenericTextParser(GenericRules, TextParser):
    """Console logs of custom loops (meters, epoch blocks, key-value lines)."""

    family = "text"
    pairs_at_step = True
    # (a progress bar's line, with "12%|", is no look-alike, nor a duration's, "Epoch: [0] Total time: 1:02:22",
    # "Training time 2:05:18"; the tests for them follow the keyword, so that only lines that begin with one are
    # looked at)
    lookalike = re.compile(
        r"^[ \t]*(?:Epoch|Train|Training|Valid|Validation|Val|Test)\b(?![^\n]*\d%\|)(?![^\n]*\b[Tt]ime:? +\d+:\d\d:\d\d)"
        r"[^\n]*?[:=|][ \t]*[-+]?\.?\d",
        re.M | re.I,
    )
    patterns = GenericRules.generic_patterns
    #: read every line on its own (the meter lines of a chunk are read at once otherwise); for tests
    line_by_line = False
    _other_patterns = tuple(pair for pair in patterns if pair[1] not in ("meter", "coco"))

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._init_generic()

    def feed(self, chunk: Chunk) -> None:
        if self.line_by_line or not (self._shaped_at_once(chunk) or self._meters_at_once(chunk)):
            super().feed(chunk)

    def _shaped_at_once(self, chunk: Chunk) -> bool:
        """Key-value lines, epoch blocks or training meters printed from one template read run by run at once,
        the lines between them one by one at their place: the same rows as line by line. False (nothing read) when the
        chunk's head has no such line, or too few of its lines are in runs for this to pay."""
        text = chunk.text
        if chunk.incomplete or not text.isascii():
            return False
        shaped = _Shaped.of(text, self._handlers)
        if shaped is None:
            return False
        chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        every_line = line_starts(chars, 0, len(chars))
        values = None
        for exact in (False, True):  # (found again exactly when a field of a number's characters is no number)
            runs = shape_runs(text, shaped.shapes, exact)
            bounds = np.searchsorted(every_line, np.array(runs, dtype=np.int64).reshape(-1, 2))  # lines of each run
            sizes = bounds[:, 1] - bounds[:, 0] if len(runs) else np.empty(0, np.int64)
            lines = int(sizes.sum())
            if not lines or lines < 4 * len(runs) or 2 * lines < len(every_line):
                return False  # mostly other lines, or short runs: line by line is as quick
            run_of = np.repeat(np.arange(len(runs)), sizes)
            edge = np.zeros(len(every_line) + 1, dtype=np.int8)
            edge[bounds[:, 0]] = 1
            edge[bounds[:, 1]] = -1  # (a line, of another shape, always comes between two runs)
            starts = every_line[np.cumsum(edge[:-1], dtype=np.int8) > 0]
            values = value_runs(chars) if values is None else values  # (once the runs are worth reading)
            kinds = line_kinds(chars, starts, shaped.shapes, values.ends)
            if kinds is None:
                return False
            grids = read_fields(
                chars, [(starts[kinds == index], shape) for index, shape in enumerate(shaped.shapes)], values)
            if grids is not None:
                break
        if grids is None:
            return False
        self._read_runs(chunk, shaped, runs, _RunLines.of(starts, kinds, run_of, grids, len(runs), shaped))
        return True

    def _read_runs(self, chunk: Chunk, shaped: _Shaped, runs: list[tuple[int, int]], lines: _RunLines) -> None:
        """Each run taken (its state changed in turn) or read line by line, and the lines between them read line
        by line, in order; then the rows of the runs taken added at once, put in line order with the others."""
        rows = self.rows
        first = len(rows)
        by_line: list[tuple[int, int, Any]] = []
        taken = np.zeros(len(runs), dtype=bool)
        records: list[Any] = [None] * len(runs)
        counts, places = [], []  # rows of lines read one by one, and where
        at = 0
        for index, (start, end) in enumerate(runs):
            count = len(rows)
            self._lines_one_by_one(chunk, at, start, by_line)
            record = shaped.take(self, lines, index)
            if record is None:
                self._lines_one_by_one(chunk, start, end, by_line)
            else:
                taken[index], records[index] = True, record
            counts.append(len(rows) - count)
            places.append(at)
            at = end
        count = len(rows)
        self._lines_one_by_one(chunk, at, len(chunk.text), by_line)
        counts.append(len(rows) - count)
        places.append(at)
        if taken.any():
            codes, steps, values, epoch, placed = shaped.rows(self, lines, taken, records)
            rows.extend(codes, steps, values, epoch=epoch)
            self._marked.update(lines.starts[taken[lines.run]].tolist())
            if len(rows) - first > len(placed):  # rows of lines read one by one among them
                others = np.repeat(np.array(places, dtype=np.int64), counts)
                rows.reorder(first, np.argsort(np.concatenate([others, placed]), kind="stable"))
        self.scan_ranges = by_line

    def _lines_one_by_one(self, chunk: Chunk, start: int, end: int, by_line: list[tuple[int, int, Any]]) -> None:
        """The lines of ``chunk.text[start:end]`` read as ``feed`` reads every line (and scanned for look-alikes)."""
        if end <= start:
            return
        handlers = self._handlers
        text = chunk.text
        few = text.count("\n", start, end) <= 8
        if few and self.patterns is GenericRules.generic_patterns and _NO_GENERIC_LINE.fullmatch(text, start, end):
            by_line.append((start, end, self.lookalike))
            return  # (no generic pattern can match there)
        for kind, m in (_few_lines_matches(text, self.patterns, start, end) if few
                        else ordered_matches(text, self.patterns, start, end)):
            handlers[kind](m, chunk)
        by_line.append((start, end, self.lookalike))

    def _meters_at_once(self, chunk: Chunk) -> bool:
        """The training meter lines of the chunk read at once, and its lines of other kinds one by one, each
        with the meter state of its place (those kinds read it and change none of it): the same rows as line by
        line. False (nothing read) when that cannot be: no training meter, a line of a kind that sets the step
        (epoch headers, key-value lines), a meter on a line of another kind, or a step that goes back."""
        text = chunk.text
        if not chunk.contains("Epoch"):
            return False
        others = list(matches_by_line(text, tagged_matches(text, self._other_patterns, lines=line_index(chunk))))
        if any(kind in _SETS_THE_STEP for _, group in others for _, _, kind, _ in group):
            return False
        matches = list(METER.finditer(text))
        breaks = _line_breaks(text)
        starts = _line_starts(breaks, list(map(re.Match.start, matches)))
        if not {line for line, _ in others}.isdisjoint(starts):
            return False  # a meter on a line of another kind
        groups = list(map(re.Match.groups, matches))
        modes = set(map(itemgetter(0), groups))
        if not modes.issubset({None, "", "train"}):  # evaluations are read as the other lines, at their place
            lines, fields = [], []
            for line, m, found in zip(starts, matches, groups, strict=True):
                if found[0] and found[0].lower() != "train":
                    others.append((line, [(m.start(), -1, "meter", m)]))
                else:
                    lines.append(line)
                    fields.append(found)
        else:
            lines, fields = starts, groups
        meters = _Meters.read(lines, fields) if fields else None
        if meters is None:
            return False
        steps = meters.steps[meters.read]
        if not self.anchors_go_on(steps):
            return False  # a restart: recorded with its line
        rows = self.rows
        first = len(rows)
        rows.extend(meters.codes(rows), meters.pair_steps, meters.values, epoch=meters.pair_epochs)
        positions = [meters.pair_positions]
        before = (self._meter_seen, self._meter_batches, self._meter_epoch, self._mmengine, self._last_step)
        positions += self._other_lines(chunk, sorted(others, key=lambda other: other[0]), meters, before)
        positions += self._coco_lines_at_once(chunk, breaks, meters, before[4])
        self._marked.update(meters.lines[meters.read].tolist())
        self._mmengine = self._mmengine or bool(meters.train.any())
        if len(steps):
            last = np.flatnonzero(meters.read)[-1]
            self._meter_seen = True
            self._meter_batches, self._meter_epoch = int(meters.batches[last]), int(meters.epochs[last])
            self.anchor(int(steps[-1]), None, 0)
        placed = np.concatenate(positions)
        if len(placed) and (placed[1:] < placed[:-1]).any():
            rows.reorder(first, np.argsort(placed, kind="stable"))
        self.scan_ranges = [(low, high, self.lookalike)
                            for low, high in _unread_stretches(text, breaks, np.array(sorted(self._marked), np.int64))]
        return True

    def _coco_lines_at_once(self, chunk: Chunk, breaks: np.ndarray, meters: _Meters, step: int | None
                            ) -> list[np.ndarray]:
        """The chunk's COCO summary lines (many in a detection log: twelve an evaluation), each at the step of the
        last meter line read before it (``step``, the one before the chunk, when none), as ``_on_coco`` reads
        them (the evaluation's kind looked for once per run of such lines: a kind found stays); where their rows
        go."""
        text = chunk.text
        if "Average " not in text:
            return []
        starts, tags, values = [], [], []
        previous = -2
        for m in _COCO_ANYWHERE.finditer(text):
            at = m.start()
            start = text.rfind("\n", 0, at) + 1
            if start != at and text[start:at].strip(" \t"):
                continue  # (not at its line's start, after its blanks: no line of the summary)
            if start != previous:
                self._coco_type = _coco_type_at(text, at) or self._coco_type
            previous = m.end() + 1
            tag, value = self._coco_point(*m.groups())
            starts.append(start)
            tags.append(tag)
            values.append(value)
        if not starts:
            return []
        at = np.asarray(starts, dtype=np.int64)
        read = np.flatnonzero(meters.read)
        last = np.searchsorted(meters.lines[read], at, side="right") - 1
        steps = np.where(last >= 0, meters.steps[read[np.maximum(last, 0)]], step if step is not None else 0)
        rows = self.rows  # type: ignore[attr-defined]
        rows.extend(np.array(rows.codes(tags), dtype=np.int32), steps.astype(np.int64),
                    np.array(values, dtype=np.float64))
        self._marked.update(starts)
        return [at]

    def _other_lines(self, chunk: Chunk, others: list, meters: _Meters, before: tuple) -> list[np.ndarray]:
        """The lines of other kinds, in order, each read with the meter state at its place; where their rows go."""
        seen, batches, epoch, mmengine, step = before
        read = np.flatnonzero(meters.read)
        at = meters.lines[read]
        train_at = meters.lines[meters.train]
        handlers = self._handlers
        positions = []
        for line, matches in others:
            last = bisect_right(at, line) - 1  # the last meter line read before this one
            self._meter_seen = seen or last >= 0
            self._meter_batches = int(meters.batches[read[last]]) if last >= 0 else batches
            self._meter_epoch = int(meters.epochs[read[last]]) if last >= 0 else epoch
            self._last_step = int(meters.steps[read[last]]) if last >= 0 else step
            self._mmengine = mmengine = mmengine or bool(len(train_at) and train_at[0] < line)
            count = len(self.rows)
            for _, _, kind, m in matches:
                handlers[kind](m, chunk)
            mmengine = self._mmengine  # an evaluation meter of MMEngine says so
            positions.append(np.full(len(self.rows) - count, line, dtype=np.int64))
        return positions

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "generic": self._generic_snapshot()}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self._generic_restore(state["generic"])

    def absorb(self, other: TextParser) -> None:
        assert isinstance(other, GenericTextParser)
        super().absorb(other)
        self._generic_absorb(other)

    def end_chunk(self, chunk: Chunk) -> None:
        text = chunk.text.rstrip()
        self._tail_phase = _phase_of(text[text.rfind("\n") + 1 :]) if text else self._tail_phase
        super().end_chunk(chunk)

    def finish(self) -> None:
        self.notes[:0] = self._generic_notes()


#: The kinds of lines that set the step (an anchor): a chunk with one is read line by line.
_SETS_THE_STEP = frozenset({"swin_meter", "epoch_header", "kv_step", "at_step"})


def _line_breaks(text: str) -> np.ndarray:
    """Where the line breaks of ``text`` are (indices into it), numpy reading its characters as codes."""
    codes = (np.frombuffer(text.encode("ascii"), dtype=np.uint8) if text.isascii()
             else np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32))
    return np.flatnonzero(codes == 10)


def _unread_stretches(text: str, breaks: np.ndarray, read: np.ndarray) -> list[tuple[int, int]]:
    """The stretches of ``text`` (its line ``breaks``) between the lines read (their starts, in order): where
    look-alike lines may be left (a chunk of meter lines read at once is not scanned again line by line)."""
    ends = np.concatenate((breaks + 1, [len(text)]))[np.searchsorted(breaks, read)]  # after each line read
    lows = np.concatenate(([0], ends))
    highs = np.concatenate((read, [len(text)]))
    gaps = highs > lows
    return list(zip(lows[gaps].tolist(), highs[gaps].tolist(), strict=True))


def _line_starts(breaks: np.ndarray, positions: list[int]) -> list[int]:
    """Where the line of each position starts (the text's line ``breaks`` given)."""
    return np.concatenate(([0], breaks + 1))[np.searchsorted(breaks, positions)].tolist()


def _swin_pairs(rest: str) -> list[tuple[str, float]]:
    """A Swin Transformer meter line's pairs: the current value of each ``name value (average)``, and the pairs
    printed without an average (``lr``, ``wd``, ``mem`` in MB); its ``eta 0:12:34`` is no pair."""
    averaged = [(name, float(value)) for name, value in _METER_PAIR.findall(rest)]
    named = {name for name, _ in averaged}
    bare = [(name, float(value)) for name, value in _BARE_METER_PAIR.findall(_METER_AVERAGE.sub("", rest))
            if name not in named and name.lower() not in _NOT_MEASURES]
    return averaged + bare


#: a meter pair's average in parentheses (taken out before its bare pairs are looked for)
_METER_AVERAGE = re.compile(rf"\s*\(\s*{NUMBER}\s*\)")


def _measures(names: list[str], same: list[str] | None) -> np.ndarray | bool:
    """Which of ``names`` (``same``: the names of every line, when all lines have them) are measures of training
    (not the time left): True when all are."""
    every = same if same is not None else set(names)
    other = {name for name in every if name.lower() in _NOT_MEASURES}
    if not other:
        return True
    if same is not None:
        return np.tile([name not in other for name in same], len(names) // len(same))
    return ~np.fromiter(map(other.__contains__, names), bool, len(names))


def _pairs(rests: tuple[str, ...]) -> tuple[list[str], str, list[int], list[str] | None]:
    """The (name, raw value) pairs of each meter line's rest, as ``_meter_pairs`` finds them: names, the raw
    values as one text (separated by one space, commas taken out), how many pairs each line has, and the names of
    every line when they are the same. When every line has the pairs of the first, and only blanks between them,
    every line is checked against that shape at once (numpy); otherwise each line is searched for its pairs."""
    for shape_of, values_of in ((_shape_of, _shaped_values), (_averaged_shape_of, _averaged_values)):
        shape = shape_of(rests[0])
        if shape is not None:
            names = list(shape[1])
            values = values_of(rests, *shape)
            if values is not None:
                return names * len(rests), values, [len(names)] * len(rests), names
    names, raws, counts = [], [], []
    for rest in rests:
        pairs = _METER_PAIR.findall(rest) if "(" in rest and ":" not in rest else _COLON_PAIR.findall(rest)
        counts.append(len(pairs))
        names.extend(map(itemgetter(0), pairs))
        raws.extend(map(itemgetter(1), pairs))
    return names, " ".join(raws).replace(",", ""), counts, None


def _shape_of(rest: str) -> tuple[str, tuple[str, ...]] | None:
    """The text before the first pair of ``rest`` and the names of its pairs (found by ``_COLON_PAIR``), when only
    blanks come between pairs and after the last; None otherwise. A rest with that text first, those names and
    blanks between their values (:func:`_shaped_values`) has exactly those pairs: no name can begin in blanks,
    and the text before the first name is the same."""
    if "(" in rest and ":" not in rest:
        return None  # "name value (average)" meters: another reading
    pairs = list(_COLON_PAIR.finditer(rest))
    if not pairs:
        return None
    gaps = [rest[a.end():b.start()] for a, b in zip(pairs, pairs[1:], strict=False)] + [rest[pairs[-1].end():]]
    if any(gap.strip() for gap in gaps):
        return None
    return rest[:pairs[0].start()], tuple(m.group(1) for m in pairs)


def _shaped_values(rests: tuple[str, ...], before: str, names: tuple[str, ...]) -> str | None:
    """The raw values of ``rests`` (as :func:`_pairs` gives them) when each is ``before``, then ``name: value``
    for each of ``names`` in turn, with blanks (spaces, tabs) between and after them; None when a rest has another
    shape, another white space or is not ASCII (the caller then searches each for its pairs). numpy checks every
    line's shape at once, by its words: each line has twice as many words as there are names, and the odd words
    (counted from 1), joined, are ``name:`` of those names in turn; the even words are the values. No string per
    pair."""
    if before.strip(" \t"):  # words before the pairs: cut off (each line checked to begin with them)
        if not all(map(str.startswith, rests, repeat(before + names[0] + ":"))):
            return None
        joined = "\n".join([rest[len(before):] for rest in rests]) + "\n"
    else:  # blanks only (a tab, mostly): no word
        joined = "\n".join(rests) + "\n"
    if not joined.isascii():
        return None
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    controls = np.flatnonzero(chars < 32)
    breaks = chars[controls] == 10
    if not (breaks | (chars[controls] == 9)).all():
        return None  # a carriage return, a form feed…: white space to the per-line search, a word here
    blank = (chars == 32) | (chars == 9) | (chars == 10)
    begins = ~blank  # where each word begins
    begins[1:] &= blank[:-1]
    words = np.cumsum(begins, dtype=np.int32)  # the words begun up to each character
    per_line = 2 * len(names)
    if not np.array_equal(words[controls[breaks]], np.arange(per_line, per_line * (len(rests) + 1), per_line)):
        return None  # a line with more or fewer words
    in_value = (words & 1) == 0
    ends = blank.copy()  # the blank right after each word, kept as its separator
    ends[1:] &= ~blank[:-1]
    ends[0] = False
    kept = ~blank | ends
    said = chars[~in_value & kept].tobytes().translate(_BLANKS_TO_SPACE)
    if said != "".join(f"{name}: " for name in names).encode("ascii") * len(rests):
        return None  # other names, or in another order
    values = chars[in_value & kept].tobytes()
    return values[:-1].translate(_BLANKS_TO_SPACE, b",").decode("ascii")  # (the last value's separator dropped)


_BLANKS_TO_SPACE = bytes.maketrans(b"\t\n", b"  ")


def _averaged_shape_of(rest: str) -> tuple[str, tuple[str, ...]] | None:
    """For "name value (average)" meters (the PyTorch ImageNet example's): the blanks before the first pair of
    ``rest`` and the names of its pairs (found by ``_METER_PAIR``), when only spaces and tabs come before, between
    and after them; None otherwise."""
    if "(" not in rest or ":" in rest:
        return None
    pairs = list(_METER_PAIR.finditer(rest))
    if not pairs:
        return None
    edges = [0, *(edge for m in pairs for edge in m.span()), len(rest)]
    if any(rest[a:b].strip(" \t") for a, b in zip(edges[::2], edges[1::2], strict=True)):
        return None
    return rest[:pairs[0].start()], tuple(m.group(1) for m in pairs)


def _averaged_values(rests: tuple[str, ...], before: str, names: tuple[str, ...]) -> str | None:
    """The current values of "name value (average)" meter ``rests`` (as :func:`_pairs` gives them) when each is
    ``before``, then those pairs in turn with spaces or tabs between and after them, every value and average a
    decimal; None when a line has another shape, a NaN or is not ASCII (the caller then searches each line). One
    regex checks every line at once and numpy picks the values out: each is the word before a "(" (no string per
    pair)."""
    joined = "\n".join(rests) + "\n"
    if not joined.isascii() or _averaged_pattern(before, names).fullmatch(joined) is None:
        return None
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    blank = (chars == 32) | (chars == 9)
    ends = _walk_back(blank, np.flatnonzero(chars == 40), True)  # blanks, then a "(", follow each value
    starts = _walk_back(blank, ends, False)  # (a blank comes before each)
    edges = np.zeros(len(chars) + 1, dtype=np.int8)
    edges[starts] = 1
    edges[ends] -= 1
    kept = np.cumsum(edges[:-1], dtype=np.int8) > 0
    kept[ends] = True  # the blank or "(" after each value, its separator
    spaced = chars.copy()
    spaced[ends] = 32
    return spaced[kept].tobytes()[:-1].decode("ascii")


def _walk_back(blank: np.ndarray, at: np.ndarray, over_blanks: bool) -> np.ndarray:
    """From each of ``at``, back over the blanks (or the other characters) before it: where that stretch begins."""
    at = at.copy()
    moving = np.arange(len(at))
    while len(moving):
        moving = moving[blank[at[moving] - 1] == over_blanks]
        at[moving] -= 1
    return at


@functools.lru_cache(maxsize=64)
def _averaged_pattern(before: str, names: tuple[str, ...]) -> re.Pattern[str]:
    """Lines of :func:`_averaged_values`' shape (possessive repeats: nothing to try again)."""
    pairs = "[ \t]++".join(
        re.escape(name) + rf"[ \t]++{DECIMAL_ONCE}[ \t]*+\([ \t]*+{DECIMAL_ONCE}[ \t]*+\)" for name in names)
    return re.compile(rf"(?:{re.escape(before)}{pairs}[ \t]*+\n)*")


def _integers(texts: tuple[str, ...]) -> np.ndarray:
    """``int`` of each of ``texts`` (digits, ``\\d+``) as int64, numpy reading the ASCII ones in one pass; a
    number beyond 64 bits as at least 2**31 (the caller reads such lines one by one)."""
    joined = " ".join(texts)
    if joined.isascii() and max(map(len, texts)) <= 18:
        return np.fromstring(joined, dtype=np.int64, sep=" ")
    return np.array([min(int(text), 2**62) for text in texts], dtype=np.int64)


class _Meters:
    """The training meter lines of a chunk, read at once: per line its step, epoch, batches and whether it was
    read (a pair with a number); per pair its tag, value, step, epoch and line."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.shape: tuple[list[str], np.ndarray] | None = None  # the names of every line, which values are read

    @classmethod
    def read(cls, lines: list[int], fields: list[tuple[str, ...]]) -> _Meters | None:
        """From each line's start and METER's groups (mode, epoch, index, batches, rest); None when a number
        does not fit 64 bits (read line by line)."""
        made = cls()
        columns = list(zip(*fields, strict=True))
        names, raw_values, counts, same = _pairs(columns[4])
        numbers = [_integers(column) for column in columns[1:4]]
        if max(int(column.max()) for column in numbers) >= 2**31:
            return None  # steps that might not fit 64 bits: read line by line (which counts them)
        epochs, indices, batches = numbers
        modes = columns[0]
        kinds = set(modes)
        if kinds.issubset({None, ""}):
            made.train = np.zeros(len(fields), dtype=bool)
        elif kinds == {"train"}:
            made.train = np.ones(len(fields), dtype=bool)
        else:
            made.train = np.array([(mode or "").lower() == "train" for mode in modes], dtype=bool)
        made.steps = np.where(made.train, (epochs - 1) * batches, epochs * batches) + indices
        made.epochs, made.batches, made.lines = epochs, batches, np.asarray(lines, dtype=np.int64)
        # to_float of each value: float() of it without its commas (thousands separators, a trailing comma)
        values, valid = parse_some_numbers(raw_values) if names else (np.empty(0), np.empty(0, bool))
        valid &= _measures(names, same)  # (as _meter_pairs leaves them)
        counts_array = np.asarray(counts, dtype=np.int64)
        line_of_pair = np.repeat(np.arange(len(fields)), counts_array)
        made.read = np.bincount(line_of_pair[valid], minlength=len(fields)) > 0
        made.values = values[valid]
        made.tags = names if valid.all() else list(compress(names, valid.tolist()))
        made.shape = (same, valid) if same else None
        made.pair_steps = made.steps[line_of_pair[valid]]
        made.pair_epochs = made.epochs[line_of_pair[valid]].astype(np.float64)
        made.pair_positions = made.lines[line_of_pair[valid]]
        return made

    def codes(self, rows) -> np.ndarray:
        """The tags' codes in ``rows`` (new tags coded in order of first appearance, as ``Rows.codes`` does)."""
        if self.shape is not None:  # every line has the same names: coded once
            names, valid = self.shape
            codes = np.tile(np.array(rows.codes(names), dtype=np.int32), len(valid) // len(names))
            return codes[valid] if not valid.all() else codes
        found, names = pd.factorize(np.array(self.tags, dtype=object))
        return np.array(rows.codes(list(names)), dtype=np.int32)[found] if len(found) else np.empty(0, np.int32)


#: How far into a chunk the first templated line is looked for (a chunk that begins otherwise is read line by line).
_LOOK = 1 << 16
_KV_TOKEN = re.compile(r"[ \t]*(?:iter|iteration|global_step|step|epoch|ep)", re.I)


class _RunLines(NamedTuple):
    """The lines of a chunk's runs: their starts, the index of each one's shape and of its run, each shape's
    field grid (its lines, in order), the anchors (the first field of the lines of the first shape, or of
    every shape: a step or an epoch) and per run: its first and last anchor (None without), whether they never
    go back within it, whether its first line has the first shape and which shapes its lines have."""

    starts: np.ndarray
    kinds: np.ndarray
    run: np.ndarray
    grids: list[np.ndarray]
    first: list[int | None]
    last: list[int | None]
    smooth: list[bool]
    leads: list[bool]
    has: list[list[bool]]

    @classmethod
    def of(cls, starts: np.ndarray, kinds: np.ndarray, run: np.ndarray, grids: list[np.ndarray], runs: int,
           shaped: _Shaped) -> _RunLines:
        if shaped.every_kind and len(grids) > 1:
            anchors = np.empty(len(starts), dtype=np.int64)
            for kind, grid in enumerate(grids):
                anchors[kinds == kind] = grid[:, 0]
            anchor_run = run
        else:
            anchors = shaped.anchors(grids[0])
            anchor_run = run[kinds == 0] if len(grids) > 1 else run
        count = np.bincount(anchor_run, minlength=runs)
        ends = np.cumsum(count)
        has = count > 0
        first = np.where(has, anchors[np.minimum(ends - count, len(anchors) - 1)] if len(anchors) else 0, 0)
        last = np.where(has, anchors[np.maximum(ends - 1, 0)] if len(anchors) else 0, 0)
        back = anchor_run[1:][(anchors[1:] < anchors[:-1]) & (anchor_run[1:] == anchor_run[:-1])]
        smooth = np.ones(runs, dtype=bool)
        smooth[back] = False
        leads = np.zeros(runs, dtype=bool)
        run_starts = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
        leads[run[run_starts]] = kinds[run_starts] == 0
        has_list = has.tolist()
        return cls(starts, kinds, run, grids, [a if h else None for a, h in zip(first.tolist(), has_list, strict=True)],
                   [a if h else None for a, h in zip(last.tolist(), has_list, strict=True)], smooth.tolist(),
                   leads.tolist(), np.bincount(run * len(grids) + kinds, minlength=runs * len(grids)).reshape(
                       runs, len(grids)).astype(bool).tolist())

    def goes_on(self, index: int, previous: int | None) -> bool:
        """Whether the anchors of run ``index`` never go back (from ``previous`` on): a restart is recorded at
        its line, read line by line."""
        first = self.first[index]
        return self.smooth[index] and (first is None or previous is None or first >= previous)


#: Lines no generic pattern can match: without any of ``: = [ *`` (pairs, meters, summaries) and the words
#: that begin key-value lines and epoch headers (the words' letters of both cases).
_NO_GENERIC_LINE = re.compile(r"(?:(?![Ii][Tt][Ee][Rr]|[Ss][Tt][Ee][Pp]|[Ee][Pp])[^:=\[*])*")


def _few_lines_matches(text: str, patterns: tuple[tuple[re.Pattern[str], str], ...], start: int, end: int
                       ) -> list[tuple[str, re.Match[str]]]:
    """``ordered_matches`` of a few whole lines, quicker: each pattern anchored at line starts tried there only
    (a match of such a pattern begins at its line's start), the others searched in each line; per line in
    order of position, then of pattern (as ``ordered_matches`` merges them)."""
    out = []
    tries = _line_tries(patterns)
    while start < end:
        stop = text.find("\n", start, end) + 1 or end
        found = []
        for index, kind, match, search in tries:
            if match is not None:
                m = match(text, start, stop)
                if m is not None:
                    found.append((m.start(), index, kind, m))
            else:
                found.extend((m.start(), index, kind, m) for m in search(text, start, stop))
        if len(found) > 1:
            found.sort(key=itemgetter(0, 1))
        out.extend((kind, m) for _, _, kind, m in found)
        start = stop
    return out


@functools.cache
def _line_tries(patterns: tuple[tuple[re.Pattern[str], str], ...]) -> list[tuple[int, str, Any, Any]]:
    """Per pattern: its index, kind, and ``match`` when it is anchored at line starts, else ``finditer``."""
    return [(index, kind, pattern.match, None) if pattern.pattern.startswith("^") and pattern.flags & re.M
            else (index, kind, None, pattern.finditer) for index, (pattern, kind) in enumerate(patterns)]


def _kv_bounds(rest: str) -> list[tuple[int, int]]:
    """Where the segments of a key-value line's rest (after its step) lie: between ``|``, ``,`` and `` - ``, or,
    when it has none of them, one segment per blank-separated pair (``loss 2.31 lr 3e-4``); a segment of several
    ``name: value`` pairs split into them (``| Train Loss: 0.21 Acc: 0.90 |``)."""
    bounds, at = [], 0
    for split in _KV_SPLIT.finditer(rest):
        bounds.append((at, split.start()))
        at = split.end()
    bounds.append((at, len(rest)))
    if len(bounds) == 1:
        blank = [(m.start(), m.end()) for m in _BLANK_PAIR_AT.finditer(rest)]
        if blank and blank[-1][1] == len(rest.rstrip()) and all(
                a == b_prev for (a, _), (_, b_prev) in zip(blank[1:], blank, strict=False)) and blank[0][0] == 0:
            return blank
    out = []
    for a, b in bounds:
        chained = _CHAINED_PAIRS.fullmatch(rest, a, b) if ":" in rest[a:b] else None
        if chained is None:
            out.append((a, b))
        else:
            out += [(m.start(), m.end()) for m in _CHAINED_PAIR.finditer(rest, a, b)]
    return out


def _others_match(line: str, handlers: dict[str, Any], *but: str) -> bool:
    """Whether a generic pattern of another kind than ``but`` matches ``line``."""
    return any(kind not in but and kind in handlers and pattern.search(line) is not None
               for pattern, kind in GenericRules.generic_patterns)


def _lines_after(text: str, start: int, count: int) -> list[tuple[int, str]]:
    """Up to ``count`` whole lines of ``text`` from ``start`` on, with where each begins."""
    out = []
    while len(out) < count and start < len(text):
        end = text.find("\n", start)
        if end < 0:
            break
        out.append((start, text[start:end]))
        start = end + 1
    return out


class _Shaped:
    """The shapes a chunk's templated lines have and how a run of them is read (equal to line by line)."""

    shapes: tuple[LineShape, ...]
    every_kind = False  # whether every line has an anchor (else the first shape's)

    @staticmethod
    def of(text: str, handlers: dict[str, Any]) -> _Shaped | None:
        """The key-value lines, the epoch blocks or the training meters of the head of ``text``, whichever comes
        first; None if none."""
        kv = KV_STEP.search(text, 0, _LOOK)
        epochs = "Epoch" in text[:_LOOK]
        header = EPOCH_HEADER.search(text, 0, _LOOK) if epochs else None
        meter = METER.search(text, 0, _LOOK) if epochs else None
        found = [(m.start(), rank, m) for rank, m in enumerate((kv, header, meter)) if m is not None]
        if not found:
            return None
        _, rank, first = min(found)
        if rank == 0:
            return _KvLines.of(text, first.start(), handlers)
        return _EpochBlocks.of(text, first, handlers) if rank == 1 else _MeterLines.of(text, first, handlers)

    def anchors(self, grid: np.ndarray) -> np.ndarray:
        """The anchor (the step, or the epoch that keys the rows) of each line of the first shape, from its
        fields."""
        return grid[:, 0].astype(np.int64)

    def take(self, parser: GenericTextParser, lines: _RunLines, index: int) -> Any:
        """The state the lines of run ``index`` change, changed as read one by one would (its tags coded, in order), and
        what :meth:`rows` needs of it; None (nothing changed) if not sure: read line by line."""
        raise NotImplementedError

    def rows(self, parser: GenericTextParser, lines: _RunLines, taken: np.ndarray, records: list[Any]
             ) -> tuple[Any, ...]:
        """The rows of the runs ``taken`` (with what :meth:`take` gave): codes, steps, values, epoch(s) and the
        line start of each."""
        raise NotImplementedError


class _KvShape(NamedTuple):
    """How a key-value line of one shape is read: the fields that are pairs and their names, the field that is
    the epoch (None: none), and whether the step is an epoch ("Epoch 3/10 - loss: …")."""

    pairs: list[int]
    names: list[str]
    epoch: int | None
    by_epoch: bool


class _KvLines(_Shaped):
    """Key-value lines with a step (``iter N | name value | …``) of a few shapes (a training and an evaluation
    line, say), seen in the head of the chunk."""

    every_kind = True  # every line has a step

    def __init__(self, shapes: list[tuple[LineShape, _KvShape]]) -> None:
        self.shapes = tuple(shape for shape, _ in shapes)
        self.reads = [read for _, read in shapes]
        self.coded: set[int] = set()  # the shapes whose names have their codes (in the order lines give them)

    @classmethod
    def of(cls, text: str, start: int, handlers: dict[str, Any]) -> _KvLines | None:
        """The shapes of the first key-value lines of ``text`` from ``start`` on (up to 4, in the head)."""
        shapes: list[tuple[LineShape, _KvShape]] = []
        known: list[re.Pattern[str]] = []
        for count, m in enumerate(KV_STEP.finditer(text, start, _LOOK)):
            if count >= 256 or len(shapes) >= 4:
                break
            if m.end() < _LOOK and not any(pattern.fullmatch(m.group(0)) for pattern in known):
                shape = cls._shape_of(m, handlers)
                if shape is not None:
                    shapes.append(shape)
                    known.append(re.compile(shape[0].source()))
        return cls(shapes) if shapes else None

    @staticmethod
    def _shape_of(m: re.Match[str], handlers: dict[str, Any]) -> tuple[LineShape, _KvShape] | None:
        """The shape of the key-value line ``m`` matched, as ``_on_kv_step`` reads it; None when that line would
        not be read (too few pairs), has a step among its pairs or also matches another generic pattern."""
        line = m.group(0)
        token = _token(m)
        base = m.start()
        spans, roles = [(m.start("step") - base, m.end("step") - base)], ["step"]
        rest, rest_at = m.group("rest"), m.start("rest") - base
        segments = [(a, b) for a, b in _kv_bounds(rest) if rest[a:b].strip()]
        for a, b in segments:
            if token in _EPOCH_LIKE and _IN_EPOCH.match(rest[a:b]):
                return None  # the batch of its epoch beside it: read line by line
            item = _KV_SEGMENT.match(rest[a:b])
            if not item:
                continue  # (the same text on every line of the shape: never a pair)
            name = _segment_name(item)
            lower = name.lower()
            if lower in _COUNTER_NAMES and token == "epoch":
                return None  # the step or batch in a pair: rare, read line by line
            roles.append("epoch" if lower == "epoch" else None if lower in _STEP_NAMES | _NOT_MEASURES else name)
            spans.append((rest_at + a + item.start(2), rest_at + a + item.end(2)))
        pairs = [index for index, role in enumerate(roles) if role not in (None, "step", "epoch")]
        # (a pair line is no other kind here: no epoch header before, which each run checks)
        if not pairs or len(pairs) * 2 < len(segments) or _others_match(line, handlers, "kv_step", "pair_line"):
            return None
        shape = line_shape(line, spans, [True] + [False] * (len(spans) - 1))
        epochs = [index for index, role in enumerate(roles) if role == "epoch"]  # (the last one counts)
        names = [roles[index] for index in pairs]
        read = _KvShape(pairs, _phased_names(names) or names,  # type: ignore[arg-type]
                        epochs[-1] if epochs else None, token == "epoch")
        return None if shape is None else (shape, read)

    def take(self, parser: GenericTextParser, lines: _RunLines, index: int) -> Any:
        previous = parser._last_anchor.get(-1)
        if parser._wrap_offset is not None:
            return None  # a step counter that starts over each epoch: its steps go on from the epochs before
        if parser._epoch_now is not None or not lines.goes_on(index, previous) or lines.first[index] == previous:
            return None  # a pair line could take it; a restart, recorded at its line; a step again (an evaluation?)
        if any(read.by_epoch and read.epoch is None and lines.has[index][kind] for kind, read in enumerate(self.reads)):
            return None  # lines keyed by their epoch alone (one an epoch, or several: see _epoch_line_step): few, read
            #              line by line
        if len(self.coded) < len(self.reads):
            _code_in_order(parser, lines, index, self.coded, [read.names for read in self.reads], 0)
        parser._kv_seen = True
        parser._kv_epoch_seen = parser._kv_epoch_seen or any(
            read.by_epoch for kind, read in enumerate(self.reads) if lines.has[index][kind])
        parser.anchor(lines.last[index], None, 0)  # type: ignore[arg-type]
        return True

    def rows(self, parser: GenericTextParser, lines: _RunLines, taken: np.ndarray, records: list[Any]
             ) -> tuple[Any, ...]:
        mine = taken[lines.run]
        codes, steps, values, epochs, places = [], [], [], [], []
        for kind, read in enumerate(self.reads):
            of_kind = lines.kinds == kind
            keep = mine[of_kind]
            if not keep.any():
                continue
            grid = lines.grids[kind][keep]
            step = grid[:, 0].astype(np.int64)
            width = len(read.pairs)
            if read.epoch is not None:
                epoch = grid[:, read.epoch]
            elif read.by_epoch:
                epoch = step.astype(np.float64)
            else:
                epoch = np.full(len(step), NAN)
            codes.append(np.tile(np.array(parser.rows.codes(read.names), dtype=np.int32), len(step)))
            steps.append(np.repeat(step, width))
            values.append(grid[:, read.pairs].ravel())
            epochs.append(np.repeat(epoch, width))
            places.append(np.repeat(lines.starts[of_kind][keep], width))
        return _in_line_order(codes, steps, values, epochs, places)


def _code_in_order(parser: GenericTextParser, lines: _RunLines, index: int, coded: set[int],
                   names: list[list[str]], first: int) -> None:
    """Give the names of each shape (from kind ``first`` on) of run ``index`` their codes, in the order its
    lines have them (as line by line), once."""
    kinds = lines.kinds[lines.run == index]
    shapes, firsts = np.unique(kinds, return_index=True)
    for kind in shapes[np.argsort(firsts)].tolist():
        if kind >= first and kind not in coded:
            parser.rows.codes(names[kind - first])
            coded.add(kind)


def _in_line_order(codes: list[np.ndarray], steps: list[np.ndarray], values: list[np.ndarray],
                   epochs: list[np.ndarray], places: list[np.ndarray]) -> tuple[Any, ...]:
    """The rows of each shape (codes, steps, values, epochs, line starts) as one set of columns in line order
    (within a line, in the order of its pairs)."""
    if not places:
        return (np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0), NAN, np.empty(0, np.int64))
    if len(places) == 1:
        return codes[0], steps[0], values[0], epochs[0], places[0]
    order = np.argsort(np.concatenate(places), kind="stable")
    return tuple(np.concatenate(column)[order] for column in (codes, steps, values, epochs, places))


class _MeterLines(_Shaped):
    """Training meter lines of the PyTorch ImageNet example's kind (``Epoch: [e][ i/n]  name value (average) …``,
    numbers padded to a width), of the shape of the first one in the chunk's head, each starting its line."""

    _BIG = 2**31  # an epoch, index or batch count from which a run is read line by line (its steps may not fit)

    def __init__(self, shape: LineShape, names: list[str], train: bool) -> None:
        self.shapes = (shape,)
        self.names = names
        self.train = train  # "Epoch(train) [e][i/n]": epochs counted from 1 (MMEngine)
        self.coded = False

    @classmethod
    def of(cls, text: str, m: re.Match[str], handlers: dict[str, Any]) -> _MeterLines | None:
        """The shape of the meter line ``m`` matched, as ``_on_meter`` reads it; None when it does not start its
        line, is an evaluation's, has other pairs or also matches another generic pattern."""
        mode = (m.group("mode") or "").lower()
        if (m.start() and text[m.start() - 1] != "\n") or mode not in ("", "train"):
            return None
        rest = m.group("rest")
        if _averaged_shape_of(rest) is None or _others_match(m.group(0), handlers, "meter"):
            return None
        base = m.start()
        spans = [(m.start(group) - base, m.end(group) - base) for group in ("e", "i", "n")]
        pads, names = ["*", "*", "*"], []
        rest_at = m.start("rest") - base
        for pair in _AVERAGED_PAIR.finditer(rest):
            names.append(pair.group(1))
            spans += [(rest_at + pair.start(2), rest_at + pair.end(2)), (rest_at + pair.start(3), rest_at + pair.end(3))]
            pads += ["+", "*"]
        shape = line_shape(m.group(0), spans, [True] * 3 + [False] * (len(spans) - 3), pads,
                           [False] * 3 + [False, True] * len(names))  # (the averages: checked, not read)
        return None if shape is None else cls(shape, names, mode == "train")

    def anchors(self, grid: np.ndarray) -> np.ndarray:
        epochs, indices, batches = (np.minimum(grid[:, column], self._BIG).astype(np.int64) for column in range(3))
        return (epochs - 1 if self.train else epochs) * batches + indices

    def take(self, parser: GenericTextParser, lines: _RunLines, index: int) -> Any:
        if not lines.goes_on(index, parser._last_anchor.get(-1)):
            return None  # a restart, recorded at its line
        low, high = np.searchsorted(lines.run, [index, index + 1])
        counts = lines.grids[0][low:high, :3]
        if counts.max() >= self._BIG:
            return None
        if not self.coded:
            parser.rows.codes(self.names)
            self.coded = True
        parser._meter_seen = True
        parser._meter_batches, parser._meter_epoch = int(counts[-1, 2]), int(counts[-1, 0])
        parser._mmengine = parser._mmengine or self.train
        parser.anchor(lines.last[index], None, 0)  # type: ignore[arg-type]
        return True

    def rows(self, parser: GenericTextParser, lines: _RunLines, taken: np.ndarray, records: list[Any]
             ) -> tuple[Any, ...]:
        keep = taken[lines.run]
        grid = lines.grids[0][keep]
        width = len(self.names)
        codes = np.tile(np.array(parser.rows.codes(self.names), dtype=np.int32), len(grid))
        return (codes, np.repeat(self.anchors(grid), width), grid[:, 3:].ravel(), np.repeat(grid[:, 0], width),
                np.repeat(lines.starts[keep], width))


class _EpochBlocks(_Shaped):
    """``Epoch N/M`` lines and the ``Name: value - …`` lines under them, each of a shape seen in the first block."""

    def __init__(self, shapes: tuple[LineShape, ...], names: list[list[str]]) -> None:
        self.shapes = shapes  # the header's first
        self.names = names  # of each pair line shape
        self.coded: set[int] = set()  # the pair line shapes whose names have their codes

    @classmethod
    def of(cls, text: str, header: re.Match[str], handlers: dict[str, Any]) -> _EpochBlocks | None:
        """The shapes of the first ``header`` and of the pair lines after it (up to the next header); None when
        the header or no pair line can be read so."""
        if _others_match(header.group(0), handlers, "epoch_header"):
            return None
        base = header.start()
        first = line_shape(header.group(0), [(header.start(1) - base, header.end(1) - base)], [True])
        if first is None:
            return None
        shapes, names = [first], []
        for _, line in _lines_after(text, header.end() + 1, 64):
            if EPOCH_HEADER.match(line):
                break
            shape = _pair_shape(line, handlers)
            if shape is not None and shape[0] not in shapes:
                shapes.append(shape[0])
                names.append(shape[1])
        return cls(tuple(shapes), names) if names else None

    def take(self, parser: GenericTextParser, lines: _RunLines, index: int) -> Any:
        if not lines.goes_on(index, parser._last_anchor.get(-1)):
            return None  # a restart, recorded at its line
        before = parser._epoch_now
        if not lines.leads[index] and before is None:
            return None  # pair lines with no epoch yet: not read
        if len(self.coded) < len(self.names):  # the names coded in the order of the lines
            _code_in_order(parser, lines, index, self.coded, self.names, 1)
        parser._pairs_seen = parser._pairs_seen or any(lines.has[index][1:])
        last = lines.last[index]
        if last is not None:
            parser._epoch_now = last
            parser.anchor(last, None, 0)
        return -1 if before is None else before

    def rows(self, parser: GenericTextParser, lines: _RunLines, taken: np.ndarray, records: list[Any]
             ) -> tuple[Any, ...]:
        mine = taken[lines.run]
        starts, kinds, run_of = lines.starts, lines.kinds, lines.run
        before = np.array([-1 if record is None else record for record in records], dtype=np.int64)
        headers = kinds == 0
        header_lines = starts[headers]
        epochs = np.concatenate([np.zeros(1), lines.grids[0][:, 0]]).astype(np.int64)
        header_run = np.concatenate([[-1], run_of[headers]])
        codes, steps, values, places = [], [], [], []
        for kind, names in enumerate(self.names, 1):
            of_kind = kinds == kind
            keep = mine[of_kind]
            if not keep.any():
                continue
            at, runs = starts[of_kind][keep], run_of[of_kind][keep]
            under = np.searchsorted(header_lines, at, side="right")  # the header above, + 1 (0: none)
            epoch = np.where(header_run[under] == runs, epochs[under], before[runs])  # (a header of its run)
            width = len(names)
            codes.append(np.tile(np.array(parser.rows.codes(names), dtype=np.int32), len(at)))
            steps.append(np.repeat(epoch, width))
            values.append(lines.grids[kind][keep].ravel())
            places.append(np.repeat(at, width))
        return _in_line_order(codes, steps, values, [step.astype(np.float64) for step in steps], places)


def _pair_shape(line: str, handlers: dict[str, Any]) -> tuple[LineShape, list[str]] | None:
    """The shape of a ``Name: value - …`` line and its names, as ``_on_pair_line`` reads it; None when it is no
    such line, might be read as another kind (a step's name first) or has another number than a plain one."""
    if PAIR_LINE.fullmatch(line) is None or _KV_TOKEN.match(line) or _others_match(line, handlers, "pair_line"):
        return None
    items = list(_PAIR_ITEM.finditer(line))
    shape = line_shape(line, [item.span(2) for item in items], [False] * len(items)) if items else None
    return None if shape is None else (shape, _lent_phase([_pair_name(item.group(1)) for item in items]))


_MMENGINE = re.compile(r" - mmengine - INFO - Epoch\(\w+\) +\[")


def detect_generic(window: str) -> bool:
    """Whether a text has enough generic metric lines to be a training log."""
    if any(len(pattern.findall(window)) >= 2 for pattern in (METER, _MMENGINE, SWIN_METER)):
        return True
    if len(KV_STEP.findall(window)) >= 3 or len(AT_STEP.findall(window)) >= 3:
        return True
    headers = EPOCH_HEADER.findall(window)
    if len(headers) < 2:
        return False
    return len(PAIR_LINE.findall(window)) >= 2 or sum(
        1 for m in BLANK_PAIR_LINE.finditer(window)
        if all(_METRIC_NAME.search(name) for name, _ in _BLANK_ITEM.findall(m.group(0)))) >= 2


class GenericTextReader(TextReader):
    name = "text"
    description = ("console logs of custom training loops (progress meters, 'Epoch N/M' blocks, key-value lines), "
                   "also behind a logging library's line prefix")
    parser = GenericTextParser
    cache_version = 27  # 4: lines behind a logging library's prefix; 5: blank-separated pairs, units in names; 6: a line
    #                    of progress-bar redraws longer than a chunk cut after a redraw; 7: 'epoch: e/E, iter: i/N'
    #                    lines at the batch of their epoch, no 'ETA' pair; 8: no 'eta' in meters; 9: '[epoch N]' key-value
    #                    lines, names that end in a number ('Loss size 4: 0.61'); 10: evaluation meters' averages,
    #                    their summaries ('* Acc@1', 'Test:  Acc@1') at their step and with their prefix; 11: 'ep' lines,
    #                    batch counters that start over each epoch, a line again after an evaluation banner, 'loss is:';
    #                    12: 'max mem' named whole; 13: a logging prefix after a few blanks; 14: segments of several
    #                    pairs ('Train Loss: 0.21 Acc: 0.90'), each repeated name given its phase; 15: Swin Transformer's meters;
    #                    16: lines keyed by their epoch printed several times an epoch, each a step; 17: 'loss at
    #                    step N: value' lines; 18: pairs with blanks between them under an epoch header, a bare
    #                    metric given its line's phase ('val Loss: 0.2 Acc: 0.9'); 19: COCO evaluation summaries;
    #                    20: an 'iteration' counting epochs beside the batch of its epoch; a logger named by a path;
    #                    21: 'Train loss 0.14 accuracy 0.95' under an epoch header; 22: an evaluation's block after
    #                    its banner takes its phase; the batch of an epoch in brackets; 23: 'Epoch 1/1' then
    #                    'Epoch 1/8' another training (a session), not one epoch's lines; 24: 'Episode N | …' lines;
    #                    25: 'step N train loss: … test loss: …' (makemore); a pair's unit of time kept in its name;
    #                    26: '[Epoch 1/60]' headers (not a logging prefix's part), names aligned by blanks;
    #                    27: a step counter printed with its total that starts over each epoch goes on

    behind_logging = True

    def detect(self, window: str) -> bool:
        return detect_generic(window)
