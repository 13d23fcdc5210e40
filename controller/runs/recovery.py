"""What a resumed run says about the stop it recovers from: a crash (the process died without
recording why: kill -9, power loss, a disk too full to record it) or a recorded interruption,
and which work it redoes. The journal and the report carry these sentences."""

from controller.runs.history import RunHistory
from controller.runs.journal import Journal
from controller.runs.statemachine import RunState, apply_event
from controller.runs.store import RunStore
from controller.runs.stored_run import StoredRun


def died_unrecorded(events: list[dict], state: RunState) -> bool:
    """True when the last process stopped mid-run without recording why (a crash)."""
    return bool(events) and not state.terminal and state.state != "interrupted"


def redo_description(state: str, attempt: int, history: RunHistory) -> str:
    """The work a run resumed in `state` redoes, in words."""
    record = history.attempt(attempt)
    if state == "created":
        return "the preparation (BASE export and the flow's prepare step)"
    if state in ("prepared", "feedback"):
        return f"the budget check before attempt {attempt + 1}"
    if state == "attempting":
        if record.interrupted:
            return f"nothing of attempt {attempt} (recorded as interrupted)"
        if record.finished:
            return f"nothing of attempt {attempt}'s agent session (it finished); its gates next"
        if record.started:
            return (
                f"nothing of attempt {attempt}: its agent session was cut short, it is recorded "
                "as interrupted, counts against the budget and is not replayed"
            )
        return f"the set-up of attempt {attempt} (no agent session had started)"
    if state == "checking":
        if record.checked:
            return f"nothing of attempt {attempt}'s gates (their verdicts were recorded)"
        return f"the gates of attempt {attempt}"
    if state == "accepted":
        return f"publishing attempt {attempt}"
    if state == "published":
        return "the end of the run (the result was published)"
    return f"the work of state {state}"


def crash_sentence(state: str, redo: str) -> str:
    return f"resumed after a crash in state {state}; redoing {redo}"


def open_run(store: RunStore, run: StoredRun, progress) -> tuple[Journal, RunState]:
    """Open the journal on the run as read, recording the run's creation, a torn last line the
    last process left and, when it died without recording why, the crash and the work this
    process redoes; the journal and the state after those records."""
    journal = store.open_journal(run.events)
    manifest, state = run.manifest, run.state
    appended = []
    if not run.events:
        appended.append(
            journal.append(
                "created", manifest=manifest.model_dump(mode="json"), digest=manifest.digest()
            )
        )
    if journal.dropped_bytes:
        appended.append(journal.append("torn_line_dropped", bytes=journal.dropped_bytes))
    if died_unrecorded(list(run.events), state):
        redo = redo_description(state.state, state.attempt, run.history)
        sentence = crash_sentence(state.state, redo)
        appended.append(
            journal.append(
                "resumed_after_crash", state=state.state, attempt=state.attempt, sentence=sentence
            )
        )
        progress.note(sentence)
    for event in appended:
        state = apply_event(state, event)
    return journal, state
