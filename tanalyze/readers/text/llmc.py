"""llm.c (karpathy/llm.c ``train_gpt2cu`` and friends): the ``main.log`` metrics file and the console output.

``main.log`` (written to the ``-o`` log folder) holds one record per line::

    s:0 tel:11.0079                         validation loss
    s:0 trl:11.0097 lr:0.000001 norm:15.08  training loss (+ learning rate, grad norm in newer versions)
    s:250 eval:0.2483                       HellaSwag accuracy

The console (stdout, e.g. a SLURM ``.log``) prints the same numbers with more digits::

    val loss 11.007921
    step    1/19560 | loss 11.009662 (+nanz)| norm 15.0789 (+nanz)| lr 8.57e-07 | 4230.95 ms | 31.9% bf16 MFU | 123917 tok/s
    HellaSwag: 2493/10042 = 0.248257

(older versions: ``step    1/10: train loss 4.677 (1234.5 ms, 5678 tok/s)``).

**Step = optimizer updates done**, the same in both files. The console prints the
update number counting from 1 (``step 1/19560`` is the first update), while
``main.log`` writes the 0-based loop index: its train line ``s:0 trl:`` is that
same first update, so it lands on step 1; validation and HellaSwag run at the top
of loop ``s`` (after ``s`` updates), so ``s:250 tel:`` is step 250, as is the
console's ``val loss`` printed after ``step  250/19560``. Train loss and val loss
of one moment thus share a step. The z-scores of loss and norm (``(-1.41z)``) are
kept as ``loss_zscore``/``norm_zscore``; ``(+nanz)`` (not computed yet) is skipped
and counted.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tanalyze.readers.text._keys import KEY_BYTES, key_codes
from tanalyze.readers.text._lines import Chunk
from tanalyze.readers.text._numbers import parse_some_numbers
from tanalyze.readers.text._parser import TextParser
from tanalyze.readers.text._reader import TextReader
from tanalyze.readers.text._regex import require
from tanalyze.readers.text._shaped import LineShape
from tanalyze.readers.text._spans import SpanParser
from tanalyze.readers.values import NUMBER, to_float

__all__ = ["LlmcParser", "LlmcReader", "detect_llmc"]

#: main.log keys -> tags (the console's names for the same numbers)
MAIN_LOG_TAGS = {"trl": "train/loss", "tel": "val/loss", "eval": "hellaswag/acc", "lr": "lr", "norm": "grad_norm"}

MAIN_LINE = re.compile(r"^s:(\d+)((?:[ \t]+[A-Za-z_]\w*:[^\s]+)+)[ \t]*$", re.M)
_MAIN_PAIR = re.compile(r"([A-Za-z_]\w*):(\S+)")
STEP_LINE = re.compile(
    rf"^step[ \t]+(\d+)/(\d+) \| loss +({NUMBER}) \(([^)]*)\)\| norm +({NUMBER}) \(([^)]*)\)\| lr +({NUMBER})"
    rf"((?: \| [^|\n]*)*)[ \t]*$",
    re.M,
)
OLD_STEP_LINE = re.compile(
    rf"^step[ \t]+(\d+)/(\d+): train loss +({NUMBER}) \(({NUMBER}) ms, ({NUMBER}) tok/s\)[ \t]*$", re.M
)
VAL_LINE = re.compile(rf"^val loss ({NUMBER})[ \t]*$", re.M)
HELLASWAG_LINE = re.compile(rf"^HellaSwag: (\d+)/(\d+) = ({NUMBER})[ \t]*$", re.M)
_TAIL_FIELDS = (
    (re.compile(rf"^({NUMBER}) ms$"), "time_ms"),
    (re.compile(rf"^({NUMBER})% \w+ MFU$"), "mfu"),
    (re.compile(rf"^({NUMBER}) tok/s$"), "tok_per_s"),
)
_ZSCORE = re.compile(rf"^({NUMBER})z$")
#: The step line of train_gpt2.cu (bf16), with its z-scores or before they are computed ('(+nanz)'), read at
#: once (see ._spans); 'val loss', 'HellaSwag' and the other lines in their place, on their own (main.log records
#: never reach it: a chunk with one is read as main.log, see ``feed``).
_TAIL_PIECES = (" | ", " ms | ", "% bf16 MFU | ", " tok/s")
_SHAPES = (
    LineShape(("step", "/", " | loss ", " (", "z)| norm ", " (", "z)| lr ", *_TAIL_PIECES),
              (True, True, *[False] * 8), ("+", *[""] * 9)),
    LineShape(("step", "/", " | loss ", " (+nanz)| norm ", " (+nanz)| lr ", *_TAIL_PIECES),
              (True, True, *[False] * 6), ("+", *[""] * 7)),
)
_SHAPE_TAGS = (("train/loss", "loss_zscore", "grad_norm", "norm_zscore", "lr", "time_ms", "mfu", "tok_per_s"),
               ("train/loss", "grad_norm", "lr", "time_ms", "mfu", "tok_per_s"))
#: a row of the settings table train_gpt2 prints first ("| learning rate (LR)    | 6.000000e-04 |")
_SETTING_LINE = require(re.compile(r"^\| ([A-Za-z][^|\n]*?) *\| ([^|\n]*?) *\|[ \t]*$", re.M),
                        lambda text: "\n| " in text or text.startswith("| "))  # (step lines hold "| " too)
#: printed by train_gpt2 before its first step: a console log that died before any step line still has it, and
#: a session appended to a log begins with it
_BANNER = re.compile(r"^=> setting grad_accum_steps=\d+$", re.M)


class LlmcParser(SpanParser, TextParser):
    family = "llm.c"
    lookalike = re.compile(r"^(?:s:\d+ |step[ \t]+\d+/\d+[ |:]|val loss )", re.M)
    patterns = (
        (MAIN_LINE, "main"),
        (STEP_LINE, "step"),
        (OLD_STEP_LINE, "old_step"),
        (VAL_LINE, "val"),
        (HELLASWAG_LINE, "hellaswag"),
        (_BANNER, "banner"),
        (_SETTING_LINE, "setting"),
    )

    state_fields = {"_unset_zscores": "sum", "_unknown_keys": "union", "_main_lines": "sum",
                    "_console_lines": "sum", "_total_steps": "last"}

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._unset_zscores = 0
        self._unknown_keys: set[str] = set()
        self._main_lines = 0
        self._console_lines = 0
        self._total_steps: int | None = None

    span_prefix = "step"
    span_shapes = _SHAPES

    def feed(self, chunk: Chunk) -> None:
        if "\ns:" in chunk.text or chunk.text.startswith("s:"):
            if not self.line_by_line and self._main_log_at_once(chunk):
                return
            self.line_by_line_chunk(chunk)  # main.log records anchor steps too: every line in its place
            return
        super().feed(chunk)

    def _main_log_at_once(self, chunk: Chunk) -> bool:
        """A chunk of main.log records only, read at once: the rows, anchors and counts of reading each line
        (:meth:`_on_main`). False (nothing read) when a line is anything else or a value is not a number (those
        lines are counted, not read), or a train step goes back (a relaunch, recorded at its line)."""
        records = _main_records(chunk.text)
        if records is None:
            return False
        keys, key_of_pair, line_of_pair, values, loop_steps = records
        train_key = keys.index("trl") if "trl" in keys else -1
        train = np.zeros(len(loop_steps), dtype=bool)
        train[line_of_pair[key_of_pair == train_key]] = True
        steps = loop_steps + train  # a train record is the update of loop `s`, done: s + 1
        anchors = steps[train]
        if not self.anchors_go_on(anchors):
            return False
        codes = np.array(self.rows.codes([MAIN_LOG_TAGS.get(key, key) for key in keys]), dtype=np.int32)
        self.take_whole_chunk(codes[key_of_pair], steps[line_of_pair], values, len(loop_steps), anchors)
        self._unknown_keys.update(key for key in keys if key not in MAIN_LOG_TAGS)
        self._main_lines += len(loop_steps)
        return True

    def line_by_line_chunk(self, chunk: Chunk) -> None:
        TextParser.feed(self, chunk)
        self.scan_ranges = None

    def span_rows(self, grid: np.ndarray, shape: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray] | None:
        return _SHAPE_TAGS[shape], grid[:, 0].astype(np.int64), grid[:, 2:].ravel()

    def span_done(self, grid: np.ndarray, shape: int, steps: np.ndarray) -> None:
        self._total_steps = int(grid[-1, 1])
        self._console_lines += len(steps)
        if shape == 1:
            self._unset_zscores += 2 * len(steps)

    # main.log --------------------------------------------------------------------------
    def _on_main(self, m: re.Match[str], chunk: Chunk) -> None:
        loop_step = int(m.group(1))
        if loop_step >= 2**63 - 1:
            return  # garbled digits, no step: not marked, counted as unreadable (and no restart from it)
        pairs = []
        train = False
        for key, text in _MAIN_PAIR.findall(m.group(2)):
            value = to_float(text)
            if value is None:
                return  # not marked: the look-alike scan counts it as unreadable
            train |= key == "trl"
            if key not in MAIN_LOG_TAGS:
                self._unknown_keys.add(key)
            pairs.append((MAIN_LOG_TAGS.get(key, key), value))
        step = loop_step + 1 if train else loop_step  # a train record is the update of loop `s`, done: s + 1
        self.mark(chunk, m.start())
        if train:
            self.anchor(step, chunk, m.start())
        self._main_lines += 1
        self.rows.add_pairs(pairs, step)

    # console ---------------------------------------------------------------------------
    def _zscore(self, text: str, tag: str, pairs: list[tuple[str, float]]) -> None:
        m = _ZSCORE.match(text.strip())
        value = to_float(m.group(1)) if m else None
        if value is None or value != value:
            self._unset_zscores += 1
            return
        pairs.append((tag, value))

    def _on_step(self, m: re.Match[str], chunk: Chunk) -> None:
        step = int(m.group(1))
        self._total_steps = int(m.group(2))
        pairs = [("train/loss", float(m.group(3)))]
        self._zscore(m.group(4), "loss_zscore", pairs)
        pairs.append(("grad_norm", float(m.group(5))))
        self._zscore(m.group(6), "norm_zscore", pairs)
        pairs.append(("lr", float(m.group(7))))
        for field in m.group(8).split("|"):
            field = field.strip()
            for pattern, tag in _TAIL_FIELDS:
                found = pattern.match(field)
                if found:
                    pairs.append((tag, float(found.group(1))))
                    break
        self._console(step, pairs, chunk, m.start())

    def _on_old_step(self, m: re.Match[str], chunk: Chunk) -> None:
        self._total_steps = int(m.group(2))
        pairs = [("train/loss", float(m.group(3))), ("time_ms", float(m.group(4))), ("tok_per_s", float(m.group(5)))]
        self._console(int(m.group(1)), pairs, chunk, m.start())

    def _console(self, step: int, pairs: list[tuple[str, float]], chunk: Chunk, pos: int) -> None:
        self.mark(chunk, pos)
        self.anchor(step, chunk, pos)
        self._console_lines += 1
        self.rows.add_pairs(pairs, step)

    def _on_val(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self._console_lines += 1
        self.rows.add_pairs([("val/loss", float(m.group(1)))], self.current_step(0))

    def _on_banner(self, m: re.Match[str], chunk: Chunk) -> None:
        """A (new) session starts: its first 'val loss' comes before any step line, at step 0."""
        self._last_step = None

    def _on_setting(self, m: re.Match[str], chunk: Chunk) -> None:
        """A row of the settings table: an hparam under its printed name (numbers as numbers)."""
        name, text = m.group(1), m.group(2)
        if name == "Parameter" and text == "Value":
            return  # the table's header
        if re.fullmatch(r"[-+]?\d+", text):
            self.hparams[name] = int(text)
        else:
            number = to_float(text) if re.fullmatch(NUMBER, text) else None
            self.hparams[name] = text if number is None else number

    def _on_hellaswag(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self._console_lines += 1
        self.rows.add_pairs([("hellaswag/acc", float(m.group(3)))], self.current_step(0))

    def finish(self) -> None:
        notes = []
        if self._main_lines:
            notes.append("main.log records: 's:N trl' (update N+1, done) at step N+1; 'tel'/'eval' at step N "
                         "(measured after N updates)")
        if self._console_lines:
            notes.append("console lines: step = the update number printed ('step N/M'); 'val loss' and "
                         "'HellaSwag' lines at the step of the last update printed before them")
        if self._total_steps is not None:
            self.hparams["train_num_batches"] = self._total_steps
        if self._unset_zscores:
            notes.append(f"{self._unset_zscores:,} '(+nanz)' z-score(s) (not computed yet) skipped")
        if self._unknown_keys:
            notes.append(f"main.log keys kept under their own names: {', '.join(sorted(self._unknown_keys))}")
        self.notes[:0] = notes




#: A text of main.log records only, each ending with its line break (what :data:`MAIN_LINE` matches)
_MAIN_RECORDS = re.compile(r"(?:s:\d++(?:[ \t]++[A-Za-z_]\w*+:\S++)++[ \t]*+\n)++")
_BLANKS_TO_SPACE = bytes.maketrans(b"\t\n", b"  ")


def _main_records(text: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The records of a text of main.log lines, found with numpy rather than one line at a time: the keys (in
    order of first use), each pair's key and line, the values, and each line's loop step. None when the text is
    not all records (ASCII, each with its break), a value is not a number, a step does not fit a float exactly
    or a key is long. The same pairs as ``_MAIN_PAIR`` finds in each line, values as ``to_float`` reads them."""
    if not text.isascii() or _MAIN_RECORDS.fullmatch(text) is None:
        return None
    chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    blank = (chars == 32) | (chars == 9) | (chars == 10)
    starts = np.flatnonzero(~blank & np.concatenate(([True], blank[:-1])))  # each 'key:value' word
    ends = np.flatnonzero(blank & np.concatenate(([False], ~blank[:-1])))  # the blank after it
    colons = np.flatnonzero(chars == 58)  # a key has none: one per word, or a value has one (no number)
    if len(colons) != len(starts):
        return None
    lengths = colons - starts
    if lengths.max() > KEY_BYTES:  # (none that llm.c writes): the lines are read one by one
        return None
    # the values, one space between them (each word's blank), commas out: to_float's thousands separators
    edges = np.zeros(len(chars) + 1, dtype=np.int8)
    edges[colons + 1] = 1
    edges[ends] -= 1
    keep = np.cumsum(edges[:-1], dtype=np.int8).view(bool)
    keep[ends[:-1]] = True
    numbers, valid = parse_some_numbers(chars[keep].tobytes().translate(_BLANKS_TO_SPACE, b",").decode("ascii"))
    if not valid.all():
        return None
    first = chars[starts - 1] == 10  # each line's 's:N'
    first[0] = True
    line_of_word = np.cumsum(first) - 1
    loop_steps = numbers[first]
    if loop_steps.max() >= 2**53:
        return None  # digits a float cannot hold exactly: int() of them, line by line
    pairs = ~first
    code_of_pair = key_codes(chars, starts[pairs], lengths[pairs])
    new_key = np.flatnonzero(np.diff(np.maximum.accumulate(code_of_pair), prepend=-1) > 0)  # first use of each
    pair_starts = starts[pairs]
    keys = [text[a:a + n] for a, n in zip(pair_starts[new_key].tolist(), lengths[pairs][new_key].tolist(), strict=True)]
    return keys, code_of_pair, line_of_word[pairs], numbers[pairs], loop_steps.astype(np.int64)


def detect_llmc(window: str) -> bool:
    """A main.log (its first record is an ``s:N key:value`` line), llm.c console step lines, or the
    console of a run that died after its first validation (banner + ``val loss`` line)."""
    first = window.lstrip().split("\n", 1)[0]
    if MAIN_LINE.match(first):
        return True
    if STEP_LINE.search(window) or OLD_STEP_LINE.search(window):
        return True
    return bool(_BANNER.search(window) and VAL_LINE.search(window))


class LlmcReader(TextReader):
    name = "llmc"
    cache_version = 5  # 4: every line not of the main template read in its place, as line by line; 5: settings
    description = "llm.c main.log ('s:N trl:… tel:… eval:…') and train_gpt2 console output ('step N/M | loss …')"
    parser = LlmcParser

    def detect(self, window: str) -> bool:
        return detect_llmc(window)
