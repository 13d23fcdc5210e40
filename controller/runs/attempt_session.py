"""The session one attempt hands its agent, and the spend such a session left on disk.

The budgets are what the run has left (`budget.attempt_allowance`); the attempt's folder holds
the session's scratch folder and its call-by-call usage log, which the engine reads back when
the session was cut short before it could report.
"""

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from controller.agents.base import AgentLimits, AgentSession
from controller.agents.usage_log import FILE_NAME as USAGE_LOG
from controller.agents.usage_log import last_usage
from controller.runs.budget import attempt_allowance
from controller.runs.fencing import FenceBinding
from controller.runs.history import Spend
from controller.runs.manifest import RunLimits

SCRATCH = "scratch"


class AttemptSetting(BaseModel):
    """Where one attempt works and what it is told."""

    model_config = ConfigDict(frozen=True)

    number: int
    folder: Path
    workspace: Path
    prompt: str


def attempt_session(
    setting: AttemptSetting,
    context: Sequence[Path],
    fence: FenceBinding,
    limits: RunLimits,
    spend: Spend,
) -> AgentSession:
    """The agent session for this attempt, its scratch folder made."""
    allowance = attempt_allowance(limits, spend)
    scratch = setting.folder / SCRATCH
    scratch.mkdir(exist_ok=True)
    context = tuple(context)
    return AgentSession(
        workspace=setting.workspace,
        prompt=setting.prompt,
        context=context,
        fence=fence.fence,
        policy=fence.policy_for(setting.workspace, context),
        limits=AgentLimits(
            max_turns=limits.max_turns,
            max_tokens=allowance.max_tokens,
            max_dollars=allowance.max_dollars,
            turn_timeout_s=limits.turn_timeout_s,
            wall_s=allowance.wall_s,
        ),
        attempt=setting.number,
        scratch=scratch,
        usage_log=setting.folder / USAGE_LOG,
    )


def logged_usage(attempt_folder: Path) -> dict:
    """The spend a cut-short session logged call by call, as journal fields (none: {})."""
    logged = last_usage(attempt_folder / USAGE_LOG)
    return {"usage": logged} if logged else {}
