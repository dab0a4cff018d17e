"""The web pages (triagebot/web/) served by the real uvicorn on 127.0.0.1, from a store the test lab filled.

The store: the lab's sysbench report taken on, planned and rerun on the test lab (tests/support/lab.py)
by the daemon's own steps (flow.py) until confirmed, with a reply in its thread; a second lab
report (another culprit) planned and waiting for the lab host; a report written by a stranger
whose subject, Message-ID, culprit subject and reply carry HTML and script (refused: its fio
command would run a program); an LKP improvement the routing keeps inside the team. The pages
are fetched over HTTP as a browser would, in the team's view and the public one.
"""
from __future__ import annotations

import html as html_module
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.message import Message
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from tests.support.daemon_run import free_port, log_events, start_daemon, stop_daemon, wait_for
from tests.support.lab import lab_path, write_lab_rules
from triagebot.daemon import flow
from triagebot.daemon.dispatch.protocol import JobsNow
from triagebot.ingest.protocol import Batch, FetchedMessage
from triagebot.ingest.runner import IngestResult, store_batch
from triagebot.notify import outbox
from triagebot.notify.plot import png_of, run_figure
from triagebot.notify.terminal import TerminalNotifier
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.reproduce.host_lock import host_lock
from triagebot.rules.loader import RulesError
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import load_settings
from triagebot.store.sqlite import SqliteStore
from triagebot.web.app import build_app
from triagebot.web.server import WebServer
from triagebot.web.views import Site, _run_view, hosts_view, report_href

LAB_ID = "20240415071244.lab1@tberg-ws"
SECOND_ID = "20240417080000.lab2@tberg-ws"
THIRD_ID = "20240418080000.lab3@tberg-ws"
REPLY_ID = "20240416.reply.marek@example.cz"
HOSTILE_ID = 'x"onmouseover=alert(1)&a=b/c?d#e%41@evil.example'
HOSTILE_SUBJECT = '<script>alert("subject")</script>'
HOSTILE_REPLY = "<img src=x onerror=alert(2)>"
PRIVATE_ID = "202407081422.9d3e6b57-oliver.sang@intel.com"  # improvement-2024.eml: btrfs, kept inside

LAB_REPLY = f"""From: Marek Novak <marek.novak@example.cz>
To: linux-kernel@vger.kernel.org
Subject: Re: [REGRESSION] sysbench cpu events/s down ~25% since v6.9-rc1, bisected
Date: Tue, 16 Apr 2024 08:30:00 +0200
Message-ID: <{REPLY_ID}>
In-Reply-To: <{LAB_ID}>
References: <{LAB_ID}>
Content-Type: text/plain; charset=utf-8

I can reproduce this on a 4-core laptop as well: the drop is there on every run.

Marek
"""

HOSTILE = f"""From: Mallory <mallory@example.com>
To: linux-fsdevel@vger.kernel.org
Subject: [REGRESSION] {HOSTILE_SUBJECT} fio randwrite IOPS down 30% since v6.8
Date: Tue, 16 Apr 2024 10:00:00 +0000
Message-ID: <{HOSTILE_ID}>
Content-Type: text/plain; charset=utf-8

Hi,

fio randwrite IOPS dropped by 30% going from v6.8 to v6.9-rc1 on my box <b>bold</b>:
41200 IOPS before, 28840 IOPS after. git bisect points at

  0badc0de5eed ("block: <script>alert(3)</script> merge small writes later")

  fio --name=x --rw=randwrite --bs=4k --size=1G --runtime=30s --group_reporting --exec_prerun=/bin/true

Mallory
"""

HOSTILE_ANSWER = f"""From: Eve <eve@example.org>
To: linux-fsdevel@vger.kernel.org
Subject: Re: [REGRESSION] {HOSTILE_SUBJECT} fio randwrite IOPS down 30% since v6.8
Date: Tue, 16 Apr 2024 12:00:00 +0000
Message-ID: <reply.eve@example.org>
In-Reply-To: <{HOSTILE_ID}>
References: <{HOSTILE_ID}>
Content-Type: text/plain; charset=utf-8

I can reproduce this {HOSTILE_REPLY} on my machine too, the drop is real.

Eve
"""

ROUTING = """default_channel = "#perf-triage"
public_default = true

[[route]]
channel = "#btrfs-inside"
subsystem = "btrfs"
public = false
why = "kept inside the team (the test's private report)"
"""


def triage(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, stdin=subprocess.DEVNULL, timeout=600, env=env)


SECOND_CULPRIT = b'5ca1ab1e0042 ("sched: move the idle balance into the tick")'


def second_report() -> bytes:
    """The lab report again as another message two days later, bisected to another commit (so
    another regression, not "also seen" of the first): planned, then left waiting."""
    raw = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
    culprit = b'c0ffee1234ab ("sched: retune the wakeup granularity for small machines")'
    assert culprit in raw, "the lab report's culprit line is the one second_report rewrites"
    return raw.replace(f"<{LAB_ID}>".encode(), f"<{SECOND_ID}>".encode()).replace(
        b"Date: Mon, 15 Apr 2024 09:12:44", b"Date: Wed, 17 Apr 2024 10:00:00").replace(
        b"Subject: [REGRESSION] sysbench cpu", b"Subject: [REGRESSION] again: sysbench cpu").replace(
        culprit, SECOND_CULPRIT)


def dump(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        return "\n".join(connection.iterdump())


@pytest.fixture(scope="module")
def lab_store(tmp_path_factory) -> Iterator[dict]:
    if not (shutil.which("sysbench") and shutil.which("stress-ng")):
        pytest.skip("the lab needs sysbench and stress-ng (apt-get install sysbench stress-ng)")
    root = tmp_path_factory.mktemp("web")
    rules, state = write_lab_rules(root, PROJECT)
    (rules / "routing.toml").write_text(ROUTING)
    mail = root / "mail"
    mail.mkdir()
    for name, text in (("reply.eml", LAB_REPLY), ("hostile.eml", HOSTILE), ("answer.eml", HOSTILE_ANSWER)):
        (mail / name).write_text(text)
    (mail / "second.eml").write_bytes(second_report())
    database = root / "web.db"
    first = triage("ingest", "--db", str(database), str(FIXTURES / "lab" / "sysbench-cpu-regression.eml"),
                   str(mail / "reply.eml"), str(mail / "hostile.eml"), str(mail / "answer.eml"),
                   str(FIXTURES / "mail" / "lkp" / "improvement-2024.eml"))
    assert first.returncode == 0, first.stderr
    settings = load_settings(rules)
    terminal = io.StringIO()
    notifier = TerminalNotifier(terminal, plot_dir=root / "plots")
    try:
        with pytest.MonkeyPatch.context() as patch, SqliteStore(database) as store:
            patch.setenv("PATH", lab_path(root))  # the lab's sysbench for the rerun
            lab = flow.DaemonContext(settings=settings, database=database, budget=10,
                                     deliver=lambda: outbox.deliver(store, notifier))
            assert flow.admit(store, lab, admit_days=365 * 100)  # the daemon's steps, one after another
            flow.plan_new(store, lab)
            assert flow.run_planned(store, lab) == [LAB_ID]
            assert store.get_triage(LAB_ID).state == "confirmed", store.latest_run(LAB_ID)
            assert store.get_triage(HOSTILE_ID).state == "refused"
            second = triage("ingest", "--db", str(database), str(mail / "second.eml"))
            assert second.returncode == 0, second.stderr
            flow.admit(store, lab, admit_days=365 * 100)
            flow.plan_new(store, lab)  # planned on lab-local, not run: it waits in the host's queue
            assert store.get_triage(SECOND_ID).state == "planned"
            run = store.latest_run(LAB_ID)
    finally:
        subprocess.run([sys.executable, str(PROJECT / "tests" / "support" / "lab.py"), "stop", str(state)],
                       check=False)

    @contextmanager
    def open_store() -> Iterator[SqliteStore]:
        with SqliteStore(database) as store:
            yield store

    before = dump(database)
    team = WebServer(build_app(Site(open_store, settings, database)), "127.0.0.1", 0).start()
    public = WebServer(build_app(Site(open_store, settings, database, public=True)), "127.0.0.1", 0).start()
    try:
        yield {"root": root, "rules": rules, "database": database, "run": run, "team": team.url,
               "public": public.url, "before": before}
    finally:
        team.stop()
        public.stop()


def fetch(url: str, method: str = "GET") -> tuple[int, Message, bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def page(url: str) -> tuple[int, str]:
    status, headers, body = fetch(url)
    assert headers["Content-Type"].startswith("text/html; charset=utf-8")
    assert "script-src" not in headers["Content-Security-Policy"]  # default-src 'none': no script runs
    return status, body.decode()


def section(html: str, state: str) -> str:
    """The index's section of one state (up to the next section)."""
    start = html.index(f'<span class="state state-{state}">{state}</span>')
    end = html.find('<section class="state-section">', start)
    return html[start:end if end >= 0 else len(html)]


def test_the_index_shows_reports_by_state_newest_first(lab_store) -> None:
    status, html = page(lab_store["team"] + "/")
    assert status == 200
    confirmed = section(html, "confirmed")
    assert f'href="/r/{LAB_ID}"' in confirmed and "sysbench cpu events/s down ~25%" in confirmed
    assert "lab-local" in confirmed and "-24.6%" in confirmed
    planned = section(html, "planned")
    # its place in the lab as /hosts and `triage status` say it (issue 36): lab-local is free, so next
    assert f'href="/r/{SECOND_ID}"' in planned and "next on lab-local: starts at the daemon&#39;s next step" in planned
    assert "fio randwrite IOPS down 30%" in section(html, "refused")
    inside = section(html, "not-taken-on")
    assert f'href="/r/{PRIVATE_ID}"' in inside and "+12.3%" in inside
    assert '<span class="state state-new">' not in html  # an empty state is left out
    order = [html.index(f'state-{state}">{state}') for state in ("planned", "confirmed", "refused",
                                                                 "not-taken-on")]
    assert order == sorted(order)  # the states in their lifecycle order


def test_the_index_filters_like_triage_list(lab_store) -> None:
    base = lab_store["team"]
    html = page(base + "/?state=confirmed")[1]
    assert LAB_ID in html and SECOND_ID not in html and PRIVATE_ID not in html
    html = page(base + "/?kind=lkp-improvement")[1]
    assert PRIVATE_ID in html and LAB_ID not in html
    html = page(base + "/?since=2024-04-16")[1]  # the first lab report is of the 15th
    assert SECOND_ID in html and f'href="/r/{LAB_ID}"' not in html
    html = page(base + "/?testcase=sysbench&limit=1")[1]
    assert SECOND_ID in html and LAB_ID in html and PRIVATE_ID not in html
    html = page(base + "/?list=linux-btrfs")[1]
    assert "No report matches." in html
    status, html = page(base + "/?since=someday")
    assert status == 400 and "since &#39;someday&#39;: not a date" in html
    status, html = page(base + "/?sort=date")
    assert status == 400 and "unknown parameter &#39;sort&#39;" in html
    status, html = page(base + "/?state=lost")
    assert status == 400 and "state &#39;lost&#39;: one of new, planned" in html
    assert page(base + "/?limit=0")[0] == 400 and page(base + "/?testcase=a%20b")[0] == 400


def test_a_report_page_shows_what_triage_show_shows(lab_store) -> None:
    status, html = page(lab_store["team"] + f"/r/{LAB_ID}")
    assert status == 200
    assert "<h1 class=\"subject\">[REGRESSION] sysbench cpu events/s down ~25% since v6.9-rc1, bisected</h1>" in html
    # the summary's lines, from the same code as `triage show`
    assert "<th>headline</th><td>events/s -24.6% regression</td>" in html
    assert "<th>culprit</th><td class=\"commit\"><code>c0ffee1234ab</code>" in html
    assert "<th>repro</th><td>[sysbench] sysbench cpu --threads=2 --time=1 run</td>" in html
    assert f'href="https://lore.kernel.org/all/{LAB_ID}/"' in html
    # the plan, the verdict with its interval, the plot
    assert '<pre class="command">sysbench cpu --threads=2 --time=1 run</pre>' in html
    verdict = lab_store["run"]["verdict"]
    assert verdict["outcome"] == "confirmed"
    assert '<span class="state state-confirmed">confirmed</span> ' + verdict["reason"].replace("'", "&#39;") in html
    assert f"{verdict['ci_low']:+.1f}% to {verdict['ci_high']:+.1f}%" in html
    assert f'<img src="/r/{LAB_ID}/plot.png" width="800" height="450"' in html
    assert "On <strong>lab-local</strong>" in html and "told in #perf-triage" in html
    # the thread with the reply's stance and evidence
    assert '<span class="stance stance-reproduced">reproduced</span>' in html
    assert "I can reproduce this on a 4-core laptop as well" in html and f'href="/r/{REPLY_ID}"' in html
    # the lifecycle, from the triage row and the notifications written with each move
    for move in ("taken on by the daemon: new", "plan told to the team", "<td>planned</td>", "run started",
                 "verdict told",
                 "final state: confirmed", "update-final to #perf-triage: sent"):
        assert move in html, move


def test_a_commit_in_a_known_tree_is_a_link(lab_store) -> None:
    status, html = page(lab_store["team"] + f"/r/{PRIVATE_ID}")
    assert status == 200
    assert '<a href="https://git.kernel.org/cgit/linux/kernel/git/kdave/linux.git/commit/?id=bc34f8f758' in html


def test_the_plot_is_the_notify_figure_as_png_and_svg(lab_store) -> None:
    status, headers, body = fetch(lab_store["team"] + f"/r/{LAB_ID}/plot.png")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert body == png_of(run_figure(lab_store["run"]))  # the very figure Slack is sent
    status, headers, svg = fetch(lab_store["team"] + f"/r/{LAB_ID}/plot.svg")
    assert status == 200 and headers["Content-Type"] == "image/svg+xml"
    assert svg.startswith(b"<?xml") and b"<svg" in svg and b"lab-local" in svg  # the title names the host
    assert fetch(lab_store["team"] + f"/r/{LAB_ID}/plot.gif")[0] == 404
    assert fetch(lab_store["team"] + f"/r/{SECOND_ID}/plot.png")[0] == 404  # not run yet: no plot


def test_the_hosts_page_shows_each_host_and_what_runs_next(lab_store) -> None:
    status, html = page(lab_store["team"] + "/hosts")
    assert status == 200
    assert "<h2>lab-local" in html and '<span class="busy no">idle</span>' in html
    host = html[html.index("<h2>lab-local"):]
    # the host is idle: the daemon's schedule runs the waiting report there at its next step
    assert f'<p>next: <a href="/r/{SECOND_ID}">[REGRESSION] again: sysbench cpu' in host
    assert "starts at the daemon's next step" in host and "Queue (" not in host
    assert "a report waits 2 h at most for it" in html


class HandedOver:
    """A dispatcher that takes the daemon's jobs and starts none (a job queue with no worker yet):
    the reports it is given stay `running` on their hosts."""

    def __init__(self) -> None:
        self.jobs: dict[str, str] = {}
        self._pending: list = []

    def enqueue(self, store, job) -> None:
        self._pending.append(job)

    def launch(self) -> None:
        self.jobs |= {job.host: job.message_id for job in self._pending}
        self._pending = []

    def abandon(self) -> None:
        self._pending = []

    def running(self) -> dict[str, str]:
        return dict(self.jobs)

    def jobs_now(self) -> JobsNow:
        return JobsNow(self.running(), frozenset(), frozenset(self.jobs.values()))

    def wait(self, timeout: float) -> bool:
        return False

    def finished(self) -> list:
        return []

    def join(self) -> None:
        pass


def test_the_hosts_page_shows_the_running_report_and_the_daemons_queue(lab_store, tmp_path: Path) -> None:
    database = tmp_path / "busy.db"
    shutil.copy(lab_store["database"], database)
    third = tmp_path / "third.eml"  # a third lab report, of a third culprit, newer than the second
    third.write_bytes(second_report().replace(f"<{SECOND_ID}>".encode(), f"<{THIRD_ID}>".encode()).replace(
        b"Date: Wed, 17 Apr 2024 10:00:00", b"Date: Thu, 18 Apr 2024 10:00:00").replace(
        SECOND_CULPRIT, b'7ab1e5c0ffee ("sched: charge the wakeup to the waker")').replace(
        b"Subject: [REGRESSION] again:", b"Subject: [REGRESSION] a third time:"))
    assert triage("ingest", "--db", str(database), str(third)).returncode == 0
    settings = load_settings(lab_store["rules"])
    dispatcher = HandedOver()
    with SqliteStore(database) as store:
        lab = flow.DaemonContext(settings=settings, database=database, budget=10, deliver=lambda: None)
        flow.admit(store, lab, admit_days=365 * 100)
        flow.plan_new(store, lab)
        # the daemon's step: the newest report takes the free host, the other waits behind it
        assert [job.message_id for job in flow.assign(store, lab, dispatcher)] == [THIRD_ID]
        assert store.get_triage(THIRD_ID).state == "running" and store.get_triage(SECOND_ID).state == "planned"

    @contextmanager
    def open_store() -> Iterator[SqliteStore]:
        with SqliteStore(database) as store:
            yield store

    team = WebServer(build_app(Site(open_store, settings, database)), "127.0.0.1", 0).start()
    try:
        with host_lock(database, "lab-local"):  # what the run holds on its host while it runs
            status, html = page(team.url + "/hosts")
            with open_store() as store:  # a page shows the first `limit` of a queue, and counts them all
                (shown,) = hosts_view(store, Site(open_store, settings, database), limit=0)["hosts"]
            assert shown["queue"] == [] and shown["queue_total"] == 1 and shown["busy"] is True
        after = page(team.url + "/hosts")[1]
    finally:
        team.stop()
    assert status == 200
    host = html[html.index("<h2>lab-local"):]
    assert '<span class="busy yes">busy</span>' in host
    assert f'<p>running: <a href="/r/{THIRD_ID}">[REGRESSION] a third time: sysbench cpu' in host
    assert "Queue (1, next first):" in host
    assert re.search(rf'<li><a href="/r/{re.escape(SECOND_ID)}">\[REGRESSION\] again: sysbench cpu[^<]*</a> '
                     r'<span class="since">behind 1, waiting \d+ (s|min|h)', host), host
    # its lock let go (the run cut short, nobody runs it): the report is listed as waiting for a host
    assert '<span class="busy no">idle</span>' in after and "Waiting for a host" in after


def test_a_report_page_follows_a_dedup_alias_to_the_kept_report(tmp_path: Path) -> None:
    page_file = FIXTURES / "openwall" / "lkp-report-page-no-message-id.html"
    markup = page_file.read_text()
    # the page's lore copy: its text, with the addresses the archive shortened spelled out
    text = html_module.unescape(re.search(r"<pre[^>]*>(.*?)</pre>", markup, re.S).group(1)).split("\n\n", 1)[1]
    text = re.sub(r'<a href="[^"]*">(View attachment[^<]*)</a>\n', "", text).replace("@...el.com", "@intel.com")
    lore_id = "202412011200.web-copy@intel.example"
    copy = ("From: kernel test robot <oliver.sang@intel.com>\nSubject: [linus:master] [ext4]  4f3d1e4533:  "
            "fileio.requests_per_sec -12.4% regression\nDate: Sun, 1 Dec 2024 12:00:00 +0800\n"
            f"Message-ID: <{lore_id}>\n\n{text}").encode()
    database = tmp_path / "alias.db"
    with SqliteStore(database) as store:
        for raw, kind in ((page_file.read_bytes(), "openwall"), (copy, "lore")):
            batch = Batch((FetchedMessage(raw, kind, source_url=f"https://example.invalid/{kind}",
                                          list_name="linux-ext4"),), None)
            store_batch(store, kind, batch, jobs=1, clock=lambda: datetime(2024, 12, 2, tzinfo=UTC),
                        result=IngestResult())
        kept = store.resolve_alias(lore_id)
        assert kept is not None and kept != lore_id and store.get_record(lore_id) is None

    @contextmanager
    def open_store() -> Iterator[SqliteStore]:
        with SqliteStore(database) as store:
            yield store

    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "routing.toml").write_text('default_channel = "#perf"\npublic_default = false\n')
    closed = load_settings(rules)  # nothing may leave the team
    team = WebServer(build_app(Site(open_store)), "127.0.0.1", 0).start()
    public = WebServer(build_app(Site(open_store, closed, public=True)), "127.0.0.1", 0).start()
    try:
        request = urllib.request.Request(team.url + f"/r/{lore_id}")
        opener = urllib.request.build_opener(NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(request, timeout=60)
        assert redirect.value.code == 302 and redirect.value.headers["Location"] == report_href(kept)
        status, html = page(team.url + f"/r/{lore_id}")  # followed, as a browser does
        assert status == 200 and "fileio.requests_per_sec -12.4% regression" in html
        assert page(team.url + f"/r/{lore_id}/plot.png")[0] == 404  # the kept report's: not rerun
        # in public, a report routing keeps inside is not found under its other name either
        status, html = page(public.url + f"/r/{lore_id}")
        assert status == 404 and report_href(kept) not in html
    finally:
        team.stop()
        public.stop()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_hostile_subject_message_id_and_reply_render_as_text(lab_store) -> None:
    href = report_href(HOSTILE_ID)
    assert href == "/r/x%22onmouseover=alert%281%29&a=b%2Fc%3Fd%23e%2541@evil.example"
    index = page(lab_store["team"] + "/")[1]
    status, html = page(lab_store["team"] + href)
    assert status == 200
    for text in (index, html):
        assert "<script" not in text and "<img src=x" not in text and "<b>bold" not in text
        assert "&lt;script&gt;alert(&#34;subject&#34;)&lt;/script&gt;" in text
    assert 'href="/r/x%22onmouseover=alert%281%29&amp;a=b%2Fc%3Fd%23e%2541@evil.example"' in index
    assert "&lt;x&#34;onmouseover=alert(1)&amp;a=b/c?d#e%41@evil.example&gt;" in html  # the id, shown as text
    assert "I can reproduce this &lt;img src=x onerror=alert(2)&gt; on my machine too" in html
    assert "No rerun planned: fio option --exec_prerun runs a program: refused" in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html  # the culprit's subject, as text
    assert "refusal told to the team" in html and "<td>refused</td>" in html


def test_ids_in_urls_are_checked(lab_store) -> None:
    base = lab_store["team"]
    assert page(base + "/r/" + "a" * 600)[0] == 400
    status, html = page(base + "/r/a%20b@example.org")
    assert status == 400 and "only printable ASCII without spaces" in html
    assert page(base + "/r/%00@example.org")[0] == 400
    assert page(base + "/r/%3C%3E")[0] == 400  # "<>": empty once the brackets are off
    status, html = page(base + "/r/nobody@example.org")
    assert status == 404 and "no report is stored under &lt;nobody@example.org&gt;" in html
    assert page(base + "/nowhere")[0] == 404


def test_no_page_writes_anything(lab_store) -> None:
    base = lab_store["team"]
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, headers, _ = fetch(base + f"/r/{LAB_ID}", method)
        assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, headers, body = fetch(base + "/", "HEAD")
    assert status == 200 and body == b""
    for path in ("/", f"/r/{LAB_ID}", "/hosts", f"/r/{LAB_ID}/plot.svg", "/?state=planned"):
        assert fetch(base + path)[0] == 200
    assert dump(lab_store["database"]) == lab_store["before"]


def test_the_public_view_leaves_out_hosts_channels_notes_and_private_reports(lab_store) -> None:
    base = lab_store["public"]
    status, index = page(base + "/")
    assert status == 200 and LAB_ID in index and SECOND_ID in index
    assert PRIVATE_ID not in index  # routing.toml: public = false for btrfs
    assert page(base + f"/r/{PRIVATE_ID}")[0] == 404
    assert page(base + "/hosts")[0] == 404 and 'href="/hosts"' not in index
    status, html = page(base + f"/r/{LAB_ID}")
    assert status == 200
    assert '<pre class="command">sysbench cpu --threads=2 --time=1 run</pre>' in html  # the plan
    assert '<span class="state state-confirmed">confirmed</span>' in html  # the numbers
    assert f'<img src="/r/{LAB_ID}/plot.png"' in html  # the plot
    for text in (index, html, fetch(base + f"/r/{LAB_ID}/plot.svg")[2].decode()):
        assert "lab-local" not in text and "#perf-triage" not in text
        assert str(lab_store["root"] / "scratch") not in text  # the host's scratch directory neither
    assert "update-final" not in html and "sent" not in html.split("Lifecycle", 1)[1]
    png = fetch(base + f"/r/{LAB_ID}/plot.png")[2]
    assert png.startswith(b"\x89PNG") and png != fetch(lab_store["team"] + f"/r/{LAB_ID}/plot.png")[2]


def test_triage_web_serves_a_store_alone_and_refuses_a_missing_one(lab_store, tmp_path: Path) -> None:
    missing = triage("web", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 1 and "none.db: no database there" in missing.stderr
    bad = triage("web", "--db", str(lab_store["database"]), "--port", "http")
    assert bad.returncode == 1 and "--port 'http': a port number" in bad.stderr
    port = free_port()
    log = tmp_path / "web.log"
    with open(log, "wb") as output:
        server = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "web", "--db", str(lab_store["database"]),
                                   "--rules", str(lab_store["rules"]), "--port", str(port), "--public"],
                                  cwd=PROJECT, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: b"triage web: serving" in log.read_bytes(), 60, "triage web to listen", server, log)
        status, html = page(f"http://127.0.0.1:{port}/r/{LAB_ID}")
        assert status == 200 and "public view" in html and "lab-local" not in html
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C
        assert server.wait(timeout=60) == 0
    assert f"serving http://127.0.0.1:{port}/ (public view" in log.read_text()


def test_the_daemon_serves_the_pages_beside_its_health_check(lab_store, tmp_path: Path) -> None:
    database = tmp_path / "daemon.db"
    shutil.copy(lab_store["database"], database)
    rules = tmp_path / "rules"
    rules.mkdir()
    # one source nobody answers (its polls fail, the daemon goes on) and a host that cannot
    # switch kernels, so the waiting report is not rerun while the test looks
    (rules / "sources.toml").write_text(f'[http]\nattempts = 1\ntimeout_seconds = 1\n\n[[lore]]\n'
                                        f'url = "http://127.0.0.1:{free_port()}/nowhere/"\npoll_minutes = 60\n')
    (rules / "hosts.toml").write_text('[[host]]\nname = "daemon-box"\nreach = "local"\ncpu_model = "test"\n'
                                      'threads = 2\nsockets = 1\nmemory_gb = 4\ndisk = "ssd"\n'
                                      f'scratch_dir = "{tmp_path / "scratch"}"\n')
    port = free_port()
    log = tmp_path / "daemon.log"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_PROXY": "*", "PYTHONUNBUFFERED": "1"}
    daemon = start_daemon(database, rules, env, log, "--health-port", str(port))
    try:
        wait_for(lambda: any(item.get("event") == "daemon.started" for item in log_events(log)), 60,
                 "the daemon to start", daemon, log)
        status, headers, body = fetch(f"http://127.0.0.1:{port}/healthz")
        assert status in (200, 503) and headers["Content-Type"] == "application/json"
        assert json.loads(body)["status"] in ("ok", "degraded")
        status, html = page(f"http://127.0.0.1:{port}/")
        assert status == 200 and LAB_ID in html and "team view" in html
        status, html = page(f"http://127.0.0.1:{port}/hosts")
        assert status == 200 and "<h2>daemon-box" in html
        assert "(host lab-local is not in hosts.toml)" in html  # the waiting report's host is not this lab's
    finally:
        assert stop_daemon(daemon) == 0


def test_chromium_renders_the_index_and_a_report(lab_store, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no headless Chromium (apt-get install chromium)")
    for name, url in (("index", lab_store["team"] + "/"), ("report", lab_store["team"] + f"/r/{LAB_ID}"),
                      ("hostile", lab_store["team"] + report_href(HOSTILE_ID)),
                      ("public", lab_store["public"] + f"/r/{LAB_ID}"), ("hosts", lab_store["team"] + "/hosts")):
        shot = tmp_path / f"{name}.png"
        done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1800",
                               f"--screenshot={shot}", url], capture_output=True, timeout=180)
        assert done.returncode == 0 and shot.exists(), done.stderr.decode(errors="replace")[-2000:]
        from PIL import Image

        with Image.open(shot) as image:
            assert image.size == (1200, 1800)
            colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
            assert len(colours) > 50, f"{name}: a blank page"  # text, tables and the plot were drawn
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                              f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url],
                             capture_output=True, timeout=180).stdout.decode()
        assert "</main>" in dom
        if name == "hostile":  # what the browser built holds the stranger's markup as text, no element
            assert "&lt;script&gt;alert(\"subject\")&lt;/script&gt;" in dom and "<script" not in dom
        if name in ("report", "public"):
            assert "sysbench cpu --threads=2 --time=1 run" in dom and ("lab-local" in dom) == (name == "report")
    keep = os.environ.get("TRIAGEBOT_SCREENSHOTS")  # a directory to look at them in (never committed)
    if keep:
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, Path(keep) / shot.name)


WIDTHS = (360, 1280, 1920)  # a phone, a laptop, a wide screen (issue 36, finding 9)


def test_every_page_wraps_at_any_width_from_a_phone_to_a_wide_screen(lab_store, tmp_path: Path) -> None:
    """No page is wider than the window: long culprit lines, parameters and metric names wrap, or
    scroll inside their own box (the metric rows), never the page behind a horizontal scrollbar."""
    from tests.support.browser import Browser, chromium

    if chromium() is None:
        pytest.skip("no headless Chromium (apt-get install chromium)")
    team = lab_store["team"]
    pages = {"index": team + "/", "report": team + f"/r/{LAB_ID}", "lkp-report": team + f"/r/{PRIVATE_ID}",
             "hostile": team + report_href(HOSTILE_ID), "public": lab_store["public"] + f"/r/{LAB_ID}",
             "hosts": team + "/hosts"}
    too_wide = []
    with Browser(tmp_path / "profile") as browser:
        for width in WIDTHS:
            for name, url in pages.items():
                shot = tmp_path / f"{name}-{width}.png"
                measured = browser.measure(url, width, 900, shot)
                assert measured.width == width and shot.stat().st_size > 0
                if measured.scroll_width > measured.width:
                    too_wide.append(f"{name} at {width} px: {measured.scroll_width} px wide; "
                                    f"past the edge: {measured.overflowing[-3:]}")
    keep = os.environ.get("TRIAGEBOT_SCREENSHOTS")  # a directory to look at them in (never committed)
    if keep:
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, Path(keep) / shot.name)
    assert too_wide == []


def test_routing_says_which_reports_are_public_and_is_checked() -> None:
    routing = parse_routing(ROUTING, "routing.toml")
    assert routing.public_default is True and routing.routes[0].public is False
    private = parse_message((FIXTURES / "mail" / "lkp" / "improvement-2024.eml").read_bytes(), Source("eml"))
    public = parse_message((FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes(), Source("eml"))
    assert not routing.is_public(private) and routing.is_public(public)
    closed = parse_routing('default_channel = "#perf-triage"\npublic_default = false\n', "routing.toml")
    assert not closed.is_public(public)
    # a bad value names the file, the line and the key
    with pytest.raises(RulesError, match=r"routing.toml:3: \[\[route\]\] entry 1: public must be true or false"):
        parse_routing('default_channel = "#perf-triage"\n\n[[route]]\nchannel = "#x"\npublic = "yes"\n'
                      'subsystem = "xfs"\n', "routing.toml")
    with pytest.raises(RulesError, match="public_default must be true or false, not 1"):
        parse_routing('default_channel = "#perf-triage"\npublic_default = 1\n', "routing.toml")


def test_a_record_that_cannot_be_read_is_a_page_saying_so(lab_store, tmp_path: Path) -> None:
    database = tmp_path / "copy.db"
    shutil.copy(lab_store["database"], database)
    with sqlite3.connect(database) as connection:  # another program wrote the reply's record
        connection.execute("UPDATE records SET record_json = '{\"schema\": 1' WHERE message_id = ?", (REPLY_ID,))

    @contextmanager
    def open_store() -> Iterator[SqliteStore]:
        with SqliteStore(database) as store:
            yield store

    settings = load_settings(lab_store["rules"])
    team = WebServer(build_app(Site(open_store, settings, database)), "127.0.0.1", 0).start()
    public = WebServer(build_app(Site(open_store, settings, database, public=True)), "127.0.0.1", 0).start()
    try:
        status, html = page(team.url + f"/r/{REPLY_ID}")
        assert status == 503 and f"the stored record of {REPLY_ID} cannot be read" in html
        status, html = page(public.url + f"/r/{REPLY_ID}")
        assert status == 503 and "try again later" in html and str(database) not in html
        status, html = page(team.url + f"/r/{LAB_ID}")  # its thread goes on without the reply
        assert status == 200 and "Marek Novak" not in html and "<h2>Rerun</h2>" in html
    finally:
        team.stop()
        public.stop()


def test_the_rerun_links_its_commits_in_the_culprits_tree() -> None:
    report = parse_message((FIXTURES / "mail" / "lkp" / "improvement-2024.eml").read_bytes(), Source("eml"))
    culprit = next(commit for commit in report.commits if commit.role == "culprit")
    run = {"host": "lab-9", "status": "done", "base_commit": culprit.sha + "^", "suspect_commit": culprit.sha,
           "samples": [{"role": "base", "value": 1.0}]}
    view = _run_view(run, report, public=False)
    tree = "https://git.kernel.org/cgit/linux/kernel/git/kdave/linux.git"
    assert view["suspect"] == {"text": culprit.sha[:12], "url": f"{tree}/commit/?id={culprit.sha}"}
    assert view["base"]["url"] == f"{tree}/commit/?id={culprit.sha}^" and view["host"] == "lab-9"
    assert view["plot"] is False  # no suspect sample: nothing to plot
    assert _run_view(run, report, public=True)["host"] is None
