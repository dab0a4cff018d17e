"""`--plot FILE` of `triage rerun` and `triage verdict`: the samples plot the team sees on Slack
(notify/plot.py), written as a PNG file. The path is checked before any work; the file is
written whole (a temporary file beside it, then renamed) or not at all."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from triagebot.errors import TriageError


def check_plot_path(path: str) -> None:
    """TriageError when FILE cannot be written: a directory, or a folder that is missing or read-only."""
    target = Path(path)
    if target.is_dir():
        raise TriageError(f"--plot {path}: is a directory; give a file name such as {target / 'samples.png'}")
    folder = target.parent
    if not folder.is_dir():
        raise TriageError(f"--plot {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise TriageError(f"--plot {path}: the folder {folder} is not writable")


def write_plot(path: str, run: dict[str, Any]) -> None:
    """The stored run's samples plot (an 800x450 PNG) to `path`, whole or not at all."""
    from triagebot.notify.plot import run_plot

    data = run_plot(run)
    target = Path(path)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            os.fchmod(handle, 0o644)
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        raise TriageError(f"--plot {path}: cannot write it: {error.strerror or error}") from None
