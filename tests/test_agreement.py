"""bench/agreement.py: the arithmetic of two labellers' agreement, on made-up label folders."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bench import load_bench

PROJECT = Path(__file__).resolve().parents[1]


def _bench():
    return load_bench("agreement")


agreement = _bench()

# (first stance, second stance, how many): 11 of 14 agree; both labellers use reproduced 5 times,
# not-reproduced 3 and none 6, so chance agreement is 70/196 and kappa (11/14 - 70/196)/(126/196) = 2/3.
STANCE_PAIRS = [("reproduced", "reproduced", 4), ("reproduced", "none", 1),
                ("not-reproduced", "not-reproduced", 2), ("not-reproduced", "reproduced", 1),
                ("none", "none", 5), ("none", "not-reproduced", 1)]
# (first kind, first taken_on, second kind, second taken_on, how many): taken_on is the textbook
# 2x2 (20, 5 / 10, 15) whose kappa is 0.4; kinds agree on 18 + 15 = 33 of 50.
REPORT_ROWS = [("human-report", True, "human-report", True, 18), ("human-report", True, "lkp-regression", True, 2),
               ("human-report", True, "complaint", False, 5), ("complaint", False, "human-report", True, 10),
               ("human-bug", False, "human-bug", False, 15)]


def _source(number: int) -> str:
    return f"example/mirror@{number:040x}"


def _write(folder: Path, replies: list[dict], reports: list[dict]) -> Path:
    folder.mkdir()
    for name, rows in (("replies.jsonl", replies), ("reports.jsonl", reports)):
        (folder / name).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return folder


@pytest.fixture()
def folders(tmp_path: Path) -> tuple[Path, Path]:
    first_replies, second_replies, first_reports, second_reports = [], [], [], []
    number = 0
    for first, second, count in STANCE_PAIRS:
        for _ in range(count):
            number += 1
            first_replies.append({"source": _source(number), "stance": first})
            second_replies.append({"source": _source(number), "stance": second, "note": "hesitated"})
    for first_kind, first_taken, second_kind, second_taken, count in REPORT_ROWS:
        for _ in range(count):
            number += 1
            first_reports.append({"source": _source(number), "kind": first_kind, "taken_on": first_taken})
            second_reports.append({"source": _source(number), "kind": second_kind, "taken_on": second_taken})
    # a reply only the first folder holds, in second's order reversed: matching is by source, not by line
    first_replies.append({"source": _source(999), "stance": "none"})
    second_replies.reverse()
    return (_write(tmp_path / "first", first_replies, first_reports),
            _write(tmp_path / "second", second_replies, second_reports))


def test_stance_matrix_agreement_and_kappa(folders: tuple[Path, Path]) -> None:
    result = agreement.compare(agreement.load(folders[0]), agreement.load(folders[1]))
    stance = result["stance"]
    assert stance.matrix == ((4, 0, 1), (1, 2, 0), (0, 1, 5))  # rows first, columns second
    assert (stance.agreed, stance.total) == (11, 14)
    assert stance.kappa == pytest.approx(2 / 3)
    assert (result["stance_only_first"], result["stance_only_second"]) == (1, 0)


def test_report_kind_and_taken_on(folders: tuple[Path, Path]) -> None:
    result = agreement.compare(agreement.load(folders[0]), agreement.load(folders[1]))
    assert (result["kind"].agreed, result["kind"].total) == (33, 50)
    taken = result["taken_on"]
    assert taken.matrix == ((20, 5), (10, 15))
    assert taken.kappa == pytest.approx(0.4)


def test_kappa_is_undefined_when_both_use_one_class() -> None:
    same = agreement.agreement([("none", "none")] * 4, agreement.STANCES)
    assert (same.agreed, same.total, same.kappa) == (4, 4, None)


def test_wilson_interval_for_eight_of_ten() -> None:
    # by hand: centre (0.8 + z²/20) / (1 + z²/10) = 0.7167, half-width 0.2266 with z = 1.96
    low, high = agreement.wilson(8, 10)
    assert (round(low, 1), round(high, 1)) == (49.0, 94.3)


def test_the_command_prints_totals_and_never_a_message(folders: tuple[Path, Path]) -> None:
    run = subprocess.run([sys.executable, str(PROJECT / "bench" / "agreement.py"), *map(str, folders)],
                         capture_output=True, text=True, check=True)
    out = run.stdout
    assert "messages compared: 14 replies, 50 reports" in out
    assert "stance agreement: 11/14 = 78.6%" in out and "Cohen's kappa 0.667" in out
    assert "reproduced: of 5 first-labelled, second agrees on 4 (80.0%)" in out
    assert "taken_on agreement: 35/50 = 70.0%" in out and "Cohen's kappa 0.400" in out
    assert "precision 66.7%, recall 80.0%" in out  # 20 of the second's 30 taken; 20 of the first's 25
    assert "1 in first only, 0 in second only" in out
    assert "example/mirror@" not in out and "hesitated" not in out


@pytest.mark.parametrize("line, message", [
    ("not json", "replies.jsonl:2: not JSON"),
    ('{"stance": "none"}', "replies.jsonl:2: a row needs a `source` string"),
    ('{"source": "a/b@1", "stance": "maybe"}', 'replies.jsonl:2: `stance` is "maybe", not one of'),
    ('{"source": "a/b@0", "stance": "none"}', "replies.jsonl:2: a/b@0 is labelled twice"),
])
def test_bad_input_is_one_line_naming_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    good = _write(tmp_path / "good", [{"source": "a/b@0", "stance": "none"}],
                  [{"source": "a/b@9", "kind": "other", "taken_on": False}])
    bad = _write(tmp_path / "bad", [], [{"source": "a/b@9", "kind": "other", "taken_on": False}])
    (bad / "replies.jsonl").write_text(json.dumps({"source": "a/b@0", "stance": "none"}) + "\n" + line + "\n")
    run = subprocess.run([sys.executable, str(PROJECT / "bench" / "agreement.py"), str(good), str(bad)],
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    assert message in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_taken_on_must_be_true_or_false(tmp_path: Path) -> None:
    folder = _write(tmp_path / "labels", [], [{"source": "a/b@9", "kind": "other", "taken_on": 1}])
    with pytest.raises(agreement.LabelError, match=r"reports.jsonl:1: `taken_on` is 1"):
        agreement.load(folder)


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(agreement.LabelError, match="absent: not a folder"):
        agreement.load(tmp_path / "absent")
