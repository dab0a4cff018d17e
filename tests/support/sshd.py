"""A real OpenSSH server on 127.0.0.1 for the SSH executor's tests.

It runs as the current user with a throwaway host key and client key made by ssh-keygen in a
temporary directory, a known_hosts file naming the host key, and `sshd -D -e -f <config>` with
UsePAM no, StrictModes no, PasswordAuthentication no and AuthorizedKeysFile in that directory.
`stop()` kills the server and every session it forked (as a reboot would) and `start()` brings
it back on the same port with the same keys.

As root, sshd insists on its privilege-separation directory (/run/sshd on Debian), which the
distribution's service normally creates at boot: it is created here when missing.
"""
from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from triagebot.rules.hosts import SshAccess

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/usr/bin/sshd")
PRIVSEP_DIR = Path("/run/sshd")


def find_sshd() -> str | None:
    for candidate in SSHD_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("sshd")
    return os.path.abspath(found) if found else None  # sshd must be started by absolute path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode("ascii", "replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (sessions sshd forked call setsid: no process group finds them)."""
    tree = _children()
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in tree.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


class TestSshd:
    """Context manager: `with TestSshd(tmp_path) as server: server.access()`."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(self, directory: Path, port: int | None = None, environment: dict[str, str] | None = None) -> None:
        self.sshd = find_sshd()
        self.keygen = shutil.which("ssh-keygen")
        if self.sshd is None or self.keygen is None or shutil.which("ssh") is None:
            pytest.skip("OpenSSH is not installed (need sshd, ssh and ssh-keygen: "
                        "apt-get install openssh-server openssh-client)")
        self.directory = directory
        self.port = port or free_port()
        self.user = getpass.getuser()
        self.host_key = directory / "host_ed25519"
        self.identity_file = directory / "client_ed25519"
        self.known_hosts_file = directory / "known_hosts"
        self.authorized_keys = directory / "authorized_keys"
        self.config = directory / "sshd_config"
        self.log = directory / "sshd.log"
        self.process: subprocess.Popen[bytes] | None = None
        # set in every session (sshd's SetEnv: it overrides sshd's own PATH), e.g. a lab's PATH.
        # SHLVL=1: the login shell counts itself a nested shell (2), so bash does not read the
        # account's ~/.bashrc for a command over ssh: the tests' host must not depend on this
        # machine's dotfiles (a `pyenv init` there waited a minute on a lock a killed session
        # left, and every command timed out).
        self.environment = {"SHLVL": "1", **(environment or {})}
        self._prepare()

    def _keygen(self, path: Path, comment: str) -> None:
        assert self.keygen is not None
        subprocess.run([self.keygen, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)

    def _prepare(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._keygen(self.host_key, "triagebot-test-host")
        self._keygen(self.identity_file, "triagebot-test-client")
        self.authorized_keys.write_text(Path(f"{self.identity_file}.pub").read_text())
        host_public = Path(f"{self.host_key}.pub").read_text().split()
        self.known_hosts_file.write_text(f"[127.0.0.1]:{self.port} {host_public[0]} {host_public[1]}\n")
        self.config.write_text("\n".join([
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"PidFile {self.directory / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "UsePAM no",
            "StrictModes no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            f"AllowUsers {self.user}",
            "MaxStartups 50",
            "LogLevel ERROR",
            *([f"SetEnv {' '.join(f'{name}={value}' for name, value in self.environment.items())}"]
              if self.environment else []),
            "",
        ]))
        if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
            PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)

    def access(self, **overrides: object) -> SshAccess:
        values: dict[str, object] = dict(host="127.0.0.1", port=self.port, user=self.user,
                                         identity_file=str(self.identity_file),
                                         known_hosts_file=str(self.known_hosts_file),
                                         connect_timeout_s=5.0)
        values.update(overrides)
        return SshAccess(**values)  # type: ignore[arg-type]

    def start(self, wait: float = 10.0) -> None:
        assert self.process is None, "already running"
        assert self.sshd is not None
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([self.sshd, "-D", "-e", "-f", str(self.config)],
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                raise RuntimeError(f"sshd exited at start: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as probe:
                    if probe.recv(4).startswith(b"SSH-"):
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"sshd did not answer on port {self.port} within {wait}s")

    def stop(self) -> None:
        """Kill sshd and every session below it, at once, as a reboot would."""
        if self.process is None:
            return
        victims = [self.process.pid, *descendants(self.process.pid)]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        self.process = None

    def __enter__(self) -> TestSshd:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
