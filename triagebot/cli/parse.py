"""`triage parse PATH...`: messages read into records, printed as summaries or JSON Lines (--json)."""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.cli.common import add_json_argument
from triagebot.errors import InputError
from triagebot.ingest.batch import Reader, default_jobs, likely_parallel, parse_messages
from triagebot.ingest.inputs import iter_inputs
from triagebot.present.summary import render_report
from triagebot.records.report import report_to_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="message file, mbox, mbox.gz, openwall page, pasted text, or - for stdin")
    add_json_argument(parser, "print JSON Lines, one record per message")
    parser.add_argument("--all", action="store_true", help="show every metric row in the summary")
    parser.add_argument("--jobs", type=int, default=default_jobs(), metavar="N",
                        help="worker processes for inputs of 200 messages or more (default: the usable cores)")


def run(args: argparse.Namespace) -> int:
    failures = 0
    out = sys.stdout
    # JSON is rendered where the parse runs (a worker, for big inputs); text needs every record
    # back in this process for the thread summaries that follow the records.
    def render(report):
        return json.dumps(report_to_json(report), ensure_ascii=False) if args.json else report
    records: list = []
    with Reader() as reader:
        for path in args.paths:
            failures += _parse_path(path, args, render, reader, records)
    if records:
        out.write(_thread_summaries(records))
    return 1 if failures else 0


# An input is parsed a chunk of messages at a time, so that memory holds one chunk however big
# the input (a year of a list is one chunk: ~5,000 messages, ~60 MB).
CHUNK_MESSAGES = 10_000
CHUNK_BYTES = 128 * 1024 * 1024


def _parse_path(path: str, args: argparse.Namespace, render, reader: Reader, records: list) -> int:
    """Parse one input and print its records; the number of failures."""
    failures = 0
    if args.jobs > 1 and likely_parallel(path):
        reader.start()  # spaCy loads on the other core while this process reads the file
    chunk: list[tuple[str, str, bytes, None]] = []
    size = 0
    try:
        for entry in iter_inputs(path):
            if entry.raw is None or len(chunk) >= CHUNK_MESSAGES or size >= CHUNK_BYTES:
                failures += _parse_chunk(chunk, args, render, reader, records)
                chunk, size = [], 0
            if entry.raw is None:  # a message the reading refused (too large): its own error line
                print(f"triage parse: {entry.name}: {entry.error}", file=sys.stderr)
                failures += 1
                continue
            chunk.append((entry.name, entry.kind, entry.raw, None))
            size += len(entry.raw)
    except InputError as error:
        failures += _parse_chunk(chunk, args, render, reader, records)  # what was read before it
        print(f"triage parse: {error}", file=sys.stderr)
        return failures + 1
    return failures + _parse_chunk(chunk, args, render, reader, records)


def _parse_chunk(messages: list, args: argparse.Namespace, render, reader: Reader, records: list) -> int:
    """Parse and print some messages of an input; the number of failures."""
    out = sys.stdout
    failures = 0
    for outcome in parse_messages(messages, render, args.jobs, reader=reader):
        if outcome.error is not None:
            print(f"triage parse: {outcome.name}: {outcome.error}", file=sys.stderr)
            failures += 1
            continue
        if args.json:
            out.write(outcome.output + "\n")
            continue
        out.write(("\n" if records else "") + render_report(outcome.output, all_rows=args.all) + "\n")
        records.append(outcome.output)
    return failures


def _thread_summaries(records: list) -> str:
    """Summaries of the threads of more than one message the inputs held."""
    from triagebot.parse.thread import build_threads, render_thread, reports_by_key

    by_key = reports_by_key(records)
    threads = [thread for thread in build_threads(records) if len(thread.order) > 1]
    return "".join("\n" + render_thread(thread, by_key) + "\n" for thread in threads)
