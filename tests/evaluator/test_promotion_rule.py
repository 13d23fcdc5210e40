"""The promotion rule and its paired statistics on constructed samples (the CUDA timing that
feeds them cannot run on CPU): identical roles never promote, a faster candidate does, a
workload slower beyond noise blocks it, and the thresholds travel with the verdict."""

import random

from gates.evaluator.evaluation import decided_promotion
from gates.evaluator.paired_statistics import (
    model_time_ratio_interval,
    paired_ratios,
    ratio_interval,
)
from gates.evaluator.promotion import THRESHOLDS, promotion_verdict
from gates.evaluator.results import Promotion, PromotionThresholds, TimingReport
from gates.evaluator.statistics import median, spread, tick_median


def report(candidate_scale: float, noise: float, seed: int = 0, pairs: int = 40) -> dict:
    """Two workloads timed in interleaved pairs; both roles share each pair's drift."""
    rng = random.Random(seed)
    workloads = {}
    for name, weight, base in (("a", 10.0, 5.0), ("b", 1.0, 40.0)):
        baseline, candidate = [], []
        for _ in range(pairs):
            drift = 1 + rng.uniform(-0.05, 0.05)  # moves both roles of a pair together
            baseline.append(base * drift * (1 + rng.gauss(0, noise)))
            candidate.append(base * candidate_scale * drift * (1 + rng.gauss(0, noise)))
        workloads[name] = {
            "weight": weight,
            "baseline_median_us": median(baseline),
            "candidate_median_us": median(candidate),
            "paired_ratios": {"baseline": paired_ratios(candidate, baseline)},
        }
    return {"workloads": workloads}


def test_a_against_itself_never_promotes():
    for seed in range(40):
        verdict = promotion_verdict(report(1.0, 0.01, seed), ["baseline", "candidate"])
        assert verdict.promoted is False, verdict.reason


def test_five_percent_faster_promotes_and_the_thresholds_are_recorded():
    verdict = promotion_verdict(report(0.95, 0.01), ["baseline", "candidate"])
    assert verdict.promoted, verdict.reason
    assert verdict.thresholds == THRESHOLDS
    weighted = verdict.against["baseline"].weighted
    assert weighted.low < weighted.ratio < weighted.high < 1


def test_a_gain_under_the_threshold_does_not_promote():
    verdict = promotion_verdict(report(0.99, 0.002), ["baseline", "candidate"])
    assert not verdict.promoted and "not 3% under 1" in verdict.reason


def test_a_workload_slower_beyond_noise_is_declined_and_the_rest_judged_as_installed():
    slowed = report(0.9, 0.005)
    slowed["workloads"]["b"]["paired_ratios"]["baseline"] = [1.3] * 40
    verdict = promotion_verdict(slowed, ["baseline", "candidate"])
    assert verdict.promoted and verdict.owns == ["a"], verdict.reason
    assert "declines b" in verdict.reason
    assert verdict.against["baseline"].worse == ["b"]
    weighted = verdict.against["baseline"].weighted.ratio  # b runs what runs today: ratio 1
    assert abs(weighted - (50 * 0.9 + 40 * 1.0) / 90) < 0.005


def test_a_gain_only_where_it_is_small_is_not_promoted_and_names_what_it_would_slow():
    slowed = report(0.97, 0.002)
    slowed["workloads"]["b"]["paired_ratios"]["baseline"] = [1.3] * 40
    verdict = promotion_verdict(slowed, ["baseline", "candidate"])
    assert not verdict.promoted and verdict.owns == ["a"]
    assert "not 3% under 1 (applied only where it owns: a; production elsewhere)" in verdict.reason
    assert "b slower than baseline beyond noise" in verdict.reason


def _with_incumbent(rows: dict, scales: dict[str, float]) -> dict:
    """The rows with an incumbent timed in the same replays at `scales` x the baseline."""
    for name, row in rows.items():
        scale = scales[name]
        row["incumbent_median_us"] = row["baseline_median_us"] * scale
        row["paired_ratios"]["incumbent"] = [r / scale for r in row["paired_ratios"]["baseline"]]
    return {"workloads": rows}


def test_a_workload_the_incumbent_won_costs_the_candidate_that_does_not_own_it():
    """The incumbent runs a at twice production's speed; the candidate is only 10% faster than
    production there, so it does not own a, and as installed a runs production: against the
    incumbent that loss outweighs b's 10%, though b alone reads faster than either role."""
    timed = _with_incumbent(report(0.9, 0.005)["workloads"], {"a": 0.5, "b": 1.0})
    verdict = promotion_verdict(timed, ["baseline", "incumbent", "candidate"])
    assert verdict.owns == ["b"] and not verdict.promoted, verdict.reason
    assert verdict.against["incumbent"].weighted.ratio > 1.2
    assert "a slower than incumbent beyond noise" in verdict.reason
    assert verdict.against["baseline"].weighted.ratio < 0.97, "production alone would promote"


def test_a_tie_with_the_incumbent_is_owned_so_its_gain_is_not_lost():
    """Unowned, a runs production and loses what the incumbent gained there."""
    timed = _with_incumbent(report(0.8, 0.005)["workloads"], {"a": 0.8, "b": 1.0})
    verdict = promotion_verdict(timed, ["baseline", "incumbent", "candidate"])
    assert verdict.owns == ["a", "b"] and verdict.promoted, verdict.reason
    assert verdict.against["incumbent"].worse == [], "a ties the incumbent"


def test_round_medians_pair_up_when_no_pairs_were_recorded():
    rows = {
        "a": {
            "weight": 1.0,
            "baseline_round_medians_us": [10.0, 10.2, 9.9, 10.1, 10.0],
            "candidate_round_medians_us": [9.0, 9.1, 8.9, 9.0, 9.05],
        }
    }
    verdict = promotion_verdict({"workloads": rows}, ["baseline", "candidate"])
    assert verdict.promoted and verdict.against["baseline"].weighted.pairs == 5
    assert TimingReport(workloads=rows, promotion=verdict).promotion.promoted


def test_the_bootstrap_interval_holds_its_estimate_and_narrows_with_more_pairs():
    rng = random.Random(1)
    few = [0.95 + rng.gauss(0, 0.02) for _ in range(10)]
    many = [0.95 + rng.gauss(0, 0.02) for _ in range(400)]
    ratio, low, high = ratio_interval(few, 0.95)
    assert low <= ratio <= high
    _, many_low, many_high = ratio_interval(many, 0.95)
    assert many_high - many_low < high - low
    assert many_low < 0.95 < many_high
    weighted, w_low, w_high = model_time_ratio_interval([(1.0, few), (3.0, many)], 0.95)
    assert w_low <= weighted <= w_high


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


def test_the_controller_decides_promotion_whatever_the_candidate_process_reported():
    """The candidate process shares its interpreter with the solution: a verdict it reports
    (here promoted, with a bar lowered to nothing) is made again from the paired times."""
    forged = Promotion(
        promoted=True,
        reason="forged",
        thresholds=PromotionThresholds(required_gain=-1.0, noise_margin=1e9, confidence=0.5),
    )
    timing = TimingReport.model_validate({**report(1.0, 0.01), "promotion": forged})
    decided = decided_promotion(timing, incumbent=False).promotion
    assert decided.promoted is False and decided.thresholds == THRESHOLDS
    faster = TimingReport.model_validate({**report(0.9, 0.01), "promotion": forged})
    assert decided_promotion(faster, incumbent=False).promotion.promoted is True


def test_an_incumbent_timed_in_other_replays_is_compared_by_its_median_pair():
    """Pairs not aligned with the baseline's (another count): each role's median stands in."""
    timed = _with_incumbent(report(0.9, 0.005)["workloads"], {"a": 1.0, "b": 1.0})
    for row in timed["workloads"].values():
        row["paired_ratios"]["incumbent"] = row["paired_ratios"]["incumbent"][:30]
    verdict = promotion_verdict(timed, ["baseline", "incumbent", "candidate"])
    assert verdict.promoted and verdict.owns == ["a", "b"], verdict.reason
    assert abs(verdict.against["incumbent"].weighted.ratio - 0.9) < 0.01
