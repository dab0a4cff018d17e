"""Rules: `rules/mail.toml`, how replies go upstream (`triage reply --send`): the SMTP server, who
they are from, which lists may be written to, and the base URL of the team's report pages.

    [smtp]
    server = "smtp.example.org"
    port = 587                       # default: 587 with starttls, 465 with tls
    security = "starttls"            # starttls / tls / none (none: a server on this machine only)
    user = "perf-triage"             # optional: no login without it
    password_env = "TRIAGE_SMTP_PASSWORD"  # the environment variable holding the password
    from = "Perf Triage <perf-triage@example.org>"
    ca_file = "/etc/triagebot/smtp-ca.pem"   # optional: a private CA the server's certificate is checked against

    [lists]
    hosts = ["vger.kernel.org", "lists.linux.dev"]   # an address at one of these hosts is a list
    allowed = ["linux-kernel@vger.kernel.org"]       # the lists a reply may be sent to

    [web]
    base_url = "https://triage.example.org"          # the report's page is BASE/r/<message-id>

    [reply]
    max_recipients = 8                               # To and Cc together, at most (1 to 50)

The password is never in the file, only the name of the variable that holds it. Who a reply is
written to is the team's rule, not the report's sender's (triagebot/untrusted/addresses.py): the
reporter, the culprit's author when the report names one, and the lists of `allowed` the report
was sent to; at most `max_recipients` in all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import parseaddr
from pathlib import Path

from triagebot.errors import RulesError
from triagebot.rules.loader import RulesFile, parse_text, read_file

MAIL_FILE = "mail.toml"
SECURITIES = ("starttls", "tls", "none")
DEFAULT_PORTS = {"starttls": 587, "tls": 465, "none": 25}
DEFAULT_LIST_HOSTS = ("vger.kernel.org", "lists.linux.dev", "lists.infradead.org", "lists.ozlabs.org",
                      "lists.freedesktop.org", "lists.sourceforge.net", "kvack.org")
LOOPBACK = ("127.0.0.1", "::1", "localhost")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ADDRESS = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
_HOST = re.compile(r"^[a-z0-9.-]+\.[a-z]+$")
DEFAULT_MAX_RECIPIENTS = 8  # the reporter, the culprit's author and a few lists: a handful
MOST_RECIPIENTS = 50


@dataclass(frozen=True)
class MailRules:
    server: str | None = None  # None: no [smtp] table, nothing can be sent
    port: int = 587
    security: str = "starttls"
    user: str | None = None
    password_env: str | None = None
    from_: str | None = None  # "Name <address>"
    list_hosts: tuple[str, ...] = DEFAULT_LIST_HOSTS
    allowed_lists: tuple[str, ...] = ()  # none allowed unless named
    base_url: str | None = None
    ca_file: str | None = None  # None: the system's CAs check the server's certificate
    max_recipients: int = DEFAULT_MAX_RECIPIENTS  # [reply]: To and Cc of one reply together, at most

    @property
    def from_address(self) -> str | None:
        return parseaddr(self.from_)[1].lower() if self.from_ else None

    def is_list(self, address: str) -> bool:
        host = address.rpartition("@")[2].lower()
        return any(host == item or host.endswith("." + item) for item in self.list_hosts)

    def refused_lists(self, addresses: list[str]) -> list[str]:
        """The list addresses among `addresses` that replies may not be sent to."""
        allowed = {item.lower() for item in self.allowed_lists}
        return [address for address in addresses if self.is_list(address) and address.lower() not in allowed]


def mail_rules_from(file: RulesFile) -> MailRules:
    top = file.top()
    top.check_keys(("smtp", "lists", "web", "reply"))
    smtp, lists, web, reply = file.table("smtp"), file.table("lists"), file.table("web"), file.table("reply")
    smtp.check_keys(("server", "port", "security", "user", "password_env", "from", "ca_file"))
    lists.check_keys(("hosts", "allowed"))
    web.check_keys(("base_url",))
    reply.check_keys(("max_recipients",))
    max_recipients = reply.whole("max_recipients", DEFAULT_MAX_RECIPIENTS, 1, MOST_RECIPIENTS)
    base_url = web.optional_string("base_url")
    if base_url is not None and not re.match(r"^https?://[^\s/]+(/\S*)?$", base_url):
        web.fail(f"base_url must be an http(s) URL, not {base_url!r}", "base_url")
    hosts = lists.strings("hosts", DEFAULT_LIST_HOSTS, pattern=_HOST, what="host names in lower case")
    allowed = lists.strings("allowed", (), pattern=_ADDRESS, what="list addresses (name@host)")
    if not smtp.values:
        return MailRules(list_hosts=hosts, allowed_lists=allowed, base_url=base_url, max_recipients=max_recipients)
    server = smtp.string("server")
    security = smtp.choice("security", SECURITIES, "starttls")
    port = smtp.whole("port", DEFAULT_PORTS[security], 1, 65535)
    user = smtp.optional_string("user")
    password_env = smtp.optional_string("password_env")
    if password_env is not None and not _ENV_NAME.match(password_env):
        smtp.fail(f"password_env must name an environment variable (A_NAME), not {password_env!r}", "password_env")
    if user and not password_env:
        smtp.fail("user is given without password_env (the variable holding the password)", "user")
    if security == "none" and server not in LOOPBACK:
        smtp.fail(f"security = \"none\" sends in clear: only for a server on this machine ({', '.join(LOOPBACK)}),"
                  f" not {server!r}", "security")
    if security == "none" and user:
        smtp.fail("security = \"none\" with a user would send the password in clear", "user")
    sender = smtp.string("from")
    if not _ADDRESS.match(parseaddr(sender)[1]):
        smtp.fail(f"from must be an address (Name <name@host>), not {sender!r}", "from")
    ca_file = smtp.optional_string("ca_file")
    if ca_file is not None and not Path(ca_file).is_file():
        smtp.fail(f"ca_file {ca_file!r} is not a readable file", "ca_file")
    return MailRules(server, port, security, user, password_env, sender, hosts, allowed, base_url, ca_file,
                     max_recipients)


def load_mail_rules(rules_dir: Path) -> MailRules:
    """`rules_dir/mail.toml`; a missing file is MailRules() (nothing can be sent). RulesError when invalid."""
    path = rules_dir / MAIL_FILE
    if not path.exists():
        return MailRules()
    return mail_rules_from(read_file(path))


def parse_mail_rules(text: str, name: str) -> MailRules:
    return mail_rules_from(parse_text(text, name))


__all__ = ["MAIL_FILE", "MailRules", "RulesError", "load_mail_rules", "parse_mail_rules"]
