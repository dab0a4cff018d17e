"""A real public-inbox HTTP server on 127.0.0.1 for integration tests.

The Debian package ``public-inbox`` (``apt-get install public-inbox``) provides the programs
used here; nothing is mocked.  A server is built from scratch inside a temporary directory:

1. ``public-inbox-init -V2 -L full -j1 -c filter=PublicInbox::Filter::Mirror
   [-c feedmax=N] LIST INBOX_DIR http://127.0.0.1/LIST ADDRESS`` creates a v2 inbox, with
   ``HOME``, ``PI_CONFIG``, ``PI_EMERGENCY`` and the ``XDG_*`` directories all pointing
   inside the temporary directory (the real home is never read or written), and then
   ``[publicinboxmda] spamcheck = none`` is appended to that ``PI_CONFIG``;
2. every message is piped to ``ORIGINAL_RECIPIENT=ADDRESS public-inbox-mda --no-precheck``
   (``--no-precheck`` because list mail is often not addressed To/Cc the inbox address;
   the ``Mirror`` filter because -mda's default filter rejects HTML/image parts);
3. ``public-inbox-index INBOX_DIR`` indexes it (v2 -mda already indexes on delivery, so this
   is a cheap consistency pass);
4. ``public-inbox-httpd -W0 -l http://127.0.0.1:PORT`` serves it, in its own process group,
   on a port the OS picked as free (if another process grabs it first the start is retried on
   a new port); readiness is a ``200`` from ``/LIST/new.atom`` within ``startup_timeout``
   (20 s), otherwise :class:`PublicInboxError` carries the httpd log.

Usage from any test file::

    from tests.support.public_inbox import (
        load_eml_dir, make_message, public_inbox, start_public_inbox)  # noqa: F401

    def test_feed(public_inbox):                     # the fixture: a factory, torn down for you
        server = public_inbox("linux-ext4", [make_message("hi", "body\\n")])
        requests.get(server.list_url + "new.atom")   # base_url = http://127.0.0.1:PORT
        mid = server.add_message(make_message("a reply", "+1\\n", in_reply_to=...))
        server.stop(); ...; server.start()           # down and back up on the same port

    @pytest.fixture(scope="module")                  # or share one server across a module
    def lore(tmp_path_factory):
        with start_public_inbox(tmp_path_factory.mktemp("pi"), "linux-ext4",
                                load_eml_dir(require_corpus(), limit=20)) as server:
            yield server

:func:`start_public_inbox` (and the fixture) ``pytest.skip`` with "public-inbox not installed:
apt-get install public-inbox" when the programs are missing.  :class:`PublicInboxServer` can
also be used directly as a context manager.  Processes are always reaped: :meth:`stop`
SIGTERMs then SIGKILLs the whole process group (httpd and its ``git cat-file`` children)
and waits until the port refuses connections; an ``atexit`` hook stops anything left over.

What public-inbox does to messages (so tests compare the right things):

* Messages without a ``Message-ID`` are *not* skipped: public-inbox assigns one
  (``<YYYYMMDDhhmmss.BASE64DIGEST@z>``, from the Date and a content digest) and appends it as
  a ``Message-ID:`` header.  A different message reusing a known Message-ID gets such an id
  too.  Re-delivering byte-identical content is dropped as a duplicate.
  :meth:`PublicInboxServer.deliver` returns the id the message is actually served under.
* -mda drops ``Delivered-To``, ``X-Original-To``, ``Approved``/``Approve``/``X-Approved``/
  ``X-Approve``, ``Urgent``, ``Return-Receipt-To``, ``Disposition-Notification-To``,
  ``X-Confirm-Reading-To``, ``X-PMRQC``, ``Bytes``, ``Lines``, ``Content-Length``,
  ``Status`` and ``X-Status``; it adds ``List-Id: <ADDRESS with @ as .>`` (e.g.
  ``<linux-ext4.vger.kernel.org>``) after the other headers when the message has none; a leading
  mbox ``From `` line is stripped.
* ``/LIST/MSGID/raw`` and ``t.mbox.gz`` are *mboxrd*: each message starts with
  ``From mboxrd@z Thu Jan  1 00:00:00 1970``, body lines matching ``^>*From `` get one more
  ``>``, and a blank line is appended.  :func:`mboxrd_unescape` undoes that for one message,
  :func:`split_mboxrd` splits a (gunzipped) ``t.mbox.gz``.
* ``new.atom`` holds the newest ``feedmax`` (default 25) messages ordered by the date of the
  *topmost parseable ``Received:`` header* (falling back to ``Date:``), newest first -- not by
  arrival.  A message added later with an older date is not first, and may not be in the
  feed at all.  Entry ``<id>`` is ``urn:uuid:`` + the first 32 hex digits of
  ``sha1(msgid without <>)`` grouped 8-4-4-4-12 (:func:`atom_entry_id`); the entry
  ``<link href>`` is ``http://HOST/LIST/ESCAPED_MSGID/`` (:func:`msgid_path`); the feed has
  no ETag/Last-Modified.
"""
from __future__ import annotations

import atexit
import email.utils
import hashlib
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from email.parser import BytesHeaderParser
from email.policy import compat32
from pathlib import Path

import pytest

PROGRAMS = ("public-inbox-init", "public-inbox-mda", "public-inbox-index", "public-inbox-httpd")
SKIP_REASON = "public-inbox not installed: apt-get install public-inbox"
STARTUP_TIMEOUT = 20.0

# characters public-inbox leaves unescaped in Message-ID URL paths (PublicInbox::MID::MID_ESC)
_MID_SAFE = "!$&'()*+,;=:@"
_MID_RE = re.compile(rb"<([^>]+)>")


class PublicInboxError(RuntimeError):
    """A public-inbox program failed; the message includes its output."""


def missing_programs() -> list[str]:
    return [p for p in PROGRAMS if shutil.which(p) is None]


def require_public_inbox() -> None:
    """``pytest.skip`` unless the public-inbox programs are on PATH."""
    missing = missing_programs()
    if missing:
        pytest.skip(f"{SKIP_REASON} (missing: {', '.join(missing)})")


# ---------------------------------------------------------------------------------------------
# message helpers


def message_id_of(raw: bytes) -> str | None:
    """The first ``<...>`` of the Message-ID header, without brackets (public-inbox's choice)."""
    headers = BytesHeaderParser(policy=compat32).parsebytes(raw)
    value = headers.get("Message-ID")
    if value is None:
        return None
    found = _MID_RE.search(str(value).encode("utf-8", "surrogateescape"))
    if found:
        return found.group(1).decode("utf-8", "surrogateescape").strip()
    return str(value).strip() or None


def msgid_path(msgid: str) -> str:
    """The URL path segment public-inbox uses for a Message-ID (``/`` becomes ``%2F`` etc.)."""
    return urllib.parse.quote(msgid.strip().strip("<>"), safe=_MID_SAFE)


def atom_entry_id(msgid: str) -> str:
    """The ``<id>`` of a message's new.atom entry."""
    h = hashlib.sha1(msgid.strip().strip("<>").encode("utf-8")).hexdigest()
    return f"urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def mboxrd_unescape(data: bytes) -> bytes:
    """One message from ``/raw``: drop the ``From mboxrd@z`` line, the appended blank line and
    one ``>`` of each ``>From `` body line (headers never carry such lines)."""
    if data.startswith(b"From "):
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""
    if data.endswith(b"\n\n"):
        data = data[:-1]
    return re.sub(rb"(?m)^>(>*From )", rb"\1", data)


MBOXRD_FROM = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"


def split_mboxrd(data: bytes) -> list[bytes]:
    """The messages of a public-inbox mboxrd (``raw``, ``t.mbox.gz`` after gunzip), each
    unescaped with :func:`mboxrd_unescape`.  (public-inbox writes ``\n`` line ends.)"""
    if not data:
        return []
    if not data.startswith(MBOXRD_FROM):
        raise ValueError("not a public-inbox mboxrd: no leading 'From mboxrd@z' line")
    parts = data.split(b"\n" + MBOXRD_FROM)
    # the split ate the blank line public-inbox appends after every message but the last
    chunks = [p + b"\n" for p in parts[:-1]] + parts[-1:]
    return [mboxrd_unescape(c if c.startswith(MBOXRD_FROM) else MBOXRD_FROM + c)
            for c in chunks]


def load_eml_dir(directory: Path | str, limit: int | None = None,
                 names: Iterable[str] = ()) -> list[bytes]:
    """Raw bytes of ``names`` (in that order) followed by the other ``*.eml`` files, sorted.

    Only ``*.eml`` is read (the corpus's ``paste_*.txt`` are web-page text, not mail);
    ``limit`` caps the total."""
    directory = Path(directory)
    chosen = [directory / n for n in names]
    seen = {p.name for p in chosen}
    chosen += [p for p in sorted(directory.glob("*.eml")) if p.name not in seen]
    if limit is not None:
        chosen = chosen[:limit]
    return [p.read_bytes() for p in chosen]


def make_message(subject: str, body: str, *, msgid: str | None = None,
                 in_reply_to: str | None = None, references: Iterable[str] = (),
                 date: datetime | str | None = None,
                 sender: str = "Test Sender <sender@example.org>",
                 to: str = "linux-ext4@vger.kernel.org",
                 extra_headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """A small plain-text message.  ``msgid=""`` leaves the Message-ID header out.

    ``date`` defaults to now; give messages distinct dates when feed order matters
    (new.atom sorts by date, ties are unordered)."""
    if date is None:
        date = datetime.now(UTC)
    if isinstance(date, datetime):
        date = email.utils.format_datetime(date)
    if msgid is None:
        msgid = email.utils.make_msgid(domain="example.org")[1:-1]
    lines = [f"From: {sender}", f"To: {to}", f"Subject: {subject}", f"Date: {date}"]
    if msgid:
        lines.append(f"Message-ID: <{msgid.strip('<>')}>")
    refs = [r.strip("<>") for r in references]
    if in_reply_to:
        irt = in_reply_to.strip("<>")
        lines.append(f"In-Reply-To: <{irt}>")
        if irt not in refs:
            refs.append(irt)
    if refs:
        lines.append("References: " + " ".join(f"<{r}>" for r in refs))
    lines += [f"{k}: {v}" for k, v in extra_headers]
    lines += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8",
              "Content-Transfer-Encoding: 8bit"]
    if not body.endswith("\n"):
        body += "\n"
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# process helpers

_LIVE: set[PublicInboxServer] = set()  # servers with a running httpd (strong refs)


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE):
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _proc_state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (``Z`` for a zombie), None if gone or unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, via /proc."""
    members = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the group led by ``proc``, SIGKILL what is left, reap, wait for the rest."""
    pgid = proc.pid  # start_new_session=True: the leader's pid is the group id
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    have_proc = Path(f"/proc/{proc.pid}").exists()
    while time.monotonic() < deadline:
        if have_proc:
            if _proc_state(proc.pid) in (None, "Z"):
                break
        elif proc.poll() is not None:
            break
        time.sleep(0.02)
    # The leader is unreaped (a zombie at worst), so the group id cannot have been reused.
    _signal_group(pgid, signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while _group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _AddressInUse(PublicInboxError):
    pass


# ---------------------------------------------------------------------------------------------
# the server


class PublicInboxServer:
    """A v2 inbox ``list_name`` under ``root`` served by ``public-inbox-httpd`` on 127.0.0.1.

    ``with PublicInboxServer(root, "linux-ext4", messages) as server:`` builds the inbox,
    delivers and indexes ``messages`` and starts the server; leaving the block stops it.
    """

    def __init__(self, root: Path | str, list_name: str, messages: Iterable[bytes] = (), *,
                 address: str | None = None, feedmax: int | None = None,
                 indexlevel: str = "full", port: int | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", list_name):
            raise ValueError(f"unusable inbox name: {list_name!r}")
        self.root = Path(root).resolve()
        self.list_name = list_name
        self.address = address or f"{list_name}@vger.kernel.org"
        self.feedmax = feedmax
        self.indexlevel = indexlevel
        self.startup_timeout = startup_timeout
        self._initial = list(messages)
        self._port_pinned = port is not None
        self.port: int | None = port
        self.home = self.root / "home"
        self.pi_config = self.home / ".public-inbox" / "config"
        self.inbox_dir = self.root / "inboxes" / list_name
        self.log_path = self.root / "httpd.log"
        self.message_ids: list[str] = []   # served ids, in delivery order
        self.duplicates: list[str] = []    # deliveries public-inbox dropped as identical
        self._proc: subprocess.Popen | None = None
        self._served = False  # the current httpd answered on self.port
        self._log_start = 0
        self._created = False

    # -- URLs ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise PublicInboxError("the server has not been started yet")
        return f"http://127.0.0.1:{self.port}"

    @property
    def list_url(self) -> str:
        return f"{self.base_url}/{self.list_name}/"

    @property
    def atom_url(self) -> str:
        return self.list_url + "new.atom"

    def message_url(self, msgid: str) -> str:
        return self.list_url + msgid_path(msgid) + "/"

    def raw_url(self, msgid: str) -> str:
        return self.message_url(msgid) + "raw"

    def thread_mbox_url(self, msgid: str) -> str:
        return self.message_url(msgid) + "t.mbox.gz"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> PublicInboxServer:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> PublicInboxServer:
        """Create the inbox (once), deliver and index the initial messages, start httpd."""
        try:
            if not self._created:
                self.create()
                for raw in self._initial:
                    self.deliver(raw)
                self._initial = []
                self.index()
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def close(self) -> None:
        self.stop()

    def create(self) -> None:
        missing = missing_programs()
        if missing:
            raise PublicInboxError(f"{SKIP_REASON} (missing: {', '.join(missing)})")
        for d in (self.home / ".public-inbox" / "emergency", self.home / ".config",
                  self.home / ".cache", self.home / ".local" / "share", self.inbox_dir.parent):
            d.mkdir(parents=True, exist_ok=True)
        cmd = ["public-inbox-init", "-V2", "-L", self.indexlevel, "-j1",
               "-c", "filter=PublicInbox::Filter::Mirror"]
        if self.feedmax is not None:
            cmd += ["-c", f"feedmax={int(self.feedmax)}"]
        cmd += [self.list_name, str(self.inbox_dir), f"http://127.0.0.1/{self.list_name}",
                self.address]
        self._run(cmd)
        with self.pi_config.open("a") as f:
            f.write("[publicinboxmda]\n\tspamcheck = none\n")
        self._created = True

    def env(self) -> dict[str, str]:
        """The environment every public-inbox program runs with (isolated HOME/PI_CONFIG)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GIT_", "PI_", "LISTEN_", "XDG_", "ORIGINAL_RECIPIENT"))}
        env.update(
            HOME=str(self.home),
            PI_CONFIG=str(self.pi_config),
            PI_EMERGENCY=str(self.home / ".public-inbox" / "emergency"),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            GIT_CONFIG_NOSYSTEM="1",
            LC_ALL="C",
            TZ="UTC",
        )
        return env

    def _run(self, cmd: list[str], data: bytes | None = None,
             extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        env = self.env()
        env.update(extra_env or {})
        try:
            res = subprocess.run(cmd, input=data, capture_output=True, env=env, cwd=self.root,
                                 timeout=120, check=False)
        except FileNotFoundError as e:
            raise PublicInboxError(f"{SKIP_REASON}: {e}") from e
        if res.returncode != 0:
            raise PublicInboxError(
                f"{' '.join(cmd)} exited with {res.returncode}:\n"
                f"{res.stderr.decode(errors='replace')}{res.stdout.decode(errors='replace')}")
        return res

    # -- content ---------------------------------------------------------------------------

    def _max_num(self) -> int:
        with self._msgmap() as db:
            row = db.execute("SELECT MAX(num) FROM msgmap").fetchone()
        return row[0] or 0

    def _msgmap(self) -> sqlite3.Connection:
        path = self.inbox_dir / "msgmap.sqlite3"
        return _closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30))

    def deliver(self, raw: bytes) -> str:
        """Pipe one message to public-inbox-mda; return the Message-ID it is served under."""
        if not self._created:
            raise PublicInboxError("deliver() before the inbox exists: use open() or `with`")
        before = self._max_num()
        self._run(["public-inbox-mda", "--no-precheck"], data=raw,
                  extra_env={"ORIGINAL_RECIPIENT": self.address})
        with self._msgmap() as db:
            rows = db.execute("SELECT mid FROM msgmap WHERE num > ? ORDER BY num",
                              (before,)).fetchall()
        if rows:
            mid = rows[-1][0]
            self.message_ids.append(mid)
            return mid
        mid = message_id_of(raw)
        if mid is None:
            raise PublicInboxError("public-inbox-mda stored nothing for a message without "
                                   "a Message-ID")
        self.duplicates.append(mid)
        return mid

    def bulk_add(self, messages: Iterable[bytes]) -> list[str]:
        """Add many messages at once (the server may be running); their Message-IDs, in order.

        One ``-mda`` run per message costs a Perl start each (minutes for a thousand), so this
        writes them the way a v2 inbox stores mail -- one commit per message replacing the file
        ``m`` on ``master`` of the newest epoch (``git/N.git``) -- with one ``git fast-import``,
        then runs ``public-inbox-index`` once, which indexes them (Xapian too, at
        ``indexlevel`` full/medium) as it would after ``-mda``.  Unlike ``-mda`` nothing is
        filtered or rewritten, so each message must carry its own unique ``Message-ID``."""
        if not self._created:
            raise PublicInboxError("bulk_add() before the inbox exists: use open() or `with`")
        messages = list(messages)
        epochs = sorted((self.inbox_dir / "git").glob("*.git"),
                        key=lambda p: int(p.name.split(".")[0]))
        git_dir = epochs[-1]
        head = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "--verify",
                               "-q", "refs/heads/master"], capture_output=True, env=self.env(),
                              check=False).stdout.strip().decode()
        stream: list[bytes] = []
        ids = []
        now = int(time.time())
        for number, raw in enumerate(messages):
            mid = message_id_of(raw)
            if mid is None:
                raise PublicInboxError("bulk_add() needs a Message-ID in every message")
            ids.append(mid)
            stream += [b"commit refs/heads/master\n",
                       f"committer T <t@example.org> {now} +0000\n".encode(),
                       b"data 0\n"]
            if number == 0 and head:
                stream.append(f"from {head}\n".encode())
            stream += [b"M 100644 inline m\n", f"data {len(raw)}\n".encode(), raw, b"\n"]
        self._run(["git", "--git-dir", str(git_dir), "fast-import", "--quiet"],
                  data=b"".join(stream))
        self.index()
        self.message_ids += ids
        return ids

    def index(self) -> None:
        self._run(["public-inbox-index", str(self.inbox_dir)])

    def add_message(self, raw: bytes) -> str:
        """Deliver and index ``raw`` (the server may be running); return its served id."""
        mid = self.deliver(raw)
        self.index()
        return mid

    # -- httpd -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start httpd (on the same port as before, if it ran before) and wait until ready."""
        if self.running:
            return
        if not self._created:
            raise PublicInboxError("start() before the inbox exists: use open() or `with`")
        attempts = 1 if self.port is not None else 5
        for attempt in range(attempts):
            port = self.port if self.port is not None else _free_port()
            try:
                self._spawn(port)
                self._wait_ready(port)
            except _AddressInUse:
                self.stop()
                if attempt + 1 == attempts or self.port is not None:
                    raise
                continue
            except BaseException:
                self.stop()
                raise
            self.port = port
            self._served = True
            return

    def _spawn(self, port: int) -> None:
        self.log_path.touch()
        self._log_start = self.log_path.stat().st_size
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                ["public-inbox-httpd", "-W0", "-l", f"http://127.0.0.1:{port}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.env(), cwd=self.root, start_new_session=True, close_fds=True)
        _LIVE.add(self)

    def log(self) -> str:
        """What httpd wrote since it was last started."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(self._log_start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _wait_ready(self, port: int) -> None:
        url = f"http://127.0.0.1:{port}/{self.list_name}/new.atom"
        deadline = time.monotonic() + self.startup_timeout
        last: object = None
        while True:
            assert self._proc is not None
            rc = self._proc.poll()
            if rc is not None:
                log = self.log()
                cls = _AddressInUse if "in use" in log.lower() else PublicInboxError
                raise cls(f"public-inbox-httpd exited with {rc} before serving {url}; "
                          f"its log ({self.log_path}):\n{log}")
            try:
                with _NO_PROXY.open(url, timeout=2) as resp:
                    resp.read()
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
            except OSError as e:
                last = e
            if time.monotonic() > deadline:
                raise PublicInboxError(
                    f"public-inbox-httpd did not serve {url} within {self.startup_timeout:g} s "
                    f"(last answer: {last}); its log ({self.log_path}):\n{self.log()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill httpd's process group, reap it, and wait until the port refuses connections."""
        proc, self._proc = self._proc, None
        served, self._served = self._served, False
        _LIVE.discard(self)
        if proc is None:
            return
        _terminate_group(proc)
        if served and self.port is not None:
            deadline = time.monotonic() + 5
            while _port_open(self.port):
                if time.monotonic() > deadline:
                    raise PublicInboxError(f"port {self.port} still accepts connections after "
                                           "public-inbox-httpd was stopped")
                time.sleep(0.05)


class _closing:
    """``with`` for a sqlite3 connection that closes it (sqlite3's own only commits)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


# ---------------------------------------------------------------------------------------------
# pytest entry points


def start_public_inbox(tmp_path: Path | str, list_name: str, messages: Iterable[bytes] = (),
                       **kwargs) -> PublicInboxServer:
    """Build, fill and start a server under ``tmp_path`` (skips if public-inbox is missing).

    The caller stops it (``server.close()``, or use the result in a ``with`` block); the
    ``public_inbox`` fixture does that for you."""
    require_public_inbox()
    return PublicInboxServer(tmp_path, list_name, messages, **kwargs).open()


@pytest.fixture
def public_inbox(tmp_path: Path) -> Iterator[Callable[..., PublicInboxServer]]:
    """Factory fixture: ``public_inbox(list_name="linux-ext4", messages=(), **kwargs)``
    returns a started :class:`PublicInboxServer`; all are stopped at teardown."""
    servers: list[PublicInboxServer] = []

    def factory(list_name: str = "linux-ext4", messages: Iterable[bytes] = (),
                **kwargs) -> PublicInboxServer:
        root = tmp_path / f"public-inbox-{len(servers)}"
        server = start_public_inbox(root, list_name, messages, **kwargs)
        servers.append(server)
        return server

    try:
        yield factory
    finally:
        for server in reversed(servers):
            server.close()
