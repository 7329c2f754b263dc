"""``tanalyze report``: exit codes, outputs and messages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

import tanalyze
from tanalyze.cli import main
from tests.conftest import SAMPLE_RUNS, real_log
from tests.report.htmlcheck import parse


def test_missing_path_is_a_usage_error(tmp_path, capsys):
    code = main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "nope" in err
    assert not (tmp_path / "r.html").exists()


def test_folder_without_logs_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "notes.md").write_text("# not a log\n")
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    assert "no training logs found" in capsys.readouterr().err


def test_output_folder_must_exist(tmp_path, capsys):
    code = main(["report", str(tmp_path), "-o", str(tmp_path / "missing" / "r.html")])
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot write there" in err and "does not exist" in err


def test_smoothing_out_of_range_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--smoothing", "1.5"]) == 2
    assert "must be in [0, 1)" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--smoothing", "abc"]) == 2


def test_bad_role_override_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--role", "val_loss"]) == 2
    assert "ROLE=TAG" in capsys.readouterr().err


def test_no_path_is_a_usage_error(capsys):
    assert main(["report"]) == 2


SCHEMA = json.loads((Path(tanalyze.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


def _rows(html: str) -> dict[str, dict[str, str]]:
    table = parse(html).find_all("table", id="tz-summary")[0]
    out = {}
    for row in table.find_all("tr")[1:]:
        cells = row.find_all("td")
        out[cells[1].text_content().strip()] = {"verdict": row.attrs["data-verdict"], "diverged": cells[7].text_content()}
    return out


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    if not SAMPLE_RUNS.is_dir():
        pytest.skip("sample_runs/ is not in this checkout")
    out = tmp_path_factory.mktemp("sample-report")
    code = main(["report", str(SAMPLE_RUNS), "-o", str(out / "r.html"), "--json", str(out / "r.json"), "-q"])
    assert code == 0
    return (out / "r.html").read_text(encoding="utf-8"), json.loads((out / "r.json").read_text(encoding="utf-8"))


def test_sample_runs_report_shows_every_run_as_the_json_says(sample_report):
    html, report = sample_report
    jsonschema.validate(report, SCHEMA)
    rows = _rows(html)
    assert list(rows) == [r["run"] for r in report["runs"]]
    assert len(rows) == len(tanalyze.load(SAMPLE_RUNS).runs)
    for run in report["runs"]:
        assert rows[run["run"]]["verdict"] == run["verdict"]["label"]


def test_sample_runs_known_divergences_are_in_the_table(sample_report):
    html, report = sample_report
    labels = json.loads((SAMPLE_RUNS / "LABELS.json").read_text(encoding="utf-8"))["runs"]
    rows = _rows(html)
    diverged = [name for name, label in labels.items() if label["regime"] == "diverged"]
    assert diverged and all(rows[name]["verdict"] == "diverged" for name in diverged)
    for name in diverged:
        step = next(r for r in report["runs"] if r["run"] == name)["divergence"]["step"]
        assert rows[name]["diverged"].startswith(f"{step:,}")
        assert labels[name]["explosion_step"] <= step <= labels[name]["divergence_step"]


def test_default_output_is_report_html_in_the_working_folder(tmp_path, monkeypatch, capsys):
    if not SAMPLE_RUNS.is_dir():
        pytest.skip("sample_runs/ is not in this checkout")
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(SAMPLE_RUNS / "normal_tensorboard"), str(SAMPLE_RUNS / "diverged_tensorboard")]) == 0
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert list(_rows(html)) == ["normal_tensorboard", "diverged_tensorboard"]
    assert "wrote report.html" in capsys.readouterr().err


def test_real_tensorboard_logs_report(tmp_path):
    folder = real_log("tfevents")
    assert main(["report", str(folder), "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"), "-q"]) == 0
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, SCHEMA)
    logs = tanalyze.load(folder)
    assert [r["run"] for r in report["runs"]] == list(logs.runs)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert list(_rows(html)) == list(logs.runs)
    # the HF run logged its arguments as text: the run's section shows it, whole, as preformatted text
    index = list(logs.runs).index("10844110__t5-summarization-demo/runs/Mar24_22-23-40_DESKTOP-41L2EO3") + 1
    section = parse(html).find_all("section", id=f"run-{index}")[0]
    texts = [pre.text_content() for pre in section.find_all("pre")]
    assert texts[0].startswith('{\n  "output_dir": "/home/cora/my_models/t5-summarization",') and len(texts[0]) == 4338


def test_report_paths_reads_and_diagnoses_like_load_and_diagnose():
    if not SAMPLE_RUNS.is_dir():
        pytest.skip("sample_runs/ is not in this checkout")
    from tanalyze.diagnose import diagnose
    from tanalyze.report import build_report, report_dict, report_paths
    from tanalyze.report.html import render_html
    from tanalyze.report.parallel import default_workers

    stamp = "2024-01-01T00:00:00Z"
    logs = tanalyze.load(SAMPLE_RUNS)
    expected = report_dict(build_report(logs, diagnose(logs), inputs=[str(SAMPLE_RUNS)], generated_at=stamp))
    here = report_paths([SAMPLE_RUNS], jobs=1)
    assert report_dict(here) | {"generated_at": stamp} == expected
    if default_workers() >= 2:
        forked = report_paths([SAMPLE_RUNS], jobs=2)
        assert report_dict(forked) | {"generated_at": stamp} == expected
        assert render_html(forked, jobs=1).replace(forked.generated_at, stamp) == render_html(
            here, jobs=1).replace(here.generated_at, stamp)


def test_jobs_must_be_positive(tmp_path, capsys):
    assert main(["report", str(tmp_path), "-j", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_jupyter_fragments_diagnose_when_not_given_a_diagnosis():
    if not SAMPLE_RUNS.is_dir():
        pytest.skip("sample_runs/ is not in this checkout")
    from tanalyze.diagnose import diagnose

    logs = tanalyze.load(SAMPLE_RUNS / "diverged_tensorboard")
    fragment = parse(tanalyze.report(logs).to_html(fragment=True))
    badges = [e for e in fragment.iter() if "badge" in e.classes() and "v-diverged" in e.classes()]
    assert badges and fragment.find_all("svg")
    diagnosis = diagnose(logs)["diverged_tensorboard"]
    alone = parse(tanalyze.report(diagnosis).to_html(fragment=True))  # the curves the diagnosis keeps (losses, lr, grad norm) are drawn
    labels = ["Loss curves of run diverged_tensorboard", "learning rate, gradient norm of run diverged_tensorboard"]
    assert [s.attrs["aria-label"] for s in alone.find_all("svg")] == labels
    with_logs = parse(tanalyze.report(diagnosis, scalars=logs).to_html(fragment=True))
    assert [s.attrs["aria-label"] for s in with_logs.find_all("svg")] == labels


CHECKPOINT_RUNS = Path(__file__).parents[1] / "fixtures" / "checkpoints"


def test_checkpoints_in_the_report_json_and_the_run_section(tmp_path):
    assert main(["report", str(CHECKPOINT_RUNS), "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"),
                 "-q"]) == 0
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, SCHEMA)
    runs = {r["run"]: r["checkpoints"] for r in report["runs"]}
    assert [c["name"] for c in runs["hf_best_off"]["checkpoints"]] == ["checkpoint-110", "checkpoint-120"]
    assert runs["hf_best_off"]["best_on_disk"] is False and runs["hf_best_off"]["top_k_steps"] == [20, 40, 50]
    assert [f["code"] for f in runs["hf_best_off"]["findings"]] == ["best_checkpoint_missing"]
    assert runs["hf_best_on"]["best_on_disk"] is True
    html = parse((tmp_path / "r.html").read_text(encoding="utf-8"))
    summaries = [d.find_all("summary")[0].text_content() for d in html.find_all("details")
                 if "checkpoints" in d.attrs.get("class", "")]
    assert summaries[0] == ("Checkpoints: 2 on disk · best evaluation at step 20 (eval_loss 0.1039), not kept "
                            "(best on disk 70.7% worse) · top-3 what-if keeps steps 20, 40, 50")
    assert len(summaries) == 4  # (hf_two_trainings too)


def test_checkpoint_names_from_disk_are_escaped(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "metrics.csv").write_text("epoch,step,train_loss,val_loss\n" + "".join(
        f"{e},{10 * e + 9},{1 / (e + 1)},\n{e},{10 * e + 9},,{0.5 + abs(e - 3) / 10}\n" for e in range(8)))
    (run / "checkpoints" / "epoch=7-step=80-<img src=x onerror=alert(1)>.ckpt").write_bytes(b"")
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"),
                 "-q"]) == 0
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    jsonschema.validate(json.loads((tmp_path / "r.json").read_text(encoding="utf-8")), SCHEMA)


def test_a_run_whose_loss_blows_up_to_the_edge_of_float64_is_drawn_beside_the_others(tmp_path, capsys):
    # DVCLive's diverged fixture run climbs to 3.8e302 before inf: axes around it overflowed (a traceback)
    runs = tmp_path / "runs"
    for name in ("sgd", "logs"):
        shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "dvclive" / name, runs / name)
    out = tmp_path / "r.html"
    assert main(["report", str(runs), "-o", str(out), "--jobs", "1", "--no-cache"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "logs/runs/diverged_lr" in page and "<svg" in page
    assert "1 diverged, 1 normal" in capsys.readouterr().err
