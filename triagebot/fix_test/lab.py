"""Fix testing on the lab: suspect against suspect+fix on a host, and the reply drafted from it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from triagebot.errors import TriageError
from triagebot.fix_test.recovery import build_patched, fix_result, full_recovery_percent, tested_by_draft
from triagebot.fix_test.series import PreparedFix
from triagebot.reproduce.executors.protocol import Executor
from triagebot.reproduce.plan import Plan
from triagebot.reproduce.runner import Sample, rerun
from triagebot.rules.fix_tests import DEFAULT_RECOVERY_FLOOR_PERCENT
from triagebot.rules.hosts import Host
from triagebot.verdict.sequential import LookSchedule

Json = dict[str, Any]


def measure_fix(host: Host, executor: Executor, plan: Plan, floor_percent: float, suspect: str,
                regression_percent: float, fix: PreparedFix, mbox: bytes, *, rounds: LookSchedule,
                on_sample: Callable[[Sample], None] | None = None,
                recovery_floor_percent: float = DEFAULT_RECOVERY_FLOOR_PERCENT) -> Json:
    """Suspect against suspect+fix on `host` (its lock held by the caller): the host's
    build_patched hook applies b4's mbox on the suspect, then the rerun's plan and statistics
    judge the patched kernel against the suspect. The result; TriageError when the run fails."""
    patched = build_patched(host, executor, suspect, mbox)
    measured = replace(plan, reported_change_percent=full_recovery_percent(regression_percent))
    record = rerun(measured, host, executor, suspect, patched, rounds=rounds, floor_percent=floor_percent,
                   on_sample=on_sample)
    run_json = record.to_json()
    if record.status != "done" or not run_json.get("verdict"):
        raise TriageError(f"the fix's run on {host.name} ended in error: {record.error}")
    return {"kind": "test-fix", "host": host.name, "suspect": suspect, "patched": patched,
            "version": fix.version, "subjects": list(fix.subjects), "trailers": list(fix.trailers),
            "series": fix.message_id, "series_subject": fix.subject, "metric": plan.output_metric,
            "verdict": run_json["verdict"], "samples": run_json.get("samples", []),
            "recovery": fix_result(regression_percent, run_json["verdict"], recovery_floor_percent)}


def fix_draft(result: Json, tester: str, to: str = "", cc: str = "") -> str:
    """The drafted reply to the series (printed and stored, never sent), To and Cc as given."""
    return tested_by_draft(result, subject=result["series_subject"], in_reply_to=result["series"], tester=tester,
                           host=result["host"], metric=result["metric"], to=to, cc=cc)
