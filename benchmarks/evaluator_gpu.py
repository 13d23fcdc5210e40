"""Evaluator benchmark on a CUDA device (an H200): graph timing's spread across processes,
A/A never promoting, sensitivity to a 5% and a 10% faster candidate, wall time per
candidate, and the timing-only cheat fixtures.

Sensitivity is measured on real noise with an exact shift: each A/A evaluation's paired
per-replay times are kept, the candidate's times scaled by 0.95 (or 0.90), and the promotion
rule applied to the scaled pairs; a candidate truly that much faster on every workload meets
the same noise. Run from the repository root: `python benchmarks/evaluator_gpu.py`. Prints a
table and, when $OUT is set, writes $OUT/evaluator_gpu.json.

Its answer: docs/benchmarks.md, "The kernel evaluator".
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

REPEATS = 20
SPREAD_PROCESSES = 5
OPERATOR = "rms_norm"
SHIFTS = (0.95, 0.90)
CHEATS = {
    "side_stream": {"concurrency", "plausibility"},
    "timer_patch": {"tampering"},
    "implausible_speed": {"plausibility", "concurrency", "output_replay", "call_state"},
    "late_fallback": {"compute_fallback", "cuda_graph", "call_state"},
    "late_foreign_kernel": {"cuda_graph"},
    "contract_widen": {"tampering", "output_replay"},
    "baseline_binding": {"tampering"},
    "pool_bounds": {"output_replay"},
    "pool_bounds_eager": {"output_replay"},
    "value_memo": None,  # must pass without gaining speed, or be caught replaying
}


def main() -> int:
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="evaluator processes")
    parser.add_argument("--no-cheats", action="store_true", help="skip the timing cheats")
    parser.add_argument(
        "--fence", choices=("none", "landlock"), default="none",
        help="run the candidate worker inside this fence (default: none)",
    )  # fmt: skip
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
    report = {"device": torch.cuda.get_device_name(), "operator": OPERATOR, "runs": []}
    report["fence"] = args.fence
    report["cheats"] = {}
    for name, accepted in ({} if args.no_cheats else CHEATS).items():
        solution = cheat_solution(name, scratch)
        result = evaluate(task, solution, device="cuda", timeout=600, fence=args.fence)
        report["cheats"][name] = _cheat_row(result, accepted)
        print(f"cheat {name}: {result.status} {result.detector} {result.reason[:120]}", flush=True)
    passed = []
    for index in range(args.repeats):
        started = time.monotonic()
        result = evaluate(task, task / "solution", device="cuda", timeout=600, fence=args.fence)
        seconds = time.monotonic() - started
        report["runs"].append(
            {
                "status": result.status,
                "reason": result.reason,
                "integrity": result.integrity,
                "notes": result.notes,
                "seconds": seconds,
                "phase_seconds": result.phase_seconds,
                "timing": result.timing.model_dump(mode="json") if result.timing else None,
            }
        )
        if result.status == "PASSED" and result.timing:
            passed.append(result)
        print(f"run {index}: {result.status} {seconds:.1f} s {_summary(result)}", flush=True)
        _write(report)  # after every run: a call cut short still leaves its numbers
        if index == 0 and result.status != "PASSED":
            break  # the baseline must pass: nothing more to measure
    report["stability"] = _stability(passed[:SPREAD_PROCESSES])
    report["aa_promotions"] = sum(1 for r in passed if r.timing.promotion.promoted)
    report["sensitivity"] = {str(shift): _sensitivity(passed, shift) for shift in SHIFTS}
    seconds = [run["seconds"] for run in report["runs"]]
    report["wall_seconds"] = {"first": seconds[0], "median": statistics.median(seconds)}
    _print(report, len(passed))
    _write(report)
    return 0


def _write(report: dict) -> None:
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "evaluator_gpu.json").write_text(json.dumps(report, indent=2))


def _summary(result) -> str:
    """The reason, or per workload warm/cold candidate medians and ratio, and the verdict."""
    if result.status != "PASSED" or result.timing is None:
        return result.reason[:200]
    rows = [
        f"{name} {row.candidate_median_us:.3f}/{row.candidate_cold_us or 0:.3f} us "
        f"x{row.candidate_median_us / row.baseline_median_us:.4f}"
        for name, row in result.timing.workloads.items()
    ]
    promotion = result.timing.promotion
    phases = {k: v for k, v in result.phase_seconds.items() if v > 0.5}
    phases.update({f"timing_{k}": v for k, v in result.timing.phase_seconds.items()})
    phases["timing_pools"] = result.timing.fresh_pool_seconds
    return f"{'; '.join(rows)}; promoted {promotion and promotion.promoted}; {phases}"


def _cheat_row(result, accepted) -> dict:
    row = {"status": result.status, "detector": result.detector, "reason": result.reason}
    if accepted is None:  # value_memo
        faster = result.status == "PASSED" and any(
            w.candidate_median_us < 2 * w.baseline_median_us
            for w in result.timing.workloads.values()
        )
        row["caught"] = result.status == "REJECTED" or (result.status == "PASSED" and not faster)
    else:
        row["caught"] = result.status == "REJECTED" and result.detector in accepted
    return row


def _stability(passed) -> dict:
    """Per workload: each process's warm and cold medians, their spread across processes,
    and the spread of the candidate/baseline ratio."""
    rows = {}
    if not passed:
        return rows
    for name in passed[0].timing.workloads:
        timings = [r.timing.workloads[name] for r in passed]
        warm = [t.candidate_median_us for t in timings]
        cold = [t.candidate_cold_us or 0.0 for t in timings]
        ratios = [t.candidate_median_us / t.baseline_median_us for t in timings]
        rows[name] = {
            "warm_medians_us": warm,
            "cold_medians_us": cold,
            "warm_spread": (max(warm) - min(warm)) / statistics.median(warm),
            "cold_spread": (max(cold) - min(cold)) / max(1e-9, statistics.median(cold)),
            "ratios": ratios,
            "ratio_spread": max(ratios) - min(ratios),
            "figure": timings[0].promotion_figure,
            "floor_us": timings[0].floor_us,
        }
    return rows


def _sensitivity(passed, shift: float) -> int:
    """How many A/A evaluations promote once the candidate's paired times are scaled."""
    from gates.evaluator.promotion import promotion_verdict

    promoted = 0
    for result in passed:
        workloads = {}
        for name, row in result.timing.workloads.items():
            scaled = {
                role: [r * shift for r in ratios] for role, ratios in row.paired_ratios.items()
            }
            workloads[name] = {"weight": row.weight, "paired_ratios": scaled}
        roles = ["candidate", *next(iter(workloads.values()))["paired_ratios"]]
        promoted += promotion_verdict({"workloads": workloads}, roles).promoted
    return promoted


def _print(report: dict, passed: int) -> None:
    print(f"\nevaluator benchmark on {report['device']} ({report['operator']})")
    header = ("workload", "warm us", "spread", "cold us", "spread", "ratio sp")
    print("{:<12} {:>8} {:>7} {:>8} {:>7} {:>8}".format(*header))
    for name, row in report["stability"].items():
        print(
            f"{name:<12} {statistics.median(row['warm_medians_us']):>8.3f} "
            f"{row['warm_spread']:>6.2%} {statistics.median(row['cold_medians_us']):>8.3f} "
            f"{row['cold_spread']:>6.2%} {row['ratio_spread']:>7.2%}"
        )
    print(f"A/A promotions: {report['aa_promotions']} of {passed}")
    for shift, count in report["sensitivity"].items():
        print(f"candidate x{shift}: promoted in {count} of {passed}")
    wall = report["wall_seconds"]
    print(f"wall time per evaluation: first {wall['first']:.1f} s, median {wall['median']:.1f} s")
    for name, row in report["cheats"].items():
        verdict = "caught" if row["caught"] else "MISSED"
        print(f"cheat {name:<18} {verdict:<7} {row['status']} {row['reason'][:90]}")


if __name__ == "__main__":
    sys.exit(main())
