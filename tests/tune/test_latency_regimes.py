"""The tune flow's latency gate on typed timing results (the evaluator faked only at its
boundary): a workload is owned only where the candidate is faster warm and cold, one slower
on either figure is declined (the call keeps what runs today), and the weighted figure is the
model's time with the candidate applied only where it is owned.

The rows are what graph timing reports: paired ratios on each workload's promotion figure
(every replay) and on the other figure (every fifth replay), medians of both figures for
every role. The verdict is made as the controller makes it (`decided_promotion`, with the
task's calls per forward) and read by the latency gate and the report.
"""

import random

from controller.flows.tune_evidence import regime_markdown
from gates.evaluator.evaluation import decided_promotion
from gates.evaluator.promotion import promotion_verdict
from gates.evaluator.protocol import EvaluationResult
from gates.evaluator.results import TimingReport, WorkloadTiming, WorkloadWeight
from gates.tuning.reading import read_evaluation
from gates.tuning.verdicts import latency_verdict

PAIRS, OTHER_PAIRS = 50, 10  # a cold-promoted workload: 50 replays, the warm figure every fifth


def timed_row(
    figure: str,
    warm_us: float,
    cold_us: float,
    warm_ratio: float,
    cold_ratio: float,
    noise: float = 0.004,
    seed: int = 0,
    incumbent: bool = False,
) -> WorkloadTiming:
    """One workload's row; candidate/role ratios drawn around the given ones."""
    rng = random.Random(seed)
    ratio = {"warm": warm_ratio, "cold": cold_ratio}
    other = "cold" if figure == "warm" else "warm"

    def pairs(figure_name: str, count: int) -> list[float]:
        return [ratio[figure_name] * (1 + rng.gauss(0, noise)) for _ in range(count)]

    roles = ["baseline", *(["incumbent"] if incumbent else [])]
    row = {
        "weight": 1.0,
        "method": "graph",
        "promotion_figure": figure,
        "paired_ratios": {role: pairs(figure, PAIRS) for role in roles},
        "other_figure_ratios": {role: pairs(other, OTHER_PAIRS) for role in roles},
        "candidate_median_us": warm_us * warm_ratio,
        "candidate_cold_us": cold_us * cold_ratio,
    }
    for role in roles:
        row[f"{role}_median_us"], row[f"{role}_cold_us"] = warm_us, cold_us
    return WorkloadTiming(**row)


def gate(rows: dict, calls: dict[str, float], incumbent: bool = False):
    """The latency verdict and reading the tune flow would make of these rows."""
    weights = {
        name: WorkloadWeight(calls_per_forward=count, source="declared")
        for name, count in calls.items()
    }
    timing = decided_promotion(TimingReport(workloads=rows, cuda_graphs=True), incumbent, weights)
    result = EvaluationResult(
        task="runs/tasks/rotate_qk",
        operator="rotate_qk",
        solution="candidate",
        device="cuda",
        status="PASSED",
        timing=timing,
    )
    reading = read_evaluation(result.model_dump(mode="json"))
    return latency_verdict(reading), reading


def test_faster_warm_but_slower_cold_beyond_noise_is_declined_there():
    rows = {
        "action_b8": timed_row("warm", 3.0, 3.6, 0.90, 0.92, seed=1),
        "prefix_b8": timed_row("warm", 17.0, 19.0, 0.90, 1.06, seed=2),
    }
    verdict, reading = gate(rows, {"action_b8": 180, "prefix_b8": 18})
    assert verdict.passed and "declines prefix_b8" in verdict.summary, verdict.summary
    assert reading.slower and "action_b8" not in " ".join(reading.slower)
    assert (
        "prefix_b8 slower than baseline beyond noise (cold: 20.14 us vs 19.00 us"
        in (reading.slower[0])
    )
    alone = {"prefix_b8": rows["prefix_b8"]}  # nothing left to own: refused
    verdict, _ = gate(alone, {"prefix_b8": 18})
    assert not verdict.passed and "applied only where it owns: nowhere" in verdict.summary
    assert "prefix_b8 slower than baseline beyond noise (cold: 20.14 us vs 19.00 us" in (
        verdict.summary
    )


def test_faster_cold_but_slower_warm_beyond_noise_is_declined_there():
    """The rotate_qk launch point promoted at x1.074: prefix_b8 x1.011 cold, action_b8
    x1.102; warm graph timing found prefix_b8 18.21 us against 17.16 us."""
    rows = {
        "action_b8": timed_row("warm", 3.06, 3.5, 1 / 1.102, 1 / 1.10, seed=3),
        "prefix_b8": timed_row("cold", 17.16, 30.0, 18.21 / 17.16, 1 / 1.011, seed=4),
    }
    verdict, reading = gate(rows, {"action_b8": 180, "prefix_b8": 18})
    assert verdict.passed and "declines prefix_b8" in verdict.summary, verdict.summary
    assert (
        "prefix_b8 slower than baseline beyond noise (warm: 18.21 us vs 17.16 us"
        in (reading.slower[0])
    )


def test_both_regimes_faster_promotes_and_an_incumbent_is_held_to_both_as_well():
    rows = {
        "action_b8": timed_row("warm", 3.0, 3.6, 0.93, 0.94, seed=5, incumbent=True),
        "prefix_b8": timed_row("cold", 17.0, 30.0, 0.95, 0.94, seed=6, incumbent=True),
    }
    verdict, reading = gate(rows, {"action_b8": 180, "prefix_b8": 18}, incumbent=True)
    assert verdict.passed, verdict.summary
    assert "calls per forward x time, declared" in verdict.summary
    slowed_warm = rows["prefix_b8"].model_copy(
        update={"other_figure_ratios": {"baseline": [0.95] * 10, "incumbent": [1.04] * 10}}
    )
    verdict, reading = gate(
        {**rows, "prefix_b8": slowed_warm}, {"action_b8": 180, "prefix_b8": 18}, True
    )
    assert verdict.passed and "declines prefix_b8" in verdict.summary, verdict.summary
    assert "prefix_b8 slower than incumbent beyond noise (warm" in " ".join(reading.slower)
    fewer_calls = {"action_b8": 60, "prefix_b8": 18}  # what action_b8 gains is then under 3%
    verdict, _ = gate({**rows, "prefix_b8": slowed_warm}, fewer_calls, True)
    assert not verdict.passed and "applied only where it owns: action_b8" in verdict.summary
    assert "prefix_b8 slower than incumbent beyond noise (warm" in verdict.details["slower"][0]


def test_a_small_gain_cannot_outvote_a_large_loss_in_model_time():
    """Two 2 us workloads 10% faster, one 18 us workload 6% slower within noise, each called
    as often: equal weights promote it, the model's time (calls x time) refuses it."""
    rows = {
        "small_a": timed_row("warm", 2.0, 2.4, 0.9, 0.9, seed=7),
        "small_b": timed_row("warm", 2.0, 2.4, 0.9, 0.9, seed=8),
        "large": timed_row("warm", 18.0, 20.0, 1.06, 1.06, noise=0.25, seed=9),
    }
    report = TimingReport(workloads=rows)
    roles = ["candidate", "baseline"]
    assert not promotion_verdict(report, roles).against["baseline"].slower  # within noise
    time_equalised = {  # calls inversely proportional to time: equal weights, promoted
        name: WorkloadWeight(calls_per_forward=1 / row.baseline_median_us, source="declared")
        for name, row in rows.items()
    }
    assert promotion_verdict(report, roles, weights=time_equalised).promoted
    verdict, reading = gate(rows, {"small_a": 18, "small_b": 18, "large": 18})
    assert not verdict.passed and "model-time ratio to baseline 0.98" in verdict.summary
    assert "applied only where it owns: small_a, small_b" in verdict.summary
    assert 1 < reading.weighted_speedup() < 1.03, "as installed: large keeps what runs today"
    shares = decided_promotion(report, False).promotion.against["baseline"].model_time_share
    assert abs(shares["large"] - 18 / 22) < 1e-9


def test_a_against_itself_is_never_promoted_on_either_figure():
    for seed in range(20):
        rows = {
            "action_b8": timed_row("warm", 3.0, 3.6, 1.0, 1.0, noise=0.01, seed=2 * seed),
            "prefix_b8": timed_row("cold", 17.0, 30.0, 1.0, 1.0, noise=0.01, seed=2 * seed + 1),
        }
        verdict, _ = gate(rows, {"action_b8": 180, "prefix_b8": 18})
        assert not verdict.passed, verdict.summary


def test_the_report_lists_both_regimes_of_every_role_and_the_weights():
    rows = {
        "action_b8": timed_row("warm", 3.0, 3.6, 0.93, 0.94, seed=10, incumbent=True),
        "prefix_b8": timed_row("cold", 17.0, 30.0, 0.95, 1.06, seed=11, incumbent=True),
    }
    _, reading = gate(rows, {"action_b8": 180, "prefix_b8": 18}, incumbent=True)
    text = "\n".join(regime_markdown(4, reading))
    assert "calls per forward x its time (declared)" in text
    prefix = "| prefix_b8 | cold (l2-size) | 18 (declared) |"
    assert f"{prefix} 17.00 / 30.00 | 17.00 / 30.00 | 16.15 / 31.80 |" in text
    assert (
        "| action_b8 | warm (l2-size) | 180 (declared) | 3.00 / 3.60 | 3.00 / 3.60 | 2.79 / 3.38 |"
        in text
    )
    assert "- prefix_b8 slower than baseline beyond noise (cold: 31.80 us vs 30.00 us" in text
    row = next(row for row in reading.workloads if row.name == "prefix_b8")
    assert (row.baseline_warm_us, row.candidate_cold_us, row.incumbent_cold_us) == (
        17.0,
        31.8,
        30.0,
    )
