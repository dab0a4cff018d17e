"""Shared by every stage: addresses in mail headers, read without trusting them and written back
only as what they are. Pure.

A display name is the sender's text: `"injected@attacker.example, Tomas" <tomas@…>` is ONE
mailbox whose name holds a comma and an address, and `=?utf-8?q?Evil=0D=0ABcc=3A_…?=` a name that
decodes to a line break. `email.utils.getaddresses` reads the encoded form of the first as two
addresses, and the standard header classes refuse the second by raising, which would make one
sender's name stop every later reply. Here headers are read by the standard library's RFC 5322
parser below its header classes (`email._header_value_parser`, the one `email.headerregistry`
uses), which never raises on a name, and an address is written back only through
`email.headerregistry.Address`: a name with commas, quotes or angle brackets stays inside one
quoted name; a name that cannot be written (a line break, a control character) is dropped and the
bare address kept; an address that is no plain `local@domain.tld` is dropped.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from email import _header_value_parser as rfc5322  # the parser under email.headerregistry
from email import errors as email_errors
from email.headerregistry import Address

MAX_NAME_CHARS = 200  # a longer display name is no one's name: the bare address is kept
MAX_HEADER_CHARS = 100_000  # what of one header is read (a Cc of thousands is cut, not parsed whole)
_LOCAL_PART = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*")
_DOMAIN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}")


@dataclass(frozen=True)
class Mailbox:
    """One address of a header as the parser read it: the decoded display name (may be anything)
    and the address, `local@domain`."""

    name: str
    addr_spec: str

    @property
    def domain(self) -> str:
        return self.addr_spec.rpartition("@")[2].lower()


def plain_address(local_part: str | None, domain: str | None) -> str | None:
    """`local@domain` when both are plain (a dot-atom local part, a host name with a top-level
    domain), else None."""
    if not local_part or not domain or not _LOCAL_PART.fullmatch(local_part) or not _DOMAIN.fullmatch(domain):
        return None
    return f"{local_part}@{domain}"


def mailboxes(header_value: str) -> list[Mailbox]:
    """Every plain address of one header value (To, Cc, From), in order, each with its decoded
    display name; groups are opened, anything unreadable is skipped. Never raises."""
    try:
        parsed, _rest = rfc5322.get_address_list(header_value[:MAX_HEADER_CHARS])
        found = []
        for mailbox in parsed.all_mailboxes:
            address = plain_address(mailbox.local_part, mailbox.domain)
            if address is not None:
                found.append(Mailbox(str(mailbox.display_name or ""), address))
        return found
    except (email_errors.HeaderParseError, IndexError, ValueError, TypeError, AttributeError):
        return []  # the parser gave up on the header: no address of it is trusted


def writable(mailbox: Mailbox) -> Address | None:
    """The mailbox as `email.headerregistry.Address`: its name when the name can be written
    (quoted as needed), else the bare address; None when the address cannot be written."""
    local, _, domain = mailbox.addr_spec.rpartition("@")
    name = mailbox.name.strip()
    # a line break, a tab or any control or format character: a name that cannot be written as sent
    if name and len(name) <= MAX_NAME_CHARS and name.isprintable():
        try:
            return Address(display_name=name, username=local, domain=domain)
        except (ValueError, email_errors.HeaderParseError):
            pass  # the name cannot be written: the bare address is
    try:
        return Address(username=local, domain=domain)
    except (ValueError, email_errors.HeaderParseError):
        return None


def choose_recipients(reporter: Sequence[Mailbox], author: Mailbox | None, copies: Iterable[Mailbox], *,
                      allowed_lists: Collection[str], own_address: str | None,
                      cap: int) -> tuple[list[Address], list[Address]]:
    """Who a reply goes to (To, Cc): the reporter (the first address of From), then in Cc the
    culprit's author and the lists among `copies` (the report's To and Cc) that `allowed_lists`
    names; each address once, never `own_address`, at most `cap` in all (the reporter first, then
    the author, then the lists in their order). Nobody else the report named is written to."""
    allowed = {item.lower() for item in allowed_lists}
    seen = {own_address.lower()} if own_address else set()
    to: list[Address] = []
    cc: list[Address] = []

    def add(mailbox: Mailbox, into: list[Address]) -> None:
        key = mailbox.addr_spec.lower()
        if key in seen or len(to) + len(cc) >= cap:
            return
        address = writable(mailbox)
        if address is not None:
            seen.add(key)
            into.append(address)

    for mailbox in reporter[:1]:
        add(mailbox, to)
    if author is not None:
        add(author, cc if to else to)
    for mailbox in copies:
        if mailbox.addr_spec.lower() in allowed:
            # written as the team's rules spell the list, with no name: a list's name is the sender's text
            add(Mailbox("", mailbox.addr_spec.lower()), cc if to else to)
    return to, cc
