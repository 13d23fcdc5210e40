"""A register run's own evidence: the new declaration as the candidate's registry resolves it,
beside the calls its call sites made in the parity runs, and the conditions in the new
reference that read an input (what the parity runs could not exercise), added to the report
the engine writes. Rebuilt from the run folder every time."""

from controller.runs.records import load_verdicts
from controller.runs.store import RunStore, write_atomic
from gates.registration.declaration_truth import GATE, declaration_markdown
from gates.registration.input_branches import branches_markdown
from gates.registration.structure import GATE as STRUCTURE_GATE


def write_declaration_evidence(store: RunStore) -> None:
    """Append the latest checked attempt's declaration section to evidence/report.md."""
    latest = branches = None
    for record in store.history().attempts:
        for verdict in load_verdicts(store.attempt_dir(record.number)):
            if verdict.gate == GATE and "declaration" in verdict.details:
                latest = (record.number, verdict)
            if verdict.gate == STRUCTURE_GATE and "input_branches" in verdict.details:
                branches = verdict.details["input_branches"]
    if latest is None:
        return
    number, verdict = latest
    operator = verdict.details.get("operator", "the new operator")
    lines = [
        f"## The new declaration: {operator}",
        "",
        f"As the registry of attempt {number}'s candidate resolves it, beside the calls its "
        "call sites made in the parity runs (the parity model may be a scaled-down one: a "
        "declared size covers every seen size up to it).",
        "",
        *declaration_markdown(verdict.details),
    ]
    if branches:
        lines += ["", *branches_markdown(branches)]
    report = store.evidence_dir / "report.md"
    text = report.read_text() if report.is_file() else ""
    write_atomic(report, text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")
