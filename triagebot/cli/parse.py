"""Command line: thin argument parsing, one function per subcommand."""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from triagebot.batch import Reader, default_jobs, likely_parallel, parse_messages
from triagebot.errors import InputError, TriageError
from triagebot.inputs import iter_inputs
from triagebot.records import report_to_json
from triagebot.summary import render_report


def _parse_command(args: argparse.Namespace) -> int:
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


# Subcommands that live in their stage's package: name -> (module with add_arguments/run, help).
_STAGE_COMMANDS = {
    "daemon": ("triagebot.daemon", "watch the sources and triage each new report (--once: one pass)"),
    "status": ("triagebot.status_command", "what the daemon is doing: the queue, the hosts, the last polls"),
    "ingest": ("triagebot.ingest.command", "fetch messages from files, lore or openwall into the store"),
    "show": ("triagebot.store.show_command", "show one stored report with its thread"),
    "list": ("triagebot.store.list_command", "list stored records, filtered"),
    "reparse": ("triagebot.store.reparse_command", "parse the kept raw messages again with this parser"),
    "rerun": ("triagebot.reproduce.rerun_command", "rerun a stored report on the lab, base against suspect, and decide"),
    "hosts": ("triagebot.reproduce.hosts_command", "list the lab's hosts; --match scores them against a report"),
    "plan": ("triagebot.reproduce.plan_command", "plan a rerun of a stored report or a pasted command, or say why not"),
    "verdict": ("triagebot.verdict.verdict_command", "recompute a report's verdict from its stored samples"),
    "decide": ("triagebot.verdict.command", "decide confirm / no-repro / inconclusive from numbers given by hand"),
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="triage", description="Triage kernel performance-regression reports.")
    commands = parser.add_subparsers(dest="command", required=True)
    parse = commands.add_parser("parse", help="parse messages into records")
    parse.add_argument("paths", nargs="+", metavar="PATH",
                       help="message file, mbox, mbox.gz, openwall page, pasted text, or - for stdin")
    parse.add_argument("--json", action="store_true", help="print JSON Lines, one record per message")
    parse.add_argument("--all", action="store_true", help="show every metric row in the summary")
    parse.add_argument("--jobs", type=int, default=default_jobs(), metavar="N",
                       help="worker processes for inputs of 200 messages or more (default: the usable cores)")
    parse.set_defaults(handler=_parse_command)
    chosen = next((word for word in (argv if argv is not None else sys.argv[1:]) if not word.startswith("-")), None)
    for name, (module_name, summary) in _STAGE_COMMANDS.items():
        command = commands.add_parser(name, help=summary)
        # A stage's module (scipy for the verdict: half a second) loads only when it is the
        # command being run, so `triage parse` starts fast.
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(command)
            command.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except TriageError as error:
        print(f"triage {args.command}: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
