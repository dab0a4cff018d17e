"""Parse stage: the words that tell a person's performance report from a functional bug report.

Data, not code paths: classify.py reads these tables in a fixed order. Each entry was seen in
several real messages of the linux-ext4 2024, linux-btrfs 2023 and linux-nfs 2023 list-years or
the corpus (fixtures/labels/reports.jsonl labels them; bench/accuracy.py measures them).
"""
from __future__ import annotations

import re

# A robot that mails digests, not reports: LKP's `[linux-next:master] BUILD REGRESSION <sha>` and
# `BUILD SUCCESS` (a dozen a year on each list) carry no "we noticed" sentence.
# CI bots that mail build, boot and test results: kernelci.org (`"kernelci.org bot"` and the newer
# `KernelCI bot`, both bot@kernelci.org; on stable, linux-next and many subsystem lists), Red Hat's
# CKI (`CKI Project <cki-project@redhat.com>`, "Test report for kernel …") and Linaro's LKFT
# (`lkft@linaro.org`, its replies to stable reviews).
ROBOT_SENDERS = re.compile(r"kernel test robot|\blkp@intel\.com|bugzilla-daemon@|\bbot@kernelci\.org|"
                           r"\bcki-project@redhat\.com|\blkft@linaro\.org", re.IGNORECASE)
# The subjects those bots give their results, whoever the list says sent them (a list that rewrites
# From): "stable-rc/queue/5.10 baseline: 106 runs, 6 regressions (v5.10.203-7-g…)",
# "next/master build: 216 builds: 2 failed, 214 passed, …", "[REGRESSION] stable-rc/linux-5.4.y:
# (build) implicit declaration of …", "stable-rc/linux-5.4.y: new build regression: …",
# "[STATUS] next/master - <sha>", "❌ FAIL: Test report for kernel 5.12.0 (…)".
CI_RESULT_SUBJECT = re.compile(
    r"^\s*[\w.-]+/[\w./-]+ [\w.-]+: \d+ (?:runs|builds|boots|tests)\b"
    r"|^\s*\[(?:REGRESSION|STATUS)\]\s+[\w.-]+/[\w./-]+(?::\s+\((?:build|boot|test)\)|\s+-\s+[0-9a-f]{12,40}\b)"
    r"|^\s*[\w.-]+/[\w./-]+: new (?:build|boot|test) regression:"
    r"|\b(?:PASS|FAIL|ERROR|SKIP)\w*: Test report for kernel\b",
    re.IGNORECASE)
# Subjects that are never a person's report: a patch or series ("[PATCHv4 3/3]" too; also "[PATCH] …: fix regression
# in …", "[PATCH] fstests: add a regression test"), a pull request, an announcement, a robot's
# digest, and a discussion that renamed its thread.
NOT_A_REPORT_SUBJECT = re.compile(
    r"^\s*(?:\[[^\]]*\]\s*)*?\[(?:[^\]]*\b(?:PATCH|RFC|PULL)(?:v\d+)?\b[^\]]*|ANNOUNCE[^\]]*)\]"
    r"|^\s*(?:\[[^\]]*\]\s*)*(?:GIT PULL|ANNOUNCE)\b"
    r"|\bBUILD (?:REGRESSION|SUCCESS)\b"
    # a thread renamed mid-way: "Who owns bugzilla…? Re: How owns …", "… (was Re: [syzbot] …)"
    r"|\S\s+\(?(?:was:?\s+)?(?:Re|Fwd?):\s",
    re.IGNORECASE,
)
# bugzilla.kernel.org: `[Bug N] New: <summary>` opens a report; every other `[Bug N] …` mail is
# one comment on it (In-Reply-To the opening mail), a reply in its thread.
BUGZILLA_SUBJECT = re.compile(r"^\s*\[Bug \d+\]\s*(New:)?\s*", re.IGNORECASE)
# Tags and regression-tracker prefixes before the title proper: "[REGRESSION]", "[NFS]",
# "[bug report]", "Fwd:", "[regression] Bug 216908 -".
TITLE_PREFIX = re.compile(r"^(?:\s*(?:\[[^\]]*\]|fwd?:|Bug \d+\s*-))+\s*", re.IGNORECASE)

# A performance complaint in a title: "Massive slowdown", "has slowed by about 2/3",
# "twice slower", "Slow speed when …", "slow down another fs", "performance drop",
# "perf regression", "Performance degradation due to commit …", "write bandwidth regression",
# "drop fio IOPS performance". A slow *device* is the setting, not the complaint.
# Issue 24, round three (fixtures/labels/dev5): the speed of a link as the measure ("MT7925 wifi
# throughput halved with 6.13.2" dev5:8, "Significant WiFi Speed Reduction with Kernel Versions >
# 6.8.12" dev5:9, "Wireless speed regression issue with >6.12.12" dev5:10, "causing Wi-Fi speed drop"
# dev5:12, "speed significantly decreased" dev5:18), "halved"/"reduction" as the change, and boot
# time or delays as the complaint ("100 ms boot time increase regression" dev5:20, "SDHCI AM654
# driver delaying boot time" dev5:21, "significant delays when secureboot is enabled since 6.10"
# dev5:23). A link's negotiated speed ("PCIe link speed reduced to 2.5GT/s") is the hardware's
# state, not a slowdown of the same work: "link speed" is not read.
PERF_TITLE = re.compile(
    r"\bslow(?:s|ed|er|ness|downs?|ing)?\b(?!\s+(?:block\s+)?(?:device|disk|drive|storage|link|network|media)s?\b)"
    r"|\b(?:perf|performance|throughput|bandwidth|IOPS|latency|(?<!link )speeds?)\b[^.]{0,40}?"
    r"\b(?:drop|degrad\w*|regress\w*|loss|hit|decrease\w*|penalty|halved|reduc\w*)"
    r"|\b(?:drop|degrad\w*|regress\w*|loss|decrease\w*|reduc\w*)\b[^.]{0,40}?\b(?:perf|performance|throughput|"
    r"bandwidth|IOPS|(?<!link )speeds?)\b"
    r"|\bboot[ -]?time\b[^.]{0,40}?\b(?:increase\w*|regress\w*|longer)|\bdelay(?:s|ing)\s+(?:the\s+)?boot"
    r"|\b(?:significant|long|huge|big|severe)\s+delays\b"
    # Issue 24, storage lists (fixtures/labels/dev6): performance with a bad word before it, "Lower
    # SSD-performance in 4.10 than in 4.9 kernel" (linux-ide, dev6:1), "Ceph Kernel client bad
    # performance for 5.4" (ceph-devel, dev6:5), "Worse performance than SquashFS for small
    # filesystems" (linux-erofs, dev6:11), "Poor read performance with bcache" (linux-bcache,
    # dev6:8). Whether it is a regression is _tied_to_change's: the last two name no change.
    r"|\b(?:lower|bad|poor|worse)\s+(?:\w+[ -])?performance\b",
    re.IGNORECASE,
)
# A functional failure in a title: crashes, hangs, splats, corruption, build and test failures.
BUG_TITLE = re.compile(
    r"\bcrash\w*|\boops\b|\bBUG\b|BUG_?ON|\bkernel bug\b|\bbug report\b|\bpanic\w*|\bhangs?\b|\bhung\b|"
    r"\bhanging\b|\bdeadlock\w*|\bNULL pointer|\bnull-ptr|\bcorrupt\w*|\bdata loss|\bsplat|\bWARNING\b|"
    r"\bwarning at\b|\bKASAN\b|\blockdep\b|circular locking|use-after-free|out-of-bounds|\bsegfault|"
    r"\bfail(?:s|ed|ure|ures|ing)?\b|\bbroken\b|\bbreaks?\b|\berror\b|not responding|\bfreezes?\b|"
    r"\bD state\b|soft lockup|protection fault|\bstall(?:s|ed)?\b|\bmismatch\b|\bwrong\b|\bincorrect\b|"
    r"\bStale\b|\bleak\w*"
    # errors in the plural name a failure too: "hdparm errors since 28ab9769117c" (linux-ide 2024,
    # dev6:37, regzbot-marked), "Multiple errors with DVD drive", "SATA errors accessing hidden
    # partitions" (linux-ide), "UBIFS ECC errors" (linux-mtd), "Frequent errors with OverlayFS on
    # root" (linux-unionfs)
    r"|\berrors\b",
    re.IGNORECASE,
)
# A title that says "regression" (or "regressed") without saying of what.
REGRESSION_TITLE = re.compile(r"\bregress(?:ion|ions|ed)?\b", re.IGNORECASE)

# Cheap literal gate before the body's slowdown scan: most mail holds none of these.
PERF_BODY_GATE = ("slow", "perform", "throughput", "% ", "worse", "CPU", "cpu", "take", "took", "need")
# A slowdown stated in the writer's own text: "sequential writes … are slower than before" (not
# "slower than usual xfstests", a symptom of a functional bug),
# "a massive slowdown of IO", "the degradation is introduced by commit …", "a significant drop
# in IO performance", "25% slower", "throughput dropped".
PERF_BODY = re.compile(
    r"\bslower\s+than\s+(?:before|with|on|in|under)\b"
    r"|\b(?:massive |big |huge |significant |severe |noticeable )slowdown\b"
    r"|\bslowed (?:down )?(?:from|to|by)\b"
    r"|\b(?:drop|decrease|loss|degradation|regression) (?:in|of) (?:\w+ )?(?:performance|throughput|IOPS|"
    r"bandwidth)\b"
    r"|\bperformance (?:drop|degradation|regression)\b"
    r"|\b\d+(?:\.\d+)?\s?% (?:slower|slowdown|performance (?:drop|loss|regression|hit))\b"
    # "5x slower in 6.5", "3 times slower than before", "bad performance for small writes"
    r"|\b\d+(?:\.\d+)?\s?(?:x|×|times) (?:slower|worse)\b"
    r"|\b(?:bad|poor|terrible|horrible) performance (?:for|of|with|on|when)\b"
    r"|\bthroughput (?:drop(?:s|ped)?|decrease[sd]?|went down)\b"
    # "approx 15% lower (2265 vs 2538)", "~20% fewer IOPS"
    r"|\b\d+(?:\.\d+)?\s?% (?:lower|less|fewer)\b"
    # a kernel thread busy where it was not: "kworker/u16:4+flush-8:16 uses 100% of one core for a
    # while (5-15 minutes)" (bugzilla, "regression since 6.5.0"), "high CPU usage since 6.x"
    # a run time against another: "In v6.6 it takes ~3s, while in v6.7 it takes ~18s" (dev5:26),
    # "takes 1min (±5s) … on 4.9, recent kernels need over 3mins" (dev5:14), "the kernel boot time
    # is ~20 seconds after 6.10 kernel. it's ~7 seconds on 6.8" (dev5:23)
    r"|\b(?:takes?|took|needs?|is)\s+(?:about\s+|around\s+|roughly\s+|over\s+|~\s*)?\d+(?:\.\d+)?\s*"
    r"(?:ms|s|secs?|seconds|mins?|minutes|hours)\b[^\n]{0,60}?\b(?:while|whereas|against|instead of|"
    r"compared (?:to|with)|vs\.?|but)\b[^\n]{0,40}?\d+(?:\.\d+)?\s*(?:ms|s|secs?|seconds|mins?|minutes|hours)\b"
    r"|\b(?:uses?|using|eats?|at|takes?)\s+(?:almost\s+|nearly\s+|about\s+)?100\s?% of (?:one|a|the|one of the)\s+"
    r"(?:cpu|core)s?\b|\bhigh(?:er)?\s+cpu\s+(?:usage|load|utili[sz]ation)\b",
    re.IGNORECASE,
)
# What a slowdown is measured against: a kernel ("kernel 5.19", "v6.7", "6.0.15", "6.4-rc3") or a
# commit (a bare 12-40 hex sha). A plain decimal ("3.2 ms") is no kernel.
# Issue 38: a stable series named as one, "isn't present in 5.2 series or 4.19 series kernels"
# (dev:59), "currently the 5.10 series" (dev6:22), "3.10 series / 4.18 series" (the issue).
PERF_ANCHOR = re.compile(r"\bv[2-6]\.\d{1,2}\b|\b(?:kernels?|linux)\s+v?[2-6]\.(?:\d{1,2}|x)\b|"
                         r"\b[2-6]\.\d{1,2}\s+series\b|"
                         r"\b[2-6]\.\d{1,2}(?:\.\d{1,3}|-rc\d+|\.[xy])\b|"
                         r"(?<![\w./-])(?-i:(?!0{8})[0-9a-f]{12,40})(?![\w./-])", re.IGNORECASE)
# git writes a sha in lower case: an upper-case run is a checksum ("sb.csum  FC6434BAB97C1B37" in
# bcache-super-show, linux-bcache dev6:8), and eight zeros open a pointer, not a sha
# ("mmc_request[0000000005d331e4]" in an mmc trace, linux-mmc dev5:63).
# A slowdown tied to a kernel change (issue 24): a report names what changed. A "commit" in a link's
# path ("…/e2fsprogs.git/commit/?id=…", a reference at the foot of a benchmark discussion) is no change
# named; a patch series the writer tested is ("tests much slower with your 20 patch … series"). Besides PERF_ANCHOR's
# kernels and commits: "6.5" after in/on/since/than/from/to ("5x slower in 6.5", "since 6.1"), an
# upgrade or update, a bisection, a commit or a revert. A complaint naming none ("RAID10 slower than
# a single drive", "slow discard on RAID1") is a performance complaint, not a regression report.
CHANGE_NAMED = re.compile(
    # A duration is no kernel: hdparm's "Timing cached reads: 20716 MB in  2.00 seconds" (its output
    # in linux-ide dev6:1, linux-bcache dev6:8, linux-nvme dev5:1) would read "in 2.00" as one.
    r"\b(?:in|on|with|since|than|from|to|after|before|and|vs\.?|versus)\s+(?:the\s+)?(?:linux\s+|kernel\s+)?"
    r"v?[2-6]\.\d{1,2}\b(?![.,]\d)(?!\s*(?:seconds?|secs?|s|ms|minutes?|mins?)\b)"
    r"|\bupgrad(?:e|ed|es|ing)\b|\bupdat(?:ed|ing)\s+(?:the\s+|my\s+|our\s+)?(?:kernel|to|from)\b"
    r"|\bbisect\w*|\bfirst bad commit\b|\b(?:introduced|caused)\s+by\b|(?<![/\w])commit\b(?![/=?])|\brevert\w*"
    # a patch series under test: "with your 20 patch directory lease series", "with Enzo's patches"
    r"|\b(?:with|after applying|applying)\s+(?:the\s+|your\s+|his\s+|her\s+|their\s+|these\s+|this\s+|\w+'s\s+)"
    r"(?:\d+[ -])?(?:\w+[ -]){0,3}?(?:patch(?:es|set)?\b|series\b)"
    r"|\b(?:newer|older|previous|new|old|recent|latest)\s+kernels?\b|\bkernel\s+update\b|#regzbot\s+\^?introduced",
    re.IGNORECASE)
# The writer says it is no regression: "present at least in 4.19 and 5.4 as well, so not a
# regression", "This is not a regression in 5.16, as it's reproducible in 5.15", "this is not a
# regression in 5.13. I had a similar failure in 5.11-rc2" (linux-ext4 2020-21). Kernels named to
# say the problem is old are no change: such mail is a complaint or a bug, not a regression report.
NOT_A_REGRESSION = re.compile(r"\b(?:is|so|it'?s|that'?s)\s+not\s+a\s+regression\b", re.IGNORECASE)
# A slowdown stated with a figure: a percentage, a factor ("5x slower", "twice as slow", "2/3",
# "throughput halved" dev5:8), or a
# value of a unit ("949 mb/sec", "4.1 ms", "12 minutes").
NUMBERS_STATED = re.compile(
    r"\d+(?:\.\d+)?\s?(?:%|x\b|×|times\b)|\b(?:twice|half|halved|double|doubled|thrice)\b|\b\d+/\d+\b(?!/)"
    r"|\d[\d,]*(?:\.\d+)?\s?(?:[KMGT]i?B(?:/s(?:ec)?)?\b|[kmg]b/s(?:ec)?\b|IOPS\b|iops\b|k?ops(?:/s(?:ec)?)?\b|"
    r"[mun]s(?:ec)?\b|µs\b|s\b|secs?\b|seconds?\b|minutes?\b|mins?\b|hours?\b|events/s|files/s|fps\b|"
    r"[MG]bps\b|[MG]bit/s|req/s|tps\b|transactions)"
    # a result per kernel or commit, one a line: " v5.4      1050K", " 0e7ab7efe774…  835k"
    r"|^[ \t|]*(?:v?[2-6]\.\d{1,2}\S*|[0-9a-f]{12,40})[ \t|:]+\d[\d.,]*",
    re.IGNORECASE | re.MULTILINE)
# characters of the writer's own text where a report names its change and figures: a per-kernel
# table may stand below a page of xfs_info and lsblk output
CHANGE_WINDOW = 12000
# regzbot's command that opens tracking on the message carrying it: a report, with its culprit or
# range (`#regzbot introduced: <sha>`, `#regzbot introduced: v6.3..v6.4`). `^introduced` marks the
# parent message instead. Seen in linux-btrfs and linux-nfs 2023 and linux-ext4 2024.
REGZBOT_INTRODUCED = re.compile(r"^[ \t]*#regzbot[ \t]+introduced\b:?[ \t]*\S", re.MULTILINE | re.IGNORECASE)
# bugzilla.kernel.org's Regression field in its mails (`        Regression: No` in every New: mail).
BUGZILLA_REGRESSION = re.compile(r"^[ \t]*Regression:[ \t]*(Yes|No)\b", re.MULTILINE | re.IGNORECASE)

# A patch posted without a `[PATCH]` tag ("merge extent blocks when possible", "[nfs-utils 1/2]
# Fix build failure …"): a sign-off or a diff in the writer's own text. Only a title that
# complains of speed keeps such a message a report (a report may carry its proposed fix).
PATCH_BODY = re.compile(r"^(?:Signed-off-by: |diff --git |From [0-9a-f]{40} Mon Sep 17 )", re.MULTILINE)
# A benchmark run with its measure: under a title that says "regression" and no more ("Regression
# in XFS for fsync heavy workload": dbench times; "Random write regression since <sha>": fio
# IOPS; "[REGRESSION] ext4: …": fs_mark files/sec), the writer measured speed, not a failure.
# xfstests and fstests are functional tests and are not listed.
BENCHMARK_NAME = re.compile(r"\b(?:fio|sysbench|fs_mark|fsmark|dbench|stress-ng|hackbench|filebench|fxmark|"
                            r"aim7|iozone|pgbench|unixbench|will-it-scale|vdbench|bonnie\+\+|perf bench|"
                            r"mmtests)\b")
MEASURE = re.compile(r"\b(?:IOPS|iops|throughput|latency|bandwidth|performance|files/s(?:ec)?|[KMG]i?B/s|"
                     r"ops/s(?:ec)?|events/s(?:ec)?)|-?\d+(?:\.\d+)?\s?%")
PERF_BODY_WINDOW = 3000  # characters of the writer's own text where a report states its complaint
