"""bench/accuracy.py: labels of lists kept for independent measurement are counted apart, totals only."""
from __future__ import annotations

from pathlib import Path

from tests.support.bench import load_bench

accuracy = load_bench("accuracy")


def _reply(message_id: str, text: str) -> bytes:
    return (f"From: Tester <tester@example.org>\nTo: list@example.org\nSubject: Re: fio randread 12% slower\n"
            f"Message-ID: <{message_id}>\nIn-Reply-To: <report@example.org>\n"
            f"Date: Mon, 1 Jan 2024 10:00:00 +0000\n\n{text}\n").encode()


def test_a_reserved_list_label_is_counted_but_its_disagreement_not_shown() -> None:
    labels = [
        {"source": "linux-ext4-2024", "message_id": "a@x", "stance": "not-reproduced"},
        {"source": "linux-btrfs-2023", "message_id": "b@x", "stance": "not-reproduced"},
        {"source": "corpus", "message_id": "c@x", "stance": "reproduced"},
    ]
    messages = {
        ("linux-ext4-2024", "a@x"): _reply("a@x", "I can reproduce this on my box every time."),
        ("linux-btrfs-2023", "b@x"): _reply("b@x", "I can reproduce this on my box every time."),
        ("corpus", "c@x"): _reply("c@x", "I can reproduce this on my box every time."),
    }
    result = accuracy.measure(labels, messages, {"c@x": "linux-nfs"})
    stance = result["fields"]["stance"]
    assert (stance["agree"], stance["total"]) == (0, 1)
    assert [item["message_id"] for item in stance["disagreements"]] == ["a@x"]
    assert (result["reserved"]["stance"]["agree"], result["reserved"]["stance"]["total"]) == (1, 2)
    assert "disagreements" not in result["reserved"]["stance"]


def test_the_list_of_a_label() -> None:
    assert accuracy.label_list({"source": "linux-ext4-2024", "message_id": "x"}, {}) == "linux-ext4"
    assert accuracy.label_list({"source": "corpus", "message_id": "x"}, {"x": "linux-nfs"}) == "linux-nfs"
    assert accuracy.label_list({"source": "corpus", "message_id": "y"}, {}) == "corpus"
    assert {"linux-btrfs", "linux-nfs", "linux-xfs"} <= set(accuracy.RESERVED)


def test_the_corpus_index_names_each_message_list(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "INDEX.tsv").write_text(
        "file\tmessage_id\tsource\n"
        "m1.eml\t<a@x>\tgithub.com/linux-mailinglist-archives/linux-nfs.vger.kernel.org.0 path m @ 1234\n"
        "m2.eml\t<b@x>\tgithub.com/linux-mailinglist-archives/linux-ext4.vger.kernel.org.0 path m @ 5678\n",
        encoding="utf-8")
    assert accuracy.corpus_lists(tmp_path) == {"a@x": "linux-nfs", "b@x": "linux-ext4"}


def _report(message_id: str, subject: str, text: str, sender: str = "Tester <tester@example.org>") -> bytes:
    return (f"From: {sender}\nTo: list@example.org\nSubject: {subject}\nMessage-ID: <{message_id}>\n"
            f"Date: Mon, 1 Jan 2024 10:00:00 +0000\n\n{text}\n").encode()


def test_issue_38_reserves_five_more_lists_and_dev4_is_reserved() -> None:
    assert {"linux-nvme", "linux-fsdevel", "netdev", "linux-rdma", "linux-crypto"} <= set(accuracy.RESERVED)
    assert accuracy._reserved({"list": "linux-nvme", "source": "o/linux-nvme.lists.infradead.org.0@" + "0" * 40})
    assert not accuracy._reserved({"list": "linux-ext4", "source": "o/linux-ext4.vger.kernel.org.0@" + "0" * 40})


def test_a_blind_set_is_refused() -> None:
    for name in ("blind", "blind-second"):
        try:
            accuracy.set_directory(name)
        except accuracy.LabelError as error:
            assert "blind" in str(error)
        else:
            raise AssertionError(f"{name} was not refused")


def test_a_set_is_measured_as_the_daemon_would_treat_each_message() -> None:
    slow = ("Since commit 0123456789ab (\"mm: batch the refills\") fio randread drops from 500 MB/s to 400 MB/s,"
            " a 20% regression:\n\n  fio --name=r --rw=randread --bs=4k --size=1G\n")
    source = "o/linux-ext4.vger.kernel.org.0@" + "1" * 40
    reports = [
        {"_id": "a", "source": source, "list": "linux-ext4", "kind": "human-report", "taken_on": True},
        {"_id": "b", "source": source, "list": "linux-ext4", "kind": "human-bug", "taken_on": False},
        {"_id": "c", "source": "o/linux-nvme.lists.infradead.org.0@" + "2" * 40, "list": "linux-nvme",
         "kind": "human-report", "taken_on": True},
    ]
    raw = {"a": _report("a@x", "ext4: randread 20% slower since 6.8", slow),
           "b": _report("b@x", "ext4: oops in ext4_map_blocks", "It crashes when I mount it."),
           "c": _report("c@x", "nvme: a question", "How do I set the queue depth?")}
    result = accuracy.measure_set([], reports, raw, ("lkp-regression", "human-report"),
                                  ("human-report", "human-perf-complaint", "reply"))
    development, reserved = result["development"], result["reserved"]
    assert (development["reach"]["agree"], development["reach"]["total"]) == (1, 1)
    assert (development["taken_on_precision"]["agree"], development["taken_on_precision"]["total"]) == (1, 1)
    # the reserved list's missed report is counted, never shown
    assert (reserved["reach"]["agree"], reserved["reach"]["total"]) == (0, 1)
    assert "disagreements" not in reserved and "confusion" not in reserved
