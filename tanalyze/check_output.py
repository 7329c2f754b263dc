"""Presenting a :class:`~tanalyze.checks.CheckReport`: terminal text, JSON, JUnit XML, GitHub Actions.

Run names, tags and messages come from logs, so each output escapes them for
its medium (control characters for terminals, XML escaping, the workflow-command
encoding, Markdown/HTML for the step summary).
"""

from __future__ import annotations

import html
import json
import os
import socket
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from tanalyze.checks import CheckReport, Status
from tanalyze.text import safe_text

__all__ = ["format_text", "write_json", "write_junit", "github_annotations", "github_summary", "emit_github"]

_MARK = {Status.PASS: "PASS", Status.WARN: "WARN", Status.FAIL: "FAIL", Status.SKIP: "SKIP"}


def format_text(report: CheckReport) -> str:
    """A readable summary: one line per rule, grouped by run, and a verdict line."""
    lines = [f"tanalyze check {safe_text(report.candidate)}" + (f" against {safe_text(report.baseline)}" if report.baseline else "")]
    current_run: str | None = None
    for rule in report.rules:
        if rule.run != current_run:
            current_run = rule.run
            lines.append(f"  run {safe_text(rule.run)}")
        p_value = f" (p={rule.p_value:.2g})" if isinstance(rule.p_value, float) else ""
        lines.append(f"    {_MARK[rule.status]}  {rule.name:<16} {safe_text(rule.message)}{p_value}")
    counts = report.counts()
    summary = ", ".join(f"{counts[s.value]} {s.value}" for s in Status if counts[s.value])
    lines.append(("PASSED" if report.passed else "FAILED") + f": {summary or 'no rules ran'}")
    unchecked = _unchecked_runs(report)
    if unchecked:  # a gate that checked nothing of a run passes it: say so
        lines.append(f"note: nothing was checked on {len(unchecked)} run(s), every rule skipped: "
                     + ", ".join(safe_text(run, 80) for run in unchecked[:5]) + (" …" if len(unchecked) > 5 else ""))
    return "\n".join(lines) + "\n"


def _unchecked_runs(report: CheckReport) -> list[str]:
    """The runs whose every rule was skipped, in report order."""
    statuses: dict[str, set[Status]] = {}
    for rule in report.rules:
        statuses.setdefault(rule.run, set()).add(rule.status)
    return [run for run, seen in statuses.items() if seen == {Status.SKIP}]


def write_json(report: CheckReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.to_dict(), indent=1, allow_nan=False) + "\n", encoding="utf-8")


def write_junit(report: CheckReport, path: str | Path) -> None:
    """JUnit XML, one test case per (run, rule): failures as <failure>, skips as <skipped>,
    warnings as passing cases with the message in <system-out>."""
    counts = report.counts()
    total = len(report.rules)
    suites = ET.Element(
        "testsuites", name="tanalyze check", tests=str(total), failures=str(counts["fail"]), errors="0",
        skipped=str(counts["skip"]), time="0",
    )
    suite = ET.SubElement(
        suites, "testsuite", name=f"tanalyze check {report.candidate}", tests=str(total),
        failures=str(counts["fail"]), errors="0", skipped=str(counts["skip"]), time="0",
        timestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"), hostname=socket.gethostname() or "localhost",
    )
    ET.SubElement(suite, "properties")
    for rule in report.rules:
        case = ET.SubElement(suite, "testcase", classname=f"tanalyze.{rule.run or 'run'}", name=rule.name, time="0")
        if rule.status is Status.FAIL:
            failure = ET.SubElement(case, "failure", message=rule.message, type=rule.name)
            failure.text = json.dumps(rule.to_dict(), indent=1, allow_nan=False)
        elif rule.status is Status.SKIP:
            ET.SubElement(case, "skipped", message=rule.message)
        elif rule.status is Status.WARN:
            out = ET.SubElement(case, "system-out")
            out.text = f"WARNING: {rule.message}"
    ET.SubElement(suite, "system-out").text = ""
    ET.SubElement(suite, "system-err").text = ""
    ET.indent(suites)
    Path(path).write_bytes(ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: CheckReport) -> list[str]:
    """``::error``/``::warning`` workflow commands for failed and warning rules."""
    lines = []
    for rule in report.rules:
        if rule.status not in (Status.FAIL, Status.WARN):
            continue
        level = "error" if rule.status is Status.FAIL else "warning"
        title = _escape_property(f"tanalyze {rule.name} ({rule.run})")
        lines.append(f"::{level} title={title}::{_escape_data(rule.message)}")
    return lines


def _md(text: object) -> str:
    return html.escape(str(text)).replace("|", "&#124;").replace("\n", " ")


def github_summary(report: CheckReport) -> str:
    """A Markdown job summary (GitHub renders it on the run page)."""
    icon = {Status.PASS: "✅", Status.WARN: "⚠️", Status.FAIL: "❌", Status.SKIP: "⏭️"}
    head = "✅ passed" if report.passed else "❌ failed"
    lines = [
        f"### tanalyze check: {head}",
        "",
        f"Candidate `{_md(report.candidate)}`" + (f", baseline `{_md(report.baseline)}`" if report.baseline else ""),
        "",
        "| | run | rule | message |",
        "|---|---|---|---|",
    ]
    for rule in report.rules:
        lines.append(f"| {icon[rule.status]} | {_md(rule.run)} | {rule.name} | {_md(rule.message)} |")
    return "\n".join(lines) + "\n"


def emit_github(report: CheckReport, stdout) -> None:
    """When running under GitHub Actions: annotations on stdout and the job summary file."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    for line in github_annotations(report):
        stdout.write(line + "\n")
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as handle:
            handle.write(github_summary(report))
