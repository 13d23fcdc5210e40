"""Gate: the new operator's declaration tells the truth about its contract and its calls.

Every later tuning run judges kernels by this declaration, so a lax contract or workloads the
model never runs make every later verdict meaningless. Without a preferred kernel every
profile runs the reference, so the contract is bit-exact; a tolerance is bounded; and the
declared tensors, constant axes and workloads must fit and cover the calls the selected call
sites made in the parity runs, with workload weights that follow the call counts. The parity
model may be a scaled-down one, so a declared size covers every seen size up to it (a seen
zero only by a declared zero).
"""

from typing import Any

from gates.registration.call_bindings import Binding, SeenCall, bind, seen_calls
from gates.registration.call_sites import CallSite
from gates.registration.packaging import packaging_problems
from gates.registration.probes import ProbeResult
from gates.registration.snapshots import RegistrySnapshot
from gates.target import TargetConfig
from gates.verdict import Verdict, first_of
from operators.contract import Contract
from operators.declaration import OperatorDeclaration, Workload

GATE = "declaration_truth"
MAX_ROUNDINGS = 8
"""The most unshared BF16 roundings a tolerance may state (the catalog's kernels need 2-4)."""
WEIGHT_FACTOR = 2.0
"""How far a workload's share of the declared weight may stray from its share of the calls."""


def check(
    candidate: RegistrySnapshot,
    probe: ProbeResult,
    config: TargetConfig,
    operator: str,
    sites: list[CallSite],
) -> Verdict:
    """The contract rules, then every seen call bound to and covered by the declaration."""
    if candidate.problem:
        return Verdict(gate=GATE, passed=False, summary=candidate.problem)
    snapshot = candidate.operators.get(operator)
    if snapshot is None:
        return Verdict(gate=GATE, passed=False, summary=f"ops.{operator} is not registered")
    if probe.problem:
        return Verdict(gate=GATE, passed=False, summary=probe.problem)
    try:
        declaration = snapshot.typed_declaration()
    except ValueError as error:
        return Verdict(gate=GATE, passed=False, summary=f"{operator}: {error}")
    drivers = list(config.parity_configurations)
    try:  # the probe's records come from the candidate's process
        calls = seen_calls(probe.configurations, drivers, operator, sites)
        bindings = [bind(declaration, call) for call in calls]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        summary = "the parity probe's records of the calls are malformed"
        return Verdict(gate=GATE, passed=False, summary=summary)
    problems = contract_problems(declaration.contract, snapshot.preferred is not None)
    passed = {spec.name for spec in declaration.inputs} | set(declaration.params)
    problems += [
        f"its reference cannot travel in a task package, which carries only the libraries it "
        f"imports, and the constants and helpers of the reference's own module: {problem}"
        for problem in packaging_problems(snapshot.reference, passed)
    ]
    if not calls:
        problems.append(f"the parity runs recorded no call of ops.{operator} at the call sites")
    problems += [
        f"a call from {', '.join(call.sites)} ({call.describe()}): {binding.problem}"
        for call, binding in zip(calls, bindings, strict=True)
        if binding.problem
    ]
    fitting = [(c, b) for c, b in zip(calls, bindings, strict=True) if not b.problem]
    problems += const_axis_problems(declaration, fitting)
    served, coverage = workload_coverage(declaration, fitting)
    problems += coverage
    if not coverage:
        problems += weight_problems(declaration, served)
    details = {
        "operator": operator,
        "declaration": declared_view(declaration),
        "seen": [
            _seen_view(c, b, declaration.workloads) for c, b in zip(calls, bindings, strict=True)
        ],
        "problems": problems,
    }
    if problems:
        summary = f"the {operator} declaration is untruthful: {first_of(problems)}"
        return Verdict(gate=GATE, passed=False, summary=summary, details=details)
    summary = (
        f"{operator}'s contract ({declaration.contract.mode}) and workloads fit the "
        f"{sum(c.count for c in calls)} calls its call sites made in the parity runs"
    )
    return Verdict(gate=GATE, passed=True, summary=summary, details=details)


def contract_problems(contract: Contract, has_preferred: bool) -> list[str]:
    problems = []
    roundings = contract.roundings
    if contract.mode != "bit_exact" and not has_preferred:
        problems.append(
            f"without a preferred kernel every profile runs the reference, so the contract is "
            f"bit_exact (declared {contract.mode} with {roundings} roundings)"
        )
    if contract.mode == "no_less_accurate" and roundings > MAX_ROUNDINGS:
        problems.append(
            f"an expectation of {roundings} BF16 roundings is past the bound of {MAX_ROUNDINGS}; "
            "count the roundings the kernel and the reference do not share"
        )
    return problems


def const_axis_problems(
    declaration: OperatorDeclaration, fitting: list[tuple[SeenCall, Binding]]
) -> list[str]:
    """A const axis has one size in every call, no larger than the declared one."""
    problems = []
    for axis in declaration.axes:
        if axis.kind != "const":
            continue
        seen = sorted({b.sizes[axis.name] for _, b in fitting if axis.name in b.sizes})
        if len(seen) > 1:
            problems.append(
                f"axis {axis.name} is declared const but the call sites pass sizes {seen}; "
                "declare it var with a workload per size"
            )
        elif seen and not _covers(axis.value or 0, seen[0]):
            problems.append(
                f"axis {axis.name} is declared const {axis.value} but the call sites pass {seen[0]}"
            )
    return problems


def workload_coverage(
    declaration: OperatorDeclaration, fitting: list[tuple[SeenCall, Binding]]
) -> tuple[dict[str, int], list[str]]:
    """Calls per declared workload (each call served by the smallest workload that covers it),
    and a problem for each call no workload covers."""
    workloads = declaration.workloads
    served = {workload.name: 0 for workload in workloads}
    problems = []
    for call, binding in fitting:
        workload = serving_workload(workloads, binding)
        if workload is None:
            var = {a.name: binding.sizes.get(a.name) for a in declaration.axes if a.kind == "var"}
            declared = "; ".join(f"{w.name} {w.axes}" for w in workloads)
            problems.append(
                f"no declared workload covers {var} ({call.count} calls from "
                f"{', '.join(call.sites)}); declared: {declared}"
            )
        else:
            served[workload] += call.count
    return served, problems


def serving_workload(workloads: tuple[Workload, ...], binding: Binding) -> str | None:
    """The smallest declared workload at least as large as the call in every var axis."""
    covering = [
        w
        for w in workloads
        if all(_covers(size, binding.sizes.get(axis, 0)) for axis, size in w.axes.items())
    ]
    if not covering:
        return None
    return min(covering, key=lambda w: _product(w.axes.values())).name


def weight_problems(declaration: OperatorDeclaration, served: dict[str, int]) -> list[str]:
    """Among the workloads that serve calls, each one's weight share follows its call share."""
    weights = {w.name: w.weight for w in declaration.workloads}
    used = {name: count for name, count in served.items() if count}
    total_calls, total_weight = sum(used.values()), sum(weights[name] for name in used)
    problems = []
    for name, count in used.items():
        call_share, weight_share = count / total_calls, weights[name] / total_weight
        if not 1 / WEIGHT_FACTOR <= weight_share / call_share <= WEIGHT_FACTOR:
            problems.append(
                f"workload {name} has {weight_share:.0%} of the weight but serves "
                f"{call_share:.0%} of the calls ({count} of {total_calls}); weigh workloads "
                "by how often the call sites run them"
            )
    return problems


def declared_view(declaration: OperatorDeclaration) -> dict[str, Any]:
    """The declaration as a reviewer reads it: contract with reason, axes, workloads."""
    contract = declaration.contract
    mode = contract.mode
    if mode == "no_less_accurate":
        mode = f"no_less_accurate than stock ({contract.roundings} BF16 roundings expected)"
    axes = [
        f"{a.name}={a.value}" if a.kind == "const" else f"{a.name} (var)" for a in declaration.axes
    ]
    tensors = [
        f"{spec.name}: {spec.dtype}[{', '.join(spec.shape)}]"
        for spec in declaration.inputs + declaration.outputs
    ]
    workloads = [f"{w.name} {w.axes} weight {w.weight:g}" for w in declaration.workloads]
    return {
        "contract": f"{mode}: {contract.reason}",
        "axes": axes,
        "tensors": tensors,
        "params": dict(declaration.params),
        "workloads": workloads,
    }


def declaration_markdown(details: dict[str, Any]) -> list[str]:
    """Report lines: the declaration as the registry resolves it beside the calls seen."""
    declared = details["declaration"]
    params = ", ".join(f"{k}={v}" for k, v in declared["params"].items()) or "none"
    lines = [
        f"- contract: {declared['contract']}",
        f"- axes: {', '.join(declared['axes'])}",
        f"- tensors: {'; '.join(declared['tensors'])}",
        f"- params: {params}",
        f"- workloads: {'; '.join(declared['workloads'])}",
        "",
        "| call sites | call (dtype[shape]) | calls | axes | served by workload |",
        "| --- | --- | --- | --- | --- |",
    ]
    for seen in details["seen"]:
        axes = ", ".join(f"{a}={n}" for a, n in seen.get("axes", {}).items())
        served = seen.get("workload") or seen.get("problem") or "none covers it"
        lines.append(
            f"| {', '.join(seen['sites'])} | {seen['call']} | {seen['count']} | {axes} | {served} |"
        )
    if not details["seen"]:
        lines.append("| (no call recorded) | | | | |")
    lines += [f"- problem: {problem}" for problem in details.get("problems", [])]
    return lines


def _seen_view(call: SeenCall, binding: Binding, workloads: tuple[Workload, ...]) -> dict[str, Any]:
    view = {"sites": list(call.sites), "call": call.describe(), "count": call.count}
    if binding.problem:
        view["problem"] = binding.problem
    else:
        view["axes"] = binding.sizes
        view["workload"] = serving_workload(workloads, binding)
    return view


def _covers(declared: int, seen: int) -> bool:
    return declared == 0 if seen == 0 else declared >= seen


def _product(sizes) -> int:
    total = 1
    for size in sizes:
        total *= size
    return total
