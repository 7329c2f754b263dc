"""Render a :class:`~tanalyze.report.model.ReportData` as one self-contained HTML page (or a fragment).

Everything from logs goes through Jinja2 autoescaping; figures are SVG that
matplotlib escaped and ``svgsafe.clean_svg`` checked; the one inline script is
a constant whose SHA-256 is the only script the page's Content-Security-Policy
allows; the embedded JSON escapes ``<``, ``>``, ``&`` and U+2028/U+2029.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from tanalyze.analysis.recommendations import CAUSES
from tanalyze.parallel import ProgressCallback
from tanalyze.report.assets import PAGE_STYLE, SCRIPT, STYLE
from tanalyze.report.chartdata import STATIC_FIGURES_MAX_RUNS, chart_columns, run_chart
from tanalyze.report.downsample import METHOD
from tanalyze.report.figures import FigureMaker, Rendered
from tanalyze.report.groups import _flatten
from tanalyze.report.memo import compare_figure
from tanalyze.report.model import LOSS_ROLES, VERDICTS, ReportData, RunView, number, resource_panels
from tanalyze.report.parallel import draw, run_figures
from tanalyze.report.sweep import sweep_context
from tanalyze.runstatus import STATUSES
from tanalyze.text import safe_text

__all__ = ["render_html", "iter_html", "render_run_fragment", "csp_for", "json_for_script", "SCRIPT", "STYLE"]

TEMPLATES = Path(__file__).parent / "templates"

VERDICT_TEXT = {
    "normal": ("\u2713", "normal"),
    "overfitting": ("\u2197", "overfitting"),
    "underfitting": ("\u2198", "underfitting"),
    "unstable": ("\u223f", "unstable"),
    "diverged": ("\u2715", "diverged"),
    "insufficient_data": ("?", "insufficient data"),
}
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
#: The most of one list (findings' evidence, spikes, config keys …) a page shows before saying how many it left out.
MAX_ITEMS = 300
MAX_TEXT = 20_000
COMPARE_MAX_LINES = 12
#: Findings shown open beside the loss chart; the rest (the least severe) fold away.
SHOWN_FINDINGS = 3
#: The box (CSS pixels) an image summary is shown in; smaller ones are enlarged up to IMAGE_ZOOM times.
IMAGE_BOX = (360, 300)
IMAGE_ZOOM = 8
#: Image bytes one page embeds in all (runs in order); past it, a run shows the last image of each tag, then none.
PAGE_IMAGE_BYTES = 24 * 1024 * 1024
NOT_READ_ROWS = 200  # files listed in the "not read" section; the rest are counted



def csp_for(script: str) -> str:
    """The Content-Security-Policy that lets exactly ``script`` (by its SHA-256) run and nothing else load."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def json_for_script(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``</script>``, no HTML-significant characters."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (
        text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )


def chart_text(chart: Mapping[str, Any] | None) -> str | None:
    """A run's chart data (:func:`~tanalyze.report.chartdata.run_chart`) as page JSON without its ``run``
    name (the name is the report's final one, see :func:`chart_member`); None for no chart."""
    return None if chart is None else json_for_script({k: v for k, v in chart.items() if k != "run"})


def chart_member(anchor: str, name: str, text: str) -> str:
    """The ``"anchor":{"run":name,...}`` member of the page's chart data, from :func:`chart_text`."""
    return f'"{anchor}":{{"run":{json_for_script(safe_text(name, 300))},{text[1:]}'


# -- formatting filters ---------------------------------------------------------------


def fmt_num(value: Any, digits: int = 4) -> str:
    """Numbers for people: 4 significant digits, thousands separators for integers, NaN/inf spelled out."""
    if value is None or value == "":
        return "\u2014"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    as_float = number(value)
    if as_float is None:
        return safe_text(value, limit=300)
    if as_float != as_float:
        return "NaN"
    if as_float in (float("inf"), float("-inf")):
        return "\u2212inf" if as_float < 0 else "inf"
    if as_float.is_integer() and abs(as_float) < 1e15:
        return f"{int(as_float):,}"
    rounded = float(f"{as_float:.{digits}g}")
    if 1e3 <= abs(rounded) < 1e15:
        return f"{rounded:,.0f}"
    return f"{rounded:.{digits}g}"


def fmt_step(value: Any) -> str:
    as_float = number(value)
    if as_float is None or as_float != as_float:
        return "\u2014"
    return f"{int(as_float):,}" if abs(as_float) < 1e18 else fmt_num(as_float)


def sort_key(value: Any) -> str:
    """A ``data-v`` attribute for the sort script: a finite number, or empty (sorts last)."""
    as_float = number(value)
    if as_float is None or as_float != as_float:
        return ""
    if as_float in (float("inf"), float("-inf")):
        return "1e308" if as_float > 0 else "-1e308"
    return repr(as_float)


def truncate(value: Any, limit: int = 40) -> str:
    """Log text cut to ``limit`` characters with an ellipsis (for table cells; the full text is elsewhere)."""
    text = safe_text(value, limit=10 * limit)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


_BREAK_AFTER = re.compile(r"(?<=[/_.\-])")


def breakable(value: Any, limit: int = 300) -> Markup:
    """Escaped log text with line-break opportunities (``<wbr>``) after ``/ _ . -``, for long run names."""
    text = safe_text(value, limit=limit)
    return Markup("<wbr>").join(escape(part) for part in _BREAK_AFTER.split(text))


def short(value: Any, limit: int = 300) -> str:
    if isinstance(value, str):
        return safe_text(value, limit=limit)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return safe_text(text, limit=limit)


@cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters.update(num=fmt_num, step=fmt_step, sortv=sort_key, short=short, safe_text=safe_text, truncate=truncate,
                       breakable=breakable)
    env.globals.update(verdict_text=VERDICT_TEXT, max_items=MAX_ITEMS, shown_findings=SHOWN_FINDINGS)
    return env


# -- view building ------------------------------------------------------------------


def _findings(run: RunView) -> list[dict[str, Any]]:
    out = []
    for f in run.diagnosis["findings"]:
        if not isinstance(f, Mapping):
            f = {"code": "note", "severity": "info", "message": str(f)}
        code = str(f.get("code") or "")
        severity = str(f.get("severity") or "info").lower()
        cause = CAUSES.get(code)
        evidence = f.get("evidence")
        out.append({
            "code": code,
            "title": cause.title if cause else code.replace("_", " "),
            "severity": severity if severity in SEVERITY_RANK else "info",
            "step": f.get("step"),
            "step_end": f.get("step_end"),
            "message": f.get("message") or "",
            "recommendation": f.get("recommendation") or (cause.action if cause else ""),
            "evidence": evidence if evidence not in (None, {}, []) else None,
        })
    out.sort(key=lambda f: (SEVERITY_RANK[f["severity"]], number(f["step"]) if number(f["step"]) is not None else 0))
    return out


def _worst(findings: Sequence[Mapping[str, Any]]) -> str | None:
    return min((f["severity"] for f in findings), key=SEVERITY_RANK.__getitem__, default=None)


def _loss_cell(stats: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(stats) if stats else None


def _summary_row(run: RunView, findings: list[dict[str, Any]]) -> dict[str, Any]:
    d = run.diagnosis
    verdict = d["verdict"]
    overfitting = d.get("overfitting") if isinstance(d.get("overfitting"), Mapping) else None
    divergence = d.get("divergence") if isinstance(d.get("divergence"), Mapping) else None
    return {
        "anchor": run.anchor,
        "index": run.index,
        "name": run.name,
        "verdict": run.verdict,
        "verdict_rank": VERDICTS.index(run.verdict),
        "confidence": verdict.get("confidence"),
        "train": _loss_cell(run.summary.get("train_loss")),
        "val": _loss_cell(run.summary.get("val_loss")),
        "onset": overfitting.get("onset_step") if overfitting else None,
        "divergence": divergence.get("step") if divergence else None,
        "divergence_kind": divergence.get("kind") if divergence else None,
        "throughput": run.summary.get("throughput"),
        "findings": len(findings),
        "worst": _worst(findings),
        "codes": " ".join(sorted({f["code"] for f in findings})),
        **_status_cell(d.get("status")),
    }


def _status_cell(status: Any) -> dict[str, Any]:
    """How the run ended, for the summary table: the status and its reason (empty when not known)."""
    if not isinstance(status, Mapping) or status.get("status") not in STATUSES or status["status"] == "unknown":
        return {"status": None, "status_reason": ""}
    return {"status": str(status["status"]), "status_reason": str(status.get("reason", ""))}


def _config_rows(hparams: Mapping[str, Any]) -> list[tuple[str, str]]:
    flat = _flatten(hparams) if hparams else {}
    return [(safe_text(k, 200), short(v)) for k, v in sorted(flat.items(), key=lambda kv: str(kv[0]))]


def _details(d: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for key, title in (("overfitting", "Overfitting"), ("divergence", "Divergence"), ("early_stopping", "Early stopping"),
                       ("gradients", "Gradients"), ("throughput", "Throughput")):
        value = d.get(key)
        if value not in (None, {}, []):
            out.append((title, value))
    if d.get("spikes"):
        out.append((f"Spikes ({len(d['spikes'])})", d["spikes"]))
    known = {"run", "format", "roles", "verdict", "overfitting", "divergence", "early_stopping", "gradients",
             "throughput", "spikes", "findings", "warnings", "role_details", "checkpoints"}
    evidence = d["verdict"].get("evidence")
    if evidence not in (None, {}, []):
        out.insert(0, ("Verdict evidence", evidence))
    for key, value in d.items():
        if key not in known and value not in (None, {}, []):
            out.append((safe_text(key, 80), value))
    return out


def _rank_rows(d: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per rank of a distributed run: its step time, last step, and whether it is the straggler
    or stopped early (from the diagnosis' ``ranks``; empty for a run of one rank)."""
    ranks = d.get("ranks")
    if not isinstance(ranks, Mapping) or not ranks.get("ranks"):
        return []
    straggler = ranks.get("straggler") if isinstance(ranks.get("straggler"), Mapping) else {}
    stopped = {s.get("rank") for s in ranks.get("stopped") or () if isinstance(s, Mapping)}
    communication = d.get("communication") if isinstance(d.get("communication"), Mapping) else {}
    shares = {p.get("rank"): p.get("median_share") for p in communication.get("per_rank") or ()
              if isinstance(p, Mapping) and isinstance(p.get("median_share"), int | float)}
    rows = []
    for r in ranks["ranks"]:
        seconds = r.get("step_seconds")
        rows.append({
            "rank": r.get("rank"),
            "ms": seconds * 1000 if isinstance(seconds, int | float) and math.isfinite(seconds) else None,
            "last_step": r.get("last_step"),
            "straggler": straggler.get("rank") == r.get("rank"),
            "wait_share": straggler.get("wait_share"),
            "stopped": r.get("rank") in stopped,
            "comm_share": shares.get(r.get("rank")),
        })
    longest = max((r["ms"] for r in rows if r["ms"] is not None), default=0.0)
    for r in rows:  # a bar per rank, its step time against the slowest's (pixels, a number the page draws)
        r["width"] = int(round(120 * r["ms"] / longest)) if r["ms"] is not None and longest > 0 else 0
    return rows


def _checkpoint_view(d: Mapping[str, Any]) -> dict[str, Any] | None:
    """The checkpoints a run kept against its best evaluation (from the diagnosis' ``checkpoints``): the monitored
    metric, the best evaluation, one row per checkpoint (whether it is the best kept, in the top-k what-if),
    the steps a top-k manager would also keep. None when the run saved none."""
    c = d.get("checkpoints")
    if not isinstance(c, Mapping):
        return None
    top = [s for s in c.get("top_k_steps") or () if isinstance(s, int)]
    best_kept = c.get("best_kept") if isinstance(c.get("best_kept"), Mapping) else {}
    rows = []
    for k in c.get("checkpoints") or ():
        if not isinstance(k, Mapping):
            continue
        rows.append({"name": k.get("name"), "step": k.get("step"), "value": k.get("value"),
                     "eval_step": k.get("eval_step"), "source": k.get("source"),
                     "best": bool(best_kept) and k.get("name") == best_kept.get("name"),
                     "top": k.get("eval_step") in top})
    return {"metric": c.get("metric"), "mode": c.get("mode"), "best_step": c.get("best_step"),
            "best_value": c.get("best_value"), "best_on_disk": c.get("best_on_disk"),
            "gap_relative": c.get("gap_relative"), "top_k": c.get("top_k"), "top_k_steps": top,
            "would_also_keep": [s for s in c.get("would_also_keep") or () if isinstance(s, int)],
            "rows": rows, "notes": [str(n) for n in c.get("notes") or ()], "folder": c.get("folder")}


def _ranks_basis(d: Mapping[str, Any]) -> str | None:
    """What a rank's time per step in the panel is: its compute (step less communication), its step-time tag,
    or None (from when each rank logged)."""
    ranks = d.get("ranks") if isinstance(d.get("ranks"), Mapping) else {}
    communication = d.get("communication") if isinstance(d.get("communication"), Mapping) else {}
    if communication.get("per_rank"):
        return "step time less communication"
    straggler = ranks.get("straggler") if isinstance(ranks.get("straggler"), Mapping) else {}
    method = str(straggler.get("method") or "")
    return method or None


def _communication_summary(d: Mapping[str, Any]) -> dict[str, Any] | None:
    """The job's communication share, for the run's distributed panel (None: no communication timer)."""
    c = d.get("communication")
    if not isinstance(c, Mapping) or not isinstance(c.get("median_share"), int | float):
        return None
    change = c.get("change")
    return {"share": c["median_share"], "steps": c.get("steps_compared"),
            "timers": ", ".join(str(t) for t in c.get("comm_timers") or ()), "source": str(c.get("step_source", "")),
            "change": change if isinstance(change, int | float) and math.isfinite(change) else None}


def _nccl_summary(d: Mapping[str, Any]) -> str | None:
    """One sentence of what NCCL printed: transports, hosts and ranks, network, timeouts (None: nothing)."""
    n = d.get("nccl")
    if not isinstance(n, Mapping):
        return None
    scan = n.get("scan") if isinstance(n.get("scan"), Mapping) else {}
    kinds = n.get("transport_kinds") or {}
    parts = []
    if kinds:
        parts.append("connections " + ", ".join(f"{k} ×{v:,}" for k, v in kinds.items() if isinstance(v, int)))
    hosts, nranks = n.get("hosts"), n.get("nranks")
    if hosts or nranks:
        parts.append(" · ".join(x for x in (f"{hosts} host(s)" if hosts else "", f"{nranks} ranks" if nranks else "") if x))
    if scan.get("networks"):
        parts.append("network " + ", ".join(str(x) for x in scan["networks"]))
    if scan.get("timeouts_total"):
        parts.append(f"{scan['timeouts_total']} watchdog timeout(s)")
    if scan.get("warnings_total"):
        parts.append(f"{scan['warnings_total']} NCCL warning(s)")
    if scan.get("version"):
        parts.append(f"NCCL {scan['version']}")
    return "; ".join(parts) or None


def _display_size(width: int, height: int) -> tuple[int, int, bool]:
    """The size an image is shown at: fit in IMAGE_BOX, small ones enlarged by a whole factor (drawn pixelated)."""
    scale = min(IMAGE_BOX[0] / width, IMAGE_BOX[1] / height, IMAGE_ZOOM)
    if scale >= 2:
        scale = math.floor(scale)
    elif scale > 1:
        scale = 1
    return max(1, round(width * scale)), max(1, round(height * scale)), scale > 1


def _images(run: RunView, budget: list[int] | None = None) -> dict[str, Any] | None:
    """The run's image summaries as figures: every kept image as a data: URI of its checked bytes (PNG, JPEG or
    GIF by their magic number), the last one shown; the rest are behind the step slider the script adds.
    ``budget``: the image bytes the page may still embed (decreased here); over it, only the last image of each
    tag, then none, with a note."""
    images = run.images
    if images is None:
        return None
    kept = [list(s.images) for s in images.series]
    notes = list(images.notes)
    if budget is not None:
        total = sum(len(i.data) for frames in kept for i in frames)
        last_only = sum(len(frames[-1].data) for frames in kept)
        if total > budget[0]:
            if last_only <= budget[0]:
                kept = [frames[-1:] for frames in kept]
                notes.append(f"only the last image of each tag is embedded: the page's images reached the "
                             f"{PAGE_IMAGE_BYTES:,}-byte limit (a report of this run alone shows every step)")
            else:
                kept = [[] for _ in kept]
                notes.append(f"images not embedded: the page's images reached the {PAGE_IMAGE_BYTES:,}-byte limit "
                             "(a report of this run alone shows them)")
        budget[0] -= sum(len(i.data) for frames in kept for i in frames)
    series = []
    for k, (s, frames_kept) in enumerate(zip(images.series, kept, strict=True)):
        if not frames_kept:
            continue
        frames = []
        for image in frames_kept:
            width, height, pixelated = _display_size(image.width, image.height)
            frames.append({"uri": image.data_uri(), "step": image.step, "width": width, "height": height,
                           "natural": f"{image.width}×{image.height}", "pixelated": pixelated})
        series.append({"id": f"{run.anchor}-img-{k}", "tag": s.tag, "frames": frames, "logged": s.logged,
                       "samples": s.samples})
    return {"series": series, "notes": notes}


def _run_context(run: RunView, figures: tuple[Rendered | None, ...], findings: list[dict[str, Any]],
                 chart: Mapping[str, Any] | None = None, *, details: bool = True,
                 image_budget: list[int] | None = None) -> dict[str, Any]:
    d = run.diagnosis
    info = run.info
    loss, aux = figures[0], figures[1]
    resources = figures[2] if len(figures) > 2 else None
    read_warnings = [w.to_dict() for w in info.warnings] if info else []
    text = []
    for tag, value in (info.text.items() if info else ()):
        value = str(value)
        text.append((tag, value[:MAX_TEXT], max(0, len(value) - MAX_TEXT)))
    return {
        "anchor": run.anchor,
        "index": run.index,
        "name": run.name,
        "has_chart": bool(chart),
        "format": run.format,
        "verdict": run.verdict,
        "confidence": d["verdict"].get("confidence"),
        "evidence": d["verdict"].get("evidence"),
        "reasons": [short(r, 600) for r in (d["verdict"].get("reasons") or []) if r],
        "ranks": _rank_rows(d),
        "checkpoints": _checkpoint_view(d),
        "ranks_basis": _ranks_basis(d),
        "communication": _communication_summary(d),
        "nccl": _nccl_summary(d),
        "points": run.points,
        "tags": run.tags,
        "first_step": run.summary.get("first_step"),
        "last_step": run.summary.get("last_step"),
        "roles": run.roles,
        "loss_figure": Markup(loss.markup) if loss else None,
        "loss_note": loss.note if loss else "",
        "loss_keys": loss.keys if loss else (),
        "aux_figure": Markup(aux.markup) if aux else None,
        "aux_columns": aux.columns if aux else 0,
        "aux_note": aux.note if aux else "",
        # one or two small panels fit under the loss chart when the findings beside it are long
        "aux_beside": bool(aux) and aux.columns <= 2 and len(findings) >= 2,
        "resources_figure": Markup(resources.markup) if resources else None,
        "has_resources": bool(chart and chart.get("resources")),
        "resources_columns": resources.columns if resources else 0,
        "resources_note": resources.note if resources else "",
        "resources_keys": resources.keys if resources else (),
        "findings": findings,
        "details": _details(d) if details else [],
        "analysis_warnings": [short(w, 1000) for w in d["warnings"]],
        "config": _config_rows(info.hparams if info else {}),
        "text": text,
        "read_warnings": read_warnings,
        "notes": list(info.notes) if info else [],
        "restarts": [r.to_dict() for r in info.restarts] if info else [],
        "phases": [p.to_dict() for p in info.phases] if info else [],
        "files": list(info.files) if info else [],
        "directory": info.directory if info else "",
        "images": _images(run, image_budget),
    }


def _headline(verdict: str, findings: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The finding that explains a verdict: one whose code names it (``diverged_nonfinite`` for
    diverged), else the most severe."""
    for f in findings:
        if f["code"].startswith(verdict):
            return f
    return findings[0] if findings else None


def _attention(rows: Sequence[dict[str, Any]], findings: Mapping[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Runs that need a look, worst verdict first; runs sharing a verdict and a top finding form one line."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (r["verdict_rank"], r["index"])):
        top = _headline(row["verdict"], findings[row["index"]])
        if row["verdict"] == "normal" and (top is None or top["severity"] != "error"):
            continue
        key = (row["verdict"], top["code"] if top else "")
        group = groups.setdefault(key, {"verdict": row["verdict"], "top": top, "runs": []})
        group["runs"].append(row)
    return list(groups.values())


def _compare(data: ReportData, figures: FigureMaker) -> list[dict[str, Any]]:
    """One chart per loss tag that at least two runs share."""
    out = []
    for role in LOSS_ROLES:
        by_tag: dict[str, list[RunView]] = {}
        for run in data.runs:
            series = run.series.get(role)
            if series is not None and series.finite.any():
                by_tag.setdefault(series.tag, []).append(run)
        for tag, runs in by_tag.items():
            if len(runs) < 2:
                continue
            rendered = compare_figure(figures, role, tag, runs, max_lines=COMPARE_MAX_LINES, key=len(out),
                                      cache=data.cache)
            out.append({"role": role, "tag": tag, "runs": len(runs), "figure": Markup(rendered.markup),
                        "legend": rendered.keys, "many": len(runs) > COMPARE_MAX_LINES})
    return out


def _groups(data: ReportData, figures: FigureMaker) -> list[dict[str, Any]]:
    by_index = {run.index: run for run in data.runs}
    out = []
    for group in data.groups:
        runs = [by_index[i] for i in group.runs]
        charts: list[Rendered] = []
        stats = []
        for role in LOSS_ROLES:
            rendered = figures.seed_band(role, runs, group.label)
            if rendered is not None:
                charts.append(rendered)
            finals = [r.summary[role]["final"] for r in runs if role in r.summary and r.summary[role]["final"] is not None]
            if finals:
                finals.sort()
                mid = finals[len(finals) // 2] if len(finals) % 2 else (finals[len(finals) // 2 - 1] + finals[len(finals) // 2]) / 2
                stats.append({"role": role, "median": mid, "min": finals[0], "max": finals[-1], "n": len(finals)})
        verdicts: dict[str, int] = {}
        for r in runs:
            verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
        out.append({
            "label": group.label,
            "reason": group.reason,
            "runs": [{"anchor": r.anchor, "name": r.name, "verdict": r.verdict} for r in runs],
            "figures": [{"markup": Markup(c.markup), "legend": c.keys} for c in charts],
            "stats": stats,
            "verdicts": sorted(verdicts.items(), key=lambda kv: VERDICTS.index(kv[0])),
        })
    return out


def _render(template: str, context: dict[str, Any]) -> str:
    return _environment().get_template(template).render(**context)


def render_html(data: ReportData, **options: Any) -> str:
    """The report page as one string; ``options`` are those of :func:`iter_html`."""
    return "".join(iter_html(data, **options))


def iter_html(
    data: ReportData,
    *,
    fragment: bool = False,
    csp: bool = True,
    embed_json: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    sections: bool = True,
) -> Iterator[str]:
    """The report page in pieces, in order: written to a file as they come, the page is never whole in memory.

    ``fragment=True``: one ``<div>`` with its style, no script, for Jupyter.

    ``csp=False`` leaves the Content-Security-Policy out (tests use it to show
    that escaping alone keeps payloads inert). ``embed_json`` is placed in a
    ``<script type="application/json" id="tanalyze-data">`` block. ``jobs`` is
    accepted for compatibility (figures not drawn where the runs were read are drawn here).
    ``sections=False`` leaves out each run's section (its figures and findings):
    the summary of many runs that Jupyter shows, quick to draw and small.

    Over :data:`~tanalyze.report.chartdata.STATIC_FIGURES_MAX_RUNS` runs the page is a large report: no
    static figure per run (the script draws each run's charts from compact data when shown), no dump of
    each run's diagnosis details and no embedded JSON (both are in the JSON file); findings, their evidence
    and every number of the summary stay.
    """
    figures = FigureMaker(smoothing=data.smoothing)
    findings = {run.index: _findings(run) for run in data.runs}
    rows = [_summary_row(run, findings[run.index]) for run in data.runs]
    runs: Iterator[dict[str, Any]] | list[dict[str, Any]] = []
    static = len(data.runs) <= STATIC_FIGURES_MAX_RUNS
    charts: list[str] = []  # each run's chart data as JSON, gathered while its section is written
    if sections:
        runs = _run_contexts(data, figures, findings, static=static, charts=None if fragment else charts, jobs=jobs,
                             progress=progress)

    def charts_json() -> Markup:
        """Every run's chart data and the settings, as JSON safe inside the page's one data element for charts
        (one element: thousands of small script elements cost a browser seconds to parse)."""
        body = ",".join(charts)
        settings = json_for_script({"smoothing": data.smoothing})
        return Markup(f'{{"settings":{settings},"runs":{{{body}}}}}')

    context = {
        "fragment": fragment,
        "title": data.title,
        "generated_at": data.generated_at,
        "version": data.version,
        "inputs": data.inputs,
        "counts": data.verdict_counts(),
        "attention": _attention(rows, findings),
        "rows": rows,
        "runs": runs,
        "omitted_sections": 0 if sections else len(data.runs),
        "compare": _compare(data, figures) if not fragment or len(data.runs) > 1 else [],
        "groups": _groups(data, figures),
        "experiments": sweep_context(data.experiments),
        "not_read": data.not_read[:NOT_READ_ROWS],
        "not_read_more": max(0, len(data.not_read) - NOT_READ_ROWS),
        "smoothing": data.smoothing,
        "static_figures": static,
        "static_max": STATIC_FIGURES_MAX_RUNS,
        "charts_json": charts_json,
        "downsample_method": METHOD,
        "compare_max": COMPARE_MAX_LINES,
        "style": Markup(STYLE if fragment else PAGE_STYLE),
        "script": Markup(SCRIPT),
        "csp": csp_for(SCRIPT) if csp and not fragment else None,
        # a large report leaves its JSON to the JSON file (``--json``): the page stays small
        "data_json": Markup(json_for_script(embed_json)) if embed_json is not None and not fragment and static else None,
    }
    return _environment().get_template("report.html.j2").generate(**context)


def _run_contexts(data: ReportData, figures: FigureMaker, findings: Mapping[int, list[dict[str, Any]]], *,
                  static: bool, charts: list[str] | None, jobs: int | None,
                  progress: ProgressCallback | None) -> Iterator[dict[str, Any]]:
    """Each run's section context, in order (a generator: the page is written as they come). Each run's chart
    data is added to ``charts`` (``"anchor":{...}`` JSON members; None: no charts, as in Jupyter)."""
    columns = chart_columns(len(data.runs))
    image_budget = [PAGE_IMAGE_BYTES]
    if static:
        drawn: Iterator[tuple[Rendered | None, ...]] = run_figures(
            data.runs, figures, jobs=jobs, progress=progress)
    else:
        drawn = iter([(None, None)] * len(data.runs))
    for done, (run, pair) in enumerate(zip(data.runs, drawn, strict=True), start=1):
        chart = None
        if charts is not None:
            made = run.chart is not None and run.chart[0] == columns  # made where the run was read
            chart = run.chart[1] if made else chart_text(run_chart(run, columns))
            if chart is not None:
                charts.append(chart_member(run.anchor, run.name, chart))
        shown = {"resources": bool(resource_panels(run))} if chart else None  # what the section says of its chart
        yield _run_context(run, pair, findings[run.index], shown, details=static, image_budget=image_budget)
        if progress is not None and not static:
            progress(done, len(data.runs), f"render {run.name}")


def render_run_fragment(data: ReportData, index: int = 1) -> str:
    """One run's section as an HTML fragment with the report's style (a Jupyter repr)."""
    figures = FigureMaker(smoothing=data.smoothing)
    run = next(r for r in data.runs if r.index == index)
    context = {
        "run": _run_context(run, draw(figures, run), _findings(run)),
        "style": Markup(STYLE),
        "smoothing": data.smoothing,
        "downsample_method": METHOD,
    }
    return _render("run.html.j2", context)
