"""Budget accounting: whether a run may start another attempt, and what that attempt may spend."""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from controller.runs.history import Spend
from controller.runs.manifest import RunLimits

TIME_OVERRUN = 0.10
"""A run may end this share past its time limit: an attempt that, as long as the longest so
far (or, before any, as the run's `expected_attempt_s`), would end later is not started."""


class BudgetStop(BaseModel):
    """Why no further attempt may start: which limit, and a sentence for the report."""

    model_config = ConfigDict(frozen=True)

    limit: str  # attempts | wall_time | tokens | dollars
    reason: str


class AttemptAllowance(BaseModel):
    """What one agent session may spend: the tighter of the per-attempt and the remaining run."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None
    max_dollars: float | None
    wall_s: float


def budget_stop(limits: RunLimits, spend: Spend) -> BudgetStop | None:
    """The first limit the run has reached, or None if another attempt may start."""
    if spend.attempts >= limits.max_attempts:
        return BudgetStop(
            limit="attempts",
            reason=f"attempt limit reached: {spend.attempts} of {limits.max_attempts} used",
        )
    if spend.elapsed_s >= limits.max_minutes * 60:
        return BudgetStop(
            limit="wall_time",
            reason=f"time limit reached: {spend.elapsed_s / 60:.2f} of {limits.max_minutes} min",
        )
    expected, basis = spend.longest_attempt_s, "the longest so far"
    if (limits.expected_attempt_s or 0.0) > expected:
        expected, basis = limits.expected_attempt_s, "expected"
    if spend.elapsed_s + expected > (1 + TIME_OVERRUN) * limits.max_minutes * 60:
        return BudgetStop(
            limit="wall_time",
            reason=f"time limit near: {spend.elapsed_s / 60:.2f} of {limits.max_minutes} min "
            f"used, and an attempt as long as {basis} ({expected / 60:.2f} min) would end "
            f"past it by more than {TIME_OVERRUN:.0%}",
        )
    if limits.max_tokens is not None and spend.tokens >= limits.max_tokens:
        return BudgetStop(
            limit="tokens",
            reason=f"token limit reached: {spend.tokens} of {limits.max_tokens} tokens",
        )
    if limits.max_dollars is not None and spend.dollars >= limits.max_dollars:
        return BudgetStop(
            limit="dollars",
            reason=f"dollar limit reached: ${spend.dollars:.4f} of ${limits.max_dollars:.4f}",
        )
    return None


def agent_stop(attempts: Sequence) -> BudgetStop | None:
    """The latest attempt's agent ended `exhausted` (nothing left worth judging): another
    attempt would ask it the same question with less time."""
    if attempts and attempts[-1].exit_reason == "exhausted":
        return BudgetStop(
            limit="agent",
            reason=f"the agent had nothing left worth judging after attempt "
            f"{attempts[-1].number} (its transcript says why)",
        )
    return None


def attempt_allowance(limits: RunLimits, spend: Spend) -> AttemptAllowance:
    """Per-attempt limits narrowed to what the run has left. The agent's time also leaves the
    gates as long to judge its candidate as the longest judging so far, or before any the run's
    `expected_attempt_s` (tune-all's preflight judged the baseline in it): an agent that spends
    all the time left (the tuner's screen does) would otherwise end its attempt a judging past
    the limit."""
    judging = max(limits.expected_attempt_s or 0.0, spend.longest_judging_s)
    left = limits.max_minutes * 60 - spend.elapsed_s - judging
    return AttemptAllowance(
        max_tokens=_tighter(limits.max_tokens_per_attempt, _left(limits.max_tokens, spend.tokens)),
        max_dollars=_tighter(
            limits.max_dollars_per_attempt, _left(limits.max_dollars, spend.dollars)
        ),
        wall_s=max(1.0, min(limits.attempt_minutes * 60, left)),
    )


def _left(limit, used):
    return None if limit is None else max(limit - used, 0)


def _tighter(first, second):
    values = [value for value in (first, second) if value is not None]
    return min(values) if values else None
