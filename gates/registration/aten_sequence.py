"""Gate 6, ATen dataflow: routing through the registry must not change what eager PyTorch runs.

Under `kernel_profile=none` every parity configuration, hidden ones included, must dispatch the
same ATen calls as at BASE, each on tensors of the same shapes, dtypes and strides, fed by the
same producers (the call that last produced or wrote each tensor argument, or the same input
contents) and the same other arguments. Independent calls may move (a layer's two modulations
hoisted into one place, a residual add moved next to the norm that follows), so the two runs are
compared as dataflow graphs: each call is named by its overload, layouts, arguments and, through
its producers, everything upstream of it, and the two multisets of names must be equal. A call
added, removed or fed a different value changes a name and is refused; `bit_exact_parity` still
holds the outputs to BASE's bytes.
"""

import hashlib
from collections import Counter

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
    """Compare the recorded ATen calls of every parity configuration with BASE's: identical
    dataflow graphs pass, whatever order the independent calls ran in."""
    names = configuration_names(config, hidden or HiddenDraw())
    problem = comparison_problem(base, candidate, names)
    if problem:
        return Verdict(gate=GATE, passed=False, summary=problem)
    counts, moved = {}, {}
    for driver in names:
        before, after = base.configurations[driver], candidate.configurations[driver]
        index = first_divergence(before["aten"], after["aten"])
        difference = dataflow_difference(before.get("dataflow"), after.get("dataflow"))
        if difference is not None:
            return _refused(driver, before["aten"], after["aten"], index, difference)
        if index is not None:
            moved[driver] = index
        counts[driver] = len(after["aten"])
    calls = ", ".join(f"{driver} ({n} calls)" for driver, n in counts.items())
    if moved:
        summary = (
            f"ATen dataflow identical to BASE, independent calls moved: {calls}; first moved "
            + ", ".join(f"{driver} call {index}" for driver, index in moved.items())
        )
    else:
        summary = "ATen sequences identical to BASE: " + calls
    details = {"calls": counts, "moved_from": moved}
    return Verdict(gate=GATE, passed=True, summary=summary, details=details)


def first_divergence(before: list[str], after: list[str]) -> int | None:
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old != new:
            return index
    if len(before) != len(after):
        return min(len(before), len(after))
    return None


def dataflow_difference(before: list[dict] | None, after: list[dict] | None) -> str | None:
    """Why two recorded dataflows differ (the first call of one with no counterpart in the
    other, upstream included), or None when they are the same graph."""
    if before is None or after is None:
        return "the probe recorded no dataflow to compare"
    base_names, candidate_names = node_names(before), node_names(after)
    missing = Counter(base_names) - Counter(candidate_names)
    added = Counter(candidate_names) - Counter(base_names)
    for index, name in enumerate(candidate_names):
        if added[name]:
            return f"the candidate's call {index} {after[index]['label']} is not in BASE's dataflow"
    for index, name in enumerate(base_names):
        if missing[name]:
            return f"BASE's call {index} {before[index]['label']} is missing from the candidate's"
    return None


def node_names(nodes: list[dict]) -> list[str]:
    """Each call's name: a digest of its label, its arguments and its producers' names."""
    names: list[str] = []
    for node in nodes:
        digest = hashlib.sha256(node["label"].encode())
        digest.update(repr(node.get("keywords", [])).encode())
        for argument in node["arguments"]:
            digest.update(_argument_name(argument, names).encode())
        names.append(digest.hexdigest())
    return names


def _argument_name(reference, names: list[str]) -> str:
    if reference and reference[0] == "call" and len(reference) == 3:
        _, index, position = reference
        producer = names[index] if isinstance(index, int) and 0 <= index < len(names) else "?"
        return f"call:{producer}:{position};"
    if reference and reference[0] in ("input", "value") and len(reference) == 2:
        return f"{reference[0]}:{reference[1]};"
    return "[" + "".join(_argument_name(item, names) for item in reference) + "];"


def _refused(driver: str, before: list, after: list, index: int | None, difference: str) -> Verdict:
    summary = f"{driver}: the ATen dataflow differs from BASE: {difference}"
    if index is None:
        index = 0  # the same calls in the same order, fed other values
        summary += " (the same calls in the same order, fed other values)"
    else:
        base_call = before[index] if index < len(before) else END
        candidate_call = after[index] if index < len(after) else END
        summary += (
            f" (first divergence at call {index}: BASE ran {base_call}, the candidate ran "
            f"{candidate_call})"
        )
    details = {
        "configuration": driver,
        "index": index,
        "difference": difference,
        "base": before[max(0, index - 3) : index + 4],
        "candidate": after[max(0, index - 3) : index + 4],
        "base_length": len(before),
        "candidate_length": len(after),
    }
    return Verdict(gate=GATE, passed=False, summary=summary, details=details)
