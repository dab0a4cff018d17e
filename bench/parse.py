"""Benchmark: `triage parse --json` over a year of linux-ext4 against a stdlib-only read.

Both run in this process, one after the other, on the same bytes, so the ratio is what counts
on a noisy machine. The baseline reads each message with `email` (policy=default), then
`get_body()` and `get_content()`: the least any parser of these messages must do.
Peak RSS is measured for the triage run in a child process of its own.
"""
from __future__ import annotations

import argparse
import email
import email.policy
import gzip
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from triagebot.inputs import split_mbox

DEFAULT_MBOX = Path(__file__).resolve().parents[2] / "shared/corpus/lists/linux-ext4-2024.mbox.gz"


def baseline(messages: list[bytes]) -> float:
    start = time.perf_counter()
    for raw in messages:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain", "html"))
        if body is not None:
            try:
                body.get_content()
            except (LookupError, UnicodeError):
                pass
    return time.perf_counter() - start


def triage_child(path: Path) -> tuple[float, int, int]:
    """(seconds, records, peak RSS in KiB) of `triage parse --json PATH` in a child process."""
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-m", "triagebot.cli", "parse", "--json", str(path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if child.returncode not in (0, 1):
        raise SystemExit(f"triage parse failed: {child.stderr.decode()[-2000:]}")
    records = child.stdout.count(b"\n")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    json.loads(child.stdout.split(b"\n", 1)[0])  # the output is real JSON Lines
    return seconds, records, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mbox", nargs="?", type=Path, default=DEFAULT_MBOX)
    args = parser.parse_args()
    if not args.mbox.exists():
        print(f"{args.mbox}: not found (the shared corpus is needed for this benchmark)", file=sys.stderr)
        return 2
    data = gzip.decompress(args.mbox.read_bytes()) if args.mbox.suffix == ".gz" else args.mbox.read_bytes()
    messages = split_mbox(data)
    baseline_seconds = baseline(messages)
    triage_seconds, records, peak_kib = triage_child(args.mbox)
    print(f"messages:            {len(messages)} (records printed: {records})")
    print(f"stdlib baseline:     {baseline_seconds:.2f} s")
    print(f"triage parse --json: {triage_seconds:.2f} s  (whole process: start-up, gunzip, split, parse, JSON)")
    print(f"ratio:               {triage_seconds / baseline_seconds:.2f}  (target <= 1.0)")
    print(f"messages per second: {records / triage_seconds:.0f}")
    print(f"peak RSS (triage):   {peak_kib / 1024:.0f} MB  (target < 300 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
