"""Stance, objections and trailers of replies: hand-made sentences, own fixtures, corpus labels."""
from __future__ import annotations

import ast
import csv
import json
import re
from pathlib import Path

import pytest

from tests.conftest import CORPUS, FIXTURES, SHARED, require_corpus
from triagebot.parse.objections import read_objections, read_trailers
from triagebot.parse.report import parse_message
from triagebot.parse.stance import decide_sentence, read_stance
from triagebot.records.report import Source

SENTENCES = [
    # plain negations
    ("I could not reproduce this on my Xeon Gold 6240.", "not-reproduced"),
    ("I can't reproduce the regression here, numbers are identical.", "not-reproduced"),
    ("We cannot reproduce it with the job file you attached.", "not-reproduced"),
    ("I wasn't able to reproduce it on two machines.", "not-reproduced"),
    ("Unfortunately I was unable to reproduce the slowdown.", "not-reproduced"),
    ("I'm not seeing this on my i7-13700K: 954MB/s vs 932MB/s.", "not-reproduced"),
    ("Can't confirm, the numbers on my box are flat.", "not-reproduced"),
    ("No regression here on a 64-core EPYC.", "not-reproduced"),
    ("I tried for a week to reproduce it, without success.", "not-reproduced"),
    ("I couldn’t reproduce it either.", "not-reproduced"),  # typographic apostrophe
    # affirmations
    ("I can reproduce this at will.", "reproduced"),
    ("We double confirmed the data is stable.", "reproduced"),
    ("I was able to reproduce it on the first try.", "reproduced"),
    ("The regression is easily reproducible with fio.", "reproduced"),
    ("I'm seeing the same regression on an Ampere Altra.", "reproduced"),
    ("Reverting the commit fixes it, so I can confirm the bisection.", "reproduced"),
    # no stance: questions, plans, conditions, hedges, fixes, descriptions
    ("Can you reproduce it without the debug options?", "none"),
    ("I'll see if I can reproduce it tomorrow.", "none"),
    ("Let me try the reproducer and get back to you if I see the regression.", "none"),
    ("I might be seeing the same thing, not sure yet.", "none"),
    ("I can confirm the crash is fixed with v3.", "none"),
    ("The box I could reproduce this on died last month.", "none"),
    ("The box that I could reproduce this on died last month.", "none"),
    ("I don't see a regression in these numbers, it is noise.", "none"),  # no run of their own
    ("This might be noise; I will retest with more runs.", "none"),
    ("I don't see any evidence that this was tested.", "none"),
    ("Thanks for the report.", "none"),
    # a past reproduction with an adverb or a found way instead of "can reproduce"
    ("FWIW, I finally manage to hit this on a Graviton box as well.", "reproduced"),
    ("I was eventually able to figure out how to trigger the bug in a 32-bit guest.", "reproduced"),
    ("Finally I found a way to reproduce it with two parallel tar jobs.", "reproduced"),
    ("The hang has also been reproduced on a 6.9 kernel.", "reproduced"),
    ("It can easily be reproduced with stress-ng --bigheap 8.", "reproduced"),
    ("The slowdown still happens with 6.7-rc2.", "reproduced"),
    ("It is about 1% reproducible on my side.", "reproduced"),
    # a negation, then "but" and a sighting where the report says it happens
    ("It does not reproduce on xfs, but I can see it on a tmpfs export.", "reproduced"),
    ("I could not reproduce it on the bisected commit, but running the reported one reproduces it quickly.",
     "reproduced"),
    # trying, and the system staying fine
    ("I've been trying to reproduce it on three boxes, but unfortunately all of them like the change.",
     "not-reproduced"),
    ("I ran the loop overnight, but no reproduce any more.", "not-reproduced"),
    ("I didn't manage to trigger it with the steps above.", "not-reproduced"),
    ("I can't seem to trigger the stall now, so I won't be able to help further.", "not-reproduced"),
    ("I tested 6.5.10 and can't reproduce with it, so I guess I'll bisect next.", "not-reproduced"),
    ("All my runs so far were in qemu, which doesn't seem to be hitting this issue.", "not-reproduced"),
    ("I never got the syzbot reproducer to trigger, so the patch is unconfirmed.", "not-reproduced"),
    ("Also this does *not* reproduce with a 6.8.5 kernel on the same guest.", "not-reproduced"),
    ("I've booted back into 6.7 on the same VM, and it's stable.", "not-reproduced"),
    ("I ran the job on 6.1 and it was fine, but on 6.2 I can see it every time.", "reproduced"),
    ("It's fine, we can take the second version.", "none"),  # no run of the writer's own
    ("I only noticed this regression myself when the laptop fan kept spinning.", "reproduced"),
    # a bot team's revalidation and a rerun summary
    ("We re-tested both commits several times and see no regression on this machine.", "not-reproduced"),
    ("I reran fs_mark five times on each kernel: no difference here.", "not-reproduced"),
    # a fix or a debug patch confirmed: the report is not what was tested
    ("I can confirm that this patch helps.", "none"),
    ("I confirmed your fix works on my laptop.", "none"),
    ("After applying the patch I was not able to reproduce the corruption any more.", "none"),
    ("syzbot tested the proposed patch and the reproducer did not trigger any issue:", "none"),
    ("I can also confirm the issue occurred since 6.2, and confirm the workaround works.", "reproduced"),
    ("I can't trigger it even with all the patches disabled.", "not-reproduced"),
    # code behaviour, a mail read, a condition, a need, a wish
    ("Normally we don't hit this path because the LRU walk skips unlinked inodes.", "none"),
    ("I noticed this report from syzbot while looking for a first task.", "none"),
    ("If it was impossible to hit this before the patch, I might agree.", "none"),
    ("If writeback happens during the IO, we then hit the warning.", "none"),
    ("I just need to test the fix myself to make sure I can reproduce the issue.", "none"),
    ("I hope we see a change in how device removal works.", "none"),
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance(sentence: str, expected: str) -> None:
    result = read_stance(sentence)
    assert result.stance == expected
    assert (result.evidence is None) == (expected == "none")


def test_decision_branches() -> None:
    # question beats every match; a negation beats an affirmation in the same sentence
    assert decide_sentence(frozenset({"REPRODUCED"}), question=True) == "none"
    assert decide_sentence(frozenset({"REPRODUCED", "NOT_REPRODUCED", "FIRST_PERSON"}), question=False) \
        == "not-reproduced"
    # a negated verb with no writer in it explains code: "mappings under 2MB do not trigger this issue"
    assert decide_sentence(frozenset({"NOT_REPRODUCED"}), question=False) == "none"
    assert decide_sentence(frozenset({"NOT_REPRODUCED", "ELLIPTIC"}), question=False) == "not-reproduced"
    assert decide_sentence(frozenset({"NOT_SEEN"}), question=False) == "none"
    assert decide_sentence(frozenset({"NOT_SEEN", "RUN_CUE"}), question=False) == "not-reproduced"
    assert decide_sentence(frozenset({"REPRODUCED", "FIXED"}), question=False) == "none"
    assert decide_sentence(frozenset({"REPRODUCED", "FIXED", "REVERT"}), question=False) == "reproduced"


def test_decision_branches_of_order_and_patches() -> None:
    # a contrast decides for the sighting; a patched kernel's result speaks of the patch
    assert decide_sentence(frozenset({"NOT_REPRODUCED", "CONTRAST"}), question=False) == "reproduced"
    assert decide_sentence(frozenset({"NOT_REPRODUCED", "PATCHED"}), question=False) == "none"
    assert decide_sentence(frozenset({"NOT_REPRODUCED", "PATCHED", "UNPATCHED", "FIRST_PERSON"}),
                           question=False) == "not-reproduced"
    assert decide_sentence(frozenset({"NOT_REPRODUCED", "GENERIC"}), question=False) == "none"
    assert decide_sentence(frozenset({"REPRODUCED", "FIXED", "CONFIRM_ISSUE"}), question=False) == "reproduced"
    assert decide_sentence(frozenset({"SEEN", "READ_MAIL"}), question=False) == "none"
    # seeing it oneself is a report's own finding, not a reproduction of it
    assert decide_sentence(frozenset({"SEEN"}), question=False, seeing_reproduces=False) == "none"


def test_a_plan_before_the_result_counts_and_one_after_it_does_not() -> None:
    assert read_stance("I'll see if I can reproduce it.").stance == "none"
    assert read_stance("I can reproduce it, so I'll bisect tomorrow.").stance == "reproduced"


def test_not_seeing_after_saying_one_tried_is_a_run() -> None:
    text = "I'm still trying to reproduce it with your exports.\n\nI'm not seeing the problem though.\n"
    result = read_stance(text)
    assert (result.stance, result.evidence) == ("not-reproduced", "I'm not seeing the problem though.")
    # without the attempt, not seeing it is a reading of someone's numbers
    assert read_stance("I'm not seeing the problem though.\n").stance == "none"


def test_results_after_a_tested_patch_are_about_the_patch() -> None:
    text = ("Here is an updated set of patches for you to try.\n\nI ran my usual suites on two VMs "
            "and I have not hit any oopses or warnings.\n")
    assert read_stance(text).stance == "none"
    # the same result with no patch before it is a failed reproduction
    assert read_stance("I ran my usual suites on two VMs and I have not hit any oopses.\n").stance == "not-reproduced"


def _reply(sender: str, subject: str, body: str) -> bytes:
    return (f"From: {sender}\nTo: linux-fsdevel@vger.kernel.org\nSubject: {subject}\n"
            "Date: Tue, 05 Mar 2024 10:00:00 +0000\nMessage-ID: <reply-1@example.org>\n"
            "In-Reply-To: <report-1@example.org>\n\n" + body).encode()


# Whole replies in the shapes seen in the list-years (own words): who writes, thread, body.
REPLY_MESSAGES = [
    ("Ana Ruiz <ana@example.org>", "Re: Filesystem hangs under heavy rsync load",
     "On Mon, Bo wrote:\n> mkdir takes minutes after a while\n\nSame thing here.\n\nOur box is a 2-socket "
     "server with 80 TB on btrfs; after a day of rsync a plain mkdir takes half a minute.\n\nAna\n",
     "reproduced", "Same thing here."),
    ("syzbot <syzbot+0123456789abcdef@syzkaller.appspotmail.com>", "Re: [syzbot] [ext4?] WARNING in ext4_foo",
     "Hello,\n\nsyzbot has tested the proposed patch and the reproducer did not trigger any issue:\n\n"
     "Reported-and-tested-by: syzbot+0123456789abcdef@syzkaller.appspotmail.com\n\nTested on:\n\n"
     "commit:         0123abcd ext4: check the extent length\n", "none", None),
    ("Wei Chen <wei@example.com>", "Re: [BUG] KASAN: use-after-free in shrink_folio_list",
     "I also encountered this issue with my reclaim tests last week.\nAnd I confirmed your fix works.\n",
     "reproduced", "I also encountered this issue with my reclaim tests last week."),
    ("Dan Moreau <dan@example.net>", "Re: [REGRESSION] nfs client hangs after 6.6",
     "I tested the 6.5.10 kernel and I can't reproduce with that, so I guess I'll start bisecting.\n",
     "not-reproduced", "I tested the 6.5.10 kernel and I can't reproduce with that"),
]


@pytest.mark.parametrize("sender,subject,body,stance,evidence", REPLY_MESSAGES)
def test_reply_messages(sender: str, subject: str, body: str, stance: str, evidence: str | None) -> None:
    record = parse_message(_reply(sender, subject, body), Source("eml"))
    assert record.kind == "reply"
    assert record.stance == stance
    if evidence:
        assert record.stance_evidence and record.stance_evidence.startswith(evidence)


def test_first_deciding_sentence_is_the_evidence() -> None:
    text = "Thanks.\n\nI ran it twice on my laptop.\nI can reproduce it: 41 s against 29 s.\n"
    assert read_stance(text).evidence == "I can reproduce it: 41 s against 29 s."


def test_program_output_lines_are_not_statements() -> None:
    text = "read: IOPS=203k, BW=49.6GiB/s\nwrite: IOPS=1k, BW=4MiB/s\n"
    assert read_stance(text).stance == "none"


# Our own reply fixtures: (file, stance, evidence prefix)
FIXTURE_STANCES = [
    ("mail/reply/can-reproduce.eml", "reproduced", "I can reproduce this at will"),
    ("mail/reply/cannot-reproduce.eml", "not-reproduced", "I'm not seeing this on my i7-12700K"),
    ("mail/reply/hedge.eml", "none", None),
    ("mail/reply/quoted-stance-only.eml", "none", None),  # the only stance sentence is quoted
    ("mail/edge/nested-quotes-reply.eml", "not-reproduced", None),  # "> >" says it reproduces
    ("mail/edge/missing-message-id.eml", "none", None),
]


@pytest.mark.parametrize("name,stance,evidence", FIXTURE_STANCES)
def test_fixture_reply_stance(name: str, stance: str, evidence: str | None) -> None:
    record = parse_message((FIXTURES / name).read_bytes(), Source("eml"))
    assert record.stance == stance
    if evidence:
        assert record.stance_evidence.startswith(evidence)


def corpus_labels() -> list[dict[str, str]]:
    with open(FIXTURES / "stance" / "corpus-labels.tsv", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def test_corpus_reply_labels_agreement() -> None:
    require_corpus()
    labels = corpus_labels()
    assert len(labels) == 27  # every distinct reply file of the corpus, labeled by hand
    disagreements = []
    for label in labels:
        record = parse_message((CORPUS / label["file"]).read_bytes(), Source("eml"))
        if record.stance != label["stance"]:
            disagreements.append((label["file"], label["stance"], record.stance))
    agreement = 1 - len(disagreements) / len(labels)
    assert agreement >= 0.95, disagreements
    # the one known miss: a reply of fio output only, no stance sentence to read
    assert [item[0] for item in disagreements] in ([], ["reply_xfs-nvme-seqread-reply.eml"])


def test_corpus_evidence_is_the_labeled_sentence() -> None:
    require_corpus()
    for label in corpus_labels():
        if label["stance"] == "none" or not label["evidence"] or label["file"] == "reply_xfs-nvme-seqread-reply.eml":
            continue
        record = parse_message((CORPUS / label["file"]).read_bytes(), Source("eml"))
        assert record.stance_evidence and record.stance_evidence in label["evidence"], label["file"]


LISTS = SHARED / "corpus" / "lists"
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_MESSAGE_ID = re.compile(rb"^message-id:[ \t]*(?:\r?\n[ \t]+)?<?([^>\s]+)>?", re.IGNORECASE | re.MULTILINE)


def _labelled_messages(wanted: dict[str, set[str]]) -> dict[str, bytes]:
    """The raw messages of the labelled replies: the corpus files and each list-year read once."""
    from triagebot.ingest.inputs import iter_inputs

    found: dict[str, bytes] = {}
    for path in sorted(CORPUS.glob("*.eml")):
        raw = path.read_bytes()
        match = _MESSAGE_ID.search(_BLANK_LINE.split(raw, 1)[0])
        if match and match.group(1).decode() in wanted.get("corpus", set()):
            found[match.group(1).decode()] = raw
    for source in sorted(set(wanted) - {"corpus"}):
        for entry in iter_inputs(str(LISTS / f"{source}.mbox.gz")):
            if entry.raw is None:
                continue
            match = _MESSAGE_ID.search(_BLANK_LINE.split(entry.raw, 1)[0])
            if match and match.group(1).decode() in wanted[source]:
                found[match.group(1).decode()] = entry.raw
    return found


def test_labelled_replies_agreement() -> None:
    require_corpus()
    if not LISTS.is_dir():
        pytest.skip(f"the shared list-years are absent: {LISTS} not found (tests read them from ../shared)")
    with open(FIXTURES / "labels" / "replies.jsonl", encoding="utf-8") as handle:
        labels = [json.loads(line) for line in handle if line.strip()]
    assert len([label for label in labels if label["source"] != "corpus"]) >= 60
    wanted: dict[str, set[str]] = {}
    for label in labels:
        wanted.setdefault(label["source"], set()).add(label["message_id"])
    messages = _labelled_messages(wanted)
    assert sorted(messages) == sorted(label["message_id"] for label in labels)  # every label found
    disagreements = []
    for label in labels:
        source = Source("eml") if label["source"] == "corpus" else Source("mbox")
        record = parse_message(messages[label["message_id"]], source)
        if record.stance != label["stance"]:
            disagreements.append((label["message_id"], label["stance"], record.stance))
    agreement = 1 - len(disagreements) / len(labels)
    assert agreement >= 0.95, disagreements


OBJECTIONS = [
    ("This kernel has CONFIG_XFS_DEBUG=y, which explains it.", "debug-config"),
    ("Please rerun without KASAN, it distorts every number.", "debug-config"),
    ("A 98% drop from that change is not plausible.", "not-plausible"),
    ("I think the bisection went wrong somewhere.", "bisection-doubt"),
    ("This smells like a code alignment effect to me.", "alignment"),
    ("Does the patch below help?", "proposed-fix"),
    ("Could you share the perf profile of both kernels?", "more-data"),
]


@pytest.mark.parametrize("sentence,kind", OBJECTIONS)
def test_objections(sentence: str, kind: str) -> None:
    found = read_objections(sentence)
    assert kind in [item.kind for item in found]
    assert next(item for item in found if item.kind == kind).evidence == sentence


def test_no_objection_in_plain_thanks() -> None:
    assert read_objections("Thanks for looking into it, much appreciated.") == ()


def test_diff_in_own_text_is_a_proposed_fix() -> None:
    text = "Try this:\n\ndiff --git a/fs/x.c b/fs/x.c\n--- a/fs/x.c\n+++ b/fs/x.c\n"
    assert [item.kind for item in read_objections(text)] == ["proposed-fix"]


def test_trailers_and_regzbot_commands() -> None:
    text = ("Fixes: 6e1983a3eb3c (\"ext4: reserve journal credits\")\n"
            "Reported-by: kernel test robot <oliver.sang@intel.com>\n"
            "Tested-by: Marek Nowak <marek@example.org>\n"
            "Closes: https://lore.kernel.org/oe-lkp/202402141805.x@intel.com\n"
            "#regzbot introduced: 6e1983a3eb3c\n#regzbot ^introduced v6.7..v6.8-rc1\n"
            "#regzbot dup-of: https://lore.kernel.org/r/abc@example.org/\n")
    assert [(trailer.name, trailer.value) for trailer in read_trailers(text)] == [
        ("Fixes", "6e1983a3eb3c (\"ext4: reserve journal credits\")"),
        ("Reported-by", "kernel test robot <oliver.sang@intel.com>"),
        ("Tested-by", "Marek Nowak <marek@example.org>"),
        ("Closes", "https://lore.kernel.org/oe-lkp/202402141805.x@intel.com"),
        ("regzbot introduced", "6e1983a3eb3c"),
        ("regzbot ^introduced", "v6.7..v6.8-rc1"),
        ("regzbot dup-of", "https://lore.kernel.org/r/abc@example.org/"),
    ]


# Counter-measurements in corpus replies, checked against the hand labels' numbers and commands:
# (file, [(measurement name or None for prose, value)], [commands the writer ran, verbatim]).
COUNTER_MEASUREMENTS = [
    ("reply_xfs-fsync-heavy-reply.eml",
     [("Amean 1 base", 97.93), ("Amean 1 new", 135.67), ("Amean 1 change", -38.54), ("Amean 8 new", 591.03)], []),
    ("reply_xfs-mgtime-fio-reply.eml", [(None, 500000.0)], []),
    ("reply_xfs-nvme-seqread-reply.eml",
     [("fio.read_iops", 363000.0), ("fio.read_bw", 88.5), ("fio.clat_avg", 174.46), ("fio.clat_stdev", 28.86),
      ("fio.read_iops", 168000.0), ("fio.read_bw", 41.0), ("fio.clat_avg", 374.99)],
     # `df -mh /mnt` is shown too, but a query of the system is no reproducer (rules/commands.toml)
     ["fio --name=test --rw=read --bs=256k --filename=/dev/md127 --direct=1 --numjobs=1 "
      "--iodepth=64 --exitall --group_reporting --ioengine=libaio --runtime=30 --time_based"]),
    ("reply_xfs-randio-many-tasks-reply.eml",
     [(None, 40000.0), (None, 50000.0), (None, 100000.0), (None, 1607000.0), ("fio.write_iops", 206000.0),
      ("fio.write_bw", 805.0), ("fio.write_iops", 1593000.0)],
     [],  # `pgrep kworker |wc -l` counts threads: a query, no reproducer (rules/commands.toml)
     ),
    # the one labeled command not read: `iostat -dxm 5`, written inline in a sentence, not run at a prompt
    ("reply_xfs-nvme-seqread-reply-chinner.eml", [], []),
]


def test_counter_measurements_match_the_labels() -> None:
    require_corpus()
    labeled = {label["file"]: label for label in corpus_labels() if label["numbers"] or label["commands"]}
    assert sorted(labeled) == sorted(case[0] for case in COUNTER_MEASUREMENTS)
    for name, values, commands in COUNTER_MEASUREMENTS:
        record = parse_message((CORPUS / name).read_bytes(), Source("eml"))
        found = [(item.name, item.value) for item in record.measurements]
        for value in values:
            assert value in found, (name, value)
        own_commands = [item.command for item in record.reproducers if not item.quoted]
        assert own_commands == commands, name
        for command in commands:
            assert command in labeled[name]["commands"]  # verbatim as the labeler copied it


def test_measurements_from_pasted_fio_output() -> None:
    from triagebot.parse.measurements import read_measurements

    text = ("  write: IOPS=51.8k, BW=202MiB/s (212MB/s)(11.9GiB/60001msec)\n"
            "    clat (usec): min=12, max=8123, avg=151.20, stdev=40.10\n")
    assert [(item.name, item.value, item.unit) for item in read_measurements(text)] == [
        ("fio.write_iops", 51800.0, "IOPS"), ("fio.write_bw", 202.0, "MiB/s"),
        ("fio.clat_min", 12.0, "usec"), ("fio.clat_max", 8123.0, "usec"),
        ("fio.clat_avg", 151.2, "usec"), ("fio.clat_stdev", 40.1, "usec")]


PARSE = Path(__file__).resolve().parents[1] / "triagebot/parse"


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_stance_and_objection_readers_import_neither_each_other() -> None:
    assert "triagebot.parse.objections" not in _imported_modules(PARSE / "stance.py")
    assert "triagebot.parse.stance" not in _imported_modules(PARSE / "objections.py")


def test_no_parse_module_answers_by_process_state() -> None:
    # A context variable (the batch's old "defer" switch) or a patched sys.modules would make a
    # record depend on the process that parsed it.
    for path in sorted(PARSE.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "contextvars" not in _imported_modules(path), path.name
        assert "sys.modules" not in text, path.name
