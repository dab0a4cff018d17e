"""Parse stage: separate the writer's own text from `>`-quoted text and attribution lines."""
from __future__ import annotations

import re
from dataclasses import dataclass

_QUOTE = re.compile(r"^[ \t]{0,3}((?:>[ \t]?)+)")
# "On Tue, May 9, 2023 at 10:13:19AM +0800, kernel test robot wrote:" and its wrapped form.
_ATTRIBUTION = re.compile(
    r"^(On\b.{0,200}\b(wrote|writes|said)|.{0,120}\b(wrote|writes)( on .{0,60})?)\s*:\s*$",
    re.IGNORECASE,
)
_ATTRIBUTION_START = re.compile(r"^On\b.{0,200}$")
_ORIGINAL_MESSAGE = re.compile(r"^-{2,}\s*Original Message\s*-{2,}\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class SplitText:
    own: str  # the writer's own lines, in order
    quoted: str  # every quoted line with its markers removed
    max_depth: int  # deepest quote nesting seen
    attributions: tuple[str, ...]


def quote_depth(line: str) -> int:
    if line[:4].lstrip()[:1] != ">":
        return 0
    match = _QUOTE.match(line)
    if not match:
        return 0
    return match.group(1).count(">")


def strip_quote(line: str) -> str:
    match = _QUOTE.match(line)
    return line[match.end():] if match else line


def split_quotes(text: str) -> SplitText:
    """Split a body into own and quoted text; attribution lines belong to neither."""
    if ">" not in text and "Original Message" not in text:
        return SplitText(text, "", 0, ())  # nothing quoted: the common case for new threads
    lines = text.split("\n")
    own: list[str] = []
    quoted: list[str] = []
    attributions: list[str] = []
    max_depth = 0
    index = 0
    in_original = False
    while index < len(lines):
        line = lines[index]
        depth = quote_depth(line)
        if depth:
            max_depth = max(max_depth, depth)
            quoted.append(strip_quote(line))
            index += 1
            continue
        if in_original:
            quoted.append(line)
            index += 1
            continue
        if _ORIGINAL_MESSAGE.match(line.strip()):
            in_original = True
            index += 1
            continue
        stripped = line.strip()
        if not stripped or ("wrote" not in line and "writes" not in line and not stripped.startswith("On ")):
            own.append(line)  # only such lines can be attributions
            index += 1
            continue
        next_line = lines[index + 1] if index + 1 < len(lines) else ""
        if stripped and _ATTRIBUTION.match(stripped) and _next_is_quote(lines, index + 1):
            attributions.append(stripped)
            index += 1
            continue
        # An attribution wrapped over two lines, then the quote.
        joined = f"{stripped} {next_line.strip()}"
        if (_ATTRIBUTION_START.match(stripped) and _ATTRIBUTION.match(joined)
                and _next_is_quote(lines, index + 2)):
            attributions.append(joined)
            index += 2
            continue
        own.append(line)
        index += 1
    return SplitText("\n".join(own), "\n".join(quoted), max_depth, tuple(attributions))


def _next_is_quote(lines: list[str], start: int) -> bool:
    for line in lines[start:start + 3]:
        if line.strip() == "":
            continue
        return quote_depth(line) > 0
    return False
