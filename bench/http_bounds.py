"""Benchmark: what the daemon's HTTP side can be made to hold (issue 34, finding 3).

    PYTHONPATH=. python3 bench/http_bounds.py [--mib 1024] [--idle 300] [--nofile 256] [--project PATH]

Starts a real `triage daemon` (SQLite, a public-inbox list polled every 6 s, Slack's endpoint on
through the test Slack server, its file descriptor limit set to `--nofile` as the finding's
`prlimit` did) and measures, from outside, over raw sockets:

1. the daemon's RSS (VmRSS, sampled every 20 ms) while one unsigned POST of `--mib` MiB is sent to
   /slack/events with a Content-Length, then again chunked; the figure is the peak over the RSS
   just before (target: < 50 MB). The client sends until the server stops taking bytes;
   what it took before closing is printed too;
2. /healthz latency: 40 GETs on fresh connections with no other connection open (the baseline),
   then the same with `--idle` idle connections opened against the port first (target: it
   answers; the figure is the median over the baseline's median);
3. that polls go on meanwhile: a message posted to the list while the idle connections are held
   must be polled and stored; the polls logged ok and failed during that phase are counted.

`--project PATH` runs the daemon of another checkout (e.g. the code before the fix) for a row
to compare. BENCH_KEEP=1 keeps the scratch folder (the daemon's log) and prints where.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from tests.support.daemon_run import SLACK_TOKEN, daemon_env, free_port, lab_rules, log_events  # noqa: E402
from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.public_inbox import make_message, start_public_inbox  # noqa: E402

SECRET = "bench-signing-secret"
CHANNEL = "C0PERFTRIAGE"
MIB = 1 << 20


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))


class PeakRss:
    """The peak VmRSS of `pid` while the block runs, sampled every 20 ms on a thread."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss_kib(self.pid))
            except (OSError, StopIteration):
                pass
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self.before = rss_kib(self.pid)
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.5)  # what the server still holds just after
        self._stop.set()
        self._thread.join()


def big_post(port: int, mib: int, chunked: bool) -> tuple[int, bytes]:
    """Send an unsigned POST of `mib` MiB to /slack/events; (bytes the server took, its answer)."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=120)
    head = (b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Slack-Request-Timestamp: %d\r\nX-Slack-Signature: v0=00\r\n"
            % int(time.time()))
    head += b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: %d\r\n\r\n" % (mib * MIB)
    block = b"a" * MIB
    sent = 0
    try:
        connection.sendall(head)
        for _ in range(mib):
            connection.sendall((b"100000\r\n" + block + b"\r\n") if chunked else block)
            sent += MIB
        if chunked:
            connection.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = b""
    try:
        connection.settimeout(30)
        answer = connection.recv(300)
    except OSError:
        pass
    connection.close()
    return sent, answer.split(b"\r\n", 1)[0]


def healthz_ms(port: int, count: int) -> tuple[list[float], int]:
    """Milliseconds of each /healthz that answered, and how many did not (refused, reset, or
    nothing within 10 s)."""
    times, failed = [], 0
    for _ in range(count):
        started = time.perf_counter()
        answer = b""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
                connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                while chunk := connection.recv(65536):
                    answer += chunk
        except OSError:
            pass
        if answer.startswith((b"HTTP/1.1 200", b"HTTP/1.1 503")):
            times.append((time.perf_counter() - started) * 1000)
        else:
            failed += 1
        time.sleep(0.05)
    return times, failed


def median(times: list[float]) -> str:
    return f"{statistics.median(times):.1f} ms" if times else "none answered"


def stored(database: Path, message_id: str) -> bool:
    try:
        with sqlite3.connect(database, timeout=30) as connection:
            return bool(connection.execute("SELECT 1 FROM messages WHERE message_id = ?", (message_id,)).fetchall())
    except sqlite3.Error:
        return False


def wait(condition, seconds: float, what: str, fatal: bool = True) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    if fatal:
        raise SystemExit(f"bench/http_bounds.py: timed out waiting for {what}")
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--idle", type=int, default=300)
    parser.add_argument("--nofile", type=int, default=256)
    parser.add_argument("--project", type=Path, default=PROJECT, help="the checkout whose daemon runs")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-http-"))
    first = make_message("Re: [PATCH] ext4: tidy a helper", "Looks good.\n", msgid="first@bench.example")
    later = make_message("Re: [PATCH] ext4: tidy a helper", "Still good.\n", msgid="later@bench.example")
    try:
        with start_public_inbox(root / "lore", "linux-kernel", [first]) as inbox, \
                FakeSlack(token=SLACK_TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
            rules = lab_rules(root, inbox.list_url, poll_minutes=0.1)
            (rules / "routing.toml").write_text(f'default_channel = "{CHANNEL}"\n')
            port, log, database = free_port(), root / "daemon.log", root / "daemon.db"
            env = daemon_env(root, slack.base_url) | {"SLACK_SIGNING_SECRET": SECRET,
                                                      "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}

            def limited() -> None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))

            with open(log, "ab") as output:
                daemon = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "daemon", "--db", str(database),
                                           "--rules", str(rules), "--tick", "0.3", "--health-port", str(port)],
                                          cwd=args.project, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                          stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=limited)
            try:
                wait(lambda: stored(database, "first@bench.example"), 120, "the first poll")
                print(f"daemon of {args.project} (fd limit {args.nofile}), pid {daemon.pid}, RSS "
                      f"{rss_kib(daemon.pid) // 1024} MiB after its first poll")
                for chunked in (False, True):
                    with PeakRss(daemon.pid) as rss:
                        sent, answer = big_post(port, args.mib, chunked)
                    print(f"POST {args.mib} MiB {'chunked' if chunked else 'Content-Length'}: server took "
                          f"{sent / MIB:.0f} MiB, answered {answer.decode(errors='replace')!r}; RSS "
                          f"{rss.before / 1024:.0f} -> peak {rss.peak / 1024:.0f} MiB "
                          f"(rise {(rss.peak - rss.before) / 1024:.1f} MiB), "
                          f"after {rss_kib(daemon.pid) / 1024:.0f} MiB")
                quiet, quiet_failed = healthz_ms(port, 40)
                polls_before = len([item for item in log_events(log) if item.get("event") == "poll.done"])
                failed_before = len([item for item in log_events(log) if item.get("event") == "poll.failed"])
                held = []
                for _ in range(args.idle):
                    try:
                        held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
                    except OSError as error:
                        print(f"connect failed after {len(held)}: {error}")
                        break
                inbox.add_message(later)
                started = time.monotonic()
                busy, busy_failed = healthz_ms(port, 40)
                arrived = wait(lambda: stored(database, "later@bench.example"), 120, "the message posted meanwhile",
                               fatal=False)
                took = time.monotonic() - started
                still = 0
                for connection in held:
                    connection.setblocking(False)
                    try:
                        still += connection.recv(1) != b""
                    except BlockingIOError:
                        still += 1
                    except OSError:
                        pass
                events = log_events(log)
                polls = len([item for item in events if item.get("event") == "poll.done"]) - polls_before
                failed = len([item for item in events if item.get("event") == "poll.failed"]) - failed_before
                fds = len(os.listdir(f"/proc/{daemon.pid}/fd"))
                print(f"/healthz, no other connection: median {median(quiet)}, {quiet_failed} of 40 unanswered")
                ratio = (f"{statistics.median(busy) / statistics.median(quiet):.2f}" if busy and quiet else "n/a")
                print(f"/healthz, {len(held)} idle connections opened ({still} still open at the end): median "
                      f"{median(busy)}, {busy_failed} of 40 unanswered; ratio {ratio}")
                outcome = f"stored {took:.1f} s after it was posted" if arrived else "NOT stored within 120 s"
                print(f"meanwhile: the new message {outcome}; "
                      f"polls ok {polls}, failed {failed}; daemon fds {fds} of {args.nofile}; 'Too many open files' in "
                      f"the log: {'Too many open files' in log.read_text(errors='replace')}")
                listening = [item for item in events if item.get("event") == "health.listening"]
                if listening and "max_connections" in listening[0]:
                    print(f"connection cap: {listening[0]['max_connections']} (fd soft limit "
                          f"{listening[0].get('fd_soft_limit')})")
                for connection in held:
                    connection.close()
            except SystemExit:
                print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
                raise
            finally:
                daemon.terminate()
                daemon.wait(timeout=120)
    finally:
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept", root)
    print(json.dumps({"done": True}))


if __name__ == "__main__":
    main()
