"""Parse stage: MIME decoding of one RFC 822 message into headers, body text and attachments.

Pure: bytes in, a frozen DecodedMessage out. Charsets are tried as declared, then UTF-8,
then Windows-1252, and every fallback is recorded as a defect rather than raised.
"""
from __future__ import annotations

import codecs
import dataclasses
import email.errors
import email.header
import email.message
import email.parser
import email.policy
import email.utils
import re
from dataclasses import dataclass

from triagebot.parse.limits import (
    MAX_CHARSET_NAME,
    MAX_DECODED_BYTES,
    MAX_HEADER_BYTES,
    MAX_HEADER_DECODE_CHARS,
    MAX_HEADER_FIELD_BYTES,
    MAX_HEADER_FIELDS,
    MAX_MIME_DEPTH,
    MAX_MIME_LINES,
    MAX_PARTS,
)

# compat32 parsing is several times cheaper than policy.default and we decode parts ourselves.
_PARSER = email.parser.BytesParser(policy=email.policy.compat32)
_HEADERS_PARSER = email.parser.BytesHeaderParser(policy=email.policy.compat32)

MAX_ATTACHMENT_TEXT = 2_000_000  # characters kept of one attachment's text
_ANGLE_ID = re.compile(r"<([^<>\s]+)>")


@dataclass(frozen=True)
class DecodedAttachment:
    name: str | None
    content_type: str
    size: int
    text: str | None  # decoded text for text/* parts, None for binary parts


@dataclass(frozen=True)
class DecodedMessage:
    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    subject: str
    from_: str
    date: str | None
    body: str
    attachments: tuple[DecodedAttachment, ...]
    defects: tuple[str, ...]
    header_count: int


def decode_header_value(raw: str | None) -> str:
    """Decode RFC 2047 encoded words and unfold; never raises.

    The stdlib decoding is quadratic in the number of encoded words, so only the first
    MAX_HEADER_DECODE_CHARS characters are decoded (cut at a space, between words).
    """
    if raw is None:
        return ""
    text = str(raw)
    if len(text) > MAX_HEADER_DECODE_CHARS:
        cut = text.rfind(" ", 0, MAX_HEADER_DECODE_CHARS)
        text = text[:cut if cut > 0 else MAX_HEADER_DECODE_CHARS]
    if "=?" in text:
        try:
            text = str(email.header.make_header(email.header.decode_header(text)))
        except (email.errors.MessageError, LookupError, ValueError, TypeError):
            # ValueError includes UnicodeError (a charset such as "undefined"); MessageError
            # includes CharsetError (a charset name that is not ASCII, "=?\xf5tf-8?b?…?=")
            pass
    return " ".join(text.split())


def _header_str(message: email.message.Message, name: str) -> str | None:
    """A header's value as str: compat32 gives a Header object for 8-bit bytes in it. Of
    several Message-ID fields the last (public-inbox adds its own when a message reuses an
    id); of other fields the first."""
    if name.lower() == "message-id":
        values = message.get_all(name)
        value = values[-1] if values else None
    else:
        value = message.get(name)
    return None if value is None else str(value)


def strip_message_id(raw: str | None) -> str | None:
    """Message-ID without angle brackets; None when absent or empty."""
    if not raw:
        return None
    text = str(raw).strip()
    match = _ANGLE_ID.search(text)
    if match:
        return match.group(1)
    text = text.strip("<> \t")
    return text or None


def all_message_ids(raw: str | None) -> tuple[str, ...]:
    if not raw:
        return ()
    return tuple(_ANGLE_ID.findall(str(raw)))


def iso_date(raw: str | None) -> str | None:
    """RFC 2822 date as ISO 8601 with offset; None if it cannot be read."""
    if not raw:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(str(raw))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    return parsed.isoformat()


# Codecs that are no mail charset and are refused as one: "undefined" always raises, punycode and
# idna (domain names) decode in quadratic time, the escape codecs read backslashes as code.
_REFUSED_CODECS = frozenset({"undefined", "punycode", "idna", "unicode_escape", "raw_unicode_escape"})


def _usable_charset(name: str) -> bool:
    if len(name) > MAX_CHARSET_NAME or not name.isascii() or not name.isprintable():
        return False  # e.g. "utf-8\0": codec lookup raises ValueError on a NUL
    try:
        return codecs.lookup(name).name not in _REFUSED_CODECS
    except (LookupError, ValueError):
        return False


def decode_text(payload: bytes, declared: str | None) -> tuple[str, str | None]:
    """Bytes to text using the declared charset; returns (text, defect or None)."""
    candidates: list[str] = []
    if declared:
        candidates.append(declared.strip().strip('"').lower())
    if "utf-8" not in candidates:
        candidates.append("utf-8")
    for charset in candidates:
        if charset != "utf-8" and not _usable_charset(charset):
            continue
        try:
            text = payload.decode(charset)
        except (LookupError, ValueError):
            continue  # ValueError includes UnicodeDecodeError and a codec's own UnicodeError
        if charset == candidates[0] or declared is None:
            return text, None
        return text, f"charset {declared!r} did not decode the body; read as {charset}"
    # cp1252 maps nearly every byte; latin-1 maps all of them, so this always returns.
    for charset in ("cp1252", "latin-1"):
        try:
            text = payload.decode(charset)
        except UnicodeDecodeError:
            continue
        what = f"declared {declared!r}" if declared else "no charset declared"
        return text, f"{what} and not UTF-8; read as {charset}"
    return payload.decode("latin-1"), "undecodable body"  # pragma: no cover - latin-1 never fails


def _part_payload(part: email.message.Message, defects: list[str]) -> bytes:
    try:
        payload = part.get_payload(decode=True)
    except (ValueError, TypeError, AssertionError) as error:
        defects.append(f"payload could not be decoded: {error}")
        return b""
    if payload is None:
        return b""
    if isinstance(payload, str):  # pragma: no cover - compat32 returns bytes with decode=True
        return payload.encode("utf-8", "surrogateescape")
    return payload if isinstance(payload, bytes) else b""


def _filename(part: email.message.Message) -> str | None:
    """The part's file name; None when there is none or its RFC 2231 charset cannot decode it."""
    try:
        name = part.get_filename()
    except (LookupError, ValueError, TypeError):
        return None
    return None if name is None else str(name)


def _charset(part: email.message.Message) -> str | None:
    try:
        charset = part.get_content_charset()
    except (LookupError, ValueError, TypeError):
        return None
    return None if charset is None else str(charset)


def _is_attachment(part: email.message.Message) -> bool:
    disposition = (_header_str(part, "Content-Disposition") or "").lower()
    return disposition.startswith("attachment") or _filename(part) is not None


def _flatten(message: email.message.Message) -> tuple[list[email.message.Message], int]:
    """Every part in walk() order, without recursion, and the deepest nesting level."""
    parts: list[email.message.Message] = []
    deepest = 0
    stack = [(message, 0)]
    while stack:
        part, depth = stack.pop()
        parts.append(part)
        deepest = max(deepest, depth)
        if part.is_multipart():  # get_payload() of a leaf decodes it with its charset, which may raise
            children = part.get_payload()
            if isinstance(children, list):
                stack.extend((child, depth + 1) for child in reversed(children)
                             if isinstance(child, email.message.Message))
    return parts, deepest


def _defect_names(parts: list[email.message.Message]) -> list[str]:
    names = []
    for part in parts:
        for defect in getattr(part, "defects", []):
            names.append(type(defect).__name__)
    return names


def _header_end(raw: bytes) -> tuple[int, int]:
    """(end of the header block, start of the body); (len, len) when there is no blank line."""
    separator = raw.find(b"\n\n")
    crlf = raw.find(b"\r\n\r\n", 0, len(raw) if separator == -1 else separator + 1)
    if crlf != -1 and (separator == -1 or crlf < separator):
        return crlf, crlf + 4
    if separator != -1:
        return separator, separator + 2
    return len(raw), len(raw)


_NEXT_FIELD = re.compile(rb"\n(?=[^ \t])")  # a line break that starts a new field, not a continuation


def bound_header_block(raw: bytes) -> tuple[bytes, str | None]:
    """The message with its header block cut to MAX_HEADER_FIELDS fields of at most
    MAX_HEADER_FIELD_BYTES bytes each and MAX_HEADER_BYTES in all (the body untouched); the
    defect when anything was cut."""
    if len(raw) <= MAX_HEADER_FIELD_BYTES and raw.count(b"\n") < MAX_HEADER_FIELDS:
        return raw, None  # the usual case, decided without looking for the header block's end
    end, body_start = _header_end(raw)
    if end <= MAX_HEADER_FIELD_BYTES and raw.count(b"\n", 0, end) < MAX_HEADER_FIELDS:
        return raw, None
    kept: list[bytes] = []
    total = fields = field_bytes = 0
    cut = False
    position = 0
    while position < end:
        line_end = raw.find(b"\n", position, end)
        line_end = end if line_end == -1 else line_end + 1
        line = raw[position:line_end]
        position = line_end
        if line[:1] not in (b" ", b"\t"):
            fields += 1
            field_bytes = 0
            if fields > MAX_HEADER_FIELDS:
                cut = True
                break
        room = min(MAX_HEADER_FIELD_BYTES - field_bytes, MAX_HEADER_BYTES - total)
        if len(line) > room:
            cut = True
            line = line[:max(room, 0)].rstrip(b"\r\n")
            line = line + b"\n" if line else line
            # the field is full: its remaining continuation lines are passed over in one search,
            # not one by one (63 MB of folded lines took 46 s and 2.9 GB that way)
            next_field = _NEXT_FIELD.search(raw, position - 1, end) if position < end else None
            position = end if next_field is None else next_field.end()
        kept.append(line)
        field_bytes += len(line)
        total += len(line)
        if total >= MAX_HEADER_BYTES:
            cut = True
            break
    if not cut:
        return raw, None
    head = b"".join(kept).rstrip(b"\r\n")
    separator = raw[end:body_start] or b"\n\n"
    return (head + separator + raw[body_start:],
            f"header block over {MAX_HEADER_FIELDS} fields, {MAX_HEADER_FIELD_BYTES} bytes in a field "
            f"or {MAX_HEADER_BYTES} bytes in all; the rest cut")


_FAST_HEADERS = frozenset({
    "message-id", "in-reply-to", "references", "subject", "from", "date",
    "content-type", "content-transfer-encoding", "content-disposition"})
_CHARSET = re.compile(r"charset\s*=\s*\"?([^\";\s]+)", re.IGNORECASE)


def header_names(header_text: str) -> set[str] | None:
    """Lower-cased field names of a clean header block (fields and continuations only), else None."""
    names: set[str] = set()
    for line in header_text.split("\n"):
        first = line[:1]
        if first == " " or first == "\t":
            if not names:
                return None
            continue
        colon = line.find(":")
        if colon <= 0 or " " in line[:colon] or "\t" in line[:colon]:
            return None
        names.add(line[:colon].lower())
    return names


def _scan_header_block(header_text: str) -> tuple[dict[str, str], int] | None:
    """The wanted headers (first occurrence, unfolded) and the field count; None if not clean.

    A line loop, not regexes: list mail carries ~90 header lines (Received, DKIM, ARC) and
    this runs once per message of a year-long mbox.
    """
    values: dict[str, list[str]] = {}
    current: list[str] | None = None
    count = 0
    for line in header_text.split("\n"):
        first = line[:1]
        if first == " " or first == "\t":
            if count == 0:
                return None  # a continuation with no field to continue
            if current is not None:
                current.append(line)
            continue
        colon = line.find(":")
        if colon <= 0:
            return None
        name = line[:colon]
        if " " in name or "\t" in name:
            return None
        count += 1
        name = name.lower()
        # the last Message-ID field: public-inbox adds its own when a message reuses an id
        if name in _FAST_HEADERS and (name not in values or name == "message-id"):
            current = values[name] = [line[colon + 1:]]
        else:
            current = None
    return {name: " ".join(" ".join(parts).split()) for name, parts in values.items()}, count


def _decoded(header, body: str, attachments: tuple[DecodedAttachment, ...],
             defects: tuple[str, ...], header_count: int) -> DecodedMessage:
    """A DecodedMessage from a header lookup (case-insensitive name -> raw value or None)."""
    return DecodedMessage(
        message_id=strip_message_id(header("message-id")),
        in_reply_to=strip_message_id(header("in-reply-to")),
        references=all_message_ids(header("references")),
        subject=decode_header_value(header("subject")),
        from_=decode_header_value(header("from")),
        date=iso_date(header("date")),
        body=body,
        attachments=attachments,
        defects=defects,
        header_count=header_count,
    )


def fast_single_part(raw: bytes) -> DecodedMessage | None:
    """Most list mail is one text/plain part: read it without the feed parser, or return None."""
    separator = raw.find(b"\n\n")
    # CRLF mail has no bare "\n\n" before its own separator; only look that far, and only when a
    # carriage return comes before it (one byte is found far faster than four: most mail has none).
    end = len(raw) if separator == -1 else separator + 1
    crlf_separator = raw.find(b"\r\n\r\n", 0, end) if raw.find(b"\r", 0, end) != -1 else -1
    if crlf_separator != -1 and (separator == -1 or crlf_separator < separator):
        head, body = raw[:crlf_separator], raw[crlf_separator + 4:]
    elif separator != -1:
        head, body = raw[:separator], raw[separator + 2:]
    else:
        return None
    scanned = _scan_header_block(head.decode("utf-8", "replace").replace("\r\n", "\n"))
    if scanned is None:
        return None  # not a clean header block: let the full parser judge it
    headers, count = scanned
    content_type = headers.get("content-type", "text/plain").split(";", 1)[0].strip().lower()
    disposition = headers.get("content-disposition", "").lower()
    if content_type != "text/plain" or disposition.startswith("attachment"):
        return None
    encoding = headers.get("content-transfer-encoding", "").strip().lower()
    if encoding not in ("", "7bit", "8bit", "binary"):
        return None  # base64 and quoted-printable go through the full parser and its defects
    charset_match = _CHARSET.search(headers.get("content-type", ""))
    text, defect = decode_text(body, charset_match.group(1) if charset_match else None)
    return _decoded(headers.get, text.replace("\r\n", "\n").replace("\r", "\n"), (),
                    (defect,) if defect else (), count)


_BOUNDARY_PARAM = re.compile(rb'boundary\s*=\s*(?:"([^"\r\n]*)"|([^\s;"]+))', re.IGNORECASE)
_DELIMITER_LINE = re.compile(rb"^--([^\r\n]*)", re.MULTILINE)


def _boundary_depth(raw: bytes) -> int:
    """How deep multipart boundaries nest in the raw message, from its delimiter lines.

    Read before the stdlib parser, whose work per line grows with the open boundaries. A
    message naming "boundary" no more than MAX_MIME_DEPTH times cannot nest deeper: 0, unscanned.
    """
    if raw.lower().count(b"boundary") <= MAX_MIME_DEPTH:
        return 0  # too few declared to nest deeper (the count is cheaper than the regex)
    declared = {match.group(1) if match.group(1) is not None else match.group(2)
                for match in _BOUNDARY_PARAM.finditer(raw)}
    if len(declared) <= MAX_MIME_DEPTH:
        return len(declared)
    stack: list[bytes] = []
    deepest = 0
    for match in _DELIMITER_LINE.finditer(raw):
        token = match.group(1).rstrip(b" \t")
        closing = token.endswith(b"--") and token[:-2] in declared
        boundary = token[:-2] if closing else token
        if not closing and boundary not in declared:
            continue
        if boundary in stack:
            del stack[stack.index(boundary) + (0 if closing else 1):]  # inner parts end with it
        elif not closing:
            stack.append(boundary)
            deepest = max(deepest, len(stack))
            if deepest > MAX_MIME_DEPTH:
                break
    return deepest


def _bound_lines(raw: bytes) -> tuple[bytes, str | None]:
    """The message cut after its MAX_MIME_LINES-th line, and the defect when it was: the stdlib
    parser spends microseconds and a list entry on every line (a MIME part header folded over
    3 million lines took 10 s and 340 MB)."""
    if len(raw) <= MAX_MIME_LINES or raw.count(b"\n") <= MAX_MIME_LINES:
        return raw, None
    seen = position = 0
    step = 1 << 20
    while True:  # counted a megabyte at a time, then the cut found inside the last one
        lines = raw.count(b"\n", position, position + step)
        if seen + lines >= MAX_MIME_LINES:
            break
        seen += lines
        position += step
    for _ in range(MAX_MIME_LINES - seen):
        position = raw.index(b"\n", position) + 1
    return raw[:position], f"MIME message over {MAX_MIME_LINES:,} lines; the rest not read"


def decode_message(raw: bytes) -> DecodedMessage:
    """Decode one RFC 822 message (CRLF or LF) into headers, main text and attachments.

    Never raises: damage and every bound passed (see triagebot.parse.limits) become defects.
    """
    raw, cut = bound_header_block(raw)
    bounded = (cut,) if cut else ()
    fast = fast_single_part(raw)
    if fast is not None:
        return dataclasses.replace(fast, defects=bounded + fast.defects) if bounded else fast
    message = None
    raw, lines_cut = _bound_lines(raw)
    if lines_cut:
        bounded = (*bounded, lines_cut)
    if _boundary_depth(raw) <= MAX_MIME_DEPTH:
        try:
            message = _PARSER.parsebytes(raw)
        except RecursionError:  # it recurses once per nested part (message/rfc822 ~1,000 deep)
            pass
    parts, depth = _flatten(message) if message is not None else ([], MAX_MIME_DEPTH + 1)
    if message is None or depth > MAX_MIME_DEPTH:
        return _as_plain_text(raw, bounded + (
            f"MIME parts nested deeper than {MAX_MIME_DEPTH} levels; the body read as plain text",))
    defects: list[str] = list(bounded)
    for name in _defect_names(parts):
        if name in ("StartBoundaryNotFoundDefect", "CloseBoundaryNotFoundDefect"):
            defects.append(f"truncated multipart ({name})")
        elif name == "MissingHeaderBodySeparatorDefect":
            defects.append("no blank line between headers and body")
        elif name in ("InvalidBase64PaddingDefect", "InvalidBase64CharactersDefect",
                      "InvalidBase64LengthDefect"):
            defects.append(f"damaged base64 ({name})")
    body_parts: list[str] = []
    html_parts: list[str] = []
    attachments: list[DecodedAttachment] = []
    leaves = [part for part in parts if not part.is_multipart()]
    if len(leaves) > MAX_PARTS:
        defects.append(f"{len(leaves)} MIME parts; only the first {MAX_PARTS} read")
        del leaves[MAX_PARTS:]
    budget = MAX_DECODED_BYTES
    # a message of one text/plain part is its body unless it says `attachment`, a filename or not,
    # as fast_single_part reads it: the same mail reads the same in 7bit and in quoted-printable
    sole_text = not message.is_multipart() and message.get_content_type() == "text/plain" and not (
        (_header_str(message, "Content-Disposition") or "").lower().startswith("attachment"))
    for part in leaves:
        content_type = part.get_content_type()
        payload = _part_payload(part, defects)
        if len(payload) > budget:
            defects.append(f"decoded parts over {MAX_DECODED_BYTES} bytes; the rest cut")
            payload = payload[:budget]
        budget -= len(payload)
        charset = _charset(part)
        filename = _filename(part)
        if not sole_text and (_is_attachment(part) or (body_parts and content_type == "text/plain" and filename)):
            text = None
            size = len(payload)
            if part.get_content_maintype() == "text":
                # Text travels in CRLF canonical form; the size is that of the text, LF-ended,
                # so the same attachment has one size whatever the transport did to line ends.
                payload = payload.replace(b"\r\n", b"\n")
                size = len(payload)
                text, defect = decode_text(payload, charset)
                text = text[:MAX_ATTACHMENT_TEXT]
                if defect:
                    defects.append(f"attachment {filename!r}: {defect}")
            attachments.append(DecodedAttachment(filename, content_type, size, text))
            continue
        if content_type == "text/plain":
            text, defect = decode_text(payload, charset)
            if defect:
                defects.append(defect)
            body_parts.append(text)
        elif content_type == "text/html":
            text, defect = decode_text(payload, charset)
            html_parts.append(text)
        else:
            attachments.append(DecodedAttachment(None, content_type, len(payload), None))
    if body_parts:
        body = "\n".join(body_parts)
    elif html_parts:
        from triagebot.parse.html import html_to_text

        body, over = html_to_text(html_parts[0])
        defects.append("no text/plain part; text taken from HTML")
        if over:
            defects.append(over)
    else:
        body = ""
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    return _decoded(lambda name: _header_str(message, name), body, tuple(attachments),
                    tuple(dict.fromkeys(defects)), len(message.keys()))


def _as_plain_text(raw: bytes, defects: tuple[str, ...]) -> DecodedMessage:
    """The top-level headers, and everything after them read as one text body (no MIME)."""
    message = _HEADERS_PARSER.parsebytes(raw)
    _, body_start = _header_end(raw)
    text, defect = decode_text(raw[body_start:], None)
    return _decoded(lambda name: _header_str(message, name),
                    text.replace("\r\n", "\n").replace("\r", "\n"), (),
                    defects + ((defect,) if defect else ()), len(message.keys()))
