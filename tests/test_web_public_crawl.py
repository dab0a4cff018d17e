"""`triage web --public` checked by a crawler (issue 34, finding 8).

A report routed `public = false` appeared, with subject, sender and evidence, in the thread of a
public reply to it; lifecycle rows showed lab host names (`fix-tested: v3 on lab-local`,
`update-queued-…@lab-local`) and internal `action-N` rows; the plan box gave the host's thread
count. Here the store of tests/test_web.py (a report confirmed on the test lab, another waiting
for the host, a stranger's refused report, an LKP improvement routing keeps inside the team) gets
what the finding named, each written by the code that writes it in the daemon: a public reply
in the private report's thread, a report whose command is fitted to the host's threads, the
lab's queue announced, a fix test's result with its lifecycle move, and an action asked from
Slack. Then every page reachable from the public index is fetched (every link and image,
followed to the end: report pages, thread pages, plots) from the real uvicorn, and none may hold
any of the strings that must not leave the team.
"""
from __future__ import annotations

import html
import io
import re
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from urllib.parse import urljoin, urlsplit

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.test_web import LAB_ID, PRIVATE_ID, SECOND_ID, fetch, lab_store  # noqa: F401 - the fixture
from triagebot.actions import act as actions
from triagebot.daemon import flow
from triagebot.fix_test.flow import store_fix_result
from triagebot.lab.queue import lab_view
from triagebot.notify import outbox
from triagebot.notify.terminal import TerminalNotifier
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore
from triagebot.web.app import build_app
from triagebot.web.server import WebServer
from triagebot.web.views import Site, report_href

PUBLIC_REPLY_ID = "209905100001.reply-other-subject@example.net"
THREADS_ID = "20240419090000.lab32@tberg-ws"
MAX_PAGES = 400

PUBLIC_REPLY = f"""From: Curious Reader <curious@example.net>
To: linux-btrfs@vger.kernel.org
Subject: a question
Date: Thu, 11 Jul 2024 09:00:00 +0000
Message-ID: <{PUBLIC_REPLY_ID}>
In-Reply-To: <{PRIVATE_ID}>
References: <{PRIVATE_ID}>
Content-Type: text/plain; charset=utf-8

Is this the same machine as last month? I can reproduce this, fsmark is 6% faster here too.
"""


def threads_report() -> bytes:
    """The lab report again, its command asking for 32 threads: planned for the 2-thread lab host,
    the plan says what it fitted."""
    raw = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
    for old, new in ((f"<{LAB_ID}>".encode(), f"<{THREADS_ID}>".encode()), (b"--threads=2", b"--threads=32"),
                     (b"Date: Mon, 15 Apr 2024 09:12:44", b"Date: Fri, 19 Apr 2024 09:00:00"),
                     (b"c0ffee1234ab (", b"5eed5eed0032 (")):
        assert old in raw
        raw = raw.replace(old, new)
    return raw


@pytest.fixture(scope="module")
def crawled_site(lab_store, tmp_path_factory) -> Iterator[dict]:  # noqa: F811 - lab_store is the fixture
    root = tmp_path_factory.mktemp("crawl")
    database = root / "crawl.db"
    shutil.copy(lab_store["database"], database)
    (root / "reply.eml").write_text(PUBLIC_REPLY)
    (root / "threads.eml").write_bytes(threads_report())
    ingested = subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", str(database),
                               str(root / "reply.eml"), str(root / "threads.eml")], capture_output=True, text=True,
                              cwd=PROJECT, stdin=subprocess.DEVNULL, timeout=300)
    assert ingested.returncode == 0, ingested.stderr
    settings = load_settings(lab_store["rules"])
    hosts = settings.need_hosts()
    with SqliteStore(database) as store:
        lab = flow.DaemonContext(settings=settings, database=database, budget=10,
                                 deliver=lambda: outbox.deliver(store, TerminalNotifier(io.StringIO(),
                                                                                        plot_dir=root / "plots")))
        flow.admit(store, lab, admit_days=365 * 100)
        flow.plan_new(store, lab)  # the 32-thread report, fitted to lab-local's 2 threads
        assert any("the host has 2 threads" in note for note in store.get_triage(THREADS_ID).plan["scaled"])
        view = lab_view(store, database, hosts, timedelta(minutes=settings.max_wait_minutes), datetime.now(UTC))
        assert flow.announce_queue(store, lab, view)  # "queued behind N on lab-local": update-queued-…
        fix_test_id = store.queue_fix_test(LAB_ID, "v3-fix-series", "fix-v3.cover@example.org")
        assert fix_test_id is not None
        store_fix_result(store, LAB_ID, fix_test_id, {
            "kind": "test-fix", "host": "lab-local", "suspect": "c0ffee1234ab", "patched": "f1f1f1f10003",
            "version": 3, "subjects": ["[PATCH v3] sched: restore the wakeup granularity"],
            "series": "fix-v3.cover@example.org", "draft": "",
            "recovery": {"call": "recovered", "sentence": "the fix recovers 99% of the regression"},
            "verdict": {"runs_base": 6, "runs_suspect": 6}})
        slack = parse_routing('default_channel = "#perf-triage"\n[slack]\nrun = ["U0RUNNER"]\n', "routing.toml")
        asked = actions.act(store, actions.Request("crawl-request-1", "bisect", LAB_ID, "U0RUNNER"),
                            actions.Context(slack.permissions, lambda _user: (), 10))
        assert asked.done, asked.text
        stored = [row[0] for row in store.connection.execute("SELECT message_id FROM messages")]
        kinds = {row.kind for row in store.outbox()}
        assert {kind for kind in kinds if kind.startswith(("action-", "update-queued-", "test-fix-"))}, kinds

    @contextmanager
    def open_store() -> Iterator[SqliteStore]:
        with SqliteStore(database) as opened:
            yield opened

    public = WebServer(build_app(Site(open_store, settings, database, public=True)), "127.0.0.1", 0).start()
    team = WebServer(build_app(Site(open_store, settings, database)), "127.0.0.1", 0).start()
    try:
        yield {"public": public.url, "team": team.url, "hosts": hosts, "scratch": str(lab_store["root"] / "scratch"),
               "stored": stored}
    finally:
        public.stop()
        team.stop()


def crawl(base: str, start: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Every page reachable from `start` by links and images (same site): (path -> text of the
    pages served, path -> text of those answered otherwise)."""
    pages: dict[str, str] = {}
    refused: dict[str, str] = {}
    queue = deque(start)
    while queue and len(pages) + len(refused) < MAX_PAGES:
        path = queue.popleft()
        if path in pages or path in refused:
            continue
        status, headers, body = fetch(base + path)
        text = body.decode("utf-8", errors="replace")
        (pages if status == 200 else refused)[path] = text
        if status != 200 or not headers.get("Content-Type", "").startswith("text/html"):
            continue
        for link in re.findall(r'(?:href|src|action)="([^"]*)"', text):
            target = urlsplit(urljoin(base + path, html.unescape(link)))
            if target.netloc != urlsplit(base).netloc:
                continue  # lore, the commit's tree: another site
            queue.append(target.path + (f"?{target.query}" if target.query else ""))
    return pages, refused


def test_no_public_page_holds_what_must_stay_inside(crawled_site) -> None:
    # from the index, and from the page of every stored message (anyone can read an id on lore)
    pages, refused = crawl(crawled_site["public"], ["/", *(report_href(key) for key in crawled_site["stored"])])
    assert len(pages) + len(refused) < MAX_PAGES, "the crawl did not end"
    # the crawl reached what it must check: the reply's page (with its thread), report pages, plots
    for expected in (f"/r/{PUBLIC_REPLY_ID}", f"/r/{LAB_ID}", f"/r/{LAB_ID}/plot.png", f"/r/{LAB_ID}/plot.svg",
                     f"/r/{THREADS_ID}", f"/r/{SECOND_ID}"):
        assert expected in pages, sorted(pages)
    assert fetch(crawled_site["public"] + f"/r/{PUBLIC_REPLY_ID}")[0] == 200  # the reply is public: its page is served
    assert '<h1 class="subject">a question</h1>' in pages[f"/r/{PUBLIC_REPLY_ID}"]
    forbidden = [PRIVATE_ID, "bc34f8f758", "fsmark.files_per_sec 12.3% improvement", "oliver.sang@intel.com",
                 "kernel test robot", crawled_site["scratch"], "#perf-triage", "#btrfs-inside", "action-",
                 "update-queued-", "test-fix-", "the host has", "host's budget", "threads)",
                 *(host.name for host in crawled_site["hosts"])]
    found = {(path, word) for path, text in pages.items() for word in forbidden
             if word in text or word in html.unescape(text)}
    assert found == set(), sorted(found)
    # a page not served says no more than of an id never stored: the private report's is the same 404
    never = "never-stored@example.org"
    assert set(refused) == {report_href(PRIVATE_ID)}, sorted(refused)
    assert refused[report_href(PRIVATE_ID)].replace(PRIVATE_ID, never) == fetch(
        crawled_site["public"] + report_href(never))[2].decode()


def test_the_team_still_sees_all_of_it(crawled_site) -> None:
    """The same pages in the team's view keep what the public ones leave out (so the crawl's
    silence comes from the public view, not from an empty store)."""
    reply = html.unescape(fetch(crawled_site["team"] + f"/r/{PUBLIC_REPLY_ID}")[2].decode())
    assert PRIVATE_ID in reply and "fsmark.files_per_sec 12.3% improvement" in reply
    lab = html.unescape(fetch(crawled_site["team"] + f"/r/{LAB_ID}")[2].decode())
    assert "fix-tested lab: v3 on lab-local" in lab and "action-" in lab and "lab-local" in lab
    plan = html.unescape(fetch(crawled_site["team"] + f"/r/{THREADS_ID}")[2].decode())
    assert "the host has 2 threads" in plan
    assert "update-queued-" in html.unescape(fetch(crawled_site["team"] + f"/r/{SECOND_ID}")[2].decode())
