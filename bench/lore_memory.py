"""Peak memory of one lore poll against the number of threads it fetches (issue 21, finding 3).

    python3 bench/lore_memory.py [--threads 12] [--mib 8]

A public-inbox look-alike on 127.0.0.1 serves a feed of N entries, each a thread of one message
of `--mib` MiB of plain text. `triage ingest LIST-URL` runs as a child process against a fresh
database, once with 1 thread in the feed (the baseline) and once with N; the figure is the
ratio of their peak RSS (the child's own, from wait4). Memory that holds one thread at a time
gives a ratio near 1; a poll that holds its batch grows with N (50 threads of ~62 MB reached
3.46 GB before issue 21).
"""
from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def serve(count: int, body: bytes) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{self.server.server_address[1]}/list/"
            if self.path == "/list/new.atom":
                entries = "".join(f'<entry><title>t{n}</title><link href="{base}m{n}@bench/"/><id>urn:m{n}</id>'
                                  "<updated>2026-01-01T00:00:00Z</updated></entry>" for n in range(count))
                data = (f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">{entries}</feed>').encode()
                status = 200
            elif self.path.endswith("/t.mbox.gz"):
                message_id = self.path.split("/")[2]
                message = (f"From mboxrd@z Thu Jan  1 00:00:00 1970\nFrom: A <a@bench>\nSubject: thread {message_id}\n"
                           f"Date: Thu, 01 Jan 2026 00:00:00 +0000\nMessage-ID: <{message_id}>\n\n").encode()
                data, status = gzip.compress(message + body, 1), 200
            else:
                data, status = b"<html>[No results found]</html>", 404
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/list/"


def peak_rss(count: int, body: bytes, work: Path) -> tuple[int, int]:
    """(peak RSS in bytes of `triage ingest` of a feed of `count` threads, messages stored)."""
    server, url = serve(count, body)
    database = work / f"{count}.db"
    rules = work / "rules"
    rules.mkdir(exist_ok=True)
    try:
        child = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "ingest", url, "--db", str(database),
                                  "--rules", str(rules), "--jobs", "1", "--quiet"], cwd=PROJECT,
                                 env=dict(os.environ, PYTHONPATH=str(PROJECT)), stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
        output = child.stdout.read().decode() if child.stdout else ""
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    finally:
        server.shutdown()
    stored = next((int(line.split(": ")[1].split()[0]) for line in output.splitlines() if " new of " in line), 0)
    return usage.ru_maxrss * 1024, stored


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=12)
    parser.add_argument("--mib", type=int, default=8)
    args = parser.parse_args()
    body = (("fio write_iops 12345 " * 3)[:79] + "\n").encode() * (args.mib * (1 << 20) // 80)
    with tempfile.TemporaryDirectory() as directory:
        base, base_stored = peak_rss(1, body, Path(directory))
        many, many_stored = peak_rss(args.threads, body, Path(directory))
    print(f"1 thread: {base / 1e6:.0f} MB peak RSS ({base_stored} stored); {args.threads} threads of {args.mib} MiB: "
          f"{many / 1e6:.0f} MB ({many_stored} stored); ratio {many / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
