"""Benchmark and check: `triage db copy` of a list-year store, SQLite -> PostgreSQL -> SQLite.

Fills a SQLite store with `triage ingest` of a list-year (default: linux-ext4 2024 from
../shared), starts a PostgreSQL server of its own (tests/support/postgres.py: initdb + pg_ctl on a
Unix socket in a temporary directory, stopped at the end), then copies the store there and back
with `triage db copy` as child processes. Checks: every count printed matches (exit 0) and every
table of the store that came back equals the original row for row. Baseline: the same copy
SQLite -> SQLite in the same run (the same code, no server), so the ratios say what the server
costs.
"""
from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
from tests.support.postgres import start_server  # noqa: E402  (the tests' server, started the same way)
from triagebot.store.copy import TABLES  # noqa: E402

DEFAULT_MBOX = PROJECT.parent / "shared" / "corpus" / "lists" / "linux-ext4-2024.mbox.gz"


def triage(*args: str) -> tuple[float, str]:
    """(seconds, stdout) of one `triage` command as a child process; exits on a failure."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                            cwd=PROJECT, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"triage {' '.join(args[:2])} failed ({result.returncode}): {result.stderr[-2000:]}")
    return seconds, result.stdout


def rows(path: Path) -> dict[str, list]:
    with sqlite3.connect(path) as connection:
        return {table.name: connection.execute(f"SELECT {', '.join(table.columns)} FROM {table.name}"
                                               f" ORDER BY {table.order}").fetchall() for table in TABLES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mbox", nargs="?", type=Path, default=DEFAULT_MBOX)
    args = parser.parse_args()
    if not args.mbox.exists():
        raise SystemExit(f"{args.mbox}: not found (the list-years are read from ../shared)")
    server = start_server()
    try:
        with tempfile.TemporaryDirectory() as folder:
            original, baseline, back = (Path(folder) / name for name in ("original.db", "baseline.db", "back.db"))
            ingest_seconds, _ = triage("ingest", "--quiet", "--db", str(original), str(args.mbox))
            url = server.url(server.new_schema())
            base_seconds, _ = triage("db", "copy", str(original), str(baseline))
            there_seconds, printed = triage("db", "copy", str(original), url)
            back_seconds, _ = triage("db", "copy", url, str(back))
            same = rows(original) == rows(back)
            print(printed, end="")
            print(f"ingest (to fill SQLite): {ingest_seconds:.2f} s")
            print(f"copy SQLite -> SQLite (baseline): {base_seconds:.2f} s")
            print(f"copy SQLite -> PostgreSQL: {there_seconds:.2f} s (ratio {there_seconds / base_seconds:.2f})")
            print(f"copy PostgreSQL -> SQLite: {back_seconds:.2f} s (ratio {back_seconds / base_seconds:.2f})")
            print(f"every table back equal to the original, row for row: {same}")
            return 0 if same else 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
