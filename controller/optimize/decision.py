"""Keep or drop each installed kernel by the model-level result.

Rule: a kernel is kept only when (1) the model's numerics pass with it (the whole profile
passes `verify`'s numerical gate, or, when the whole profile fails, the profile holding only
this kernel passes), and (2) removing it makes the model slower beyond noise in at least one
timed batch and faster beyond noise in none: the paired, interleaved ratio "profile / profile
without it" is above 1 in every round of one batch and below 1 in every round of no batch, the
reading `verify` uses against `none`. A kernel applies only on the layouts where it won, so at
a batch whose calls it does not own its removal reads within noise, and that batch neither
keeps nor drops it. Where the model was not timed (no CUDA) no kernel can show it is worth
its place, so none is kept.
"""

from pydantic import BaseModel, ConfigDict, Field

from examples.paired_timing import PairedTiming, SpeedRatio

FULL = "profile"


def without(operator: str) -> str:
    """The name of the profile without `operator` in a paired timing."""
    return f"without {operator}"


class KernelDecision(BaseModel):
    """One installed kernel: kept or dropped, why, and the figures that decided it."""

    model_config = ConfigDict(frozen=True)

    operator: str
    kept: bool
    reason: str
    numerics_passed: bool
    removal: list[SpeedRatio] = Field(
        default_factory=list,
        description="per timed batch, the profile against the profile without this kernel",
    )


def decide(
    operators: list[str],
    full_numerics_passed: bool,
    alone_numerics: dict[str, bool],
    timings: list[PairedTiming],
) -> list[KernelDecision]:
    """Apply the rule to every installed operator, in the order given."""
    decisions = []
    for operator in operators:
        numerics = full_numerics_passed or alone_numerics.get(operator, False)
        ratios = [
            ratio
            for timing in timings
            if (ratio := timing.ratio(FULL, without(operator))) is not None
        ]
        figures = "; ".join(ratio.describe() for ratio in ratios)
        if not numerics:
            kept, reason = False, "dropped: the model's numerics fail with it"
        elif not ratios:
            kept, reason = False, "dropped: the model was not timed (timing needs CUDA)"
        elif any(ratio.slower_beyond_noise for ratio in ratios):
            kept, reason = False, f"dropped: removing it makes the model faster ({figures})"
        elif any(ratio.faster_beyond_noise for ratio in ratios):
            kept, reason = True, f"kept: removing it makes the model slower ({figures})"
        else:
            kept, reason = (
                False,
                (f"dropped: removing it does not make the model slower beyond noise ({figures})"),
            )
        decisions.append(
            KernelDecision(
                operator=operator,
                kept=kept,
                reason=reason,
                numerics_passed=numerics,
                removal=ratios,
            )
        )
    return decisions
