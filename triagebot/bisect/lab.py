"""Bisection on the lab: bisect a range on a host, stored after every step and posted once.

What `triage bisect`, the Slack Bisect button and the daemon's bisections hand off to: it takes the
host's lock, runs on its executor, and writes the result together with its one Slack reply (an
outbox row keyed by the result), so a crash neither loses nor repeats it. Fix tests run the same
way (fix_test/lab.py); which host either runs on is lab/runner.py's.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from triagebot.bisect.search import BisectBudget, bisect, bisect_log, bisect_summary
from triagebot.errors import TriageError
from triagebot.kernels.build import KernelBuilder
from triagebot.notify import render
from triagebot.records.report import Report
from triagebot.reproduce.executors.choose import executor_for
from triagebot.reproduce.executors.protocol import Executor
from triagebot.reproduce.host_lock import host_lock
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.plan import Plan, Templates, plan_report
from triagebot.reproduce.rounds import commits_of
from triagebot.reproduce.runner import HOOK_TIMEOUT_SECONDS, Sample, rerun
from triagebot.rules.floors import MetricFloors
from triagebot.rules.hosts import Host
from triagebot.store.protocol import Store
from triagebot.verdict.sequential import LookSchedule

Json = dict[str, Any]
_SHA = re.compile(r"[0-9a-f]{7,64}")
MAX_COMMITS = 1 << 20  # more lines than any kernel range: the hook's output is not a commit list


NO_BISECT_HOST = ("no host in hosts.toml can bisect: one needs a switcher (vm, uml, kexec) or switch_kernel and "
                  "list_commits hooks")


@dataclass(frozen=True)
class BisectSetup:
    """What a bisection of a report on a host runs: the plan, the range, the metric's floor."""

    plan: Plan
    good: str
    bad: str
    floor_percent: float


def plan_bisect(report: Report, host: Host, templates: Templates, floors: MetricFloors,
                good: str | None = None, bad: str | None = None) -> BisectSetup | str:
    """The plan for `host` and the range (the report's base..culprit unless given); the reason
    as a string when there is none. `triage bisect` and the Slack Bisect button both start here."""
    plan = plan_report(report, templates, host=host_shape(host))
    if not isinstance(plan, Plan):
        return f"not planned: {plan.reason}"
    default_good, default_bad = commits_of(report)
    good, bad = good or default_good, bad or default_bad
    if not good or not bad:
        return "the report names no good and bad commit (`triage bisect` takes --good and --bad)"
    return BisectSetup(plan, good, bad, floors.floor_for(plan.report_metric or plan.metric))


def list_commits(host: Host, executor: Executor, good: str, bad: str) -> list[str]:
    """The commits after good up to bad, oldest first, as the host's hook lists them (a ready
    switcher's: from its kernel tree's clone, first parents only)."""
    if host.switcher is not None:
        clone = KernelBuilder(host.switcher.kernel_tree, host.switcher.builds).clone
        commits = clone.commits_between(good, bad)
        if not commits:
            raise TriageError(f"host {host.name}: no commits between {good} and {bad} in kernel tree "
                              f"{host.switcher.kernel_tree.name}")
        return commits
    try:
        argv = host.list_commits_argv(good, bad)
    except ValueError as error:
        raise TriageError(str(error)) from None
    completed = executor.run(argv, timeout=HOOK_TIMEOUT_SECONDS)
    if not completed.ok:
        detail = " ".join(completed.stderr.decode("utf-8", "replace").split())[-300:]  # one line
        raise TriageError(f"host {host.name}: list_commits hook {list(argv)} failed (exit {completed.returncode}): "
                          f"{detail}")
    lines = completed.stdout.decode("utf-8", "replace").split()
    if len(lines) > MAX_COMMITS or not all(_SHA.fullmatch(line) for line in lines):
        bad_line = next((line for line in lines if not _SHA.fullmatch(line)), lines[0] if lines else "")
        raise TriageError(f"host {host.name}: list_commits printed {bad_line[:60]!r}, not one commit sha a line")
    if not lines:
        raise TriageError(f"host {host.name}: no commits between {good} and {bad} (is {good} an ancestor of {bad}?)")
    return lines


def bisect_reply(result: Json) -> Json:
    """The Slack reply: the summary, then the log with every step's numbers."""
    payload = render.with_section({"text": f"Bisect: {bisect_summary(result)}", "blocks": []},
                                  f"*Bisect*: {render.escape(bisect_summary(result))}")
    return render.with_section(payload, f"```{render.escape(bisect_log(result))}```")


def bisect_on_lab(store: Store, database: Path, message_id: str, host: Host, plan: Plan, floor_percent: float,
                  good: str, bad: str, budget: BisectBudget,
                  announce: Callable[[str], None] = lambda line: None, *, bisect_id: int | None = None,
                  on_sample: Callable[[Sample], None] | None = None,
                  extra: Json | None = None, kernel_config: Any = None,
                  report_options: tuple[tuple[str, str], ...] = ()) -> tuple[Json, int, bool]:
    """Bisect good..bad on `host`, stored after every attempt (on the row `bisect_id` when given:
    the daemon's queued one, `extra` kept in its JSON); (result, its id, whether posted)."""

    def stored(result: Json) -> Json:
        return result | {"host": host.name, "plan": plan.to_json(), "message_id": message_id} | (extra or {})

    def save(result: Json) -> None:
        nonlocal bisect_id
        bisect_id = store.save_bisect(message_id, stored(result), bisect_id)
        latest = result["steps"][-1] if result["steps"] else None
        if latest and latest["attempts"] and result["status"] == "running":
            verdict = latest["attempts"][-1].get("verdict") or {}
            announce(f"step {latest['step']} attempt {len(latest['attempts'])}: {latest['suspect'][:12]} "
                     f"{verdict.get('outcome', '?')}")

    with host_lock(database, host.name), executor_for(host) as executor:
        commits = list_commits(host, executor, good, bad)
        announce(f"{len(commits)} commits after {good} up to {bad}")

        def measure(base: str, suspect: str, schedule: LookSchedule, reported: float | None) -> Json:
            measured = replace(plan, reported_change_percent=reported)
            return rerun(measured, host, executor, base, suspect, rounds=schedule,
                         floor_percent=floor_percent, on_sample=on_sample, kernel_config=kernel_config,
                         report_options=report_options).to_json()

        result = stored(bisect(commits, good, measure, budget, reported_change_percent=plan.reported_change_percent,
                               on_progress=save))
    triage = store.get_triage(message_id)
    with store.transaction():
        bisect_id = store.save_bisect(message_id, result, bisect_id)
        posted = triage is not None and store.enqueue(message_id, f"bisect-{bisect_id}", triage.channel,
                                                      bisect_reply(result))
    return result, bisect_id, posted


