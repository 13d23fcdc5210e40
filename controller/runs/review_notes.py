"""What a published result's message tells its reviewer beyond the verdicts: the run and where
its evidence is, the attempts the gates rejected and why, and what is still to judge by eye.

Built only from records that never change once written (earlier attempts, the run folder), so
a publish redone after a crash writes the same message and so the same commit.
"""

from controller.runs.records import load_verdicts
from controller.runs.store import RunStore

REGISTER_BY_EYE = (
    "the reference's fidelity to the model's maths (the gates compare it with BASE, not with "
    "the paper or the original implementation)",
    "the tests' quality beyond the mutations the effectiveness gate tried",
)


def review_lines(store: RunStore, accepted_attempt: int, by_eye: tuple[str, ...]) -> list[str]:
    """Lines for a commit message: run, evidence, rejected attempts, what to judge by eye."""
    lines = [
        f"Run: {store.run_id}",
        f"Evidence: {store.evidence_dir / 'report.md'}",
        f"Accepted: attempt {accepted_attempt}",
    ]
    earlier = []
    for record in store.history().attempts:
        if record.number >= accepted_attempt:
            continue
        if record.interrupted:
            earlier.append(
                f"  attempt {record.number}: interrupted ({record.reason or 'cut short'})"
            )
            continue
        failing = [v.gate for v in load_verdicts(store.attempt_dir(record.number)) if not v.passed]
        earlier.append(f"  attempt {record.number}: rejected by {', '.join(failing) or 'no gate'}")
    lines += ["Earlier attempts:", *earlier] if earlier else ["Earlier attempts: none"]
    lines += ["Still to judge by eye:", *[f"  - {item}" for item in by_eye]]
    return lines
