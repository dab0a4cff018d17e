"""Benchmark: how often two labellers of the same mail agree (issue 24's label reliability).

Compares two label folders, each holding replies.jsonl (`stance`) and reports.jsonl (`kind`,
`taken_on`) in the blind set's format (fixtures/labels/blind/README.md), matching rows by
`source` (the message's `<owner>/<repo>@<commit>`):

    PYTHONPATH=$PWD python3 bench/agreement.py fixtures/labels/blind fixtures/labels/blind-second

Prints totals only: messages compared (and any found in one folder alone); stance agreement with
its 95% Wilson interval, Cohen's kappa, the 3x3 confusion matrix of counts (first labeller's
stance by row, second's by column) and per-class agreement both ways; for reports, kind agreement,
kappa and per-kind agreement, taken_on agreement, kappa and its 2x2 counts, and the second
labeller's taken_on read against the first as precision and recall (the issue's form).

It never prints a line per message, and has no option that would: a labeller who runs it must not
learn which of their labels the other labeller disagreed with, or the set stops being blind for a
later pass. Disagreements are for reading in the files by hand once all labelling is done.

Bad input (a missing folder or file, a line that is not JSON, a row without `source`, a stance or
kind outside the README's lists, `taken_on` not true/false, a source labelled twice) stops it
with one line naming the file and line, and exit status 2.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

STANCES = ("reproduced", "not-reproduced", "none")
KINDS = ("human-report", "lkp-regression", "human-bug", "complaint", "other", "bot",
         "lkp-improvement", "lkp-functional", "syzbot")
TAKEN_ON = (True, False)
Z_95 = 1.959964  # two-sided 95% normal quantile, for the Wilson interval


class LabelError(ValueError):
    """A label folder, file or line that cannot be compared."""


@dataclass(frozen=True)
class Agreement:
    """Two labellings of the same items over a fixed list of classes."""

    classes: tuple
    matrix: tuple[tuple[int, ...], ...]  # matrix[i][j]: first said classes[i], second classes[j]

    @property
    def total(self) -> int:
        return sum(sum(row) for row in self.matrix)

    @property
    def agreed(self) -> int:
        return sum(self.matrix[i][i] for i in range(len(self.classes)))

    def row_total(self, index: int) -> int:
        return sum(self.matrix[index])

    def column_total(self, index: int) -> int:
        return sum(row[index] for row in self.matrix)

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa; None where chance agreement is already total (one class used by both)."""
        total = self.total
        if total == 0:
            return None
        observed = self.agreed / total
        chance = sum(self.row_total(i) * self.column_total(i) for i in range(len(self.classes))) / total**2
        if chance >= 1.0:
            return None
        return (observed - chance) / (1.0 - chance)


def agreement(pairs: list[tuple[object, object]], classes: tuple) -> Agreement:
    """Confusion matrix of (first, second) label pairs over `classes`."""
    index = {value: number for number, value in enumerate(classes)}
    matrix = [[0] * len(classes) for _ in classes]
    for first, second in pairs:
        matrix[index[first]][index[second]] += 1
    return Agreement(classes, tuple(tuple(row) for row in matrix))


def wilson(successes: int, total: int) -> tuple[float, float]:
    """95% Wilson score interval for a proportion, in percent."""
    if total == 0:
        return (0.0, 100.0)
    share = successes / total
    denominator = 1 + Z_95**2 / total
    centre = (share + Z_95**2 / (2 * total)) / denominator
    half = Z_95 * math.sqrt(share * (1 - share) / total + Z_95**2 / (4 * total**2)) / denominator
    return (100 * max(0.0, centre - half), 100 * min(1.0, centre + half))


def _read(path: Path, field: str, allowed: tuple) -> dict[str, object]:
    if not path.is_file():
        raise LabelError(f"{path}: not found")
    labels: dict[str, object] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise LabelError(f"{where}: not JSON ({error.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("source"), str) or not row["source"]:
            raise LabelError(f"{where}: a row needs a `source` string")
        if field not in row:
            raise LabelError(f"{where}: no `{field}`")
        value = row[field]
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            raise LabelError(f"{where}: `{field}` is {json.dumps(value)}, not one of "
                             f"{', '.join(json.dumps(choice) for choice in allowed)}")
        if row["source"] in labels:
            raise LabelError(f"{where}: {row['source']} is labelled twice")
        labels[row["source"]] = value
    return labels


def load(directory: Path) -> dict[str, dict[str, object]]:
    """One folder's labels by field: {"stance": {source: stance}, "kind": …, "taken_on": …}."""
    if not directory.is_dir():
        raise LabelError(f"{directory}: not a folder")
    return {
        "stance": _read(directory / "replies.jsonl", "stance", STANCES),
        "kind": _read(directory / "reports.jsonl", "kind", KINDS),
        "taken_on": _read(directory / "reports.jsonl", "taken_on", TAKEN_ON),
    }


def compare(first: dict[str, dict[str, object]], second: dict[str, dict[str, object]]) -> dict:
    """Agreement per field over the sources both folders label, and the counts left over."""
    result: dict = {}
    for field, classes in (("stance", STANCES), ("kind", KINDS), ("taken_on", TAKEN_ON)):
        shared = sorted(first[field].keys() & second[field].keys())
        result[field] = agreement([(first[field][source], second[field][source]) for source in shared], classes)
        result[field + "_only_first"] = len(first[field].keys() - second[field].keys())
        result[field + "_only_second"] = len(second[field].keys() - first[field].keys())
    return result


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _kappa(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "n/a"


def _agreement_line(name: str, result: Agreement) -> str:
    low, high = wilson(result.agreed, result.total)
    return (f"{name} agreement: {result.agreed}/{result.total} = {_percent(result.agreed, result.total)} "
            f"(95% interval {low:.1f}-{high:.1f}%), Cohen's kappa {_kappa(result.kappa)}")


def _per_class(result: Agreement, names: list[str]) -> list[str]:
    lines = []
    for index, name in enumerate(names):
        diagonal = result.matrix[index][index]
        row, column = result.row_total(index), result.column_total(index)
        lines.append(f"  {name}: of {row} first-labelled, second agrees on {diagonal} ({_percent(diagonal, row)}); "
                     f"of {column} second-labelled, first agrees on {diagonal} ({_percent(diagonal, column)})")
    return lines


def render(result: dict, first_name: str, second_name: str) -> str:
    stance, kind, taken = result["stance"], result["kind"], result["taken_on"]
    lines = [f"first: {first_name}   second: {second_name}",
             f"messages compared: {stance.total} replies, {kind.total} reports"]
    for field in ("stance", "kind"):
        only_first, only_second = result[field + "_only_first"], result[field + "_only_second"]
        if only_first or only_second:
            lines.append(f"  not compared ({'replies' if field == 'stance' else 'reports'}): "
                         f"{only_first} in first only, {only_second} in second only")
    lines += ["", "Replies", _agreement_line("stance", stance),
              "confusion (rows: first, columns: second):",
              "  " + " " * 16 + "".join(f"{name:>16}" for name in STANCES)]
    for index, name in enumerate(STANCES):
        lines.append(f"  {name:<16}" + "".join(f"{count:>16}" for count in stance.matrix[index]))
    lines.append("per class:")
    lines += _per_class(stance, list(STANCES))
    lines += ["", "Reports", _agreement_line("kind", kind), "per kind:"]
    lines += _per_class(kind, list(KINDS))
    lines.append(_agreement_line("taken_on", taken))
    yes_yes, yes_no = taken.matrix[0]
    no_yes, no_no = taken.matrix[1]
    lines += ["  2x2 (rows: first, columns: second):   taken   not taken",
              f"    taken       {yes_yes:>8} {yes_no:>11}",
              f"    not taken   {no_yes:>8} {no_no:>11}",
              f"  second read against first: precision {_percent(yes_yes, yes_yes + no_yes)}, "
              f"recall {_percent(yes_yes, yes_yes + yes_no)}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path, help="folder of the first labels")
    parser.add_argument("second", type=Path, help="folder of the second labels")
    arguments = parser.parse_args(argv)
    try:
        result = compare(load(arguments.first), load(arguments.second))
    except LabelError as error:
        print(f"agreement: {error}", file=sys.stderr)
        return 2
    print(render(result, str(arguments.first), str(arguments.second)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
