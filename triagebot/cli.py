"""Command line: thin argument parsing, one function per subcommand."""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.errors import InputError, MessageError, TriageError
from triagebot.inputs import read_messages
from triagebot.parse.report import parse_message
from triagebot.records import Source, report_to_json
from triagebot.summary import render_report


def _parse_command(args: argparse.Namespace) -> int:
    failures = 0
    out = sys.stdout
    first = True
    for path in args.paths:
        try:
            for name, kind, raw in read_messages(path):
                try:
                    report = parse_message(raw, Source(kind, None))
                except MessageError as error:
                    print(f"triage parse: {name}: {error}", file=sys.stderr)
                    failures += 1
                    continue
                if args.json:
                    out.write(json.dumps(report_to_json(report), ensure_ascii=False) + "\n")
                else:
                    if not first:
                        out.write("\n")
                    out.write(render_report(report, all_rows=args.all) + "\n")
                first = False
        except InputError as error:
            print(f"triage parse: {error}", file=sys.stderr)
            failures += 1
    return 1 if failures else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="triage", description="Triage kernel performance-regression reports.")
    commands = parser.add_subparsers(dest="command", required=True)
    parse = commands.add_parser("parse", help="parse messages into records")
    parse.add_argument("paths", nargs="+", metavar="PATH",
                       help="message file, mbox, mbox.gz, openwall page, pasted text, or - for stdin")
    parse.add_argument("--json", action="store_true", help="print JSON Lines, one record per message")
    parse.add_argument("--all", action="store_true", help="show every metric row in the summary")
    parse.set_defaults(handler=_parse_command)
    try:
        from triagebot.verdict import command as decide_command
    except ImportError:  # pragma: no cover - the verdict stage is part of the package
        decide_command = None
    if decide_command is not None:
        decide = commands.add_parser("decide", help="decide confirm / no-repro / inconclusive from numbers")
        decide_command.add_arguments(decide)
        decide.set_defaults(handler=decide_command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
