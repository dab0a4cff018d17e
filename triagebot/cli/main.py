"""`triage`: the argument parser and the dispatch to one module a subcommand (triagebot/cli/)."""
from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.logs import redact

# name -> (module with add_arguments/run, help). A subcommand's module (scipy for the verdict:
# half a second; spaCy for parse's workers) loads only when it is the command being run, so
# `triage parse` and `triage status` start fast.
COMMANDS = {
    "parse": ("triagebot.cli.parse", "parse messages into records"),
    "daemon": ("triagebot.cli.daemon", "watch the sources and triage each new report (--once: one pass)"),
    "worker": ("triagebot.cli.worker", "run the daemon's lab jobs for some hosts (PostgreSQL store: the job queue)"),
    "status": ("triagebot.cli.status", "what the daemon is doing: the queue, the hosts, the last polls"),
    "ingest": ("triagebot.cli.ingest", "fetch messages from files, lore or openwall into the store"),
    "show": ("triagebot.cli.show", "show one stored report with its thread"),
    "list": ("triagebot.cli.list", "list stored records, filtered"),
    "reparse": ("triagebot.cli.reparse", "parse the kept raw messages again with this parser"),
    "rerun": ("triagebot.cli.rerun", "rerun a stored report on the lab, base against suspect, and decide"),
    "bisect": ("triagebot.cli.bisect", "bisect a report's good..bad range on the lab, each step decided by the "
               "verdict's statistics"),
    "test-fix": ("triagebot.cli.test_fix", "test the fix posted in a report's thread: suspect against "
                 "suspect+fix on the lab; a drafted Tested-by: reply"),
    "hosts": ("triagebot.cli.hosts", "list the lab's hosts; --match scores them against a report"),
    "plan": ("triagebot.cli.plan", "plan a rerun of a stored report or a pasted command, or say why not"),
    "verdict": ("triagebot.cli.verdict", "recompute a report's verdict from its stored samples"),
    "preview": ("triagebot.cli.preview", "the Slack messages (Block Kit JSON, and as text) for a stored report, "
                "without sending"),
    "rules": ("triagebot.cli.rules", "rules init DIR: write the default rules to DIR, to edit"),
    "web": ("triagebot.cli.web", "serve the read-only pages: reports by state, one report, the lab (--public: "
            "what may leave the team)"),
    "reply": ("triagebot.cli.reply", "the reply upstream after a verdict: printed, or --send through rules/mail.toml"),
    "decide": ("triagebot.cli.decide", "decide confirm / no-repro / inconclusive from numbers given by hand"),
    "db": ("triagebot.cli.db", "the store itself: db copy FROM TO (SQLite <-> PostgreSQL), db migrate"),
    "take-on": ("triagebot.cli.decision", "take on a reading the daemon was unsure of (a digest line): "
                "the daemon plans and reruns it; kept as a label"),
    "dismiss": ("triagebot.cli.decision", "dismiss a reading the daemon was unsure of (a digest line); kept as a "
                "label"),
    "labels": ("triagebot.cli.labels", "labels export: people's take-on and dismiss decisions, as JSON Lines labels"),
}


PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def version() -> str:
    """The installed package's version; from a source tree that is not installed, pyproject's."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version("triagebot")
    except PackageNotFoundError:
        pass
    try:
        import tomllib

        return str(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, KeyError, ValueError):
        return "unknown (not installed, no pyproject.toml)"


class _VersionAction(argparse.Action):
    """--version, looked up only when asked (importlib.metadata costs every other command 15 ms)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"triage {version()}")
        parser.exit()


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="triage", description="Triage kernel performance-regression reports.")
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    chosen = next((word for word in (argv if argv is not None else sys.argv[1:]) if not word.startswith("-")), None)
    for name, (module_name, summary) in COMMANDS.items():
        command = commands.add_parser(name, help=summary)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(command)
            command.set_defaults(handler=module.run, subparser=command)
    return parser


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments; an option the command does not know is refused with the command's own usage
    (`triage show --jsn ID` shows show's options, where argparse would show the top level's)."""
    words = list(argv if argv is not None else sys.argv[1:])
    args, unknown = parser.parse_known_args(words)
    if unknown:
        # an unknown option before the command's name is the top level's to refuse
        before = words[:words.index(args.command)] if args.command in words else words
        (parser if any(word in before for word in unknown) else args.subparser).error(
            f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parse_arguments(parser, argv)
    try:
        return args.handler(args)
    except TriageError as error:
        print(redact(f"triage {args.command}: {error}"), file=sys.stderr)  # a URL's password, said by no error
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        # Every write is one transaction: what was committed is kept, the one under way is not.
        print(f"triage {args.command}: interrupted; what was stored before is kept, the step under way "
              f"was not stored", file=sys.stderr)
        return 130
    except sqlite3.Error as error:
        print(f"triage {args.command}: {database_problem(args, error)}", file=sys.stderr)
        return 1
    except OSError as error:  # a path the command was given that cannot be looked at (EACCES, too long)
        where = f"{error.filename}: " if error.filename else ""
        print(redact(f"triage {args.command}: {where}{error.strerror or error}"), file=sys.stderr)
        return 1


def database_problem(args: argparse.Namespace, error: sqlite3.Error) -> str:
    """A database error met mid-command, in one line naming the file and what to do."""
    where = "the database"
    if hasattr(args, "db"):
        from triagebot.cli.common import database_path

        where = f"database {database_path(args)}"
    text = str(error)
    if "malformed" in text or "not a database" in text or isinstance(error, sqlite3.DatabaseError) and \
            not isinstance(error, sqlite3.OperationalError):
        return (f"{where}: {text}: the file is damaged; restore it from a backup (or try "
                f"`sqlite3 FILE .recover`)")
    if "full" in text:
        return f"{where}: {text}: nothing of the step under way was stored; free some space and run it again"
    return f"{where}: {text}"


if __name__ == "__main__":
    sys.exit(main())
