"""SIGKILL the controller after every journal event in turn, resume, and compare with a clean run.

A kill inside an agent session (after `agent_started`) leaves that attempt in flight: on resume
it is recorded as interrupted, counts against the budget and is not replayed, so the expected
run then has one more attempt. Every other kill point must resume to exactly the clean run.
"""

import json
import signal
from pathlib import Path

import pytest
from engine_fixtures import make_target
from engine_processes import frozen_source, harness, only_run

GOOD_FROM = 2


def comparable(run_dir: Path) -> dict:
    """The evidence without what legitimately differs between runs (ids, clocks, paths)."""
    report = json.loads((run_dir / "evidence" / "report.json").read_text())
    attempts = [
        {
            "status": attempt["status"],
            "changes": attempt["changes"],
            "verdicts": [(v["gate"], v["passed"], v["summary"]) for v in attempt["verdicts"]],
            "usage": attempt["usage"],
        }
        for attempt in report["attempts"]
    ]
    totals = {key: report["totals"][key] for key in ("attempts", "tokens", "dollars", "calls")}
    published = report["published"] and report["published"]["tree"]
    return {"state": report["state"], "attempts": attempts, "totals": totals, "tree": published}


def expected_with_interruption(clean: dict, interrupted_attempt: int) -> dict:
    """The clean run's evidence, with attempt `interrupted_attempt` cut short and redone later."""
    good, bad = clean["attempts"][-1], clean["attempts"][0]
    attempts, number = [], 1
    while True:
        if number == interrupted_attempt:
            attempts.append({"status": "interrupted", "changes": [], "verdicts": [], "usage": {}})
        elif number >= GOOD_FROM:
            attempts.append(good)
            break
        else:
            attempts.append(bad)
        number += 1
    finished = [attempt for attempt in attempts if attempt["status"] != "interrupted"]
    totals = {
        "attempts": len(attempts),
        "tokens": sum(a["usage"]["input_tokens"] + a["usage"]["output_tokens"] for a in finished),
        "dollars": pytest.approx(sum(a["usage"]["dollars"] for a in finished)),
        "calls": sum(a["usage"]["calls"] for a in finished),
    }
    return {"state": "done", "attempts": attempts, "totals": totals, "tree": clean["tree"]}


@pytest.mark.slow
def test_killed_at_every_event_resumes_to_the_clean_result(tmp_path):
    target = make_target(tmp_path / "target")
    source = frozen_source(tmp_path / "source")
    clean_runs = tmp_path / "clean"
    assert harness("start", clean_runs, target, python_path=source).returncode == 0
    clean_dir = only_run(clean_runs)
    clean = comparable(clean_dir)
    assert [a["status"] for a in clean["attempts"]] == ["rejected", "accepted"]
    events = [json.loads(line) for line in (clean_dir / "journal.jsonl").read_text().splitlines()]
    assert len(events) >= 15
    for kill_at, event in enumerate(events, start=1):
        runs_dir = tmp_path / f"kill-{kill_at:02d}"
        killed = harness("start", runs_dir, target, kill_at=kill_at, python_path=source)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        run_dir = only_run(runs_dir)
        journal = (run_dir / "journal.jsonl").read_text().splitlines()
        assert len(journal) == kill_at and json.loads(journal[-1])["kind"] == event["kind"]
        resumed = harness("resume", run_dir, python_path=source)
        assert resumed.returncode == 0, (kill_at, event, resumed.stderr)
        expected = clean
        if event["kind"] == "agent_started":
            expected = expected_with_interruption(clean, event["attempt"])
        assert comparable(run_dir) == expected, (kill_at, event)
        state = json.loads((run_dir / "state.json").read_text())
        assert state["state"] == "done"
        for name in ("report.md", "trace.json"):
            assert (run_dir / "evidence" / name).is_file()


def test_a_resume_killed_in_turn_still_reaches_the_same_result(tmp_path):
    target = make_target(tmp_path / "target")
    source = frozen_source(tmp_path / "source")
    clean_runs = tmp_path / "clean"
    assert harness("start", clean_runs, target, python_path=source).returncode == 0
    clean = comparable(only_run(clean_runs))
    events = [json.loads(line) for line in (only_run(clean_runs) / "journal.jsonl").open()]
    second_start = next(
        number
        for number, event in enumerate(events, start=1)
        if event["kind"] == "agent_started" and event["attempt"] == 2
    )
    runs_dir = tmp_path / "twice"
    first = harness("start", runs_dir, target, kill_at=second_start, python_path=source)
    assert first.returncode == -signal.SIGKILL
    run_dir = only_run(runs_dir)
    # The resume records the crash and attempt 2 as interrupted, plans attempt 3, and dies
    # before its agent.
    second = harness("resume", run_dir, kill_at=4, python_path=source)
    assert second.returncode == -signal.SIGKILL
    last = json.loads((run_dir / "journal.jsonl").read_text().splitlines()[-1])
    assert (last["kind"], last["to"], last["attempt"]) == ("transition", "attempting", 3)
    assert harness("resume", run_dir, python_path=source).returncode == 0
    assert comparable(run_dir) == expected_with_interruption(clean, 2)
