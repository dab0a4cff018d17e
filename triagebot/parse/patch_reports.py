"""Parse stage: a regression measured against a patch series under review (issue 38). Pure.

Most people's performance reports are replies in a patch's thread: "with this patch write drops
26%", a table of `w/o series` against `w/ series`. They are a report of their own kind,
`patch-regression`, whose suspect is the series in the thread (records.PatchSeries) and whose
rerun is the series' base against base+series. The robot's pre-merge reports (its regression
report posted as a reply to the patch it tested) are of the same kind.

What makes a person's reply one (`people_slowdown`): the thread is a series' (a `[PATCH …]`,
`[RFC …]` or `[RFT …]` subject that is no fix of a regression), and one sentence of the writer's
own text states a slowdown in words the rules know (SLOWDOWN, each form from several development
messages), not hedged or asked ("would be slower", "why does … report a regression") and not
beside a gain in the same sentence. The reading is sure (taken on) when a figure stands in or
around that sentence and the writer ties it to the series in words (ATTRIBUTION); otherwise it
is a `patch-regression` the daemon is unsure of, listed in the day's digest (certainty.py).

Each form names the development messages it was written from (`dev7:N` is line N of
fixtures/labels/dev7/reports.jsonl).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from triagebot.records.report import PatchSeries

# Reply prefixes, as classify.py reads them.
_REPLY_PREFIXES = re.compile(r"^(?:\s*(?:re|aw|sv|antw)\s*+(?:\[\d+\])?\s*+:)+", re.IGNORECASE)
# A series' subject, after any list or tree tags a list puts first ("[f2fs-dev] [PATCH …]",
# "[Linux-cachefs] [PATCH …]": thousands a year on the lists that tag subjects): the tag that
# names a patch, an RFC or a request for testing ("[PATCH v2 2/2]", "[RFC 0/3]", "[RFC PATCH 0/6
# v2]", "[PATCH RFT]", "[PATCHv4 3/3]", "[PATCH bpf-next v2]").
_SERIES_TAG = re.compile(r"^(?P<before>(?:\s*\[[^\]]*\])*?)\s*\[(?P<tag>[^\]]*?\b(?:PATCH|RFC|RFT)(?:v\d+)?\b[^\]]*)\]"
                         r"\s*(?P<title>.*)$", re.IGNORECASE | re.DOTALL)
_VERSION = re.compile(r"^(?:PATCH)?v(\d{1,3})$", re.IGNORECASE)
_PART = re.compile(r"^\d{1,4}/\d{1,4}$")
_NOT_TREE = re.compile(r"^(?:PATCH|RFC|RFT|RESEND|PATCHv\d+|v\d+|\d{1,4}/\d{1,4}|-?v?\d+)$", re.IGNORECASE)
# A series that fixes a slowdown: a slowdown told in its thread is the regression it fixes, not
# the series' own ("[PATCH 0/2] ext4: Fix performance regression with mballoc", dev7:27-29; a
# reply there that still sees it is a reproduction, read by stance.py).
_FIX_SERIES = re.compile(r"\b(?:fix|fixes|fixing|restore|recover|revert|avoid|reduce)\b[^\n]{0,60}?\b(?:regress\w*|"
                         r"slow\w*|perf\w*|latency|throughput)", re.IGNORECASE)
# A thread that is a report's, whatever tag it wears: "[RFC] performance regression with …" (dev7:25).
# "slow" alone is code's vocabulary in a patch title ("fast and slow paths", dev7:9).
_REPORT_TITLE = re.compile(r"\bregress(?:ion|ions|ed)\b|\bslow(?:down|downs|er)\b", re.IGNORECASE)


@dataclass(frozen=True)
class SeriesSubject:
    subject: str  # "[PATCH v2 2/2] kunit: enable …", reply prefixes and list tags dropped
    version: int | None
    tree: str | None


def series_subject(subject: str) -> SeriesSubject | None:
    """The series a reply's subject names, or None when the thread is no series' under review."""
    title = _REPLY_PREFIXES.sub("", subject, count=1).strip()
    match = _SERIES_TAG.match(title)
    if match is None:
        return None
    rest = match.group("title").strip()
    if _FIX_SERIES.search(rest) or _REPORT_TITLE.search(rest):
        return None
    tag = " ".join(match.group("tag").split())
    version = None
    tree_words = []
    for word in tag.split():
        found = _VERSION.match(word)
        if found and version is None:
            version = int(found.group(1))
        elif not _NOT_TREE.match(word) and not _PART.match(word):
            tree_words.append(word)
    return SeriesSubject(f"[{tag}] {rest}".strip(), version, " ".join(tree_words) or None)


# --- a person's slowdown ---------------------------------------------------------------------------

# The writer states a slowdown. Forms, each seen in several development messages (each alternative
# starts with one of SLOWDOWN_FIRST, which the scan checks before trying them: a third of its cost):
SLOWDOWN_FIRST = "prtbishlwemndf0-9"
SLOWDOWN = re.compile(
    rf"(?=[{SLOWDOWN_FIRST}])(?:"
    # "performance regresses by about 20%" (dev7:2), "performance regression" (dev7:22, dev7:23)
    r"\bperformance\s+regress(?:es|ed|ion)\b|\bregress(?:es|ed)\s+by\b"
    # "perf drop 26% 21% …" (dev7:11), "a performance degradation of ~2%" (dev7:6), "a performance
    # killer" (dev7:59), "speed degradation" (dev7:59), "throughput drop" (dev5 reports)
    r"|\b(?:perf(?:ormance)?|throughput|bandwidth|IOPS|speed)\s+(?:drop|degradation|regression|loss|hit|penalty|killer)s?\b"
    # "~15% perf degrade with this patchset applied" (dev8:64), "performance degrades" (dev:5, dev6:14)
    r"|\bperf(?:ormance)?\s+degrade[sd]?\b"
    # "50% worse boot times (20 -> 30s)" (dev8:3), "about 30% worse" (dev6:11), "around 20% less IOPS"
    # (corpus human_iomap-dio-4k-writes-potential-regression)
    r"|\b\d+(?:\.\d+)?\s?%\s+(?:worse\b|less\s+(?:\w+\s+)?(?:throughput|bandwidth|IOPS|performance|speed)\b)"
    # "a significant impact on performance", "a consistent 40% impact on performance" (dev7:1)
    r"|\b(?:impact|hit)\s+on\s+(?:the\s+)?performance\b"
    # "noticeably slower" (dev7:21), "a real slowdown" (dev7:9), "the slowdown of my patch" (dev7:54),
    # "LZ4 decompression is slower" (dev7:35), "3-4 times slower" (dev7:59)
    r"|\bslow(?:er|downs?)\b|\bslow(?:s|ed)?\s+(?:things\s+|it\s+)?down\b"
    # "a slight lower performance" (dev7:19), "much lower performance" (dev7:24's near miss)
    r"|\b(?:lower|worse|poor|poorer)\s+(?:performance|throughput|bandwidth|IOPS)\b"
    # "no improvement, or even worse" (dev7:26), "IMX6q performs worse" (dev7:14)
    r"|\b(?:performs?|performed|runs?|ran|even|much)\s+(?:much\s+|even\s+|noticeably\s+|significantly\s+)?worse\b"
    # "is not as good as with mb_optimize_scan=0 (~1 minute)" (dev7:27)
    r"|\bnot\s+as\s+(?:good|fast)\s+as\b"
    # "boot time increases by only 4%" (dev7:12), "latency went up"
    r"|\b(?:boot[ -]?time|run[ -]?time|latency|duration|elapsed\s+time)\s+(?:increase[sd]?|went\s+up|grows?|grew)\b"
    # "write drops 26% and read 14%" (the RFT reply), "dropping from 13.070 to 10.550 M/s"
    # (dev7:13); not "drops 0.000 ± 0.000M/s", a column of program output (dev7:13)
    r"|\b(?:drops?|dropped|dropping|fell|falls)\s+(?:by\s+)?(?:about\s+|~\s*)?\d+(?:\.\d+)?\s?%"
    r"|\b(?:drops?|dropped|dropping|fell|falls)\s+from\s+\S+\s+to\b"
    # "a 10% regression", "~2% drop", "40% slower" are read by the forms above and the figure below
    r"|\b\d+(?:\.\d+)?\s?%\s+(?:drop|regression|slowdown|loss|penalty|degradation)\b)",
    re.IGNORECASE)
# The statement is no claim when hedged or denied right before the slowdown: "would be much
# slower" (ext4 2024), "haven't noticed any significant degradation" (dev7:17, dev7:56), "To
# prevent regressions" (dev7:41), "no obvious degradation" (ext4 2024); nor when it asks: "wondering
# why does will it scale report a 1.5% regression" (dev7:16), "why x86 has … but … much worse"
# (dev7:40).
# Nor is the slowdown a change removes ("This fixes a 20% throughput regression", "to address the
# slowdown"), nor a comparative naming a kind of thing ("the slower link speeds", "the slower path").
_HEDGE = re.compile(r"\b(?:no|not|never|without|would|could|might|may|should|if|prevent\w*|avoid\w*|expect\w*|"
                    r"worr\w+|concern\w*|risk\w*|fear\w*|fix\w*|address\w*|resolv\w*|solv\w*)\b|n't\b|'d\b",
                    re.IGNORECASE)
# A comparative after an article or a preposition names a kind of thing: "the slower link speeds"
# (linux-pci 2023), "at slower baudrates" (dev9:42), "on slower machines".
_ATTRIBUTIVE = re.compile(r"\b(?:the|at|for|on|with|in|of)\s+$", re.IGNORECASE)
# A sentence that states a slowdown and denies one ("So it's slower, but that's not 25% slower",
# dev9:41, a variant's cost argued small) is no sure claim.
_DENIAL = re.compile(r"\b(?:no|not|never)\b|n't\b", re.IGNORECASE)
_COMPARATIVE = ("slower", "worse", "lower", "poorer")
# The robot's own sentence retold or pasted by a person is the robot's report, not a measurement of
# the writer's (tests/test_lkp_patch_replies.py); the robot's report is its own record.
_ROBOT_WORDS = re.compile(r"kernel test robot noticed|\bwe noticed an? [-+]?\d", re.IGNORECASE)
_QUESTION = re.compile(r"\b(?:why|wonder\w*|whether)\b", re.IGNORECASE)
# A slowdown the writer bounds as negligible is no report: "a performance degradation of less than
# 0.6%" (dev8:42, a reviewer finding no change), "<1% worse" (dev8:31), "(<1% slower)" (linux-ext4
# 2024, the multigrain timestamps cover letters v9 and v10).
_BOUND = r"(?:\bless\s+than|\bunder|\bbelow|<)\s*~?\s*\d+(?:\.\d+)?\s?%"
# The bound is the slowdown's own: next to its words ("<1% slower", "degradation of less than 0.6%"),
# not another quantity nearby ("with under 10% free space, writes are 30% slower").
_MINIMISED = re.compile(
    _BOUND + r"\s*(?:\w+\s+)?(?:slower|worse|regression|degradation|drop|slowdown|loss|overhead|lower|less)\b"
    r"|\b(?:degradation|regression|slowdown|drop|loss|hit|overhead|penalty|slower|worse)\s+(?:(?:of|by|is|was|at)\s+)?"
    + _BOUND, re.IGNORECASE)
MINIMISED_REACH = 25  # characters around the slowdown's words where its bound stands
# A table's column named for a gain ("| Improvement |", "| Speedup |") is a heading, not a claim of
# one: the tester's perf bench tables under "A 2% performance degradation was observed" (dev8:11,
# dev8:12, dev8:41; a mail client may wrap the heading to a line of its own) and a patch's IO500
# table (dev8:25).
_GAIN_COLUMN = re.compile(r"\|\s*(?:%[ \t]*)?(?:improvement|speed-?up|gain)s?[ \t]*(?=\|)", re.IGNORECASE)
HEDGE_REACH = 30  # characters before the slowdown's words a hedge governs
# A slowdown followed by a modal estimate is reckoned, not measured: "As for the performance hit,
# it should be similar to the default swiotlb" (dev12:2, the author's table beside it shows gains),
# "what kind of slowdown would be reasonable for my patch series" (dev12:73, a writer arguing the
# reviewer's 25% is too high), "the slower it could be to allocate smaller pages" (linuxppc-dev, a
# memory-hotplug RFC's review); a few words may stand between ("the performance hit of this series,
# it should be similar").
_ESTIMATE = re.compile(
    r"[\s,]*(?:[\w'-]+[\s,]+){0,4}?(?:should|would|could|might|may)\s+(?:be|stay|remain)\s+(?:\w+\s+){0,2}?"
    r"(?:similar|comparable|negligible|small\w*|minimal|reasonable|acceptable|fine|ok|okay|low\w*|tiny|marginal|"
    r"insignificant|noise|within|around|about|roughly|less|under|below|~|\d)", re.IGNORECASE)
ESTIMATE_REACH = 80  # characters after the slowdown's words where its estimate stands
# A gain denied is no hedge and no gain: "no improvement, or even worse" (dev7:26), "failed to see
# performance improvement" (dev7:19).
_NO_GAIN = re.compile(r"\b(?:no|not|n't|failed to (?:see|get|measure)|without)\s+(?:\w+\s+){0,2}?(?:improv\w*|gains?|"
                      r"speed-?ups?|better|faster)\b", re.IGNORECASE)
# A gain in the same sentence makes it a mixed claim ("q-locks gain ~3.5% … IMX6q performs worse",
# dev7:14): not read as a slowdown. A gain claimed elsewhere in the message leaves the slowdown
# read, but not tied to the series: "leading to faster read speeds … performs better … The poor
# throughput here" (dev7:51, an improvement series whose author explains the base's slowness).
_GAIN = re.compile(r"\b(?:improv\w*|faster|gains?|speed-?ups?|better|boosts?)\b", re.IGNORECASE)
# The writer ties the slowdown to the series: "tested the series" (dev7:1, dev7:27), "Before this
# patch" (dev7:2), "w/o series … w/ series" (dev7:11), "your patches … 5.1.0 (patched)" (dev7:19),
# "the routine from this patch" (dev7:21), "your branch" (dev7:26), "my patch" (dev7:54), "this
# commit" (dev7:35), "with your 20 patch … series", "Enzo's patches" (dev7:34). A qualifier only
# after this/your/my/a name: "the interconnect patches" is another series (dev7:24's near miss).
ATTRIBUTION = re.compile(
    r"\b(?:this|these|your|my|our|his|her|their|[A-Z][a-z]+'s)\s+(?:\w+[ -]){0,3}?(?:patch(?:es|set|series)?|series|"
    r"branch|changes?|commit|version|RFC|routine)\b"
    r"|\bthe\s+(?:whole\s+|full\s+|entire\s+)?(?:patch(?:es|set)?|series)\b"
    r"|\bw/o?\s+(?:the\s+)?(?:series|patch(?:es|set)?)\b|\(\s*(?:un)?patched\s*\)|\b(?:un)?patched\s+kernel\b"
    r"|\b(?:with|without|before|after)\s+(?:applying\s+)?(?:the\s+)?(?:patch(?:es|set)?|series)\b",
    re.IGNORECASE)
# A figure: a percentage or factor, a value of a unit, a duration, or a row of values per side
# ("w/ series 22 36 72", dev7:11; "| 5.1.0 (patched) | 40+ k | 10.2 Gbits/sec |", dev7:19).
FIGURE = re.compile(
    r"\d+(?:\.\d+)?\s?(?:%|x\b|×|times\b)|~\s?\d+(?:\.\d+)?\s?[a-zA-Z]"
    # a count with its scale before the unit, glued or not: "~120K IOPS" (dev6 replies 107), "840K
    # IOPS" (dev6:7), "12.2 k iops" (dev6:9), "3.0M IOPS" (the issue)
    r"|\d[\d,]*(?:\.\d+)?\s?(?:[KMGT]i?B(?:/s(?:ec)?)?\b|[kmg]b/s(?:ec)?\b|[kKMG]?\s?(?:IOPS|iops|IOPs)\b|"
    r"[kKM]?\s?ops(?:/s(?:ec)?)?\b|"
    r"[mun]s(?:ec)?\b|µs\b|s\b|secs?\b|seconds?\b|minutes?\b|mins?\b|hours?\b|[MG]bits?/s(?:ec)?|[MG]bps\b|"
    r"[KMG]/s\b|events/s|req/s|tps\b|fps\b)"
    r"|^[ \t|]*(?:w/o?\s+\w+|before|after|base|patched|unpatched|with\w*|without\w*)[ \t|:]+\d[\d.,]*\s+\d",
    re.IGNORECASE | re.MULTILINE)
REACH = 900  # characters around the statement where its figure may stand (a table above or below)
ATTRIBUTION_REACH = 400  # characters around it where the writer ties it to the series
# A slowdown the writer saw, in the first person: "We have seen a signifigant performance regression
# here" (dev7:23), "I got an email from 0day that this caused a performance regression" (dev7:22),
# "where we see a performance hit from this set" (linux-ext4 2024), "I see much lower performance"
# (dev7:24). With neither a figure nor a tie to the series, only such a sighting makes the reply a
# (doubtful) report: "that caused a performance regression" of an older version, "Spectre made it
# much worse" or "crawling performance regressions" in a discussion (linux-ext4 2024) do not.
_SIGHTING = re.compile(r"\b(?:I|we)\s+(?:have\s+|had\s+|'ve\s+)?(?:also\s+)?(?:see|saw|seen|seeing|noticed?|"
                       r"observed?|measured?|got|get|found|hit)\b", re.IGNORECASE)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n")  # where the writer's sentences part
MAX_OWN = 20000  # characters of the writer's own text read


MAX_NUMBERS = 12  # figures kept as written


@dataclass(frozen=True)
class Slowdown:
    statement: str  # the writer's sentence stating it, whitespace folded
    numbers: tuple[str, ...]  # the figures in it or around it, as written (nearest first)
    attributed: bool  # the writer ties it to the series in words, and claims no gain for it

    @property
    def figure(self) -> bool:
        return bool(self.numbers)


def _statements(own: str) -> list[tuple[int, str]]:
    """The writer's sentences with where each starts."""
    found, start = [], 0
    for match in SENTENCE.finditer(own):
        found.append((start, own[start:match.start()]))
        start = match.end()
    found.append((start, own[start:]))
    return found


def _numbers(own: str, at: int) -> tuple[str, ...]:
    """The figures within REACH of a statement starting at `at`, as written, nearest first."""
    start = max(0, at - REACH)
    found = [(abs(start + match.start() - at), " ".join(match.group(0).split()))
             for match in FIGURE.finditer(own[start:at + REACH])]
    return tuple(text for _, text in sorted(found)[:MAX_NUMBERS])


def _gains(own: str) -> bool:
    """Whether the writer claims a gain anywhere in their own text (a denied one is none)."""
    return bool(_GAIN.search(_NO_GAIN.sub(" ", _GAIN_COLUMN.sub("|", own))))


# What every SLOWDOWN form holds (lower case), as literals a scan finds fast: a text holding none of
# these states no slowdown, and the thousands of patch reviews of a list-year ("drop the lock",
# "fallback", printf's "%d") are not searched by the pattern for nothing. Each alternative of
# SLOWDOWN is one line here (tests/test_patch_regressions.py checks each form's example).
# Single words, never two: a line may break between any two words of the writer's.
_ANY = ("regress", "slower", "slowdown", "slows", "slowed", "worse", "poor")
_BOTH = (
    (("perf", "throughput", "bandwidth", "iops", "speed"), ("drop", "degrad", "loss", "hit", "penalt", "killer")),
    (("impact", "hit"), ("perf",)),
    (("not",), ("good", "fast")),
    (("lower",), ("perf", "throughput", "bandwidth", "iops")),
    (("time", "latency", "duration"), ("increase", "went", "grow", "grew")),
    (("drop", "fell", "fall"), ("%", "from")),
    (("%",), ("drop", "regression", "slowdown", "loss", "penalty", "degradation", "less")),
)


def may_state_slowdown(lower: str) -> bool:
    """Whether a text (lower case) holds what some SLOWDOWN form needs."""
    return any(word in lower for word in _ANY) or any(
        any(word in lower for word in first) and any(word in lower for word in second) for first, second in _BOTH)


def people_slowdown(own: str) -> Slowdown | None:
    """The first slowdown the writer's own text states (see the module text), or None. A
    statement with a figure and a tie to the series beats one without either."""
    return _people_slowdown(own[:MAX_OWN])


def refused(sentence: str, start: int, end: int, *, mixed: bool = True) -> bool:
    """Whether the slowdown words at sentence[start:end] are no claim of the writer's: hedged,
    denied or removed by a fix, a comparative naming a kind of thing, the robot's sentence retold,
    bounded as negligible or followed by a modal estimate; and, with `mixed` (a sure reading's
    test), asked about, beside a gain, or beside a slowdown denied in the same sentence (see the
    patterns above)."""
    before = _NO_GAIN.sub(" ", sentence[max(0, start - HEDGE_REACH):start])
    if _HEDGE.search(before) or _ROBOT_WORDS.search(sentence) \
            or (sentence[start:end].lower().startswith(_COMPARATIVE) and _ATTRIBUTIVE.search(before)) \
            or _MINIMISED.search(sentence[max(0, start - MINIMISED_REACH):end + MINIMISED_REACH]) \
            or _ESTIMATE.match(sentence, end, end + ESTIMATE_REACH):
        return True
    return mixed and bool(_QUESTION.search(sentence[:start])
                          or _GAIN.search(_NO_GAIN.sub(" ", _GAIN_COLUMN.sub("|", sentence)))
                          or any(_DENIAL.search(_NO_GAIN.sub(" ", sentence[max(0, other.start() - HEDGE_REACH):
                                                                          other.start()]))
                                 for other in SLOWDOWN.finditer(sentence)))


@functools.lru_cache(maxsize=32)  # asked for a reply's kind, then for its fields
def _people_slowdown(own: str) -> Slowdown | None:
    if not may_state_slowdown(own.lower()):
        return None
    first = SLOWDOWN.search(own)
    if first is None:
        return None
    best: Slowdown | None = None
    gains = None
    for start, sentence in _statements(own):
        if start + len(sentence) < first.start():
            continue  # before the first slowdown's words: nothing to read there
        for match in SLOWDOWN.finditer(sentence):
            if refused(sentence, match.start(), match.end()):
                continue
            at = start + match.start()
            if gains is None:
                gains = _gains(own)
            found = Slowdown(" ".join(sentence.split())[:400], _numbers(own, at),
                             not gains and bool(ATTRIBUTION.search(own[max(0, at - ATTRIBUTION_REACH):
                                                                       at + ATTRIBUTION_REACH])))
            if not found.figure and not found.attributed and not _SIGHTING.search(sentence[:match.start()]):
                continue  # a word of slowness in a discussion, no report
            if found.figure and found.attributed:
                return found
            if best is None or (found.figure + found.attributed) > (best.figure + best.attributed):
                best = found
            break
    return best


# --- the robot's report on a patch -------------------------------------------------------------------

# The robot's lines naming the patch it tested: `patch subject: [PATCH v2 3/3] …`, `patch link:
# https://lore.kernel.org/all/<id>/`, its branch of the patch on its own tree (`url: …/intel-lab-lkp/
# linux/commits/<Author>/<topic>/<date>`, earlier `0day-ci`), the tree the patch went on (`base:
# <tree url> <branch>`, `base: <sha>` or `base: v6.15-rc5`), and the commit line naming the patch
# (`commit: <sha> ("[PATCH v2 3/3] …")`). Seen in dev7:36, dev7:37-39 and 11 robot reports of
# corpus/lkp-stream posted as replies to a patch (2019-2025).
_PATCH_SUBJECT_LINE = re.compile(r"^patch subject:\s*+(\S.*?)\s*$", re.MULTILINE)
_PATCH_LINK_LINE = re.compile(r"^patch link:\s*+https?://\S+?/(?:all/)?([^/\s]+@[^/\s]+?)/?\s*$", re.MULTILINE)
_ROBOT_BRANCH = re.compile(r"(?:github\.com/(?:intel-lab-lkp|0day-ci)/linux/commits/|^(?:https?://\S+\s+)?)"
                           r"[A-Za-z][\w.-]*/[\w.-]+/\d{8}-\d{6}\b", re.MULTILINE)
_BASE_LINE = re.compile(r"^base:\s*+(\S.*?)\s*$", re.MULTILINE)
_COMMIT_PATCH = re.compile(r"^commit:\s*+[0-9a-f]{7,40}\s*+\(\"(\[[^\]]*\bPATCH\b[^\]]*\][^\n]*?)\"\)\s*$",
                           re.MULTILINE | re.IGNORECASE)
_COMMIT_SUBJECT = re.compile(r"^commit:\s*+[0-9a-f]{7,40}\s*+\(\"([^\n]*?)\"\)\s*$", re.MULTILINE)
_ROBOT_OPENING = re.compile(r"noticed an?\s+([-+]?\d+(?:\.\d+)?%)\s+regression\s+of\s+\S+")
_SHA = re.compile(r"^[0-9a-f]{12,40}$")
_TAG = re.compile(r"^v\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:-rc\d{1,2})?$")


def robot_patch_series(own: str, subject: str, in_reply_to: str | None) -> PatchSeries | None:
    """The series a robot's regression report tested before it was merged, or None for a report of
    a commit already in a tree. The report must answer the patch (In-Reply-To) and name it (a patch
    line, its own branch of the patch, or `Re: [PATCH …]`)."""
    replied = series_subject(subject) if _REPLY_PREFIXES.match(subject) else None
    if in_reply_to is None and replied is None:
        return None
    named = _PATCH_SUBJECT_LINE.search(own) or _COMMIT_PATCH.search(own)
    if named is None and replied is None and not _ROBOT_BRANCH.search(own) and not _PATCH_LINK_LINE.search(own):
        return None
    # the 2021 reports name the patch only by its commit's subject, on the robot's branch of it
    # ("Harshad-Shirwadkar/ext4-drop-…/20210210-054647", dev7:42)
    plain = _COMMIT_SUBJECT.search(own)
    title = named.group(1) if named else (replied.subject if replied else (plain.group(1) if plain else None))
    if title is None:
        return None
    parsed = series_subject(title) or SeriesSubject(title, None, None)
    link = _PATCH_LINK_LINE.search(own)
    base_commit = tree = None
    base = _BASE_LINE.search(own)
    if base:
        words = base.group(1).split()
        sha = next((word for word in words if _SHA.match(word)), None)
        tag = next((word for word in words if _TAG.match(word)), None)
        base_commit = sha or tag
        if sha is None and tag is None:
            tree = " ".join(words)
    opening = _ROBOT_OPENING.search(own[:3000])
    return PatchSeries(subject=parsed.subject, version=parsed.version,
                       message_id=link.group(1) if link else in_reply_to, base_commit=base_commit,
                       tree=tree or parsed.tree, statement=" ".join(opening.group(0).split()) if opening else None,
                       numbers=(opening.group(1),) if opening else (), attributed=True)


# b4 writes the base of a series at the foot of its cover letter or patch: `base-commit: <sha>`.
BASE_COMMIT = re.compile(r"^[ \t>]*base-commit:[ \t]*([0-9a-f]{7,40})\b", re.MULTILINE)


def base_commit_of(text: str) -> str | None:
    found = BASE_COMMIT.search(text)
    return found.group(1) if found else None


def people_patch_series(subject: str, in_reply_to: str | None, body: str, slowdown: Slowdown) -> PatchSeries | None:
    """The series a person's reply measures, from its subject and what the message carries."""
    named = series_subject(subject)
    if named is None:
        return None
    return PatchSeries(subject=named.subject, version=named.version, message_id=in_reply_to,
                       base_commit=base_commit_of(body), tree=named.tree, statement=slowdown.statement,
                       numbers=slowdown.numbers, attributed=slowdown.attributed)
