"""Parse stage: what a reply's own text says of reproducing the reported effect (spaCy).

Token Matcher patterns read by language.py's spaCy pipeline. Only sentences that hold a
stance word go through spaCy, so the year of a list costs a few hundred spaCy calls.

A sentence's matches become a set of labels and one small decision turns them into a stance:
negations ("could not reproduce", "not seeing this on my box") beat affirmations ("I can
reproduce this at will", "we double confirmed"); a question, a plan ("I'll see if I can
reproduce it"), a hedge ("I might be seeing it"), a relative clause ("the machine that I could
reproduce this on") or a confirmed fix ("I can confirm the crash is fixed") is no stance.
The first sentence that decides wins, and is kept as the evidence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from triagebot.parse.language import Gate, Reading, rough_sentences, sentence_labels

# Cheap gate: a sentence without one of these cannot state a stance and never reaches spaCy.
# A seeing verb counts only with what is seen close after it ("not seeing this", "I see the
# same regression"): "I see", "see below" and "I don't see why" are the common case in reviews.
STANCE_PATTERN = re.compile(
    r"reproduc|confirm|verified|unable|"
    r"\b(?:see|seeing|saw|observ\w*|notic\w*|hit|hitting|measured)\b(?:\s+[\w-]+){0,4}?\s+"
    r"(?:this|it|that|(?:regression|slowdown|drop|degradation|problem|issue|difference|report|splat|warning|"
    r"behaviou?r|hang|deadlock|effect|change|bug|crash|lockdep)\w*)\b|"
    r"\bno (?:\w+ )?(?:regression|difference|slowdown)", re.IGNORECASE)
STANCE_GATE = Gate(("reproduc", "confirm", "verified", "unable", "see", "saw", "observ", "notic", "hit",
                    "measured", "no "), STANCE_PATTERN)


@dataclass(frozen=True)
class Stance:
    stance: str  # reproduced / not-reproduced / none
    evidence: str | None  # the sentence that decided it


# Word lists rather than REGEX predicates: list lookups keep the Matcher cheap.
_NEGATORS = ["n't", "not", "never", "cannot"]
_NOUN_WORDS = ["regression", "slowdown", "drop", "degradation", "problem", "issue", "difference", "report",
               "splat", "warning", "behaviour", "behavior", "hang", "deadlock", "effect", "change", "bug", "crash"]
_NOUNS = {"IN": _NOUN_WORDS + [word + "s" for word in _NOUN_WORDS] + ["lockdep", "crashes"]}
_REPRODUCE_FORMS = ["reproduce", "reproduced", "reproduces", "reproducing", "reproduction", "repro",
                    "trigger", "triggered", "triggering", "hit"]
_REPRODUCE = {"IN": _REPRODUCE_FORMS}
_REPRODUCIBLE = {"IN": ["reproducible", "reproduceable", "reproducable"]}
_AFFIRM = {"IN": ["reproduce", "reproduced", "reproducing", "confirm", "confirmed", "confirming", "confirms",
                  "reconfirm", "reconfirmed", "verified", "verify"]}
_SUBJECT = {"LOWER": {"IN": ["i", "we"]}}
_FILLERS = {"LOWER": {"IN": ["can", "could", "was", "were", "am", "'m", "are", "'re", "also", "did",
                             "have", "'ve", "finally", "now", "too", "easily", "reliably", "still",
                             "do", "even", "indeed", "double", "re", "-", "again", "just", "able", "to",
                             "managed", "definitely", "consistently"]}, "OP": "{0,4}"}
_DETERMINERS = {"LOWER": {"IN": ["the", "a", "an", "this", "that", "similar", "same", "even", "larger",
                                 "bigger", "significant", "any", "such", "exact", "measurable", "noticeable",
                                 "big", "huge", "reported", "it", "lockdep"]}, "OP": "{0,3}"}
_SEE = {"LOWER": {"IN": ["see", "seeing", "saw", "observe", "observed", "observing", "notice", "noticed",
                         "noticing", "hit", "hitting", "measure", "measured"]}}

PATTERNS: dict[str, list[list[dict[str, Any]]]] = {
    # "can't reproduce", "could not reproduce", "cannot trigger", "wasn't able to reproduce"
    "NOT_REPRODUCED": [
        [{"LOWER": {"IN": _NEGATORS}}, {"LOWER": {"IN": ["been", "be", "able", "to", "yet", "even"]}, "OP": "{0,3}"},
         {"LOWER": _REPRODUCE}],
        [{"LOWER": {"IN": ["unable", "failed", "fail", "fails", "impossible"]}}, {"LOWER": "to"},
         {"LOWER": _REPRODUCE}],
        # "no regression here", "no difference on my machine"
        [{"LOWER": "no"}, {"LOWER": {"IN": ["measurable", "significant", "noticeable", "such", "real"]}, "OP": "?"},
         {"LOWER": {"IN": ["regression", "regressions", "slowdown", "difference", "drop", "degradation"]}},
         {"LOWER": {"IN": ["here", "for", "on", "with"]}}],
        [{"LOWER": {"IN": ["ca", "can", "could"]}}, {"LOWER": {"IN": ["n't", "not"]}},
         {"LOWER": {"IN": ["confirm", "verify"]}}],
    ],
    # "trying for days to reproduce this, and have been unable so far": three words, one sentence
    "TRIED": [[{"LOWER": {"IN": ["try", "tried", "trying", "tries"]}}]],
    "REPRODUCE_WORD": [[{"LOWER": _REPRODUCE}]],
    "NO_SUCCESS": [[{"LOWER": {"IN": ["unable", "failed", "luck", "success", "unsuccessful", "avail"]}}]],
    # "not seeing this", "I don't see the regression": a negative only with a run of one's own
    "NOT_SEEN": [
        [{"LOWER": {"IN": _NEGATORS}}, _SEE, _DETERMINERS, {"LOWER": _NOUNS}],
        [{"LOWER": {"IN": _NEGATORS}}, _SEE, {"LOWER": {"IN": ["this", "it", "that"]}}],
    ],
    "RUN_CUE": [
        [{"LOWER": "on"}, {"LOWER": {"IN": ["my", "our"]}}],
        [{"LOWER": {"IN": ["my", "our"]}},
         {"LOWER": {"IN": ["machine", "machines", "box", "boxes", "system", "systems", "laptop", "setup", "server",
                           "servers", "test", "tests", "testing", "workstation", "vm", "host", "hosts"]}}],
        [_SUBJECT, {"LOWER": {"IN": ["'ve", "have", "also"]}, "OP": "*"},
         {"LOWER": {"IN": ["ran", "run", "tried", "tested", "rerun", "retested", "re", "measured", "benchmarked"]}}],
        [{"LOWER": "locally"}],
    ],
    # "I can reproduce this", "we double confirmed", "I'm also seeing a similar report"
    "REPRODUCED": [
        [_SUBJECT, _FILLERS, {"LOWER": _AFFIRM}],
        [{"LOWER": {"IN": ["is", "was", "'s", "remains", "still", "also", "be", "very", "100%", "easily"]}},
         {"LOWER": {"IN": ["still", "easily", "very", "reliably", "always", "100", "%"]}, "OP": "*"},
         {"LOWER": _REPRODUCIBLE}],
    ],
    # "I'm also seeing a similar lockdep report": in a reply, seeing it too is reproducing it
    "SEEN": [
        [_SUBJECT, _FILLERS, _SEE, _DETERMINERS, {"LOWER": _NOUNS}],
    ],
    # plans and conditions: "I'll see if I can reproduce", "let me try", "if I see the regression"
    "FUTURE": [
        [{"LOWER": {"IN": ["'ll", "wo", "shall", "gonna"]}}],
        [{"LOWER": "going"}, {"LOWER": "to"}],
        [{"LOWER": "let"}, {"LOWER": "me"}],
        [{"LOWER": {"IN": ["if", "whether", "once", "when"]}}, _SUBJECT],
        [{"LOWER": {"IN": ["try", "trying", "want", "hope", "plan", "planning"]}}, {"LOWER": "to"},
         {"LOWER": _REPRODUCE}],
    ],
    # "will" is a plan, except in "I can reproduce this at will"
    "WILL": [[{"LOWER": "will"}]],
    "AT_WILL": [[{"LOWER": "at"}, {"LOWER": "will"}]],
    "HEDGE": [
        [{"LOWER": {"IN": ["might", "may", "maybe", "perhaps", "possibly", "probably", "seems", "seem",
                           "think", "guess", "suspect"]}}],
        [{"LOWER": "not"}, {"LOWER": "sure"}],
    ],
    # "the test machine that I could reproduce this on": a description, not a result
    "RELATIVE": [
        [{"LOWER": {"IN": ["that", "which", "where"]}}, _SUBJECT, {"LOWER": {"IN": ["could", "can", "was", "were"]}},
         {"LOWER": _REPRODUCE}],
        # "the box I could reproduce this on": a machine described, its clause unmarked
        [{"LOWER": {"IN": ["machine", "machines", "box", "system", "host", "server", "setup", "laptop", "config",
                           "kernel"]}}, _SUBJECT,
         {"LOWER": {"IN": ["could", "can", "was", "were"]}}, {"LOWER": _REPRODUCE}],
    ],
    # "I can confirm the procfs crash is fixed": a fix confirmed, not the regression
    "FIXED": [
        [{"LOWER": {"IN": ["fixed", "fixes", "resolved", "resolves", "solved", "solves", "cured"]}}],
    ],
    "REVERT": [[{"LOWER": {"IN": ["revert", "reverted", "reverting", "reverts", "revert-"]}}]],
}


def decide_sentence(labels: frozenset[str], question: bool, seeing_reproduces: bool = True) -> str:
    """The stance one sentence states, from the labels its matches carry.

    `seeing_reproduces` is true for replies: "I'm seeing the same regression" there reproduces
    the report, while in a report it is the report itself.
    """
    if question:
        return "none"  # "can you reproduce it?" asks, it does not state
    if "WILL" in labels and "AT_WILL" not in labels:
        labels = labels | {"FUTURE"}
    if "NOT_REPRODUCED" in labels and "FUTURE" not in labels:
        return "not-reproduced"
    if {"TRIED", "REPRODUCE_WORD", "NO_SUCCESS"} <= labels and "FUTURE" not in labels:
        return "not-reproduced"  # tried to reproduce it, without success
    if "NOT_SEEN" in labels and "RUN_CUE" in labels and "FUTURE" not in labels:
        return "not-reproduced"  # "I'm not seeing this on my i7": looked on their own machine
    affirmed = "REPRODUCED" in labels or (seeing_reproduces and "SEEN" in labels)
    if not affirmed or "NOT_SEEN" in labels:
        return "none"
    if labels & {"FUTURE", "HEDGE", "RELATIVE"}:
        return "none"  # a plan, a guess or a description of a machine
    if "FIXED" in labels and "REVERT" not in labels:
        return "none"  # confirms a fix works; "reverting X fixes it" still confirms the regression
    return "reproduced"


STANCE_READING = Reading("stance", PATTERNS)


def stance_of_sentences(rough: tuple[str, ...], in_reply: bool) -> Stance:
    """What spaCy reads in rough sentences: the first sentence that decides a stance."""
    for text, labels in sentence_labels(rough, STANCE_READING):
        stance = decide_sentence(labels, text.rstrip().endswith("?"), seeing_reproduces=in_reply)
        if stance != "none":
            return Stance(stance, text.strip())
    return Stance("none", None)


def read_stance(own_text: str, *, in_reply: bool = True) -> Stance:
    """The stance of a writer's own (unquoted) text and the sentence that decided it."""
    rough = rough_sentences(own_text, STANCE_GATE)
    return stance_of_sentences(rough, in_reply) if rough else Stance("none", None)
