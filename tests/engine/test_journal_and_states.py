"""The transition table and the journal on their own: illegal moves refused, torn lines
repaired, the kill hook inert unless its variable is set."""

import json

import pytest

from controller.errors import ControllerError
from controller.runs.journal import KILL_AT_VARIABLE, Journal, read_journal
from controller.runs.statemachine import (
    STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    IllegalTransition,
    check_transition,
    replay,
)


def test_every_state_has_a_row_and_terminal_states_have_no_exit():
    assert set(TRANSITIONS) == set(STATES)
    for state in TERMINAL_STATES:
        assert TRANSITIONS[state] == frozenset()
    for state in set(STATES) - TERMINAL_STATES:
        assert {"failed", "interrupted"} & TRANSITIONS[state]


@pytest.mark.parametrize(
    ("current", "following"),
    [
        ("created", "accepted"),
        ("checking", "published"),
        ("done", "attempting"),
        ("rejected", "feedback"),
        ("prepared", "done"),
    ],
)
def test_illegal_transitions_are_refused(current, following):
    with pytest.raises(IllegalTransition):
        check_transition(current, following)


def test_the_happy_path_is_allowed():
    path = [
        "created",
        "prepared",
        "attempting",
        "checking",
        "feedback",
        "attempting",
        "checking",
        "accepted",
        "published",
        "done",
    ]
    for current, following in zip(path, path[1:], strict=False):
        check_transition(current, following)


def test_journal_appends_in_sequence_and_replays(tmp_path, monkeypatch):
    monkeypatch.delenv(KILL_AT_VARIABLE, raising=False)
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append("created")
    journal.append("transition", **{"from": "created", "to": "prepared"}, attempt=0)
    again = Journal(tmp_path / "journal.jsonl")
    again.append("transition", **{"from": "prepared", "to": "attempting"}, attempt=1)
    events = read_journal(tmp_path / "journal.jsonl")
    assert [event["seq"] for event in events] == [1, 2, 3]
    state = replay("run", events)
    assert (state.state, state.attempt, state.seq) == ("attempting", 1, 3)


def test_a_torn_last_line_is_ignored_and_then_dropped(tmp_path, monkeypatch):
    monkeypatch.delenv(KILL_AT_VARIABLE, raising=False)
    path = tmp_path / "journal.jsonl"
    Journal(path).append("created")
    with open(path, "a") as handle:
        handle.write('{"seq": 2, "kind": "transi')
    assert len(read_journal(path)) == 1
    Journal(path).append("created-again")
    lines = path.read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2]


def test_a_torn_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text('{"seq": 1}\n{"seq": 2\n{"seq": 3}\n')
    with pytest.raises(ControllerError, match="line 2 is not valid JSON"):
        read_journal(path)
