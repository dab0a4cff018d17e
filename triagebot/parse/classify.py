"""Parse stage: which kind of message this is, a small pure decision."""
from __future__ import annotations

import functools
import re

from triagebot.parse.kind_rules import (
    BENCHMARK_NAME,
    BUG_TITLE,
    BUGZILLA_REGRESSION,
    BUGZILLA_SUBJECT,
    CHANGE_NAMED,
    CHANGE_WINDOW,
    CI_RESULT_SUBJECT,
    MEASURE,
    NOT_A_REGRESSION,
    NOT_A_REPORT_SUBJECT,
    NUMBERS_STATED,
    PATCH_BODY,
    PERF_ANCHOR,
    PERF_BODY,
    PERF_BODY_GATE,
    PERF_BODY_WINDOW,
    PERF_TITLE,
    REGRESSION_TITLE,
    REGZBOT_INTRODUCED,
    ROBOT_SENDERS,
    TITLE_PREFIX,
)
from triagebot.parse.patch_reports import people_slowdown, series_subject

_LKP_SENDER = re.compile(r"kernel test robot|lkp@intel\.com|oliver\.sang@intel\.com", re.IGNORECASE)
# "lkp" then, anywhere after it, "@intel.com": two searches, where `\blkp\b.*@intel\.com` scanned
# to the end once per "lkp" (quadratic in a From of many).
_LKP_WORD = re.compile(r"\blkp\b", re.IGNORECASE)
_INTEL = re.compile(r"@intel\.com", re.IGNORECASE)


def lkp_sender(sender: str) -> bool:
    if _LKP_SENDER.search(sender):
        return True
    word = _LKP_WORD.search(sender)
    return word is not None and _INTEL.search(sender, word.end()) is not None
_LKP_BODY = re.compile(r"kernel test robot noticed|FYI, we noticed|we noticed (?:a|the following)")
_LKP_PERF = re.compile(r"noticed an? [-+]?\d+(?:\.\d+)?% (regression|improvement) of")
# The robot's own sentence opening a performance report it posts as a reply to the patch it
# blames ("Re: [PATCH …]"; 17 of the 162 reports of the stream): at the start of a line of its
# own text, after the greeting and at times a paragraph of its own ("we have no idea how this
# change could impact performance, …").
_LKP_REPLY_OPENING = re.compile(
    r"^kernel test robot noticed an? [-+]?\d+(?:\.\d+)?% (regression|improvement) of ", re.MULTILINE)
_LKP_REPLY_HEAD = 2000  # characters of own text the sentence is looked for in
_SYZBOT_SENDER = re.compile(r"syzbot", re.IGNORECASE)
_SYZBOT_BODY = re.compile(r"syzbot (?:found|has found) the following")
_REPLY_SUBJECT = re.compile(r"^\s*(?:re|aw|sv|antw)\s*+(?:\[\d+\])?\s*+:", re.IGNORECASE)
REPLY_PREFIXES = re.compile(r"^(?:\s*(?:re|aw|sv|antw)\s*+(?:\[\d+\])?\s*+:)+", re.IGNORECASE)
# "[PATCHv4 3/3]" too, and after the tags some lists put first: "[f2fs-dev] [PATCH …]", "[Linux-cachefs]
# [PATCH …]" (2,167 such subjects in the linux-cachefs archive, 132 in linux-kselftest's, 97 in
# linux-usb's and linux-arm-kernel's): a patch posting whatever the list calls itself (issue 38's false
# take-on, a tagged patch whose commit message quotes a robot's report, read as that report).
_PATCH_SUBJECT = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*?\[[^\]]*\bPATCH(?:v\d+)?\b", re.IGNORECASE)


def classify(subject: str, sender: str, own_text: str) -> str:
    """One of the record kinds for a message, from its subject, sender and own text."""
    head = own_text[:4000]
    text = own_text[:CHANGE_WINDOW]  # where a report's change and figures may stand
    is_reply = bool(_REPLY_SUBJECT.match(subject))
    # The robot's performance report posted under the patch it blames: a report, not a reply.
    if is_reply and lkp_sender(sender):
        opening = _LKP_REPLY_OPENING.search(own_text[:_LKP_REPLY_HEAD])
        if opening:
            return "lkp-regression" if opening.group(1).lower() == "regression" else "lkp-improvement"
    marked = "#regzbot" in head and bool(REGZBOT_INTRODUCED.search(head))
    # A reply is a reply even when it quotes a whole report: the report is its parent. Unless it
    # is itself the first report: regzbot told to track it (`#regzbot introduced:`, not
    # `^introduced`, which marks the parent), or its own slowdown, figures and culprit commit in
    # a thread that is no report's (a patch review, a question).
    if is_reply:
        title = REPLY_PREFIXES.sub("", subject, count=1)
        if marked:
            return human_kind(title, head, report_form=True, marked=True, text=text)
        if not is_report_thread(subject) and "^introduced" not in head and _first_report_in_reply(head):
            return "human-report"  # a commit bisected or blamed by its sha: a merged change's regression
        # A person's slowdown measured against the series of the thread (issue 38): a report of
        # its own kind, whose suspect is the series (patch_reports.py).
        if not lkp_sender(sender) and not ROBOT_SENDERS.search(sender) and series_subject(subject) is not None \
                and people_slowdown(own_text) is not None:
            return "patch-regression"
        return "reply"
    bugzilla = BUGZILLA_SUBJECT.match(subject) if "[Bug " in subject else None
    if bugzilla and not bugzilla.group(1):
        return "reply"  # a bugzilla comment mail: one comment in the thread its "New:" mail opened
    if _SYZBOT_BODY.search(head) or (_SYZBOT_SENDER.search(sender) and subject.startswith("[syzbot]")):
        return "syzbot"
    # The robot's sentence in a person's patch (a commit message quoting the report it fixes) is
    # the patch's, not a report (issue 38's false take-on): a sign-off or a diff says so.
    if _LKP_BODY.search(head) and (lkp_sender(sender) or ("kernel test robot" in head and not has_patch(own_text))):
        perf = _LKP_PERF.search(" ".join(head.split()))
        if perf:
            # LKP states the sign with the word: "regression" or "improvement" decides.
            return "lkp-regression" if perf.group(1) == "regression" else "lkp-improvement"
        return "lkp-functional"
    if bugzilla:
        regression = BUGZILLA_REGRESSION.search(head)
        return human_kind(subject[bugzilla.end():], head, report_form=True,
                          marked=marked or bool(regression and regression.group(1).lower() == "yes"), text=text)
    if ROBOT_SENDERS.search(sender) or CI_RESULT_SUBJECT.search(subject) or NOT_A_REPORT_SUBJECT.search(subject):
        return "other"  # a robot's digest or CI results, a patch, a pull request, an announcement
    if marked:
        return human_kind(subject, head, report_form=True, marked=True, text=text)
    return human_kind(subject, head, text=text)


def human_kind(title: str, head: str, *, report_form: bool = False, marked: bool = False,
               text: str | None = None) -> str:
    """A person's message: `human-report` (a performance regression), `human-perf-complaint`
    (slow, with no kernel change named or no figure), `human-bug` (functional) or `other`.

    `report_form` is a bug tracker's opening mail: a report whatever its title says. `marked` is
    a report the community marked as a regression (regzbot's `introduced`, bugzilla's
    `Regression: Yes`): a regression whatever its prose says, its change given by the marker.
    `text` is more of the writer's own text than `head`, where the change may be named.
    """
    kind = _human_kind(title, head, report_form=report_form)
    if marked and kind == "human-bug" and not BUG_TITLE.search(title) and _PERFORMANCE_WORDS.search(head):
        kind = "human-report"  # a marked regression of speed: "slow", "MB/s", "latency" and no failure named
    if kind == "human-report" and not marked and not _tied_to_change(title, text or head):
        return "human-perf-complaint"  # "RAID10 slower than a single drive": no change, no regression
    return kind


_PERFORMANCE_WORDS = re.compile(r"\bslow\w*|\bperformance\b|\bthroughput\b|\blatenc\w+|\bIOPS\b|[KMG]i?B/s\b|"
                                r"\bfaster\b|\btakes?\s+(?:much\s+)?longer\b|\bboot[ -]?time\b",
                                re.IGNORECASE)


def _tied_to_change(title: str, head: str) -> bool:
    """A slowdown tied to a kernel change and stated with a figure (issue 24's report).

    In the body a kernel or commit named once is the setting ("a Linux VM (kernel v4.19)", the
    `uname -a` line), not a change: two different ones make a pair to compare. A writer who says it
    is not a regression ("present in 4.19 and 5.4 as well, so not a regression") names no change."""
    window = head[:CHANGE_WINDOW]
    if NOT_A_REGRESSION.search(window):
        return False
    if _SAME_ON_BOTH.search(window) and not (_STRONG_CHANGE.search(title) or _STRONG_CHANGE.search(window)):
        return False  # the kernels named are where the problem shows alike, not a change
    changed = CHANGE_NAMED.search(title) or CHANGE_NAMED.search(window) or PERF_ANCHOR.search(title) \
        or _two_anchors(window) or (_BEFORE_NOW.search(window) and PERF_ANCHOR.search(window)) \
        or _kernel_per_paragraph(window)
    if not changed:
        return False
    # A slowdown blamed on a commit with no figure of it ("commit 16914e6fc7 (…) … cause performance
    # regression", dev6:2; a bisected slowdown, dev5:17) stays a complaint: the issue takes on a
    # claim "with numbers or a plain 'N% slower'", which is what a rerun can check against.
    return bool(NUMBERS_STATED.search(title) or NUMBERS_STATED.search(window))


# Kernels named to say the problem shows on each alike: "Kernel: both v5.4 and v5.15" (linux-s390
# 2023, fixtures/labels/dev5:54), "reproduced on a Linux VM (kernel v4.19) … also seen with the
# BFQ I/O scheduler in kernel v5.1" (linux-ext4 2019, fixtures/labels/dev:8). Such a pair ties
# the slowdown to no change unless the writer also names one in words that only a change takes
# (a bisection, an upgrade, a commit or revert, "since"/"after" a kernel, regzbot's line).
_SAME_ON_BOTH = re.compile(
    r"\bboth\s+(?:the\s+)?(?:kernels?\s+|linux\s+)?v?[2-6]\.\d{1,2}\S*\s+and\s+v?[2-6]\.\d{1,2}"
    r"|\balso\s+(?:seen|present|happens|occurs|reproduc\w+|visible|there)\b[^.\n]{0,60}?\b(?:kernel|linux)\s+v?[2-6]\.\d"
    # the kernels tried, alike: "Tested with kernels 4.9 and 4.19." (linux-bcache 2019, dev6:7),
    # "Tested on several kernels, including the latest master" (linux-ide 2025, dev6:12)
    # "on v6.1 (Tested also on v5.4)" (linux-mmc 2023, dev5:63), "kernel-5.3.8 (and various older
    # ones, …)" (linux-bcache 2019, dev6:8)
    r"|\btested\s+also\s+(?:on|with)\s+(?:kernel\s+|linux\s+)?v?[2-6]\.\d"
    r"|\(and\s+(?:various|several|many|other)\s+(?:older|newer|other)\s+(?:ones|kernels|versions)\b"
    r"|\btested\s+(?:with|on|against)\s+(?:several|multiple|many|various|different|all)\s+kernels\b"
    r"|\btested\s+(?:with|on)\s+kernels\s+v?[2-6]\.\d{1,2}\S*\s+and\s+v?[2-6]\.\d{1,2}[^\s.]*\.(?!\d)",
    re.IGNORECASE)
_STRONG_CHANGE = re.compile(
    r"\bbisect\w*|\bfirst bad commit\b|\bupgrad\w+|\brevert\w*|"
    r"\b(?:introduced|caused)\s+by\s+(?:the\s+|a\s+|this\s+)?(?:commit|patch|change|[0-9a-f]{7,40}\b)|"
    r"\b(?:since|after)\s+(?:the\s+)?(?:linux\s+|kernel\s+)?v?[2-6]\.\d|#regzbot\s+\^?introduced|"
    r"(?<![/\w])commit\s+[0-9a-f]{7,40}\b", re.IGNORECASE)


# a kernel named once with a comparison in time: "slower than before: kernel 5.15 467MiB/s, 6.0 359MiB/s"
_BEFORE_NOW = re.compile(r"\bthan\s+(?:before|previously|it used to)\b|\bused to\b|\bno longer\b", re.IGNORECASE)


# A line that opens one kernel's results, then another's (storage lists paste program output per
# kernel): "With 5.2.0 (and those patches):" … "With nvme-5.3 (and those patches …)" over hdparm
# (linux-nvme 2019, dev5:1), "for 5.4:" … "for 4.15:" over rsync (ceph-devel 2021, dev6:5).
_KERNEL_LINE = re.compile(r"^[ \t]*(?:with|for|on|using)\s+(?:kernel\s+|linux\s+|[a-z]+-)?(v?[2-6]\.\d{1,2})"
                          r"(?![\d])[\w.+-]*[ \t]*(?:\(|:)[^\n]*$", re.IGNORECASE | re.MULTILINE)


def _kernel_per_paragraph(window: str) -> bool:
    return len({match.group(1).lower().lstrip("v") for match in _KERNEL_LINE.finditer(window)}) > 1


def _two_anchors(window: str) -> bool:
    seen: set[str] = set()
    for match in PERF_ANCHOR.finditer(window):
        seen.add(match.group(0).lower().lstrip("v"))
        if len(seen) > 1:
            return True
    return False


# A commit the writer blames, in words: a bisection, "first bad commit", "commit <sha>", a sha with
# its ("subject"), "caused by"/"introduced by"/"reverting" a sha. A bare hex run is not enough: an
# objdump or register dump is full of them.
_BLAMED_COMMIT = re.compile(
    r"\bfirst bad commit\b|\bbisect\w*|\bcommit:?\s+[0-9a-f]{7,40}\b|\b[0-9a-f]{8,40}\s+\([\"“]"
    r"|\b(?:caused|introduced)\s+by\s+(?:commit\s+)?[0-9a-f]{7,40}\b|\brevert\w*\s+(?:commit\s+)?[0-9a-f]{7,40}\b",
    re.IGNORECASE)


def _first_report_in_reply(head: str) -> bool:
    """A reply whose own text reports a slowdown first: its own slowdown words, a figure and a
    commit it blames (a sha or a bisection) — "~35% performance regression … bisected to <sha>"."""
    window = head[:PERF_BODY_WINDOW]
    if not any(literal in window for literal in PERF_BODY_GATE) or not PERF_BODY.search(window):
        return False
    return bool(NUMBERS_STATED.search(window)) and bool(_BLAMED_COMMIT.search(window))


def _human_kind(title: str, head: str, *, report_form: bool = False) -> str:
    says_regression = REGRESSION_TITLE.search(title)  # before the tags go: "[REGRESSION] ext4: …"
    title = TITLE_PREFIX.sub("", title, count=1)
    perf = PERF_TITLE.search(title)
    bug = BUG_TITLE.search(title)
    if perf and not bug:
        return "human-report"  # the title complains of speed: "Massive slowdown …"
    if not report_form and has_patch(head):
        return "other"  # a patch posted without a [PATCH] tag: a sign-off or a diff
    if bug and not perf:
        return "human-bug"  # the title names a failure: a hang, a splat, corruption
    if perf or says_regression or report_form:
        # Both, "regression" alone or a tracker's summary: the writer's own text decides.
        return "human-report" if _body_slowdown(head) or _benchmark_measured(head) else "human-bug"
    # A plain title ("raid1 writes", no subject at all): a slowdown measured against a kernel
    # or a commit in the body still makes a report.
    return "human-report" if _body_slowdown(head) else "other"


def has_patch(head: str) -> bool:
    if "Signed-off-by: " not in head and "diff --git " not in head and " Mon Sep 17 " not in head:
        return False
    return bool(PATCH_BODY.search(head))


def _benchmark_measured(head: str) -> bool:
    window = head[:PERF_BODY_WINDOW]
    return bool(BENCHMARK_NAME.search(window)) and bool(MEASURE.search(window))


def _body_slowdown(head: str) -> bool:
    window = head[:PERF_BODY_WINDOW]
    if not any(literal in window for literal in PERF_BODY_GATE):
        return False
    return bool(PERF_BODY.search(window)) and bool(PERF_ANCHOR.search(window) or CHANGE_NAMED.search(window))


_REPORT_THREAD = re.compile(
    r"\bregress(?:ion|ed|ions)?\b|\bimprovement\b|\bperf(?:ormance)?\b|\bslow(?:er|down|s|ed)?\b|\bdrops?\b|"
    r"\bbisected\b|\bthroughput\b|\blatency\b|\bIOPS\b|\[syzbot\]|\bBug \d+\]|\bhang|\bdeadlock|\bcrash|"
    r"\bWARNING\b|\bBUG\b|^\[[\w.-]+:[\w.-]+\]", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)  # asked twice a reply (its kind, then its prose), and threads share subjects
def is_report_thread(subject: str) -> bool:
    """A reply whose thread is about a report: a regression, a slowdown, a bot's finding.

    Objections and measurements are read only in such threads; elsewhere (patch reviews,
    feature discussion) "please send v2" is routine. Stance is read wider: in every thread but a
    patch posting (stance.reads_stance).
    """
    return bool(_REPORT_THREAD.search(REPLY_PREFIXES.sub("", subject, count=1)))


def is_patch_review(subject: str) -> bool:
    """A reply in a `[PATCH …]` thread: what it quotes is a patch or its review, not a report."""
    if not _REPLY_SUBJECT.match(subject):
        return False
    unreplied = REPLY_PREFIXES.sub("", subject, count=1)
    return bool(_PATCH_SUBJECT.match(unreplied)) and not re.search(r"\bregression\b", subject, re.IGNORECASE)


def is_plain_patch(subject: str) -> bool:
    """A `[PATCH …]` posting (not a reply): the cheap first decision. A patch is `other` even when
    it fixes a regression or adds a regression test: the report, if any, is elsewhere."""
    return bool(_PATCH_SUBJECT.match(subject)) and not _REPLY_SUBJECT.match(subject)
