"""Test helpers: a real git tree served by `git daemon` on 127.0.0.1, and commits written into it.

The tree is a bare repository under a base folder; `git daemon` exports it read-only (git://).
Its readiness is read from its own log ("Ready to rumble"), never waited for by the clock.
Commits are written with `git fast-import`, so thousands cost a fraction of a second and their
dates are what the test says.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

GIT = shutil.which("git")
GIT_DAEMON = Path("/usr/lib/git-core/git-daemon")
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
       "LC_ALL": "C", "HOME": "/nonexistent"}


def git_daemon_missing() -> str | None:
    """Why the git-daemon tests cannot run here, or None."""
    if GIT is None:
        return "git is not installed (Debian: git)"
    if not GIT_DAEMON.exists():
        return f"git daemon is not at {GIT_DAEMON} (Debian: git-daemon-run or git's own git-daemon)"
    return None


class ServedTree:
    """A bare repository `NAME.git` under `base`, written to by fast-import on branch `branch`."""

    def __init__(self, base: Path, name: str, branch: str = "master") -> None:
        self.path = base / f"{name}.git"
        self.branch = branch
        self.marks = 0
        subprocess.run([GIT or "git", "init", "--bare", "--quiet", "--template=", str(self.path)], env=ENV, check=True)

    def git(self, *args: str) -> str:
        return subprocess.run([GIT or "git", "--git-dir", str(self.path), *args], env=ENV, check=True,
                              capture_output=True, text=True).stdout

    def commit(self, *messages: str | bytes, when: datetime, blob: bytes = b"") -> list[str]:
        """Commits on the branch, one per message, each dated `when` (each adding `blob` as a file
        when given); their shas, oldest first."""
        stamp = f"{int(when.timestamp())} +0000"
        stream = bytearray()
        parent = self.tip()
        first = self.marks + 1
        for number, message in enumerate(messages, start=first):
            body = message.encode() if isinstance(message, str) else message
            stream += (f"commit refs/heads/{self.branch}\nmark :{number}\n"
                       f"author A U Thor <author@example.org> {stamp}\n"
                       f"committer C O Mitter <committer@example.org> {stamp}\n"
                       f"data {len(body)}\n").encode() + body + b"\n"
            if number == first and parent:
                stream += f"from {parent}\n".encode()
            stream += f"M 644 inline file\ndata {len(str(number))}\n{number}\n".encode()
            if blob:
                stream += f"M 644 inline blob-{number}\ndata {len(blob)}\n".encode() + blob + b"\n"
            stream += b"\n"
        self.marks += len(messages)
        subprocess.run([GIT or "git", "--git-dir", str(self.path), "fast-import", "--quiet"], input=bytes(stream),
                       env=ENV, check=True, capture_output=True)
        return self.git("rev-list", "--reverse", f"-{len(messages)}", f"refs/heads/{self.branch}").split()

    def tip(self) -> str | None:
        found = subprocess.run([GIT or "git", "--git-dir", str(self.path), "rev-parse", "--verify", "--quiet",
                                f"refs/heads/{self.branch}"], env=ENV, capture_output=True, text=True)
        return found.stdout.strip() or None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """`git daemon` serving every repository under `base` on 127.0.0.1; yields git://127.0.0.1:PORT/."""
    port = free_port()
    process = subprocess.Popen([str(GIT_DAEMON), "--verbose", "--export-all", "--reuseaddr", f"--base-path={base}",
                                "--listen=127.0.0.1", f"--port={port}", str(base)],
                               env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line.decode(errors="replace"))
            if b"Ready to rumble" in line:
                break
        else:
            raise RuntimeError(f"git daemon did not start: {''.join(seen)}")
        # its log of each connection is read on and dropped: a full pipe would stop the server
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield f"git://127.0.0.1:{port}/"
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def silent_server() -> Iterator[str]:
    """A TCP port on 127.0.0.1 that accepts a connection and never answers: a fetch that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"git://127.0.0.1:{listener.getsockname()[1]}/"
