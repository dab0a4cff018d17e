"""Fix testing: does a proposed fix recover a confirmed regression? Suspect against
suspect+fix on the lab, with the rerun's plan and statistics, and the share recovered.

The host's `build_patched` hook applies the am-ready mbox (triagebot.reproduce.fix) on the
suspect and builds it, naming the patched kernel; then the suspect (base) runs against it
(suspect), interleaved and adaptive as a rerun, judged against the improvement that would undo
the regression entirely. With the regression measured by the report's verdict as the ratio
r = suspect/base and the fix's as f = fixed/suspect, the share recovered is (f - 1) / (1/r - 1):
100% when the fix brings the metric back to base, 0% when it changes nothing; its interval is
the fix's interval through the same formula (the regression taken as measured).

"recovers" needs the fix's verdict confirmed (a significant change the right way, over the floor)
AND the recovery's interval to stay above the recovery floor of rules/fix_tests.toml (80% by
default): only then does the drafted reply carry `Tested-by:`. Confirmed with an interval that
reaches below the floor (or is unbounded) "partly recovers": said with the interval, no tag.
"does not recover" needs the verdict ruled out (not-reproduced: the interval excludes half the
recovery); anything else is inconclusive and says so.
"""
from __future__ import annotations

import math
from typing import Any

from triagebot.errors import TriageError
from triagebot.reproduce.executors.protocol import Executor
from triagebot.reproduce.runner import HOOK_TIMEOUT_SECONDS
from triagebot.rules.fix_tests import DEFAULT_RECOVERY_FLOOR_PERCENT
from triagebot.rules.hosts import Host
from triagebot.verdict.outcome import confidence_text, signed_percent

Json = dict[str, Any]
BUILD_TIMEOUT_SECONDS = 4 * HOOK_TIMEOUT_SECONDS  # a kernel build with the patches applied


def build_patched(host: Host, executor: Executor, suspect: str, mbox: bytes) -> str:
    """Put the am-ready mbox on the host, run its build_patched hook; the patched kernel's ref."""
    scratch = executor.make_scratch()
    path = f"{scratch}/fix.mbx"
    executor.put_file(path, mbox)
    try:
        argv = host.build_patched_argv(suspect, path)
    except ValueError as error:
        raise TriageError(str(error)) from None
    completed = executor.run(argv, timeout=BUILD_TIMEOUT_SECONDS)
    if not completed.ok:
        detail = " ".join(completed.stderr.decode("utf-8", "replace").split())[-300:]  # one line
        raise TriageError(f"host {host.name}: build_patched hook failed (exit {completed.returncode}): {detail}")
    lines = completed.stdout.decode("utf-8", "replace").split()
    if not lines:
        raise TriageError(f"host {host.name}: build_patched printed no kernel to switch to")
    return lines[-1]


def full_recovery_percent(regression_percent: float) -> float:
    """The change from suspect back to base: +66.7% undoes a -40% regression."""
    return (1.0 / (1.0 + regression_percent / 100.0) - 1.0) * 100.0


def recovered_share(fix_percent: float | None, regression_percent: float) -> float | None:
    """The share of the regression a fix's change recovers, in percent (None when unbounded)."""
    if fix_percent is None or not math.isfinite(fix_percent):
        return None
    return fix_percent / full_recovery_percent(regression_percent) * 100.0


RECOVERS, PARTLY, NOT_RECOVERED, INCONCLUSIVE = "recovers", "partly recovers", "does not recover", "inconclusive"


def fix_result(regression_percent: float, verdict: Json,
               recovery_floor_percent: float = DEFAULT_RECOVERY_FLOOR_PERCENT) -> Json:
    """The fix's verdict (suspect vs suspect+fix) as recovery: the share, its interval, the call
    (a confirmed fix `recovers` only when the interval's lower bound clears the recovery floor)."""
    share = recovered_share(verdict.get("measured_change_percent"), regression_percent)
    low = recovered_share(verdict.get("ci_low"), regression_percent)
    high = recovered_share(verdict.get("ci_high"), regression_percent)
    if low is not None and high is not None and low > high:
        low, high = high, low
    outcome = str(verdict["outcome"])
    call = {"confirmed": RECOVERS, "not-reproduced": NOT_RECOVERED}.get(outcome, INCONCLUSIVE)
    if call == RECOVERS and (low is None or high is None or low < recovery_floor_percent):
        call = PARTLY  # significant, but the interval allows less than the floor: no Tested-by
    level = confidence_text(float(verdict.get("confidence") or 0.95))
    interval = "unbounded" if low is None or high is None else f"{low:.0f}–{high:.0f}%"
    share_text = "?" if share is None else f"{share:.0f}%"
    if call == RECOVERS:
        sentence = f"the fix recovers {share_text} of the regression ({level} CI {interval})"
    elif call == PARTLY:
        sentence = (f"the fix partly recovers the regression: {share_text} ({level} CI {interval}), and the "
                    f"interval reaches below the {recovery_floor_percent:g}% a Tested-by needs")
    elif call == "does not recover":
        sentence = f"the fix does not recover the regression (it recovers {share_text}, {level} CI {interval})"
    else:
        sentence = (f"inconclusive: the fix recovers {share_text} of the regression ({level} CI {interval}); "
                    f"more runs needed")
    return {"call": call, "recovered_percent": share, "ci_low_percent": low, "ci_high_percent": high,
            "regression_percent": regression_percent, "recovery_floor_percent": recovery_floor_percent,
            "sentence": sentence}


def tested_by_draft(result: Json, *, subject: str, in_reply_to: str, tester: str, host: str, metric: str,
                    to: str = "", cc: str = "") -> str:
    """A reply to the series with the numbers and, when the fix recovers past the recovery floor,
    a Tested-by: (a draft); a fix that partly recovers gets the numbers and no tag. Addressed To
    `to` and Cc `cc` (parse/reply_to.py chose them; empty: the line is left out)."""
    verdict = result["verdict"]
    change = verdict.get("measured_change_percent")
    addressed = [f"To: {to}"] if to else []
    addressed += [f"Cc: {cc}"] if cc else []
    lines = [f"Subject: Re: {subject}", *addressed, f"In-Reply-To: <{in_reply_to}>", f"References: <{in_reply_to}>",
             "",
             f"On our lab (host {host}), {metric} of {result['suspect'][:12]} against {result['suspect'][:12]} "
             f"with v{result['version']} of this series applied:",
             f"  {signed_percent(change) if change is not None else '?'} over "
             f"{verdict.get('runs_base')}+{verdict.get('runs_suspect')} runs; the regression was "
             f"{signed_percent(result['recovery']['regression_percent'])}.",
             f"  So {result['recovery']['sentence']}.", ""]
    if result["recovery"]["call"] == RECOVERS:
        lines.append(f"Tested-by: {tester}")
    return "\n".join(lines) + "\n"
