"""Kernel builds on a small real tree: the clone (shallow, deepened on demand), one worktree and
build directory per config with the next commit built incrementally, artefacts cached by commit
and config and evicted by size, and a failing build named with the compiler's own last lines.

The tree is a git repository whose Makefile answers the targets the builder asks of a kernel
tree (`allnoconfig KCONFIG_ALLCONFIG=`, `olddefconfig`, `bzImage`, `O=`, `LOCALVERSION=`) with
real gcc and make runs in a second; the real kernel is tests/test_kernels_real.py's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from triagebot.kernels.build import BuildError, KernelBuilder
from triagebot.kernels.config import Fragment, KernelConfig
from triagebot.kernels.tree import CommitNotFound
from triagebot.rules.trees import KernelBuilds, KernelTree, TreeBounds

pytestmark = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("make") and shutil.which("git")),
                                reason="needs gcc, make and git")

MAKEFILE = """\
# Answers what triagebot's builder asks of a kernel tree, for the tests. A symbol
# NEEDS_A_MISSING_DEPENDENCY is dropped by the config targets, as Kconfig drops an option whose
# dependencies are off.
O ?= .
VERSION := $(shell cat VERSION)
.PHONY: allnoconfig olddefconfig bzImage
allnoconfig:
\tmkdir -p $(O)
\tgrep -v NEEDS_A_MISSING $(KCONFIG_ALLCONFIG) > $(O)/.config
olddefconfig:
\ttest -f $(O)/.config
\t! grep -q NEEDS_A_MISSING $(O)/.config || sed -i '/CONFIG_NEEDS_A_MISSING_DEPENDENCY/d' $(O)/.config
$(O)/main.o: main.c $(O)/.config
\t@echo "  CC      main.o"
\tgcc -c main.c -o $(O)/main.o
bzImage: $(O)/main.o
\tmkdir -p $(O)/arch/x86/boot $(O)/include/config
\tgcc $(O)/main.o -o $(O)/arch/x86/boot/bzImage
\techo "$(VERSION)$(LOCALVERSION)" > $(O)/include/config/kernel.release
"""
OLD = "2020-01-01T00:00:00+00:00"  # older than the clone's first fetch reaches


def git(tree: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": "/dev/null"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(tree: Path, message: str, files: dict[str, str], date: str | None = None) -> str:
    for name, text in files.items():
        (tree / name).write_text(text)
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", message, date=date)
    return git(tree, "rev-parse", "HEAD")


@pytest.fixture
def small_tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    tree = tmp_path / "upstream"
    tree.mkdir()
    git(tree, "init", "-q", "-b", "master")
    shas = {"base": commit(tree, "base", {"Makefile": MAKEFILE, "VERSION": "6.12.0",
                                          "main.c": "int main(void) { return 0; }\n"}, OLD)}
    shas["docs"] = commit(tree, "docs only", {"README": "a harmless change\n"}, OLD)
    shas["code"] = commit(tree, "code", {"main.c": "int main(void) { return 1; }\n"})
    shas["broken"] = commit(tree, "broken", {"main.c": "int main(void) { return 1 }\n"})
    return tree, shas


def builder(tmp_path: Path, upstream: Path, **settings) -> KernelBuilder:
    tree = KernelTree("small", upstream.resolve().as_uri(), "master", TreeBounds(first_days=30, commits_per_pass=1))
    return KernelBuilder(tree, KernelBuilds(cache_dir=str(tmp_path / "cache"), ccache=False, jobs=1, **settings))


def config(text: str = "CONFIG_A=y\n") -> KernelConfig:
    return KernelConfig("allnoconfig", "allnoconfig", fragments=(Fragment("rules/kernels/small.config", text),))


def test_a_build_is_made_once_then_taken_from_the_cache(tmp_path: Path, small_tree) -> None:
    upstream, shas = small_tree
    kernels = builder(tmp_path, upstream)
    said: list[str] = []
    first = kernels.build(shas["base"], "x86_64", config(), announce=said.append)
    assert first.how == "cold" and first.compiled == 1 and first.commit == shas["base"]
    assert first.release == f"6.12.0-tb{shas['base'][:12]}" and first.image.is_file()
    assert first.config.read_text() == "# from rules/kernels/small.config\nCONFIG_A=y\n"
    assert "CC      main.o" in first.log_tail and said[0].startswith(f"building {shas['base'][:12]} (base)")
    again = kernels.build(shas["base"][:10], "x86_64", config())
    assert again.how == "cached" and again.directory == first.directory and again.release == first.release


def test_the_next_commit_is_built_in_the_same_directory_and_only_what_changed(tmp_path: Path, small_tree) -> None:
    upstream, shas = small_tree
    kernels = builder(tmp_path, upstream)
    kernels.build(shas["base"], "x86_64", config())
    docs = kernels.build(shas["docs"], "x86_64", config())  # older than the first fetch: the clone deepens
    assert docs.how == "incremental" and docs.compiled == 0
    code = kernels.build(shas["code"], "x86_64", config())
    assert code.how == "incremental" and code.compiled == 1
    assert len(list((tmp_path / "cache" / "work").glob("small-x86_64-*/build"))) == 1
    # another config: a work directory of its own
    other = kernels.build(shas["code"], "x86_64", config("CONFIG_A=y\nCONFIG_B=y\n"))
    assert other.how == "cold" and other.directory != code.directory
    assert len(list((tmp_path / "cache" / "work").glob("small-x86_64-*/build"))) == 2


def test_a_failing_build_names_the_commit_and_the_compilers_last_lines(tmp_path: Path, small_tree) -> None:
    upstream, shas = small_tree
    kernels = builder(tmp_path, upstream)
    with pytest.raises(BuildError) as raised:
        kernels.build(shas["broken"], "x86_64", config())
    message = str(raised.value)
    assert message.startswith(f"kernel build of {shas['broken'][:12]} ({shas['broken']}) failed (exit 2)")
    assert "main.c:1:" in message and "error: expected ';'" in message
    assert not list((tmp_path / "cache" / "artifacts").glob(f"{shas['broken']}-*"))  # nothing half-written


def test_a_needed_option_the_config_loses_is_an_error_naming_it(tmp_path: Path, small_tree) -> None:
    upstream, shas = small_tree
    kernels = builder(tmp_path, upstream)
    with pytest.raises(BuildError, match="the config lost CONFIG_NEEDS_A_MISSING_DEPENDENCY=y"):
        kernels.build(shas["base"], "x86_64", config("CONFIG_NEEDS_A_MISSING_DEPENDENCY=y\n"),
                      needed=("CONFIG_NEEDS_A_MISSING_DEPENDENCY=y",))


def test_artefacts_past_the_cache_size_are_evicted_least_recently_used_first(tmp_path: Path, small_tree) -> None:
    upstream, shas = small_tree
    kernels = builder(tmp_path, upstream, max_cache_gib=30_000 / (1 << 30))  # room for about one kernel
    first = kernels.build(shas["base"], "x86_64", config())
    second = kernels.build(shas["code"], "x86_64", config())
    assert second.directory.is_dir() and not first.directory.exists()
    assert kernels.build(shas["base"], "x86_64", config()).how == "incremental"  # built again, in place


def test_a_build_past_its_time_is_stopped_and_said(tmp_path: Path, small_tree) -> None:
    upstream, shas = small_tree
    slower = MAKEFILE.replace("\tgcc -c main.c", "\tsleep 600\n\tgcc -c main.c")
    slow = commit(upstream, "slow build", {"Makefile": slower})
    kernels = builder(tmp_path, upstream, build_seconds=1)
    with pytest.raises(BuildError, match="kernel build stopped after 1 s \\(build_seconds in trees.toml\\)"):
        kernels.build(slow, "x86_64", config())


@pytest.mark.parametrize("ref", ["-rf", "a..b", "0123456789abcdef0123"])
def test_a_ref_that_is_no_commit_of_the_tree_is_refused(tmp_path: Path, small_tree, ref: str) -> None:
    upstream, _ = small_tree
    with pytest.raises(CommitNotFound):
        builder(tmp_path, upstream).build(ref, "x86_64", config())


def test_the_commits_of_a_range_come_from_the_clone_oldest_first(tmp_path: Path, small_tree) -> None:
    upstream, shas = small_tree
    clone = builder(tmp_path, upstream).clone
    assert clone.commits_between(shas["base"], shas["broken"]) == [shas["docs"], shas["code"], shas["broken"]]
    with pytest.raises(CommitNotFound, match="is not an ancestor"):
        clone.commits_between(shas["code"], shas["base"])
