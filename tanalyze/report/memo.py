"""The report's compare charts kept in the cache by a digest of what they are made from.

A warm report (no run changed) would otherwise draw its compare charts again
(thousands of curves: seconds of drawing). Each is stored under a digest of
every number, name and option it is made from, and of the code that makes it,
so a changed run gives a new digest and a fresh chart: memoised, never stale.
Without a cache they are simply drawn. (The sweep's importances are kept the
same way, by :func:`tanalyze.report.sweep.importance_of`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from tanalyze import curves as _curves
from tanalyze.cache import Cache
from tanalyze.cache.memo import Digest, load_memo, save_memo, source_digest
from tanalyze.report import chartdata as _chartdata
from tanalyze.report import downsample as _downsample
from tanalyze.report import figures as _figures
from tanalyze.report import svgaxes as _svgaxes
from tanalyze.report import svgsafe as _svgsafe
from tanalyze.report.chartdata import blowup_step
from tanalyze.report.figures import FigureMaker, Rendered
from tanalyze.report.model import RunView

__all__ = ["compare_figure"]


def _code(*modules: Any) -> str:
    """The source of the modules that draw a figure, and matplotlib's version."""
    import matplotlib

    return source_digest(*modules, versions=(matplotlib.__version__,))


def compare_figure(maker: FigureMaker, role: str, tag: str, runs: Sequence[RunView], *, max_lines: int, key: int,
                   cache: Cache | None) -> Rendered:
    """:meth:`FigureMaker.compare` of these runs, from the cache when drawn before from the same curves."""
    if cache is None:
        return maker.compare(role, tag, runs, max_lines=max_lines, key=key)
    code = _code(_figures, _chartdata, _downsample, _svgaxes, _svgsafe, _curves)
    digest = Digest().add(code, role, tag, max_lines, key, maker.smoothing, maker.columns)
    for run in runs:
        series = run.series[role]
        digest.add(run.index, run.name, blowup_step(run.diagnosis), series.steps, series.values)
    found = load_memo(cache, "compare", digest.hexdigest())
    if isinstance(found, dict):
        try:
            return Rendered(**{**found, "keys": tuple(tuple(k) for k in found.get("keys", ()))})
        except TypeError:  # another shape: drawn again below
            pass
    rendered = maker.compare(role, tag, runs, max_lines=max_lines, key=key)
    save_memo(cache, "compare", digest.hexdigest(), asdict(rendered))
    return rendered
