"""Kernel builds: build a commit of a kernel tree with a config, or take it from the cache.

Layout under the cache directory (trees.toml's [kernel_builds] cache_dir):

    trees/NAME.git                      the tree's bare clone (tree.py)
    work/NAME-ARCH-KEY/src, build       ONE worktree and ONE build directory per (tree, arch, config)
    artifacts/SHA-KEY/                  a built kernel: image, config, release, modules.tar, build.log
    ccache/                             the compiler cache (unless ccache_dir says elsewhere)

One worktree and build directory per (tree, arch, config), not per commit: the next commit is
checked out in the same worktree (git touches only the files that differ) and `make O=build`
recompiles only what depends on them, a few objects and the link (~10 CPU-seconds against ~420
for a cold x86 build). Kbuild's command files hold absolute paths, so a build directory is never
copied or moved (on x86 objtool is rebuilt for a new path and every object after it). ccache,
with CCACHE_BASEDIR at the work root, makes a cold build of a config or commit it has seen cheap.
A build takes the work directory's lock, so two runs never build in one directory at once.

Artefacts are kept by (commit, config key) and evicted least recently used past
`max_cache_gib`; work directories past `max_work_dirs`. Output is kept bounded (the last
`log_kib`): a failed build is a BuildError naming the commit and the compiler's last lines.
Nothing read from a report reaches make but a config's CONFIG_ lines, written to a file.
"""
from __future__ import annotations

import collections
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from triagebot.errors import TriageError
from triagebot.kernels.config import KernelConfig, config_key, missing_options, options_of, release_suffix
from triagebot.kernels.tree import KernelClone
from triagebot.rules.trees import KernelBuilds, KernelTree

IMAGES = {"x86_64": "arch/x86/boot/bzImage", "um": "linux"}
ERROR_LINES = 25  # the compiler's last lines in a BuildError
_FIXED_BUILD = {"KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 2015", "KBUILD_BUILD_USER": "triagebot",
                "KBUILD_BUILD_HOST": "triagebot"}  # the same compile commands, whichever machine: ccache hits
Announce = Callable[[str], None]


class BuildError(TriageError):
    """A kernel build failed or could not start: the commit, and the compiler's last lines."""


@dataclass(frozen=True)
class Artefact:
    """A built kernel in the cache."""

    commit: str
    ref: str
    arch: str
    key: str
    release: str  # `uname -r` of the kernel: it ends in -tb<sha12>
    directory: Path
    how: str  # cached / incremental / cold
    seconds: float  # the build's wall time (0 for a cached one)
    config_origin: str
    log_tail: str = ""  # the build's last output lines (bounded), only for a build made now
    compiled: int = 0  # objects compiled by this build

    @property
    def image(self) -> Path:
        return self.directory / "image"

    @property
    def config(self) -> Path:
        return self.directory / "config"

    @property
    def modules(self) -> Path | None:
        path = self.directory / "modules.tar"
        return path if path.is_file() else None

    def to_json(self) -> dict:
        return {"commit": self.commit, "ref": self.ref, "arch": self.arch, "key": self.key[:16],
                "release": self.release, "how": self.how, "seconds": round(self.seconds, 1),
                "compiled": self.compiled, "config": self.config_origin, "directory": str(self.directory),
                "log_tail": self.log_tail}


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "triagebot" / "kernels"


@contextmanager
def locked(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """An exclusive lock file; yields False when `wait` is off and another holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True


class BoundedLog:
    """The last `limit` bytes of a stream of lines, and a count of compile lines."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lines: collections.deque[str] = collections.deque()
        self._size = 0
        self.compiled = 0

    def add(self, line: str) -> None:
        if line.startswith("  CC ") and not line.startswith("  CC [M]  scripts"):
            self.compiled += 1
        self._lines.append(line)
        self._size += len(line)
        while self._size > self.limit and len(self._lines) > 1:
            self._size -= len(self._lines.popleft())

    def text(self) -> str:
        return "".join(self._lines)

    def last(self, count: int) -> str:
        return "".join(list(self._lines)[-count:])


def _toolchain(environ: Mapping[str, str]) -> str:
    try:
        completed = subprocess.run(["gcc", "--version"], capture_output=True, text=True, timeout=30,
                                   env={"PATH": environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BuildError(f"no compiler to build kernels with: gcc: {error}") from None
    return (completed.stdout.splitlines() or ["gcc"])[0]


class KernelBuilder:
    """Builds commits of one kernel tree under the cache directory."""

    def __init__(self, tree: KernelTree, settings: KernelBuilds, *, environ: Mapping[str, str] = os.environ) -> None:
        self.tree = tree
        self.settings = settings
        self.environ = environ
        self.cache = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir(environ)
        self.clone = KernelClone(tree, self.cache)
        self._toolchain: str | None = None

    @property
    def toolchain(self) -> str:
        if self._toolchain is None:
            self._toolchain = _toolchain(self.environ)
        return self._toolchain

    def key(self, config: KernelConfig, arch: str) -> str:
        return config_key(config, arch, self.toolchain)

    def artefact_dir(self, sha: str, key: str) -> Path:
        return self.cache / "artifacts" / f"{sha}-{key[:16]}"

    def work_dir(self, arch: str, key: str) -> Path:
        return self.cache / "work" / f"{self.tree.name}-{arch}-{key[:16]}"

    def build(self, ref: str, arch: str, config: KernelConfig, *, needed: tuple[str, ...] = (),
              announce: Announce = lambda line: None) -> Artefact:
        """The kernel of `ref` built for `arch` with `config` (`needed`: lines the final .config
        must keep); from the cache when it was built before."""
        if arch not in IMAGES:
            raise ValueError(f"arch must be one of {', '.join(IMAGES)}, not {arch!r}")
        sha = self.clone.resolve(ref)
        key = self.key(config, arch)
        target = self.artefact_dir(sha, key)
        cached = self._cached(target, ref)
        if cached is not None:
            return cached
        work = self.work_dir(arch, key)
        with locked(work.with_suffix(".lock")):
            cached = self._cached(target, ref)  # built by another run while this one waited
            if cached is not None:
                return cached
            announce(f"building {sha[:12]} ({self.clone.subject(sha)[:60]}) for {arch}, config {config.describe()}")
            artefact = self._build(work, sha, ref, arch, key, config, needed)
            (work / ".used").touch()
        announce(f"built {sha[:12]} in {artefact.seconds:.0f} s ({artefact.how}, {artefact.compiled} objects "
                 f"compiled): {artefact.release}")
        self.evict(keep=target)
        return artefact

    def _cached(self, target: Path, ref: str) -> Artefact | None:
        meta = target / "meta.json"
        if not meta.is_file():
            return None
        data = json.loads(meta.read_text())
        meta.touch()  # recently used: evicted last
        return Artefact(commit=data["commit"], ref=ref, arch=data["arch"], key=data["key"], release=data["release"],
                        directory=target, how="cached", seconds=0.0, config_origin=data["config"])

    def _environment(self, work: Path) -> dict[str, str]:
        env = {"PATH": self.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": str(work),
               "LC_ALL": "C", "LANG": "C", **_FIXED_BUILD}
        if self._ccache():
            env.update(CCACHE_DIR=self.settings.ccache_dir or str(self.cache / "ccache"),
                       CCACHE_BASEDIR=str(work), CCACHE_NOHASHDIR="1", CCACHE_COMPILERCHECK="content",
                       CCACHE_MAXSIZE="5G")
        return env

    def _ccache(self) -> bool:
        return self.settings.ccache and shutil.which("ccache", path=self.environ.get("PATH")) is not None

    def _make(self, work: Path, arch: str, args: list[str], log: BoundedLog, *, deadline: float) -> int:
        argv = ["make", "-C", str(work / "src"), f"O={work / 'build'}", f"ARCH={arch}",
                f"-j{self.settings.jobs or os.cpu_count() or 1}", *args]
        if self._ccache():
            argv[4:4] = ["CC=ccache gcc", "HOSTCC=ccache gcc"]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=self._environment(work), start_new_session=True)
        assert process.stdout is not None
        timer = _Killer(process, deadline - time.monotonic())
        try:
            for raw in process.stdout:
                log.add(raw.decode("utf-8", "replace"))
        finally:
            timer.cancel()
            process.stdout.close()
            code = process.wait()
        if timer.fired:
            raise BuildError(f"kernel build stopped after {self.settings.build_seconds:g} s (build_seconds in "
                             f"trees.toml); last lines:\n{log.last(ERROR_LINES)}")
        return code

    def _build(self, work: Path, sha: str, ref: str, arch: str, key: str, config: KernelConfig,
               needed: tuple[str, ...]) -> Artefact:
        started = time.monotonic()
        deadline = started + self.settings.build_seconds
        log = BoundedLog(self.settings.log_kib * 1024)
        self.clone.check_out(work / "src", sha)
        build = work / "build"
        incremental = (build / IMAGES[arch]).is_file()
        build.mkdir(parents=True, exist_ok=True)
        what = f"kernel build of {sha[:12]} ({ref})"
        if not (build / ".config").is_file():
            if config.base == "allnoconfig":
                fragment = work / "fragment.config"
                fragment.write_text(config.fragment_text())
                code = self._make(work, arch, ["allnoconfig", f"KCONFIG_ALLCONFIG={fragment}"], log, deadline=deadline)
            else:
                (build / ".config").write_text(config.dot_config())
                code = self._make(work, arch, ["olddefconfig"], log, deadline=deadline)
        else:  # the same config at another commit: its Kconfig may differ
            code = self._make(work, arch, ["olddefconfig"], log, deadline=deadline)
        if code != 0:
            raise BuildError(f"{what}: configuring failed (exit {code}); last lines:\n{log.last(ERROR_LINES)}")
        final = (build / ".config").read_text(encoding="utf-8", errors="replace")
        lost = missing_options(needed, final)
        if lost:
            raise BuildError(f"{what}: the config lost {', '.join(lost)} (their dependencies are off): the switcher "
                             f"cannot boot that kernel; config {config.describe()}")
        modules = options_of(final).get("CONFIG_MODULES") == "y"
        targets = [IMAGES[arch].rsplit("/", 1)[-1]] + (["modules"] if modules and arch != "um" else [])
        code = self._make(work, arch, [f"LOCALVERSION={release_suffix(sha)}", *targets], log, deadline=deadline)
        if code != 0:
            raise BuildError(f"{what} failed (exit {code}); the compiler's last lines:\n{log.last(ERROR_LINES)}")
        release = (build / "include" / "config" / "kernel.release").read_text().strip()
        target = self.artefact_dir(sha, key)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=_made(target.parent)))
        try:
            shutil.copyfile(build / IMAGES[arch], staging / "image")
            os.chmod(staging / "image", 0o755)
            (staging / "config").write_text(final)
            if modules and arch != "um":
                self._modules(work, arch, sha, release, staging, log, deadline)
            (staging / "build.log").write_text(log.text())
            seconds = time.monotonic() - started
            meta = {"commit": sha, "arch": arch, "key": key, "release": release, "config": config.describe(),
                    "seconds": round(seconds, 1), "compiled": log.compiled,
                    "built_at": datetime.now(UTC).isoformat(timespec="seconds")}
            (staging / "meta.json").write_text(json.dumps(meta, indent=1))
            shutil.rmtree(target, ignore_errors=True)
            os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return Artefact(commit=sha, ref=ref, arch=arch, key=key, release=release, directory=target,
                        how="incremental" if incremental else "cold", seconds=seconds, config_origin=config.describe(),
                        log_tail=log.text(), compiled=log.compiled)

    def _modules(self, work: Path, arch: str, sha: str, release: str, staging: Path, log: BoundedLog,
                 deadline: float) -> None:
        """modules_install into a temporary root, kept as modules.tar (RELEASE/… inside)."""
        with tempfile.TemporaryDirectory(dir=work) as root:
            code = self._make(work, arch, [f"LOCALVERSION={release_suffix(sha)}", "modules_install",
                                           f"INSTALL_MOD_PATH={root}", "INSTALL_MOD_STRIP=1"],
                              log, deadline=deadline)
            if code != 0:
                raise BuildError(f"modules_install of {release} failed (exit {code}):\n{log.last(ERROR_LINES)}")
            with tarfile.open(staging / "modules.tar", "w") as archive:
                archive.add(Path(root) / "lib" / "modules" / release, arcname=release)

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Remove the least recently used artefacts past max_cache_gib and work directories past
        max_work_dirs (never `keep`, never a work directory in use); what was removed."""
        removed: list[Path] = []
        artifacts = self.cache / "artifacts"
        entries = sorted((path for path in artifacts.glob("*-*") if (path / "meta.json").is_file()),
                         key=lambda path: (path / "meta.json").stat().st_mtime) if artifacts.is_dir() else []
        sizes = {path: _size(path) for path in entries}
        total, limit = sum(sizes.values()), self.settings.max_cache_gib * (1 << 30)
        for path in entries:
            if total <= limit:
                break
            if path != keep:
                shutil.rmtree(path, ignore_errors=True)
                total -= sizes[path]
                removed.append(path)
        works = self.cache / "work"
        dirs = sorted((path for path in works.iterdir() if path.is_dir()),
                      key=lambda path: (path / ".used").stat().st_mtime if (path / ".used").exists() else 0.0) \
            if works.is_dir() else []
        for path in dirs[:max(0, len(dirs) - self.settings.max_work_dirs)]:
            with locked(path.with_suffix(".lock"), wait=False) as free:
                if free:
                    self.clone.remove_worktree(path / "src")
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
        return removed


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


class _Killer:
    """Kills a process group when its time is up (a timer thread; `fired` says whether it did)."""

    def __init__(self, process: subprocess.Popen[bytes], seconds: float) -> None:
        import threading

        self.fired = False
        self._process = process
        self._timer = threading.Timer(max(0.0, seconds), self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self) -> None:
        self.fired = True
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def cancel(self) -> None:
        self._timer.cancel()
