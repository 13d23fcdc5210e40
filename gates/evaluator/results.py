"""Typed timing results: per-workload rows, the timing report and the promotion verdict.

One definition each; `EvaluationResult.timing` carries them and `controller evaluate --json`
prints them. Per-role fields are named `<role>_<figure>` (roles: baseline, incumbent,
candidate) so the JSON reads the same as a table of the roles.
"""

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

Figure = Literal["warm", "cold"]
WeightSource = Literal["captured", "declared", "declared-weight"]


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


class WorkloadWeight(BaseModel):
    """How often the model runs one workload: its share of the model's time is this many
    calls x the compared role's time on the workload's promotion figure."""

    model_config = ConfigDict(frozen=True)

    calls_per_forward: float = Field(ge=0)
    source: WeightSource = Field(
        description="captured (a capture's call count over its steps), declared (the "
        "declaration's calls per forward) or declared-weight (no calls per forward declared: "
        "the declared relative weight)"
    )


class SlowerRegime(BaseModel):
    """One workload slower than a role beyond noise on one figure (warm or cold)."""

    model_config = ConfigDict(frozen=True)

    workload: str
    figure: Figure
    candidate_us: float | None = None
    role_us: float | None = None
    interval: RatioInterval

    def describe(self, role: str) -> str:
        """`prefix_b8 slower than baseline beyond noise (warm: 18.21 us vs 17.16 us, ...)`."""
        times = ""
        if self.candidate_us is not None and self.role_us is not None:
            times = f" {self.candidate_us:.2f} us vs {self.role_us:.2f} us,"
        ratio = self.interval
        return (
            f"{self.workload} slower than {role} beyond noise ({self.figure}:{times} ratio "
            f"{ratio.ratio:.3f} [{ratio.low:.3f}, {ratio.high:.3f}])"
        )


class RoleComparison(BaseModel):
    """The candidate against one role: the model-time ratio, each workload's ratio on its
    promotion figure and on both figures, and the regimes slower beyond noise."""

    model_config = ConfigDict(frozen=True)

    weighted: RatioInterval
    workloads: dict[str, RatioInterval] = Field(default_factory=dict)
    figures: dict[str, dict[str, RatioInterval]] = Field(
        default_factory=dict, description="per workload, the ratio on each figure timed"
    )
    model_time_share: dict[str, float] = Field(
        default_factory=dict, description="each workload's share of the role's model time"
    )
    worse: list[str] = Field(default_factory=list, description="workloads slower beyond noise")
    slower: list[SlowerRegime] = Field(
        default_factory=list, description="each workload and figure slower beyond noise"
    )


class Promotion(BaseModel):
    """Whether the candidate is promoted over the baseline (and incumbent), and why."""

    model_config = ConfigDict(frozen=True)

    promoted: bool
    reason: str
    thresholds: PromotionThresholds | None = None
    against: dict[str, RoleComparison] = Field(default_factory=dict)
    weights: dict[str, WorkloadWeight] = Field(
        default_factory=dict, description="calls per forward of each workload, and their source"
    )
    owns: list[str] | None = Field(
        None,
        description="the workloads an install applies the candidate on (faster than "
        "production, slower than no role on either figure); elsewhere production runs",
    )


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
    figure_source: str = Field(
        default="l2-size",
        description="why that figure: task (evaluation.json), captured (the model's producer "
        "had just written the inputs, or not), l2-size (warm when a set fits in the L2)",
    )
    paired_ratios: dict[str, list[float]] = Field(
        default_factory=dict, description="candidate/role per interleaved pair, by role"
    )
    other_figure_ratios: dict[str, list[float]] = Field(
        default_factory=dict,
        description="candidate/role per pair on the figure promotion does not use, by role",
    )
    speedup: float | None = None
    fresh_sets_per_round: int = 0
    warm_calls_per_graph: int | None = Field(
        default=None,
        description="calls of a warm graph: as many as keep its fresh sets within half the L2",
    )
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
