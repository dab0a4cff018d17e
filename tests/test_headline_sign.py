"""One sign rule for every display of a report's headline (issue 36, finding 7).

LKP subjects and openings often give no sign ("noticed a 23.6% regression of
stress-ng.msg.ops_per_sec"); the report's metric table does (-23.6%). Each display — `triage
show`, `triage list`, the web index and report page, the Slack parent (blocks and text) and the
terminal notifier — must show the table's change, never an invented `+`. A headline with no table
row to read the sign from is shown as written: unsigned.
"""
from __future__ import annotations

import dataclasses
import html
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from triagebot.notify.render import parent_message
from triagebot.notify.terminal import payload_to_text
from triagebot.parse.report import parse_message
from triagebot.present.headline import headline_change, headline_text
from triagebot.records.report import Report, Source
from triagebot.store.sqlite import SqliteStore
from triagebot.web.app import build_app
from triagebot.web.server import WebServer
from triagebot.web.views import Site, report_href

UNSIGNED = FIXTURES / "mail" / "lkp" / "patch-reply-stress-ng-regression.eml"  # "noticed a 23.6% regression"
MESSAGE_ID = "202506121525.5f1c0a7e-lkp@intel.com"
SIGNED = "stress-ng.msg.ops_per_sec -23.6% regression"


def triage(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return html.unescape(answer.read().decode())


@contextmanager
def served(database: Path) -> Iterator[str]:
    @contextmanager
    def open_store() -> Iterator[SqliteStore]:
        with SqliteStore(database) as store:
            yield store

    server = WebServer(build_app(Site(open_store, None, database)), "127.0.0.1", 0).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    database = tmp_path_factory.mktemp("sign") / "t.db"
    triage("ingest", "--db", str(database), str(UNSIGNED))
    with served(database) as url:
        yield database, url


def report() -> Report:
    return parse_message(UNSIGNED.read_bytes(), Source("eml"))


DISPLAYS: dict[str, Callable[[Path, str], str]] = {
    "triage show": lambda database, _url: triage("show", "--db", str(database), MESSAGE_ID),
    "triage list": lambda database, _url: triage("list", "--db", str(database)),
    "web index": lambda _database, url: fetch(url + "/"),
    "web report page": lambda _database, url: fetch(url + report_href(MESSAGE_ID)),
    "Slack parent blocks": lambda _database, _url: str(parent_message(report(), "confirmed")["blocks"]),
    "Slack parent text": lambda _database, _url: parent_message(report(), "confirmed")["text"],
    "terminal notifier": lambda _database, _url: payload_to_text(parent_message(report(), "new")),
}


@pytest.mark.parametrize("display", DISPLAYS)
def test_every_display_signs_the_headline_as_the_metric_table_does(stored, display: str) -> None:
    database, url = stored
    shown = DISPLAYS[display](database, url)
    assert "+23.6%" not in shown, f"{display} invented a sign"
    change = "-23.6%"
    if display in ("triage list", "web index"):  # the change alone, beside the subject
        assert change in shown, shown
    else:
        assert SIGNED in shown, shown
    assert "stress-ng.msg.ops_per_sec" in shown or display in ("triage list", "web index")


def test_the_table_gives_the_sign_and_a_headline_without_a_row_is_shown_as_written() -> None:
    parsed = report()
    assert parsed.headline is not None and parsed.headline.change_percent == 23.6  # the record: as written
    assert headline_text(parsed) == SIGNED
    no_table = dataclasses.replace(parsed, metrics=())
    assert headline_text(no_table) == "stress-ng.msg.ops_per_sec 23.6% regression"  # no sign to read: none shown
    written = dataclasses.replace(no_table, headline=dataclasses.replace(parsed.headline, change_percent=-23.6))
    assert headline_text(written) == SIGNED  # written with its sign: kept
    change = headline_change(no_table)
    assert change is not None and not change.signed
