"""Lifecycle stage: a watched git tree, read with git (TreeReader of tree_protocol.py).

Each tree has its own bare mirror, STATE/trees/NAME.git. git is run with argument lists, never a
shell; with no system or user configuration, no hooks (core.hooksPath=/dev/null), no prompt, no
automatic gc or maintenance, fsck of what is received, and only the https, http, git and file
transports. Every git process has its own process group and is killed, children and all, at the
tree's `fetch_seconds`. Refs kept in the mirror:

- refs/triage/tip    the branch as last fetched;
- refs/triage/walk   the tip a walk in progress goes up to (a later fetch does not move it);
- refs/triage/done   the tip of the last finished walk: the next walk starts after it.

The first fetch is shallow (`--shallow-since`, else the tip alone when nothing is that recent):
a tree's whole history is never fetched nor walked.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO

from triagebot.lifecycle.tree_protocol import TreeCommit, TreeError
from triagebot.rules.trees import WatchedTree
from triagebot.untrusted.argv import after_options

TIP, WALK, DONE = "refs/triage/tip", "refs/triage/walk", "refs/triage/done"
_CONFIG = ("core.hooksPath=/dev/null", "gc.auto=0", "maintenance.auto=false", "fetch.writeCommitGraph=false",
           "transfer.fsckObjects=true", "credential.helper=", "protocol.allow=never",
           "protocol.https.allow=always", "protocol.http.allow=always", "protocol.git.allow=always",
           "protocol.file.allow=always", "core.askPass=",
           # a fetch keeps what it receives as one pack, never as loose objects (git explodes a
           # fetch of fewer than 100 objects into one file each): file_mib then bounds all it writes
           "fetch.unpackLimit=1", "transfer.unpackLimit=1")
_PASSED_ENV = ("PATH", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
               "SSL_CERT_FILE", "SSL_CERT_DIR")
_ERROR_CHARS = 300
_NO_SHALLOW_COMMITS = "no commits selected for shallow requests"
# gc is off (no fetch starts one): each fetch adds a pack, and past this many the mirror's packs are
# made one again (`git repack -a -d`, under the same timeout and file bound), so a tree watched for
# a year is not read through thousands of packs
MAX_PACKS = 32
PRLIMIT = shutil.which("prlimit")  # util-linux: on every Debian; without it, no file bound


def git_environment(home: Path, environ: dict[str, str] | os._Environ[str] = os.environ) -> dict[str, str]:
    """The environment git runs in: no configuration but ours, no prompt, no ssh."""
    env = {name: environ[name] for name in _PASSED_ENV if name in environ}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_TERMINAL_PROMPT="0",
               GIT_ALLOW_PROTOCOL="https:http:git:file", LC_ALL="C", GIT_ASKPASS="/bin/false",
               SSH_ASKPASS="/bin/false")
    return env


def parse_commit_object(data: bytes) -> str:
    """The message of a raw commit object (what follows its headers), decoded leniently; '' when
    the headers do not end within `data` (a message cut before it began)."""
    end = data.find(b"\n\n")
    return "" if end < 0 else data[end + 2:].decode("utf-8", "replace")


class GitTree:
    """A watched tree's mirror under `state_dir`/trees."""

    def __init__(self, tree: WatchedTree, state_dir: Path) -> None:
        self.tree = tree
        self.mirror = state_dir / "trees" / f"{tree.name}.git"
        self._env = git_environment(self.mirror.parent)
        self._timeout = tree.bounds.fetch_seconds
        self._current: subprocess.Popen | None = None
        self._stopped = False

    # the git runs
    def _argv(self, *args: str) -> list[str]:
        config = [item for pair in _CONFIG for item in ("-c", pair)]
        # prlimit, not preexec_fn (unsafe beside threads): a pack past file_mib kills git (SIGXFSZ)
        limit = ["prlimit", f"--fsize={self.tree.bounds.file_mib * 1024 * 1024}", "--"] if PRLIMIT else []
        return [*limit, "git", *config, "--git-dir", str(self.mirror), *args]

    @contextmanager
    def _process(self, argv: list[str], *, stdin: int | None = subprocess.DEVNULL) -> Iterator[subprocess.Popen]:
        """A git process in its own group, killed (group and all) at the tree's timeout or on leaving."""
        if self._stopped:
            raise TreeError(f"tree {self.tree.name}: stopped (the daemon is stopping)")
        process = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=self._env, start_new_session=True)
        self._current = process
        expired = threading.Event()

        def kill() -> None:
            expired.set()
            _kill_group(process)

        timer = threading.Timer(self._timeout, kill)
        timer.daemon = True  # a timer never keeps the process alive
        timer.start()
        try:
            yield process
        finally:
            timer.cancel()
            if process.poll() is None:
                _kill_group(process)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait()
            self._current = None
            if self._stopped:
                raise TreeError(f"tree {self.tree.name}: stopped (the daemon is stopping)")
            if expired.is_set():
                raise TreeError(f"tree {self.tree.name}: git {argv[argv.index('--git-dir') + 2]} stopped after "
                                f"{self._timeout:g} s (fetch_seconds in rules/trees.toml)")

    def _run(self, *args: str, check: bool = True) -> tuple[int, str, str]:
        argv = self._argv(*args)
        with self._process(argv) as process:
            out, err = process.communicate()
        code = process.returncode
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        if check and code != 0:
            raise TreeError(f"tree {self.tree.name}: git {args[0]} failed (exit {code}): {_last_line(stderr)}")
        return code, stdout, stderr

    def _has(self, ref: str) -> bool:
        return self._run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)[0] == 0

    # TreeReader
    def stop(self) -> None:
        self._stopped = True
        process = self._current
        if process is not None and process.poll() is None:
            _kill_group(process)

    def fetch(self, since: datetime) -> None:
        if not (self.mirror / "HEAD").is_file():
            self.mirror.parent.mkdir(parents=True, exist_ok=True)
            self._run("init", "--bare", "--quiet", "--template=")
        refspec = f"+refs/heads/{self.tree.branch}:{TIP}"
        fetch = ("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--no-auto-maintenance",
                 "--no-recurse-submodules")
        where = [self.tree.url, refspec]  # after `--`: a URL or branch is never read as an option
        if self._has(TIP):
            code, _, stderr = self._run(*after_options(fetch, where), check=False)
        else:
            shallow = f"--shallow-since={since.strftime('%Y-%m-%d %H:%M:%S %z')}"
            code, _, stderr = self._run(*after_options([*fetch, shallow], where), check=False)
            if code != 0 and _NO_SHALLOW_COMMITS in stderr:  # nothing that recent: from the tip on
                code, _, stderr = self._run(*after_options([*fetch, "--depth=1"], where), check=False)
        if code != 0:
            raise self._fetch_failed(code, stderr)
        self._keep_few_packs()

    def packs(self) -> int:
        """How many packs the mirror holds (`git count-objects -v`)."""
        counts = dict(line.split(": ", 1) for line in self._run("count-objects", "-v")[1].splitlines() if ": " in line)
        return int(counts.get("packs", "0"))

    def _keep_few_packs(self) -> None:
        if self.packs() <= MAX_PACKS:
            return
        code, _, stderr = self._run("repack", "-a", "-d", "-q", "--no-write-bitmap-index", check=False)
        if code != 0:
            raise TreeError(f"tree {self.tree.name}: git repack of its {MAX_PACKS}+ packs failed (exit {code}): "
                            f"{_last_line(stderr)}{self._bound_hint() if PRLIMIT else ''}")

    def _bound_hint(self) -> str:
        return f" (each file git writes is bounded by file_mib = {self.tree.bounds.file_mib} MiB)"

    def _fetch_failed(self, code: int, stderr: str) -> TreeError:
        # a pack cut at file_mib shows as index-pack (or unpack-objects) dying: say which bound
        hint = self._bound_hint() if PRLIMIT and ("index-pack" in stderr or "unpack-objects" in stderr) else ""
        return TreeError(f"tree {self.tree.name}: git fetch {self.tree.url} {self.tree.branch} failed "
                         f"(exit {code}): {_last_line(stderr)}{hint}")

    def start_walk(self) -> bool:
        if not self._has(TIP):
            return False
        tip = self._run("rev-parse", "--verify", f"{TIP}^{{commit}}")[1].strip()
        if self._has(DONE) and self._run("rev-parse", "--verify", f"{DONE}^{{commit}}")[1].strip() == tip:
            return False
        self._run("update-ref", WALK, tip)
        return True

    def walking(self) -> bool:
        return self._has(WALK)

    def commits(self, skip: int, take: int) -> list[TreeCommit]:
        shas = self._walk_shas(skip, take)
        return self._read_commits(shas) if shas else []

    def finish_walk(self) -> None:
        tip = self._run("rev-parse", "--verify", f"{WALK}^{{commit}}")[1].strip()
        self._run("update-ref", DONE, tip)
        self._run("update-ref", "-d", WALK)

    # reading
    def _walk_shas(self, skip: int, take: int) -> list[str]:
        """`take` shas after `skip` of the walk, oldest first, read as git writes them: the rest of
        a long walk is never held in memory."""
        args = ["rev-list", "--reverse", "--topo-order", WALK]
        if self._has(DONE):
            args.append(f"^{DONE}")
        shas: list[str] = []
        with self._process(self._argv(*args)) as process:
            assert process.stdout is not None
            for number, line in enumerate(process.stdout):
                if number >= skip + take:
                    break
                if number >= skip:
                    shas.append(line.decode("ascii", "replace").strip())
            finished = len(shas) < take
            if finished:
                err = process.stderr.read(64 * 1024) if process.stderr else b""
                if process.wait() != 0:
                    raise TreeError(f"tree {self.tree.name}: git rev-list failed (exit {process.returncode}): "
                                    f"{_last_line(err.decode('utf-8', 'replace'))}")
        return shas

    def _read_commits(self, shas: list[str]) -> list[TreeCommit]:
        """Each commit through one `git cat-file --batch`, at most message_kib of each kept."""
        limit = self.tree.bounds.message_kib * 1024
        commits = []
        with self._process(self._argv("cat-file", "--batch"), stdin=subprocess.PIPE) as process:
            assert process.stdin is not None and process.stdout is not None
            for sha in shas:
                process.stdin.write(sha.encode("ascii") + b"\n")
                process.stdin.flush()
                header = process.stdout.readline().split()
                if len(header) != 3 or header[1] != b"commit":
                    raise TreeError(f"tree {self.tree.name}: {sha} is not a commit in the mirror")
                data, size = _read_at_most(process.stdout, int(header[2]), limit)
                process.stdout.read(1)  # the newline after each object
                commits.append(TreeCommit(sha, parse_commit_object(data), cut=size > limit))
        return commits


def _read_at_most(stream: IO[bytes], size: int, limit: int) -> tuple[bytes, int]:
    """The first `limit` of `size` bytes; the rest read in chunks and dropped (memory stays bounded)."""
    kept = stream.read(min(size, limit))
    left = size - len(kept)
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        left -= len(chunk)
    return kept, size


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1][:_ERROR_CHARS] if lines else "no message").replace("\n", " ")
