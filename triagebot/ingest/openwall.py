"""Ingest stage: a lists.openwall.net list as a source: day index pages and their message pages.

The archive (blists) serves one page per message at `<list>/YYYY/MM/DD/N` and a day index at
`<list>/YYYY/MM/DD/` listing that day's pages as N = 1, 2, 3, … in order of arrival; there is
no feed, raw or mbox download. A poll reads the day indexes from the oldest day its cursor
keeps up to today, and fetches every page whose N is above the highest one fetched for that
day before. Page bytes are handed on as served; the parse stage reads them.

Pages carry no Message-ID as a rule (blists prints Date, From, To, Cc and Subject) and show
addresses as `josef@...icpanda.com`, so the store also knows each message by a fallback key of
date, subject and sender name (`fallback_key`), which the lore copy of the same message shares.

Cursor (opaque JSON text, stored with the messages of each poll):

    {"v": 1, "days": {"2024-12-02": 2, "2024-12-03": 0}, "run": 100}

`days` maps each day the next poll reads again (from the oldest one on, up to today) to the
highest page number fetched for it (0: read, nothing fetched). A day stays in the cursor until
it is more than `recheck_days` older than the newest day read; a poll cut short by
`max_messages_per_poll` leaves the day it stopped in as the newest, so the next one resumes
there. `run` (absent: 0) counts the pages fetched by the polls a runner makes back to back
while batches say `more`; at PAGES_PER_RUN the batch no longer says `more` and the rest waits
for the next scheduled poll, so a day index listing 200,000 pages costs each poll at most
PAGES_PER_RUN page requests (about 8 minutes at one request a second), never days.

Bounds: every page (day index or message) is read up to PAGE_MAX_BYTES; a message page over it
is skipped with an event, a day index over it skips its day with an event. Day indexes are
read by lxml's HTML parser as a stream of links (no tree), so a huge index costs little memory.

Message pages are parsed with BeautifulSoup's "lxml" builder, i.e. `lxml.etree.HTMLParser` (bs4 4.15:
`HTMLParser(target=…, recover=True, huge_tree=False)`): libxml2's HTML parser reads no DTD
and replaces only HTML's own character references (`&lt;`, `&#64;`), never declared entities
(no XML_PARSE_NOENT; `no_network` is on), so an `<!ENTITY … SYSTEM …>` in a page is neither
fetched nor expanded (tests/test_ingest_openwall.py checks it). Day indexes go through the
same `lxml.etree.HTMLParser`, with a target that keeps only links, the <base> and the text.
"""
from __future__ import annotations

import datetime
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from triagebot.http_client.client import fetch
from triagebot.http_client.protocol import HttpClient, HttpPolicy, HttpResponse, ResponseRefused
from triagebot.ingest.protocol import Batch, FetchedMessage, Sleeper
from triagebot.parse.identity import fallback_key, fallback_key_of_record
from triagebot.parse.webpage import looks_like_html, split_header_block

__all__ = ["CURSOR_VERSION", "OpenwallAddress", "OpenwallPageSource", "OpenwallSource",
           "fallback_key", "fallback_key_of_record", "message_page_kind", "parse_openwall_url",
           "read_day_index"]

CURSOR_VERSION = 1
PAGE_MAX_BYTES = 8 << 20  # one day index or message page, decoded (blists pages are ~10 KiB)
MESSAGES_PER_POLL = 100  # pages fetched per poll: one store transaction
PAGES_PER_RUN = 500  # pages fetched by back-to-back polls before the rest waits a poll interval
_ONE_DAY = datetime.timedelta(days=1)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_PAGE_NUMBER = re.compile(r"[0-9]{1,6}")  # blists numbers a day's messages 1…999999
_NO_MESSAGES = "No messages for this day"  # blists' page (HTTP 200) for a day without mail
_NO_SUCH_MESSAGE = "No such message"
_DAY_OR_PAGE = re.compile(r"^(?P<list>.*/)(?P<year>[0-9]{4})/(?P<month>[0-9]{2})/(?P<day>[0-9]{2})"
                          r"/(?:(?P<number>[0-9]{1,6})/?)?$")


@dataclass(frozen=True)
class OpenwallAddress:
    """What an archive URL names: a list, one of its days, or one message page."""

    list_url: str  # with a trailing slash
    day: datetime.date | None = None
    number: int | None = None

    @property
    def page_url(self) -> str | None:
        if self.day is None or self.number is None:
            return None
        return self.list_url + _day_path(self.day) + str(self.number)


def parse_openwall_url(url: str) -> OpenwallAddress:
    """Split `…/<list>/[YYYY/MM/DD/[N]]`; any other URL is taken as a list root."""
    parts = urlsplit(url)
    match = _DAY_OR_PAGE.match(parts.path)
    if match is None:
        return OpenwallAddress(url if url.endswith("/") else url + "/")
    list_url = parts._replace(path=match["list"], query="", fragment="").geturl()
    try:
        day = datetime.date(int(match["year"]), int(match["month"]), int(match["day"]))
    except ValueError:  # not a date: a list whose path merely looks like one
        return OpenwallAddress(url if url.endswith("/") else url + "/")
    return OpenwallAddress(list_url, day, int(match["number"]) if match["number"] else None)


def _utc_today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def _day_path(day: datetime.date) -> str:
    return f"{day.year:04d}/{day.month:02d}/{day.day:02d}/"


def _soup(body: bytes):
    from bs4 import BeautifulSoup  # imported here: mail and mbox input never need it

    return BeautifulSoup(body, "lxml")  # lxml.etree.HTMLParser: no DTD, no external entities


def _visible_text(soup) -> str:
    return " ".join(soup.get_text(" ").split())


def _not_html(response: HttpResponse) -> str | None:
    """Why an answer is not an HTML page, or None when it is one."""
    content_type = response.headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _HTML_TYPES:
        return None
    if not media and looks_like_html(response.body[:2000].decode("latin-1")):
        return None
    return f"not an HTML page ({content_type or 'no Content-Type'})"


class _LinkTarget:
    """lxml parser target keeping a page's links, its first <base href> and its text only."""

    def __init__(self) -> None:
        self.base: str | None = None
        self.links: list[str] = []
        self.text: list[str] = []

    def start(self, tag: str, attrib) -> None:
        href = attrib.get("href")
        if not href:
            return
        if tag == "a":
            self.links.append(href)
        elif tag == "base" and self.base is None:
            self.base = href

    def end(self, tag: str) -> None:
        pass

    def data(self, data: str) -> None:
        self.text.append(data)

    def comment(self, text: str) -> None:
        pass

    def close(self) -> _LinkTarget:
        return self


def _links(body: bytes) -> _LinkTarget:
    from lxml import etree  # imported here: mail and mbox input never need it

    target = _LinkTarget()
    parser = etree.HTMLParser(target=target, no_network=True)
    try:
        parser.feed(body)
        parser.close()
    except etree.LxmlError:  # an empty or hopeless document: no links, no text
        pass
    return target


def read_day_index(body: bytes, base_url: str, list_path: str,
                   day: datetime.date) -> list[int] | None:
    """Page numbers a day index links to; [] for a day without mail; None for another page.

    Only links resolving to `<list_path>YYYY/MM/DD/N` of this very day count: nav links to
    other days, the month and the list, attachment links (`N/A`) and the site banner do not.
    None means the answer is no day index at all (a challenge or error page).
    """
    page = _links(body)
    base = urljoin(base_url, page.base) if page.base is not None else base_url
    prefix = list_path + _day_path(day)
    numbers: set[int] = set()
    relative_ok = urlsplit(base).path == prefix  # "N" resolves to a page of this day
    for href in page.links:
        if relative_ok and _PAGE_NUMBER.fullmatch(href):
            numbers.add(int(href))  # blists' own links: no urljoin for each of them
            continue
        path = urlsplit(urljoin(base, href)).path
        if path.startswith(prefix) and _PAGE_NUMBER.fullmatch(path[len(prefix):]):
            numbers.add(int(path[len(prefix):]))
    if numbers:
        return sorted(numbers)
    text = " ".join(" ".join(page.text).split())
    heading = f"mailing list - {day.year:04d}/{day.month:02d}/{day.day:02d}"
    if _NO_MESSAGES in text or heading in text:
        return []
    return None


def message_page_kind(body: bytes) -> str | None:
    """"message" for a message page, "gone" for blists' "No such message" page, else None."""
    soup = _soup(body)
    text = "\n".join(block.get_text() for block in soup.find_all("pre"))
    headers, _, _ = split_header_block(text)
    if headers:
        return "message"
    if _NO_SUCH_MESSAGE in _visible_text(soup):
        return "gone"
    return None


@dataclass
class _Cursor:
    days: dict[datetime.date, int]  # day → highest page number fetched (0: none)
    run: int = 0  # pages fetched by the back-to-back polls so far (PAGES_PER_RUN)

    @classmethod
    def read(cls, text: str | None, events: list[str]) -> _Cursor | None:
        if text is None:
            return None
        try:
            data = json.loads(text)
            if data.get("v") != CURSOR_VERSION:
                raise ValueError(f"version {data.get('v')!r}, this code writes {CURSOR_VERSION}")
            days = {datetime.date.fromisoformat(day): int(number)
                    for day, number in data["days"].items()}
            run = max(0, int(data.get("run", 0)))
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            # Reading the first-poll window again may miss older pages but duplicates nothing.
            events.append(f"openwall cursor {text[:80]!r} unreadable ({error}); "
                          f"reading as on a first poll")
            return None
        return cls(days, run) if days else None

    def text(self, recheck_days: int) -> str:
        keep_from = max(self.days) - recheck_days * _ONE_DAY
        days = {day.isoformat(): number for day, number in sorted(self.days.items())
                if day >= keep_from}
        data = {"v": CURSOR_VERSION, "days": days, **({"run": self.run} if self.run else {})}
        return json.dumps(data, separators=(",", ":"))


class OpenwallSource:
    """One list on lists.openwall.net (or another blists archive), read through its day indexes.

    list_url: the list's archive root, e.g. "https://lists.openwall.net/linux-ext4/" (a missing
        trailing slash is added; `key` uses the normalized form).
    client, policy: the HTTP transport and how politely to use it (User-Agent, timeout,
        attempts, backoff).
    sleep: how to wait, for backoff and pacing; tests pass a recorder.
    days_back: days before today also read on the first poll (2: the day before yesterday,
        yesterday and today).
    today: the clock, giving the archive's date of today; injected for tests. Default: UTC date.
    recheck_days: days before the newest day read that the next poll reads again, for pages
        the archive files under a day after we read it (its clock ahead of or behind ours, mail
        arriving around midnight). 1 costs one more index request per poll.
    max_messages_per_poll: pages fetched per poll (one store transaction); when more are
        waiting the batch says `more` and the runner polls again (MESSAGES_PER_POLL).
    pages_per_run: pages fetched by polls that follow each other through `more`; when reached
        the batch does not say `more` and the rest waits for the next poll (PAGES_PER_RUN).
    request_interval_seconds: pause between two requests of a poll, to spare the archive on
        long first polls; tests pass 0.
    list_name: stored with each message; default: the last path segment of list_url.
    rng: jitter source for backoff (seeded in tests).
    """

    def __init__(self, list_url: str, client: HttpClient, policy: HttpPolicy,
                 sleep: Sleeper = time.sleep, *, days_back: int = 2,
                 today: Callable[[], datetime.date] = _utc_today, recheck_days: int = 1,
                 max_messages_per_poll: int = MESSAGES_PER_POLL,
                 pages_per_run: int = PAGES_PER_RUN, request_interval_seconds: float = 1.0,
                 list_name: str | None = None, rng: random.Random | None = None) -> None:
        if days_back < 0 or recheck_days < 0 or max_messages_per_poll < 1 or pages_per_run < 1:
            raise ValueError("days_back and recheck_days must be >= 0, max_messages_per_poll and "
                             "pages_per_run >= 1")
        address = parse_openwall_url(list_url)
        if address.day is not None:
            raise ValueError(f"{list_url}: a day or message page, not a list root "
                             f"(a page: OpenwallPageSource; the list: {address.list_url})")
        self.list_url = address.list_url
        self.client = client
        self.policy = policy
        self.sleep = sleep
        self.days_back = days_back
        self.today = today
        self.recheck_days = recheck_days
        self.max_messages_per_poll = max_messages_per_poll
        self.pages_per_run = pages_per_run
        self.request_interval_seconds = request_interval_seconds
        self.list_name = list_name or self.list_url.rstrip("/").rsplit("/", 1)[-1]
        self._list_path = urlsplit(self.list_url).path
        self._rng = rng or random.Random()
        self._requests = 0

    @property
    def key(self) -> str:
        return f"openwall:{self.list_url}"

    def poll(self, cursor: str | None) -> Batch:
        """Pages new since `cursor`; raises SourceError when the archive cannot be read now.

        Nothing of a poll that raised is kept: the runner stores no cursor, and the next poll
        starts again from the stored one.
        """
        events: list[str] = []
        self._requests = 0
        today = self.today()
        state = _Cursor.read(cursor, events)
        if state is None:
            state = _Cursor({})
            day = today - self.days_back * _ONE_DAY
        else:
            day = min(state.days)  # the cursor keeps exactly the days to read again
        last = max([today, *state.days])
        messages: list[FetchedMessage] = []
        budget = max(1, min(self.max_messages_per_poll, self.pages_per_run - state.run))
        pages = 0  # page requests of this poll, kept or skipped
        stopped = False
        while day <= last and not stopped:
            fetched_up_to = state.days.get(day, 0)
            state.days[day] = fetched_up_to
            for number in self._day_index(day, events):
                if number <= fetched_up_to:
                    continue
                if pages >= budget:
                    stopped = True
                    break
                pages += 1
                message = self._message(day, number, events)
                if message is not None:
                    messages.append(message)
                state.days[day] = number
            day += _ONE_DAY
        more = False
        if stopped:
            state.run += pages
            if state.run >= self.pages_per_run:
                events.append(f"{self.list_url}: {state.run} pages fetched in this run, the cap; "
                              "the rest at the next poll")
                state.run = 0
            else:
                more = True
        else:
            state.run = 0
        return Batch(messages=tuple(messages), cursor=state.text(self.recheck_days),
                     events=tuple(events), more=more)

    def _get(self, url: str, accept: Callable[[HttpResponse], str | None],
             events: list[str]) -> HttpResponse:
        if self._requests and self.request_interval_seconds > 0:
            self.sleep(self.request_interval_seconds)
        self._requests += 1
        return fetch(self.client, url, self.policy, limit=PAGE_MAX_BYTES, sleep=self.sleep,
                     accept=accept, events=events, rng=self._rng)

    def _day_index(self, day: datetime.date, events: list[str]) -> list[int]:
        """Page numbers of one day; [] when the archive has no mail for it (404)."""
        url = self.list_url + _day_path(day)
        found: list[list[int]] = []

        def accept(response: HttpResponse) -> str | None:
            problem = _not_html(response)
            if problem is not None:
                return problem
            numbers = read_day_index(response.body, response.url or url, self._list_path, day)
            if numbers is None:
                return "an HTML page that is not the day index (a challenge or error page)"
            found.append(numbers)
            return None

        try:
            response = self._get(url, accept, events)
        except ResponseRefused as error:  # over PAGE_MAX_BYTES, or a redirect elsewhere
            events.append(f"{error}; the day's pages are skipped")
            return []
        return [] if response.status == 404 else found[-1]

    def _message(self, day: datetime.date, number: int,
                 events: list[str]) -> FetchedMessage | None:
        """One message page as served; None (and an event) for a listed page no longer served."""
        url = self.list_url + _day_path(day) + str(number)
        return _fetch_page(self._get, url, self.list_name, events, "listed in the day index but")


def _fetch_page(get: Callable[[str, Callable[[HttpResponse], str | None], list[str]], HttpResponse],
                url: str, list_name: str | None, events: list[str],
                context: str) -> FetchedMessage | None:
    kinds: list[str] = []

    def accept(response: HttpResponse) -> str | None:
        problem = _not_html(response)
        if problem is not None:
            return problem
        kind = message_page_kind(response.body)
        if kind is None:
            return "an HTML page without a message (a challenge or error page)"
        kinds.append(kind)
        return None

    try:
        response = get(url, accept, events)
    except ResponseRefused as error:  # over PAGE_MAX_BYTES, or a redirect elsewhere
        events.append(f"{error}; skipped")
        return None
    if response.status == 404 or kinds[-1] == "gone":
        why = "HTTP 404" if response.status == 404 else _NO_SUCH_MESSAGE
        events.append(f"{url}: {context} not served ({why}); skipped")
        return None
    return FetchedMessage(response.body, "openwall", source_url=url, list_name=list_name)


class OpenwallPageSource:
    """One message page (`triage ingest https://lists.openwall.net/<list>/YYYY/MM/DD/N`).

    Every poll fetches the page again and returns no cursor: the store ignores a page it has.
    """

    def __init__(self, page_url: str, client: HttpClient, policy: HttpPolicy,
                 sleep: Sleeper = time.sleep, *, list_name: str | None = None,
                 rng: random.Random | None = None) -> None:
        address = parse_openwall_url(page_url)
        if address.page_url is None:
            raise ValueError(f"{page_url}: not a message page URL (…/<list>/YYYY/MM/DD/N)")
        self.page_url = address.page_url
        self.client = client
        self.policy = policy
        self.sleep = sleep
        self.list_name = list_name or address.list_url.rstrip("/").rsplit("/", 1)[-1]
        self._rng = rng or random.Random()

    @property
    def key(self) -> str:
        return f"openwall:{self.page_url}"

    def poll(self, cursor: str | None) -> Batch:
        events: list[str] = []

        def get(url: str, accept: Callable[[HttpResponse], str | None],
                events: list[str]) -> HttpResponse:
            return fetch(self.client, url, self.policy, limit=PAGE_MAX_BYTES, sleep=self.sleep,
                         accept=accept, events=events, rng=self._rng)

        message = _fetch_page(get, self.page_url, self.list_name, events, "the page is")
        return Batch(messages=(message,) if message else (), cursor=None, events=tuple(events))
