"""Parse stage: the sentences that may reach spaCy, and what spaCy's Matcher finds in them.

The one module that knows spaCy: stance.py and objections.py give it their keyword gates and
Matcher patterns (a `Reading`) and decide from the labels it returns. spaCy's blank English
pipeline with a sentencizer; no model is downloaded (none can be at run time here or behind
users' firewalls). Only sentences that pass a gate go through spaCy.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_SENTENCE = 600  # characters; longer runs without a full stop are logs or tables, not statements


@dataclass(frozen=True)
class Gate:
    """Which sentences may reach spaCy: found by literal search, then checked by a pattern.

    `str.find` for a handful of lower-case keywords is far cheaper over long texts than one
    case-insensitive alternation; the pattern then checks each sentence found around them.
    """

    keywords: tuple[str, ...]  # lower case; every pattern match contains one
    pattern: re.Pattern[str]
    passes: Callable[[str], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Whether a sentence passes, each distinct sentence checked once per process (a cache, not
        # state): lists repeat sentences, and the stance pattern costs more than the rest of the gate.
        search = self.pattern.search
        object.__setattr__(self, "passes", functools.lru_cache(maxsize=4096)(lambda text: search(text) is not None))


@dataclass(frozen=True, eq=False)
class Reading:
    """One reader's Matcher patterns, by name (compared and hashed by identity: a module constant)."""

    name: str
    patterns: dict[str, list[list[dict[str, Any]]]]


@dataclass(frozen=True)
class Span:
    """One Matcher match in a sentence: its label and token offsets from the sentence's start."""

    label: str
    start: int
    end: int


@functools.lru_cache(maxsize=1)
def pipeline() -> Any:
    """spaCy's blank English pipeline with a sentencizer, built once per process (a cache, not state)."""
    import spacy  # imported on first use: half a second that most messages never need

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def is_loaded() -> bool:
    """True when this process has built the pipeline (spaCy loaded): forked children inherit it."""
    return pipeline.cache_info().currsize > 0


@functools.lru_cache(maxsize=4)
def matcher(reading: Reading) -> Any:
    """The Matcher of one reading's patterns, built on first use (a cache, not state)."""
    from spacy.matcher import Matcher

    built = Matcher(pipeline().vocab)
    for label, patterns in reading.patterns.items():
        built.add(label, patterns)
    return built


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
        if len(sentence) > MAX_SENTENCE:
            # a run with no full stop (a pasted `git bisect log`): the keyword's own line, when it
            # states something alone ("# first bad commit: [e7b813b3] efi: random: ...")
            # (both searches bounded by the window: a megabyte line stays linear)
            line_start = text.rfind("\n", window, position)
            line_start = window if line_start == -1 else line_start + 1
            line_end = text.find("\n", position, position + MAX_SENTENCE)
            line_end = min(len(text), position + MAX_SENTENCE) if line_end == -1 else line_end
            sentence = " ".join(text[line_start:line_end].split())
            covered = max(line_end, position + 1)
        if sentence and len(sentence) <= MAX_SENTENCE and gate.passes(sentence):
            found.append(sentence)
    return found


def rough_sentences(own_text: str, gate: Gate) -> tuple[str, ...]:
    """The rough sentences around the text's gate matches (no spaCy): what spaCy will be given."""
    return tuple(_sentences_around_gate(own_text.replace("\u2019", "'"), gate))


def sentence_labels(rough: tuple[str, ...], reading: Reading) -> Iterator[tuple[str, frozenset[str]]]:
    """(text, labels) of each spaCy sentence with a match of `reading`'s Matcher, in text order.

    Read rough sentence by rough sentence, so that a stance stops at the first that decides.
    """
    for text, spans in sentence_spans(rough, reading):
        yield text, frozenset(span.label for span in spans)


def sentence_spans(rough: tuple[str, ...], reading: Reading) -> Iterator[tuple[str, tuple[Span, ...]]]:
    """(text, matches) of each spaCy sentence with a match, each match a `Span` of token offsets
    within its sentence: where a plan or a contrast stands against a result decides a stance."""
    for text in rough:
        yield from _spans_of_text(text, reading)


@functools.lru_cache(maxsize=4096)
def _spans_of_text(text: str, reading: Reading) -> tuple[tuple[str, tuple[Span, ...]], ...]:
    """One rough sentence read by spaCy (a cache, not state: the same text reads the same; lists
    repeat sentences, quoted greetings and requests among them)."""
    nlp = pipeline()
    found_by = matcher(reading)
    if one_sentence(text):
        document = nlp.make_doc(text)  # what the sentencizer would find: the whole text
        sentences: Any = (document[:],)
    else:
        document = nlp(text)
        sentences = document.sents
    strings = nlp.vocab.strings
    matches = sorted((start, end, strings[match_id]) for match_id, start, end in found_by(document))
    found = []
    for sentence in sentences:
        spans = tuple(Span(label, start - sentence.start, end - sentence.start) for start, end, label in matches
                      if sentence.start <= start and end <= sentence.end)
        if spans:
            found.append((sentence.text, spans))
    return tuple(found)


def one_sentence(text: str) -> bool:
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
    marks = frozenset(pipeline().get_pipe("sentencizer").punct_chars)
    if all(len(mark) == 1 and unicodedata.category(mark).startswith("P") for mark in marks):
        return marks
    return frozenset()
