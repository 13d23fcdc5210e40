"""The promotion rule on synthetic timing reports: identical roles never promote."""

import random

from gates.evaluator.promotion import promotion_verdict
from gates.evaluator.statistics import median, spread, tick_median


def report(candidate_scale: float, noise: float, seed: int = 0) -> dict:
    rng = random.Random(seed)
    workloads = {}
    for name, weight, base in (("a", 10.0, 5.0), ("b", 1.0, 40.0)):
        rounds = {}
        for role, scale in (("baseline", 1.0), ("candidate", candidate_scale)):
            rounds[role] = [base * scale * (1 + rng.uniform(-noise, noise)) for _ in range(5)]
        workloads[name] = {
            "weight": weight,
            "baseline_round_medians_us": rounds["baseline"],
            "candidate_round_medians_us": rounds["candidate"],
            "baseline_median_us": median(rounds["baseline"]),
            "candidate_median_us": median(rounds["candidate"]),
        }
    return {"workloads": workloads}


def test_a_against_itself_never_promotes():
    for seed in range(200):
        verdict = promotion_verdict(report(1.0, 0.02, seed), ["baseline", "candidate"])
        assert verdict["promoted"] is False


def test_a_clearly_faster_candidate_promotes_and_a_regression_blocks_it():
    assert promotion_verdict(report(0.9, 0.005), ["baseline", "candidate"])["promoted"]
    slowed = report(0.9, 0.005)
    slowed["workloads"]["b"]["candidate_median_us"] *= 1.3
    verdict = promotion_verdict(slowed, ["baseline", "candidate"])
    assert not verdict["promoted"] and "5% slower" in verdict["reason"]


def test_spread_is_interquartile_range_over_median():
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert spread([10.0] * 9) == 0.0
    assert abs(spread([8.0, 9.0, 10.0, 11.0, 12.0]) - 0.2) < 1e-12


def test_tick_median_resolves_shifts_smaller_than_one_tick():
    tick = 0.032
    # 1000 samples on 32 ns ticks: 60% at 4.800 us and 40% at 4.832 us, then 40%/60%.
    low_heavy = [4.800] * 600 + [4.800 + tick] * 400
    high_heavy = [4.800] * 400 + [4.800 + tick] * 600
    assert median(low_heavy) == 4.800 and median(high_heavy) == 4.800 + tick
    assert tick_median(low_heavy) < tick_median(high_heavy)
    assert abs(tick_median(high_heavy) - tick_median(low_heavy) - tick / 3) < 1e-9
    assert tick_median([2, 2, 2, 3, 3, 3]) == 2.5
    assert tick_median([1.0, 2.5, 3.1]) == 2.5  # not quantised: the plain median
