"""A fix series from a report's thread made am-ready by b4 (triagebot.reproduce.fix).

The thread is served by a real public-inbox server and fetched through the project's bounded
lore client; the series is made with real git format-patch on the lab's repository, posted as
v1 and then v2 with trailers given in replies. b4 (the pip package) must pick v2 with its
trailers, offline and with its configuration isolated, and real git am must apply what it wrote.
Hostile threads are refused with a reason before anything is applied (or, for most, before b4
even runs); the paths of what b4 wrote are read by git's own parser (fix_test/paths.py).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.support.fix_thread import REVIEWER, TESTER, fix_thread, reply, run_git_am
from tests.support.lab import FACTOR_FILE, git, make_bisect_repo
from triagebot.fix_test.series import FixRefused, prepare_fix
from triagebot.http_client.client import RequestsClient
from triagebot.http_client.protocol import HttpPolicy
from triagebot.ingest.lore import LoreSource

REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
REPORT_ID = "20240415071244.lab1@tberg-ws"
ARCHIVE = "https://lore.kernel.org/all/"
POLICY = HttpPolicy(user_agent="triagebot-test/0.1 (operator: fix-tests@example.org)", timeout_seconds=5.0)

pytestmark = pytest.mark.skipif(not (shutil.which("b4") and shutil.which("git")),
                                reason="needs b4 (pip install b4, the test extra) and git")


@pytest.fixture
def lab(tmp_path: Path):
    shas = make_bisect_repo(tmp_path / "linux", 40, 37)
    v1, v2 = fix_thread(tmp_path / "linux", shas[37], REPORT_ID)
    return tmp_path, shas, [REPORT.read_bytes(), *v1, *v2]


def test_v2_of_a_series_fetched_from_lore_is_made_am_ready_by_b4_with_its_trailers(lab, public_inbox) -> None:
    root, shas, thread = lab
    server = public_inbox("linux-kernel", thread)
    source = LoreSource(server.list_url, RequestsClient(POLICY, trust_environment=False), POLICY,
                        sleep=lambda seconds: None)
    fetched = [message.raw for message in source.thread_batch(server.message_url(REPORT_ID)).messages]
    assert len(fetched) == len(thread)
    fix = prepare_fix(fetched, root / "work", server.base_url)
    assert fix.mbox == root / "work" / "am" / "fix.mbx"  # b4's own output
    assert fix.version == 2
    assert fix.subjects == ("[PATCH v2 1/2] sched: prepare the wakeup path for the fix",
                            "[PATCH v2 2/2] sched: restore the wakeup granularity on small machines")
    assert f"Reviewed-by: {REVIEWER}" in fix.trailers and f"Tested-by: {TESTER}" in fix.trailers
    assert "+1.0" in fix.mbox.read_text() and "+0.8" not in fix.mbox.read_text()  # v2's change, not v1's
    assert "Will use the latest revision: v2" in fix.b4_output
    patched = run_git_am(root / "linux", shas[37], fix.mbox)  # real git am takes it
    assert git(root / "linux", "show", f"{patched}:{FACTOR_FILE}").strip() == "1.0"
    assert f"Reviewed-by: {REVIEWER}" in git(root / "linux", "log", "-1", "--format=%B", f"{patched}~1")


def test_b4_reads_none_of_the_users_configuration(lab, monkeypatch) -> None:
    root, _, thread = lab
    home = root / "user-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[b4]\n\tam-perpatch-check-cmd = /bin/false\n\tattestation-policy = hardfail\n")
    monkeypatch.setenv("HOME", str(home))  # a user whose b4 would fail every series
    fix = prepare_fix(thread, root / "work", ARCHIVE)
    assert fix.version == 2 and "Running in OFFLINE mode" in fix.b4_output


def evil_patch(path: str) -> bytes:
    return (f"From: Mallory <m@example.org>\nSubject: [PATCH] fix it\nMessage-ID: <evil@example.org>\n"
            f"In-Reply-To: <{REPORT_ID}>\n\n---\ndiff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1 +1 @@\n-a\n+b\n").encode()


@pytest.mark.parametrize("hostile, reason", [
    # a 200 MB attachment
    (lambda thread: [*thread, thread[-1] + b"\n" + b"A" * (200 * 1024 * 1024)], "is 209.7 MB, over the 20 MB"),
    # v2 posted without its part 2/2
    (lambda thread: [item for item in thread if b"[PATCH v2 2/2]" not in item or b"Re:" in item],
     "v2 of the series has 2 parts, but part 2 of 2 is not in the thread"),
    # the fix is a link to a patch on another host
    (lambda thread: [thread[0], reply(thread[0], "Eve <eve@example.org>",
                                      "Try https://evil.example.com/all/x@y/raw please.", 3)],
     "a patch is linked on evil.example.com, not on the thread's archive lore.kernel.org"),
])
def test_hostile_fixes_are_refused_before_anything_is_applied(lab, hostile, reason) -> None:
    root, _, thread = lab
    with pytest.raises(FixRefused, match=reason.replace("(", r"\(").replace(".", r"\.")):
        prepare_fix(hostile(thread), root / "work", ARCHIVE)
    assert not (root / "work" / "am").exists()  # b4 never ran: nothing was written to apply


def series_mail(diff: str, number: int = 1) -> bytes:
    """A one-patch `[PATCH v9]` series from a stranger, replying to the report, its diff as given."""
    return (f"From: M <m@evil.example>\nSubject: [PATCH v9] sched: fix {number}\n"
            f"Date: Tue, 16 Apr 2099 08:00:0{number} +0000\nMessage-Id: <evil{number}@evil.example>\n"
            f"In-Reply-To: <{REPORT_ID}>\nReferences: <{REPORT_ID}>\n\nsched: fix\n\n"
            f"Signed-off-by: M <m@evil.example>\n---\n{diff}\n-- \n2.39\n").encode()


def new_file(path: str, content: str = "x\n", *, mode: str = "100644", quoted: bool = False) -> str:
    """A git diff creating `path` (written C-quoted, as git quotes odd names, when `quoted`)."""
    old, new = (f'"a/{path}"', f'"b/{path}"') if quoted else (f"a/{path}", f"b/{path}")
    lines = content.splitlines()
    return (f"diff --git {old} {new}\nnew file mode {mode}\nindex 0000000..1111111\n--- /dev/null\n+++ {new}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines))


@pytest.mark.parametrize("diff, reason", [
    (new_file("../../etc/cron.d/x"), "touches '../../etc/cron.d/x': it has a '..' component, outside the tree"),
    # `a//etc/passwd` is /etc/passwd to git (`a/etc/passwd` or `/etc/passwd` in a diff is etc/passwd in the tree)
    (new_file("/etc/passwd"), "touches '/etc/passwd': it is an absolute path, outside the tree"),
    # C-quoted octal escapes: `..` to git, not to a pattern (the hand-written check let it through)
    (new_file("\\056\\056/\\056\\056/tmp/escaped", quoted=True),
     "touches '../../tmp/escaped': it has a '..' component"),
    # a rename out of the tree
    ("diff --git a/lab-factor b/x\nsimilarity index 100%\nrename from lab-factor\nrename to ../../escaped\n",
     "touches '../../escaped': it has a '..' component"),
    (new_file(".git/hooks/post-applypatch", "#!/bin/sh\ntouch /tmp/x\n"), "touches '.git/hooks/post-applypatch': "
     "it is inside .git"),
    (new_file(".gitattributes", "* filter=evil\n"), "touches '.gitattributes': it changes git attributes"),
    (new_file("drivers/.gitattributes", "* filter=evil\n"), "touches 'drivers/.gitattributes'"),
    (new_file(".gitmodules", "[submodule \"x\"]\n"), "touches '.gitmodules': it changes submodules"),
    (new_file("evil-link", "/etc", mode="120000"), "touches 'evil-link': it is a symbolic link (mode 120000)"),
    # an edit of a link that is there already names the link only in its index line
    ("diff --git a/vmlinux.lds b/vmlinux.lds\nindex 1111111..2222222 120000\n--- a/vmlinux.lds\n"
     "+++ b/vmlinux.lds\n@@ -1 +1 @@\n-a\n+/etc/shadow\n", "touches 'vmlinux.lds': it is a symbolic link"),
    ("diff --git a/lab-factor b/lab-factor\nold mode 100644\nnew mode 120000\n",
     "touches 'lab-factor': it is a symbolic link (mode 120000)"),
    (new_file("x\\ty", quoted=True), "touches 'x\\ty': it holds a control character"),
])
def test_paths_are_read_by_gits_own_parser_and_refused_before_anything_is_applied(lab, diff: str,
                                                                                   reason: str) -> None:
    root, _, thread = lab
    with pytest.raises(FixRefused) as refused:
        prepare_fix([thread[0], series_mail(diff)], root / "work", ARCHIVE)
    assert reason in str(refused.value) and str(refused.value).endswith("not applied")
    assert str(refused.value).startswith("patch 1 of the series touches")


def test_a_makefile_is_a_path_like_any_other(lab) -> None:
    # what code may run is the trust rule's (rules/trust.toml, untrusted_code), not the path check's
    root, _, thread = lab
    fix = prepare_fix([thread[0], series_mail(new_file("scripts/pwn.sh", "touch /tmp/x\n"))], root / "work", ARCHIVE)
    assert fix.subjects == ("[PATCH v9] sched: fix 1",)


def test_an_encoded_path_outside_the_tree_is_caught_in_b4s_output(lab) -> None:
    import base64

    root, _, thread = lab
    body = base64.encodebytes(evil_patch("../x").split(b"\n\n", 1)[1]).decode()
    mail = (f"From: Mallory <m@example.org>\nSubject: [PATCH] fix it\nMessage-ID: <evil@example.org>\n"
            f"In-Reply-To: <{REPORT_ID}>\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n"
            f"Content-Transfer-Encoding: base64\n\n{body}").encode()
    with pytest.raises(FixRefused, match="outside the tree"):
        prepare_fix([thread[0], mail], root / "work", ARCHIVE)
