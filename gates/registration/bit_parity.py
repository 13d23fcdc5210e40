"""Gate 8, bit-exact parity: `kernel_profile=none` outputs are byte-identical to BASE's.

Registration must not change the model's numbers at all; the probe saved every output of every
parity configuration (hidden ones included) and of the direct calls of each call site on drawn
inputs, so the first differing element can be shown.

A registration that moves work across calls (every denoise step's modulations computed before
the steps run) changes what its call site takes, so the site's direct calls have no BASE
counterpart to compare with. Such a site is judged through the whole model, in every parity
configuration, and only where the hidden-parity driver also ran at batch sizes the agent never
saw; the verdict names it.
"""

from pathlib import Path

import torch

from gates.registration.hidden import HiddenDraw, configuration_names
from gates.registration.probes import ProbeResult, comparison_problem
from gates.target import TargetConfig
from gates.verdict import Verdict

GATE = "bit_exact_parity"


def check(
    base: ProbeResult,
    candidate: ProbeResult,
    config: TargetConfig,
    hidden: HiddenDraw | None = None,
) -> Verdict:
    """Compare each configuration's and each direct call's outputs with BASE's, bit for bit."""
    names = configuration_names(config, hidden or HiddenDraw())
    problem = comparison_problem(base, candidate, names)
    if problem:
        return Verdict(gate=GATE, passed=False, summary=problem)
    compared = 0
    for driver in names:
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
    changed = _changed_sites(base, candidate)
    calls, vacuous, problem = _direct_calls(base, candidate, set(changed))
    if problem:
        return Verdict(gate=GATE, passed=False, summary=problem)
    hidden_runs = len(names) - len(config.parity_configurations)
    if changed and not hidden_runs:
        summary = (
            f"{changed[0]} takes other arguments than at BASE, so its direct calls cannot be "
            "compared, and no hidden-parity configuration ran to judge it through the model; "
            "declare [tool.controller.hidden_parity] in the target"
        )
        return Verdict(gate=GATE, passed=False, summary=summary, details={"changed": changed})
    summary = f"{compared} outputs byte-identical to BASE in {len(names)} parity configurations"
    summary += f" and {calls} direct call-site calls on drawn inputs"
    if vacuous:
        summary += f" ({vacuous} more gave no finite output at BASE nor in the candidate)"
    if changed:
        summary += (
            f"; {', '.join(changed)} takes other arguments than at BASE and is judged through "
            f"the model ({hidden_runs} hidden configurations)"
        )
    return Verdict(gate=GATE, passed=True, summary=summary, details={"changed": changed})


def _direct_calls(
    base: ProbeResult, candidate: ProbeResult, changed: set[str]
) -> tuple[int, int, str | None]:
    """Where BASE's call site accepted the drawn inputs, the candidate's gives the same bytes;
    a site in `changed` (called with other arguments) has no BASE call to compare with. Calls
    compared; calls where BASE's outputs held no finite value (the candidate's must hold none
    either, but their NaN bytes are not compared: which NaN an operation returns is not a
    value, and it varied between two runs of BASE); and the first difference."""
    compared = vacuous = 0
    for site, base_entries in base.direct_calls.items():
        entries = candidate.direct_calls.get(site, [])
        for index, before in enumerate(base_entries):
            if before.get("error") or "size" not in before or site in changed:
                continue  # BASE does not accept these inputs: outside what the model takes
            label = f"{site} called directly on drawn inputs (call {index + 1})"
            after = entries[index] if index < len(entries) else {"error": "was not called"}
            if after.get("error"):
                return compared, vacuous, f"{label}: the candidate raised {after['error']}"
            if not any(before.get("finite", [True])):  # NaN payloads are not values
                if any(after.get("finite", [True])) or _layouts(after) != _layouts(before):
                    summary = "BASE's outputs hold no finite value; the candidate's differ"
                    return compared, vacuous, f"{label}: {summary}"
                vacuous += 1
                continue
            if before["outputs"] != after["outputs"]:
                difference = _call_difference(base, candidate, before, after)
                return compared, vacuous, f"{label}: {difference}"
            compared += 1
    return compared, vacuous, None


def _layouts(entry: dict) -> list[tuple]:
    return [(output["dtype"], output["shape"]) for output in entry.get("outputs", [])]


def _changed_sites(base: ProbeResult, candidate: ProbeResult) -> list[str]:
    """Call sites the candidate's model first called with other arguments than BASE's did."""
    changed = []
    for site, base_entries in base.direct_calls.items():
        before = {entry.get("arguments") for entry in base_entries if "size" in entry}
        after = {entry.get("arguments") for entry in candidate.direct_calls.get(site, [])}
        after.discard(None)
        if before and after and before != after:
            changed.append(site)
    return changed


def _call_difference(base, candidate, before: dict, after: dict) -> str:
    if len(before["outputs"]) != len(after["outputs"]):
        return f"returns {len(after['outputs'])} tensors, BASE {len(before['outputs'])}"
    old_tensors = torch.load(Path(base.folder) / before["tensors"], weights_only=True)
    new_tensors = torch.load(Path(candidate.folder) / after["tensors"], weights_only=True)
    for position, (old, new) in enumerate(zip(old_tensors, new_tensors, strict=True)):
        if before["outputs"][position] != after["outputs"][position]:
            return f"output {position} " + _tensor_difference(old, new)
    return "differs from BASE"


def _difference(base, candidate, driver, name, before, after) -> str:
    if before["dtype"] != after["dtype"] or before["shape"] != after["shape"]:
        return f"is {after['dtype']}{after['shape']}, BASE's is {before['dtype']}{before['shape']}"
    old = torch.load(base.tensors(driver), weights_only=True)[name]
    new = torch.load(candidate.tensors(driver), weights_only=True)[name]
    return _tensor_difference(old, new)


def _tensor_difference(old: torch.Tensor, new: torch.Tensor) -> str:
    if old.dtype != new.dtype or old.shape != new.shape:
        return f"is {new.dtype}{list(new.shape)}, BASE's is {old.dtype}{list(old.shape)}"
    old, new = old.reshape(-1), new.reshape(-1)
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
