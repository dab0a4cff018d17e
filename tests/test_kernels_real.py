"""Real kernels, built and booted by triagebot: `triage rerun` on the embedded default host with a
kernel tree configured, on this machine, in QEMU guests of the kernels it built.

The kernel tree is Debian's linux-source-6.12 with a short history of our own
(tests/support/kernel_tree.py): one commit adds a busy loop to personality(2), the others are
harmless. The report (fixtures/kernels/personality-regression.eml, figures our own) names that
commit; `stress-ng --personality` runs inside each booted kernel. Under QEMU's TCG the loop
makes a personality(2) call ~80 times slower, far past any noise a loaded machine adds, so the
slow commit is confirmed at the first look whatever else runs; an innocent commit (a comment in
mm/page_alloc.c, built and booted as its own kernel) is not. Samples are interleaved and the
verdict's floor for a guest is 10%.

What outlives a run (tests/support/kernel_tree.cache_root()): the fixture repository and the
ccache. Each run clones the tree, builds one kernel through ccache and the others incrementally
in the same build directory, under its own temporary cache. The tests are one xdist group.
Skipped, with the reason, where the machine cannot: no linux-source-6.12, no QEMU, no toolchain.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.kernel_tree import (
    REPORT_MESSAGE_ID,
    FixtureTree,
    fixture_tree,
    missing,
    parent_of,
    report_text,
    write_kernel_rules,
)
from triagebot.rules.boot_probe import probe_boot

MESSAGE_ID = REPORT_MESSAGE_ID


def _why_not() -> str | None:
    problem = missing()
    if problem:
        return problem
    facts = probe_boot()
    return facts.vm_problem()


WHY_NOT = _why_not()
pytestmark = [pytest.mark.xdist_group("kernels"),
              pytest.mark.skipif(WHY_NOT is not None, reason=f"no real kernel build and boot here: {WHY_NOT}")]


@dataclass(frozen=True)
class KernelLab:
    rules: Path
    database: Path
    tree: FixtureTree
    cache: Path


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=5400)


@pytest.fixture(scope="module")
def kernel_lab(tmp_path_factory: pytest.TempPathFactory) -> KernelLab:
    tree = fixture_tree()
    root = tmp_path_factory.mktemp("kernel-lab")
    rules = write_kernel_rules(root, tree, PROJECT)
    report = root / "report.eml"
    report.write_bytes(report_text(tree))
    database = root / "lab.db"
    ingested = triage("ingest", "--db", str(database), str(report))
    assert ingested.returncode == 0, ingested.stderr
    return KernelLab(rules, database, tree, root / "kernels")


def test_the_embedded_default_boots_kernels_once_a_kernel_tree_is_configured(kernel_lab: KernelLab) -> None:
    shown = triage("hosts", "--rules", str(kernel_lab.rules), "--json")
    assert shown.returncode == 0, shown.stderr
    (host,) = json.loads(shown.stdout)["hosts"]
    assert host["name"] == "this-machine" and host["can_switch_kernel"]
    assert host["switcher"]["kind"] == "vm" and host["switcher"]["asked"] == "auto"
    assert all(need["has"] is not False for need in host["switcher"]["needs"][:2])


def test_a_rerun_of_the_slow_commit_in_two_real_kernels_is_confirmed(kernel_lab: KernelLab) -> None:
    result = triage("rerun", MESSAGE_ID, "--db", str(kernel_lab.database), "--rules", str(kernel_lab.rules),
                    "--budget", "6", "--json")
    assert result.returncode == 0, result.stderr[-4000:]
    run = json.loads(result.stdout)
    assert run["verdict"]["outcome"] == "confirmed", (run["verdict"]["reason"], result.stderr[-3000:])
    slow, parent = kernel_lab.tree.slow, parent_of(kernel_lab.tree, kernel_lab.tree.slow)
    # two kernels built by triagebot, each naming its commit; the parent as `culprit^`
    built = {build["commit"]: build for build in run["builds"]}
    assert set(built) == {slow, parent}
    for commit in (slow, parent):
        assert built[commit]["release"].endswith(f"-tb{commit[:12]}")
    # every sample ran inside the kernel of its side, and it was stress-ng's personality stressor
    for sample in run["samples"]:
        assert sample["running_kernel"] == built[slow if sample["role"] == "suspect" else parent]["release"]
        assert "personality" in json.dumps(sample["metrics"]) or sample["value"] > 0
    base = sorted(sample["value"] for sample in run["samples"] if sample["role"] == "base")
    suspect = sorted(sample["value"] for sample in run["samples"] if sample["role"] == "suspect")
    assert suspect[-1] < base[0]  # every suspect sample below every base sample
    assert run["kernel_switch"]["switcher"] == "vm" and run["kernel_switch"]["accel"] in ("tcg", "kvm")
    assert "QEMU" in run["verdict"]["kernel_switch"] and run["verdict"]["floor_percent"] >= 10
    text = triage("verdict", "--db", str(kernel_lab.database), MESSAGE_ID)
    assert text.returncode == 0


def test_the_same_report_on_an_innocent_commit_is_not_confirmed(kernel_lab: KernelLab) -> None:
    innocent = kernel_lab.tree.innocent
    result = triage("rerun", MESSAGE_ID, "--db", str(kernel_lab.database), "--rules", str(kernel_lab.rules),
                    "--base", f"{innocent}^", "--suspect", innocent, "--budget", "6", "--json")
    assert result.returncode == 0, result.stderr[-4000:]
    run = json.loads(result.stdout)
    assert run["verdict"]["outcome"] in ("not-reproduced", "inconclusive"), run["verdict"]["reason"]
    assert {build["commit"] for build in run["builds"]} == {innocent, parent_of(kernel_lab.tree, innocent)}
    assert len({sample["running_kernel"] for sample in run["samples"]}) == 2
