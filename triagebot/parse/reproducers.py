"""Parse stage: benchmark command lines and LKP reproduction materials found in a message."""
from __future__ import annotations

import re

from triagebot.records import Reproducer

# The program that starts a command line, after an optional prompt or sudo.
_PROGRAMS = {
    "fio": "fio",
    "sysbench": "sysbench",
    "fs_mark": "fs_mark",
    "stress-ng": "stress-ng",
    "hackbench": "hackbench",
    "perf": "perf-bench",  # only `perf bench …`
    "fsperf": "fsperf",
    "tar": "command",
    "dd": "command",
    "dbench": "command",
    "filebench": "command",
    "xfs_io": "command",
    "mkfs.ext4": "command",
    "mkfs.xfs": "command",
    "mount": "command",
    "qemu-system-x86_64": "command",
    "qemu-system-aarch64": "command",
}
_PROMPT = re.compile(r"^\s*(?:[$#%]\s+|\w++@[\w.-]++[:~\w/]*+[$#]\s*|\[[^\]\n]{1,60}\][$#]\s*|>\s+)?"
                     r"(?:sudo\s+|time\s+)*")
_PROGRAM = re.compile(r"^(?:\./|/usr/(?:local/)?bin/|/usr/sbin/|\S*/)?([\w.-]+)(?=\s|$)")
_MAX_COMMAND = 20_000
# An explicit shell prompt: "$ ", "[root@host ~]# ", "user@host:~/dir$ " (a bare "# " is a comment).
_SHELL_PROMPT = re.compile(r"^\s*(?:\$\s+|\[[\w.-]+@[^\]\n]{1,60}\][$#]\s*|[\w.-]+@[\w.-]+:[~\w/.-]*[$#]\s+)")
_ANY_PROGRAM = re.compile(r"^(?:\./|/)?[a-z][\w./-]*(?:\s|$)")


def _join_continuations(lines: list[str], start: int) -> tuple[str, int]:
    """One logical line from a `\\`-continued command; returns it and the next index.

    Mail clients also wrap long command lines without a backslash; a following line that
    starts with an option (`--filename=…`, `-o …`) continues the command too.
    """
    parts = []
    index = start
    while index < len(lines):
        line = lines[index].rstrip()
        if line.endswith("\\"):
            parts.append(line[:-1].strip())
            index += 1
            continue
        parts.append(line.strip())
        index += 1
        while index < len(lines) and _WRAPPED_OPTIONS.match(lines[index]):
            parts.append(lines[index].strip())
            index += 1
        break
    return " ".join(part for part in parts if part), index


# A wrapped remainder of a command: options only (no prose words between them).
_WRAPPED_OPTIONS = re.compile(r"^-{1,2}[A-Za-z][\w-]*(?:=\S*)?(?:\s+-{1,2}[A-Za-z][\w-]*(?:=\S*|\s+[^\s-]\S*)?)*\s*$")


def _program_kind(command: str) -> str | None:
    match = _PROGRAM.match(command)
    if not match:
        return None
    program = match.group(1)
    kind = _PROGRAMS.get(program)
    if kind is None:
        return None
    if program == "perf" and not re.match(r"^\S*perf\s+bench(?=\s|$)", command):
        return None
    arguments = command[match.end():].strip()
    # "fio is slower" in prose is not a command: a command carries options or a job file.
    if not arguments or not re.match(r"^(?:-|[\w./]+\.(?:fio|job|ini|f)\b|(?=[\w./-]*(?:job|fio))[\w./-]*+(?:\s|$)|"
                                     r"\w+=|[\w./-]+\s+-|"
                                     r"bench(?=\s|$)|run(?=\s|$)|prepare(?=\s|$)|cleanup(?=\s|$)|[cx][a-z]*f\b|if=|of=)",
                                     arguments):
        return None
    return kind


def find_commands(text: str, *, quoted: bool = False) -> list[Reproducer]:
    """Benchmark command lines, continuations joined, in order of appearance."""
    lines = text.split("\n")
    commands: list[Reproducer] = []
    seen: set[str] = set()
    index = 0
    while index < len(lines):
        line = lines[index]
        prompt = _PROMPT.match(line)
        rest = line[prompt.end():] if prompt else line
        kind = _program_kind(rest.strip()) if rest.strip() else None
        if kind is None and prompt and _SHELL_PROMPT.match(line) and _ANY_PROGRAM.match(rest):
            # A line the writer shows at a shell prompt ("$ pgrep kworker | wc -l") is a command
            # they ran, whatever the program: kept as text, never run.
            kind = "command"
        if kind is None:
            index += 1
            continue
        command, consumed = _join_continuations([rest] + lines[index + 1:], 0)
        index += consumed
        command = command[:_MAX_COMMAND]
        if command not in seen:
            seen.add(command)
            commands.append(Reproducer(kind=kind, command=command, quoted=quoted))
    return commands
