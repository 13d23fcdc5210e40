"""`python -m controller.screening.worker TASK SOLUTION POINTS OUT [options]`: screen the
points listed in POINTS (JSON: [[index, point], ...]) of SOLUTION on TASK, one JSON line per
point appended to OUT. The autotune agent runs it inside the fence.

On CUDA, `--jobs N` first compiles every point in N child processes (`--compile-shard`), which
fill the Triton cache this process then reads: compiling is most of a point's cost (a
flash-attention point compiles for a second or more, its timing takes a tenth of that), and
the children compile side by side while the timing stays in one process on a quiet device.
Each child lists the points it got through; the timing pass then takes only those, so no point
it times compiles there, past the budget.
Exit 0 when the listed points were reached or the budget ran out, 4 when the device context
failed (OUT says at which point; start again after it), 3 for bad input.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

EXIT_BAD_INPUT = 3
EXIT_DEVICE_LOST = 4
COMPILE_SHARE = 0.6  # of the budget for compiling ahead; the rest times what was compiled
COMPILED_LIST = "compiled.txt"  # beside OUT: the indices the compiling children got through


def main(argv: list[str]) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported
    deadline = time.monotonic() + arguments.budget_s
    points = [(int(index), point) for index, point in json.loads(arguments.points.read_text())]
    if arguments.compile_shard:
        shard, shards = (int(part) for part in arguments.compile_shard.split("/"))
        return _compile_shard(arguments, points[shard::shards], deadline)
    if arguments.device == "cuda" and arguments.jobs > 1 and len(points) > arguments.jobs:
        listed = arguments.out.with_name(COMPILED_LIST)
        listed.unlink(missing_ok=True)
        compile_ahead(
            [*argv, "--compiled-list", str(listed)],
            arguments.jobs,
            time.monotonic() + COMPILE_SHARE * arguments.budget_s,
        )
        points = compiled_first(points, _indices(listed))
    from gates.errors import GateError

    try:
        solution, timed, check_workloads, declaration, production = _load(arguments)
    except GateError as error:
        print(str(error), file=sys.stderr)
        return EXIT_BAD_INPUT
    import torch

    from controller.screening.screen import ContractCheck, DeviceLost, screen_points
    from controller.screening.timer import GraphTimer

    device = torch.device(arguments.device)
    timer = None
    if device.type == "cuda":
        l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
        baseline = _production_kernel(production)
        timer = GraphTimer(timed, arguments.figure, l2_bytes, device, production=baseline)
        print(json.dumps({"figures": timer.figures}), file=sys.stderr)
    check = ContractCheck(declaration, check_workloads, device)
    with arguments.out.open("a") as out:
        try:
            screen_points(solution, points, check, timer, out, deadline)
        except DeviceLost as error:
            print(f"device context lost: {error}", file=sys.stderr)
            return EXIT_DEVICE_LOST
    return 0


def _load(arguments):
    """The solution, what timing runs (a captured task's workloads), the workloads checked
    (scaled down for the interpreter on the CPU), the declaration the check uses, and the
    task's production kernel."""
    from gates.evaluator.captured_cases import load_captured, timed_declaration
    from gates.tasks.package import load_task
    from gates.tasks.solution import load_solution
    from operators import REGISTRY
    from operators.catalog.checking import scaled_down

    task = load_task(arguments.task)
    solution = load_solution(arguments.solution)
    declaration = REGISTRY.declaration(task.definition.name)
    if arguments.device == "cpu":  # one small case: the interpreter has no timing anyway
        small = scaled_down(declaration)
        return solution, None, small.workloads[-1:], small, task.baseline
    timed = timed_declaration(declaration, load_captured(arguments.task))
    return solution, timed, timed.workloads, timed, task.baseline


def _production_kernel(baseline):
    """The task's production kernel, imported as its own package: timed beside every point."""
    import tempfile

    from gates.evaluator.loading import import_entry, write_sources

    folder = write_sources(baseline, Path(tempfile.mkdtemp(prefix="production-")))
    return import_entry(baseline, folder, "screen_production")


def compiled_first(points: list, compiled: set[int]) -> list:
    """The points the children got through, in order; all of them where they got through none
    (the timing pass then compiles as it goes, bounded by its longest point)."""
    through = [(index, point) for index, point in points if index in compiled]
    return through or points


def _indices(listed: Path) -> set[int]:
    try:
        return {int(line) for line in listed.read_text().split() if line.isdigit()}
    except OSError:
        return set()


def compile_ahead(argv: list[str], jobs: int, deadline: float) -> None:
    """Compile every point in `jobs` children before this process touches the device."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "controller.screening.worker", *argv]
    children = []
    for shard in range(jobs):
        try:
            children.append(
                subprocess.Popen(
                    [*command, "--compile-shard", f"{shard}/{jobs}"],
                    env=environment,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        except OSError as error:  # a process limit: the timing pass takes what these compile
            print(f"compiling ahead in {len(children)} processes ({error})", file=sys.stderr)
            break
    for child in children:
        try:
            child.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _compile_shard(arguments, points, deadline: float) -> int:
    """Call every point of this shard once per workload; errors are the screen's to report."""
    import tempfile

    import torch

    from controller.screening.screen import forget_point, load_point

    solution, timed, _, _, _ = _load(arguments)
    device = torch.device(arguments.device)
    inputs = [timed.make_input_sets(w, 1, 0, "normal", device)[0] for w in timed.workloads]
    with tempfile.TemporaryDirectory(prefix="compile-") as scratch:
        for index, point in points:
            if time.monotonic() >= deadline:
                break
            tag = f"compile_{index}"
            try:
                function = load_point(solution, point, Path(scratch), tag)
                for one in inputs:
                    function(*one, **timed.params)
                torch.cuda.synchronize(device)
            except Exception:
                if not _synchronizes(torch, device):
                    return EXIT_DEVICE_LOST
            finally:
                forget_point(tag)
            if arguments.compiled_list is not None:  # one short line: appended whole
                with arguments.compiled_list.open("a") as listed:
                    listed.write(f"{index}\n")
    return 0


def _synchronizes(torch, device) -> bool:
    try:
        torch.cuda.synchronize(device)
    except Exception:
        return False
    return True


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m controller.screening.worker")
    parser.add_argument("task", type=Path)
    parser.add_argument("solution", type=Path)
    parser.add_argument("points", type=Path, help="JSON list of [index, point]")
    parser.add_argument("out", type=Path, help="JSON lines, one ScreenedPoint per point")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--budget-s", type=float, default=240.0)
    parser.add_argument("--jobs", type=int, default=1, help="compiling processes on CUDA")
    parser.add_argument("--figure", choices=("warm", "cold"), default=None)
    parser.add_argument("--compile-shard", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--compiled-list", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
