"""Evaluator benchmark on a CUDA device (an H200): timing stability across processes, A/A
never promoting, wall time per candidate, and the timing-only cheat fixtures.

Run from the repository root: `python benchmarks/evaluator_gpu.py`. Prints a table and, when
$OUT is set, writes $OUT/evaluator_gpu.json. Takes a few minutes.
"""

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "evaluator"))

REPEATS = 5
OPERATOR = "rms_norm"
CHEATS = {
    "side_stream": {"concurrency", "plausibility"},
    "timer_patch": {"tampering"},
    "implausible_speed": {"plausibility", "concurrency", "output_replay"},
    "late_fallback": {"compute_fallback"},
}


def main() -> int:
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="evaluator processes")
    parser.add_argument("--no-cheats", action="store_true", help="skip the timing cheats")
    args = parser.parse_args()
    from cheat_packing import cheat_solution

    from gates.evaluator.evaluation import evaluate
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    if not torch.cuda.is_available():
        print("needs a CUDA device")
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="evaluator-bench-"))
    task, _ = write_package(REGISTRY.declaration(OPERATOR), scratch / "tasks")
    runs = []
    for index in range(args.repeats):
        started = time.monotonic()
        result = evaluate(task, task / "solution", device="cuda", timeout=600)
        runs.append((result, time.monotonic() - started))
        print(
            f"run {index}: {result.status} in {runs[-1][1]:.1f} s {result.reason} "
            f"phases {result.phase_seconds} "
            f"clock {result.timing and result.timing.get('sm_clock_mhz')}",
            flush=True,
        )
    report = {"device": torch.cuda.get_device_name(), "operator": OPERATOR, "runs": []}
    for result, seconds in runs:
        report["runs"].append(
            {
                "status": result.status,
                "seconds": seconds,
                "phase_seconds": result.phase_seconds,
                "timing": result.timing,
            }
        )
    passed = [r for r, _ in runs if r.status == "PASSED" and r.timing]
    report["stability"] = _stability(passed)
    report["aa_promotions"] = sum(1 for r in passed if r.timing["promotion"]["promoted"])
    report["wall_seconds"] = {
        "first": runs[0][1],
        "median": statistics.median(seconds for _, seconds in runs),
    }
    report["cheats"] = {}
    for name, accepted in ({} if args.no_cheats else CHEATS).items():
        result = evaluate(task, cheat_solution(name, scratch), device="cuda", timeout=600)
        caught = result.status == "REJECTED" and result.detector in accepted
        report["cheats"][name] = {
            "status": result.status,
            "detector": result.detector,
            "reason": result.reason,
            "caught": caught,
        }
    _print(report)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "evaluator_gpu.json").write_text(json.dumps(report, indent=2))
    ok = (
        len(passed) == args.repeats
        and report["aa_promotions"] == 0
        and all(c["caught"] for c in report["cheats"].values())
    )
    return 0 if ok else 1


def _stability(passed) -> dict:
    """Per workload: each process's median, and the spread of those medians across processes."""
    rows = {}
    if not passed:
        return rows
    for name in passed[0].timing["workloads"]:
        medians = [r.timing["workloads"][name]["candidate_median_us"] for r in passed]
        baseline = [r.timing["workloads"][name]["baseline_median_us"] for r in passed]
        within = [r.timing["workloads"][name]["candidate_spread"] for r in passed]
        middle = statistics.median(medians)
        rows[name] = {
            "medians_us": medians,
            "median_us": middle,
            "across_process_spread": (max(medians) - min(medians)) / middle,
            "within_run_iqr_over_median": statistics.median(within),
            "speedups": [b / c for b, c in zip(baseline, medians, strict=True)],
            "empty_launch_us": [r.timing["workloads"][name]["empty_launch_us"] for r in passed],
            "floor_us": passed[0].timing["workloads"][name]["floor_us"],
        }
    return rows


def _print(report: dict) -> None:
    print(f"\nevaluator benchmark on {report['device']} ({report['operator']})")
    print(f"{'workload':<12} {'median us':>10} {'across 5':>9} {'IQR/med':>8} {'floor us':>9}")
    for name, row in report["stability"].items():
        print(
            f"{name:<12} {row['median_us']:>10.2f} {row['across_process_spread']:>8.2%} "
            f"{row['within_run_iqr_over_median']:>8.2%} {row['floor_us']:>9.2f}"
        )
    for name, row in report["stability"].items():
        pairs = zip(row["medians_us"], row["empty_launch_us"], strict=True)
        shown = ", ".join(f"{m:.2f}/{e:.2f}" for m, e in pairs)
        print(f"{name:<12} median/empty launch us per process: {shown}")
    print(f"A/A promotions: {report['aa_promotions']} of {len(report['runs'])}")
    wall = report["wall_seconds"]
    print(f"wall time per evaluation: first {wall['first']:.1f} s, median {wall['median']:.1f} s")
    for name, row in report["cheats"].items():
        verdict = "caught" if row["caught"] else "MISSED"
        print(f"cheat {name:<18} {verdict:<7} {row['status']} {row['reason'][:90]}")


if __name__ == "__main__":
    sys.exit(main())
