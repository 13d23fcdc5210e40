"""Fence start-up overhead: median wall time of `true` per fence, printed as a markdown table.

Run: python benchmarks/fence_startup.py [--runs 30] [--fences landlock,docker,none]
GPU machine: add --gpu-check to also run a CUDA matmul and a Triton kernel inside the Landlock
fence with `gpu=True` (checks that the fence grants what CUDA and Triton's JIT need).

Its answer: docs/benchmarks.md, "Fences".
"""

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox.errors import FenceError  # noqa: E402
from sandbox.fence import get_fence  # noqa: E402
from sandbox.policy import FencePolicy  # noqa: E402

GOALS_MS = {"landlock": 30.0, "docker": 600.0}
GPU_CHECK = """
import torch, triton, triton.language as tl

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)

x = torch.randn(1024, 1024, device="cuda")
y = torch.zeros(4096, device="cuda")
add_one[(4,)](y, 4096, BLOCK=1024)
torch.cuda.synchronize()
print("gpu-check", torch.cuda.get_device_name(), float((x @ x).abs().sum()) > 0, float(y.sum()))
"""


def gpu_check(workspace: Path) -> int:
    """Run CUDA and a Triton JIT kernel inside the Landlock fence with the GPU granted."""
    fence = get_fence("landlock")
    print(fence.probe().model_dump_json(indent=2))
    policy = FencePolicy(workspace=workspace, gpu=True, timeout_s=600)
    (workspace / "gpu_check.py").write_text(GPU_CHECK)  # Triton reads kernel source from a file
    result = fence.run([sys.executable, "gpu_check.py"], policy)
    print(f"returncode {result.returncode}, {result.seconds:.1f} s")
    print(result.stdout[-4000:])
    print(result.stderr[-4000:], file=sys.stderr)
    return 0 if result.returncode == 0 and "gpu-check" in result.stdout else 1


def _cpu_seconds() -> float:
    """User + system time of this process and every child it has waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def measure(run_once, runs: int, warmup: int = 3) -> tuple[list[float], list[float]]:
    """Wall and child-CPU milliseconds of run_once, after a few unmeasured warm-up calls.

    CPU time (user + system of this process and those it started) is far less sensitive than
    wall time to other load on a shared machine; it does not see the Docker daemon's work.
    """
    for _ in range(warmup):
        run_once()
    wall, cpu = [], []
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        run_once()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((_cpu_seconds() - cpu_started) * 1000)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--fences", default="landlock,docker,none")
    parser.add_argument("--gpu-check", action="store_true", help="also run CUDA + Triton fenced")
    arguments = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kc-fence-bench-") as workspace:
        if arguments.gpu_check and gpu_check(Path(workspace)) != 0:
            return 1
        policy = FencePolicy(workspace=Path(workspace))
        bare = measure(lambda: subprocess.run(["true"], check=True), arguments.runs)
        rows.append(("bare `true` (reference)", bare, None))
        python = [sys.executable, "-I", "-S", "-c", "pass"]
        started_python = measure(lambda: subprocess.run(python, check=True), arguments.runs)
        rows.append(("bare `python -I -S` (reference)", started_python, None))
        for name in arguments.fences.split(","):
            try:
                fence = get_fence(name, unfenced=name == "none")
            except FenceError as error:
                print(f"skipping {name}: {error}", file=sys.stderr)
                continue

            def run_true(fence=fence):
                result = fence.run(["true"], policy)
                if result.returncode != 0:
                    raise SystemExit(f"{fence.name}: `true` failed: {result.stderr}")

            label = "unfenced (--unfenced)" if name == "none" else name
            rows.append((label, measure(run_true, arguments.runs), GOALS_MS.get(name)))
    print(
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.node()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, kernel {platform.release()}, "
        f"load average {os.getloadavg()[0]:.2f}; Python {platform.python_version()}; "
        f"{arguments.runs} runs of `true` each after 3 warm-up runs.\n"
    )
    print("| fence | median ms | min ms | p90 ms | median CPU ms | goal ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, (wall, cpu), goal in rows:
        ordered = sorted(wall)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        goal_text = f"< {goal:g}" if goal else "-"
        print(
            f"| {label} | {statistics.median(wall):.1f} | {ordered[0]:.1f} | {p90:.1f} | "
            f"{statistics.median(cpu):.1f} | {goal_text} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
