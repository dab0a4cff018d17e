"""Benchmark: runs and wall time of `triage bisect` on the 40-commit tree, before and after.

    PYTHONPATH=. python3 bench/bisection.py [--first-bad 23 ...] [--slowdown 0.15] [--jitter 0.03] [--json]

The tree of issue 36: a real git repository of 40 commits (tests/support/lab.py), those from
`--first-bad` on 15% slower (`lab-factor` 0.85), each sample also multiplied by a log-normal
factor of sigma 0.03 (3% jitter) drawn from a seeded sequence by the sample's number, on real
sysbench behind the lab's shim. Each position is bisected twice, on the same tree with the same
noise (the sequence starts over): BEFORE with the first attempt's looks as they were
(`--rounds 6,4,5,5`, where a first look of 6+6 could never confirm) and AFTER with today's
default (7,3,5,5). The figures: runs used, steps, wall time, and whether the first bad commit
found is the true one; the ratio of runs and of wall time, after over before.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.lab import HOOK, lab_path, make_bisect_repo, write_lab_rules

PROJECT = Path(__file__).resolve().parents[1]
REPORT = PROJECT / "fixtures" / "lab" / "sysbench-cpu-regression.eml"
MESSAGE_ID = "20240415071244.lab1@tberg-ws"
COMMITS = 40
BEFORE = ("--rounds", "6,4,5,5")  # the first attempt's looks before issue 36
AFTER: tuple[str, ...] = ()  # today's default


def triage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env, cwd=PROJECT, timeout=6 * 3600)


def one_bisection(root: Path, first_bad: int, slow_factor: float, jitter: float, seed: int,
                  options: tuple[str, ...]) -> dict:
    """A fresh lab and store, the tree with its first bad commit at `first_bad`; one bisection."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    shas = make_bisect_repo(root / "linux", COMMITS, first_bad, slow_factor=slow_factor)
    rules, state = write_lab_rules(root, PROJECT, repo=root / "linux")
    subprocess.run([*HOOK, "noise", str(state), str(jitter), str(seed)], check=True)
    env = {"PATH": lab_path(root), "HOME": str(root), "PYTHONPATH": str(PROJECT)}
    database = root / "bench.db"
    ingested = triage("ingest", "--db", str(database), str(REPORT), env=env)
    if ingested.returncode != 0:
        raise SystemExit(ingested.stderr)
    started = time.monotonic()
    done = triage("bisect", MESSAGE_ID, "--db", str(database), "--rules", str(rules), "--no-fetch",
                  "--good", shas[0], "--bad", shas[-1], "--json", *options, env=env)
    seconds = time.monotonic() - started
    subprocess.run([*HOOK, "stop", str(state)], check=False)
    if not done.stdout:
        raise SystemExit(done.stderr)
    result = json.loads(done.stdout)
    return {"first_bad": first_bad, "options": " ".join(options) or "default", "status": result["status"],
            "right": result.get("first_bad") == shas[first_bad], "steps": len(result["steps"]),
            "runs": result["runs_used"], "seconds": round(seconds, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--first-bad", type=int, action="append", metavar="N",
                        help="the first slow commit's number, 1..39 (repeat for more trees; default 23)")
    parser.add_argument("--slowdown", type=float, default=0.15, help="the bad commits' slowdown (default 0.15)")
    parser.add_argument("--jitter", type=float, default=0.03, help="the log-normal sigma of each sample (0.03)")
    parser.add_argument("--seed", type=int, default=36, help="the noise sequence's seed (36)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-bisect-") as scratch:
        for first_bad in args.first_bad or [23]:
            for options in (BEFORE, AFTER):
                rows.append(one_bisection(Path(scratch) / "lab", first_bad, 1.0 - args.slowdown, args.jitter,
                                          args.seed, options))
                print(rows[-1], file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'first bad':>9}  {'first attempt':16}  {'status':7} {'right':5}  {'steps':>5}  {'runs':>5}  {'wall':>8}")
    for row in rows:
        print(f"{row['first_bad']:>9}  {row['options']:16}  {row['status']:7} {str(row['right']):5}  "
              f"{row['steps']:>5}  {row['runs']:>5}  {row['seconds']:>7.1f}s")
    before = [row for row in rows if row["options"] != "default"]
    after = [row for row in rows if row["options"] == "default"]
    runs = sum(row["runs"] for row in after) / sum(row["runs"] for row in before)
    wall = sum(row["seconds"] for row in after) / sum(row["seconds"] for row in before)
    print(f"after / before: runs {runs:.2f}x, wall time {wall:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
