"""Shared by every stage: text from mail made safe for Slack's mrkdwn, and links only from URLs
that are plainly URLs.

Slack reads `<…>` in a message's text and blocks as a link, a mention (`<@U…>`, `<#C…>`) or a
broadcast (`<!channel>`, `<!here>`), and `&` starts an entity. `escape` writes the three as Slack
asks (`&amp;`, `&lt;`, `&gt;`), so nothing a sender wrote can become any of them. A link
`<URL|label>` is written only for a URL `safe_url` accepts: http or https, a host name of
letters, digits, dots and hyphens (a port allowed), then only the characters a URL is made of,
never `|`, `<`, `>`, quotes, backslashes or whitespace. Anything else is shown as escaped text.
"""
from __future__ import annotations

import re

MAX_URL_CHARS = 2000
_URL = re.compile(r"(?P<scheme>https?)://(?P<host>[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?"
                  r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*)(?::[0-9]{1,5})?"
                  r"(?P<rest>[/?#][A-Za-z0-9\-._~!$&'()*+,;=:@/%?#]*)?")


def escape(text: str) -> str:
    """Slack's three control characters, as its mrkdwn wants them escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe_url(url: str | None) -> str | None:
    """`url` ready to stand inside `<…|…>` (its `&` written `&amp;`), or None when it is not a
    plain http(s) URL (see the module text)."""
    if not url or len(url) > MAX_URL_CHARS or not _URL.fullmatch(url):
        return None
    return escape(url)


def link(url: str | None, label: str) -> str:
    """`<url|label>` for a URL `safe_url` accepts, else the label as escaped text (the URL is
    then not shown as a link at all)."""
    checked = safe_url(url)
    if checked is None:
        return escape(label)
    return f"<{checked}|{escape(label).replace('|', '¦')}>"
