"""A hotspot report on disk: hotspots.json, hotspots.md and a bar chart (PNG with matplotlib,
else an SVG drawn here), so a team sees at a glance which code is worth registering next."""

import html
import os
from pathlib import Path

from controller.profiling.hotspots import HotspotReport

CHART_ROWS = 15
OUTSIDE_ROWS = 5


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
    unit = "kernel" if report.device_attribution else "call"
    lines = [
        f"# Hotspots of `{' '.join(report.driver)}`",
        "",
        f"{report.steps} profiled steps after {report.warmup} warm-up; {report.note}.",
        "",
        f"Time per step: {report.total_us_per_step:.1f} us, of which "
        f"{report.outside_registry_us_per_step:.1f} us outside registry calls.",
        "",
        f"| region | kind | us/step | {unit}s/step | mean us | share < 5 us |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in report.hotspots:
        lines.append(
            f"| `{row.region}` | {row.kind} | {row.time_us_per_step:.1f} | "
            f"{row.kernels_per_step:.1f} | {row.mean_kernel_us:.1f} | {row.share_under_5us:.0%} |"
        )
    outside = [row for row in report.hotspots if row.kind != "registry"][:OUTSIDE_ROWS]
    if outside:
        lines += ["", "Largest regions outside registry calls (candidates to register next):", ""]
        lines += [f"- `{row.region}`: {row.time_us_per_step:.1f} us/step" for row in outside]
    return "\n".join(lines) + "\n"


def _chart(report: HotspotReport, folder: Path) -> Path:
    rows = report.hotspots[:CHART_ROWS]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        return _write(folder / "hotspots.svg", svg_chart(report))
    figure, axes = pyplot.subplots(figsize=(10, 0.4 * len(rows) + 1.5))
    axes.barh([row.region for row in reversed(rows)], [r.time_us_per_step for r in reversed(rows)])
    axes.set_xlabel("us per step")
    axes.set_title(f"hotspots of {' '.join(report.driver)}")
    figure.tight_layout()
    path = folder / "hotspots.png"
    figure.savefig(path)
    pyplot.close(figure)
    return path


def svg_chart(report: HotspotReport) -> str:
    """A horizontal bar per region, longest first, labelled with its time per step."""
    rows = report.hotspots[:CHART_ROWS]
    longest = max((row.time_us_per_step for row in rows), default=0.0) or 1.0
    label_width, bar_width, row_height = 360, 420, 22
    height = row_height * len(rows) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_width + bar_width + 120}" '
        f'height="{height}" font-family="sans-serif" font-size="12">',
        f'<text x="4" y="16">us per step: {html.escape(" ".join(report.driver))}</text>',
    ]
    for index, row in enumerate(rows):
        y = 28 + index * row_height
        width = bar_width * row.time_us_per_step / longest
        parts.append(f'<text x="4" y="{y + 14}">{html.escape(row.region)}</text>')
        parts.append(
            f'<rect x="{label_width}" y="{y}" width="{width:.1f}" height="{row_height - 6}" '
            'fill="#4878a8"/>'
        )
        parts.append(
            f'<text x="{label_width + width + 4:.1f}" y="{y + 14}">'
            f"{row.time_us_per_step:.1f}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _write(path: Path, text: str) -> Path:
    staged = path.with_name(f".{path.name}.tmp")
    staged.write_text(text)
    os.replace(staged, path)
    return path
