"""What the review page shows, as typed models: the readers fill them from a run or batch
folder and the renderer turns them into HTML, so neither knows the other's details."""

from pydantic import BaseModel, ConfigDict, Field


class GateView(BaseModel):
    """One gate's verdict on one attempt, with its details as the reviewer unfolds them."""

    model_config = ConfigDict(frozen=True)

    gate: str
    outcome: str = Field(description="pass, fail or skipped")
    summary: str
    seconds: float = 0.0
    details_json: str = Field("", description="the verdict's details, pretty JSON, maybe cut")


class RoleLatency(BaseModel):
    """One role's per-call time on one workload: the median and the spread of its rounds."""

    model_config = ConfigDict(frozen=True)

    role: str = Field(description="baseline, incumbent or candidate")
    median_us: float
    low_us: float = Field(description="the fastest round's median")
    high_us: float = Field(description="the slowest round's median")


class WorkloadLatencies(BaseModel):
    """Every timed role of one workload in one evaluation."""

    model_config = ConfigDict(frozen=True)

    workload: str
    roles: list[RoleLatency]


class SpeedupPoint(BaseModel):
    """A timed attempt's speedup over the production kernel on one workload, with the
    interval its paired rounds give."""

    model_config = ConfigDict(frozen=True)

    attempt: int
    workload: str
    speedup: float
    low: float | None = None
    high: float | None = None
    promoted: bool = False


class TranscriptStep(BaseModel):
    """One message or tool call of the agent's session, shortened for the page."""

    model_config = ConfigDict(frozen=True)

    role: str
    label: str = ""
    text: str


class AttemptView(BaseModel):
    """One attempt: how its agent stopped, what it changed, what each gate said."""

    model_config = ConfigDict(frozen=True)

    number: int
    status: str
    exit_reason: str | None = None
    note: str = Field("", description="why an interrupted attempt stopped, or the agent's error")
    agent_seconds: float | None = None
    check_seconds: float | None = None
    changed_paths: list[str] = Field(default_factory=list)
    diff: str = ""
    diff_cut: bool = False
    gates: list[GateView] = Field(default_factory=list)
    latencies: list[WorkloadLatencies] = Field(default_factory=list)
    evaluation_line: str = ""
    transcript: list[TranscriptStep] = Field(default_factory=list)


class TimeFigure(BaseModel):
    """One bar of a before/after comparison: a median and the interval of its rounds."""

    model_config = ConfigDict(frozen=True)

    group: str = Field(description="what is compared, e.g. a batch size")
    label: str = Field(description="before, after, or a kernel profile's name")
    median: float
    low: float
    high: float


class ModelTime(BaseModel):
    """The model's time before and after, as far as the run or batch measured it."""

    model_config = ConfigDict(frozen=True)

    title: str
    unit: str
    sentence: str
    figures: list[TimeFigure] = Field(default_factory=list)


class RunPage(BaseModel):
    """Everything one run's page shows."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    flow: str
    state: str
    outcome: str
    reason: str | None = None
    asked: list[tuple[str, str]] = Field(description="label and value, for the summary list")
    manifest_json: str
    attempts: list[AttemptView]
    costs: list[tuple[str, str]]
    published: str | None = None
    stops: list[str] = Field(default_factory=list)
    speedups: list[SpeedupPoint] = Field(default_factory=list)
    tuning_lines: list[str] = Field(default_factory=list)
    model_time: ModelTime | None = None
    report_markdown: str = Field("", description="report.md, for flows the page has no view of")
    kernel_workloads: list[tuple[str, str, str]] = Field(
        default_factory=list,
        description="each installed kernel: the workloads it owns and those it declined, with "
        "their figures",
    )
    plan_shares: list[tuple[str, float]] = Field(
        default_factory=list,
        description="operator and its share of the model's step, as an optimize plan read it",
    )
    pictures: list[tuple[str, str]] = Field(
        default_factory=list,
        description="caption and data: URI of each picture the evidence folder holds",
    )
    linked_pages: list[tuple[str, str]] = Field(
        default_factory=list, description="label and relative path of pages below this one"
    )


class OperatorRow(BaseModel):
    """One operator of a batch page, with a link to its run's own page."""

    model_config = ConfigDict(frozen=True)

    operator: str
    status: str
    baseline_us: float | None = None
    tuned_us: float | None = None
    speedup: float | None = None
    weakest_round_speedup: float | None = None
    stop_reason: str = ""
    run_page: str | None = Field(None, description="the run's report.html, relative to the batch")


class BatchPage(BaseModel):
    """Everything a batch's page shows."""

    model_config = ConfigDict(frozen=True)

    batch_id: str
    state: str
    asked: list[tuple[str, str]]
    operators: list[OperatorRow]
    device_check: str = ""
    model_time: ModelTime | None = None
