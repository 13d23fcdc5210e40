"""Gate: every kernel source a candidate changes or adds meets its contract at declared workloads.

The parity runs use a tiny model, so a kernel that is right only at tiny sizes (a block capped
below the real hidden width) passes them. Here each preferred kernel whose code or dependency
files differ from BASE, and each new operator's, runs on the evaluator's CPU case plan: the
declared workloads scaled for the Triton interpreter (const axes keep their real sizes, so
every block boundary the real sizes cross is crossed), plus the plan's hidden sizes. A BASE
operator is held to BASE's declaration; the outputs are judged here, by the controller. The
runner then describes every operator again, and each of BASE's must still be what BASE's
snapshot says (`operator_identity.changed_after_run`): a kernel that, once run at a real size,
changes another operator's launch table is rejected here.
"""

import json
import sys
from pathlib import Path

import torch

from gates.evaluator.cases import Case, plan_cases
from gates.registration.commands import CommandRunner
from gates.registration.operator_identity import changed_after_run
from gates.registration.snapshots import (
    SNAPSHOT_SCRIPT,
    OperatorSnapshot,
    RegistrySnapshot,
    file_digests,
)
from gates.target import TargetConfig
from gates.verdict import Verdict
from operators import fp64_oracle
from operators.accuracy import AccuracyCheck, stock_loosening
from operators.declaration import OperatorDeclaration

GATE = "kernel_workloads"
AFTER_KERNELS = "after the kernels ran at their workloads"
RUNNER_SCRIPT = Path(__file__).with_name("kernel_workload_runner.py")

ORACLE_SCRIPT = Path(fp64_oracle.__file__)
"""Loaded by the runner from this file, so the FP64 oracle is the controller's own."""


def kernels_to_run(
    base_tree: Path, candidate_tree: Path, base: RegistrySnapshot, candidate: RegistrySnapshot
) -> dict[str, OperatorSnapshot]:
    """Operators with a preferred kernel whose identity or dependency files the candidate
    changed or added, each with the declaration it is judged by (BASE's where BASE has one)."""
    chosen = {}
    for name, after in sorted(candidate.operators.items()):
        if after.preferred is None:
            continue
        before = base.operators.get(name)
        if before is None:
            chosen[name] = after
            continue
        changed = before.preferred != after.preferred or before.resolved != after.resolved
        changed = changed or before.stock != after.stock  # the stock sets the contract
        old, new = file_digests(base_tree, after.files), file_digests(candidate_tree, after.files)
        if changed or old != new:
            chosen[name] = before.model_copy(update={"preferred": after.preferred})
    return chosen


def check(
    base_tree: Path,
    candidate_tree: Path,
    base: RegistrySnapshot,
    candidate: RegistrySnapshot,
    config: TargetConfig,
    runner: CommandRunner,
    workdir: Path,
    nonce: str,
    timeout: float = 300,
) -> Verdict:
    """Run the chosen kernels on their planned cases and apply each one's contract."""
    for label, snapshot in (("BASE: ", base), ("", candidate)):
        if snapshot.problem:
            return Verdict(gate=GATE, passed=False, summary=f"{label}{snapshot.problem}")
    chosen = kernels_to_run(base_tree, candidate_tree, base, candidate)
    if not chosen:
        summary = "no preferred kernel source is changed or added"
        return Verdict(gate=GATE, passed=True, summary=summary, details={"operators": {}})
    try:
        declarations = {name: snapshot.typed_declaration() for name, snapshot in chosen.items()}
    except ValueError as error:
        return Verdict(gate=GATE, passed=False, summary=str(error))
    plans = {name: plan_cases(d, nonce, "cpu") for name, d in declarations.items()}
    out = workdir / "kernel-workloads"
    out.mkdir(parents=True, exist_ok=True)
    request = out / "request.json"
    request.write_text(
        json.dumps({"operators": {n: [c.model_dump() for c in p] for n, p in plans.items()}})
    )
    argv = [sys.executable, "-I", "-B", str(RUNNER_SCRIPT), "--tree", str(candidate_tree)]
    argv += ["--out", str(out), "--registry-module", config.registry_module]
    argv += ["--request", str(request), "--snapshot-script", str(SNAPSHOT_SCRIPT)]
    oracle = out / ORACLE_SCRIPT.name  # where the fenced runner may read it
    oracle.write_bytes(ORACLE_SCRIPT.read_bytes())
    argv += ["--oracle-script", str(oracle)]
    result = runner.run(argv, candidate_tree, writable=(out,), timeout=timeout)
    (out / "runner.log").write_text(result.output)
    if result.timed_out:
        return Verdict(gate=GATE, passed=False, summary=f"the kernels ran past {timeout:.0f} s")
    result_file = out / "result.json"
    if not result_file.is_file():
        summary = f"the kernel runner exited {result.returncode} without a result"
        return Verdict(gate=GATE, passed=False, summary=summary)
    try:
        ran = json.loads(result_file.read_text())
        ran["operators"] = {name: list(ran["operators"].get(name) or []) for name in plans}
    except (ValueError, TypeError, KeyError, AttributeError):
        return Verdict(gate=GATE, passed=False, summary="the kernel runner's result is malformed")
    if ran.get("import_error"):
        summary = f"importing the registry failed: {ran['import_error']}"
        return Verdict(gate=GATE, passed=False, summary=summary)
    details = {"operators": {name: len(plan) for name, plan in plans.items()}}
    for name, plan in plans.items():
        problem = _first_problem(
            name, declarations[name], plan, ran["operators"].get(name), out / name
        )
        if problem:
            return Verdict(gate=GATE, passed=False, summary=problem, details=details)
    changed = changed_after_run(base, _after_run(out, ran.get("registry_after_run")), AFTER_KERNELS)
    if changed:
        return Verdict(gate=GATE, passed=False, summary=changed[0], details=details)
    counts = ", ".join(f"{name} on {len(plan)} cases" for name, plan in plans.items())
    summary = f"changed or added kernels meet their contracts at the declared workloads: {counts}"
    return Verdict(gate=GATE, passed=True, summary=summary, details=details)


def _after_run(out: Path, described) -> RegistrySnapshot:
    """The runner's description after the kernels ran, typed; `failure` where it is missing or
    malformed (it was written by the candidate's process)."""
    if not isinstance(described, dict):
        return RegistrySnapshot(folder=str(out), failure="the kernel runner described no operator")
    try:
        return RegistrySnapshot.model_validate({**described, "folder": str(out)})
    except (ValueError, TypeError):
        return RegistrySnapshot(
            folder=str(out), failure="the kernel runner's description is malformed"
        )


def _first_problem(
    name: str, declaration: OperatorDeclaration, plan: list[Case], ran, folder: Path
) -> str | None:
    if not ran or len(ran) != len(plan):
        return f"{name}: the kernel runner did not run every planned case"
    contract = declaration.contract
    outputs = [spec.name for spec in declaration.outputs]
    consts = {axis.name: axis.value for axis in declaration.axes if axis.kind == "const"}
    for case, record in zip(plan, ran, strict=True):
        sizes = ", ".join(f"{axis}={size}" for axis, size in {**consts, **case.axes}.items())
        where = f"{name}'s preferred kernel at workload {case.workload} ({sizes}; {case.key})"
        try:
            if record["error"]:
                return f"{where} raised {record['error']}"
            saved = torch.load(folder / Path(record["file"]).name, weights_only=True)
            parts = ["got", "expected"]
            if contract.mode != "bit_exact":
                parts += ["exact", "stock", "terms"]
            saved = {part: list(saved[part]) for part in parts}
        except Exception as error:  # written by the candidate's process: anything may be wrong
            return f"{where}: its outputs could not be read back ({type(error).__name__})"
        if any(len(saved[part]) != len(outputs) for part in parts):
            return f"{where} returned {len(saved['got'])} outputs, not {len(outputs)}"
        try:
            check = AccuracyCheck(
                declaration,
                saved["expected"],
                saved.get("exact"),
                saved.get("stock"),
                saved.get("terms"),
            )
        except (TypeError, ValueError, RuntimeError) as error:
            return f"{where}: its reference outputs are malformed ({type(error).__name__})"
        for index, (output, got) in enumerate(zip(outputs, saved["got"], strict=True)):
            if check.bounds and (loose := stock_loosening(check.bounds[index])):
                return f"{name} at workload {case.workload} ({case.key}), output {output}: {loose}"
            violation = check.output_violation(index, output, got)
            if violation is not None:
                return f"{where} breaks its {contract.mode} contract: {violation.describe()}"
    return None
