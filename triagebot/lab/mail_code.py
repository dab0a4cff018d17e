"""The lab: whether code that came in mail may be built on a host, asked before a series under review
is applied and built (issue 38's patch-regression rerun).

One question, one protocol: may this series (its mails From these senders) be built on this host,
asked by whom (None: the daemon by itself; else `slack:<user>` or `cli:<login>`, the person who took
the report on or ran the command)? The answer is None when allowed, else the reason it is not.
The team's trust decision (rules/trust.py `may_run_mail_code` on branch h-trust-mail: a host marked
`untrusted_code = true`, every sender on rules/trust.toml, or a person asked) takes exactly these
arguments and is to be wired here as `DEFAULT` when it is merged; until then `DEFAULT` is today's
rule of fix testing: a host whose operator gave it a `build_patched` hook builds what mail
proposes, a host without one builds nothing.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from triagebot.rules.hosts import Host


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


DEFAULT: MayBuild = build_hook_allows
