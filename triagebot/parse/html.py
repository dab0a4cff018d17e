"""Parse stage: HTML to plain text for HTML-only mail and archive pages."""
from __future__ import annotations

from bs4 import BeautifulSoup


def html_to_text(markup: str) -> str:
    """Visible text of an HTML document, line structure kept."""
    soup = BeautifulSoup(markup, "lxml")
    for hidden in soup(["script", "style", "head"]):
        hidden.decompose()
    return soup.get_text("\n")
