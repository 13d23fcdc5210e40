"""Gate 6, ATen sequence: routing through the registry must not change what eager PyTorch runs.

Under `kernel_profile=none` every parity configuration, hidden ones included, must dispatch the
same ATen overloads on tensors of the same shapes, dtypes and strides, in the same order, as at
BASE; an added cast, copy or reordering shows up as the first divergence.
"""

from gates.registration.hidden import HiddenDraw, configuration_names
from gates.registration.probes import ProbeResult, comparison_problem
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "aten_sequence"
END = "<end of sequence>"


def check(
    base: ProbeResult,
    candidate: ProbeResult,
    config: TargetConfig,
    hidden: HiddenDraw | None = None,
) -> Verdict:
    """Compare the recorded ATen calls of every parity configuration with BASE's."""
    names = configuration_names(config, hidden or HiddenDraw())
    problem = comparison_problem(base, candidate, names)
    if problem:
        return Verdict(gate=GATE, passed=False, summary=problem)
    counts = {}
    for driver in names:
        before = base.configurations[driver]["aten"]
        after = candidate.configurations[driver]["aten"]
        index = first_divergence(before, after)
        if index is not None:
            base_call = before[index] if index < len(before) else END
            candidate_call = after[index] if index < len(after) else END
            summary = (
                f"{driver}: ATen call {index} differs from BASE: BASE ran {base_call}, "
                f"the candidate ran {candidate_call}"
            )
            details = {
                "configuration": driver,
                "index": index,
                "base": before[max(0, index - 3) : index + 4],
                "candidate": after[max(0, index - 3) : index + 4],
                "base_length": len(before),
                "candidate_length": len(after),
            }
            return Verdict(gate=GATE, passed=False, summary=summary, details=details)
        counts[driver] = len(after)
    summary = "ATen sequences identical to BASE: " + ", ".join(
        f"{driver} ({n} calls)" for driver, n in counts.items()
    )
    return Verdict(gate=GATE, passed=True, summary=summary, details={"calls": counts})


def first_divergence(before: list[str], after: list[str]) -> int | None:
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old != new:
            return index
    if len(before) != len(after):
        return min(len(before), len(after))
    return None
