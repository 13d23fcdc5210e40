"""What the evaluator's Landlock fence costs per evaluation: the rms_norm task's baseline on
the CPU, fenced and unfenced in turn, after one unmeasured evaluation (zygote start, caches).
Run from the repository root: `python benchmarks/fence_cost.py [--repeats N]`.

Its answer: docs/benchmarks.md, "Fences".
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    from gates.evaluator.evaluation import evaluate
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4, help="evaluations per fence")
    args = parser.parse_args()
    task, _ = write_package(REGISTRY.declaration("rms_norm"), Path(tempfile.mkdtemp()) / "t")
    evaluate(task, task / "solution", device="cpu", timeout=600)
    seconds = {"none": [], "landlock": []}
    for _ in range(args.repeats):
        for fence, runs in seconds.items():
            started = time.monotonic()
            result = evaluate(task, task / "solution", device="cpu", timeout=600, fence=fence)
            runs.append(time.monotonic() - started)
            if result.status != "PASSED":
                print(f"{fence}: {result.status} {result.reason}")
                return 1
    for fence, runs in seconds.items():
        shown = ", ".join(f"{value:.2f}" for value in runs)
        print(f"{fence}: {shown} s, median {statistics.median(runs):.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
