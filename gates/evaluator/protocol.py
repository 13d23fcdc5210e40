"""The files that cross the evaluator's process boundary: request, reports, and the result.

Every report echoes the request's nonce and digests, so the controller never accepts a
stale report or one about another task or solution.
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gates.evaluator.results import TimingReport
from gates.tasks.trace import EvaluationStatus as Status

Integrity = Literal["graph", "traced"]


class EvaluationRequest(BaseModel):
    """What one evaluation is about; written by the controller before any worker starts."""

    model_config = ConfigDict(frozen=True)

    nonce: str
    task: str
    task_digest: str
    solution: str
    solution_digest: str
    incumbent: str | None = None
    device: Literal["cpu", "cuda"]
    work_dir: str
    sources_dir: str
    timing_samples: int = 1000
    timing_rounds: int = 5
    fence: Literal["none", "landlock"] = "none"
    judged_as: Literal["candidate", "baseline"] = "candidate"
    """`baseline`: the task's own production kernel, judged by the task's numerics and timing
    alone; the compute rules a candidate is held to (ATen compute, narrowing casts, host
    compute) are not applied to it, the evaluator's own integrity checks stay armed."""


class Finding(BaseModel):
    """A detector's verdict on the candidate: which cheat and what was seen."""

    model_config = ConfigDict(frozen=True)

    detector: str
    cheat: str
    reason: str


class CaseRecord(BaseModel):
    """What the candidate process saw on one case; the judge checks it against the reference."""

    model_config = ConfigDict(frozen=True)

    key: str
    input_digests_after: list[str] = Field(default_factory=list)
    repeat_output_digests: list[str] | None = None


class ReplayWitness(BaseModel):
    """One timed call of the candidate (a call of a replayed graph, or an eager call) whose
    outputs go to the judge: the set it got, by its index in its round's pool (whose seeds
    the judge derives from the nonce)."""

    model_config = ConfigDict(frozen=True)

    workload: str
    figure: Literal["warm", "cold", "eager"]
    round_index: int = Field(default=0, ge=0, description="the timing round whose pool it drew")
    set_index: int = Field(ge=0)
    pool_sets: int = Field(ge=2, description="sets in the pool; its draw depends on the count")
    key: str = Field(description="where its outputs are in the candidate's outputs file")


class CandidateReport(BaseModel):
    """The candidate process's account: how far it got, what it found, and its timings."""

    model_config = ConfigDict(frozen=True)

    nonce: str
    task_digest: str
    solution_digest: str
    status: Status | Literal["RAN"]
    reason: str = ""
    findings: list[Finding] = Field(default_factory=list)
    last_findings: list[Finding] = Field(
        default_factory=list,
        description="the solution's recorded calls asking where or when it runs: they reject a "
        "run every other check passes, the judge's included, so a cheat another detector names "
        "keeps its own class",
    )
    cases: list[CaseRecord] = Field(default_factory=list)
    hidden_errors: dict[str, str] = Field(
        default_factory=dict, description="hidden cases that raised or returned a wrong layout"
    )
    outputs_file: str | None = None
    timing: TimingReport | None = None
    witnesses: list[ReplayWitness] = Field(
        default_factory=list, description="timed calls whose outputs the judge checks"
    )
    integrity: Integrity = "traced"
    notes: list[str] = Field(default_factory=list)
    library_calls: list[str] = Field(
        default_factory=list, description="each BLAS product the candidate called, with operands"
    )
    environment: dict[str, str] = Field(default_factory=dict)
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="wall time of each step inside the candidate process"
    )


class JudgeReport(BaseModel):
    """The judge process's verdict on the candidate's outputs against the references."""

    model_config = ConfigDict(frozen=True)

    nonce: str
    task_digest: str
    solution_digest: str
    status: Status
    reason: str = ""
    findings: list[Finding] = Field(default_factory=list)
    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    cases_checked: int = 0
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="seconds of each judge step, summed over the cases"
    )


class EvaluationResult(BaseModel):
    """The controller's final answer for one candidate on one task."""

    model_config = ConfigDict(frozen=True)

    task: str
    operator: str
    solution: str
    device: str
    status: Status
    reason: str = ""
    detector: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    cases_checked: int = 0
    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    integrity: Integrity | None = Field(
        default=None,
        description="graph: outputs and times from inspected CUDA-graph replays; traced: from "
        "calls watched by the Python detectors (CPU, eager-only tasks), a weaker level",
    )
    notes: list[str] = Field(default_factory=list, description="how the evaluation ran")
    library_calls: list[str] = Field(
        default_factory=list, description="each BLAS product the candidate called, with operands"
    )
    timing: TimingReport | None = None
    seconds: float = 0.0
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="where the evaluation's wall time went"
    )


def write_json_atomic(path: Path, data: BaseModel | dict) -> None:
    """Write JSON through a synced temporary file and a rename."""
    path = Path(path)
    text = data.model_dump_json(indent=2) if isinstance(data, BaseModel) else json.dumps(data)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)


def evaluator_fault(error: BaseException) -> str:
    """One line naming an exception of the evaluator's own code and where it was raised."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    place = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    text = str(error).strip().splitlines()
    return f"evaluator fault{place}: {type(error).__name__}: {text[0] if text else ''}"[:300]
