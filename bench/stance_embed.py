"""Benchmark: would a pretrained sentence encoder read reply stance across lists (issue 24)?

Not a triagebot dependency: run it from a separate virtual environment holding
sentence-transformers (which brings torch and scikit-learn) and a sentence-transformers model
folder on disk (all-MiniLM-L6-v2 was measured; nothing here fetches one). Reads the reply
labels of development sets (dev2, dev3, dev4, dev6 by default; never the blind set), parses each
reply as bench/blind.py does for the rules' stance, encodes the sentences of the writer's own
text (at most 60; mean and max pooled), and scores each set held out, a logistic regression
trained on the other sets:

- `rules`: triagebot's stance;
- `encoder`: the regression alone (classes balanced);
- `rules, then encoder at p>=T`: where the rules say `none`, `reproduced` when the regression
  gives it at least T (unweighted classes).

    <venv>/bin/python bench/stance_embed.py --model DIR [--sets dev2,dev3,dev4,dev6] [--mirrors DIR]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from blind import MIRRORS, load_labels, read_raw  # noqa: E402

from triagebot.parse.message import decode_message  # noqa: E402
from triagebot.parse.quoting import split_quotes  # noqa: E402
from triagebot.parse.report import parse_message  # noqa: E402
from triagebot.records.report import Source  # noqa: E402

LABELS = PROJECT / "fixtures" / "labels"
DEFAULT_SETS = ("dev2", "dev3", "dev4", "dev6")
CLASSES = ("reproduced", "not-reproduced", "none")
THRESHOLDS = (0.4, 0.5, 0.6)
MAX_SENTENCES = 60
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def own_sentences(own: str) -> list[str]:
    """The writer's own text cut into sentences (at most MAX_SENTENCES), or one placeholder."""
    found = [part.strip() for part in _SENTENCE_END.split(own) if len(part.strip()) > 3]
    return found[:MAX_SENTENCES] or ["(empty)"]


def pool(vectors: np.ndarray) -> np.ndarray:
    """One message's vector: the mean and the maximum of its sentences' vectors, side by side."""
    return np.concatenate([vectors.mean(axis=0), vectors.max(axis=0)])


def fallback(rules: np.ndarray, reproduced_probability: np.ndarray, threshold: float) -> np.ndarray:
    """The rules' answers, with `none` turned to `reproduced` where the encoder is that sure."""
    answers = rules.copy()
    answers[(rules == CLASSES.index("none")) & (reproduced_probability >= threshold)] = CLASSES.index("reproduced")
    return answers


def score(answers: np.ndarray, labels: np.ndarray) -> str:
    def recall(name: str) -> str:
        column = CLASSES.index(name)
        return f"{int(((answers == column) & (labels == column)).sum())}/{int((labels == column).sum())}"
    return f"{int((answers == labels).sum())}/{len(labels)} (R {recall('reproduced')}, N {recall('not-reproduced')})"


def load_rows(names: list[str], mirrors: Path) -> list[dict]:
    rows = []
    for name in names:
        replies, _reports = load_labels(LABELS / name)
        raw, _notes = read_raw(replies, mirrors)
        for label in replies:
            message = raw.get(label["_id"])
            if message is None:
                continue
            own = split_quotes(decode_message(message).body).own
            rows.append({"set": name, "label": label["stance"], "sentences": own_sentences(own),
                         "rules": parse_message(message, Source("eml")).stance})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a sentence-transformers model folder")
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS), help="development label sets, comma-separated")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="folder holding the git mirrors")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.sets.split(",") if name.strip()]
    if "blind" in names or "blind-second" in names:
        print("bench/stance_embed.py: the blind set is measured by bench/blind.py only", file=sys.stderr)
        return 2
    try:
        from sentence_transformers import SentenceTransformer
        from sklearn.linear_model import LogisticRegression
    except ImportError as error:
        print(f"bench/stance_embed.py: needs sentence-transformers, not a triagebot dependency ({error}); "
              "run it from a virtual environment that has it", file=sys.stderr)
        return 2
    if not (args.model / "modules.json").exists():
        print(f"bench/stance_embed.py: {args.model}: not a sentence-transformers model folder (no modules.json)",
              file=sys.stderr)
        return 2
    rows = load_rows(names, args.mirrors)
    encoder = SentenceTransformer(str(args.model), device="cpu")
    flat = [sentence for row in rows for sentence in row["sentences"]]
    vectors = encoder.encode(flat, batch_size=64, show_progress_bar=False, normalize_embeddings=True)
    pooled, start = [], 0
    for row in rows:
        pooled.append(pool(vectors[start:start + len(row["sentences"])]))
        start += len(row["sentences"])
    features = np.array(pooled)
    labels = np.array([CLASSES.index(row["label"]) for row in rows])
    rules = np.array([CLASSES.index(row["rules"]) for row in rows])
    sets = np.array([row["set"] for row in rows])
    print(f"{len(rows)} labelled replies, {len(flat)} sentences; each set held out, trained on the others")
    for held in names:
        train, test = sets != held, sets == held
        if not test.any():
            continue
        alone = LogisticRegression(C=1.0, max_iter=3000, class_weight="balanced").fit(features[train], labels[train])
        plain = LogisticRegression(C=1.0, max_iter=3000).fit(features[train], labels[train])
        sure = plain.predict_proba(features[test])[:, CLASSES.index("reproduced")]
        line = [f"rules {score(rules[test], labels[test])}",
                f"encoder {score(alone.predict(features[test]), labels[test])}"]
        line += [f"rules, then encoder at p>={threshold} {score(fallback(rules[test], sure, threshold), labels[test])}"
                 for threshold in THRESHOLDS]
        print(f"{held}: " + "; ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
