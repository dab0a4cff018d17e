"""Notify stage: a run's A/B samples as a PNG strip plot, drawn without a plotting library.

matplotlib is not a dependency (and not installed where this was written), so the image is
rasterised here and written as a PNG with zlib + struct: base samples in blue on the left,
suspect samples in orange on the right, each in sample order across its strip, a black bar at
each median, grid lines at the axis ticks, and the tick values and strip labels in a tiny
built-in 3x5 pixel font. Deterministic: the same samples give the same bytes.
"""
from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from typing import Any

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 90, 20, 20, 40  # margins in pixels: room for tick labels and names
BASE_COLOUR = (31, 119, 180)
SUSPECT_COLOUR = (255, 127, 14)
GRID = (225, 225, 225)
AXIS = (60, 60, 60)
WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
DOT_RADIUS = 4
FONT_SCALE = 2

# 3x5 glyphs, rows top to bottom, "1" = ink.
_FONT = {
    "0": ("111", "101", "101", "101", "111"), "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"), "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"), "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"), "7": ("111", "001", "010", "010", "010"),
    "8": ("111", "101", "111", "101", "111"), "9": ("111", "101", "111", "001", "111"),
    ".": ("000", "000", "000", "000", "010"), "-": ("000", "000", "111", "000", "000"),
    "+": ("000", "010", "111", "010", "000"), "e": ("111", "101", "111", "100", "111"),
    "a": ("111", "001", "111", "101", "111"), "b": ("100", "100", "111", "101", "111"),
    "s": ("111", "100", "111", "001", "111"), "u": ("000", "101", "101", "101", "111"),
    "p": ("111", "101", "111", "100", "100"), "c": ("000", "111", "100", "100", "111"),
    "t": ("010", "111", "010", "010", "011"), " ": ("000", "000", "000", "000", "000"),
}


class _Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(WHITE * (width * height))

    def set(self, x: int, y: int, colour: tuple[int, int, int]) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            offset = (y * self.width + x) * 3
            self.pixels[offset:offset + 3] = bytes(colour)

    def rectangle(self, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
        for y in range(max(0, y0), min(self.height, y1 + 1)):
            for x in range(max(0, x0), min(self.width, x1 + 1)):
                self.set(x, y, colour)

    def dot(self, cx: int, cy: int, radius: int, colour: tuple[int, int, int]) -> None:
        for y in range(cy - radius, cy + radius + 1):
            for x in range(cx - radius, cx + radius + 1):
                if (x - cx) ** 2 + (y - cy) ** 2 <= radius * radius:
                    self.set(x, y, colour)

    def text(self, x: int, y: int, text: str, colour: tuple[int, int, int] = AXIS) -> None:
        for glyph_index, character in enumerate(text.lower()):
            glyph = _FONT.get(character, _FONT[" "])
            for row, bits in enumerate(glyph):
                for column, bit in enumerate(bits):
                    if bit == "1":
                        left = x + (glyph_index * 4 + column) * FONT_SCALE
                        top = y + row * FONT_SCALE
                        self.rectangle(left, top, left + FONT_SCALE - 1, top + FONT_SCALE - 1, colour)

    def png(self) -> bytes:
        rows = b"".join(b"\x00" + bytes(self.pixels[y * self.width * 3:(y + 1) * self.width * 3])
                        for y in range(self.height))
        return encode_png(self.width, self.height, rows)


def text_width(text: str) -> int:
    return len(text) * 4 * FONT_SCALE - FONT_SCALE


def encode_png(width: int, height: int, filtered_rows: bytes) -> bytes:
    """An 8-bit RGB PNG from rows that each start with their filter byte."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(filtered_rows, 9)) + chunk(b"IEND", b""))


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    span = high - low
    raw = span / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(multiple * magnitude for multiple in (1, 2, 2.5, 5, 10) if multiple * magnitude >= raw)
    first = math.ceil(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _label(value: float) -> str:
    return f"{value:.4g}".replace("e+0", "e").replace("e-0", "e-")


def strip_plot(base: Sequence[float], suspect: Sequence[float]) -> bytes:
    """PNG bytes of the base and suspect values side by side (non-finite values are left out)."""
    base = [value for value in base if math.isfinite(value)]
    suspect = [value for value in suspect if math.isfinite(value)]
    canvas = _Canvas(WIDTH, HEIGHT)
    values = base + suspect
    plot_top, plot_bottom = TOP, HEIGHT - BOTTOM
    plot_left, plot_right = LEFT, WIDTH - RIGHT
    if values:
        low, high = min(values), max(values)
        if high == low:  # all equal: centre them in a band of +-1% (or +-1 around 0)
            pad = abs(low) * 0.01 or 1.0
            low, high = low - pad, high + pad
        margin = (high - low) * 0.08
        low, high = low - margin, high + margin
    else:
        low, high = 0.0, 1.0

    def y_of(value: float) -> int:
        return round(plot_bottom - (value - low) / (high - low) * (plot_bottom - plot_top))

    for tick in _ticks(low, high):
        y = y_of(tick)
        canvas.rectangle(plot_left, y, plot_right, y, GRID)
        label = _label(tick)
        canvas.text(plot_left - 8 - text_width(label), y - 5, label)
    canvas.rectangle(plot_left, plot_top, plot_left, plot_bottom, AXIS)
    canvas.rectangle(plot_left, plot_bottom, plot_right, plot_bottom, AXIS)
    strip = (plot_right - plot_left) // 2
    for index, (name, samples, colour) in enumerate((("base", base, BASE_COLOUR),
                                                      ("suspect", suspect, SUSPECT_COLOUR))):
        left = plot_left + index * strip + strip // 5
        width = strip * 3 // 5
        for position, value in enumerate(samples):
            x = left + (width * (position + 0.5) / len(samples))
            canvas.dot(round(x), y_of(value), DOT_RADIUS, colour)
        if samples:
            ordered = sorted(samples)
            middle = len(ordered) // 2
            median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
            y = y_of(median)
            canvas.rectangle(left - 6, y - 1, left + width + 6, y + 1, BLACK)
        label = f"{name} {len(samples)}"
        centre = plot_left + index * strip + strip // 2
        canvas.text(centre - text_width(label) // 2, plot_bottom + 14, label, colour)
    return canvas.png()


def run_plot(run: dict[str, Any]) -> bytes:
    """The strip plot of a stored run (RunRecord.to_json): samples split by role."""
    samples = run.get("samples") or []
    return strip_plot([sample["value"] for sample in samples if sample.get("role") == "base"],
                      [sample["value"] for sample in samples if sample.get("role") == "suspect"])
