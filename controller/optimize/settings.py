"""What an optimize batch was asked to do, frozen in its manifest's work item."""

from pydantic import BaseModel, ConfigDict, Field

from controller.batch.record import RunOptions


class OptimizeSettings(BaseModel):
    """The batch's request: a `--resume` that names another value is refused, naming it."""

    model_config = ConfigDict(frozen=True)

    profile: str = Field(description="the kernel profile to install, tuned/<profile>/")
    driver: list[str] = Field(description="module:function [ARGS] or script.py [ARGS]")
    budget_minutes: float = Field(gt=0, description="tuning minutes, split over the operators")
    operators: list[str] = Field(default_factory=list, description="only these (default: any)")
    tuned_root: str = Field(description="where the profile is installed")
    tune: RunOptions = Field(description="the tune-all options of every operator's run")
    preflight: bool = True
    gpus: list[str] = Field(default_factory=lambda: ["0"])
    size: str = Field(description="the example model's size that verify checks")
    batches: list[int] = Field(description="batch sizes the model is verified and timed at")
    inputs: int = Field(ge=1, description="input seeds per batch of the numerical gate")
    plan_only: bool = Field(False, description="stop once the plan is written: nothing tuned")
    seed_profile: str | None = Field(
        None, description="the profile whose kernels start each operator's tune run"
    )
    templates: bool = Field(
        False,
        description="the model-free tuner starts from the product's kernel template of an "
        "operator the seed profile does not ship; `optimize` sets it unless --no-templates "
        "(a batch frozen before templates existed resumes without them)",
    )
