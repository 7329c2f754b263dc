"""Table-driven tests of the check rules: (run summary, baseline, config) -> expected status per rule."""

import math

import pytest

from tanalyze.baseline import Baseline, RunSummary
from tanalyze.checks import CheckPolicy, Status, run_checks
from tanalyze.errors import ConfigError


def summary(
    run="cand", label="normal", divergence=None, nonfinite=0, first_bad=None, best=None, final=None,
    gradients=None, progress=None,
):
    diagnosis = {
        "run": run,
        "verdict": {"label": label, "confidence": 0.9, "evidence": {}},
        "divergence": divergence,
        "gradients": gradients,
        "progress": progress,
    }
    return RunSummary(
        run=run, format="test", roles={"train_loss": "loss", "val_loss": "val_loss"}, diagnosis=diagnosis,
        loss_tags=("loss", "val_loss"), nonfinite_loss_points=nonfinite, first_nonfinite_step=first_bad,
        best_val_loss=best, final_val_loss=final,
    )


def baseline(*bests):
    return Baseline("base", tuple(summary(run=f"seed{i}", best=b, final=b) for i, b in enumerate(bests)))


def status_of(report, name):
    (result,) = [r for r in report.rules if r.name == name]
    return result


CASES = [
    # (id, candidate, baseline, config, rule, expected status, message fragment)
    ("healthy run passes verdict", summary(), None, None, "verdict", Status.PASS, "verdict normal"),
    ("unstable fails by default", summary(label="unstable"), None, None, "verdict", Status.FAIL, "unstable"),
    ("overfitting warns by default", summary(label="overfitting"), None, None, "verdict", Status.WARN, "overfitting"),
    ("config moves overfitting to fail", summary(label="overfitting"), None,
     {"verdict": {"fail_on": ["overfitting"]}}, "verdict", Status.FAIL, "overfitting"),
    ("insufficient data skips verdict", summary(label="insufficient_data"), None, None, "verdict", Status.SKIP, "not enough"),
    ("diverged run fails divergence", summary(label="diverged", divergence={"step": 412, "kind": "nan"}), None, None,
     "divergence", Status.FAIL, "step 412"),
    ("no divergence passes", summary(), None, None, "divergence", Status.PASS, "no divergence"),
    ("nan loss fails", summary(nonfinite=3, first_bad=412), None, None, "nonfinite_loss", Status.FAIL, "first at step 412"),
    ("finite loss passes", summary(), None, None, "nonfinite_loss", Status.PASS, "finite"),
    ("no baseline skips val", summary(best=1.0), None, None, "validation_loss", Status.SKIP, "no baseline"),
    ("val within 5% passes", summary(best=1.04), baseline(1.0), None, "validation_loss", Status.PASS, "within"),
    ("val 10% worse fails", summary(best=1.10), baseline(1.0), None, "validation_loss", Status.FAIL, "+10.0%"),
    ("tolerance from config", summary(best=1.10), baseline(1.0), {"validation_loss": {"tolerance": 0.2}},
     "validation_loss", Status.PASS, "within"),
    ("inside seed band passes", summary(best=1.18), baseline(1.0, 1.2, 1.05), None, "validation_loss", Status.PASS, "seed band"),
    ("outside seed band fails", summary(best=1.3), baseline(1.0, 1.2, 1.05), None, "validation_loss", Status.FAIL, "seed band"),
    ("candidate without val skips", summary(), baseline(1.0), None, "validation_loss", Status.SKIP, "no validation loss"),
    ("non-finite best val fails", summary(best=math.nan), baseline(1.0), None, "validation_loss", Status.FAIL, "nan"),
    ("warn_only turns a fail into warn", summary(label="unstable"), None, {"warn_only": ["verdict"]}, "verdict",
     Status.WARN, "warn-only"),
    ("gradient error finding fails", summary(gradients={"findings": [{"severity": "error", "message": "grad norm exploded at step 7"}]}),
     None, None, "gradient_health", Status.FAIL, "exploded at step 7"),
    ("gradient warning warns", summary(gradients={"findings": [{"severity": "warning", "message": "norm above band"}]}),
     None, None, "gradient_health", Status.WARN, "above band"),
    ("no gradient data skips", summary(), None, None, "gradient_health", Status.SKIP, "no gradients"),
    ("progress plateau warns", summary(progress={"findings": [{"severity": "warning", "message": "plateau from step 900"}]}),
     None, None, "loss_progress", Status.WARN, "plateau"),
    ("throughput without baseline skips", summary(), None, None, "throughput", Status.SKIP, "no baseline"),
    ("throughput missing in candidate skips", summary(), baseline(1.0), None, "throughput", Status.SKIP, "logs no throughput"),
]


@pytest.mark.parametrize(("candidate", "base", "config", "rule", "expected", "fragment"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_table(candidate, base, config, rule, expected, fragment):
    policy = CheckPolicy.from_config(config) if config else CheckPolicy()
    report = run_checks([candidate], base, policy, candidate_source="cand")
    result = status_of(report, rule)
    assert result.status is expected, result.message
    assert fragment in result.message


def test_a_failed_rule_fails_the_report_and_warnings_do_not():
    assert not run_checks([summary(label="diverged", divergence={"step": 1, "kind": "inf"})], None).passed
    assert run_checks([summary(label="overfitting")], None).passed


def test_disabled_rule_does_not_run():
    report = run_checks([summary()], None, CheckPolicy.from_config({"disable": ["verdict"]}))
    assert "verdict" not in {r.name for r in report.rules}


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ({"verdcit": {}}, "unknown check rule 'verdcit'"),
        ({"throughput": {"min_chnage": 0.1}}, "unknown parameter(s) ['min_chnage']"),
        ({"disable": ["nope"]}, "unknown rule(s) ['nope']"),
        ({"warn_only": "verdict"}, "must be a list"),
    ],
)
def test_config_typos_are_errors(table, fragment):
    with pytest.raises(ConfigError) as excinfo:
        CheckPolicy.from_config(table, source="tanalyze.toml")
    assert fragment in str(excinfo.value) and "tanalyze.toml" in str(excinfo.value)


def test_report_json_shape():
    data = run_checks([summary(best=1.2)], baseline(1.0)).to_dict()
    assert data["schema"] == "tanalyze.check/1"
    assert data["passed"] is False
    rule = next(r for r in data["rules"] if r["name"] == "validation_loss")
    assert set(rule) >= {"name", "status", "value", "threshold", "p_value", "message"}
    assert rule["status"] == "fail" and rule["value"] == 1.2


def throughput_run(run, level, seed, n=300, kind="samples_per_s"):
    import numpy as np

    from tanalyze.baseline import ThroughputSample

    rng = np.random.default_rng(seed)
    noise = np.zeros(n)
    for i in range(1, n):  # AR(1) noise: consecutive steps are correlated, as real step times are
        noise[i] = 0.6 * noise[i - 1] + rng.normal(0, 0.03)
    values = level * (1 + noise)
    sample = ThroughputSample(kind, "train/samples_per_sec", tuple(range(n)), tuple(values.tolist()))
    base = summary(run=run)
    return RunSummary(**{**base.__dict__, "throughput": sample})


@pytest.mark.parametrize(
    ("candidate_level", "expected", "fragment"),
    [
        (75.0, Status.FAIL, "regression"),  # 25% fewer samples/s
        (100.0, Status.PASS, "no_change"),  # same job, noise only
        (95.0, Status.PASS, "no_change"),  # 5% slower: below the 15% factor
    ],
)
def test_throughput_rule_needs_factor_and_significance(candidate_level, expected, fragment):
    base = Baseline("base", (throughput_run("base", 100.0, seed=1),))
    report = run_checks([throughput_run("cand", candidate_level, seed=2)], base)
    result = status_of(report, "throughput")
    assert result.status is expected, result.message
    assert fragment in result.message or fragment in str(result.details.get("verdict"))
    if expected is Status.FAIL:
        assert result.p_value < 0.002


def test_throughput_rule_skips_when_kinds_differ():
    base = Baseline("base", (throughput_run("base", 100.0, seed=1, kind="tokens_per_s"),))
    result = status_of(run_checks([throughput_run("cand", 75.0, seed=2)], base), "throughput")
    assert result.status is Status.SKIP
    assert "no samples_per_s measurement (it has tokens_per_s)" in result.message


def test_ranks_rule_skips_a_run_of_one_rank():
    result = status_of(run_checks([summary()], None), "ranks")
    assert result.status is Status.SKIP and "several ranks" in result.message


def comm_run(run="cand", share=None, wait=None, straggler=None):
    return RunSummary(run=run, format="test", communication_share=share, straggler_wait_share=wait,
                      straggler_rank=straggler)


@pytest.mark.parametrize("candidate, base, status, fragment", [
    (comm_run(share=0.30), None, Status.SKIP, "no baseline"),
    (comm_run(), [comm_run("b", share=0.2)], Status.SKIP, "no communication timers or ranks"),
    (comm_run(share=0.2), [comm_run("b", wait=0.1)], Status.SKIP, "no communication timers or ranks"),
    (comm_run(share=0.29), [comm_run("b", share=0.20)], Status.PASS, "communication share 29% (baseline 20%, limit 30%)"),
    (comm_run(share=0.31), [comm_run("b", share=0.20)], Status.FAIL, "communication share 31% (baseline 20%, limit 30%)"),
    # three seeds 0.10, 0.20, 0.35: median 0.20, their spread 0.25 is wider than 0.10
    (comm_run(share=0.44), [comm_run(f"s{i}", share=v) for i, v in enumerate((0.10, 0.20, 0.35))], Status.PASS,
     "limit 45%"),
    (comm_run(wait=0.60, straggler=3), [comm_run("b", wait=0.0)], Status.FAIL,
     "rank 3 straggles: straggler wait 60% (baseline 0%, limit 10%)"),
    (comm_run(share=0.2, wait=0.05), [comm_run("b", share=0.2, wait=0.0)], Status.PASS, "straggler wait 5%"),
])
def test_communication_rule_against_the_baseline(candidate, base, status, fragment):
    result = status_of(run_checks([candidate], Baseline("base", tuple(base)) if base else None), "communication")
    assert result.status is status and fragment in result.message, result.message


def test_communication_rule_tolerance_from_config():
    policy = CheckPolicy.from_config({"communication": {"max_increase": 0.2}})
    result = status_of(run_checks([comm_run(share=0.35)], Baseline("b", (comm_run("b", share=0.2),)), policy),
                       "communication")
    assert result.status is Status.PASS and result.threshold == pytest.approx(0.4)
    with pytest.raises(ConfigError, match="unknown parameter"):
        CheckPolicy.from_config({"communication": {"max_share": 0.2}})


def test_communication_numbers_survive_a_baseline_file(tmp_path):
    saved = Baseline("base", (comm_run("b", share=0.21, wait=0.0),))
    saved.save(tmp_path / "b.json")
    (run,) = Baseline.load(tmp_path / "b.json").runs
    assert (run.communication_share, run.straggler_wait_share, run.straggler_rank) == (0.21, 0.0, None)
