"""The named features bench/stance_learn.py's linear stance model reads from one reply (pure).

A reply's features are strings, each a fact about the writer's own (unquoted) text, the thread's
subject and what the stance rules and numbers already said:

- `w:<word>` / `b:<word> <word>`: a word and a pair of adjacent words of the writer's own text,
  lowercased, digits folded to `0` runs (`5.10` -> `0.0`). A word after a negator ("not",
  "can't", "no", "never", "unable", "without", ...) up to the end of its clause is `not_<word>`,
  so "can't reproduce" and "can reproduce" differ. A word in a sentence whose subject is the
  writer ("I", "we", "my", "our", "me", "us") is also `fw:<word>`: "I reproduced" and "the
  reporter reproduced" differ.
- `rule:<stance>` (and `rule:conflicting`): what parse/stance.py's rules decided;
  `numbers:<outcome>`: what the writer's own before/after numbers gave (parse/numbers.py).
- `subject:report` / `subject:problem` / `subject:patch` / `subject:other`: the thread's kind,
  read from its subject (classify.is_report_thread; a problem word as round three's gate read it).
- `kernel-numbers:1|2|3+`: lines of the writer's own text naming a kernel version (`5.10`,
  `v6.1-rc3`, `6.6.52`) with another number on them (a per-kernel table or timing);
  `own:short|medium|long`: the own text's length.

Only the first MAX_FEATURE_CHARS characters of the own text are read: a reply's stance is in its
prose, and a pasted log after it would only cost time.
"""
from __future__ import annotations

import itertools
import re

from triagebot.parse.classify import is_report_thread

MAX_FEATURE_CHARS = 6000
_PATCH_SUBJECT = re.compile(r"^\s*(?:(?:re|aw|sv|fwd?)\s*:\s*)*\[[^\]]*\b(?:PATCH|RFC)\b", re.IGNORECASE)
_PROBLEM_SUBJECT = re.compile(r"\b(?:corrupt\w*|fail(?:s|ed|ure|ures|ing)?|errors?|oops\w*|panic\w*|stalls?|"
                              r"lockups?|KASAN|broken|breaks|bugs?|doesn'?t boot|not boot\w*)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z][a-z0-9_'’-]*|\d+(?:\.\d+)*|[.!?;:]")
_CLAUSE_END = frozenset(".!?;:")
_NEGATORS = frozenset({"not", "no", "never", "cannot", "can't", "couldn't", "didn't", "don't", "doesn't",
                       "haven't", "hasn't", "wasn't", "weren't", "isn't", "won't", "wouldn't", "unable",
                       "without", "nothing", "nor", "neither", "none", "hadn't", "aren't", "shouldn't"})
_WRITER = frozenset({"i", "we", "my", "our", "me", "us", "i'm", "i've", "we've", "we're", "i'd", "i'll"})
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_KERNEL_VERSION = re.compile(r"\b[vV]?[2-7]\.\d{1,2}(?:\.\d{1,3})?(?:-rc\d+)?\b")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


# Word classes a stance sentence is made of; a sentence's feature `c:<A>+<B>` says it holds words
# of both classes (every set of one to three of its classes): "I" + a seeing verb + a negator
# is `c:neg+repro+writer` on any list, whatever the verb or the problem is called there.
_CONCEPTS: dict[str, tuple[str, ...]] = {
    "repro": ("reproduc", "repro", "replicat", "trigger", "hit", "hitting", "see", "seeing", "saw", "seen",
              "observ", "notic", "experienc", "encounter", "happen", "occur", "show"),
    "same": ("same", "similar", "also", "too", "either", "likewise", "identical"),
    "still": ("still", "persist", "again", "remain"),
    "fix": ("patch", "fix", "applied", "apply", "revert", "series", "workaround", "commit"),
    "test": ("test", "tried", "try", "trying", "ran", "run", "boot", "build", "compil", "stress", "overnight",
             "loop", "iteration", "hour", "day"),
    "bisect": ("bisect",),
    "luck": ("luck",),
    "works": ("works", "working", "worked", "fine", "ok", "okay", "good", "fixed", "resolved", "gone", "solve",
              "correct", "properly", "normal"),
    "problem": ("issue", "problem", "bug", "regression", "crash", "hang", "panic", "oops", "warning", "error",
                "fail", "slow", "lockup", "stall", "corrupt", "drop", "degrad", "bad", "broken"),
    "cond": ("if", "unless", "whether", "when", "could", "would", "maybe", "might", "perhaps", "think"),
    "future": ("will", "going", "plan", "later", "tomorrow", "let", "i'll", "we'll", "need", "should"),
    "you": ("you", "your", "you're", "you've"),
    "number": ("0",),
}
_CONCEPT_OF: dict[str, str] = {}


def _concept(word: str) -> str | None:
    known = _CONCEPT_OF.get(word)
    if known is not None or word in _CONCEPT_OF:
        return known
    found = None
    bare = word[4:] if word.startswith("not_") else word
    for name, stems in _CONCEPTS.items():
        if any(bare.startswith(stem) if len(stem) > 3 else bare == stem for stem in stems):
            found = name
            break
    if len(_CONCEPT_OF) < 50000:
        _CONCEPT_OF[word] = found  # type: ignore[assignment]
    return found


def _tokens(sentence: str) -> list[str]:
    words = _TOKEN.findall(sentence.lower().replace("’", "'"))
    return [re.sub(r"\d+", "0", word) if word[0].isdigit() else word for word in words]


def text_features(own: str, subject: str) -> frozenset[str]:
    """The features of a writer's own text and its thread's subject (the rules' part is added by
    `decision_features`)."""
    text = own[:MAX_FEATURE_CHARS]
    found: set[str] = set()
    for sentence in _SENTENCE.split(text):
        words = _tokens(sentence)
        if not words:
            continue
        writer = any(word in _WRITER for word in words)
        classes = {name for name in map(_concept, words) if name}
        if writer:
            classes.add("writer")
        if any(word in _NEGATORS or word.endswith("n't") for word in words):
            classes.add("neg")
        if sentence.rstrip().endswith("?"):
            classes.add("question")
        ordered = sorted(classes)
        for size in (1, 2, 3):
            for group in itertools.combinations(ordered, size):
                found.add("c:" + "+".join(group))
        negated = False
        previous = "<s>"
        for word in words:
            if word in _CLAUSE_END:
                negated = False
                previous = "<s>"
                continue
            shown = f"not_{word}" if negated and word not in _NEGATORS else word
            found.add(f"w:{shown}")
            found.add(f"b:{previous} {shown}")
            if writer:
                found.add(f"fw:{shown}")
            if word in _NEGATORS or word.endswith("n't"):
                negated = True
            previous = shown
    kernel_lines = sum(1 for line in text.split("\n")
                       if _KERNEL_VERSION.search(line) and len(_NUMBER.findall(line)) >= 2)
    if kernel_lines:
        found.add(f"kernel-numbers:{min(kernel_lines, 3)}{'+' if kernel_lines >= 3 else ''}")
    found.add("own:short" if len(own) < 300 else "own:medium" if len(own) < 2000 else "own:long")
    found.add(f"subject:{subject_kind(subject)}")
    return frozenset(found)


def subject_kind(subject: str) -> str:
    if _PATCH_SUBJECT.match(subject):
        return "patch"
    if is_report_thread(subject):
        return "report"
    if _PROBLEM_SUBJECT.search(subject):
        return "problem"
    return "other"


def decision_features(text: frozenset[str], rule_stance: str, rule_evidence: str | None,
                      numbers_outcome: str | None) -> frozenset[str]:
    """The text's features with what the rules and the writer's numbers decided."""
    extra = {f"rule:{rule_stance}"}
    if rule_stance == "none" and (rule_evidence or "").startswith("conflicting"):
        extra.add("rule:conflicting")
    if numbers_outcome:
        extra.add(f"numbers:{numbers_outcome}")
    return text | extra
