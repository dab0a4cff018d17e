"""Issue 24's fields of people's reports, in our own sentences: headlines as a word and a pair,
machine lines with no model or with the socket count in a word, commands at `~# ` and other
short prompts, wrapped across lines."""
from __future__ import annotations

from triagebot.parse.prose import hardware
from triagebot.parse.reported import reported_headline
from triagebot.parse.reproducers import find_commands


def test_a_lower_result_with_its_pair_is_the_headline() -> None:
    headline = reported_headline("Throughput on 6.9 is roughly 12% lower (1810 vs 2057) than on 6.8.")
    assert headline is not None
    assert (headline.metric, headline.change_percent, headline.direction) == ("performance", -12.0, "regression")


def test_lower_without_a_pair_is_no_headline() -> None:
    # "12% lower latency" is better, and no pair says what was compared: no unitless headline
    assert reported_headline("With the patch we measured 12% lower latency overall.") is None


def test_a_socket_count_in_a_word_before_the_model() -> None:
    machine = hardware("The runner is a dual Xeon Gold 6338 with 512GB RAM.")
    assert machine is not None and (machine.sockets, machine.cpu_model, machine.memory_gb) == (2, "Xeon Gold 6338", 512)


def test_a_cpu_count_said_of_the_machine_is_a_machine() -> None:
    machine = hardware("Our test server has 128 CPUs with SMT disabled.")
    assert machine is not None and machine.threads == 128 and machine.cpu_model is None
    assert hardware("The job forks 128 CPUs worth of workers.") is None  # no machine named


def test_commands_at_short_prompts_and_wrapped() -> None:
    text = ("To reproduce:\n~# fio -name seq -rw=read -bs=1M \\\n   -size=4G -numjobs=8\n"
            "and in another shell\n   stress -c 4\n")
    assert [(item.kind, item.command) for item in find_commands(text)] == [
        ("fio", "fio -name seq -rw=read -bs=1M -size=4G -numjobs=8"), ("command", "stress -c 4")]
