"""Parse stage: commit references in prose, trailers and bisect output, with their roles."""
from __future__ import annotations

import bisect
import re

from triagebot.parse.limits import MAX_COMMITS
from triagebot.records.report import Commit
from triagebot.untrusted.visible import without_format_characters

_URL = re.compile(r"\b(?:https?|git)://\S+")
_URL_COMMIT = re.compile(r"(?:[?&;]id=|/commit/|/commits?/)([0-9a-f]{12,40})\b")
# <sha> ("subject") or commit <sha> ("subject") or <sha> ('subject')
_SHA_WITH_SUBJECT = re.compile(r"(?<![\w./=@+-])([0-9a-f]{7,40})\s*\((?:\"|“)(.+?)(?:\"|”)\)")
# A hash may end a sentence ("… and 9f8e7d6c5b4a."), not run on into a name ("abc123def456.c").
_COMMIT_WORD = re.compile(r"\bcommit:?\s+([0-9a-f]{7,40})\b(?![\w-]|\.\w)", re.IGNORECASE)
_BARE_SHA = re.compile(r"(?<![\w./=@+:-])([0-9a-f]{12,40})(?![\w@/-]|\.\w)")
_FIXES = re.compile(r"^[ \t]*Fixes:\s*([0-9a-f]{7,40})\b(?:\s*\((?:\"|“)(.+?)(?:\"|”)\))?", re.MULTILINE)
_FIRST_BAD = re.compile(r"\b([0-9a-f]{12,40}) is the first bad commit")
_BISECT_FIRST_BAD = re.compile(r"first bad commit:?\s*\[?([0-9a-f]{7,40})\]?\s*(.*)$",
                               re.IGNORECASE | re.MULTILINE)
# `#regzbot introduced: <sha>` and the tracker's `#regzbot ^introduced <sha>` (the parent's culprit)
_REGZBOT_INTRODUCED = re.compile(r"^#regzbot\s+\^?introduced:?\s*([0-9a-f]{7,40})\b", re.MULTILINE)
_CULPRIT_CONTEXT = re.compile(
    r"introduc|bisect|first bad|caused by|culprit|regress(?:ed|ion) (?:by|from|due to)|c[oa]mes? from|"
    r"associated with|offending|\bcauses\b|"
    r"tracked (?:it |this |the \w+ )?down|narrowed (?:it )?down"
    r"|the one that|points? to|blame|root cause",
    re.IGNORECASE,
)
# The same, each position rejected by its first letter: every alternative above starts with one
# of these (tests/test_parse_speed_gates.py checks), and the scan of a text costs half.
CULPRIT_CONTEXT_FIRST_LETTERS = "ibfcraotnp"
_CULPRIT_CONTEXT_GATED = re.compile(f"(?=[{CULPRIT_CONTEXT_FIRST_LETTERS}])(?:{_CULPRIT_CONTEXT.pattern})",
                                    _CULPRIT_CONTEXT.flags)
# Issue 24's forms in people's reports: "started after commit X", "happens after commit X",
# "reverting X restores performance" (not "reverting X changed nothing"), "pinpoint this commit …
# X", "X drops the IOPS score". One pass of its own, each position rejected by its first letter.
_CULPRIT_CONTEXT_MORE = re.compile(
    r"\b(?=[sShHpPrRdD])(?:start(?:s|ed)?\s+(?:to\s+\w+\s+)?(?:after|with)\b"
    r"|happen(?:s|ed|ing)?\s+(?:only\s+)?(?:after|since)\b|since\s+commit\b|pinpoint"
    r"|revert\w*(?:[^.\n]|\.\d){0,80}?\b(?:restor\w*|fix\w*|solv\w*|recover\w*|goes away|gets? back|brings? back)"
    r"|drops?\s+(?:the\s+|our\s+)?(?:\w+\s+){0,2}(?:score|throughput|performance|iops|bandwidth))",
    re.IGNORECASE,
)
# "-31.8% … with the commit X": a figure then "with the commit", looked for only where the text
# says "with the commit" (a scan from every digit of every message would cost more than the rest)
_FIGURE_WITH_COMMIT = re.compile(r"\d\s?%[^.\n]{0,60}?\bwith\s+(?:the\s+|this\s+)?commit\b", re.IGNORECASE)
_WITH_COMMIT_LITERALS = ("with the commit", "with commit", "with this commit")
# Lines whose hex is not commits: diffs, register dumps, stack traces, addresses.
_NOISE_LINE = re.compile(
    r"^(?:index [0-9a-f]+\.\.|From [0-9a-f]{40} |[+-]{3} |@@ |\s*(?:RIP|RSP|RAX|RBX|RCX|RDX|RSI|RDI|"
    r"RBP|R\d+|FS|CS|CR\d|DR\d|Code):|.*\+0x[0-9a-f]+/0x[0-9a-f]+)"
)
# cheap gate before the noise regex: most lines start with none of these
_NOISE_PREFIX = re.compile(r"^(?:index |From |[+-]{3} |@@ |\s*[A-Z]{2,3}\d?:|\s*R\d+:|.*\+0x)")
_HAS_DIGIT_AND_LETTER = re.compile(r"(?=.*[0-9])(?=.*[a-f])")


_LOOK_BACK = 400  # characters searched back for the start of a hash's line


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Bounds of the sentence holding text[start:end], at most about 300 characters either side.

    Kernel style sets a commit reference on a line of its own between blank lines ("the first
    bad commit is\n\n  abc123 ("subject")\n\n"): such a line belongs to the sentence before it.
    """
    # Looked for within a window first: from far along a long line, a search back to its start
    # for every hash on it was quadratic.
    window = max(0, start - _LOOK_BACK)
    line_start = text.rfind("\n", window, start) + 1
    if line_start == 0 and window > 0:  # the line starts further back
        alone = not text[window:start].strip()
        if alone:  # a long run of blanks before the hash: see what is before it on the line
            line_start = text.rfind("\n", 0, window) + 1
            alone = not text[line_start:window].strip()
    else:
        alone = not text[line_start:start].strip()
    if alone:
        start = line_start
        while start > 0 and text[start - 1] in " \t\n":
            start -= 1
        line_end = text.find("\n", end)
        end = len(text) if line_end == -1 else line_end
    window_start = max(0, start - 300)
    window_end = min(len(text), end + 300)
    left = max(text.rfind(". ", window_start, start), text.rfind(".\n", window_start, start),
               text.rfind("\n\n", window_start, start))
    left = window_start if left == -1 else left + 1
    right_candidates = [i for i in (text.find(". ", end, window_end), text.find(".\n", end, window_end),
                                    text.find("\n\n", end, window_end)) if i != -1]
    right = min(right_candidates) if right_candidates else window_end
    return left, right


def _plausible(sha: str) -> bool:
    # A run of hex digits only (a date, a count) or letters only (a word) is not a commit,
    # nor is a kernel address (ffff888…) or a zero-padded value from a register dump.
    if sha.startswith(("ffff", "0000")):
        return False
    return bool(_HAS_DIGIT_AND_LETTER.match(sha))


def find_commits(text: str, *, subject: str = "") -> list[Commit]:
    """Commits referenced in a human-written text, with roles (culprit / fix / mentioned)."""
    found: dict[str, Commit] = {}
    order: list[str] = []
    # read as a terminal shows it: `2edf06a50f<U+200B>5bbe…` is one SHA, not a prefix and another
    text, subject = without_format_characters(text)[0], without_format_characters(subject or "")[0]
    if not _ANY_HEX_RUN.search(text) and not _ANY_HEX_RUN.search(subject or ""):
        return []  # no run of 7 hex digits: no commit can be named

    def add(sha: str, subject_text: str | None, role: str) -> None:
        sha = sha.lower()
        if not _plausible(sha):
            return
        for known in order:
            if known.startswith(sha) or sha.startswith(known):
                existing = found[known]
                # a Fixes: trailer names a fix target; prose near it must not turn it into a culprit
                if existing.role == "fix":
                    better_role = "fix"
                else:
                    better_role = role if _ROLE_RANK[role] > _ROLE_RANK[existing.role] else existing.role
                longer = sha if len(sha) > len(known) else known
                merged = Commit(longer, existing.subject or subject_text, better_role)
                del found[known]
                order[order.index(known)] = longer
                found[longer] = merged
                return
        if len(order) >= MAX_COMMITS:
            return  # the loop above is over every kept commit: a flood of hashes would be quadratic
        found[sha] = Commit(sha, subject_text, role)
        order.append(sha)

    clean_lines = [line for line in text.split("\n")
                   if not (_NOISE_PREFIX.match(line) and _NOISE_LINE.match(line))]
    clean = "\n".join(clean_lines)
    lowered = clean.lower()
    # Each pattern runs only when the literal it needs is present: most texts hold none.
    if "id=" in clean or "/commit" in clean:
        for match in _URL_COMMIT.finditer(clean):
            add(match.group(1), None, "mentioned")
    no_urls = _URL.sub(" ", clean) if "://" in clean else clean
    if "Fixes:" in no_urls:
        for match in _FIXES.finditer(no_urls):
            add(match.group(1), match.group(2), "fix")
    if "#regzbot" in no_urls:
        for match in _REGZBOT_INTRODUCED.finditer(no_urls):
            add(match.group(1), None, "culprit")
    if "first bad" in lowered:
        for match in _FIRST_BAD.finditer(no_urls):
            add(match.group(1), None, "culprit")
        for match in _BISECT_FIRST_BAD.finditer(no_urls):
            add(match.group(1), match.group(2).strip() or None, "culprit")
    subject_culprit = re.search(r"\b([0-9a-f]{8,40})\b", subject or "")
    if subject_culprit and _SUBJECT_BLAME.search(subject):
        add(subject_culprit.group(1), None, "culprit")
    # Once the message names its culprit explicitly (subject, bisect, regzbot), other hashes
    # near words like "regression" are context, not further culprits; otherwise only the
    # first such hash is taken as the culprit.
    explicit_culprit = any(commit.role == "culprit" for commit in found.values())
    # Where culprit words stand, found once per text (when a hash appears) rather than per hash.
    context_positions: list[int] | None = None
    culprit_sentence: tuple[int, int] | None = None  # where the context named the culprit
    patterns = [_BARE_SHA]
    if "commit" in lowered:
        patterns.insert(0, _COMMIT_WORD)
    if "(\"" in no_urls or "(“" in no_urls:
        patterns.insert(0, _SHA_WITH_SUBJECT)
    # In the order written, whatever the form: the first hash the text blames is the culprit. At
    # one place the most telling form wins (a hash with its subject, then "commit X", then bare).
    matches: dict[int, re.Match[str]] = {}
    for pattern in patterns:
        for match in pattern.finditer(no_urls):
            matches.setdefault(match.start(1), match)
    for position in sorted(matches):
        match = matches[position]
        sha = match.group(1)
        subject_text = match.group(2) if match.re is _SHA_WITH_SUBJECT else None
        left, right = _sentence_bounds(no_urls, match.start(), match.end())
        if context_positions is None:
            context_positions = [found.start() for found in _CULPRIT_CONTEXT_GATED.finditer(no_urls)]
            more = [found.start() for found in _CULPRIT_CONTEXT_MORE.finditer(no_urls)]
            if any(literal in lowered for literal in _WITH_COMMIT_LITERALS):
                more += [found.start() for found in _FIGURE_WITH_COMMIT.finditer(no_urls)]
            if more:
                context_positions = sorted(context_positions + more)
        index = bisect.bisect_left(context_positions, left)
        # "reverting X fixes it" blames X too, so a revert does not cancel the culprit role
        in_context = index < len(context_positions) and context_positions[index] < right
        culprit = in_context and not explicit_culprit
        if culprit:
            explicit_culprit = True
            culprit_sentence = (left, right)
        elif in_context and culprit_sentence == (left, right) and _PLURAL_CULPRIT.search(no_urls, left, right):
            culprit = True  # "the culprit are commits X (or one of it) and Y": each one named
        add(sha, subject_text, "culprit" if culprit else "mentioned")
    return [found[sha] for sha in order]


_ANY_HEX_RUN = re.compile(r"[0-9a-f]{7}")
# A subject that blames the commit it names: "6.15-rc1/regression/bisected - commit X introduced …",
# "Performance degradation due to commit X", "commit X leads to cpu stall", "REGRESSION: X: …".
_SUBJECT_BLAME = re.compile(r"regression|bisected|introduced|degradation|due to|caused by|leads? to",
                            re.IGNORECASE)
# A sentence that blames more than one commit at once.
_PLURAL_CULPRIT = re.compile(r"\bculprits\b|\bculprit (?:are|were)\b|\bcommits\b.{0,80}"
                             r"(?:introduc|caus|culprit|bisect)|(?:introduc|caus)\w* by commits\b",
                             re.IGNORECASE | re.DOTALL)
_ROLE_RANK = {"mentioned": 0, "base": 1, "fix": 2, "culprit": 3}
