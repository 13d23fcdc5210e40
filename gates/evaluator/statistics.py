"""Order statistics for timing samples: median and spread (interquartile range / median).

CUDA event times come in whole ticks of the device timer (32 ns on an H200), so the plain
median of a ~5 us kernel's samples can only move in steps of 0.7%. `tick_median` treats the
samples as grouped data and interpolates inside the median's tick, which resolves shifts
smaller than one tick.
"""

from collections import Counter


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def quantile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def spread(values: list[float]) -> float:
    """Interquartile range over the median: how noisy the samples are."""
    middle = median(values)
    return (quantile(values, 0.75) - quantile(values, 0.25)) / middle if middle else 0.0


def tick_median(values: list[float]) -> float:
    """The median of tick-quantised samples, interpolated inside the tick that holds it.

    The grouped-data median: each distinct value stands for the tick [v - w/2, v + w/2), `w`
    being the smallest gap between distinct values. In the first tick whose cumulative count
    reaches n/2, with `below` samples under it and `inside` samples in it, the median is
    (v - w/2) + (n/2 - below) / inside * w. Samples that are not quantised (no repeated
    values) get the plain median.
    """
    ordered = sorted(values)
    levels = sorted(set(ordered))
    if len(levels) < 2 or len(levels) == len(ordered):
        return median(ordered)
    tick = min(high - low for low, high in zip(levels, levels[1:], strict=False))
    half = len(ordered) / 2
    counts = Counter(ordered)
    below = 0
    for level in levels:
        inside = counts[level]
        if below + inside >= half:
            return level - tick / 2 + (half - below) / inside * tick
        below += inside
    return median(ordered)
