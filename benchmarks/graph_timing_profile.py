"""Where graph timing's wall time goes on a CUDA device: the rms_norm baseline timed against
itself (imported twice, as baseline and candidate) in this process, without the guard's
checks, once to fill Triton's cache and then under cProfile. Prints the phase seconds and the
functions with the most own and cumulative time; with $OUT set, writes the same text to
$OUT/graph_timing_profile.txt. Run from the repository root:
`python benchmarks/graph_timing_profile.py`.

Its answer: docs/benchmarks.md, "The kernel evaluator".
"""

import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OPERATOR = "rms_norm"


def main() -> int:
    import torch

    from gates.evaluator import loading
    from gates.evaluator.timing import time_roles
    from gates.tasks.generation import write_package
    from gates.tasks.package import load_task
    from operators import REGISTRY

    if not torch.cuda.is_available():
        print("needs a CUDA device")
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="graph-timing-profile-"))
    declaration = REGISTRY.declaration(OPERATOR)
    task = load_task(write_package(declaration, scratch / "tasks")[0])
    roles = {}
    for role in ("baseline", "candidate"):
        folder = loading.write_sources(task.baseline, scratch / role)
        roles[role] = loading.import_entry(task.baseline, folder, role)
    device = torch.device("cuda")
    guard = SimpleNamespace(
        device=device,
        notes=[],
        folder=str(scratch / "candidate"),
        policy=SimpleNamespace(disallowed=lambda facts: []),
        check_environment=lambda when: None,
    )
    lines = []
    for attempt, profiled in (("warm-up", False), ("profiled", True)):
        request = SimpleNamespace(nonce=os.urandom(16).hex(), timing_samples=1000, timing_rounds=5)
        profiler = cProfile.Profile() if profiled else None
        started = time.monotonic()
        if profiler:
            profiler.enable()
        report = time_roles(request, declaration, guard, roles, graphs_required=True)
        if profiler:
            profiler.disable()
        lines.append(
            f"{attempt}: {time.monotonic() - started:.2f} s, phases {report.phase_seconds}, "
            f"pools {report.fresh_pool_seconds} s"
        )
        for name, row in report.workloads.items():
            lines.append(
                f"  {name}: warm {row.candidate_median_us:.3f} us, cold "
                f"{row.candidate_cold_us:.3f} us, ratio {row.speedup:.4f}"
            )
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(30)
        lines.append(text.getvalue())
    output = "\n".join(lines)
    print(output)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "graph_timing_profile.txt").write_text(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
