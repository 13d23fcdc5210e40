"""A gate's judgement of one attempt: passed or not, why in one line, and the evidence."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Verdict(BaseModel):
    """What one gate decided about one candidate; a failed summary becomes agent feedback."""

    model_config = ConfigDict(frozen=True)

    gate: str
    passed: bool
    summary: str = Field(description="one line; for a failure, what the agent must fix")
    details: dict[str, Any] = Field(default_factory=dict)
    evidence: tuple[str, ...] = Field(default=(), description="files written beside the verdict")
    seconds: float = 0.0


def first_of(problems: list[str]) -> str:
    """A failed gate's one-line summary: its first problem, and how many more the details hold."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return problems[0] + more
