"""What the journal says happened: each attempt's progress and what the run has spent so far."""

from pydantic import BaseModel, ConfigDict


class Spend(BaseModel):
    """Resources used by a run; interrupted attempts and failed calls count too."""

    model_config = ConfigDict(frozen=True)

    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float = 0.0
    calls: int = 0
    failed_calls: int = 0
    cache_write_tokens: int = 0
    """Of the input tokens, those written to the provider's prompt cache."""
    cache_read_tokens: int = 0
    """Of the input tokens, those read from it (billed at a fraction)."""
    elapsed_s: float = 0.0
    longest_attempt_s: float = 0.0  # agent start to verdicts, of the attempts judged so far
    longest_judging_s: float = 0.0  # agent end to verdicts: how long the gates took to judge

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class AttemptHistory(BaseModel):
    """One attempt as the journal records it."""

    model_config = ConfigDict(frozen=True)

    number: int
    started: bool = False
    finished: bool = False
    interrupted: bool = False
    checked: bool = False
    passed: bool | None = None
    exit_reason: str | None = None
    reason: str | None = None  # why an interrupted attempt stopped
    usage: dict = {}

    @property
    def status(self) -> str:
        """accepted | rejected | interrupted | checking | running."""
        if self.interrupted:
            return "interrupted"
        if self.checked:
            return "accepted" if self.passed else "rejected"
        return "checking" if self.finished else "running"


class RunHistory(BaseModel):
    """The attempts and spend of a run, folded from its journal."""

    model_config = ConfigDict(frozen=True)

    attempts: tuple[AttemptHistory, ...] = ()
    spend: Spend = Spend()
    published: dict | None = None
    stops: tuple[str, ...] = ()  # each interruption, crash and resume, as a sentence

    def attempt(self, number: int) -> AttemptHistory:
        for attempt in self.attempts:
            if attempt.number == number:
                return attempt
        return AttemptHistory(number=number)


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "dollars",
    "calls",
    "failed_calls",
    "cache_write_tokens",
    "cache_read_tokens",
)


def summarize(events: list[dict]) -> RunHistory:
    """Fold journal events into per-attempt records and the run's spend."""
    attempts: dict[int, AttemptHistory] = {}
    totals = dict.fromkeys(_USAGE_FIELDS, 0)
    published = None
    stops: list[str] = []
    started_at: dict[int, float] = {}
    finished_at: dict[int, float] = {}
    longest = judging = 0.0
    for event in events:
        kind, number = event.get("kind"), event.get("attempt")
        at = float(event.get("elapsed_s", 0.0))
        if kind == "agent_started":
            started_at[number] = at
        elif kind == "agent_finished":
            finished_at[number] = at
        elif kind == "verdicts":
            if number in started_at:
                longest = max(longest, at - started_at[number])
            if number in finished_at:
                judging = max(judging, at - finished_at[number])
        if kind == "published":
            published = event.get("result", {})
        stop = _stop_sentence(event)
        if stop:
            stops.append(stop)
        if kind == "attempt_withdrawn":  # the provider failed it: spend kept, not counted
            for field in _USAGE_FIELDS:
                totals[field] += (event.get("usage") or {}).get(field, 0)
            attempts.pop(number, None)
            continue
        if kind not in {"agent_started", "agent_finished", "attempt_interrupted", "verdicts"}:
            continue
        record = attempts.get(number, AttemptHistory(number=number))
        if kind == "agent_started":
            update = {"started": True}
        elif kind == "agent_finished":
            usage = event.get("usage", {})
            for field in _USAGE_FIELDS:
                totals[field] += usage.get(field, 0)
            update = {"finished": True, "exit_reason": event.get("exit_reason"), "usage": usage}
        elif kind == "attempt_interrupted":
            usage = event.get("usage") or {}  # known when the session ended but was not saved
            for field in _USAGE_FIELDS:
                totals[field] += usage.get(field, 0)
            update = {
                "interrupted": True,
                "exit_reason": "interrupted",
                "reason": event.get("reason"),
                "usage": usage or record.usage,
            }
        else:
            update = {"checked": True, "passed": bool(event.get("passed"))}
        attempts[number] = record.model_copy(update=update)
    spend = Spend(
        attempts=sum(1 for record in attempts.values() if record.started),
        elapsed_s=float(events[-1].get("elapsed_s", 0.0)) if events else 0.0,
        longest_attempt_s=longest,
        longest_judging_s=judging,
        **totals,
    )
    ordered = tuple(attempts[number] for number in sorted(attempts))
    return RunHistory(attempts=ordered, spend=spend, published=published, stops=tuple(stops))


def _stop_sentence(event: dict) -> str | None:
    """A sentence for an interruption, a crash recovered from, or a resume; else None."""
    kind = event.get("kind")
    if kind == "resumed_after_crash":
        return event.get("sentence")
    if kind == "torn_line_dropped":
        return f"the journal ended in a torn line ({event.get('bytes')} bytes); it was dropped"
    if kind != "transition":
        return None
    if event.get("to") == "interrupted":
        return f"interrupted in state {event.get('from')}: {event.get('reason')}"
    if event.get("from") == "interrupted":
        return f"{event.get('reason') or 'resumed'} (state {event.get('to')})"
    return None
