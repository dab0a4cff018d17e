"""Parse stage: text copied from a lore thread page, cut into its messages.

Such a paste has no header block. A copy of the whole page opens with the page's title (the
thread's subject) and a blank line above the first message. Each message opens with its subject line, a blank line and
its author in brackets (`[Zhang Yi]`, `[Jeff Layton <jlayton@kernel.org>]`), then its body; the
next message opens with `Re: <subject>` and its own bracketed author. Dates and Message-IDs are
absent, so each message gets an id made from a digest of its own subject, author and body
(the same message pasted again, alone or in a longer copy of the thread, gets the same id), and
its parent is the earlier message whose text it quotes most, else the one just before it (the
page lists a thread depth first).

`as_mail` writes one such message as a plain RFC 822 message with those ids, so that it is
stored, threaded and parsed again (`triage reparse`) like any other mail.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from email.header import Header
from email.utils import formataddr

from triagebot.parse.identity import strip_reply_prefixes

# `[Jeff Layton <jlayton@kernel.org>]`, `[kernel test robot]`, `[Zhang, Yi]`: a name of words
# (no digits, slashes or colons: `[still regression on linus/master 2ba9f676…]` is no author).
_AUTHOR = re.compile(
    r"^\[[ \t]*(?P<name>[^\W\d_][\w .,'’()-]{0,78}?)?[ \t]*"
    r"(?:<(?P<address>[^<>\s@]+@[^<>\s@]+)>)?[ \t]*\]$"
)
_REPLY_SUBJECT = re.compile(r"^(?:re|aw|sv|fwd?)\s*(?:\[\d+\])?\s*:", re.IGNORECASE)
MAX_SUBJECT_CHARS = 998  # a header line's length limit (RFC 5322)
MIN_QUOTE_CHARS = 12  # shorter quoted lines ("Thanks,") say nothing of whom a reply answers
MAX_LINE_OWNERS = 20  # a line written in more messages than this (a rule, a signature) is no clue
MAX_REFERENCES = 20
ID_DOMAIN = "paste.triagebot.invalid"


@dataclass(frozen=True)
class PastedMessage:
    position: int  # 1-based, in page order
    subject: str
    name: str
    address: str | None
    body: str
    message_id: str
    in_reply_to: str | None
    references: tuple[str, ...]

    @property
    def sender(self) -> str:
        return f"{self.name} <{self.address}>" if self.address and self.name else (self.address or self.name)


def _author(line: str) -> tuple[str, str | None] | None:
    match = _AUTHOR.match(line.strip())
    if not match or not (match.group("name") or match.group("address")):
        return None
    return " ".join((match.group("name") or "").split()), match.group("address")


def _opening(lines: list[str], index: int) -> tuple[str, str | None] | None:
    """The author when lines[index] opens a message (subject, blank line, [author])."""
    subject = lines[index].strip()
    if not subject or subject.startswith(">") or len(subject) > MAX_SUBJECT_CHARS:
        return None
    if index + 2 >= len(lines) or lines[index + 1].strip():
        return None
    return _author(lines[index + 2])


def _after_title(lines: list[str], first: int) -> int | None:
    """The first message's subject line when lines[first] is the page's title above it: a copy
    of the whole page opens with the title (the thread's subject), a blank line, then the first
    message's own subject, blank line and [author]."""
    if first + 2 >= len(lines) or lines[first + 1].strip():
        return None
    subject = next((index for index in range(first + 2, len(lines)) if lines[index].strip()), None)
    if subject is None or " ".join(lines[subject].split()).casefold() != " ".join(lines[first].split()).casefold():
        return None
    return subject if _opening(lines, subject) is not None else None


def _starts(lines: list[str]) -> list[tuple[int, tuple[str, str | None]]]:
    first = next((index for index, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return []
    author = _opening(lines, first)
    if author is None:
        first_subject = _after_title(lines, first)
        if first_subject is None:
            return []
        first = first_subject
        author = _opening(lines, first)
    if author is None:
        return []
    starts = [(first, author)]
    thread_subject = " ".join(strip_reply_prefixes(lines[first]).split()).casefold()
    for index in range(first + 3, len(lines) - 2):
        line = lines[index].strip()
        if lines[index - 1].strip() or not line:
            continue  # a message opens after a blank line
        if not _REPLY_SUBJECT.match(line) and " ".join(strip_reply_prefixes(line).split()).casefold() \
                != thread_subject:
            continue
        author = _opening(lines, index)
        if author is not None:
            starts.append((index, author))
    return starts


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _quoted_lines(body: str) -> set[str]:
    """The first-level quoted lines of a body, as their quoted text."""
    found = set()
    for line in body.split("\n"):
        stripped = line.strip()
        if stripped.startswith(">") and not stripped[1:].lstrip().startswith(">"):
            text = " ".join(stripped[1:].split())
            if len(text) >= MIN_QUOTE_CHARS:
                found.add(text)
    return found


def _own_lines(body: str) -> set[str]:
    return {" ".join(line.split()) for line in body.split("\n")
            if len(line.strip()) >= MIN_QUOTE_CHARS and not line.lstrip().startswith(">")}


def _parents(bodies: list[str]) -> list[int | None]:
    """For each message, the earlier one whose own text it quotes most (the later on a tie),
    else the one just before it. An index of own lines keeps the work linear in the text."""
    owners: dict[str, list[int]] = {}  # an own line -> the messages that wrote it
    parents: list[int | None] = []
    for index, body in enumerate(bodies):
        scores: dict[int, int] = {}
        for line in _quoted_lines(body) if index else ():
            written = owners.get(line)
            if written is None or len(written) > MAX_LINE_OWNERS:
                continue
            for owner in written:
                scores[owner] = scores.get(owner, 0) + 1
        if index == 0:
            parents.append(None)
        elif scores:
            parents.append(max(scores, key=lambda owner: (scores[owner], owner)))
        else:
            parents.append(index - 1)
        for line in _own_lines(body):
            written = owners.setdefault(line, [])
            if len(written) <= MAX_LINE_OWNERS:
                written.append(index)
    return parents


def split_thread_paste(text: str) -> list[PastedMessage] | None:
    """The messages of a pasted lore thread page in page order; None when the text is not one."""
    lines = text.replace("\r\n", "\n").split("\n")
    starts = _starts(lines)
    if not starts:
        return None
    bodies: list[str] = []
    for number, (start, _) in enumerate(starts):
        end = starts[number + 1][0] if number + 1 < len(starts) else len(lines)
        bodies.append("\n".join(lines[start + 3:end]).strip("\n"))
    ids: list[str] = []
    parents = _parents(bodies)
    messages: list[PastedMessage] = []
    for number, ((start, (name, address)), body) in enumerate(zip(starts, bodies, strict=True)):
        subject = " ".join(lines[start].split())
        ids.append(f"pasted-{_digest(subject, name, address or '', body)}@{ID_DOMAIN}")
        parent = parents[number]
        references: tuple[str, ...] = ()
        if parent is not None:
            chain = (*messages[parent].references, ids[parent])
            # the root and the nearest ancestors, as mail clients trim a long References
            references = chain if len(chain) <= MAX_REFERENCES else (chain[0], *chain[-(MAX_REFERENCES - 1):])
        messages.append(PastedMessage(
            position=number + 1, subject=subject, name=name, address=address, body=body,
            message_id=ids[number], in_reply_to=ids[parent] if parent is not None else None,
            references=references,
        ))
    return messages


def _header_text(value: str) -> str:
    """A header value as RFC 2047 text where it is not plain ASCII."""
    return value if value.isascii() else Header(value, "utf-8").encode()


def as_mail(message: PastedMessage, total: int) -> bytes:
    """One pasted message as an RFC 822 message (utf-8 body, 8bit) with its synthesized ids."""
    if message.address:
        sender = formataddr((message.name, message.address)) if message.name else message.address
    else:
        sender = _header_text(message.name)
    headers = [
        f"Message-ID: <{message.message_id}>",
        *([f"In-Reply-To: <{message.in_reply_to}>"] if message.in_reply_to else []),
        *([f"References: {' '.join(f'<{ref}>' for ref in message.references)}"] if message.references else []),
        f"Subject: {_header_text(message.subject)}",
        f"From: {sender}",
        f"X-Triagebot-Pasted: message {message.position} of {total} of a pasted lore thread page",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: 8bit",
    ]
    return ("\n".join(headers) + "\n\n" + message.body + "\n").encode("utf-8", "surrogatepass")
