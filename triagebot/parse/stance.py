"""Parse stage: what a reply's own text says of reproducing the reported effect (spaCy).

spaCy's blank English pipeline with a sentencizer and token Matcher patterns; no model is
downloaded (none can be at run time here or behind users' firewalls). Only sentences that hold
a stance word go through spaCy, so the year of a list costs a few hundred spaCy calls.

A sentence's matches become a set of labels and one small decision turns them into a stance:
negations ("could not reproduce", "not seeing this on my box") beat affirmations ("I can
reproduce this at will", "we double confirmed"); a question, a plan ("I'll see if I can
reproduce it"), a hedge ("I might be seeing it"), a relative clause ("the machine that I could
reproduce this on") or a confirmed fix ("I can confirm the crash is fixed") is no stance.
The first sentence that decides wins, and is kept as the evidence.
"""
from __future__ import annotations

import contextvars
import functools
import re
import sys
import types
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

@dataclass(frozen=True)
class Gate:
    """Which sentences may reach spaCy: found by literal search, then checked by a pattern.

    `str.find` for a handful of lower-case keywords is far cheaper over long texts than one
    case-insensitive alternation; the pattern then checks each sentence found around them.
    """

    keywords: tuple[str, ...]  # lower case; every pattern match contains one
    pattern: re.Pattern[str]


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
MAX_SENTENCE = 600  # characters; longer runs without a full stop are logs or tables, not statements


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


def import_spacy_for_reading() -> None:
    """Import spaCy without its command line, in a process that only reads sentences.

    `import spacy` also imports `spacy.cli` (weasel, typer, requests, jinja2, ...) for the one
    name `spacy.info`: about a third of the import, none of it used to read a sentence. While
    spaCy's `__init__` runs, `spacy.cli.info` is a stand-in whose `info` imports the real one
    when called; the stand-ins are removed afterwards, so a later `import spacy.cli` is the real
    import. Should spaCy's `__init__` want more of its CLI, the plain import is used instead.
    """
    if "spacy" in sys.modules:
        return
    package = types.ModuleType("spacy.cli")
    package.__path__ = []  # a package, so that `spacy.cli.info` can be found under it
    module = types.ModuleType("spacy.cli.info")

    def info(*args: Any, **kwargs: Any) -> Any:
        from spacy.cli.info import info as real_info  # the stand-ins are gone by now

        return real_info(*args, **kwargs)

    module.info = info  # type: ignore[attr-defined]
    stand_ins = {"spacy.cli": package, "spacy.cli.info": module}
    sys.modules.update(stand_ins)
    try:
        import spacy  # noqa: F401
    except (ImportError, AttributeError):
        pass  # the plain import below
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
    import spacy  # noqa: F401,F811  (a no-op when the import above worked)


@functools.lru_cache(maxsize=1)
def pipeline() -> tuple[Any, Any]:
    """The spaCy pipeline and stance matcher, built once per process (a cache, not state)."""
    import spacy  # imported on first use: half a second that most messages never need
    from spacy.matcher import Matcher

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    matcher = Matcher(nlp.vocab)
    for label, patterns in PATTERNS.items():
        matcher.add(label, patterns)
    return nlp, matcher


# A sentence ends at a full stop, question or exclamation mark before white space, or a blank line.
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n[ \t]*\n")
_SENTENCE_STARTS = (". ", ".\n", "? ", "?\n", "! ", "!\n", "\n\n")
# Program output and tables carry numbers, not statements: "read: IOPS=203k, BW=49.6GiB/s".
_LOG_LINE = re.compile(r"^\s*(?:\[[ \d.]+\]|[\w-]+:\s*\(g=|\S+\s*[:=]\s*[\d.]++[\w/%]*+\s*(?:,|$))")


def _sentences_around_gate(text: str, gate: Gate) -> list[str]:
    """The rough sentences holding a gate keyword, found from the keywords: the text is not split."""
    lowered = text.lower()
    positions = []
    for keyword in gate.keywords:
        position = lowered.find(keyword)
        while position != -1:
            positions.append(position)
            position = lowered.find(keyword, position + len(keyword))
    found: list[str] = []
    covered = -1
    for position in sorted(positions):
        if position < covered:
            continue
        window = max(0, position - MAX_SENTENCE)
        start = max(text.rfind(mark, window, position) for mark in _SENTENCE_STARTS)
        start = window if start == -1 else start + 1
        end_match = _SENTENCE_END.search(text, position + 1, position + MAX_SENTENCE)
        end = end_match.end() if end_match else min(len(text), position + MAX_SENTENCE)
        covered = end
        lines = [line for line in text[start:end].split("\n") if not _LOG_LINE.match(line)]
        sentence = " ".join(" ".join(lines).split())
        if sentence and len(sentence) <= MAX_SENTENCE and gate.pattern.search(sentence):
            found.append(sentence)
    return found


def rough_sentences(own_text: str, gate: Gate) -> tuple[str, ...]:
    """The rough sentences around the text's gate matches (no spaCy): what spaCy will be given."""
    return tuple(_sentences_around_gate(own_text.replace("\u2019", "'"), gate))


# -- reading elsewhere ------------------------------------------------------------------------
# Loading spaCy costs most of a second of CPU per process, and only a few messages of a list
# (replies in report threads with a stance or objection keyword) need it. A batch's worker
# processes therefore do not read those sentences themselves: while `DEFERRED` holds a dict,
# read_stance and read_objections put what spaCy must read there (the same rough sentences, found
# by the same gates) and answer "nothing found" for now; one reader process, the only one that
# loads spaCy, reads them (`read_pending`) and the batch puts its answers into the record.

DEFERRED: contextvars.ContextVar[dict[str, tuple] | None] = contextvars.ContextVar("DEFERRED", default=None)


def defer_reading(kind: str, request: tuple) -> bool:
    """Hand one reading to the reader process when a batch worker asks for that; True if handed."""
    pending = DEFERRED.get()
    if pending is None:
        return False
    if kind in pending:
        raise RuntimeError(f"{kind} read twice for one message")  # one reading of each kind a record
    pending[kind] = request
    return True


def sentence_labels(rough: tuple[str, ...], reader: str) -> Iterator[tuple[str, frozenset[str]]]:
    """(text, labels) of each spaCy sentence with a match of `reader`'s Matcher, in text order.

    Read rough sentence by rough sentence, so that a stance stops at the first that decides.
    """
    for text in rough:
        yield from _labels_of_text(text, reader)


@functools.lru_cache(maxsize=4096)
def _labels_of_text(text: str, reader: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """One rough sentence read by spaCy (a cache, not state: the same text reads the same; lists
    repeat sentences, quoted greetings and requests among them)."""
    nlp, matcher = pipeline()
    if reader == "objections":
        from triagebot.parse import objections

        matcher = objections.matcher()
    if _one_sentence(text):
        document = nlp.make_doc(text)  # what the sentencizer would find: the whole text
        sentences: Any = (document[:],)
    else:
        document = nlp(text)
        sentences = document.sents
    strings = nlp.vocab.strings
    matches = [(start, end, strings[match_id]) for match_id, start, end in matcher(document)]
    found = []
    for sentence in sentences:
        labels = frozenset(label for start, end, label in matches if sentence.start <= start and end <= sentence.end)
        if labels:
            found.append((sentence.text, labels))
    return tuple(found)


def _one_sentence(text: str) -> bool:
    """True when spaCy's sentencizer must find one sentence: no sentence mark before the end.

    The sentencizer starts a sentence at the first token after a mark (a one-character token in
    its `punct_chars`) that is not punctuation itself. When the only marks are in the text's
    trailing run of punctuation, every token after one is punctuation, so the text is one
    sentence; then the tokens alone are enough (the sentencizer is most of a short text's cost).
    """
    marks = _sentence_marks()
    if not marks:
        return False
    end = len(text)
    while end and unicodedata.category(text[end - 1]).startswith("P"):
        end -= 1
    return marks.isdisjoint(text[:end])


@functools.lru_cache(maxsize=1)
def _sentence_marks() -> frozenset[str]:
    """The sentencizer's marks, if all are single punctuation characters (else no shortcut)."""
    marks = frozenset(pipeline()[0].get_pipe("sentencizer").punct_chars)
    if all(len(mark) == 1 and unicodedata.category(mark).startswith("P") for mark in marks):
        return marks
    return frozenset()


def stance_of_sentences(rough: tuple[str, ...], in_reply: bool) -> Stance:
    """What spaCy reads in rough sentences: the first sentence that decides a stance."""
    for text, labels in sentence_labels(rough, "stance"):
        stance = decide_sentence(labels, text.rstrip().endswith("?"), seeing_reproduces=in_reply)
        if stance != "none":
            return Stance(stance, text.strip())
    return Stance("none", None)


def read_stance(own_text: str, *, in_reply: bool = True) -> Stance:
    """The stance of a writer's own (unquoted) text and the sentence that decided it."""
    rough = rough_sentences(own_text, STANCE_GATE)
    if not rough or defer_reading("stance", (rough, in_reply)):
        return Stance("none", None)
    return stance_of_sentences(rough, in_reply)


def read_pending(pending: dict[str, tuple]) -> dict[str, Any]:
    """Read what a worker deferred (`DEFERRED`): {"stance": Stance, "objections": tuple}, as given."""
    from triagebot.parse import objections

    answers: dict[str, Any] = {}
    if "stance" in pending:
        answers["stance"] = stance_of_sentences(*pending["stance"])
    if "objections" in pending:
        answers["objections"] = objections.objections_of_sentences(*pending["objections"])
    return answers
