"""Web stage: what each page shows, read through the `Store` protocol and the rules; no HTML here.

Every function here reads and none writes. A page's view is plain data (dataclasses, dicts of
text) that a template lays out; the report's own lines come from triagebot/present/summary.py, the same
lines `triage show` prints. In public mode (`triage web --public`) the views leave out what
may not leave the team: reports rules/routing.toml keeps inside (`public = false`), the lab's
host names (each replaced by "a lab host" wherever a plan, run or verdict names it), the
Slack channel, the daemon's notes on a report and its notifications; the hosts page is not
served at all.
"""
from __future__ import annotations

import dataclasses
import math
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from triagebot.errors import TriageError
from triagebot.lab.queue import BUSY_ELSEWHERE, lab_view
from triagebot.lab.standing import Standing, standing
from triagebot.lifecycle.detect import cause_text
from triagebot.lifecycle.follow import where_of
from triagebot.notify.render import STATE_MEANING, commit_url, kernels_line, lore_url, percent, short_commit
from triagebot.present.dates import parse_since
from triagebot.present.headline import change_text
from triagebot.present.report_view import ReportView, gather_report
from triagebot.present.summary import stance_evidence, summary_lines
from triagebot.records.certainty import uncertain_reasons
from triagebot.records.report import KINDS, Report
from triagebot.records.states import TriageState
from triagebot.records.threads import normalize_message_id
from triagebot.reproduce.schedule import describe_wait
from triagebot.rules.hosts import DEFAULT_MAX_WAIT_MINUTES
from triagebot.rules.settings import Settings
from triagebot.store.protocol import Store, TriageRow, UnreadableRecord
from triagebot.untrusted.whole_numbers import BadNumber, whole_number
from triagebot.verdict.median import median
from triagebot.verdict.outcome import confidence_text
from triagebot.verdict.same_kernel import run_outcome

REPORT_KINDS = ("lkp-regression", "lkp-improvement", "lkp-functional", "patch-regression", "human-report", "human-bug",
                "syzbot")
NOT_TAKEN_ON = "not-taken-on"  # the index's section of stored reports the daemon has not taken on
DEFAULT_LIMIT = 50  # reports a section shows, as `triage list` prints by default
MAX_LIMIT = 1000
LAB_HOST = "a lab host"  # what public pages say where a host's name would be
MAX_ID = 500  # characters of a Message-ID in a URL (RFC 5322 lines are 998; real ids are < 250)
_ID = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no space: what a Message-ID may hold
_SHORT_KEY = re.compile(r"sha256-[0-9a-f]{6,64}")  # a message without a Message-ID, as `triage list` shows it
_PARENT_SUFFIX = re.compile(r"[~^][0-9~^]*$")  # "c0ffee1234ab^": the culprit's parent, in the culprit's tree
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")  # a list or testcase name in a filter
INDEX_STATES = (*(state.value for state in TriageState), NOT_TAKEN_ON)  # the sections, in order
FILTERS = ("kind", "list", "since", "testcase", "state", "limit")
# the states a run ends a report in: where a report rerun by hand is listed
RUN_OUTCOME_STATES = (TriageState.CONFIRMED.value, TriageState.NOT_REPRODUCED.value, TriageState.INCONCLUSIVE.value,
                      TriageState.A_A_ONLY.value, TriageState.ERROR.value)


class BadRequest(TriageError):
    """A URL the pages refuse: an id or a filter that is not well formed (HTTP 400)."""


@dataclass(frozen=True)
class Site:
    """What the pages read: the store (opened per request), the rules, where host locks live."""

    open_store: Callable[[], AbstractContextManager[Store]]
    settings: Settings | None = None  # the lab's hosts and the routing; None: none known
    database: Path | None = None  # a SQLite store's file: host locks sit beside it (None: busy unknown)
    public: bool = False  # serve only what may leave the team


def report_href(key: str) -> str:
    """The page of the report stored under `key` ("/" in an id must not end the path segment)."""
    return "/r/" + quote(key, safe="@+=-._~!$&*,;:")


def checked_id(text: str) -> str:
    """A Message-ID from a URL, without `<>`; BadRequest when it cannot be one."""
    if len(text) > MAX_ID:
        raise BadRequest(f"message id of {len(text)} characters: at most {MAX_ID}")
    try:
        value = normalize_message_id(text)
    except ValueError:
        raise BadRequest("empty message id") from None
    if not _ID.fullmatch(value):
        raise BadRequest(f"message id {value!r}: only printable ASCII without spaces")
    return value


def kept_report(store: Store, site: Site, key: str) -> str | None:
    """The key of the report `key` is another name of (dedup's alias: the lore copy of an archive
    page names the page's record, parse/twins.py), when no record is stored under `key` itself;
    None too when that report may not be shown (public pages tell no more of it than of any)."""
    if store.get_record(key) is not None:
        return None
    named = store.resolve_alias(key)
    if named is None or named == key:
        return None
    report = store.get_record(named)
    return named if report is not None and _may_show(store, site, named, report) else None


def resolve(store: Store, key: str) -> str:
    """A short `sha256-…` key (as `triage list` prints it) to the full one, when one record has it."""
    if _SHORT_KEY.fullmatch(key):
        found = store.record_keys_starting(key, 2)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise BadRequest(f"{key} is the start of more than one stored key: give more digits")
    return key


# --- the index: reports by state ----------------------------------------------------------------

@dataclass(frozen=True)
class Filters:
    kinds: tuple[str, ...] = ()  # empty: every kind of report
    list_name: str | None = None
    since: str | None = None
    testcase: str | None = None
    state: str | None = None
    limit: int = DEFAULT_LIMIT

    def query(self) -> dict[str, str | list[str]]:
        """The filters as the form shows them again."""
        return {"kind": list(self.kinds), "list": self.list_name or "", "since": self.since or "",
                "testcase": self.testcase or "", "state": self.state or "", "limit": str(self.limit)}


def filters_from(items: Sequence[tuple[str, str]]) -> Filters:
    """The index's query string, checked: BadRequest names the parameter and what is wrong."""
    values: dict[str, list[str]] = {}
    for name, value in items:
        if name not in FILTERS:
            raise BadRequest(f"unknown parameter {name!r}: the filters are {', '.join(FILTERS)}")
        values.setdefault(name, []).append(value.strip())

    def one(name: str) -> str | None:
        given = [value for value in values.get(name, []) if value]
        if len(given) > 1:
            raise BadRequest(f"{name} given {len(given)} times: give it once")
        return given[0] if given else None

    kinds = tuple(value for value in values.get("kind", []) if value)
    for kind in kinds:
        if kind not in (*KINDS, "reports"):
            raise BadRequest(f"kind {kind!r}: one of reports, {', '.join(KINDS)}")
    for name in ("list", "testcase"):
        named = one(name)
        if named is not None and not _NAME.fullmatch(named):
            raise BadRequest(f"{name} {named!r}: letters, digits and . _ + - only, at most 100")
    state = one("state")
    if state is not None and state not in INDEX_STATES:
        raise BadRequest(f"state {state!r}: one of {', '.join(INDEX_STATES)}")
    since = one("since")
    if since is not None:
        try:
            parse_since(since)
        except TriageError as error:
            raise BadRequest(str(error).replace("--since", "since", 1)) from None
    limit_text = one("limit")
    limit = DEFAULT_LIMIT
    if limit_text is not None:
        try:
            limit = whole_number(limit_text, "limit", low=1, high=MAX_LIMIT)
        except BadNumber as error:
            raise BadRequest(str(error)) from None
    return Filters(kinds=kinds, list_name=one("list"), since=since, testcase=one("testcase"), state=state,
                   limit=limit)


def _kinds(selected: tuple[str, ...]) -> tuple[str, ...]:
    kinds: list[str] = []
    for kind in selected or ("reports",):
        kinds.extend(REPORT_KINDS if kind == "reports" else (kind,))
    return tuple(dict.fromkeys(kinds))


@dataclass(frozen=True)
class Listed:
    """One report on the index."""

    key: str
    href: str
    date: str
    kind: str
    change: str  # the headline's change ("-25%"), or ""
    subject: str
    host: str | None  # where it is queued or ran (team pages only)
    since: str | None  # when it reached its state
    note: str | None = None  # how it got there when the daemon did not take it on (a rerun by hand)
    place: str | None = None  # where a waiting or running report stands in the lab (lab/standing.py's words)


@dataclass(frozen=True)
class Section:
    state: str
    meaning: str
    reports: list[Listed] = field(default_factory=list)
    more: bool = False  # the section stopped at the limit


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else None


def _listed(key: str, report: Report, row: TriageRow | None, public: bool) -> Listed:
    change = change_text(report)
    host = None if public or row is None else (row.host or None)
    return Listed(key=key, href=report_href(key), date=(report.date or "")[:10], kind=report.kind, change=change,
                  subject=report.subject or "(no subject)", host=host, since=row.updated_at if row else None)


def _list_name(store: Store, key: str) -> str | None:
    stored = store.get_message(key)
    return stored.list_name if stored else None


def _may_show(store: Store, site: Site, key: str, report: Report) -> bool:
    """Whether this report may be on the pages served: always for the team; in public, as routing says."""
    if not site.public:
        return True
    if site.settings is None:
        return True
    routing = site.settings.routing
    # the list a message came from is read only when some route matches on it
    list_name = _list_name(store, key) if any(route.lists for route in routing.routes) else None
    return routing.is_public(report, list_name)


HAND_RERUN = "rerun by hand (triage rerun); not taken on by the daemon"


def _hand_rerun(store: Store, key: str, public: bool) -> tuple[str, str | None, str | None] | None:
    """(state, host, when) of a report the daemon never took on but `triage rerun` ran to its
    end: the state its run's outcome names (a-a-only for an A/A run), so the index shows it as
    what it is; None when it has no such run."""
    run = store.latest_run(key)
    outcome = run_outcome(run)
    if run is None or outcome not in RUN_OUTCOME_STATES:
        return None
    return outcome, None if public else run.get("host"), run.get("finished_at")


def standing_of(store: Store, site: Site, now: datetime | None = None) -> Standing | None:
    """The lab and the polls as the team pages, `triage status` and /healthz all word them; None
    in public (the lab is not shown there) or without the rules."""
    settings = site.settings
    if site.public or settings is None:
        return None
    return standing(store, site.database, settings, timedelta(minutes=settings.max_wait_minutes),
                    now or datetime.now(UTC))


def index_view(store: Store, site: Site, filters: Filters, lab_standing: Standing | None = None) -> list[Section]:
    """The reports by triage state (in TriageState's order), then the stored reports the daemon
    has not taken on; newest first within each, at most `filters.limit` a section. A report the
    daemon has not taken on but `triage rerun` ran is in the section its run's outcome names
    (an A/A run's: a-a-only), marked as a rerun by hand."""
    kinds = _kinds(filters.kinds)
    since = parse_since(filters.since) if filters.since else None
    lab = None if site.public else lab_standing
    rows = store.triage_in(*TriageState)
    taken = {row.message_id for row in rows}
    newest = []
    if filters.state in (None, NOT_TAKEN_ON, *RUN_OUTCOME_STATES):
        # The newest records, enough for the last section: the daemon takes on reports as they
        # arrive, so most triaged ones are among them and are not read a second time below.
        newest = store.list_records(kind=kinds, list_name=filters.list_name, since=since,
                                    testcase=filters.testcase, limit=filters.limit + len(taken) + 1)
    read = {listed.key: listed.report for listed in newest}
    found: dict[str, list[tuple[datetime | None, Listed]]] = {state.value: [] for state in TriageState}
    for row in rows:
        if filters.state and filters.state != row.state:
            continue
        report = read.get(row.message_id)
        if report is None:
            try:
                report = store.get_record(row.message_id)
            except UnreadableRecord:
                continue
        if report is None or report.kind not in kinds:
            continue
        if filters.testcase and report.testcase != filters.testcase:
            continue
        dated = _moment(report.date) or _moment(row.created_at)
        if since is not None and (dated is None or dated < since):
            continue
        if filters.list_name and _list_name(store, row.message_id) != filters.list_name:
            continue
        if not _may_show(store, site, row.message_id, report):
            continue
        listed = _listed(row.message_id, report, row, site.public)
        place = lab.place(row.message_id) if lab is not None else None
        if place is not None:
            listed = dataclasses.replace(listed, place=place.text())
        found[row.state].append((dated, listed))
    rest = []
    for record in newest:
        if record.key in taken or not _may_show(store, site, record.key, record.report):
            continue
        by_hand = _hand_rerun(store, record.key, site.public)
        if by_hand is None:
            rest.append(record)
        elif filters.state in (None, by_hand[0]):
            state, host, when = by_hand
            shown = _listed(record.key, record.report, None, site.public)
            found[state].append((_moment(record.report.date) or _moment(when),
                                 dataclasses.replace(shown, host=host, since=when, note=HAND_RERUN)))
    result = []
    for state, items in found.items():
        items.sort(key=lambda item: item[0].timestamp() if item[0] else float("-inf"), reverse=True)
        result.append(Section(state, STATE_MEANING[TriageState(state)],
                              [listed for _, listed in items[:filters.limit]], len(items) > filters.limit))
    if filters.state in (None, NOT_TAKEN_ON):
        result.append(Section(NOT_TAKEN_ON, "stored, not taken on by the daemon (older than --admit-days, "
                              "or a kind it does not rerun)",
                              [_listed(item.key, item.report, None, site.public) for item in rest[:filters.limit]],
                              len(rest) > filters.limit))
    return result


# --- to look at: the readings the daemon was unsure of, not decided yet (issue 38) -------------------

LOOK_KINDS = ("patch-regression", "human-report", "human-perf-complaint")  # readings that may be a report


@dataclass(frozen=True)
class ToLookAt:
    """One unsure reading nobody decided: what was read, why the daemon is unsure, how to decide."""

    key: str
    href: str
    date: str
    kind: str
    subject: str
    sender: str
    reasons: list[str]
    take_on: str  # the command that takes it on
    dismiss: str  # the command that dismisses it


def look_view(store: Store, site: Site, limit: int = DEFAULT_LIMIT) -> tuple[list[ToLookAt], bool]:
    """The readings that may be reports the daemon did not take on for want of evidence and nobody
    has decided (a digest line's button, `triage take-on|dismiss`), newest first; and whether there
    are more than `limit`. Team pages only: what the team is unsure of is its own business."""
    taken = {row.message_id for row in store.triage_in(*TriageState)}
    found: list[ToLookAt] = []
    # unsure readings are few among the records of these kinds: read a window of the newest
    for listed in store.list_records(kind=LOOK_KINDS, limit=MAX_LIMIT):
        if listed.key in taken or store.decision_of(listed.key) is not None:
            continue
        reasons = uncertain_reasons(listed.report)
        if not reasons:
            continue  # sure: the daemon takes it on by itself when it is recent
        if len(found) == limit:
            return found, True
        report = listed.report
        found.append(ToLookAt(key=listed.key, href=report_href(listed.key), date=(report.date or "")[:10],
                              kind=report.kind, subject=report.subject or "(no subject)",
                              sender=report.from_ or "unknown", reasons=list(reasons),
                              take_on=shlex.join(["triage", "take-on", listed.key]),
                              dismiss=shlex.join(["triage", "dismiss", listed.key])))
    return found, False


# --- one report ---------------------------------------------------------------------------------

def _scrub(value: Any, replacements: Sequence[tuple[str, str]]) -> Any:
    """`value` (strings, lists, dicts) with each (internal, public) pair's first replaced."""
    if isinstance(value, str):
        for internal, public in replacements:
            value = value.replace(internal, public)
        return value
    if isinstance(value, list | tuple):
        return [_scrub(item, replacements) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item, replacements) for key, item in value.items()}
    return value


def host_names(site: Site, *more: str | None) -> list[tuple[str, str]]:
    """What the public pages say instead of the lab's internals: each host's scratch directory
    ("{scratch}", as the templates write it) and its name ("a lab host"), longest first (so
    "lab-1" does not cut into "lab-10")."""
    hosts = (site.settings.hosts or ()) if site.settings else ()
    found = {host.scratch_dir.rstrip("/"): "{scratch}" for host in hosts if len(host.scratch_dir.rstrip("/")) > 1}
    found |= {host.name: LAB_HOST for host in hosts}
    found |= {name: LAB_HOST for name in more if name and name != "?"}
    return sorted(found.items(), key=lambda pair: len(pair[0]), reverse=True)


def _plan_view(plan: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A plan (Plan.to_json) or a refusal, as the page lays it out: what runs, what differs."""
    if not plan:
        return None
    if plan.get("kind") == "refusal":
        return {"refused": True, "reason": plan.get("reason") or "", "missing": list(plan.get("missing") or [])}
    argv = [str(word) for word in plan.get("argv") or []]
    return {"refused": False, "template": plan.get("template") or "?", "source": plan.get("source") or "",
            "metric": plan.get("metric") or "?", "better": plan.get("better") or "?",
            "parser": plan.get("parser") or "", "command": shlex.join(argv),
            "timeout": plan.get("timeout_seconds"),
            "reported": percent(plan.get("reported_change_percent"))
            if plan.get("reported_change_percent") is not None else None,
            "report_metric": plan.get("report_metric"), "runs_on": plan.get("runs_on"),
            "fitted": list(plan.get("scaled") or []),
            "differs": [*(plan.get("storage_differs") or []), *(plan.get("notes") or [])]}


def _public_plan(plan: dict[str, Any] | None, names: Sequence[tuple[str, str]]) -> dict[str, Any] | None:
    """A plan's view as public pages show it: what was fitted and what differs, without what they
    say of the lab host (its threads, memory, budget, tools); every host name "a lab host"."""
    if plan is None or plan.get("refused"):
        return _scrub(plan, names)
    return _scrub(plan, names) | {key: [public_text(item, names) for item in plan[key]]
                                  for key in ("fitted", "differs")}


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, int | float) and math.isfinite(value) else "n/a"


def _medians(samples: Sequence[Mapping[str, Any]]) -> str:
    """Each side's median and their change, as `triage show` prints the medians."""
    sides = {role: [item["value"] for item in samples if item.get("role") == role
                    and isinstance(item.get("value"), int | float) and math.isfinite(item["value"])]
             for role in ("base", "suspect")}
    if not sides["base"] or not sides["suspect"]:
        return ""
    base, suspect = median(sides["base"]), median(sides["suspect"])
    change = f", {percent((suspect / base - 1) * 100)}" if base else ""
    return f"{base:.6g} and {suspect:.6g}{change}"


def _run_view(run: Mapping[str, Any] | None, report: Report, public: bool) -> dict[str, Any] | None:
    if not run:
        return None
    verdict = run.get("verdict") or {}
    samples = run.get("samples") or []
    commits = {commit.sha[:12]: commit for commit in report.commits}

    def commit(text: str | None) -> dict[str, str | None]:
        sha = text or "?"
        known = commits.get(_PARENT_SUFFIX.sub("", sha)[:12]) if sha != "?" else None
        url = commit_url(known.tree, sha) if known is not None else None
        return {"text": short_commit(sha), "url": url}

    view: dict[str, Any] = {
        "host": None if public else run.get("host"), "status": run.get("status") or "?",
        "base": commit(run.get("base_commit")), "suspect": commit(run.get("suspect_commit")),
        "error": (None if not run.get("error") else "the run failed" if public else run["error"]),
        "samples": {role: len([item for item in samples if item.get("role") == role]) for role in ("base", "suspect")},
        "plot": any(item.get("role") == "base" for item in samples)
        and any(item.get("role") == "suspect" for item in samples),
        "medians": _medians(samples), "verdict": None}
    if verdict:
        confidence = verdict.get("confidence")
        view["verdict"] = {
            "outcome": verdict.get("outcome") or "?", "reason": verdict.get("reason") or "",
            "measured": percent(verdict.get("measured_change_percent")),
            "interval": f"{percent(verdict.get('ci_low'))} to {percent(verdict.get('ci_high'))}",
            "confidence": confidence_text(confidence) if isinstance(confidence, int | float) else "",
            "reported": percent(verdict.get("reported_change_percent")),
            "p_value": _number(verdict.get("p_value")), "alpha": _number(verdict.get("alpha")),
            "runs": f"{verdict.get('runs_base', '?')} base + {verdict.get('runs_suspect', '?')} suspect",
            "floor": _number(verdict.get("floor_percent")), "better": verdict.get("better") or "?",
            "a_a": verdict.get("host_can_switch_kernel") is False, "kernels": kernels_line(verdict)}
    return view


# what each notification announces, as a move in the report's life
_MOVES = {"parent": "taken on: new", "plan": "{told} told to the team", "update-planned": "{planned}",
          "progress-started": "run started", "update-running": "running", "progress-halfway": "run halfway",
          "verdict": "verdict told to the team", "plot": "samples plot posted", "update-final": "final state: {state}"}


def _lifecycle(view: ReportView, store: Store, site: Site) -> list[dict[str, Any]]:
    """The report's moves as far as the store has them: taken on, then each notification written
    with a state change (the outbox row is written in the same transaction as the move). In
    public only the moves `_MOVES` names are listed (never an outbox kind: `action-N`,
    `test-fix-N`, `update-queued-…@HOST` are the team's), a move's note says "a lab host" where it
    named one (public_text), and a later report routing keeps inside is not named."""
    public = site.public
    names = host_names(site, view.triage.host if view.triage else None, (view.latest_run or {}).get("host"))
    triage = view.triage
    if triage is None:
        return []
    planned = "refused" if (triage.plan or {}).get("kind") == "refusal" else "planned"
    moves: list[dict[str, Any]] = [{"at": triage.created_at, "what": "taken on by the daemon: new", "detail": None}]
    lifecycle_edits = {f"update-{move.state}-{move.move_id}" for move in view.moves} | {
        f"update-{link.relation}-{link.joined_id}" for link in view.links}
    for row in view.notifications:
        if row.kind == "parent" or row.kind in lifecycle_edits:  # a move's edit: the move is listed below
            continue
        if public and row.kind not in _MOVES:  # the team's own traffic: actions, fix-test replies, queue places
            continue
        what = _MOVES.get(row.kind, row.kind).format(planned=planned, state=triage.state,
                                                      told="plan" if planned == "planned" else "refusal")
        detail = None
        if not public:
            detail = f"{row.kind} to {row.channel}: {row.status}" + (f" ({row.last_error})" if row.last_error
                                                                      and row.status != "sent" else "")
        moves.append({"at": row.created_at, "what": what, "detail": detail})
    if not TriageState(triage.state).final:
        moves.append({"at": triage.updated_at, "what": f"{triage.state} since", "detail": triage.note
                      if not public else None})
    for move in view.moves:  # after the verdict: fixed, reverted, … with the message that moved it
        where = where_of(move)
        note = public_text(move.note, names) if public else move.note
        moves.append({"at": move.moved_at, "what": f"{move.state}{' ' + where if where else ''}: {note}",
                      "detail": cause_text(move.cause_id) if move.cause_id else None})
    for link in view.links:  # later reports of the same regression (or commit)
        if public and not _showable(store, site, link.joined_id):
            continue
        moves.append({"at": link.linked_at, "what": f"{link.relation}: <{link.joined_id}>", "detail": link.rule})
    return moves


# what a plan's or a move's words say of the lab host, left out in public: "(the host has 2
# threads)", "; the host's budget is 512", "of the host's 2 threads"
_HOST_PARTICULARS = re.compile(r"\s*\([^()]*\bhost(?:'s)?\b[^()]*\)|;\s*the host(?:'s)?\b[^;]*")


def public_text(text: str, names: Sequence[tuple[str, str]]) -> str:
    """`text` as public pages say it: the host's particulars left out, its name "a lab host"."""
    return _scrub(_HOST_PARTICULARS.sub("", text), names)


def _showable(store: Store, site: Site, key: str) -> bool:
    try:
        report = store.get_record(key)
    except UnreadableRecord:
        return False
    return report is not None and _may_show(store, site, key, report)


def _thread(view: ReportView, store: Store, site: Site) -> list[dict[str, Any]]:
    """The report's thread, each message the pages may show (in public, a message routing keeps
    inside is left out whole: its subject, sender, date and evidence)."""
    if view.thread is None:
        return []
    messages = []
    for key, depth in view.thread.order:
        message = view.thread_reports.get(key)
        if message is None:
            continue
        stored_as = message.message_id or None
        if not _may_show(store, site, stored_as or key, message):
            continue
        evidence = stance_evidence(message).strip()
        messages.append({
            "href": report_href(stored_as) if stored_as else None, "this": stored_as == view.key,
            "depth": min(depth, 8), "date": message.date or "?", "kind": message.kind, "from": message.from_,
            "subject": message.subject, "stance": message.stance if message.stance != "none" else None,
            "evidence": evidence.strip('"') if evidence.startswith('"') else evidence,
            "objections": [f"[{item.kind}] {item.evidence}" for item in message.objections]})
    return messages


def _bisections(view: ReportView) -> list[dict[str, Any]]:
    """The report's bisections: each one's outcome, or, while it runs, where it is (its stored
    progress, the line a terminal prints a sample) and its estimate."""
    if not view.bisects:
        return []
    from triagebot.bisect.search import bisect_summary  # the verdict's numpy, only for a page with one

    found = []
    for item in view.bisects:
        status = str(item.get("status") or "?")
        progress = (item.get("progress") or {}).get("line") if status == "running" else None
        text = "" if status == "running" else (bisect_summary(item) if status in ("found", "inconclusive")
                                                else str(item.get("reason") or ""))
        found.append({"id": item.get("bisect_id"), "host": item.get("host"), "status": status, "text": text,
                      "progress": progress, "estimate": list((item.get("estimate") or {}).get("lines") or [])})
    return found


def report_view(store: Store, site: Site, key: str) -> dict[str, Any] | None:
    """Everything the report page shows; None when no report is stored under `key` (or, in
    public, when routing keeps it inside the team)."""
    view = gather_report(store, key)
    if view is None or not _may_show(store, site, key, view.report):
        return None
    report = view.report
    lines: list[dict[str, Any]] = []
    for line in summary_lines(report):
        if line.form == "row" and lines and lines[-1]["form"] == "table":
            lines[-1]["rows"].append(line.text)  # a row of the table its heading began
            continue
        url = commit_url(line.commit.tree, line.commit.sha) if line.commit is not None else None
        lines.append({"form": "table" if line.form == "heading" else line.form, "label": line.label,
                      "text": line.text, "url": url, "sha": line.commit.sha if line.commit is not None else None,
                      "rows": []})
    triage = view.triage
    plan_json = (triage.plan if triage is not None else None) or (view.latest_run or {}).get("plan")
    plan = _plan_view(plan_json)
    run = _run_view(view.latest_run, report, site.public)
    cut_short = _run_view(view.cut_short_run, report, site.public)
    bisections = _bisections(view)
    names = host_names(site, triage.host if triage else None, (view.latest_run or {}).get("host"),
                       (view.cut_short_run or {}).get("host"), *(item["host"] for item in bisections))
    if site.public:
        plan, run, cut_short = _public_plan(plan, names), _scrub(run, names), _scrub(cut_short, names)
        bisections = _scrub(bisections, names)
    state = None
    if triage is not None:
        state = {"state": triage.state, "meaning": STATE_MEANING[TriageState(triage.state)],
                 "since": triage.updated_at,
                 "host": None if site.public else (triage.host or None),
                 "channel": None if site.public else triage.channel,
                 "note": None if site.public else triage.note}
    return {"key": key, "href": report_href(key), "report": report, "lore": lore_url(report.message_id),
            "lines": lines, "state": state, "plan": plan, "run": run, "cut_short": cut_short,
            "bisections": bisections, "thread": _thread(view, store, site), "moves": _lifecycle(view, store, site)}


def plot_run(store: Store, site: Site, key: str) -> dict[str, Any] | None:
    """The stored run whose samples the plot draws (host left out in public); None without one."""
    view = gather_report(store, key)
    if view is None or view.latest_run is None or not _may_show(store, site, key, view.report):
        return None
    run = dict(view.latest_run)
    samples = run.get("samples") or []
    if not (any(item.get("role") == "base" for item in samples) and any(item.get("role") == "suspect"
                                                                        for item in samples)):
        return None
    if site.public:
        run["host"] = None  # the title then names the metric alone
        run["plan"] = _scrub(run.get("plan"), host_names(site))
    return run


# --- the lab ------------------------------------------------------------------------------------

def hosts_view(store: Store, site: Site, limit: int = DEFAULT_LIMIT, now: datetime | None = None) -> dict[str, Any]:
    """Each host busy (with the report it runs) or idle, the report that starts on it at the
    daemon's next step and its queue, next first (the first `limit`), with how long each has
    waited: the daemon's own schedule (triagebot.lab_queue.lab_view, as `triage status` prints
    it) at `now`; then the reports waiting for a host (the first `limit`): new ones, planned
    ones no host of hosts.toml can rerun, and `running` ones no run holds a host for."""
    settings = site.settings
    hosts = settings.need_hosts() if settings is not None else ()
    max_wait = timedelta(minutes=settings.max_wait_minutes if settings is not None else DEFAULT_MAX_WAIT_MINUTES)
    now = now or datetime.now(UTC)
    found = standing_of(store, site, now)
    view = found.lab if found is not None else lab_view(store, site.database, hosts, max_wait, now)
    rows = {row.message_id: row for row in store.triage_in(TriageState.NEW, TriageState.PLANNED,
                                                            TriageState.RUNNING)}

    def item(message_id: str, waited: timedelta | None = None) -> dict[str, Any]:
        row = rows.get(message_id) or store.get_triage(message_id)
        if message_id in view.reports:  # read once for the schedule
            report = view.reports[message_id]
        else:
            try:
                report = store.get_record(message_id)
            except UnreadableRecord:
                report = None
        place = found.place(message_id) if found is not None else None
        return {"href": report_href(message_id), "key": message_id, "state": row.state if row else "?",
                "since": row.updated_at if row else "?", "waited": describe_wait(waited) if waited else None,
                "subject": (report.subject if report else None) or "(no record)",
                "place": place.text() if place is not None else None}

    known = {host.name for host in hosts}
    lab = []
    for host in hosts:
        running = view.busy.get(host.name)
        # nothing to try (no job queue, no database file for locks): a host no report runs on may be busy all the same
        busy = True if running is not None else (None if view.busy_from == "triage table" else False)
        lab.append({"name": host.name, "reach": host.reach, "cpu": host.cpu_model, "microarch": host.microarch,
                    "threads": host.threads, "sockets": host.sockets, "memory_gb": host.memory_gb,
                    "disk": host.disk, "labels": list(host.labels), "can_switch": host.can_switch_kernel,
                    "busy": busy, "elsewhere": running == BUSY_ELSEWHERE,
                    "awaiting_worker": host.name in view.awaiting_worker,
                    "running": [item(running)] if running else [],
                    "next": [item(assigned.message_id, assigned.waited) | {"past_cap": assigned.past_cap}
                             for assigned in view.schedule.assignments if assigned.host == host.name],
                    "queue": [item(queued.message_id, queued.waited) | {"ahead": queued.ahead}
                              for queued in view.schedule.queues.get(host.name, ())[:limit]],
                    "queue_total": len(view.schedule.queues.get(host.name, ()))})
    placed = set(view.busy.values()) | {assigned.message_id for assigned in view.schedule.assignments} | {
        queued.message_id for queue in view.schedule.queues.values() for queued in queue}
    # new, planned for no host that can rerun it, or `running` on no busy host (cut short: the
    # daemon plans it again)
    unplaced = [row for row in rows.values() if row.message_id not in placed]
    return {"hosts": lab, "max_wait": describe_wait(max_wait), "polls": found.polls_line() if found else None,
            "unplaced": [item(row.message_id) | {"host": row.host if row.host and row.host not in known else None}
                         for row in unplaced[:limit]],
            "unplaced_more": max(0, len(unplaced) - limit)}
