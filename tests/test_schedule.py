"""The lab's schedule as a pure function: (reports, hosts, busy hosts, now) -> who runs where."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from triagebot.records.report import TestMachine as Machine
from triagebot.reproduce.schedule import Waiting, describe_wait, schedule
from triagebot.rules.hosts import Host

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SWITCH = ("switch-to", "{commit}")


def host(name: str, threads: int, *, cpu: str = "Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz", memory: int = 256,
         switch: bool = True) -> Host:
    return Host(name=name, reach="local", cpu_model=cpu, threads=threads, sockets=2, memory_gb=memory, disk="ssd",
                scratch_dir="/scratch", switch_kernel=SWITCH if switch else ())


ICE_64 = Machine("64 threads 2 sockets Ice Lake", threads=64, sockets=2,
                     cpu_model="Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz", memory_gb=256)
ICE_8 = Machine("8 threads", threads=8, sockets=2, cpu_model="Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz",
                    memory_gb=256)


def report(name: str, machine: Machine = ICE_64, *, dated_hours_ago: float = 1, waited_minutes: float = 5) -> Waiting:
    return Waiting(name, machine, (), NOW - timedelta(hours=dated_hours_ago), NOW - timedelta(minutes=waited_minutes))


BIG, SMALL = host("big", 64), host("small", 8)


def test_each_report_takes_its_most_similar_free_host() -> None:
    plan = schedule([report("a", ICE_64), report("b", ICE_8)], [SMALL, BIG], frozenset(), NOW)
    assert {(item.message_id, item.host) for item in plan.assignments} == {("a", "big"), ("b", "small")}
    assert all(not item.past_cap for item in plan.assignments)
    assert plan.queues == {"big": (), "small": ()}


def test_newest_report_first_on_a_shared_host() -> None:
    older, newer = report("older", dated_hours_ago=5), report("newer", dated_hours_ago=1)
    plan = schedule([older, newer], [BIG], frozenset(), NOW)
    assert [item.message_id for item in plan.assignments] == ["newer"]
    assert [(item.message_id, item.ahead) for item in plan.queues["big"]] == [("older", 1)]


def test_a_thread_that_grows_moves_its_report_ahead() -> None:
    # "grown" was dated long ago, but a reply with numbers came in an hour ago: newer than "fresh"
    grown = Waiting("grown", ICE_64, (), NOW - timedelta(minutes=30), NOW - timedelta(days=1))
    fresh = report("fresh", dated_hours_ago=2)
    plan = schedule([fresh, grown], [BIG], frozenset(), NOW)
    assert [item.message_id for item in plan.assignments] == ["grown"]


def test_a_busy_host_gets_nothing_and_the_queue_counts_the_running_report() -> None:
    reports = [report(f"r{index}", dated_hours_ago=index + 1) for index in range(3)]
    plan = schedule(reports, [BIG, SMALL], {"big": "running@x"}, NOW)
    # every report prefers big; small is far less similar, and nobody has waited past the cap
    assert plan.assignments == ()
    assert [(item.message_id, item.ahead) for item in plan.queues["big"]] == [("r0", 1), ("r1", 2), ("r2", 3)]
    assert plan.queued("r2") is not None and plan.queued("r2").host == "big"


def test_equally_similar_hosts_are_one_choice() -> None:
    twins = [host("lab-1", 64), host("lab-2", 64), host("lab-3", 64)]
    reports = [report(f"r{index}", dated_hours_ago=index + 1) for index in range(5)]
    plan = schedule(reports, twins, frozenset(), NOW)
    assert [(item.message_id, item.host) for item in plan.assignments] == [("r0", "lab-1"), ("r1", "lab-2"),
                                                                           ("r2", "lab-3")]
    # the rest wait on the shortest queues, in turn
    assert [(item.message_id, item.host, item.ahead) for queue in plan.queues.values() for item in queue] == \
        [("r3", "lab-1", 1), ("r4", "lab-2", 1)]


def test_past_the_cap_a_report_takes_the_best_free_host_and_says_what_differs() -> None:
    patient = report("patient", waited_minutes=119)
    late = report("late", dated_hours_ago=3, waited_minutes=121)
    plan = schedule([patient, late], [BIG, SMALL], {"big": "x"}, NOW, max_wait=timedelta(hours=2))
    assert [item.message_id for item in plan.assignments] == ["late"]
    moved = plan.assignments[0]
    assert moved.host == "small" and moved.past_cap and moved.preferred == ("big",)
    note = moved.moved_note(timedelta(hours=2))
    assert note is not None and note.startswith("waited 2 h 1 min, past the 2 h cap, for big (match 1.00): "
                                                "runs on small (match ")
    assert "threads: host 8, test machine 64" in note
    assert [item.message_id for item in plan.queues["big"]] == ["patient"]
    # within the cap the same report waits for its host
    assert schedule([late], [BIG, SMALL], {"big": "x"}, NOW, max_wait=timedelta(hours=3)).assignments == ()


def test_past_the_cap_with_every_host_busy_it_still_waits() -> None:
    plan = schedule([report("late", waited_minutes=500)], [BIG, SMALL], {"big": "x", "small": "y"}, NOW)
    assert plan.assignments == () and plan.queued("late").host == "big"


def test_hosts_that_cannot_switch_kernels_run_nothing() -> None:
    here = host("this-machine", 64, switch=False)
    plan = schedule([report("a")], [here], frozenset(), NOW)
    assert plan.assignments == () and plan.unrunnable == ("a",)
    # beside a lab host, the lab host runs it even though this machine is as similar
    plan = schedule([report("a")], [here, SMALL], frozenset(), NOW)
    assert [(item.message_id, item.host) for item in plan.assignments] == [("a", "small")]


def test_equal_dates_go_in_the_order_taken_on_then_as_given() -> None:
    reports = [report(f"r{index}", dated_hours_ago=1) for index in range(4)]
    first = schedule(reports, [BIG], frozenset(), NOW)
    assert first == schedule(reports, [BIG], frozenset(), NOW)  # the same arguments, the same schedule
    assert [item.message_id for item in first.assignments] == ["r0"]
    assert [item.message_id for item in first.queues["big"]] == ["r1", "r2", "r3"]
    earlier = report("r3", dated_hours_ago=1, waited_minutes=50)  # taken on before the others
    assert [item.message_id for item in schedule([*reports[:3], earlier], [BIG], frozenset(), NOW).assignments] \
        == ["r3"]


def test_waits_read_as_a_person_reads_them() -> None:
    for seconds, text in ((0, "0 s"), (59, "59 s"), (60, "1 min"), (3599, "59 min"), (7200, "2 h"),
                          (7500, "2 h 5 min")):
        assert describe_wait(timedelta(seconds=seconds)) == text


def test_the_cap_is_read_from_hosts_toml_and_checked() -> None:
    import pytest

    from triagebot.errors import RulesError
    from triagebot.rules.hosts import DEFAULT_MAX_WAIT_MINUTES, max_wait_from
    from triagebot.rules.loader import parse_text

    assert max_wait_from(parse_text("max_wait_minutes = 30\n", "rules/hosts.toml")) == 30
    assert max_wait_from(parse_text("", "rules/hosts.toml")) == DEFAULT_MAX_WAIT_MINUTES == 120
    for bad in ("-1", '"2h"', "true"):  # negative, text, a boolean: each named with file and line
        with pytest.raises(RulesError) as caught:
            max_wait_from(parse_text(f"max_wait_minutes = {bad}\n", "rules/hosts.toml"))
        assert str(caught.value).startswith("rules/hosts.toml:1") and "max_wait_minutes must be a number" in \
            str(caught.value)
