"""Rules: `rules/trees.toml`, the git trees the daemon fetches to see a fix or a revert land
(triagebot/lifecycle/watch.py), and the bounds on each tree's share of a pass.

    [bounds]                  # every tree's, unless its entry says otherwise; defaults as shown
    every_minutes = 60        # how often a tree is fetched
    commits_per_pass = 2000   # commits read in one pass; the rest at the next pass
    fetch_seconds = 300       # a fetch (or a walk) taking longer is stopped and reported
    message_kib = 64          # a commit's first KiB read; the rest of a longer message is ignored
    first_days = 30           # the first fetch goes this far back (a shallow mirror)
    file_mib = 4096           # no file git writes in the mirror (a pack) may be larger

    [[tree]]
    name = "mainline"         # names the mirror (STATE/trees/mainline.git) and the moves it causes
    url = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"
    branch = "master"
    every_minutes = 30        # optional: any key of [bounds]

A URL is https, http, git or file; nothing else (no ssh, no `ext::`: a transport that runs a
command is never named by a rules file).
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


_BOUND_KEYS = ("every_minutes", "commits_per_pass", "fetch_seconds", "message_kib", "first_days", "file_mib")


def _bounds(section: Section, base: TreeBounds) -> TreeBounds:
    return replace(
        base,
        every_minutes=section.number("every_minutes", base.every_minutes, 0, 7 * 24 * 60),
        commits_per_pass=section.whole("commits_per_pass", base.commits_per_pass, 1, 1_000_000),
        fetch_seconds=section.number("fetch_seconds", base.fetch_seconds, 0, 24 * 3600, above=True),
        message_kib=section.whole("message_kib", base.message_kib, 1, 16 * 1024),
        first_days=section.number("first_days", base.first_days, 0, 3650, above=True),
        file_mib=section.whole("file_mib", base.file_mib, 1, 1024 * 1024))


def trees_from(file: RulesFile) -> tuple[WatchedTree, ...]:
    top = file.top()
    top.check_keys(("bounds", "tree"))
    bounds_section = file.table("bounds")
    bounds_section.check_keys(_BOUND_KEYS)
    bounds = _bounds(bounds_section, TreeBounds())
    trees: list[WatchedTree] = []
    for entry in file.entries("tree", label="name"):
        entry.check_keys(("name", "url", "branch", *_BOUND_KEYS))
        name = entry.string("name")
        if not _NAME.match(name):
            entry.fail(f"name must be lower-case letters, digits, - and _ (it names a folder), not {name!r}", "name")
        if any(tree.name == name for tree in trees):
            entry.fail(f"name {name!r} is given twice", "name")
        url = entry.string("url")
        if not _URL.match(url):
            entry.fail(f"url must be an {', '.join(URL_SCHEMES)} URL (scheme://host/path), not {url!r}", "url")
        branch = entry.string("branch")
        if not _BRANCH.match(branch):
            entry.fail(f"branch must be a branch name (letters, digits, . _ / -), not {branch!r}", "branch")
        trees.append(WatchedTree(name, url, branch, _bounds(entry, bounds)))
    return tuple(trees)


def load_trees(rules_dir: Path) -> tuple[WatchedTree, ...]:
    """`rules_dir/trees.toml`'s trees; none when the file is absent. RulesError when invalid."""
    path = rules_dir / TREES_FILE
    return trees_from(read_file(path)) if path.exists() else ()


__all__ = ["TREES_FILE", "RulesError", "TreeBounds", "WatchedTree", "load_trees", "trees_from"]
