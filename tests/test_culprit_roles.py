"""Which commit a person's report blames: the wordings seen in real reports (issue 16)."""
from __future__ import annotations

import pytest

from triagebot.parse.commits import find_commits


def roles(text: str, subject: str = "") -> list[tuple[str, str]]:
    return [(commit.sha, commit.role) for commit in find_commits(text, subject=subject)]


@pytest.mark.parametrize(("text", "expected"), [
    # "associated with commit X" blames X
    ("We see a 12% regression associated with commit 1a2b3c4d5e6f on 6.8.",
     [("1a2b3c4d5e6f", "culprit")]),
    # several commits blamed in one sentence are each a culprit
    ("After bisecting, the culprit are commits 1a2b3c4d5e6f (or one of it) and 9f8e7d6c5b4a.",
     [("1a2b3c4d5e6f", "culprit"), ("9f8e7d6c5b4a", "culprit")]),
    # "commit X (subject) causes …"
    ("The commit 0e7ab7efe77451cba4cbecb6c9f5ef83cf32b36b (xfs: Throttle commits) causes tasks to wait.",
     [("0e7ab7efe77451cba4cbecb6c9f5ef83cf32b36b", "culprit")]),
    # a hash ending a sentence is still a hash; a file name is not
    ("It bisects to commit 2f7d0b4c9a1e. See also abc123def456.c for the helper.",
     [("2f7d0b4c9a1e", "culprit")]),
    # one culprit per message unless one sentence names several: a later blame is context
    ("The regression was introduced by 1a2b3c4d5e6f. Commit 9f8e7d6c5b4a caused a different one.",
     [("1a2b3c4d5e6f", "culprit"), ("9f8e7d6c5b4a", "mentioned")]),
    # issue 24's forms: "started after", "happens after", a revert that restores, a figure "with the commit"
    ("Our build times started after commit 3c4d5e6f7a8b (\"mm: batch lru\") to grow.",
     [("3c4d5e6f7a8b", "culprit")]),
    ("The stall happens after commit 3c4d5e6f7a8b was merged.", [("3c4d5e6f7a8b", "culprit")]),
    ("Reverting 3c4d5e6f7a8b on top of 6.9 restores the old numbers.", [("3c4d5e6f7a8b", "culprit")]),
    ("stream triad is -22.4% with the commit 3c4d5e6f7a8b applied.", [("3c4d5e6f7a8b", "culprit")]),
    # a revert that changed nothing blames nothing
    ("I tried reverting 3c4d5e6f7a8b, with no difference.", [("3c4d5e6f7a8b", "mentioned")]),
])
def test_culprit_roles(text: str, expected: list[tuple[str, str]]) -> None:
    assert roles(text) == expected


def test_a_subject_that_blames_its_commit_names_the_culprit() -> None:
    assert roles("Many more ACCESS calls.", "[NFS] Performance degradation due to commit 0eb43812c027 (NFS: x)") \
        == [("0eb43812c027", "culprit")]
    assert roles("Boot hangs.", "commit 0790303ec869 leads to cpu stall") == [("0790303ec869", "culprit")]
    assert roles("Notes.", "[NFS] a question about commit 0eb43812c027") == []
