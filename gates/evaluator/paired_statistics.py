"""Paired ratio statistics for promotion: candidate time over another role's time, per pair
of interleaved measurements, with a bootstrap confidence interval.

Pairs cancel what moves both roles together (clocks, the process's launch cost, the
neighbours on the host); the interval is a percentile bootstrap of the median ratio per
workload and of the model-time ratio across workloads (each workload's median ratio weighted
by its share of the model's time), from a fixed seed so the same samples always give the same
verdict.
"""

import math

import numpy

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 13


def paired_ratios(candidate: list[float], other: list[float]) -> list[float]:
    """Candidate over other, pair by pair (the two lists are interleaved measurements)."""
    return [c / o for c, o in zip(candidate, other, strict=True) if o > 0 and c > 0]


def _resampled_medians(ratios: list[float], generator) -> numpy.ndarray:
    values = numpy.asarray(ratios, dtype=numpy.float64)
    picks = generator.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    return numpy.median(values[picks], axis=1)


def ratio_interval(ratios: list[float], confidence: float) -> tuple[float, float, float]:
    """(median ratio, low, high): the percentile bootstrap interval of the median."""
    if not ratios:
        return math.nan, math.nan, math.nan
    medians = _resampled_medians(ratios, numpy.random.default_rng(BOOTSTRAP_SEED))
    low, high = _percentiles(medians, confidence)
    return float(numpy.median(ratios)), low, high


def model_time_ratio_interval(
    ratios_by_workload: list[tuple[float, list[float]]], confidence: float
) -> tuple[float, float, float]:
    """(ratio, low, high) of the model's time with the candidate over its time without:
    sum of share x median ratio, each weight being a workload's share of the model's time
    (calls per forward x the role's time), each workload's pairs resampled independently."""
    usable = [(weight, ratios) for weight, ratios in ratios_by_workload if ratios and weight > 0]
    if not usable:
        return math.nan, math.nan, math.nan
    shares = numpy.asarray([weight for weight, _ in usable]) / sum(w for w, _ in usable)
    generator = numpy.random.default_rng(BOOTSTRAP_SEED)
    medians = numpy.stack([_resampled_medians(r, generator) for _, r in usable])
    estimates = shares @ medians
    point = float(sum(s * numpy.median(r) for s, (_, r) in zip(shares, usable, strict=True)))
    low, high = _percentiles(estimates, confidence)
    return point, low, high


def _percentiles(values: numpy.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2 * 100
    low, high = numpy.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
