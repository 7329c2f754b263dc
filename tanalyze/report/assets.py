"""The page's script and style: the report's own, plus the vendored uPlot (``vendor/uplot``, see VENDORED.md).

Everything is inlined: the page is one file that loads nothing. The one script is
the concatenation below, allowed by its SHA-256 in the Content-Security-Policy.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SCRIPT", "STYLE", "PAGE_STYLE", "UPLOT_VERSION", "UPLOT_DIR"]

TEMPLATES = Path(__file__).parent / "templates"
UPLOT_DIR = Path(__file__).parent / "vendor" / "uplot"
#: The vendored uPlot release (pinned; a test checks the file's own header).
UPLOT_VERSION = "1.6.32"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


UPLOT_JS = _read(UPLOT_DIR / "uPlot.iife.min.js")
UPLOT_CSS = _read(UPLOT_DIR / "uPlot.min.css")
#: Sorting and filtering of the summary (report.js), the image step sliders (images.js), then the interactive
#: charts (uPlot + charts.js).
SCRIPT = "\n".join((
    _read(TEMPLATES / "report.js"),
    _read(TEMPLATES / "images.js"),
    f"/* uPlot {UPLOT_VERSION}, (c) Leon Sorokin, MIT licence */",
    UPLOT_JS,
    _read(TEMPLATES / "charts.js"),
))
#: The report's style (also used by the Jupyter fragments, which have no script).
STYLE = _read(TEMPLATES / "report.css")
#: A whole page's style: the report's and uPlot's.
PAGE_STYLE = STYLE + "\n" + UPLOT_CSS
