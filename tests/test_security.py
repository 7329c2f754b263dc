"""Nothing a log holds can run code, and discovery stays inside the path it was given.

Two kinds of test: a scan of the package source (AST, so comments and strings do
not count) for every way of running or unpickling something, and behavioural
tests that put payloads where logs keep data (YAML configs, Trainer dict lines)
and check that nothing ran.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from tanalyze import load
from tanalyze.discover import discover
from tanalyze.readers import get_reader
from tests.conftest import REPO
from tests.fuzz.events import event_file, scalar_events

PACKAGE = REPO / "tanalyze"

#: Explicit exceptions to the scan, each with the reason it is safe: (file relative to the package, what).
# `tanalyze watch --on-finding CMD` runs the command the user typed (split with shlex, no shell); what came
# from a log reaches it only as environment values, never as its command line.
ALLOWED: set[tuple[str, str]] = {("cli.py", "import subprocess")}

_FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve", "subprocess", "pty", "joblib"}
_FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "execfile", "input"}
_FORBIDDEN_ATTRS = {
    ("os", "system"), ("os", "popen"), ("os", "execv"), ("os", "execve"), ("os", "execvp"), ("os", "execl"),
    ("os", "spawnv"), ("os", "spawnl"), ("os", "posix_spawn"), ("os", "startfile"),
    ("yaml", "unsafe_load"), ("yaml", "full_load"), ("yaml", "unsafe_load_all"), ("yaml", "full_load_all"),
    ("yaml", "Loader"), ("yaml", "UnsafeLoader"), ("yaml", "FullLoader"),
    ("pd", "read_pickle"), ("pandas", "read_pickle"), ("torch", "load"),
}
_SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "_TolerantLoader"}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def findings(source: str, filename: str) -> list[str]:
    """Every construct of the source that could run code from data, as 'line: what'."""
    out = []
    for node in ast.walk(ast.parse(source, filename)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            out += [f"{line}: import {a.name}" for a in node.names if a.name.split(".")[0] in _FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _FORBIDDEN_MODULES:
            out.append(f"{line}: from {node.module} import")
        elif isinstance(node, ast.Attribute):
            if (_name(node.value).split(".")[-1], node.attr) in _FORBIDDEN_ATTRS:
                out.append(f"{line}: {_name(node)}")
        elif isinstance(node, ast.Call):
            func = _name(node.func)
            if func in _FORBIDDEN_CALLS:
                out.append(f"{line}: {func}()")
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value):
                    out.append(f"{line}: shell=...")
                if keyword.arg == "allow_pickle" and not (isinstance(keyword.value, ast.Constant)
                                                          and not keyword.value.value):
                    out.append(f"{line}: allow_pickle=...")
            if func.endswith("yaml.load") or func.endswith("yaml.load_all"):
                loader = next((k.value for k in node.keywords if k.arg == "Loader"),
                              node.args[1] if len(node.args) > 1 else None)
                if loader is None or _name(loader).split(".")[-1] not in _SAFE_YAML_LOADERS:
                    out.append(f"{line}: {func}() without a safe Loader")
    return out


def test_scanner_catches_each_construct():
    """Positive controls: the scanner is not blind."""
    bad = """
import pickle, subprocess
from marshal import loads
import os, yaml, numpy as np
eval(x); exec(y); __import__('os')
os.system('ls'); os.popen('ls')
yaml.load(text); yaml.load(text, Loader=yaml.Loader); yaml.unsafe_load(text); yaml.full_load(text)
run(cmd, shell=True)
np.load(path, allow_pickle=True)
"""
    found = findings(bad, "bad.py")
    for what in ["import pickle", "import subprocess", "from marshal import", "eval()", "exec()", "__import__()",
                 "os.system", "os.popen", "yaml.load() without a safe Loader", "yaml.Loader", "yaml.unsafe_load",
                 "yaml.full_load", "shell=...", "allow_pickle=..."]:
        assert any(what in f for f in found), (what, found)
    good = "import yaml\nyaml.safe_load(t)\nyaml.load(t, Loader=yaml.SafeLoader)\nself._eval(x)\nnp.load(p)\n"
    assert findings(good, "good.py") == []


def test_package_source_has_no_way_to_run_log_content():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for finding in findings(path.read_text(encoding="utf-8"), str(path)):
            what = finding.split(": ", 1)[1]
            if (relative, what) not in ALLOWED:
                problems.append(f"tanalyze/{relative}:{finding}")
    assert not problems, "constructs that can run code or unpickle data:\n" + "\n".join(problems)


# ------------------------------------------------------------------ behaviour

@pytest.fixture
def marker(tmp_path, monkeypatch):
    """A file that a successful payload would create; os.system and friends are also made to fail loudly."""
    target = tmp_path / "PWNED"

    def refuse(*args, **kwargs):
        raise AssertionError(f"code from a log ran: {args}")

    monkeypatch.setattr(os, "system", refuse)
    monkeypatch.setattr(os, "popen", refuse)
    return target


def _yaml_payloads(marker: Path) -> dict[str, str]:
    return {
        "apply": f"lr: 0.1\nboom: !!python/object/apply:os.system ['touch {marker}']\n",
        "new": f"lr: 0.1\nboom: !!python/object/new:subprocess.check_output [['touch', '{marker}']]\n",
        "name": "lr: 0.1\nboom: !!python/name:os.system\n",
        "module": "lr: 0.1\nboom: !!python/module:os\n",
    }


@pytest.mark.parametrize("kind", ["apply", "new", "name", "module"])
def test_yaml_payload_in_lightning_hparams_is_data_never_code(tmp_path, marker, kind):
    """Calls (apply/new) are kept as data with a warning; references (name/module, common in dumped configs)
    are kept as their text."""
    run_dir = tmp_path / "version_0"
    run_dir.mkdir()
    (run_dir / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    (run_dir / "hparams.yaml").write_text(_yaml_payloads(marker)[kind])
    logs = load(tmp_path)
    assert not marker.exists()
    [info] = logs.runs.values()
    assert info.hparams["lr"] == 0.1
    assert not callable(info.hparams["boom"]) and not isinstance(info.hparams["boom"], type(os))
    warned = [w for w in info.warnings if "asking to run code" in w.message]
    if kind in ("apply", "new"):
        [warning] = warned
        assert warning.file.endswith("hparams.yaml") and "not executed" in warning.message
    else:
        assert not warned


@pytest.mark.parametrize("kind", ["apply", "new"])
def test_yaml_payload_beside_event_files_is_not_executed(tmp_path, marker, kind):
    event_file(tmp_path / "events.out.tfevents.1.host.1.0", scalar_events(3))
    (tmp_path / "hparams.yaml").write_text(_yaml_payloads(marker)[kind])
    [run] = get_reader("tensorboard").read([tmp_path / "events.out.tfevents.1.host.1.0"])
    assert not marker.exists()
    assert len(run.scalars) == 3
    assert any("could not read hparams" in w.message for w in run.warnings)


def test_yaml_payload_in_wandb_config_is_not_executed(tmp_path, marker):
    run_dir = tmp_path / "wandb" / "run-20240101_000000-abcd1234"
    (run_dir / "files").mkdir(parents=True)
    (run_dir / "files" / "config.yaml").write_text(_yaml_payloads(marker)["apply"])
    (run_dir / "files" / "wandb-summary.json").write_text(json.dumps({"loss": 0.5, "_step": 3}))
    (run_dir / "files" / "output.log").write_text("step 1\n")
    logs = load(tmp_path)
    assert not marker.exists()
    warnings = [w for info in logs.runs.values() for w in info.warnings]
    assert any(w.file.endswith("config.yaml") and "config not read" in w.message for w in warnings), warnings


def test_hf_dict_line_with_code_is_not_executed(tmp_path, marker):
    path = tmp_path / "train.log"
    path.write_text(
        "{'loss': 0.9, 'learning_rate': 5e-05, 'epoch': 0.1}\n"
        f"{{'loss': __import__('os').system('touch {marker}'), 'learning_rate': 4e-05, 'epoch': 0.2}}\n"
        f"{{'loss': (lambda: open('{marker}', 'w'))(), 'epoch': 0.25}}\n"
        "{'loss': 0.7, 'learning_rate': 3e-05, 'epoch': 0.3}\n"
    )
    [run] = get_reader("hf_console").read([path])
    assert not marker.exists()
    assert run.scalars[run.scalars["tag"] == "loss"]["value"].tolist() == [0.9, 0.7]



# ------------------------------------------------------------------ discovery stays inside the path given

@pytest.fixture
def tree(tmp_path):
    """root/run1 holds a real log; every kind of symlink points elsewhere; outside/ holds a log of its own."""
    log = (REPO / "sample_runs" / "normal_nanogpt" / "train.log").read_bytes()
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "run1").mkdir(parents=True)
    outside.mkdir()
    (root / "run1" / "train.log").write_bytes(log)
    (outside / "train.log").write_bytes(log)
    (root / "run1" / "up").symlink_to("..")  # a loop through the parent
    (root / "slash").symlink_to("/")
    (root / "out").symlink_to(outside)
    (root / "run1" / "outside.log").symlink_to(outside / "train.log")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "dangling.log").symlink_to(tmp_path / "missing.log")
    (root / "run2").mkdir()
    (root / "run2" / "self").symlink_to(root / "run2")
    (root / "run2" / "inside.log").symlink_to(root / "run1" / "train.log")  # inside the path: read
    return root


def test_symlinks_never_lead_discovery_outside_or_around(tree):
    found = discover(tree)
    assert {run.name: [Path(f).name for f in run.files] for run in found.runs} == {
        "run1": ["train.log"], "run2": ["inside.log"]}
    skipped = {Path(p).relative_to(tree).as_posix() for p in found.skipped_dirs}
    assert {"slash", "out", "run1/up", "run2/self", "run1/outside.log", "loop_a", "loop_b", "dangling.log"} <= skipped
    assert not found.errors


def test_load_over_symlink_loops_finishes_with_the_real_runs(tree):
    logs = load(tree)
    assert sorted(logs.runs) == ["run1", "run2"]
    assert len(logs.scalars_of("run1")) == len(logs.scalars_of("run2")) > 0
    assert "slash" in {Path(p).name for p in logs.skipped}
