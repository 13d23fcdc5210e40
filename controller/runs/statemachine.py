"""The run's states and the one table of transitions allowed between them.

    created -> prepared -> attempting -> checking -> accepted -> published -> done
                               ^              |
                               '-- feedback <-'   (feedback -> rejected when the budget is spent)

A flow that improves an incumbent (tune) goes on after a passing attempt:

    checking -> promoted -> attempting ...   and, when a stop reason is reached,
    promoted | feedback -> accepted (the best incumbent is published) | rejected (none was)

`accepted` then carries the number of the attempt being published, which may be earlier than
the last attempt; the stop reason stays on the state through `published` and `done`.

`failed` (an error, with its reason) and `interrupted` (a signal; resumable) can be entered from
any non-terminal state. A transition is journaled before the work of the state it enters, and
that work is idempotent, so a resumed run simply redoes the work of the state it was in.
"""

from pydantic import BaseModel, ConfigDict

STATES = (
    "created",
    "prepared",
    "attempting",
    "checking",
    "feedback",
    "promoted",
    "accepted",
    "published",
    "done",
    "rejected",
    "failed",
    "interrupted",
)
TERMINAL_STATES = frozenset({"done", "rejected", "failed"})
_ANYWHERE = {"failed", "interrupted"}

TRANSITIONS: dict[str, frozenset[str]] = {
    "created": frozenset({"prepared"} | _ANYWHERE),
    "prepared": frozenset({"attempting", "rejected"} | _ANYWHERE),
    # An attempt whose agent session was cut short goes straight to feedback.
    "attempting": frozenset({"checking", "feedback"} | _ANYWHERE),
    "checking": frozenset({"accepted", "feedback", "promoted"} | _ANYWHERE),
    "feedback": frozenset({"attempting", "rejected", "accepted"} | _ANYWHERE),
    # Promoted, go on: the candidate became the incumbent; another attempt or a stop.
    "promoted": frozenset({"attempting", "accepted", "rejected"} | _ANYWHERE),
    "accepted": frozenset({"published"} | _ANYWHERE),
    "published": frozenset({"done"} | _ANYWHERE),
    # A resumed run returns to the state it was interrupted in.
    "interrupted": frozenset(set(STATES) - TERMINAL_STATES - {"interrupted"} | {"failed"}),
    "done": frozenset(),
    "rejected": frozenset(),
    "failed": frozenset(),
}

EXIT_CODES = {"done": 0, "rejected": 1, "failed": 1, "interrupted": 130}


class IllegalTransition(RuntimeError):
    """A bug: the engine asked for a transition the table does not allow."""


class RunState(BaseModel):
    """Where a run stands, as written to `state.json` after every transition."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    state: str = "created"
    attempt: int = 0
    reason: str | None = None
    limit: str | None = None
    resume_state: str | None = None
    seq: int = 0

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


def check_transition(current: str, following: str) -> None:
    """Refuse a transition the table does not list."""
    if following not in TRANSITIONS.get(current, frozenset()):
        raise IllegalTransition(f"no transition {current} -> {following}")


def apply_event(state: RunState, event: dict) -> RunState:
    """The state after one journal event (only `transition` events move it)."""
    if event.get("kind") != "transition":
        return state.model_copy(update={"seq": event["seq"]})
    return RunState(
        run_id=state.run_id,
        state=event["to"],
        attempt=event.get("attempt", state.attempt),
        reason=event.get("reason"),
        limit=event.get("limit"),
        resume_state=event.get("resume_state"),
        seq=event["seq"],
    )


def replay(run_id: str, events: list[dict]) -> RunState:
    """The state the journal describes."""
    state = RunState(run_id=run_id)
    for event in events:
        state = apply_event(state, event)
    return state
