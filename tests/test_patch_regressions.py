"""Regressions measured against a patch series under review (issue 38): `patch-regression`.

A person's reply in a series' thread that states a slowdown with a figure and ties it to the
series is a report the daemon takes on; one without the tie or the figure is a report it is unsure
of (the day's digest). An improvement, a hedge, a question, or a slowdown told in the thread of a
series that fixes one, is no such report. The robot's regression report on a patch is one, with
its series read from the report's own lines. A patch whose commit message quotes the robot's
report is a patch, whatever tag its list puts before `[PATCH]`.
"""
from __future__ import annotations

import pytest

from triagebot.daemon import flow
from triagebot.parse.report import parse_message
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.report import Source, report_from_json, report_to_json

PERSON = "Lena Quist <lena@example.org>"
ROBOT = "kernel test robot <oliver.sang@intel.com>"
SERIES_ID = "20250310.4242-1-ivo@example.org"


def mail(subject: str, body: str, sender: str = PERSON, in_reply_to: str | None = SERIES_ID,
         message_id: str = "reply1@example.org") -> bytes:
    header = f"From: {sender}\nTo: Ivo Baran <ivo@example.org>\nCc: linux-block@example.org\nSubject: {subject}\n" \
             f"Date: Tue, 11 Mar 2025 09:00:00 +0000\nMessage-ID: <{message_id}>\n"
    if in_reply_to:
        header += f"In-Reply-To: <{in_reply_to}>\nReferences: <{in_reply_to}>\n"
    return (header + "\n" + body).encode()


RFT = "Re: [PATCH RFT v2 3/4] block: batch the plug flush"
# the example: "with this patch write drops 26% and read 14%", two fio commands
MEASURED = (
    "On my NVMe box (Xeon Gold 6346) with this patch write drops 26% and read 14%:\n\n"
    "  fio --name=w --rw=randwrite --bs=4k --iodepth=32 --ioengine=io_uring --size=4G --direct=1\n"
    "  fio --name=r --rw=randread --bs=4k --iodepth=32 --ioengine=io_uring --size=4G --direct=1\n\n"
    "w/o series: write 3.0M IOPS, read 2.9M IOPS\n"
    "w/ series:  write 2.2M IOPS, read 2.5M IOPS\n\n"
    "> On Mon, Mar 10, 2025 Ivo Baran wrote:\n> This batches the flush.\n>\n"
    "> base-commit: 0123456789abcdef0123456789abcdef01234567\n")


def test_a_measured_slowdown_tied_to_the_series_is_a_patch_regression_taken_on() -> None:
    report = parse_message(mail(RFT, MEASURED), Source("eml"))
    assert report.kind == "patch-regression"
    series = report.series
    assert series is not None
    assert series.subject == "[PATCH RFT v2 3/4] block: batch the plug flush"
    assert series.version == 2 and series.message_id == SERIES_ID
    assert series.base_commit == "0123456789abcdef0123456789abcdef01234567"  # b4's line, quoted
    assert series.attributed and "write drops 26%" in (series.statement or "")
    assert "26%" in series.numbers and "3.0M IOPS" in series.numbers  # as written
    assert [item.kind for item in report.reproducers] == ["fio", "fio"]
    assert report.from_ == PERSON  # the reporter
    assert not uncertain_reasons(report)  # the daemon takes it on
    assert report.kind in flow.REPORT_KINDS
    assert report_from_json(report_to_json(report)) == report


@pytest.mark.parametrize(("subject", "body", "missing"), [
    # a slowdown and a figure, no word tying it to the series: the author's boot time (dev7:12's form)
    ("Re: [RFC 1/3] lib: copy_{from,to}_user using gup", "Quickly comparing boot-time on a BeagleBone, boot time "
     "increases by only 4%, perhaps this worry is irrelevant.", "tie to the series in words"),
    # seen and tied, no figure (dev7:23's form with a tie)
    ("Re: [PATCH] iommu: add a counter to skip the flush", "We have seen a significant performance regression "
     "with this patch here.", "figure"),
])
def test_a_patch_regression_missing_a_figure_or_a_tie_is_unsure(subject: str, body: str, missing: str) -> None:
    report = parse_message(mail(subject, body), Source("eml"))
    assert report.kind == "patch-regression"
    [reason] = uncertain_reasons(report)
    assert f"no {missing}" in reason  # listed in the day's digest, not taken on
    assert report.kind in flow.DIGEST_KINDS


@pytest.mark.parametrize(("subject", "body"), [
    # a gain, not a slowdown (dev7:20's form)
    ("Re: [RFC PATCH] KVM: arm64: direct MSI injection", "For the NVMe disk I see a whopping 19% performance "
     "improvement with Marc's series."),
    # denied (dev7:56's form), hedged (linux-ext4 2024)
    ("Re: [PATCH] usb: uas: add a quirk", "I haven't been able to notice any slowdown myself, averaging 350MB/s "
     "with this patch."),
    ("Re: [PATCH 10/16] mm/filemap: uncached writes", "Right, it'd obviously just be much slower, by 20%, as you "
     "lose the pipelining of this patch."),
    # the slowdown a fix series is about: a reply there is about the regression, not the fix
    ("Re: [PATCH 0/2] ext4: Fix performance regression with mballoc", "With your patches the untar is still "
     "30% slower than with mb_optimize_scan=0."),
    # the robot's sentence retold by a person
    ("Re: [PATCH v2 1/2] nfs: cache the change attribute", "kernel test robot noticed a 23.6% regression of "
     "stress-ng.msg.ops_per_sec with this patch, FYI."),
])
def test_no_patch_regression(subject: str, body: str) -> None:
    assert parse_message(mail(subject, body), Source("eml")).kind == "reply"


def test_a_slowdown_asked_about_is_no_sure_report_but_a_digest_line() -> None:
    # asked (dev7:16's form): not taken on; the second look (possible_report.py) lists it in the
    # day's digest, where a person decides
    report = parse_message(mail("Re: [PATCH v10 3/6] mm: report free pages", "I've just been wondering why does "
                                "will-it-scale report a 1.5% regression with this patch."), Source("eml"))
    assert report.kind == "patch-regression" and report.series is not None and not report.series.attributed
    assert uncertain_reasons(report)


ROBOT_ON_PATCH = """
Hello,

kernel test robot noticed a -43.6% regression of vm-scalability.throughput on:


commit: 09f84589a8ed1162c0274a1b5b3dadb98ee3155e ("[PATCH v2 3/3] ACPI/NUMA: Remove architecture dependent remainings")
url: https://github.com/intel-lab-lkp/linux/commits/Robert-Richter/x86-numa-Fix-SRAT-lookup/20240319-200345
base: https://git.kernel.org/cgit/linux/kernel/git/rafael/linux-pm.git linux-next
patch link: https://lore.kernel.org/all/20240319120026.2246389-4-rrichter@example.org/
patch subject: [PATCH v2 3/3] ACPI/NUMA: Remove architecture dependent remainings

testcase: vm-scalability
test machine: 128 threads 2 sockets Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz (Ice Lake) with 256G memory
parameters:

\truntime: 300s
\tsize: 512G
\ttest: anon-cow-rand-hugetlb
\tcpufreq_governor: performance
"""


@pytest.mark.parametrize("subject", [
    "Re: [PATCH v2 3/3] ACPI/NUMA: Remove architecture dependent remainings",  # a reply to the patch
    "[acpi] 09f84589a8: vm-scalability.throughput -43.6% regression",  # its own subject, In-Reply-To the patch
])
def test_the_robots_report_on_a_patch_is_a_patch_regression(subject: str) -> None:
    patch_id = "20240319120026.2246389-4-rrichter@example.org"
    report = parse_message(mail(subject, ROBOT_ON_PATCH, ROBOT, in_reply_to=patch_id), Source("eml"))
    assert report.kind == "patch-regression"
    assert report.testcase == "vm-scalability" and dict(report.parameters)["size"] == "512G"
    series = report.series
    assert series is not None and series.attributed
    assert series.subject == "[PATCH v2 3/3] ACPI/NUMA: Remove architecture dependent remainings"
    assert series.version == 2 and series.message_id == "20240319120026.2246389-4-rrichter@example.org"
    assert series.tree == "https://git.kernel.org/cgit/linux/kernel/git/rafael/linux-pm.git linux-next"
    assert series.numbers == ("-43.6%",)
    assert not uncertain_reasons(report)


def test_the_robots_report_on_a_merged_commit_stays_an_lkp_regression() -> None:
    text = ROBOT_ON_PATCH.replace('("[PATCH v2 3/3] ACPI/NUMA: Remove architecture dependent remainings")',
                                  '("ACPI/NUMA: Remove architecture dependent remainings")')
    patch_lines = ("url:", "patch link:", "patch subject:")
    text = "\n".join(line for line in text.split("\n") if not line.startswith(patch_lines))
    report = parse_message(mail("[linus:master] [ACPI/NUMA] 09f84589a8: vm-scalability.throughput -43.6% regression",
                                text, ROBOT, in_reply_to=None), Source("eml"))
    assert report.kind == "lkp-regression" and report.series is None


QUOTING_PATCH = """The kernel test robot reported a slowdown of the locked path:

  kernel test robot noticed a -12.5% regression of stress-ng.lockbus.ops_per_sec on:

  commit: 1234567890abcdef1234567890abcdef12345678 ("f2fs: take the lock early")

Take the lock late again.

Reported-by: kernel test robot <oliver.sang@intel.com>
Closes: https://lore.kernel.org/oe-lkp/202501011234.abcdef12-oliver.sang@intel.com
Signed-off-by: Ivo Baran <ivo@example.org>
---
 fs/f2fs/file.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/fs/f2fs/file.c b/fs/f2fs/file.c
"""


@pytest.mark.parametrize("subject", [
    "[f2fs-dev] [PATCH] f2fs: take the lock late again",  # a list's tag before [PATCH]
    "f2fs: take the lock late again",  # no tag at all: a sign-off and a diff say it is a patch
])
def test_a_patch_quoting_the_robots_report_is_a_patch_not_the_report(subject: str) -> None:
    report = parse_message(mail(subject, QUOTING_PATCH, "Ivo Baran <ivo@example.org>", in_reply_to=None),
                           Source("eml"))
    assert report.kind == "other"
    assert report.kind not in flow.REPORT_KINDS


@pytest.mark.parametrize("text", [
    "performance regresses by about 20%", "a performance regression", "it regressed by 5%", "perf drop 26%",
    "a performance degradation of ~2%", "a performance killer", "a speed degradation",
    "a significant impact on\nperformance", "a consistent 40% impact on performance", "noticeably slower",
    "a real slowdown", "it slows things down", "a slight lower performance", "much lower throughput",
    "IMX6q performs worse", "no improvement, or even worse", "is not as good\nas with it", "not as fast as",
    "boot time increases by only 4%", "latency went up", "write drops 26% and read 14%",
    "dropping from 13.070 to 10.550 M/s", "a 10% regression", "a ~2% drop",
    "about 12% perf degrade once applied", "performance degrades as threads grow", "a 35% worse start-up time",
    "nearly 18% less bandwidth",
])
def test_every_slowdown_form_passes_the_literal_gate(text: str) -> None:
    from triagebot.parse.patch_reports import SLOWDOWN, may_state_slowdown

    assert SLOWDOWN.search(text), text  # the form itself
    assert may_state_slowdown(text.lower()), text  # and the cheap gate in front of it


def test_the_gate_lets_a_plain_review_through_unsearched() -> None:
    from triagebot.parse.patch_reports import may_state_slowdown

    assert not may_state_slowdown("please drop the lock before the fallback; the rest looks fine.")
    assert not may_state_slowdown('printf("%d", x); is the time right here?')


# --- issue 38, second round: forms seen on lists the first round never read (fixtures/labels/dev8) ---
PPC = "Re: [PATCH v3 2/5] powerpc/64: move the syscall exit to C"


@pytest.mark.parametrize("body", [
    # "~15% perf degrade with this patchset applied" (dev8:64): the noun "degrade"
    "Ran my page-walk microbenchmark on a Graviton guest: roughly 12% perf degrade with this series applied.\n",
    # "50% worse boot times (20 -> 30s)" (dev8:3): "N% worse", and "N% less <metric>" (corpus iomap report)
    "With v3 of your series I get 35% worse start-up times on the board (40 -> 54 s), every run.\n",
    "With these patches the NAS shows nearly 18% less bandwidth on sequential writes (610 MB/s, was 744 MB/s).\n",
])
def test_the_second_rounds_forms_make_a_patch_regression(body: str) -> None:
    report = parse_message(mail(PPC, body), Source("eml"))
    assert report.kind == "patch-regression"
    assert report.series is not None and report.series.numbers


def test_a_gain_column_in_a_table_is_a_heading_not_a_gain() -> None:
    # A tester's perf bench table whose last column is headed "Improvement" (its cells negative) and
    # the sentence under it stating a loss (dev8:11, dev8:12, dev8:41; the heading wrapped by a mail
    # client in dev8:11): the heading claims no gain, the loss is read.
    body = ("Results for perf bench syscall, 100,000 loops:\n"
            "| Metric   | Without series | With series |\nImprovement |\n"
            "| usecs/op | 0.1031 | 0.1057 | -2.5% |\n"
            "| ops/sec  | 9,699,321 | 9,460,737 | -2.5% |\n"
            "A 2.5% performance degradation shows up with the perf bench syscall test.\n")
    report = parse_message(mail(PPC, body), Source("eml"))
    assert report.kind == "patch-regression"
    assert "2.5% performance degradation" in report.series.statement
    # a gain claimed in words makes it a mixed claim (dev7:14): no sure report, a digest line
    mixed = body.replace("A 2.5% performance degradation shows up", "It is a nice improvement, though a 2.5% "
                         "performance degradation shows up")
    read = parse_message(mail(PPC, mixed), Source("eml"))
    assert read.kind == "patch-regression" and uncertain_reasons(read)


@pytest.mark.parametrize("body", [
    # "a performance degradation of less than 0.6% without vs with this patch" (dev8:42, a reviewer
    # finding no change), "(<1% slower)" (linux-ext4 2024 cover letters), "<1% worse" (dev8:31)
    "Timed the tracer enable path 20 times: with this patch I see a performance degradation of less than "
    "0.4%, the same as without it.\n",
    "On my 4-socket box the series costs <1% slower getpid() loops, well inside the noise.\n",
    "Runs with these patches are under 1% slower than without, so nothing to worry about.\n",
])
def test_a_slowdown_bounded_as_negligible_is_no_report(body: str) -> None:
    report = parse_message(mail(PPC, body), Source("eml"))
    assert report.kind == "reply"


def test_a_bound_on_another_quantity_leaves_the_slowdown_read() -> None:
    body = "With this series and under 10% free space, my untar runs 30% slower (41 s against 31.5 s).\n"
    assert parse_message(mail(PPC, body), Source("eml")).kind == "patch-regression"


@pytest.mark.parametrize("body", [
    # an author answering "what does it cost?" with a guess beside a table of gains (dev12:2)
    "As for the performance hit of this series, it should be similar to the plain bounce buffer.\n\n"
    "  w/o series  244.1 Mbit/s\n  w/ series   246.9 Mbit/s\n",
    # a writer reckoning what cost would be acceptable (dev12:73)
    "I'm trying to think about what kind of slowdown with this patch would be reasonable at 115200 baud: "
    "64 bytes take 5.6 ms.\n",
])
def test_a_slowdown_followed_by_a_modal_estimate_is_reckoned_not_measured(body: str) -> None:
    report = parse_message(mail(PPC, body), Source("eml"))
    assert not (report.kind == "patch-regression" and not uncertain_reasons(report))  # never taken on
    assert report.kind == "reply"


def test_a_measured_slowdown_with_a_modal_elsewhere_stays_a_report() -> None:
    # the modal is about the fix, not the slowdown's estimate: still a measured regression
    body = "With this series my untar runs 30% slower (41 s against 31.5 s); a fix should be easy.\n"
    assert parse_message(mail(PPC, body), Source("eml")).kind == "patch-regression"
