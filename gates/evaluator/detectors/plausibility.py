"""Timings no real kernel can reach: faster than moving the workload's bytes at the
device's measured bandwidth."""

from gates.evaluator.detectors import CheatDetected

ROOFLINE_MARGIN = 0.8


class ImplausibleSpeed(CheatDetected):
    """The measured time is below the roofline floor (bytes moved / measured bandwidth): the
    work happened outside the timed region or not at all."""


def roofline_floor_ms(bytes_moved: int, bandwidth_bytes_per_ms: float) -> float:
    """The least time any kernel needs to read its inputs and write its outputs once."""
    return bytes_moved / bandwidth_bytes_per_ms


def check_plausible(workload: str, median_ms: float, floor_ms: float) -> None:
    if median_ms < floor_ms * ROOFLINE_MARGIN:
        raise ImplausibleSpeed(
            f"{workload}: {median_ms * 1e3:.2f} us is under the roofline floor "
            f"{floor_ms * 1e3:.2f} us"
        )
