"""A plot of a screen: each point's weighted time against its place in the screen's order,
the incumbent's time as a line, dropped points marked along the bottom. Drawn with matplotlib
where it is installed; it is not a dependency of this project, so otherwise the same plot is
written as SVG here and the caller says so."""

import html

from controller.screening.report import ScreenedPoint

WIDTH, HEIGHT, MARGIN = 640, 320, 56


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_png(points: list[ScreenedPoint], title: str) -> bytes:
    """The plot as PNG bytes, by matplotlib (call only when `matplotlib_available()`)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 4), dpi=100)
    timed = [p for p in points if p.weighted_us is not None]
    axes.scatter([p.index for p in timed], [p.weighted_us for p in timed], s=10, label="timed")
    incumbent = _incumbent_us(points)
    if incumbent is not None:
        axes.axhline(incumbent, color="grey", linestyle="--", label="incumbent")
    dropped = [p for p in points if not p.passed and p.status != "not_screened"]
    if dropped and timed:
        floor = min(p.weighted_us for p in timed)
        axes.scatter(
            [p.index for p in dropped],
            [floor] * len(dropped),
            marker="x",
            c="red",
            s=14,
            label="dropped",
        )
    axes.set_xlabel("point (screen order, incumbent first)")
    axes.set_ylabel("weighted time per forward (us)")
    axes.set_title(title)
    axes.legend(loc="best")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    pyplot.close(figure)
    return buffer.getvalue()


def plot_svg(points: list[ScreenedPoint], title: str) -> str:
    """The same plot as SVG text, without a plotting library."""
    timed = [p for p in points if p.weighted_us is not None]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{MARGIN}" y="18">{html.escape(title)}</text>',
    ]
    if not timed:
        parts.append(f'<text x="{MARGIN}" y="{HEIGHT // 2}">no point was timed</text></svg>')
        return "\n".join(parts)
    low = min(p.weighted_us for p in timed)
    high = max(p.weighted_us for p in timed)
    span = (high - low) or max(high, 1e-9) * 0.01
    last = max(1, max(p.index for p in points))

    def x(index: int) -> float:
        return MARGIN + (WIDTH - 2 * MARGIN) * index / last

    def y(value: float) -> float:
        return HEIGHT - MARGIN - (HEIGHT - 2 * MARGIN) * (value - low) / span

    bottom = HEIGHT - MARGIN
    parts.append(
        f'<line x1="{MARGIN}" y1="{bottom}" x2="{WIDTH - MARGIN}" y2="{bottom}" stroke="black"/>'
    )
    parts.append(f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{bottom}" stroke="black"/>')
    parts.append(f'<text x="4" y="{y(high) + 4:.1f}">{high:.2f}</text>')
    parts.append(f'<text x="4" y="{y(low) + 4:.1f}">{low:.2f}</text>')
    parts.append(
        f'<text x="{MARGIN}" y="{HEIGHT - 16}">point (screen order, incumbent '
        "first); weighted time per forward (us); x: dropped</text>"
    )
    incumbent = _incumbent_us(points)
    if incumbent is not None:
        parts.append(
            f'<line x1="{MARGIN}" y1="{y(incumbent):.1f}" x2="{WIDTH - MARGIN}" '
            f'y2="{y(incumbent):.1f}" stroke="grey" stroke-dasharray="4 3"/>'
        )
    for point in timed:
        parts.append(
            f'<circle cx="{x(point.index):.1f}" cy="{y(point.weighted_us):.1f}" r="2.5" '
            'fill="#1f77b4"/>'
        )
    for point in points:
        if not point.passed and point.status != "not_screened":
            parts.append(
                f'<text x="{x(point.index) - 3:.1f}" y="{bottom + 4}" fill="#d62728">x</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _incumbent_us(points: list[ScreenedPoint]) -> float | None:
    first = next((p for p in points if p.index == 0), None)
    return first.weighted_us if first is not None else None
