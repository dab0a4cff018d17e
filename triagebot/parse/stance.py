"""Parse stage: what a reply's own text says of reproducing the reported effect (spaCy).

Token Matcher patterns read by language.py's spaCy pipeline. Only sentences that hold a
stance word go through spaCy, so the year of a list costs a few hundred spaCy calls.

A sentence's matches become a set of labels and one small decision turns them into a stance:
negations ("could not reproduce", "not seeing this on my box") beat affirmations ("I can
reproduce this at will", "we double confirmed"); a question, a plan ("I'll see if I can
reproduce it"), a hedge ("I might be seeing it"), a relative clause ("the machine that I could
reproduce this on") or a confirmed fix ("I can confirm the crash is fixed") is no stance.
A stance is a claim about the writer's own attempt to reproduce the reported regression
(issue 24): a negation counts only with the writer in it ("I", "we", "my box", "here", an
elliptic "Can't reproduce.") — "mappings under 2MB do not trigger this issue" explains code; a
claim about a fix ("it's working here", "restores the original behaviour"), the reporter's
machine ("reproduced easily in your environment"), another problem ("the other warning") or a
past sighting ("the last time I saw …") is no stance; a hedge ("cannot guarantee … on another
machine") is no failure. The first sentence that decides is the evidence; a later one deciding
the other way is conflicting evidence and the stance abstains to `none`, unless it only narrows
where a reproduction shows ("But not reproduced on WSL").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from triagebot.parse.language import Gate, Reading, Span, rough_sentences, sentence_spans

# Cheap gate: a sentence without one of these cannot state a stance and never reaches spaCy.
# A seeing verb counts only with what is seen close after it ("not seeing this", "I see the
# same regression"): "I see", "see below" and "I don't see why" are the common case in reviews.
STANCE_PATTERN = re.compile(
    r"reproduc|confirm|verified|unable|"
    r"\b(?:see|seeing|saw|observ\w*|notic\w*|hit|hitting|trigger\w*|measured)\b(?:\s+[\w-]+){0,4}?\s+"
    r"(?:this|it|that|(?:regression|slowdown|drop|degradation|problem|issue|difference|report|splat|warning|"
    r"behaviou?r|hang|deadlock|effect|change|bug|crash|lockdep|stall|corruption|panic|oops|error|failure)\w*)\b|"
    r"\bno (?:\w+ )?(?:regression|difference|slowdown)|\bsame (?:\w+ )?here\b|"
    r"\b(?:problem|issue|bug|regression|slowdown|crash|hang)s? (?:still|also) (?:happen|occur|exist|show|persist)|"
    r"\bencounter|\bexperienc(?:e|ed|ing) (?:the|this|a|it|that|same|similar)|"
    # a patch tested or offered: the results after it are about the patch
    r"\bmy (?:\w+ )?patch|\bpatch(?:es|set)? for you to (?:try|test)|"
    r"\b(?:applied|applying|tested|testing|with|after|adding) (?:\w+ ){0,2}patch|"
    r"(?:\bis|'s|\bwas|\bstay(?:s|ed)|\bremain(?:s|ed)|\bran|\bruns|\bwork(?:s|ed)) "
    r"(?:stable|fine|responsive|smooth)\b|"
    r"\b(?:find|found|detect|detected)\b(?:\s+\w+){0,3}?\s+(?:regression|slowdown|degradation|difference)",
    re.IGNORECASE)
STANCE_GATE = Gate(("reproduc", "confirm", "verified", "unable", "see", "saw", "observ", "notic", "hit",
                    "trigger", "measured", "no ", "same", "still ", "also ", "encounter", "experienc", "patch",
                    "stable", "fine", "responsive", "smooth", "find", "found", "detect"),
                   STANCE_PATTERN)


@dataclass(frozen=True)
class Stance:
    stance: str  # reproduced / not-reproduced / none
    evidence: str | None  # the sentence that decided it


# Word lists rather than REGEX predicates: list lookups keep the Matcher cheap.
_NEGATORS = ["n't", "not", "never", "cannot"]
_NOUN_WORDS = ["regression", "slowdown", "drop", "degradation", "problem", "issue", "difference", "report",
               "splat", "warning", "behaviour", "behavior", "hang", "deadlock", "effect", "change", "bug", "crash",
               "stall", "corruption", "panic", "oops", "error", "failure"]
_NOUNS = {"IN": _NOUN_WORDS + [word + "s" for word in _NOUN_WORDS] + ["lockdep", "crashes"]}
_REPRODUCE_FORMS = ["reproduce", "reproduced", "reproduces", "reproducing", "reproduction", "repro",
                    "trigger", "triggered", "triggering", "hit", "hitting"]
_REPRODUCE = {"IN": _REPRODUCE_FORMS}
_REPRODUCIBLE = {"IN": ["reproducible", "reproduceable", "reproducable"]}
_AFFIRM = {"IN": ["reproduce", "reproduced", "reproducing", "confirm", "confirmed", "confirming", "confirms",
                  "reconfirm", "reconfirmed", "verified", "verify"]}
_SUBJECT = {"LOWER": {"IN": ["i", "we"]}}
# "I was finally able to", "I manage to", "we have easily": what stands between a writer and the verb
_FILLER_WORDS = ["can", "could", "was", "were", "am", "'m", "are", "'re", "also", "did", "have", "'ve", "finally",
                 "now", "too", "easily", "reliably", "still", "do", "even", "indeed", "double", "re", "-", "again",
                 "just", "able", "to", "managed", "manage", "definitely", "consistently", "quickly", "already",
                 "then", "eventually", "actually", "successfully", "figure", "figured", "out", "how", "only", "first"]
_FILLERS = {"LOWER": {"IN": _FILLER_WORDS}, "OP": "{0,8}"}
_DETERMINERS = {"LOWER": {"IN": ["the", "a", "an", "this", "that", "similar", "same", "even", "larger",
                                 "bigger", "significant", "any", "such", "exact", "measurable", "noticeable",
                                 "big", "huge", "reported", "it", "lockdep"]}, "OP": "{0,3}"}
_SEE = {"LOWER": {"IN": ["see", "seeing", "saw", "observe", "observed", "observing", "notice", "noticed",
                         "noticing", "hit", "hitting", "measure", "measured", "encounter", "encountered",
                         "encountering", "experience", "experienced", "experiencing", "trigger", "triggered"]}}
_PATCH_WORDS = ["patch", "patches", "patchset", "fix", "fixes", "series", "workaround", "diff"]
_THAT = {"LOWER": {"IN": ["this", "it", "that"]}}

PATTERNS: dict[str, list[list[dict[str, Any]]]] = {
    # "can't reproduce", "could not reproduce", "cannot trigger", "wasn't able to reproduce",
    # "can't seem to trigger", "didn't manage to trigger it"
    "NOT_REPRODUCED": [
        [{"LOWER": {"IN": _NEGATORS}}, {"LOWER": {"IN": ["been", "be", "able", "to", "yet", "even", "seem", "manage",
                                                        "managed", "really", "actually", "quite", "*", "_"]},
                                            "OP": "{0,4}"},
         {"LOWER": _REPRODUCE}],
        # "couldn't get it to reproduce", "never got the C reproducer to trigger"
        [{"LOWER": {"IN": _NEGATORS}}, {"LOWER": {"IN": ["get", "got", "getting"]}}, {"OP": "{0,3}"},
         {"LOWER": "to"}, {"LOWER": _REPRODUCE}],
        [{"LOWER": {"IN": ["unable", "failed", "fail", "fails", "impossible"]}}, {"LOWER": "to"},
         {"LOWER": _REPRODUCE}],
        # "no regression here", "no difference on my machine"
        [{"LOWER": "no"}, {"LOWER": {"IN": ["measurable", "significant", "noticeable", "such", "real"]}, "OP": "?"},
         {"LOWER": {"IN": ["regression", "regressions", "slowdown", "difference", "drop", "degradation"]}},
         {"LOWER": {"IN": ["here", "for", "on", "with"]}}],
        # a rerun's summary: "there is no difference", "it showed no measurable difference",
        # "no regression was found", "we didn't find any regression in our retest"
        [{"LOWER": {"IN": ["is", "was", "'s", "shows", "showed", "show", "see", "saw", "found", "measured", "got",
                           "get"]}},
         {"LOWER": "no"}, {"LOWER": {"IN": ["measurable", "significant", "noticeable", "real", "obvious", "visible"]},
                           "OP": "?"},
         {"LOWER": {"IN": ["difference", "regression", "slowdown", "degradation", "drop"]}}],
        [{"LOWER": "no"}, {"LOWER": {"IN": ["measurable", "significant", "noticeable", "obvious", "visible"]},
                           "OP": "?"},
         {"LOWER": {"IN": ["regression", "difference", "slowdown", "degradation"]}},
         {"LOWER": {"IN": ["was", "is", "could", "can"]}}, {"LOWER": "be", "OP": "?"},
         {"LOWER": {"IN": ["found", "observed", "seen", "detected", "measured", "noticed", "reproduced"]}}],
        [{"LOWER": {"IN": _NEGATORS}}, {"LOWER": {"IN": ["find", "found", "detect", "detected"]}},
         {"LOWER": {"IN": ["any", "the", "a", "this", "that"]}, "OP": "?"},
         {"LOWER": {"IN": ["obvious", "significant", "measurable", "such", "reported"]}, "OP": "?"},
         {"LOWER": {"IN": ["regression", "slowdown", "degradation", "difference"]}}],
        [{"LOWER": {"IN": ["ca", "can", "could"]}}, {"LOWER": {"IN": ["n't", "not"]}},
         {"LOWER": {"IN": ["confirm", "verify"]}}],
        # "no reproduce any more", "it no longer reproduces"
        [{"LOWER": "no"}, {"LOWER": "longer", "OP": "?"},
         {"LOWER": {"IN": ["reproduce", "reproduces", "reproduced", "repro", "reproduction", "triggers"]}}],
    ],
    # "trying for days to reproduce this, and have been unable so far": three words, one sentence
    "TRIED": [[{"LOWER": {"IN": ["try", "tried", "trying", "tries"]}}]],
    "REPRODUCE_WORD": [[{"LOWER": _REPRODUCE}]],
    "NO_SUCCESS": [[{"LOWER": {"IN": ["unable", "failed", "luck", "success", "unsuccessful", "avail",
                                      "unfortunately"]}}]],
    # "not seeing this", "I don't see the regression": a negative only with a run of one's own
    "NOT_SEEN": [
        [{"LOWER": {"IN": _NEGATORS}}, _SEE, _DETERMINERS, {"LOWER": _NOUNS}],
        [{"LOWER": {"IN": _NEGATORS}}, _SEE, _THAT],
    ],
    "RUN_CUE": [
        [{"LOWER": "on"}, {"LOWER": {"IN": ["my", "our"]}}],
        [{"LOWER": {"IN": ["my", "our"]}},
         {"LOWER": {"IN": ["machine", "machines", "box", "boxes", "system", "systems", "laptop", "setup", "server",
                           "servers", "test", "tests", "testing", "workstation", "vm", "host", "hosts"]}}],
        [_SUBJECT, {"LOWER": {"IN": ["'ve", "have", "also"]}, "OP": "*"},
         {"LOWER": {"IN": ["ran", "run", "tried", "tested", "rerun", "retested", "re", "measured", "benchmarked",
                           "booted", "rebooted", "installed", "built", "compiled"]}}],
        [{"LOWER": "locally"}],
        # "does not reproduce with a 6.8.5 kernel on the same guest": the writer's own kernel and guest
        [{"LOWER": {"IN": ["on", "with", "in"]}}, {"LOWER": "the"}, {"LOWER": "same"},
         {"LOWER": {"IN": ["guest", "vm", "machine", "box", "system", "host", "setup", "hardware", "laptop"]}}],
        [{"LOWER": "with"}, {"LOWER": {"IN": ["a", "the"]}, "OP": "?"},
         {"SHAPE": {"IN": ["d.d", "d.dd", "d.d.d", "d.dd.d", "d.d.dd", "d.dd.dd", "d.d.ddd", "d.dd.ddd"]}},
         {"LOWER": {"IN": ["kernel", "kernels"]}}],
    ],
    # after a run of one's own: "I've booted back into 6.7 on the VM, and it's stable"
    "STAYED_FINE": [
        [{"LOWER": {"IN": ["'s", "is", "was", "stays", "stayed", "remains", "remained", "runs", "ran", "works",
                           "worked"]}},
         {"LOWER": {"IN": ["stable", "fine", "ok", "okay", "clean", "normal", "responsive", "smooth"]}}],
    ],
    # the measurement is steady, not the machine: "we double confirmed the latency_95th_ms data is
    # stable in multi runs" (a bot team re-confirming its report), "the results are stable"
    "DATA_STABLE": [
        [{"LOWER": {"IN": ["data", "result", "results", "numbers", "number", "figures", "measurements",
                           "score", "scores", "runs"]}},
         {"LOWER": {"IN": ["is", "are", "was", "were", "stays", "stayed", "remain", "remained"]}},
         {"LOWER": {"IN": ["stable", "consistent", "repeatable"]}}],
    ],
    # "I can reproduce this", "we double confirmed", "I found a way to reproduce it"
    "REPRODUCED": [
        [_SUBJECT, _FILLERS, {"LOWER": _AFFIRM}],
        [{"LOWER": {"IN": ["is", "was", "'s", "remains", "still", "also", "be", "very", "100%", "easily"]}},
         {"LOWER": {"IN": ["still", "easily", "very", "reliably", "always", "100", "%"]}, "OP": "*"},
         {"LOWER": _REPRODUCIBLE}],
        # "it's ~1% reproducible on my side": a rate on the writer's own machine
        [{"LOWER": _REPRODUCIBLE}, {"LOWER": "on"}, {"LOWER": {"IN": ["my", "our"]}}],
        # passive: "the issue has also been reproduced on", "can easily be reproduced via"
        [{"LOWER": {"IN": ["has", "have", "had", "was", "were", "be", "is"]}},
         {"LOWER": {"IN": ["also", "easily", "still", "now", "finally", "reliably", "consistently", "been", "just",
                           "successfully", "again"]}, "OP": "{0,3}"},
         {"LOWER": "reproduced"}],
        # "I found a way to reproduce", "Finally I found some cycles to reproduce", "figured out how to hit"
        [_SUBJECT, _FILLERS, {"LOWER": {"IN": ["found", "find"]}}, {"OP": "{0,3}"}, {"LOWER": "to"},
         {"LOWER": {"IN": ["reproduce", "trigger", "hit"]}}],
        # the reporter again: "the problem still happens with 6.6-rc1"
        [{"LOWER": {"IN": ["problem", "issue", "bug", "regression", "slowdown", "crash", "hang", "it"]}},
         {"LOWER": {"IN": ["still", "also"]}},
         {"LOWER": {"IN": ["happen", "happens", "happening", "occurs", "occur", "exists", "persists", "shows"]}}],
        # "the provided reproducer was able to get the VM stuck"
        [{"LOWER": {"IN": ["reproducer", "repro"]}}, {"LOWER": {"IN": ["was", "is", "still"]}, "OP": "?"},
         {"LOWER": {"IN": ["able", "to"]}, "OP": "{0,2}"},
         {"LOWER": {"IN": ["triggers", "triggered", "hits", "get", "got", "gets", "crashes", "crashed", "hangs",
                           "hung"]}}],
    ],
    # "I'm also seeing a similar lockdep report", "I manage to hit this", "same thing here"
    "SEEN": [
        [_SUBJECT, _FILLERS, _SEE, _DETERMINERS, {"LOWER": _NOUNS}],
        [_SUBJECT, _FILLERS, {"LOWER": {"IN": ["hit", "hitting", "trigger", "triggered"]}}, _THAT],
        [{"LOWER": "same"}, {"LOWER": {"IN": ["thing", "problem", "issue", "bug", "crash", "error", "behaviour",
                                              "behavior", "regression"]}, "OP": "?"}, {"LOWER": "here"}],
    ],
    # read, not run: "I noticed this report from syzbot", "I saw your mail"
    "READ_MAIL": [
        [_SEE, {"LOWER": {"IN": ["this", "your", "the", "that"]}},
         {"LOWER": {"IN": ["report", "email", "mail", "thread", "message", "post", "discussion"]}}],
    ],
    # a contrast's second half: "..., but I can see it on tmpfs", "..., but running X reproduces it"
    "BUT": [[{"LOWER": {"IN": ["but", "however", "whereas", "while"]}}]],
    "SEE_IT": [
        [_SUBJECT, _FILLERS, _SEE, _THAT],
        [{"LOWER": {"IN": ["reproduces", "triggers", "hits"]}}, {"LOWER": {"IN": ["it", "this", "the"]}}],
    ],
    # plans and conditions: "I'll see if I can reproduce", "let me try", "if I see the regression",
    # "just need to test the fix myself to ensure I can reproduce", "I hope we see a change"
    "FUTURE": [
        [{"LOWER": {"IN": ["'ll", "wo", "shall", "gonna", "hope", "hopefully", "wish"]}}],
        [{"LOWER": "going"}, {"LOWER": "to"}],
        [{"LOWER": "let"}, {"LOWER": "me"}],
        [{"LOWER": {"IN": ["whether", "once", "when"]}}, _SUBJECT],
        # a condition: "if I see the regression", "If writeback happens ..., we then hit the warning"
        [{"LOWER": "if"}],
        [{"LOWER": {"IN": ["try", "want", "hope", "plan", "planning"]}}, {"LOWER": "to"},
         {"LOWER": _REPRODUCE}],
        [{"LOWER": {"IN": ["need", "needs"]}}, {"LOWER": "to"}],
        [{"LOWER": {"IN": ["ensure", "make"]}}, {"LOWER": "sure", "OP": "?"}, _SUBJECT],
    ],
    # about the reporter's machine, not the writer's run: "because it can be reproduced easily in
    # your environment", "on your setup"
    "YOUR_SETUP": [
        [{"LOWER": {"IN": ["in", "on", "with"]}}, {"LOWER": "your"},
         {"LOWER": {"IN": ["environment", "setup", "machine", "machines", "box", "system", "systems", "side", "end",
                           "config", "configuration", "test", "tests", "platform", "hardware", "lab"]}}],
    ],
    # the writer speaking of their own attempt: a negation counts only with one of these, or in an
    # elliptic sentence ("Can't reproduce here."); "mappings smaller than 2MB do not trigger this
    # issue" explains code, it reports no run
    "FIRST_PERSON": [[{"LOWER": {"IN": ["i", "we", "my", "our", "me", "us", "here", "locally", "myself", "ourselves",
                                        "mine", "ours"]}}]],
    # a past sighting told as history: "The last time I see such problem is from David"
    "PAST": [[{"LOWER": {"IN": ["last", "previous"]}}, {"LOWER": "time"}]],
    # another problem than the one reported: "I could not reproduce the other warning"
    "OTHER_PROBLEM": [
        [{"LOWER": {"IN": ["other", "another", "different", "unrelated", "separate", "second"]}},
         {"LOWER": {"IN": ["warning", "warnings", "problem", "problems", "issue", "issues", "bug", "bugs", "crash",
                           "splat", "failure", "oops", "hang", "error"]}}],
    ],
    # "will" is a plan, except in "I can reproduce this at will"
    "WILL": [[{"LOWER": "will"}]],
    "AT_WILL": [[{"LOWER": "at"}, {"LOWER": "will"}]],
    "HEDGE": [
        [{"LOWER": {"IN": ["might", "may", "maybe", "perhaps", "possibly", "probably", "seems", "seem",
                           "think", "guess", "suspect", "guarantee", "guaranteed"]}}],
        [{"LOWER": "not"}, {"LOWER": "sure"}],
    ],
    # how code behaves, not what a run showed: "Normally we don't hit this path because ..."
    "GENERIC": [
        [{"LOWER": {"IN": ["normally", "usually", "generally", "typically"]}}],
        [{"LOWER": {"IN": ["hit", "hits", "trigger", "triggers", "triggering"]}},
         {"LOWER": {"IN": ["this", "that", "the", "any"]}, "OP": "?"},
         {"LOWER": {"IN": ["path", "code", "codepath", "branch", "case", "condition", "check", "limit", "limits",
                           "transaction", "assertion"]}}],
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
    # "I can confirm the procfs crash is fixed", "I confirmed your fix works": a fix confirmed
    "FIXED": [
        [{"LOWER": {"IN": ["fixed", "fixes", "resolved", "resolves", "solved", "solves", "cured", "restores",
                           "restored"]}}],
        # after a fix: "I can also confirm that it's working here!", "works for me now"
        [{"LOWER": {"IN": ["it", "'s", "is", "everything", "all"]}}, {"LOWER": {"IN": ["'s", "is", "now"]}, "OP": "?"},
         {"LOWER": {"IN": ["working", "works", "worked"]}},
         {"LOWER": {"IN": ["here", "now", "again", "fine", "well", "for", "perfectly", "great"]}}],
        [{"LOWER": {"IN": _PATCH_WORDS}}, {"OP": "{0,8}"},
         {"LOWER": {"IN": ["works", "worked", "helps", "helped", "resolve", "cures", "cure"]}}],
    ],
    # "confirm the issue occurred on and after 6.2": the problem itself confirmed, a fix aside
    "CONFIRM_ISSUE": [
        [{"LOWER": {"IN": ["confirm", "confirmed", "verified", "verify"]}}, {"LOWER": "that", "OP": "?"},
         {"LOWER": {"IN": ["the", "this", "it"]}, "OP": "?"}, {"LOWER": _NOUNS, "OP": "?"},
         {"LOWER": {"IN": ["occurs", "occurred", "happens", "happened", "exists", "existed", "persists", "persisted",
                           "remains", "shows", "showed", "appears", "appeared", "still"]}}],
    ],
    # a result on a patched kernel speaks of the patch: "applied this patch ... not able to reproduce",
    # "syzbot has tested the proposed patch and the reproducer did not trigger any issue"
    "PATCHED": [
        [{"LOWER": {"IN": ["applied", "applying", "apply", "adding", "added", "tested", "testing", "with", "after"]}},
         {"LOWER": {"IN": ["the", "this", "your", "that", "these", "those", "proposed", "a", "my", "his", "her",
                           "both", "all", "two", "new"]}, "OP": "{0,2}"},
         {"LOWER": {"IN": _PATCH_WORDS}}],
        [{"LOWER": {"IN": _PATCH_WORDS}}, {"LOWER": "applied"}],
        # the writer's own patch tested or offered: "my previous patch", "patches for you to try"
        [{"LOWER": "my"}, {"LOWER": {"IN": ["previous", "last", "new", "updated", "proposed", "test", "debug"]},
                           "OP": "?"}, {"LOWER": {"IN": _PATCH_WORDS}}],
        [{"LOWER": {"IN": _PATCH_WORDS}}, {"LOWER": "for"}, {"LOWER": "you"}, {"LOWER": "to"},
         {"LOWER": {"IN": ["try", "test"]}}],
    ],
    # "even with all the patches disabled", "without the patch": the kernel as reported
    "UNPATCHED": [
        [{"LOWER": {"IN": _PATCH_WORDS}}, {"LOWER": {"IN": ["disabled", "removed", "reverted", "dropped"]}}],
        [{"LOWER": "without"}, {"LOWER": {"IN": ["the", "this", "your", "any", "these"]}, "OP": "?"},
         {"LOWER": {"IN": _PATCH_WORDS}}],
    ],
    "REVERT": [[{"LOWER": {"IN": ["revert", "reverted", "reverting", "reverts", "revert-"]}}]],
}

_STANCE_LABELS = frozenset({"NOT_REPRODUCED", "REPRODUCED", "SEEN", "NOT_SEEN", "REPRODUCE_WORD", "SEE_IT",
                            "STAYED_FINE"})
_AFTERTHOUGHTS = frozenset({"FUTURE", "WILL", "HEDGE"})


def decide_sentence(labels: frozenset[str], question: bool, seeing_reproduces: bool = True) -> str:
    """The stance one sentence states, from the labels its matches carry.

    `seeing_reproduces` is true for replies: "I'm seeing the same regression" there reproduces
    the report, while in a report it is the report itself.
    """
    if question:
        return "none"  # "can you reproduce it?" asks, it does not state
    if "WILL" in labels and "AT_WILL" not in labels:
        labels = labels | {"FUTURE"}
    if "DATA_STABLE" in labels:
        labels = labels - {"STAYED_FINE"}  # steady numbers say nothing of a machine staying fine
    if "CONTRAST" in labels and "FUTURE" not in labels:
        return "reproduced"  # "not on ext4, but I can see it on tmpfs": seen where it was reported
    if labels & {"YOUR_SETUP", "OTHER_PROBLEM"}:
        # "it can be reproduced easily in your environment": the reporter's machine, not a run;
        # "I could not reproduce the other warning": a claim about another problem
        return "none"
    negated = ("NOT_REPRODUCED" in labels or {"TRIED", "REPRODUCE_WORD", "NO_SUCCESS"} <= labels
               or (bool(labels & {"NOT_SEEN", "STAYED_FINE"}) and bool(labels & {"RUN_CUE", "ATTEMPTED"})))
    if negated and not labels & {"FIRST_PERSON", "RUN_CUE", "ELLIPTIC"}:
        negated = False  # a negated verb with no writer in it: how code behaves, not a run
    if negated and not labels & {"FUTURE", "GENERIC"}:
        # "applied this patch ... could not reproduce it": the fix works, the report stands
        return "none" if "PATCHED" in labels and "UNPATCHED" not in labels else "not-reproduced"
    affirmed = "REPRODUCED" in labels or (seeing_reproduces and "SEEN" in labels and "READ_MAIL" not in labels)
    if not affirmed or "NOT_SEEN" in labels or negated:
        return "none"
    if labels & {"FUTURE", "HEDGE", "RELATIVE", "PAST"}:
        return "none"  # a plan, a guess, a description of a machine, an old sighting
    if "CONFIRM_ISSUE" in labels:
        return "reproduced"  # "confirm the issue occurred ..., and confirm the workaround works"
    if ("FIXED" in labels or ("PATCHED" in labels and "UNPATCHED" not in labels)) and "REVERT" not in labels:
        return "none"  # confirms a fix works; "reverting X fixes it" still confirms the regression
    return "reproduced"


def sentence_label_set(spans: tuple[Span, ...]) -> frozenset[str]:
    """A sentence's labels, where the order of its matches matters.

    A plan, hedge or wish after the result ("I can't reproduce with that, so I guess I'll start
    bisecting") does not undo it; one before it ("I'll see if I can reproduce it") does. A
    negation followed by "but" and a sighting ("it doesn't reproduce on ext4, but I can see it on
    tmpfs") is a CONTRAST: the writer saw it where it counts.
    """
    first = min((span.start for span in spans if span.label in _STANCE_LABELS), default=None)
    labels = {span.label for span in spans
              if span.label not in _AFTERTHOUGHTS or first is None or span.start <= first}
    negations = ("NOT_REPRODUCED", "NOT_SEEN", "STAYED_FINE")
    if labels.intersection(negations):
        negation = min(span.start for span in spans if span.label in negations)
        contrast = [span.start for span in spans if span.label == "BUT" and span.start > negation]
        if contrast and any(span.label in ("SEE_IT", "REPRODUCED", "SEEN") and span.start > contrast[0]
                            for span in spans):
            labels.add("CONTRAST")
    return frozenset(labels)


STANCE_READING = Reading("stance", PATTERNS)


# a sentence whose subject is left out, the writer's: "Can't reproduce here.", "Unable to trigger it."
_ELLIPTIC = re.compile(r"\s*(?:(?:also|still|but|and|so|sadly|unfortunately|nope|no)[,.!]?\s+)*"
                       r"(?:can'?t|can’t|cannot|could\s?n[o'’]t|not|unable|failed|didn'?t|didn’t|did not|never|"
                       r"no (?:luck|regression|difference)|tried)\b", re.IGNORECASE)


# a negation after a reproduction that narrows where it shows: "But not reproduced on WSL"
_RESTRICTION = re.compile(r"\s*(?:but|however|though|although)\b[,]?\s+(?:it\s+)?(?:is\s+|was\s+|does\s+|did\s+)?"
                          r"(?:not|n't)\b[^.]{0,40}?\b(?:on|with|in|under)\b", re.IGNORECASE)


def stance_of_sentences(rough: tuple[str, ...], in_reply: bool) -> Stance:
    """What spaCy reads in rough sentences: the stance the sentences that decide agree on.

    "I'm still trying to reproduce it ... I'm not seeing the problem": a writer who said they
    are trying or ran something earlier in the message is reporting their own run when they say
    they do not see it in a later sentence. One who said they tested or applied a patch is
    reporting on the patched kernel in the sentences after it. The first deciding sentence is
    the evidence; a later sentence deciding the other way is conflicting evidence, and the
    stance abstains to `none` (with both sentences kept as the evidence).
    """
    attempted = patched = False
    decided: Stance | None = None
    for text, spans in sentence_spans(rough, STANCE_READING):
        labels = sentence_label_set(spans)
        if _ELLIPTIC.match(text):
            labels = labels | {"ELLIPTIC"}
        question = text.rstrip().endswith("?")
        if attempted and "NOT_SEEN" in labels and not question:
            labels = labels | {"ATTEMPTED"}
        if patched and "UNPATCHED" not in labels:
            labels = labels | {"PATCHED"}  # "the same testing as my previous patch. I have not hit any oopses."
        stance = decide_sentence(labels, question, seeing_reproduces=in_reply)
        if stance != "none":
            if decided is None:
                decided = Stance(stance, text.strip())
            elif decided.stance != stance:
                if decided.stance == "reproduced" and _RESTRICTION.match(text):
                    continue  # "reproduced on X86. But not reproduced on WSL": where, not whether
                return Stance("none", f"conflicting: {decided.evidence} / {text.strip()}")
        attempted = attempted or "RUN_CUE" in labels or {"TRIED", "REPRODUCE_WORD"} <= labels
        patched = patched or ("PATCHED" in labels and "UNPATCHED" not in labels)
    return decided or Stance("none", None)


def read_stance(own_text: str, *, in_reply: bool = True) -> Stance:
    """The stance of a writer's own (unquoted) text and the sentence that decided it."""
    rough = rough_sentences(own_text, STANCE_GATE)
    return stance_of_sentences(rough, in_reply) if rough else Stance("none", None)
