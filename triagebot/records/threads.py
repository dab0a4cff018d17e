"""Threading rules, one set for the store and for display: which parent edges a message's
headers give, and which id a thread hangs from.

A message's parent is its In-Reply-To, else the last entry of its References; References
lists the ancestors oldest first. The store (store/part_threads.py) keeps every edge,
placeholders included; a display of some messages (parse/thread.py) hangs each message from
its nearest present ancestor along the same edges.

In the store, a thread is the connected set of every id linked by In-Reply-To / References, including ids of
messages never seen (placeholders), so a child stored before its parent, or beside a parent
that never arrives, still lands in the right thread. The root is computed from that set alone,
so it does not depend on the order the messages arrived in.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence


def parent_edges(message_id: str, in_reply_to: str | None,
                 references: Sequence[str]) -> list[tuple[str, str]]:
    """(child, parent) pairs the headers state, self-links and repeats dropped.

    References lists the ancestors oldest first, so each entry is the parent of the next one;
    the message's own parent is In-Reply-To when present (it names the message answered),
    else the last References entry.
    """
    child = normalize_message_id(message_id)
    chain: list[str] = []
    for reference in references:
        if not reference or not reference.strip():
            continue
        value = normalize_message_id(reference)
        # A loop in References (an id repeated, or the message itself) would make the chain
        # claim an id is its own ancestor; the first place an id appears is kept.
        if value != child and value not in chain:
            chain.append(value)
    edges: list[tuple[str, str]] = []
    for ancestor, later in zip(chain, chain[1:], strict=False):
        edges.append((later, ancestor))
    parent = normalize_message_id(in_reply_to) if in_reply_to and in_reply_to.strip() else None
    if parent == child:
        parent = None
    if parent is None and chain:
        parent = chain[-1]
    if parent is not None:
        edges.append((child, parent))
    return list(dict.fromkeys(edges))


def choose_root(members: Iterable[str], edges: Iterable[tuple[str, str]]) -> str:
    """The id a thread hangs from.

    Candidates are the members with no parent inside the thread; when a loop leaves none,
    every member is a candidate. The candidate most members descend from wins, ties going to
    the smallest id, so the answer is the same whatever order the edges were learnt in.
    """
    member_set = set(members)
    if not member_set:
        raise ValueError("a thread has at least one member")
    children: dict[str, set[str]] = {}
    has_parent: set[str] = set()
    for child, parent in edges:
        if child in member_set and parent in member_set and child != parent:
            children.setdefault(parent, set()).add(child)
            has_parent.add(child)
    candidates = sorted(member_set - has_parent) or sorted(member_set)
    if len(candidates) == 1:
        return candidates[0]
    return min(candidates, key=lambda candidate: (-_descendant_count(candidate, children),
                                                  candidate))


def _descendant_count(start: str, children: dict[str, set[str]]) -> int:
    seen = {start}
    pending = [start]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in seen:  # the visited set is what keeps a loop from spinning
                seen.add(child)
                pending.append(child)
    return len(seen) - 1


def normalize_message_id(message_id: str) -> str:
    """`<id@host>` or ` id@host ` -> `id@host`; raises ValueError on an empty id."""
    value = message_id.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1].strip()
    if not value:
        raise ValueError(f"empty Message-ID {message_id!r}")
    return value
