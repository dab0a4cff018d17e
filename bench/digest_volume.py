"""Benchmark: what the daemon would do with a list-year — threads taken on, digest lines, stored.

The second look (triagebot/parse/possible_report.py, issue 38) puts every message that may report
a slowdown in the day's digest; this measures what that costs the people reading the digest: the
lines a year of a list gives, by kind. Each message is read alone, as bench/accuracy.py's `fate`
does (a reply is listed only in a thread the daemon runs, which a message read alone is not).

    PYTHONPATH=. python3 bench/digest_volume.py ../shared/corpus/lists/linux-ext4-2024.mbox.gz
    PYTHONPATH=. python3 bench/digest_volume.py --mirror linux-pci.vger.kernel.org.0 --year 2023 [--show]

`--mirror` reads a public-inbox git mirror under --mirrors (default ../.mirror): the commits
dated within the year, each one message. Run it at two commits (a worktree of each) for before
and after; the figures are in bench/README.md.
"""
from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from accuracy import fate, mirror_dir  # noqa: E402
from parse import split_mbox  # noqa: E402

from triagebot.daemon.flow import DIGEST_KINDS, REPORT_KINDS  # noqa: E402
from triagebot.errors import MessageError  # noqa: E402
from triagebot.parse.report import parse_message  # noqa: E402
from triagebot.records.report import Source  # noqa: E402


def mirror_year(mirrors: Path, name: str, year: int) -> list[bytes]:
    """The messages of a public-inbox git mirror committed within `year`."""
    directory = mirror_dir(mirrors, "linux-mailinglist-archives", name)
    if directory is None:
        raise SystemExit(f"{name}: no such mirror under {mirrors}")
    git = ["git", f"--git-dir={directory}"]
    commits = subprocess.run([*git, "log", "--all", "--format=%H", f"--since={year}-01-01",
                              f"--until={year + 1}-01-01"], capture_output=True, text=True, check=True).stdout.split()
    wanted = "".join(f"{commit}:m\n" for commit in commits).encode()
    output = subprocess.run([*git, "cat-file", "--batch"], input=wanted, capture_output=True, check=True).stdout
    messages, position = [], 0
    while position < len(output):
        end = output.index(b"\n", position)
        header = output[position:end].split()
        position = end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        messages.append(output[position:position + size])
        position += size + 1
    return messages


def measure(messages: list[bytes], show: bool) -> Counter:
    counts: Counter = Counter()
    for raw in messages:
        try:
            report = parse_message(raw, Source("mbox", None))
        except MessageError:
            counts["unreadable"] += 1
            continue
        what = fate(report, REPORT_KINDS, DIGEST_KINDS)
        counts[what] += 1
        if what != "stored":
            counts[f"{what}: {report.kind}"] += 1
            if show:
                print(f"{what:8} | {report.kind:20} | {report.date} | {report.subject[:90]}")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mbox", nargs="?", type=Path, help="an mbox or mbox.gz")
    parser.add_argument("--mirror", help="a public-inbox git mirror's name (linux-pci.vger.kernel.org.0)")
    parser.add_argument("--year", type=int)
    parser.add_argument("--mirrors", type=Path, default=PROJECT.parent / ".mirror")
    parser.add_argument("--show", action="store_true", help="print each message taken on or listed")
    args = parser.parse_args(argv)
    if args.mirror:
        if args.year is None:
            parser.error("--mirror needs --year")
        messages, name = mirror_year(args.mirrors, args.mirror, args.year), f"{args.mirror} {args.year}"
    elif args.mbox:
        if not args.mbox.exists():
            print(f"{args.mbox}: not found", file=sys.stderr)
            return 2
        data = args.mbox.read_bytes()
        messages, name = split_mbox(gzip.decompress(data) if args.mbox.suffix == ".gz" else data), str(args.mbox)
    else:
        parser.error("an mbox or --mirror NAME --year YEAR")
    counts = measure(messages, args.show)
    print(f"{name}: {len(messages)} messages; taken on {counts['taken on']}, digest lines {counts['digest']}, "
          f"stored {counts['stored']}" + (f", unreadable {counts['unreadable']}" if counts["unreadable"] else ""))
    for key in sorted(key for key in counts if ": " in key):
        print(f"  {key}: {counts[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
