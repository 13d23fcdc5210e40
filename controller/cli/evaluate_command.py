"""`controller evaluate`: judge one solution on one task package in fresh evaluator processes."""

import json
import sys
from pathlib import Path

EXIT_PASSED = 0
EXIT_FAILED = 1


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        epilog=(
            "example: controller evaluate runs/tasks/rms_norm "
            "--solution runs/tasks/rms_norm/solution --device cpu"
        ),
        help="evaluate a solution on a task package",
        description=(
            "Check a solution against its task's contract on every workload, seed and input "
            "distribution plus hidden workloads, with the cheat detectors armed; on CUDA also "
            "time it against the baseline. Exit 0 when PASSED, 1 otherwise (EVALUATOR_ERROR: "
            "the evaluator failed, not the solution), 2 on bad input."
        ),
    )
    parser.add_argument("task", type=Path, help="task package folder (from `controller generate`)")
    parser.add_argument(
        "--solution", type=Path, required=True, help="solution folder or solution JSON file"
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per phase")
    parser.add_argument("--incumbent", type=Path, help="a solution to time alongside (CUDA)")
    parser.add_argument(
        "--fence",
        choices=("none", "landlock"),
        default="none",
        help="run the candidate worker inside this fence (landlock: no network, writes only "
        "to the evaluation's folders)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from controller.errors import ControllerError

    # Checked before the evaluator (and torch) loads: a wrong path answers in a moment.
    if not arguments.task.is_dir():
        raise ControllerError(
            f"task package {arguments.task} does not exist; run `controller generate`"
        )
    for flag, path in (("--solution", arguments.solution), ("--incumbent", arguments.incumbent)):
        if path is not None and not path.exists():
            raise ControllerError(
                f"{flag} {path} does not exist; pass a folder or a solution JSON file"
            )
    from controller.runs.progress import Progress
    from gates.evaluator.evaluation import evaluate
    from gates.evaluator.traces import result_traces
    from gates.tasks.package import load_task

    with Progress(stream=sys.stderr).listening():  # the evaluator's phases, as they happen
        result = evaluate(
            arguments.task,
            arguments.solution,
            device=arguments.device,
            timeout=arguments.timeout,
            incumbent=arguments.incumbent,
            fence=arguments.fence,
        )
    if arguments.json:
        document = result.model_dump(mode="json")
        traces = result_traces(result, load_task(arguments.task))
        document["traces"] = [trace.model_dump(mode="json", exclude_none=True) for trace in traces]
        print(json.dumps(document, indent=2))
    else:
        _print_summary(result)
    return EXIT_PASSED if result.status == "PASSED" else EXIT_FAILED


def _print_summary(result) -> None:
    """The verdict, its integrity level and notes, and one line per timed workload."""
    level = f", {result.integrity} verdict" if result.integrity else ""
    print(f"{result.operator}: {result.status}  ({result.seconds:.1f} s{level})")
    if result.reason:
        print(f"  reason: {result.reason}")
    for note in result.notes:
        print(f"  note: {note}")
    if result.timing is None:
        return
    for name, row in result.timing.workloads.items():
        cold = f", cold {row.candidate_cold_us:.2f} us" if row.candidate_cold_us else ""
        print(
            f"  {name}: {row.candidate_median_us:.2f} us{cold} "
            f"(baseline {row.baseline_median_us:.2f} us, x{row.speedup or 0:.3f}, "
            f"{row.method})"
        )
    promotion = result.timing.promotion
    if promotion is not None:
        print(f"  promoted: {promotion.promoted} ({promotion.reason})")
