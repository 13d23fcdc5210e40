"""What a tune attempt's agent is told: the task, the contract, the workloads with their
weights, baseline and incumbent times with the roofline floor, and the last verdicts."""

import json
import string
from pathlib import Path

from controller.flows.tune_incumbents import Incumbent
from gates.tuning.reading import EvaluationReading
from gates.verdict import Verdict


def render_prompt(
    template: str,
    *,
    task: Path,
    incumbent: Incumbent,
    latest: EvaluationReading | None,
    attempt: int,
    feedback: list[Verdict],
    device: str,
) -> str:
    """Fill `prompts/tune.md` from the controller's copy of the task package."""
    definition = json.loads((task / "definition.json").read_text())
    contract = json.loads((task / "contract.json").read_text())
    values = {
        "operator": definition["name"],
        "summary": definition.get("description", ""),
        "contract": _contract(contract),
        "workloads": _workloads(task, incumbent, latest),
        "incumbent": "the production kernel"
        if incumbent.attempt == 0
        else f"the candidate promoted at attempt {incumbent.attempt}",
        "device": device,
        "timing_note": ""
        if device == "cuda"
        else "\nThis run is on the CPU: the evaluator checks correctness under the Triton "
        "interpreter and times nothing, so no candidate can be promoted here.\n",
        "attempt": str(attempt),
        "feedback": _feedback(attempt, feedback),
    }
    return string.Template(template).substitute(values)


def _contract(contract: dict) -> str:
    return ", ".join(f"{key}: {value}" for key, value in sorted(contract.items()))


def _workloads(task: Path, incumbent: Incumbent, latest: EvaluationReading | None) -> str:
    """One table row per workload: its weight and, once something was timed, the baseline's
    time and floor (from the latest timed evaluation) and the incumbent's (from the evaluation
    that promoted it; the baseline's while production is the incumbent)."""
    rows = {}
    for line in (task / "workloads.jsonl").read_text().splitlines():
        if line.strip():
            trace = json.loads(line)
            rows[trace["workload"]["uuid"]] = (trace["workload"], trace.get("weight") or 1.0)
    promoted = {r.name: r for r in (incumbent.reading.workloads if incumbent.reading else ())}
    timed = {r.name: r for r in (latest.workloads if latest else ())}
    lines = [
        "| workload | axes | weight | baseline us | incumbent us | floor us |",
        "|---|---|---|---|---|---|",
    ]
    for uuid, (workload, weight) in rows.items():
        name = uuid.split("-", 1)[-1]
        row = timed.get(name)
        mine = promoted.get(name)
        times = "not timed yet | not timed yet | n/a"
        if row is not None:
            incumbent_us = mine.candidate_us if mine else row.baseline_us
            times = f"{row.baseline_us:.2f} | {incumbent_us:.2f} | {row.floor_us or 0:.2f}"
        axes = ", ".join(f"{key}={value}" for key, value in workload.get("axes", {}).items())
        lines.append(f"| {name} | {axes} | {weight:g} | {times} |")
    return "\n".join(lines)


def _feedback(attempt: int, feedback: list[Verdict]) -> str:
    if not feedback:
        return ""
    lines = [
        f"\n## Feedback: attempt {attempt - 1} was rejected\n",
        "Your workspace starts again from the incumbent; these are the gates that failed:\n",
    ]
    lines += [f"- **{verdict.gate}**: {verdict.summary}" for verdict in feedback]
    return "\n".join(lines) + "\n"
