"""rules/commands.toml: the programs that start a reproducer in people's mail, and the commands
that are administration rather than reproduction (read by triagebot/parse/reproducers.py)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase, translate
from functools import cached_property
from pathlib import Path

from triagebot.rules.loader import PACKAGED_RULES, RulesFile, Section, parse_text, read_file

COMMANDS_FILE = "commands.toml"
RULES_PATH = PACKAGED_RULES / COMMANDS_FILE
_NAME = re.compile(r"^[\w.*/?\[\]-]+$")
_KIND = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass(frozen=True)
class ProgramRule:
    names: tuple[str, ...]      # program globs
    kind: str
    words: tuple[str, ...] = ()  # first arguments that make a line a command without options
    bare: bool = False          # the program alone at a shell prompt is a command
    after: tuple[str, ...] = ()  # the first argument must be one of these (perf bench)
    why: str = ""

    def matches(self, program: str) -> bool:
        return any(fnmatchcase(program, name) for name in self.names)


@dataclass(frozen=True)
class AdminRule:
    names: tuple[str, ...]
    arguments: re.Pattern[str] | None = None
    why: str = ""

    def matches(self, program: str, arguments: str) -> bool:
        if not any(fnmatchcase(program, name) for name in self.names):
            return False
        return self.arguments is None or self.arguments.match(arguments) is not None


DEFAULT_PROSE_WORDS = 3  # plain words in a row that make a line a sentence (rules/commands.toml [prose])


@dataclass(frozen=True)
class CommandRules:
    programs: tuple[ProgramRule, ...] = ()
    admin: tuple[AdminRule, ...] = ()
    leads: tuple[str, ...] = ()
    source: str = "none"
    # a line naming a program whose arguments hold this many plain words in a row is a sentence
    # about the program ("sysbench cpu on my build box lost …"), not a command line
    prose_words: int = DEFAULT_PROSE_WORDS

    # Every line of a text the gate lets through is asked about: one compiled pattern of all the
    # globs answers "no rule names this program" for most of them before any rule is tried.
    @cached_property
    def _program_names(self) -> re.Pattern[str]:
        return _any_glob(name for rule in self.programs for name in rule.names)

    @cached_property
    def _admin_names(self) -> re.Pattern[str]:
        return _any_glob(name for rule in self.admin for name in rule.names)

    def program(self, name: str) -> ProgramRule | None:
        if not self._program_names.match(name):
            return None
        return next((rule for rule in self.programs if rule.matches(name)), None)

    def is_admin(self, name: str, arguments: str) -> bool:
        if not self._admin_names.match(name):
            return False
        return any(rule.matches(name, arguments) for rule in self.admin)

    def hints(self) -> tuple[str, ...]:
        """Substrings one of which a text must hold to name a program of these rules."""
        found: list[str] = []
        for rule in self.programs:
            for name in rule.names:
                literal = max(re.split(r"[*?\[\]]", name), key=len)
                # a short name gated with its space: "dd" alone is in every "address"
                literal = literal + " " if len(literal) <= 4 and literal == name else literal
                if len(literal) >= 3 and literal not in found:
                    found.append(literal)
        return tuple(found) + tuple(lead for lead in self.leads if lead not in found)


def _any_glob(names: Iterable[str]) -> re.Pattern[str]:
    """One pattern matching what any of the globs matches (fnmatchcase's rules); none: nothing."""
    globs = [translate(name) for name in names]
    return re.compile("|".join(f"(?:{glob})" for glob in globs) if globs else r"(?!)")


def load_commands(path: Path | None = None) -> CommandRules:
    """The packaged (or given) command rules; RulesError on any bad value."""
    return commands_from(read_file(path or RULES_PATH))


def parse_commands(text: str, source: str) -> CommandRules:
    return commands_from(parse_text(text, source))


def _names(entry: Section) -> tuple[str, ...]:
    return entry.strings("names", non_empty=True, pattern=_NAME, what="program names or globs")


def commands_from(file: RulesFile) -> CommandRules:
    top = file.top()
    top.check_keys(("program", "admin", "lead", "prose"))
    prose = file.table("prose")
    prose.check_keys(("words_in_a_row", "why"))
    prose_words = prose.whole("words_in_a_row", DEFAULT_PROSE_WORDS, 2, 20)
    programs: list[ProgramRule] = []
    for entry in file.entries("program", label="kind"):
        entry.check_keys(("names", "kind", "words", "bare", "after", "why"))
        kind = entry.string("kind")
        if not _KIND.match(kind):
            entry.fail(f"kind must be lower-case words joined by - or _, not {kind!r}", "kind")
        programs.append(ProgramRule(names=_names(entry), kind=kind, words=entry.strings("words"),
                                    bare=entry.boolean("bare", False), after=entry.strings("after"),
                                    why=entry.text("why")))
    admin: list[AdminRule] = []
    for entry in file.entries("admin"):
        entry.check_keys(("names", "arguments", "why"))
        pattern = entry.optional_string("arguments")
        compiled = None
        if pattern is not None:
            try:
                compiled = re.compile(pattern)
            except re.error as error:
                entry.fail(f"arguments is no regular expression: {error}", "arguments")
        admin.append(AdminRule(names=_names(entry), arguments=compiled, why=entry.text("why")))
    leads: list[str] = []
    for entry in file.entries("lead", label="text"):
        entry.check_keys(("text", "why"))
        leads.append(entry.string("text"))
    return CommandRules(programs=tuple(programs), admin=tuple(admin), leads=tuple(leads), source=file.name,
                        prose_words=prose_words)
