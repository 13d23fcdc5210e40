"""Typed timing results: per-workload rows, the timing report and the promotion verdict.

One definition each; `EvaluationResult.timing` carries them and `controller evaluate --json`
prints them. Per-role fields are named `<role>_<figure>` (roles: baseline, incumbent,
candidate) so the JSON reads the same as a table of the roles.
"""

import math

from pydantic import BaseModel, ConfigDict, Field, field_serializer


class PromotionThresholds(BaseModel):
    """The promotion rule's numbers (set in `promotion.THRESHOLDS`, recorded in the verdict)."""

    model_config = ConfigDict(frozen=True)

    required_gain: float = Field(description="weighted ratio must be at most 1 - this")
    noise_margin: float = Field(description="a workload is worse when its ratio low > 1 + this")
    confidence: float = Field(description="two-sided confidence of the bootstrap intervals")


class RatioInterval(BaseModel):
    """Candidate time over another role's, with its confidence interval (below 1 is faster)."""

    model_config = ConfigDict(frozen=True)

    ratio: float
    low: float
    high: float
    pairs: int = Field(default=0, description="paired measurements behind the estimate")

    @field_serializer("ratio", "low", "high")
    def _finite(self, value: float) -> float | None:
        return None if math.isnan(value) else value


class RoleComparison(BaseModel):
    """The candidate against one role: weighted mean ratio and each workload's."""

    model_config = ConfigDict(frozen=True)

    weighted: RatioInterval
    workloads: dict[str, RatioInterval] = Field(default_factory=dict)
    worse: list[str] = Field(default_factory=list, description="workloads slower beyond noise")


class Promotion(BaseModel):
    """Whether the candidate is promoted over the baseline (and incumbent), and why."""

    model_config = ConfigDict(frozen=True)

    promoted: bool
    reason: str
    thresholds: PromotionThresholds | None = None
    against: dict[str, RoleComparison] = Field(default_factory=dict)


class WorkloadTiming(BaseModel):
    """One workload's per-call times (microseconds) for every timed role."""

    model_config = ConfigDict(frozen=True)

    weight: float = 1.0
    bytes: int = 0
    floor_us: float = 0.0
    method: str = Field(default="eager", description="graph (replayed CUDA graphs) or eager")
    baseline_median_us: float = 0.0
    baseline_spread: float = 0.0
    baseline_round_medians_us: list[float] = Field(default_factory=list)
    baseline_cold_us: float | None = None
    incumbent_median_us: float | None = None
    incumbent_spread: float | None = None
    incumbent_round_medians_us: list[float] = Field(default_factory=list)
    incumbent_cold_us: float | None = None
    candidate_median_us: float = 0.0
    candidate_spread: float = 0.0
    candidate_round_medians_us: list[float] = Field(default_factory=list)
    candidate_cold_us: float | None = None
    promotion_figure: str = Field(default="warm", description="warm or cold: what promotion uses")
    paired_ratios: dict[str, list[float]] = Field(
        default_factory=dict, description="candidate/role per interleaved pair, by role"
    )
    speedup: float | None = None
    fresh_sets_per_round: int = 0
    empty_launch_us: float | None = None


class TimingReport(BaseModel):
    """Every workload's timing, how it was taken, and the promotion verdict."""

    model_config = ConfigDict(frozen=True)

    workloads: dict[str, WorkloadTiming] = Field(default_factory=dict)
    samples_per_role: int = 0
    rounds: int = 0
    l2_flush_bytes: int = 0
    bandwidth_gb_per_s: float = 0.0
    cuda_graphs: bool = False
    sm_clock_mhz: list[float] = Field(default_factory=list)
    fresh_pool_seconds: float = 0.0
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="graph timing: seconds capturing, replaying, checking"
    )
    promotion: Promotion | None = None
