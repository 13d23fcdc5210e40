"""The manifest: everything a run depends on, frozen when it starts and checked on resume."""

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.errors import ControllerError

MANIFEST_FORMAT = 1


class RunLimits(BaseModel):
    """The budget: a run stops (rejected) as soon as any of these is spent."""

    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(3, ge=1, description="attempts per run, interrupted ones included")
    max_minutes: float = Field(60.0, gt=0, description="active wall time per run")
    max_tokens: int | None = Field(None, ge=1, description="tokens per run, failed calls included")
    max_dollars: float | None = Field(None, gt=0, description="API cost per run")
    max_tokens_per_attempt: int | None = Field(None, ge=1)
    max_dollars_per_attempt: float | None = Field(None, gt=0)
    attempt_minutes: float = Field(30.0, gt=0, description="wall time of one agent session")
    expected_attempt_s: float | None = Field(
        None,
        gt=0,
        description="an attempt's wall time expected before any is judged (tune-all passes its "
        "baseline's evaluation at preflight), so the first one too is not started where it "
        "would end past the time limit",
    )
    max_turns: int = Field(60, ge=1, description="agent turns per attempt")
    turn_timeout_s: float = Field(300.0, gt=0, description="one model call or tool call")


class AgentChoice(BaseModel):
    """Which agent backend runs the attempts."""

    model_config = ConfigDict(frozen=True)

    spec: str = Field(description="e.g. anthropic:<model>, openai:<model>, claude, scripted:<file>")
    base_url: str | None = None


class FenceChoice(BaseModel):
    """Which fence holds the agent, and the policy settings every attempt starts from."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="landlock | docker | none")
    unfenced: bool = Field(False, description="run without a fence; only when asked")
    policy: dict[str, Any] = Field(default_factory=dict, description="FencePolicy fields")


class Manifest(BaseModel):
    """What a run was asked to do and with what; its digest is stored beside it."""

    model_config = ConfigDict(frozen=True)

    format: int = MANIFEST_FORMAT
    run_id: str
    created_at: str
    flow: str
    target: str
    base_commit: str
    work_item: dict[str, Any]
    agent: AgentChoice
    fence: FenceChoice
    limits: RunLimits
    gates: tuple[str, ...]
    gate_settings: dict[str, Any] = Field(default_factory=dict)
    controller_source_digest: str
    environment: dict[str, str]

    def digest(self) -> str:
        """sha256 of the canonical JSON of every field."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    def stored_form(self) -> dict[str, Any]:
        return {"manifest": self.model_dump(mode="json"), "digest": self.digest()}


def manifest_from_stored(stored: dict[str, Any], source: str) -> Manifest:
    """Validate a stored manifest and its digest, naming the field that is wrong."""
    try:
        manifest = Manifest.model_validate(stored["manifest"])
    except KeyError:
        raise ControllerError(f"{source} has no manifest; start a new run") from None
    except ValidationError as error:
        location = ".".join(str(part) for part in error.errors()[0]["loc"])
        raise ControllerError(f"{source}: manifest field '{location}' is invalid") from None
    if stored.get("digest") != manifest.digest():
        raise ControllerError(
            f"{source}: manifest field 'digest' does not match its content "
            "(the manifest was edited); start a new run"
        )
    return manifest


def first_difference(recorded: dict[str, Any], current: dict[str, Any], prefix: str = "") -> str:
    """The dotted name of the first field that differs between two manifest dumps, or ''."""
    for key in sorted(recorded.keys() | current.keys()):
        ours, theirs = recorded.get(key), current.get(key)
        if ours == theirs:
            continue
        if isinstance(ours, dict) and isinstance(theirs, dict):
            return first_difference(ours, theirs, f"{prefix}{key}.")
        return f"{prefix}{key}"
    return ""


def read_manifest_file(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ControllerError(f"{path} is missing; is this a run folder?") from None
    except json.JSONDecodeError as error:
        raise ControllerError(f"{path} is not valid JSON ({error.msg}); start a new run") from None
