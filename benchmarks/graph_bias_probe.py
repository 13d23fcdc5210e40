"""Where an A/A bias in graph timing comes from: one kernel timed against itself under the
evaluator's own `time_workload`, repeated in one process (each repeat's outputs land at new
addresses), with the same function object or a twin, captured first or second.

Each line prints, per rms_norm workload, the median paired ratio candidate/baseline of the
promotion figure (warm) over the evaluator's replays; an unbiased setup prints 1.000 within
the noise. Run from the repository root on a CUDA device:
`python benchmarks/graph_bias_probe.py`; writes $OUT/graph_bias_probe.json when $OUT is set.
"""

import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPLAYS = 50
REPEATS = 4


def main() -> int:
    import torch

    from gates.evaluator.fresh_pool import FreshPool, pool_seeds
    from gates.evaluator.graph_timing import CALLS_PER_GRAPH, cold_calls, time_workload
    from operators import REGISTRY

    declaration = REGISTRY.declaration("rms_norm")
    kernel = declaration.preferred
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size

    def twin(*args, **kwargs):  # the same kernel behind another function object
        return kernel(*args, **kwargs)

    setups = {
        "same object, candidate first": {"candidate": kernel, "baseline": kernel},
        "twin, candidate first": {"candidate": kernel, "baseline": twin},
        "twin, baseline first": {"baseline": twin, "candidate": kernel},
    }
    report = {"device": torch.cuda.get_device_name(), "setups": {}}
    for workload in declaration.workloads:
        seeds = pool_seeds("bias probe", workload.name, 0)
        pool = FreshPool(declaration, workload, kernel, seeds, REPLAYS * CALLS_PER_GRAPH, "cuda")
        pool.stack_checks()
        cold = cold_calls(pool.set_bytes, l2_bytes)
        for name, roles in setups.items():
            ratios = []
            for _ in range(REPEATS):
                mismatches = torch.zeros((), dtype=torch.int64, device="cuda")
                times = time_workload(
                    roles, pool, declaration.params, REPLAYS, cold, mismatches, {}
                )
                pairs = zip(times["candidate"]["warm"], times["baseline"]["warm"], strict=True)
                ratios.append(statistics.median(c / b for c, b in pairs))
                assert int(mismatches.item()) == 0
            report["setups"].setdefault(name, {})[workload.name] = ratios
            shown = " ".join(f"{r:.4f}" for r in ratios)
            print(f"{workload.name:10} {name:36} {shown}", flush=True)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "graph_bias_probe.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
