"""Bisection on the lab: bisect a range on a host, stored after every step and posted once.

What `triage bisect`, the Slack Bisect button and the daemon's bisections hand off to: it takes the
host's lock, runs on its executor, and writes the result together with its one Slack reply (an
outbox row keyed by the result), so a crash neither loses nor repeats it. Fix tests run the same
way (fix_test/lab.py); which host either runs on is lab/runner.py's.

Before any run it lists the range, resolves a good end given by name (a tag) to its sha through
the host's own list_commits hook (the commits after `good^` up to `good`: the good commit), and
estimates the cost (estimate.py) from the host's stored runs: a bisection likely over its budget
is refused (BisectRefused) unless `confirm` says go on. While it runs, every sample updates its
progress (progress.py): the line `announce_sample` is given, the `progress` stored with the
bisection (the web page reads it), and, for a report the daemon took on, ONE progress message in
its Slack thread, posted at the start and edited in place (store.edit_notification: a pending
edit takes the newer text) at each step's first sample and at most once a minute between,
never a post a sample.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from triagebot.bisect.estimate import HISTORY_RUNS, Estimate, estimate, host_times
from triagebot.bisect.progress import progress
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
PROGRESS_KIND = "bisect-progress-"  # + the bisection's id: its one progress message in the thread
# Slack's progress message is edited at a step's first sample and then at most this often: a
# sample of the test lab takes a second, and Slack rate-limits chat.update to about one a second
PROGRESS_EDIT_SECONDS = 60.0


class BisectRefused(TriageError):
    """The bisection likely exceeds its budget and nobody said to go on: nothing was run."""


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


def parent_of(commit: str) -> str | None:
    """`commit`'s first parent as a ref the hooks take (`v1.0^`, `abc^` -> `abc~2`); None past ~9999."""
    if commit.endswith("^"):
        return f"{commit[:-1]}~2"
    base, tilde, count = commit.rpartition("~")
    if tilde and count.isdigit():
        return f"{base}~{int(count) + 1}" if int(count) < 9999 else None
    return f"{commit}^"


def resolve_commit(host: Host, executor: Executor, commit: str) -> str | None:
    """The sha of `commit` (a tag, a branch, `X^`) by the host's own list_commits hook: the commits
    after its parent up to it are it alone. None when the hook cannot say (a root commit, a ref
    the hook refuses): the log then names it as given."""
    if _SHA.fullmatch(commit):
        return commit
    parent = parent_of(commit)
    if parent is None:
        return None
    try:
        listed = list_commits(host, executor, parent, commit)
    except TriageError:
        return None
    return listed[-1] if len(listed) == 1 else None


def progress_payload(line: str, estimate_lines: list[str], *, ended: bool = False) -> Json:
    """The progress message of a bisection in its Slack thread, as posted and as each edit says it."""
    text = f"Bisect {'ended' if ended else 'in progress'}: {line}"
    payload = render.with_section({"text": text, "blocks": []}, f"*{render.escape(text)}*")
    return render.with_section(payload, "```" + render.escape("\n".join(estimate_lines)) + "```")


def bisect_reply(result: Json) -> Json:
    """The Slack reply: the summary, then the log with every step's numbers."""
    payload = render.with_section({"text": render.escape(f"Bisect: {bisect_summary(result)}"), "blocks": []},
                                  f"*Bisect*: {render.escape(bisect_summary(result))}")
    return render.with_section(payload, f"```{render.escape(bisect_log(result))}```")


def bisect_on_lab(store: Store, database: Path, message_id: str, host: Host, plan: Plan, floor_percent: float,
                  good: str, bad: str, budget: BisectBudget,
                  announce: Callable[[str], None] = lambda line: None, *, bisect_id: int | None = None,
                  on_sample: Callable[[Sample], None] | None = None,
                  extra: Json | None = None, confirm: Callable[[Estimate, str], bool] | None = None,
                  announce_sample: Callable[[str], None] | None = None,
                  clock: Callable[[], float] = time.monotonic, kernel_config: Any = None,
                  report_options: tuple[tuple[str, str], ...] = ()) -> tuple[Json, int, bool]:
    """Bisect good..bad on `host`, stored after every step and every sample's progress (on the row
    `bisect_id` when given: the daemon's queued one, `extra` kept in its JSON); (result, its id,
    whether posted). BisectRefused, nothing run, when the estimate exceeds the budget and
    `confirm(estimate, why)` (None: no one to ask) does not say go on. With a switcher, each
    commit is built with `kernel_config` (the report's, else the host's) and `report_options`."""
    triage = store.get_triage(message_id)
    state: Json = {"step": 0, "steps": 0, "sample": 0, "runs": 0, "latest": {}, "edited": None}

    def stored(result: Json) -> Json:
        return result | {"host": host.name, "plan": plan.to_json(), "message_id": message_id} | (extra or {})

    def save(result: Json) -> None:
        nonlocal bisect_id
        state["latest"] = result
        bisect_id = store.save_bisect(message_id, stored(result) | {"progress": state.get("progress")}, bisect_id)
        latest = result["steps"][-1] if result["steps"] else None
        if latest and latest["attempts"] and result["status"] == "running":
            verdict = latest["attempts"][-1].get("verdict") or {}
            announce(f"step {latest['step']} attempt {len(latest['attempts'])}: {latest['suspect'][:12]} "
                     f"{verdict.get('outcome', '?')}")

    with host_lock(database, host.name), executor_for(host) as executor:
        commits = list_commits(host, executor, good, bad)
        good_sha = resolve_commit(host, executor, good)
        announce(f"{len(commits)} commits after {good}" + (f" ({good_sha})" if good_sha and good_sha != good else "")
                 + f" up to {bad}" + (f" ({commits[-1]})" if commits[-1] != bad else ""))
        times = host_times(store.recent_runs(HISTORY_RUNS), host.name)
        planned = estimate(len(commits), budget, times)
        for line in planned.lines():
            announce(line)
        why = planned.over_budget()
        if why is not None and (confirm is None or not confirm(planned, why)):
            raise BisectRefused(f"not started: {why} (raise --max-hours/--max-runs, or give a narrower "
                                f"--good/--bad)")
        started = clock()
        names = {"good_sha": good_sha} if good_sha and good_sha != good else {}
        if not commits[-1].startswith(bad):  # a name (a tag, `X^`), not the sha or its prefix
            names["bad_given"] = bad
        state["latest"] = {"kind": "bisect", "status": "running", "good": good, "bad": commits[-1],
                           "commits": len(commits), "first_bad": None, "steps": [], "runs_used": 0} | names
        estimate_json = {"commits": len(commits), "steps": planned.steps, "runs": planned.runs,
                         "most_runs": planned.most_runs, "seconds": planned.seconds, "lines": planned.lines()}
        state["progress"] = progress(1, planned.steps, 0, 0, 0.0, runs_a_step=planned.runs_a_step,
                                     history_run_seconds=times.run_seconds if times else None).to_json()
        bisect_id = store.save_bisect(message_id, stored(state["latest"] | {"estimate": estimate_json,
                                                                            "progress": state["progress"]}), bisect_id)
        progress_kind = f"{PROGRESS_KIND}{bisect_id}"
        if triage is not None:
            store.enqueue(message_id, progress_kind, triage.channel,
                          progress_payload(state["progress"]["text"], planned.lines()))

        def on_step(step: int, steps: int, _suspect: str) -> None:
            state.update(step=step, steps=steps, sample=0)

        def sampled(sample: Sample) -> None:
            state["sample"] += 1
            state["runs"] += 1
            now = progress(state["step"], state["steps"], state["sample"], state["runs"], clock() - started,
                           runs_a_step=planned.runs_a_step,
                           history_run_seconds=times.run_seconds if times else None)
            state["progress"] = now.to_json()
            store.save_bisect(message_id, stored(state["latest"] | {"estimate": estimate_json,
                                                                    "progress": state["progress"]}), bisect_id)
            edited = state["edited"]
            if triage is not None and (state["sample"] == 1 or edited is None
                                       or clock() - edited >= PROGRESS_EDIT_SECONDS):
                state["edited"] = clock()
                store.edit_notification(message_id, progress_kind, triage.channel,
                                        progress_payload(now.text(), planned.lines()))
            if announce_sample is not None:
                announce_sample(now.line())
            if on_sample is not None:
                on_sample(sample)

        def measure(base: str, suspect: str, schedule: LookSchedule, reported: float | None) -> Json:
            measured = replace(plan, reported_change_percent=reported)
            return rerun(measured, host, executor, base, suspect, rounds=schedule,
                         floor_percent=floor_percent, on_sample=sampled, kernel_config=kernel_config,
                         report_options=report_options).to_json()

        def saved(result: Json) -> None:
            save(result | names | {"estimate": estimate_json})

        result = stored(bisect(commits, good, measure, budget, reported_change_percent=plan.reported_change_percent,
                               on_progress=saved, on_step=on_step, clock=clock)
                        | names | {"estimate": estimate_json, "progress": state.get("progress")})
    with store.transaction():
        bisect_id = store.save_bisect(message_id, result, bisect_id)
        posted = triage is not None and store.enqueue(message_id, f"bisect-{bisect_id}", triage.channel,
                                                      bisect_reply(result))
        if triage is not None:
            store.edit_notification(message_id, progress_kind, triage.channel, progress_payload(
                f"{len(result['steps'])} steps, {result['runs_used']} runs: {bisect_summary(result)}",
                planned.lines(), ended=True))
    return result, bisect_id, posted
