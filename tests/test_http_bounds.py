"""The HTTP transport's bounds against a real misbehaving server on 127.0.0.1 (issue 13, 4 and 6).

Every body is streamed and kept only up to the byte cap of its kind, counted after decoding a
Content-Encoding (a 6 MB gzip of 6 GB stops at the cap); an honest Content-Length over the cap
is refused before any of the body is read; one request has a total deadline that a server
dribbling a byte at a time cannot stretch; redirects stay on the same scheme, host and port.
Memory is measured loosely, in a fresh interpreter, only where the issue measured it.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import PROJECT
from tests.support.hostile_http import (
    MIB,
    HostileServer,
    answer,
    dribble,
    gzip_bomb,
    redirect,
    self_signed,
    streamed,
    zeros,
)
from tests.support.hostile_http import within_guard as guard
from triagebot.http_client.client import RequestsClient, fetch
from triagebot.http_client.protocol import BodyTooLarge, HttpPolicy, ResponseRefused, SourceError
from triagebot.reproduce.materials import MaterialsError, fetch_materials
from triagebot.store.sqlite import SqliteStore

POLICY = HttpPolicy(user_agent="triagebot-tests/1 (bounds; operator tests@example.invalid)",
                    timeout_seconds=10.0, deadline_seconds=60.0, attempts=2, backoff_seconds=0.0,
                    backoff_max_seconds=0.0)
HANG_GUARD_SECONDS = 120  # far past every deadline here: only a hang trips it
SIX_GB = 6 * 10**9
GIB = 1 << 30


class Waits(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def within_guard(function, *args, **kwargs):
    return guard(HANG_GUARD_SECONDS, function, *args, **kwargs)


def get(url: str, *, limit: int, policy: HttpPolicy = POLICY):
    client = RequestsClient(policy, trust_environment=False)
    try:
        return within_guard(fetch, client, url, policy, limit=limit, sleep=Waits())
    finally:
        client.close()


@pytest.fixture
def server():
    with HostileServer() as running:
        yield running


# --- byte caps, decoded -----------------------------------------------------------------------

def test_a_body_within_its_cap_is_read_whole_and_gzip_is_decoded(server):
    text = b"line of a feed\n" * 10_000
    compressed = gzip.compress(b"0" * 4 * MIB)  # gzipped, as any server might
    server.route("/plain", answer(text))
    server.route("/gzip", streamed(lambda: iter([compressed]), headers={"Content-Encoding": "gzip"}))
    assert get(server.url("/plain"), limit=len(text)).body == text
    response = get(server.url("/gzip"), limit=8 * MIB)
    assert len(response.body) == 4 * MIB and set(response.body) == {ord("0")}


def test_a_content_encoding_gzip_bomb_stops_at_the_cap(server):
    server.route("/new.atom", streamed(gzip_bomb(SIX_GB), "application/atom+xml",
                                       headers={"Content-Encoding": "gzip"}))
    with pytest.raises(BodyTooLarge, match=r"over the 16777216 byte cap") as refused:
        get(server.url("/new.atom"), limit=16 * MIB)
    assert server.url("/new.atom") in str(refused.value)
    assert server.hits == ["/new.atom"]  # refused for what it is: not asked again


def test_a_body_without_content_length_stops_at_the_cap(server):
    sent = [0]
    server.route("/raw", streamed(zeros(GIB), sent=sent))
    with pytest.raises(BodyTooLarge, match="more than that, over the 1048576 byte cap"):
        get(server.url("/raw"), limit=MIB)
    assert sent[0] < 256 * MIB  # far from the GiB: socket buffers at most


def test_a_content_encoding_not_asked_for_is_refused(server):
    server.route("/br", answer(b"\x0b\x02\x80hello\x03", headers={"Content-Encoding": "br"}))
    with pytest.raises(ResponseRefused, match="Content-Encoding 'br' was not asked for"):
        get(server.url("/br"), limit=MIB)


# VmHWM, not getrusage's ru_maxrss, which carries the forking pytest's size over exec and
# would hide the growth.
BOMB_IN_A_FRESH_INTERPRETER = """
import json, re, sys
from triagebot.http_client.client import RequestsClient, fetch
from triagebot.http_client.protocol import HttpPolicy, SourceError
policy = HttpPolicy(timeout_seconds=10, deadline_seconds=60, attempts=1)
client = RequestsClient(policy, trust_environment=False)
def peak_kib():
    return int(re.search(r"VmHWM:\\s*(\\d+) kB", open("/proc/self/status").read()).group(1))
before = peak_kib()
try:
    fetch(client, sys.argv[1], policy, limit=int(sys.argv[2]))
    error = None
except SourceError as caught:
    error = str(caught)
after = peak_kib()
print(json.dumps({"error": error, "growth_kib": after - before}))
"""


def test_a_six_gb_gzip_bomb_costs_little_memory(server):
    """The probe's 6 MB response of 6 GB reached 6.4 GB RSS; now the cap bounds it."""
    server.route("/t.mbox.gz", streamed(gzip_bomb(SIX_GB), "application/gzip",
                                        headers={"Content-Encoding": "gzip"}))
    run = subprocess.run([sys.executable, "-c", BOMB_IN_A_FRESH_INTERPRETER,
                          server.url("/t.mbox.gz"), str(64 * MIB)],
                         capture_output=True, text=True, timeout=HANG_GUARD_SECONDS, cwd=PROJECT, check=False,
                         env={**os.environ, "PYTHONPATH": str(PROJECT)})
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout)
    assert "over the 67108864 byte cap" in outcome["error"]
    assert outcome["growth_kib"] < 200 * 1024, outcome  # loosely: the cap and a copy of it


# --- materials: refused while streaming ---------------------------------------------------------

DIRECTORY = "/0day-ci/archive/20240101/202401011234.0badcafe-lkp@intel.com/"


@pytest.fixture
def store(tmp_path):
    with SqliteStore(tmp_path / "triage.db") as opened:
        yield opened


def materials_server(server: HostileServer, job_handler) -> str:
    server.route(DIRECTORY, answer(b'<a href="job.yaml">job.yaml</a>', "text/html"))
    server.route(DIRECTORY + "job.yaml", job_handler)
    return server.url(DIRECTORY)


def fetch_job(url: str, store) -> None:
    client = RequestsClient(POLICY, trust_environment=False)
    try:
        fetch_materials(url, client, POLICY, store, sleep=Waits())  # SQLite: this thread only
    finally:
        client.close()


def test_a_1_gib_job_yaml_with_an_honest_length_is_refused_from_its_header(server, store):
    sent = [0]
    url = materials_server(server, streamed(zeros(GIB), "application/x-yaml",
                                            headers={"Content-Length": str(GIB)}, sent=sent))
    with pytest.raises(MaterialsError, match=rf"job.yaml is {GIB} bytes, over the 4194304 byte cap"):
        fetch_job(url, store)
    assert sent[0] < 256 * MIB  # the probe read all of it (2.1 GB RSS) before refusing
    assert store.get_material(url, "job.yaml") is None


def test_a_job_yaml_without_a_length_is_stopped_at_the_cap(server, store):
    sent = [0]
    url = materials_server(server, streamed(zeros(GIB), "application/x-yaml", sent=sent))
    with pytest.raises(MaterialsError, match=r"job.yaml is more than 4194304 bytes \(stopped reading"):
        fetch_job(url, store)
    assert sent[0] < 256 * MIB
    assert store.get_material(url, "job.yaml") is None


def test_a_gzip_encoded_3_gb_job_yaml_is_stopped_at_the_cap(server, store):
    url = materials_server(server, streamed(gzip_bomb(3 * 10**9), "application/x-yaml",
                                            headers={"Content-Encoding": "gzip"}))
    with pytest.raises(MaterialsError, match="over the 4194304 byte cap"):
        fetch_job(url, store)


def test_a_job_yaml_kept_over_its_cap_is_not_handed_on(server, store):
    url = materials_server(server, answer(b"suite: fio-basic\n", "application/x-yaml"))
    store.put_material(url, "job.yaml", b"a: 1\n" * MIB)  # written by an older version, say
    with pytest.raises(MaterialsError, match=r"\(kept in the store\): job.yaml is 5242880 bytes"):
        fetch_job(url, store)


# --- a total deadline --------------------------------------------------------------------------

SHORT = HttpPolicy(user_agent=POLICY.user_agent, timeout_seconds=10.0, deadline_seconds=1.5,
                   attempts=2, backoff_seconds=0.0, backoff_max_seconds=0.0)


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "status-line-and-headers"])
def test_a_server_dribbling_a_byte_at_a_time_fails_at_the_deadline(server, headers_too):
    # A byte every 0.2 s never trips the 10 s read timeout; the body would take 20 s.
    server.route("/new.atom", dribble(b"x" * 100, every=0.2, headers_too=headers_too))
    with pytest.raises(SourceError, match=r"no whole answer within the 1.5 s deadline.*gave up after 2"):
        get(server.url("/new.atom"), limit=MIB, policy=SHORT)
    assert server.hits == ["/new.atom", "/new.atom"]  # retried, like a timeout


def test_the_deadline_holds_over_https_too(tmp_path):
    tls = self_signed(tmp_path)
    if tls is None:
        pytest.skip("no openssl command to make a certificate with")
    with HostileServer(tls=tls) as secure:
        secure.route("/new.atom", dribble(b"x" * 100, every=0.2))
        secure.route("/ok", answer(b"ok"))
        # trust the test's own certificate, nothing else
        client = RequestsClient(SHORT, trust_environment=False, ca_bundle=str(tls[0]))
        try:
            assert within_guard(client.get, secure.url("/ok"), timeout=10, deadline=60,
                                limit=MIB).body == b"ok"  # TLS itself works here
            with pytest.raises(SourceError, match=r"no whole answer within the 1.5 s deadline"):
                within_guard(client.get, secure.url("/new.atom"), timeout=10, deadline=1.5, limit=MIB)
        finally:
            client.close()


def test_an_answer_within_the_deadline_is_kept(server):
    server.route("/feed", dribble(b"ok", every=0.05))
    assert get(server.url("/feed"), limit=MIB, policy=SHORT).body == b"ok"


# --- redirects --------------------------------------------------------------------------------

def test_a_redirect_to_another_port_is_refused_and_the_canary_never_hit(server):
    with HostileServer() as canary:
        canary.route(None, answer(b"<feed/>", "application/atom+xml"))
        server.route("/list/new.atom", redirect(canary.url("/list/new.atom")))
        with pytest.raises(ResponseRefused, match=r"HTTP 302 redirect to http://127.0.0.1:\d+/list/new.atom "
                                                  r"refused \(only the same scheme, host and port"):
            get(server.url("/list/new.atom"), limit=MIB)
        assert canary.hits == []
        assert server.hits == ["/list/new.atom"]  # not retried either


@pytest.mark.parametrize("location", [
    "file:///etc/passwd",
    "https://127.0.0.1/list/new.atom",  # another scheme
    "http://localhost/list/new.atom",  # another host name, same machine
    "//example.invalid/list/new.atom",  # another host, scheme-relative
])
def test_a_redirect_off_the_origin_is_refused(server, location):
    server.route("/list/new.atom", redirect(location, status=301))
    with pytest.raises(ResponseRefused, match="redirect to .* refused"):
        get(server.url("/list/new.atom"), limit=MIB)


def test_same_origin_redirects_are_followed_a_bounded_number_of_times(server):
    server.route("/old/new.atom", redirect("/list/new.atom", status=308))
    server.route("/list/new.atom", answer(b"<feed/>", "application/atom+xml"))
    response = get(server.url("/old/new.atom"), limit=MIB)
    assert response.body == b"<feed/>" and response.url == server.url("/list/new.atom")

    server.route("/loop", redirect("/loop"))
    with pytest.raises(ResponseRefused, match=f"more than {POLICY.max_redirects} redirects"):
        get(server.url("/loop"), limit=MIB)
    assert server.hits.count("/loop") == POLICY.max_redirects + 1
