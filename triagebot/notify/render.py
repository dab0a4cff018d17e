"""Notify stage: Slack payloads (Block Kit + plain-text fallback) from records.

Pure functions: a report (records.Report, read through its JSON form, the shape the payloads
echo), plan JSON (Plan/Refusal.to_json), run
JSON (RunRecord.to_json) and verdict JSON (Verdict.to_json, or a run's ``verdict``) in, a
payload ``{"text": str, "blocks": [...]}`` out, already fitted to Slack's limits (fit()), so
what is sent is what Slack accepts. The terminal notifier prints the same payloads as text.

Messages of one report: the parent (headline, culprit, testcase, machine, lore link, state),
updated in place as the state moves; thread replies for the plan or the refusal, for run
progress (started, halfway: never per sample), for the verdict with its reason; the plot.

Every text that reaches Slack's mrkdwn — a block's text AND a payload's `text`, which Slack shows
in notifications — is written through triagebot/untrusted/mrkdwn.py: what mail wrote is escaped,
and a link is made only from a URL that is plainly one (a tree URL `https://x|label><!channel>…`
is shown as text, never as a link or a mention). Header blocks are plain_text, which Slack reads
as it is, so they are not escaped.
"""
from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote, urlsplit

from triagebot.present.headline import headline_text
from triagebot.present.summary import metric_order, short_commit
from triagebot.records.report import Report, report_to_json
from triagebot.records.states import TriageState
from triagebot.untrusted.mrkdwn import escape, link
from triagebot.verdict.outcome import confidence_text
from triagebot.verdict.same_kernel import A_A_ONLY

Payload = dict[str, Any]
Json = dict[str, Any]

# Slack's documented limits (Block Kit reference, chat.postMessage).
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FIELD_TEXT = 2000
MAX_FIELDS = 10
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 2000  # per element; Slack documents none lower, 2000 keeps a line readable
MAX_MESSAGE_TEXT = 40000
TRUNCATED = "… (truncated)"

MAX_METRIC_ROWS = 12  # rows of the report's comparison table in the parent (headline first)
LORE_BASE = "https://lore.kernel.org/all/"  # lore resolves any Message-ID under /all/

# How each triage state (triagebot/records/states.py) is shown: its emoji and a line saying what it means.
STATE_EMOJI = {
    TriageState.NEW: ":new:",
    TriageState.PLANNED: ":clipboard:",
    TriageState.RUNNING: ":hourglass_flowing_sand:",
    TriageState.CONFIRMED: ":red_circle:",
    TriageState.NOT_REPRODUCED: ":white_check_mark:",
    TriageState.INCONCLUSIVE: ":grey_question:",
    TriageState.A_A_ONLY: ":left_right_arrow:",
    TriageState.ERROR: ":warning:",
    TriageState.REFUSED: ":no_entry_sign:",
}
STATE_MEANING = {
    TriageState.NEW: "received, not yet planned",
    TriageState.PLANNED: "a rerun is planned, waiting for a lab host",
    TriageState.RUNNING: "base and suspect samples are being taken",
    TriageState.CONFIRMED: "the rerun shows the reported change",
    TriageState.NOT_REPRODUCED: "the rerun rules the reported change out",
    TriageState.INCONCLUSIVE: "the budget of runs was spent without a decision",
    TriageState.A_A_ONLY: "base and suspect ran on the same kernel (the host cannot switch kernels): "
                          "noise measured, no verdict on the commit",
    TriageState.ERROR: "the rerun failed; see the thread",
    TriageState.REFUSED: "no safe rerun could be planned from the report; see the thread",
}
_STATE_TEXTS = frozenset(state.value for state in TriageState)


# --- links --------------------------------------------------------------------------------------


def lore_url(message_id: str | None, base: str = LORE_BASE) -> str | None:
    if not message_id:
        return None
    # "/" inside a Message-ID must not end the path segment; "@", "+", "=" are kept as lore shows them.
    return f"{base}{quote(message_id.strip('<>'), safe='@+=-._~!$&*,;:')}/"


def commit_url(tree: str | None, sha: str) -> str | None:
    """A link to the commit in its tree, for the web front ends kernel trees live on (by the
    URL's host or its cgit path, never by a name anywhere in it); `link` still checks it whole."""
    if not tree or not tree.startswith(("http://", "https://")):
        return None
    tree = tree.rstrip("/")
    try:
        host, path = (urlsplit(tree).hostname or ""), urlsplit(tree).path
    except ValueError:
        return None
    if host in ("github.com", "www.github.com") or host == "gitlab.com" or host.startswith("gitlab."):
        return f"{tree.removesuffix('.git')}/commit/{sha}"
    if host == "git.kernel.org" or "/cgit/" in path:
        return f"{tree}/commit/?id={sha}"
    return None


# --- text helpers -------------------------------------------------------------------------------



def percent(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}%"


def number(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.6g}"


def truncate(text: str, limit: int) -> str:
    """At most ``limit`` characters, ending with the marker when cut; a cut code block is closed."""
    if len(text) <= limit:
        return text
    keep = limit - len(TRUNCATED) - 1
    entity = text.rfind("&", max(0, keep - 4), keep)  # never cut an escape (`&amp;`) in two
    if entity >= 0 and ";" not in text[entity:keep]:
        keep = entity
    closing = ""
    if text[:keep].count("```") % 2:
        closing = "\n```"
        keep -= len(closing)
    return text[:keep].rstrip() + "\n" + TRUNCATED + closing


def _mrkdwn(text: str) -> Json:
    return {"type": "mrkdwn", "text": text}


def _section(text: str, fields: list[str] | None = None) -> Json:
    block: Json = {"type": "section", "text": _mrkdwn(text)}
    if fields:
        block["fields"] = [_mrkdwn(item) for item in fields]
    return block


def _context(*texts: str) -> Json:
    return {"type": "context", "elements": [_mrkdwn(text) for text in texts if text]}


def _header(text: str) -> Json:
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def fit(payload: Payload) -> Payload:
    """The payload cut to Slack's limits: each text to its maximum, blocks to 50, text to 40000."""
    blocks = []
    for block in payload.get("blocks") or []:
        block = dict(block)
        kind = block.get("type")
        if kind == "header":
            block["text"] = {**block["text"], "text": truncate(block["text"]["text"], MAX_HEADER_TEXT)}
        elif kind == "section":
            if "text" in block:
                block["text"] = {**block["text"],
                                 "text": truncate(block["text"]["text"], MAX_SECTION_TEXT)}
            if "fields" in block:
                block["fields"] = [{**item, "text": truncate(item["text"], MAX_FIELD_TEXT)}
                                   for item in block["fields"][:MAX_FIELDS]]
        elif kind == "context":
            block["elements"] = [
                {**item, "text": truncate(item["text"], MAX_CONTEXT_TEXT)} if "text" in item else item
                for item in block["elements"][:MAX_CONTEXT_ELEMENTS]]
        blocks.append(block)
    if len(blocks) > MAX_BLOCKS:
        omitted = len(blocks) - (MAX_BLOCKS - 1)
        blocks = blocks[:MAX_BLOCKS - 1] + [_context(f"{TRUNCATED}: {omitted} more blocks not shown")]
    fitted: Payload = {**payload, "text": truncate(payload.get("text") or "", MAX_MESSAGE_TEXT)}
    if blocks:
        fitted["blocks"] = blocks
    return fitted


# --- the parent message -------------------------------------------------------------------------

def _culprit(report: Json) -> Json | None:
    commits = report.get("commits") or []
    for commit in commits:
        if commit.get("role") == "culprit":
            return commit
    return None


def _headline_text(report: Json, record: Report) -> str:
    """An LKP report's headline line, signed as every display signs it (present/headline.py); a
    person's own subject, which says more than the change read from their prose ("events/s
    -24.6% regression" names no benchmark); a patch-regression's without parameters is a person's."""
    if record.headline and report.get("kind") not in ("human-report", "human-perf-complaint", "human-bug") and not (
            report.get("kind") == "patch-regression" and not report.get("parameters")):  # a person's: their subject
        return headline_text(record)
    return report.get("subject") or "(no subject)"


def _metric_table(report: Json, record: Report) -> str | None:
    rows = list(report.get("metrics") or [])
    if not rows:
        return None
    if len(rows) == len(record.metrics):  # the order `triage show` prints them in
        rows = [rows[index] for index in metric_order(record)]
    shown = rows[:MAX_METRIC_ROWS]
    width = min(48, max(len(row["name"]) for row in shown))
    lines = [f"{'metric':<{width}}  {'base':>12}  {'change':>8}  {'head':>12}"]
    for row in shown:
        change = (percent(row["change"]) if row.get("change_unit") == "percent"
                  else f"{row['change']:+.6g}")
        lines.append(f"{row['name'][:width]:<{width}}  {number(row['base']):>12}  {change:>8}  "
                     f"{number(row['head']):>12}")
    more = len(rows) - len(shown)
    if more:
        lines.append(f"… and {more} more rows in the report")
    return "```\n" + escape("\n".join(lines)) + "\n```"


def queued_text(queued: tuple[int, str]) -> str:
    """Where a waiting report is: `queued behind 2 on lab-1` (the report running there counts)."""
    ahead, host = queued
    return f"queued behind {ahead} on {host}"


def parent_message(record: Report, state: str, *, plan: Json | None = None, run: Json | None = None,
                   verdict: Json | None = None, lore_base: str = LORE_BASE,
                   queued: tuple[int, str] | None = None) -> Payload:
    """The one top-level message per report, re-rendered (chat.update) as the state moves; a
    planned report waiting for its host says where it is queued (`queued`: reports ahead, host)."""
    report = report_to_json(record)
    state = TriageState.of(state)
    verdict = verdict or (run or {}).get("verdict")
    headline = _headline_text(report, record)
    lore = lore_url(report.get("message_id"), lore_base)
    culprit = _culprit(report)
    machine = report.get("test_machine") or {}
    culprit_text = "unknown"
    if culprit:
        label = culprit["sha"][:12] + (f" {culprit['subject']}" if culprit.get("subject") else "")
        culprit_text = link(commit_url(culprit.get("tree"), culprit["sha"]), label)
        if culprit.get("tree"):
            culprit_text += f"\n{escape(culprit['tree'])}" + (
                f" {escape(culprit['branch'])}" if culprit.get("branch") else "")
    series = report.get("series") if report.get("kind") == "patch-regression" else None
    if series:  # issue 38: the suspect is a series under review, not a merged commit
        version = f" (v{series['version']})" if series.get("version") else ""
        culprit_text = "series under review: " + link(lore_url(series.get("message_id"), lore_base),
                                                      series["subject"] + version)
    fields = [
        f"*{'Suspect' if series else 'Culprit'}*\n{culprit_text}",
        f"*Testcase*\n{escape(report.get('testcase') or 'unknown')}",
        f"*Test machine*\n{escape(machine.get('description') or 'unknown')}"
        + (f" ({escape(machine['tbox_group'])})" if machine.get("tbox_group") else ""),
        f"*State*\n{STATE_EMOJI[state]} *{state}*: {STATE_MEANING[state]}"
        + (f" ({escape(queued_text(queued))})" if queued else ""),
    ]
    subject = escape(report.get("subject") or "(no subject)")
    summary = link(lore, report.get("subject") or "(no subject)") if lore else subject
    blocks: list[Json] = [
        _header(f"{STATE_EMOJI[state]} {headline}"),
        _section(f"{summary}\nfrom {escape(report.get('from') or 'unknown')}"
                 + (f", {escape(report['date'])}" if report.get("date") else ""), fields),
    ]
    table = _metric_table(report, record)
    if table:
        blocks.append(_section(table))
    notes = []
    if plan and plan.get("kind") == "plan":
        notes.append(f"plan: `{escape(plan.get('template', '?'))}` measuring "
                     f"{escape(plan.get('metric', '?'))}")
    if queued:
        notes.append(escape(queued_text(queued)))
    if run:
        notes.append(f"run on {escape(run.get('host', '?'))}: {len(run.get('samples') or [])} samples")
    if verdict and verdict.get("outcome") == A_A_ONLY:
        notes.append(f"A/A run only: noise {percent(verdict.get('measured_change_percent'))}")
    elif verdict:
        notes.append(f"verdict: *{verdict['outcome']}* ({percent(verdict.get('measured_change_percent'))} "
                     f"measured)")
    if lore:
        notes.append(link(lore, "lore"))
    blocks.append(_context(" · ".join(notes) if notes else f"state: {state}"))
    text = f"[{state}] {headline}"
    if culprit:
        text += f" in {culprit['sha'][:12]}"
        if culprit.get("subject"):
            text += f" ({culprit['subject']})"
    if lore:
        text += f" {lore}"
    if queued:
        text += f" · {queued_text(queued)}"
    return fit({"text": escape(text), "blocks": blocks})


# --- thread replies -----------------------------------------------------------------------------

def plan_reply(plan: Json) -> Payload:
    """The plan, or why there is none (a refusal)."""
    if plan.get("kind") == "refusal":
        missing = plan.get("missing") or []
        text = f"No rerun planned: {plan['reason']}"
        body = f"{STATE_EMOJI[TriageState.REFUSED]} *No rerun planned*: {escape(plan['reason'])}"
        if missing:
            body += "\nWould need: " + "; ".join(escape(item) for item in missing)
            text += " Would need: " + "; ".join(missing)
        return fit({"text": escape(text), "blocks": [_section(body)]})
    argv = " ".join(plan.get("argv") or [])
    better = plan.get("better", "?")
    lines = [f"{STATE_EMOJI[TriageState.PLANNED]} *Plan*: template `{escape(plan.get('template', '?'))}` "
             f"({escape(plan.get('source') or '?')}), measuring *{escape(plan.get('metric', '?'))}* "
             f"({better} is better)"]
    if plan.get("reported_change_percent") is not None:
        lines.append(f"Reported change: {percent(plan['reported_change_percent'])}"
                     + (f" in {escape(plan['report_metric'])}" if plan.get("report_metric") else ""))
    series = plan.get("series")
    if series:  # issue 38: a series under review, rerun as its base against base+series
        base_from = {"base-commit": "its base-commit", "robot": "the robot's base",
                     "quoted": "the base-commit quoted", "tree": "the tree its subject names"
                     }.get(series.get("base_from") or "", "its base")
        lines.append(f"Rerun: base `{escape(series.get('base') or '?')}` ({base_from}) against base + "
                     f"v{series.get('version')} of {escape(series.get('subject') or '?')} "
                     f"({series.get('parts')} patches, made am-ready by b4, built by the host's build_patched hook)")
    if plan.get("timeout_seconds"):
        lines.append(f"Timeout per sample: {plan['timeout_seconds']} s")
    if plan.get("runs_on"):
        lines.append(f"Runs on: {escape(plan['runs_on'])}")
    differs = [*(plan.get("storage_differs") or []), *(plan.get("notes") or [])]
    for title, items in (("Fitted to the host", plan.get("scaled")), ("Differs from the report", differs)):
        if items:
            lines.append(f"{title}:\n" + "\n".join(f"• {escape(item)}" for item in items))
    blocks = [_section("\n".join(lines)), _section(f"```\n{escape(argv)}\n```")]
    text = f"Plan: {plan.get('template', '?')} measuring {plan.get('metric', '?')}: {argv}"
    if series:
        text += f" (base {series.get('base')} against base + v{series.get('version')} of the series, via b4)"
    return fit({"text": escape(text), "blocks": blocks})


def moved_reply(note: str) -> Payload:
    """A report that waited past the cap for its most similar host runs on another: what differs."""
    return fit({"text": escape(f"Moved: {note}"),
                "blocks": [_section(f"{STATE_EMOJI[TriageState.PLANNED]} *Moved to another host*: {escape(note)}")]})


def progress_moment(samples_done: int, budget_samples: int) -> str | None:
    """Whether a run reached a moment worth a reply: "started" (first sample), "halfway"."""
    if samples_done == 1:
        return "started"
    if budget_samples >= 4 and samples_done == budget_samples // 2:
        return "halfway"
    return None


def _median(values: list[float]) -> float | None:
    values = sorted(value for value in values if value is not None and math.isfinite(value))
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def run_progress_reply(run: Json, moment: str, budget_samples: int | None = None) -> Payload:
    """A run's progress at one moment ("started", "halfway"): host, commits, medians so far."""
    samples = run.get("samples") or []
    done = len(samples)
    of = f" of up to {budget_samples}" if budget_samples else ""
    head = (f"{STATE_EMOJI[TriageState.RUNNING]} *Run {escape(moment)}* on `{escape(run.get('host', '?'))}`: "
            f"base `{escape(short_commit(run.get('base_commit', '?')))}` vs suspect "
            f"`{escape(short_commit(run.get('suspect_commit', '?')))}`, {done}{of} samples")
    text = (f"Run {moment} on {run.get('host', '?')}: base {short_commit(run.get('base_commit', '?'))} vs "
            f"suspect {short_commit(run.get('suspect_commit', '?'))}, {done}{of} samples")
    base = _median([sample["value"] for sample in samples if sample.get("role") == "base"])
    suspect = _median([sample["value"] for sample in samples if sample.get("role") == "suspect"])
    lines = [head]
    if base is not None and suspect is not None:
        change = (suspect / base - 1) * 100 if base else None
        so_far = f"Medians so far: base {number(base)}, suspect {number(suspect)} ({percent(change)})"
        lines.append(so_far)
        text += f". {so_far}"
    for event in (run.get("events") or [])[-3:]:
        lines.append(f"_{escape(event)}_")
    return fit({"text": escape(text), "blocks": [_section("\n".join(lines))]})


def verdict_reply(verdict: Json | None, run: Json | None = None) -> Payload:
    """The verdict with its reason and numbers; a run that ended in error says why; a same-kernel
    (A/A) run says it is no verdict and gives the noise it measured."""
    verdict = verdict or (run or {}).get("verdict")
    if verdict and verdict.get("outcome") == A_A_ONLY:
        return _a_a_reply(verdict, run or {})
    if not verdict:
        error = (run or {}).get("error") or "the run ended without a verdict"
        return fit({"text": escape(f"Run failed: {error}"),
                    "blocks": [_section(f"{STATE_EMOJI[TriageState.ERROR]} *Run failed*: {escape(error)}")]})
    outcome = str(verdict["outcome"])
    emoji = STATE_EMOJI[TriageState(outcome)] if outcome in _STATE_TEXTS else ""
    confidence = verdict.get("confidence")
    interval = (f"[{percent(verdict.get('ci_low'))}, {percent(verdict.get('ci_high'))}]"
                + (f" at {confidence_text(confidence)}" if isinstance(confidence, (int, float)) else ""))
    p_value = verdict.get("p_value")
    fields = [
        f"*Measured*\n{percent(verdict.get('measured_change_percent'))} {interval}",
        f"*Reported*\n{percent(verdict.get('reported_change_percent'))}",
        f"*Runs*\n{verdict.get('runs_base', '?')} base + {verdict.get('runs_suspect', '?')} suspect",
        f"*p*\n{number(p_value)} (alpha {number(verdict.get('alpha'))})",
        f"*Floor*\n{number(verdict.get('floor_percent'))}%",
        f"*Better*\n{escape(str(verdict.get('better', '?')))}",
    ]
    blocks = [_section(f"{emoji} *Verdict: {escape(outcome)}*\n{escape(verdict.get('reason') or '')}",
                       fields)]
    if verdict.get("host_can_switch_kernel") is False:
        blocks.append(_context(":warning: the host could not switch kernels: an A/A run, "
                               "no evidence about the commit"))
    kernels = kernels_line(verdict)
    if kernels:
        blocks.append(_context(escape(kernels)))
    text = (f"Verdict: {outcome}. {verdict.get('reason') or ''} Measured "
            f"{percent(verdict.get('measured_change_percent'))} {interval}."
            + (f" {kernels}" if kernels else ""))
    storage = storage_lines((run or {}).get("plan") or {})
    if storage:
        blocks.append(_context(*(escape(line) for line in storage)))
        text += " " + " ".join(storage)
    return fit({"text": escape(text), "blocks": blocks})


def kernels_line(verdict: Json) -> str | None:
    """Where the measured kernels ran, when a ready switcher built and booted them: a guest's
    numbers are not hardware's, and the reader is told so beside them."""
    where = verdict.get("kernel_switch")
    if not where:
        return None
    guest = "guest" in where or "User-mode" in where
    return (f"Kernels built and booted by triagebot, the benchmark run {where}"
            + (": emulated or UML magnitudes, not hardware's (docs/kernels.md)" if guest else ""))


def _a_a_reply(verdict: Json, run: Json) -> Payload:
    """A same-kernel run: what it measured (noise) and that it says nothing about the commit."""
    noise = verdict.get("noise") or {}
    spread = noise.get("spread_percent")
    interval = f"[{percent(verdict.get('ci_low'))}, {percent(verdict.get('ci_high'))}]"
    fields = [
        f"*Noise (A against A)*\n{percent(verdict.get('measured_change_percent'))} {interval}",
        "*Run-to-run spread*\n" + (f"±{spread:.1f}%" if isinstance(spread, (int, float)) else "n/a"),
        f"*Runs*\n{verdict.get('runs_base', '?')} + {verdict.get('runs_suspect', '?')} on one kernel",
        f"*Reported*\n{percent(verdict.get('reported_change_percent'))}",
    ]
    head = (f"{STATE_EMOJI[TriageState.A_A_ONLY]} *A/A run only: no verdict on the commit*\n"
            f"{escape(verdict.get('reason') or '')}")
    blocks = [_section(head, fields),
              _context(":warning: describe a lab host that can switch kernels in hosts.toml for a verdict")]
    text = f"A/A run only (a-a-only), no verdict on the commit. {verdict.get('reason') or ''}"
    storage = storage_lines(run.get("plan") or {})
    if storage:
        blocks.append(_context(*(escape(line) for line in storage)))
        text += " " + " ".join(storage)
    return fit({"text": escape(text), "blocks": blocks})


# the buttons on parent and verdict messages (actions/act.py, web/slack_app.py; docs/slack.md, "Acting from Slack")
ACTION_BUTTONS = (("rerun", "Rerun with a bigger budget"), ("rerun-with", "Rerun with…"), ("test-fix", "Test fix"),
                  ("bisect", "Bisect"), ("mark-invalid", "Mark invalid"), ("duplicate", "Duplicate of…"),
                  ("send-upstream", "Send reply upstream"))


def action_buttons(message_id: str) -> Json:
    """The buttons a team member acts with (triagebot/actions/act.py); each carries the report's id."""
    return {"type": "actions", "block_id": "triage-actions", "elements": [
        {"type": "button", "action_id": action, "text": {"type": "plain_text", "text": label},
         "value": message_id} for action, label in ACTION_BUTTONS]}


def with_buttons(payload: Payload, message_id: str) -> Payload:
    """The payload with the action buttons below it."""
    return {**payload, "blocks": [*payload.get("blocks", []), action_buttons(message_id)]}


def action_reply(text: str) -> Payload:
    """The thread reply saying who did what to the report, from Slack (triagebot/actions/act.py)."""
    return fit({"text": text, "blocks": [_section(text)]})


def storage_lines(plan: Json) -> list[str]:
    """What a plan's benchmark ran on, and each way that differs from the report's storage."""
    lines = []
    if plan.get("runs_on"):
        lines.append(f"Ran on {plan['runs_on']}.")
    lines += [f"Differs from the report: {item}." for item in plan.get("storage_differs") or []]
    return lines


def with_section(payload: Payload, text: str) -> Payload:
    """The payload with one more section of mrkdwn text at its end, still within the limits."""
    return fit({"text": payload.get("text") or "", "blocks": [*(payload.get("blocks") or []), _section(text)]})


def plot_title(report: Report, run: Json) -> str:
    metric = (run.get("plan") or {}).get("metric") or (report.headline.metric if report.headline else "metric")
    if (run.get("verdict") or {}).get("outcome") == A_A_ONLY:
        return f"{metric}: A/A on {run.get('host', '?')}, both sides on its running kernel (noise, no verdict)"
    return (f"{metric}: base {short_commit(run.get('base_commit', '?'))} vs suspect "
            f"{short_commit(run.get('suspect_commit', '?'))} on {run.get('host', '?')}")


MAX_DIGEST_ITEMS = 40  # one message: Slack takes 50 blocks
DIGEST_STATEMENT = 200  # characters of a reading's sentence a digest line quotes


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


DECIDE_BUTTON = "decide"  # web/slack_app.py opens the take-on-or-dismiss modal
DISMISS_BUTTON = "dismiss"  # a reply's unsure stance: dismissed at once (a reply is never taken on)


def decide_button(record: Report) -> Json:
    """A digest line's one button (issue 38): a report's opens the choice to take it on or dismiss
    it; a reply's dismisses its unsure reading. Its value is the message's id."""
    action, label = (DISMISS_BUTTON, "Dismiss") if record.kind == "reply" else (DECIDE_BUTTON, "Take on / dismiss…")
    return {"type": "button", "action_id": action, "text": {"type": "plain_text", "text": label},
            "value": record.message_id or ""}


def digest_message(day: str, items: list[tuple[Report, tuple[str, ...]]],
                   lore_base: str = LORE_BASE) -> Payload:
    """The day's one message of what the daemon was unsure of (certainty.py), a line each with its
    button to take it on or dismiss it (the same as `triage take-on|dismiss KEY`)."""
    blocks: list[Json] = [_header(f":grey_question: Unsure readings of {day}: {len(items)}")]
    for record, reasons in items[:MAX_DIGEST_ITEMS]:
        subject = record.subject or "(no subject)"
        lore = lore_url(record.message_id, lore_base)
        line = (f"• {link(lore, subject)} ({escape(record.kind)}, {escape(record.from_ or 'unknown')}): "
                f"{escape('; '.join(reasons))}")
        if record.series is not None and record.series.statement:  # the sentence to decide on
            line += f" — “{escape(_cut(' '.join(record.series.statement.split()), DIGEST_STATEMENT))}”"
        button = decide_button(record)
        # Slack takes a button's value up to 2,000 characters: a longer id is decided by command
        blocks.append({**_section(line), "accessory": button} if 0 < len(button["value"]) <= 2000 else _section(line))
    more = len(items) - MAX_DIGEST_ITEMS
    if more > 0:
        blocks.append(_context(f"{more} more: `triage list --uncertain --since {day}`, or the web page's to look at"))
    blocks.append(_context("Not taken on, no thread: take each on or dismiss it (its button, or "
                           "`triage take-on KEY` / `triage dismiss KEY`); what you decide is kept as a label."))
    text = f"Unsure readings of {day}: {len(items)} (" + "; ".join(
        f"{record.subject or '(no subject)'}" for record, _ in items[:5]) + (" …" if len(items) > 5 else "") + ")"
    return fit({"text": escape(text), "blocks": blocks})

