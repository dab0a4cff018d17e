"""Benchmark: one hostile input of each shape of issue 21, time and peak RSS (target ≤ 5 s, ≤ 300 MB).

Each shape is written to a scratch directory and given to `triage parse --json FILE` as a child
process (start-up, read, parse, JSON out), with its wall time and the child's own peak RSS
(`wait4`, from a small launcher). Baselines, in the same run: `triage parse --json` of a
200-byte message of the same kind (start-up, imports and spaCy, a fixed price), and a child
Python that only reads the file; the figure that counts is the parse's time over the first.
Then the two walks of a reverse reply chain (liblore's strict-thread walk at 50/100/200
messages, ours at the same and at 2,000) in this process, and `triage ingest` against
`triage parse` of one large mbox (README: memory holds about one message).

    python3 bench/hostile.py                 # every shape; the mbox is 1 GB
    python3 bench/hostile.py --mbox-mb 2000  # the issue's 2 GB mbox
    python3 bench/hostile.py --only pages    # shapes whose name holds "pages"
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

HEAD = (b"From: Mallory <m@example.com>\nTo: l@example.com\nSubject: fio randwrite -20% regression\n"
        b"Date: Mon, 1 Jan 2024 00:00:00 +0000\nMessage-ID: <hostile@example.com>\n")


def folded_header() -> bytes:
    return HEAD + b"X-Fold: x" + b"\n y" * 21_000_000 + b"\n\nI can reproduce it.\n"


def folded_header_in_part() -> bytes:
    return (HEAD + b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n"
            b"X-Fold: x" + b"\n y" * 21_000_000 + b"\n\nbody\n--B--\n")


def page_of_anchors() -> bytes:
    return (b"<html><head><title>x</title></head><body><pre>Subject: fio\n</pre>" + b"<a href=x>y</a>" * 1_000_000
            + b"</body></html>\n")


def page_of_pre_blocks() -> bytes:
    return b"<html><head><title>x</title></head><body>" + b"<pre>fio -20%</pre>\n" * 200_000 + b"</body></html>\n"


def html_mail_of_tags() -> bytes:
    return (HEAD + b"MIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n<html><body><p>fio randwrite "
            b"dropped 20%</p>" + b"<b>x</b>" * 1_000_000 + b"</body></html>\n")


def big_number() -> bytes:
    return HEAD + b"\nthroughput went from 400 MB/s to " + b"9" * 5000 + b" MB/s after the commit.\n"


SHAPES: dict[str, Callable[[], bytes]] = {
    "63 MB of folded header lines": folded_header,
    "a header folded over 21M lines in a MIME part": folded_header_in_part,
    "pages: 1M <a> tags": page_of_anchors,
    "pages: 200k <pre> blocks": page_of_pre_blocks,
    "an HTML-only mail of 2M tags": html_mail_of_tags,
    "a 5,000-digit number in prose": big_number,
}


# Started from a small launcher: Linux carries the RSS peak of the process that execs into a
# child's ru_maxrss, and this benchmark's own peak (the shapes it builds) would count as the child's.
_LAUNCHER = """
import os, sys, time
started = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - started, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))
"""


def child(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit status) of one child process, its output discarded."""
    done = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], cwd=PROJECT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(PROJECT)}, check=True)
    wall, rss, code = done.stdout.split()[-3:]
    return float(wall), float(rss), int(code)


SMALL = HEAD + b"\nfio randwrite is 20% slower after the commit. I can reproduce it.\n"


def shapes(scratch: Path, only: str | None) -> None:
    small = scratch / "small.eml"
    small.write_bytes(SMALL)
    fixed, fixed_rss, _ = child([sys.executable, "-m", "triagebot.cli", "parse", "--json", str(small)])
    print(f"baseline, a 200-byte message of the same kind: {fixed:.2f} s, {fixed_rss:.0f} MB (start-up, imports, "
          "spaCy for the reply reader)")
    print(f"{'shape':48} {'size':>8} {'read only':>10} {'parse':>8} {'- baseline':>10} {'peak RSS':>9} {'exit':>4}")
    for name, build in SHAPES.items():
        if only and only not in name:
            continue
        path = scratch / "shape"
        path.write_bytes(build())
        size = path.stat().st_size / 1e6
        read, _, _ = child([sys.executable, "-c", f"open({str(path)!r}, 'rb').read()"])
        wall, rss, code = child([sys.executable, "-m", "triagebot.cli", "parse", "--json", str(path)])
        print(f"{name:48} {size:6.1f}MB {read:9.2f}s {wall:7.2f}s {wall - fixed:+9.2f}s {rss:6.0f} MB {code:4}",
              flush=True)
        path.unlink()


def chain(count: int) -> list[bytes]:
    from tests.support.public_inbox import make_message

    raws = [make_message("Re: chain", f"reply {k}\n", msgid=f"m{k}@chain", in_reply_to=f"m{k - 1}@chain",
                         references=[f"junk{j}.{k}@nowhere" for j in range(300)], date="Mon, 1 Dec 2025 10:00:00 +0000")
            for k in range(count - 1, 0, -1)]
    return raws + [make_message("chain", "root\n", msgid="m0@chain", date="Mon, 1 Dec 2025 09:00:00 +0000")]


def walks() -> None:
    from liblore.utils import get_strict_thread, parse_message

    from triagebot.ingest.lore_liblore import strict_thread

    print("\nstrict thread of the root of a reverse reply chain (each reply names 300 ids no message carries):")
    for count in (50, 100, 200, 2000):
        raws = chain(count)
        started = time.process_time()
        kept = strict_thread(raws, "m0@chain")  # the root, last in the file: liblore's worst order
        ours = time.process_time() - started
        assert len(kept) == count
        theirs = "(not run: minutes)"
        if count <= 200:
            started = time.process_time()
            found = get_strict_thread([parse_message(raw) for raw in raws], "m0@chain")
            theirs = f"{time.process_time() - started:.2f} s"
            assert found is not None and len(found) == count
        print(f"  {count:5} messages: liblore {theirs:>20}, triagebot {ours:.2f} s", flush=True)


def mbox(scratch: Path, megabytes: int) -> None:
    path = scratch / "big.mbox"
    body = (("fio write_iops dropped after the commit. " * 20 + "\n") * 120).encode()  # ~100 KB
    with open(path, "wb") as handle:
        index = 0
        while handle.tell() < megabytes * 1_000_000:
            handle.write(b"From a@b Mon Jan  1 00:00:00 2024\nFrom: A <a@example.org>\nSubject: note %d\n"
                         b"Date: Mon, 1 Jan 2024 00:00:00 +0000\nMessage-ID: <n%d@example.org>\n\n%s\n"
                         % (index, index, body))
            index += 1
    print(f"\n{path.stat().st_size / 1e6:.0f} MB mbox of {index} messages:")
    wall, rss, code = child([sys.executable, "-m", "triagebot.cli", "parse", "--json", str(path)])
    print(f"  triage parse --json   {wall:7.1f} s  peak RSS {rss:5.0f} MB  exit {code}", flush=True)
    database = scratch / "ingest.db"
    wall, rss, code = child([sys.executable, "-m", "triagebot.cli", "ingest", str(path), "--db", str(database),
                             "--quiet"])
    print(f"  triage ingest         {wall:7.1f} s  peak RSS {rss:5.0f} MB  exit {code}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mbox-mb", type=int, default=1000, help="size of the mbox for ingest (0: skip)")
    parser.add_argument("--only", help="only the shapes whose name holds this (skips the walks and the mbox)")
    parser.add_argument("--walks", action="store_true", help="only the strict-thread walks")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if args.walks:
        walks()
        return 0
    with tempfile.TemporaryDirectory(prefix="triage-hostile-") as scratch:
        shapes(Path(scratch), args.only)
        if args.only:
            return 0
        walks()
        if args.mbox_mb:
            mbox(Path(scratch), args.mbox_mb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
