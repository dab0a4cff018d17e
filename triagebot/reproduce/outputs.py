"""Reproduce stage: read benchmark output into metrics (pure: bytes in, name -> number out).

`parse_output(parser_name, stdout, files)` takes what a run produced: its stdout and the files
it wrote that the template collects (name -> bytes). Where a parser reads a document (fio
JSON, stress-ng YAML, LKP stats JSON), the one collected file whose name ends in that format's
suffix is read; without one, stdout is. Metric names follow LKP's where LKP has the metric
(`fio.write_iops`, `fio.read_clat_99%_us`, `stress-ng.cpu.ops_per_sec`), so a rerun compares
with the report's table.

Parsers and what they yield:
- fio-json: per direction with I/O (read, write, trim): fio.<d>_iops and fio.<d>_bw_MBps
  (summed over jobs; bw is KiB/s / 1024, as LKP computes it), fio.<d>_clat_mean_us and
  fio.<d>_lat_mean_us (means weighted by I/O count), fio.<d>_clat_stddev (pooled, us),
  fio.<d>_clat_{50,90,95,99,99.9}%_us (the worst job's: exact with one job or
  group_reporting), and fio.latency_<bucket>% (LKP's latency histogram, weighted by I/Os).
- sysbench-text: sysbench.<test>.* for test cpu / fileio / memory / threads (mutex output
  reads as threads): events_per_sec, total_events, latency_{avg,95th,max}_ms; cpu adds
  nothing more; fileio: reads_per_sec, writes_per_sec, fsyncs_per_sec, read_MiBps,
  written_MiBps; memory: MiB_per_sec, ops_per_sec.
- stress-ng-yaml: stress-ng.<stressor>.ops (bogo ops) and .ops_per_sec (real time), from
  --yaml's metrics, or from the `metrc:` (before 0.14 `info:`) table of --metrics-brief when no YAML was kept
  (in stdout, or in files["stderr"]: stress-ng logs it to stderr).
- fs_mark-text: fs_mark.files_per_sec and fs_mark.app_overhead_us (mean of the loop rows).
- hackbench-text: hackbench.time_s (mean of the `Time:` lines) and hackbench.throughput (KiB
  passed over the best time, as lkp-tests computes it).
- perf-bench-text: perf-bench.total_time_s, .usecs_per_op, .ops_per_sec, .GB_per_sec (per
  memcpy/memset function as perf-bench.<function>.GB_per_sec) where printed.
- lkp-json: an LKP stats JSON object, name -> number; lists are averaged, text is skipped.
- dbench-text: dbench.throughput_MB/s and dbench.max_latency (ms), as lkp-tests names them,
  from the final `Throughput … max_latency=…` line; dbench.clients, dbench.procs.
- postmark-text: postmark.transactions, .files_created, … .data_written (per second, the
  names of lkp-tests' programs/postmark/parse) from the terse report line; .total_seconds.

An unknown parser name is a ValueError (a template bug); output without the metrics is an
OutputError naming the parser and what was missing (a failed sample).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from triagebot.errors import TriageError
from triagebot.reproduce.yaml_text import YamlRefused, load_documents

_NO_FILES: Mapping[str, bytes] = MappingProxyType({})
_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"


class OutputError(TriageError):
    """A run's output that does not hold the metrics its parser reads."""

    def __init__(self, parser: str, problem: str) -> None:
        super().__init__(f"{parser}: {problem}")
        self.parser = parser
        self.problem = problem


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").replace("\r\n", "\n")


def _document(parser: str, stdout: bytes, files: Mapping[str, bytes],
              suffixes: tuple[str, ...]) -> tuple[str, str]:
    """(text, where) of the one collected file with a matching suffix, else of stdout."""
    matching = sorted(name for name in files if name.lower().endswith(suffixes))
    if len(matching) > 1:
        raise OutputError(parser, f"several result files to choose from: {', '.join(matching)}")
    if matching:
        return _text(files[matching[0]]), matching[0]
    return _text(stdout), "stdout"


def _json_object(parser: str, text: str, where: str) -> dict[str, Any]:
    """The first JSON object in `text`: tools print warnings before it (`fio: …`)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\s*\{", text, re.MULTILINE):
        try:
            value, _ = decoder.raw_decode(text, match.end() - 1)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise OutputError(parser, f"no JSON object in {where}" + _tail(text))


def _tail(text: str) -> str:
    """The output's last line, for a message: often the tool's own error."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return f" (it ends: {lines[-1][:200]!r})" if lines else " (it is empty)"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


# --- fio -------------------------------------------------------------------------------------

_FIO_PERCENTILES = {"50.000000": "50%", "90.000000": "90%", "95.000000": "95%",
                    "99.000000": "99%", "99.900000": "99.9%"}


def _fio_number(parser: str, table: Mapping[str, Any], key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OutputError(parser, f"{where}: no number for {key!r}")
    return float(value)


def _fio_latency(stats: Mapping[str, Any], nanoseconds: str, microseconds: str) -> Mapping[str, Any] | None:
    """A latency block in ns (fio >= 3), or an older fio's block in us converted to ns."""
    block = stats.get(nanoseconds)
    if isinstance(block, dict):
        return block
    block = stats.get(microseconds)
    if isinstance(block, dict):
        converted: dict[str, Any] = {key: value * 1000 for key, value in block.items()
                                     if isinstance(value, (int, float)) and key != "N"}
        converted["N"] = block.get("N")
        if isinstance(block.get("percentile"), dict):
            converted["percentile"] = {key: value * 1000 for key, value in block["percentile"].items()}
        return converted
    return None


def _fio_json(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    text, where = _document(parser, stdout, files, (".json",))
    data = _json_object(parser, text, where)
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise OutputError(parser, f"no jobs in the fio JSON of {where}")
    for job in jobs:
        if isinstance(job, dict) and job.get("error"):
            raise OutputError(parser, f"job {job.get('jobname')!r} ended with error {job['error']}")
    metrics: dict[str, float] = {}
    total_ios = 0.0
    for direction in ("read", "write", "trim"):
        sections = [job[direction] for job in jobs if isinstance(job, dict) and isinstance(job.get(direction), dict)]
        ios = [_fio_number(parser, section, "total_ios", direction) if "total_ios" in section
               else _fio_number(parser, section, "iops", direction) for section in sections]
        if not sections or sum(ios) <= 0:
            continue  # no I/O in this direction: no metric to compare
        total_ios += sum(ios)
        metrics[f"fio.{direction}_iops"] = sum(_fio_number(parser, s, "iops", direction) for s in sections)
        metrics[f"fio.{direction}_bw_MBps"] = sum(_fio_number(parser, s, "bw", direction) for s in sections) / 1024
        for name, nanoseconds, microseconds in (("clat", "clat_ns", "clat"), ("lat", "lat_ns", "lat")):
            blocks = [(_fio_latency(section, nanoseconds, microseconds), count)
                      for section, count in zip(sections, ios, strict=True) if count > 0]
            if any(block is None for block, _ in blocks):
                raise OutputError(parser, f"{direction}: no {nanoseconds} latency block")
            weight = sum(count for _, count in blocks)
            mean_ns = sum(float(block["mean"]) * count for block, count in blocks) / weight  # type: ignore[index]
            metrics[f"fio.{direction}_{name}_mean_us"] = mean_ns / 1000
            if name != "clat":
                continue
            spread = sum(count * (float(block.get("stddev", 0)) ** 2 + float(block["mean"]) ** 2)  # type: ignore[union-attr,index]
                         for block, count in blocks) / weight - mean_ns ** 2
            metrics[f"fio.{direction}_clat_stddev"] = math.sqrt(max(spread, 0.0)) / 1000
            for key, label in _FIO_PERCENTILES.items():
                values = [float(block["percentile"][key]) for block, _ in blocks  # type: ignore[index]
                          if isinstance(block.get("percentile"), dict) and key in block["percentile"]]  # type: ignore[union-attr]
                if values:
                    metrics[f"fio.{direction}_clat_{label}_us"] = max(values) / 1000
    if not metrics:
        raise OutputError(parser, f"no job in {where} did any I/O")
    # LKP's latency histogram: the share of I/Os per latency bucket, weighted by each job's I/Os
    histogram: dict[str, float] = {}
    for job in jobs:
        job_ios = sum(float(job.get(d, {}).get("total_ios", 0) or 0) for d in ("read", "write", "trim")
                      if isinstance(job.get(d), dict))
        for block, unit in (("latency_ns", "ns"), ("latency_us", "us"), ("latency_ms", "ms")):
            for bucket, share in (job.get(block) or {}).items():
                if isinstance(share, (int, float)) and not isinstance(share, bool):
                    name = f"fio.latency_{bucket}{unit}%"
                    histogram[name] = histogram.get(name, 0.0) + float(share) * job_ios
    if total_ios > 0:
        metrics.update({name: value / total_ios for name, value in histogram.items()})
    return metrics


# --- sysbench --------------------------------------------------------------------------------

_SYSBENCH_FIELDS = {
    "cpu": {"events_per_sec": r"events per second:\s*(" + _NUMBER + ")"},
    "fileio": {
        "reads_per_sec": r"reads/s:\s*(" + _NUMBER + ")",
        "writes_per_sec": r"writes/s:\s*(" + _NUMBER + ")",
        "fsyncs_per_sec": r"fsyncs/s:\s*(" + _NUMBER + ")",
        "read_MiBps": r"read, MiB/s:\s*(" + _NUMBER + ")",
        "written_MiBps": r"written, MiB/s:\s*(" + _NUMBER + ")",
    },
    "memory": {
        "MiB_per_sec": r"MiB transferred \((" + _NUMBER + r") MiB/sec\)",
        "ops_per_sec": r"Total operations:\s*\d+\s*\((" + _NUMBER + r") per second\)",
    },
    "threads": {},
}
_SYSBENCH_GENERAL = {
    "total_time_s": r"total time:\s*(" + _NUMBER + r")s",
    "total_events": r"total number of events:\s*(" + _NUMBER + ")",
    "latency_min_ms": r"Latency \(ms\):\s*\n\s*min:\s*(" + _NUMBER + ")",
    "latency_avg_ms": r"Latency \(ms\):(?:\s*\n.*){0,2}?\s*avg:\s*(" + _NUMBER + ")",
    "latency_max_ms": r"Latency \(ms\):(?:\s*\n.*){0,3}?\s*max:\s*(" + _NUMBER + ")",
    "latency_95th_ms": r"Latency \(ms\):(?:\s*\n.*){0,4}?\s*95th percentile:\s*(" + _NUMBER + ")",
}


def _sysbench_test(text: str) -> str | None:
    """Which sysbench test printed `text`: each has a section of its own, threads has none."""
    if "CPU speed:" in text or "Prime numbers limit" in text:
        return "cpu"
    if "File operations:" in text or "Extra file open flags" in text:
        return "fileio"
    if "memory speed test" in text or "MiB transferred" in text:
        return "memory"
    if "total number of events" in text:
        return "threads"
    return None


def _sysbench_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    text = _text(stdout)
    fatal = re.search(r"^FATAL: .*$", text, re.MULTILINE)
    if fatal:
        raise OutputError(parser, f"sysbench failed: {fatal.group(0)[:200]}")
    test = _sysbench_test(text)
    if test is None:
        raise OutputError(parser, "no sysbench results (no 'General statistics' section)" + _tail(text))
    metrics: dict[str, float] = {}
    for name, pattern in {**_SYSBENCH_FIELDS[test], **_SYSBENCH_GENERAL}.items():
        match = re.search(pattern, text)
        if match:
            metrics[f"sysbench.{test}.{name}"] = float(match.group(1))
        elif name in _SYSBENCH_FIELDS[test] or name in ("total_time_s", "total_events"):
            raise OutputError(parser, f"sysbench {test}: no {name} in the output" + _tail(text))
    events = metrics[f"sysbench.{test}.total_events"]
    seconds = metrics[f"sysbench.{test}.total_time_s"]
    if test != "cpu" and seconds > 0:
        metrics[f"sysbench.{test}.events_per_sec"] = events / seconds
    return metrics


# --- stress-ng -------------------------------------------------------------------------------

def _stress_ng_yaml_metrics(parser: str, text: str, where: str) -> dict[str, dict[str, Any]]:
    """stressor -> {key: value} from the `metrics:` list stress-ng writes with --yaml.

    A collected YAML file that is not YAML is an error; stdout that is not (a log, no --yaml
    file kept) has no metrics here, and the caller reads the --metrics-brief table instead."""
    try:
        documents = load_documents(text)
    except YamlRefused as error:
        if where == "stdout":
            return {}
        raise OutputError(parser, f"{where}: {error}") from None
    stressors: dict[str, dict[str, Any]] = {}
    for document in documents:
        rows = document.get("metrics") if isinstance(document, dict) else None
        for row in rows if isinstance(rows, list) else ():
            if isinstance(row, dict) and isinstance(row.get("stressor"), str):
                stressors.setdefault(row["stressor"], {}).update(row)
    return stressors


# `metrc:` rows; stress-ng before 0.14 printed the same table as `info:` rows
_METRC_ROW = re.compile(r"(?:metrc|info):\s*\[\d+\]\s+(\S+)\s+(" + _NUMBER + r")\s+" + _NUMBER + r"\s+"
                        + _NUMBER + r"\s+" + _NUMBER + r"\s+(" + _NUMBER + ")")


def _stress_ng_yaml(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    text, where = _document(parser, stdout, files, (".yaml", ".yml"))
    metrics: dict[str, float] = {}
    for stressor, values in _stress_ng_yaml_metrics(parser, text, where).items():
        try:
            metrics[f"stress-ng.{stressor}.ops"] = float(values["bogo-ops"])
            metrics[f"stress-ng.{stressor}.ops_per_sec"] = float(values["bogo-ops-per-second-real-time"])
        except (KeyError, TypeError, ValueError) as error:
            raise OutputError(parser, f"stressor {stressor} in {where}: no number for {error}") from error
    if not metrics:
        # no YAML kept: the --metrics-brief table stress-ng logs (to stderr when not on a tty,
        # which a runner hands over as files["stderr"])
        for match in _METRC_ROW.finditer(_text(stdout) + "\n" + _text(files.get("stderr", b""))):
            stressor, ops, per_second = match.groups()
            metrics[f"stress-ng.{stressor}.ops"] = float(ops)
            metrics[f"stress-ng.{stressor}.ops_per_sec"] = float(per_second)
    if not metrics:
        raise OutputError(parser, f"no stressor metrics in {where} (run with --metrics-brief "
                                  "--yaml FILE and collect FILE)" + _tail(text))
    return metrics


# --- fs_mark, hackbench, perf bench ----------------------------------------------------------

def _fs_mark_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    text = _text(stdout)
    rates: list[float] = []
    overheads: list[float] = []
    header = False
    for line in text.splitlines():
        if re.match(r"\s*FSUse%\s+Count\s+Size\s+Files/sec\s+App Overhead", line):
            header = True
            continue
        # -v adds per-call timing columns after these five
        row = re.fullmatch(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(" + _NUMBER + r")\s+(" + _NUMBER + r")(?:\s.*)?", line)
        if header and row:
            rates.append(float(row.group(4)))
            overheads.append(float(row.group(5)))
    if not rates:
        raise OutputError(parser, "no 'FSUse% Count Size Files/sec App Overhead' rows" + _tail(text))
    return {"fs_mark.files_per_sec": _mean(rates), "fs_mark.app_overhead_us": _mean(overheads)}


_HACKBENCH_TASKS = re.compile(r"^Running in .* mode with \d+ groups using \d+ file descriptors each "
                              r"\(== (\d+) tasks\)", re.MULTILINE)
_HACKBENCH_MESSAGES = re.compile(r"^Each sender (?:will pass|passed) (\d+) messages of (\d+) bytes", re.MULTILINE)


def _hackbench_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    text = _text(stdout)
    times = [float(value) for value in re.findall(r"^\s*Time:\s*(" + _NUMBER + r")\s*$", text, re.MULTILINE)]
    if not times:
        raise OutputError(parser, "no 'Time: N' line" + _tail(text))
    metrics = {"hackbench.time_s": _mean(times)}
    tasks, messages = _HACKBENCH_TASKS.findall(text), _HACKBENCH_MESSAGES.findall(text)
    if tasks and messages and min(times) > 0:
        # lkp-tests' programs/hackbench/parse: KiB passed over the best time
        kib = (int(tasks[-1]) * int(messages[-1][0]) * int(messages[-1][1])) >> 10
        metrics["hackbench.throughput"] = kib / min(times)
    return metrics


# --- dbench, postmark --------------------------------------------------------------------------

_DBENCH_RESULT = re.compile(r"^\s*Throughput\s+(" + _NUMBER + r")\s+MB/sec\s+(\d+)\s+clients\s+(\d+)\s+procs"
                            r"\s+max_latency=(" + _NUMBER + r")\s*ms\s*$", re.MULTILINE)
# postmark's terse report: total and transaction seconds, then the rates of lkp-tests'
# programs/postmark/parse, in its order and with its names.
POSTMARK_FIELDS = ("transactions", "files_created", "creation_alone", "creation_mixed_trans", "files_read",
                   "files_appended", "files_deleted", "deletion_alone", "deletion_mixed_trans", "data_read",
                   "data_written")
_POSTMARK_TERSE = re.compile(r"^\s*(\d+)\s+(\d+)((?:\s+" + _NUMBER + r"){11})\s*$", re.MULTILINE)


def _dbench_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    """dbench's final line: `Throughput 55.605 MB/sec  1 clients  1 procs  max_latency=17.006 ms`,
    named as lkp-tests' programs/dbench/parse names it (throughput_MB/s, max_latency in ms)."""
    text = _text(stdout)
    results = _DBENCH_RESULT.findall(text)
    if not results:
        raise OutputError(parser, "no 'Throughput N MB/sec … max_latency=N ms' line" + _tail(text))
    throughput, clients, procs, latency = results[-1]
    return {"dbench.throughput_MB/s": float(throughput), "dbench.max_latency": float(latency),
            "dbench.clients": float(clients), "dbench.procs": float(procs)}


def _postmark_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    """postmark's terse report line (`set report terse`): seconds, then per-second rates."""
    text = _text(stdout)
    rows = _POSTMARK_TERSE.findall(text)
    if not rows:
        raise OutputError(parser, "no terse report line (two whole seconds and eleven rates)" + _tail(text))
    total, transaction_seconds, rates = rows[-1]
    metrics = {f"postmark.{name}": float(value) for name, value in zip(POSTMARK_FIELDS, rates.split(), strict=True)}
    metrics["postmark.total_seconds"] = float(total)
    metrics["postmark.transaction_seconds"] = float(transaction_seconds)
    return metrics


def _perf_bench_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    text = _text(stdout)
    found: dict[str, list[float]] = {}

    def add(name: str, value: str) -> None:
        found.setdefault(f"perf-bench.{name}", []).append(float(value))

    function: str | None = None
    for line in text.splitlines():
        if match := re.match(r"#\s*function '([^']+)'", line):
            function = re.sub(r"[^A-Za-z0-9_-]", "_", match.group(1))
        elif match := re.search(r"Total time:\s*(" + _NUMBER + r")\s*\[sec\]", line):
            add("total_time_s", match.group(1))
        elif match := re.search(r"^\s*(" + _NUMBER + r")\s+usecs/op", line):
            add("usecs_per_op", match.group(1))
        elif match := re.search(r"^\s*(" + _NUMBER + r")\s+ops/sec", line):
            add("ops_per_sec", match.group(1))
        elif match := re.search(r"Averaged\s+(" + _NUMBER + r")\s+operations/sec", line):
            add("ops_per_sec", match.group(1))
        elif match := re.search(r"^\s*(" + _NUMBER + r")\s+GB/sec", line):
            add(f"{function}.GB_per_sec" if function else "GB_per_sec", match.group(1))
    if not found:
        raise OutputError(parser, "no 'Total time: N [sec]' or ops/sec line" + _tail(text))
    return {name: _mean(values) for name, values in found.items()}


# --- LKP -------------------------------------------------------------------------------------

def _lkp_json(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    text, where = _document(parser, stdout, files, (".json",))
    data = _json_object(parser, text, where)
    metrics: dict[str, float] = {}
    for name, value in data.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            metrics[name] = float(value)
        elif isinstance(value, list):
            numbers = [float(item) for item in value
                       if isinstance(item, (int, float)) and not isinstance(item, bool)]
            if numbers:
                metrics[name] = _mean(numbers)
    if not metrics:
        # lkp run writes `{}` when its benchmark program produced nothing its parser reads: the
        # program failed, often for want of what `lkp install` builds (fsmark's ./fs_mark)
        raise OutputError(parser, f"no numeric stats in {where}: the benchmark under lkp gave no results "
                                  "(see the sample's output; its lkp program may need what `lkp install` builds)")
    return metrics


# --- benchmarks a lab installs itself ---------------------------------------------------------
# Each reads the output lkp-tests' programs/<tool>/parse reads and yields its metrics under the
# names LKP reports them by (<tool>.<name>), with the same values.

def _will_it_scale_csv(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    """runtest.py's `tasks,processes,processes_idle,threads,threads_idle,linear` rows: per task
    count N `will-it-scale.N.<column>`, and over the counts run per_process_ops and
    per_thread_ops (the mean of operations per task, whole), workload (all operations) and
    scalability (the last count's processes over linear). A count whose processes and threads
    both did nothing (a test that failed) is left out, as lkp-tests leaves it."""
    text = _text(stdout)
    metrics: dict[str, float] = {}
    names: list[str] = []
    per_process: list[float] = []
    per_thread: list[float] = []
    scalability: list[float] = []
    workload = 0.0
    for line in text.splitlines():
        line = line.strip()
        if re.fullmatch(r"[a-z_,]+", line):
            names = line.split(",")[1:]
        elif re.fullmatch(r"[0-9.,]+", line) and names:
            tasks, *values = line.split(",")
            if tasks == "0" or len(values) < 3:
                continue
            processes, threads = _whole(values[0]), _whole(values[2])
            if processes == 0 and threads == 0:
                continue
            linear = _whole(values[-1])
            if linear != 0 and tasks != "1":
                scalability.append(float(values[0]) / linear)
            per_process.append(processes / int(tasks))
            per_thread.append(threads / int(tasks))
            workload += processes + threads
            metrics.update({f"will-it-scale.{tasks}.{name}": float(value)
                            for name, value in zip(names, values, strict=False)})
    if not per_process:
        raise OutputError(parser, "no 'tasks,processes,…' row of a task count that ran" + _tail(text))
    if scalability:
        metrics["will-it-scale.scalability"] = scalability[-1]
    metrics["will-it-scale.per_process_ops"] = float(int(_mean(per_process)))
    metrics["will-it-scale.per_thread_ops"] = float(int(_mean(per_thread)))
    if workload:
        metrics["will-it-scale.workload"] = float(int(workload))
    return metrics


def _filebench_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    """The `IO Summary: N ops N ops/s R/W rd/wr N mb/s N ms/op` line: filebench.sum_operations,
    sum_operations/s, sum_reads/s, sum_writes/s, sum_bytes_mb/s and sum_time_ms/op (of the last
    summary, should there be several)."""
    text = _text(stdout)
    found = re.findall(r"IO Summary:\s+(\d+)\s+ops\s+([\d.]+)\s+ops/s\s+(\d+)/(\d+)\s+rd/wr\s+([\d.]+)mb/s"
                       r"\s+([\d.]+)ms/op", text)
    if not found:
        raise OutputError(parser, "no 'IO Summary: … ops/s … rd/wr … mb/s … ms/op' line" + _tail(text))
    names = ("sum_operations", "sum_operations/s", "sum_reads/s", "sum_writes/s", "sum_bytes_mb/s",
             "sum_time_ms/op")
    return {f"filebench.{name}": float(value) for name, value in zip(names, found[-1], strict=True)}


def _fxmark_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    """fxmark's `# ncpu secs works works/sec …` header and the row after it: each column as
    fxmark.<column> (dots in column names written `_`: real_sec), or, under run-fxmark.py's
    `## media:fs:test:ncpu:directio` line, as fxmark.<media>_<fs>_<test>_<ncpu>_<directio>.<column>
    (a row whose ncpu is not the line's is skipped), as lkp-tests' parse names them. Columns that
    are no number (`-nan` of a run that did nothing) are left out."""
    lines = _text(stdout).splitlines()
    metrics: dict[str, float] = {}
    name: str | None = None
    cpu: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if re.match(r"## (hdd|ssd|nvme|mem)", line):
            name, cpu = line[3:].replace(":", "_"), line.split(":")[-2]
        elif line.startswith("# ncpu"):
            columns = line[2:].replace(".", "_").split()
            while index < len(lines) and not lines[index].strip():
                index += 1
            if index == len(lines):
                break
            row = lines[index].split()
            index += 1
            if name is not None and row[:1] != [cpu]:
                continue
            prefix = f"fxmark.{name}." if name is not None else "fxmark."
            metrics.update({prefix + column: float(value) for column, value in zip(columns, row, strict=False)
                            if re.match(r"\d", value)})
    if not metrics:
        raise OutputError(parser, "no '# ncpu secs works works/sec' header with a row of figures"
                          + _tail(_text(stdout)))
    return metrics


def _unixbench_text(parser: str, stdout: bytes, files: Mapping[str, bytes]) -> dict[str, float]:
    """UnixBench's report as lkp-tests' parse reads it: unixbench.throughput (the last test's
    result: its `… N KBps|lps|lpm|score (N s, N samples)` line or its index table's RESULT),
    unixbench.score (the `Benchmarks Index Score`) and unixbench.workload (throughput × the
    seconds between the `Benchmark Run:` times, over midnight too)."""
    lines = _text(stdout).splitlines()
    throughput: float | None = None
    score: float | None = None
    seconds: float | None = None
    for index, line in enumerate(lines):
        if run := re.match(r"Benchmark Run: .+ (\d+):(\d+):(\d+) - (\d+):(\d+):(\d+)$", line):
            start, end = (int(run[at]) * 3600 + int(run[at + 1]) * 60 + int(run[at + 2]) for at in (1, 4))
            seconds = float(end - start if end > start else end + 86400 - start)
        elif re.match(r".+ Benchmarks .*Index .* INDEX$", line):
            following = lines[index + 1].split() if index + 1 < len(lines) else []
            if following:
                throughput = float(following[-2])
        elif result := re.match(r".+? ([\d.]+) (KBps|lps|lpm|score)\s+\([\d.]+ s, \d+ samples?\)", line):
            throughput = float(result[1])
        elif index_score := re.match(r".+ Benchmarks Index Score .* ([0-9.]+)$", line):
            score = float(index_score[1])
    if throughput is None or seconds is None:
        raise OutputError(parser, "no 'Benchmark Run:' times or no test result" + _tail(_text(stdout)))
    metrics = {"unixbench.throughput": throughput, "unixbench.workload": seconds * throughput}
    if score is not None:
        metrics["unixbench.score"] = score
    return metrics


def _whole(text: str) -> int:
    """The leading whole number of a field, as Ruby's String#to_i reads it (`0.04` -> 0)."""
    match = re.match(r"\s*([-+]?\d+)", text)
    return int(match.group(1)) if match else 0


PARSERS: Mapping[str, Callable[[str, bytes, Mapping[str, bytes]], dict[str, float]]] = MappingProxyType({
    "fio-json": _fio_json,
    "sysbench-text": _sysbench_text,
    "stress-ng-yaml": _stress_ng_yaml,
    "fs_mark-text": _fs_mark_text,
    "hackbench-text": _hackbench_text,
    "perf-bench-text": _perf_bench_text,
    "lkp-json": _lkp_json,
    "dbench-text": _dbench_text,
    "postmark-text": _postmark_text,
    "will-it-scale-csv": _will_it_scale_csv,
    "filebench-text": _filebench_text,
    "fxmark-text": _fxmark_text,
    "unixbench-text": _unixbench_text,
})


def parse_output(parser_name: str, stdout: bytes, files: Mapping[str, bytes] = _NO_FILES) -> dict[str, float]:
    """The metrics in one run's output; ValueError for an unknown parser, OutputError if absent."""
    try:
        parser = PARSERS[parser_name]
    except KeyError:
        raise ValueError(f"unknown output parser {parser_name!r} (known: {', '.join(PARSERS)})") from None
    metrics = parser(parser_name, stdout, files)
    return {name: value for name, value in metrics.items() if math.isfinite(value)}
