"""A person's report states its change in more forms than one sentence with a percentage (issue 16):
a value before and after, results pasted per kernel, a signed change under the values it compares."""
from __future__ import annotations

from triagebot.parse.reported import reported_headline
from triagebot.records.report import Headline


def test_a_rate_from_one_value_to_another_in_words_across_scales() -> None:
    text = "A scrub has slowed from about 2.9 gb/sec to about 949 mb/sec since the upgrade.\n"
    assert reported_headline(text) == Headline("MB/s", -67.3, "regression")


def test_results_pasted_under_each_kernel_take_the_older_kernel_as_before() -> None:
    newer_first = ("6.1.27/6.1.23\nfio bw=2623MiB/s (2750MB/s)\nperf report:\n  31.07%  fio\n\n"
                   "5.15.110\nfio bw=6796MiB/s (7126MB/s)\n")
    assert reported_headline(newer_first) == Headline("MiB/s", -61.4, "regression")
    older_first = "5.15.y result\n\tfio WRITE: bw=5139MiB/s (5389MB/s),\n6.4-rc3 result\n\tfio  WRITE: bw=2599MiB/s\n"
    assert reported_headline(older_first) == Headline("MiB/s", -49.4, "regression")


def test_a_result_per_setup_under_each_kernel_gives_the_worst_change() -> None:
    text = ("kernel 5.15.46\n\nsingle\n13.5GiB 0:00:28 [ 487MiB/s]\nraid1\n13.5GiB 0:00:29 [ 467MiB/s]\n\n"
            "6.0.15\nsingle\n13.5GiB 0:00:27 [ 495MiB/s]\nraid1\n13.5GiB 0:00:38 [ 359MiB/s]\n")
    assert reported_headline(text) == Headline("MiB/s", -23.1, "regression")


def test_three_kernels_state_no_single_change() -> None:
    text = "5.15\nbw=100MiB/s\n6.1\nbw=90MiB/s\n6.6\nbw=80MiB/s\n"
    assert reported_headline(text) is None


def test_a_rate_per_kernel_in_one_sentence() -> None:
    text = "On v6.8 it averages 3.12 GB/s over five runs; on v6.9-rc1 it averages 2.68 GB/s.\n"
    assert reported_headline(text) == Headline("GB/s", -14.1, "regression")


def test_a_signed_change_takes_the_unit_of_the_rates_above_it() -> None:
    text = ("  WRITE: bw=1191MiB/s (1249MB/s), io=350GiB (376GB), run=300714-300714msec\n"
            "  WRITE: bw=1747MiB/s (1832MB/s), io=748GiB (803GB), run=438134-438134msec\n\n"
            "So, it is -31.8% performance down with the commit.\n")
    assert reported_headline(text) == Headline("MiB/s", -31.8, "regression")
    assert reported_headline("So, it is -31.8% performance down with the commit.\n") is None  # no values


def test_a_percentage_with_a_tilde_a_range_or_the_sign_in_a_word_before_it() -> None:
    assert reported_headline("fs_mark files/sec down ~18% since v6.8-rc1.\n") == \
        Headline("files/s", -18.0, "regression")
    assert reported_headline("Writes are 20-25% slower, about 1200 IOPS now.\n") == Headline("IOPS", -22.5,
                                                                                              "regression")
    assert reported_headline("IOPS dropped by about 30% on 6.9.\n") == Headline("IOPS", -30.0, "regression")


def test_a_quantity_before_and_after() -> None:
    # a latency maximum, a kernel thread's CPU time, a run time in minutes
    assert reported_headline("Max latency 4.1 ms before, 126 ms after the change.\n") == \
        Headline("ms", 2973.2, "regression")
    assert reported_headline("kworker/u16:2 CPU time before: 2.1 seconds, after: 41.7 seconds.\n") == \
        Headline("s", 1885.7, "regression")
    assert reported_headline("An untar went from 3 minutes to 12 minutes (4x).\n") == \
        Headline("min", 300.0, "regression")
    assert reported_headline("fio: clat (usec): min=3, max=1053, avg=4.60\n") is None  # fio's min= is no run time


def test_before_and_after_reverting_is_read_the_other_way_round() -> None:
    text = "I see 510 MB/s before and 590 MB/s after reverting it on top of v6.8.\n"
    assert reported_headline(text) == Headline("MB/s", -13.6, "regression")


# Issue 24 round three (fixtures/labels/dev5): times people write glued, with words after them,
# per kernel in either order, and a value "slowing to" another.
def test_a_time_from_one_value_to_another_with_words_after_each() -> None:
    text = "Probe time grew on 6.2 compared to 6.1 (from 1.20s after init to 3.00s after init).\n"
    assert reported_headline(text) == Headline("s", 150.0, "regression")


def test_a_run_time_per_kernel_either_way_round_the_older_kernel_first() -> None:
    one_sentence = "In v6.3 it takes ~4s, while in v6.4 it takes ~21s.\n"
    assert reported_headline(one_sentence) == Headline("s", 425.0, "regression")
    two_sentences = "The boot takes ~30 seconds after 6.11 kernel. It is ~10 seconds on 6.9 kernel.\n"
    assert reported_headline(two_sentences) == Headline("s", 200.0, "regression")


def test_a_value_that_slows_to_another_across_a_line() -> None:
    text = "Resume completes in a median of 300 ms up to 6.1-rc7.\n\nWith the commit, it slows to 450 ms.\n"
    assert reported_headline(text) == Headline("ms", 50.0, "regression")


def test_hundreds_are_no_seconds_and_one_kernel_states_no_change() -> None:
    assert reported_headline("We run 100s of jobs on 6.4 and 100s of jobs on 6.5 alike.\n") is None
    assert reported_headline("On 6.5 a run takes 20 seconds.\n") is None


def test_a_range_in_parentheses_before_a_loss_of_throughput() -> None:
    text = "Lately I see a significant (10-14%) loss in NFS throughput.\n"
    assert reported_headline(text) == Headline("performance", -12.0, "regression")
