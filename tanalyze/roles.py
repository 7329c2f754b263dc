"""Tag → role: which logged curve is the training loss, the validation loss, the learning rate, ….

Analyzers ask for roles, never for tag names. Frameworks spell the same thing
many ways (``train/loss``, ``Loss/train``, ``loss``, ``train_loss_step``,
``lm loss``, ``eval_loss``, ``val/box_loss`` …); :func:`resolve_roles` reads a
run's tags, scores every candidate by how clearly its name says what it is,
breaks ties by how many points it has, and records what it rejected and why.

Names are compared as lower-case word lists: ``Loss/train``,
``train_loss`` and ``trainLoss`` all read ``train loss``.

Losses made of components without a total (Ultralytics ``train/box_loss``,
``train/cls_loss``, ``train/dfl_loss``) become one role whose curve is the sum
of the components at the steps they share; the verdict also judges each
component as its own curve. The losses of a GAN (``loss/G``, ``loss/D``,
``loss_G_GAN``, ``loss_D_real`` …) are never summed: the generator's is the
training loss and :attr:`Roles.adversarial` names both sides. Nor are the loss terms of a
reinforcement-learning run (one whose tags only RL logs, :func:`reinforcement_signs`: PPO's ``approx_kl``,
TRPO's ``LossBefore``/``LossAfter``/``dLoss`` …): surrogate, value and entropy terms, or a surrogate before and
after an update, add up to nothing; one of them is the training loss, whose NaN/Inf alone counts. Such a run with
no reward takes a success rate (``rollout/success_rate``) as its reward. A split with no loss but a
perplexity (DeepSpeed-Chat's ``eval_ppl``) uses its logarithm as the loss.

Users override any role: ``roles={"val_loss": "my/val"}`` (a tag, a tuple of
tags to sum, or ``None`` to switch the role off).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from tanalyze.curves import Curve
from tanalyze.errors import ConfigError

__all__ = ["ROLES", "RESOURCE_KINDS", "ResourceKind", "RoleAssignment", "Rejected", "Roles", "memory_unit",
           "reinforcement_signs", "resolve_roles", "resource_kind", "role_curve", "step_time_unit", "sum_curves",
           "tag_words"]

#: Every role, with what it means.
ROLES: Mapping[str, str] = MappingProxyType(  # read-only view of the role table
    {
        "train_loss": "training loss, step-level when both step- and epoch-level exist",
        "train_loss_epoch": "training loss averaged per epoch (recorded beside the step-level one)",
        "val_loss": "validation / evaluation loss",
        "learning_rate": "learning rate (first parameter group)",
        "grad_norm": "global gradient norm",
        "throughput": "training throughput (tokens/s, samples/s or steps/s)",
        "step_time": "time per training step / iteration",
        "gpu_memory": "GPU memory in use",
        "loss_scale": "fp16 dynamic loss scale",
        "skipped_steps": "optimizer steps skipped (overflow / NaN): indicator, counter or per-interval count",
        "attention_entropy": "attention entropy",
        "epoch": "epoch counter logged as a curve",
        "reward": "reward the policy earns (reinforcement learning; higher is better)",
        "policy_entropy": "entropy of the policy's outputs (reinforcement learning)",
    }
)

_VAL = {"val", "valid", "validation", "eval", "evaluation", "test", "dev", "holdout"}
_TRAIN = {"train", "training", "trn"}
_LOSS = {"loss", "losses"}
#: Names of objectives that are losses even without the word "loss" (lower is better).
_OBJECTIVE = {"nll", "ce", "xent", "crossentropy", "mse", "rmse", "mae", "bpc"}
#: Words that make a "loss" tag something else: loss scale, metrics, summaries, config values.
_NOT_A_LOSS = {
    "scale", "scaler", "acc", "accuracy", "top1", "top5", "ppl", "perplexity", "hparam", "hparams", "hp",
    "weight", "weights", "coef", "lr", "rate", "time", "runtime", "flos", "ratio", "frac", "count", "num",
    "norm", "std", "min", "max", "diff", "delta", "best", "f1", "precision", "recall", "map", "auc",
    "bleu", "rouge1", "rouge2", "rougel", "rougelsum", "wer", "cer", "iou", "reward", "rewards", "score",
}
#: Words that qualify a loss without naming a different quantity.
_QUALIFIERS = _VAL | _TRAIN | _LOSS | {
    "step", "steps", "epoch", "total", "lm", "avg", "average", "mean", "value", "iter", "batch", "overall",
    "running", "smoothed", "on", "per", "objective", "main", "full", "sum", "at", "set", "split",
    "metrics", "metric", "scalars", "scalar", "charts", "chart", "summary", "model", "losses",
    "inner",  # fairseq's train_inner/…: the training stats of each logging interval within an epoch
    "language",  # Composer's metrics/train/LanguageCrossEntropy: the language model's
}


def tag_words(tag: str) -> tuple[str, ...]:
    """The lower-case words of a tag: ``"Loss/train"`` → ``("loss", "train")``, ``"memoryAllocated"`` → two words."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", tag)
    return tuple(w for w in re.split(r"[^0-9a-z]+", spaced.lower()) if w)


@dataclass(frozen=True)
class RoleAssignment:
    """The tag(s) chosen for one role. ``components`` has several tags when the role is their sum;
    ``log`` is set when the role is the logarithm of the tag (a loss from a perplexity)."""

    role: str
    tag: str
    components: tuple[str, ...]
    points: int
    source: str  # "auto" or "override"
    reason: str
    log: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "components": list(self.components),
            "points": self.points,
            "source": self.source,
            "reason": self.reason,
            "log": self.log,
        }


@dataclass(frozen=True)
class Rejected:
    """A candidate tag for a role that was not used, and why."""

    tag: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"tag": self.tag, "reason": self.reason}


@dataclass(frozen=True)
class Roles:
    """What each role of one run resolved to, what was rejected, and notes for the user.

    Treat the mappings as read-only (they are plain dicts so that results pickle).
    """

    assigned: Mapping[str, RoleAssignment]
    rejected: Mapping[str, tuple[Rejected, ...]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    throughput_kind: str | None = None
    #: True when train and validation losses measure the same quantity, so their gap means something.
    losses_comparable: bool = True
    #: A GAN's training losses by side: ``{"generator": tags, "discriminator": tags}`` (empty otherwise).
    adversarial: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The tags that show a reinforcement-learning run (:func:`reinforcement_signs`; empty otherwise).
    reinforcement: tuple[str, ...] = ()

    def __contains__(self, role: object) -> bool:
        return role in self.assigned

    def __getitem__(self, role: str) -> RoleAssignment:
        return self.assigned[role]

    def tag(self, role: str) -> str | None:
        """The tag used for ``role`` (components joined with ``+``), or None."""
        found = self.assigned.get(role)
        return found.tag if found else None

    def tags(self) -> dict[str, str]:
        """Role → tag for every resolved role."""
        return {role: a.tag for role, a in self.assigned.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "roles": self.tags(),
            "assigned": {role: a.to_dict() for role, a in self.assigned.items()},
            "rejected": {role: [r.to_dict() for r in rs] for role, rs in self.rejected.items() if rs},
            "warnings": list(self.warnings),
            "throughput_kind": self.throughput_kind,
            "losses_comparable": self.losses_comparable,
            "adversarial": {side: list(tags) for side, tags in self.adversarial.items()},
            "reinforcement": list(self.reinforcement),
        }


@dataclass(frozen=True)
class _Candidate:
    tag: str
    rank: int  # lower is better
    points: int
    why: str
    group: tuple[str, ...] = ()  # component words, for losses


# --- per-role matchers: tag words -> (rank, why) or None -------------------------------------------------


def _loss_kind(words: tuple[str, ...], reinforcement: bool = False
               ) -> tuple[str, int, tuple[str, ...], str] | None:
    """For a loss tag: (split, rank, component words, level) — rank 1 a whole loss, 2 a named
    objective (nll, ce, rmse …), 3 a component (box, cls …). None when not a loss. In a reinforcement-learning
    run a value loss (``train/value_loss``, the critic's fit) is a component, not a loss's value."""
    words = _one_word_objectives(words)
    if reinforcement and "value" in words:
        words = tuple("vf" if w == "value" else w for w in words)  # (the value function's: no qualifier)
    ws = set(words)
    objective = ws & _OBJECTIVE
    if not (ws & _LOSS or objective) or ws & _NOT_A_LOSS:
        return None
    if ws & _LOSS and "scale" in ws:
        return None
    split = "val" if ws & _VAL else "train"
    level = "epoch" if "epoch" in ws else ("step" if ws & {"step", "inner"} else "")
    component = tuple(w for w in words if w not in _QUALIFIERS and not w.isdigit())
    if not component:
        return split, 1, (), level
    if set(component) <= _OBJECTIVE:
        return split, 2, component, level
    return split, 3, component, level


def _one_word_objectives(words: tuple[str, ...]) -> tuple[str, ...]:
    """``words`` with "cross", "entropy" as the one word "crossentropy" (``CrossEntropy``, ``cross_entropy``)."""
    if "cross" not in words:
        return words
    out: list[str] = []
    for word in words:
        if word == "entropy" and out and out[-1] == "cross":
            out[-1] = "crossentropy"
        else:
            out.append(word)
    return tuple(out)


def _match_lr(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    ws = set(words)
    joined = " ".join(words)
    named = "lr" in ws or "learning rate" in joined or any(re.fullmatch(r"lr\d+", w) for w in words)
    if not named or ws & _VAL:
        return None
    if ws & {"base", "min", "max", "initial", "init", "peak", "warmup", "decay", "scheduler"}:
        return 3, "a reference learning rate (base/min/max/warm-up), not the one in use"
    if joined in {"lr", "learning rate", "train lr", "train learning rate", "learningrate"}:
        return 1, "named learning rate"
    return 2, "learning rate of one parameter group"


def _match_grad_norm(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    joined = " ".join(words)
    if re.search(r"(grad|gradient|gradients) norm|gradnorm|grad l2|global norm|(^| )gnorm($| )", joined):
        if set(words) & {"clip", "clipped", "max", "layer", "layers"}:
            return 3, "a clipped/per-layer/limit gradient norm"
        return 1, "named gradient norm"
    if joined in {"total norm", "norm"}:
        return 2, "an unqualified norm"
    return None


_THROUGHPUT = [
    (r"tokens? (per )?(s|sec|second)|tok (per )?s|tokens?ps|tps|(^| )wps($| )", "tokens"),  # fairseq: words/s
    (r"samples? (per )?(s|sec|second)|samples?ps|sps|images? (per )?(s|sec|second)|img s|imgs s", "samples"),
    (r"(steps?|it|iters?|iterations?|batch(es)?) (per )?(s|sec|second)|(^| )ups($| )", "steps"),  # fairseq: updates/s
    (r"^throughput( |$)|(^| )throughput$", "samples"),
]


#: words of a counter that only grows (OLMo's ``throughput/total_tokens``): no rate, though filed under throughput
_COUNTER = {"total", "cumulative", "consumed", "seen", "count", "num"}


def _match_throughput(words: tuple[str, ...], tag: str) -> tuple[int, str, str] | None:
    ws = set(words)
    if ws & _VAL or resource_kind(tag) is not None:  # "…on_train_batch_start/cpu_percent" reads "batch s…"
        return None
    joined = " ".join(words)
    for pattern, kind in _THROUGHPUT:
        if re.search(rf"\b(?:{pattern})\b", joined):  # (whole words: "microbatch size" is no "batch/s")
            if pattern is _THROUGHPUT[-1][0] and ws & _COUNTER:  # (named throughput, but a count)
                return None
            return {"tokens": 1, "samples": 1, "steps": 2}[kind], f"{kind} per second", kind
    return None


def _match_step_time(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    ws = set(words)
    joined = " ".join(words)
    if ws & (_VAL | {"data", "eta", "epoch", "runtime", "total", "timestamp", "wall", "rank", "eval"}):
        return None
    if re.search(r"time per (iteration|iter|step|batch)|(iter|iteration|step|batch) time", joined) or joined in {
        "time ms", "time s", "iter ms", "step ms", "iteration ms", "dt", "dt ms",
    }:
        return 1, "time per iteration"
    if joined in {"time", "train time", "elapsed", "elapsed time"}:  # (a tabular log's clock is made per step first)
        return 2, "unqualified time (taken as time per logged iteration)"
    if joined in {"step avg", "step avg ms"}:  # modded-nanogpt: the training time so far over the steps so far
        return 3, "the average time per step since the start (smooth: a late slow-down shows less)"
    # "train time ms": modded-nanogpt's training clock so far, never a step's time
    return None  # component timers ("time (ms)/forward-compute") are not the step time


def _match_gpu_memory(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    ws = set(words)
    if not ws & {"memory", "mem", "vram"}:
        return None
    if _WANDB_GPU.match(tag) or tag.startswith(("system/", "system.")):  # W&B's system metrics, sampled on a
        return None  # timer (their "step" is seconds): judged against the wall clock by analysis/system.py
    if ws & {"cpu", "proc", "process", "host", "ram", "swap", "disk", "available", "availablemb"}:
        return None
    if " ".join(words) in {"system memory", "memory percent", "memory util"}:
        return None
    if "gpu" in ws and "memory" in ws and not ws & {"allocated", "reserved", "used", "mb", "gb", "bytes"}:
        return 3, "GPU memory utilisation (bus activity %), not memory in use"
    if ws & {"max", "peak", "reserved", "cached"}:
        return 2, "peak or reserved GPU memory"
    if ws & {"gpu", "cuda", "allocated", "used", "vram"} or words[0] in {"memory", "mem"} and len(words) > 1:
        return 1, "GPU memory in use"
    return 2, "unqualified memory (taken as GPU memory)"


def _match_loss_scale(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    joined = " ".join(words)
    if re.search(r"loss scale|cur scale|grad scale|scaler scale|amp scale|loss scaler", joined):
        return 1, "loss scale"
    return None


def _match_skipped(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    ws = set(words)
    if ws & {"skipped", "skip", "skips"} and not ws & {"data", "samples", "tokens", "batches"}:
        return (1, "skipped optimizer steps") if ws & {"iterations", "iteration", "iters", "steps", "step"} else (
            2, "skipped (unqualified)")
    return None


def _match_attention_entropy(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    ws = set(words)
    if ws & {"attn", "attention"} and ws & {"entropy", "ent"}:
        return 1, "attention entropy"
    return None


def _match_epoch(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    if words in {("epoch",), ("train", "epoch"), ("epochs",), ("trainer", "epoch")}:
        return 1, "epoch counter"
    return None


_REWARD = {"reward", "rewards", "rew"}
#: Words that make a reward tag something else: its spread, a preference pair of DPO or a reward model
#: (``rewards/chosen``, ``rewards/margins``, ``rewards/accuracies``), a coefficient, a loss or an error of
#: predicting one (``train/return_mse`` of a forecasting model).
_NOT_A_REWARD = {
    "std", "var", "min", "max", "frac", "zero", "clip", "clipped", "coef", "weight", "scale", "kl", "loss", "lr",
    "time", "chosen", "rejected", "margin", "margins", "acc", "accuracy", "accuracies", "count", "num",
    "error", "err", "pred", "predicted", "prediction", "target", "targets", *_OBJECTIVE,
}
#: Words that qualify a reward without naming another one (``rollout/ep_rew_mean``, ``critic/rewards/mean``).
_REWARD_QUALIFIERS = {
    "mean", "avg", "average", "episode", "episodic", "ep", "train", "training", "rollout", "env", "critic",
    "total", "score", "scores", "per", "step", "batch", "objective", "rlhf", "charts",
}


def _match_reward(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    ws = set(words)
    if ws & {"return", "returns"} and not ws & (_REWARD | _NOT_A_REWARD | _VAL):
        # an episode's return (CleanRL's charts/episodic_return): a reward summed over the episode; a tag
        # named reward is preferred (verl's critic/returns/mean are the value targets beside critic/rewards/mean)
        return 2, "an episode return"
    if not ws & _REWARD or ws & _NOT_A_REWARD:
        return None
    if ws & _VAL:
        return 3, "the reward of an evaluation"
    if ws - _REWARD - _REWARD_QUALIFIERS - {w for w in ws if w.isdigit()}:
        return 2, "a named or cumulative reward"
    return 1, "reward"


def _match_policy_entropy(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    ws = set(words)
    # (a cross-entropy is a loss, Composer's metrics/train/LanguageCrossEntropy: no policy's entropy)
    if "entropy" not in ws or ws & ({"attn", "attention", "loss", "coef", "weight", "std", "min", "max", "cross"} | _VAL):
        return None
    if ws - {"entropy", "actor", "policy", "mean", "objective", "train", "rollout", "avg"}:
        return 2, "an entropy"
    return 1, "policy entropy"


def _match_success_rate(words: tuple[str, ...], tag: str) -> tuple[int, str] | None:
    """A success rate (SB3's ``rollout/success_rate``, ``eval/success_rate``): the reward of a reinforcement-learning
    run that logged none (only such a run takes it, see :func:`resolve_roles`)."""
    ws = set(words)
    if "success" not in ws or ws & (_NOT_A_REWARD - {"frac"}):
        return None
    return (2, "the success rate of an evaluation") if ws & _VAL else (1, "a success rate (no reward logged)")


#: Names only reinforcement learning logs (tag words joined by spaces): a policy update's statistics (PPO's
#: ``approx_kl`` and ``clip_fraction``, ``approxkl``/``clipfrac``/``pg_clipfrac``; SB3's ``exploration_rate`` and
#: ``ent_coef``), its loss terms (``policy_gradient_loss``, ``pg_loss``, an actor's loss, a TD loss; rllab's and
#: garage's ``LossBefore``/``LossAfter``: TRPO's surrogate before and after an update). A policy and a value loss
#: alone are not enough (AlphaZero-style training fits both heads as supervised losses).
_RL_SIGN = re.compile(r"\b(?:approx ?kl|clip ?frac(?:tion)?|policy gradient loss|pg loss|td loss|actor loss|"
                      r"loss (?:before|after)|exploration rate|ent coef)\b")


def reinforcement_signs(tags: Iterable[str]) -> tuple[str, ...]:
    """The tags among ``tags`` that only a reinforcement-learning run logs (see ``_RL_SIGN``; and SB3 A2C's
    ``explained_variance`` beside a ``value_loss``), sorted; empty for any other run."""
    tags = [str(t) for t in tags]
    joined = {t: " ".join(tag_words(t)) for t in tags}
    signs = {t for t, words in joined.items() if _RL_SIGN.search(words)}
    if any(re.search(r"\bvalue loss\b", words) for words in joined.values()):
        signs |= {t for t, words in joined.items() if re.search(r"\bexplained variance\b", words)}
    return tuple(sorted(signs))


_SIMPLE = {
    "learning_rate": _match_lr,
    "grad_norm": _match_grad_norm,
    "step_time": _match_step_time,
    "gpu_memory": _match_gpu_memory,
    "loss_scale": _match_loss_scale,
    "skipped_steps": _match_skipped,
    "attention_entropy": _match_attention_entropy,
    "epoch": _match_epoch,
    "reward": _match_reward,
    "policy_entropy": _match_policy_entropy,
}


def _counts(source: pd.DataFrame | Mapping[str, int] | Iterable[str]) -> dict[str, int]:
    if isinstance(source, pd.DataFrame):
        if source.empty:
            return {}
        finite = np.isfinite(source["value"].to_numpy(dtype=np.float64))
        counts = pd.Series(finite).groupby(source["tag"].to_numpy(), sort=False).sum()
        return {str(tag): int(n) for tag, n in counts.items()}
    if isinstance(source, Mapping):
        return {str(k): int(v) for k, v in source.items()}
    return {str(t): 1 for t in source}  # names only: every tag counts as present


def _pick(candidates: list[_Candidate]) -> tuple[_Candidate | None, list[Rejected]]:
    """Best rank, then most points, then shortest name; every other candidate is rejected with a reason."""
    if not candidates:
        return None, []
    ordered = sorted(candidates, key=lambda c: (c.rank, -c.points, len(c.tag), c.tag))
    best = ordered[0]
    rejected = []
    for c in ordered[1:]:
        if c.rank > best.rank:
            reason = f"{c.why}; a more specific tag exists ({best.tag})"
        elif c.points < best.points:
            reason = f"fewer points ({c.points:,}) than {best.tag} ({best.points:,})"
        else:
            reason = f"same kind and size as {best.tag}, which sorts first"
        rejected.append(Rejected(c.tag, reason))
    return best, rejected


#: Words naming the generator / the discriminator (critic) of a GAN in a loss tag.
_GENERATOR = {"g", "gen", "generator", "netg"}
_DISCRIMINATOR = {"d", "disc", "discriminator", "critic", "netd"}


def _adversarial_sides(parts: list[tuple[str, int, tuple[str, ...], str]]) -> dict[str, tuple[str, ...]]:
    """Generator and discriminator tags when every loss component names one side (and both sides exist)."""
    sides: dict[str, list[str]] = {"generator": [], "discriminator": []}
    for tag, _, component, _ in parts:
        words = set(component) | set(tag_words(tag))
        g, d = bool(words & _GENERATOR), bool(words & _DISCRIMINATOR)
        if g == d:
            return {}
        sides["generator" if g else "discriminator"].append(tag)
    if not sides["generator"] or not sides["discriminator"]:
        return {}
    return {side: tuple(sorted(tags)) for side, tags in sides.items()}


def _resolve_losses(
    counts: dict[str, int], reinforcement: bool = False,
) -> tuple[dict[str, RoleAssignment], dict[str, list[Rejected]], bool, dict[str, tuple[str, ...]]]:
    by_split: dict[str, list[tuple[str, int, tuple[str, ...], str]]] = {"train": [], "val": []}
    for tag in counts:
        kind = _loss_kind(tag_words(tag), reinforcement)
        if kind is not None:
            split, rank, component, level = kind
            by_split[split].append((tag, rank, component, level))
    by_split = {split: _whole_within_a_namespace(entries) for split, entries in by_split.items()}
    assigned: dict[str, RoleAssignment] = {}
    rejected: dict[str, list[Rejected]] = {"train_loss": [], "train_loss_epoch": [], "val_loss": []}
    groups: dict[str, tuple[str, ...]] = {}
    adversarial: dict[str, tuple[str, ...]] = {}
    for split, role in (("train", "train_loss"), ("val", "val_loss")):
        entries = by_split[split]
        whole = [e for e in entries if e[1] < 3]
        parts = [e for e in entries if e[1] == 3]
        if split == "train":
            epoch_level = [e for e in whole if e[3] == "epoch"]
            step_level = [e for e in whole if e[3] != "epoch"]
            if step_level and epoch_level:
                best_epoch, rej = _pick([_Candidate(t, r, counts[t], "epoch-level loss") for t, r, _, _ in epoch_level])
                assigned["train_loss_epoch"] = RoleAssignment(
                    "train_loss_epoch", best_epoch.tag, (best_epoch.tag,), best_epoch.points, "auto",
                    "epoch-level training loss"
                )
                rejected["train_loss_epoch"] += rej
                for t, _, _, _ in epoch_level:
                    rejected[role].append(Rejected(t, "epoch-level; the step-level loss is preferred"))
                whole = step_level
        if whole:
            cands = [
                _Candidate(t, r, counts[t], "a named objective" if r == 2 else "whole loss", c)
                for t, r, c, _ in whole
            ]
            best, rej = _pick(cands)
            assert best is not None
            assigned[role] = RoleAssignment(
                role, best.tag, (best.tag,), best.points, "auto",
                "named loss" if best.rank == 1 else f"named objective ({' '.join(best.group)})",
            )
            groups[role] = best.group
            rejected[role] += rej
            rejected[role] += [Rejected(t, "a loss component; a whole loss exists") for t, *_ in parts]
        elif parts:
            usable = [p for p in parts if counts[p[0]] > 0]
            sides = _adversarial_sides(usable) if split == "train" and len(usable) >= 2 and not reinforcement else {}
            if reinforcement and len(usable) >= 2:  # RL loss terms: never summed, one alone for its NaN/Inf
                ordered = sorted(usable, key=lambda p: (_rl_term_order(p[0]), -counts[p[0]], len(p[0]), p[0]))
                tag = ordered[0][0]
                assigned[role] = RoleAssignment(
                    role, tag, (tag,), counts[tag], "auto",
                    "one loss term of a reinforcement-learning run (its terms are never summed: a surrogate, value or "
                    "entropy term, or a surrogate before and after an update, add up to nothing)")
                groups[role] = ordered[0][2]
                rejected[role] += [Rejected(p[0], "another loss term of a reinforcement-learning run (never summed)")
                                   for p in ordered[1:]]
            elif sides:  # a GAN: the two sides play against each other; their sum means nothing
                tags = sides["generator"]
                assigned[role] = RoleAssignment(
                    role, " + ".join(tags), tags, min(counts[t] for t in tags), "auto",
                    "GAN generator loss (the discriminator's is judged beside it, never summed with it)",
                )
                groups[role] = ("generator",)
                adversarial = sides
                rejected[role] += [Rejected(t, "the GAN's discriminator loss (judged beside the generator's)")
                                   for t in sides["discriminator"]]
            elif len(usable) >= 2:
                tags = tuple(sorted(p[0] for p in usable))
                assigned[role] = RoleAssignment(
                    role, " + ".join(tags), tags, min(counts[t] for t in tags), "auto",
                    "sum of loss components (no total logged)",
                )
                groups[role] = tuple(sorted("+".join(p[2]) for p in usable))
            elif usable:
                tag = usable[0][0]
                assigned[role] = RoleAssignment(role, tag, (tag,), counts[tag], "auto", "the only loss component")
                groups[role] = usable[0][2]
    # No loss at all for a split, but a perplexity: its logarithm is the (cross-entropy) loss.
    for split, role in (("train", "train_loss"), ("val", "val_loss")):
        if role in assigned:
            continue
        cands = []
        for tag in counts:
            ws = set(tag_words(tag))
            if ws & {"ppl", "perplexity"} and ("val" if ws & _VAL else "train") == split and counts[tag] > 0:
                rank = 2 if "epoch" in ws else 1
                cands.append(_Candidate(tag, rank, counts[tag], "a perplexity"))
        best, rej = _pick(cands)
        if best is not None:
            assigned[role] = RoleAssignment(role, f"log({best.tag})", (best.tag,), best.points, "auto",
                                            "log of a perplexity (no loss logged)", log=True)
            groups[role] = ("ppl",)
            rejected[role] += rej
    comparable = True
    if "train_loss" in assigned and "val_loss" in assigned:
        if groups.get("train_loss", ()) != groups.get("val_loss", ()) and not adversarial:
            _pair_like_with_like(by_split["train"], counts, assigned, rejected, groups)
        comparable = groups.get("train_loss", ()) == groups.get("val_loss", ())
    return assigned, rejected, comparable, adversarial


#: Words of a reinforcement-learning loss term that is the policy's (preferred as the one training loss) …
_POLICY_TERM = {"policy", "actor", "pg", "pi", "surrogate"}
#: … and of one that is a difference of two (rllab's ``dLoss``: the surrogate's change over an update)
_DIFFERENCE_TERM = {"d", "delta", "change", "improvement"}


def _rl_term_order(tag: str) -> int:
    """0 for a policy's loss term, 2 for a difference of two, 1 for any other."""
    words = set(tag_words(tag))
    return 0 if words & _POLICY_TERM else 2 if words & _DIFFERENCE_TERM else 1


def _whole_within_a_namespace(entries: list[tuple[str, int, tuple[str, ...], str]]
                               ) -> list[tuple[str, int, tuple[str, ...], str]]:
    """Loss components of one split that all share some words (``forget_train/it_coarse_loss``, ``…/it_fine_loss``,
    ``…/it_train_loss``): those words are their namespace, and the one with no other word is the whole loss."""
    if len(entries) < 2 or any(rank < 3 for _, rank, _, _ in entries):
        return entries
    shared = set.intersection(*(set(component) for _, _, component, _ in entries))
    if not shared:
        return entries
    bare = [tag for tag, _, component, _ in entries if set(component) <= shared]
    if len(bare) != 1:
        return entries
    return [(tag, 1, (), level) if tag == bare[0] else (tag, rank, component, level)
            for tag, rank, component, level in entries]


def _pair_like_with_like(train: list[tuple[str, int, tuple[str, ...], str]], counts: dict[str, int],
                         assigned: dict[str, RoleAssignment], rejected: dict[str, list[Rejected]],
                         groups: dict[str, tuple[str, ...]]) -> None:
    """When the validation loss is another kind of loss than the training loss chosen (Composer's
    ``metrics/eval/LanguageCrossEntropy`` against ``loss/train/total``) and a training loss of its kind was
    logged too (``metrics/train/LanguageCrossEntropy``), that one is the training loss: the two are compared."""
    wanted = groups["val_loss"]
    if assigned["val_loss"].log or len(assigned["train_loss"].components) != 1:
        return
    same = [_Candidate(tag, rank, counts[tag], "the validation loss's kind", component)
            for tag, rank, component, level in train
            if rank < 3 and component == wanted and level != "epoch" and counts[tag] > 0]
    best, _ = _pick(same)
    if best is None:
        return
    previous = assigned["train_loss"]
    assigned["train_loss"] = RoleAssignment(
        "train_loss", best.tag, (best.tag,), best.points, "auto",
        f"the training loss of the validation loss's kind ({' '.join(wanted)}), so that the two compare")
    groups["train_loss"] = wanted
    rejected["train_loss"] = [r for r in rejected["train_loss"] if r.tag != best.tag] + [
        Rejected(previous.tag, f"another kind of loss than the validation loss {assigned['val_loss'].tag}; "
                               f"{best.tag} is of its kind")]


def resolve_roles(
    source: pd.DataFrame | Mapping[str, int] | Iterable[str],
    overrides: Mapping[str, str | tuple[str, ...] | None] | None = None,
) -> Roles:
    """Resolve the roles of one run from its tags.

    Args:
        source: the tidy table of one run, a mapping tag → number of finite points,
            or just the tag names.
        overrides: role → tag (or tuple of tags to sum, or None to switch the role off).

    Raises:
        ConfigError: an override names an unknown role.
    """
    counts = _counts(source)
    points_known = isinstance(source, pd.DataFrame | Mapping)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(ROLES))
    if unknown:
        raise ConfigError(f"unknown role(s) {', '.join(map(repr, unknown))}; known roles: {', '.join(ROLES)}")

    signs = reinforcement_signs(counts)
    assigned, rejected_lists, comparable, adversarial = _resolve_losses(counts, bool(signs))
    throughput_kind = None
    for role, matcher in _SIMPLE.items():
        cands = []
        for tag in counts:
            hit = matcher(tag_words(tag), tag)
            if hit:
                cands.append(_Candidate(tag, hit[0], counts[tag], hit[1]))
        best, rej = _pick(cands)
        if best is not None:
            assigned[role] = RoleAssignment(role, best.tag, (best.tag,), best.points, "auto", best.why)
        rejected_lists[role] = rej
    if signs and "reward" not in assigned:  # a reinforcement-learning run with no reward: its success rate
        cands = [_Candidate(tag, hit[0], counts[tag], hit[1]) for tag in counts
                 if (hit := _match_success_rate(tag_words(tag), tag))]
        best, rej = _pick(cands)
        if best is not None:
            assigned["reward"] = RoleAssignment("reward", best.tag, (best.tag,), best.points, "auto", best.why)
        rejected_lists["reward"] = rejected_lists.get("reward", []) + rej
    tp = []
    for tag in counts:
        hit = _match_throughput(tag_words(tag), tag)
        if hit:
            tp.append((_Candidate(tag, hit[0], counts[tag], hit[1]), hit[2]))
    # Throughput is judged within the run: the curve with the most points wins over the better name.
    tp.sort(key=lambda c: (-c[0].points, c[0].rank, c[0].tag))
    if points_known:  # a throughput logged once (a run summary) is not a curve
        rejected_lists["throughput"] = [Rejected(c.tag, f"only {c.points} point(s): a summary, not a curve")
                                        for c, _ in tp if c.points < 3]
        tp = [c for c in tp if c[0].points >= 3]
    if tp:
        best_tp, throughput_kind = tp[0]
        assigned["throughput"] = RoleAssignment("throughput", best_tp.tag, (best_tp.tag,), best_tp.points, "auto", best_tp.why)
        rejected_lists.setdefault("throughput", []).extend(
            Rejected(c.tag, f"fewer points than {best_tp.tag}") for c, _ in tp[1:])

    # A tag serves one role: the loss roles win over anything that also matched.
    used: dict[str, str] = {}
    for role in ROLES:
        found = assigned.get(role)
        if found is None:
            continue
        clash = [t for t in found.components if t in used]
        if clash:
            del assigned[role]
            rejected_lists.setdefault(role, []).append(Rejected(clash[0], f"already used as {used[clash[0]]}"))
            continue
        for t in found.components:
            used[t] = role

    warnings = []
    for role, wanted in overrides.items():
        if wanted is None:
            assigned.pop(role, None)
            continue
        tags = (wanted,) if isinstance(wanted, str) else tuple(wanted)
        missing = [t for t in tags if t not in counts]
        if missing:
            assigned.pop(role, None)
            warnings.append(
                f"role {role}: tag(s) {', '.join(map(repr, missing))} given as override not found in this run"
            )
            continue
        previous = assigned.get(role)
        if previous is not None and previous.components != tags:
            rejected_lists.setdefault(role, []).append(Rejected(previous.tag, "overridden by the user"))
        assigned[role] = RoleAssignment(
            role, " + ".join(tags), tags, min(counts[t] for t in tags), "override", "given by the user"
        )
        if role in ("train_loss", "val_loss"):
            comparable = True  # the user chose the pair
            if role == "train_loss":
                adversarial = {}  # the user chose the training loss
        if role == "throughput":
            hit = _match_throughput(tag_words(tags[0]), tags[0])
            throughput_kind = hit[2] if hit else "samples"

    for role, assignment in assigned.items():
        if assignment.points == 0 and counts:
            warnings.append(f"role {role}: tag {assignment.tag!r} has no finite points")
    ordered = {role: assigned[role] for role in ROLES if role in assigned}
    return Roles(
        assigned=ordered,
        rejected={r: tuple(v) for r, v in rejected_lists.items() if v},
        warnings=tuple(warnings),
        throughput_kind=throughput_kind if "throughput" in ordered else None,
        losses_comparable=comparable,
        adversarial=adversarial,
        reinforcement=signs,
    )


def step_time_unit(tag: str, curve: Curve) -> str:
    """Unit of a step-time curve: from its name (ms / s), else by size (over 50 → milliseconds)."""
    words = set(tag_words(tag))
    if words & {"ms", "millis", "milliseconds"}:
        return "step_time_ms"
    if words & {"s", "sec", "secs", "seconds"}:
        return "step_time_s"
    finite = curve.values[np.isfinite(curve.values)]
    return "step_time_ms" if finite.size and np.median(finite) > 50 else "step_time_s"


def memory_unit(tag: str, curve: Curve) -> str:
    """Unit of a GPU-memory curve: from its name, else by size (W&B's memoryAllocated is a percentage)."""
    words = set(tag_words(tag))
    if "allocated" in words and "system" in words or words & {"percent", "pct", "util", "utilization"}:
        return "percent"
    for unit, names in (("GiB", {"gib"}), ("GB", {"gb", "g"}), ("MiB", {"mib"}), ("MB", {"mb", "m"}),
                        ("bytes", {"bytes", "byte"})):
        if words & names:
            return unit
    finite = curve.values[np.isfinite(curve.values)]
    peak = float(np.max(finite)) if finite.size else 0.0
    return "bytes" if peak > 1e6 else ("MiB" if peak > 200 else "GiB")


#: System-metric kinds: what :func:`resource_kind` recognises, with the unit the values are in.
RESOURCE_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "gpu_util": "GPU utilisation, % of the sample time a kernel ran",
        "gpu_memory": "GPU memory in use, % of the device's capacity or bytes",
        "gpu_temp": "GPU temperature, °C",
        "gpu_power": "GPU power draw, W (or % of the power limit)",
        "gpu_clock": "GPU SM / graphics clock, MHz",
        "cpu": "CPU utilisation, %",
        "host_memory": "host (system) memory in use, %",
    }
)


@dataclass(frozen=True)
class ResourceKind:
    """What a system-metric tag measures: ``kind`` (a key of :data:`RESOURCE_KINDS`), on which ``device``
    (``"gpu0"``, ``"gpu"`` when the tag names none, ``"host"``), in which ``unit`` (``"%"``, ``"bytes"``,
    ``"MB"``, ``"C"``, ``"W"``, ``"MHz"``); ``clock`` is ``"wall"`` for samples taken on a timer (W&B's
    ``system/*``: their step is seconds since the run started) and ``"step"`` for samples logged at training
    steps (Lightning's ``DeviceStatsMonitor``); ``rank`` orders several tags of one kind and device
    (lower is preferred: the training-batch hook over the others, the whole CPU over a core)."""

    kind: str
    device: str
    unit: str
    clock: str
    rank: int = 1


_WANDB_GPU = re.compile(r"^(?:system[./])?gpu\.(\d+)\.([A-Za-z]+)$")
_WANDB_GPU_KEYS = {
    "gpu": ("gpu_util", "%"), "memoryAllocated": ("gpu_memory", "%"), "memoryAllocatedBytes": ("gpu_memory", "bytes"),
    "temp": ("gpu_temp", "C"), "powerWatts": ("gpu_power", "W"), "powerPercent": ("gpu_power", "%"),
    "smClock": ("gpu_clock", "MHz"), "graphicsClock": ("gpu_clock", "MHz"),
}
_WANDB_HOST = {"cpu": ("cpu", "%"), "memory": ("host_memory", "%"), "memory_percent": ("host_memory", "%")}
_LIGHTNING = re.compile(r"^DeviceStatsMonitor\.(on_[a-z_]+)[/.](.+)$")
_NVSMI = re.compile(r"^(?:gpu_id: ?(\d+)/)?(utilization\.gpu|memory\.used|temperature\.gpu|power\.draw|"
                    r"clocks\.(?:sm|current\.sm|gr|current\.graphics)) ?(?:\((%|MB|MiB|°C|C|W|MHz)\))?$")


def resource_kind(tag: str) -> ResourceKind | None:
    """The system metric ``tag`` holds, or None. The one place system-metric names are recognised:

    - W&B system metrics (``system/gpu.0.gpu``, ``system/gpu.0.memoryAllocated`` (% of capacity),
      ``…memoryAllocatedBytes``, ``…temp``, ``…powerWatts``, ``…powerPercent``, ``…smClock``,
      ``…graphicsClock``, ``system/cpu``, ``system/memory``, ``system/memory_percent``), from the
      record file's stats records or the old ``wandb-events.jsonl`` (``system.`` or ``system/`` prefix); the
      ``gpu.process.N.*`` copies of the process's own GPU and the per-core ``cpu.N.cpu_percent`` are not;
    - Lightning ``DeviceStatsMonitor`` (``DeviceStatsMonitor.on_train_batch_end/cpu_percent``, ``…/cpu_vm_percent``
      (host memory), CUDA's ``…/allocated_bytes.all.current`` and ``…/reserved_bytes.all.current``), and
      the nvidia-smi names of Lightning's older GPU monitors (``gpu_id: 0/utilization.gpu (%)``,
      ``memory.used (MB)``, ``temperature.gpu (°C)``, ``power.draw (W)``, ``clocks.sm (MHz)``).
    """
    found = _WANDB_GPU.match(tag)
    if found:
        hit = _WANDB_GPU_KEYS.get(found.group(2))
        if hit is None:
            return None
        rank = 2 if found.group(2) in ("powerPercent", "graphicsClock", "memoryAllocatedBytes") else 1
        return ResourceKind(hit[0], f"gpu{int(found.group(1))}", hit[1], "wall", rank)
    if tag.startswith(("system/", "system.")):
        hit = _WANDB_HOST.get(tag[len("system/"):])
        return ResourceKind(hit[0], "host", hit[1], "wall") if hit else None
    found = _LIGHTNING.match(tag)
    if found:
        hook, key = found.groups()
        rank = 1 if hook == "on_train_batch_end" else (2 if hook.startswith("on_train") else 3)
        if key == "cpu_percent":
            return ResourceKind("cpu", "host", "%", "step", rank)
        if key == "cpu_vm_percent":
            return ResourceKind("host_memory", "host", "%", "step", rank)
        if key in ("allocated_bytes.all.current", "reserved_bytes.all.current"):
            return ResourceKind("gpu_memory", "gpu", "bytes", "step", rank + (3 if key.startswith("reserved") else 0))
        nvsmi = _NVSMI.match(key)
        if nvsmi is None:
            return None
        tag = key
    nvsmi = _NVSMI.match(tag)
    if nvsmi:
        device = f"gpu{int(nvsmi.group(1))}" if nvsmi.group(1) else "gpu"
        name = nvsmi.group(2)
        kind, unit = (("gpu_util", "%") if name == "utilization.gpu" else ("gpu_memory", "MB") if name == "memory.used"
                      else ("gpu_temp", "C") if name == "temperature.gpu" else ("gpu_power", "W") if name == "power.draw"
                      else ("gpu_clock", "MHz"))
        return ResourceKind(kind, device, unit, "step")
    return None


def role_curve(curves: Mapping[str, Curve], roles: Roles, role: str) -> Curve | None:
    """The curve of ``role`` from a run's curves by tag; summed over components at the steps they share."""
    assignment = roles.assigned.get(role)
    if assignment is None:
        return None
    parts = [curves[t] for t in assignment.components if t in curves]
    if len(parts) != len(assignment.components) or not parts:
        return None
    if assignment.log:
        with np.errstate(divide="ignore", invalid="ignore"):
            return Curve(assignment.tag, parts[0].steps, np.log(parts[0].values), parts[0].wall_time)
    return sum_curves(parts, assignment.tag)


def sum_curves(parts: list[Curve], tag: str) -> Curve:
    """The sum of curves at the steps they all share (one curve is returned as it is)."""
    if len(parts) == 1:
        return parts[0]
    parts = [p.collapse_steps() for p in parts]
    common = parts[0].steps
    for p in parts[1:]:
        common = np.intersect1d(common, p.steps)
    total = np.zeros(len(common))
    wall = np.full(len(common), np.nan)
    for p in parts:
        index = np.searchsorted(p.steps, common)
        total = total + p.values[index]
        wall = np.fmax(wall, p.wall_time[index])
    return Curve(tag, common, total, wall)
