"""Which operators an optimize batch tunes, in what order, and with how many minutes each.

The profile is the model's step as it deploys (one replayed CUDA graph on a GPU, `graph`), so a
share is a share of the deployed step. Rule: an operator is a candidate when the profile
attributes device time to its registry calls, the capture holds its calls, it has a production
kernel, and (with `--operators`) it was asked for. Candidates are ranked by their device time
per step, largest first. Without `--operators`, one is worth tuning when it holds at least
`MIN_SHARE` of the step; an operator named there is tuned whatever its share. Each operator
tuned gets `MIN_MINUTES`, and the rest of the budget is split in proportion to the shares; where
the budget cannot give every worthy operator its minimum, the smallest shares are left out.
"""

from pydantic import BaseModel, ConfigDict, Field

from controller.optimize.floors import OperatorFloor
from controller.profiling.attribution import REGISTRY_PREFIX
from controller.profiling.hotspots import HotspotReport

MIN_SHARE = 0.01
MIN_MINUTES = 1.0


class OperatorShare(BaseModel):
    """One registry operator's share of the model's step, and what the plan does with it."""

    model_config = ConfigDict(frozen=True)

    operator: str
    us_per_step: float = Field(description="device time of its calls per step (host on a CPU)")
    share_of_step: float
    calls_per_step: float
    minutes: float | None = Field(None, description="tuning budget; None when not tuned")
    reason: str = Field("", description="why it is not tuned, when it is not")
    floor_us: float | None = Field(
        None, description="its lower bound per step on this GPU (`floors`); None off a GPU"
    )
    floor_bound: str | None = Field(None, description="what sets the floor: bytes or tensor cores")

    @property
    def tuned(self) -> bool:
        return self.minutes is not None


class TuningPlan(BaseModel):
    """Every registry operator the profile saw, largest share first, with its budget."""

    model_config = ConfigDict(frozen=True)

    budget_minutes: float
    profile_mode: str = Field(
        "eager", description="how the profile read the step: `graph` (as deployed) or `eager`"
    )
    rows: list[OperatorShare]

    @property
    def tuned(self) -> list[OperatorShare]:
        return [row for row in self.rows if row.tuned]


def plan_tuning(
    report: HotspotReport,
    captured: set[str],
    tunable: set[str],
    budget_minutes: float,
    requested: list[str] | None = None,
    floors: dict[str, OperatorFloor] | None = None,
) -> TuningPlan:
    """Rank the registry operators of `report` and split `budget_minutes` over the worthy ones.

    `captured`: operators the capture holds; `tunable`: operators with a production kernel;
    `floors`: each operator's floor per step on this GPU, shown beside its time."""
    floors = floors or {}
    ranked = sorted(report.registry, key=lambda row: (-row.kernel_us_per_step, row.region))
    rows, worthy = [], []
    for region in ranked:
        name = region.region.removeprefix(REGISTRY_PREFIX)
        reason = ""
        if requested and name not in requested:
            reason = "not among --operators"
        elif name not in tunable:
            reason = "no production kernel to tune"
        elif name not in captured:
            reason = "the capture holds no call of it"
        elif region.share_of_step < MIN_SHARE and not requested:
            reason = f"under {MIN_SHARE:.0%} of the step"
        if not reason:
            worthy.append(len(rows))
        rows.append(
            OperatorShare(
                operator=name,
                us_per_step=region.kernel_us_per_step,
                share_of_step=region.share_of_step,
                calls_per_step=region.calls_per_step,
                reason=reason,
                floor_us=floors[name].floor_us if name in floors else None,
                floor_bound=floors[name].bound if name in floors else None,
            )
        )
    seen = {row.operator for row in rows}
    for name in requested or []:
        if name not in seen:
            rows.append(
                OperatorShare(
                    operator=name,
                    us_per_step=0.0,
                    share_of_step=0.0,
                    calls_per_step=0.0,
                    reason="the profile saw no call of it",
                )
            )
    affordable = int(budget_minutes // MIN_MINUTES)
    for index in worthy[affordable:]:
        rows[index] = rows[index].model_copy(
            update={"reason": f"the budget gives {MIN_MINUTES:g} minute to {affordable} only"}
        )
    chosen = worthy[:affordable]
    spare = budget_minutes - MIN_MINUTES * len(chosen)
    total_share = sum(rows[index].share_of_step for index in chosen) or 1.0
    for index in chosen:
        extra = spare * rows[index].share_of_step / total_share
        rows[index] = rows[index].model_copy(update={"minutes": round(MIN_MINUTES + extra, 3)})
    return TuningPlan(budget_minutes=budget_minutes, profile_mode=report.mode, rows=rows)
