"""The SVG matplotlib writes, made fit for a page: compacted, and checked for anything active.

matplotlib escapes the text it draws; this module strips what a page does not need (prolog,
metadata, fonts, unused ids, bare groups, excess decimals) and refuses an SVG with an element,
handler or external reference that could run or fetch something. Figures are built in
``figures.py``; nothing here draws.
"""

from __future__ import annotations

import html
import re

__all__ = ["UnsafeSVGError", "clean_svg"]


class UnsafeSVGError(RuntimeError):
    """The SVG matplotlib wrote contains something active (a bug: it must never reach a page)."""



_TAG = re.compile(r"<([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+\s*=\s*\"[^\"]*\")*)\s*/?>")
_ATTR = re.compile(r"([\w:.-]+)\s*=\s*\"([^\"]*)\"")
_FORBIDDEN_TAGS = {"script", "foreignobject", "iframe", "object", "embed", "a", "image", "feimage", "animate", "set"}


def _active_content(svg: str) -> str | None:
    """What in ``svg`` could run or fetch something (element, handler, external reference), or None."""
    for match in _TAG.finditer(svg):
        name = match.group(1).lower()
        if name in _FORBIDDEN_TAGS:
            return f"<{name}> element"
        for attr, value in _ATTR.findall(match.group(2)):
            attr = attr.lower()
            if attr.startswith("on"):
                return f"{attr} attribute"
            if attr in ("href", "xlink:href") and not value.startswith("#"):
                return f"{attr}={value[:40]!r}"
    if re.search(r"<(?![A-Za-z/!?])|<\s", svg) or svg.count("<") != len(_TAG.findall(svg)) + svg.count("</"):
        return "markup the checker cannot read"
    return None
_ID_ATTR = re.compile(r'\sid="([^"]*)"')
_REFS = re.compile(r'(?:href="#|url\(#)([^")]+)')


_PATH_D = re.compile(r'\sd="([^"]*)"')
_DECIMALS = re.compile(r"(?<=\.\d)\d+")


def _compact_path(match: re.Match[str]) -> str:
    """Path data at 0.1 pt precision; a pure move/line path loses its repeated ``L`` (implicit after ``M``)."""
    d = _DECIMALS.sub("", match.group(1))
    if d.lstrip().startswith("M") and not re.search(r"[A-KN-Za-z]", d):
        d = d.replace("L", " ")
    return ' d="' + " ".join(d.split()) + '"'


_GROUP_TAG = re.compile(r"<g\b[^>]*>|</g>")


def _unwrap_bare_groups(svg: str) -> str:
    """Drop ``<g>`` wrappers that carry no attribute (most of them, once unused ids are gone)."""
    out: list[str] = []
    stack: list[bool] = []
    last = 0
    for match in _GROUP_TAG.finditer(svg):
        tag = match.group(0)
        out.append(svg[last:match.start()])
        last = match.end()
        if tag == "</g>":
            if not stack.pop():
                out.append(tag)
        else:
            bare = tag == "<g>"
            stack.append(bare)
            if not bare:
                out.append(tag)
    out.append(svg[last:])
    return re.sub(r"\n+", "\n", "".join(out))


def clean_svg(svg: str, alt: str) -> str:
    """Strip what a page does not need (prolog, metadata, fixed size, fonts, unused ids); refuse active content."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r"<style[^>]*>.*?</style>\s*", "", svg, flags=re.S)
    svg = re.sub(r"font-family:[^;\"]*;?\s?", "", svg)
    svg = _PATH_D.sub(_compact_path, svg)
    referenced = set(_REFS.findall(svg))
    svg = _ID_ATTR.sub(lambda m: m.group(0) if m.group(1) in referenced else "", svg)
    svg = re.sub(r'\n\s*', "\n", svg)
    svg = re.sub(r' transform="rotate\(-?0 [^"]*\)"', "", svg)
    svg = re.sub(r'( (?:x|y)="-?\d+\.\d)\d*"', r'\1"', svg)
    svg = _unwrap_bare_groups(svg)
    head_end = svg.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", svg[:head_end])
    head += f' class="chart" role="img" aria-label="{html.escape(alt, quote=True)}"'
    svg = head + svg[head_end:]
    problem = _active_content(svg)
    if problem is not None:
        raise UnsafeSVGError(f"refusing to embed an SVG with {problem}")
    return svg
