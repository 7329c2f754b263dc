"""The one hook between data and presentation: how results display themselves in Jupyter.

Data and analysis types (``Logs``, ``RunDiagnosis``, ``Diagnoses``, ``CheckReport``) never import
the report. Their ``_repr_html_`` asks :func:`html`, which hands the object to the renderer that
:mod:`tanalyze.report.display` registered for its type. That module is imported here by name, on
the first display only, so that ``import tanalyze`` stays cheap and the import graph keeps one
direction (presentation depends on the data, never the reverse).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

__all__ = ["register", "html"]

_RENDERERS: dict[str, Callable[[Any], str]] = {}
_PRESENTATION = "tanalyze.report.display"


def register(type_name: str, renderer: Callable[[Any], str]) -> None:
    """Use ``renderer`` for objects whose class is called ``type_name``."""
    _RENDERERS[type_name] = renderer


def html(obj: Any) -> str:
    """The HTML a notebook shows for ``obj``, through the same renderer as the report file."""
    if not _RENDERERS:
        import_module(_PRESENTATION)
    return _RENDERERS[type(obj).__name__](obj)
