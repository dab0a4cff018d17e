"""Benchmark: one hostile input of each shape of issue 21, time and peak RSS (target ≤ 5 s, ≤ 300 MB).

Each shape is written to a scratch directory and given to `triage parse --json FILE` as a child
process (start-up, read, parse, JSON out), with its wall time and the child's own peak RSS
(`wait4`). Baseline, in the same run: a child Python that reads the same file whole and does
nothing else (start-up and the bytes in memory), so that the figure that counts is the ratio.
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


def child(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit status) of one child process."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(PROJECT)})
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, process.returncode


def shapes(scratch: Path, only: str | None) -> None:
    print(f"{'shape':48} {'size':>8} {'baseline':>9} {'parse':>8} {'ratio':>6} {'peak RSS':>9} {'exit':>4}")
    for name, build in SHAPES.items():
        if only and only not in name:
            continue
        path = scratch / "shape"
        path.write_bytes(build())
        size = path.stat().st_size / 1e6
        base, base_rss, _ = child([sys.executable, "-c", f"open({str(path)!r}, 'rb').read()"])
        wall, rss, code = child([sys.executable, "-m", "triagebot.cli", "parse", "--json", str(path)])
        print(f"{name:48} {size:6.1f}MB {base:8.2f}s {wall:7.2f}s {wall / base:6.1f} {rss:6.0f} MB {code:4}"
              f"  (baseline RSS {base_rss:.0f} MB)", flush=True)
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

    print("\nstrict thread of a reverse reply chain (each reply names 300 ids no message carries), CPU s:")
    for count in (50, 100, 200, 2000):
        raws = chain(count)
        started = time.process_time()
        kept = strict_thread(raws, f"m{count - 1}@chain")
        ours = time.process_time() - started
        assert len(kept) == count
        theirs = "(not run: minutes)"
        if count <= 200:
            started = time.process_time()
            found = get_strict_thread([parse_message(raw) for raw in raws], f"m{count - 1}@chain")
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
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
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
