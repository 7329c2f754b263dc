"""Reading a rendered report back with the standard library's HTML parser, for structural assertions."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    content: list[Element | str] = field(default_factory=list)

    @property
    def children(self) -> list[Element]:
        return [c for c in self.content if isinstance(c, Element)]

    def text_content(self) -> str:
        return "".join(c if isinstance(c, str) else c.text_content() for c in self.content)

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str, **attrs: str) -> list[Element]:
        return [e for e in self.iter() if e.tag == tag and all(e.attrs.get(k) == v for k, v in attrs.items())]

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]
        self.scripts: list[tuple[dict[str, str | None], str]] = []

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs))
        self.stack[-1].content.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].content.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].content.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


def raw_scripts(html: str) -> list[tuple[str, str]]:
    """(opening tag, exact content) of every script element, from the raw bytes (what a CSP hash covers)."""
    return re.findall(r"(<script\b[^>]*>)(.*?)</script>", html, flags=re.S | re.I)


def json_scripts(html: str) -> dict[str, str]:
    """Element id → exact content of every non-executable JSON data element (``type="application/json"``)."""
    return {m.group(1): m.group(2) for m in re.finditer(
        r'<script type="application/json" id="([^"]*)">(.*?)</script>', html, flags=re.S)}


def script_kinds(html: str) -> list[str]:
    """Each script element as the page writes it: ``json:<id>`` for a data element, ``code`` for the one
    executable script."""
    out = []
    for tag, _ in raw_scripts(html):
        found = re.fullmatch(r'<script type="application/json" id="([^"]*)">', tag)
        out.append("json:" + found.group(1) if found else ("code" if tag == "<script>" else tag))
    return out


#: The script elements of a report page: the report JSON, every run's chart data (one element), the one script.
PAGE_SCRIPTS = ["json:tanalyze-data", "json:tz-charts", "code"]


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
