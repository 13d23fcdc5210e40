"""Does queuing graph replays without a host wait move the times they measure? The rms_norm
kernel timed against itself under the evaluator's `time_workload`, with the host waiting for
every replay (`wait`), never (`queued`), once its queue holds `DEPTH` replays (`bounded`), or
before each warm replay (`drained`, the evaluator's), variants interleaved in one process.

Each line prints, per workload and variant, the warm per-call median of each fifth of the
replays (a drift shows there), the paired ratio's median and the seconds the replays took.
Run from the repository root on a CUDA device: `python benchmarks/replay_queue_probe.py`;
writes $OUT/replay_queue_probe.json when $OUT is set.
"""

import json
import os
import statistics
import sys
import time
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPLAYS = 100
REPEATS = 4
DEPTH = 4


def main() -> int:
    import torch

    from gates.evaluator.fresh_pool import FreshPool, pool_seeds
    from gates.evaluator.graph_timing import CALLS_PER_GRAPH, CudaGraphs, cold_calls, time_workload
    from operators import REGISTRY

    class Waiting(CudaGraphs):
        @staticmethod
        def timed_replay(graph, calls, drained):
            events = CudaGraphs.timed_replay(graph, calls, False)
            events[1].synchronize()
            return events

    class Queued(CudaGraphs):
        @staticmethod
        def timed_replay(graph, calls, drained):
            return CudaGraphs.timed_replay(graph, calls, False)

    class Bounded(CudaGraphs):
        queue: deque = deque()

        @classmethod
        def timed_replay(cls, graph, calls, drained):
            events = CudaGraphs.timed_replay(graph, calls, False)
            cls.queue.append(events[1])
            while len(cls.queue) > DEPTH:
                cls.queue.popleft().synchronize()
            return events

    variants = {
        "wait": Waiting(),
        "queued": Queued(),
        "bounded": Bounded(),
        "drained": CudaGraphs(),  # the evaluator's: warm replays start on a drained device
    }
    declaration = REGISTRY.declaration("rms_norm")
    kernel = declaration.preferred

    def twin(*args, **kwargs):
        return kernel(*args, **kwargs)

    roles = {"candidate": kernel, "baseline": twin}
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    report = {"device": torch.cuda.get_device_name(), "rows": []}
    for workload in declaration.workloads:
        seeds = pool_seeds("queue probe", workload.name, 0)
        pool = FreshPool(declaration, workload, kernel, seeds, REPLAYS * CALLS_PER_GRAPH, "cuda")
        pool.stack_checks()
        cold = cold_calls(pool.set_bytes, l2_bytes)
        for repeat in range(REPEATS):
            names = list(variants)
            names = names[repeat % len(names) :] + names[: repeat % len(names)]
            for name in names:
                mismatches = torch.zeros((), dtype=torch.int64, device="cuda")
                laps = {}
                started = time.monotonic()
                times = time_workload(
                    roles, pool, declaration.params, REPLAYS, cold, mismatches, {},
                    laps=laps, device=variants[name],
                )  # fmt: skip
                seconds = time.monotonic() - started
                warm = {role: times[role]["warm"] for role in roles}
                fifth = len(warm["candidate"]) // 5
                row = {
                    "workload": workload.name,
                    "variant": name,
                    "repeat": repeat,
                    "fifths_us": {
                        role: [
                            round(statistics.median(values[i : i + fifth]) * 1e3, 3)
                            for i in range(0, 5 * fifth, fifth)
                        ]
                        for role, values in warm.items()
                    },
                    "ratio": statistics.median(
                        c / b for c, b in zip(warm["candidate"], warm["baseline"], strict=True)
                    ),
                    "cold_us": round(statistics.median(times["candidate"]["cold"]) * 1e3, 3),
                    "replay_seconds": round(laps["replays"], 3),
                    "seconds": round(seconds, 3),
                }
                assert int(mismatches.item()) == 0
                report["rows"].append(row)
                print(
                    f"{workload.name:10} {name:8} r{repeat} {row['fifths_us']['candidate']} "
                    f"ratio {row['ratio']:.4f} cold {row['cold_us']} "
                    f"replays {row['replay_seconds']} s",
                    flush=True,
                )
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "replay_queue_probe.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
