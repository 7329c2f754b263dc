"""Whether a run's configuration says its loss is a language model's, started from trained weights.

A language model trained from scratch starts near ``ln(vocab_size)`` (uniform guesses over its
tokens: 10.8 for GPT-2's 50,257) and falls by most of that. A fine-tune of trained weights starts
near where it ends, so a loss that falls only a few percent and levels off is what a fine-tune
looks like, not a model that cannot fit its data. A classifier's new head starts at chance
whatever its body, so only generative heads count.

The configuration is read as the writers leave it: a Hugging Face model config (``config.json``,
TensorBoard's ``model_config`` text, the config a W&B or MLflow callback logs: ``architectures``,
``vocab_size``, ``_name_or_path``), a PEFT ``adapter_config`` (``task_type``, ``base_model_name_or_path``)
and nanoGPT's ``init_from``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LanguageModelStart", "language_model_start"]

#: Architecture name endings of heads that predict tokens (``GPT2LMHeadModel``, ``LlamaForCausalLM`` …).
_GENERATIVE_HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "ForMaskedLM", "ForPreTraining",
                     "WithLMHead", "ForSeq2SeqLM")
#: PEFT task types of adapters on a generative model.
_GENERATIVE_TASKS = frozenset({"CAUSAL_LM", "SEQ_2_SEQ_LM"})
#: nanoGPT's ``init_from`` values that load OpenAI's GPT-2 weights, and their vocabulary.
_GPT2_WEIGHTS = frozenset({"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"})
_GPT2_VOCAB = 50257
#: A language model's loss starting below this share of ``ln(vocab_size)`` started from trained weights:
#: from scratch, even the first logged value (an average over the first hundreds of steps) is above it.
TRAINED_START_SHARE = 0.5


@dataclass(frozen=True)
class LanguageModelStart:
    """A generative language model named by a run's configuration (``source`` says where)."""

    source: str
    #: the size of its vocabulary when known: the loss of uniform guesses is ``ln(vocab_size)``
    vocab_size: int | None = None
    #: the configuration says the weights were trained before this run (PEFT adapters, nanoGPT ``init_from``)
    declared: bool = False

    def trained_start(self, start_level: float) -> str | None:
        """Why a loss starting at ``start_level`` (nats per token: the higher of its first value and the level
        of its first points) started from trained weights, or None when it may well have started from scratch."""
        if self.declared:
            return self.source
        if self.vocab_size and self.vocab_size > 1 and start_level <= TRAINED_START_SHARE * math.log(self.vocab_size):
            return (f"{self.source}; it starts at {start_level:.4g}, far below ln({self.vocab_size}) = "
                    f"{math.log(self.vocab_size):.4g}, where a model of that vocabulary starts from scratch")
        return None


def language_model_start(hparams: Mapping[str, Any], texts: Mapping[str, str] | None = None
                         ) -> LanguageModelStart | None:
    """The generative language model a run's configuration names (hparams and logged JSON texts), or None."""
    for where, config in _configs(hparams, texts or {}):
        found = _from_config(where, config)
        if found is not None:
            return found
    return None


def _from_config(where: str, config: Mapping[str, Any]) -> LanguageModelStart | None:
    init_from = config.get("init_from")
    if isinstance(init_from, str) and init_from.strip().lower() in _GPT2_WEIGHTS:
        return LanguageModelStart(f"{where}init_from = {init_from.strip()!r} (OpenAI's GPT-2 weights)", _GPT2_VOCAB,
                                  declared=True)
    task = config.get("task_type")
    base = config.get("base_model_name_or_path")
    if isinstance(task, str) and task.upper() in _GENERATIVE_TASKS and isinstance(base, str) and base.strip():
        return LanguageModelStart(f"{where}an adapter ({task}) on {base.strip()[:80]!r}", declared=True)
    architectures = config.get("architectures")
    if isinstance(architectures, str):  # as MLflow keeps a param: "['T5ForConditionalGeneration']"
        architectures = re.findall(r"\w+", architectures)
    if isinstance(architectures, list) and architectures and all(
            isinstance(a, str) and a.endswith(_GENERATIVE_HEADS) for a in architectures):
        vocab = _whole(config.get("vocab_size"))
        name = config.get("_name_or_path")
        named = f" from {name.strip()[:80]!r}" if isinstance(name, str) and name.strip() else ""
        return LanguageModelStart(f"{where}{architectures[0][:60]}{named}", vocab)
    return None


def _configs(hparams: Mapping[str, Any], texts: Mapping[str, str], depth: int = 2
             ) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The run's configuration and the mappings nested in it (a few levels), then the JSON objects among its
    texts, each with a prefix naming where it is."""
    yield "", hparams
    pending: list[tuple[str, Mapping[str, Any], int]] = [("", hparams, depth)]
    while pending:
        prefix, mapping, left = pending.pop(0)
        for key, value in mapping.items():
            if isinstance(value, Mapping) and left > 0:
                where = f"{prefix}{key}: "
                yield where, value
                pending.append((where, value, left - 1))
    for key, text in texts.items():
        if isinstance(text, str) and text.lstrip().startswith("{") and len(text) < 1_000_000:
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield f"{key}: ", value


def _whole(value: Any) -> int | None:
    """A whole positive number, also as text (MLflow params are text)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 1:
        return int(value) if value == int(value) else None
    return None
