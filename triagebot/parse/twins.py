"""Parse stage: whether two copies of one message say the same thing (an archive page and its mail).

The fallback key (identity.py: date to the minute, subject, sender name) only finds a candidate:
anyone can write a mail with those three. A copy is taken for the same message only when its
text agrees as well: the bodies are compared after setting aside what an archive changes,
namely addresses (openwall obfuscates them: `josef@...icpanda.com`), the `View attachment`
lines a page shows in place of the parts, entities and whitespace. Pure: bytes in, a bool out.
"""
from __future__ import annotations

import re

from triagebot.parse.message import decode_message
from triagebot.parse.webpage import looks_like_html, parse_page

# an address, plain or obfuscated as openwall writes it: the local part is kept
_ADDRESS = re.compile(r"([\w.+=-]+)@(?:\.\.\.)?[\w-]+(?:\.[\w-]+)*")
_ATTACHMENT_LINE = re.compile(r'^[ \t]*View attachment "[^"\n]*" of type "[^"\n]*" \(\d+ bytes\)[ \t]*$',
                              re.MULTILINE)


def body_text(raw: bytes) -> str | None:
    """The body of a mail or an archive page as text; None when it cannot be read."""
    try:
        if looks_like_html(raw[:4096].decode("utf-8", "replace")):
            return parse_page(raw.decode("utf-8", "replace")).body
        return decode_message(raw).body
    except Exception:  # noqa: BLE001 - unreadable: it agrees with nothing
        return None


def comparable(text: str) -> str:
    """A body with what archives change set aside: attachment lines, address domains, spacing."""
    text = _ATTACHMENT_LINE.sub("", text)
    text = _ADDRESS.sub(r"\1@", text)
    return " ".join(text.split())


def same_text(raw: bytes, other: bytes) -> bool:
    """Whether two messages' bodies agree (a page and the mail it shows, say); False for an
    empty or unreadable body, which proves nothing."""
    left, right = body_text(raw), body_text(other)
    if left is None or right is None:
        return False
    left, right = comparable(left), comparable(right)
    return bool(left) and left == right
