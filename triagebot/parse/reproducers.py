"""Parse stage: benchmark command lines and shell scripts found in a message.

Which programs start a reproducer, and which commands are administration (uname, git bisect,
cat /proc/…, package installs, mount queries), is data: rules/commands.toml. Read here:

- a command line after an optional prompt (`$ `, `# `, `root@host:~# `, `[user@host dir]$ `,
  `$cmd` glued to its prompt), `sudo` and `time`; `\\` continuations joined, and lines a mail
  client wrapped (indented or not) that hold only options, paths and pipes;
- a program's own header that repeats its command line (iozone's `Command line used:`);
- a shell script: `#!/bin/sh` to its end, or a `for`/`while`/`until` loop to its `done`, kept
  whole as one `script` reproducer (newlines kept); benchmark lines inside it are also read.

Nothing here is run: a command is text; the planner makes argv of it through templates.
"""
from __future__ import annotations

import re
from functools import lru_cache

from triagebot.records.report import Reproducer
from triagebot.rules.commands import CommandRules, load_commands

_MAX_COMMAND = 20_000
_MAX_SCRIPT_LINES = 80
_WRAP_WIDTH = 72  # mail clients wrap at 72-78 columns: a line that could not take the next word

# A prompt before a command: "$ ", "# ", "% ", "~# " (a prompt showing only its folder),
# "user@host:~/dir$ ", "[root@host ~]# ", "> ".
_PROMPT = re.compile(r"^\s*(?:~?[$#%]\s+|[\w.-]++@[\w.-]++[:~\w/.-]*+[$#]\s*|\[[^\]\n]{1,60}\][$#]\s*|>\s+)?"
                     r"(?:sudo\s+(?:-\w\s+)*|time\s+)*")
# An explicit shell prompt (a bare "# " may be a comment, so it is not one).
_SHELL_PROMPT = re.compile(r"^\s*(?:\$\s+|~[$#]\s+|\[[\w.-]+@[^\]\n]{1,60}\][$#]\s*|[\w.-]+@[\w.-]+:[~\w/.-]*[$#]\s+|"
                           r"\[[\w.-]+@[\w.-]+[^\]\n]{0,40}\]\$\s+)")
# "$mount -t ext4 …": the prompt glued to the command (no variable: no "=" after the word).
_GLUED_PROMPT = re.compile(r"^\$(?=(?:sudo\s+)?[a-z][\w.-]*\s+[^=\s])")
_SUDO = re.compile(r"^(?:sudo\s+(?:-\w\s+)*|time\s+)+")
_PROGRAM = re.compile(r"^(?:\./|~/|/usr/(?:local/)?s?bin/|/s?bin/|[\w.~-]*/)*([\w.+-]+)(?=\s|$)")
_ANY_PROGRAM = re.compile(r"^(?:\./|/)?[a-z][\w./+-]*(?:\s|$)")
# Arguments that make a program name a command and not prose ("fio is slower"): an option,
# a job file, dd's operands, a test directory.
_COMMAND_ARGUMENTS = re.compile(r"^(?:-|[\w./-]+\.(?:fio|job|ini|f|yaml|sh|cfg|conf)\b|"
                                r"(?=[\w./-]*(?:job|fio))[\w./-]*+(?:\s|$)|if=|of=|[\w./-]+\s+-|/\S+)")
_SHEBANG = re.compile(r"^\s*#!\s*/(?:usr/)?bin/(?:env\s+)?(?:ba|z|k|da)?sh\b")
# A loop header as a shell writes it: "for i in …", "for ((", "while true; do", "while [ … ]".
_LOOP = re.compile(r"^(?:for\s+(?:\w+\s+in\b|\(\()|(?:while|until)\s+(?:\[|true\b|:|!|read\b|\(\(|"
                   r"[\w./-]+\s+-|[\w./-]+\s*;))")
_LOOP_OPEN = re.compile(r"(?:^|[;&|]\s*|\b(?:do|then|else)\s+)(?:for|while|until)\b")
_LOOP_CLOSE = re.compile(r"(?:^|[;&|\s])done\b")
_DO = re.compile(r"(?:^|[;\s])do\b")
# A wrapped remainder of a command: options, key=value, paths and numbers, then perhaps a pipe
# or a redirection and whatever follows it.
_WRAPPED_TOKEN = re.compile(r"^(?:-{1,2}[A-Za-z][\w.-]*(?:=\S*)?|[\w.-]+=\S*|/\S*|[\w.-]+/\S*|~\S*|\./\S*|"
                            r"\$\{?\w+\}?\S*|\d[\w.]*|'[^']*'|\"[^\"]*\")$")
# "mkfs: mkfs.btrfs -d raid0 …", "fio command: fio …": a short label before a command.
_LABEL = re.compile(r"^[A-Za-z][\w ./-]{0,24}:\s+")
_OPERATOR = re.compile(r"^(?:\||\|\||&&|>|>>|2>&1|2>|<|;)$")


@lru_cache(maxsize=1)
def rules() -> CommandRules:
    return load_commands()


def command_hints() -> tuple[str, ...]:
    """Cheap substrings: a text holding none of them holds no command this module reads."""
    return rules().hints() + ("$ ", "]# ", ":~# ", "#!/", "; do", "\ndo\n")


def benchmark_hints() -> tuple[str, ...]:
    """Cheap substrings naming a benchmark program (not a set-up step) of the rules."""
    return tuple(hint for rule in rules().programs if rule.kind != "command"
                 for hint in CommandRules(programs=(rule,)).hints())


def _wrapped_continuation(line: str, previous: str) -> bool:
    """Whether `line` continues the command on `previous`, wrapped by a mail client."""
    tokens = line.split()
    if not tokens:
        return False
    starts_with_option = tokens[0].startswith("-") and len(tokens[0]) > 1
    wrapped = len(previous.rstrip()) + 1 + len(tokens[0]) > _WRAP_WIDTH
    if not starts_with_option and not wrapped:
        return False  # the line was not wrapped: a path on the next line is something else
    if tokens[0] == "|" and len(tokens) > 1:
        return True  # "… --group_reporting" / "| grep iops"
    expect_value = False
    for position, token in enumerate(tokens):
        if _OPERATOR.match(token):
            return position > 0  # "… --create_only=1 > /dev/null", "--group_reporting | grep iops"
        if _WRAPPED_TOKEN.match(token):
            expect_value = token.startswith("-") and "=" not in token
            continue
        if expect_value and not token.startswith("-"):
            expect_value = False  # "--name writer"
            continue
        return False
    return True


def _join(lines: list[str], start: int, first: str) -> tuple[str, int]:
    """One logical line from `lines[start]` (read as `first`, its prompt removed): `\\`
    continuations and wrapped options joined; returns it and the index after it."""
    parts = [first.rstrip()]
    continued = parts[0].endswith("\\")
    index = start + 1
    while index < len(lines):
        line = lines[index].rstrip()
        if not continued and not _wrapped_continuation(line.strip().rstrip("\\").strip(), parts[-1]):
            break
        parts.append(line)
        continued = line.endswith("\\")
        index += 1
    return " ".join(part.rstrip("\\").strip() for part in parts if part.rstrip("\\").strip()), index


def _split_program(command: str) -> tuple[str, str] | None:
    """The program name of a command (sudo, time and a path dropped) and its arguments."""
    command = _SUDO.sub("", command)
    match = _PROGRAM.match(command)
    if not match:
        return None
    return match.group(1), command[match.end():].strip()


def _program_kind(command: str, at_prompt: bool = False) -> str | None:
    """The reproducer kind of a command line; None for prose, unknown programs and
    administration (which the caller drops)."""
    split = _split_program(command)
    if split is None:
        return None
    program, arguments = split
    table = rules()
    rule = table.program(program)
    first = arguments.split(None, 1)[0] if arguments else ""
    applies = rule is not None and (not rule.after or first in rule.after)
    if (rule is None or not applies or rule.kind == "command") and table.is_admin(program, arguments):
        return None  # "mount | grep btrfs" is a query, "mount /dev/sdw1 /mnt" a step
    if rule is not None and applies:
        if not at_prompt and _reads_as_prose(arguments, rule.words + rule.after, table.prose_words):
            return None  # "sysbench cpu on my build box lost …": a sentence about the program
        if rule.after:
            return rule.kind
        if (arguments and (_COMMAND_ARGUMENTS.match(arguments) or first in rule.words)) or \
                (at_prompt and (rule.bare or arguments)):
            return rule.kind
        return None
    if at_prompt and _ANY_PROGRAM.match(command):
        # A line the writer shows at a shell prompt is a command they ran, whatever the
        # program (kept as text, never run), unless the rules call it administration.
        return "command"
    return None


# A shell word of a command line: a quoted string whole, else a run of non-space characters.
_SHELL_WORD = re.compile(r"\"[^\"]*\"|'[^']*'|\S+")
# A word of a sentence: letters (an apostrophe inside: "don't"), perhaps closed by punctuation.
_PLAIN_WORD = re.compile(r"^[A-Za-z][a-z]*(?:'[a-z]+)?[,.;:!?]?$")
_ENDS_COMMAND = re.compile(r"^(?:\||\|\||&&|;|>>?|<|2>&1|2>|&)$")


def _reads_as_prose(arguments: str, words: tuple[str, ...], in_a_row: int) -> bool:
    """Whether a program's arguments read as a sentence: `in_a_row` plain words one after the
    other (not the rule's own words: `sysbench cpu run`, `perf bench sched pipe`) before any pipe or
    redirection, as in
    "sysbench cpu on my build box lost about a quarter" or "mount -o X /dev/sda1 /mnt that "X" is
    supposed to be". Options, paths, values, numbers and quoted strings are a command's words."""
    run = 0
    for word in _SHELL_WORD.findall(arguments):
        if _ENDS_COMMAND.match(word):
            return False  # what follows a pipe is another command's
        if _PLAIN_WORD.match(word) and word.rstrip(",.;:!?") not in words:
            run += 1
            if run >= in_a_row:
                return True
        else:
            run = 0
    return False


def _strip_prompt(line: str) -> tuple[str, bool]:
    """The line without its prompt, and whether that was an explicit shell prompt."""
    glued = _GLUED_PROMPT.match(line)
    if glued:
        return line[1:], True
    explicit = _SHELL_PROMPT.match(line) is not None
    prompt = _PROMPT.match(line)
    return (line[prompt.end():] if prompt else line), explicit


def _script_end(lines: list[str], start: int, shebang: bool) -> int | None:
    """The index after a script starting at `start`: a loop's matching `done`, or for a
    `#!` script the first blank line outside a loop. None when a loop never closes."""
    depth = 0
    for index in range(start, min(len(lines), start + _MAX_SCRIPT_LINES)):
        text, _ = _strip_prompt(lines[index])
        text = text.split(" #", 1)[0] if not text.lstrip().startswith("#!") else ""
        if shebang and depth == 0 and index > start and not text.strip() and not _more_script(lines, index):
            return index
        depth += len(_LOOP_OPEN.findall(text.strip()))
        depth -= len(_LOOP_CLOSE.findall(text))
        if depth <= 0 and not shebang and index >= start and _LOOP_CLOSE.search(text):
            return index + 1
    return len(lines) if shebang and start + _MAX_SCRIPT_LINES >= len(lines) and depth == 0 else None


# A line that goes on with a script after a blank line: indented, a loop, a comment, a
# variable, a known shell word; prose ("Symptoms:") and prompts end it.
_SCRIPT_LINE = re.compile(r"^(?:\s+\S|(?:for|while|until|if|do|done|fi|then|else|echo|rm|cd|sync|sleep|export|"
                          r"set|mkdir|umount|sudo)\b|#[^!]|\w+=|\$\w|\.?/)")


def _more_script(lines: list[str], blank: int) -> bool:
    following = next((line for line in lines[blank + 1:blank + 5] if line.strip()), "")
    return bool(following) and _SCRIPT_LINE.match(following) is not None and not _SHELL_PROMPT.match(following)


def _script_at(lines: list[str], index: int, rest: str) -> int | None:
    """The end of a script starting on line `index` (its prompt removed: `rest`), or None."""
    if _SHEBANG.match(rest):
        return _script_end(lines, index, shebang=True)
    stripped = rest.strip()
    if _LOOP.match(stripped) and (_DO.search(stripped) or (
            index + 1 < len(lines) and lines[index + 1].strip() == "do")):
        return _script_end(lines, index, shebang=False)
    return None


def _script_text(lines: list[str]) -> str:
    body = [_strip_prompt(line)[0].rstrip() if number == 0 else line.rstrip() for number, line in enumerate(lines)]
    body = [line for line in body if line.strip()]
    indents = [len(line) - len(line.lstrip()) for line in body[1:] if line.strip()]
    common = min(indents) if indents else 0
    first = body[0].strip()
    rest = [line[common:] for line in body[1:]]
    # the first line's own indentation matches the rest's common indentation in most mail
    return "\n".join([first, *rest]).strip("\n")


def _lead_command(line: str) -> str | None:
    for lead in rules().leads:
        position = line.find(lead)
        if position >= 0:
            return line[position + len(lead):].strip() or None
    return None


def find_commands(text: str, *, quoted: bool = False) -> list[Reproducer]:
    """Benchmark command lines and scripts, in order of appearance."""
    lines = text.split("\n")
    commands: list[Reproducer] = []
    seen: set[tuple[str, str]] = set()

    def keep(kind: str, command: str) -> None:
        command = command[:_MAX_COMMAND]
        if (kind, command) not in seen:
            seen.add((kind, command))
            commands.append(Reproducer(kind=kind, command=command, quoted=quoted))

    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        led = _lead_command(line) if "used:" in line else None
        if led is not None:
            kind = _program_kind(led, at_prompt=True)
            if kind is not None:
                keep(kind, " ".join(led.split()))
            index += 1
            continue
        rest, explicit = _strip_prompt(line)
        end = _script_at(lines, index, rest)
        if end is not None:
            block = lines[index:end]
            keep("script", _script_text(block))
            for inner in find_commands("\n".join(block[1:]), quoted=quoted):
                if inner.kind not in ("command", "script") and inner.command:
                    keep(inner.kind, inner.command)
            index = end
            continue
        stripped = rest.strip()
        kind = _program_kind(stripped, explicit) if stripped else None
        labelled = _LABEL.match(stripped) if kind is None and ": " in stripped else None
        if labelled:
            kind = _program_kind(stripped[labelled.end():], False)
            rest = stripped[labelled.end():] if kind is not None else rest
        if kind is None:
            index += 1
            continue
        command, index = _join(lines, index, _SUDO.sub("", rest.lstrip()))
        keep(kind, _without_comment(command))
    return commands


# A shell comment after a command at a prompt: "iperf3 -c 192.168.10.1 -p 9999  # Upload"
# (linux-wireless 2025, fixtures/labels/dev5:11). Not inside quotes, and only after a space.
_TRAILING_COMMENT = re.compile(r"\s+#\s.*$")


def _without_comment(command: str) -> str:
    comment = _TRAILING_COMMENT.search(command) if " # " in command else None
    if comment is None or "\n" in command:
        return command
    before = command[:comment.start()]
    if before.count("'") % 2 or before.count('"') % 2:
        return command  # the "#" is inside a quoted argument
    return before


# A command quoted inside a sentence, as people name what they ran: "running [2] like this
# `grate/texture-filter -f -s` which should produce" (linux-tegra 2019, fixtures/labels/dev5:4),
# "The maximum performance for 'ib_send_bw -F -a' in local loopback mode dropped" (linux-rdma
# 2023, dev5:22), "just doing `cat /dev/ttyVUART0`" (openbmc 2021, dev5:27; cat is
# administration). A program and at least one option; administration is dropped as on a line.
_INLINE = re.compile(r"(?:(?<=\s)|(?<=\()|^)(?:`([^`\n]{3,200})`|'([\w./~-]+\s+-[^'\n]{1,200})')(?=[\s.,;:)]|$)",
                     re.MULTILINE)


def inline_commands(text: str) -> list[Reproducer]:
    """Commands quoted in prose (backticks, or single quotes round a program and its options)."""
    if "`" not in text and "'" not in text:
        return []
    found: list[Reproducer] = []
    for match in _INLINE.finditer(text):
        candidate = " ".join((match.group(1) or match.group(2)).split())
        tokens = candidate.split()
        if len(tokens) < 2 or not any(token.startswith("-") and len(token) > 1 for token in tokens[1:]):
            continue
        kind = _program_kind(candidate, at_prompt=True)
        if kind is not None and all(item.command != candidate for item in found):
            found.append(Reproducer(kind=kind, command=_SUDO.sub("", candidate)))
    return found
