"""Reproduce stage: a pasted benchmark command line, read option by option against a template.

Nothing here runs anything. The text is refused outright when it holds shell syntax (`;`, `&&`,
`|`, `$(…)`, backticks, redirections): those only mean something to a shell, and a plan is never
run by one. Otherwise it is split into words the way a POSIX shell would (shlex), the program is
matched to a template, and every option must be on that template's allowlist; the values are
typed and range-checked later by the planner, with the template's parameter types.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from triagebot.rules.templates import Template, Templates

MAX_ARGUMENT = 4096          # longer words are refused: no benchmark option needs one
MAX_COMMAND = 65536          # and so is a longer command

# Checked in this order so the reason names the most specific construct.
_SHELL_SYNTAX = (
    ("&&", "'&&' (a command list)"),
    ("||", "'||' (a command list)"),
    ("$(", "'$(…)' (command substitution)"),
    ("`", "a backtick (command substitution)"),
    (">", "'>' (a redirection)"),
    ("<", "'<' (a redirection)"),
    ("|", "'|' (a pipe)"),
    ("&", "'&' (a background job)"),
    (";", "';' (a command separator)"),
    ("(", "'(' (a subshell)"),
    (")", "')' (a subshell)"),
    ("\n", "a newline (a second command)"),
    ("\r", "a carriage return"),
    ("\x00", "a NUL byte"),
)
_PARENT = re.compile(r"(^|[/=])\.\.(/|$)")
# Wrappers that change nothing about what is measured and are safe to leave out.
_DROPPED_WRAPPERS = ("sudo",)


class CommandRefused(Exception):
    """A pasted command that cannot become a plan; `reason` says why, `missing` what would help."""

    def __init__(self, reason: str, missing: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing


@dataclass(frozen=True)
class ParsedOption:
    option: str                     # as given, with fio's single dash made double
    param: str                      # the template parameter it sets
    value: str | None               # the raw value; None for a bare flag
    sets: tuple[tuple[str, str], ...] = ()   # parameters the option's spelling sets (--fiemap: test)


@dataclass(frozen=True)
class ParsedCommand:
    template: Template
    options: tuple[ParsedOption, ...]
    notes: tuple[str, ...]


def shell_syntax(command: str) -> str | None:
    """The first shell construct in the text, described; None when there is none."""
    for needle, description in _SHELL_SYNTAX:
        if needle in command:
            return description
    return None


def split_words(command: str) -> list[str]:
    """POSIX-shell word splitting, after refusing shell syntax; raises CommandRefused."""
    if len(command) > MAX_COMMAND:
        raise CommandRefused(f"the command is {len(command)} characters long (limit {MAX_COMMAND})")
    found = shell_syntax(command)
    if found is not None:
        raise CommandRefused(f"the command holds {found}: refused (a plan is never run by a shell)")
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError as error:
        raise CommandRefused(f"the command cannot be split into words: {error}") from error
    if not words:
        raise CommandRefused("the command is empty", ("a command line",))
    for word in words:
        if len(word) > MAX_ARGUMENT:
            option = word.split("=", 1)[0] if word.startswith("-") else None
            named = f"option {option}" if option and len(option) < 64 else f"argument {word[:24]!r}…"
            raise CommandRefused(f"{named} is {len(word)} characters long (limit {MAX_ARGUMENT}): refused")
    return words


def parse_command(command: str, templates: Templates) -> ParsedCommand:
    """The template a command line runs and its options, in order; raises CommandRefused."""
    words = split_words(command)
    notes: list[str] = []
    while words and words[0] in _DROPPED_WRAPPERS:
        notes.append(f"left out {words[0]!r}: plans run as the runner's user")
        words = words[1:]
    if not words:
        raise CommandRefused("the command names no program", ("a benchmark program",))
    given = words[0]
    program = given.rsplit("/", 1)[-1]
    candidates = templates.for_program(program)
    if not candidates:
        known = sorted({template.program for template in templates})
        raise CommandRefused(f"program {given!r} has no template (templates run: {', '.join(known)})",
                             (f"a template for {program}",))
    if given != program:
        notes.append(f"program {given} is run as {program} from the host's PATH")
    template, rest = _choose(candidates, program, words[1:])
    options = _options(template, rest, notes)
    return ParsedCommand(template, tuple(options), tuple(notes))


def _choose(candidates: tuple[Template, ...], program: str, rest: list[str]) -> tuple[Template, list[str]]:
    """The template whose subcommand the words start with (sysbench fileio, perf bench sched pipe)."""
    for template in candidates:
        size = len(template.subcommand)
        if size and tuple(rest[:size]) == template.subcommand:
            return template, rest[size:]
    # sysbench 0.4 spelled the test as an option: `sysbench --test=fileio … run`.
    for word in rest:
        if word.startswith("--test="):
            test = word.split("=", 1)[1]
            for template in candidates:
                if template.subcommand == (test,):
                    return template, rest
    plain = [template for template in candidates if not template.subcommand]
    if plain:
        return plain[0], rest
    names = ", ".join(" ".join(template.subcommand) for template in candidates)
    raise CommandRefused(f"the {program} command names none of the tests with a template ({names})",
                         (f"a {program} test with a template",))


def _options(template: Template, words: list[str], notes: list[str]) -> list[ParsedOption]:
    table = template.option_params()
    drop = dict(template.drop)
    refuse = dict(template.refuse)
    program = template.program
    parsed: list[ParsedOption] = []
    seen: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--" or not word.startswith("-") or word == "-":
            if word in template.trailing:
                notes.append(f"left out {word!r}: the template says when to prepare, run and clean up")
                continue
            if _PARENT.search(word):
                raise CommandRefused(f"{program} argument {word!r} has a '..' path component: refused")
            raise CommandRefused(
                f"{program} argument {word!r} is not an option: refused (a job file or script the "
                f"report does not carry, or a word the template does not know)",
                (f"{word} spelled as {program} options",))
        name, equals, value = word.partition("=")
        if template.long_only and not name.startswith("--"):
            name = "-" + name          # fio: -name means --name
        reason = refuse.get(name)
        if reason is not None:
            raise CommandRefused(f"{program} option {name} {reason}: refused")
        if name in drop:
            if drop[name] == "value" and not equals:
                index += 1             # its value is the next word
            notes.append(f"left out {name}: the template sets how output is collected")
            continue
        if name not in table:
            raise CommandRefused(f"{program} option {name} is not on the {template.name} template's allowlist: refused",
                                 (f"{name} on the {template.name} allowlist",))
        param, sets = table[name]
        spec = template.param(param)
        if spec.type == "bool":
            option_value: str | None = value if equals else None
        elif equals:
            option_value = value
        elif index < len(words):
            option_value = words[index]
            index += 1
        else:
            raise CommandRefused(f"{program} option {name} needs a value", (f"a value for {name}",))
        if option_value is not None:
            for key, reason in template.refuse:
                key_name, _, prefix = key.partition("=")
                if prefix and key_name == name and option_value.startswith(prefix):
                    raise CommandRefused(f"{program} option {name}={option_value} {reason}: refused")
            if _PARENT.search(option_value):
                raise CommandRefused(f"{program} option {name}={option_value} has a '..' path component: refused")
        if param in seen:
            raise CommandRefused(f"{program} option {name} sets {param} again (after {seen[param]}): refused "
                                 f"(one job per plan)")
        seen[param] = name
        parsed.append(ParsedOption(name, param, option_value, tuple(sets.items())))
    return parsed
