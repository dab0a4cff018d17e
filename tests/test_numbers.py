"""A reply's own before/after numbers decide its stance, with the statistics kept as evidence."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, PROJECT, SHARED
from triagebot.ingest.inputs import iter_inputs
from triagebot.parse.measurements import read_measurements, side_of
from triagebot.parse.message import decode_message
from triagebot.parse.numbers import better_direction, combine_stance, judge_numbers
from triagebot.parse.quoting import split_quotes
from triagebot.parse.report import parse_message
from triagebot.parse.stance import Stance
from triagebot.parse.thread import build_threads
from triagebot.present.summary import render_report
from triagebot.records.report import Headline, Measurement, Report, Source, report_from_json, report_to_json

NUMBERS = FIXTURES / "numbers"


def parsed(name: str) -> Report:
    return parse_message((NUMBERS / name).read_bytes(), Source("eml"))


def test_the_report_states_the_change_the_replies_are_judged_against() -> None:
    report = parsed("report-sysbench-cpu-24.6pct.eml")
    assert report.kind == "human-report"
    assert report.headline == Headline("events/s", -24.6, "regression")
    assert report.stance_numbers is None  # a report's own numbers are its claim, not a rerun


def test_the_issue_example_is_not_reproduced_with_the_statistics_shown() -> None:
    reply = parsed("reply-not-reproduced-mean-sigma.eml")
    assert reply.kind == "reply" and reply.stance == "not-reproduced"
    numbers = reply.stance_numbers
    assert numbers is not None and numbers.outcome == "not-reproduced"
    assert (numbers.base_label, numbers.base_mean, numbers.base_stddev, numbers.base_runs) == ("before", 2341, 41, 5)
    assert (numbers.suspect_label, numbers.suspect_mean, numbers.suspect_stddev, numbers.suspect_runs) == (
        "after", 2322, 38, 5)
    assert numbers.reported_change_percent == -24.6 and numbers.unit == "events/s"
    assert numbers.p_value == pytest.approx(0.4692, abs=1e-4)
    assert numbers.evidence == ("before 2341±41 events/s (n=5) vs after 2322±38 events/s (n=5): "
                                "\u22120.8% [\u22123.2%, +1.7%], Welch p=0.47 \u2192 not reproduced "
                                "(reported \u221224.6%)")
    assert reply.stance_evidence == numbers.evidence
    # the values themselves are kept among the measurements, with their side, spread and runs
    assert [(item.label, item.value, item.stddev, item.runs, item.unit) for item in reply.measurements] == [
        ("before", 2341.0, 41.0, 5, "events/s"), ("after", 2322.0, 38.0, 5, "events/s")]


def test_a_reply_whose_numbers_show_the_slowdown_reproduces_it() -> None:
    reply = parsed("reply-reproduced-mean-sigma.eml")
    assert reply.stance == "reproduced"
    assert reply.stance_numbers is not None
    assert reply.stance_numbers.evidence.startswith("before 2352±35 events/s (n=5) vs after 1791±29 events/s (n=5): "
                                                    "\u221223.9% [\u221225.6%, \u221222.1%], Welch p<0.001 "
                                                    "\u2192 reproduced")


def test_one_run_a_side_is_inconclusive_and_the_words_stand() -> None:
    reply = parsed("reply-one-run-each-words-decide.eml")
    assert reply.stance == "reproduced"
    assert reply.stance_evidence == "I can reproduce this on my workstation, one run of each:"
    assert reply.stance_numbers is not None and reply.stance_numbers.outcome == "inconclusive"
    assert reply.stance_numbers.p_value is None
    assert reply.stance_numbers.evidence.endswith("\u2192 inconclusive: no run count given (reported \u221224.6%)")


def test_decisive_numbers_overrule_the_words_and_keep_them_in_the_evidence() -> None:
    reply = parsed("reply-numbers-overrule-words.eml")
    assert reply.stance == "not-reproduced"
    assert reply.stance_evidence is not None and reply.stance_numbers is not None
    assert reply.stance_evidence == (reply.stance_numbers.evidence
                                     + '; the words said reproduced: "I can reproduce the regression here."')


@pytest.mark.parametrize(("name", "stance", "labels", "runs"), [
    ("reply-kernel-versions-plusminus.eml", "reproduced", ("6.8", "6.9-rc1"), (6, 6)),
    ("reply-relative-spread.eml", "not-reproduced", ("base", "patched"), (8, 8)),
    ("reply-sysbench-runs-under-headers.eml", "reproduced", ("before", "after"), (5, 5)),
])
def test_other_forms_of_posted_numbers(name: str, stance: str, labels: tuple[str, str], runs: tuple[int, int]) -> None:
    reply = parsed(name)
    numbers = reply.stance_numbers
    assert numbers is not None and reply.stance == stance == numbers.outcome
    assert (numbers.base_label, numbers.suspect_label) == labels
    assert (numbers.base_runs, numbers.suspect_runs) == runs


def test_runs_pasted_under_side_headers_are_summarised() -> None:
    numbers = parsed("reply-sysbench-runs-under-headers.eml").stance_numbers
    assert numbers is not None
    assert numbers.base_mean == pytest.approx(sum([2355.41, 2349.87, 2361.02, 2340.66, 2352.30]) / 5)
    assert numbers.base_stddev == pytest.approx(7.518, abs=1e-3)


def test_a_relative_spread_is_taken_relative_to_its_value() -> None:
    numbers = parsed("reply-relative-spread.eml").stance_numbers
    assert numbers is not None and numbers.base_stddev == pytest.approx(2350 * 0.015)


def test_one_fio_run_a_side_under_headers_is_inconclusive() -> None:
    reply = parsed("reply-fio-one-run-a-side.eml")
    numbers = reply.stance_numbers
    assert reply.stance == "none"
    assert numbers is not None and numbers.outcome == "inconclusive"
    assert (numbers.base_label, numbers.base_mean, numbers.suspect_label, numbers.suspect_mean) == (
        "Without the merge", 51800.0, "With the merge", 44100.0)
    assert numbers.unit == "IOPS" and "fewer than 2 runs a side" in numbers.evidence


def test_the_reported_change_comes_from_a_quoted_lkp_report() -> None:
    reply = parsed("reply-lkp-quoted-ops.eml")
    assert reply.headline is not None and reply.headline.change_percent == -42.3
    numbers = reply.stance_numbers
    assert numbers is not None and numbers.reported_change_percent == -42.3
    assert reply.stance == "not-reproduced" and numbers.evidence.endswith("(reported \u221242.3%)")


def test_with_no_report_quoted_a_worse_time_reproduces() -> None:
    reply = parsed("reply-unquoted-no-reported-change.eml")
    numbers = reply.stance_numbers
    assert numbers is not None and numbers.reported_change_percent is None
    assert reply.stance == "reproduced" and numbers.evidence.endswith("(no reported change)")
    assert numbers.change_percent is not None and numbers.change_percent > 0  # ms went up: worse


@pytest.mark.parametrize(("unit", "name", "better"), [
    ("events/s", None, "higher"), ("MiB/s", None, "higher"), ("IOPS", "fio.write_iops", "higher"),
    ("ms", None, "lower"), ("usec", None, "lower"), ("", "stress-ng.utime.ops_per_sec", "higher"),
    ("", "fsmark.files_per_sec", "higher"), ("", "stress-ng.time.elapsed_time", "lower"), ("widgets", None, None),
])
def test_better_direction(unit: str, name: str | None, better: str | None) -> None:
    assert better_direction(unit, name) == better


def test_numbers_about_a_fix_give_no_stance() -> None:
    reply = parsed("reply-fix-numbers-no-stance.eml")
    assert reply.stance == "none" and reply.stance_numbers is None


def test_the_record_round_trips_and_show_prints_the_statistics() -> None:
    reply = parsed("reply-not-reproduced-mean-sigma.eml")
    data = report_to_json(reply)
    assert data["schema"] == 1 and data["stance_numbers"]["outcome"] == "not-reproduced"
    assert report_from_json(data) == reply
    shown = render_report(reply)
    assert "  stance:   not-reproduced  from the writer's numbers" in shown
    assert "  numbers:  before 2341±41 events/s (n=5) vs after 2322±38 events/s (n=5): " in shown


def test_the_thread_counts_a_numbers_stance_as_a_voice() -> None:
    records = [parsed("report-sysbench-cpu-24.6pct.eml"), parsed("reply-not-reproduced-mean-sigma.eml"),
               parsed("reply-reproduced-mean-sigma.eml")]
    thread, = build_threads(records)
    assert [voice.what for voice in thread.not_reproduced] == ["not-reproduced"]
    assert [voice.what for voice in thread.reproduced] == ["reproduced"]


def test_judging_a_reply_s_numbers_imports_neither_numpy_nor_scipy() -> None:
    # The whole parse may load numpy through spaCy (the stance reader); the numbers' statistics
    # themselves must not need numpy or scipy, so a parse without spaCy stays light.
    probe = ("import sys\nfrom triagebot.parse.report import parse_message\n"
             "from triagebot.records.report import Source\n"
             f"record = parse_message(open({str(NUMBERS / 'reply-reproduced-mean-sigma.eml')!r}, 'rb').read(), "
             "Source('eml'))\nassert record.stance_numbers is not None\n"
             "print('scipy' in sys.modules, 'numpy' in sys.modules and 'spacy' not in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False False"


# --- the forms, line by line --------------------------------------------------------------------

@pytest.mark.parametrize(("line", "expected"), [
    ("before: 2341 events/s (mean of 5 runs, σ 41)", ("before", 2341.0, "events/s", 41.0, 5)),
    ("vanilla: 954MB/s (mean out of 5 runs, σ: 30.83)", ("vanilla", 954.0, "MB/s", 30.83, 5)),
    ("after: 2322 events/s (avg of 5 runs, stddev 38)", ("after", 2322.0, "events/s", 38.0, 5)),
    ("  6.9-rc1:  1785 ± 30 events/s (n=6)", ("6.9-rc1", 1785.0, "events/s", 30.0, 6)),
    ("patched: 2338 events/s +/- 12 (10 iterations)", ("patched", 2338.0, "events/s", 12.0, 10)),
    ("base: 2000 events/s ±2% (5 runs)", ("base", 2000.0, "events/s", 40.0, 5)),
    ("With patchset:\t404.81MiB/s", ("With patchset", 404.81, "MiB/s", None, None)),
    (" - 6.5.2:  748.02MiB/s", ("6.5.2", 748.02, "MiB/s", None, None)),
    ("w/o the commit: 363k IOPS", ("w/o the commit", 363000.0, "IOPS", None, None)),
])
def test_labelled_values(line: str, expected: tuple) -> None:
    found = [(item.label, item.value, item.unit, item.stddev, item.runs) for item in read_measurements(line)
             if item.label is not None]
    assert len(found) == 1
    label, value, unit, stddev, runs = found[0]
    assert (label, unit, runs) == (expected[0], expected[2], expected[4])
    assert value == pytest.approx(expected[1])
    assert stddev == (pytest.approx(expected[3]) if expected[3] is not None else None)


@pytest.mark.parametrize("line", [
    "Note: 5 files", "Date: 2024-03-12", "Reported-by: 12 people", "Synchronous crcs: 4882 IOPS",
    "with the fix: 2347 events/s (mean of 5 runs, σ 33)", "Subject: 6 runs",
])
def test_lines_that_name_no_side_are_no_labelled_value(line: str) -> None:
    assert all(item.label is None for item in read_measurements(line))


@pytest.mark.parametrize(("label", "side"), [
    ("before", "reference"), ("Without patchset", "reference"), ("Unpatched Linus", "reference"),
    ("with X reverted", "reference"), ("vanilla", "reference"), ("good", "reference"),
    ("after", "changed"), ("With patchset", "changed"), ("patched", "changed"), ("bad", "changed"),
    ("6.9-rc1", (6, 9, 0, 1)), ("v6.8", (6, 8, 0, 1000)), ("linux-6.5.2", (6, 5, 2, 1000)),
    ("Synchronous crcs", None), ("with the fix", None), ("events per second", None),
])
def test_side_of_a_label(label: str, side: object) -> None:
    assert side_of(label) == side


def test_an_rc_is_older_than_its_release() -> None:
    numbers = judge_numbers((Measurement("a", None, 1780.0, "events/s", label="6.9", stddev=20.0, runs=5),
                             Measurement("b", None, 2360.0, "events/s", label="6.9-rc1", stddev=20.0, runs=5)),
                            None)
    assert numbers is not None and (numbers.base_label, numbers.suspect_label) == ("6.9-rc1", "6.9")


def test_without_a_reported_change_the_worse_direction_of_the_unit_is_tested() -> None:
    slower = judge_numbers((Measurement("a", None, 95.0, "ms", label="before", stddev=2.0, runs=5),
                            Measurement("b", None, 120.0, "ms", label="after", stddev=3.0, runs=5)), None)
    assert slower is not None and slower.outcome == "reproduced" and slower.reported_change_percent is None
    assert slower.evidence.endswith("(no reported change)")
    unknown = judge_numbers((Measurement("a", None, 95.0, "widgets", label="before", stddev=2.0, runs=5),
                             Measurement("b", None, 120.0, "widgets", label="after", stddev=3.0, runs=5)), None)
    assert unknown is not None and unknown.outcome == "inconclusive" and unknown.p_value is not None


def test_a_reported_rate_change_is_not_applied_to_a_time() -> None:
    numbers = judge_numbers((Measurement("a", None, 95.0, "ms", label="before", stddev=2.0, runs=5),
                             Measurement("b", None, 96.0, "ms", label="after", stddev=3.0, runs=5)),
                            Headline("events/s", -24.6, "regression"))
    assert numbers is not None and numbers.reported_change_percent is None


def test_values_of_different_units_are_no_pair() -> None:
    assert judge_numbers((Measurement("a", None, 95.0, "ms", label="before", stddev=2.0, runs=5),
                          Measurement("b", None, 120.0, "MB/s", label="after", stddev=3.0, runs=5)), None) is None


def test_combine_stance() -> None:
    words = Stance("reproduced", "I can reproduce it.")
    assert combine_stance(words, None) == words
    inconclusive = judge_numbers((Measurement("a", None, 2341.0, "events/s", label="before"),
                                  Measurement("b", None, 2322.0, "events/s", label="after")), None)
    assert inconclusive is not None and combine_stance(words, inconclusive) == words
    decisive = judge_numbers((Measurement("a", None, 2341.0, "events/s", label="before", stddev=10.0, runs=8),
                              Measurement("b", None, 2340.0, "events/s", label="after", stddev=10.0, runs=8)), None)
    assert decisive is not None and decisive.outcome == "not-reproduced"
    assert combine_stance(Stance("none", None), decisive) == Stance("not-reproduced", decisive.evidence)
    assert combine_stance(Stance("not-reproduced", "I could not reproduce it."), decisive) == Stance(
        "not-reproduced", decisive.evidence)
    overruled = combine_stance(words, decisive)
    assert overruled.evidence == decisive.evidence + '; the words said reproduced: "I can reproduce it."'


# --- real messages: the shapes the rules were written from ---------------------------------------

BTRFS_2023 = SHARED / "corpus" / "lists" / "linux-btrfs-2023.mbox.gz"
REAL_SIDES = {
    # a cover letter's "With patchset: 404.81MiB/s" / "Without patchset: 369.30MiB/s"
    "cover.1678777941.git.wqu@suse.com": ("Without patchset", 369.3, "With patchset", 404.81, "MiB/s"),
    # two kernel versions as a list: "- 6.4: 966.84MiB/s" / "- 6.5.2:  748.02MiB/s"
    "2169630.irdbgypaU6@lichtvoll.de": ("6.4", 966.84, "6.5.2", 748.02, "MiB/s"),
}


def test_real_messages_with_numbers_on_two_sides() -> None:
    """Real replies and cover letters post one value a side, without spread: read, never decisive."""
    if not BTRFS_2023.exists():
        pytest.skip(f"{BTRFS_2023} absent: the shared corpus is not beside the project")
    seen: dict[str, tuple] = {}
    header_labels: list[str | None] = []
    wanted = [key.encode() for key in (*REAL_SIDES, "eb544c31-7a74-d503-83f0-4dc226917d1a@meta.com")]
    for entry in iter_inputs(str(BTRFS_2023)):
        if entry.raw is None or not any(key in entry.raw for key in wanted):
            continue  # decoding only the few messages wanted keeps this test quick
        message = decode_message(entry.raw)
        own = split_quotes(message.body).own
        if message.message_id in REAL_SIDES:
            numbers = judge_numbers(read_measurements(own), None)
            assert numbers is not None and numbers.outcome == "inconclusive", message.message_id
            seen[message.message_id] = (numbers.base_label, numbers.base_mean, numbers.suspect_label,
                                        numbers.suspect_mean, numbers.unit)
            assert "no run count given" in numbers.evidence
        elif message.message_id == "eb544c31-7a74-d503-83f0-4dc226917d1a@meta.com":
            # "Unpatched Linus:" over a fio line, then "Synchronous crcs:" (no side) over another
            header_labels = [item.label for item in read_measurements(own) if item.name == "fio.write_iops"]
    assert seen == REAL_SIDES
    assert header_labels == ["Unpatched Linus", None]


def test_several_fio_runs_under_each_header_are_runs() -> None:
    text = ("Without the commit:\n\n"
            "  write: IOPS=51.8k, BW=202MiB/s (212MB/s)(11.9GiB/60001msec)\n"
            "  write: IOPS=52.3k, BW=204MiB/s (214MB/s)(12.0GiB/60001msec)\n"
            "  write: IOPS=51.1k, BW=200MiB/s (209MB/s)(11.7GiB/60001msec)\n\n"
            "With the commit:\n\n"
            "  write: IOPS=40.2k, BW=157MiB/s (165MB/s)(9.2GiB/60001msec)\n"
            "  write: IOPS=41.0k, BW=160MiB/s (168MB/s)(9.4GiB/60001msec)\n"
            "  write: IOPS=39.7k, BW=155MiB/s (163MB/s)(9.1GiB/60001msec)\n")
    numbers = judge_numbers(read_measurements(text), Headline("IOPS", -22.0, "regression"))
    assert numbers is not None and numbers.unit == "IOPS"
    assert (numbers.base_runs, numbers.suspect_runs) == (3, 3)
    assert numbers.base_mean == pytest.approx(51733.33, abs=0.01)
    assert numbers.outcome == "reproduced"


def test_an_infinite_number_is_no_measurement() -> None:
    text = "before: " + "9" * 400 + " ms (5 runs, sd 3)\nafter: 5 ms (5 runs, sd " + "9" * 400 + ")\n"
    assert [item for item in read_measurements(text) if item.label] == []
