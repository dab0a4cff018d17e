"""Stance, objections and trailers of replies: hand-made sentences, own fixtures, corpus labels."""
from __future__ import annotations

import ast
import csv
from pathlib import Path

import pytest

from tests.conftest import CORPUS, FIXTURES, require_corpus
from triagebot.parse.objections import read_objections, read_trailers
from triagebot.parse.report import parse_message
from triagebot.parse.stance import decide_sentence, read_stance
from triagebot.records import Source

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
]


@pytest.mark.parametrize("sentence,expected", SENTENCES)
def test_sentence_stance(sentence: str, expected: str) -> None:
    result = read_stance(sentence)
    assert result.stance == expected
    assert (result.evidence is None) == (expected == "none")


def test_decision_branches() -> None:
    # question beats every match; a negation beats an affirmation in the same sentence
    assert decide_sentence(frozenset({"REPRODUCED"}), question=True) == "none"
    assert decide_sentence(frozenset({"REPRODUCED", "NOT_REPRODUCED"}), question=False) == "not-reproduced"
    assert decide_sentence(frozenset({"NOT_SEEN"}), question=False) == "none"
    assert decide_sentence(frozenset({"NOT_SEEN", "RUN_CUE"}), question=False) == "not-reproduced"
    assert decide_sentence(frozenset({"REPRODUCED", "FIXED"}), question=False) == "none"
    assert decide_sentence(frozenset({"REPRODUCED", "FIXED", "REVERT"}), question=False) == "reproduced"


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
     ["df -mh /mnt", "fio --name=test --rw=read --bs=256k --filename=/dev/md127 --direct=1 --numjobs=1 "
                     "--iodepth=64 --exitall --group_reporting --ioengine=libaio --runtime=30 --time_based"]),
    ("reply_xfs-randio-many-tasks-reply.eml",
     [(None, 40000.0), (None, 50000.0), (None, 100000.0), (None, 1607000.0), ("fio.write_iops", 206000.0),
      ("fio.write_bw", 805.0), ("fio.write_iops", 1593000.0)], ["pgrep kworker |wc -l"]),
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
