"""The page's charts, drawn by matplotlib and inlined as SVG text (no network, no images to
carry). Every data series has an SVG id `<chart>-data-<series>` so a test or a reader can find
the drawn points; every chart returns its SVG and the number of points it drew."""

import io
import re

from pydantic import BaseModel, ConfigDict

from controller.review_page.page_model import SpeedupPoint, TimeFigure, WorkloadLatencies

ROLE_COLOURS = {"baseline": "#555555", "incumbent": "#1f77b4", "candidate": "#d62728"}
SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
WIDTH_INCHES = 7.5


class Chart(BaseModel):
    """An inline SVG and how many data points it holds."""

    model_config = ConfigDict(frozen=True)

    chart_id: str
    svg: str
    points: int


def latency_chart(chart_id: str, latencies: list[WorkloadLatencies]) -> Chart:
    """Per workload, each role's per-call median with the range of its round medians."""
    names = [entry.workload for entry in latencies]
    roles = [r for r in ROLE_COLOURS if any(r == x.role for e in latencies for x in e.roles)]
    figure, axes = _figure(chart_id, max(1.6, 0.45 * len(names) + 1.0))
    points = 0
    for offset, role in enumerate(roles):
        rows = [
            (index, latency)
            for index, entry in enumerate(latencies)
            for latency in entry.roles
            if latency.role == role
        ]
        shift = (offset - (len(roles) - 1) / 2) * 0.22
        medians = [latency.median_us for _, latency in rows]
        axes.errorbar(
            medians,
            [index + shift for index, _ in rows],
            xerr=[
                [max(0.0, latency.median_us - latency.low_us) for _, latency in rows],
                [max(0.0, latency.high_us - latency.median_us) for _, latency in rows],
            ],
            fmt="o",
            markersize=4,
            capsize=3,
            color=ROLE_COLOURS[role],
            label=role,
            gid=f"{chart_id}-data-{role}",
        )
        points += len(rows)
    axes.set_yticks(range(len(names)), names)
    axes.invert_yaxis()
    axes.set_xlabel("per-call time (us): median, bar = fastest to slowest round")
    _log_if_wide(axes, [r.high_us for e in latencies for r in e.roles])
    axes.legend(loc="best", fontsize=8)
    return Chart(chart_id=chart_id, svg=_svg(figure, chart_id), points=points)


def speedup_chart(chart_id: str, points: list[SpeedupPoint]) -> Chart:
    """Per workload, the candidate's speedup over production by attempt, with its interval;
    promoted attempts filled, the rest hollow; 1.0 dashed."""
    figure, axes = _figure(chart_id, 3.2)
    workloads = sorted({point.workload for point in points})
    for index, workload in enumerate(workloads):
        rows = [point for point in points if point.workload == workload]
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        shift = (index - (len(workloads) - 1) / 2) * 0.08
        attempts = [point.attempt + shift for point in rows]
        values = [point.speedup for point in rows]
        errors = [
            [max(p.speedup - (p.low if p.low is not None else p.speedup), 0) for p in rows],
            [max((p.high if p.high is not None else p.speedup) - p.speedup, 0) for p in rows],
        ]
        axes.errorbar(
            attempts,
            values,
            yerr=errors,
            fmt="o-",
            markersize=5,
            capsize=3,
            linewidth=0.8,
            color=colour,
            markerfacecolor="white",
            label=workload,
            gid=f"{chart_id}-data-{index}",
        )
        promoted = [(a, v) for a, v, p in zip(attempts, values, rows, strict=True) if p.promoted]
        if promoted:
            axes.plot(*zip(*promoted, strict=True), "o", color=colour, markersize=5)
    axes.axhline(1.0, color="#555555", linestyle="--", linewidth=0.8)
    axes.set_xlabel("attempt (filled: promoted)")
    axes.set_ylabel("speedup over production")
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.legend(loc="best", fontsize=8)
    return Chart(chart_id=chart_id, svg=_svg(figure, chart_id), points=len(points))


def time_chart(chart_id: str, figures: list[TimeFigure], unit: str) -> Chart:
    """Grouped bars (one group per comparison, one bar per configuration), each bar's interval
    drawn as an error bar."""
    groups = list(dict.fromkeys(figure.group for figure in figures))
    labels = list(dict.fromkeys(figure.label for figure in figures))
    figure, axes = _figure(chart_id, max(1.8, 0.5 * len(groups) * len(labels) + 0.8))
    height = 0.8 / max(1, len(labels))
    for offset, label in enumerate(labels):
        rows = [(groups.index(f.group), f) for f in figures if f.label == label]
        axes.barh(
            [index + (offset - (len(labels) - 1) / 2) * height for index, _ in rows],
            [f.median for _, f in rows],
            height=height * 0.9,
            xerr=[[f.median - f.low for _, f in rows], [f.high - f.median for _, f in rows]],
            capsize=3,
            color=SERIES_COLOURS[offset % len(SERIES_COLOURS)],
            label=label,
            gid=f"{chart_id}-data-{offset}",
        )
    axes.set_yticks(range(len(groups)), groups)
    axes.invert_yaxis()
    axes.set_xlabel(f"{unit}: median, bar = fastest to slowest round")
    axes.legend(loc="best", fontsize=8)
    return Chart(chart_id=chart_id, svg=_svg(figure, chart_id), points=len(figures))


def share_chart(chart_id: str, shares: list[tuple[str, float]]) -> Chart:
    """One horizontal bar per name: its share (0 to 1) of a whole, labelled in percent."""
    figure, axes = _figure(chart_id, max(1.6, 0.32 * len(shares) + 0.9))
    names = [name for name, _ in shares]
    values = [100 * share for _, share in shares]
    axes.barh(range(len(names)), values, color=SERIES_COLOURS[0], gid=f"{chart_id}-data-0")
    for index, value in enumerate(values):
        axes.annotate(f"{value:.1f}%", (value, index), xytext=(3, 0),
                      textcoords="offset points", va="center", fontsize=8)  # fmt: skip
    axes.set_yticks(range(len(names)), names)
    axes.invert_yaxis()
    axes.set_xlabel("% of the model's step")
    return Chart(chart_id=chart_id, svg=_svg(figure, chart_id), points=len(shares))


def _figure(chart_id: str, height: float):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH_INCHES, height), layout="constrained")
    axes = figure.subplots()
    axes.grid(True, axis="x", color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    return figure, axes


def _log_if_wide(axes, values: list[float]) -> None:
    positive = [value for value in values if value > 0]
    if positive and max(positive) / min(positive) > 30:
        axes.set_xscale("log")


def _svg(figure, chart_id: str) -> str:
    """The figure as an `<svg>` element: text kept as text, ids salted by the chart's id so
    several charts share one page, no metadata, no XML prolog."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": chart_id}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", text[text.index("<svg") :], flags=re.S)
    return re.sub(r"<svg ", f'<svg class="chart-svg" id="{chart_id}" ', svg, count=1)
