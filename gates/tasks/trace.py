"""The FlashInfer Trace `Trace` entity: one solution's evaluation on one workload.

Validators tie the status to the fields that must be present, as flashinfer-bench does.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gates.tasks.workload import Workload

# The one list of evaluation statuses (the evaluator's results and the Trace schema use it).
# NOT_CAPTURABLE: CUDA graphs were required and the solution's call could not be captured.
# EVALUATOR_ERROR: the evaluator's own code failed; it never counts against the solution.
EvaluationStatus = Literal[
    "PASSED",
    "INCORRECT_SHAPE",
    "INCORRECT_NUMERICAL",
    "INCORRECT_DTYPE",
    "RUNTIME_ERROR",
    "COMPILE_ERROR",
    "TIMEOUT",
    "REJECTED",
    "NOT_CAPTURABLE",
    "EVALUATOR_ERROR",
]


class Correctness(BaseModel):
    """Largest errors seen against the reference, over every seed and distribution."""

    model_config = ConfigDict(frozen=True)

    max_relative_error: float = 0.0
    max_absolute_error: float = 0.0
    extra: dict[str, Any] | None = None


class Performance(BaseModel):
    """Device latency of the solution and the baseline on this workload."""

    model_config = ConfigDict(frozen=True)

    latency_ms: float = Field(default=0.0, ge=0.0)
    reference_latency_ms: float = Field(default=0.0, ge=0.0)
    speedup_factor: float = Field(default=0.0, ge=0.0)


class Environment(BaseModel):
    """Where the evaluation ran."""

    model_config = ConfigDict(frozen=True)

    hardware: str = Field(min_length=1)
    libs: dict[str, str] = Field(default_factory=dict)


class Evaluation(BaseModel):
    """The outcome of one evaluation; correctness and performance only where they mean something."""

    model_config = ConfigDict(frozen=True)

    status: EvaluationStatus
    environment: Environment
    timestamp: str = Field(min_length=1)
    log: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None

    @model_validator(mode="after")
    def _fields_match_status(self) -> "Evaluation":
        if self.status in ("PASSED", "INCORRECT_NUMERICAL") and self.correctness is None:
            raise ValueError(f"correctness is required when status is {self.status}")
        if self.status not in ("PASSED", "INCORRECT_NUMERICAL") and self.correctness is not None:
            raise ValueError(f"correctness must be absent when status is {self.status}")
        if self.status != "PASSED" and self.performance is not None:
            raise ValueError(f"performance must be absent when status is {self.status}")
        return self


class Trace(BaseModel):
    """A workload trace (no solution, no evaluation) or an evaluated one."""

    model_config = ConfigDict(frozen=True)

    definition: str = Field(min_length=1)
    workload: Workload
    solution: str | None = None
    evaluation: Evaluation | None = None
    weight: float | None = Field(
        default=None, gt=0, description="this project's weight of the workload in the mean"
    )
