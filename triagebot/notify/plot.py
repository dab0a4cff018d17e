"""Notify stage: a run's A/B samples as a PNG strip plot, drawn by matplotlib's Agg backend.

One strip per commit, base on the left and suspect on the right, each labelled with its short
sha and sample count (an A/A run's strips are "A (running kernel)" and "A again", no sha: one
kernel sampled twice); the samples of each side in run order across its strip; a black bar at
each side's median with its value; and, where the report claimed a change, a dashed line where
the suspect's median would sit if the claim held (base median × (1 + reported change)). The
y axis is the plan's metric (with which way is better), the title names the host, and a second
line gives the reported and measured change with the verdict.

matplotlib is imported only when a plot is drawn, so `triage parse` and `triage status` start
without it. The figure is built on its own `Figure` + Agg canvas (no pyplot, no global state),
so plots can be drawn from any thread. Deterministic: the same samples give the same bytes.
"""
from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from triagebot.notify.render import short_commit
from triagebot.verdict.median import median as samples_median
from triagebot.verdict.same_kernel import SAME_KERNEL_SIDES, is_same_kernel

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WIDTH_INCHES, HEIGHT_INCHES, DPI = 8.0, 4.5, 100  # 800 x 450 pixels: readable inline in Slack
BASE_COLOUR = "#1f77b4"
SUSPECT_COLOUR = "#ff7f0e"
REPORTED_COLOUR = "#d62728"
STRIP_WIDTH = 0.6  # share of a strip the samples spread over, in run order
MEDIAN_WIDTH = 0.8  # share of a strip the median bar spans
MINUS = "\u2212"  # a real minus sign, as the verdict's reasons print it


@dataclass(frozen=True)
class PlotText:
    """What the plot says besides the samples; every field is optional."""

    metric: str | None = None
    better: str | None = None  # "higher" / "lower"
    base_commit: str | None = None
    suspect_commit: str | None = None
    host: str | None = None
    reported_change_percent: float | None = None
    measured_change_percent: float | None = None
    outcome: str | None = None
    same_kernel: bool = False  # an A/A run: both strips are the host's running kernel, not the commits


def _percent(value: float) -> str:
    return f"{value:+.1f}%".replace("-", MINUS)


def _number(value: float) -> str:
    return f"{value:,.6g}".replace("-", MINUS)


def _finite(values: Sequence[float]) -> list[float]:
    return [float(value) for value in values if math.isfinite(value)]


def _strip_label(name: str, commit: str | None, count: int, same_kernel: bool = False) -> str:
    """A strip's name, its commit (none for an A/A run's: neither was booted) and its sample count."""
    samples = f"{count} sample{'' if count == 1 else 's'}"
    if same_kernel:
        return f"{name}\n{samples}"
    return f"{name}\n{short_commit(commit) if commit else 'commit unknown'}\n{samples}"


def _draw_side(axes: Any, position: int, name: str, values: list[float], colour: str,
               legend_median: bool) -> float:
    """One strip: the samples in run order across it, and a bar at their median (returned)."""
    spread = [position + STRIP_WIDTH * ((index + 0.5) / len(values) - 0.5)
              for index in range(len(values))]
    axes.scatter(spread, values, s=28, color=colour, edgecolors="white", linewidths=0.5,
                 zorder=3, label=f"{name} samples (run order)", gid=f"{name}-samples")
    median = samples_median(values)
    axes.hlines(median, position - MEDIAN_WIDTH / 2, position + MEDIAN_WIDTH / 2, colors="black",
                linewidth=2.5, zorder=2, label="median" if legend_median else "_nolegend_",
                gid=f"{name}-median")
    axes.annotate(f"median {_number(median)}", (position + MEDIAN_WIDTH / 2, median),
                  xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    return median


def _summary(text: PlotText, medians: dict[str, float]) -> str:
    """The title's second line: reported and measured change, and the verdict."""
    parts = []
    reported, measured = text.reported_change_percent, text.measured_change_percent
    if reported is not None and math.isfinite(reported):
        parts.append(f"reported {_percent(reported)}")
    same_kernel = text.same_kernel or text.outcome == "a-a-only"
    if same_kernel and len(medians) == 2 and medians["base"]:  # the figure the two median bars show
        ratio = medians["suspect"] / medians["base"]
        parts.append(f"noise (one kernel twice): medians differ by {_percent((ratio - 1) * 100)}")
    elif measured is not None and math.isfinite(measured) and not same_kernel:
        parts.append(f"measured {_percent(measured)}")
    elif len(medians) == 2 and medians["base"]:
        ratio = medians["suspect"] / medians["base"]
        parts.append(f"medians differ by {_percent((ratio - 1) * 100)}")
    if same_kernel:
        parts.append("a-a-only: no verdict on the commit")
    elif text.outcome:
        parts.append(f"verdict: {text.outcome}")
    return ", ".join(parts)


def samples_figure(base: Sequence[float], suspect: Sequence[float],
                   text: PlotText | None = None) -> Figure:
    """The strip plot as a matplotlib Figure (non-finite values are left out)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    text = text or PlotText()
    same_kernel = text.same_kernel or text.outcome == "a-a-only"
    sides = (("base", _finite(base), BASE_COLOUR, text.base_commit),
             ("suspect", _finite(suspect), SUSPECT_COLOUR, text.suspect_commit))
    names = SAME_KERNEL_SIDES if same_kernel else {"base": "base", "suspect": "suspect"}
    figure = Figure(figsize=(WIDTH_INCHES, HEIGHT_INCHES), dpi=DPI)
    axes = figure.add_subplot()
    medians: dict[str, float] = {}
    for position, (name, values, colour, _) in enumerate(sides):
        if values:
            medians[name] = _draw_side(axes, position, names[name], values, colour, not medians)
    reported = text.reported_change_percent
    if reported is not None and math.isfinite(reported) and "base" in medians:
        expected = medians["base"] * (1 + reported / 100)
        axes.hlines(expected, 1 - MEDIAN_WIDTH / 2, 1 + MEDIAN_WIDTH / 2,
                    colors=REPORTED_COLOUR, linestyles="dashed", linewidth=1.5, zorder=2,
                    label=f"reported change {_percent(reported)} from the base median",
                    gid="reported")
    axes.set_xlim(-0.7, 1.9)
    # an A/A run's strips are one kernel twice: named so, with no commit (neither was booted)
    axes.set_xticks([0, 1], [_strip_label(names[name], commit, len(values), same_kernel)
                             for name, values, _, commit in sides])
    axes.set_xlabel("the running kernel, sampled twice (A/A)" if same_kernel else "commit")
    metric = text.metric or "value"
    better = text.better in ("higher", "lower")
    axes.set_ylabel(f"{metric} ({text.better} is better)" if better else metric)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _number(value)))
    axes.grid(axis="y", color="#e1e1e1", zorder=0)
    if medians:
        axes.legend(loc="best", fontsize=8, framealpha=0.9)
    else:
        axes.text(0.5, 0.5, "no samples", transform=axes.transAxes, ha="center", va="center")
    summary = _summary(text, medians)
    title = f"{metric} on {text.host}" if text.host else metric
    axes.set_title(title + (f"\n{summary}" if summary else ""), fontsize=10)
    figure.tight_layout()
    return figure


def png_of(figure: Figure) -> bytes:
    """The figure rendered by the Agg canvas, as an 8-bit RGB PNG (the figure is opaque, so the
    alpha channel Agg draws with would only add bytes). Pillow, which matplotlib itself needs,
    writes it without metadata, so the bytes depend on the pixels alone."""
    import numpy
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    pixels = numpy.ascontiguousarray(numpy.asarray(canvas.buffer_rgba())[:, :, :3])
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def svg_of(figure: Figure) -> bytes:
    """The same figure as SVG, for the web page (text kept as text; no date, so the same samples
    give the same bytes)."""
    from matplotlib import rc_context
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buffer = io.BytesIO()
    # a fixed salt for the ids of clip paths (random otherwise); text as <text>, not outlines
    with rc_context({"svg.hashsalt": "triagebot", "svg.fonttype": "none"}):
        FigureCanvasSVG(figure).print_svg(buffer, metadata={"Date": None})
    return buffer.getvalue()


def strip_plot(base: Sequence[float], suspect: Sequence[float],
               text: PlotText | None = None) -> bytes:
    """PNG bytes of the base and suspect values side by side (non-finite values are left out)."""
    return png_of(samples_figure(base, suspect, text))


def run_text(run: dict[str, Any]) -> PlotText:
    """What a stored run (RunRecord.to_json) tells the plot: metric, commits, host, changes."""
    plan = run.get("plan") or {}
    verdict = run.get("verdict") or {}
    reported = verdict.get("reported_change_percent", plan.get("reported_change_percent"))
    return PlotText(metric=plan.get("metric"),
                    better=verdict.get("better") or plan.get("better"),
                    base_commit=run.get("base_commit"), suspect_commit=run.get("suspect_commit"),
                    host=run.get("host"), reported_change_percent=reported,
                    measured_change_percent=verdict.get("measured_change_percent"),
                    outcome=verdict.get("outcome"), same_kernel=is_same_kernel(run))


def run_figure(run: dict[str, Any]) -> Figure:
    """The strip plot of a stored run as a Figure: samples split by role."""
    samples = run.get("samples") or []

    def values(role: str) -> list[float]:
        return [sample["value"] for sample in samples if sample.get("role") == role]

    return samples_figure(values("base"), values("suspect"), run_text(run))


def run_plot(run: dict[str, Any]) -> bytes:
    """The strip plot of a stored run (RunRecord.to_json) as PNG bytes."""
    return png_of(run_figure(run))
