"""Parse stage: archive web pages (lists.openwall.net) and text pasted from such pages.

Both carry a header block inside the page text rather than real mail headers; the same
detection serves the HTML page (after extracting its <pre> block) and a paste.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from triagebot.errors import MessageError
from triagebot.parse.message import iso_date, strip_message_id

_HEADER = re.compile(r"^(Message-ID|Message-Id|Date|From|To|Cc|CC|Subject|In-Reply-To|References)"
                     r":[ \t]*(.*)$")
_ATTACHMENT = re.compile(r'View attachment "([^"]+)" of type "([^"]+)" \((\d+) bytes\)')
_NAV_NAMES = {"<prev": "prev", "next>": "next", "<thread-prev": "thread-prev",
              "thread-next>": "thread-next", "day": "day", "month": "month", "year": "year",
              "list": "list"}
_ZONES = {"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8,
          "PDT": -7, "UTC": 0, "GMT": 0}


@dataclass(frozen=True)
class PageMessage:
    message_id: str | None
    in_reply_to: str | None
    subject: str
    from_: str
    date: str | None
    body: str
    attachments: tuple[tuple[str, str, int], ...]
    nav: tuple[tuple[str, str], ...]
    defects: tuple[str, ...]


def looks_like_html(text: str) -> bool:
    head = text[:2000].lstrip().lower()
    return head.startswith(("<!doctype html", "<html")) or ("<pre" in head and "<a " in head)


def _archive_date(raw: str) -> str | None:
    """RFC 2822 dates, and lkml.iu.edu's "Sun Dec 09 2018 - 00:53:45 EST"."""
    iso = iso_date(raw)
    if iso:
        return iso
    match = re.match(r"^\w{3} (\w{3} \d{1,2} \d{4}) - (\d{2}:\d{2}:\d{2})\s*(\w+)?", raw.strip())
    if not match:
        return None
    try:
        moment = datetime.datetime.strptime(f"{match.group(1)} {match.group(2)}", "%b %d %Y %H:%M:%S")
    except ValueError:
        return None
    offset = _ZONES.get((match.group(3) or "UTC").upper(), 0)
    return moment.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=offset))).isoformat()


def split_header_block(text: str, *, search_lines: int = 80) -> tuple[dict[str, str], str, str | None]:
    """(headers, body, the line just above the block) for a page or paste; empty headers if none."""
    lines = text.replace("\r\n", "\n").split("\n")
    scanned = 0  # lines before this one were read as part of a block already
    for start in range(min(search_lines, len(lines))):
        if start < scanned or not _HEADER.match(lines[start]):
            continue  # a block starting inside one already read holds no more known headers
        parts: dict[str, list[str]] = {}  # joined once at the end: `+=` per line was quadratic
        index = start
        last = None
        while index < len(lines):
            line = lines[index]
            match = _HEADER.match(line)
            if match:
                last = match.group(1).lower()
                parts.setdefault(last, [match.group(2).strip()])
            elif line[:1] in (" ", "\t") and line.strip() and last:
                parts[last].append(line.strip())
            else:
                break
            index += 1
        scanned = index
        headers = {name: " ".join(values) for name, values in parts.items()}
        known = set(headers) & {"from", "date", "subject", "message-id"}
        if len(known) >= 2:
            if index < len(lines) and not lines[index].strip():
                index += 1
            above = next((lines[i].strip() for i in range(start - 1, -1, -1) if lines[i].strip()), None)
            return headers, "\n".join(lines[index:]), above
    return {}, text, None


def _from_headers(headers: dict[str, str], body: str, above: str | None,
                  nav: tuple[tuple[str, str], ...], defects: list[str],
                  attachment_text: str | None = None) -> PageMessage:
    subject = headers.get("subject") or (above or "")
    if "message-id" not in headers:
        defects.append("no Message-ID in the page; deduplicated by date, subject and sender")
    # A page lists its attachments as links below the preformatted body; a paste keeps them inline.
    listed = _ATTACHMENT.findall(body if attachment_text is None else attachment_text)
    attachments = tuple(dict(((name, kind), (name, kind, int(size))) for name, kind, size in listed).values())
    return PageMessage(
        message_id=strip_message_id(headers.get("message-id")),
        in_reply_to=strip_message_id(headers.get("in-reply-to")),
        subject=" ".join(subject.split()),
        from_=" ".join(headers.get("from", "").split()),
        date=_archive_date(headers.get("date", "")),
        body=body,
        attachments=attachments,
        nav=nav,
        defects=tuple(defects),
    )


def _outer_blocks(blocks: list) -> list:
    """The elements (all of one tag name, in document order) not inside another of them.

    The text of a nested <pre> is in its outer block's text, and valid HTML nests no <a>:
    reading each nested element's text again was quadratic (a page of 100k nested <pre>).
    """
    inside: set[int] = set()
    outer = []
    for block in blocks:
        if id(block) in inside:
            continue
        outer.append(block)
        inside.update(id(inner) for inner in block.find_all(block.name))
    return outer


def parse_page(markup: str) -> PageMessage:
    """One lists.openwall.net message page."""
    from triagebot.parse.html import soup_of, too_many_tags  # here: mail and mbox never need bs4 (60 ms)

    over = too_many_tags(markup)
    if over:
        raise MessageError(f"archive page refused: {over}")
    soup = soup_of(markup)
    nav: list[tuple[str, str]] = []
    for anchor in _outer_blocks(soup.find_all("a")):  # an anchor inside another is no nav link
        label = anchor.get_text(strip=True).strip("[]")
        href = anchor.get("href")
        if label in _NAV_NAMES and href:
            nav.append((_NAV_NAMES[label], str(href)))
    defects: list[str] = []
    blocks = _outer_blocks(soup.find_all("pre"))
    text = "\n".join(block.get_text() for block in blocks) if blocks else soup.get_text("\n")
    if not blocks:
        defects.append("no <pre> block in the page")
    headers, body, above = split_header_block(text)
    if not headers:
        defects.append("no header block found in the page")
    page_text = " ".join(soup.get_text().split())
    return _from_headers(headers, body, above, tuple(dict(nav).items()), defects, page_text)


def parse_paste(text: str) -> PageMessage:
    """Text pasted from an archive page (openwall, lkml.iu.edu, spinics)."""
    defects: list[str] = []
    headers, body, above = split_header_block(text)
    if not headers:
        defects.append("no header block found in the pasted text")
    return _from_headers(headers, body, above, (), defects)
