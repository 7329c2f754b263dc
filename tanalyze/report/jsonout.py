"""The report for machines: the same results as the HTML page, as versioned JSON.

The shape is documented by ``tanalyze/schemas/report.schema.json`` (validated in
the tests). Non-finite numbers are the strings ``"nan"``, ``"inf"``, ``"-inf"``.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Sequence
from typing import Any

from tanalyze.analysis.results import to_jsonable
from tanalyze.analysis.sweep import experiment_dict
from tanalyze.report.model import ReportData, RunView
from tanalyze.text import writable

__all__ = ["SCHEMA_ID", "report_dict", "run_dict", "run_text", "run_digest", "dumps"]

SCHEMA_ID = "tanalyze.report/1"

_ORDER = ("run", "format", "roles", "verdict", "overfitting", "divergence", "spikes", "early_stopping",
          "gradients", "throughput", "findings", "warnings")


def run_dict(run: RunView) -> dict[str, Any]:
    """One run: its diagnosis (documented shape), summary numbers from the full data, and what reading found."""
    d = run.diagnosis
    out: dict[str, Any] = {key: d.get(key) for key in _ORDER}
    out.update({k: v for k, v in d.items() if k not in out})
    info = run.info
    summary: dict[str, Any] = {
        "points": run.points,
        "tags": len(run.tags),
        "first_step": run.summary.get("first_step"),
        "last_step": run.summary.get("last_step"),
        "train_loss": run.summary.get("train_loss"),
        "val_loss": run.summary.get("val_loss"),
        "throughput": run.summary.get("throughput"),
    }
    out["summary"] = to_jsonable(summary)
    out["info"] = to_jsonable({
        "directory": info.directory if info else None,
        "files": list(info.files) if info else [],
        "hparams": dict(info.hparams) if info else {},
        "restarts": [r.to_dict() for r in info.restarts] if info else [],
        "phases": [p.to_dict() for p in info.phases] if info else [],
        "notes": list(info.notes) if info else [],
        "sources": [p.to_dict() for p in info.sources] if info else [],
        "read_warnings": [w.to_dict() for w in info.warnings] if info else [],
    })
    # what the image summaries shown in the HTML page are; their bytes are in the page only
    out["images"] = None if run.images is None else to_jsonable(run.images.to_dict())
    return out


def report_dict(data: ReportData) -> dict[str, Any]:
    """The whole report as plain JSON-ready Python."""
    names = {run.index: run.name for run in data.runs}
    return {
        "schema": SCHEMA_ID,
        "tanalyze_version": data.version,
        "generated_at": data.generated_at,
        "inputs": list(data.inputs),
        "runs": [run_dict(run) for run in data.runs],
        "seed_groups": [
            {"label": g.label, "reason": g.reason, "runs": [names[i] for i in g.runs]} for g in data.groups
        ],
        "not_read": [n.to_dict() for n in data.not_read],
        "experiments": [experiment_dict(e) for e in data.experiments],
    }


def dumps(report: dict[str, Any], runs: Sequence[str | None] | None = None) -> str:
    """Strict JSON text (no NaN literals: they are strings already). ``runs``: the text of some of
    ``report["runs"]`` already encoded by :func:`run_text` (None where not), put in place as they are."""
    if not runs or not any(runs) or len(runs) != len(report.get("runs", ())):
        return json.dumps(report, ensure_ascii=False, allow_nan=False, indent=1) + "\n"
    token = secrets.token_hex(8)  # no text from the logs can be mistaken for a mark
    marks = [f"\x00{token}{i}\x00" if text is not None else run
             for i, (run, text) in enumerate(zip(report["runs"], runs, strict=True))]
    text = json.dumps({**report, "runs": marks}, ensure_ascii=False, allow_nan=False, indent=1)
    pieces, at = [], 0
    for i, run in enumerate(runs):  # the marks come in order: one pass over the text
        if run is not None:
            mark = f'"\\u0000{token}{i}\\u0000"'
            found = text.index(mark, at)
            pieces += [text[at:found], run]
            at = found + len(mark)
    pieces.append(text[at:])
    return "".join(pieces) + "\n"


def run_text(run: dict[str, Any]) -> str:
    """One run of the report encoded as :func:`dumps` writes it inside the report's ``runs`` (two levels deep)."""
    return json.dumps(run, ensure_ascii=False, allow_nan=False, indent=1).replace("\n", "\n  ")


def run_digest(run: dict[str, Any]) -> str:
    """A digest of one run's JSON content: equal content, equal digest (checks that a :func:`run_text` made
    earlier still holds, without keeping the dict it was made from)."""
    text = json.dumps(run, ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=20).hexdigest()


def write_json(report: dict[str, Any], path: str | os.PathLike[str], runs: Sequence[str | None] | None = None) -> int:
    """Write the report JSON; return its size in bytes. ``runs`` as for :func:`dumps`."""
    text = writable(dumps(report, runs)).encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(text)
    return len(text)
