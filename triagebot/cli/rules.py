"""`triage rules init DIR`: write the default rules (the ones the package ships) to DIR, to edit.

After a plain `pip install .` the defaults live under the environment's prefix; an operator
copies them out, edits hosts.toml and routing.toml, and points TRIAGE_RULES (or --rules) at
DIR. A file DIR already holds is left alone unless --force: the command says which, writes none.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.rules.loader import PACKAGED_RULES

# what a rules directory is made of: the top files and the reproducer recipes
RULE_FILES = ("*.toml", "reproducers/*.toml")
SHOWN_EXISTING = 3  # files an overwrite refusal names before "and N more" (it stays one line)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    init = actions.add_parser("init", help="write the default rules to DIR (then: TRIAGE_RULES=DIR)")
    init.add_argument("directory", metavar="DIR")
    init.add_argument("--force", action="store_true", help="overwrite files DIR already holds")


def default_files(source: Path = PACKAGED_RULES) -> list[Path]:
    """The rules files under `source`, relative to it, in a stable order."""
    files = sorted(path.relative_to(source) for pattern in RULE_FILES for path in source.glob(pattern))
    if not files:
        raise TriageError(f"{source}: no packaged rules found (reinstall triagebot)")
    return files


def init(target: Path, force: bool = False, source: Path = PACKAGED_RULES) -> list[Path]:
    """Copy the default rules to `target`; returns the files written."""
    files = default_files(source)
    if target.exists() and not target.is_dir():
        raise TriageError(f"{target}: not a directory")
    existing = [name for name in files if (target / name).exists()]
    if existing and not force:
        shown = ", ".join(map(str, existing[:SHOWN_EXISTING])) + (
            f" and {len(existing) - SHOWN_EXISTING} more" if len(existing) > SHOWN_EXISTING else "")
        raise TriageError(f"{target}: already holds {shown}; nothing written (--force overwrites)")
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target / name)
    return [target / name for name in files]


def run(args: argparse.Namespace) -> int:
    target = Path(args.directory)
    written = init(target, force=args.force)
    print(f"wrote {len(written)} rules files from {PACKAGED_RULES} to {target}", file=sys.stderr)
    print(f"next: edit {target / 'hosts.toml'} and {target / 'routing.toml'}, then run with "
          f"TRIAGE_RULES={target} (or --rules {target})", file=sys.stderr)
    return 0
