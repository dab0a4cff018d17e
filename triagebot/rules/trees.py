"""Rules: `rules/trees.toml`, the git trees the daemon fetches to see a fix or a revert land
(triagebot/lifecycle/watch.py), and the bounds on each tree's share of a pass.

    [bounds]                  # every tree's, unless its entry says otherwise; defaults as shown
    every_minutes = 60        # how often a tree is fetched
    commits_per_pass = 2000   # commits read in one pass; the rest at the next pass
    fetch_seconds = 300       # a fetch (or a walk) taking longer is stopped and reported
    message_kib = 64          # a commit's first KiB read; the rest of a longer message is ignored
    first_days = 30           # the first fetch goes this far back (a shallow mirror)
    file_mib = 4096           # no file git writes in the mirror (a pack) may be larger

    regression_tree = "mainline"  # the tree a regression lives in (default "mainline"), unless
                              # its culprit's tree is another [[tree]] here (by URL)

    [[tree]]
    name = "mainline"         # names the mirror (STATE/trees/mainline.git) and the moves it causes
    url = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"
    branch = "master"
    every_minutes = 30        # optional: any key of [bounds]

    [[tree]]
    name = "linux-next"
    url = "https://git.kernel.org/pub/scm/linux/kernel/git/next/linux-next.git"
    branch = "master"
    upstream_of = ["mainline"]  # a fix here is on its way to these trees: fix-queued, not fixed

A URL is https, http, git or file; nothing else (no ssh, no `ext::`: a transport that runs a
command is never named by a rules file). What a fix's commit in a tree means for a report
(`relation`, as regzbot reads it): in the regression's own tree it is fixed (or reverted); in a
tree `upstream_of` the regression's, the fix is queued; any other tree says nothing about it.
`upstream_of` names other [[tree]]s, never the tree itself, with no cycle; `regression_tree`
names a [[tree]] whenever there is one.

The same file names the kernel trees a host with a `switcher` builds its kernels from
(triagebot/kernels), fetched with the same [bounds] (a kernel tree's clone deepens by
`commits_per_pass` at a time when a commit asked for is older than its first fetch), and where
and how those kernels are built:

    [[kernel_tree]]
    name = "linux"            # hosts.toml's `kernel_tree` names it (default: the only one)
    url = "file:///srv/git/linux.git"
    branch = "master"

    [kernel_builds]           # defaults as shown
    cache_dir = ""            # "": $XDG_CACHE_HOME/triagebot/kernels (else ~/.cache/triagebot/kernels)
    max_cache_gib = 20        # built kernels kept, least recently used evicted past it
    max_work_dirs = 3         # worktree + build directory pairs kept, one per (tree, arch, config)
    build_seconds = 7200      # one build, stopped and reported past it
    jobs = 0                  # make -j; 0: the machine's CPUs
    ccache = true             # compile through ccache when it is installed
    ccache_dir = ""           # "": CACHE_DIR/ccache
    log_kib = 256             # the last KiB of a build's output kept with the run
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from triagebot.errors import RulesError
from triagebot.rules.loader import RulesFile, Section, read_file

TREES_FILE = "trees.toml"
URL_SCHEMES = ("https", "http", "git", "file")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_URL = re.compile(r"^(?:https?|git)://[A-Za-z0-9.\[\]:-]+(?::\d+)?(?:/[^\s]*)?$|^file:///[^\s]*$")
# a branch as `git check-ref-format --branch` takes it, and no option-looking or odd names
_BRANCH = re.compile(r"^(?!-)(?!/)(?!.*\.\.)(?!.*//)(?!.*@\{)(?!.*\.lock$)(?!.*/$)(?!.*\.$)[A-Za-z0-9._/-]{1,200}$")


@dataclass(frozen=True)
class TreeBounds:
    every_minutes: float = 60.0  # how often the tree is fetched
    commits_per_pass: int = 2000  # commits read in one pass; the rest at the next
    fetch_seconds: float = 300.0  # one fetch, or one walk, at most this long: stopped and reported
    message_kib: int = 64  # a commit is read this far; a longer message is cut
    first_days: float = 30.0  # the first fetch's history (git fetch --shallow-since)
    file_mib: int = 4096  # no file git writes (a pack) larger: prlimit --fsize; the fetch fails past it


@dataclass(frozen=True)
class WatchedTree:
    name: str
    url: str
    branch: str
    bounds: TreeBounds = TreeBounds()
    upstream_of: tuple[str, ...] = ()  # the trees a commit here is on its way to (linux-next: mainline)


DEFAULT_REGRESSION_TREE = "mainline"  # where a regression lives unless its culprit's tree is another
OWN, UPSTREAM = "own", "upstream"  # a commit's tree against a regression's (see `relation`)


@dataclass(frozen=True)
class KernelTree:
    """A kernel tree a switcher builds from: cloned under the kernel cache, fetched within `bounds`."""

    name: str
    url: str
    branch: str
    bounds: TreeBounds = TreeBounds()


@dataclass(frozen=True)
class KernelBuilds:
    """Where and how kernels are built (trees.toml's [kernel_builds])."""

    cache_dir: str | None = None  # None: $XDG_CACHE_HOME/triagebot/kernels
    max_cache_gib: float = 20.0
    max_work_dirs: int = 3
    build_seconds: float = 7200.0
    jobs: int = 0  # 0: os.cpu_count()
    ccache: bool = True
    ccache_dir: str | None = None  # None: CACHE_DIR/ccache
    log_kib: int = 256


_BOUND_KEYS = ("every_minutes", "commits_per_pass", "fetch_seconds", "message_kib", "first_days", "file_mib")


@dataclass(frozen=True)
class TreeRules:
    """The watched trees and where regressions live: what a fix's commit in a tree means."""

    trees: tuple[WatchedTree, ...] = ()
    regression_tree: str = DEFAULT_REGRESSION_TREE

    def regression_tree_of(self, culprit_tree_url: str | None) -> str:
        """The tree a regression lives in: the watched tree its culprit's tree is (by URL, in
        either of kernel.org's spellings), else `regression_tree`."""
        wanted = same_repository(culprit_tree_url) if culprit_tree_url else None
        found = next((tree.name for tree in self.trees if wanted and same_repository(tree.url) == wanted), None)
        return found or self.regression_tree

    def relation(self, commit_tree: str, regression_tree: str) -> str | None:
        """OWN when a commit in `commit_tree` lands in the regression's own tree, UPSTREAM when that
        tree is upstream of it (the fix is queued), None when the tree says nothing about it."""
        if commit_tree == regression_tree:
            return OWN
        tree = next((tree for tree in self.trees if tree.name == commit_tree), None)
        return UPSTREAM if tree is not None and regression_tree in tree.upstream_of else None


def same_repository(url: str) -> str:
    """A repository URL as compared: no scheme, no `.git` or `/` at the end, lower case, and
    kernel.org's `cgit/` and `pub/scm/` paths as one (LKP writes the first, git remotes the second)."""
    text = re.sub(r"^[a-z+]+://", "", url.strip().lower()).rstrip("/").removesuffix(".git")
    return re.sub(r"^git\.kernel\.org/(?:cgit|pub/scm)/", "git.kernel.org/", text)


def _bounds(section: Section, base: TreeBounds) -> TreeBounds:
    return replace(
        base,
        every_minutes=section.number("every_minutes", base.every_minutes, 0, 7 * 24 * 60),
        commits_per_pass=section.whole("commits_per_pass", base.commits_per_pass, 1, 1_000_000),
        fetch_seconds=section.number("fetch_seconds", base.fetch_seconds, 0, 24 * 3600, above=True),
        message_kib=section.whole("message_kib", base.message_kib, 1, 16 * 1024),
        first_days=section.number("first_days", base.first_days, 0, 3650, above=True),
        file_mib=section.whole("file_mib", base.file_mib, 1, 1024 * 1024))


_BUILD_KEYS = ("cache_dir", "max_cache_gib", "max_work_dirs", "build_seconds", "jobs", "ccache", "ccache_dir",
               "log_kib")


def _directory(section: Section, key: str) -> str | None:
    """An absolute directory (`~` expanded), or None for "" (the default)."""
    value = section.text(key, "")
    if not value:
        return None
    expanded = str(Path(value).expanduser())
    if not expanded.startswith("/") or "/../" in expanded + "/" or any(char in expanded for char in ", \t\n"):
        section.fail(f"{key} must be an absolute directory without '..', commas or spaces, not {value!r}", key)
    return expanded.rstrip("/") or "/"


def kernel_builds_from(file: RulesFile) -> KernelBuilds:
    """trees.toml's [kernel_builds], defaults where absent."""
    section = file.table("kernel_builds")
    section.check_keys(_BUILD_KEYS)
    return KernelBuilds(
        cache_dir=_directory(section, "cache_dir"),
        max_cache_gib=section.number("max_cache_gib", 20.0, 0, 1 << 20, above=True),
        max_work_dirs=section.whole("max_work_dirs", 3, 1, 64),
        build_seconds=section.number("build_seconds", 7200.0, 0, 7 * 24 * 3600, above=True),
        jobs=section.whole("jobs", 0, 0, 4096),
        ccache=section.boolean("ccache", True),
        ccache_dir=_directory(section, "ccache_dir"),
        log_kib=section.whole("log_kib", 256, 1, 64 * 1024))


def _checked_tree(entry: Section, taken: set[str]) -> tuple[str, str, str]:
    """An entry's name, url and branch, each validated."""
    name = entry.string("name")
    if not _NAME.match(name):
        entry.fail(f"name must be lower-case letters, digits, - and _ (it names a folder), not {name!r}", "name")
    if name in taken:
        entry.fail(f"name {name!r} is given twice", "name")
    url = entry.string("url")
    if not _URL.match(url):
        entry.fail(f"url must be an {', '.join(URL_SCHEMES)} URL (scheme://host/path), not {url!r}", "url")
    branch = entry.string("branch")
    if not _BRANCH.match(branch):
        entry.fail(f"branch must be a branch name (letters, digits, . _ / -), not {branch!r}", "branch")
    return name, url, branch


def kernel_trees_from(file: RulesFile) -> tuple[KernelTree, ...]:
    """trees.toml's [[kernel_tree]] entries, each with the file's [bounds] unless it says otherwise."""
    bounds = _bounds(file.table("bounds"), TreeBounds())
    trees: list[KernelTree] = []
    for entry in file.entries("kernel_tree", label="name"):
        entry.check_keys(("name", "url", "branch", *_BOUND_KEYS))
        name, url, branch = _checked_tree(entry, {tree.name for tree in trees})
        trees.append(KernelTree(name, url, branch, _bounds(entry, bounds)))
    return tuple(trees)


def trees_from(file: RulesFile) -> tuple[WatchedTree, ...]:
    return tree_rules_from(file).trees


def tree_rules_from(file: RulesFile) -> TreeRules:
    top = file.top()
    top.check_keys(("bounds", "tree", "regression_tree", "kernel_tree", "kernel_builds"))
    bounds_section = file.table("bounds")
    bounds_section.check_keys(_BOUND_KEYS)
    bounds = _bounds(bounds_section, TreeBounds())
    trees: list[WatchedTree] = []
    entries = file.entries("tree", label="name")
    for entry in entries:
        entry.check_keys(("name", "url", "branch", "upstream_of", *_BOUND_KEYS))
        name, url, branch = _checked_tree(entry, {tree.name for tree in trees})
        upstream_of = entry.strings("upstream_of", pattern=_NAME, what="tree names")
        if name in upstream_of:
            entry.fail(f"upstream_of names the tree itself ({name!r})", "upstream_of")
        trees.append(WatchedTree(name, url, branch, _bounds(entry, bounds), upstream_of))
    names = {tree.name for tree in trees}
    for tree, entry in zip(trees, entries, strict=True):
        unknown = [other for other in tree.upstream_of if other not in names]
        if unknown:
            entry.fail(f"upstream_of names {', '.join(map(repr, unknown))}: no [[tree]] of this file", "upstream_of")
        if _reaches(trees, tree.name):
            entry.fail(f"upstream_of makes a cycle through {tree.name!r}: a tree cannot be upstream of itself",
                       "upstream_of")
    regression_tree = top.string("regression_tree", DEFAULT_REGRESSION_TREE)
    if trees and regression_tree not in names:
        given = "regression_tree" in top
        top.fail(f"regression_tree {regression_tree!r}{'' if given else ' (the default)'} is no [[tree]] of this "
                 f"file: name the tree regressions live in (where a fix makes a report fixed)",
                 "regression_tree" if given else None)
    return TreeRules(tuple(trees), regression_tree)


def _reaches(trees: list[WatchedTree], start: str) -> bool:
    """Whether following upstream_of from `start` comes back to it."""
    downstream = {tree.name: tree.upstream_of for tree in trees}
    seen, todo = set(), list(downstream.get(start, ()))
    while todo:
        name = todo.pop()
        if name == start:
            return True
        if name not in seen:
            seen.add(name)
            todo.extend(downstream.get(name, ()))
    return False


def load_tree_rules(rules_dir: Path) -> TreeRules:
    """`rules_dir/trees.toml`'s trees and regression tree; none watched when the file is absent.
    RulesError when invalid."""
    path = rules_dir / TREES_FILE
    return tree_rules_from(read_file(path)) if path.exists() else TreeRules()


def load_trees(rules_dir: Path) -> tuple[WatchedTree, ...]:
    """`rules_dir/trees.toml`'s trees; none when the file is absent. RulesError when invalid."""
    return load_tree_rules(rules_dir).trees


def load_kernel_trees(rules_dir: Path) -> tuple[tuple[KernelTree, ...], KernelBuilds]:
    """`rules_dir/trees.toml`'s kernel trees and build settings; none and the defaults when absent."""
    path = rules_dir / TREES_FILE
    if not path.exists():
        return (), KernelBuilds()
    file = read_file(path)
    return kernel_trees_from(file), kernel_builds_from(file)


__all__ = ["DEFAULT_REGRESSION_TREE", "OWN", "TREES_FILE", "UPSTREAM", "KernelBuilds", "KernelTree", "RulesError",
           "TreeBounds", "TreeRules", "WatchedTree", "kernel_builds_from", "kernel_trees_from", "load_kernel_trees",
           "load_tree_rules", "load_trees", "same_repository", "tree_rules_from", "trees_from"]
