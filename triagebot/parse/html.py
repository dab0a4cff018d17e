"""Parse stage: HTML to plain text for HTML-only mail and archive pages."""
from __future__ import annotations

import warnings

from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning


def soup_of(markup: str) -> BeautifulSoup:
    """The page parsed as HTML by lxml, whatever it declares.

    An XHTML page opens with `<?xml …?>`, and BeautifulSoup then prints a many-line
    XMLParsedAsHTMLWarning to stderr; reading it as HTML is what we want, so it is silenced
    here, for this parse only.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        return BeautifulSoup(markup, "lxml")


def html_to_text(markup: str) -> str:
    """Visible text of an HTML document, line structure kept."""
    soup = soup_of(markup)
    for hidden in soup(["script", "style", "head"]):
        hidden.decompose()
    return soup.get_text("\n")
