"""The run as a Chrome trace (opens in Perfetto): states, agent turns, tool calls and gates.

Gates report only their duration, so their spans are laid end to end from the moment the
check began, in the order they ran.
"""

from typing import Any

from controller.runs.records import load_verdicts, read_json
from controller.runs.store import RunStore

PROCESS_ID = 1
THREADS = {"states": 1, "agent_turn": 2, "tool_call": 3, "gate": 4}


def build_trace(store: RunStore) -> dict[str, Any]:
    """The trace JSON object: complete ("X") spans and instant ("i") events in microseconds."""
    events = store.events()
    origin = events[0]["at"] if events else 0.0
    trace: list[dict[str, Any]] = [
        {"ph": "M", "pid": PROCESS_ID, "name": "process_name", "args": {"name": store.run_id}}
    ]
    for name, thread in THREADS.items():
        trace.append(
            {
                "ph": "M",
                "pid": PROCESS_ID,
                "tid": thread,
                "name": "thread_name",
                "args": {"name": name},
            }
        )
    trace += _state_spans(events, origin)
    attempts = sorted({event["attempt"] for event in events if event["kind"] == "agent_started"})
    for number in attempts:
        directory = store.attempt_dir(number)
        for span in read_json(directory / "events.json", []):
            trace.append(
                _span(
                    span["name"],
                    span["category"],
                    span["start_s"],
                    span["duration_s"],
                    origin,
                    THREADS.get(span["category"], 2),
                    span.get("args", {}),
                )
            )
        check = read_json(directory / "check.json")
        if check:
            start = check["started_at"]
            for verdict in load_verdicts(directory):
                seconds = float(verdict.seconds or 0.0)
                args = {"attempt": number, "passed": verdict.passed}
                trace.append(_span(f"gate {verdict.gate}", "gate", start, seconds, origin, 4, args))
                start += seconds
    return {"traceEvents": trace, "displayTimeUnit": "ms"}


def _state_spans(events: list[dict], origin: float) -> list[dict[str, Any]]:
    """Each state from the transition into it to the next one; an instant for the last."""
    transitions = [event for event in events if event["kind"] == "transition"]
    spans = []
    for current, following in zip(transitions, transitions[1:], strict=False):
        duration = max(following["at"] - current["at"], 0.0)
        args = {"attempt": current.get("attempt"), "reason": current.get("reason")}
        spans.append(_span(current["to"], "state", current["at"], duration, origin, 1, args))
    if transitions:
        last = transitions[-1]
        spans.append(
            {
                "ph": "i",
                "s": "t",
                "pid": PROCESS_ID,
                "tid": 1,
                "name": last["to"],
                "cat": "state",
                "ts": _micros(last["at"] - origin),
                "args": {"reason": last.get("reason")},
            }
        )
    return spans


def _span(name, category, start, seconds, origin, thread, args) -> dict[str, Any]:
    return {
        "ph": "X",
        "pid": PROCESS_ID,
        "tid": thread,
        "name": name,
        "cat": category,
        "ts": _micros(start - origin),
        "dur": _micros(seconds),
        "args": args,
    }


def _micros(seconds: float) -> int:
    return int(round(seconds * 1_000_000))
