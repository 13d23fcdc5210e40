"""`python -m gates.evaluator.worker PHASE REQUEST REPORT [CANDIDATE_REPORT]`: one phase of
an evaluation in a fresh process.

Phase `candidate` imports and runs the solution; phase `judge` computes the references and
checks the candidate's outputs without ever importing the solution. Exit 0 means a report
was written; exit 3 means the input was bad (message on stderr).

The controller starts the judge while the candidate still runs, held: it imports its
modules, then waits for a line on stdin before it touches the device or reads anything the
candidate wrote, and verifies the task and solution digests again once released.
"""

import json
import os
import sys
from pathlib import Path

EXIT_BAD_INPUT = 3
_exit = os._exit  # taken before any solution is imported: a replaced os._exit never runs
HOLD_VARIABLE = "CONTROLLER_WORKER_HELD"


def main(argv: list[str]) -> int:
    phase, request_path, report_path = argv[0], Path(argv[1]), Path(argv[2])
    request_data = json.loads(request_path.read_text())
    if request_data["device"] == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    from gates.errors import GateError
    from gates.evaluator.protocol import CandidateReport, EvaluationRequest, write_json_atomic

    request = EvaluationRequest.model_validate(request_data)
    try:
        task, solution, declaration = _load_inputs(request)
    except GateError as error:
        print(str(error), file=sys.stderr)
        return EXIT_BAD_INPUT
    if phase == "candidate":
        from gates.evaluator.candidate_run import run_candidate

        report = run_candidate(request, task, solution, declaration)
    elif phase == "judge":
        from gates.evaluator.judge import run_judge

        if os.environ.pop(HOLD_VARIABLE, None):
            # No CUDA context before release: in the one H200 run where the held judge made
            # one, a timing round of the candidate ran 3x slower.
            if not sys.stdin.readline().strip():
                return 0  # cancelled: the candidate phase ended without outputs to judge
            try:
                task, solution, declaration = _load_inputs(request)
            except GateError as error:
                print(str(error), file=sys.stderr)
                return EXIT_BAD_INPUT
        candidate = CandidateReport.model_validate_json(Path(argv[3]).read_text())
        report = run_judge(request, declaration, candidate)
    else:
        print(f"unknown phase {phase!r}", file=sys.stderr)
        return EXIT_BAD_INPUT
    write_json_atomic(report_path, report)
    sys.stdout.flush()
    _exit(0)


def _load_inputs(request):
    """The task, solution and declaration, each re-verified against the request's digests."""
    from gates.errors import GateError
    from gates.tasks.package import load_task
    from gates.tasks.solution import load_solution
    from operators import REGISTRY

    task = load_task(Path(request.task))
    if task.digest != request.task_digest:
        raise GateError("task package changed after the evaluation started (digest mismatch)")
    solution = load_solution(Path(request.solution))
    if solution.digest() != request.solution_digest:
        raise GateError("solution changed after the evaluation started (digest mismatch)")
    return task, solution, REGISTRY.declaration(task.definition.name)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
