"""Benchmark: a learned reply stance against the rules, measured across lists (issue 24, round four).

Reads every development label of reply stance (fixtures/labels/replies.jsonl, dev2/, dev3/ and
dev4/; never fixtures/labels/blind/), parses each labelled message as bench/blind.py does, and
measures leave-one-list-out: for each list, a multinomial logistic regression (numpy and scipy;
L2, L-BFGS from zero weights, so the same labels give the same model) is trained on the other
lists' labels and scored on the held-out list, next to the rules (parse/stance.py with
numbers.py: what `parse_message` gives) on the same messages. Features (bench/stance_features.py)
are words and word pairs of the writer's own text marked for negation and first person, word
classes per sentence, per-kernel number lines, the subject's kind, and for "model+rules" the
rules' own answer; below a threshold of probability the model leaves the rules' answer. Prints
per list: accuracy and the recall of reproduced / not-reproduced / none for each reader.

The rules were written from every development list but linux-nvme (dev4), so on the others their
figure is in-sample; only dev4 is held out from both readers. The first label set holds messages
of linux-btrfs and linux-nfs, lists kept for independent measurement: their labels are left out.

    PYTHONPATH=$PWD python3 bench/stance_learn.py [--mirrors DIR] [--shared DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from accuracy import RESERVED, corpus_lists, find_messages, label_list  # noqa: E402
from blind import MIRRORS, read_raw  # noqa: E402
from blind import load_labels as load_mirror_labels  # noqa: E402
from stance_features import decision_features, text_features  # noqa: E402

from triagebot.parse.message import decode_message  # noqa: E402
from triagebot.parse.quoting import split_quotes  # noqa: E402
from triagebot.parse.report import parse_message  # noqa: E402
from triagebot.records.report import Source  # noqa: E402

LABELS = PROJECT / "fixtures" / "labels"
SHARED = PROJECT.parent / "shared"
DEV_SETS = ("dev2", "dev3", "dev4")
CLASSES = ("reproduced", "not-reproduced", "none")


def load_examples(mirrors: Path, shared: Path) -> tuple[list[dict], list[str]]:
    """One example per development label whose message was found: list, label, features, rules' stance."""
    notes: list[str] = []
    examples: list[dict] = []
    first = [json.loads(line) for line in (LABELS / "replies.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    lists = corpus_lists(shared)
    kept = []
    for number, label in enumerate(first, 1):
        label["_id"] = f"replies.jsonl:{number}"
        label["list"] = label_list(label, lists)
        if label["list"] not in RESERVED:
            kept.append(label)
    found = find_messages(kept, shared)
    for label in kept:
        raw = found.get((label["source"], label["message_id"]))
        if raw is None:
            notes.append(f"missing: {label['_id']} {label['source']} {label['message_id']}")
            continue
        examples.append(_example(label, raw))
    for name in DEV_SETS:
        directory = LABELS / name
        if not (directory / "replies.jsonl").exists():
            continue
        replies, _ = load_mirror_labels(directory)
        for label in replies:
            label["_id"] = f"{name}:{label['_id'].split(':', 1)[1]}"
            if label["list"] in RESERVED:
                raise SystemExit(f"stance_learn: {label['_id']}: list {label['list']} is kept for measurement")
        raw_by_id, more = read_raw(replies, mirrors)
        notes.extend(more)
        examples.extend(_example(label, raw_by_id[label["_id"]]) for label in replies if label["_id"] in raw_by_id)
    return examples, notes


def _example(label: dict, raw: bytes) -> dict:
    rules = parse_message(raw, Source("eml"))
    decoded = decode_message(raw)
    own = split_quotes(decoded.body).own
    numbers = rules.stance_numbers.outcome if rules.stance_numbers else None
    features = decision_features(text_features(own, decoded.subject or ""), rules.stance, rules.stance_evidence,
                                 numbers)
    return {"id": label["_id"], "list": label["list"], "label": label["stance"], "rules": rules.stance,
            "kind": rules.kind, "features": sorted(features)}


# -- the model --------------------------------------------------------------------------------

def vocabulary(examples: list[dict], min_messages: int, min_lists: int) -> list[str]:
    """Features seen in at least `min_messages` training messages of at least `min_lists` lists:
    a phrase one list's writers use and no other list's does not generalize."""
    messages: Counter[str] = Counter()
    lists: dict[str, set[str]] = {}
    for example in examples:
        for feature in example["features"] or ():
            messages[feature] += 1
            lists.setdefault(feature, set()).add(example["list"])
    return sorted(feature for feature, count in messages.items()
                  if count >= min_messages and len(lists[feature]) >= min_lists)


def _matrix(examples: list[dict], index: dict[str, int]) -> np.ndarray:
    matrix = np.zeros((len(examples), len(index) + 1))
    matrix[:, -1] = 1.0  # bias
    for row, example in enumerate(examples):
        for feature in example["features"] or ():
            column = index.get(feature)
            if column is not None:
                matrix[row, column] = 1.0
    return matrix


def train(examples: list[dict], *, l2: float, min_messages: int, min_lists: int,
          balance: float) -> dict:
    """Multinomial logistic regression, L2-penalised (bias unpenalised), each class weighted by
    (its share)^-balance (0: none; 1: fully balanced). Deterministic."""
    usable = [example for example in examples if example["features"] is not None]
    features = vocabulary(usable, min_messages, min_lists)
    index = {feature: column for column, feature in enumerate(features)}
    x = _matrix(usable, index)
    y = np.array([CLASSES.index(example["label"]) for example in usable])
    counts = np.bincount(y, minlength=len(CLASSES)).astype(float)
    class_weight = (counts.sum() / np.maximum(counts, 1.0) / len(CLASSES)) ** balance
    sample_weight = class_weight[y]
    onehot = np.eye(len(CLASSES))[y]
    n_features = x.shape[1]

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        weights = flat.reshape(n_features, len(CLASSES))
        scores = x @ weights
        scores -= scores.max(axis=1, keepdims=True)
        probabilities = np.exp(scores)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        value = -(sample_weight * np.log(np.maximum((probabilities * onehot).sum(axis=1), 1e-300))).sum()
        gradient = x.T @ ((probabilities - onehot) * sample_weight[:, None])
        penalised = weights[:-1]
        value += 0.5 * l2 * float((penalised ** 2).sum())
        gradient[:-1] += l2 * penalised
        return float(value), gradient.ravel()

    start = np.zeros(n_features * len(CLASSES))
    result = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    weights = result.x.reshape(n_features, len(CLASSES))
    return {"features": features, "weights": weights[:-1], "bias": weights[-1]}


class Model:
    """A trained model: a dict lookup per feature and a softmax over the three classes."""

    def __init__(self, trained: dict) -> None:
        self.weights = {feature: tuple(float(value) for value in row)
                        for feature, row in zip(trained["features"], trained["weights"], strict=True)}
        self.bias = tuple(float(value) for value in trained["bias"])

    def probabilities(self, features: frozenset[str]) -> tuple[float, ...]:
        scores = list(self.bias)
        for feature in features:
            row = self.weights.get(feature)
            if row is not None:
                scores = [score + value for score, value in zip(scores, row, strict=True)]
        top = max(scores)
        exps = [math.exp(score - top) for score in scores]
        return tuple(value / sum(exps) for value in exps)

    def decide(self, features: frozenset[str], fallback: str, threshold: float) -> str:
        """The most likely class, or `fallback` (the rules' answer) below the threshold."""
        probabilities = self.probabilities(features)
        best = max(range(len(CLASSES)), key=lambda column: probabilities[column])
        return CLASSES[best] if probabilities[best] >= threshold else fallback


# -- measuring --------------------------------------------------------------------------------

def score(pairs: list[tuple[str, str]]) -> dict:
    """(label, output) pairs: agreement and per-class recall."""
    by_label: dict[str, Counter[str]] = {name: Counter() for name in CLASSES}
    for label, output in pairs:
        by_label[label][output] += 1
    return {"agree": sum(1 for label, output in pairs if label == output), "total": len(pairs),
            "recall": {name: (by_label[name][name], sum(by_label[name].values())) for name in CLASSES}}


SETTINGS = {"l2": 1.0, "min_messages": 3, "min_lists": 2, "balance": 0.5}
RULE_FEATURES = ("rule:", "numbers:")
# (name, rule features given to the model, threshold below which the rules' answer stands)
SYSTEMS = (("model (text)", False, 0.0), ("model+rules", True, 0.0), ("model+rules p>=0.8", True, 0.8))


def _without_rules(example: dict) -> dict:
    return {**example, "features": [item for item in example["features"] if not item.startswith(RULE_FEATURES)]}


def leave_one_list_out(examples: list[dict], settings: dict = SETTINGS) -> dict[str, dict[str, list]]:
    """Per held-out list, per reader: (label, output) pairs."""
    lists = sorted({example["list"] for example in examples})
    text_only = [_without_rules(example) for example in examples]
    result: dict[str, dict[str, list]] = {}
    for held in lists:
        rows: dict[str, list] = {"rules": [(example["label"], example["rules"])
                                           for example in examples if example["list"] == held]}
        models = {with_rules: Model(train([example for example in (examples if with_rules else text_only)
                                           if example["list"] != held], **settings))
                  for with_rules in (False, True)}
        for name, with_rules, threshold in SYSTEMS:
            testing = [example for example in (examples if with_rules else text_only) if example["list"] == held]
            rows[name] = [(example["label"], models[with_rules].decide(frozenset(example["features"]),
                                                                       example["rules"], threshold))
                          for example in testing]
        result[held] = rows
    return result


def _percent(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100.0 * part / whole:.1f}%)" if whole else "-"


def print_table(loo: dict) -> None:
    systems = list(next(iter(loo.values())))
    for system in systems:
        print(f"\n{system}")
        print(f"{'list':18} {'accuracy':>18} {'reproduced':>16} {'not-reproduced':>16} {'none':>18}")
        pooled: list[tuple[str, str]] = []
        for held, rows in loo.items():
            pooled.extend(rows[system])
            _row(held, score(rows[system]))
        _row("all (pooled)", score(pooled))


def _row(name: str, result: dict) -> None:
    recall = result["recall"]
    print(f"{name:18} {_percent(result['agree'], result['total']):>18} {_percent(*recall['reproduced']):>16} "
          f"{_percent(*recall['not-reproduced']):>16} {_percent(*recall['none']):>18}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirrors", type=Path, default=MIRRORS)
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    examples, notes = load_examples(args.mirrors, args.shared)
    for note in notes:
        print(note, file=sys.stderr)
    counts = Counter(example["list"] for example in examples)
    print(f"{len(examples)} labelled replies: " + ", ".join(f"{name} {counts[name]}" for name in sorted(counts)))
    loo = leave_one_list_out(examples)
    if args.json:
        print(json.dumps({held: {system: score(pairs) for system, pairs in rows.items()}
                          for held, rows in loo.items()}))
    else:
        print_table(loo)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
