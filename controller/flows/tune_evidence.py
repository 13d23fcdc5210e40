"""A tune run's own evidence: the incumbent history, rejected attempts, the launch settings
tried, and a per-workload latency-by-attempt plot (SVG written here, no plotting library),
added to the report the engine writes. Rebuilt from the run folder every time."""

import html
import json

from controller.flows.tune_incumbents import all_incumbents, attempt_summaries
from controller.runs.records import read_json
from controller.runs.store import RunStore, write_atomic, write_json_atomic
from gates.tuning.reading import EvaluationReading, read_evaluation

PLOT = "latency.svg"
PANEL_WIDTH, PANEL_HEIGHT, MARGIN = 560, 150, 48
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def write_tuning_evidence(store: RunStore, device: str) -> None:
    """evidence/tuning.json, evidence/latency.svg, and a Tuning section in report.md."""
    evidence = store.evidence_dir
    summaries = attempt_summaries(store)
    history = [
        {
            "attempt": incumbent.attempt,
            "weighted_speedup": incumbent.reading.weighted_speedup() if incumbent.reading else None,
            "workloads": [row.model_dump() for row in incumbent.reading.workloads]
            if incumbent.reading
            else [],
        }
        for incumbent in all_incumbents(store.run_dir)
    ]
    series = latency_series(store)
    latest = latest_timing(store)
    write_json_atomic(
        evidence / "tuning.json",
        {
            "device": device,
            "controller_overhead_s": controller_overheads(store),
            "incumbents": history,
            "latest_timing": {
                "attempt": latest[0],
                "weights": f"calls per forward x time ({latest[1].weights_source()})",
                "slower": list(latest[1].slower),
                "workloads": [row.model_dump() for row in latest[1].workloads],
            }
            if latest
            else None,
            "attempts": [s.model_dump(mode="json") for s in summaries],
            "latency_us": series,
        },
    )
    if series:
        write_atomic(evidence / PLOT, latency_svg(series))
    else:  # nothing timed: no empty chart (the report says why)
        (evidence / PLOT).unlink(missing_ok=True)
    report = evidence / "report.md"
    text = report.read_text() if report.is_file() else ""
    write_atomic(report, text.rstrip("\n") + "\n\n" + tuning_markdown(store, device) + "\n")


def controller_overheads(store: RunStore) -> dict[str, float]:
    """Per finished attempt, seconds from its start to the next decision, less the agent's and
    the evaluator's own time: what the controller itself costs an attempt."""
    events = store.events()
    overheads = {}
    for index, event in enumerate(events):
        if event.get("kind") != "transition" or event.get("to") != "attempting":
            continue
        number = event["attempt"]
        end = next(
            (
                later
                for later in events[index + 1 :]
                if later.get("kind") == "transition" and later.get("from") in _DECIDED
            ),
            None,
        )
        directory = store.attempt_dir(number)
        agent = read_json(directory / "agent.json")
        if end is None or agent is None:
            continue
        evaluation = read_json(directory / "evaluation.json") or {}
        spent = end["at"] - event["at"] - agent["seconds"] - evaluation.get("seconds", 0.0)
        overheads[str(number)] = round(max(spent, 0.0), 3)
    return overheads


_DECIDED = frozenset({"feedback", "promoted"})


def screened_points(store: RunStore) -> list[tuple[int, dict]]:
    """The points an autotune agent evaluated itself before writing its candidate."""
    found = []
    for record in store.history().attempts:
        transcript = read_json(store.attempt_dir(record.number) / "transcript.json") or []
        for step in transcript:
            if step.get("role") == "autotune" and step.get("step") == "screen":
                found.append((record.number, step))
    return found


def latency_series(store: RunStore) -> dict[str, dict[str, list]]:
    """Per workload: the baseline's median and each timed attempt's candidate median (us)."""
    series: dict[str, dict[str, list]] = {}
    for record in store.history().attempts:
        evaluation = read_json(store.attempt_dir(record.number) / "evaluation.json")
        if not evaluation:
            continue
        for row in read_evaluation(evaluation).workloads:
            entry = series.setdefault(row.name, {"attempts": [], "candidate_us": [], "base": []})
            entry["attempts"].append(record.number)
            entry["candidate_us"].append(row.candidate_us)
            entry["base"].append(row.baseline_us)
    return series


def latest_timing(store: RunStore) -> tuple[int, EvaluationReading] | None:
    """The newest attempt whose evaluation timed anything, with its reading."""
    for record in reversed(store.history().attempts):
        evaluation = read_json(store.attempt_dir(record.number) / "evaluation.json")
        reading = read_evaluation(evaluation) if evaluation else None
        if reading is not None and reading.timed:
            return record.number, reading
    return None


def regime_markdown(attempt: int, reading: EvaluationReading) -> list[str]:
    """Both figures of every role per workload, and the weights that made the model time."""
    lines = [
        "",
        f"### Timing by regime (attempt {attempt})",
        "",
        f"Weighted figure: the model's time, each workload weighted by calls per forward x "
        f"its time ({reading.weights_source()}). Promotion refuses a workload slower beyond "
        "noise warm or cold. Times in us, warm / cold.",
        "",
        "| workload | promotion figure | calls per forward | baseline | incumbent | candidate |",
        "|---|---|---|---|---|---|",
    ]
    for row in reading.workloads:
        source = f" ({row.figure_source})" if row.figure_source else ""
        calls = f"{row.model_calls:g} ({row.weight_source or 'declared-weight'})"
        roles = [
            _warm_cold(getattr(row, f"{role}_warm_us"), getattr(row, f"{role}_cold_us"))
            for role in ("baseline", "incumbent", "candidate")
        ]
        lines.append(
            f"| {row.name} | {row.promotion_figure}{source} | {calls} | {' | '.join(roles)} |"
        )
    for slower in reading.slower:
        lines.append(f"- {slower}")
    return lines


def _warm_cold(warm: float | None, cold: float | None) -> str:
    if warm is None and cold is None:
        return "-"
    return " / ".join("-" if value is None else f"{value:.2f}" for value in (warm, cold))


def tuning_markdown(store: RunStore, device: str) -> str:
    """The Tuning section of report.md."""
    incumbents = all_incumbents(store.run_dir)
    summaries = attempt_summaries(store)
    state = store.state()
    lines = ["## Tuning", ""]
    if device != "cuda":
        lines += [
            f"Device `{device}`: correctness was checked under the Triton interpreter; nothing "
            "was timed, so nothing could be promoted (promotion needs CUDA timing).",
            "",
        ]
    lines.append(f"- stopped: {state.reason or 'not yet (the run is ' + state.state + ')'}")
    best = incumbents[-1] if incumbents else None
    if best is None or best.attempt == 0:
        lines.append("- incumbent: the production kernel (no candidate was promoted)")
    else:
        speedup = best.reading.weighted_speedup() if best.reading else None
        shown = f"x{speedup:.3f}" if speedup else "n/a"
        lines.append(f"- incumbent: attempt {best.attempt}, {shown} in model time over production")
    overheads = sorted(controller_overheads(store).values())
    if overheads:
        lines.append(
            f"- controller overhead per attempt (all but the agent and the evaluator): median "
            f"{overheads[len(overheads) // 2]:.2f} s, most {overheads[-1]:.2f} s"
        )
    published = store.history().published
    if published and published.get("export"):
        lines.append(f"- export: `{published['export']}`")
    lines += ["", "### Incumbent history", "", "| attempt | weighted | per workload (interval) |"]
    lines.append("|---|---|---|")
    for incumbent in incumbents:
        reading = incumbent.reading
        speedup = reading.weighted_speedup() if reading else None
        rows = ", ".join(
            f"{r.name} x{r.speedup:.3f} [{r.speedup_low or 0:.3f}, {r.speedup_high or 0:.3f}]"
            for r in (reading.workloads if reading else ())
        )
        label = "production" if incumbent.attempt == 0 else str(incumbent.attempt)
        lines.append(
            f"| {label} | {f'x{speedup:.3f}' if speedup else '-'} | {rows or 'not timed'} |"
        )
    latest = latest_timing(store)
    if latest:
        lines += regime_markdown(*latest)
    rejected = [s for s in summaries if s.outcome != "promoted"]
    lines += ["", "### Rejected attempts", ""]
    if not rejected:
        lines.append("None.")
    else:
        lines += ["| attempt | outcome | gate | reason |", "|---|---|---|---|"]
        for summary in rejected:
            reason = summary.summary.replace("|", "\\|")
            lines.append(
                f"| {summary.attempt} | {summary.outcome} | {summary.gate or '-'} | {reason} |"
            )
    tried = [s for s in summaries if s.tuning is not None]
    if tried:
        lines += ["", "### Launch settings tried", ""]
        lines += ["| attempt | TUNING | outcome | weighted over production |", "|---|---|---|---|"]
        for summary in tried:
            point = json.dumps(summary.tuning, sort_keys=True)
            speedup = f"x{summary.weighted_speedup:.3f}" if summary.weighted_speedup else "-"
            lines.append(f"| {summary.attempt} | `{point}` | {summary.outcome} | {speedup} |")
    screened = screened_points(store)
    if screened:
        lines += ["", "### Points the agent screened before choosing", ""]
        lines += ["| attempt | TUNING | status | weighted us |", "|---|---|---|---|"]
        for attempt, step in screened:
            point = json.dumps(step.get("point"), sort_keys=True)
            weighted = f"{step['weighted_us']:.2f}" if step.get("weighted_us") else "-"
            lines.append(f"| {attempt} | `{point}` | {step.get('status')} | {weighted} |")
    if tried or screened:
        lines.append("")
        lines.append("Each attempt's transcript.json says how its agent chose the point.")
    lines += ["", "### Latency by attempt", ""]
    if (store.evidence_dir / PLOT).is_file():
        lines += [f"![per-workload latency by attempt]({PLOT})", ""]
    else:
        lines += ["No chart: no attempt was timed (timing needs CUDA).", ""]
    return "\n".join(lines)


def latency_svg(series: dict[str, dict[str, list]]) -> str:
    """One panel per workload: candidate median by attempt, the baseline dashed."""
    names = sorted(series)
    height = max(1, len(names)) * (PANEL_HEIGHT + MARGIN) + MARGIN
    width = PANEL_WIDTH + 2 * MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    if not names:
        parts.append(
            f'<text x="{MARGIN}" y="{MARGIN}">no attempt was timed (timing needs CUDA)</text>'
        )
    for index, name in enumerate(names):
        parts += _panel(name, series[name], MARGIN + index * (PANEL_HEIGHT + MARGIN), index)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _panel(name: str, entry: dict[str, list], top: float, index: int) -> list[str]:
    attempts, values, base = entry["attempts"], entry["candidate_us"], entry["base"]
    low = min(values + base) * 0.95
    high = max(values + base) * 1.05
    span_x = max(1, max(attempts) - min(attempts))

    def x(attempt: int) -> float:
        return MARGIN + (attempt - min(attempts)) / span_x * PANEL_WIDTH

    def y(value: float) -> float:
        return top + PANEL_HEIGHT - (value - low) / (high - low or 1) * PANEL_HEIGHT

    colour = COLOURS[index % len(COLOURS)]
    baseline = sum(base) / len(base)
    points = " ".join(f"{x(a):.1f},{y(v):.1f}" for a, v in zip(attempts, values, strict=True))
    parts = [
        f'<text x="{MARGIN}" y="{top - 8:.1f}" font-weight="bold">'
        f"{html.escape(name)}: candidate median per call (us) by attempt</text>",
        f'<rect x="{MARGIN}" y="{top}" width="{PANEL_WIDTH}" height="{PANEL_HEIGHT}" '
        'fill="none" stroke="#999"/>',
        f'<line x1="{MARGIN}" x2="{MARGIN + PANEL_WIDTH}" y1="{y(baseline):.1f}" '
        f'y2="{y(baseline):.1f}" stroke="#555" stroke-dasharray="4 3"/>',
        f'<text x="{MARGIN + PANEL_WIDTH + 4}" y="{y(baseline):.1f}">base</text>',
        f'<text x="4" y="{top + 10:.1f}">{high:.2f}</text>',
        f'<text x="4" y="{top + PANEL_HEIGHT:.1f}">{low:.2f}</text>',
        f'<polyline points="{points}" fill="none" stroke="{colour}"/>',
    ]
    for attempt, value in zip(attempts, values, strict=True):
        parts.append(f'<circle cx="{x(attempt):.1f}" cy="{y(value):.1f}" r="3" fill="{colour}"/>')
        parts.append(
            f'<text x="{x(attempt) - 3:.1f}" y="{top + PANEL_HEIGHT + 14:.1f}">{attempt}</text>'
        )
    return parts
