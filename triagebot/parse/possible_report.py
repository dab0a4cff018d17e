"""Parse stage: a second look at a person's message the kind rules left unread — may it report a
slowdown? Pure.

Issue 38 asks that nothing that may be a report is dropped silently. The kind rules
(classify.py, patch_reports.py) take on a person's slowdown only in the forms they know, and each
form was written from development mail; measured on lists no rule was written from, most people's
reports used other words. This reading is deliberately broad, and never sure: what it finds is a
`patch-regression` with no tie to the series (a reply in a series' thread) or a
`human-perf-complaint` (any other message), both below the confidence floor (certainty.py), so the
daemon takes none of it on and lists each in the day's digest, where a person takes it on or
dismisses it with one button.

What it reads: one sentence of the writer's own text that states a slowdown, not hedged or asked,
and not the slowdown a fix removes:
- a duration grown, said outright ("now takes much longer");
- a word of slowness (slower, slowdown, "slows … down", "very slow") with a word of performance or
  a figure in the same sentence, or a word of worsening (regression, degradation) with a word of
  performance;
- or a weak word (worse, lower, drop, overhead, "takes … longer", increase, less …) with both a word of
  performance and a figure in the same sentence ("the keyboard takes 8 seconds longer", "IOPS
  dropped from 3.0M to 1.2M");
- or signed negative changes: two or more, or one beside a word of performance (`write: -45.5%`,
  `-16.9%`);
- last, in a series' thread only (report.py), the writer's own pair of figures without and with
  the change, the changed side the slower, with no word of slowness at all (measured_pair.py,
  `measured_slowdown`).

Measured in bench/README.md ("Issue 38: the second look"): on the development sets it reaches
the reports the kind rules missed; over linux-ext4 2024 (5,273 messages) it adds about one digest
line a month.
"""
from __future__ import annotations

import re

from triagebot.parse.measured_pair import measured_pair

# sentences, the text read and the figures kept: as patch_reports reads the writer's text
from triagebot.parse.patch_reports import HEDGE_REACH, MAX_NUMBERS, MAX_OWN, SENTENCE, Slowdown, refused

MAX_SENTENCE = 1500  # characters of one sentence read (a table without full stops is one "sentence")

# Words that say slowness on their own, with a word of performance or a figure.
STRONG = re.compile(
    r"\bslow(?:er|downs?)\b|\bslow(?:s|ed|ing)?\s+(?:\w+\s+)?down\b"
    r"|\b(?:too|very|really|much|extremely|painfully|terribly)\s+slow\b", re.IGNORECASE)
# Words that say a change for the worse, of speed only beside a word of performance or a share: a
# regression or a degradation is as often functional ("a kernel regression with ext4 and ea_inode …
# 20GB virtio drive", a bug tracker's report; "a degraded array"); "degrade ~15%" (dev9:62) is speed.
WORSENED = re.compile(r"\bregress(?:ion|ions|es|ed|ing)?\b(?!@)|\bdegrad\w+", re.IGNORECASE)
_SHARE = re.compile(r"\d(?:\.\d+)?\s?(?:%|x\b|×|times\b)", re.IGNORECASE)
# A duration grown, said outright, a slowdown on its own: "now takes much longer" (dev9:20), "the
# booting is now taking significantly longer" (dev9:58), "takes considerably longer".
# Also, with dev10's thread starters: a duration called too long or counted in minutes to do one
# thing ("the resume callback is taking far too long", dev10:16; "taking several minutes to probe",
# dev10:81; "takes almost 2 seconds to suspend/resume", dev10:82), a machine that feels slow
# ("sluggish", "laggy", "stutters": dev10:6, 9, 53, dev9:29), a CPU use grown ("increases CPU
# usage", "high CPU usage by journald": dev10:3, 53), a slowness intensified past doubt ("extremely
# slow, to the point where they are unusable", dev10:40; "painfully slow"), slow performance named
# ("intermittent, slow performance", dev10:13; "slow transfers").
GROWN = re.compile(
    r"\b(?:takes?|taken|took|taking)\s+(?:\w+\s+)?(?:much|significantly|considerably|substantially|way|far|a\s+lot|"
    r"noticeably|dramatically)\s+longer\b"
    r"|\b(?:takes?|taken|took|taking)\s+(?:\w+\s+){0,2}?(?:far\s+|way\s+|much\s+)?too\s+long\b"
    r"|\b(?:takes?|taken|took|taking)\s+(?:almost\s+|about\s+|around\s+|over\s+|up\s+to\s+)?(?:several|many|a\s+few|\d+(?:\.\d+)?)"
    r"\s+(?:minutes|seconds|hours)\s+to\b"
    r"|\b(?:sluggish\w*|laggy|lagging|stutter(?:s|ing)?)\b"
    r"|\b(?:high|higher|increased|increases?|increasing)\s+(?:\w+\s+)?cpu\s+(?:usage|load|utili[sz]ation)\b"
    r"|\b(?:extremely|painfully|terribly|unusably|incredibly|ridiculously)\s+slow\b"
    r"|\bslow\s+(?:performance|speeds?|throughput|transfers?|boot(?:ing)?|resume|i/?o|writes|reads|response)\b",
    re.IGNORECASE)
# A weak word made sure by its adverb, beside a word of performance, needs no figure: "the speed is
# significantly reduced" (dev10:21), "power usage significant higher" (dev10:9).
INTENSIFIED = re.compile(r"\b(?:significant(?:ly)?|dramatic(?:ally)?|drastic(?:ally)?|severe(?:ly)?|greatly|"
                         r"considerabl[ey]|noticeabl[ey]|massive(?:ly)?|huge|hugely)\s+(?:reduced|lower|worse|decreased|increased|higher|"
                         r"drop|degradation|slower|longer)\b", re.IGNORECASE)
# Words that say slowness only beside a word of performance and a figure.
WEAK = re.compile(
    r"\b(?:worse|lower|poorer|reduc(?:ed|es|tion)|decreas(?:e|es|ed)|drop(?:s|ped|ping)?|loss|lost|penalty|overhead|"
    r"hit|increas(?:e|es|ed)|higher|fewer|less|doubl(?:e|es|ed)|tripl(?:e|es|ed)|quadrupl(?:e|es|ed))\b"
    # "about 8% longer build time" (dev9:76)
    r"|\b\d+(?:\.\d+)?\s?%\s+longer\b"
    # a duration grown: "takes about 8 seconds longer"; not code's "wait longer than 1 second"
    r"|\b(?:takes?|took|taking|lasts?|lasted|runs?|ran)\s+(?:\w+\s+){0,3}?longer\b", re.IGNORECASE)
# In a thread's first message a delay with its figure is the symptom reported ("30 seconds delay for
# probe", dev10:83; "random delays exiting suspend … up to a couple minutes", dev10:64); in a review
# it is the code's ("a 100 ms delay after the clock change", linux-pci and linux-mmc 2023).
DELAY = re.compile(r"\bdelay(?:s|ed)?\b", re.IGNORECASE)
# Words of performance: what is measured, or the program measuring it.
PERFORMANCE = re.compile(
    r"\bperf(?:ormance)?\b|\bthroughput|\bbandwidth|\biops\b|\blatenc\w+|\bspeed\b|[KMGT]i?B/s|\b[kmg]b/s|"
    r"[KMG]i?bits?/s|[KMG]bps\b|\b(?:polling|refresh|frame|sampl(?:e|ing)|transfer|data|bit)\s+rates?\b"
    # a time the writer measures: "policy load time" (dev9:1), "8% longer build time" (dev9:76),
    # "the resume time" (dev9:88), "worse boot times" (dev8:3)
    r"|\b(?:load|build|compile|resume|suspend|boot|run|execution|response|startup|start-up|wall|wall-clock|elapsed|"
    r"probe|scan|mount|test|detection|init|initiali[sz]ation|setup|wake-?up|shutdown|reboot|access|seek|copy|sync|"
    r"fsync|write|read)[ -]?times?\b|\btime\s+(?:taken|spent|needed)\b"
    r"|\bduration\b|\bops\b|ops/s|\btransactions\b|\btps\b|"
    r"\bcpu\s+(?:usage|utili[sz]ation|time|cycles|load)|\bbenchmark\w*|\bseconds?\b|\bminutes?\b|\bjitter\b"
    r"|\b(?:fio|iperf3?|netperf|hackbench|will-it-scale|reaim|aim7|sysbench|dbench|fs_mark|fsmark|geekbench|lmbench|"
    r"unixbench|kernbench|stress-ng|cyclictest|tbench|pgbench|specjbb|redis|memcached|mysql|postgres\w*|iozone|"
    r"filebench|fxmark|vdbench|mmtests|perf\s+bench|dd)\b", re.IGNORECASE)
# A figure: a percentage or factor, a value of a unit, a duration, a signed drop.
FIGURE = re.compile(
    r"\d[\d,]*(?:\.\d+)?\s?(?:%|x\b|×|times\b|[KMGT]i?B|[kmg]b/s|k?iops|ops\b|[mun]?s\b|µs|secs?\b|seconds?|"
    r"minutes?|mins?\b|hours?|[KMG]i?bits?/s|[MG]bits|[MG]bps|[KMG]/s|fps\b|tps\b|[kM]?hz\b)"
    # a figure in words: "by one second" (dev9:88), "two times slower" (dev9:61), "almost triples" (dev9:1)
    r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|several|a\s+few|a\s+couple(?:\s+of)?)\s+"
    r"(?:seconds?|minutes?|hours?|times)\b|\b(?:doubl|tripl|quadrupl)(?:e|es|ed)\b", re.IGNORECASE)
# A change printed with its sign, as comparison tools and people's tables do: "write: -45.5%".
NEGATIVE_CHANGE = re.compile(r"(?<![\w.+-])-(?!0+(?:\.0+)?\s?%)\d+(?:\.\d+)?\s?%")  # not a tolerance's "-0%"
# Not a claim: what the kind rules refuse (patch_reports.refused: hedged, denied, retold from the
# robot, bounded as negligible, removed by a fix), and here also a change undone ("revert",
# "restore", "recover": the slowdown is the one they remove). A question about a slowdown ("why
# does reaim regress 10-20% with …") and a slowdown beside a gain ("50% worse boot times …, better
# again with it off") are no sure report, but a person should see them: the digest is for that.
_UNDONE = re.compile(r"\b(?:revert\w*|restor\w*|recover\w*|unless)\b", re.IGNORECASE)
# A line naming whom the writer copies ("[+cc Vitaly, regressions]", "Cc: …"): the regressions list
# is named there, no slowdown.
_CC_LINE = re.compile(r"^[ \t]*\[?\+?cc\b[^\n]*$", re.IGNORECASE | re.MULTILINE)


# Where to read: a literal every GROWN, STRONG, WORSENED or WEAK form and every signed drop holds,
# searched in the lower-cased text (a cue may sit inside another word: it only picks the sentences
# _stated reads; a first-character look-ahead keeps the scan to one test at most positions).
_CUE = re.compile(r"(?=[-dfhilopqrstw])(?:slow|regress|degrad|worse|lower|poor|reduc|decreas|drop|loss|lost|penalt|"
                  r"overhead|hit|increas|higher|high|fewer|less|doubl|tripl|quadrupl|longer|too\s+long|sluggish|lag|"
                  r"stutter|tak|took|delay|-\d)")


def _claims(sentence: str, match: re.Match[str]) -> bool:
    return not refused(sentence, match.start(), match.end(), mixed=False) and \
        not _UNDONE.search(sentence[max(0, match.start() - HEDGE_REACH):match.start()])


_GROWN_WORDS = ("tak", "took", "sluggish", "lag", "stutter", "cpu", "slow")


def _stated(sentence: str, starter: bool = False) -> bool:
    """Whether one sentence states a slowdown (see the module text). The words come first: most
    sentences read hold none, and the words of performance and the figures cost the most."""
    if sentence.rstrip().endswith("?"):
        return False  # asked, not told
    lower = sentence.lower()
    # each pattern only where its literals stand (the cue scan found one of them, not which)
    if any(word in lower for word in _GROWN_WORDS) \
            and any(_claims(sentence, match) for match in GROWN.finditer(sentence)):
        return True
    strong = list(STRONG.finditer(sentence)) if "slow" in lower else []
    worsened = list(WORSENED.finditer(sentence)) if "regress" in lower or "degrad" in lower else []
    weak = list(WEAK.finditer(sentence)) + (list(DELAY.finditer(sentence)) if starter else [])
    drops = list(NEGATIVE_CHANGE.finditer(sentence))
    if not (strong or worsened or weak or drops):
        return False
    performance = PERFORMANCE.search(sentence) is not None
    if strong and (performance or FIGURE.search(sentence)) and any(_claims(sentence, match) for match in strong):
        return True
    if performance and any(_claims(sentence, match) for match in INTENSIFIED.finditer(sentence)):
        return True
    if worsened and (performance or _SHARE.search(sentence)) and any(_claims(sentence, match) for match in worsened):
        return True
    if weak and performance and FIGURE.search(sentence) and any(_claims(sentence, match) for match in weak):
        return True
    # signed drops: one beside a word of performance, or a row of them (a comparison's table)
    claimed = sum(_claims(sentence, match) for match in drops)
    return claimed >= 2 or (claimed == 1 and performance)


def possible_slowdown(own: str, *, starter: bool = False) -> Slowdown | None:
    """The first sentence of the writer's own text that may state a slowdown, as a Slowdown never
    tied to a series (`attributed` False: the reading is never sure), or None. `starter`: the text
    opens a thread (its subject first), where a delay with its figure is the symptom reported."""
    text = own[:MAX_OWN]
    if "cc" in text.lower():
        text = _CC_LINE.sub("", text)
    # Only a sentence holding a cue (one pass over the text) is read further: most replies hold
    # none, and reading each sentence's performance words and figures cost more than the rest.
    cues = [match.start() for match in _CUE.finditer(text.lower())]
    if not cues:
        return None
    start, next_cue = 0, 0
    for boundary in (*SENTENCE.finditer(text), None):
        end = boundary.start() if boundary is not None else len(text)
        while next_cue < len(cues) and cues[next_cue] < start:
            next_cue += 1
        if next_cue < len(cues) and cues[next_cue] < end:
            piece = text[start:end][:MAX_SENTENCE]
            if _stated(piece, starter):
                numbers = [" ".join(found.group(0).split())
                           for found in (*NEGATIVE_CHANGE.finditer(piece), *FIGURE.finditer(piece))]
                return Slowdown(" ".join(piece.split())[:400], tuple(dict.fromkeys(numbers))[:MAX_NUMBERS], False)
        if next_cue >= len(cues):
            break
        start = boundary.end() if boundary is not None else len(text)
    return None


def measured_slowdown(own: str) -> Slowdown | None:
    """The writer's own pair of figures with the changed side the slower (measured_pair.py), as a
    Slowdown never tied to a series: its statement is the lines the figures stand in."""
    pair = measured_pair(own)  # which reads MAX_OWN characters of it
    if pair is None:
        return None
    return Slowdown(" … ".join(pair.pieces)[:400], pair.numbers[:MAX_NUMBERS], False)
