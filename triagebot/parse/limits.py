"""Parse stage: the bounds on one message's work, each a named constant.

Anything past a bound is dropped or cut and recorded in the record's `defects`; the record
still comes out. The values sit well above anything seen on the lists (the shared corpus has
78 header fields, a 15 KB header block and 2,000-character lines at most).
"""
from __future__ import annotations

MAX_HEADER_FIELDS = 1_000  # header fields kept of one message (or MIME part header block)
MAX_HEADER_FIELD_BYTES = 64 * 1024  # bytes kept of one header field, continuation lines included
MAX_HEADER_BYTES = 256 * 1024  # bytes of the top-level header block kept
MAX_HEADER_DECODE_CHARS = 8_192  # characters of one Subject/From given to RFC 2047 decoding (quadratic)
# Nested multipart / message parts; deeper mail is read as plain text. The stdlib parser
# checks every line against each open boundary, so its work is lines x depth.
MAX_MIME_DEPTH = 16
# Lines of a MIME (not single-part) message given to the stdlib parser, which spends about 3 µs
# and a list entry on each; a 64 MiB message could hold 32 million. A 64 MiB attachment in
# base64 is 0.9 million lines.
MAX_MIME_LINES = 1_000_000
# Tags (counted as `<`) of one HTML page or HTML mail part given to the HTML parser, which spends
# about 0.1 ms and hundreds of bytes on each element (1M `<a>`: 31 s, 1.3 GB); an archive page
# holds about 60, an HTML mail a few thousand. A page over it is refused; a mail part over it has
# its tags stripped unparsed.
MAX_HTML_TAGS = 10_000
MAX_PARTS = 1_000  # leaf MIME parts read; the rest are dropped
MAX_DECODED_BYTES = 32 * 1024 * 1024  # decoded payload bytes read over all parts of one message
MAX_LINE_CHARS = 10_000  # characters kept of one body line before the readers see it
MAX_CHARSET_NAME = 40  # characters of a declared charset name; longer names are not looked up
MAX_MACHINE_CHARS = 500  # characters of an LKP "test machine:" value read for threads, CPU and memory
MAX_COMMITS = 200  # distinct commits taken from one text; each new one is compared with those kept
