"""Parse stage: MIME decoding of one RFC 822 message into headers, body text and attachments.

Pure: bytes in, a frozen DecodedMessage out. Charsets are tried as declared, then UTF-8,
then Windows-1252, and every fallback is recorded as a defect rather than raised.
"""
from __future__ import annotations

import email.errors
import email.header
import email.message
import email.parser
import email.policy
import email.utils
import re
from dataclasses import dataclass

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
    list_id: str | None
    body: str
    attachments: tuple[DecodedAttachment, ...]
    defects: tuple[str, ...]
    header_count: int


def decode_header_value(raw: str | None) -> str:
    """Decode RFC 2047 encoded words and unfold; never raises."""
    if raw is None:
        return ""
    text = str(raw)
    if "=?" in text:
        try:
            text = str(email.header.make_header(email.header.decode_header(text)))
        except (email.errors.HeaderParseError, LookupError, UnicodeError, ValueError):
            pass
    return " ".join(text.split())


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


def decode_text(payload: bytes, declared: str | None) -> tuple[str, str | None]:
    """Bytes to text using the declared charset; returns (text, defect or None)."""
    candidates: list[str] = []
    if declared:
        candidates.append(declared.strip().strip('"').lower())
    if "utf-8" not in candidates:
        candidates.append("utf-8")
    for charset in candidates:
        try:
            text = payload.decode(charset)
        except LookupError:
            continue
        except UnicodeDecodeError:
            continue
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
    return payload


def _is_attachment(part: email.message.Message) -> bool:
    disposition = (part.get("Content-Disposition") or "").lower()
    return disposition.startswith("attachment") or part.get_filename() is not None


def _defect_names(message: email.message.Message) -> list[str]:
    names = []
    for part in message.walk():
        for defect in getattr(part, "defects", []):
            names.append(type(defect).__name__)
    return names


_FAST_HEADERS = frozenset({
    "message-id", "in-reply-to", "references", "subject", "from", "date", "list-id",
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
        if name in _FAST_HEADERS and name not in values:
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
        list_id=strip_message_id(header("list-id")),
        body=body,
        attachments=attachments,
        defects=defects,
        header_count=header_count,
    )


def _fast_single_part(raw: bytes) -> DecodedMessage | None:
    """Most list mail is one text/plain part: read it without the feed parser, or return None."""
    separator = raw.find(b"\n\n")
    # CRLF mail has no bare "\n\n" before its own separator; only look that far.
    crlf_separator = raw.find(b"\r\n\r\n", 0, len(raw) if separator == -1 else separator + 1)
    if crlf_separator != -1 and (separator == -1 or crlf_separator < separator):
        head, body = raw[:crlf_separator], raw[crlf_separator + 4:]
    elif separator != -1:
        head, body = raw[:separator], raw[separator + 2:]
    else:
        return None
    header_text = head.decode("utf-8", "replace").replace("\r\n", "\n")
    scanned = _scan_header_block(header_text)
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


def decode_message(raw: bytes) -> DecodedMessage:
    """Decode one RFC 822 message (CRLF or LF) into headers, main text and attachments."""
    fast = _fast_single_part(raw)
    if fast is not None:
        return fast
    message = _PARSER.parsebytes(raw)
    defects: list[str] = []
    for name in _defect_names(message):
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
    for part in message.walk():
        if part.is_multipart():
            continue
        content_type = part.get_content_type()
        payload = _part_payload(part, defects)
        charset = part.get_content_charset()
        if _is_attachment(part) or (body_parts and content_type == "text/plain"
                                    and part.get_filename()):
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
                    defects.append(f"attachment {part.get_filename()!r}: {defect}")
            attachments.append(DecodedAttachment(part.get_filename(), content_type, size, text))
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

        body = html_to_text(html_parts[0])
        defects.append("no text/plain part; text taken from HTML")
    else:
        body = ""
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    return _decoded(message.get, body, tuple(attachments), tuple(dict.fromkeys(defects)),
                    len(message.keys()))


def peek_headers(raw: bytes) -> email.message.Message:
    """Headers only, for the cheap first look at a message."""
    return _HEADERS_PARSER.parsebytes(raw)
