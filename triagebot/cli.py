"""Command line: thin argument parsing, one function per subcommand."""
from __future__ import annotations

import argparse
import importlib
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


# Subcommands that live in their stage's package: name -> (module with add_arguments/run, help).
_STAGE_COMMANDS = {
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
