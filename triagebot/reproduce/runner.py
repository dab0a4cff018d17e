"""Reproduce stage: run a plan on a host, base and suspect interleaved, and decide.

Samples alternate A B A B ...: before each one the host's switch hook boots that sample's
commit (when the host can switch kernels) and the running-kernel hook is checked; the plan's
argv runs in a fresh scratch directory with `{scratch}` filled in; its output and the files the
plan collects are kept with the parsed metric. A failed sample is retried a bounded number of
times, then the run ends as an error with the reason. Rounds of samples go to the adaptive
verdict until it decides or the budget is spent. On a host that cannot switch kernels both
sides run on its running kernel: the run ends in `a-a-only` with the noise it measured, never
in a verdict on the commit (verdict/same_kernel.py), after its first round: more samples of one
kernel cannot say anything more about a commit.

A run interrupted between or during samples (Ctrl-C, SIGTERM, a daemon asked to stop) is
`cut-short`: the samples it took are kept in its record, handed to `on_cut_short` before the
interruption goes on, so the caller stores them (shown by `triage show`, never resumed: a
verdict is made from samples of one sitting, so the next run starts over).

Nothing here builds a command from message text: argv comes from a validated plan, hooks from
the operator's hosts.toml.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from triagebot.errors import TriageError
from triagebot.records.states import RUN_CUT_SHORT
from triagebot.reproduce.executors.protocol import ConnectionLost, Executor, ExecutorError, Limits, SwitchesKernels
from triagebot.reproduce.limits import describe_limits, host_limits
from triagebot.reproduce.outputs import OutputError, parse_output
from triagebot.reproduce.plan import Plan
from triagebot.rules.floors import load_floors
from triagebot.rules.hosts import Host
from triagebot.verdict.same_kernel import a_a_verdict
from triagebot.verdict.sequential import LookSchedule, decide_adaptively

SCRATCH = "{scratch}"
MAX_KEPT_OUTPUT = 256 * 1024  # bytes of each sample's stdout kept in the store
HOOK_TIMEOUT_SECONDS = 600.0
MAX_ERROR_DETAIL = 300  # characters of a failed command's stderr kept in its error


class RunError(TriageError):
    """A run that cannot go on: a hook failed, the kernel is not the one asked for, samples fail."""


class SampleError(TriageError):
    """One sample's command failed (a non-zero exit, a timeout): the sample is tried again."""


@dataclass(frozen=True)
class Sample:
    role: str  # base / suspect
    commit: str
    index: int  # order in the run, from 0
    value: float
    seconds: float
    running_kernel: str
    attempts: int
    stdout: str  # up to MAX_KEPT_OUTPUT, as text
    metrics: dict[str, float] = field(default_factory=dict)
    # when the sample began (its kernel switch included) and ended, UTC to the microsecond:
    # the order of runs on different hosts (did they run at once?) is read from these
    started_at: str = ""
    finished_at: str = ""


@dataclass
class RunRecord:
    host: str
    base_commit: str
    suspect_commit: str
    plan: dict
    started_at: str
    samples: list[Sample] = field(default_factory=list)
    status: str = "running"  # running / done / error / cut-short (CUT_SHORT)
    error: str | None = None
    finished_at: str | None = None
    verdict: dict | None = None
    events: list[str] = field(default_factory=list)
    same_kernel: bool = False  # the host cannot switch kernels: both sides on one kernel (A/A)
    kernel_switch: dict | None = None  # a ready switcher's account of how the kernels ran (a guest?)
    builds: list[dict] = field(default_factory=list)  # the kernels it built or took from its cache

    def to_json(self) -> dict:
        data = asdict(self)
        return data


def _now(precise: bool = False) -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds" if precise else "seconds")


def _fill(argv: tuple[str, ...], scratch: str) -> list[str]:
    return [part.replace(SCRATCH, scratch) for part in argv]


def _scratch_env(scratch: str) -> dict[str, str]:
    """Temporary files of a benchmark go to its scratch directory (TMPDIR), on every executor."""
    return {"TMPDIR": scratch}


def _failure(completed) -> str:
    """How a command failed, with the end of its stderr: `failed (exit 1): fio: ...`."""
    how = f"exit {completed.returncode}" + (", timed out" if completed.timed_out else "")
    detail = completed.stderr.decode("utf-8", "replace").strip()[-MAX_ERROR_DETAIL:]
    return f"failed ({how})" + (f": {detail}" if detail else "")


class Runner:
    """Takes samples of one plan on one host through its executor."""

    def __init__(self, plan: Plan, host: Host, executor: Executor, *, retries: int = 2,
                 limits: Limits | None = None, sleep: Callable[[float], None] = time.sleep,
                 kernel_config: Any = None, report_options: tuple[tuple[str, str], ...] = (),
                 announce: Callable[[str], None] = lambda line: None) -> None:
        self.plan = plan
        self.host = host
        self.executor = executor
        self.retries = retries
        self.limits = limits
        self.sleep = sleep
        self.kernel_config = kernel_config  # the report's config (triagebot.kernels.config), if it gave one
        self.report_options = report_options  # the CONFIG_ lines its mail names
        self.announce = announce
        self._current: str | None = None
        self._running_release = ""

    def _hook(self, argv: tuple[str, ...], what: str, *, again_after_drop: bool) -> str | None:
        """Run a host hook; its stdout. A dropped connection is waited out; then the hook runs
        again if `again_after_drop`, else None says the hook's fate is unknown (the drop may
        have been its reboot, or it may never have started)."""
        try:
            completed = self.executor.run(argv, timeout=HOOK_TIMEOUT_SECONDS)
        except ConnectionLost:
            self.executor.reconnect(self.host.reboot_timeout_s)
            if not again_after_drop:
                return None
            completed = self.executor.run(argv, timeout=HOOK_TIMEOUT_SECONDS)
        if not completed.ok:
            detail = completed.stderr.decode("utf-8", "replace").strip()[-300:]
            raise RunError(f"host {self.host.name}: {what} hook {list(argv)} failed "
                           f"(exit {completed.returncode}{', timed out' if completed.timed_out else ''}): {detail}")
        return completed.stdout.decode("utf-8", "replace").strip()

    def _running(self) -> str:
        return self._hook(self.host.running_kernel, "running_kernel", again_after_drop=True) or ""

    def _switch(self, commit: str) -> str:
        """A ready switcher builds and boots `commit` itself; the kernel's release."""
        assert isinstance(self.executor, SwitchesKernels)
        if self._current != commit:
            try:
                self._running_release = self.executor.switch_kernel(
                    commit, self.kernel_config, self.report_options, announce=self.announce)
            except TriageError as error:  # a build that failed, a kernel that did not come up
                raise RunError(str(error)) from error
            self._current = commit
        return self._running_release

    def _boot(self, commit: str) -> str:
        """Switch to `commit` where the host can, and return what the running-kernel hook says."""
        if self.host.switcher is not None and isinstance(self.executor, SwitchesKernels):
            return self._switch(commit)
        running = None
        if self.host.can_switch_kernel and self._current != commit:
            try:
                argv = self.host.switch_kernel_argv(commit)
            except ValueError as error:
                raise RunError(str(error)) from error
            if self._hook(argv, "switch_kernel", again_after_drop=False) is None:
                # The connection dropped: a reboot into `commit`, or a switch that never ran.
                # Only a host not running `commit` is switched again (no second reboot).
                running = self._running()
                if commit not in running:
                    self._hook(argv, "switch_kernel", again_after_drop=False)
                    running = None
            self._current = commit
        running = running if running is not None else self._running()
        if self.host.can_switch_kernel and commit not in running:
            raise RunError(f"host {self.host.name}: asked for {commit}, but the running kernel is {running!r}")
        return running

    def _host_step(self, step: tuple[str, ...], scratch: str, what: str) -> None:
        """One of the plan's host steps (mkfs, mount, umount): run outside the scratch directory
        (so it acts on the host, not in a benchmark's own mount namespace) and without the
        benchmark's limits; SampleError when it fails."""
        completed = self.executor.run(_fill(step, scratch), timeout=HOOK_TIMEOUT_SECONDS)
        if not completed.ok:
            raise SampleError(f"{what} {_fill(step, scratch)} {_failure(completed)}")

    def _release(self, scratch: str, steps: tuple[tuple[str, ...], ...]) -> None:
        """The plan's release steps (umount), each tried even when one before it failed; a step
        that fails ends the run: the next sample's mkfs would find its device still mounted."""
        problems = []
        for step in steps:
            try:
                self._host_step(step, scratch, "release")
            except (SampleError, ExecutorError) as error:
                problems.append(str(error))
        if problems:
            raise RunError(f"host {self.host.name}: {'; '.join(problems)}")

    def _one(self) -> tuple[float, float, str, dict[str, float]]:
        scratch = self.executor.make_scratch()
        prepared = started = False
        try:
            for step in self.plan.prepare_steps:
                self._host_step(step, scratch, "prepare")
            # Mounted: from here on released in `finally`, whatever happens to the sample.
            prepared = bool(self.plan.prepare_steps)
            for path, text in self.plan.files:  # the program's input (a job file), built from the plan's values
                self.executor.put_file(path.replace(SCRATCH, scratch), text.replace(SCRATCH, scratch).encode("utf-8"))
            started = True  # from here the plan's cleanup runs, whatever happens to the sample
            if self.plan.setup_argv:
                setup = self.executor.run(_fill(self.plan.setup_argv, scratch), timeout=self.plan.timeout_seconds,
                                          cwd=scratch, env=_scratch_env(scratch), limits=self.limits)
                if not setup.ok:
                    raise SampleError(f"setup {list(self.plan.setup_argv)} {_failure(setup)}")
            completed = self.executor.run(_fill(self.plan.argv, scratch), timeout=self.plan.timeout_seconds,
                                          cwd=scratch, env=_scratch_env(scratch), limits=self.limits)
            if not completed.ok:
                raise SampleError(f"{self.plan.argv[0]} {_failure(completed)}")
            # one key a file: parsers choose "the one collected file" with their suffix
            paths = [name.replace(SCRATCH, scratch) for name in self.plan.collect]
            files = {path: self.executor.read_file(path) for path in paths}
            metrics = parse_output(self.plan.parser, completed.stdout, files)
            if self.plan.output_metric not in metrics:
                raise OutputError(self.plan.parser, f"the output has no {self.plan.output_metric} "
                                                    f"(it has {', '.join(sorted(metrics)) or 'none'})")
            return metrics[self.plan.output_metric], completed.seconds, \
                completed.stdout[:MAX_KEPT_OUTPUT].decode("utf-8", "replace"), metrics
        finally:
            try:
                if started and self.plan.cleanup_argv:
                    self._cleanup(scratch)
            finally:
                try:
                    if prepared:
                        self._release(scratch, self.plan.release_steps)
                finally:
                    self.executor.remove_scratch(scratch)

    def _cleanup(self, scratch: str) -> None:
        """The plan's cleanup (sysbench's file removal, `lkp rm-path` of lkp's result root), after
        every sample that started, failed or not: a failed lkp sample would otherwise leave its
        result root behind. Its own failure does not hide the sample's outcome."""
        try:
            self.executor.run(_fill(self.plan.cleanup_argv, scratch), timeout=self.plan.timeout_seconds,
                              cwd=scratch, env=_scratch_env(scratch), limits=self.limits)
        except ExecutorError:
            pass  # the host is gone (the sample reports that) or the cleanup could not start

    def sample(self, role: str, commit: str, index: int, record: RunRecord) -> Sample:
        problems = []
        started_at = _now(precise=True)
        for attempt in range(1, self.retries + 2):
            running = self._boot(commit)
            try:
                value, seconds, stdout, metrics = self._one()
            except (SampleError, OutputError, ExecutorError) as error:
                problems.append(str(error))
                record.events.append(f"sample {index} ({role} {commit}) attempt {attempt} failed: {error}")
                if isinstance(error, ConnectionLost):
                    self.executor.reconnect(self.host.reboot_timeout_s)
                continue
            return Sample(role, commit, index, value, seconds, running, attempt, stdout, metrics,
                          started_at=started_at, finished_at=_now(precise=True))
        raise RunError(f"sample {index} ({role} {commit}) failed {len(problems)} times; last: {problems[-1]}")


# The verdict's default looks (6, 10, 15, 20 a side), built once.
DEFAULT_ROUNDS = LookSchedule()
CUT_SHORT = RUN_CUT_SHORT  # a run's status when it was interrupted: its samples kept, no verdict


def first_round_only(rounds: LookSchedule) -> LookSchedule:
    """The looks of an A/A run: its first round alone (its outcome is a-a-only whatever follows)."""
    return LookSchedule(rounds=rounds.rounds[:1], alpha=rounds.alpha, no_repro_error=rounds.no_repro_error,
                        same_fraction=rounds.same_fraction)


def interruption_text(interruption: BaseException) -> str:
    """What stopped a run, in a few words."""
    if isinstance(interruption, KeyboardInterrupt):
        return "interrupted (Ctrl-C, SIGINT)"
    return str(interruption) or type(interruption).__name__


def rerun(plan: Plan, host: Host, executor: Executor, base_commit: str, suspect_commit: str, *,
          rounds: LookSchedule = DEFAULT_ROUNDS, floor_percent: float | None = None,
          on_sample: Callable[[Sample], None] | None = None, retries: int = 2,
          limits: Limits | None = None, on_cut_short: Callable[[RunRecord], None] | None = None,
          kernel_config: Any = None, report_options: tuple[tuple[str, str], ...] = ()) -> RunRecord:
    """Interleaved base/suspect samples in adaptive rounds, ending with the verdict (or an error).

    The plan's commands run under `limits`, by default those scaled from the host (host_limits).
    Interrupted (any exception but a TriageError: KeyboardInterrupt, a stop raised by
    `on_sample`), the record is marked cut short and given to `on_cut_short`, and the
    interruption goes on. On a host with a ready switcher the executor builds and boots each
    commit, with the report's `kernel_config` where it gave one; a run inside a guest (vm, uml)
    needs at least the switcher's floor_percent of change to confirm."""
    record = RunRecord(host=host.name, base_commit=base_commit, suspect_commit=suspect_commit,
                       plan=plan.to_json(), started_at=_now(), same_kernel=not host.can_switch_kernel)
    limits = limits if limits is not None else host_limits(host)
    switching = host.switcher is not None and isinstance(executor, SwitchesKernels)
    if switching:
        assert isinstance(executor, SwitchesKernels)
        record.kernel_switch = executor.kernel_switch
    runner = Runner(plan, host, executor, retries=retries, limits=limits, kernel_config=kernel_config,
                    report_options=report_options, announce=record.events.append)
    record.events.append(f"limits: {describe_limits(limits)}")
    record.events.extend(getattr(executor, "limit_notes", ()))
    if plan.runs_on:
        record.events.append(f"storage: each sample runs on {plan.runs_on}, unmounted after it")
    record.events.extend(f"storage differs from the report's: {item}" for item in plan.storage_differs)
    floor = floor_percent if floor_percent is not None else load_floors().floor_for(plan.report_metric or plan.metric)
    if record.kernel_switch is not None and record.kernel_switch.get("guest") \
            and floor < record.kernel_switch["floor_percent"]:
        record.events.append(f"floor: {record.kernel_switch['floor_percent']:g}% (not {floor:g}%): the samples run "
                             f"{record.kernel_switch['describe']}, whose magnitudes and noise are not hardware's")
        floor = record.kernel_switch["floor_percent"]
    if not host.can_switch_kernel:
        rounds = first_round_only(rounds)
        record.events.append(f"host {host.name} cannot switch kernels: base and suspect both run on the "
                             "running kernel (an A/A run; no evidence about the commit)"
                             + (f" ({host.switcher_note})" if host.switcher_note else "")
                             + f": one round of {rounds.rounds[0]} a side, since more samples of one kernel "
                             "say nothing more")

    def run_round(size: int) -> tuple[list[float], list[float]]:
        base: list[float] = []
        suspect: list[float] = []
        for _ in range(size):
            for role, commit, values in (("base", base_commit, base), ("suspect", suspect_commit, suspect)):
                sample = runner.sample(role, commit, len(record.samples), record)
                record.samples.append(sample)
                values.append(sample.value)
                if on_sample is not None:
                    on_sample(sample)
        return base, suspect

    try:
        adaptive = decide_adaptively(run_round, plan.better, plan.reported_change_percent, floor, rounds)
    except TriageError as error:  # a sample failed every attempt, a hook failed, the host is gone
        record.status, record.error = "error", str(error)
    except BaseException as interruption:  # Ctrl-C, SIGTERM, a stop: the samples taken are kept
        record.status = CUT_SHORT
        record.error = f"cut short after {len(record.samples)} samples: {interruption_text(interruption)}"
        record.finished_at = _now()
        if on_cut_short is not None:
            on_cut_short(record)
        raise
    else:
        record.status = "done"
        record.verdict = adaptive.verdict.to_json() | {"looks": len(adaptive.looks),
                                                       "host_can_switch_kernel": host.can_switch_kernel}
        if record.same_kernel:  # noise and a working plan, never a verdict on the commit
            record.verdict = a_a_verdict(record.verdict, record.to_json())
    if switching:
        assert isinstance(executor, SwitchesKernels)
        record.builds = list(executor.builds)
    if record.verdict is not None and record.kernel_switch is not None:
        record.verdict["kernel_switch"] = record.kernel_switch["describe"]
    record.finished_at = _now()
    return record
