"""Kernel builds: git run safely on a kernel tree's clone and its worktrees.

The same settings as the watched trees' mirrors (triagebot/lifecycle/git_tree.py): argument
lists, never a shell; no system or user configuration, no hooks, no prompt, no automatic gc;
fsck of what a fetch receives; only the https, http, git and file transports; each process in
its own group, killed with its children at the tree's `fetch_seconds`, and no file it writes
larger than `file_mib` (prlimit). A value (a ref, a path) always follows `--end-of-options` or
`--`, and a ref is checked before it gets here (triagebot.rules.hosts.is_commit_ref).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from triagebot.errors import TriageError

SAFE_CONFIG = ("core.hooksPath=/dev/null", "gc.auto=0", "maintenance.auto=false", "fetch.writeCommitGraph=false",
               "transfer.fsckObjects=true", "credential.helper=", "protocol.allow=never",
               "protocol.https.allow=always", "protocol.http.allow=always", "protocol.git.allow=always",
               "protocol.file.allow=always", "core.askPass=", "fetch.unpackLimit=1", "transfer.unpackLimit=1",
               "advice.detachedHead=false", "checkout.workers=0")
_PASSED_ENV = ("PATH", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
               "SSL_CERT_FILE", "SSL_CERT_DIR")
_ERROR_CHARS = 300
PRLIMIT = shutil.which("prlimit")


class GitError(TriageError):
    """git failed on a kernel tree: the command, its exit status and its last line."""


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str


def git_environment(home: Path, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment git runs in: no configuration but ours, no prompt, no ssh."""
    env = {name: environ[name] for name in _PASSED_ENV if name in environ}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_TERMINAL_PROMPT="0",
               GIT_ALLOW_PROTOCOL="https:http:git:file", LC_ALL="C", GIT_ASKPASS="/bin/false",
               SSH_ASKPASS="/bin/false")
    return env


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:_ERROR_CHARS] if lines else "no message"


class Git:
    """git on one repository (`--git-dir`) or worktree (`-C`), bounded in time and file size."""

    def __init__(self, *, git_dir: Path | None = None, work_tree: Path | None = None, home: Path,
                 timeout: float, file_mib: int, what: str) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.timeout = timeout
        self.file_mib = file_mib
        self.what = what  # "kernel tree linux": names the tree in errors
        self._env = git_environment(home)

    def argv(self, *args: str) -> list[str]:
        config = [item for pair in SAFE_CONFIG for item in ("-c", pair)]
        where = ["--git-dir", str(self.git_dir)] if self.git_dir is not None else ["-C", str(self.work_tree)]
        limit = ["prlimit", f"--fsize={self.file_mib * 1024 * 1024}", "--"] if PRLIMIT else []
        return [*limit, "git", *config, *where, *args]

    def run(self, *args: str, check: bool = True, timeout: float | None = None) -> GitResult:
        """git `args`; GitError when it fails (if `check`) or outlives the timeout."""
        argv = self.argv(*args)
        limit = timeout or self.timeout
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=self._env, start_new_session=True)
        try:
            out, err = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            raise GitError(f"{self.what}: git {args[0]} stopped after {limit:g} s (fetch_seconds in "
                           "rules/trees.toml)") from None
        result = GitResult(process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
        if check and result.returncode != 0:
            raise GitError(f"{self.what}: git {args[0]} failed (exit {result.returncode}): {last_line(result.stderr)}")
        return result

    def lines(self, *args: str) -> list[str]:
        return self.run(*args).stdout.split()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def end_of_options(values: Sequence[str]) -> list[str]:
    """`--end-of-options` and the values: none of them can be read as an option."""
    return ["--end-of-options", *values]
