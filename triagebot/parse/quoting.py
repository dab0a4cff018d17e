"""Parse stage: separate the writer's own text from `>`-quoted text and attribution lines."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SplitText:
    own: str  # the writer's own lines, in order
    quoted: str  # every quoted line with its markers removed
    max_depth: int  # deepest quote nesting seen
    attributions: tuple[str, ...]


# A quoted line: its markers (the nesting depth counts them), then the text they quote.
_QUOTED_LINE_PARTS = re.compile(r"^[ \t]{0,3}((?:>[ \t]?)+)(.*)$", re.MULTILINE)


def split_quotes(text: str) -> SplitText:
    """Split a body into own and quoted text; attribution lines belong to neither."""
    if ">" not in text and "Original Message" not in text:
        return SplitText(text, "", 0, ())  # nothing quoted: the common case for new threads
    original = _original_message(text)
    tail = ""
    if original:
        text, tail = text[:original.start()], text[original.end():]
    attributions, without_attributions = _remove_attributions(text)
    # One pass: [own, prefix, rest, own, prefix, rest, …, own] (four passes over the text before).
    pieces = _QUOTED_LINE_PARTS.split(without_attributions)
    prefixes = pieces[1::3]
    max_depth = max((prefix.count(">") for prefix in set(prefixes)), default=0)
    quoted = "\n".join(pieces[2::3])
    # each quoted line and the line break after it leave the writer's own text
    own = "\x00".join(pieces[0::3]).replace("\x00\n", "").replace("\x00", "")
    if tail:
        quoted = f"{quoted}\n{tail}" if quoted else tail
    return SplitText(own, quoted, max_depth, attributions)


# Lines ending in a colon are found first (a literal search, fast over long quoted patches);
# only those are checked for the attribution verb.
_LINE_ENDING_IN_COLON = re.compile(r":[ \t]*$", re.MULTILINE)
_ATTRIBUTION_VERB = re.compile(r"\b(?:wrote|writes|said)(?: on [^\n]{0,60})?[ \t]*$", re.IGNORECASE)


def _remove_attributions(text: str) -> tuple[tuple[str, ...], str]:
    """Attribution lines ("On …, X wrote:", possibly wrapped over two lines) before a quote."""
    found: list[str] = []
    cuts: list[tuple[int, int]] = []
    for colon in _LINE_ENDING_IN_COLON.finditer(text):
        line_start = text.rfind("\n", 0, colon.start()) + 1
        if not _ATTRIBUTION_VERB.search(text, line_start, colon.start()):
            continue
        line_end = colon.end()
        following = text[line_end:line_end + 400].lstrip(" \t\n")
        if not following.startswith(">"):
            continue
        start = line_start
        line = text[line_start:line_end]
        if not re.match(r"^\s*On\b", line):
            previous_start = text.rfind("\n", 0, max(0, line_start - 1)) + 1
            previous = text[previous_start:max(0, line_start - 1)]
            if re.match(r"^\s*On\b", previous) and ">" not in previous[:4]:
                start = previous_start  # wrapped: "On Tue, …" / "… wrote:"
            elif len(line) > 160:
                continue
        found.append(" ".join(text[start:line_end].split()))
        cuts.append((start, min(len(text), line_end + 1)))
    if not cuts:
        return (), text
    pieces = []
    position = 0
    for start, end in cuts:
        if start < position:
            continue
        pieces.append(text[position:start])
        position = end
    pieces.append(text[position:])
    return tuple(found), "".join(pieces)


_ORIGINAL_MESSAGE_ANYWHERE = re.compile(r"^-{2,}\s*Original Message\s*-{2,}[ \t]*$",
                                        re.MULTILINE | re.IGNORECASE)



def _original_message(text: str) -> re.Match[str] | None:
    """The first "-----Original Message-----" line. Only a line that starts with "--" can be one:
    those are found by literal search and the pattern tried there alone (a search from every
    line start of every body cost a fifth of the quote split)."""
    position = 0
    while True:
        if text.startswith("--", position):
            match = _ORIGINAL_MESSAGE_ANYWHERE.match(text, position)
            if match:
                return match
        position = text.find("\n--", position) + 1
        if position == 0:
            return None
