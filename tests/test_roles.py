import numpy as np
import pytest

from tanalyze.curves import Curve
from tanalyze.errors import ConfigError
from tanalyze.roles import ROLES, memory_unit, resolve_roles, role_curve, step_time_unit, tag_words
from tanalyze.schema import scalar_frame

# Tag sets as real frameworks write them (from the public logs this project is tested on).
CASES = {
    "hf_tensorboard": (
        ["train/epoch", "train/grad_norm", "train/learning_rate", "train/loss", "train/total_flos", "train/train_loss",
         "train/train_runtime", "train/train_samples_per_second", "eval/loss", "eval/rouge1", "eval/runtime",
         "eval/samples_per_second"],
        {"train_loss": "train/loss", "val_loss": "eval/loss", "learning_rate": "train/learning_rate",
         "grad_norm": "train/grad_norm", "throughput": "train/train_samples_per_second", "epoch": "train/epoch"},
    ),
    "hf_trainer_state": (
        ["loss", "eval_loss", "eval_wer", "learning_rate", "grad_norm", "train_loss", "train_samples_per_second",
         "eval_samples_per_second", "total_flos"],
        {"train_loss": "loss", "val_loss": "eval_loss", "learning_rate": "learning_rate", "grad_norm": "grad_norm",
         "throughput": "train_samples_per_second"},
    ),
    "lightning": (
        ["epoch", "epoch_time", "train_loss_epoch", "train_loss_step", "train_perplexity_step", "val_loss",
         "val_perplexity"],
        {"train_loss": "train_loss_step", "train_loss_epoch": "train_loss_epoch", "val_loss": "val_loss", "epoch": "epoch"},
    ),
    "lightning_lr_monitor": (
        ["lr-Adam", "lr-Adam-1", "train/nll_loss", "val/rmse_loss"],
        {"train_loss": "train/nll_loss", "val_loss": "val/rmse_loss", "learning_rate": "lr-Adam"},
    ),
    "keras": (["accuracy", "loss", "val_accuracy", "val_loss"], {"train_loss": "loss", "val_loss": "val_loss"}),
    "tf_object_detection": (
        ["steps_per_sec", "Loss/localization_loss", "Loss/classification_loss", "Loss/total_loss", "learning_rate"],
        {"train_loss": "Loss/total_loss", "learning_rate": "learning_rate", "throughput": "steps_per_sec"},
    ),
    "detectron2": (
        ["data_time", "eta_seconds", "fast_rcnn/cls_accuracy", "loss_box_reg", "loss_cls", "lr", "time", "total_loss",
         "rank_data_time"],
        {"train_loss": "total_loss", "learning_rate": "lr", "step_time": "time"},
    ),
    "megatron": (
        ["lm loss", "learning rate", "grad norm", "loss scale", "elapsed time per iteration (ms)",
         "number of skipped iterations", "lm loss validation", "lm loss PPL validation"],
        {"train_loss": "lm loss", "val_loss": "lm loss validation", "learning_rate": "learning rate",
         "grad_norm": "grad norm", "step_time": "elapsed time per iteration (ms)", "loss_scale": "loss scale",
         "skipped_steps": "number of skipped iterations"},
    ),
    "mmengine": (
        ["base_lr", "lr", "data_time", "loss", "loss_cls", "loss_obj", "loss_bbox", "time", "epoch", "memory",
         "coco/bbox_mAP"],
        {"train_loss": "loss", "learning_rate": "lr", "step_time": "time", "gpu_memory": "memory", "epoch": "epoch"},
    ),
    "wandb": (
        ["train/loss", "val/loss", "lr", "mfu", "iter", "system/gpu.0.memoryAllocated", "system/gpu.0.memory",
         "system/memory", "system/proc.memory.availableMB"],
        # W&B's system metrics are sampled on a timer (their step is seconds): judged by analysis/system.py
        {"train_loss": "train/loss", "val_loss": "val/loss", "learning_rate": "lr"},
    ),
    "tutorial": (["Loss/train", "Loss/val", "Accuracy/val"], {"train_loss": "Loss/train", "val_loss": "Loss/val"}),
    # fairseq's own names: gnorm is the gradient norm, wps (words, i.e. target tokens, per second) the throughput
    "fairseq": (
        ["loss", "nll_loss", "ppl", "wps", "ups", "wpb", "bsz", "num_updates", "lr", "gnorm", "clip", "loss_scale",
         "train_wall", "wall"],
        {"train_loss": "loss", "learning_rate": "lr", "grad_norm": "gnorm", "throughput": "wps",
         "loss_scale": "loss_scale"},
    ),
    "misc": (
        ["train_loss", "valid_loss", "tokens_per_sec", "iter_time", "gpu_mem", "attn/entropy", "grad_scale"],
        {"train_loss": "train_loss", "val_loss": "valid_loss", "throughput": "tokens_per_sec", "step_time": "iter_time",
         "gpu_memory": "gpu_mem", "attention_entropy": "attn/entropy", "loss_scale": "grad_scale"},
    ),
    # reinforcement learning: the reward (its mean, not its spread) and the policy entropy (not its loss term)
    "verl_grpo": (
        ["actor/entropy", "actor/entropy_loss", "actor/kl_loss", "actor/loss", "actor/pg_loss", "actor/lr",
         "critic/rewards/mean", "critic/rewards/max", "critic/rewards/min", "critic/score/mean", "critic/returns/mean"],
        # actor/loss is verl's total (pg_loss, minus the entropy bonus, plus the KL penalty): not summed with them
        {"train_loss": "actor/loss", "learning_rate": "actor/lr",
         "reward": "critic/rewards/mean", "policy_entropy": "actor/entropy"},
    ),
    "trl_grpo": (
        ["loss", "reward", "reward_std", "rewards/accuracy_reward/mean", "frac_reward_zero_std", "entropy", "kl"],
        {"train_loss": "loss", "reward": "reward", "policy_entropy": "entropy"},
    ),
    "sb3": (["rollout/ep_rew_mean", "eval/mean_reward", "rollout/ep_len_mean"], {"reward": "rollout/ep_rew_mean"}),
    "cleanrl": (
        ["charts/episodic_return", "charts/episodic_length", "losses/entropy", "losses/policy_loss",
         "losses/value_loss", "charts/learning_rate"],
        {"train_loss": "losses/value_loss", "learning_rate": "charts/learning_rate",
         "reward": "charts/episodic_return", "policy_entropy": "losses/entropy"},
    ),
    # a forecasting model's error on returns is a loss, not a reward
    "forecast": (["train/loss", "val/loss", "train/return_mse", "val/return_mae"],
                 {"train_loss": "train/loss", "val_loss": "val/loss"}),
    # DPO's rewards are a preference pair's log-ratios, not a policy's reward: a DPO run is judged by its loss
    "trl_dpo": (
        ["loss", "rewards/chosen", "rewards/rejected", "rewards/accuracies", "rewards/margins", "logps/chosen"],
        {"train_loss": "loss"},
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_roles_of_real_framework_tags(name):
    tags, expected = CASES[name]
    assert resolve_roles(tags).tags() == expected


def test_a_counter_filed_under_throughput_is_no_throughput():
    """OLMo's console: ``throughput/total_tokens`` (tokens so far) has a point more than the rate, which its first
    step lacks; the rate is the throughput."""
    tags = ["throughput/total_tokens"] * 4 + ["throughput/total_training_Gflops"] * 4 + \
        ["throughput/device/tokens_per_second"] * 3 + ["train/CrossEntropyLoss"] * 4
    frame = scalar_frame(run="r", tag=tags, step=[1, 2, 3, 4] * 2 + [2, 3, 4] + [1, 2, 3, 4],
                         value=[4e6, 8e6, 1.2e7, 1.6e7] * 2 + [4.5e4] * 3 + [11.0, 10.5, 10.0, 9.8])
    roles = resolve_roles(frame)
    assert roles.tag("throughput") == "throughput/device/tokens_per_second" and roles.throughput_kind == "tokens"
    assert roles.tag("train_loss") == "train/CrossEntropyLoss"


def test_composers_tags_a_microbatch_size_and_a_cross_entropy_are_neither_throughput_nor_policy_entropy():
    """llm-foundry's console (Composer): ``trainer/device_train_microbatch_size`` reads "… microbatch size", not
    "batch/s"; ``metrics/train/LanguageCrossEntropy`` is a loss's value, not a policy's entropy."""
    roles = resolve_roles(["loss/train/total", "metrics/train/LanguageCrossEntropy", "trainer/device_train_microbatch_size",
                           "throughput/batches_per_sec", "throughput/samples_per_sec", "lr-DecoupledAdamW/group0"])
    assert roles.tag("throughput") in {"throughput/batches_per_sec", "throughput/samples_per_sec"}
    assert "policy_entropy" not in roles and roles.tag("train_loss") == "loss/train/total"
    assert roles.tag("learning_rate") == "lr-DecoupledAdamW/group0"


def test_a_cross_entropy_in_two_words_is_a_named_objective():
    """``CrossEntropy`` and ``cross_entropy`` are split into two words; as one they are the objective they name."""
    for tag in ("train/CrossEntropyLoss", "train/cross_entropy", "metrics/train/LanguageCrossEntropy"):
        assert resolve_roles([tag, "train/aux_loss"]).tag("train_loss") == tag, tag
    assert "train_loss" not in resolve_roles(["train/cross_attention_scale", "policy/entropy"])


def test_the_training_loss_is_of_the_validation_losss_kind_when_one_was_logged():
    """Composer logs ``loss/train/total`` and ``metrics/train/LanguageCrossEntropy``, but validates only the
    cross-entropy: the gap is judged between the two cross-entropies."""
    roles = resolve_roles(["loss/train/total", "metrics/train/LanguageCrossEntropy", "metrics/train/LanguagePerplexity",
                           "metrics/eval/LanguageCrossEntropy", "metrics/eval/LanguagePerplexity"])
    assert roles.tag("train_loss") == "metrics/train/LanguageCrossEntropy"
    assert roles.tag("val_loss") == "metrics/eval/LanguageCrossEntropy" and roles.losses_comparable
    assert any(r.tag == "loss/train/total" and "another kind" in r.reason for r in roles.rejected["train_loss"])
    # with no training loss of that kind, the whole loss stays and the gap is not judged
    alone = resolve_roles(["loss/train/total", "metrics/eval/LanguageCrossEntropy"])
    assert alone.tag("train_loss") == "loss/train/total" and not alone.losses_comparable
    # a loss of the same kind as the validation's: nothing to pair
    assert resolve_roles(["train/loss", "train/nll", "val/loss"]).tag("train_loss") == "train/loss"


def test_the_loss_with_no_word_but_its_namespace_is_the_whole_loss_not_a_component():
    """``forget_train/it_coarse_loss``, ``…/it_fine_loss`` and ``…/it_train_loss``: "forget" and "it" are in every
    name; the total (``it_train_loss``) is the training loss, not summed with its own parts."""
    roles = resolve_roles(["forget_train/it_coarse_loss", "forget_train/it_fine_loss", "forget_train/it_train_loss"])
    assert roles.tag("train_loss") == "forget_train/it_train_loss"
    # parts with no total among them are still summed; a GAN's sides are still told apart
    assert resolve_roles(["model/loss_a", "model/loss_b"]).tag("train_loss") == "model/loss_a + model/loss_b"
    assert resolve_roles(["train/box_loss", "train/cls_loss"]).tag("train_loss") == "train/box_loss + train/cls_loss"


def test_tag_words_normalise_separators_and_camel_case():
    assert tag_words("Loss/train") == ("loss", "train")
    assert tag_words("system/gpu.0.memoryAllocated") == ("system", "gpu", "0", "memory", "allocated")
    assert tag_words("elapsed time per iteration (ms)") == ("elapsed", "time", "per", "iteration", "ms")


def test_higher_is_better_metrics_are_never_losses():
    roles = resolve_roles(["val_accuracy", "eval_rouge1", "metrics/mAP50(B)", "val_bleu", "hparam/Final_Val_Loss"])
    assert "train_loss" not in roles and "val_loss" not in roles


def test_components_without_a_total_are_summed():
    frame = scalar_frame(
        run="r",
        tag=["train/box_loss"] * 3 + ["train/cls_loss"] * 3 + ["val/box_loss", "val/cls_loss", "metrics/mAP50(B)"],
        step=[0, 1, 2, 0, 1, 2, 2, 2, 2],
        value=[1.0, 0.8, 0.6, 2.0, 1.5, 1.0, 0.7, 1.1, 0.3],
    )
    roles = resolve_roles(frame)
    assert roles["train_loss"].components == ("train/box_loss", "train/cls_loss")
    assert roles.tag("train_loss") == "train/box_loss + train/cls_loss"
    assert roles.losses_comparable
    curves = {t: Curve.from_frame(frame, t) for t in frame["tag"].unique()}
    summed = role_curve(curves, roles, "train_loss")
    assert summed.steps.tolist() == [0, 1, 2] and summed.values.tolist() == [3.0, 2.3, 1.6]


def test_more_points_win_and_rejections_are_explained():
    frame = scalar_frame(run="r", tag=["train/loss"] * 3 + ["loss"] * 10, step=list(range(3)) + list(range(10)),
                         value=np.ones(13))
    roles = resolve_roles(frame)
    assert roles.tag("train_loss") == "loss"
    [rejected] = roles.rejected["train_loss"]
    assert rejected.tag == "train/loss" and "fewer points (3)" in rejected.reason


def test_incomparable_train_and_val_losses():
    assert not resolve_roles(["train/nll_loss", "val/rmse_loss"]).losses_comparable
    assert resolve_roles(["train_loss", "val_loss"]).losses_comparable


def test_overrides():
    roles = resolve_roles(["loss", "my/val", "val_loss"], {"val_loss": "my/val", "learning_rate": None})
    assert roles["val_loss"].source == "override" and roles.tag("val_loss") == "my/val"
    assert any(r.tag == "val_loss" and "overridden" in r.reason for r in roles.rejected["val_loss"])
    missing = resolve_roles(["loss"], {"val_loss": "nope"})
    assert "val_loss" not in missing and "'nope'" in missing.warnings[0]
    with pytest.raises(ConfigError, match="unknown role.*'validation'"):
        resolve_roles(["loss"], {"validation": "x"})


def test_every_role_is_documented_and_dict_is_plain():
    roles = resolve_roles(CASES["megatron"][0])
    assert set(roles.tags()) <= set(ROLES)
    d = roles.to_dict()
    assert d["roles"]["train_loss"] == "lm loss" and d["assigned"]["train_loss"]["source"] == "auto"


def test_component_timers_and_peak_memory_are_not_preferred():
    roles = resolve_roles(["lm loss", "elapsed time per iteration (ms)", "time (ms)/forward-compute",
                           "memory (MB)/allocated", "memory (MB)/max allocated", "memory (MB)/reserved"])
    assert roles.tag("step_time") == "elapsed time per iteration (ms)"
    assert roles.tag("gpu_memory") == "memory (MB)/allocated"
    deepspeed = resolve_roles(["loss", "CurrSamplesPerSec", "MemAllocated", "MaxMemAllocated", "overflow_skips"])
    assert deepspeed.tag("throughput") == "CurrSamplesPerSec" and deepspeed.throughput_kind == "samples"
    assert deepspeed.tag("gpu_memory") == "MemAllocated" and deepspeed.tag("skipped_steps") == "overflow_skips"


def test_perplexity_stands_in_for_a_missing_loss():
    frame = scalar_frame(run="r", tag=["eval_ppl"] * 3 + ["lr"] * 3, step=[0, 1, 2] * 2,
                         value=[np.e**2, np.e, np.e**1.5, 1e-3, 1e-3, 1e-3])
    roles = resolve_roles(frame)
    assert roles.tag("val_loss") == "log(eval_ppl)" and roles["val_loss"].log
    curves = {t: Curve.from_frame(frame, t) for t in frame["tag"].unique()}
    assert role_curve(curves, roles, "val_loss").values == pytest.approx([2.0, 1.0, 1.5])
    # with a loss logged, the perplexity is not used
    assert resolve_roles(["val_loss", "val_perplexity"]).tag("val_loss") == "val_loss"


REAL_ROLES = [
    ("tfevents/10844110__t5-summarization-demo/runs/Mar24_22-23-40_DESKTOP-41L2EO3",
     {"train_loss": "train/loss", "val_loss": "eval/loss", "learning_rate": "train/learning_rate",
      "grad_norm": "train/grad_norm", "epoch": "train/epoch"}),
    ("tfevents/Battam1111__DeepSC/lightning_logs/version_0",
     # its train_loss adds a term to the cross-entropy; train_ce is what val_ce measures on held-out data
     {"train_loss": "train_ce", "val_loss": "val_ce", "learning_rate": "lr", "epoch": "epoch"}),
    ("tfevents/Abonia1__YOLOv8-Fire-and-Smoke-Detection/runs/detect/train",
     {"train_loss": "train/box_loss + train/cls_loss + train/dfl_loss",
      "val_loss": "val/box_loss + val/cls_loss + val/dfl_loss"}),
    ("hf_trainer_state/CoralReefFish__whisper-tiny-nbaiLab",
     {"train_loss": "loss", "val_loss": "eval_loss", "learning_rate": "learning_rate"}),
    ("lightning_metrics_csv/0Xero7__slm_training/lightning_logs/version_0",
     {"train_loss": "train_loss_step", "train_loss_epoch": "train_loss_epoch", "val_loss": "val_loss"}),
    ("mmengine_logs/hwh12345678900123__event-yolo/work_dirs/yolov5_s-v61_fast_1xb12-40e_image",
     {"train_loss": "loss", "learning_rate": "lr", "step_time": "time", "gpu_memory": "memory"}),
    ("detectron2_metrics/Kevindic0214__detectron2_training/output",
     {"train_loss": "total_loss", "learning_rate": "lr", "step_time": "time"}),
]


@pytest.mark.real_logs
@pytest.mark.parametrize(("relative", "expected"), REAL_ROLES, ids=[r.split("/")[1] for r, _ in REAL_ROLES])
def test_roles_of_real_runs_as_read(relative, expected):
    import tanalyze
    from tests.conftest import real_log

    logs = tanalyze.load(real_log(relative))
    [name] = [n for n in logs.runs if len(logs.scalars_of(n))]
    roles = resolve_roles(logs.scalars_of(name))
    assert roles.tags() == expected
    if relative.startswith("hf_trainer_state"):  # the run summary is one point: not a throughput curve
        assert any("summary" in r.reason for r in roles.rejected["throughput"])


@pytest.mark.parametrize(("tag", "values", "unit"), [
    ("train/step_time_ms", [12.0, 13.0], "step_time_ms"),
    ("perf/iter_seconds", [900.0, 950.0], "step_time_s"),  # the name wins over the size
    ("time/iteration", [120.0, 130.0], "step_time_ms"),  # unnamed: over 50 reads as milliseconds
    ("time/iteration", [0.4, 0.5], "step_time_s"),
])
def test_step_time_unit_from_the_name_else_the_size(tag, values, unit):
    assert step_time_unit(tag, Curve.from_arrays(np.arange(len(values)), np.array(values), tag)) == unit


@pytest.mark.parametrize(("tag", "values", "unit"), [
    ("system/gpu.0.memoryAllocated", [40.0, 41.0], "percent"),  # W&B's is a share of the card
    ("gpu/mem_mib", [9000.0], "MiB"),
    ("gpu/mem_gb", [9.5], "GB"),
    ("gpu/memory", [3.2e9], "bytes"),
    ("gpu/memory", [7000.0], "MiB"),
    ("gpu/memory", [7.5], "GiB"),
])
def test_memory_unit_from_the_name_else_the_size(tag, values, unit):
    assert memory_unit(tag, Curve.from_arrays(np.arange(len(values)), np.array(values), tag)) == unit


def test_fairseqs_per_interval_training_stats_are_the_whole_loss_not_a_component():
    # fairseq-hydra logs train_inner/* every log interval and train/* once per epoch (10 epochs, 23 intervals)
    counts = {"train_inner/loss": 23, "train_inner/gnorm": 23, "train_inner/wps": 23, "train_inner/loss_scale": 23,
              "train/loss": 10, "train/gnorm": 10, "train/wps": 10, "valid/loss": 10, "valid/best_loss": 9}
    roles = resolve_roles(counts)
    assert roles.tags()["train_loss"] == "train_inner/loss" and roles.tags()["val_loss"] == "valid/loss"
    assert roles.tags()["grad_norm"] == "train_inner/gnorm" and roles.tags()["throughput"] == "train_inner/wps"
    assert [r.reason for r in roles.rejected["train_loss"]] == ["fewer points (10) than train_inner/loss (23)"]


def test_a_training_clock_in_ms_is_not_the_step_time_but_the_running_average_is():
    # modded-nanogpt: 'step:100/1750 train_time:92345ms step_avg:923.45ms' (train_time counts from the start)
    roles = resolve_roles(["train/loss", "val/loss", "train_time_ms", "step_avg_ms"])
    assert roles.tags()["step_time"] == "step_avg_ms"


# rllab's / garage's TRPO progress.csv: the surrogate before and after each update and their difference, no total
RLLAB = ["Iteration", "AverageReturn", "MaxReturn", "StdReturn", "LossBefore", "LossAfter", "dLoss", "MeanKL",
         "MeanKLBefore", "Entropy", "Perplexity", "ExplainedVariance"]


def test_the_loss_terms_of_a_reinforcement_learning_run_are_never_summed():
    roles = resolve_roles({tag: 20 for tag in RLLAB})
    assert roles.reinforcement == ("LossAfter", "LossBefore")
    assert roles.tag("reward") == "AverageReturn" and roles.tag("policy_entropy") == "Entropy"
    assert roles["train_loss"].components == ("LossAfter",)  # one term alone, for its NaN/Inf: never "… + dLoss"
    assert "never summed" in roles["train_loss"].reason
    assert {r.tag for r in roles.rejected["train_loss"]} == {"LossBefore", "dLoss"}
    # SB3's A2C logs its policy, value and entropy terms and no total: the value loss is a term, not the loss
    a2c = resolve_roles({t: 20 for t in ["train/policy_loss", "train/value_loss", "train/entropy_loss",
                                         "train/explained_variance", "rollout/ep_rew_mean"]})
    assert a2c.reinforcement == ("train/explained_variance",)
    assert a2c["train_loss"].components == ("train/policy_loss",)
    # SAC: an actor's and a critic's loss are no GAN's sides, nor a sum
    sac = resolve_roles({t: 20 for t in ["train/actor_loss", "train/critic_loss", "train/ent_coef",
                                         "train/ent_coef_loss", "rollout/ep_rew_mean"]})
    assert sac["train_loss"].components == ("train/actor_loss",) and not sac.adversarial


def test_a_run_without_reinforcement_learnings_own_tags_is_summed_as_before():
    # a policy and a value head fitted as supervised losses (AlphaZero-style), a detector's parts: no RL signs
    roles = resolve_roles({t: 20 for t in ["train/policy_loss", "train/value_loss", "val/policy_loss"]})
    assert roles.reinforcement == () and roles.tag("train_loss") == "train/value_loss"
    parts = resolve_roles({t: 20 for t in ["train/box_loss", "train/cls_loss", "train/dfl_loss"]})
    assert parts.reinforcement == () and len(parts["train_loss"].components) == 3
    assert "reinforcement" in resolve_roles(["loss"]).to_dict()


@pytest.mark.parametrize("tags, signs", [
    (["train/approx_kl", "train/clip_fraction", "train/loss"], ("train/approx_kl", "train/clip_fraction")),
    (["losses/approx_kl", "losses/clipfrac", "losses/value_loss"], ("losses/approx_kl", "losses/clipfrac")),
    (["ppo/policy/approxkl", "ppo/loss/total"], ("ppo/policy/approxkl",)),
    (["rollout/exploration_rate", "train/loss"], ("rollout/exploration_rate",)),
    (["losses/td_loss", "losses/q_values"], ("losses/td_loss",)),
    # a regression's explained variance without a value loss, a VAE's KL: no reinforcement learning
    (["train/loss", "val/explained_variance", "train/kl_loss", "train/mean_kl"], ()),
])
def test_reinforcement_signs(tags, signs):
    from tanalyze.roles import reinforcement_signs

    assert reinforcement_signs(tags) == signs


def test_a_reinforcement_learning_run_with_no_reward_takes_its_success_rate():
    tags = ["train/approx_kl", "train/loss", "rollout/success_rate", "eval/success_rate"]
    roles = resolve_roles({t: 20 for t in tags})
    assert roles.tag("reward") == "rollout/success_rate"
    # any other run's success rate is a metric, not a reward
    assert "reward" not in resolve_roles({t: 20 for t in ["train/loss", "val/loss", "val/success_rate"]})
