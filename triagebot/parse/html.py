"""Parse stage: HTML to plain text for HTML-only mail and archive pages."""
from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

from triagebot.parse.limits import MAX_HTML_TAGS

_TAG = re.compile(r"<[^<>]*+>")


def soup_of(markup: str) -> BeautifulSoup:
    """The page parsed as HTML by lxml, whatever it declares.

    An XHTML page opens with `<?xml …?>`, and BeautifulSoup then prints a many-line
    XMLParsedAsHTMLWarning to stderr; reading it as HTML is what we want, so it is silenced
    here, for this parse only.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        return BeautifulSoup(markup, "lxml")


def too_many_tags(markup: str) -> str | None:
    """Why `markup` is not given to the HTML parser (over MAX_HTML_TAGS tags), else None."""
    tags = markup.count("<")
    return f"HTML of {tags:,} tags, over {MAX_HTML_TAGS:,}" if tags > MAX_HTML_TAGS else None


def html_to_text(markup: str) -> tuple[str, str | None]:
    """Visible text of an HTML document, line structure kept, and the defect when it was over
    MAX_HTML_TAGS tags and its tags were stripped without parsing."""
    over = too_many_tags(markup)
    if over:
        return _TAG.sub(" ", markup), f"{over}: tags stripped without parsing"
    soup = soup_of(markup)
    for hidden in soup(["script", "style", "head"]):
        hidden.decompose()
    return soup.get_text("\n"), None
