"""bench/stance_embed.py: its sentences, pooling and fallback (the encoder itself is not a dependency)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.support.bench import load_bench

embed = load_bench("stance_embed")


def test_the_writer_s_text_is_cut_into_sentences() -> None:
    assert embed.own_sentences("I can reproduce it. It takes 12s!\n\nThanks,\nAda") == [
        "I can reproduce it.", "It takes 12s!", "Thanks,\nAda"]
    assert embed.own_sentences("  ") == ["(empty)"]
    assert len(embed.own_sentences("Fine here. " * 200)) == embed.MAX_SENTENCES


def test_a_message_vector_is_the_mean_and_the_maximum_of_its_sentences() -> None:
    pooled = embed.pool(np.array([[1.0, -2.0], [3.0, 0.0]]))
    assert pooled.tolist() == [2.0, -1.0, 3.0, 0.0]


def test_the_encoder_only_turns_the_rules_none_into_reproduced() -> None:
    reproduced, not_reproduced, none = (embed.CLASSES.index(name) for name in embed.CLASSES)
    rules = np.array([none, none, not_reproduced, reproduced])
    sure = np.array([0.7, 0.3, 0.9, 0.1])
    assert embed.fallback(rules, sure, 0.5).tolist() == [reproduced, none, not_reproduced, reproduced]
    assert embed.score(np.array([reproduced, none]), np.array([reproduced, reproduced])) == "1/2 (R 1/2, N 0/0)"


def test_the_blind_set_is_refused(capsys, tmp_path) -> None:
    assert embed.main(["--model", str(tmp_path), "--sets", "dev4,blind"]) == 2
    assert "blind" in capsys.readouterr().err


def test_without_the_encoder_it_says_what_it_needs(capsys, tmp_path) -> None:
    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed here: the missing-library message cannot show")
    assert embed.main(["--model", str(tmp_path), "--sets", "dev4"]) == 2
    assert "needs sentence-transformers" in capsys.readouterr().err
