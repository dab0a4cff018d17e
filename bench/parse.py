"""Benchmark: `triage parse --json` over a year of linux-ext4 against a stdlib-only read.

Both sides run as child processes of this one, alternating, on the same file, so each pays
the same interpreter start-up, gunzip and mbox split, and the ratio is what counts on a noisy
machine. The baseline reads each message with `email` (policy=default), then `get_body()` and
`get_content()`: the least any parser of these messages must do. The figure reported is the
median ratio over the pairs (`--pairs`, default 9). Peak RSS is the largest triage child's.

Each pair also runs the parse without the spaCy readers; the reply-reading figure is the median
over the pairs of (with readers / without - 1). The parse with readers runs second of three in
every pair; the baseline runs first in even pairs and last in odd ones, the parse without readers
the other way round, so that a machine slowing or speeding up within a pair favours no side.
Besides wall time, each child's CPU seconds (its own and its workers', from `wait4`) are shown:
on a loaded machine they move far less than wall time (they are not the target's figure, which
is wall time: the parse is allowed its second core). The load average is printed before and after.
`--read-cpu` prints instead the CPU seconds of `read_message` over the file's messages (best of
3 child processes, one cold round each), the figure to compare two versions of the parser by
without the load's noise.
"""
from __future__ import annotations

import argparse
import email
import email.policy
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# the tree this file sits in is the one measured, in this process and in every child, whether or
# not (and wherever) triagebot is installed
PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")]))

from triagebot.errors import MessageError  # noqa: E402
from triagebot.ingest.inputs import split_mbox  # noqa: E402

DEFAULT_MBOX = Path(__file__).resolve().parents[2] / "shared/corpus/lists/linux-ext4-2024.mbox.gz"


def read_with_stdlib(path: Path) -> int:
    """The baseline's work: gunzip, split at "From " lines, email policy=default, body text."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    count = 0
    for raw in re.split(rb"\n(?=From )", data):
        message = email.message_from_bytes(raw, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain", "html"))
        if body is not None:
            try:
                body.get_content()
            except (LookupError, UnicodeError):
                pass
        count += 1
    return count


def baseline_child(path: Path) -> tuple[float, float]:
    """(seconds, CPU seconds) of the stdlib reader over PATH in a child process."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, __file__, "--stdlib-reader", str(path)],
                                 stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"stdlib reader failed: {errors.read().decode()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime


# The same command with the spaCy readers (stance, objections) replaced by "nothing found" and
# no reader process started (nothing is left for one to read), to measure what reading replies
# costs. Only this benchmark does that; the tool has no such switch.
WITHOUT_READERS = """
import sys
import triagebot.ingest.batch as batch
import triagebot.parse.report as report
report.rough_sentences = lambda text, gate: ()  # no sentence passes a gate: nothing for spaCy to read
batch.Reader.start = lambda self: None
from triagebot.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def triage_child(path: Path, *, readers: bool = True) -> tuple[float, int, int, float]:
    """(seconds, records, peak RSS in KiB, CPU seconds with its workers') of `triage parse --json
    PATH` in a child process."""
    command = ["-m", "triagebot.cli"] if readers else ["-c", WITHOUT_READERS]
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, *command, "parse", "--json", str(path)],
                                 stdout=subprocess.PIPE, stderr=errors)
        output = child.stdout.read()
        child.stdout.close()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage, not the baseline's
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode not in (0, 1):
            errors.seek(0)
            raise SystemExit(f"triage parse failed: {errors.read().decode()[-2000:]}")
    records = output.count(b"\n")
    json.loads(output.split(b"\n", 1)[0])  # the output is real JSON Lines
    return seconds, records, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def read_cpu_once(path: Path) -> float:
    """CPU seconds of `read_message` over the messages of PATH in this process (one cold round)."""
    from triagebot.parse.report import read_message
    from triagebot.records.report import Source

    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    messages = split_mbox(data)
    source = Source("mbox", None)
    start = time.process_time()
    for raw in messages:
        try:
            read_message(raw, source)
        except MessageError:
            pass
    return time.process_time() - start


def read_cpu(path: Path, rounds: int = 3) -> float:
    """The best of `rounds` cold rounds of `read_message`, each in a child process of its own
    (a second round in one process would find the parser's per-process caches warm)."""
    best = float("inf")
    for _ in range(rounds):
        child = subprocess.run([sys.executable, __file__, "--read-cpu-once", str(path)],
                               capture_output=True, check=False)
        if child.returncode != 0:
            raise SystemExit(f"read_message round failed: {child.stderr.decode()[-2000:]}")
        best = min(best, float(child.stdout))
    return best


def load_average() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mbox", nargs="?", type=Path, default=DEFAULT_MBOX)
    parser.add_argument("--pairs", type=int, default=9, help="baseline/triage pairs to run (median ratio)")
    parser.add_argument("--stdlib-reader", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--read-cpu", action="store_true",
                        help="print the CPU seconds of read_message over the messages (best of 3) and stop")
    parser.add_argument("--read-cpu-once", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.mbox.exists():
        print(f"{args.mbox}: not found (the shared corpus is needed for this benchmark)", file=sys.stderr)
        return 2
    if args.stdlib_reader:
        print(read_with_stdlib(args.mbox))
        return 0
    if args.read_cpu_once:
        print(f"{read_cpu_once(args.mbox):.3f}")
        return 0
    if args.read_cpu:
        print(f"read_message CPU: {read_cpu(args.mbox):.2f} s (best of 3 child processes, one cold round each)")
        return 0
    data = gzip.decompress(args.mbox.read_bytes()) if args.mbox.suffix == ".gz" else args.mbox.read_bytes()
    message_count = len(split_mbox(data))
    del data
    pairs = []
    without_readers = []
    cpu_pairs = []
    peak_kib = 0
    print(f"load average before: {load_average()}")
    for pair in range(args.pairs):
        # The parse with readers in the middle; the baseline first in even pairs and last in odd
        # ones, the parse without readers the other way round: a drift of the machine's speed
        # within a pair (it slows after seconds of load, say) favours no side of either figure.
        if pair % 2 == 0:
            baseline_seconds, baseline_cpu = baseline_child(args.mbox)
            triage_seconds, records, child_peak_kib, triage_cpu = triage_child(args.mbox)
            bare_seconds, _, _, _ = triage_child(args.mbox, readers=False)
        else:
            bare_seconds, _, _, _ = triage_child(args.mbox, readers=False)
            triage_seconds, records, child_peak_kib, triage_cpu = triage_child(args.mbox)
            baseline_seconds, baseline_cpu = baseline_child(args.mbox)
        peak_kib = max(peak_kib, child_peak_kib)
        pairs.append((baseline_seconds, triage_seconds))
        cpu_pairs.append((baseline_cpu, triage_cpu))
        without_readers.append(bare_seconds)
        print(f"pair: baseline {baseline_seconds:.2f} s, triage {triage_seconds:.2f} s, "
              f"ratio {triage_seconds / baseline_seconds:.2f}; without the spaCy readers {bare_seconds:.2f} s; "
              f"CPU {baseline_cpu:.2f} s, {triage_cpu:.2f} s")
    ratios = sorted(triage / base for base, triage in pairs)
    median_ratio = statistics.median(ratios)
    baseline_median = statistics.median(base for base, _ in pairs)
    triage_median = statistics.median(triage for _, triage in pairs)
    overheads = sorted(triage / bare - 1 for (_, triage), bare in zip(pairs, without_readers, strict=True))
    print(f"messages:            {message_count} (records printed: {records})")
    print(f"stdlib baseline:     {baseline_median:.2f} s  (median; child process: start-up, gunzip, split, read)")
    print(f"triage parse --json: {triage_median:.2f} s  (median; child process: start-up, gunzip, split, parse, JSON)")
    print(f"ratio:               {median_ratio:.2f}  (median of {len(pairs)}: "
          f"{', '.join(f'{ratio:.2f}' for ratio in ratios)}; target <= 1.0)")
    print(f"reply reading:       +{statistics.median(overheads) * 100:.0f}% over the same parse without the "
          f"spaCy stance and objection readers (median; target <= 20%)")
    print(f"messages per second: {records / triage_median:.0f}")
    print(f"CPU seconds:         baseline {statistics.median(cpu for cpu, _ in cpu_pairs):.2f} s, triage "
          f"{statistics.median(cpu for _, cpu in cpu_pairs):.2f} s with its workers and reader (medians)")
    print(f"load average after:  {load_average()}")
    print(f"peak RSS (triage):   {peak_kib / 1024:.0f} MB  (target < 300 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
