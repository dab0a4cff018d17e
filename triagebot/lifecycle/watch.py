"""Lifecycle stage: the git trees rules/trees.toml names — fetched on their interval, their new
commits read (oldest first, `commits_per_pass` a pass) for a fix or a revert of a report's culprit
(detect.commit_move): fixed or reverted in the regression's own tree, fix-queued in a tree
upstream of it. A move is stored like a mail's (follow.record_move: once, with the Slack parent
edited), its cause the commit: `commit:TREE:SHA`.

The daemon fetches in the background (TreeFetches: threads that run git only); the commits a
fetch brought are read, and the moves stored, in the loop at the pass after it ended.

Where each tree is, is kept in the store's cursors (`daemon:tree:NAME`, JSON): when it was last
fetched, how far the walk in progress has read, the last outcome. A tree that fails (the fetch
refused, a timeout, a broken mirror) is logged and its failure kept there; the other trees, and
the rest of the daemon's pass, go on.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from triagebot.lifecycle.detect import commit_cause, commit_move
from triagebot.lifecycle.follow import record_move, targets
from triagebot.lifecycle.git_tree import GitTree
from triagebot.lifecycle.tree_protocol import TreeError, TreeReader
from triagebot.logs import event
from triagebot.rules.trees import DEFAULT_REGRESSION_TREE, TreeRules, WatchedTree
from triagebot.store.lifecycle_protocol import LifecycleMove
from triagebot.store.protocol import Store, utc_text

log = logging.getLogger("triagebot.lifecycle")

CURSOR_PREFIX = "daemon:tree:"  # beside daemon:last-poll: (ingest/runner.py)


@dataclass(frozen=True)
class TreePass:
    """One tree's share of a pass: what it read and moved, or why it failed."""

    tree: str
    fetched: bool = False
    read: int = 0  # commits read
    moves: tuple[LifecycleMove, ...] = ()
    error: str | None = None


def tree_state(store: Store, tree: str) -> dict:
    """The tree's cursor: fetched_at, walked, outcome, error, … ({} before its first pass)."""
    raw = store.get_cursor(CURSOR_PREFIX + tree)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


def _due(state: dict, tree: WatchedTree, now: datetime) -> bool:
    fetched = state.get("fetched_at")
    if not isinstance(fetched, str):
        return True
    try:
        last = datetime.fromisoformat(fetched)
    except ValueError:
        return True
    return now - last >= timedelta(minutes=tree.bounds.every_minutes)


class TreeFetches:
    """The trees' fetches, each in a thread beside the daemon's loop, so a slow or hanging server
    holds nothing but its own tree (at most its fetch_seconds). The threads run git only; the
    store, the walk and the moves stay the loop's."""

    def __init__(self, reader_for: Callable[[WatchedTree, Path], TreeReader] = GitTree, workers: int = 2) -> None:
        self._reader_for = reader_for
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tree-fetch")
        self._running: dict[str, tuple[TreeReader, Future[None]]] = {}

    def start(self, tree: WatchedTree, state_dir: Path, since: datetime) -> None:
        reader = self._reader_for(tree, state_dir)
        self._running[tree.name] = (reader, self._pool.submit(reader.fetch, since))

    def running(self, name: str) -> bool:
        item = self._running.get(name)
        return item is not None and not item[1].done()

    def finished(self, name: str) -> Future[None] | None:
        """The tree's fetch that ended since the last look (its result() raises its error), once."""
        item = self._running.get(name)
        if item is None or not item[1].done():
            return None
        del self._running[name]
        return item[1]

    def wait(self, name: str) -> None:
        """Until the tree's fetch in flight ends (for `--once` and tests)."""
        item = self._running.get(name)
        if item is not None:
            futures.wait([item[1]])

    def close(self) -> None:
        """Stop the fetches in flight (their git killed) and the threads."""
        for reader, _future in self._running.values():
            reader.stop()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _fetch(tree: WatchedTree, reader: TreeReader, state: dict, now: datetime, state_dir: Path,
           fetches: TreeFetches | None) -> bool:
    """Fetch the tree if due — here, or in the background with `fetches`; start a walk of what a
    fetch brought. Whether a fetch ended in this pass (raises what a failed fetch raised)."""
    since = now - timedelta(days=tree.bounds.first_days)
    fetched = False
    if fetches is None:
        if _due(state, tree, now):
            state["fetched_at"] = utc_text(now)  # tried: a failing tree waits its interval too
            reader.fetch(since)
            fetched = True
    else:
        done = fetches.finished(tree.name)
        if done is not None:
            done.result()
            fetched = True
        elif _due(state, tree, now) and not fetches.running(tree.name):
            state["fetched_at"] = utc_text(now)
            fetches.start(tree, state_dir, since)
    if fetched and not reader.walking() and reader.start_walk():
        state["walked"] = 0
    return fetched


def watch_tree(store: Store, tree: WatchedTree, reader: TreeReader, now: datetime, *, state_dir: Path | None = None,
               fetches: TreeFetches | None = None, rules: TreeRules | None = None) -> TreePass:
    """Fetch the tree if due (in the background with `fetches`: its commits are read at the
    pass after it ends), then read up to `commits_per_pass` of its new commits."""
    state = tree_state(store, tree.name)
    fetched = False
    try:
        fetched = _fetch(tree, reader, state, now, state_dir or Path("."), fetches)
        if not reader.walking():
            state.update(outcome="ok", error=None)
            return TreePass(tree.name, fetched)
        walked = int(state.get("walked") or 0)
        commits = reader.commits(walked, tree.bounds.commits_per_pass)
        moves = _moves(store, tree, commits, rules or TreeRules((tree,), tree.name))  # alone: its own
        state["walked"] = walked + len(commits)
        if commits:
            state["last_commit"] = commits[-1].sha
        if len(commits) < tree.bounds.commits_per_pass:
            reader.finish_walk()
            state["walked"] = 0
        state.update(outcome="ok", error=None)
        return TreePass(tree.name, fetched, len(commits), tuple(moves))
    except Exception as error:  # noqa: BLE001 - one tree's failure, of any kind, is its own
        expected = isinstance(error, (TreeError, OSError))  # else a bug: its traceback is logged
        message = str(error) if isinstance(error, TreeError) else f"tree {tree.name}: {error}"
        state.update(outcome="error", error=message)
        event(log, logging.WARNING if expected else logging.ERROR, "tree failed: the other trees go on",
              event="tree.failed", tree=tree.name, url=tree.url, error=message, exc_info=not expected)
        return TreePass(tree.name, fetched, error=message)
    finally:
        store.set_cursor(CURSOR_PREFIX + tree.name, json.dumps(state, sort_keys=True))


def _moves(store: Store, tree: WatchedTree, commits: Sequence, rules: TreeRules) -> list[LifecycleMove]:
    followed = targets(store, rules)
    made = []
    for commit in commits:
        for row, target in followed:
            move = commit_move(commit.message, target, tree.name, rules.relation(tree.name, target.tree), commit.sha)
            if move is None:
                continue
            stored = record_move(store, row, move, commit_cause(tree.name, commit.sha))
            if stored is not None:
                made.append(stored)
    if commits:
        event(log, logging.INFO, "tree read", event="tree.read", tree=tree.name, commits=len(commits),
              moves=len(made), last=commits[-1].sha)
    return made


def watch_trees(store: Store, trees: Sequence[WatchedTree], state_dir: Path, now: datetime,
                reader_for: Callable[[WatchedTree, Path], TreeReader] = GitTree,
                fetches: TreeFetches | None = None, rules: TreeRules | None = None) -> list[TreePass]:
    """Each tree's share of a pass, one after the other; one tree's failure is its own. Without
    `fetches` each due tree is fetched here, in turn; with them, in the background. `rules` say
    where regressions live and which tree is upstream of which (rules/trees.py); without them
    regressions live in `mainline` when it is one of the trees, else in the first."""
    if rules is None:
        names = [tree.name for tree in trees]
        rules = TreeRules(tuple(trees), DEFAULT_REGRESSION_TREE if DEFAULT_REGRESSION_TREE in names or not names
                          else names[0])
    return [watch_tree(store, tree, reader_for(tree, state_dir), now, state_dir=state_dir, fetches=fetches,
                       rules=rules) for tree in trees]
