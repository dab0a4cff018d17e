"""Parse stage: threads from records, and what each thread says of its report.

Pure: records in, threads out. A message's parent is the nearest present message along the
edges its headers give (triagebot/records/threads.py, the rule the store keeps threads by: In-Reply-To,
else the last References entry, then up the References chain), else (archive pages) the
thread-prev page it links to. Missing parents make the nearest present ancestor a root;
duplicates count once; a loop in the headers is cut where it closes. Messages without a
Message-ID take part under their date + subject + sender key.

The thread's report is its first report (LKP, human, syzbot) in thread order; replies that
quote a report are attached to it, not read as reports of their own.
"""
from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

from triagebot.parse.identity import fallback_key
from triagebot.records.report import Report
from triagebot.records.threads import parent_edges

REPORT_KINDS = ("lkp-regression", "lkp-improvement", "lkp-functional", "patch-regression", "human-report",
                "human-perf-complaint", "human-bug", "syzbot")


@dataclass(frozen=True)
class Voice:
    """One writer's say in a thread: a stance or an objection, with the sentence behind it."""

    sender: str
    message_id: str
    what: str  # the stance, or the objection kind
    evidence: str | None


@dataclass(frozen=True)
class Thread:
    root: str  # key of the root message (its Message-ID, or its fallback key)
    order: tuple[tuple[str, int], ...]  # (key, depth) in thread order: depth first, by date
    report: str | None  # key of the report the thread is about
    reporter: str | None
    reproduced: tuple[Voice, ...]
    not_reproduced: tuple[Voice, ...]
    objections: tuple[Voice, ...]
    proposed_fixes: tuple[Voice, ...]


def message_key(report: Report) -> str:
    return report.message_id or "no-id:" + fallback_key(report.date, report.subject, report.from_)


def _parents(reports: dict[str, Report]) -> dict[str, str | None]:
    by_url = {report.source.url: key for key, report in reports.items() if report.source.url}
    parents: dict[str, str | None] = {}
    for key, report in reports.items():
        parent = _nearest_present(key, report, reports)
        links = dict(report.thread_links)
        if parent is None and report.source.url and "thread-prev" in links:
            # an archive page: its thread-prev link names the page before it in the thread
            target = urljoin(report.source.url, links["thread-prev"])
            target = urlsplit(target)._replace(path=posixpath.normpath(urlsplit(target).path)).geturl()
            parent = by_url.get(target) or by_url.get(target + "/")
        parents[key] = parent if parent != key else None
    # Cut loops: follow each chain; where it comes back on itself, the node closing it becomes a root.
    for start in parents:
        seen: set[str] = set()
        node: str | None = start
        while node is not None and parents.get(node) is not None:
            if node in seen:
                parents[node] = None
                break
            seen.add(node)
            node = parents[node]
    return parents


def _nearest_present(key: str, report: Report, reports: dict[str, Report]) -> str | None:
    """The message's stated parent when present, else its nearest present ancestor upwards."""
    try:
        edges = parent_edges(key, report.in_reply_to, report.references)
    except ValueError:  # an empty id in the headers states no parent
        return None
    up = {child: parent for child, parent in edges}
    node, seen = up.get(key), {key}
    while node is not None and node not in seen:
        if node in reports:
            return node
        seen.add(node)
        node = up.get(node)
    # In-Reply-To names a message outside the References chain: try the chain itself.
    return next((ancestor for ancestor in reversed(report.references) if ancestor in reports and ancestor != key),
                None)


def build_threads(records: Sequence[Report]) -> list[Thread]:
    """The threads the records form, oldest root first."""
    reports: dict[str, Report] = {}
    for report in records:
        reports.setdefault(message_key(report), report)  # duplicates: the first copy counts
    parents = _parents(reports)
    children: dict[str | None, list[str]] = {}
    for key, parent in parents.items():
        children.setdefault(parent, []).append(key)

    def date_of(key: str) -> datetime:
        # ISO dates with different offsets do not sort as text; undated messages sort first
        try:
            moment = datetime.fromisoformat(reports[key].date or "")
        except ValueError:
            return datetime.min.replace(tzinfo=UTC)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

    threads = []
    for root in sorted(children.get(None, []), key=date_of):
        order: list[tuple[str, int]] = []
        stack = [(root, 0)]
        while stack:
            key, depth = stack.pop()
            order.append((key, depth))
            # reversed, not reverse=True: undated children (a paste's) keep their input order
            stack.extend((child, depth + 1) for child in reversed(sorted(children.get(key, []), key=date_of)))
        threads.append(_summarise(root, order, reports))
    return threads


def _summarise(root: str, order: list[tuple[str, int]], reports: dict[str, Report]) -> Thread:
    report_key = next((key for key, _ in order if reports[key].kind in REPORT_KINDS), None)
    reproduced: list[Voice] = []
    not_reproduced: list[Voice] = []
    objections: list[Voice] = []
    fixes: list[Voice] = []
    for key, _ in order:
        message = reports[key]
        if key == report_key:
            continue
        if message.stance == "reproduced":
            reproduced.append(Voice(message.from_, key, "reproduced", message.stance_evidence))
        elif message.stance == "not-reproduced":
            not_reproduced.append(Voice(message.from_, key, "not-reproduced", message.stance_evidence))
        for objection in message.objections:
            voice = Voice(message.from_, key, objection.kind, objection.evidence)
            (fixes if objection.kind == "proposed-fix" else objections).append(voice)
        if message.kind == "other" and message.subject.lstrip().startswith("[") and "PATCH" in message.subject:
            fixes.append(Voice(message.from_, key, "patch", message.subject))
    return Thread(
        root=root,
        order=tuple(order),
        report=report_key,
        reporter=reports[report_key].from_ if report_key else None,
        reproduced=tuple(reproduced),
        not_reproduced=tuple(not_reproduced),
        objections=tuple(objections),
        proposed_fixes=tuple(fixes),
    )


def render_thread(thread: Thread, reports: dict[str, Report]) -> str:
    """A readable thread summary: who reported, who reproduced or not, objections, fixes."""
    lines = [f"thread of {len(thread.order)} message{'s' if len(thread.order) != 1 else ''}, root {thread.root}"]
    if thread.report:
        lines.append(f"  report:   {reports[thread.report].subject}  ({thread.reporter})")
    else:
        lines.append("  report:   (none in this thread)")
    for title, voices in (("reproduced", thread.reproduced), ("not reproduced", thread.not_reproduced),
                          ("objection", thread.objections), ("fix", thread.proposed_fixes)):
        for voice in voices:
            detail = voice.evidence or ""
            kind = f"[{voice.what}] " if title in ("objection", "fix") else ""
            lines.append(f"  {title + ':':15} {voice.sender}: {kind}\"{detail}\"")
    lines.append("  messages:")
    for key, depth in thread.order:
        message = reports[key]
        lines.append(f"    {'  ' * depth}{message.date or '?':25} {message.kind:16} {message.from_[:40]}")
    return "\n".join(lines)


def reports_by_key(records: Sequence[Report]) -> dict[str, Report]:
    found: dict[str, Report] = {}
    for report in records:
        found.setdefault(message_key(report), report)
    return found
