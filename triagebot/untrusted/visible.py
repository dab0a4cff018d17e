"""Shared by every stage: untrusted text made safe to show on one terminal line.

Mail is written by anyone: a right-to-left override (U+202E) reverses what follows it on a
terminal, a zero-width space (U+200B) hides inside a word, control characters move the cursor.
`visible` writes each such character as an escape (`\\u202e`), so what is shown is what was sent.
"""
from __future__ import annotations

import functools
import re
import unicodedata

# Categories never shown as themselves: controls (Cc), format characters (Cf: bidi controls,
# zero-width spaces and joiners, soft hyphen), surrogates (Cs), private use (Co), unassigned
# (Cn), line and paragraph separators (Zl, Zp).
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_CANDIDATE = re.compile(r"[^\x20-\x7e]")  # printable ASCII is always shown as itself (and tabs)


def is_hidden(character: str) -> bool:
    """True for a character `visible` escapes."""
    return unicodedata.category(character) in HIDDEN_CATEGORIES


def _escaped(match: re.Match[str]) -> str:
    character = match.group(0)
    if character == "\t" or not is_hidden(character):  # a tab moves nothing a reader misses
        return character
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with every hidden character (see HIDDEN_CATEGORIES) but the tab written as an escape."""
    if text.isascii() and text.isprintable():
        return text
    return _CANDIDATE.sub(_escaped, text)


def has_hidden(text: str) -> bool:
    """True when `text` holds a character `visible` escapes."""
    return not (text.isascii() and text.isprintable()) and any(is_hidden(c) for c in _CANDIDATE.findall(text))


# Format characters outside the BMP (Unicode 15): Kaithi number signs, Egyptian hieroglyph
# format controls, shorthand format controls, musical symbol format controls, tag characters.
_ASTRAL_FORMAT = ("\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                  "\U000e0001\U000e0020-\U000e007f")


@functools.cache
def _format_characters() -> re.Pattern[str]:
    """Every format character (category Cf: zero-width spaces and joiners, bidi controls, soft
    hyphen, byte-order mark), built once per process from the BMP's ~170 and the astral ones."""
    bmp = "".join(re.escape(chr(code)) for code in range(0x80, 0x10000) if unicodedata.category(chr(code)) == "Cf")
    return re.compile(f"[{bmp}{_ASTRAL_FORMAT}]")


def without_format_characters(text: str) -> tuple[str, int]:
    """`text` without its format characters (as a terminal shows it: a SHA split by a zero-width
    space reads whole), and how many were removed."""
    if text.isascii():
        return text, 0
    return _format_characters().subn("", text)
