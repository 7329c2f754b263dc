"""System metrics: which tags are which resource, and the three findings on real and constructed series."""

import json
from pathlib import Path

import numpy as np
import pytest

import tanalyze
from tanalyze.analysis.system import SystemSeries, analyze_system
from tanalyze.curves import Curve
from tanalyze.roles import resource_kind
from tests.conftest import real_log

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysmetrics"
SYSTEM_CODES = {"gpu_util_drops", "thermal_throttling", "memory_near_capacity"}


def system_codes(diagnosis):
    return sorted(f.code for f in diagnosis.findings if f.code in SYSTEM_CODES)


def one(path):
    diagnoses = tanalyze.diagnose(tanalyze.load(path, cache=False))
    assert len(diagnoses) == 1
    return diagnoses[next(iter(diagnoses))]


# --- recognising tags -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "kind", "device", "unit", "clock"),
    [
        ("system/gpu.0.gpu", "gpu_util", "gpu0", "%", "wall"),
        ("system/gpu.3.memoryAllocated", "gpu_memory", "gpu3", "%", "wall"),
        ("system/gpu.1.memoryAllocatedBytes", "gpu_memory", "gpu1", "bytes", "wall"),
        ("system/gpu.0.temp", "gpu_temp", "gpu0", "C", "wall"),
        ("system/gpu.0.powerWatts", "gpu_power", "gpu0", "W", "wall"),
        ("system/gpu.0.smClock", "gpu_clock", "gpu0", "MHz", "wall"),
        ("system.gpu.0.gpu", "gpu_util", "gpu0", "%", "wall"),  # the API's spelling
        ("system/cpu", "cpu", "host", "%", "wall"),
        ("system/memory", "host_memory", "host", "%", "wall"),
        ("system/memory_percent", "host_memory", "host", "%", "wall"),
        ("DeviceStatsMonitor.on_train_batch_end/cpu_percent", "cpu", "host", "%", "step"),
        ("DeviceStatsMonitor.on_train_batch_end/cpu_vm_percent", "host_memory", "host", "%", "step"),
        ("DeviceStatsMonitor.on_train_batch_start/allocated_bytes.all.current", "gpu_memory", "gpu", "bytes", "step"),
        ("gpu_id: 1/temperature.gpu (°C)", "gpu_temp", "gpu1", "C", "step"),
    ],
)
def test_resource_kind(tag, kind, device, unit, clock):
    found = resource_kind(tag)
    assert (found.kind, found.device, found.unit, found.clock) == (kind, device, unit, clock)


@pytest.mark.parametrize("tag", ["system/gpu.process.0.gpu", "system/cpu.3.cpu_percent", "system/proc.memory.percent",
                                 "system/disk", "system/network.recv", "train/loss", "gpu_memory", "memory",
                                 "DeviceStatsMonitor.on_train_batch_end/cpu_swap_percent"])
def test_not_a_resource(tag):
    assert resource_kind(tag) is None


def test_training_batch_hook_is_preferred():
    end = resource_kind("DeviceStatsMonitor.on_train_batch_end/cpu_percent")
    start = resource_kind("DeviceStatsMonitor.on_train_batch_start/cpu_percent")
    val = resource_kind("DeviceStatsMonitor.on_validation_batch_end/cpu_percent")
    assert end.rank < start.rank < val.rank


# --- real W&B system metrics --------------------------------------------------------------------------


def test_thermal_throttling_on_a_real_run():
    """nanoGPT on one GPU: temperature 62 → 87 °C plateau; power falls 252 → ~178 W at ~97% utilisation and the
    iteration time (console) goes from ~272 to ~320 ms once the plateau is reached."""
    d = one(real_log("wandb_local/jackokeefe11__nanoGPT/wandb/run-20240214_195452-kt2awly2"))
    assert system_codes(d) == ["thermal_throttling"]
    (t,) = [t for t in d.system.throttling if t.detected]
    assert t.device == "gpu0" and t.tag == "system/gpu.0.temp"
    assert t.plateau == pytest.approx(87.13, abs=0.01)
    assert t.cool == pytest.approx(63.53, abs=0.01)
    assert t.onset == 390  # seconds after the start
    assert t.signal == "step time" and t.signal_tag == "time_ms"
    assert t.before == pytest.approx(271.9, abs=0.05) and t.after == pytest.approx(319.88, abs=0.05)
    assert t.change == pytest.approx(-0.15, abs=0.005)
    # placed at a training step from the W&B history's (wall time, step) pairs (steps 250 and 500 were logged 274 s
    # and 390 s after step 0)
    assert 250 <= t.onset_step <= 500
    pairs = d.system.step_at  # seconds → step along the run: both never go back, inside the logged steps
    assert len(pairs) >= 30 and all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(pairs, pairs[1:], strict=False))
    assert 0 <= pairs[0][1] and pairs[-1][1] <= 5000
    finding = next(f for f in d.findings if f.code == "thermal_throttling")
    assert finding.step == t.onset_step and "87°C" in finding.message


def test_memory_near_capacity_on_eight_real_gpus():
    """LLaMA-7B FSDP on 8 × 80 GB: NVML memory at 98-99.7% for most of the run."""
    d = one(real_log("wandb_local/0-KaiKai-0__stanford_alpaca/wandb/run-20231102_032820-iqu955sp"))
    assert system_codes(d) == ["memory_near_capacity"]
    f = next(f for f in d.findings if f.code == "memory_near_capacity")
    assert f.severity == "warning"
    assert "on 8 of 8 GPUs" in f.message and "peak 99.7% on gpu1" in f.message
    assert len(f.evidence["devices"]) == 8
    # the old per-role check on system/gpu.0.memoryAllocated does not add a second finding
    assert sum(1 for g in d.findings if g.code == "memory_near_capacity") == 1
    gpu1 = next(m for m in d.system.memory if m.device == "gpu1")
    assert gpu1.peak_percent == pytest.approx(99.7) and gpu1.samples_above == 143
    assert {s.device for s in d.system.series if s.kind == "gpu_util"} == {f"gpu{i}" for i in range(8)}
    assert not any(dr.periodic for dr in d.system.drops)
    json.dumps(d.to_dict())


@pytest.mark.parametrize("relative", [
    "wandb_local/jackokeefe11__nanoGPT/wandb/run-20240214_191836-mw8ngzqq",
    "wandb_local/mfts__spaceinvaders-wandb-challenge/wandb",
    "wandb_system/MinhwaCho__hyphae_yolov7/wandb/offline-run-20231218_034439-4pby97dy",
    "wandb_system/13udha__connect-four-tensorflow/wandb/run-20191220_140518-5gikewie",
])
def test_no_system_finding_on_quiet_real_runs(relative):
    d = one(real_log(relative))
    assert d.system is not None and d.system.series
    assert system_codes(d) == []


def test_old_events_file_names():
    """wandb 0.8 wandb-events.jsonl: system.gpu.0.* and system.cpu / system.memory, read as system/* tags."""
    d = one(real_log("wandb_local/mfts__spaceinvaders-wandb-challenge/wandb"))
    kinds = {(s.kind, s.device, s.tag) for s in d.system.series}
    assert kinds == {("gpu_util", "gpu0", "system/gpu.0.gpu"), ("gpu_memory", "gpu0", "system/gpu.0.memoryAllocated"),
                     ("gpu_temp", "gpu0", "system/gpu.0.temp"), ("gpu_power", "gpu0", "system/gpu.0.powerWatts"),
                     ("gpu_power", "gpu0", "system/gpu.0.powerPercent"), ("cpu", "host", "system/cpu"),
                     ("host_memory", "host", "system/memory")}
    temp = next(s for s in d.system.series if s.kind == "gpu_temp")
    assert (temp.points, temp.minimum, temp.maximum) == (18, pytest.approx(49.93, abs=0.01), pytest.approx(67.0))


# --- fixtures written on CPU ------------------------------------------------------------------------------


def test_wandb_offline_cpu_run():
    """wandb 0.31 offline on CPU: system/cpu and system/memory_percent in the record file's stats records."""
    d = one(FIXTURES / "wandb_cpu")
    assert {(s.kind, s.tag) for s in d.system.series} == {("cpu", "system/cpu"), ("host_memory", "system/memory_percent")}
    assert all(s.clock == "wall" and s.points >= 20 for s in d.system.series)
    assert "interpolating" in d.system.alignment
    assert system_codes(d) == []


def test_lightning_device_stats_monitor_on_cpu():
    d = one(FIXTURES / "lightning_cpu")
    by_kind = {s.kind: s for s in d.system.series}
    assert set(by_kind) == {"cpu", "host_memory"}
    assert by_kind["cpu"].tag == "DeviceStatsMonitor.on_train_batch_end/cpu_percent"
    assert by_kind["host_memory"].tag == "DeviceStatsMonitor.on_train_batch_end/cpu_vm_percent"
    assert by_kind["cpu"].clock == "step" and by_kind["cpu"].points == 10
    assert d.system.alignment == "logged at training steps"


# --- constructed series: what fires and what does not -------------------------------------------------------


def series(kind, values, device="gpu0", unit="%", tag=None, every=30.0, start_wall=1_000.0):
    x = np.arange(len(values)) * every
    curve = Curve(tag or f"system/{device}.{kind}", x.astype(np.int64), np.asarray(values, dtype=float),
                  start_wall + x)
    return SystemSeries(kind, device, unit, "wall", curve)


def util_with_drops(n=120, every=10, width=2, seed=0, level=95.0, low=10.0, jitter=0):
    rng = np.random.default_rng(seed)
    v = level + rng.normal(0, 2, n)
    start = 5
    while start + width < n:
        v[start:start + width] = low
        start += every + (int(rng.integers(-jitter, jitter + 1)) if jitter else 0)
    return np.clip(v, 0, 100)


def test_periodic_drops_are_found():
    r = analyze_system([series("gpu_util", util_with_drops())])
    (d,) = r.drops
    assert d.periodic and d.drops == 12 and d.period == 300.0 and d.period_cv == pytest.approx(0.0)
    assert d.share == pytest.approx(24 / 120, abs=0.01)
    (f,) = r.findings
    assert f.code == "gpu_util_drops" and f.severity == "warning" and "every 5.0 min" in f.message
    assert "num_workers" in f.recommendation and "pin_memory" in f.recommendation


def test_irregular_or_rare_drops_are_not():
    rng = np.random.default_rng(1)
    v = 95 + rng.normal(0, 2, 120)
    for i in (7, 19, 23, 61, 64, 110):  # six isolated drops at irregular times
        v[i] = 5
    assert analyze_system([series("gpu_util", v)]).findings == ()
    noisy = np.clip(90 + rng.normal(0, 8, 200), 0, 100)  # noise only
    assert analyze_system([series("gpu_util", noisy)]).findings == ()


def test_drops_at_evaluations_are_not_a_loading_bottleneck():
    v = util_with_drops()
    util = series("gpu_util", v)
    # training steps 0..11_900 logged with wall times; an evaluation at every drop
    steps = np.arange(0, 12_000, 100)
    clock = Curve("train/loss", steps, np.ones(steps.size), 1_000.0 + steps * 0.3)
    eval_steps = ((5 + 10 * np.arange(12)) * 30.0 / 0.3).astype(np.int64)
    r = analyze_system([util], step_clock=clock, eval_steps=eval_steps)
    assert r.drops[0].at_evaluation == 1.0 and r.findings == ()
    # the same drops without evaluations: reported, and placed at training steps
    r = analyze_system([util], step_clock=clock)
    (f,) = r.findings
    assert f.step == 500  # 150 s after the start = step 500 at 0.3 s/step


def test_a_cool_gpu_or_a_steady_clock_is_not_throttling():
    n = 60
    temp = np.concatenate([np.linspace(50, 86, 10), np.full(n - 10, 86.0)])
    steady = np.full(n, 1800.0) + np.random.default_rng(0).normal(0, 5, n)
    r = analyze_system([series("gpu_temp", temp), series("gpu_clock", steady, unit="MHz")])
    assert r.throttling[0].signal == "clock" and not r.throttling[0].detected and r.findings == ()
    falling = np.where(np.arange(n) < 10, 1950.0, 1600.0) + np.random.default_rng(0).normal(0, 5, n)
    r = analyze_system([series("gpu_temp", temp), series("gpu_clock", falling, unit="MHz")])
    (f,) = r.findings
    assert f.code == "thermal_throttling" and r.throttling[0].change == pytest.approx(1600 / 1950 - 1, abs=0.01)
    cool = np.concatenate([np.linspace(40, 70, 10), np.full(n - 10, 70.0)])  # under 80 °C: never judged
    assert analyze_system([series("gpu_temp", cool), series("gpu_clock", falling, unit="MHz")]).throttling == ()


def test_host_memory_and_gpu_bytes_with_a_known_capacity():
    host = np.concatenate([np.full(20, 60.0), np.full(5, 95.0)])
    (f,) = analyze_system([series("host_memory", host, device="host", tag="system/memory")]).findings
    assert f.code == "memory_near_capacity" and f.severity == "warning" and "Host memory" in f.message
    one_sample = np.concatenate([np.full(20, 60.0), [95.0]])  # a single sample over: not enough
    assert analyze_system([series("host_memory", one_sample, device="host")]).findings == ()
    used = np.full(10, 7.6e9)
    r = analyze_system([series("gpu_memory", used, unit="bytes", tag="b")], gpu_capacity_bytes=None)
    assert r.memory == ()  # no capacity known: not judged
    r = analyze_system([series("gpu_memory", used, unit="bytes", tag="b")], gpu_capacity_bytes=8e9)
    assert r.memory[0].peak_percent == pytest.approx(95.0) and r.findings[0].severity == "info"


@pytest.mark.parametrize("seed", range(6))
def test_odd_series_never_raise(seed):
    """Empty, single-point, constant, NaN-riddled, zero and negative series, duplicate times, a step clock going
    backwards: a result (maybe empty), never an exception."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    def values(scale):
        v = rng.normal(scale, scale / 3, n)
        v[rng.random(n) < 0.2] = np.nan
        if n and rng.random() < 0.3:
            v[:] = 0.0
        return v
    x = np.sort(rng.integers(0, 100, n)).astype(np.int64)  # duplicates likely
    wall = 1_000.0 + x + rng.normal(0, 1, n)
    made = [SystemSeries(kind, "gpu0", unit, "wall", Curve(f"t{kind}", x, values(scale), wall))
            for kind, unit, scale in (("gpu_util", "%", 90), ("gpu_temp", "C", 85), ("gpu_clock", "MHz", 1500),
                                      ("gpu_power", "W", 200), ("gpu_memory", "bytes", 1e9), ("host_memory", "%", 95))]
    steps = rng.integers(0, 50, 30).astype(np.int64)  # not sorted: a restarted step counter
    clock = Curve("loss", steps, np.ones(30), np.sort(1_000.0 + rng.random(30) * 100))
    speed = Curve("time_ms", steps, rng.choice([0.0, -1.0, 250.0, np.nan], 30), np.full(30, np.nan))
    r = analyze_system(made, step_clock=clock, speed=speed, speed_higher_is_better=False, eval_steps=steps[:5],
                       gpu_capacity_bytes=2e9)
    json.dumps(r.to_dict())
    assert analyze_system([]).findings == ()


def test_a_judged_session_keeps_the_system_samples():
    """A run with two sessions, the second a fresh start (its steps and loss back where the log began), is judged
    on the last; its W&B samples (step = seconds since the start, here beyond the session's steps) are still
    analysed."""
    import pandas as pd

    from tanalyze.diagnose import diagnose_run
    from tanalyze.readers.base import Phase

    steps = np.arange(0, 200)
    loss = pd.DataFrame({"run": "r", "tag": "train/loss", "step": steps, "value": 2.0 / (1 + steps % 100),
                         "wall_time": 1_000.0 + steps * 10.0})
    seconds = np.arange(0, 2_000, 30)
    host = pd.DataFrame({"run": "r", "tag": "system/memory", "step": seconds,
                         "value": np.where(seconds > 1_500, 96.0, 50.0), "wall_time": 1_000.0 + seconds})
    frame = pd.concat([loss, host], ignore_index=True)
    d = diagnose_run(frame, phases=[Phase(0, 0, 99), Phase(1, 100, 199, offset=100)])
    assert d.phase is not None and d.phase.index == 1
    (memory,) = d.system.memory
    assert memory.tag == "system/memory" and memory.samples_above == 16
    assert [f.code for f in d.findings if f.code == "memory_near_capacity"] == ["memory_near_capacity"]
