"""Order statistics for timing samples: median and spread (interquartile range / median)."""


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
