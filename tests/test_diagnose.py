import json
import pickle
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest

import tanalyze
from tanalyze.cli import main
from tanalyze.datasets import KINDS, make_curve, make_logs
from tanalyze.diagnose import Diagnoses, RunDiagnosis, diagnose, diagnose_run
from tanalyze.errors import ConfigError
from tanalyze.logs import Logs, RunInfo
from tanalyze.schema import concat_frames, empty_histograms, scalar_frame
from tests.conftest import real_log

TOP_KEYS = ["run", "format", "roles", "verdict", "overfitting", "divergence", "spikes", "early_stopping", "progress",
            "gradients", "throughput", "resources", "findings", "warnings", "role_details", "phase", "status", "restarts", "ranks",
            "early_warning", "checkpoints", "system", "communication", "nccl"]


@pytest.fixture(scope="module")
def synthetic():
    logs, truths = make_logs(n_steps=1500)
    return logs, truths, diagnose(logs)


def test_every_kind_gets_its_verdict_and_key_steps(synthetic):
    logs, truths, diagnoses = synthetic
    assert isinstance(diagnoses, Diagnoses) and list(diagnoses) == list(logs.runs)
    assert diagnoses.labels() == {name: truths[name].kind for name in logs.runs}
    diverged = diagnoses["diverged-4"]
    assert diverged.divergence.step == truths["diverged-4"].divergence_step
    assert diverged.divergence.kind == "inf"
    overfit = diagnoses["overfitting-1"]
    lo, hi = truths["overfitting-1"].val_min_window
    assert lo <= overfit.overfitting.onset_step <= hi
    assert diagnoses["normal-0"].overfitting is None and diagnoses["normal-0"].divergence is None
    assert [s.onset_step for s in diagnoses["unstable-3"].spikes][:3] == list(truths["unstable-3"].spike_steps[:3])


def test_to_dict_shape_is_plain_json(synthetic):
    _, _, diagnoses = synthetic
    for d in diagnoses.values():
        out = d.to_dict()
        assert list(out) == TOP_KEYS
        assert set(out["verdict"]) >= {"label", "confidence", "evidence"}
        for finding in out["findings"]:
            assert set(finding) >= {"code", "severity", "step", "message", "recommendation"}
            assert finding["recommendation"]
        json.loads(json.dumps(out, allow_nan=False))
    diverged = diagnoses["diverged-4"].to_dict()
    assert diverged["divergence"]["step"] == diverged["verdict"]["evidence"]["divergence_step"]
    assert diverged["divergence"]["kind"] == "inf"
    assert diverged["findings"][0]["severity"] == "error"
    overfit = diagnoses["overfitting-1"].to_dict()
    assert overfit["overfitting"]["onset_step"] == overfit["findings"][0]["step"] or overfit["overfitting"]["onset_step"]
    assert overfit["early_stopping"]["stop_step"] is not None
    assert all("step" in s for s in diagnoses["unstable-3"].to_dict()["spikes"])


def test_findings_are_sorted_by_severity(synthetic):
    _, _, diagnoses = synthetic
    rank = {"error": 0, "warning": 1, "info": 2}
    for d in diagnoses.values():
        severities = [rank[f.severity] for f in d.findings]
        assert severities == sorted(severities)


def test_diagnose_run_is_pure_and_picklable():
    frame, truth = make_curve("diverged", n_steps=800, seed=4, run="r1")
    first = diagnose_run(frame, format="synthetic")
    again = pickle.loads(pickle.dumps(diagnose_run(pickle.loads(pickle.dumps(frame)), format="synthetic")))
    assert first.run == "r1" and again.to_dict() == first.to_dict()
    assert first.divergence.step == truth.divergence_step


def test_roles_override_and_unknown_names():
    frame, _ = make_curve("overfitting", n_steps=600, seed=0)
    renamed = frame.assign(tag=frame["tag"].astype(str).replace({"val/loss": "holdout_metric"}).astype("category"))
    plain = diagnose_run(renamed)
    assert "val_loss" not in plain.roles and plain.verdict.label != "overfitting"
    assert any("no validation loss" in w for w in plain.warnings)
    chosen = diagnose_run(renamed, roles={"val_loss": "holdout_metric"})
    assert chosen.roles["val_loss"] == "holdout_metric" and chosen.verdict.label == "overfitting"
    with pytest.raises(ConfigError, match="unknown role"):
        diagnose_run(frame, roles={"valid": "x"})
    with pytest.raises(ConfigError, match="unknown analyzer"):
        diagnose_run(frame, spikes={"z": 3})


def test_analyzer_parameters_are_forwarded():
    frame, _ = make_curve("normal", n_steps=1000, seed=0, spikes=3)
    assert len(diagnose_run(frame).spikes) == 3
    assert len(diagnose_run(frame, divergence={"spike_min_ratio": 5.0}).spikes) == 0


def test_empty_run_and_run_without_points():
    logs = Logs(scalars=scalar_frame(run=[], tag=[], step=[], value=[]), histograms=empty_histograms(),
                runs=MappingProxyType({"empty": RunInfo("empty", "csv", "empty", ())}))
    d = diagnose(logs)["empty"]
    assert d.verdict.label == "insufficient_data" and d.roles == {}
    json.dumps(d.to_dict())


def test_repr_and_html_escape_names():
    frame, _ = make_curve("normal", n_steps=300, run="<b>evil</b>\x1b[2J")
    d = diagnose_run(frame)
    assert "\x1b" not in repr(d) and "normal (" in repr(d)
    html = d._repr_html_()
    assert "<b>evil" not in html and "&lt;b&gt;evil" in html


def test_plot_marks_without_recomputing():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    frame, truth = make_curve("diverged", n_steps=400, seed=1)
    d = diagnose_run(frame)
    ax = d.plot()
    xs = {line.get_xdata()[0] for line in ax.get_lines() if len(line.get_xdata()) == 2}
    assert truth.divergence_step in xs
    import matplotlib.pyplot as plt

    plt.close("all")


def test_public_entry_points():
    logs, _ = make_logs(("normal",), n_steps=200)
    assert isinstance(tanalyze.diagnose(logs)["normal-0"], RunDiagnosis)


def _logs_of(frames, names):
    infos = {n: RunInfo(n, "synthetic", n, ()) for n in names}
    return Logs(scalars=concat_frames(frames), histograms=empty_histograms(), runs=MappingProxyType(infos))


def test_cli_diagnose_prints_summary_and_writes_json(tmp_path, monkeypatch, capsys):
    frames = [make_curve(k, n_steps=500, seed=i, run=f"run-{k}\x1b[31m")[0] for i, k in enumerate(KINDS)]
    logs = _logs_of(frames, [f"run-{k}\x1b[31m" for k in KINDS])
    # The CLI reads and diagnoses each run in a worker (tanalyze.pipeline); these runs are synthetic.
    monkeypatch.setattr("tanalyze.pipeline.diagnose_path",
                        lambda *a, **k: tanalyze.diagnose(logs, roles=k["roles"], num_classes=k["num_classes"]))
    out_file = tmp_path / "d.json"
    code = main(["diagnose", "anywhere", "--json", str(out_file), "--role", "val_loss=val/loss", "-q"])
    assert code == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "run-diverged\\x1b[31m" in text
    assert "DIVERGED" in text and "key steps: diverged" in text and "diverged_nonfinite" in text
    assert "5 run(s): 1 diverged, 1 normal, 1 overfitting, 1 underfitting, 1 unstable" in text
    data = json.loads(out_file.read_text())
    assert data["schema"] == "tanalyze.diagnose/1" and len(data["runs"]) == 5
    assert data["runs"][1]["roles"]["val_loss"] == "val/loss"


def test_cli_bad_role_is_a_usage_error(monkeypatch, capsys):
    logs, _ = make_logs(("normal",), n_steps=100)
    monkeypatch.setattr("tanalyze.cli.load", lambda *a, **k: logs)
    assert main(["diagnose", "x", "--role", "nonsense"]) == 2
    assert "ROLE=TAG" in capsys.readouterr().err


def test_duplicate_steps_and_nonzero_start_are_handled():
    frame = scalar_frame(run="r", tag=["loss"] * 300, step=np.repeat(np.arange(1000, 1100), 3),
                         value=np.repeat(np.linspace(2, 0.5, 100), 3) * np.tile([0.9, 1.0, 1.1], 100))
    d = diagnose_run(frame)
    assert d.verdict.label in {"normal", "underfitting"}
    assert any("share a step" in w for w in d.warnings)
    assert d.loss_analysis.points == 300 and d.loss_analysis.finite_points == 300


def test_frame_with_pandas_strings_and_extra_columns():
    frame, _ = make_curve("normal", n_steps=200)
    frame = frame.assign(tag=frame["tag"].astype(str), run=frame["run"].astype(str), source=pd.Categorical(["f"] * len(frame)))
    assert diagnose_run(frame).verdict.label == "normal"


def test_diagnose_run_refuses_several_runs():
    a, _ = make_curve("normal", n_steps=50, run="a")
    b, _ = make_curve("normal", n_steps=50, run="b")
    with pytest.raises(ValueError, match="holds 2: a, b"):
        diagnose_run(concat_frames([a, b]))


EDGE_VALUES = {
    "zeros": lambda n, rng: np.zeros(n),
    "constant": lambda n, rng: np.full(n, 3.0),
    "negative": lambda n, rng: -np.abs(rng.normal(size=n)),
    "mixed_sign": lambda n, rng: rng.normal(size=n),
    "huge": lambda n, rng: 10 ** rng.uniform(20, 300, n),
    "tiny": lambda n, rng: 10 ** rng.uniform(-300, -200, n),
    "some_inf": lambda n, rng: np.where(rng.random(n) < 0.1, np.inf, rng.random(n) + 1),
    "some_minus_inf": lambda n, rng: np.where(rng.random(n) < 0.1, -np.inf, rng.random(n) + 1),
    "half_nan": lambda n, rng: np.where(rng.random(n) < 0.5, np.nan, rng.random(n)),
}


@pytest.mark.parametrize("kind", EDGE_VALUES)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 9, 60])
def test_edge_inputs_give_a_diagnosis_not_a_traceback(kind, n):
    rng = np.random.default_rng(n)
    make = EDGE_VALUES[kind]
    steps = np.repeat(np.arange(n), 2)[:n] + 1000  # duplicate steps, not starting at 0
    val_steps = np.arange(n // 5) * 10 + 1000
    frame = scalar_frame(
        run="r",
        tag=["train/loss"] * n + ["val/loss"] * len(val_steps) + ["lr"] * n + ["grad_norm"] * n,
        step=np.concatenate([steps, val_steps, steps, steps]),
        value=np.concatenate([make(n, rng), make(len(val_steps), rng), make(n, rng), make(n, rng)]),
    )
    d = diagnose_run(frame)
    assert d.verdict.label in {"normal", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data"}
    assert 0.0 <= d.verdict.confidence <= 1.0
    json.dumps(d.to_dict(), allow_nan=False)


def test_validation_keyed_by_epoch_is_placed_at_the_end_of_its_epoch():
    train_steps = np.arange(1, 1001)
    epochs = (train_steps - 1) // 100  # 10 epochs of 100 iterations, 0-based like Lightning
    train = 0.05 + 2 * np.exp(-train_steps / 150)
    val_epochs = np.arange(10)
    val = np.array([2.0, 1.2, 0.9, 0.8, 0.78, 0.82, 0.9, 1.0, 1.1, 1.2])
    frame = scalar_frame(run="r", tag=["train_loss"] * 1000 + ["val_loss"] * 10,
                         step=np.concatenate([train_steps, val_epochs]), value=np.concatenate([train, val]),
                         epoch=np.concatenate([epochs, val_epochs]).astype(float))
    d = diagnose_run(frame)
    assert any("keyed by epoch" in w for w in d.warnings)
    assert d.verdict.label == "overfitting" and d.overfitting.onset_step == 500  # end of epoch 4
    without_epochs = diagnose_run(frame.drop(columns="epoch"))
    assert any("judged on its own" in w for w in without_epochs.warnings)
    assert without_epochs.overfitting.onset_step == 4 and without_epochs.overfitting.train_tag is None


def test_plot_returns_the_axes_and_never_recomputes(monkeypatch):
    import sys

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tests.conftest import SAMPLE_RUNS

    d = diagnose(tanalyze.load(SAMPLE_RUNS / "diverged_tensorboard"))["diverged_tensorboard"]
    module = sys.modules["tanalyze.diagnose"]

    def boom(*args, **kwargs):
        raise AssertionError("plot() recomputed")

    for name in ("analyze_divergence", "classify_run", "diagnose_run", "_curves_by_tag"):
        monkeypatch.setattr(module, name, boom)
    _, ax = plt.subplots()
    assert d.plot(ax=ax) is ax and d.plot(ax=ax) is ax  # compute once, plot many
    marks = {line.get_label(): line.get_xdata()[0] for line in ax.get_lines() if len(line.get_xdata()) == 2}
    assert marks["diverged (nan)"] == 552 and marks["blow-up onset"] == 544 and marks["resume at or before"] == 444
    plt.close("all")


def test_diagnose_takes_a_path_as_check_does():
    from tests.conftest import SAMPLE_RUNS

    by_path = tanalyze.diagnose(SAMPLE_RUNS / "diverged_tensorboard")
    by_logs = tanalyze.diagnose(tanalyze.load(SAMPLE_RUNS / "diverged_tensorboard"))
    assert list(by_path) == list(by_logs)
    name = next(iter(by_path))
    assert by_path[name].verdict.label == by_logs[name].verdict.label == "diverged"


def test_pauses_at_epoch_starts_are_time_spent_not_stalls():
    # 4 epochs of 150 steps logged every 5 steps at 0.5 s/step; each epoch after the first starts after a 30 s
    # end-of-epoch pass (no validation curve is logged, only the epoch counter; 3 pauses: too few for a period)
    from tanalyze.schema import scalar_frame

    rng = np.random.default_rng(3)
    steps = np.arange(5, 605, 5)
    gaps = 2.5 * np.exp(rng.normal(0, 0.03, steps.size))
    gaps[np.isin(steps, [155, 305, 455])] += 30.0
    wall = 1000.0 + np.cumsum(gaps)
    loss = 2.0 * np.exp(-steps / 300) + 0.1 + rng.normal(0, 0.01, steps.size)
    frame = scalar_frame(run="r", tag=["train/loss"] * steps.size, step=steps, value=loss, wall_time=wall,
                         epoch=(steps - 5) // 150)
    d = diagnose_run(frame)
    codes = {f.code: str(f.severity) for f in d.findings}
    assert "throughput_stall" not in codes and codes["evaluation_time"] == "info"
    [f] = [f for f in d.findings if f.code == "evaluation_time"]
    assert f.evidence["steps"] == [155, 305, 455] and "epoch" in f.message
    assert f.evidence["seconds"] == pytest.approx(3 * 30, rel=0.05)
    assert f.evidence["share"] == pytest.approx(90 / (90 + 595 * 0.5), rel=0.05)
    assert "evaluate less often" in f.message


@pytest.mark.real_logs
def test_loss_nan_from_the_first_step_is_a_broken_start_not_a_learning_rate_or_metric_problem():
    """A real llm.c job whose validation loss is NaN before the first update and whose training loss is NaN from
    step 1: the divergence says it was never finite and names the start (checkpoint, inputs, numerics); the
    validation NaN is not blamed on the metric "while the training loss is finite"."""
    path = real_log("crash_logs/HectorFCardenas__llm.c/gpt2_train.11672255.log")
    [d] = tanalyze.diagnose(tanalyze.load(path)).values()
    assert d.verdict.label == "diverged" and d.divergence.never_finite and d.divergence.step == 1
    assert d.verdict.reasons[0] == "train/loss was NAN from its first logged step (1) and never finite"
    [finding] = [f for f in d.findings if f.code == "diverged_nonfinite"]
    assert "lower the learning rate" not in finding.message and "checkpoint or initialisation" in finding.message
    assert not [f for f in d.findings if f.code == "metric_nonfinite"]


@pytest.mark.parametrize("lines", [
    ["End of epoch 0 / 100 \t Time Taken: 1606.5 sec", "Generator Loss: 3844.1664, Discriminator Loss: 1286.4466",
     "learning rate = 0.0002000", "End of epoch 1 / 100 \t Time Taken: 1603.3 sec",
     "Generator Loss: 3053.6426, Discriminator Loss: 696.8782"],  # a console no reader claims
    ["[epoch:1/1200] [loss:0.2329] [lr:0.009304] [Time:[2022-08-28 00:11:31]]",
     "[epoch:2/1200] [loss:0.0082] [lr:0.008603] [Time:[2022-08-28 00:13:57]]"],  # one a reader claims, reads nothing of
])
def test_a_killed_job_whose_metric_lines_could_not_be_read_did_not_end_before_logging(tmp_path, lines):
    """A job cancelled by its scheduler after 47 epochs of a print format no reader knows: its verdict said 'the
    job ended before it logged any metric', an ERROR that told its user it never trained. It logged, unread."""
    console = tmp_path / "train.out"
    console.write_text("Initializing model...\n" + "\n".join(lines) + "\nslurmstepd-node: error: *** JOB 11863 ON node "
                       "CANCELLED AT 2022-05-22T12:41:13 ***\n")
    [d] = tanalyze.diagnose(tanalyze.load(tmp_path, cache=False)).values()
    assert d.status.status == "killed" and d.verdict.label == "insufficient_data"
    assert d.verdict.reasons[0].startswith("no metric could be read: the console has lines that look like metrics")
    assert [f.code for f in d.findings if f.code in ("metrics_unread", "ended_before_metrics")] == ["metrics_unread"]
    assert "--pattern REGEX" in next(f for f in d.findings if f.code == "metrics_unread").recommendation


@pytest.mark.real_logs
def test_a_job_that_ran_out_of_memory_before_its_first_step_is_a_run_that_says_so(capsys):
    """Real llm.c jobs that died while allocating (out of memory) or on an assertion, before any step: each is a
    run whose verdict says the job ended before logging and how; ``check`` fails it."""
    folder = real_log("crash_logs/HectorFCardenas__llm.c")
    diagnoses = tanalyze.diagnose(tanalyze.load(folder))
    oom = diagnoses["HectorFCardenas__llm.c/gpt2_train.11672072.log"]
    assert oom.format == "job-console" and oom.status.status == "oom" and oom.verdict.label == "insufficient_data"
    assert oom.verdict.reasons == ("the job ended (oom: GPU out of memory (failed allocation: 39612 MiB for "
                                   "activations)) before it logged any metric",)
    [ended] = [f for f in oom.findings if f.code == "ended_before_metrics"]
    assert ended.severity == "error" and "smaller micro-batch" in ended.recommendation
    assert not [f for f in oom.findings if f.code == "insufficient_data"]
    assert diagnoses["HectorFCardenas__llm.c/gpt2_train.11673594.log"].status.status == "crashed"
    assert sorted(d.format for d in diagnoses.values()).count("job-console") == 5
    slurm = tanalyze.load(real_log("distributed_logs/HEISENYAN__openvla-oft"), cache=False)
    (info,) = slurm.runs.values()  # several failed attempts in one slurm.out: its tracebacks told, the last named
    assert info.format == "job-console" and info.status.status == "killed"
    assert "14 Python traceback(s) in the log; last exception: torch.distributed.elastic.multiprocessing.errors." \
           "ChildFailedError" in info.notes
    assert main(["check", str(folder / "gpt2_train.11672072.log"), "--no-cache"]) == 1
    assert "FAIL  run_status       oom: GPU out of memory" in capsys.readouterr().out


@pytest.mark.real_logs
def test_loss_rising_in_the_last_epoch_of_a_finished_fine_tune_is_information():
    """A real Alpaca fine-tune (3 epochs, W&B exit code 0) whose loss rises through its last epoch: the
    divergence warning it earns is information, since the run finished; the verdict stays normal."""
    path = real_log("wandb_local/0-KaiKai-0__stanford_alpaca/wandb/run-20231102_032820-iqu955sp")
    [d] = tanalyze.diagnose(tanalyze.load(path)).values()
    assert d.status.status == "finished" and d.verdict.label == "normal"
    [w] = [f for f in d.findings if f.code == "divergence_warning"]
    assert w.severity == "info" and w.step == 1071 and "when the run finished" in w.message


@pytest.mark.real_logs
def test_gradient_spikes_the_loss_absorbed_are_information_on_a_real_run():
    """A real 19,560-step llm.c GPT-2 run: five transient gradient-norm spikes (up to 13.8x) that its loss did
    not follow are information, not a warning."""
    path = real_log("llmc_logs/HectorFCardenas__llm.c/gpt2_train.11685414.log")
    [d] = tanalyze.diagnose(tanalyze.load(path)).values()
    [f] = [f for f in d.findings if f.code == "grad_explosion"]
    assert f.severity == "info" and f.evidence["count"] == 5 and f.evidence["loss_rise"] < 1.1
    assert d.verdict.label == "normal"


@pytest.mark.real_logs
def test_a_lone_low_evaluation_is_not_taken_for_the_validation_minimum_on_real_detr_runs():
    """Two real DETR runs (300 and 239 epochs). In the first, the test loss levels off near 8.2 by epoch 80
    and falls to 8.0 after the learning-rate drop at 200 (AP still rising): one evaluation drawn low (7.64 at
    epoch 92, its neighbours 8.03 and 8.57) is no minimum to count a stall from, so the run is normal. In the
    second the test loss turns at epoch 45 and climbs 37%: overfitting, from there, not from a lone low draw."""
    root = real_log("detr_log_txt/PukarBaral__sten_detr")
    [flat] = tanalyze.diagnose(tanalyze.load(root / "outputs")).values()
    assert flat.roles["val_loss"] == "test_loss" and flat.verdict.label == "normal"
    assert not [f for f in flat.findings if f.code == "overfitting"]
    [rising] = tanalyze.diagnose(tanalyze.load(root / "outputs_2")).values()
    assert rising.verdict.label == "overfitting" and rising.overfitting.pattern == "rising"
    assert rising.overfitting.onset_step == 45 and rising.overfitting.val_min == pytest.approx(13.39728, abs=1e-4)


@pytest.mark.real_logs
def test_a_real_t5_fine_tune_that_falls_seven_percent_is_normal():
    """The HF Trainer's TensorBoard run of a T5 summarisation fine-tune (3 epochs, lr 5e-5 to 0): the loss falls
    from 2.0 to 1.77 and levels off, 6.9% in all. Its ``model_config`` text names a T5ForConditionalGeneration
    over 32,128 tokens, whose loss from scratch starts at ln(32128) = 10.4: it started from trained weights, and
    a small fall is what a fine-tune converging looks like (it was "underfitting: needs a 10% decrease")."""
    [d] = tanalyze.diagnose(tanalyze.load(real_log("tfevents/10844110__t5-summarization-demo"))).values()
    assert d.verdict.label == "normal" and d.verdict.evidence["change"] == pytest.approx(-0.0685, abs=1e-3)
    assert "T5ForConditionalGeneration; it starts at 1.996, far below ln(32128) = 10.38" in \
        d.verdict.evidence["trained_start"]
    assert not [f for f in d.findings if f.code == "underfitting"]


@pytest.mark.real_logs
def test_reinforcement_learning_runs_are_judged_by_their_reward():
    """Real RL runs. verl GRPO (Qwen2.5-1.5B): its reward stays 0 while the policy entropy climbs from 0.46 to
    11.6 nats, near uniform over the vocabulary: a collapse, told by the entropy, not by a sum of the actor's
    loss terms. DeepSpeed-Chat RLHF: the reward rises from -0.7 to 4.7; its actor and critic losses swing
    around zero by design and earn no warning. A Keras DQN's CartPole-like episodes reach the 200 cap (normal);
    a connect-four agent that never wins in 7,870 episodes is not learning."""
    [verl] = tanalyze.diagnose(tanalyze.load(real_log("distributed_logs/Foo1szz__verl"))).values()
    assert verl.roles["reward"] == "critic/rewards/mean" and verl.roles["policy_entropy"] == "actor/entropy"
    assert verl.verdict.label == "diverged" and verl.verdict.evidence["main_curve"] == "critic/rewards/mean"
    assert [f.code for f in verl.findings if f.severity == "error"] == ["policy_collapse"]
    assert verl.verdict.evidence["entropy_end"] == pytest.approx(11.6, abs=0.05)

    chat = real_log("deepspeed_text_log/microsoft__DeepSpeedExamples/applications/DeepSpeed-Chat/training/"
                    "step3_rlhf_finetuning")
    [rlhf] = tanalyze.diagnose(tanalyze.load(chat)).values()
    assert rlhf.roles["reward"] == "average reward score" and rlhf.verdict.label == "normal"
    assert rlhf.verdict.evidence["end_level"] > 4.0 > 0.5 > rlhf.verdict.evidence["start_level"]
    assert not [f for f in rlhf.findings if f.severity != "info" and f.code in ("divergence_warning", "loss_spike")]

    runs = tanalyze.diagnose(tanalyze.load(real_log("wandb_system/13udha__connect-four-tensorflow")))
    labels = {name.rsplit("-", 1)[-1]: d.verdict.label for name, d in runs.items()}
    assert labels == {"5gikewie": "underfitting", "qtikjrov": "normal"}


def test_a_policy_loss_that_swings_is_no_divergence_of_a_learning_rl_run():
    """A really trained REINFORCE run (bench/hardcases/rl_learns): its per-episode policy loss swings by orders of
    magnitude as episodes lengthen, which read as a loss would be an explosion; the reward reaches the cap."""
    path = Path(__file__).resolve().parents[1] / "bench" / "hardcases" / "rl_learns"
    [d] = tanalyze.diagnose(tanalyze.load(path)).values()
    assert d.roles["reward"] == "episode/reward" and d.verdict.label == "normal"
    assert d.loss_analysis.divergence is not None and d.loss_analysis.divergence.kind == "explosion"
    assert d.divergence is None and d.early_warning is None and d.throughput is None
    assert not [f for f in d.findings if f.severity != "info"]
    # with the reward role switched off, the run is judged by its policy loss, as before RL runs were known
    [by_loss] = tanalyze.diagnose(tanalyze.load(path), roles={"reward": None}).values()
    assert by_loss.verdict.evidence["main_role"] == "train" and by_loss.divergence is not None


def test_a_reward_printed_once_after_training_does_not_make_the_run_reinforcement_learning():
    # an SFT script that logs its loss every few steps and prints one evaluation reward at the end
    steps = np.arange(8, 168, 8)
    loss = 2.0 * np.exp(-np.arange(20) / 6) + 0.2
    frame = scalar_frame(run="sft", tag=["loss"] * 20 + ["reward"], step=np.r_[steps, 160],
                         value=np.r_[loss, 0.0243])
    d = diagnose_run(frame)
    assert d.verdict.label == "normal" and d.verdict.evidence["main_curve"] == "loss"
    assert any("reward has only 1 point(s): the run is judged by its loss" in w for w in d.warnings)
    # a reward curve still decides
    rl = scalar_frame(run="rl", tag=["loss"] * 20 + ["reward"] * 20, step=np.r_[steps, steps],
                      value=np.r_[loss, np.linspace(10, 200, 20)])
    assert "reward" in " ".join(diagnose_run(rl).verdict.reasons)


def test_models_compared_in_one_log_are_not_one_curve_that_blew_up():
    """A loop over three models, each from its first epoch (tests/fixtures/model_comparison): read as one curve,
    the CNN's first loss after the MLP's last was a divergence. Each training is judged on its own: here the
    longest has seven epochs, too few to judge."""
    [d] = tanalyze.diagnose(tanalyze.load(Path(__file__).resolve().parent / "fixtures" / "model_comparison"
                                          / "train.log")).values()
    assert d.verdict.label == "insufficient_data" and d.divergence is None and d.spikes == ()
    assert d.phase is not None and (d.phase.first_step, d.phase.last_step) == (1, 7)
    [restarts] = [f for f in d.findings if f.code == "restarts_time_lost"]
    assert restarts.message.startswith("1 new start from scratch at step 8")
    assert "1 other session appended to the log" in restarts.message


def test_a_losses_table_of_split_columns_is_judged_by_them():
    """tests/fixtures/loss_tables: a real training that overfits, its losses saved as ``train``, ``valid`` columns of
    losses.csv (not read before): the validation loss is lowest at epoch 3 and doubles by the end."""
    [d] = tanalyze.diagnose(tanalyze.load(Path(__file__).resolve().parent / "fixtures" / "loss_tables")).values()
    assert d.roles["train_loss"] == "loss/train" and d.roles["val_loss"] == "loss/valid"
    assert d.verdict.label == "overfitting" and d.overfitting.onset_step == 3


def test_a_hand_written_reinforcement_learning_loop_is_judged_by_its_reward():
    """tests/fixtures/rl_episodes: a real Q-learning loop's ``Episode N | Avg Reward: …`` lines (not read before); its
    average reward climbs from -4 to 9: a learning run."""
    [d] = tanalyze.diagnose(tanalyze.load(Path(__file__).resolve().parent / "fixtures" / "rl_episodes")).values()
    assert d.roles == {"reward": "Avg Reward"} and d.verdict.label == "normal"
    assert d.verdict.reasons[0].startswith("Avg Reward rose from")


def test_a_new_start_after_a_log_whose_first_session_began_low_is_still_a_new_start(tmp_path):
    """A CSVLogger(append=True) file of three launches: a false start whose loss began low (0.77) and broke, then two
    trainings from scratch (1.16 → 0.79, then 1.21 → 0.27). The third's start was measured against the log's first
    value, 0.77, below where the second ended: it was 'a session appended', not a new start."""
    rows = [(0, 0.77), (1, 0.0), (2, 0.57), (0, 1.16), (1, 0.96), (2, 0.79)]
    rows += [(e, 1.21 * 0.88 ** e + 0.03) for e in range(16)]
    (tmp_path / "training.log").write_text("epoch,loss\n" + "".join(f"{e},{v}\n" for e, v in rows))
    [d] = tanalyze.diagnose(tanalyze.load(tmp_path, cache=False)).values()
    [restarts] = [f for f in d.findings if f.code == "restarts_time_lost"]
    assert restarts.message.startswith("2 new starts from scratch at steps 3, 6")


SB3_RL = Path(__file__).resolve().parent / "fixtures" / "sb3_rl"
#: Findings about a loss's shape, meant for supervised losses: never raised on a reinforcement-learning run's losses
LOSS_SHAPE = {"loss_spike", "diverged_explosion", "plateau", "underfitting", "divergence_warning"}


def test_a_reinforcement_learning_run_that_logged_no_reward_cannot_be_judged():
    """A real SB3 PPO run on a CartPole no Monitor wraps (tests/fixtures/sb3_rl): its console tables hold PPO's
    train/ statistics and no rollout/ section. Its train/loss (the surrogate, value and entropy terms combined)
    rises as the value loss grows with longer episodes: it was judged underfitting, with a loss spike."""
    [d] = tanalyze.diagnose(tanalyze.load(SB3_RL / "ppo_no_reward")).values()
    assert d.format == "sb3_console" and "reward" not in d.roles
    assert "train/approx_kl" in d.role_details.reinforcement
    assert d.verdict.label == "insufficient_data" and d.verdict.evidence["reinforcement"] is True
    assert d.verdict.reasons[0].startswith("no reward, episode return or success rate was logged")
    assert [f.code for f in d.findings] == ["reward_missing"]
    assert d.spikes == () and d.progress is None and d.early_warning is None
    assert not [w for w in d.warnings if "validation loss" in w or "no training loss" in w]


@pytest.mark.parametrize("run, loss", [("ppo_learns", "train/loss"), ("a2c_learns", "train/policy_loss")])
def test_a_learning_reinforcement_learning_run_earns_no_loss_shape_finding(run, loss):
    """Real SB3 PPO and A2C runs on monitored CartPoles: the reward climbs (PPO 18 -> 117, A2C 25 -> 271); A2C's
    value loss jumps 4-9x at three updates as episodes lengthen, which read as a supervised loss was an explosion.
    A2C logs its policy, value and entropy terms and no total: one term is the training loss, none summed."""
    [d] = tanalyze.diagnose(tanalyze.load(SB3_RL / run)).values()
    assert d.roles["reward"] == "rollout/ep_rew_mean" and d.verdict.label == "normal"
    assert d.roles["train_loss"] == loss
    assert not [f for f in d.findings if f.code in LOSS_SHAPE] and d.spikes == () and d.divergence is None


@pytest.mark.real_logs
@pytest.mark.parametrize(("folder", "format"), [("megatron_text_log", "megatron"), ("llmc_logs", "llmc"),
                                                ("modded_nanogpt_logs", "modded_nanogpt"),
                                                ("yolo_results_csv", "yolo_csv")])
def test_the_planned_steps_each_format_keeps_are_in_its_runs(real_logs, folder, format):
    """Where a format's run keeps the steps its trainer planned (Megatron's train_iters, llm.c's batches, modded-
    nanogpt's num_iterations, a YOLO run's epochs): each real run of the format has it, so a run cut in its first tenth is too early to
    call underfitting."""
    from tanalyze.diagnose import _PLANNED_STEPS

    runs = {name: info for name, info in tanalyze.load(real_logs / folder).runs.items() if info.format == format}
    assert runs
    for name, info in runs.items():
        planned = [info.hparams.get(key) for key in _PLANNED_STEPS[format]]
        assert any(isinstance(value, int) and value > 0 for value in planned), name


def test_an_episode_log_with_no_episode_says_so(tmp_path):
    """An SB3 Monitor file of its header lines only (the environment closed before an episode ended): its verdict had
    said "no loss curve was found", as if a loss were to be looked for in an episode log."""
    (tmp_path / "monitor.csv").write_text('#{"t_start": 1796617085.98, "env_id": "CartPole-v1"}\nr,l,t\n')
    [d] = tanalyze.diagnose(tanalyze.load(tmp_path)).values()
    assert d.verdict.label == "insufficient_data"
    assert d.verdict.reasons == ("no episode was recorded (the episode log holds its header only): the policy cannot "
                                 "be judged",)
    assert [f.message for f in d.findings if f.code == "insufficient_data"][0].startswith("No episode was recorded")
