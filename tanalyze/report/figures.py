"""Figures of the report: matplotlib (Agg/SVG canvases, no pyplot) rendered to inline SVG strings.

Nothing global is touched: figures get their canvas explicitly and every
setting lives in a ``rc_context`` around drawing and saving. Text from logs
(tags, run names) reaches matplotlib with math parsing off, and the SVG it
writes is checked for anything active before it goes into a page (``svgsafe.py``).
Lines are downsampled with M4 before drawing (see ``downsample.py``); the
markers (onset, best step, spikes, divergence) come from the full data.
matplotlib draws the data; ticks, grid and axis labels are written from its
locators by ``svgaxes.py``, and legends are HTML under each figure: both were
most of the cost of a figure, and one figure per layout is reused across runs.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from tanalyze.curves import debiased_ema as ema
from tanalyze.plotting import plottable
from tanalyze.report.chartdata import (
    LOG_SCALE_DECADES,
    blowup_step,
    early_stop_step,
    explosion_cap,
    spike_points,
    wants_log_scale,
)
from tanalyze.report.downsample import m4
from tanalyze.report.model import (
    ROLE_TITLES,
    RunView,
    Series,
    device_order,
    number,
    resource_marks,
    resource_panels,
)
from tanalyze.report.svgaxes import AxisSpec, compact, layer, log_label, matplotlib_ticks, prepare
from tanalyze.report.svgsafe import clean_svg
from tanalyze.text import safe_text

__all__ = ["Rendered", "FigureMaker", "label_text", "compact", "log_label", "LOG_SCALE_DECADES"]

#: Use a log y-axis when positive values span more than this many decades.
#: A figure drawing more points than this is embedded as PNG instead of SVG.
DENSE_POINTS = 40_000

TRAIN, VAL = "#2563eb", "#ea580c"
#: One colour per device in the resources panel (gpu0 first); the legend under the panel names them.
DEVICE_COLORS = ("#1f2937", "#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#ca8a04")
ONSET, BEST, EARLY, SPIKE, DIVERGED = "#b45309", "#15803d", "#7c3aed", "#dc2626", "#991b1b"
PALETTE = (
    "#2563eb", "#ea580c", "#16a34a", "#dc2626", "#7c3aed", "#0891b2",
    "#ca8a04", "#db2777", "#4b5563", "#65a30d", "#9333ea", "#0d9488",
)

_RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "text.usetex": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.titlelocation": "left",
    "axes.titley": 1.0,  # a fixed title position: automatic placement measures every tick label (slow)
    "axes.titlepad": 4.0,
    "axes.titlecolor": "#1f2937",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#9ca3af",
    "axes.linewidth": 0.8,
    "axes.labelcolor": "#4b5563",
    "axes.grid": False,  # the axis layer (svgaxes.py) draws the grid
    "axes.facecolor": "none",  # ... under the data, so the axes must not paint over it
    "figure.facecolor": "none",
    "axes.formatter.useoffset": False,
    "xtick.color": "#6b7280",
    "ytick.color": "#6b7280",
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "xtick.major.size": 3,
    "ytick.major.size": 3,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "path.simplify": True,
    "svg.image_inline": True,
}


@dataclass(frozen=True)
class Rendered:
    """One figure ready to inline: ``markup`` is an ``<svg>`` element or an ``<img>`` with a data: URI."""

    markup: str
    kind: str  # "svg" or "png"
    points: int
    note: str = ""  # what the figure draws, for its caption
    columns: int = 1  # panels side by side (the page sizes the figure so that text keeps one size)
    #: The legend, drawn by the page in HTML: (key style, label) pairs. Legends drawn by matplotlib
    #: cost more than the rest of a figure, hide data, and cannot be selected or searched.
    keys: tuple[tuple[str, str], ...] = ()



def label_text(text: str, limit: int = 60) -> str:
    """Log text made safe as a matplotlib label: control characters visible, length capped,
    a leading underscore kept visible (matplotlib hides legend labels starting with ``_``)."""
    value = safe_text(text, limit=limit)
    return "\u200b" + value if value.startswith("_") else value



class FigureMaker:
    """Draws the report's figures; one instance per report (it numbers figures to keep SVG ids distinct)."""

    def __init__(self, *, smoothing: float = 0.6, columns: int = 320, dense_points: int = DENSE_POINTS) -> None:
        self.smoothing = smoothing
        self.columns = columns
        self.dense_points = dense_points
        self._pool: dict[str, tuple[Figure, list[Any]]] = {}
        self._specs: dict[int, list[AxisSpec]] = {}

    # -- plumbing -----------------------------------------------------------------

    def _figure(self, key: str, size: tuple[float, float], nrows: int = 1, ncols: int = 1) -> tuple[Figure, list[Any]]:
        """A figure of this layout, reused across runs with its axes emptied (tick artists survive:
        creating them is most of matplotlib's cost per figure). Call inside ``rc_context(_RC)``."""
        cached = self._pool.get(key)
        if cached is None:
            fig = Figure(figsize=size, dpi=72)  # 72 dpi: display coordinates are SVG points
            axes = list(np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel())
            self._pool[key] = (fig, axes)
        else:
            fig, axes = cached
            for ax in axes:
                _empty_axes(ax)
        self._specs[id(fig)] = []
        return fig, axes

    def _render(self, fig: Figure, alt: str, points: int, salt: str, note: str = "", columns: int = 1,
                keys: Sequence[tuple[str, str]] = ()) -> Rendered:
        """Save ``fig`` as inline SVG (PNG when dense). ``salt`` makes its clip-path and marker ids
        unique in the page, whichever process draws it."""
        specs = self._specs.get(id(fig), [])
        if points > self.dense_points:
            for spec in specs:
                matplotlib_ticks(spec)
            buffer = io.BytesIO()
            FigureCanvasAgg(fig)
            fig.savefig(buffer, format="png", dpi=144, metadata={"Software": None}, facecolor="white")
            data = base64.b64encode(buffer.getvalue()).decode("ascii")
            markup = f'<img class="chart" alt="{html.escape(alt, quote=True)}" src="data:image/png;base64,{data}">'
            return Rendered(markup, "png", points, note, columns, tuple(keys))
        buffer = io.StringIO()
        matplotlib.rcParams["svg.hashsalt"] = salt  # inside the caller's rc_context: restored on its exit
        FigureCanvasSVG(fig).print_svg(buffer, metadata={"Date": None})
        under, over = layer(fig.bbox.height, specs)
        svg = buffer.getvalue()
        start = svg.index(">", svg.index("<svg")) + 1
        end = svg.rindex("</svg>")
        svg = svg[:start] + under + svg[start:end] + over + svg[end:]
        return Rendered(clean_svg(svg, alt), "svg", points, note, columns, tuple(keys))

    def _line(self, ax, steps: np.ndarray, values: np.ndarray, columns: int | None = None, **style) -> int:
        mask = plottable(values)
        x, y = m4(steps[mask], values[mask], columns or self.columns)
        ax.plot(x, y, **style)
        return len(x)

    def _style_axes(self, ax, *, log: bool, xticks: int = 6, yticks: int = 5, xlabel: str = "",
                    ylabel: str = "") -> AxisSpec:
        """Scale and tick plan of ``ax``; the axis layer draws ticks, grid and labels at save time."""
        spec = AxisSpec(ax, log=log, xticks=xticks, yticks=yticks, xlabel=xlabel, ylabel=ylabel)
        prepare(spec)
        self._specs.setdefault(id(ax.get_figure()), []).append(spec)
        return spec

    # -- per-run figures ----------------------------------------------------------

    def loss(self, run: RunView) -> Rendered | None:
        """Train and validation loss: raw points faint, debiased EMA on top, diagnosis markers."""
        curves = [(role, run.series[role], color) for role, color in (("train_loss", TRAIN), ("val_loss", VAL))
                  if role in run.series and run.series[role].finite.any()]
        if not curves:
            return None
        with matplotlib.rc_context(_RC):
            fig, (ax,) = self._figure("loss", (7.0, 3.2))
            points = 0
            keys: list[tuple[str, str]] = []
            few = {role: int(s.finite.sum()) < 60 for role, s, _ in curves}
            smoothed = False
            for role, series, color in curves:
                name = "train" if role == "train_loss" else "val"
                keys.append((name, f"{name} \u00b7 {safe_text(series.tag, 200)}"))
                if self.smoothing > 0 and not few[role]:
                    smoothed = True
                    points += self._line(ax, series.steps, series.values, color=color, alpha=0.22, linewidth=0.8)
                    smooth = ema(series.values, self.smoothing)
                    points += self._line(ax, series.steps, smooth, color=color, linewidth=1.6)
                else:
                    marker = "o" if few[role] else None
                    points += self._line(ax, series.steps, series.values, color=color, linewidth=1.4,
                                         marker=marker, markersize=3)
            log = wants_log_scale([s.values for _, s, _ in curves])
            self._style_axes(ax, log=log, xlabel="step", ylabel="loss" + (" (log scale)" if log else ""))
            start = blowup_step(run.diagnosis)
            if start is not None:
                _cap_explosion(ax, [s.values[s.steps < start] for _, s, _ in curves], [s.values for _, s, _ in curves], log)
            keys += self._markers(ax, run, dict((role, s) for role, s, _ in curves))
            fig.subplots_adjust(left=0.09, right=0.985, top=0.96, bottom=0.15)
            alt = "Loss curves of run " + safe_text(run.name, limit=120)
            notes = []
            if smoothed:
                notes.append(f"Faint: every logged point; bold: TensorBoard-style debiased EMA (weight {self.smoothing:g}).")
            if any(few.values()):
                notes.append("Curves with fewer than 60 points are drawn point by point, unsmoothed.")
            notes.append("Markers come from the diagnosis.")
            return self._render(fig, alt, points, f"loss{run.index}", " ".join(notes), keys=keys)

    def _markers(self, ax, run: RunView, series: Mapping[str, Series]) -> list[tuple[str, str]]:
        """Draw what the diagnosis located; return the legend keys of what was drawn."""
        keys: list[tuple[str, str]] = []
        d = run.diagnosis
        top = ax.get_xaxis_transform()  # x in data, y in axes fraction
        divergence = d.get("divergence") or None
        if isinstance(divergence, Mapping) and number(divergence.get("step")) is not None:
            step = number(divergence["step"])
            ax.axvline(step, color=DIVERGED, linewidth=1.2)
            keys.append(("diverged", f"diverged ({safe_text(divergence.get('kind') or '?', 30)}) at step {step:,.0f}"))
            ax.axvspan(step, ax.get_xlim()[1], color=DIVERGED, alpha=0.06, linewidth=0)
            onset = number(divergence.get("onset_step"))
            if onset is not None and onset != step:
                ax.axvline(onset, color=DIVERGED, linestyle=":", linewidth=1.1)
                keys.append(("blowup", f"blow-up onset {onset:,.0f}"))
            restart = divergence.get("restart")
            resume = number(restart.get("resume_at_or_before_step")) if isinstance(restart, Mapping) else None
            if resume is not None:
                ax.axvline(resume, color=BEST, linestyle=":", linewidth=1.3)
                keys.append(("resume", f"resume at or before {resume:,.0f}"))
        overfitting = d.get("overfitting") or None
        if isinstance(overfitting, Mapping) and number(overfitting.get("onset_step")) is not None:
            onset_step = number(overfitting["onset_step"])
            ax.axvline(onset_step, color=ONSET, linestyle="--", linewidth=1.1)
            keys.append(("onset", f"overfitting onset {onset_step:,.0f}"))
        stop = early_stop_step(d.get("early_stopping"))
        if stop is not None:
            ax.axvline(stop, color=EARLY, linestyle=":", linewidth=1.3)
            keys.append(("early", f"early stop {stop:,.0f}"))
        val = series.get("val_loss")
        if val is not None and val.finite.any() and plottable(np.array([val.stats()["best"]], dtype=float)).all():
            stats = val.stats()
            ax.plot([stats["best_step"]], [stats["best"]], marker="*", markersize=9, color=BEST,
                    markeredgecolor="white", markeredgewidth=0.6, linestyle="none", zorder=5)
            keys.append(("best", f"best val {stats['best']:.4g} at {stats['best_step']:,}"))
        spikes, peaks = spike_points(d.get("spikes"))
        train = series.get("train_loss") or val
        if spikes.size and train is not None:
            idx = np.clip(np.searchsorted(train.steps, spikes), 0, len(train.steps) - 1)
            values = np.where(np.isfinite(peaks), peaks, train.values[idx])
            ok = plottable(values)
            if ok.any():
                ax.plot(spikes[ok], values[ok], marker="v", markersize=5, color=SPIKE, linestyle="none", zorder=6)
                keys.append(("spike", _count(int(ok.sum()), "spike")))
        for role, s in series.items():
            bad = ~s.finite
            if bad.any():
                steps = s.steps[bad]
                if len(steps) > 200:
                    steps = steps[np.linspace(0, len(steps) - 1, 200).astype(int)]
                ax.plot(steps, np.full(len(steps), 0.98), transform=top, marker="x", markersize=4,
                        color=DIVERGED, linestyle="none", clip_on=False)
                name = "train" if role == "train_loss" else "val"
                keys.append(("nonfinite", f"{name} NaN/inf: {int(bad.sum()):,} points from step {int(steps[0]):,}"))
        return keys

    def aux(self, run: RunView, roles: Sequence[str]) -> Rendered | None:
        """Small panels side by side: learning rate, gradient norm (with its healthy band), throughput …"""
        present = [r for r in roles if r in run.series and run.series[r].finite.any()]
        if not present:
            return None
        n = len(present)
        ncols = n if n <= 3 else 3
        nrows = (n + ncols - 1) // ncols
        with matplotlib.rc_context(_RC):
            fig, axes = self._figure(f"aux{nrows}x{ncols}", (3.45 * ncols, 2.25 * nrows), nrows, ncols)
            points = 0
            captions: list[str] = []
            for ax, role in zip(axes, present, strict=False):
                series = run.series[role]
                columns = max(100, (self.columns * 2) // (3 * ncols))
                if role in ("grad_norm", "throughput", "step_time", "gpu_memory") and self.smoothing > 0 and len(series.steps) >= 60:
                    points += self._line(ax, series.steps, series.values, columns=columns, color="#4b5563",
                                         alpha=0.25, linewidth=0.7)
                    points += self._line(ax, series.steps, ema(series.values, self.smoothing), columns=columns,
                                         color="#1f2937", linewidth=1.2)
                else:
                    points += self._line(ax, series.steps, series.values, columns=columns, color="#1f2937",
                                         linewidth=1.2)
                log = role in ("learning_rate", "grad_norm", "loss_scale") and wants_log_scale([series.values])
                self._style_axes(ax, log=log, xticks=4, yticks=4)
                ax.set_title(label_text(f"{ROLE_TITLES.get(role, role)} · {series.tag}", 48))
                said: list[str] = []
                if role == "grad_norm":
                    said = _gradient_marks(ax, run.diagnosis.get("gradients"), series)
                if role in ("throughput", "step_time"):
                    said = _throughput_marks(ax, run.diagnosis.get("throughput"), series, role)
                if said:
                    captions.append(f"{ROLE_TITLES.get(role, role).capitalize()}: {'; '.join(said)}.")
            for ax in axes[n:]:
                ax.set_visible(False)
            fig.subplots_adjust(left=0.07 if ncols == 3 else 0.1, right=0.99, top=0.88, bottom=0.13,
                                wspace=0.28, hspace=0.55)
            alt = f"{', '.join(ROLE_TITLES.get(r, r) for r in present)} of run {safe_text(run.name, limit=120)}"
            return self._render(fig, alt, points, f"aux{run.index}", " ".join(captions), columns=ncols)

    def resources(self, run: RunView) -> Rendered | None:
        """The resources panel: GPU utilisation, memory, temperature, power, clock, CPU and host memory of the
        run's system metrics, one line per device, on seconds since the start (or steps, when logged per step)."""
        panels = resource_panels(run)
        if not panels:
            return None
        n = len(panels)
        ncols = n if n <= 3 else 3
        nrows = (n + ncols - 1) // ncols
        with matplotlib.rc_context(_RC):
            fig, axes = self._figure(f"res{nrows}x{ncols}", (3.45 * ncols, 2.1 * nrows), nrows, ncols)
            points = 0
            devices = device_order(panels)
            marks = resource_marks(run)
            said: set[str] = set()
            columns = max(100, (self.columns * 2) // (3 * ncols))
            for ax, panel in zip(axes, panels, strict=False):
                minutes = panel.axis == "seconds"
                for device, series in panel.lines:
                    color = DEVICE_COLORS[devices.index(device) % len(DEVICE_COLORS)]
                    x = series.steps / 60.0 if minutes else series.steps
                    points += self._line(ax, x, series.values, columns=columns, color=color, linewidth=1.1)
                for kind, x, _ in marks.get(panel.kind, ()):
                    if kind == "limit":
                        if panel.unit == "%":
                            ax.axhline(x, color=DIVERGED, linestyle=":", linewidth=1.0)
                            said.add("dotted red line: 90% of capacity")
                        continue
                    at = x / 60.0 if minutes else x
                    if kind == "throttle":
                        ax.axvline(at, color=ONSET, linestyle="--", linewidth=1.1)
                        said.add("dashed line: where a throttling GPU reached its temperature plateau")
                    else:
                        ax.axvline(at, color=SPIKE, linewidth=0.6, alpha=0.5)
                        said.add("thin red lines: periodic utilisation drops")
                self._style_axes(ax, log=False, xticks=4, yticks=4, xlabel="minutes" if minutes else "step")
                ax.set_title(label_text(f"{panel.title} ({panel.unit})", 48))
            for ax in axes[n:]:
                ax.set_visible(False)
            fig.subplots_adjust(left=0.07 if ncols == 3 else 0.1, right=0.99, top=0.88, bottom=0.18,
                                wspace=0.28, hspace=0.7)
            alt = f"System metrics ({', '.join(p.title for p in panels)}) of run {safe_text(run.name, limit=120)}"
            keys = [(f"dev{i % len(DEVICE_COLORS)}", d) for i, d in enumerate(devices)] if len(devices) > 1 else []
            axis = "minutes since the run started" if any(p.axis == "seconds" for p in panels) else "training steps"
            note = (f"System metrics on {axis}" + (" (sampled on a clock, not per step)" if "minutes" in axis else "")
                    + "; one line per device." + "".join(f" {m[0].upper()}{m[1:]}." for m in sorted(said)))
            return self._render(fig, alt, points, f"res{run.index}", note, columns=ncols, keys=keys)

    # -- across runs ----------------------------------------------------------------

    def compare(self, role: str, tag: str, runs: Sequence[RunView], *, highlight: int = 5,
                max_lines: int = 12, key: int = 0) -> Rendered:
        """Smoothed curves of one shared tag, one line per run (grey with the best few coloured past ``max_lines``)."""
        with matplotlib.rc_context(_RC):
            fig, (ax,) = self._figure("compare", (5.6, 2.9))
            points = 0
            columns = max(120, (self.columns * 2) // 3)
            many = len(runs) > max_lines
            finals = {}
            for run in runs:
                s = run.series[role]
                finals[run.index] = s.stats()["final"]
            ranked = sorted((v, i) for i, v in finals.items() if v is not None)
            highlighted = {i for _, i in ranked[:highlight]} if many else {r.index for r in runs}
            values = []
            keys: list[tuple[str, str]] = []
            grey: list[tuple[np.ndarray, np.ndarray]] = []
            for run in runs:
                s = run.series[role]
                smooth = ema(s.values, self.smoothing) if self.smoothing else s.values
                values.append(smooth)
                if run.index in highlighted:
                    color = len(keys) % len(PALETTE)
                    keys.append((f"c{color}", safe_text(run.name, 200)))
                    style = {"color": PALETTE[color], "linewidth": 1.4, "zorder": 3}
                    points += self._line(ax, s.steps, smooth, columns=columns, **style)
                else:
                    mask = plottable(smooth)
                    grey.append(m4(s.steps[mask], smooth[mask], columns))
            if grey:  # one line broken at NaN gaps: a plot call per run costs more than its points (many runs)
                gap = np.array([np.nan])
                x = np.concatenate([part for line in grey for part in (line[0].astype(np.float64), gap)])
                y = np.concatenate([part for line in grey for part in (line[1], gap)])
                ax.plot(x, y, color="#9ca3af", linewidth=0.7, alpha=0.6, zorder=2)
                points += sum(len(line[0]) for line in grey)
            if many:
                keys.append(("other", f"{len(runs) - len(highlighted)} other runs"))
            log = wants_log_scale(values)
            self._style_axes(ax, log=log, xlabel="step", ylabel=safe_text(tag, 40) + (" (log)" if log else ""))
            before = []
            for run, smooth in zip(runs, values, strict=True):
                start = blowup_step(run.diagnosis)
                before.append(smooth if start is None else smooth[run.series[role].steps < start])
            if any(blowup_step(r.diagnosis) is not None for r in runs):
                _cap_explosion(ax, before, values, log)
            fig.subplots_adjust(left=0.11, right=0.985, top=0.96, bottom=0.15)
            alt = f"{ROLE_TITLES.get(role, role)} '{safe_text(tag, 80)}' of {len(runs)} runs"
            return self._render(fig, alt, points, f"cmp-{role}-{key}", keys=keys)

    def seed_band(self, role: str, runs: Sequence[RunView], label: str) -> Rendered | None:
        """Median and min–max band across seeds of the smoothed curves, on the steps all seeds share."""
        curves = [r.series[role] for r in runs if role in r.series and r.series[role].finite.any()]
        if len(curves) < 2:
            return None
        grid, stack = _common_grid(curves, self.smoothing, self.columns)
        if grid is None:
            return None
        color = TRAIN if role == "train_loss" else VAL
        with matplotlib.rc_context(_RC):
            fig, (ax,) = self._figure("band", (5.6, 3.0))
            stack = np.where(plottable(stack), stack, np.nan)
            with np.errstate(all="ignore"):
                lo, mid, hi = np.nanmin(stack, axis=0), np.nanmedian(stack, axis=0), np.nanmax(stack, axis=0)
            ax.fill_between(grid, lo, hi, color=color, alpha=0.18, linewidth=0)
            ax.plot(grid, mid, color=color, linewidth=1.6)
            name = "train" if role == "train_loss" else "val"
            keys = [(name, "median"), (f"{name}-band", f"min\u2013max of {len(curves)} seeds")]
            self._style_axes(ax, log=wants_log_scale([lo, hi]), xlabel="step")
            ax.set_title(label_text(f"{ROLE_TITLES[role]} · {curves[0].tag}", 60))
            fig.subplots_adjust(left=0.11, right=0.985, top=0.9, bottom=0.16)
            alt = f"{ROLE_TITLES[role]} of seed group {safe_text(label, 80)}: median and min-max band"
            return self._render(fig, alt, 3 * len(grid), f"band-{role}-{runs[0].index}", keys=keys)


def _empty_axes(ax) -> None:
    """Back to a fresh axes' state: no artists, legend, labels or limits; linear scales."""
    for artist in (*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images):
        artist.remove()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.set_title("")
    ax.grid(False)
    ax.set_xlabel("")
    ax.set_ylabel("")
    if ax.get_xscale() != "linear":
        ax.set_xscale("linear")
    if ax.get_yscale() != "linear":
        ax.set_yscale("linear")
    ax.set_visible(True)
    # The limits of a new axes: spans (axhspan) are placed through the view transform, and the view of
    # the run drawn before would otherwise shift their data limits by rounding (output must not depend
    # on which runs a worker drew before).
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.dataLim = Bbox.null()
    ax.relim()
    ax.set_autoscale_on(True)
    ax.autoscale_view()


def _cap_explosion(ax, before: Sequence[np.ndarray], everything: Sequence[np.ndarray], log: bool) -> None:
    """Keep the y-axis on the part of the run worth reading when a blow-up reaches far beyond it
    (see :func:`~tanalyze.report.chartdata.explosion_cap`); the text says how far the curve went."""
    found = explosion_cap(before, everything, log)
    if found is None:
        return
    cap, top = found
    ax.set_ylim(ax.get_ylim()[0], cap)
    ax.text(0.01, 0.985, f"\u2191 off the scale above: up to {top:.3g}", transform=ax.transAxes, ha="left",
            va="top", fontsize=7.5, color=DIVERGED, zorder=7,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5})


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _gradient_marks(ax, gradients: Any, series: Series) -> list[str]:
    """Draw the healthy band, the clipping threshold, explosions and collapses the gradient analysis found;
    return what they are, for the caption (legends inside small panels cost more than they tell)."""
    if not isinstance(gradients, Mapping):
        return []
    said = []
    band = _band(gradients)
    if band is not None:
        ax.axhspan(band[0], band[1], color="#16a34a", alpha=0.10, linewidth=0)
        said.append(f"green band: healthy range {band[0]:g}\u2013{band[1]:g}")
    clip = number(gradients.get("max_norm"))
    if clip is not None and np.isfinite(clip):
        ax.axhline(clip, color="#7c3aed", linestyle="--", linewidth=0.9)
        said.append(f"purple dashed: clipping at {clip:g}")
    same_tag = gradients.get("tag") in (None, series.tag)
    for key, marker, color, text in (("explosions", "^", SPIKE, "\u25b2 explosion"), ("collapses", "v", "#0369a1", "\u25bc collapse")):
        events = [e for e in gradients.get(key) or [] if isinstance(e, Mapping)]
        steps = np.array([number(e.get("step")) for e in events], dtype=np.float64)
        values = np.array([number(e.get("value")) for e in events], dtype=np.float64)
        ok = np.isfinite(steps) & plottable(values)
        if same_tag and ok.any():
            ax.plot(steps[ok], values[ok], marker=marker, markersize=5, color=color, linestyle="none", zorder=5)
            said.append(_count(int(ok.sum()), text))
    return said


def _throughput_marks(ax, throughput: Any, series: Series, role: str) -> list[str]:
    """Draw the steady level, end of warm-up, lasting changes and stalls the throughput analysis found;
    return what they are, for the caption.

    Levels are drawn only when the analysis measured this very curve in its unit
    (it turns steps/s into s/step, for instance); steps are drawn regardless.
    """
    finite = series.values[series.finite]
    if not isinstance(throughput, Mapping):
        median = float(np.median(finite))
        ax.axhline(median, color="#6b7280", linestyle="--", linewidth=0.8)
        return [f"grey dashed: median {median:.4g}"]
    said = []
    same_unit = throughput.get("tag") == series.tag and throughput.get("higher_is_better") == (role == "throughput")
    steady = number(throughput.get("steady_median"))
    if same_unit and steady is not None and np.isfinite(steady):
        ax.axhline(steady, color="#6b7280", linestyle="--", linewidth=0.8)
        said.append(f"grey dashed: steady median {steady:.4g}")
    warmup = number(throughput.get("warmup_end_step"))
    if warmup is not None and warmup > float(series.steps[0]):
        ax.axvline(warmup, color="#6b7280", linestyle=":", linewidth=1.0)
        said.append(f"grey dotted: warm-up ends (step {warmup:,.0f})")
    changes = [c for c in (number(c.get("step")) for c in throughput.get("change_points") or [] if isinstance(c, Mapping))
               if c is not None]
    for step in changes:
        ax.axvline(step, color=ONSET, linestyle="--", linewidth=1.0)
    if changes:
        said.append("orange dashed: " + _count(len(changes), "lasting change"))
    stalls = [s for s in throughput.get("stalls") or [] if isinstance(s, Mapping)]
    if same_unit and stalls:
        steps = np.array([number(s.get("step")) for s in stalls], dtype=np.float64)
        values = np.array([number(s.get("value")) for s in stalls], dtype=np.float64)
        ok = np.isfinite(steps) & plottable(values)
        if ok.any():
            ax.plot(steps[ok], values[ok], marker="o", markersize=3.5, color=SPIKE, linestyle="none", zorder=5)
            said.append(_count(int(ok.sum()), "\u25cf stall"))
    return said


def _common_grid(curves: Sequence[Series], smoothing: float, columns: int) -> tuple[np.ndarray | None, np.ndarray]:
    """The smoothed curves on shared steps: their own steps when equal, else a grid over the common range."""
    smoothed = [ema(c.values, smoothing) if smoothing else c.values for c in curves]
    same = all(len(c.steps) == len(curves[0].steps) and np.array_equal(c.steps, curves[0].steps) for c in curves)
    if same:
        grid = curves[0].steps.astype(np.float64)
        stack = np.vstack(smoothed)
        if len(grid) > columns:
            keep = np.unique(np.linspace(0, len(grid) - 1, columns).astype(int))
            grid, stack = grid[keep], stack[:, keep]
        return grid, stack
    start = max(float(c.steps[c.finite][0]) for c in curves)
    stop = min(float(c.steps[c.finite][-1]) for c in curves)
    if stop <= start:
        return None, np.empty((0, 0))
    grid = np.linspace(start, stop, columns)
    rows = []
    for c, s in zip(curves, smoothed, strict=True):
        ok = np.isfinite(s)
        rows.append(np.interp(grid, c.steps[ok], s[ok]))
    return grid, np.vstack(rows)


def _band(gradients: Any) -> tuple[float, float] | None:
    """The healthy gradient-norm band a diagnosis reports, if any."""
    if not isinstance(gradients, Mapping):
        return None
    for key in ("band", "healthy_band"):
        band = gradients.get(key)
        if isinstance(band, Mapping):
            band = (band.get("low"), band.get("high"))
        if isinstance(band, list | tuple) and len(band) == 2:
            lo, hi = number(band[0]), number(band[1])
            if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi) and hi > lo:
                return lo, hi
    lo, hi = number(gradients.get("band_low")), number(gradients.get("band_high"))
    if lo is not None and hi is not None and hi > lo:
        return lo, hi
    return None
