"""A stand-in for kexec-tools' `kexec` on the tests' SSH host: the one step a test machine cannot
take is booting into another kernel, so this program does everything around it and pretends it.

    kexec -l IMAGE [--reuse-cmdline] [--initrd=FILE]   reads IMAGE's kernel release from its
                                                       x86 boot header (a real bzImage's), and
                                                       remembers it as the loaded kernel
    kexec -e                                          "boots" it: the host's running-kernel file
                                                       says the loaded release from now on, and the
                                                       SSH session is cut (killed) as a reboot cuts it

`install(directory)` writes it as an executable `kexec` in `directory`, with its state files
(loaded, running, calls) beside it; `running` starts as OLD_RELEASE.
"""
from __future__ import annotations

import os
import signal
import struct
import sys
from pathlib import Path

OLD_RELEASE = "6.1.0-the-old-kernel"


def release_of(image: bytes) -> str:
    """The kernel release in a bzImage's boot header (the `kernel_version` string); ValueError if none."""
    if len(image) < 0x210 or image[0x202:0x206] != b"HdrS":
        raise ValueError("not a bzImage (no HdrS boot header)")
    (offset,) = struct.unpack_from("<H", image, 0x20E)
    start = 0x200 + offset
    end = image.index(b"\0", start)
    return image[start:end].decode("ascii", "replace").split()[0]


def _session_of(pid: int) -> int | None:
    """The sshd process serving this command (the nearest ancestor named sshd)."""
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name.startswith("sshd"):
            return pid
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return None


def main(state: Path, argv: list[str]) -> int:
    with open(state / "calls", "a") as calls:
        calls.write(" ".join(argv) + "\n")
    if argv[:1] == ["-l"] and len(argv) >= 2:
        try:
            release = release_of(Path(argv[1]).read_bytes())
        except (OSError, ValueError) as error:
            print(f"kexec: cannot load {argv[1]}: {error}", file=sys.stderr)
            return 1
        (state / "loaded").write_text(release + "\n")
        return 0
    if argv == ["-e"]:
        loaded = state / "loaded"
        if not loaded.is_file():
            print("kexec: no kernel loaded", file=sys.stderr)
            return 1
        (state / "running").write_text(loaded.read_text())
        session = _session_of(os.getppid())
        if session is not None:
            os.kill(session, signal.SIGKILL)  # the connection drops, as in a reboot
        return 0
    print(f"kexec stand-in: unsupported {argv}", file=sys.stderr)
    return 2


def install(directory: Path) -> Path:
    """An executable `kexec` in `directory` running this module with its state there."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "running").write_text(OLD_RELEASE + "\n")
    program = directory / "kexec"
    program.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(Path(__file__).parents[2])!r})\n"
                       "from pathlib import Path\nfrom tests.support.kexec_standin import main\n"
                       f"sys.exit(main(Path({str(directory)!r}), sys.argv[1:]))\n")
    program.chmod(0o755)
    return program
