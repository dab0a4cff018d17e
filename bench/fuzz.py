"""Benchmark: the parser over many mutated corpus messages: nothing escapes, nothing takes long.

Each message is a corpus message (../shared/corpus/messages) put through one to three named
mutations (MUTATIONS: hostile charsets, 8-bit file names, deep MIME nesting, runs of spaces,
`±` and digits, table rows, huge headers, encoded-word floods, ...), then parsed once by
triagebot.parse.report.parse_message in this process. Printed: how many came out as a record
(ok), as the parser's own refusal (MessageError: clean error), as any other exception (from the
parse, from writing the record as strict JSON, or from planning it: issue 21), and over one
second of parse time (CPU time of the parse, so that a busy machine does not count; the
wall-clock count is printed beside it), per mutation, and the peak RSS of the process.

    python3 bench/fuzz.py                   # 10,000 messages, seed 13
    python3 bench/fuzz.py --count 500 --seed 1

Acceptance (issues 13 and 21): 0 exceptions, 0 over one second, peak RSS under 300 MB.

The runs and floods are sized to keep a mutated message around a megabyte at most (runs of up
to 200,000 characters, 12,000 table rows, 200,000 blank lines, 30,000 hashes): large enough that
any quadratic reading would take minutes, while linear reading takes well under a second (the
parse reads about 1-2 MB of hostile text per second).
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import resource
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from triagebot.errors import MessageError  # noqa: E402
from triagebot.parse.report import parse_message  # noqa: E402
from triagebot.records.report import Source, report_to_json  # noqa: E402
from triagebot.reproduce.plan import plan_report  # noqa: E402
from triagebot.rules.templates import Templates, load_templates  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "messages"
SLOW_SECONDS = 1.0

Mutation = Callable[[bytes, random.Random], bytes]


def _split(raw: bytes) -> tuple[bytes, bytes, bytes]:
    """(header block, separator, body); the separator is b"" when there is none."""
    for separator in (b"\r\n\r\n", b"\n\n"):
        at = raw.find(separator)
        if at != -1:
            return raw[:at], separator, raw[at + len(separator):]
    return raw, b"", b""


def _add_header(raw: bytes, field: bytes) -> bytes:
    head, separator, body = _split(raw)
    return head + b"\n" + field + (separator or b"\n\n") + body


def _set_header(raw: bytes, name: bytes, value: bytes) -> bytes:
    """The message with every `name:` field dropped and one `name: value` added."""
    head, separator, body = _split(raw)
    kept, skipping = [], False
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t") and skipping:
            continue
        skipping = line.lower().startswith(name.lower() + b":")
        if not skipping:
            kept.append(line)
    return b"\n".join(kept) + b"\n" + name + b": " + value + (separator or b"\n\n") + body


def _insert_line(raw: bytes, line: bytes, rng: random.Random) -> bytes:
    """`line` put in the body at a line boundary."""
    head, separator, body = _split(raw)
    if not separator:
        return raw + b"\n" + line + b"\n"
    lines = body.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    return head + separator + b"\n".join(lines[:at] + [line] + lines[at:])


def _headers_only(raw: bytes) -> bytes:
    """The top-level header block without MIME fields, for wrapping in new MIME structure."""
    head, _, _ = _split(raw)
    lines, skipping = [], False
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t") and skipping:
            continue
        skipping = line.lower().startswith((b"content-", b"mime-version"))
        if not skipping:
            lines.append(line)
    return b"\n".join(lines) + b"\nMIME-Version: 1.0\n"


def _text_of(raw: bytes) -> bytes:
    return _split(raw)[2] or raw


def flip(raw: bytes, rng: random.Random) -> bytes:
    if not raw:
        return raw
    at = rng.randrange(len(raw))
    return raw[:at] + bytes([raw[at] ^ rng.randrange(1, 256)]) + raw[at + 1:]


def cut(raw: bytes, rng: random.Random) -> bytes:
    return raw[:rng.randrange(len(raw) + 1)]


def insert_random(raw: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(raw) + 1)
    return raw[:at] + rng.randbytes(rng.randrange(1, 256)) + raw[at:]


def duplicate(raw: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(raw) + 1)
    return raw[:at] + raw[at:at + 4096] * rng.randrange(2, 20) + raw[at + 4096:]


def crlf(raw: bytes, rng: random.Random) -> bytes:
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


HOSTILE_CHARSETS = [b"undefined", b"punycode", b"idna", b'"utf-8\0"', b"x-unknown", b"utf-16", b"rot13", b"base64",
                    b"zlib", b"unicode_escape", b"raw_unicode_escape", b'""', b"utf-8" * 40, b"\xff\xfe", b"uu"]


def charset_param(raw: bytes, rng: random.Random) -> bytes:
    charset = rng.choice(HOSTILE_CHARSETS)
    return _set_header(raw, b"Content-Type", b"text/plain; charset=" + charset)


def charset_in_part(raw: bytes, rng: random.Random) -> bytes:
    """A second MIME part, past the first 8 KB, declaring a hostile charset."""
    boundary = b"=_fuzz_part"
    padding = b"padding line of the first part\n" * rng.randrange(0, 600)
    return (_headers_only(raw) + b"Content-Type: multipart/mixed; boundary=\"" + boundary + b"\"\n\n--" + boundary
            + b"\nContent-Type: text/plain\n\n" + padding + _text_of(raw) + b"\n--" + boundary
            + b"\nContent-Type: text/plain; charset=" + rng.choice(HOSTILE_CHARSETS) + b"\n\nsecond part hello\n--"
            + boundary + b"--\n")


DISPOSITIONS = ['attachment; filename="café.txt"'.encode(), 'attachment; filename="caf\xe9.txt"'.encode("latin-1"),
                b"attachment; filename*=undefined''a%FFb.txt", b"attachment; filename*=utf-8\0''x.txt",
                b"attachment; filename*0*=punycode''abc-%7F; filename*1=d.txt", b'inline; filename="\xff\xfe.bin"',
                b"attachment; filename==?utf-8?b?////?=", b"\xc3\xa9ttachment"]


def disposition_bytes(raw: bytes, rng: random.Random) -> bytes:
    boundary = b"=_fuzz_disp"
    return (_headers_only(raw) + b"Content-Type: multipart/mixed; boundary=" + boundary + b"\n\n--" + boundary
            + b"\nContent-Type: text/plain\n\n" + _text_of(raw) + b"\n--" + boundary
            + b"\nContent-Type: text/plain\nContent-Disposition: " + rng.choice(DISPOSITIONS) + b"\n\nattached\n--"
            + boundary + b"--\n")


def nest_multipart(raw: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([10, 49, 50, 51, 200, 900, 1000, 1500])
    inner = b"Content-Type: text/plain\n\n" + _text_of(raw)[:20000] + b"\n"
    for level in range(depth):
        boundary = b"n%d" % level
        inner = (b"Content-Type: multipart/mixed; boundary=" + boundary + b"\n\n--" + boundary + b"\n" + inner
                 + b"\n--" + boundary + b"--\n")
    return _headers_only(raw) + inner


def nest_rfc822(raw: bytes, rng: random.Random) -> bytes:
    inner = b"Content-Type: text/plain\n\n" + _text_of(raw)[:20000] + b"\n"
    for _ in range(rng.choice([5, 60, 1000, 1200])):
        inner = b"Content-Type: message/rfc822\n\n" + inner
    return _headers_only(raw) + inner


def many_parts(raw: bytes, rng: random.Random) -> bytes:
    boundary = b"=_fuzz_many"
    part = b"--" + boundary + b"\nContent-Type: application/octet-stream\n\nxx\n"
    return (_headers_only(raw) + b"Content-Type: multipart/mixed; boundary=" + boundary + b"\n\n--" + boundary
            + b"\nContent-Type: text/plain\n\n" + _text_of(raw) + b"\n" + part * rng.randrange(500, 5000)
            + b"--" + boundary + b"--\n")


def spaces_run(raw: bytes, rng: random.Random) -> bytes:
    prefix = rng.choice([b"Link: x", b"Reported-by: a", b"Fixes: 1234567 (\"x", b"testcase: x",
                         b"test machine: 8 threads", b"  nr: x", b"commit: 1234567",
                         b"#regzbot introduced: x", b"1:4  -25%  :4  x", b"", b"Amean 1"])
    filler = rng.choice([b" ", b"\t", b" \t"])
    return _insert_line(raw, prefix + filler * rng.randrange(1000, 200_000) + rng.choice([b"y", b"", b")"]), rng)


def plus_minus_run(raw: bytes, rng: random.Random) -> bytes:
    unit = rng.choice(["±", " ± ", "1 ± 2% ", "±±  "]).encode()
    return _insert_line(raw, unit * rng.randrange(1000, 50_000), rng)


def digits_run(raw: bytes, rng: random.Random) -> bytes:
    unit = rng.choice([b"1", b"1.", b"0 ", b" 1", b"1%", b"1k", b"abcdef1", b"f0 "])
    return _insert_line(raw, unit * rng.randrange(1000, 100_000), rng)


ROWS = [b"     12345 \xc2\xb1  3%      -5.7%      11635 \xc2\xb1  2%  fsmark.files_per_sec",
        b"      0.95 \xc2\xb1 15%      +0.3        1.26 \xc2\xb1 11%  perf-profile.calltrace.cycles-pp.x",
        b"          1:4          -25%            :4     dmesg.WARNING:at#for_ip",
        b"  Amean     1        1.00 (   0.00%)        2.00 * -100.00%*",
        b"  write: IOPS=203k, BW=793MiB/s (832MB/s)(46.5GiB/60001msec); 0 zone resets"]


def table_rows(raw: bytes, rng: random.Random) -> bytes:
    header = b"\n         %stddev     %change         %stddev\n             \\          |                \\\n"
    rows = b"\n".join(rng.choice(ROWS) for _ in range(rng.randrange(500, 12_000)))
    return _insert_line(raw, header + rows, rng)


def blank_lines(raw: bytes, rng: random.Random) -> bytes:
    return _insert_line(raw, rng.choice([b"\n", b" \n", b"\t\n", b">\n"]) * rng.randrange(1000, 200_000), rng)


def long_line(raw: bytes, rng: random.Random) -> bytes:
    line = bytes(rng.choice(b"ab =(\"-:/") for _ in range(rng.randrange(10_000, 200_000)))
    return _insert_line(raw, line, rng)


def huge_header(raw: bytes, rng: random.Random) -> bytes:
    name = rng.choice([b"X-Huge", b"Subject", b"References", b"From", b"Content-Type"])
    return _add_header(raw, name + b": " + b"a" * rng.randrange(50_000, 2_000_000))


def many_headers(raw: bytes, rng: random.Random) -> bytes:
    head, separator, body = _split(raw)
    fields = b"".join(b"X-Filler-%d: value\n" % index for index in range(rng.randrange(500, 50_000)))
    return head + b"\n" + fields.rstrip(b"\n") + (separator or b"\n\n") + body


def encoded_word_flood(raw: bytes, rng: random.Random) -> bytes:
    word = rng.choice([b"=?utf-8?q?a?=", b"=?utf-8?b?w6k=?=", b"=?undefined?q?x?=", b"=?punycode?q?abc-=7F?="])
    return _set_header(raw, rng.choice([b"Subject", b"From"]), b" ".join([word] * rng.randrange(1000, 200_000)))


def bad_transfer_encoding(raw: bytes, rng: random.Random) -> bytes:
    encoding, body = rng.choice([(b"base64", b"!!!=" * 1000 + b"QUJD\n" * 100),
                                 (b"quoted-printable", b"=ZZ=\n=" * 2000),
                                 (b"x-uuencode", b"begin 644 x\n" + b"M" * 5000), (b"base64", b"")])
    head, separator, _ = _split(_set_header(raw, b"Content-Transfer-Encoding", encoding))
    return head + (separator or b"\n\n") + body


def boundary_mess(raw: bytes, rng: random.Random) -> bytes:
    boundary = rng.choice([b"", b"x", b'"' + b"b" * 300 + b'"', b"--", b"\xff"])
    parts = b"--x\nContent-Type: text/plain\n\n" + _text_of(raw) + rng.choice([b"", b"\n--x\n", b"\n--x--\n--x\n"])
    return _headers_only(raw) + b"Content-Type: multipart/mixed; boundary=" + boundary + b"\n\n" + parts


def xml_html(raw: bytes, rng: random.Random) -> bytes:
    markup = (b'<?xml version="1.0" encoding="utf-8"?>\n<html><body><pre>' + _text_of(raw)[:50_000]
              + b"</pre></body></html>\n")
    head, separator, _ = _split(_set_header(raw, b"Content-Type", b"text/html; charset=utf-8"))
    return head + (separator or b"\n\n") + markup if rng.random() < 0.7 else markup


def commit_flood(raw: bytes, rng: random.Random) -> bytes:
    shas = b" ".join(b"a%07xbcdef1" % index for index in range(rng.randrange(1000, 30_000)))
    return _insert_line(raw, rng.choice([b"", b"first bad commit: ", b"Fixes: "]) + shas, rng)


def drop_separator(raw: bytes, rng: random.Random) -> bytes:
    head, separator, body = _split(raw)
    return head + b"\n" + body if separator else raw


def control_bytes(raw: bytes, rng: random.Random) -> bytes:
    head, separator, body = _split(raw)
    junk = bytes(rng.choice(b"\0\x01\x1b\x7f\xff\r") for _ in range(rng.randrange(1, 40)))
    return head + b"\nX-Junk: " + junk + (separator or b"\n\n") + body


# --- issue 21's shapes -------------------------------------------------------------------------

def folded_header(raw: bytes, rng: random.Random) -> bytes:
    """One header field folded over up to 300,000 continuation lines, at the top or in a MIME part."""
    field = b"X-Fold: x" + rng.choice([b"\n y", b"\n\ty", b"\n  "]) * rng.randrange(10_000, 300_000)
    if rng.random() < 0.5:
        return _add_header(raw, field)
    boundary = b"=_fuzz_fold"
    return (_headers_only(raw) + b"Content-Type: multipart/mixed; boundary=" + boundary + b"\n\n--" + boundary
            + b"\nContent-Type: text/plain\n" + field + b"\n\n" + _text_of(raw) + b"\n--" + boundary + b"--\n")


def many_tags(raw: bytes, rng: random.Random) -> bytes:
    """An archive page or an HTML-only mail of 1,000 to 60,000 elements (`<a>`, `<pre>`, nested)."""
    element = rng.choice([b"<a href=x>y</a>", b"<pre>fio -20%</pre>\n", b"<pre>", b"<b>", b"<a href=/x/>[<prev]</a>"])
    markup = (b"<html><head><title>x</title></head><body><pre>" + _text_of(raw)[:20_000] + b"</pre>"
              + element * rng.randrange(1000, 60_000) + b"</body></html>\n")
    if rng.random() < 0.5:
        return markup
    head, separator, _ = _split(_set_header(raw, b"Content-Type", b"text/html; charset=utf-8"))
    return head + (separator or b"\n\n") + markup


def huge_number(raw: bytes, rng: random.Random) -> bytes:
    """A number of 300 to 6,000 digits where a reader takes numbers: prose with a unit, a metric
    row, a headline, a test machine line, an LKP parameter, fio output."""
    digits = b"9" * rng.randrange(300, 6000)
    line = rng.choice([
        b"throughput went from 400 MB/s to " + digits + b" MB/s",
        b"     " + digits + b" \xc2\xb1  2%     -" + digits + b"%      11635 \xc2\xb1  3%  fsmark.files_per_sec",
        b"kernel test robot noticed a -" + digits + b"% regression of fsmark.files_per_sec on:",
        b"test machine: " + digits + b" threads 2 sockets Xeon with " + digits + b"G memory",
        b"parameters:\n\n\ttest_size: " + digits + b"G\n\truntime: " + digits + b"s\n",
        b"  write: IOPS=" + digits + b"k, BW=" + digits + b"MiB/s (832MB/s)(46.5GiB/60001msec)",
        b"  fio --name=w --rw=write --bs=4k --size=" + digits + b"G --runtime=" + digits + b"s",
        b"I see " + digits + b"% fewer IOPS, " + digits[:400] + b".5 ops/s",
    ])
    return _insert_line(raw, line, rng)


HIDDEN = ["\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\u00ad", "\U000e0041"]


def hidden_characters(raw: bytes, rng: random.Random) -> bytes:
    """Zero-width and bidi characters inside hex runs (SHAs), the Subject and the Message-ID."""
    hidden = rng.choice(HIDDEN).encode()
    target = rng.choice(["sha", "subject", "message-id"])
    if target == "subject":
        return _set_header(raw, b"Subject", b"[xfs] 2edf" + hidden + b"06a50f: fsmark -5.7% regression")
    if target == "message-id":
        return _set_header(raw, b"Message-ID", b"<bi" + hidden + b"di@example.org>")
    out = bytearray()
    for index, byte in enumerate(raw):  # after some hex digits, at random
        out.append(byte)
        if byte in b"0123456789abcdef" and index % rng.randrange(5, 40) == 0:
            out += hidden
    return bytes(out)


def parameter_block(raw: bytes, rng: random.Random) -> bytes:
    """An LKP `parameters:` block with a line that does not read whole, or a value past any bound."""
    lines = [b"runtime: 300s", b"nr_task: 1", b"disk: 1SSD", b"fs: ext4", b"rw: write", b"bs: 4k",
             b"ioengine: sync", b"test_size: 1G"]
    bad = rng.choice([b"rw\xe2\x80\x8b: write", b"<<: {ioengine: exec}", b"rw: randwrite", b"&a rw: write",
                      b"test_size: " + b"9" * 400 + b"G", b"runtime: " + b"9" * 400 + b"s", b"- rw: write",
                      b"nr_task: 1e999%", b"ioengine: sync\xe2\x80\xae", b"rw: |"])
    lines.insert(rng.randrange(len(lines) + 1), bad)
    block = b"testcase: fio-basic\nparameters:\n\n" + b"".join(b"\t" + line + b"\n" for line in lines)
    return _insert_line(raw, block, rng)


MESSAGE_IDS = [b"< padded@example.org >", b"<..>", b"<.>", "<café@example.org>".encode(), b"<>", b"<<x>>",
               b"<a\\b\\..\\c@example.org>", b"<%2e%2e%2f@example.org>", b"<x' OR '1'='1@example.org>",
               b"<" + b"m" * 100_000 + b"@example.org>"]


def message_id_forms(raw: bytes, rng: random.Random) -> bytes:
    """A hostile Message-ID, or two Message-ID fields (as public-inbox writes a reused id)."""
    raw = _set_header(raw, b"Message-ID", rng.choice(MESSAGE_IDS))
    return _add_header(raw, b"Message-ID: <20261204.reused@z>") if rng.random() < 0.3 else raw


# the mutations added by issue 21 (tests/test_parse_fuzz.py runs a sample of each in the suite)
ROUND_TWO = ("folded_header", "many_tags", "huge_number", "hidden_characters", "parameter_block", "message_id_forms")

MUTATIONS: dict[str, Mutation] = {function.__name__: function for function in (
    flip, cut, insert_random, duplicate, crlf, charset_param, charset_in_part, disposition_bytes, nest_multipart,
    nest_rfc822, many_parts, spaces_run, plus_minus_run, digits_run, table_rows, blank_lines, long_line, huge_header,
    many_headers, encoded_word_flood, bad_transfer_encoding, boundary_mess, xml_html, commit_flood, drop_separator,
    control_bytes, folded_header, many_tags, huge_number, hidden_characters, parameter_block, message_id_forms)}


def read_and_plan(raw: bytes, templates: Templates) -> str:
    """"ok" (a record, written as strict JSON, then planned or refused) or "clean error" (the
    parser's own refusal); anything else that goes wrong is raised: the JSON writer refusing a
    record (infinity, NaN), or an exception from the planner (issue 21: OverflowError)."""
    try:
        report = parse_message(raw, Source("eml"))
    except MessageError:
        return "clean error"
    json.dumps(report_to_json(report), allow_nan=False)
    plan_report(report, templates)  # a Plan or a Refusal, whichever: never an exception
    return "ok"


def packaged_templates() -> Templates:
    return load_templates(Path(__file__).resolve().parents[1] / "rules")


def mutate(raw: bytes, names: list[str], rng: random.Random) -> bytes:
    for name in names:
        raw = MUTATIONS[name](raw, rng)
    return raw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000, help="mutated messages to parse (default 10,000)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    samples = sorted(path for path in args.corpus.glob("*") if path.is_file()) if args.corpus.is_dir() else []
    if not samples:
        print(f"{args.corpus}: no corpus messages there (the shared corpus is needed for this benchmark); skipped",
              file=sys.stderr)
        return 2
    originals = [path.read_bytes() for path in samples]
    for raw in originals:  # loads what the parse loads once (spaCy for the readers): not a message's time
        try:
            parse_message(raw, Source("eml"))
        except MessageError:
            pass
    templates = packaged_templates()
    rng = random.Random(args.seed)
    names = sorted(MUTATIONS)
    counts: collections.Counter[str] = collections.Counter()
    by_mutation: dict[str, collections.Counter[str]] = {name: collections.Counter() for name in names}
    slowest: list[tuple[float, str]] = []
    started = time.perf_counter()
    for number in range(args.count):
        sample = rng.randrange(len(originals))
        # Every mutation leads once every len(names) messages; one or two more follow at random.
        chosen = [names[number % len(names)]] + rng.sample(names, rng.randrange(0, 3))
        raw = mutate(originals[sample], chosen, rng)
        label = f"#{number} {samples[sample].name} {'+'.join(chosen)}"
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            outcome = read_and_plan(raw, templates)
        except Exception:  # noqa: BLE001 - counted and shown: what this benchmark is for
            outcome = "exception"
            print(f"EXCEPTION {label}:\n{traceback.format_exc(limit=-3)}", file=sys.stderr)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        counts[outcome] += 1
        counts["over 1 s (CPU)"] += cpu > SLOW_SECONDS
        counts["over 1 s (wall)"] += wall > SLOW_SECONDS
        slowest = sorted(slowest + [(cpu, label)], reverse=True)[:5]
        for name in chosen:
            by_mutation[name][outcome] += 1
            by_mutation[name]["over 1 s (CPU)"] += cpu > SLOW_SECONDS
        if (number + 1) % 1000 == 0:
            print(f"... {number + 1} messages, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"messages:        {args.count} mutated from {len(samples)} corpus messages, seed {args.seed}, "
          f"{len(MUTATIONS)} kinds of mutation")
    for key in ("ok", "clean error", "exception", "over 1 s (CPU)", "over 1 s (wall)"):
        print(f"{key + ':':16} {counts[key]}")
    print(f"peak RSS:        {peak_mb:.0f} MB")
    print(f"total time:      {time.perf_counter() - started:.0f} s")
    print("slowest (CPU s): " + "; ".join(f"{cpu:.2f} {label}" for cpu, label in slowest))
    print("per mutation (ok / clean error / exception / over 1 s CPU):")
    for name in names:
        tally = by_mutation[name]
        print(f"  {name:22} {tally['ok']:6} {tally['clean error']:5} {tally['exception']:3} "
              f"{tally['over 1 s (CPU)']:3}")
    failed = counts["exception"] or counts["over 1 s (CPU)"] or peak_mb >= 300
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
