"""Fix testing: a fix proposed in a report's thread, made ready to apply with b4.

The thread (fetched by the project's own bounded lore client, or from the store) is written to a
local mbox, and `b4 am --use-local-mbox` picks the newest version of the series, collects the
trailers replies gave and writes the am-ready mbox. b4 never reaches the network here (a local
mbox; attestation off) and reads no configuration of the user's: HOME, XDG directories and
git's global configuration all point into the work directory, the system's is not read.

Refused with a reason, before b4 runs or before anything is applied:
- a message over MAX_MESSAGE_BYTES (an attachment of hundreds of MB is no patch);
- a series whose newest version lacks a part (`[PATCH v2 2/3]` never posted);
- a link to a patch on another host than the archive the thread came from;
- a mail in b4's am-ready mbox that is not one of the series' mails the caller named (b4 picks
  the version itself: what is applied is the series whose senders were looked at, nothing else);
- a patch that touches what no patch from mail may (fix_test/paths.py: read by git's own parser
  in a scratch tree: paths outside the tree, .git, .gitattributes, .gitmodules, links).
Nothing read from a message is run: b4 and git get file names and Message-IDs as argv words,
after `--` (triagebot/untrusted/argv.py), so a Message-ID `<-o/dir>` is an id, never an option.
"""
from __future__ import annotations

import mailbox
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from triagebot.errors import TriageError
from triagebot.fix_test.paths import PatchRefused, check_series_paths
from triagebot.parse.patches import PatchMail, message_headers, patch_mail, series_key
from triagebot.untrusted.argv import after_options

MAX_MESSAGE_BYTES = 20 * 1024 * 1024  # a patch mail; kernel series parts are kilobytes
B4_TIMEOUT_SECONDS = 120.0
_URL = re.compile(r"https?://[^\s<>\"']+")
TRAILER = re.compile(r"^(Reviewed-by|Acked-by|Tested-by|Signed-off-by|Reported-by|Suggested-by|Fixes|Link|"
                     r"Closes|Co-developed-by|Cc):\s*(.+)$", re.MULTILINE)


class FixRefused(TriageError):
    """A proposed fix that is not applied, with the reason."""


@dataclass(frozen=True)
class PreparedFix:
    mbox: Path  # the am-ready mbox b4 wrote
    version: int
    subjects: tuple[str, ...]  # of the patches in it, in order
    trailers: tuple[str, ...]  # every trailer line in it, in order
    b4_output: str
    message_id: str = ""  # the series message b4 was given (a reply to the series answers it)
    subject: str = ""  # its subject
    series_key: str = ""  # series_key() of the version b4 was given


def check_thread(thread: list[bytes], archive_url: str) -> list[PatchMail]:
    """The thread's patch mails; FixRefused for an oversized message, a newest version with a part
    missing, or a link to a patch on another host than `archive_url`'s."""
    allowed = urlsplit(archive_url).hostname
    patches = []
    for raw in thread:
        if len(raw) > MAX_MESSAGE_BYTES:
            subject = " ".join(str(message_headers(raw[:65536]).get("Subject", "?")).split())
            raise FixRefused(f"message {subject!r} is {len(raw) / 1e6:.1f} MB, over the "
                             f"{MAX_MESSAGE_BYTES // (1024 * 1024)} MB a patch mail may be: not applied")
        for url in _URL.findall(raw.decode("utf-8", "replace")):
            parts = urlsplit(url)
            pointing = "/patch" in parts.path or parts.path.endswith(("/raw", ".mbox.gz", ".patch", ".diff"))
            if pointing and parts.hostname != allowed:
                raise FixRefused(f"a patch is linked on {parts.hostname}, not on the thread's archive {allowed}: "
                                 f"{url[:120]} is not fetched")
        found = patch_mail(raw)
        if found is not None:
            patches.append(found)
    if not patches:
        raise FixRefused("no [PATCH] mail in the thread")
    newest = max(item.version for item in patches)
    series = [item for item in patches if item.version == newest]
    total = max(item.total for item in series)
    have = {item.part for item in series if item.part > 0}
    missing = sorted(set(range(1, total + 1)) - have)
    if missing:
        raise FixRefused(f"v{newest} of the series has {total} parts, but part "
                         f"{', '.join(map(str, missing))} of {total} is not in the thread: not applied")
    return patches


def isolated_environment(home: Path) -> dict[str, str]:
    """b4's and git's environment: nothing of the user's configuration, no system configuration,
    attestation off (it would look keys up over the network)."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / ".gitconfig"
    config.write_text("[b4]\n\tattestation-policy = off\n\tattestation-check-dkim = no\n"
                      "[user]\n\tname = triagebot\n\temail = triagebot@localhost\n")
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(config)}


def write_mbox(thread: list[bytes], path: Path) -> Path:
    box = mailbox.mbox(str(path), create=True)
    try:
        for raw in thread:
            box.add(raw)
        box.flush()
    finally:
        box.close()
    return path


def b4_program() -> str:
    """The b4 installed beside this Python (pip's, with triagebot: a daemon's PATH may not hold
    that environment's bin folder), else b4 on PATH."""
    beside = Path(sys.executable).parent / "b4"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else "b4"


def prepare_fix(thread: list[bytes], workdir: Path, archive_url: str, patch_message_id: str | None = None, *,
                b4: str | None = None, series_ids: frozenset[str] | None = None) -> PreparedFix:
    """The newest version of the thread's fix series, am-ready, by b4 (see the module text).
    `series_ids`: the only mails b4's output may hold (those whose senders the caller looked at)."""
    b4 = b4 or b4_program()
    patches = check_thread(thread, archive_url)
    newest = max(item.version for item in patches)
    first = next(item for item in sorted(patches, key=lambda item: (-item.version, item.part))
                 if item.version == newest)
    chosen = patch_message_id or first.message_id
    named = next((item for item in patches if item.message_id == chosen), None)
    subject = named.subject if named is not None else first.subject
    key = series_key(patches, named.version) if named is not None else f"v?:{chosen}"
    workdir.mkdir(parents=True, exist_ok=True)
    local = write_mbox(thread, workdir / "thread.mbox")
    out = workdir / "am"
    argv = after_options([b4, "--offline-mode", "am", "--use-local-mbox", str(local), "--outdir", str(out),
                          "--mbox-name", "fix.mbx", "--no-cover"], [chosen])
    try:
        completed = subprocess.run(argv, cwd=workdir, env=isolated_environment(workdir / "home"),
                                   capture_output=True, timeout=B4_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise FixRefused(f"b4 could not prepare the series: {error}") from None
    output = (completed.stdout + completed.stderr).decode("utf-8", "replace")
    made = out / "fix.mbx"
    if completed.returncode != 0 or not made.exists():
        raise FixRefused(f"b4 am wrote no am-ready mbox (exit {completed.returncode}): {output.strip()[-300:]}")
    text = made.read_text(encoding="utf-8", errors="replace")
    box = mailbox.mbox(str(made), create=False)
    try:
        subjects = tuple(" ".join(str(message.get("Subject", "")).split()) for message in box)
        applied_ids = [str(message.get("Message-Id", "")).strip().strip("<>") for message in box]
    finally:
        box.close()
    if series_ids is not None:
        stray = [item or "(no Message-Id)" for item in applied_ids if item not in series_ids]
        if stray:
            raise FixRefused(f"b4 picked <{stray[0]}>, not one of the series' mails whose senders were "
                             f"looked at: not applied")
    try:  # what git am would apply, read by git's own parser: the one check of paths
        check_series_paths(made, workdir / "paths")
    except PatchRefused as refused:
        raise FixRefused(str(refused)) from None
    trailers = tuple(f"{name}: {value.strip()}" for name, value in TRAILER.findall(text))
    version = named.version if named is not None else newest
    return PreparedFix(made, version, subjects, trailers, output, chosen, subject, key)
