"""Gate 2, structure: the operator is declared with a reference and every selected call site
now calls `ops.<operator>(...)` instead of computing the math inline.

The check is on the syntax tree: a site must contain a registry call and must no longer contain
the calls the reference is made of that the site made at BASE (for `gelu_tanh`, the old
`F.gelu(..., approximate="tanh")`). A call that takes the registry call's result, or a value
computed from it, is downstream of it, not the expression it replaced (a fused MLP's down
projection after `ops.gated_gelu_projection`, attention's output projection after
`ops.qkv_projection`), so it is not held against the site.

Its details also list the conditions in the new reference that read an input
(`input_branches`), which the register report shows the reviewer; they refuse nothing.
"""

import ast
import time
from pathlib import Path

from gates.registration.call_sites import CallSite, FunctionNode, find_function, locate, parse_file
from gates.registration.input_branches import input_branches
from gates.registration.probes import ProbeResult
from gates.target import TargetConfig
from gates.verdict import Verdict, first_of

GATE = "structure"

Signature = tuple[str, frozenset]


def check(
    base: Path,
    candidate: Path,
    config: TargetConfig,
    operator: str,
    sites: list[CallSite],
    probe: ProbeResult,
) -> Verdict:
    """Judge the declaration (from the candidate's probe) and each call site (from its AST)."""
    started = time.monotonic()
    problems: list[str] = []
    declaration = _declaration(probe, config, operator, problems)
    function = _reference_function(candidate, declaration) if declaration else None
    reference = _reference_signatures(function) if function is not None else set()
    branches = input_branches(function) if function is not None else []
    routed = {}
    for site in sites:
        found = _site_problem(base, candidate, site, operator, reference)
        routed[str(site)] = found is None
        if found:
            problems.append(found)
    details = {
        "routed": routed,
        "reference": declaration,
        "problems": problems,
        "input_branches": [branch.model_dump() for branch in branches],
    }
    seconds = time.monotonic() - started
    if problems:
        return Verdict(
            gate=GATE, passed=False, summary=first_of(problems), details=details, seconds=seconds
        )
    summary = (
        f"{operator} is declared with a reference; {len(sites)} call sites call ops.{operator}"
    )
    return Verdict(gate=GATE, passed=True, summary=summary, details=details, seconds=seconds)


def _declaration(probe: ProbeResult, config: TargetConfig, operator: str, problems: list[str]):
    if probe.problem:
        problems.append(probe.problem)
        return None
    declaration = (probe.declaration or {}).get("operator")
    if declaration is None:
        problems.append(f"operator {operator!r} is not registered by {config.registry_module}")
    return declaration


def _site_problem(base, candidate, site, operator, reference) -> str | None:
    function = locate(candidate, site)
    if function is None:
        return f"call site {site} no longer exists in the candidate"
    if not any(_is_registry_call(call, operator) for call in _calls(function)):
        return f"call site {site} does not call ops.{operator}(...)"
    before = locate(base, site)
    old = {sig for sig in map(_signature, _calls(before)) if sig and _matches(sig, reference)}
    results = _registry_results(function, operator)
    for call in _calls(function):
        signature = _signature(call)
        if signature and signature in old and not _takes_registry_result(call, operator, results):
            return f"call site {site} still calls {ast.unparse(call)} (the old expression)"
    return None


def _registry_results(function: FunctionNode, operator: str) -> set[str]:
    """Names the site assigns from its registry call, or from values computed from those
    (attention's output projection reads what attention made of the projected queries)."""
    assignments = [node for node in ast.walk(function) if isinstance(node, ast.Assign)]
    names: set[str] = set()
    while True:
        grown = set(names)
        for node in assignments:
            if _holds_registry_call(node.value, operator) or _reads(node.value, names):
                for target in node.targets:
                    grown |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if grown == names:
            return names
        names = grown


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _takes_registry_result(call: ast.Call, operator: str, results: set[str]) -> bool:
    """Whether an argument of `call` is the registry call or a name bound to its result."""
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        if _holds_registry_call(argument, operator):
            return True
        if _reads(argument, results):
            return True
    return False


def _holds_registry_call(node: ast.AST, operator: str) -> bool:
    return any(
        isinstance(inner, ast.Call) and _is_registry_call(inner, operator)
        for inner in ast.walk(node)
    )


def _calls(function: FunctionNode | None) -> list[ast.Call]:
    if function is None:
        return []
    return [node for node in ast.walk(function) if isinstance(node, ast.Call)]


def _is_registry_call(call: ast.Call, operator: str) -> bool:
    callee = call.func
    if not isinstance(callee, ast.Attribute) or callee.attr != operator:
        return False
    owner = callee.value
    return (isinstance(owner, ast.Name) and owner.id == "ops") or (
        isinstance(owner, ast.Attribute) and owner.attr == "ops"
    )


def _signature(call: ast.Call) -> Signature | None:
    """(callee's last name, constant keyword arguments) for module-function calls like F.gelu."""
    callee = call.func
    if not isinstance(callee, ast.Attribute):
        return None
    keywords = frozenset(
        (k.arg, repr(k.value.value))
        for k in call.keywords
        if k.arg and isinstance(k.value, ast.Constant)
    )
    return callee.attr, keywords


def _matches(signature: Signature, reference: set[Signature]) -> bool:
    name, keywords = signature
    return any(name == r_name and r_keywords <= keywords for r_name, r_keywords in reference)


def _reference_function(candidate: Path, declaration: dict) -> FunctionNode | None:
    module = parse_file(candidate, declaration.get("reference_file", ""))
    return find_function(module, declaration.get("reference_qualname", "")) if module else None


def _reference_signatures(function: FunctionNode) -> set[Signature]:
    """Module-function calls the reference makes (`F.gelu(x, approximate="tanh")`)."""
    local = {a.arg for a in function.args.args + function.args.kwonlyargs}
    local |= {
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    signatures = set()
    for call in _calls(function):
        owner = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(owner, ast.Name | ast.Attribute) and not (
            isinstance(owner, ast.Name) and owner.id in local
        ):
            signature = _signature(call)
            if signature:
                signatures.add(signature)
    return signatures
