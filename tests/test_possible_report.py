"""The second look (issue 38: nothing that may be a report is dropped silently).

A person's message the kind rules leave unread, whose own text may state a slowdown, becomes a
report the daemon is unsure of: a `patch-regression` with no tie to the series in a series'
thread, else a `human-perf-complaint`. Neither is taken on; the day's digest lists each. A hedge,
a question, a fix's own words, a code delay, a patch, a robot and a reply answering the report it
quotes stay what they were.
"""
from __future__ import annotations

import pytest

from triagebot.daemon import flow
from triagebot.parse.possible_report import possible_slowdown
from triagebot.parse.report import parse_message
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.report import Report, Source

PERSON = "Tove Rask <tove@example.org>"


def mail(subject: str, body: str, sender: str = PERSON, in_reply_to: str | None = "cover@example.org") -> Report:
    header = f"From: {sender}\nTo: dev@example.org\nSubject: {subject}\n" \
             "Date: Wed, 12 Mar 2025 10:00:00 +0000\nMessage-ID: <second@example.org>\n"
    if in_reply_to:
        header += f"In-Reply-To: <{in_reply_to}>\nReferences: <{in_reply_to}>\n"
    return parse_message((header + "\n" + body).encode(), Source("eml"))


def digested(report: Report) -> bool:
    """What flow.post_digests lists and flow.admit leaves: a digest kind the daemon is unsure of."""
    return report.kind in flow.DIGEST_KINDS and bool(uncertain_reasons(report))


SERIES = "Re: [PATCH v3 2/5] mmc: host: move the tuning retries into the core"


@pytest.mark.parametrize("body", [
    # signed changes per job, no word of slowness
    "I ran my usual set on the board.\n\n8 jobs, 4k:\n  rand read: -7.1%\n  rand write: -18.3%\n  seq write: -40.2%\n\n"
    "One job looks fine.\n",
    # a duration grown, in words no earlier form knows
    "On the Rockchip board the card now takes about 6 seconds longer to come up after resume.\n",
    # an overhead stated with a unit and a figure
    "Our CI sees a 12% overhead in run time for the whole mmc test suite.\n",
    # a duration grown, said outright, with no figure
    "Probing the eMMC on the Jetson now takes noticeably longer, and the boot test hits its limit.\n",
    # a measured time that triples, a figure in words
    "Card detection time nearly triples on the i.MX8 with this applied.\n",
    # "N% longer" beside a time the writer measures
    "A full allmodconfig went from 9m10s to 9m50s here, so about 7% longer build time.\n",
    # a rate that drops, in bits per second
    "On the SDIO WLAN card the effective throughput drops to 4 Mbit/s in 2.4 GHz mode.\n",
    # a figure in words
    "Resume from s2idle increases by two seconds on the Chromebook.\n",
])
def test_a_slowdown_in_words_the_kind_rules_do_not_know_is_a_digest_line_in_a_series_thread(body: str) -> None:
    report = mail(SERIES, body)
    assert report.kind == "patch-regression"
    assert report.series is not None and not report.series.attributed  # never sure
    assert report.series.subject == "[PATCH v3 2/5] mmc: host: move the tuning retries into the core"
    assert digested(report)
    assert any("tie to the series" in reason for reason in uncertain_reasons(report))


def test_a_figure_read_from_the_sentence_is_kept() -> None:
    report = mail(SERIES, "With 5.3 and this set, fio seq write fell to 212 MB/s, a 31% regression for us.\n")
    assert report.series is not None
    assert "31%" in report.series.numbers and "212 MB/s" in report.series.numbers


def test_a_slowdown_told_outside_a_series_thread_is_a_complaint_in_the_digest() -> None:
    report = mail("Re: eMMC trouble on the new boards",
                  "Since moving these boards to 6.9, boot time increased by 9 seconds, all of it in mmc probing.\n")
    assert report.kind == "human-perf-complaint"
    assert digested(report)


def test_a_new_post_with_no_patch_is_read_whatever_its_discussion_tag() -> None:
    report = mail("[RFC] tuning retries make every resume slow", "Hi,\n\nOn 6.10 our resume is much slower: "
                  "62 ms before, 410 ms now, as measured with the pm trace points.\n", in_reply_to=None)
    assert report.kind == "human-perf-complaint"
    assert digested(report)


def test_a_functional_report_stating_a_slowdown_reaches_the_digest() -> None:
    report = mail("[REGRESSION] mmc0: timeout waiting for hardware interrupt on 6.11",
                  "The card still works, but reads dropped from 88 MB/s to 11 MB/s and the log fills with "
                  "timeouts.\n", in_reply_to=None)
    assert report.kind == "human-perf-complaint"
    assert digested(report)


@pytest.mark.parametrize("body", [
    "This would make the retry loop slower by 5% on slow cards, I think.\n",  # a worry
    "Could this cause a 10% throughput drop on eMMC?\n",  # asked
    "This fixes a 20% throughput regression introduced by the tuning rework.\n",  # the fix's words
    "The controller needs a 100 ms delay after the clock change, see the TRM.\n",  # code's delay
    "We wait longer than 1 second only for the slower link speeds.\n",  # code's wait, no claim of ours
    "Looks good to me.\n\nReviewed-by: Tove Rask <tove@example.org>\n",
    "The spec allows +50% -0% on this timeout.\n",  # a tolerance, no drop
    "Tuning at slower clock rates is needed for these cards, 25 MHz at most.\n",  # a kind of thing
])
def test_what_states_no_slowdown_of_the_writers_stays_a_reply(body: str) -> None:
    report = mail(SERIES, body)
    assert report.kind == "reply", possible_slowdown(body)


def test_a_cc_line_naming_the_regressions_list_is_no_slowdown() -> None:
    assert possible_slowdown("[+cc Ana, Bo, regressions, boot]\n\nThe probe order changed in 6.2.\n") is None


def test_a_reply_answering_the_slowdown_it_quotes_keeps_its_stance_reading() -> None:
    body = ("> With this series applied, seq write is 30% slower on my board (120 MB/s vs 171 MB/s).\n\n"
            "Same here: on my board the card takes about 9 seconds longer to come up.\n")
    report = mail(SERIES, body)
    assert report.kind == "reply"


def test_a_patch_and_the_robot_get_no_second_look() -> None:
    patch = ("Reads were 30% slower after the tuning rework; restore the old retry count.\n\n"
             "Signed-off-by: Tove Rask <tove@example.org>\n---\n"
             "diff --git a/drivers/mmc/core/core.c b/drivers/mmc/core/core.c\n")
    assert mail("mmc: core: restore the retry count", patch, in_reply_to=None).kind == "other"
    robot = mail(SERIES, "Throughput dropped by 22% on our box, 4k reads.\n",
                 sender="kernel test robot <lkp@intel.com>")
    assert robot.kind == "reply"


def test_the_second_look_takes_nothing_on() -> None:
    report = mail(SERIES, "The whole suite ran 25% slower with this series applied, 40 s against 32 s.\n")
    # a tie and a figure: the kind rules' own sure reading, not the second look's
    assert report.kind == "patch-regression" and not uncertain_reasons(report)
    report = mail(SERIES, "On our ARM box, hackbench is 14% lower: 3.1 s becomes 3.6 s in the pipe mode.\n")
    assert report.kind == "patch-regression" and uncertain_reasons(report)
    assert report.kind in flow.REPORT_KINDS  # yet admit skips it: flow.admit takes no unsure report


def test_a_sentence_stating_and_denying_a_slowdown_is_no_sure_report() -> None:
    # a variant's cost argued small: not taken on, but a person sees it in the digest
    report = mail(SERIES, "With this series the loop is slower, but it's not 20% slower as feared: 1.2 s vs 1.18 s.\n")
    assert report.kind == "patch-regression" and uncertain_reasons(report)


def test_a_bug_trackers_new_mail_carries_a_persons_report() -> None:
    # the title names a failure, the text a slowdown the kind rules do not read: a digest line,
    # though a bug tracker sent the mail
    body = ("https://bugzilla.kernel.org/show_bug.cgi?id=300001\n\n            Bug ID: 300001\n"
            "           Summary: sdhci timeout errors on 6.12\n\n"
            "The log fills with sdhci timeout errors, and card reads drop to 4 MB/s from 80 MB/s.\n")
    report = mail("[Bug 300001] New: sdhci timeout errors on 6.12", body,
                  sender="bugzilla-daemon@kernel.org", in_reply_to=None)
    assert report.kind == "human-perf-complaint"
    assert digested(report)


def test_a_regression_beside_a_size_is_functional_and_a_degradation_by_a_share_is_speed() -> None:
    assert possible_slowdown("A kernel regression when xattrs are written, on a 20GB virtio drive.") is None
    assert possible_slowdown("Those two calls matter most, and they degrade ~15% with v4.") is not None


def test_a_digest_line_quotes_the_sentence_to_decide_on_escaped() -> None:
    from triagebot.notify import render
    report = mail(SERIES, "On the <!channel> board the card now takes noticeably longer to come up after resume.\n")
    payload = render.digest_message("2025-03-12", [(report, uncertain_reasons(report))])
    [line] = [block["text"]["text"] for block in payload["blocks"] if "accessory" in block]
    assert "“On the &lt;!channel&gt; board the card now takes noticeably longer to come up after resume.”" in line
    assert "<!channel>" not in line


@pytest.mark.parametrize(("subject", "body"), [
    # the subject says it, the text only where and since when
    ("[Bug 300002] New: xhci resume takes far too long, 900 ms to 1.4 s",
     "Bisected on 6.4-rc3 to the new resume callback; the trace is attached."),
    ("Keyboard input sluggish after resume since 6.8", "Typing lags behind by a second or so; 6.7 was fine."),
    ("Fwd: ksoftirqd at high CPU usage after updating to 6.1.20", "Forwarding a distro report, see below."),
    ("Transfers to USB sticks extremely slow on 6.5", "It copies, but at a crawl; nothing in dmesg."),
    ("UART probe delayed on 6.2", "The console comes up with a 20 seconds delay compared with 6.1."),
    ("modprobe of the SPI TPM driver", "On 6.10-rc1 the module is taking several minutes to probe, 3 s on 6.9."),
    ("Camera streaming on the i.MX board", "Since 6.6 the frame rate is significantly reduced, with dropped frames."),
])
def test_a_thread_starters_forms_reach_the_digest(subject: str, body: str) -> None:
    report = mail(subject, body, in_reply_to=None)
    assert report.kind in ("human-perf-complaint", "human-report")
    assert digested(report) or not uncertain_reasons(report)


def test_a_delay_in_a_review_is_the_codes_not_a_symptom() -> None:
    assert mail(SERIES, "Keep the 20 seconds delay here, the controller needs it after reset.\n").kind == "reply"


def test_a_reply_in_a_thread_whose_subject_states_a_slowdown_answers_it() -> None:
    # the thread is the complaint's: a reply there telling what the writer sees is read for stance
    body = "Same here on a Graviton box: high CPU usage from the irq thread, 35% during the fio run.\n"
    assert mail("Re: smmu high cpu usage with NVMe on 6.6", body).kind == "reply"
    assert mail("Re: eMMC trouble on the new boards", "Since 6.9 the irq thread sits at high CPU usage "
                "during every fio run, 35% against 5%.\n").kind == "human-perf-complaint"


@pytest.mark.parametrize("body", [
    # a time per side in one sentence wrapped after "the kernel is", no word of slowness (dev12:53)
    "I ran the getuid loop again: it takes about 1.20 seconds of sys time before the kernel is\npatched, "
    "and about 1.31 seconds after the kernel is patched.\n",
    # a line per side, the option named on each (dev12:58)
    "Rough numbers from hackbench, 30 runs each:\n"
    "With card_tuning=off, the run takes around 3.02 seconds\n"
    "With card_tuning=on, the run takes around 3.19 seconds\n",
    # a rate per side: the changed side's falls
    "fio seq read on the eMMC:\nbefore: 180 MB/s\nafter: 151 MB/s\n",
])
def test_figures_alone_without_and_with_the_series_are_a_digest_line(body: str) -> None:
    report = mail(SERIES, body)
    assert report.kind == "patch-regression"
    assert report.series is not None and not report.series.attributed and digested(report)
    assert report.series.numbers and report.series.numbers[0][0].isdigit()


@pytest.mark.parametrize("body", [
    # the changed side is the faster: the author's gain
    "fio seq read on the eMMC:\nbefore: 151 MB/s\nafter: 180 MB/s\n",
    # within the verdict's floor
    "before: 3.02 s\nafter: 3.04 s\n",
    # a mixed result: a time grows while a rate grows too
    "before: 3.0 s and 150 MB/s\nafter: 3.2 s and 170 MB/s\n",
    # one side only, and a board named with "on"
    "On an 885, the syscall loop reports 2227 ns.\n",
])
def test_figures_that_show_no_slowdown_leave_a_reply(body: str) -> None:
    assert mail(SERIES, body).kind == "reply"


def test_figures_alone_outside_a_series_thread_are_not_read() -> None:
    body = "before: 180 MB/s\nafter: 151 MB/s\n"
    assert mail("Re: what is your eMMC read speed?", body).kind == "reply"


def test_a_time_in_greek_mu_or_a_lookalike_s_is_read_or_passed_over() -> None:
    # the micro sign and the Greek mu fold together; a long s (folds to s) is no unit here
    body = "before: 310 \u03bcs\nafter: 362 \u03bcs\n"
    assert mail(SERIES, body).kind == "patch-regression"
    assert mail(SERIES, "before: 310 \u017f\nafter: 362 \u017f\n").kind == "reply"


def test_a_revert_or_a_kernel_version_names_no_side() -> None:
    # "after reverting" is the side without the change, "with kernel 6.1" a version: no pair
    body = "After reverting the old commit the loop takes 3.4 s.\nWithout the series it takes 3.0 s.\n"
    assert mail(SERIES, body).kind == "reply"
    body = "Without the series: 3.0 s\nWith kernel 6.1 it takes 3.4 s.\n"
    assert mail(SERIES, body).kind == "reply"
