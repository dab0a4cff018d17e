"""Headless Chromium driven over the DevTools protocol: a page at a window width, its screenshot
and what the browser measured (the document's scroll width against the window's).

The pages' Content-Security-Policy runs no script of theirs; the DevTools protocol's
`Runtime.evaluate` is the browser's own and is not bound by it. The protocol is spoken over the
websocket Chromium opens on 127.0.0.1 (port chosen by Chromium, read from DevToolsActivePort);
each wait is for the browser's answer or event, never for a time.
"""
from __future__ import annotations

import base64
import contextlib
import json
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass(frozen=True)
class Measured:
    width: int  # the window's (the layout viewport's) width
    scroll_width: int  # document.documentElement.scrollWidth: wider means a horizontal scrollbar
    overflowing: tuple[str, ...]  # elements whose right edge passes the window's, as tag.class: text


class Browser:
    """One headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, profile: Path, timeout: float = 120) -> None:
        executable = chromium()
        if executable is None:
            raise FileNotFoundError("no chromium")
        profile.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.timeout = timeout
        assert self.process.stderr is not None
        port = None
        for line in self.process.stderr:  # "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
            if b"DevTools listening on " in line:
                port = int(line.split(b"ws://127.0.0.1:", 1)[1].split(b"/", 1)[0])
                break
        if port is None:
            raise RuntimeError("chromium did not open its DevTools port")
        # the rest of its stderr is read and dropped, so a chatty browser never blocks on a full pipe
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as answer:
            page = next(target for target in json.load(answer) if target["type"] == "page")
        self._held = contextlib.ExitStack()
        self.socket: ClientConnection = self._held.enter_context(
            connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=timeout))
        self._next = 0
        self.call("Page.enable")

    def call(self, method: str, **params: Any) -> dict:
        """One protocol command and its result (the events that arrive first are passed over)."""
        self._next += 1
        number = self._next
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=self.timeout))
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, event: str) -> None:
        while json.loads(self.socket.recv(timeout=self.timeout)).get("method") != event:
            pass

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def measure(self, url: str, width: int, height: int, screenshot: Path | None = None) -> Measured:
        """The page at `width` x `height` CSS pixels: loaded, measured, and its screenshot saved."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        measured = self.evaluate("""(() => {
            const width = window.innerWidth;
            const over = [];
            for (const element of document.body.querySelectorAll('*')) {
                const box = element.getBoundingClientRect();
                if (box.right > width + 0.5) {
                    over.push(element.tagName.toLowerCase() + '.' + element.className + ': '
                              + (element.textContent || '').trim().slice(0, 60));
                }
            }
            return {width: width, scroll: document.documentElement.scrollWidth, over: over};
        })()""")
        if screenshot is not None:
            shot = self.call("Page.captureScreenshot", format="png")
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        return Measured(measured["width"], measured["scroll"], tuple(measured["over"]))

    def close(self) -> None:
        try:
            self._held.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
