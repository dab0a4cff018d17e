"""Materials from a host that is not there: no retries, whatever the retry policy, and the plan
comes from the mail (issue 15: `triage plan` sat silent for ~29 s offline)."""
from __future__ import annotations

import socket

from triagebot.http_client.client import RequestsClient
from triagebot.http_client.protocol import HttpPolicy
from triagebot.records.report import Links, Report, Source
from triagebot.reproduce.materials import HostUnreachable, fetch_materials, with_materials
from triagebot.store.sqlite import SqliteStore

# the daemon's manners: five attempts with backoff, which an unreachable host must not cost
PATIENT = HttpPolicy(attempts=5, backoff_seconds=2.0, timeout_seconds=10.0)


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def report(url: str) -> Report:
    return Report(message_id="offline@example", in_reply_to=None, subject="[xfs] fio.write_iops -9% regression",
                  from_="kernel test robot <lkp@intel.com>", date=None, source=Source("eml"),
                  kind="lkp-regression", testcase="fio-basic", links=Links(materials=url))


def free_port() -> int:
    with socket.socket() as probe:  # bound, then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_refused_connection_is_not_retried_even_under_the_daemons_policy(tmp_path) -> None:
    url = f"http://127.0.0.1:{free_port()}/0day-ci/archive/20240101/x/"
    sleeps = Sleeps()
    announced: list[str] = []
    with SqliteStore(tmp_path / "t.db") as store:
        same, notes = with_materials(report(url), store, RequestsClient(PATIENT, trust_environment=False),
                                     PATIENT, sleep=sleeps, announce=announced.append)
    assert sleeps == [] and announced == [f"fetching the directory listing from {url}"]
    assert same.reproducers == () and len(notes) == 1
    assert notes[0] == ("materials not fetched: 127.0.0.1 cannot be reached: it refuses connections "
                        "(not retried; offline?); planned from the report's own text")


def test_a_name_that_does_not_resolve_is_not_retried(tmp_path) -> None:
    url = "http://materials.invalid/0day-ci/archive/20240101/x/"  # .invalid never resolves (RFC 6761)
    sleeps = Sleeps()
    with SqliteStore(tmp_path / "t.db") as store:
        try:
            fetch_materials(url, RequestsClient(PATIENT, trust_environment=False), PATIENT, store, sleep=sleeps)
        except HostUnreachable as error:
            assert str(error) == ("materials.invalid cannot be reached: its name does not resolve "
                                  "(not retried; offline?)")
        else:
            raise AssertionError("fetched from a name that does not resolve")
    assert sleeps == []
