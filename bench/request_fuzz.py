"""Benchmark: a random batch of malformed requests against every endpoint of a real daemon (issue 34).

    PYTHONPATH=. python3 bench/request_fuzz.py [--requests 2400] [--seed 34]

Starts a real `triage daemon` (SQLite, a public-inbox list holding the lab's report and a reply,
taken on and planned; Slack's endpoint on through the test Slack server) and `triage web
--public` on the same store, then sends each `--requests` requests over raw sockets, drawn from a
seeded generator: every endpoint (/, /hosts, /r/<id>, its plot.png and plot.svg, /style.css,
/healthz, /metrics, /slack/events, unknown paths), with methods, paths, query strings, numbers
(superscripts, other scripts' digits, 5,000 digits, signs, exponents), headers (the Slack
timestamp and signature, Content-Length and Transfer-Encoding of every wrong shape, oversized and
binary values) and bodies (random bytes, form and JSON payloads of the wrong shape, half of them
validly signed with the daemon's signing secret) malformed in turn. Prints the answers by status
and by endpoint, the count of 5xx answers and of tracebacks in each server's log (targets: 0 and
0), and requests that got no answer at all. `--project PATH` runs the servers of another checkout
(the code before the fix) for a row to compare.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import hmac
import json
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from tests.support.daemon_run import SLACK_TOKEN, daemon_env, free_port  # noqa: E402
from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.public_inbox import start_public_inbox  # noqa: E402

SECRET = "bench-fuzz-signing-secret"
CHANNEL = "C0PERFTRIAGE"
REPORT = (PROJECT / "fixtures" / "lab" / "sysbench-cpu-regression.eml").read_bytes().replace(
    b"Date: Mon, 15 Apr 2024", b"Date: Mon, 15 Apr 2099")
REPORT_ID = "20240415071244.lab1@tberg-ws"
REPLY = (f"From: Marek <marek@example.cz>\nTo: linux-kernel@vger.kernel.org\nSubject: Re: sysbench\n"
         f"Date: Tue, 16 Apr 2099 08:30:00 +0200\nMessage-ID: <reply.fuzz@example.cz>\nIn-Reply-To: <{REPORT_ID}>\n"
         "\nI can reproduce this, 20% slower here too.\n").encode()
ENDPOINTS = ("/", "/hosts", f"/r/{REPORT_ID}", f"/r/{REPORT_ID}/plot.png", f"/r/{REPORT_ID}/plot.svg",
             "/r/reply.fuzz@example.cz", "/style.css", "/healthz", "/metrics", "/slack/events", "/nowhere")
BAD_NUMBERS = ["\u00b2", "\u0661\u0662", "9" * 5000, "-1", "+5", "1e9", " 7", "0x10", "1_000", "", "\x00", "%",
               "99999999999999999999", "0", "1001", "\U0001d7d8", "٣", "NaN", "Infinity"]
FIELDS = ["limit", "since", "state", "kind", "list", "testcase", "evil", "limit", "payload", "command"]
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "G\x01T", "get",
           "PROPFIND", "X" * 300]


def sign(stamp: str, body: bytes) -> str:
    return "v0=" + hmac.new(SECRET.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()


def junk(rng: random.Random, size: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(size))


def payload(rng: random.Random) -> bytes:
    """A body of the wrong shape: random bytes, a form, a JSON payload missing or mistyping fields."""
    pick = rng.randrange(6)
    if pick == 0:
        return junk(rng, rng.randrange(0, 400))
    if pick == 1:
        return "&".join(f"{rng.choice(FIELDS)}={quote(rng.choice(BAD_NUMBERS))}"
                        for _ in range(rng.randrange(1, 6))).encode()
    if pick == 2:
        return b"command=" + quote(rng.choice(["/triage", "/other", "", "/triage\x00"])).encode() + b"&text=" + \
            quote(rng.choice(["show", "rerun x", "status", "queue", "\u202e", "rerun " + "a" * 900])).encode() + \
            (b"&user_id=" + quote(rng.choice(["U0RUNNER", "", "\u00b2"])).encode() if rng.random() < 0.5 else b"")
    values = [None, True, 7, -1, "", "x", [], {}, [{}], {"id": 5}, {"id": "U0RUNNER"}, "\u00b2", "9" * 300]
    body = {key: rng.choice(values) for key in rng.sample(["type", "user", "actions", "view", "trigger_id",
                                                           "channel", "container", "team"], rng.randrange(0, 8))}
    if rng.random() < 0.6:
        body["type"] = rng.choice(["block_actions", "view_submission", "shortcut", "", None])
    if rng.random() < 0.5:
        body["actions"] = [{key: rng.choice(values + ["rerun", "mark-invalid", "rerun-with", REPORT_ID])
                            for key in rng.sample(["action_id", "value", "block_id"], rng.randrange(0, 3))}]
    if rng.random() < 0.3:
        keys = rng.sample(["type", "callback_id", "private_metadata", "state"], rng.randrange(0, 4))
        body["view"] = {key: rng.choice(values + ["modal", "rerun-with", "{}", '{"message_id": 1}']) for key in keys}
    return b"payload=" + quote(json.dumps(body)).encode()


def request(rng: random.Random) -> tuple[str, bytes]:
    """(the endpoint it is aimed at, the raw request)."""
    endpoint = "/slack/events" if rng.random() < 0.3 else rng.choice(ENDPOINTS)  # the route that reads bodies
    path = endpoint
    mutation = rng.randrange(8)
    if mutation == 1:
        path += rng.choice(["%00", "%2e%2e/", "/..", "%zz", "%C2%B2", "/" + "a" * 3000, "\u00b2", "//", "%"])
    elif mutation == 2:
        path = path.replace(REPORT_ID, rng.choice(["", "a" * 700, "%3Cscript%3E@x", "sha256-0", "<>", "\u202e@x"]))
    query = "&".join(f"{rng.choice(FIELDS)}={quote(rng.choice(BAD_NUMBERS))}" for _ in range(rng.randrange(0, 4)))
    target = (quote(path, safe="/%@:.<>") + ("?" + query if query else "")).encode("utf-8", errors="replace")
    method = rng.choice(METHODS) if rng.random() < 0.3 else ("POST" if endpoint == "/slack/events" else "GET")
    body = payload(rng) if method != "GET" or rng.random() < 0.1 else b""
    stamp = str(int(time.time()))
    headers = [b"Host: x", b"Connection: close"]
    signed = rng.random() < 0.5
    if signed:
        headers += [b"X-Slack-Request-Timestamp: " + stamp.encode(),
                    b"X-Slack-Signature: " + sign(stamp, body).encode(),
                    b"Content-Type: application/x-www-form-urlencoded"]
    elif rng.random() < 0.7:
        headers.append(b"X-Slack-Request-Timestamp: " + rng.choice(BAD_NUMBERS).encode("utf-8"))
        headers.append(b"X-Slack-Signature: " + rng.choice([b"v0=00", b"", b"v0=\xff", junk(rng, 20).replace(b"\r", b"")
                                                            .replace(b"\n", b"")]))
    length = str(len(body)).encode()
    framing = rng.randrange(10)
    if framing == 0:
        headers.append(b"Content-Length: " + rng.choice(BAD_NUMBERS).encode("utf-8"))
    elif framing == 1:
        headers += [b"Content-Length: " + length, b"Content-Length: " + str(len(body) + 1).encode()]
    elif framing == 2:
        headers.append(b"Transfer-Encoding: " + rng.choice([b"chunked", b"gzip", b"xchunked", b"chunked, chunked"]))
        if b"chunked" in headers[-1]:
            body = (b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n") if body else b"0\r\n\r\n"
    elif framing == 3:
        headers.append(b"Content-Length: " + str(rng.choice([1 << 30, 10 ** 17, 65537])).encode())
    else:
        headers.append(b"Content-Length: " + length)
    if rng.random() < 0.1:
        headers.append(b"X-Junk: " + junk(rng, rng.randrange(1, 2000)).replace(b"\r", b"").replace(b"\n", b""))
    if rng.random() < 0.05:
        headers.append(b"Expect: 100-continue")
    raw = method.encode("utf-8", errors="replace") + b" " + target + b" HTTP/1.1\r\n" + b"\r\n".join(headers) + \
        b"\r\n\r\n" + body
    return endpoint, raw


def send(port: int, raw: bytes) -> int | None:
    """The final answer's status; None when the server closed without one (or sent none in 10 s)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            try:
                connection.sendall(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass
            answer = b""
            try:
                while (chunk := connection.recv(4096)) and len(answer) < 1 << 20:
                    answer += chunk
                    if _final_status(answer) is not None:
                        break
            except (ConnectionResetError, TimeoutError):
                pass
    except OSError:
        return None
    return _final_status(answer)


def _final_status(answer: bytes) -> int | None:
    """The status of the final answer (after any interim `100 Continue`), once its line is in."""
    for line in answer.split(b"\r\n"):
        parts = line.split()
        if len(parts) > 1 and parts[0].startswith(b"HTTP/") and parts[1].isdigit() and parts[1] != b"100":
            return int(parts[1])
    return None


def tracebacks(log: Path) -> int:
    text = log.read_text(errors="replace")
    return text.count("Traceback (most recent call last)") + text.count('"exception": "Traceback')


def wait(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise SystemExit(f"bench/request_fuzz.py: timed out waiting for {what}")


def taken_on(database: Path) -> bool:
    try:
        with sqlite3.connect(database, timeout=30) as connection:
            return bool(connection.execute("SELECT 1 FROM triage WHERE state = 'planned'").fetchall())
    except sqlite3.Error:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2400, help="requests to each server (default 2400)")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--project", type=Path, default=PROJECT, help="the checkout whose servers run")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-fuzz-"))
    try:
        with start_public_inbox(root / "lore", "linux-kernel", [REPORT, REPLY]) as inbox, \
                FakeSlack(token=SLACK_TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
            rules = root / "rules"
            shutil.copytree(PROJECT / "rules" / "reproducers", rules / "reproducers")
            (rules / "hosts.toml").write_text('[[host]]\nname = "lab-noswitch"\nreach = "local"\ncpu_model = "x"\n'
                                              f'threads = 2\nsockets = 1\nmemory_gb = 8\ndisk = "ssd"\n'
                                              f'scratch_dir = "{root / "scratch"}"\n')
            (rules / "routing.toml").write_text(f'default_channel = "{CHANNEL}"\n[slack]\nrun = ["U0RUNNER"]\n')
            (rules / "sources.toml").write_text(f'[[lore]]\nurl = "{inbox.list_url}"\npoll_minutes = 60\n')
            database, port, web_port = root / "daemon.db", free_port(), free_port()
            env = daemon_env(root, slack.base_url) | {"SLACK_SIGNING_SECRET": SECRET,
                                                      "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
            logs = {"daemon": root / "daemon.log", "web --public": root / "web.log"}
            with open(logs["daemon"], "ab") as output:
                daemon = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "daemon", "--db", str(database),
                                           "--rules", str(rules), "--tick", "0.5", "--admit-days", "36500",
                                           "--health-port", str(port)], cwd=args.project, env=env,
                                          stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
            web = None
            try:
                wait(lambda: taken_on(database), 180, "the report to be taken on and planned")
                with open(logs["web --public"], "ab") as output:
                    web = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "web", "--db", str(database),
                                            "--rules", str(rules), "--port", str(web_port), "--public"],
                                           cwd=args.project, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                           stderr=subprocess.STDOUT)
                wait(lambda: b"serving" in logs["web --public"].read_bytes(), 120, "triage web to listen")
                before = {name: tracebacks(log) for name, log in logs.items()}
                for name, server_port in (("daemon", port), ("web --public", web_port)):
                    rng = random.Random(args.seed)
                    statuses: collections.Counter[int | None] = collections.Counter()
                    by_endpoint: collections.Counter[str] = collections.Counter()
                    started = time.monotonic()
                    for _ in range(args.requests):
                        endpoint, raw = request(rng)
                        by_endpoint[endpoint] += 1
                        statuses[send(server_port, raw)] += 1
                    took = time.monotonic() - started
                    errors = sum(count for status, count in statuses.items() if status is not None and status >= 500)
                    print(f"{name}: {args.requests} requests in {took:.0f} s; by status "
                          f"{dict(sorted(statuses.items(), key=lambda item: (item[0] is None, item[0] or 0)))}")
                    print(f"  per endpoint: {dict(by_endpoint)}")
                    print(f"  5xx answers: {errors}; no answer: {statuses[None]}; tracebacks in its log: "
                          f"{tracebacks(logs[name]) - before[name]}")
                alive = daemon.poll() is None and web.poll() is None
                print(f"both still serving: {alive}")
            finally:
                for process in (daemon, web):
                    if process is not None:
                        process.terminate()
                        process.wait(timeout=120)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
