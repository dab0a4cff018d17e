"""The lab: whether code that came in mail may be built on a host, asked before a series under review
is applied and built (issue 38's patch-regression rerun).

One question, one protocol: may this series (its mails From these senders) be built on this host,
asked by whom (None: the daemon by itself; else `slack:<user>` or `cli:<login>`, the person who took
the report on or ran the command)? The answer is None when allowed, else the reason it is not.
The answer is the team's rule, `team_rule(trust)`: the host must be one that builds code from
mail at all (its operator gave it a `build_patched` hook, as fix testing needs), and the trust
decision of rules/trust.py (`may_run_mail_code`, shared with fix testing) must allow it: a person
asked, the host is marked `untrusted_code = true`, or every sender is on rules/trust.toml. A series
from strangers that nobody asked for is not built: the refusal says it waits for a person.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from triagebot.rules.hosts import Host
from triagebot.rules.trust import TrustList, may_run_mail_code


class MayBuild(Protocol):
    def __call__(self, host: Host, series: str, senders: Sequence[str], asked_by: str | None) -> str | None:
        """None when `series` (its subject and Message-ID, for the reason and the log), whose mails
        are From `senders`, may be built on `host`; else why not, in one sentence."""
        ...


def build_hook_allows(host: Host, series: str, senders: Sequence[str], asked_by: str | None) -> str | None:
    """Fix testing's rule: the operator's build_patched hook is the host's consent to build mail's code."""
    if host.build_patched:
        return None
    return (f"host {host.name} builds no code from mail (it has no build_patched hook in hosts.toml), "
            f"so {series} is not applied there")


def team_rule(trust: TrustList) -> MayBuild:
    """The question answered by the host's build_patched hook and the team's trust list, in that order."""
    def may_build(host: Host, series: str, senders: Sequence[str], asked_by: str | None) -> str | None:
        no_hook = build_hook_allows(host, series, senders, asked_by)
        if no_hook is not None:
            return no_hook
        decision = may_run_mail_code(host, senders, asked_by, trust)
        return None if decision.allowed else f"{series} is not built on host {host.name}: {decision.reason}"
    return may_build
