"""After the verdict, on the lab: which host a report's later steps (a bisection, a fix test)
run on, and whether that host can take them."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from triagebot.errors import TriageError
from triagebot.reproduce.plan import Plan, plan_from_json
from triagebot.rules.hosts import Host
from triagebot.store.protocol import Store

Json = dict[str, Any]


def rerun_host(store: Store, message_id: str) -> str:
    """The host of a report's last stored rerun ("" when it has none): where its fix tests and
    the daemon's bisections run."""
    return str((store.latest_run(message_id) or {}).get("host") or "")


def can_bisect(host: Host) -> bool:
    """A host bisects when it can switch kernels and list the commits of a range: its hooks, or a
    ready switcher (which lists them from its kernel tree)."""
    return host.switcher is not None or (host.can_switch_kernel and bool(host.list_commits))


def can_test_fixes(host: Host) -> bool:
    """A host tests a fix when it can switch kernels and build the suspect with the patches."""
    return host.can_switch_kernel and bool(host.build_patched)


AFTER_VERDICT_STEPS: dict[str, tuple[Callable[[Host], bool], str]] = {
    "test fixes": (can_test_fixes, "switch_kernel and build_patched hooks"),
    "bisect": (can_bisect, "a switcher, or switch_kernel and list_commits hooks"),
}


def confirmed_host_and_plan(latest: Json, hosts: tuple[Host, ...], purpose: str) -> tuple[Host, Plan]:
    """The host and plan of a report's confirmed rerun (`latest`), for a step taken after it there
    (`purpose`: a key of AFTER_VERDICT_STEPS); TriageError when the host is gone from hosts.toml or
    lacks the step's hooks, or the stored plan cannot be read."""
    able, hooks = AFTER_VERDICT_STEPS[purpose]
    host = next((item for item in hosts if item.name == latest.get("host")), None)
    if host is None or not able(host):
        raise TriageError(f"host {latest.get('host')} (of the confirmed rerun) cannot {purpose}: it needs "
                          f"{hooks} in hosts.toml")
    plan = plan_from_json(latest.get("plan") or {})
    if not isinstance(plan, Plan):
        raise TriageError("the confirmed rerun's plan cannot be read")
    return host, plan
