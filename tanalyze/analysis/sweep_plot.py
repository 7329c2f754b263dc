"""``SweepResult.plot()``: one figure per experiment — importance bars, the heat map, the bands per configuration.

Draws only what the result holds; matplotlib is imported on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tanalyze.plotting import label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_experiment", "MAX_BANDS"]

#: Configurations drawn as bands at most (the best ones).
MAX_BANDS = 8


class DrawnExperiment(Protocol):
    """What the figure reads of an experiment (``analysis.sweep.Experiment``, which draws itself with this
    module: naming the class here would tie the two modules in a circle)."""

    @property
    def name(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def higher_is_better(self) -> bool: ...
    @property
    def importance(self) -> Sequence[Any]: ...
    @property
    def heatmap(self) -> Any: ...
    @property
    def groups(self) -> Sequence[Any]: ...


def plot_experiment(experiment: DrawnExperiment) -> Figure:
    """Three panels: importance (forest and permutation), the heat map, the best configurations' bands."""
    import matplotlib.pyplot as plt

    fig, (ax_imp, ax_heat, ax_band) = plt.subplots(1, 3, figsize=(15, 4.2))
    imp = experiment.importance
    if imp:
        y = np.arange(len(imp))[::-1]
        ax_imp.barh(y + 0.2, [i.forest for i in imp], height=0.4, label="random forest", color="#1f77b4")
        ax_imp.barh(y - 0.2, [max(i.permutation, 0.0) for i in imp], height=0.4, label="permutation",
                    color="#ff7f0e")
        ax_imp.set_yticks(y, [label(i.key, 30) for i in imp])
        ax_imp.legend(loc="lower right", fontsize="small")
    ax_imp.set_title("what drives " + label(experiment.metric, 40))

    heat = experiment.heatmap
    if heat is not None:
        values = np.asarray(heat.values, dtype=np.float64)
        cmap = "viridis" if experiment.higher_is_better else "viridis_r"
        image = ax_heat.imshow(values, cmap=cmap, aspect="auto", origin="lower")
        ax_heat.set_xticks(range(len(heat.x_levels)), [label(v, 12) for v in heat.x_levels], rotation=45,
                           fontsize="small")
        ax_heat.set_yticks(range(len(heat.y_levels)), [label(v, 12) for v in heat.y_levels], fontsize="small")
        ax_heat.set_xlabel(label(heat.x_key, 30))
        ax_heat.set_ylabel(label(heat.y_key, 30))
        for (yi, xi), value in np.ndenumerate(values):
            if np.isfinite(value):
                ax_heat.text(xi, yi, f"{value:.3g}", ha="center", va="center", fontsize="x-small", color="white")
        fig.colorbar(image, ax=ax_heat, shrink=0.8)
        ax_heat.set_title(f"{experiment.target} {label(experiment.metric, 30)} (mean)")
    else:
        ax_heat.set_axis_off()
        ax_heat.set_title("one setting varies: no heat map")

    for i, group in enumerate(experiment.groups[:MAX_BANDS]):
        band = group.band
        if band is None or not len(band.steps):
            continue
        color = f"C{i % 10}"
        ax_band.plot(band.steps, band.median, color=color, linewidth=1.3,
                     label=label(f"{group.label} ({len(group.runs)})", 40))
        if len(group.runs) > 1:
            ax_band.fill_between(band.steps, band.low, band.high, color=color, alpha=0.2, linewidth=0)
    finite = [g.band.median[np.isfinite(g.band.median)] for g in experiment.groups[:MAX_BANDS] if g.band is not None]
    if finite and all(len(f) and (f > 0).all() for f in finite):
        ax_band.set_yscale("log")
    ax_band.set_xlabel("step")
    ax_band.set_title(f"{label(experiment.metric, 30)}: median and range over seeds")
    if experiment.groups:
        ax_band.legend(loc="best", fontsize="x-small")
    fig.suptitle(label(experiment.name, 80))
    fig.tight_layout()
    return fig
