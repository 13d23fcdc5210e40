"""A hotspot report on disk: hotspots.json, hotspots.md and a bar chart (PNG with matplotlib,
else an SVG drawn here), so a team sees at a glance which code is worth registering next."""

import html
import os
from pathlib import Path

from controller.profiling.hotspots import AGREEMENT_GOAL, HotspotReport, RegionTime

CHART_ROWS = 15


def write_report(report: HotspotReport, folder: Path) -> list[Path]:
    """Write the three files into `folder` (made if missing); returns their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = [
        _write(folder / "hotspots.json", report.model_dump_json(indent=2) + "\n"),
        _write(folder / "hotspots.md", markdown(report)),
    ]
    written.append(_chart(report, folder))
    return written


def markdown(report: HotspotReport) -> str:
    """Registry operators, then other regions, the time outside registry calls, the gaps and
    the step account against the wall time."""
    account = report.account
    unit = "kernel" if report.device_attribution else "timed op"
    mode = "one CUDA graph, replayed" if report.mode == "graph" else "eager"
    lines = [
        f"# Hotspots of `{' '.join(report.driver)}` ({mode}{_under(report)})",
        "",
        f"{report.steps} profiled steps after {report.warmup} warm-up{_lead_in(report)}; "
        f"{report.note}.",
        "",
        f"Step account: {account.account_us_per_step:.1f} us = "
        f"{account.busy_us_per_step:.1f} us of {unit}s + {account.gap_us_per_step:.1f} us of "
        f"gaps; the same step timed without the profiler ({account.wall.clock}, median of "
        f"{account.wall.unprofiled_samples}): {account.wall.unprofiled_median_us:.1f} us, "
        f"agreement {account.agreement:+.1%} "
        f"({'within' if account.within_goal else 'outside'} the {AGREEMENT_GOAL:.0%} goal); "
        f"against the profiled steps' own wall time ({account.wall.profiled_median_us:.1f} us): "
        f"{account.profiled_agreement:+.1%}.",
        *_overhead_note(report),
        "",
        "## Registry operators",
        "",
        f"| operator | calls/step | {unit}s/step | us/step | share of step | mean us | < 5 us |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [_row(row, kind=False) for row in report.registry]
    lines += [
        "",
        "## Modules and other regions",
        "",
        f"| region | kind | calls/step | {unit}s/step | us/step | share of step | mean us "
        "| < 5 us |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [_row(row, kind=True) for row in report.elsewhere]
    lines += [
        "",
        f"Registry calls: {report.registry_us_per_step:.1f} us/step "
        f"({_share(report.registry_us_per_step, account.account_us_per_step)} of the step). "
        f"Outside registry calls: {report.outside_registry_us_per_step:.1f} us/step "
        f"({_share(report.outside_registry_us_per_step, account.account_us_per_step)}).",
        "",
        "## Gaps",
        "",
        "| gap | gaps/step | us/step | share of step |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {gap.kind} | {gap.gaps_per_step:.1f} | {gap.us_per_step:.1f} | "
        f"{gap.share_of_step:.1%} |"
        for gap in report.gaps
    ]
    if report.graph is not None:
        graph = report.graph
        alignment = "one to one" if graph.aligned_one_to_one else "by kind where they agree"
        check = (
            f"{graph.name_confirmed_share:.1%} of labelled time confirmed by kernel name "
            "against the eager reference step."
            if graph.name_confirmed_share is not None
            else "the eager reference step launched another sequence, so no name check."
        )
        lines += [
            "",
            "## Graph labels",
            "",
            f"{graph.captured_launches} launches captured, {graph.replayed_per_step:.0f} "
            f"activities replayed per step (aligned {alignment}); "
            f"{graph.labelled_share_of_time:.1%} of replayed kernel time labelled; {check}",
        ]
    return "\n".join(lines) + "\n"


def _lead_in(report: HotspotReport) -> str:
    if not report.lead_in:
        return ""
    if report.mode == "eager":
        return f" and {report.lead_in} lead-in step of the device-only pass left out"
    return (
        f" and {report.lead_in} lead-in replay left out (every replay queued behind a "
        "device-side wait, so they run back to back as unprofiled ones do)"
    )


def _overhead_note(report: HotspotReport) -> list[str]:
    """Where the account misses the wall time but matches the profiled steps, the profiler's
    own host cost is the difference, and it sits in the gaps."""
    wall = report.account.wall
    if report.account.within_goal or not wall.unprofiled_median_us:
        return []
    slower = wall.profiled_median_us / wall.unprofiled_median_us - 1
    return [
        "",
        f"The profiled steps ran {slower:+.1%} against unprofiled ones: the profiler's own "
        "host cost, which lands in the gaps between kernels where the host paces the device.",
    ]


def _row(row: RegionTime, kind: bool) -> str:
    cells = [f"`{row.region}`", *([row.kind] if kind else [])]
    cells += [
        f"{row.calls_per_step:.1f}",
        f"{row.kernels_per_step:.1f}",
        f"{row.kernel_us_per_step:.1f}",
        f"{row.share_of_step:.1%}",
        f"{row.mean_kernel_us:.1f}",
        f"{row.share_under_5us:.0%}",
    ]
    return "| " + " | ".join(cells) + " |"


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def _chart(report: HotspotReport, folder: Path) -> Path:
    rows = report.regions[:CHART_ROWS]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        return _write(folder / "hotspots.svg", svg_chart(report))
    figure, axes = pyplot.subplots(figsize=(10, 0.4 * len(rows) + 1.5))
    axes.barh(
        [row.region for row in reversed(rows)], [r.kernel_us_per_step for r in reversed(rows)]
    )
    axes.set_xlabel("us per step")
    axes.set_title(f"hotspots of {' '.join(report.driver)}")
    figure.tight_layout()
    path = folder / "hotspots.png"
    figure.savefig(path)
    pyplot.close(figure)
    return path


def svg_chart(report: HotspotReport) -> str:
    """A horizontal bar per region, longest first, labelled with its time per step."""
    rows = report.regions[:CHART_ROWS]
    longest = max((row.kernel_us_per_step for row in rows), default=0.0) or 1.0
    label_width, bar_width, row_height = 360, 420, 22
    height = row_height * len(rows) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_width + bar_width + 120}" '
        f'height="{height}" font-family="sans-serif" font-size="12">',
        f'<text x="4" y="16">us per step: {html.escape(" ".join(report.driver))}</text>',
    ]
    for index, row in enumerate(rows):
        y = 28 + index * row_height
        width = bar_width * row.kernel_us_per_step / longest
        parts.append(f'<text x="4" y="{y + 14}">{html.escape(row.region)}</text>')
        parts.append(
            f'<rect x="{label_width}" y="{y}" width="{width:.1f}" height="{row_height - 6}" '
            'fill="#4878a8"/>'
        )
        parts.append(
            f'<text x="{label_width + width + 4:.1f}" y="{y + 14}">'
            f"{row.kernel_us_per_step:.1f}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _write(path: Path, text: str) -> Path:
    staged = path.with_name(f".{path.name}.tmp")
    staged.write_text(text)
    os.replace(staged, path)
    return path


def _under(report: HotspotReport) -> str:
    """The kernel profile in the title, where it is not the default `none`."""
    return "" if report.kernel_profile == "none" else f", kernel profile `{report.kernel_profile}`"
