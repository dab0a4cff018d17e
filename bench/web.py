"""Benchmark: how fast the web pages answer for a store holding a list-year.

    PYTHONPATH=. python3 bench/web.py [../shared/corpus/lists/linux-ext4-2024.mbox.gz] [--rounds N]

Ingests the list-year into a fresh SQLite store (`triage ingest`), takes on every report of it
(every kind the index lists: LKP, people's reports and bugs, syzbot; more than the daemon takes
on, to load the index; a third left new, a third planned on a host, a third refused), describes
a lab of three hosts that can switch kernels (so /hosts computes the daemon's schedule), serves
the pages with the real uvicorn on 127.0.0.1 and fetches each page over one keep-alive
connection, the pages in turn, `--rounds` times. Baseline: `/style.css` from the same server
(the HTTP stack with no store read and no template), fetched in the same rounds. Prints, per
page, the median and 95th percentile in ms and the median over the baseline's median.
Target (issue 28): every page's median <= 100 ms.
"""
from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from triagebot.rules.settings import load_settings  # noqa: E402
from triagebot.store.sqlite import SqliteStore  # noqa: E402
from triagebot.web.app import build_app  # noqa: E402
from triagebot.web.server import WebServer  # noqa: E402
from triagebot.web.views import REPORT_KINDS, Site, report_href  # noqa: E402

DEFAULT_MBOX = PROJECT.parent / "shared" / "corpus" / "lists" / "linux-ext4-2024.mbox.gz"


def fill(database: Path, mbox: Path) -> list[str]:
    """The list-year stored and its reports taken on; their ids, newest first."""
    done = subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", str(database), str(mbox)],
                          cwd=PROJECT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench/web.py: ingest failed: {done.stderr.strip()}")
    with SqliteStore(database) as store:
        ids = store.reports_to_admit(REPORT_KINDS, "1970-01-01T00:00:00+00:00")
        for number, message_id in enumerate(ids):
            store.start_triage(message_id, "#perf-triage")
            if number % 3 == 1:
                store.set_triage(message_id, "planned", host=BENCH_HOSTS[0])
            elif number % 3 == 2:
                store.set_triage(message_id, "refused", note="bench: refused")
        return [listed.key for listed in store.list_records(kind=REPORT_KINDS)]


BENCH_HOSTS = ("bench-host", "bench-host-2", "bench-host-3")


def lab_rules(scratch: Path) -> Path:
    """The project's rules with a lab of three hosts that can switch kernels (the pages run
    nothing: the hooks are never called), so /hosts computes the daemon's whole schedule."""
    rules = scratch / "rules"
    shutil.copytree(PROJECT / "rules", rules)
    (rules / "hosts.toml").write_text("".join(
        f'[[host]]\nname = "{name}"\nreach = "local"\ncpu_model = "bench"\nthreads = 8\nsockets = 1\n'
        f'memory_gb = 32\ndisk = "ssd"\nscratch_dir = "{scratch / name}"\nswitch_kernel = ["true", "{{commit}}"]\n'
        f'running_kernel = ["true"]\n\n' for name in BENCH_HOSTS))
    return rules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mbox", nargs="?", default=str(DEFAULT_MBOX))
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    mbox = Path(args.mbox)
    if not mbox.exists():
        print(f"bench/web.py: {mbox}: not found (the corpus lives in ../shared)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        database = Path(scratch) / "web.db"
        started = time.perf_counter()
        reports = fill(database, mbox)
        print(f"store: {mbox.name}, {len(reports)} reports taken on, filled in {time.perf_counter() - started:.1f} s")

        @contextmanager
        def open_store() -> Iterator[SqliteStore]:
            with SqliteStore(database) as store:
                yield store

        site = Site(open_store, load_settings(lab_rules(Path(scratch))), database)
        server = WebServer(build_app(site), "127.0.0.1", 0).start()
        pages = {"baseline /style.css": ["/style.css"], "/ (every state)": ["/"],
                 "/?state=planned": ["/?state=planned"], "/?since=2024-06-01&kind=reports":
                 ["/?since=2024-06-01&kind=reports"], "/hosts": ["/hosts"],
                 "/r/<id> (each report in turn)": [report_href(key) for key in reports]}
        times: dict[str, list[float]] = {name: [] for name in pages}
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        try:
            for round_number in range(args.rounds + 1):
                for name, paths in pages.items():
                    path = paths[round_number % len(paths)]
                    begin = time.perf_counter()
                    connection.request("GET", path)
                    answer = connection.getresponse()
                    answer.read()
                    elapsed = (time.perf_counter() - begin) * 1000
                    if answer.status != 200:
                        raise SystemExit(f"bench/web.py: {path}: HTTP {answer.status}")
                    if round_number:  # the first round warms the templates and the page cache
                        times[name].append(elapsed)
        finally:
            connection.close()
            server.stop()
    baseline = statistics.median(times["baseline /style.css"])
    print(f"{'page':36} {'median':>9} {'p95':>9} {'ratio':>7}")
    for name, values in times.items():
        values.sort()
        p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
        print(f"{name:36} {statistics.median(values):7.1f}ms {p95:7.1f}ms {statistics.median(values) / baseline:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
