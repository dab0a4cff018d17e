"""bench/stance_learn.py: the learned stance it measures against the rules (issue 24, round four).

The learner is a measurement, not part of triagebot: these tests check that its features tell the
forms apart, that training is deterministic and learns what the labels say, that leave-one-list-out
never scores a list it trained on, and that it reads no blind or kept-list label.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT / "bench"))

import stance_learn  # noqa: E402
from stance_features import decision_features, text_features  # noqa: E402


def test_negation_and_the_writer_are_marked() -> None:
    mine = text_features("I can't reproduce this on my box.", "Re: ext4 hang")
    theirs = text_features("The reporter can reproduce this.", "Re: ext4 hang")
    assert {"w:not_reproduce", "fw:not_reproduce", "c:neg+repro+writer"} <= mine
    assert "w:reproduce" in theirs and "w:not_reproduce" not in theirs and "fw:reproduce" not in theirs
    assert "subject:report" in mine  # "hang" names a report thread (classify.is_report_thread)
    assert "subject:patch" in text_features("ok", "Re: [PATCH v2] ext4: fix it")


def test_a_negation_ends_with_its_clause() -> None:
    features = text_features("I did not apply the patch; I see the same hang.", "Re: hang")
    assert "w:not_apply" in features and "w:see" in features and "w:not_see" not in features


def test_per_kernel_number_lines_are_counted() -> None:
    table = "v6.1     123.4 MB/s\nv6.2     98.7 MB/s\nv6.3     97.1 MB/s\n"
    assert "kernel-numbers:3+" in text_features(table, "Re: slow reads")
    assert not any(item.startswith("kernel-numbers:") for item in text_features("no numbers", "Re: x"))


def test_rule_features_name_the_rules_answer_and_a_conflict() -> None:
    features = decision_features(frozenset({"w:ok"}), "none", "conflicting: a / b", "inconclusive")
    assert {"rule:none", "rule:conflicting", "numbers:inconclusive", "w:ok"} == features


def _examples() -> list[dict]:
    texts = {
        "reproduced": ["I can reproduce it here.", "I see the same hang on my machine.", "I hit it too."],
        "not-reproduced": ["I can't reproduce it here.", "I don't see the hang on my machine.",
                           "I never hit it."],
        "none": ["Could you send the config?", "Please test this patch.", "Thanks for the report."],
    }
    examples = []
    for index, list_name in enumerate(("list-a", "list-b", "list-c")):
        for label, sentences in texts.items():
            for sentence in sentences:
                features = decision_features(text_features(sentence, "Re: a hang"), "none", None, None)
                examples.append({"id": f"{list_name}:{index}", "list": list_name, "label": label,
                                 "rules": "none", "features": sorted(features)})
    return examples


def test_training_is_deterministic_and_learns_the_labels() -> None:
    examples = _examples()
    first = stance_learn.train(examples, l2=0.1, min_messages=2, min_lists=2, balance=0.5)
    second = stance_learn.train(examples, l2=0.1, min_messages=2, min_lists=2, balance=0.5)
    assert first["features"] == second["features"]
    assert (first["weights"] == second["weights"]).all() and (first["bias"] == second["bias"]).all()
    model = stance_learn.Model(first)
    for sentence, expected in (("I can reproduce the hang here.", "reproduced"),
                               ("I can't reproduce the hang here.", "not-reproduced"),
                               ("Please send the config.", "none")):
        features = decision_features(text_features(sentence, "Re: a hang"), "none", None, None)
        assert model.decide(features, "none", 0.0) == expected, sentence


def test_below_the_threshold_the_rules_answer_stands() -> None:
    model = stance_learn.Model(stance_learn.train(_examples(), l2=0.1, min_messages=2, min_lists=2, balance=0.5))
    features = decision_features(text_features("Hmm.", "Re: a hang"), "reproduced", None, None)
    assert model.decide(features, "reproduced", 0.99) == "reproduced"


def test_a_phrase_of_one_list_is_no_feature() -> None:
    examples = _examples()
    examples[0] = {**examples[0], "features": [*examples[0]["features"], "w:zanzibar"]}
    assert "w:zanzibar" not in stance_learn.vocabulary(examples, min_messages=1, min_lists=2)
    assert "w:zanzibar" in stance_learn.vocabulary(examples, min_messages=1, min_lists=1)


def test_leave_one_list_out_scores_each_list_only_on_its_own_messages() -> None:
    examples = _examples()
    result = stance_learn.leave_one_list_out(examples, {"l2": 0.1, "min_messages": 2, "min_lists": 2,
                                                        "balance": 0.5})
    assert sorted(result) == ["list-a", "list-b", "list-c"]
    for rows in result.values():
        assert set(rows) == {"rules", *(name for name, _, _ in stance_learn.SYSTEMS)}
        assert all(len(pairs) == 9 for pairs in rows.values())
    # the three lists say the same things: a model trained on two reads the third right
    assert all(stance_learn.score(rows["model (text)"])["agree"] == 9 for rows in result.values())


def test_the_learner_reads_no_blind_or_kept_list_label() -> None:
    assert "blind" not in stance_learn.DEV_SETS
    for name in ("linux-btrfs", "linux-nfs", "linux-scsi", "dm-devel", "linux-f2fs-devel", "linux-xfs"):
        assert name in stance_learn.RESERVED
    first = [json.loads(line) for line in (PROJECT / "fixtures/labels/replies.jsonl").read_text().splitlines()
             if line.strip()]
    kept = [label for label in first if stance_learn.label_list(label, {}) not in stance_learn.RESERVED]
    assert kept and len(kept) < len(first)  # the first set's linux-btrfs and linux-nfs labels are left out


def test_the_development_sets_are_measured_when_the_mirrors_are_here() -> None:
    examples, _notes = stance_learn.load_examples(stance_learn.MIRRORS, stance_learn.SHARED)
    lists = {example["list"] for example in examples}
    if not {"linux-ext4", "linux-nvme"} <= lists:
        pytest.skip(f"development mirrors absent under {stance_learn.MIRRORS} (lists found: {sorted(lists)})")
    assert not any(example["id"].startswith("blind") for example in examples)
    assert not lists & set(stance_learn.RESERVED)
    assert sum(1 for example in examples if example["list"] == "linux-nvme") >= 100
