"""Tuning gates 3 and 4, correctness and latency: one evaluation turned into two verdicts whose
summaries are one line the agent can act on (which workload, how far, which detector)."""

from gates.tuning.reading import EvaluationReading
from gates.verdict import Verdict

CORRECTNESS = "correctness"
LATENCY = "latency"
REASON_CHARACTERS = 240
NO_CUDA = (
    "not timed: on {device} the evaluator checks correctness only (Triton interpreter), so "
    "nothing can be promoted without CUDA timing; run with --device cuda on a GPU"
)


def correctness_verdict(reading: EvaluationReading, seconds: float = 0.0) -> Verdict:
    """Passed when the evaluator's status is PASSED; otherwise its status, detector and reason."""
    details = {"status": reading.status, "reason": reading.reason, "detector": reading.detector}
    if reading.passed:
        summary = f"PASSED on every workload, seed and input distribution ({reading.device})"
        return Verdict(
            gate=CORRECTNESS, passed=True, summary=summary, details=details, seconds=seconds
        )
    detector = f" [detector {reading.detector}]" if reading.detector else ""
    reason = _one_line(reading.reason) or "no reason given"
    summary = f"{reading.status}{detector}: {reason}"
    return Verdict(
        gate=CORRECTNESS, passed=False, summary=summary, details=details, seconds=seconds
    )


def latency_verdict(reading: EvaluationReading) -> Verdict:
    """The evaluator's promotion verdict against the baseline and the incumbent, explained."""
    details = {
        "promoted": reading.promoted,
        "promotion_reason": reading.promotion_reason,
        "weighted_speedup": reading.weighted_speedup(),
        "weights": f"calls per forward x time ({reading.weights_source()})",
        "slower": list(reading.slower),
        "workloads": [row.model_dump() for row in reading.workloads],
    }
    if not reading.timed:
        summary = NO_CUDA.format(device=reading.device)
        if reading.device == "cuda":
            summary = "the evaluator returned no timing for a passing candidate; evaluate again"
        return Verdict(gate=LATENCY, passed=False, summary=summary, details=details)
    speedups = ", ".join(_speedup(row) for row in reading.workloads)
    if reading.promoted:
        declined = (
            f"; declines {', '.join(reading.declined)}, where production runs"
            if reading.declined
            else ""
        )
        summary = (
            f"promoted: x{reading.weighted_speedup():.3f} in model time over baseline "
            f"(calls per forward x time, {reading.weights_source()}; {speedups}){declined}"
        )
        return Verdict(gate=LATENCY, passed=True, summary=summary, details=details)
    summary = (
        f"not promoted: {_one_line(reading.promotion_reason)}; {_slowest(reading)}; "
        f"over baseline {speedups}"
    )
    return Verdict(gate=LATENCY, passed=False, summary=summary, details=details)


def _speedup(row) -> str:
    interval = ""
    if row.speedup_low is not None and row.speedup_high is not None:
        interval = f" [{row.speedup_low:.3f}, {row.speedup_high:.3f}]"
    return f"{row.name} x{row.speedup:.3f} {row.promotion_figure}{interval}"


def _slowest(reading: EvaluationReading) -> str:
    """The workload furthest behind the incumbent (or the baseline), with both times."""
    rows = list(reading.workloads)
    if any(row.incumbent_us is not None for row in rows):
        row = max(rows, key=lambda r: r.versus_incumbent or 0.0)
        return (
            f"worst against the incumbent: {row.name} {row.candidate_us:.2f} us vs "
            f"{row.incumbent_us:.2f} us ({(row.versus_incumbent - 1) * 100:+.1f}%)"
        )
    row = min(rows, key=lambda r: r.speedup)
    change = (row.candidate_us / row.baseline_us - 1) * 100
    return (
        f"worst against the baseline: {row.name} {row.candidate_us:.2f} us vs "
        f"{row.baseline_us:.2f} us ({change:+.1f}%)"
    )


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= REASON_CHARACTERS else line[: REASON_CHARACTERS - 3] + "..."
