"""DeepSpeed and DeepSpeed-Chat console logs.

The DeepSpeed engine prints, on rank 0 and every ``steps_per_print`` steps::

    [2023-04-18 01:46:59,142] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=6, lr=[9.6e-06, 9.6e-06], mom=[…]
    [2023-04-18 01:46:59,171] [INFO] [timer.py:199:stop] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=173.4, CurrSamplesPerSec=171.9, MemAllocated=3.96GB, MaxMemAllocated=22.95GB

and, for fp16, ``OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768``
(or ``Overflow detected. Skipping step. …`` in newer versions) with no step.
Those lines are counted at the NEXT logged step (``overflow_skips``: how many
skip messages since the previous logged step; ``loss_scale``: the scale they
left), which is where DeepSpeed's own ``skipped=`` count shows them.

DeepSpeed-Chat adds evaluation lines (``ppl: …``; ``chosen: …, rejected: …, loss: …``;
``chosen_last_scores (higher is better) : …, acc (higher is better) : …``), RLHF
step lines (``epoch: 0|step: 3|ppo_ep: 1|act_loss: …|cri_loss: …|unsuper_loss: …``,
``average reward score: …``, ``|E2E latency=3.9s |…|CurSamplesPerSec=16.5 |…``) and
per-micro-batch throughput lines (``Model Parameters: 0.331 B, Latency: 0.14s, …``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from tanalyze.readers._lines import Chunk
from tanalyze.readers._textparse import NAN, NUMBER, TextParser, parse_timestamp, to_float
from tanalyze.readers._textreader import TextReader
from tanalyze.readers.generic_text import GenericRules

__all__ = ["DeepSpeedEngineLines", "DeepSpeedParser", "DeepSpeedReader", "detect_deepspeed"]

DS_STEP = re.compile(
    r"(?:\[Rank (-?\d+)\] )?step=(\d+), skipped=(\d+), lr=\[([^\]\n]*)\](?:, mom=\[[^\n]*\])?[ \t]*$", re.M
)
DS_TIMER = re.compile(
    r"\] (?:epoch=(\d+)/micro_step=(\d+)/global_step=(\d+)|(\d+)/(\d+)), ((?:\w+=[^,\n]*(?:, |$))+)", re.M
)
DS_OVERFLOW = re.compile(
    rf"(?:OVERFLOW! Rank (\d+) Skipping step|Overflow detected\. Skipping step)\. Attempted loss scale: ({NUMBER})"
    rf"(?:, reducing to ({NUMBER})|, but hysteresis is \d+\. Reducing hysteresis to \d+)?"
)
_TIMER_PAIR = re.compile(rf"(\w+)=({NUMBER})(GB|MB)?")

EVAL_HEADER = re.compile(r"^\*{5} Evaluating (\w+), Epoch (\d+)/(\d+) \*{5}[ \t]*$", re.M)
BEGIN_EPOCH = re.compile(r"^Beginning of Epoch (\d+)/(\d+), Total (Micro|Generation) Batches (\d+)[ \t]*$", re.M)
PPL = re.compile(rf"^ppl: ({NUMBER})[ \t]*$", re.M)
CHOSEN = re.compile(rf"^chosen: ({NUMBER}), rejected: ({NUMBER})(?:, loss: ({NUMBER}))?[ \t]*$", re.M)
CHOSEN_LAST = re.compile(
    rf"^chosen_last_scores \(higher is better\) : ({NUMBER}), acc \(higher is better\) : ({NUMBER})[ \t]*$", re.M
)
EPOCH_LOSS = re.compile(rf"^Epoch (\d+)/(\d+) with loss ({NUMBER})[ \t]*$", re.M)
PPO = re.compile(r"^epoch: (\d+)\|step: (\d+)\|ppo_ep: (\d+)\|([^\n]*)$", re.M)
REWARD = re.compile(rf"^average reward score: ({NUMBER})[ \t]*$", re.M)
E2E = re.compile(r"^\|E2E latency=([^\n]*)$", re.M)
THROUGHPUT = re.compile(
    rf"^Model Parameters: [^,\n]*, Latency: ({NUMBER})s, TFLOPs: ({NUMBER}), Samples/sec: ({NUMBER}), "
    rf"Time/seq ({NUMBER})s(?:, [^\n]*)?$",
    re.M,
)
_EQ_PAIR = re.compile(rf"([A-Za-z][\w /]*?)=\s*({NUMBER})")


def _wall(chunk: Chunk, pos: int) -> float:
    start = chunk.text.rfind("\n", 0, pos) + 1
    if chunk.text.startswith("[", start):
        return parse_timestamp(chunk.text[start + 1 : start + 24])
    return NAN


class DeepSpeedEngineLines:
    """Mixin: the DeepSpeed engine's step, timer and overflow lines (``_init_deepspeed`` first).

    Host parsers call :meth:`_flush_overflows` with the step of each line that
    carries one, so that pending overflow messages land on the next logged step.
    """

    deepspeed_patterns = ((DS_STEP, "ds_step"), (DS_TIMER, "ds_timer"), (DS_OVERFLOW, "ds_overflow"))

    def _init_deepspeed(self) -> None:
        self._ds_last_step: int | None = None
        self._ds_engine = 0
        self._ds_engines = 1
        self._ds_last_timer: int | None = None
        self._ds_timer_engine = 0
        self._ds_grad_accum: float | None = None
        self._pending_scale: float | None = None
        self._pending_skips = 0
        self._pending_wall = NAN
        self._overflow_total = 0
        self._overflow_at_end = 0
        self._last_flush: tuple[int, int, int, int] | None = None  # step, rank, row of skips, row of scale

    def _on_ds_step(self, m: re.Match[str], chunk: Chunk) -> None:
        rank = int(m.group(1)) if m.group(1) is not None else -1
        step, skipped = int(m.group(2)), int(m.group(3))
        if step == self._ds_last_step:
            self._ds_engine += 1  # a second engine (RLHF actor + critic) logging the same step
            self._ds_engines = max(self._ds_engines, self._ds_engine + 1)
        else:
            self._ds_engine = 0
        self._ds_last_step = step
        prefix = f"engine{self._ds_engine}/" if self._ds_engine else ""
        wall = _wall(chunk, m.start())
        pairs = [(prefix + "skipped", float(skipped))]
        lrs = [to_float(v) for v in m.group(4).split(",") if v.strip()]
        if lrs and lrs[0] is not None:
            pairs.append((prefix + "lr", lrs[0]))
        self.mark(chunk, m.start())  # type: ignore[attr-defined]
        if not self._ds_engine:
            self._flush_overflows(step, rank)
            self.anchor(step, chunk, m.start(), rank=rank)  # type: ignore[attr-defined]
        self.rows.add_pairs(pairs, step, rank=rank, wall=wall)  # type: ignore[attr-defined]

    def _on_ds_timer(self, m: re.Match[str], chunk: Chunk) -> None:
        if m.group(3) is not None:
            micro, step = int(m.group(2)), int(m.group(3))
            if step and m.group(1) == "0":  # micro_step restarts every epoch; global_step does not
                self._ds_grad_accum = micro / step
        else:
            step = int(m.group(5))
        if step == self._ds_last_timer:
            self._ds_timer_engine += 1
        else:
            self._ds_timer_engine = 0
        self._ds_last_timer = step
        prefix = f"engine{self._ds_timer_engine}/" if self._ds_timer_engine else ""
        pairs = []
        for name, value, unit in _TIMER_PAIR.findall(m.group(6)):
            number = to_float(value)
            if number is not None:
                pairs.append((f"{prefix}{name} ({unit})" if unit else prefix + name, number))
        if pairs:
            self.mark(chunk, m.start())  # type: ignore[attr-defined]
            self._flush_overflows(step, -1)
            self.rows.add_pairs(pairs, step, wall=_wall(chunk, m.start()))  # type: ignore[attr-defined]

    def _on_ds_overflow(self, m: re.Match[str], chunk: Chunk) -> None:
        attempted = to_float(m.group(2))
        reduced = to_float(m.group(3)) if m.group(3) else None
        self._pending_scale = reduced if reduced is not None else attempted
        self._pending_skips += 1
        self._pending_wall = _wall(chunk, m.start())
        self._overflow_total += 1
        self.mark(chunk, m.start())  # type: ignore[attr-defined]

    def _flush_overflows(self, step: int, rank: int = -1) -> None:
        if not self._pending_skips:
            return
        rows = self.rows  # type: ignore[attr-defined]
        last = self._last_flush
        if last is not None and last[:2] == (step, rank) and last[3] >= 0:
            # a second flush at the same step (two line kinds carry it): add up, keep the newest scale
            rows.values[last[2]] += self._pending_skips
            if self._pending_scale is not None:
                rows.values[last[3]] = self._pending_scale
        else:
            rows.add("overflow_skips", step, float(self._pending_skips), rank=rank, wall=self._pending_wall)
            scale_row = -1
            if self._pending_scale is not None:
                rows.add("loss_scale", step, self._pending_scale, rank=rank, wall=self._pending_wall)
                scale_row = len(rows) - 1
            self._last_flush = (step, rank, len(rows) - 1 - (scale_row >= 0), scale_row)
        self._pending_skips = 0
        self._pending_scale = None

    def _finish_deepspeed(self) -> list[str]:
        notes = []
        if self._pending_skips:
            self._overflow_at_end = self._pending_skips
            step = self.current_step(default=0)  # type: ignore[attr-defined]
            last = self._last_flush
            self._flush_overflows(step, last[1] if last is not None and last[0] == step else -1)
        if self._overflow_total:
            tail = (
                f" ({self._overflow_at_end} after the last logged step, counted at it)" if self._overflow_at_end else ""
            )
            notes.append(
                f"{self._overflow_total:,} fp16 overflow (skipped step) message(s): each is counted at the next "
                f"logged step in 'overflow_skips', with the loss scale it left in 'loss_scale'{tail}"
            )
        if self._ds_engines > 1:
            notes.append(
                f"{self._ds_engines} DeepSpeed engines log the same steps (e.g. RLHF actor and critic): "
                "the second one's tags are prefixed 'engine1/'"
            )
        return notes


class DeepSpeedParser(DeepSpeedEngineLines, GenericRules, TextParser):
    """DeepSpeed engine lines, DeepSpeed-Chat lines, and the generic shapes scripts add."""

    family = "deepspeed"
    lookalike = re.compile(
        r"step=\d+, skipped=|OVERFLOW!|Overflow detected|^ppl:|^chosen|^epoch: \d+\|step:|^average reward score"
        r"|^Model Parameters:|^\|E2E latency",
        re.M,
    )
    patterns = (
        *DeepSpeedEngineLines.deepspeed_patterns,
        (EVAL_HEADER, "eval_header"),
        (BEGIN_EPOCH, "begin_epoch"),
        (PPL, "ppl"),
        (CHOSEN, "chosen"),
        (CHOSEN_LAST, "chosen_last"),
        (EPOCH_LOSS, "epoch_loss"),
        (PPO, "ppo"),
        (REWARD, "reward"),
        (E2E, "e2e"),
        (THROUGHPUT, "throughput"),
        *GenericRules.generic_patterns,
    )

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._init_deepspeed()
        self._init_generic()
        self._eval_epoch: int | None = None
        self._epochs_begun = 0
        self._epoch_batches: int | None = None
        self._batch_kind = "Micro"
        self._ppo_step: int | None = None
        self._ppo_batches: int | None = None
        self._ppo_inner = 1
        self._eval_rows = 0
        self._throughput: list[tuple[float, float, float, float]] = []

    # -- DeepSpeed-Chat evaluation ---------------------------------------------------------------
    def _on_eval_header(self, m: re.Match[str], chunk: Chunk) -> None:
        self._eval_epoch = int(m.group(2))
        self.mark(chunk, m.start())

    def _on_begin_epoch(self, m: re.Match[str], chunk: Chunk) -> None:
        self._epochs_begun += 1
        self._batch_kind = m.group(3)
        if m.group(3) == "Micro":
            self._epoch_batches = int(m.group(4))
        else:
            self._ppo_batches = int(m.group(4))
        self.mark(chunk, m.start())

    def _eval_step(self) -> int:
        """Step of an evaluation: epochs completed × steps per epoch when known, else the last logged step."""
        # DeepSpeed-Chat evaluates before training and after each epoch: after "Beginning of Epoch k"
        # lines, k epochs are done when the next evaluation comes.
        if self._epoch_batches and self._ds_grad_accum:
            return round(self._epochs_begun * self._epoch_batches / self._ds_grad_accum)
        return self.current_step(default=0) if self._epochs_begun else 0

    def _eval(self, pairs: list[tuple[str, float]], chunk: Chunk, pos: int) -> None:
        self.mark(chunk, pos)
        epoch = float(self._eval_epoch) if self._eval_epoch is not None else NAN
        self._eval_rows += 1
        self.rows.add_pairs(pairs, self._eval_step(), epoch=epoch)

    def _on_ppl(self, m: re.Match[str], chunk: Chunk) -> None:
        self._eval([("eval_ppl", float(m.group(1)))], chunk, m.start())

    def _on_chosen(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = [("eval_chosen", float(m.group(1))), ("eval_rejected", float(m.group(2)))]
        if m.group(3) is not None:
            pairs.append(("eval_loss", float(m.group(3))))
        self._eval(pairs, chunk, m.start())

    def _on_chosen_last(self, m: re.Match[str], chunk: Chunk) -> None:
        self._eval([("eval_chosen_last_scores", float(m.group(1))), ("eval_acc", float(m.group(2)))], chunk, m.start())

    def _on_epoch_loss(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self.rows.add("epoch_loss", self._eval_step(), float(m.group(3)), epoch=float(m.group(1)))

    # -- DeepSpeed-Chat RLHF -----------------------------------------------------------------------
    def _on_ppo(self, m: re.Match[str], chunk: Chunk) -> None:
        epoch, inner = int(m.group(1)), int(m.group(3))
        step = epoch * self._ppo_batches + int(m.group(2)) if self._ppo_batches else int(m.group(2))
        self._ppo_inner = max(self._ppo_inner, inner)
        pairs = []
        for segment in m.group(4).split("|"):
            name, _, value = segment.partition(":")
            number = to_float(value)
            if name.strip() and number is not None:
                pairs.append((name.strip(), number))
        self.mark(chunk, m.start())
        self._ppo_step = step
        self._flush_overflows(step)
        self.anchor(step, chunk, m.start())
        self.rows.add_pairs(pairs, step, epoch=float(epoch))

    def _on_reward(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self.rows.add("average reward score", self.current_step(), float(m.group(1)))

    def _on_e2e(self, m: re.Match[str], chunk: Chunk) -> None:
        pairs = [(name.strip(), float(value)) for name, value in _EQ_PAIR.findall("E2E latency=" + m.group(1))]
        if pairs:
            self.mark(chunk, m.start())
            self.rows.add_pairs(pairs, self.current_step())

    def _on_throughput(self, m: re.Match[str], chunk: Chunk) -> None:
        self.mark(chunk, m.start())
        self._throughput.append(tuple(float(g) for g in m.groups()))  # type: ignore[arg-type]

    def finish(self) -> None:
        notes = self._finish_deepspeed()
        if self._throughput:
            accum = self._ds_grad_accum or 1.0
            by_step: dict[int, tuple[float, float, float, float]] = {}
            for index, values in enumerate(self._throughput, start=1):
                by_step[math.ceil(index / accum - 1e-9)] = values  # the last micro-batch of a step wins
            for step, (latency, tflops, samples, per_seq) in by_step.items():
                self.rows.add_pairs(
                    [("Latency", latency), ("TFLOPs", tflops), ("Samples/sec", samples), ("Time/seq", per_seq)], step
                )
            source = "the timer lines" if self._ds_grad_accum else "assumed, no timer lines"
            notes.append(
                f"{len(self._throughput):,} per-micro-batch throughput line(s) ('Model Parameters: …') carry no step: "
                f"step = ceil(line count / gradient accumulation {accum:g} ({source})); the last micro-batch of "
                f"each step is kept ({len(by_step):,} step(s))"
            )
        if self._eval_rows:
            how = (
                "epochs completed × steps per epoch ('Total Micro Batches' / gradient accumulation)"
                if self._epoch_batches and self._ds_grad_accum
                else "the last logged DeepSpeed step"
            )
            notes.append(f"{self._eval_rows} DeepSpeed-Chat evaluation line(s) carry no step: keyed by {how}")
        if self._ppo_batches:
            notes.append(
                f"RLHF step lines: step = epoch × {self._ppo_batches} generation batches + the line's step; "
                "reward and latency lines are keyed by the step line before them"
            )
        if self._ppo_inner > 1:
            notes.append(f"{self._ppo_inner} PPO epochs per step: the last one's losses are kept")
        self.notes[:0] = notes + self._generic_notes()


_LAUNCHER = re.compile(r"deepspeed\.launcher\.launch|\[launch\.py:\d+:main\]|DeepSpeed info: version=")


def detect_deepspeed(window: str) -> bool:
    if DS_STEP.search(window) or DS_OVERFLOW.search(window) or PPO.search(window):
        return True
    if EVAL_HEADER.search(window) or CHOSEN_LAST.search(window):
        return True
    return bool(_LAUNCHER.search(window))


class DeepSpeedReader(TextReader):
    name = "deepspeed"
    description = "DeepSpeed / DeepSpeed-Chat console logs (step=…, skipped=…; OVERFLOW; ppl/reward/PPO lines)"
    parser = DeepSpeedParser

    def detect(self, window: str) -> bool:
        return detect_deepspeed(window)
