"""The one table of known causes: finding code → what it usually means and what to do.

Analyzers attach ``recommend(code)`` to every :class:`~tanalyze.analysis.results.Finding`
so that advice is written once, reviewed once, and the same everywhere
(CLI, HTML report, JSON, CI annotations).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cause", "CAUSES", "recommend"]


@dataclass(frozen=True)
class Cause:
    title: str
    usual_causes: str
    action: str


CAUSES: dict[str, Cause] = {
    "diverged_nonfinite": Cause(
        "Loss became NaN/Inf",
        "learning rate too high, fp16 overflow without loss scaling, a bad batch, log/exp of zero",
        "Resume from a checkpoint at least ~100 steps before the onset, lower the learning rate 2-10x, "
        "enable gradient clipping (e.g. max norm 1.0), and check the data around that step.",
    ),
    "diverged_nonfinite_from_start": Cause(
        "Loss NaN/Inf from the first logged step",
        "a checkpoint or initialisation with NaN/Inf weights, NaN/Inf in the inputs, labels out of range for "
        "the loss, fp16 overflow in the first forward pass, a kernel or library error",
        "No update made it non-finite, so a lower learning rate will not help: check the checkpoint or "
        "initialisation, the first batches and labels, and run one forward pass in fp32 to rule out the numerics; "
        "then restart from scratch.",
    ),
    "diverged_explosion": Cause(
        "Loss exploded and did not recover",
        "learning rate too high or warm-up too short, no gradient clipping, instability in attention logits",
        "Resume from a checkpoint at least ~100 steps before the onset with a 2-10x lower learning rate, "
        "a longer warm-up and gradient clipping.",
    ),
    "diverged_collapse": Cause(
        "Loss fell, then went back to chance level and stayed",
        "a learning rate too high (or a step up to one) killed the units or saturated the output: the model "
        "predicts the class prior whatever the input",
        "Resume from a checkpoint before the loss left its low with a 2-10x lower learning rate, a warm-up and "
        "gradient clipping; check for dead ReLU units.",
    ),
    "diverged_early": Cause(
        "Loss blew up before the model learnt anything",
        "a learning rate far too high for the model and optimizer (or no warm-up): the first updates threw the "
        "weights far off, and the loss never got back below where it started",
        "Restart from scratch with a 10x lower learning rate and a warm-up; nothing of this run is worth resuming, "
        "since it never got better than its initialisation.",
    ),
    "diverged_dead": Cause(
        "Loss blew up, then froze at chance level",
        "a learning rate far too high: the first updates blew the loss up and killed the units (dead ReLUs) or "
        "saturated the output, and the model now predicts the class prior whatever the input",
        "Restart from scratch with a 10-100x lower learning rate (and a warm-up, gradient clipping); a longer "
        "run or a larger model will not help, since the weights no longer change.",
    ),
    "metric_disagrees": Cause(
        "Validation loss rose while the task metric kept improving",
        "the model grows over-confident on the examples it gets wrong (its loss on them climbs) while it gets more "
        "of them right: common for classifiers and taggers trained past their loss minimum",
        "Select checkpoints and stop by the task metric (metric_for_best_model, monitor=...), not by the loss; "
        "consider label smoothing or calibration (temperature scaling) if calibrated probabilities matter.",
    ),
    "nonfinite_values": Cause(
        "Loss was NaN/Inf at some steps, then finite again",
        "fp16 overflow on a few batches, a bad sample, a division by zero in the loss",
        "Find the batches at those steps; use bf16 or dynamic loss scaling, and guard the loss against "
        "log(0) and division by zero.",
    ),
    "metric_nonfinite": Cause(
        "Validation metric NaN/Inf from the first evaluation",
        "a NaN or Inf in the validation data, an empty validation split or batch, a division by zero or log(0) "
        "in the metric, a mismatch between the metric and the labels",
        "Check the validation data for NaN/Inf and empty batches, and the metric code for divisions and logs; "
        "the learning rate is not the cause, since the training loss is finite.",
    ),
    "loss_spike": Cause(
        "Transient loss spike",
        "a bad or unusual batch, a learning-rate step, Adam epsilon/second-moment underflow",
        "Usually harmless if it recovers; if spikes repeat, lower the learning rate, clip gradients, "
        "or skip the offending batches.",
    ),
    "unstable": Cause(
        "Training is unstable (loss oscillates wildly)",
        "learning rate too high, batch too small, bad data",
        "Lower the learning rate 5-10x, enable gradient clipping, increase the batch size or warm-up.",
    ),
    "gan_collapse": Cause(
        "GAN: the discriminator overpowered the generator",
        "discriminator learning rate or update count too high for the generator, no regularisation of the "
        "discriminator, a generator too weak for the data",
        "Balance the two: lower the discriminator's learning rate or its steps per generator step, add a "
        "gradient penalty or spectral normalisation, label smoothing or instance noise.",
    ),
    "val_plateau": Cause(
        "Validation loss levelled off while the training loss kept falling",
        "the model has learnt what generalises from this data; further steps fit the training set only",
        "Nothing is wrong yet: keep the checkpoint at the validation minimum (early stopping), or spend the "
        "remaining steps on more data, augmentation or regularisation.",
    ),
    "overfitting": Cause(
        "Overfitting: validation loss rises while training loss falls",
        "too little data, too big a model, too many epochs, too little regularisation",
        "Stop at (or keep the checkpoint of) the validation minimum; add regularisation "
        "(weight decay, dropout, augmentation), get more data, or use a smaller model.",
    ),
    "policy_collapse": Cause(
        "RL: the policy entropy blew up",
        "a learning rate too high for the actor, a KL penalty or clip range too loose, an entropy bonus too "
        "strong, a reward that can be gamed by random output",
        "Resume from a checkpoint before the onset with a lower actor learning rate; tighten the PPO clip range "
        "or raise the KL coefficient; lower or drop the entropy bonus; watch the entropy and the KL to the "
        "reference policy from the first steps.",
    ),
    "entropy_collapse": Cause(
        "RL: the policy became deterministic before it learned",
        "a learning rate too high for the policy (a few large updates push it onto one action), no or too small "
        "an entropy bonus, rewards or advantages of a large scale",
        "Lower the learning rate (3-10x), add or raise an entropy bonus, normalise the advantages, clip the "
        "policy update (PPO) or the gradient norm; restart from scratch: a collapsed policy no longer explores.",
    ),
    "reward_collapse": Cause(
        "RL: the reward collapsed",
        "policy updates too large (learning rate, clip range, KL coefficient), a value function that lost track, "
        "catastrophic forgetting, a reward that was hacked and then corrected",
        "Keep the checkpoint of the best reward; lower the learning rate, tighten the clip range or raise the "
        "KL coefficient; check the advantage normalisation and the critic's loss around the turn.",
    ),
    "reward_flat": Cause(
        "RL: the reward does not rise",
        "a reward that is (almost) always the same (too sparse, a bug in the reward function), too little "
        "exploration, a learning rate too small, advantages that are all zero",
        "Check that the reward varies between samples and that the advantages are not all zero; raise the "
        "learning rate or the exploration; shape a sparser reward or start from an easier task.",
    ),
    "underfitting": Cause(
        "Underfitting: losses stay high",
        "model too small, learning rate too small, too much regularisation, too few steps",
        "Raise the learning rate (try 3-10x), train longer, use a bigger model, or reduce regularisation.",
    ),
    "loss_at_zero": Cause(
        "Training loss exactly 0",
        "a small training set memorised (many epochs over a few examples), every label masked or ignored (a "
        "data collator or prompt template that leaves no target tokens), a loss rounded to 0 in the log",
        "Evaluate on held-out data: on a small set this is memorisation, and the held-out loss will show "
        "overfitting; check that the batches carry target labels (not all -100) and that the loss is computed "
        "from them.",
    ),
    "metric_zero": Cause(
        "Evaluation scores no hit",
        "validation labels that do not match the training's (class names or their order, a label map, a one-based "
        "index), predictions compared in another format (boxes, tokens), an evaluation on the wrong split or empty",
        "Evaluate a few training examples with the same code: if they score 0 too, the evaluation is broken; then "
        "compare the validation set's class names and label order with the training set's.",
    ),
    "val_frozen": Cause(
        "Validation loss frozen",
        "weights that no longer change (a training loss at exactly 0, a learning rate of 0, everything frozen), a "
        "validation set of one batch the model already fits perfectly, a cached evaluation result logged again",
        "Check that the model still trains (gradients, learning rate) and that each evaluation runs the current "
        "model on the validation data; a validation set the model fits perfectly from the start tells nothing.",
    ),
    "val_rise": Cause(
        "Validation loss up, within its noise",
        "the first evaluations of overfitting, or evaluation noise (a small or shuffled validation set, augmentation "
        "at evaluation)",
        "Keep the best checkpoint by the validation metric and watch the next evaluations; a larger validation set "
        "or evaluating more often tells a rise from noise sooner.",
    ),
    "lr_zero": Cause(
        "Learning rate 0 to the end",
        "a schedule shorter than the run (training continued or resumed past its last scheduled epoch or step), a "
        "warm-up that never began, a scheduler stepped too often; a rate printed with too few decimals",
        "Make the schedule's length match the run (max_epochs / total steps of the scheduler), or stop the run "
        "where the schedule ends; print the rate in scientific notation to see a tiny one.",
    ),
    "plateau": Cause(
        "Loss plateau",
        "learning rate too small for this phase, saturated model, data exhausted",
        "Try a learning-rate schedule change (warm restart, decay), or stop: further steps buy little.",
    ),
    "slow_progress": Cause(
        "Loss decreases too slowly",
        "learning rate too small, poor initialisation, too much regularisation",
        "Raise the learning rate, check the optimiser settings and the data pipeline.",
    ),
    "early_stopping": Cause(
        "Early stopping would have saved compute",
        "training went on after the validation loss stopped improving",
        "Enable early stopping (patience-based) or keep the best checkpoint, not the last.",
    ),
    "grad_norm_unmeasured": Cause(
        "Gradient norm not measured",
        "a norm the training loop could not compute (gradients sharded or offloaded, as under DeepSpeed ZeRO) "
        "logged as 0",
        "Nothing is wrong with the training; to watch the gradients, log the norm the engine computes (DeepSpeed's "
        "global gradient norm) instead of the trainer's.",
    ),
    "grad_explosion": Cause(
        "Gradient norm exploded",
        "learning rate too high, no clipping, numerical instability",
        "Enable gradient clipping (max norm ~1.0), lower the learning rate, check for bad batches.",
    ),
    "divergence_precursor": Cause(
        "Signals before the divergence",
        "a learning rate too high for the current loss landscape, growing gradients, an fp16 loss scale "
        "backing off repeatedly",
        "Resume from a checkpoint before the first signal, not just before the blow-up; lower the learning rate "
        "or clip gradients; alert on the gradient norm's growth next time.",
    ),
    "divergence_warning": Cause(
        "Divergence warning",
        "the loss is climbing away from its minimum or the gradient norm is growing fast: the usual lead-up to "
        "a divergence (learning rate too high, warmup too short, a scheduler bug)",
        "Check the learning rate now; save a checkpoint, and lower the learning rate or enable gradient "
        "clipping before the loss blows up.",
    ),
    "divergence_warning_finished": Cause(
        "Divergence warning at the end of a finished run",
        "the loss climbing away from its minimum in the last part of a run that then ended normally (a learning "
        "rate too high for the last epochs, in-epoch rises of a multi-epoch fine-tune)",
        "Nothing to stop: the run is over. Before training on from its last checkpoint, lower the learning rate "
        "or pick an earlier checkpoint nearer the loss minimum.",
    ),
    "grad_nonfinite": Cause(
        "Gradient norm became NaN/Inf",
        "fp16 overflow (occasional ones are normal with dynamic loss scaling), a bad batch, too high a learning rate",
        "If the loss scaler skips the step and training goes on, nothing to do; otherwise resume before the first "
        "bad step with a lower learning rate and gradient clipping, check that batch, or train in bf16.",
    ),
    "grad_collapse": Cause(
        "Gradient norm collapsed",
        "dead units, vanishing gradients, loss saturated, learning rate schedule hit zero",
        "Check activations and initialisation, the learning-rate schedule, and normalisation layers.",
    ),
    "grad_out_of_band": Cause(
        "Gradient norm outside the healthy band",
        "too large: high learning rate or no clipping; too small: vanishing gradients or saturated loss",
        "Clip large gradients; for tiny ones check initialisation, normalisation and the learning rate.",
    ),
    "grad_clipping_frequent": Cause(
        "Gradients are clipped most of the time",
        "the clip threshold is too low for this model or the learning rate is too high",
        "Raise the clip threshold or lower the learning rate, so clipping only catches outliers.",
    ),
    "layer_grad_vanishing": Cause(
        "A layer's gradients vanish",
        "deep network without residual/normalisation, saturating activations, dead ReLUs",
        "Check that layer's initialisation and activations; add normalisation or residual connections.",
    ),
    "layer_grad_exploding": Cause(
        "A layer's gradients explode",
        "learning rate too high for that layer, missing normalisation",
        "Clip gradients, lower the learning rate, or add normalisation around that layer.",
    ),
    "loss_scale_collapse": Cause(
        "fp16 loss scale keeps dropping (overflows)",
        "activations or gradients overflow fp16",
        "Use bf16 if the hardware supports it, lower the learning rate, or clip gradients.",
    ),
    "skipped_steps": Cause(
        "Optimizer steps were skipped (overflow or NaN)",
        "fp16 overflow, non-finite gradients",
        "A few skips at the start are normal with dynamic loss scaling; many later ones call for bf16, "
        "a lower learning rate, or clipping.",
    ),
    "throughput_drop": Cause(
        "Throughput dropped during the run",
        "thermal throttling, a noisy neighbour, growing sequence length, memory fragmentation",
        "Compare hardware and data around the change point; profile the step after it.",
    ),
    "throughput_dips": Cause(
        "Periodic throughput dips",
        "data loading, evaluation, logging or checkpointing at a fixed interval",
        "Use more data-loader workers with pin_memory and prefetching; make evaluation and saving asynchronous.",
    ),
    "evaluation_time": Cause(
        "Time spent evaluating",
        "evaluation (or checkpointing) every N steps pauses training for its duration",
        "Nothing to fix; if the share is large, evaluate less often or on a subset, or asynchronously.",
    ),
    "throughput_stall": Cause(
        "Training stalled",
        "checkpoint saves, evaluation, a hung collective, storage hiccups",
        "Check what runs at those steps; save checkpoints asynchronously or less often.",
    ),
    "throughput_regression": Cause(
        "Throughput regressed against the baseline",
        "a slower data pipeline, a changed kernel or dependency, smaller batches, a debug option left on",
        "Profile one step of both runs; diff their configs and environments; check data-loader settings.",
    ),
    "memory_near_capacity": Cause(
        "GPU or host memory close to capacity",
        "batch or sequence too large for the device; for host memory, too many or too large data-loader "
        "workers, a dataset held in RAM. (The GPU figure of nvidia-smi and W&B counts PyTorch's cached blocks, "
        "so a full-looking GPU may just be a warm cache.)",
        "GPU: reduce the batch size, use gradient accumulation, activation checkpointing, or mixed precision. "
        "Host: fewer data-loader workers or a smaller prefetch_factor, memory-map the dataset, watch for swapping.",
    ),
    "gpu_util_drops": Cause(
        "GPU utilisation drops at regular intervals (data-loading bottleneck)",
        "the GPU waits for the next batch: too few data-loader workers, slow decoding or augmentation on the "
        "CPU, data read from a slow or network disk, host-to-device copies from pageable memory; periodic "
        "checkpoint saving or logging can look the same",
        "Raise DataLoader num_workers (about the CPU cores per GPU), set pin_memory=True, persistent_workers=True "
        "and a larger prefetch_factor, move augmentation to the GPU or pre-process the data once; if the gaps "
        "line up with checkpoint saves, save less often or asynchronously.",
    ),
    "thermal_throttling": Cause(
        "GPU thermal throttling",
        "the GPU reached its temperature limit and lowered its clocks: poor airflow, a blocked or failed fan, "
        "a hot room or rack, a power cap",
        "Check `nvidia-smi -q -d PERFORMANCE` (clock throttle reasons) and `nvidia-smi -q -d TEMPERATURE`; "
        "improve cooling or fan speed; log clocks (W&B records gpu.N.smClock) to confirm.",
    ),
    "memory_growth": Cause(
        "Memory grows steadily (a leak)",
        "tensors kept across steps (losses appended with their graph, caches that never clear)",
        "Look for tensors kept across steps: log loss.item(), not loss; clear caches; detach stored outputs.",
    ),
    "memory_jump": Cause(
        "Sudden jump in memory",
        "a longer batch, evaluation without no_grad, optimizer state creation",
        "Check what happens at that step; use torch.no_grad() in evaluation; cap sequence lengths.",
    ),
    "attention_collapse": Cause(
        "Attention entropy collapsing towards zero",
        "attention logits growing without bound (often with a high learning rate)",
        "Lower the learning rate, add QK-layernorm or logit soft-capping, use a longer warm-up.",
    ),
    "straggler_rank": Cause(
        "A rank lags behind the others",
        "a slower or throttled device, uneven data sharding, a busy host",
        "Check that rank's device and host; balance the data; replace the slow node.",
    ),
    "rank_stopped": Cause(
        "A rank stopped logging before the others",
        "that process crashed (out of memory, a bad node) or hangs in a collective",
        "Read that rank's own log and exit code; set a collective timeout (NCCL_ASYNC_ERROR_HANDLING, "
        "TORCH_NCCL_BLOCKING_WAIT) so a lost rank stops the job instead of hanging it.",
    ),
    "communication_bound": Cause(
        "Communication dominates the step",
        "a slow interconnect (sockets instead of NVLink/InfiniBand), too little compute per rank for the "
        "gradients exchanged, no overlap of communication with the backward pass, or a straggler the others "
        "wait for inside the all-reduce",
        "Check the NCCL transports and the slowest rank first; then raise the work per rank (micro-batch, "
        "gradient accumulation), overlap the gradient all-reduce with the backward pass (DDP buckets, "
        "overlap_comm), or use a layout that moves less data (fewer data-parallel ranks across nodes).",
    ),
    "communication_rising": Cause(
        "Communication takes a growing share of the step",
        "network contention from other jobs, a degrading link or node, a rank slowing down that the others "
        "wait for in the all-reduce",
        "Compare the ranks' step times over the run and the node's network counters; move the job off the "
        "slow node or link.",
    ),
    "nccl_slow_transport": Cause(
        "NCCL uses a slow transport",
        "InfiniBand disabled or not visible in the container (NCCL_IB_DISABLE, missing /dev/infiniband, "
        "wrong NCCL_IB_HCA / NCCL_SOCKET_IFNAME), P2P disabled (NCCL_P2P_DISABLE) or unsupported",
        "Run with NCCL_DEBUG=INFO and check the 'via' of each channel; unset NCCL_IB_DISABLE / NCCL_P2P_DISABLE, "
        "expose the IB devices to the job, and test the fabric with nccl-tests (all_reduce_perf).",
    ),
    "nccl_timeout": Cause(
        "A collective operation timed out",
        "one rank never reached the collective: it crashed, ran out of memory, hung in data loading, or took "
        "another code path (a different number of batches or an uneven condition across ranks)",
        "Read the log of the rank that did not report the timeout first; make every rank run the same "
        "collectives (same number of steps, drop_last); set TORCH_NCCL_ASYNC_ERROR_HANDLING so the job stops "
        "instead of hanging.",
    ),
    "nccl_warnings": Cause(
        "NCCL printed warnings",
        "a network or plugin it could not use, a misconfiguration, or the error that preceded a failure",
        "Read the first warning: it usually names the device, plugin or setting at fault.",
    ),
    "rank_metrics_unsynced": Cause(
        "Each rank logs its own metric",
        "the logged value is one rank's shard, not reduced across ranks",
        "All-reduce the metric before logging (dist.all_reduce(..., op=AVG), self.log(..., sync_dist=True), "
        "accelerator.reduce/gather) or log from rank 0 the reduced value.",
    ),
    "validation_regression": Cause(
        "Validation loss worse than the baseline",
        "a change in model, data or hyper-parameters",
        "Diff the configs of both runs and bisect the change.",
    ),
    "restarts_time_lost": Cause(
        "Wall time and steps lost to restarts",
        "pre-emption, crashes or time limits with checkpoints far apart; slow requeueing",
        "Checkpoint more often (the steps redone per restart are at most the checkpoint interval), save on "
        "SIGTERM before a time limit or pre-emption, and fix what made the job stop (see its run status).",
    ),
    "best_checkpoint_missing": Cause(
        "The best evaluation's weights were not kept",
        "checkpoints rotated by count (save_total_limit, save_top_k without a monitor) rather than by the "
        "monitored metric, or saved on a schedule that missed the best evaluation",
        "Keep checkpoints by the metric: HF Trainer load_best_model_at_end=True with metric_for_best_model "
        "(and greater_is_better) and save_total_limit (the best is kept besides the newest), with save_steps a "
        "multiple of eval_steps; Lightning ModelCheckpoint(monitor=\"val_loss\", mode=\"min\", save_top_k=3, "
        "save_last=True). To recover, retrain to the best step from the nearest earlier checkpoint.",
    ),
    "best_checkpoint_close": Cause(
        "The best evaluation's weights were not kept, but a kept checkpoint is as good within the noise",
        "checkpoints rotated by count or by schedule; the metric is flat near its best",
        "Nothing urgent; to keep the best exactly, use load_best_model_at_end=True with metric_for_best_model "
        "(HF) or ModelCheckpoint(monitor=..., save_top_k=3) (Lightning).",
    ),
    "best_checkpoint_kept": Cause(
        "The best evaluation's weights are on disk",
        "a checkpoint manager keeping the best by the monitored metric",
        "Use that checkpoint for evaluation and release, not the last one.",
    ),
    "loss_unbounded": Cause(
        "The loss has no floor",
        "labels outside the loss's range (binary cross-entropy with labels not in [0, 1], a class index past "
        "the logits), a sign error (a score maximised as a loss), or a likelihood whose variance collapses",
        "Check the labels' range against the loss (and the loss's sign): a loss bounded below stops "
        "falling; clamp or parametrise a learned variance (log-variance with a floor).",
    ),
    "ended_before_metrics": Cause(
        "The job failed before it logged a metric",
        "a failure while starting: out of memory allocating the model or activations, a configuration "
        "assertion, a missing file or dataset, a cancellation in the queue",
        "Fix what the status line names and rerun: out of memory, a smaller micro-batch or sequence length "
        "(with gradient accumulation), activation checkpointing or sharding; an exception, its last frame; "
        "a cancellation, the time limit or the queue.",
    ),
    "metrics_unread": Cause(
        "Metric lines in a format tanalyze does not read",
        "a hand-written print format (its own words, brackets or separators) that no reader knows",
        "Read the file with --pattern REGEX (named groups: step and one per metric, e.g. "
        "'Epoch (?P<step>\\d+).*Loss: (?P<loss>[\\d.]+)'), or log through a supported logger (TensorBoard, a CSV "
        "file) next time.",
    ),
    "reward_missing": Cause(
        "RL: no reward was logged",
        "the logger wrote only the policy update's statistics (SB3 prints rollout/ only when episodes end and "
        "a Monitor wraps the environment), an environment without episode ends, an evaluation never run",
        "Log the reward: wrap the environment in a Monitor (Stable-Baselines3) or log the episode return or "
        "success rate yourself, and an evaluation's mean reward every few updates; PPO's loss, value loss and "
        "entropy say nothing of whether the policy improves.",
    ),
    "insufficient_data": Cause(
        "Not enough data to judge",
        "the run is too short or the needed curve was not logged",
        "Log the training loss (and a validation loss) often enough: at least a few dozen points.",
    ),
}


def recommend(code: str) -> str:
    """The recommended action for a finding code (``KeyError`` for an unknown code: add it to the table)."""
    return CAUSES[code].action
