"""A run as the report shows it, kept in the results cache beside its diagnosis.

A warm report over unchanged runs should not read their scalars again: what the
report needs of a run beyond its diagnosis is its :class:`RunView` (what was known
when reading it, its summary row, its tags and point count, the full curves of the
tags that have a role) and, where drawn, its static figures. They are stored in the
run's results entry (same key, same stamp: a run that grew is read again) as JSON
plus numeric arrays — never pickle — and turned back into a view here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import numpy as np

from tanalyze.identity import RunPart
from tanalyze.logs import RunInfo
from tanalyze.readers.base import Phase, ReadWarning, Restart
from tanalyze.readers.tensorboard.images import Image, ImageSeries, RunImages, image_kind
from tanalyze.report.figures import Rendered
from tanalyze.report.model import RunView, Series, _diagnosis_dict

__all__ = ["dump_views", "load_views"]

#: Bumped when what is stored here changes shape (an older entry then reads as "not cached").
LAYOUT = 3  # 2: the run's images; 3: its chart data as text, its JSON text with a digest


def _images_dict(images: RunImages | None, n: int, arrays: dict[str, np.ndarray]) -> dict[str, Any] | None:
    """The images' JSON part; their bytes go into ``arrays`` (uint8) under ``n:image:<series>:<image>``."""
    if images is None:
        return None
    series = []
    for k, s in enumerate(images.series):
        kept = []
        for j, image in enumerate(s.images):
            arrays[f"{n}:image:{k}:{j}"] = np.frombuffer(image.data, dtype=np.uint8)
            wall = image.wall_time if np.isfinite(image.wall_time) else None
            kept.append({"step": image.step, "wall_time": wall})
        series.append({"tag": s.tag, "logged": s.logged, "samples": s.samples, "images": kept})
    return {"series": series, "notes": list(images.notes)}


def _images_of(d: Mapping[str, Any] | None, n: int, arrays: Mapping[str, np.ndarray]) -> RunImages | None:
    """The images stored by :func:`_images_dict`, each checked again as when read (a changed entry is no image)."""
    if d is None:
        return None
    series = []
    for k, s in enumerate(d["series"]):
        kept = []
        for j, meta in enumerate(s["images"]):
            data = np.asarray(arrays[f"{n}:image:{k}:{j}"], dtype=np.uint8).tobytes()
            kind = image_kind(data)
            if kind is None:
                raise ValueError("a cached image is not an image")
            kept.append(Image(step=int(meta["step"]), wall_time=float("nan" if meta["wall_time"] is None else meta["wall_time"]), width=kind[1],
                              height=kind[2], kind=kind[0], data=data))
        series.append(ImageSeries(str(s["tag"]), tuple(kept), logged=int(s["logged"]), samples=int(s["samples"])))
    return RunImages(tuple(series), tuple(str(note) for note in d["notes"]))


def _info_dict(info: RunInfo) -> dict[str, Any]:
    return {
        "name": info.name, "format": info.format, "directory": info.directory, "files": list(info.files),
        "hparams": dict(info.hparams), "text": dict(info.text), "notes": list(info.notes),
        "warnings": [asdict(w) for w in info.warnings], "restarts": [asdict(r) for r in info.restarts],
        "sources": [asdict(p) for p in info.sources], "phases": [asdict(p) for p in info.phases],
    }


def _revive(cls: type, value: Mapping[str, Any]) -> Any:
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in value.items()})


def _info_of(d: Mapping[str, Any]) -> RunInfo:
    return RunInfo(**{
        "name": d["name"], "format": d["format"], "directory": d["directory"], "files": tuple(d["files"]),
        "hparams": dict(d["hparams"]), "text": dict(d["text"]), "notes": tuple(d["notes"]),
        "warnings": tuple(_revive(ReadWarning, w) for w in d["warnings"]),
        "restarts": tuple(_revive(Restart, r) for r in d["restarts"]),
        "sources": tuple(_revive(RunPart, p) for p in d["sources"]),
        "phases": tuple(_revive(Phase, p) for p in d["phases"]),
    })


def _figure_dict(figure: Rendered | None) -> dict[str, Any] | None:
    return None if figure is None else asdict(figure)


def _figure_of(d: Mapping[str, Any] | None) -> Rendered | None:
    if d is None:
        return None
    return Rendered(**{**d, "keys": tuple(tuple(k) for k in d.get("keys", ()))})


def _text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("chart data is stored as text")
    return value


def dump_views(views: list[RunView], *, figures_of: Mapping[str, Any] | None = None
               ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON part and the arrays that :func:`load_views` makes ``views`` from again.
    ``figures_of``: what the static figures were drawn with (index, smoothing); they are reused only with the same."""
    parts, arrays = [], {}
    for n, view in enumerate(views):
        series = {}
        for role, s in view.series.items():
            series[role] = s.tag
            arrays[f"{n}:{role}:steps"] = np.asarray(s.steps, dtype=np.int64)
            arrays[f"{n}:{role}:values"] = np.asarray(s.values, dtype=np.float64)
        parts.append({
            "name": view.name, "format": view.format, "summary": view.summary, "tags": list(view.tags),
            "points": view.points, "series": series, "index": view.index,
            "info": None if view.info is None else _info_dict(view.info),
            "figures": None if view.figures is None else [_figure_dict(f) for f in view.figures],
            "chart": None if view.chart is None else list(view.chart),
            "json": None if view.json is None else list(view.json),
            "images": _images_dict(view.images, n, arrays),
        })
    return {"layout": LAYOUT, "views": parts, "figures_of": dict(figures_of or {})}, arrays


def load_views(extra: Any, arrays: Mapping[str, np.ndarray], diagnoses: list[Any], *,
               figures_of: Mapping[str, Any] | None = None) -> list[RunView] | None:
    """The views stored by :func:`dump_views` with these diagnoses; None when the entry has none
    (or another layout). Figures are kept only when drawn with ``figures_of``."""
    if not isinstance(extra, Mapping) or extra.get("layout") != LAYOUT:
        return None
    parts = extra.get("views")
    if not isinstance(parts, list) or len(parts) != len(diagnoses):
        return None
    same_figures = figures_of is not None and extra.get("figures_of") == dict(figures_of)
    views = []
    try:
        for n, (part, diagnosis) in enumerate(zip(parts, diagnoses, strict=True)):
            series = {role: Series(tag, np.asarray(arrays[f"{n}:{role}:steps"], dtype=np.int64),
                                   np.asarray(arrays[f"{n}:{role}:values"], dtype=np.float64))
                      for role, tag in part["series"].items()}
            figures = part.get("figures")
            info = None if part["info"] is None else _info_of(part["info"])
            diagnosis = _diagnosis_dict(diagnosis, str(part["name"]), plain=True)  # as _run_view shows it
            if diagnosis.get("format") is None and info is not None:
                diagnosis["format"] = info.format
            views.append(RunView(
                index=int(part["index"]), name=str(part["name"]), format=str(part["format"]),
                diagnosis=diagnosis, info=info,
                series=series, summary=dict(part["summary"]), tags=tuple(part["tags"]),
                points=int(part["points"]),
                chart=None if part.get("chart") is None else (int(part["chart"][0]), _text(part["chart"][1])),
                json=None if part.get("json") is None else (str(part["json"][0]), str(part["json"][1])),
                figures=tuple(_figure_of(f) for f in figures) if same_figures and figures is not None else None,
                images=_images_of(part.get("images"), n, arrays),
            ))
    except (KeyError, TypeError, ValueError):
        return None
    return views
