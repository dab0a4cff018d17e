"""A real kernel git tree for the kernel tests and bench: Debian's linux-source-6.12 with a short
history of our own, one commit of which makes personality(2) slower.

The tarball becomes one commit through `git fast-import` (no work tree is ever written: about
a minute here, against minutes for `git add` of 86k files), then ten commits follow in the same
stream, each editing files read from the tarball on the way: harmless ones (documentation,
comments) around ONE that adds a fixed busy loop to personality(2), the syscall
`stress-ng --personality` calls 80 times a bogo-op and little else. A fixed instruction count,
not a delay: the same work on hardware, under QEMU and under UML.

Fixed authors and dates make the commit ids depend only on the tarball: the tree is made once
per tarball and kept in the tests' cache directory (`cache_root()`), where a second run finds it.

Debian's tarball has two traps (both handled): its top-level .gitignore ends with a block that
ignores every top-level path (Debian packaging), cut here; and the kernel's .gitignore ignores
dotfiles, which fast-import does not consult, so the upstream .gitignore files stay tracked.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
BRANCH = "master"
# Iterations of the busy loop the slow commit adds to personality(2): ~9 us of native work a
# call, on a syscall that costs ~0.3 us natively, ~0.35 us under QEMU TCG and ~22 us under UML.
SLOW_LOOP = 20000
SLOW_SUBJECT = "exec_domain: validate persona in personality(2)"
INNOCENT_SUBJECT = "mm/page_alloc: note the fixture in a trailing comment"
_EPOCH = 1700000000

_PERSONALITY_OLD = """SYSCALL_DEFINE1(personality, unsigned int, personality)
{
	unsigned int old = current->personality;
"""
_PERSONALITY_NEW = f"""/*
 * Validate the requested persona.  (Fixture regression: a busy loop of
 * {SLOW_LOOP} iterations, a few microseconds of CPU work on every call.)
 */
static noinline void personality_validate(unsigned int personality)
{{
	unsigned int i;

	for (i = 0; i < {SLOW_LOOP}; i++)
		barrier();
}}

SYSCALL_DEFINE1(personality, unsigned int, personality)
{{
	unsigned int old = current->personality;

	personality_validate(personality);
"""


def _append(text: str):
    return lambda old: old + text


def _slow(old: str) -> str:
    if _PERSONALITY_OLD not in old:
        raise ValueError("kernel/exec_domain.c has no personality(2) as expected: another kernel version?")
    return old.replace(_PERSONALITY_OLD, _PERSONALITY_NEW, 1)


# (subject, path, edit): oldest first. The slow commit is the sixth; the bisect range from the
# base holds all ten.
HISTORY = (
    ("README: note that this is a fixture tree", "README", _append("\nThis tree is a triagebot fixture.\n")),
    ("kernel/sys.c: name the syscalls in the header comment", "kernel/sys.c",
     _append("\n/* fixture: uname, getpid, setpriority and friends live here */\n")),
    ("docs: process/changes: a harmless edit", "Documentation/process/changes.rst",
     _append("\n.. fixture: a harmless change\n")),
    ("lib/string: a trailing comment", "lib/string.c", _append("\n/* fixture: a harmless comment */\n")),
    (INNOCENT_SUBJECT, "mm/page_alloc.c", _append("\n/* fixture: a harmless trailing comment */\n")),
    (SLOW_SUBJECT, "kernel/exec_domain.c", _slow),
    ("docs: admin-guide: a harmless edit", "Documentation/admin-guide/README.rst",
     _append("\n.. fixture: another harmless change\n")),
    ("MAINTAINERS: a harmless trailing line", "MAINTAINERS", _append("\n# fixture: a harmless line\n")),
    ("kernel/fork.c: a trailing comment", "kernel/fork.c", _append("\n/* fixture: a harmless comment */\n")),
    ("fs/open.c: a trailing comment", "fs/open.c", _append("\n/* fixture: a harmless comment */\n")),
)


@dataclass(frozen=True)
class FixtureTree:
    """The made tree: a bare repository and its commits by role."""

    path: Path  # the bare repository
    base: str  # the tarball's commit
    commits: tuple[str, ...]  # HISTORY's commits, oldest first
    slow: str
    innocent: str  # a commit that changes compiled code but not what it does

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    def to_json(self) -> dict:
        return {"base": self.base, "commits": list(self.commits), "slow": self.slow, "innocent": self.innocent}


def cache_root() -> Path:
    """Where the tests and bench keep what outlives a run: $TRIAGE_TEST_CACHE, else
    $XDG_CACHE_HOME/triagebot-tests, else ~/.cache/triagebot-tests."""
    named = os.environ.get("TRIAGE_TEST_CACHE")
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "triagebot-tests"


def missing() -> str | None:
    """Why the fixture tree cannot be made here, or None."""
    if not TARBALL.is_file():
        return f"{TARBALL} is absent (apt-get install linux-source-6.12)"
    for program in ("git", "xz"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    return None


def _data(out: IO[bytes], data: bytes) -> None:
    out.write(b"data %d\n" % len(data))
    out.write(data)
    out.write(b"\n")


def _stream(tar: IO[bytes], out: IO[bytes]) -> None:
    """The tarball as one commit, then HISTORY, as a fast-import stream."""
    wanted = {path for _, path, _ in HISTORY}
    kept: dict[str, bytes] = {}
    entries: list[tuple[bytes, int, str]] = []
    mark = 0
    with tarfile.open(fileobj=tar, mode="r|") as archive:
        for item in archive:
            parts = item.name.split("/", 1)
            if len(parts) < 2 or not parts[1]:
                continue
            path = parts[1]
            if item.isreg():
                handle = archive.extractfile(item)
                assert handle is not None
                data = handle.read()
                if path == ".gitignore":  # Debian's "ignore every top-level path" block
                    cut = data.find(b"#\n# Debian packaging")
                    data = data[:cut] if cut >= 0 else data
                if path in wanted:
                    kept[path] = data
                mode = b"100755" if item.mode & 0o111 else b"100644"
            elif item.issym():
                data, mode = item.linkname.encode(), b"120000"
            else:
                continue  # directories; the kernel tarball has no hard links
            mark += 1
            out.write(b"blob\nmark :%d\n" % mark)
            _data(out, data)
            entries.append((mode, mark, path))
    if wanted - set(kept):
        raise ValueError(f"{TARBALL} lacks {sorted(wanted - set(kept))}")
    stamp = _EPOCH
    out.write(b"commit refs/heads/%s\nmark :%d\n" % (BRANCH.encode(), mark + 1))
    out.write(b"author fixture <fixture@example.org> %d +0000\ncommitter fixture <fixture@example.org> %d +0000\n"
              % (stamp, stamp))
    _data(out, b"linux 6.12 (Debian linux-source-6.12) base\n")
    for mode, blob, path in entries:
        out.write(b"M %s :%d %s\n" % (mode, blob, path.encode()))
    out.write(b"\n")
    for number, (subject, path, edit) in enumerate(HISTORY, start=1):
        text = edit(kept[path].decode("utf-8"))
        kept[path] = text.encode("utf-8")
        stamp = _EPOCH + 3600 * number
        out.write(b"commit refs/heads/%s\n" % BRANCH.encode())
        out.write(b"author fixture <fixture@example.org> %d +0000\ncommitter fixture <fixture@example.org> %d +0000\n"
                  % (stamp, stamp))
        _data(out, subject.encode() + b"\n")
        out.write(b"M 100644 inline %s\n" % path.encode())
        _data(out, kept[path])
        out.write(b"\n")


def _git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repository), *args], check=True, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL).stdout


def build(repository: Path, tarball: Path = TARBALL) -> FixtureTree:
    """Make the bare repository at `repository` (replaced if there) from `tarball`."""
    shutil.rmtree(repository, ignore_errors=True)
    repository.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch", BRANCH, str(repository)], check=True)
    unpack = subprocess.Popen(["xz", "-dc", "--", str(tarball)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    # level-1 zlib and no delta search: the base is one pack written at disk speed
    load = subprocess.Popen(["git", "--git-dir", str(repository), "-c", "core.compression=1", "-c",
                             "pack.compression=1", "fast-import", "--quiet", "--depth=0"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert unpack.stdout is not None and load.stdin is not None
    try:
        _stream(unpack.stdout, load.stdin)
    finally:
        load.stdin.close()
        unpack.stdout.close()
    if load.wait() != 0 or unpack.wait() != 0:
        raise RuntimeError(f"fast-import of {tarball} failed (git {load.returncode}, xz {unpack.returncode})")
    shas = _git(repository, "rev-list", "--reverse", BRANCH).split()
    base, commits = shas[0], tuple(shas[1:])
    subjects = [subject for subject, _, _ in HISTORY]
    return FixtureTree(repository, base, commits, commits[subjects.index(SLOW_SUBJECT)],
                       commits[subjects.index(INNOCENT_SUBJECT)])


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # one maker at a time (xdist workers, a bench beside)
        yield


def fixture_tree(root: Path | None = None, tarball: Path = TARBALL) -> FixtureTree:
    """The fixture tree, made once per tarball under `root` (default `cache_root()`)."""
    root = root or cache_root()
    stat = tarball.stat()
    name = f"linux-fixture-{stat.st_size}-{int(stat.st_mtime)}"
    repository, record = root / f"{name}.git", root / f"{name}.json"
    with _locked(root / f"{name}.lock"):
        if record.is_file():
            data = json.loads(record.read_text())
            return FixtureTree(repository, data["base"], tuple(data["commits"]), data["slow"], data["innocent"])
        tree = build(repository, tarball)
        record.write_text(json.dumps(tree.to_json(), indent=1))
        return tree


PERSONALITY_REPORT = Path(__file__).resolve().parents[2] / "fixtures" / "kernels" / "personality-regression.eml"
REPORT_MESSAGE_ID = "20241203094107.persona1@ivarga-lab"


def report_text(tree: FixtureTree) -> bytes:
    """The personality report (our own figures) naming the tree's slow commit and its parent."""
    parent = tree.commits[tree.commits.index(tree.slow) - 1]
    return (PERSONALITY_REPORT.read_text().replace("{SUSPECT}", tree.slow[:12]).replace("{BASE}", parent[:12])
            .replace("{SUSPECT_SUBJECT}", SLOW_SUBJECT).encode())


def parent_of(tree: FixtureTree, commit: str) -> str:
    """The commit before `commit` in the tree's history (the base for its commits)."""
    shas = (tree.base, *tree.commits)
    return shas[shas.index(commit) - 1]


def write_kernel_rules(root: Path, tree: FixtureTree, project: Path, *, jobs: int = 2) -> Path:
    """The packaged rules as they ship (this-machine says switcher = "auto"), plus the fixture as
    the kernel tree, built under `root`/kernels with the shared ccache."""
    rules = root / "rules"
    shutil.copytree(project / "rules", rules)
    (rules / "trees.toml").write_text(f"""
[[kernel_tree]]
name = "fixture"
url = "{tree.url}"
branch = "{BRANCH}"

[kernel_builds]
cache_dir = "{root / 'kernels'}"
ccache_dir = "{cache_root() / 'ccache'}"
jobs = {jobs}
""")
    return rules


if __name__ == "__main__":
    made = fixture_tree()
    print(json.dumps({"path": str(made.path)} | made.to_json(), indent=1))
