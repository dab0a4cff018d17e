"""Rules: `rules/trust.toml`, whose patches the daemon may build by itself, and the one decision
of where code from mail may run.

    [senders]
    addresses = ["maintainer@kernel.org"]   # these exact From addresses (any case)
    domains = ["example.org"]               # any From address at exactly this domain (not its subdomains)

Code from mail (a patch series posted in a report's thread) is applied, built and booted by the
daemon alone only on a host marked `untrusted_code = true` in hosts.toml (a disposable or
isolated machine), or when every mail of the series is from a sender this file names. Anywhere
else only when a person asks for it (`triage test-fix`, the Slack Test fix button), and who asked
is kept with the result. `may_run_mail_code` is that decision, pure, for every stage that runs
code from mail (fix tests; reruns of a series against its base). A From address is what the
mail says: the archive does not prove it, so a name on this list is trusted as far as the list
that carried the mail checks its senders.

A missing file is an empty list (the packaged one is empty too): no sender is trusted.
"""
from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from triagebot.rules.hosts import Host
from triagebot.rules.loader import RulesFile, parse_text, read_file

TRUST_FILE = "trust.toml"
_ADDRESS = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
_DOMAIN = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


@dataclass(frozen=True)
class TrustList:
    """The senders whose patches the daemon builds by itself (addresses and domains, lower case)."""

    addresses: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()

    def trusts(self, address: str) -> bool:
        address = address.strip().lower()
        return bool(address) and (address in self.addresses or address.rpartition("@")[2] in self.domains)


@dataclass(frozen=True)
class CodeDecision:
    """Whether code from mail may run now, and why (one line a person reads)."""

    allowed: bool
    reason: str


def may_run_mail_code(host: Host, senders: Collection[str], asked_by: str | None, trust: TrustList) -> CodeDecision:
    """May code whose mails are from `senders` (From addresses; none: the lab's own code, no mail's)
    be applied, built and booted on `host`, with `asked_by` the person who asked (None: the daemon
    by itself)? Pure: a person's ask, a host marked untrusted_code, or every sender trusted."""
    if asked_by:
        return CodeDecision(True, f"asked by {asked_by}")
    if not senders:
        return CodeDecision(True, "no code from mail: the lab's own tree")
    if host.untrusted_code:
        return CodeDecision(True, f"host {host.name} is marked untrusted_code = true")
    strangers = sorted({sender.strip().lower() or "(no From address)" for sender in senders
                        if not trust.trusts(sender)})
    if not strangers:
        trusted = sorted({sender.strip().lower() for sender in senders})
        return CodeDecision(True, f"{', '.join(trusted)} {'is' if len(trusted) == 1 else 'are'} on the trust list "
                                  f"(rules/trust.toml)")
    return CodeDecision(False, f"waiting for a person: {', '.join(strangers[:3])}"
                               f"{' and others' if len(strangers) > 3 else ''} "
                               f"{'is' if len(strangers) == 1 else 'are'} not on the trust list (rules/trust.toml) "
                               f"and host {host.name} is not marked untrusted_code = true")


def trust_from(file: RulesFile) -> TrustList:
    """The trust list of one parsed trust.toml; RulesError naming file and line on any fault."""
    file.top().check_keys(("senders",))
    senders = file.table("senders")
    senders.check_keys(("addresses", "domains"))
    addresses = senders.strings("addresses", (), pattern=_ADDRESS, what="addresses (name@host.tld)")
    domains = senders.strings("domains", (), pattern=_DOMAIN, what="domains (example.org; no wildcards)")
    return TrustList(frozenset(item.lower() for item in addresses), frozenset(item.lower() for item in domains))


def load_trust(path: Path | None) -> TrustList:
    """The trust list in `path` (None: no file, nobody is trusted)."""
    return trust_from(read_file(path)) if path is not None else TrustList()


def parse_trust(text: str, name: str) -> TrustList:
    return trust_from(parse_text(text, name))
