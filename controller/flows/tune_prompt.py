"""What a tune attempt's agent is told: the task, the contract, the workloads with their
weights, baseline and incumbent times with the roofline floor, and the last verdicts."""

import json
import string
from pathlib import Path

from controller.flows.tune_incumbents import Incumbent
from gates.verdict import Verdict


def render_prompt(
    template: str,
    *,
    task: Path,
    incumbent: Incumbent,
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
        "workloads": _workloads(task, incumbent),
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


def _workloads(task: Path, incumbent: Incumbent) -> str:
    """One table row per workload: weight, and when timed, baseline/incumbent/floor in us."""
    rows = {}
    for line in (task / "workloads.jsonl").read_text().splitlines():
        if line.strip():
            trace = json.loads(line)
            rows[trace["workload"]["uuid"]] = (trace["workload"], trace.get("weight") or 1.0)
    timed = {row.name: row for row in (incumbent.reading.workloads if incumbent.reading else ())}
    lines = [
        "| workload | axes | weight | baseline us | incumbent us | floor us |",
        "|---|---|---|---|---|---|",
    ]
    for uuid, (workload, weight) in rows.items():
        name = uuid.split("-", 1)[-1]
        row = timed.get(name) or timed.get(uuid)
        times = (
            f"{row.baseline_us:.2f} | {row.candidate_us:.2f} | {row.floor_us or 0:.2f}"
            if row
            else "not timed yet | not timed yet | n/a"
        )
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
