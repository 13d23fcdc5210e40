"""A tune run's screen evidence: the latest screen of the declared space an autotune agent
wrote to its transcript, as evidence/screen.json, a plot of the screened points (screen.png by
matplotlib where installed, else screen.svg drawn here) and a section in report.md. Rebuilt
from the run folder every time."""

import json

from controller.runs.records import read_json
from controller.runs.store import RunStore, write_atomic, write_json_atomic
from controller.screening.plot import matplotlib_available, plot_png, plot_svg
from controller.screening.report import ScreenedPoint

BEST_SHOWN = 5


def write_screen_evidence(store: RunStore) -> None:
    """Nothing when no attempt screened a space."""
    found = latest_screen(store)
    if found is None:
        return
    attempt, summary, points = found
    evidence = store.evidence_dir
    write_json_atomic(
        evidence / "screen.json",
        {"attempt": attempt, **summary, "points": [p.model_dump() for p in points]},
    )
    title = f"screen of attempt {attempt}: {len(points)} points on {summary.get('device')}"
    if not any(point.weighted_us is not None for point in points):
        plot = None  # nothing timed: a chart would be empty
        note = "No plot: no point was timed (on a CPU the interpreter checks correctness only)."
    elif matplotlib_available():
        plot, note = "screen.png", ""
        (evidence / plot).write_bytes(plot_png(points, title))
    else:
        plot = "screen.svg"
        note = "matplotlib is not installed here (it is no dependency of this project), so the "
        note += "plot is SVG drawn without it."
        write_atomic(evidence / plot, plot_svg(points, title))
    report = evidence / "report.md"
    text = report.read_text() if report.is_file() else ""
    section = screen_markdown(attempt, summary, points, plot, note)
    write_atomic(report, text.rstrip("\n") + "\n\n" + section + "\n")


def latest_screen(store: RunStore) -> tuple[int, dict, list[ScreenedPoint]] | None:
    """(attempt, its screen summary, every screened point) of the last attempt that screened."""
    for record in reversed(store.history().attempts):
        transcript = read_json(store.attempt_dir(record.number) / "transcript.json") or []
        steps = [s for s in transcript if s.get("role") == "autotune"]
        summary = next((s for s in steps if s.get("step") == "screen_summary"), None)
        if summary is None:
            continue
        points = [
            ScreenedPoint.model_validate({k: v for k, v in s.items() if k not in ("role", "step")})
            for s in steps
            if s.get("step") == "screened_point"
        ]
        kept = {k: v for k, v in summary.items() if k not in ("role", "step")}
        return record.number, kept, points
    return None


def screen_markdown(attempt, summary, points, plot, note) -> str:
    counts = ", ".join(f"{count} {status}" for status, count in sorted(summary["counts"].items()))
    lines = [
        "### Screen of the declared space",
        "",
        f"Attempt {attempt} screened {len(points)} points in {summary['seconds']:.1f} s on "
        f"{summary['device']} ({counts}); screen time per point is in screen.json and the "
        "attempt's transcript.",
    ]
    if summary.get("note"):
        lines += ["", summary["note"]]
    if summary.get("figures"):
        figures = ", ".join(f"{name} {figure}" for name, figure in summary["figures"].items())
        lines += ["", f"Figures timed: {figures}."]
    ranked = sorted(
        (p for p in points if p.weighted_us is not None), key=lambda p: (p.weighted_us, p.index)
    )
    incumbent = next((p for p in points if p.index == 0), None)
    if ranked:
        lines += [
            "",
            "| rank | TUNING | weighted us | vs incumbent | screen s |",
            "|---|---|---|---|---|",
        ]
        for rank, point in enumerate(ranked[:BEST_SHOWN], start=1):
            ratio = "-"
            if incumbent is not None and incumbent.weighted_us:
                ratio = f"{point.weighted_us / incumbent.weighted_us:.3f}"
            lines.append(
                f"| {rank} | `{json.dumps(point.point, sort_keys=True)}` | "
                f"{point.weighted_us:.3f} | {ratio} | {point.screen_s:.2f} |"
            )
    dropped = [p for p in points if not p.passed and p.status != "not_screened"]
    if dropped:
        lines += ["", f"Dropped {len(dropped)} points; the first:"]
        for point in dropped[:3]:
            lines.append(
                f"- `{json.dumps(point.point, sort_keys=True)}` {point.status}: {point.reason}"
            )
    if plot is not None:
        lines += ["", f"![screened points]({plot})"]
    if note:
        lines += ["", note]
    return "\n".join(lines)
