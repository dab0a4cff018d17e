"""Lifecycle stage: which moves one message or one commit causes for one report. Pure: records
and text in.

What a patch or a commit says about a report (`fix_in`, the first that matches):
- a revert: its subject is `Revert "<the culprit's subject>"` (after `[PATCH …]` and `Re:`), or its
  own (unquoted) text says `This reverts commit <culprit sha>`;
- a fix: a `Fixes: <sha>` trailer naming the culprit (7 hex digits or more, either a prefix of
  the other), or, in a patch or commit (`[PATCH`, a Signed-off-by line, a diff), a
  `Closes:`/`Link:` trailer naming the report's Message-ID (a reply pointing at the report is
  not a fix).

A MAIL is a fix posted, not a fix landed (regzbot's meaning): a revert or a fix found in it moves
the report to fix-proposed, in any watched list, in the thread or not. Else, in the report's
thread only:
- invalid: a `#regzbot invalid` line (a person said so);
- fix proposed: a `[PATCH …]` message, or a diff in the writer's own text; once per series
  version (same_series_version): the cover letter or the first of its patches to arrive moves
  the report, the version's other mails do not, a later version moves it again.

A COMMIT of a watched tree (`commit_move`) lands the fix: in the regression's own tree it is
fixed (reverted, for a revert); in a tree upstream of it (linux-next for a mainline regression)
it is fix-queued; a tree with neither relation says nothing (rules/trees.py `relation`).

Quoted text never moves anything: a reply quoting the fix is not the fix.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from triagebot.lifecycle.states import LifecycleState
from triagebot.parse.objections import read_trailers
from triagebot.parse.patches import PatchMail
from triagebot.records.report import Report, Trailer
from triagebot.rules.trees import OWN, UPSTREAM

MIN_SHA = 7
_REVERTS = re.compile(r"^[ \t]*This reverts commit ([0-9a-f]{7,40})\b", re.MULTILINE)
_PREFIXES = re.compile(r"^\s*(?:(?:re|fwd?|aw)\s*:\s*|\[[^\]]*\]\s*)*", re.IGNORECASE)
_REVERT_SUBJECT = re.compile(r'^Revert\s+"(.+)"\s*$', re.IGNORECASE)
_SHA = re.compile(r"^([0-9a-f]{7,40})\b")


@dataclass(frozen=True)
class Target:
    """What a message is matched against: a report taken on, its culprit, and its thread."""

    key: str  # the report's Message-ID
    culprit: str | None  # the culprit's sha
    culprit_subject: str | None
    tree: str = ""  # the watched tree the regression lives in (rules/trees.py regression_tree_of)


@dataclass(frozen=True)
class Move:
    state: LifecycleState
    note: str  # what in the message caused it, in a few words


REVERT, FIX = "revert", "fix"


@dataclass(frozen=True)
class Found:
    """What a patch or a commit is to a report: a REVERT of its culprit or a FIX of it."""

    kind: str
    note: str

def same_commit(one: str, other: str) -> bool:
    """Two shas name the same commit: the shorter (7 digits at least) is a prefix of the longer."""
    one, other = one.lower(), other.lower()
    short, long = sorted((one, other), key=len)
    return len(short) >= MIN_SHA and long.startswith(short)


COMMIT_CAUSE = "commit:"  # a move caused by a commit of a watched tree: commit:TREE:SHA


def commit_cause(tree: str, sha: str) -> str:
    """The cause stored for a move a watched tree's commit made (lifecycle cause_id)."""
    return f"{COMMIT_CAUSE}{tree}:{sha}"


def commit_of_cause(cause_id: str) -> tuple[str, str] | None:
    """(tree, sha) of a commit cause; None for a Message-ID."""
    if not cause_id.startswith(COMMIT_CAUSE):
        return None
    tree, _, sha = cause_id[len(COMMIT_CAUSE):].partition(":")
    return (tree, sha) if tree and re.fullmatch(r"[0-9a-f]{7,64}", sha) else None


def cause_text(cause_id: str) -> str:
    """A cause as `triage show` prints it: `<message-id>`, or `commit SHA in TREE`."""
    commit = commit_of_cause(cause_id)
    return f"commit {commit[1]} in {commit[0]}" if commit else f"<{cause_id}>"


def bare_subject(subject: str) -> str:
    return _PREFIXES.sub("", subject).strip()


def _names_report(value: str, key: str) -> bool:
    return key.lower() in value.lower()


def fix_in(subject: str, trailers: tuple[Trailer, ...], own_text: str, target: Target, *,
           is_patch: bool) -> Found | None:
    """Whether a patch, a commit or a mail reverts or fixes the report (the module's first rules);
    `subject` is bare (bare_subject). Shared by mail (move_for) and a watched tree's commits (commit_move)."""
    culprit = target.culprit
    if culprit:
        reverted = _REVERT_SUBJECT.match(subject)
        if reverted and target.culprit_subject and bare_subject(reverted.group(1)) == bare_subject(
                target.culprit_subject):
            return Found(REVERT, f"revert of {culprit[:12]}: {subject}")
        for match in _REVERTS.finditer(own_text):
            if same_commit(match.group(1), culprit):
                return Found(REVERT, f"This reverts commit {match.group(1)}: {subject}")
    for trailer in trailers:
        if trailer.name == "Fixes" and culprit and (sha := _SHA.match(trailer.value.lower())):
            if same_commit(sha.group(1), culprit):
                return Found(FIX, f"Fixes: {sha.group(1)} in {subject}")
        if trailer.name in ("Closes", "Link") and is_patch and _names_report(trailer.value, target.key):
            return Found(FIX, f"{trailer.name}: the report, in {subject}")
    return None


def commit_move(message: str, target: Target, tree: str, relation: str | None, sha: str = "") -> Move | None:
    """The move a commit of the watched tree `tree` causes for `target`: `relation` is the tree's
    to the regression's (rules/trees.py: OWN, UPSTREAM or None). A commit is always a change, so a
    `Closes:`/`Link:` to the report counts. `message` is the commit's whole message: its first
    line the subject. The note names the commit and its tree."""
    if relation not in (OWN, UPSTREAM):
        return None
    subject = message.split("\n", 1)[0].strip()
    found = fix_in(subject, read_trailers(message), message, target, is_patch=True)
    if found is None:
        return None
    commit = f"commit {sha[:12]} in {tree}" if sha else f"in {tree}"
    if relation == UPSTREAM:
        return Move(LifecycleState.FIX_QUEUED, f"{found.note} ({commit}, upstream of {target.tree or 'its tree'})")
    state = LifecycleState.REVERTED if found.kind == REVERT else LifecycleState.FIXED
    return Move(state, f"{found.note} ({commit})")


def move_for(message: Report, own_text: str, target: Target, *, in_thread: bool) -> Move | None:
    """The move `message` causes for the report `target`, or None (see the module text)."""
    subject = bare_subject(message.subject)
    found = fix_in(subject, message.trailers, own_text, target, is_patch=_is_patch(message, own_text))
    if found is not None:  # a fix or a revert posted: incoming, not landed
        return Move(LifecycleState.FIX_PROPOSED, found.note)
    if not in_thread:
        return None
    for trailer in message.trailers:
        if trailer.name == "regzbot invalid":
            return Move(LifecycleState.INVALID, f"#regzbot invalid: {trailer.value}".rstrip(": "))
    if re.match(r"^\s*(?:re:\s*)*\[[^\]]*PATCH", message.subject, re.IGNORECASE) and not re.match(
            r"^\s*re:", message.subject, re.IGNORECASE):
        return Move(LifecycleState.FIX_PROPOSED, f"patch: {subject}")
    if any(objection.kind == "proposed-fix" for objection in message.objections):
        return Move(LifecycleState.FIX_PROPOSED, f"a diff in a reply: {subject}")
    return None


def _is_patch(message: Report, own_text: str) -> bool:
    """A patch or a commit: `[PATCH` in the subject, a Signed-off-by line or a diff of the writer's."""
    return ("PATCH" in message.subject.upper() or "Signed-off-by:" in own_text
            or any(objection.kind == "proposed-fix" for objection in message.objections))


def same_series_version(one: PatchMail, other: PatchMail) -> bool:
    """Two `[PATCH vN m/n]` mails of one version of one series (read by fix.patch_subject, as fix
    testing reads them): the same version of a series of more than one patch, the same n. A lone
    `[PATCH]` is a series of its own, so each moves the report."""
    return one.total > 1 and (one.version, one.total) == (other.version, other.total)


def own_text(body: str) -> str:
    """The writer's own lines of a body: quoted (`>`) lines dropped."""
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith(">"))
