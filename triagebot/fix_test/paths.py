"""Fix testing: what a patch series may touch, read by git's own parser in a scratch tree.

A hand-written pattern reads paths as it guesses git does; git reads them as git does (a C-quoted
`"a/\\056\\056/x"` is `../x` to git, not to a pattern). So the am-ready mbox is taken apart as
`git am` takes it apart (`git mailsplit`, then `git mailinfo` for each mail: transfer encodings
undone, the patch cut from the message), and each patch's paths and modes are read by `git
apply --numstat -z` and `git apply --summary` in an empty repository of the work directory,
with no configuration of the user's or the system's. Nothing is applied.

A patch is refused, naming the path and why, when it touches:
- a path outside the tree: absolute, or with a `..` component;
- anything in a `.git` directory (a hook, the config: code git itself would run);
- `.gitattributes` or `.gitmodules` anywhere (filters and submodules run or fetch code at checkout);
- a symbolic link or a submodule (mode 120000 or 160000: a link points outside the tree);
- a path holding a control character (no kernel file has one);
and a patch git cannot parse is refused with git's own message.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.untrusted.argv import after_options
from triagebot.untrusted.visible import visible

GIT_TIMEOUT_SECONDS = 60.0
MAX_MAILS = 1000  # mails of one series; a kernel series has tens
LINK_MODES = {"120000": "a symbolic link", "160000": "a submodule"}
CONTROL_FILES = {".gitattributes": "git attributes (filters run code at checkout)",
                 ".gitmodules": "submodules (fetched and checked out by git)"}
_SUMMARY_MODE = re.compile(r"^ (?:create|delete) mode (\d{6}) (.*)$|^ mode change (\d{6}) => (\d{6}) (.*)$")
# a git diff's extended header lines that carry a mode (`index` lines carry one when it does not change)
_HEADER_MODE = re.compile(r"^(?:old mode|new mode|new file mode|deleted file mode|index [0-9a-f]+\.\.[0-9a-f]+) "
                          r"(\d{6})$", re.MULTILINE)
_DIFF_HEADER = re.compile(r"^diff --git ", re.MULTILINE)


class PatchRefused(TriageError):
    """A patch that touches what no patch from mail may touch, with the path and why."""


def _git_environment(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}


def _git(scratch: Path, args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=scratch, env=_git_environment(scratch), input=stdin,
                              capture_output=True, timeout=GIT_TIMEOUT_SECONDS,
                              stdin=None if stdin is not None else subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PatchRefused(f"git could not read the patches: {error}") from None


def path_problem(path: str) -> str | None:
    """Why a patch may not touch `path` (as git reads it), or None. Pure."""
    if any(ord(character) < 0x20 or ord(character) == 0x7f for character in path):
        return "it holds a control character"
    if path.startswith("/"):
        return "it is an absolute path, outside the tree"
    parts = path.split("/")
    if ".." in parts:
        return "it has a '..' component, outside the tree"
    lowered = [part.lower() for part in parts]
    if ".git" in lowered[:-1] or lowered[-1] == ".git":
        return "it is inside .git (hooks and configuration git itself runs)"
    if lowered[-1] in CONTROL_FILES:
        return f"it changes {CONTROL_FILES[lowered[-1]]}"
    return None


def numstat_records(output: bytes) -> list[tuple[str, ...]]:
    """The paths of each file of `git apply --numstat -z` output, in order: one for a file, two
    (from, to) for a rename or copy. Pure."""
    records: list[tuple[str, ...]] = []
    fields = output.split(b"\0")
    index = 0
    while index < len(fields):
        record = fields[index]
        index += 1
        if not record:
            continue
        _added, _deleted, path = record.split(b"\t", 2) if record.count(b"\t") >= 2 else (b"", b"", record)
        if path:
            records.append((path.decode("utf-8", "surrogateescape"),))
        else:  # a rename or copy: the two paths follow as their own fields
            records.append(tuple(item.decode("utf-8", "surrogateescape") for item in fields[index:index + 2]))
            index += 2
    return records


def link_problems(summary: str, patch_text: str, records: list[tuple[str, ...]]) -> list[tuple[str, str]]:
    """(path, why) for each symbolic link or submodule a patch creates, deletes, changes to or
    edits: from `git apply --summary` (creations, deletions, mode changes) and the diff's own
    mode lines (an edit of an existing link names only its mode there; its path is git's
    numstat record of that diff when every file of the patch is a git diff). Pure."""
    found = []
    for line in summary.splitlines():
        match = _SUMMARY_MODE.match(line)
        if match is None:
            continue
        modes = [mode for mode in (match.group(1), match.group(3), match.group(4)) if mode]
        path = match.group(2) or match.group(5) or "?"
        for mode in modes:
            if mode in LINK_MODES:
                found.append((path, f"it is {LINK_MODES[mode]} (mode {mode})"))
                break
    if not found:
        for match in _HEADER_MODE.finditer(patch_text):
            if match.group(1) in LINK_MODES:
                headers = [item.start() for item in _DIFF_HEADER.finditer(patch_text)]
                before = [start for start in headers if start < match.start()]
                if before and len(headers) == len(records):
                    path = records[len(before) - 1][-1]
                else:  # a plain diff beside the git ones: its own header line names it
                    start = before[-1] if before else 0
                    path = patch_text[start:patch_text.find("\n", start)].removeprefix("diff --git ")
                found.append((path, f"it is {LINK_MODES[match.group(1)]} (mode {match.group(1)})"))
                break
    return found


def check_series_paths(mbox: Path, scratch: Path) -> int:
    """PatchRefused when a patch of the am-ready `mbox` touches what it may not (see the module
    text); the number of paths read otherwise. `scratch` is made and used as an empty repository."""
    scratch.mkdir(parents=True, exist_ok=True)
    initialized = _git(scratch, ["init", "-q", "--template=", "."])
    if initialized.returncode != 0:
        raise PatchRefused(f"git init of the scratch tree failed: {_last_line(initialized.stderr)}")
    mails = scratch / "mails"
    mails.mkdir(exist_ok=True)
    split = _git(scratch, after_options(["mailsplit", f"-o{mails}"], [str(mbox)]))
    if split.returncode != 0:
        raise PatchRefused(f"git mailsplit could not read the series: {_last_line(split.stderr)}")
    names = sorted(mails.iterdir())
    if len(names) > MAX_MAILS:
        raise PatchRefused(f"the series has {len(names)} mails, more than the {MAX_MAILS} a series may have")
    total = 0
    for number, mail in enumerate(names, start=1):
        message, patch = scratch / f"msg-{number}", scratch / f"patch-{number}"
        info = _git(scratch, ["mailinfo", str(message), str(patch)], stdin=mail.read_bytes())
        if info.returncode != 0:
            raise PatchRefused(f"git mailinfo could not read mail {number} of the series: {_last_line(info.stderr)}")
        if not patch.exists() or patch.stat().st_size == 0:
            continue  # a mail without a diff: git am applies nothing of it
        numstat = _git(scratch, after_options(["apply", "--numstat", "-z"], [str(patch)]))
        if numstat.returncode != 0:
            raise PatchRefused(f"patch {number} of the series: git apply cannot read it: {_last_line(numstat.stderr)}")
        records = numstat_records(numstat.stdout)
        paths = [path for record in records for path in record]
        for path in paths:
            why = path_problem(path)
            if why is not None:
                raise PatchRefused(f"patch {number} of the series touches {visible(path)!r}: {why}; not applied")
        summary = _git(scratch, after_options(["apply", "--summary"], [str(patch)]))
        if summary.returncode != 0:
            raise PatchRefused(f"patch {number} of the series: git apply cannot read it: {_last_line(summary.stderr)}")
        links = link_problems(summary.stdout.decode("utf-8", "replace"),
                              patch.read_bytes().decode("utf-8", "replace"), records)
        if links:
            path, why = links[0]
            raise PatchRefused(f"patch {number} of the series touches {visible(path)!r}: {why}; not applied")
        total += len(paths)
    return total


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return visible(lines[-1][:300]) if lines else "no message"
