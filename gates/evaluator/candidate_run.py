"""The candidate process: import the solution behind the detectors, call it on every case,
and hand its outputs to the judge; on CUDA, also time it against the baseline.

This process never holds a reference output: those exist only in the judge process, which
never imports the solution. Inputs are drawn before the import from seeds derived from the
request's nonce, so the solution cannot know them ahead of time.
"""

from pathlib import Path

import torch

from gates.evaluator import loading, process_boundary  # before the guard's module snapshot
from gates.evaluator.captured_cases import case_inputs, load_captured, timed_declaration
from gates.evaluator.cases import plan_cases
from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.compute_fallback import LIBRARY_PRODUCTS
from gates.evaluator.detectors.table import finding_of
from gates.evaluator.guard import CandidateCallError, CandidateGuard
from gates.evaluator.phase_clock import PhaseClock
from gates.evaluator.protocol import CandidateReport, EvaluationRequest, evaluator_fault
from gates.evaluator.reference_fingerprints import take_fingerprints
from gates.evaluator.replay_witnesses import WitnessLog
from gates.evaluator.timing import time_roles  # imported before the guard's module snapshot
from gates.tasks.package import TaskPackage
from gates.tasks.solution import Solution, load_solution


def run_candidate(
    request: EvaluationRequest, task: TaskPackage, solution: Solution, declaration
) -> CandidateReport:
    """Run every case; the first detector or error ends the run with its status. The
    declaration is copied first: the registry's object is reachable from the solution
    (`import operators`) and its frozen fields yield to `object.__setattr__`, so every check
    made after the import reads the evaluator's own copy (a widened contract there would
    widen the timed outputs' comparison). A change to the registry's object is a patch the
    identity snapshot names (its declarations are public module-level models)."""
    declaration = declaration.model_copy(deep=True)
    clock = PhaseClock()
    device = torch.device(request.device)
    captured = load_captured(Path(request.task))
    cases = plan_cases(declaration, request.nonce, request.device, tuple(captured))
    pristine = {
        case.key: case_inputs(declaration, case, device, request, captured) for case in cases
    }
    clock.lap("inputs")
    work = Path(request.work_dir)
    outputs_path = work / "candidate_outputs.pt"
    outputs_handle = open(outputs_path, "wb")  # noqa: SIM115  (opened before the solution runs)
    extra_ops = list(task.evaluation.get("extra_allowed_ops", []))
    if task.evaluation.get("library_products", False):
        extra_ops += sorted(LIBRARY_PRODUCTS)
    sources = Path(request.sources_dir)
    protected = [Path(request.task), Path(request.solution)]
    compute_rules = request.judged_as == "candidate"
    guard = CandidateGuard(
        declaration, device, work, sources, solution, extra_ops, protected, compute_rules
    )
    if not compute_rules:
        guard.notes.append(
            "judged as the task's baseline: by its numerics and timing; the compute rules a "
            "candidate is held to were not applied"
        )
    clock.lap("guard")
    clock.laps.update({f"guard_{step}": value for step, value in guard.setup_seconds.items()})
    roles, fingerprints = {}, None
    timed = timed_declaration(declaration, captured)  # a capture's workloads
    if device.type == "cuda":
        roles = _import_reference_roles(request, task, sources, guard)
        clock.lap("roles")
        fingerprints = _reference_fingerprints(timed, roles, device, request.nonce, guard)
        clock.lap("fingerprints")
    else:
        clock.lap("roles")
    header = {
        "nonce": request.nonce,
        "task_digest": request.task_digest,
        "solution_digest": request.solution_digest,
    }
    _close_process_creation(guard, device)
    try:
        function = guard.import_solution()
        clock.lap("import")
        records, outputs, hidden_errors = guard.run_cases(function, cases, pristine)
        clock.lap("cases")
        timing, witnesses = None, WitnessLog()
        if device.type == "cuda":
            roles["candidate"] = function
            graphs_required = bool(task.evaluation.get("cuda_graphs", False))
            figure = task.evaluation.get("promotion_figure")  # warm, cold, or by L2 size
            timing = time_roles(
                request, timed, guard, roles, graphs_required, figure, fingerprints, witnesses
            )
            clock.lap("timing")
        guard.check_environment("before the outputs are written")
        # The solution's calls of where or when it runs, reported after the judge's verdict so
        # a cheat another detector names keeps its class; the reads its sources spell are
        # found by the evaluating process, which never runs it (evaluation.spelled_probes).
        last_findings = [finding_of(cheat) for cheat in guard.environment_queries.findings]
    except CheatDetected as cheat:
        finding = finding_of(cheat)
        return CandidateReport(
            **header,
            status="REJECTED",
            reason=f"{finding.detector}: {cheat.reason}",
            findings=[finding],
        )
    except loading.SolutionImportError as error:
        return CandidateReport(**header, status="COMPILE_ERROR", reason=str(error))
    except CandidateCallError as error:
        return CandidateReport(**header, status=error.status, reason=str(error))
    except Exception as error:  # the evaluator's own code failed: not the solution's fault
        return CandidateReport(**header, status="EVALUATOR_ERROR", reason=evaluator_fault(error))
    finally:
        guard.disarm()
    torch.save({**outputs, **witnesses.outputs}, outputs_handle)
    outputs_handle.close()
    clock.lap("save")
    return CandidateReport(
        **header,
        status="RAN",
        last_findings=last_findings,
        cases=records,
        hidden_errors=hidden_errors,
        outputs_file=str(outputs_path),
        timing=timing,
        witnesses=witnesses.records,
        integrity="graph" if timing is not None and timing.cuda_graphs else "traced",
        notes=guard.notes,
        library_calls=sorted(guard.library_calls),
        phase_seconds=clock.laps,
    )


def _close_process_creation(guard: CandidateGuard, device: torch.device) -> None:
    """From here on no process can be started from this worker on the CPU, and on CUDA none
    outside its lineage (process_boundary.py). On the CPU the filter also refuses the
    anonymous executable memory oneDNN's JIT writes its kernels to, so Torch's oneDNN path is
    turned off first: a BFloat16 `F.linear` (the production path of the projection operators)
    then runs ATen's own compiled product instead of failing with "could not create a
    primitive"."""
    if device.type == "cpu":
        torch.backends.mkldnn.enabled = False
    try:
        process_boundary.install(processes_allowed=device.type == "cuda")
    except process_boundary.BoundaryUnavailable as why:
        guard.notes.append(f"process creation stays open on this machine ({why})")


def _reference_fingerprints(timed, roles: dict, device, nonce: str, guard) -> dict | None:
    """The reference roles' calls captured before the import, per timed workload (see
    `detectors/reference_graphs.py`); None, with a note, when they cannot be captured here:
    nothing of the solution has run yet, so this is the machine's failing, not its."""
    try:
        return take_fingerprints(timed, roles, device, nonce)
    except Exception as error:
        guard.notes.append(
            f"timing: the reference roles' graphs go unchecked ({evaluator_fault(error)})"
        )
        return None


def _import_reference_roles(request, task, sources: Path, guard: CandidateGuard) -> dict:
    """Import the baseline (and incumbent) before the candidate, and watch their modules."""
    roles = {}
    solutions = {"baseline": task.baseline}
    if request.incumbent:
        solutions["incumbent"] = load_solution(Path(request.incumbent))
    for role, solution in solutions.items():
        folder = loading.write_sources(solution, loading.deployment_folder(sources, role, solution))
        roles[role] = loading.import_entry(solution, folder, role)
        guard.watch_more(loading.solution_modules(role))
    return roles
