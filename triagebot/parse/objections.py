"""Parse stage: what a reply raises against a report (spaCy), and its trailers (rules).

Objections that change what a triager does next: a debug or unusual kernel config, "not
plausible", doubts about the bisection, code alignment effects, a proposed fix or patch, a
request for more data. Each is kept with the writer's sentence that raised it, at most one per
kind. Trailers (`Fixes:`, `Tested-by:`, …) and regzbot commands are structure, read by rules.
"""
from __future__ import annotations

import re
from typing import Any

from triagebot.parse.language import Gate, Reading, rough_sentences, sentence_labels
from triagebot.records.report import Objection, Trailer

OBJECTION_PATTERN = re.compile(
    r"CONFIG_|kasan|kcsan|lockdep|ubsan|kmemleak|sanitizer|debug (?:kernel|config|option|build|check)|plausib|"
    r"make sense|bogus|credible|realistic|see how|bisect|wrong commit|wrong culprit|align|cache line|false sharing|"
    r"code layout|(?:patch|diff|fix) (?:below|attached|above)|(?:following|untested|attached) (?:patch|diff|fix)|"
    r"this (?:patch|diff|fix) (?:helps|fixes|should)|(?:try|test) (?:this|the|my|a) (?:patch|fix|diff)|"
    r"(?:can|could|would) you|please|more (?:data|details|information|info|numbers|runs)",
    re.IGNORECASE)
# Keywords every OBJECTION_PATTERN match contains; common words ("you", "fix") only in phrases.
OBJECTION_GATE = Gate(("config_", "kasan", "kcsan", "lockdep", "ubsan", "kmemleak", "sanitizer", "debug ", "plausib",
                       "make sense", "bogus", "credible", "realistic", "see how", "bisect", "wrong c", "align",
                       "cache line", "false sharing", "code layout", " below", " attached", "untested", "following ",
                       "this patch", "this fix", "this diff", "can you", "could you", "would you", "please",
                       "more data", "more details", "more info", "more numbers", "more runs"), OBJECTION_PATTERN)

PATTERNS: dict[str, list[list[dict[str, Any]]]] = {
    "debug-config": [
        [{"TEXT": {"REGEX": r"^CONFIG_\w*(?:DEBUG|KASAN|KCSAN|LOCKDEP|PROVE_LOCKING|UBSAN|KMEMLEAK)\w*"}}],
        # a sanitizer named as switched on or to be switched off, not a lockdep splat being reported
        [{"LOWER": {"IN": ["with", "without", "disable", "disabling", "disabled", "enable", "enabling", "off"]}},
         {"LOWER": {"IN": ["the", "all"]}, "OP": "?"},
         {"LOWER": {"IN": ["kasan", "kcsan", "lockdep", "ubsan", "kmemleak", "sanitizers"]}}],
        [{"LOWER": {"IN": ["kasan", "kcsan", "lockdep", "ubsan", "kmemleak"]}},
         {"LOWER": {"IN": ["enabled", "on", "distorts", "explains", "slows"]}}],
        [{"LOWER": "debug"}, {"LOWER": {"REGEX": r"^(?:kernel|config|options?|build|checks?)s?$"}}],
    ],
    "not-plausible": [
        [{"LOWER": {"IN": ["implausible", "unplausible", "bogus"]}}],
        [{"LOWER": {"IN": ["not", "n't"]}}, {"LOWER": {"IN": ["plausible", "credible", "realistic"]}}],
        [{"LOWER": {"IN": ["not", "n't"]}}, {"LOWER": "make"}, {"LOWER": "sense"}],
        [{"LOWER": {"IN": ["ca", "can", "could"]}}, {"LOWER": {"IN": ["n't", "not"]}}, {"LOWER": "see"},
         {"LOWER": "how"}],
    ],
    "bisection-doubt": [
        [{"LOWER": {"REGEX": r"^bisect"}}, {"OP": "?"}, {"LOWER": {"IN": ["wrong", "failure", "failed",
                                                                         "bogus", "unreliable", "mistake"]}}],
        [{"LOWER": "wrong"}, {"LOWER": {"IN": ["commit", "culprit", "bisection"]}}],
        [{"LOWER": {"IN": ["bisection", "bisect"]}}, {"LOWER": {"IN": ["is", "was", "went"]}},
         {"LOWER": {"IN": ["wrong", "off", "astray", "bad"]}}],
    ],
    "alignment": [
        [{"LOWER": {"REGEX": r"^(?:alignment|misalign|unalign|aligned)"}}],
        [{"LOWER": "cache"}, {"LOWER": {"REGEX": r"^lines?$"}}],
        [{"LOWER": "false"}, {"LOWER": "sharing"}],
        [{"LOWER": "code"}, {"LOWER": "layout"}],
    ],
    "proposed-fix": [
        [{"LOWER": {"IN": ["patch", "diff", "fix"]}}, {"LOWER": {"IN": ["below", "attached", "above"]}}],
        [{"LOWER": {"IN": ["following", "untested", "attached"]}}, {"LOWER": {"IN": ["patch", "diff", "fix"]}}],
        [{"LOWER": "this"}, {"LOWER": {"IN": ["patch", "diff", "fix"]}},
         {"LOWER": {"IN": ["helps", "fixes", "should"]}}],
        [{"LOWER": {"IN": ["does", "can", "could"]}}, {"LOWER": {"IN": ["you", "this"]}, "OP": "*"},
         {"LOWER": {"IN": ["try", "test"]}}, {"OP": "?"}, {"LOWER": {"IN": ["patch", "fix", "diff"]}}],
    ],
    "more-data": [
        [{"LOWER": {"IN": ["can", "could", "would"]}}, {"LOWER": "you"}, {"LOWER": {"IN": ["please"]}, "OP": "?"},
         {"LOWER": {"IN": ["share", "send", "provide", "post", "run", "collect", "get", "gather", "capture", "retest",
                           "rerun", "check", "test", "try"]}}],
        [{"LOWER": "please"}, {"LOWER": {"IN": ["share", "send", "provide", "post", "run", "collect", "gather",
                                                 "capture", "retest", "rerun", "attach"]}}],
        [{"LOWER": "more"}, {"LOWER": {"IN": ["data", "details", "information", "info", "numbers", "runs"]}}],
    ],
}

OBJECTION_READING = Reading("objections", PATTERNS)
_LABEL_ORDER = {label: index for index, label in enumerate(PATTERNS)}
_DIFF_IN_OWN_TEXT = re.compile(r"^diff --git |^--- a/\S+\n\+\+\+ b/", re.MULTILINE)
_TRAILER = re.compile(
    r"^[ \t]*+(Fixes|Reported-by|Tested-by|Reviewed-by|Acked-by|Closes|Link|Suggested-by|Cc):[ \t]*+(\S(?:.*\S)?)\s*$",
    re.MULTILINE | re.IGNORECASE)


def after_line_break(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """A `^…` line pattern found from the line break before the line instead, over the text with
    one put before it: a literal first is found by a fast scan, where `^` was tried at every
    character (half the cost). Exact for a pattern ending in whitespace then `$`: a match ends
    before a line break, never taking the next one's."""
    return re.compile("\n" + pattern.pattern.removeprefix("^"), pattern.flags)


_TRAILER_AFTER_BREAK = after_line_break(_TRAILER)
_REGZBOT = re.compile(r"^[ \t]*#regzbot[ \t]+(\^?introduced|fix|dup-of|title|link|monitor|resolve|ignore-activity|"
                      r"invalid|inconclusive)\b:?[ \t]*+(.*\S|)\s*$", re.MULTILINE | re.IGNORECASE)
_TRAILER_NAMES = {name.lower(): name for name in
                  ("Fixes", "Reported-by", "Tested-by", "Reviewed-by", "Acked-by", "Closes", "Link",
                   "Suggested-by", "Cc")}


def objections_without_spacy(own_text: str) -> tuple[Objection, ...]:
    """The objections found by rules alone (a diff in the writer's own text), before spaCy's."""
    if _DIFF_IN_OWN_TEXT.search(own_text):
        return (Objection("proposed-fix", "a diff in the writer's own text"),)
    return ()


def read_objections(own_text: str) -> tuple[Objection, ...]:
    """The objections a writer's own text raises, first sentence of each kind, in text order."""
    found = objections_without_spacy(own_text)
    rough = rough_sentences(own_text, OBJECTION_GATE)
    return objections_of_sentences(rough, found) if rough else found


def objections_of_sentences(rough: tuple[str, ...], found_first: tuple[Objection, ...] = ()) -> tuple[Objection, ...]:
    """What spaCy reads in rough sentences, after the objections already found (kinds not repeated)."""
    found: dict[str, Objection] = {objection.kind: objection for objection in found_first}
    for text, labels in sentence_labels(rough, OBJECTION_READING):
        for label in sorted(labels, key=_LABEL_ORDER.__getitem__):
            if label not in found:
                found[label] = Objection(label, text.strip())
    return tuple(found.values())


def read_trailers(own_text: str) -> tuple[Trailer, ...]:
    """Trailers and `#regzbot` commands in the writer's own text, in order, duplicates dropped."""
    found: list[Trailer] = []
    if ":" not in own_text:
        return ()
    for match in _TRAILER_AFTER_BREAK.finditer("\n" + own_text):
        found.append(Trailer(_TRAILER_NAMES[match.group(1).lower()], match.group(2)))
    if "#regzbot" in own_text:
        for match in _REGZBOT.finditer(own_text):
            found.append(Trailer(f"regzbot {match.group(1).lower()}", match.group(2)))
    return tuple(dict.fromkeys(found))

