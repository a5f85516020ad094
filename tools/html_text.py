"""HTML to readable text in linear time (``browse_url``'s converter).

A streaming tokenizer (``html.parser.HTMLParser``) collects text; no tree is
built, so neither a large flat page nor 200,000 nested elements costs more than
one pass. The input is capped at ``MAX_HTML_CHARS`` before parsing.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser

__all__ = ["MAX_HTML_CHARS", "decode_html", "html_to_text", "known_codec"]

MAX_HTML_CHARS = 2 * 1024 * 1024  # bytes (or characters) of HTML converted; the rest is ignored

DROP_TAGS = frozenset({"title", "script", "style", "noscript", "nav", "footer", "svg", "template", "iframe", "head"})
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "dd", "div", "dl", "dt", "figcaption", "figure",
    "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "ol", "p", "pre",
    "section", "table", "tr", "ul",
})  # fmt: skip
_SPACES = re.compile(r"[ \t\f\v\r\u00a0]+")
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def known_codec(name: str | None) -> str | None:
    """``name`` if Python knows that encoding, else None (a bogus charset must not crash decoding)."""
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_html(data: bytes, encoding: str | None = None) -> str:
    """Text of an HTML byte string: the given charset, else a BOM, else a ``<meta charset>``
    near the start, else UTF-8 (Windows-1252 when that fails). Never raises."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return data.decode(name, errors="replace")
    meta = _META_CHARSET.search(data[:4096])
    for codec in (known_codec(encoding), known_codec(meta.group(1).decode("ascii")) if meta else None):
        if codec:
            return data.decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] | None = None  # text of the first <title>, while open or once closed
        self.title_open = False
        self.skip: list[str] = []  # open dropped elements, innermost last
        self.skip_count: dict[str, int] = {}

    def _push_skip(self, tag: str) -> None:
        self.skip.append(tag)
        self.skip_count[tag] = self.skip_count.get(tag, 0) + 1

    def _close_skip(self, tag: str) -> None:
        """Close the innermost open dropped ``tag`` and everything opened inside it."""
        if not self.skip_count.get(tag):
            return
        while self.skip:
            top = self.skip.pop()
            self.skip_count[top] -= 1
            if top == tag:
                return

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title" and self.title is None:
            self.title, self.title_open = [], True
        if tag == "body":
            self._close_skip("head")  # a page that never closes <head>
        if tag in DROP_TAGS:
            self._push_skip(tag)
        elif not self.skip:
            if tag == "br":
                self.parts.append("\n")
            elif tag in BLOCK_TAGS:
                self.parts.append("\n- " if tag == "li" else "\n")

    def handle_startendtag(self, tag: str, attrs: list) -> None:  # <br/>, <div/>
        if tag in DROP_TAGS or self.skip:
            return
        if tag == "br":
            self.parts.append("\n")
        elif tag in BLOCK_TAGS:
            self.parts.append("\n- \n" if tag == "li" else "\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.title_open = False
        if tag in DROP_TAGS:
            self._close_skip(tag)
        elif not self.skip and tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.title_open and self.title is not None:
            self.title.append(data)
        if not self.skip:
            self.parts.append(data)


def html_to_text(html: str | bytes, *, encoding: str | None = None) -> tuple[str, str]:
    """Readable text of an HTML page: ``(title, text)``.

    Scripts, styles, navigation, footers, SVG... are dropped; block elements become
    line breaks, list items get a "- " prefix, whitespace is collapsed. Only the
    first ``MAX_HTML_CHARS`` of the page are read.
    """
    capped = len(html) > MAX_HTML_CHARS
    text = decode_html(html[:MAX_HTML_CHARS], encoding) if isinstance(html, bytes) else html[:MAX_HTML_CHARS]
    if capped and text.rfind("<") > text.rfind(">"):
        text = text[: text.rfind("<")]  # not a tag cut in half, shown as text
    parser = _TextCollector()
    parser.feed(text)
    parser.close()
    title = " ".join("".join(parser.title or []).split())
    lines = (_SPACES.sub(" ", line).strip() for line in "".join(parser.parts).splitlines())
    return title, "\n".join(line for line in lines if line)
