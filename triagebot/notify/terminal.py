"""Notify stage without Slack: the same payloads printed as readable text to a stream.

The embedded default when no token is configured. It takes exactly what SlackNotifier takes
(the render.py payloads), so the terminal shows the same content the channel would: headers
as underlined lines, sections and fields as text, Slack's ``<url|label>`` links as
``label (url)``, mrkdwn escapes undone. Message "ts" values are local counters.
"""
from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from triagebot.notify.render import STATE_EMOJI
from triagebot.notify.slack import Posted

_EMOJI = re.compile("|".join(re.escape(code) + " ?" for code in {*STATE_EMOJI.values(), ":warning:"}))
_LINK = re.compile(r"<([^<>|]+)\|([^<>]*)>|<([^<>|]+)>")
_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")  # *bold*, not a glob like fio.*


def plain(text: str) -> str:
    """mrkdwn as plain text: links spelled out, bold marks and escapes undone, our emoji dropped."""
    def spell(match: re.Match[str]) -> str:
        url, label, bare = match.group(1), match.group(2), match.group(3)
        if bare:
            return bare
        return f"{label} ({url})" if label != url else url

    text = _BOLD.sub(r"\1", _EMOJI.sub("", _LINK.sub(spell, text)))
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def payload_to_text(payload: dict[str, Any]) -> str:
    """One payload as lines of text; the ``text`` fallback when it has no blocks."""
    blocks = payload.get("blocks") or []
    if not blocks:
        return plain(payload.get("text") or "")
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            title = plain(block["text"]["text"])
            lines += [title, "=" * min(len(title), 100)]
        elif kind == "section":
            if block.get("text"):
                lines.append(plain(block["text"]["text"]).replace("```\n", "").replace("\n```", ""))
            for item in block.get("fields") or []:
                label, _, value = plain(item["text"]).partition("\n")
                lines.append(f"  {label.strip('*')}: {value.replace(chr(10), chr(10) + '    ')}")
        elif kind == "context":
            lines.append("  " + " ".join(plain(item.get("text", "")) for item in block["elements"]))
        elif kind == "divider":
            lines.append("-" * 40)
    return "\n".join(lines)


class TerminalNotifier:
    """Prints each notification to ``stream``; plots are written to ``plot_dir`` when given."""

    def __init__(self, stream: TextIO | None = None, plot_dir: Path | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.plot_dir = plot_dir
        self._counter = itertools.count(1)

    def _ts(self) -> str:
        return f"local.{next(self._counter):06d}"

    def _print(self, heading: str, payload: dict[str, Any]) -> None:
        body = payload_to_text(payload)
        self.stream.write(f"── {heading}\n{body}\n\n")
        self.stream.flush()

    def post_parent(self, channel: str, payload: dict[str, Any]) -> str:
        ts = self._ts()
        self._print(f"{channel} · new report [{ts}]", payload)
        return ts

    def post_reply(self, channel: str, thread_ts: str, payload: dict[str, Any]) -> str:
        ts = self._ts()
        self._print(f"{channel} · reply to [{thread_ts}]", payload)
        return ts

    def update_parent(self, channel: str, ts: str, payload: dict[str, Any]) -> None:
        self._print(f"{channel} · updated [{ts}]", payload)

    def post(self, channel: str, payload: dict[str, Any], *, thread_ts: str | None = None,
             key: str | None = None) -> Posted:
        if thread_ts:
            return Posted(channel, self.post_reply(channel, thread_ts, payload))
        return Posted(channel, self.post_parent(channel, payload))

    def upload(self, channel: str, thread_ts: str, png: bytes, title: str, key: str) -> Posted:
        return Posted(channel, self.upload_plot(channel, thread_ts, png, title))

    def find(self, channel: str, key: str, *, thread_ts: str | None = None,
             file_name: str | None = None) -> Posted | None:
        """A terminal cannot be read back: a notification in doubt after a crash is printed again."""
        return None

    def upload_plot(self, channel: str, thread_ts: str, png: bytes, title: str) -> str:
        ts = self._ts()
        where = f"{len(png)} bytes, not saved (no plot directory)"
        if self.plot_dir is not None:
            self.plot_dir.mkdir(parents=True, exist_ok=True)
            path = self.plot_dir / f"{thread_ts.replace('.', '-')}-{ts.replace('.', '-')}.png"
            path.write_bytes(png)
            where = str(path)
        self.stream.write(f"── {channel} · plot in [{thread_ts}]\n{title}: {where}\n\n")
        self.stream.flush()
        return ts
