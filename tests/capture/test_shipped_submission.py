"""Which submission an optimize step shipped, read from its tune run's winning attempt: the
report must not call a template at its own tiles a tuned kernel."""

import json

import pytest

from controller.agents.autotune_agent import SEARCH_TURN
from controller.agents.seeded_agent import SEED_TURN
from controller.optimize.starting_points import shipped_submission


def _run(tmp_path, attempt: int, turns: list[str], last_writes: bool = True) -> str:
    """A tune run folder whose winning attempt's agent turns are `turns`, each followed by a
    write (the last one only when `last_writes`)."""
    run_dir = tmp_path / "tune-run"
    (run_dir / "attempts" / f"{attempt:04d}").mkdir(parents=True)
    (run_dir / "publish.json").write_text(json.dumps({"attempt": attempt}))
    events = []
    for number, name in enumerate(turns, start=1):
        events.append({"name": name, "category": "agent_turn"})
        if number < len(turns) or last_writes:
            events.append({"name": "write", "category": "tool_call"})
    (run_dir / "attempts" / f"{attempt:04d}" / "events.json").write_text(json.dumps(events))
    return str(run_dir / "export")


@pytest.mark.parametrize(
    ("attempt", "turns", "shipped"),
    [
        (1, [f"{SEED_TURN}template"], "the template at its tiles (attempt 1)"),
        (1, [f"{SEED_TURN}h200"], "seed `h200` (attempt 1)"),
        (2, [SEARCH_TURN], "an autotune point (attempt 2)"),
        (3, [f"{SEED_TURN}template", SEARCH_TURN], "an autotune point (attempt 3)"),
        (2, ["turn 1", "turn 2"], "the agent's change (attempt 2)"),
    ],
)
def test_the_winning_attempt_names_what_shipped(tmp_path, attempt, turns, shipped):
    assert shipped_submission(_run(tmp_path, attempt, turns)) == shipped


def test_a_search_that_wrote_nothing_after_the_seed_was_written_again_ships_the_seed(tmp_path):
    export = _run(tmp_path, 3, [f"{SEED_TURN}template", SEARCH_TURN], last_writes=False)
    assert shipped_submission(export) == "the template at its tiles (attempt 3)"


def test_nothing_exported_or_an_unreadable_run_is_a_dash(tmp_path):
    assert shipped_submission(None) == "-"
    assert shipped_submission(str(tmp_path / "gone" / "export")) == "-"
    export = _run(tmp_path, 1, [SEARCH_TURN])
    (tmp_path / "tune-run" / "publish.json").write_text("{not json")
    assert shipped_submission(export) == "-"
