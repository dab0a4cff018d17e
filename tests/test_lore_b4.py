"""Thread fetch by Message-ID as b4 does it (t.mbox.gz, liblore's strict thread, raw fallback),
against a real public-inbox-httpd, through triagebot's bounded transport."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.public_inbox import (
    make_message,
    message_id_of,
    require_public_inbox,
    start_public_inbox,
)
from tests.test_ingest_lore import POLICY
from triagebot.http_client.client import RequestsClient
from triagebot.http_client.protocol import SourceError
from triagebot.ingest.lore_liblore import strict_thread
from triagebot.ingest.lore_thread import LoreThreadSource, message_base_url

DAY = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
ODD = "a/b+c%41 x@example.org".replace(" ", "")  # `/`, `+` and `%` in one Message-ID


def messages() -> list[bytes]:
    at = iter(DAY + timedelta(minutes=n) for n in range(100))
    return [
        # a thread whose root (gone-root@example.org) never reached the list
        make_message("Re: lost root", "one\n", msgid="orphan-1@example.org",
                     in_reply_to="gone-root@example.org", date=next(at)),
        make_message("Re: lost root", "two\n", msgid="orphan-2@example.org",
                     in_reply_to="gone-root@example.org", date=next(at)),
        make_message("Re: lost root", "three\n", msgid="orphan-3@example.org",
                     in_reply_to="orphan-2@example.org",
                     references=["gone-root@example.org"], date=next(at)),
        # same subject, no references: public-inbox may file it with the thread; not b4
        make_message("Re: lost root", "unrelated\n", msgid="lookalike@example.org", date=next(at)),
        # a Message-ID with `/`, `+` and `%`, and a reply to it
        make_message("odd id", "report\n", msgid=ODD, date=next(at)),
        make_message("Re: odd id", "reply\n", msgid="odd-reply@example.org", in_reply_to=ODD,
                     date=next(at)),
    ]


@pytest.fixture(scope="module")
def inbox(tmp_path_factory):
    require_public_inbox()
    with start_public_inbox(tmp_path_factory.mktemp("pi-b4"), "linux-ext4", messages()) as server:
        yield server


def thread_of(server, reference: str) -> list[str]:
    url = message_base_url(reference, archive=server.list_url)
    assert url is not None
    source = LoreThreadSource(url, RequestsClient(POLICY, trust_environment=False), POLICY,
                              sleep=lambda _: None)
    return sorted(message_id_of(m.raw) for m in source.poll(None).messages)


def test_a_thread_whose_root_is_gone_is_fetched_from_any_of_its_messages(inbox):
    want = ["orphan-1@example.org", "orphan-2@example.org", "orphan-3@example.org"]
    assert thread_of(inbox, inbox.message_url("orphan-3@example.org")) == want
    assert thread_of(inbox, "<orphan-1@example.org>") == want


def test_a_message_id_with_slash_plus_and_percent(inbox):
    want = sorted([ODD, "odd-reply@example.org"])
    assert thread_of(inbox, f"<{ODD}>") == want
    assert thread_of(inbox, ODD) == want
    assert thread_of(inbox, inbox.message_url(ODD)) == want
    assert thread_of(inbox, inbox.raw_url(ODD)) == want
    assert thread_of(inbox, "odd-reply@example.org") == want


def test_a_message_not_on_the_server_is_a_clear_error(inbox):
    with pytest.raises(SourceError, match="no such message"):
        thread_of(inbox, "<no/such+id%20@example.org>")


def test_strict_thread_drops_what_does_not_reference_the_message():
    raws = messages()
    kept = strict_thread(raws, "orphan-1@example.org")
    assert [message_id_of(r) for r in kept] == ["orphan-1@example.org", "orphan-2@example.org",
                                                "orphan-3@example.org"]
    assert strict_thread(raws[3:4], "not-there@example.org") == raws[3:4]
