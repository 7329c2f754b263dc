"""`tanalyze check` through the real command line, on the real sample runs (same job twice, one slowed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import xmlschema

from tests.conftest import REPO, SAMPLE_RUNS

XSD = Path(__file__).parent / "fixtures" / "junit.xsd"
THROUGHPUT = SAMPLE_RUNS / "throughput"


def tanalyze(*args, cwd=None, env=None):
    import os

    env = dict(env or os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "tanalyze", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env)


def rules(path):
    return {r["name"]: r for r in json.loads(Path(path).read_text())["rules"]}


def test_slowed_candidate_fails_the_throughput_rule(tmp_path):
    done = tanalyze("check", THROUGHPUT / "slow_loader", "--baseline", THROUGHPUT / "baseline",
                    "--json", tmp_path / "c.json", "--junit", tmp_path / "j.xml")
    assert done.returncode == 1, done.stdout + done.stderr
    result = rules(tmp_path / "c.json")["throughput"]
    assert result["status"] == "fail"
    assert result["p_value"] < 0.002
    assert 0.70 < result["value"] < 0.85  # candidate/baseline samples/s: about 25% slower
    assert "FAIL  throughput" in done.stdout
    xmlschema.XMLSchema(XSD).validate(tmp_path / "j.xml")


def test_noise_only_candidate_passes(tmp_path):
    done = tanalyze("check", THROUGHPUT / "control_b", "--baseline", THROUGHPUT / "control_a", "--json", tmp_path / "c.json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["schema"] == "tanalyze.check/1" and data["passed"] is True
    assert rules(tmp_path / "c.json")["throughput"]["status"] == "pass"


def test_saved_baseline_file_gives_the_same_verdict(tmp_path):
    saved = tanalyze("baseline", "save", THROUGHPUT / "baseline", "-o", tmp_path / "base.json")
    assert saved.returncode == 0, saved.stderr
    assert json.loads((tmp_path / "base.json").read_text())["schema"] == "tanalyze.baseline/1"
    done = tanalyze("check", THROUGHPUT / "slow_loader", "--baseline", tmp_path / "base.json", "--json", tmp_path / "c.json")
    assert done.returncode == 1
    assert rules(tmp_path / "c.json")["throughput"]["status"] == "fail"


def test_diverged_run_fails():
    done = tanalyze("check", SAMPLE_RUNS / "diverged_tensorboard")
    assert done.returncode == 1
    assert "FAIL  divergence       loss diverged (nan) at step" in done.stdout


def test_missing_baseline_tag_is_a_skip_with_a_reason(tmp_path):
    # the normal TensorBoard run logs no samples/s or step time: nothing to compare
    done = tanalyze("check", THROUGHPUT / "control_b", "--baseline", SAMPLE_RUNS / "normal_tensorboard",
                    "--json", tmp_path / "c.json")
    result = rules(tmp_path / "c.json")["throughput"]
    assert result["status"] == "skip", result
    assert "baseline has no" in result["message"]
    assert done.returncode == 0


def test_config_file_turns_a_failure_into_a_warning(tmp_path):
    (tmp_path / "tanalyze.toml").write_text('[check]\nwarn_only = ["throughput"]\n')
    done = tanalyze("check", THROUGHPUT / "slow_loader", "--baseline", THROUGHPUT / "baseline",
                    "--config", tmp_path / "tanalyze.toml")
    assert done.returncode == 0, done.stdout
    assert "WARN  throughput" in done.stdout and "(warn-only rule)" in done.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["check", "no/such/run"], "no such file or folder"),
        (["check", str(THROUGHPUT / "baseline"), "--baseline", "missing.json"], "baseline"),
        (["check", str(THROUGHPUT / "baseline"), "--role", "nonsense"], "--role expects ROLE=TAG"),
        (["check"], "usage"),
    ],
)
def test_bad_input_exits_2(args, fragment, tmp_path):
    done = tanalyze(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert fragment in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_config_exits_2_naming_the_key(tmp_path):
    (tmp_path / "tanalyze.toml").write_text("[check.throughput]\nmin_chnage = 0.1\n")
    done = tanalyze("check", THROUGHPUT / "baseline", cwd=tmp_path)
    assert done.returncode == 2
    assert "min_chnage" in done.stderr and "tanalyze.toml" in done.stderr


def test_github_actions_annotations_and_summary(tmp_path):
    import os

    env = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    done = tanalyze("check", THROUGHPUT / "slow_loader", "--baseline", THROUGHPUT / "baseline", env=env)
    assert done.returncode == 1
    assert "::error title=tanalyze throughput (slow_loader)::throughput regression" in done.stdout
    assert "### tanalyze check: ❌ failed" in (tmp_path / "summary.md").read_text()


TIMERS = Path(__file__).parent / "fixtures" / "distributed_timers"


def test_straggler_and_communication_regression_against_a_saved_baseline(tmp_path):
    """Really-run gloo jobs: the balanced job saved as the baseline; the straggler job fails against it, on the
    last rank's console (communication share) and on the per-rank writers (straggler wait)."""
    for layout in ("console", "ranks"):
        saved = tanalyze("baseline", "save", TIMERS / layout / "balanced", "-o", tmp_path / f"{layout}.json")
        assert saved.returncode == 0, saved.stderr
        same = tanalyze("check", TIMERS / layout / "balanced", "--baseline", tmp_path / f"{layout}.json",
                        "--json", tmp_path / "same.json")
        assert rules(tmp_path / "same.json")["communication"]["status"] == "pass", same.stdout
        done = tanalyze("check", TIMERS / layout / "straggler", "--baseline", tmp_path / f"{layout}.json",
                        "--json", tmp_path / "c.json")
        assert done.returncode == 1, done.stdout + done.stderr
        result = rules(tmp_path / "c.json")["communication"]
        assert result["status"] == "fail" and "FAIL  communication" in done.stdout
        if layout == "console":
            assert "communication share" in result["message"] and result["value"] > 0.5
        else:
            assert result["message"].startswith("rank 0 straggles: straggler wait")
