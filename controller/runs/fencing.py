"""The fence a run's agent sessions run in, built from the manifest's frozen fence choice."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.runs.manifest import FenceChoice
from controller.workspace import attempt_policy

UNFENCED_NAME = "none"


@dataclass(frozen=True)
class FenceBinding:
    """A fence and how to make the policy for one attempt's workspace and read-only context.

    `base_policy` is the frozen settings with a placeholder workspace (the target); a gate
    that runs fenced replaces the workspace with its own copy of the candidate.
    """

    fence: Any
    policy_for: Callable[[Path, Sequence[Path]], Any]
    base_policy: Any


def bind_fence(choice: FenceChoice, placeholder_workspace: Path) -> FenceBinding:
    """Resolve the fence now (fail closed: `sandbox.get_fence` refuses what it cannot enforce)."""
    from sandbox.fence import get_fence

    fence = get_fence(UNFENCED_NAME if choice.unfenced else choice.name, unfenced=choice.unfenced)
    if choice.unfenced:  # agent commands run as this user: keep them out of this process
        from controller.agents.key_custody import refuse_same_user_inspection

        refuse_same_user_inspection()

    def policy_for(workspace: Path, readable: Sequence[Path]) -> Any:
        return attempt_policy(choice.policy, workspace, readable)

    return FenceBinding(
        fence=fence, policy_for=policy_for, base_policy=policy_for(placeholder_workspace, ())
    )
