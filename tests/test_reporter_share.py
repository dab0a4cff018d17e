"""bench/reporter_share.py: the thread's first writer from a public-inbox mirror's log."""
from __future__ import annotations

from tests.support.bench import load_bench

share = load_bench("reporter_share")


def test_a_thread_subject_drops_reply_prefixes_and_bugzillas_new() -> None:
    assert share.thread_subject("Re: RE: Re:  ext4:  slow   fsync") == "ext4: slow fsync"
    assert share.thread_subject("AW: [Bug 1234] New: dd 40% slower") == "[bug 1234] dd 40% slower"
    assert share.thread_subject("[Bug 1234] dd 40% slower") == "[bug 1234] dd 40% slower"


def test_the_first_writer_of_each_thread_is_the_oldest_non_reply() -> None:
    log = ("Reporter@Example.org\text4: slow fsync\n"
           "maintainer@example.org\tRe: ext4: slow fsync\n"
           "someone@example.org\text4: slow fsync\n"  # a second thread of the same subject, later
           "tracker@example.org\t[Bug 7] New: hang\n")
    assert share.first_authors(log) == {"ext4: slow fsync": "reporter@example.org",
                                        "[bug 7] hang": "tracker@example.org"}


def test_the_blind_set_is_refused(capsys) -> None:
    assert share.main(["--sets", "dev4,blind"]) == 2
    assert "blind" in capsys.readouterr().err
