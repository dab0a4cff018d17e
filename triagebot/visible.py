"""Shared by every stage: untrusted text made safe to show on one terminal line.

Mail is written by anyone: a right-to-left override (U+202E) reverses what follows it on a
terminal, a zero-width space (U+200B) hides inside a word, control characters move the cursor.
`visible` writes each such character as an escape (`\\u202e`), so what is shown is what was sent.
"""
from __future__ import annotations

import re
import unicodedata

# Categories never shown as themselves: controls (Cc), format characters (Cf: bidi controls,
# zero-width spaces and joiners, soft hyphen), surrogates (Cs), private use (Co), unassigned
# (Cn), line and paragraph separators (Zl, Zp).
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_CANDIDATE = re.compile(r"[^\x20-\x7e]")  # printable ASCII is always shown as itself


def is_hidden(character: str) -> bool:
    """True for a character `visible` escapes."""
    return unicodedata.category(character) in HIDDEN_CATEGORIES


def _escaped(match: re.Match[str]) -> str:
    character = match.group(0)
    if not is_hidden(character):
        return character
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with every hidden character (see HIDDEN_CATEGORIES) written as an escape."""
    if text.isascii() and text.isprintable():
        return text
    return _CANDIDATE.sub(_escaped, text)


def has_hidden(text: str) -> bool:
    """True when `text` holds a character `visible` escapes."""
    return not (text.isascii() and text.isprintable()) and any(is_hidden(c) for c in _CANDIDATE.findall(text))
