"""What a flow's command decided for a new run, beyond the options every run shares."""

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class NewRun(BaseModel):
    """What a flow's command decided for a new run, beyond the shared options."""

    model_config = ConfigDict(frozen=True)

    target: Path
    base_ref: str = "HEAD"
    work_item: dict[str, Any]
    gate_settings: dict[str, Any] = Field(default_factory=dict)
    policy: dict[str, Any] = Field(default_factory=dict, description="FencePolicy fields")
