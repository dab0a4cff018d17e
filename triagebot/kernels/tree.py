"""Kernel builds: the local clone of a kernel tree (trees.toml's [[kernel_tree]]), its commits,
and the worktrees builds check them out in.

The clone is bare, CACHE/trees/NAME.git, its branch kept at refs/triage/tip. The first fetch goes
`first_days` back (`--shallow-since`; the tip alone when nothing is that recent), as a watched
tree's does; a commit asked for that the clone lacks is looked for by fetching the branch again,
the tag of that name, then by deepening the clone `commits_per_pass` commits at a time
(at most MAX_DEEPEN times), each fetch bounded by the tree's `fetch_seconds` and `file_mib`.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.kernels.git import Git, GitError, end_of_options
from triagebot.rules.hosts import is_commit_ref
from triagebot.rules.trees import KernelTree

TIP = "refs/triage/tip"
MAX_DEEPEN = 8  # deepenings tried for one commit before it is called absent
_SHA = re.compile(r"[0-9a-f]{40}")
_NO_SHALLOW_COMMITS = "no commits selected for shallow requests"


class CommitNotFound(TriageError):
    """A commit asked for is not in the kernel tree (after fetching and deepening)."""


class KernelClone:
    """A kernel tree's bare clone under `cache_dir`/trees."""

    def __init__(self, tree: KernelTree, cache_dir: Path) -> None:
        self.tree = tree
        self.path = cache_dir / "trees" / f"{tree.name}.git"
        self.git = Git(git_dir=self.path, home=self.path.parent, timeout=tree.bounds.fetch_seconds,
                       file_mib=tree.bounds.file_mib, what=f"kernel tree {tree.name}")

    def _fetch(self, *options: str, refspec: str | None = None) -> tuple[int, str]:
        spec = refspec or f"+refs/heads/{self.tree.branch}:{TIP}"
        result = self.git.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                              "--no-auto-maintenance", "--no-recurse-submodules", *options, "--", self.tree.url, spec,
                              check=False)
        return result.returncode, result.stderr

    def fetch(self) -> None:
        """Make the clone if it is not there, else bring its branch up to date."""
        if not (self.path / "HEAD").is_file():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.git.run("init", "--bare", "--quiet", "--template=")
        if self._has(TIP):
            code, stderr = self._fetch()
        else:
            since = datetime.now(UTC) - timedelta(days=self.tree.bounds.first_days)
            code, stderr = self._fetch(f"--shallow-since={since.strftime('%Y-%m-%d %H:%M:%S %z')}")
            if code != 0 and _NO_SHALLOW_COMMITS in stderr:
                code, stderr = self._fetch("--depth=1")
        if code != 0:
            raise GitError(f"kernel tree {self.tree.name}: git fetch {self.tree.url} {self.tree.branch} failed "
                           f"(exit {code}): {stderr.strip().splitlines()[-1:] or ['no message']}")

    def _has(self, ref: str) -> bool:
        return self.git.run("rev-parse", "--verify", "--quiet", *end_of_options([f"{ref}^{{commit}}"]),
                            check=False).returncode == 0

    def _sha(self, ref: str) -> str | None:
        result = self.git.run("rev-parse", "--verify", "--quiet", *end_of_options([f"{ref}^{{commit}}"]),
                              check=False)
        text = result.stdout.strip()
        return text if result.returncode == 0 and _SHA.fullmatch(text) else None

    def _shallow(self) -> bool:
        return (self.path / "shallow").is_file()

    def resolve(self, ref: str) -> str:
        """The full sha of `ref` (a sha, tag or ref, `^`/`~N` allowed), fetching what is needed."""
        if not is_commit_ref(ref):
            raise CommitNotFound(f"{ref!r} is not a commit id or ref name")
        if not (self.path / "HEAD").is_file():
            self.fetch()
        found = self._sha(ref)
        if found is None:
            self.fetch()
            found = self._sha(ref)
        name = re.sub(r"(\^|~\d+)$", "", ref)
        if found is None and not re.fullmatch(r"[0-9a-f]{7,40}", name):  # a tag by that name
            self._fetch("--depth=1" if self._shallow() else "--quiet", refspec=f"+refs/tags/{name}:refs/tags/{name}")
            found = self._sha(ref)
        deepened = 0
        while found is None and self._shallow() and deepened < MAX_DEEPEN:
            code, stderr = self._fetch(f"--deepen={self.tree.bounds.commits_per_pass}")
            if code != 0:
                raise GitError(f"kernel tree {self.tree.name}: deepening the clone failed (exit {code}): "
                               f"{stderr.strip().splitlines()[-1:] or ['no message']}")
            deepened += 1
            found = self._sha(ref)
        if found is None:
            raise CommitNotFound(f"{ref} is not a commit of kernel tree {self.tree.name} ({self.tree.url} "
                                 f"{self.tree.branch}, fetched {'shallow' if self._shallow() else 'whole'})")
        return found

    def commits_between(self, good: str, bad: str) -> list[str]:
        """The commits after good up to bad, oldest first, first parents only (a bisection's range)."""
        good_sha, bad_sha = self.resolve(good), self.resolve(bad)
        deepened = 0
        while self.git.run("merge-base", "--is-ancestor", *end_of_options([good_sha, bad_sha]),
                           check=False).returncode != 0:
            if not self._shallow() or deepened >= MAX_DEEPEN:
                raise CommitNotFound(f"{good} is not an ancestor of {bad} in kernel tree {self.tree.name}")
            self._fetch(f"--deepen={self.tree.bounds.commits_per_pass}")
            deepened += 1
        return self.git.lines("rev-list", "--reverse", "--first-parent", *end_of_options([f"{good_sha}..{bad_sha}"]))

    def subject(self, sha: str) -> str:
        """The commit's subject line."""
        return self.git.run("log", "-1", "--format=%s", *end_of_options([sha])).stdout.strip()

    def check_out(self, worktree: Path, sha: str) -> None:
        """`worktree` at `sha`: made on first use, else moved there (only changed files are touched,
        so the build directory beside it stays valid and the next build is incremental)."""
        if not _SHA.fullmatch(sha):
            raise ValueError(f"{sha!r} is not a full commit sha")
        if (worktree / ".git").exists():
            tree = Git(work_tree=worktree, home=self.path.parent, timeout=self.git.timeout,
                       file_mib=self.git.file_mib, what=f"kernel tree {self.tree.name}")
            tree.run("checkout", "--quiet", "--force", "--detach", sha)  # a full sha: never read as an option
            return
        worktree.parent.mkdir(parents=True, exist_ok=True)
        self.git.run("worktree", "prune")
        self.git.run("worktree", "add", "--quiet", "--force", "--detach", "--", str(worktree), sha)

    def remove_worktree(self, worktree: Path) -> None:
        self.git.run("worktree", "remove", "--force", "--", str(worktree), check=False)
        self.git.run("worktree", "prune", check=False)
