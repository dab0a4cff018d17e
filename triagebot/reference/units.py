"""Reference: the units a report's numbers are written in, shared by the rules' templates and the
parse stage."""
from __future__ import annotations

# Unit as written (lower case) -> (unit as named in the headline, better direction).
# Rerun templates name these units (their metrics' `units`) to say what a headline stands for.
UNITS = {
    "events/s": ("events/s", "higher"), "events/sec": ("events/s", "higher"),
    "ops/s": ("ops/s", "higher"), "ops/sec": ("ops/s", "higher"),
    "files/s": ("files/s", "higher"), "files/sec": ("files/s", "higher"),
    "iops": ("IOPS", "higher"), "kiops": ("IOPS", "higher"),
    "mb/s": ("MB/s", "higher"), "mib/s": ("MiB/s", "higher"), "gb/s": ("GB/s", "higher"),
    "gib/s": ("GiB/s", "higher"), "kb/s": ("KB/s", "higher"), "kib/s": ("KiB/s", "higher"),
    "ms": ("ms", "lower"), "msec": ("ms", "lower"), "usec": ("us", "lower"), "us": ("us", "lower"),
    "µs": ("us", "lower"), "seconds": ("s", "lower"), "secs": ("s", "lower"), "sec": ("s", "lower"),
    "mb/sec": ("MB/s", "higher"), "gb/sec": ("GB/s", "higher"), "kb/sec": ("KB/s", "higher"),
    "mib/sec": ("MiB/s", "higher"), "gib/sec": ("GiB/s", "higher"), "kib/sec": ("KiB/s", "higher"),
    "minutes": ("min", "lower"), "mins": ("min", "lower"), "min": ("min", "lower"),
}
