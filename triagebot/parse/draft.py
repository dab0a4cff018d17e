"""Parse stage: a record read without spaCy, what spaCy must still read for it, and completing it.

`read_message` (report.py) gives a Draft: the record with every field but the ones the language
reader fills (stance, and the objections spaCy finds), plus the rough sentences that reader
must read, or None when there are none. `complete` fills those fields from a reader's answer.
The answer depends only on the sentences, so a record is the same whichever process reads them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from triagebot.parse.numbers import combine_stance
from triagebot.parse.objections import objections_of_sentences
from triagebot.parse.stance import Stance, stance_of_sentences
from triagebot.records.report import Objection, Report


@dataclass(frozen=True)
class LanguageRequest:
    """The rough sentences (found by the keyword gates) that spaCy must read for one record."""

    stance: tuple[str, ...] = ()  # stance sentences; none when the record's kind has no stance to read
    in_reply: bool = True  # "I'm seeing it too" reproduces in a reply, not in a report
    objections: tuple[str, ...] = ()
    found_objections: tuple[Objection, ...] = ()  # found by rules alone, kept first


@dataclass(frozen=True)
class LanguageAnswer:
    stance: Stance
    objections: tuple[Objection, ...]


@dataclass(frozen=True)
class Draft:
    report: Report  # stance "none" and the rules' objections until completed
    request: LanguageRequest | None  # None: nothing for spaCy to read, the report is final


LanguageReader = Callable[[LanguageRequest], LanguageAnswer]


def read_language(request: LanguageRequest) -> LanguageAnswer:
    """The language reader, in this process: spaCy reads the request's sentences."""
    stance = stance_of_sentences(request.stance, request.in_reply) if request.stance else Stance("none", None)
    objections = (objections_of_sentences(request.objections, request.found_objections) if request.objections
                  else request.found_objections)
    return LanguageAnswer(stance, objections)


def complete(draft: Draft, reader: LanguageReader = read_language) -> Report:
    """The draft's record with the language reader's answer in it."""
    if draft.request is None:
        return draft.report
    answer = reader(draft.request)
    stance = combine_stance(answer.stance, draft.report.stance_numbers)  # decisive numbers beat words
    return dataclasses.replace(draft.report, stance=stance.stance, stance_evidence=stance.evidence,
                               objections=answer.objections)
