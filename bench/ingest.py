"""Benchmark: `triage ingest` of a year of linux-ext4 into an empty SQLite store.

The baseline is bench/parse.py's: the stdlib alone reading the same file (gunzip, split,
`email` with policy=default, body text), as a child process. The subject is `triage ingest
FILE --db EMPTY.db` as a child process: start-up, read, parse (worker processes), store raw
bytes, records, thread links and cursors in transactions of 1,000. Pairs alternate; the
figure is the median ratio. Target: ratio <= 1.5.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parse import DEFAULT_MBOX, baseline_child  # noqa: E402  (bench/parse.py, beside this file)


def ingest_child(path: Path) -> tuple[float, int, int]:
    """(seconds, stored messages, peak RSS in KiB) of `triage ingest PATH` into an empty store."""
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "bench.db"
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "ingest", "--quiet", "--db", str(database),
                                  str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        errors = child.stderr.read().decode()
        child.stderr.close()
        if child.returncode != 0:
            raise SystemExit(f"triage ingest failed: {errors[-2000:]}")
        with sqlite3.connect(database) as connection:
            stored = connection.execute("SELECT count(*) FROM records").fetchone()[0]
    return seconds, stored, usage.ru_maxrss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mbox", nargs="?", type=Path, default=DEFAULT_MBOX)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    if not args.mbox.exists():
        print(f"{args.mbox}: not found (the shared corpus is needed for this benchmark)", file=sys.stderr)
        return 2
    pairs = []
    for _ in range(args.pairs):
        baseline_seconds = baseline_child(args.mbox)
        ingest_seconds, stored, peak_kib = ingest_child(args.mbox)
        pairs.append((baseline_seconds, ingest_seconds))
        print(f"pair: baseline {baseline_seconds:.2f} s, triage ingest {ingest_seconds:.2f} s, "
              f"ratio {ingest_seconds / baseline_seconds:.2f}")
    ratios = sorted(ingest / base for base, ingest in pairs)
    ingest_median = statistics.median(ingest for _, ingest in pairs)
    print(f"records stored:      {stored}")
    print(f"stdlib baseline:     {statistics.median(base for base, _ in pairs):.2f} s  (median)")
    print(f"triage ingest:       {ingest_median:.2f} s  (median; empty SQLite store)")
    print(f"ratio:               {statistics.median(ratios):.2f}  (median of {len(pairs)}: "
          f"{', '.join(f'{ratio:.2f}' for ratio in ratios)}; target <= 1.5)")
    print(f"messages per second: {stored / ingest_median:.0f}")
    print(f"peak RSS (ingest):   {peak_kib / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
