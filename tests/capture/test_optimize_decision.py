"""The keep-or-drop rule over several timed batches: a kernel applies only on the layouts
where it won, so a batch it does not touch reads within noise and neither keeps nor drops it;
a batch it slows beyond noise drops it."""

from controller.optimize.decision import FULL, decide, without
from examples.paired_timing import PairedTiming, SpeedRatio


def removal(batch: int, lowest: float, highest: float, operator: str = "qkv") -> PairedTiming:
    """Batch `batch`'s timing where the profile against the profile without `operator` ran
    `lowest` to `highest` times as fast, round by round."""
    ratio = SpeedRatio(
        candidate=FULL,
        baseline=without(operator),
        median=(lowest + highest) / 2,
        lowest=lowest,
        highest=highest,
        faster_beyond_noise=lowest > 1,
        slower_beyond_noise=highest < 1,
    )
    return PairedTiming(
        batch=batch,
        mode="graph",
        clock="CUDA events",
        rounds=10,
        calls_per_round=5,
        median_ms={FULL: 10.0, without(operator): 11.0},
        round_ms={FULL: [10.0], without(operator): [11.0]},
        ratios=[ratio],
    )


def decided(*timings: PairedTiming):
    (decision,) = decide(["qkv"], True, {}, list(timings))
    return decision


def test_a_kernel_that_pays_at_one_batch_and_is_absent_at_the_other_is_kept():
    decision = decided(removal(1, 1.13, 1.15), removal(8, 0.999, 1.018))
    assert decision.kept and decision.reason.startswith("kept: removing it makes the model slower")
    assert [ratio.lowest for ratio in decision.removal] == [1.13, 0.999]


def test_a_kernel_that_slows_any_batch_beyond_noise_is_dropped():
    decision = decided(removal(1, 1.13, 1.15), removal(8, 0.97, 0.99))
    assert not decision.kept
    assert decision.reason.startswith("dropped: removing it makes the model faster")


def test_a_kernel_within_noise_everywhere_is_dropped():
    decision = decided(removal(1, 0.995, 1.01), removal(8, 0.999, 1.018))
    assert not decision.kept and "does not make the model slower beyond noise" in decision.reason
