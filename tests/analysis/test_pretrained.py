"""A language model started from trained weights is told from its configuration, and its small fall is no
underfitting."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tanalyze.analysis.classify import classify_run
from tanalyze.analysis.pretrained import LanguageModelStart, language_model_start
from tanalyze.curves import Curve


@pytest.mark.parametrize(("hparams", "texts", "vocab", "declared"), [
    ({"init_from": "gpt2-xl", "n_layer": 48}, {}, 50257, True),  # nanoGPT's config
    ({"adapter_config": {"peft_type": "LORA", "task_type": "CAUSAL_LM",
                         "base_model_name_or_path": "meta-llama/Llama-2-7b-hf"}}, {}, None, True),
    ({}, {"model_config": json.dumps({"architectures": ["T5ForConditionalGeneration"], "vocab_size": 32128})},
     32128, False),  # what the HF Trainer's TensorBoard callback logs as text
    ({"architectures": "['LlamaForCausalLM']", "vocab_size": "32000"}, {}, 32000, False),  # MLflow params are text
    ({"model_config": {"architectures": ["GPT2LMHeadModel"], "vocab_size": 50257.0}}, {}, 50257, False),
])
def test_generative_models_are_found_where_writers_keep_their_config(hparams, texts, vocab, declared):
    found = language_model_start(hparams, texts)
    assert found is not None and found.vocab_size == vocab and found.declared is declared


@pytest.mark.parametrize(("hparams", "texts"), [
    ({"init_from": "scratch"}, {}),
    ({"init_from": "resume"}, {}),
    ({"model_config": {"architectures": ["BertForSequenceClassification"], "vocab_size": 30522}}, {}),  # new head
    ({"adapter_config": {"task_type": "SEQ_CLS", "base_model_name_or_path": "roberta-base"}}, {}),
    ({"lr": 3e-4}, {"args": "{\"learning_rate\": 5e-05}", "notes": "{not json"}),
])
def test_classifiers_scratch_runs_and_other_configs_name_no_language_model(hparams, texts):
    assert language_model_start(hparams, texts) is None


def test_a_start_far_below_ln_vocab_is_a_trained_start_and_near_it_is_not():
    model = LanguageModelStart("model_config: GPT2LMHeadModel", vocab_size=50257)
    assert "ln(50257) = 10.82" in model.trained_start(2.9)
    assert model.trained_start(0.5 * math.log(50257) + 0.01) is None
    assert LanguageModelStart("init_from = 'gpt2'", declared=True).trained_start(9.0) == "init_from = 'gpt2'"
    assert LanguageModelStart("no vocabulary").trained_start(1.0) is None


def _fine_tune(start: float, fall: float, noise: float, n: int = 300, seed: int = 0) -> Curve:
    """A loss that falls ``fall`` (a share) within the first fifth of the run and then levels off."""
    steps = np.arange(1, n + 1) * 10
    level = start * (1 - fall * (1 - np.exp(-np.arange(n) / (n / 15))))
    values = level * np.exp(np.random.default_rng(seed).normal(0, noise, n))
    return Curve("train/loss", steps, values, np.full(n, np.nan))


GPT2 = LanguageModelStart("model_config: GPT2LMHeadModel", vocab_size=50257)


def test_a_fine_tune_falling_six_percent_and_levelling_off_is_normal():
    curve = _fine_tune(2.4, 0.06, 0.01)
    assert classify_run(curve).label == "underfitting"  # nothing says where it started
    verdict = classify_run(curve, language_model=GPT2)
    assert verdict.label == "normal" and "fine-tune" in verdict.evidence["trained_start"]
    assert any("started from trained weights" in r for r in verdict.reasons) and not verdict.findings


@pytest.mark.parametrize(("start", "fall", "noise", "why"), [
    (10.5, 0.06, 0.01, "started at ln(vocab): from scratch"),
    (2.4, 0.002, 0.02, "the fall is within its noise: the fine-tune learns nothing"),
    (2.4, -0.05, 0.01, "the loss rose"),
])
def test_a_language_model_that_did_not_start_trained_or_did_not_fall_is_still_underfitting(start, fall, noise, why):
    verdict = classify_run(_fine_tune(start, fall, noise), language_model=GPT2)
    assert verdict.label == "underfitting", why
    assert "trained_start" not in verdict.evidence
