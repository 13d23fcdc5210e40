"""Gate 8, bit-exact parity: `kernel_profile=none` outputs are byte-identical to BASE's.

Registration must not change the model's numbers at all; the probe saved every output of every
parity configuration, so the first differing element can be shown.
"""

import torch

from gates.registration.probes import ProbeResult, comparison_problem
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "bit_exact_parity"


def check(base: ProbeResult, candidate: ProbeResult, config: TargetConfig) -> Verdict:
    """Compare each configuration's output digests with BASE's; name the first difference."""
    problem = comparison_problem(base, candidate, config.parity_configurations)
    if problem:
        return Verdict(gate=GATE, passed=False, summary=problem)
    compared = 0
    for driver in config.parity_configurations:
        before = base.configurations[driver]["outputs"]
        after = candidate.configurations[driver]["outputs"]
        if sorted(before) != sorted(after):
            summary = f"{driver}: outputs {sorted(after)} differ from BASE's {sorted(before)}"
            return Verdict(gate=GATE, passed=False, summary=summary)
        for name in before:
            if before[name] != after[name]:
                summary = f"{driver}: output {name!r} " + _difference(
                    base, candidate, driver, name, before[name], after[name]
                )
                details = {
                    "configuration": driver,
                    "output": name,
                    "base": before[name],
                    "candidate": after[name],
                }
                return Verdict(gate=GATE, passed=False, summary=summary, details=details)
            compared += 1
    summary = f"{compared} outputs byte-identical to BASE in {len(config.parity_configurations)} "
    summary += "parity configurations"
    return Verdict(gate=GATE, passed=True, summary=summary)


def _difference(base, candidate, driver, name, before, after) -> str:
    if before["dtype"] != after["dtype"] or before["shape"] != after["shape"]:
        return f"is {after['dtype']}{after['shape']}, BASE's is {before['dtype']}{before['shape']}"
    old = torch.load(base.tensors(driver), weights_only=True)[name].reshape(-1)
    new = torch.load(candidate.tensors(driver), weights_only=True)[name].reshape(-1)
    differs = old.view(torch.uint8).reshape(old.numel(), -1) != new.view(torch.uint8).reshape(
        new.numel(), -1
    )
    elements = differs.any(dim=1).nonzero()
    if not len(elements):
        return "differs from BASE"
    first = int(elements[0, 0])
    return (
        f"differs from BASE in {len(elements)} of {old.numel()} elements; first at flat index "
        f"{first}: {new[first].item()!r} vs BASE {old[first].item()!r}"
    )
