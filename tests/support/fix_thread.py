"""A fix series posted in a report's thread, made with real git (format-patch) on the lab's
bisection repository: v1 (two patches, which only half undo the slowdown) and v2 (a cover
letter and two patches, which set `lab-factor` back to 1.0), then replies that give v2 trailers.
"""
from __future__ import annotations

from pathlib import Path

from tests.support.lab import FACTOR_FILE, git

REVIEWER = "Ann Reviewer <ann@example.org>"
TESTER = "Ben Tester <ben@example.org>"


def _series(repo: Path, suspect: str, factor: str, version: int, root_id: str) -> list[bytes]:
    """format-patch mails of a two-patch fix of `suspect`, version `version`, replying to root_id."""
    git(repo, "checkout", "-q", "-B", f"fix-v{version}", suspect)
    (repo / "history.txt").open("a").write(f"fix v{version}: prepare\n")
    git(repo, "commit", "-q", "-am", "sched: prepare the wakeup path for the fix")
    (repo / FACTOR_FILE).write_text(f"{factor}\n")
    git(repo, "commit", "-q", "-am", "sched: restore the wakeup granularity on small machines\n\n"
        "Signed-off-by: Carl Author <carl@example.org>")
    options = ["--cover-letter"] if version > 1 else []
    text = git(repo, "format-patch", "--stdout", "--thread=shallow", f"--in-reply-to=<{root_id}>",
               f"-v{version}", *options, "-2", "HEAD")
    git(repo, "checkout", "-q", "main")
    # one RFC 822 message each, without format-patch's mbox "From <sha> Mon Sep 17" line
    mails = [part.split("\n", 1)[1].encode() for part in ("\n" + text).split("\nFrom ")[1:]]
    posted = f"Date: {'Mon, 15 Apr 2024 18' if version == 1 else 'Tue, 16 Apr 2024 08'}:00:00 +0000".encode()
    return [mail.replace(b"*** SUBJECT HERE ***", b"sched: restore the wakeup granularity")
                .replace(b"*** BLURB HERE ***", b"v2: the factor back to 1.0")
                .replace(b"Date: Mon, 1 Apr 2024 00:00:00 +0000", posted) for mail in mails]


def message_id(raw: bytes) -> str:
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.lower().startswith("message-id:"):
            return line.split(":", 1)[1].strip().strip("<>")
    raise ValueError("no Message-ID")


def reply(to: bytes, author: str, body: str, number: int) -> bytes:
    subject = next(line.split(":", 1)[1].strip() for line in to.decode().splitlines()
                   if line.lower().startswith("subject:"))
    return (f"From: {author}\nSubject: Re: {subject}\nDate: Tue, 16 Apr 2024 10:0{number}:00 +0000\n"
            f"Message-ID: <reply{number}@example.org>\nIn-Reply-To: <{message_id(to)}>\n"
            f"References: <{message_id(to)}>\n\n{body}\n").encode()


def fix_thread(repo: Path, suspect: str, root_id: str, v2_factor: str = "1.0") -> tuple[list[bytes], list[bytes]]:
    """(v1 mails, v2 mails + trailer replies), all replying into the report's thread."""
    first = _series(repo, suspect, "0.8", 1, root_id)
    second = _series(repo, suspect, v2_factor, 2, root_id)
    cover, patch_one = second[0], second[1]
    replies = [reply(patch_one, REVIEWER, f"Looks right.\n\nReviewed-by: {REVIEWER}", 1),
               reply(cover, TESTER, f"Works here.\n\nTested-by: {TESTER}", 2)]
    return first, second + replies


def run_git_am(repo: Path, commit: str, mbox: Path) -> str:
    """Apply `mbox` on `commit` in a detached checkout with real git am; the new commit."""
    git(repo, "checkout", "-q", "--detach", commit)
    git(repo, "am", "-q", str(mbox))
    return git(repo, "rev-parse", "HEAD").strip()


AUTHOR = "Carl Author <carl@example.org>"
MEASURER = "Mira Measurer <mira@example.org>"


def series_under_review(repo: Path, base: str, factor: str, *, version: int = 2,
                        date: str = "Tue, 16 Apr 2099 08:00:00 +0000") -> list[bytes]:
    """A series posted for review (issue 38), made with real git format-patch on `base` of the lab's
    repository: a cover letter and two patches, the second setting `lab-factor` to `factor` (below
    1.0: the series slows the lab's benchmark down), each with b4's `base-commit:` line."""
    git(repo, "checkout", "-q", "-B", f"review-v{version}", base)
    (repo / "history.txt").open("a").write(f"review v{version}: prepare\n")
    git(repo, "commit", "-q", "-am", "sched: prepare the wakeup path for batching")
    (repo / FACTOR_FILE).write_text(f"{factor}\n")
    git(repo, "commit", "-q", "-am", "sched: batch the wakeups of small machines\n\n"
        "Signed-off-by: Carl Author <carl@example.org>")
    text = git(repo, "format-patch", "--stdout", "--thread=shallow", "--cover-letter", f"--base={base}",
               f"-v{version}", "-2", "HEAD")
    git(repo, "checkout", "-q", "main")
    mails = [part.split("\n", 1)[1].encode() for part in ("\n" + text).split("\nFrom ")[1:]]
    return [mail.replace(b"*** SUBJECT HERE ***", b"sched: batch the wakeups")
                .replace(b"*** BLURB HERE ***", b"Batch the wakeups; please test.")
                .replace(b"From: Lab <lab@example.org>", f"From: {AUTHOR}".encode())
                .replace(b"Date: Mon, 1 Apr 2024 00:00:00 +0000", f"Date: {date}".encode()) for mail in mails]


def measured_reply(to: bytes, body: str, message_id: str = "measured@example.org",
                   date: str = "Tue, 16 Apr 2099 10:00:00 +0000", sender: str = MEASURER) -> bytes:
    """A reply to a series' mail, by `sender`: the person who measured it."""
    subject = next(line.split(":", 1)[1].strip() for line in to.decode().splitlines()
                   if line.lower().startswith("subject:"))
    return (f"From: {sender}\nTo: {AUTHOR}\nCc: linux-kernel@vger.kernel.org\nSubject: Re: {subject}\n"
            f"Date: {date}\nMessage-ID: <{message_id}>\nIn-Reply-To: <{message_id_of(to)}>\n"
            f"References: <{message_id_of(to)}>\n\n{body}\n").encode()


def message_id_of(raw: bytes) -> str:
    return message_id(raw)
