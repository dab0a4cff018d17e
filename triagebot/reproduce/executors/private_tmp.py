"""Reproduce stage: a benchmark's /tmp is its scratch directory (local commands, as root).

TMPDIR, the working directory and options such as stress-ng's --temp-path keep most temporary
files in scratch, but some benchmarks name /tmp itself (stress-ng 0.15's open stressor makes
O_TMPFILE files in "/tmp" whatever it is told). So a local command that runs in a scratch
directory gets a mount namespace of its own in which the scratch directory is mounted over /tmp:
whatever it writes "to /tmp" is in scratch, counted and removed with it, and the host's /tmp is
untouched. It takes CAP_SYS_ADMIN (root); without it the command sees the host's /tmp. A
scratch directory that is itself below /tmp is left alone (mounting it over /tmp would hide the
paths the plan's argv names): there the command sees the host's /tmp too.

The programs a command runs stay visible: where the program (as found on its PATH, and where its
links lead) or a PATH folder lies below the host's /tmp (a virtualenv made in /tmp, the
interpreter of a benchmark written in Python), that entry of the host's /tmp is bound, read-only,
at the same place in the command's /tmp (the mount point is an empty folder or file of that name
in scratch, removed with it). Nothing else of the host's /tmp is seen.
"""
from __future__ import annotations

import ctypes
import os
import shutil
from collections.abc import Sequence

CLONE_NEWNS = 0x00020000  # unshare(2): a mount namespace of its own
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000  # mount(2): propagate nothing back to the host's namespace
TMP = b"/tmp"

# The C library this interpreter is linked with (not ctypes.util.find_library: it runs ldconfig).
_libc = ctypes.CDLL(None, use_errno=True)


def under_tmp(path: str) -> bool:
    """Whether `path` is /tmp or below it (after resolving links)."""
    real = os.path.realpath(path)
    return real == "/tmp" or real.startswith("/tmp/")


def possible() -> bool:
    """Whether this process may make mount namespaces (root)."""
    return os.geteuid() == 0


def works(directory: str) -> str | None:
    """None when a child of this process may mount `directory` over its /tmp, else why not.
    Tried in a forked child that execs nothing (a trace of a rerun shows no extra program)."""
    if not possible():
        return "not root"
    pid = os.fork()
    if pid == 0:  # the child: try, and say how it went in the exit status only
        try:
            mount_scratch_on_tmp(directory)
        except OSError as error:
            os._exit(min(255, max(1, error.errno or 1)))
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return None if code == 0 else f"mount namespace refused: {os.strerror(code) if code > 0 else code}"


def _tmp_entry(path: str) -> str | None:
    """The name of the entry of /tmp that `path` lies in (`/tmp/venv/bin/python3` -> `venv`)."""
    if not path.startswith("/tmp/"):
        return None
    return path[len("/tmp/"):].split("/", 1)[0] or None


def programs_under_tmp(program: str, search_path: str) -> tuple[str, ...]:
    """The entries of the host's /tmp that `program` needs to run: the one holding the program
    (found on `search_path` as exec would, and where its links lead) and those holding a folder of
    `search_path`. Empty for the usual program in /usr."""
    found = program if "/" in program else shutil.which(program, path=search_path)
    places = [folder for folder in search_path.split(":") if folder]
    if found and os.path.isabs(found):  # a relative one is relative to scratch, not below /tmp
        places += [found, os.path.realpath(found)]
    names = {_tmp_entry(os.path.abspath(place)) for place in places}
    names |= {_tmp_entry(os.path.realpath(place)) for place in places}
    return tuple(sorted(name for name in names if name and name not in (".", "..")))


def mount_scratch_on_tmp(scratch: str, keep: Sequence[str] = ()) -> None:
    """In the calling process (a child between fork and exec): /tmp becomes `scratch`, with the
    host's /tmp entries named in `keep` bound read-only at their places in it (the programs the
    command runs). OSError when the kernel refuses; the caller decides whether that stops the command."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    if _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
    for name in keep:
        source = os.path.join("/tmp", name)
        target = os.path.join(scratch, name)
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        elif os.path.exists(source) and not os.path.exists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
        else:
            continue
        if _libc.mount(os.fsencode(source), os.fsencode(target), None, MS_BIND | MS_REC, None) != 0:
            raise OSError(ctypes.get_errno(), f"mount --bind {source} {target}")
        if _libc.mount(b"none", os.fsencode(target), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None) != 0:
            raise OSError(ctypes.get_errno(), f"mount -o remount,bind,ro {target}")
    if _libc.mount(os.fsencode(scratch), TMP, None, MS_BIND | MS_REC, None) != 0:
        raise OSError(ctypes.get_errno(), f"mount --bind {scratch} /tmp")
