"""A run end to end in-process: attempts, feedback, gates, a published branch and evidence."""

import json

import pytest
from engine_fixtures import (
    GOOD,
    GreetingAgent,
    TinyFlow,
    double_fence,
    make_target,
    new_tiny_run,
    report_json,
)

from controller.gitrepo import git
from controller.runs.engine import Engine
from controller.runs.progress import Progress


@pytest.fixture
def target(tmp_path):
    return make_target(tmp_path / "target")


def run_tiny(store, agent):
    return Engine(store, TinyFlow(), agent, double_fence(store.run_dir), Progress(False)).run()


def test_failed_attempt_feeds_back_and_second_is_published(tmp_path, target):
    store = new_tiny_run(tmp_path / "runs", target)
    agent = GreetingAgent(good_from=2)
    outcome = run_tiny(store, agent)
    assert (outcome.state, outcome.exit_code) == ("done", 0)
    report = report_json(store)
    assert [a["status"] for a in report["attempts"]] == ["rejected", "accepted"]
    assert report["attempts"][0]["verdicts"][1] == {
        "gate": "greeting",
        "passed": False,
        "summary": "got 'hullo\\n'",
        "seconds": 0.0,
    }
    assert "- greeting: got 'hullo\\n'" in agent.sessions[1].prompt  # feedback reached attempt 2
    assert report["totals"]["attempts"] == 2 and report["totals"]["tokens"] == 300
    assert report["totals"]["failed_calls"] == 2
    branch = report["published"]["branch"]
    assert git(target, "show", f"{branch}:hello.txt") == GOOD
    assert git(target, "rev-parse", f"{branch}^").strip() == store.manifest().base_commit
    for name in ("prompt.md", "transcript.json", "usage.json", "diff.patch"):
        assert (store.attempt_dir(2) / name).is_file(), name
    assert (
        json.loads((store.attempt_dir(1) / "verdicts" / "greeting.json").read_text())["passed"]
        is False
    )
    assert "+hello" in (store.attempt_dir(2) / "diff.patch").read_text()
    markdown = (store.evidence_dir / "report.md").read_text()
    assert "Outcome: accepted; branch published" in markdown and "FAIL **greeting**" in markdown
    trace = json.loads((store.evidence_dir / "trace.json").read_text())["traceEvents"]
    categories = {event.get("cat") for event in trace}
    assert {"state", "agent_turn", "tool_call", "gate"} <= categories
    assert json.loads(store.state_path.read_text())["state"] == "done"


def test_agent_workspace_is_a_single_commit_copy_of_base(tmp_path, target):
    (target / "hello.txt").write_text("future\n")
    git(target, "-c", "user.name=t", "-c", "user.email=t@l", "commit", "-qam", "later")
    git(target, "branch", "other")
    store = new_tiny_run(tmp_path / "runs", target)
    base = git(target, "rev-parse", "HEAD~1").strip()
    # Pin the run to the older commit: nothing from HEAD or `other` may be visible.
    manifest = store.manifest().model_copy(update={"base_commit": base})
    from controller.runs.store import write_json_atomic

    write_json_atomic(store.manifest_path, manifest.stored_form())
    agent = GreetingAgent(good_from=1)
    run_tiny(store, agent)
    workspace = agent.sessions[0].workspace
    assert git(workspace, "rev-list", "--all").split() == [
        git(workspace, "rev-parse", "HEAD").strip()
    ]
    assert git(workspace, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/base"]
    assert not (workspace / ".git" / "logs").exists()
    assert (store.base_path / "hello.txt").read_text() == "hi\n"
    assert (store.prepared_dir / "base_greeting.txt").read_text() == "hi\n"


def test_an_attempt_that_changes_nothing_is_rejected_without_gates(tmp_path, target):
    class IdleAgent(GreetingAgent):
        def run(self, session):
            result = super().run(session)
            (session.workspace / "hello.txt").write_text("hi\n")
            return result

    store = new_tiny_run(tmp_path / "runs", target, max_attempts=1)
    outcome = run_tiny(store, IdleAgent(good_from=1))
    assert (outcome.state, outcome.limit) == ("rejected", "attempts")
    verdicts = report_json(store)["attempts"][0]["verdicts"]
    assert [v["gate"] for v in verdicts] == ["changes"] and not verdicts[0]["passed"]


def test_an_agent_with_nothing_left_to_submit_stops_the_run_after_that_attempt(tmp_path, target):
    class ExhaustedAgent(GreetingAgent):
        def run(self, session):
            result = super().run(session)
            (session.workspace / "hello.txt").write_text("hi\n")
            return result.model_copy(update={"exit_reason": "exhausted"})

    store = new_tiny_run(tmp_path / "runs", target, max_attempts=5)
    outcome = run_tiny(store, ExhaustedAgent(good_from=1))
    assert (outcome.state, outcome.limit) == ("rejected", "agent")
    assert "nothing left worth judging after attempt 1" in outcome.reason
    attempts = report_json(store)["attempts"]
    assert len(attempts) == 1  # four attempts were left: none started
    verdict = attempts[0]["verdicts"][0]
    assert verdict["gate"] == "changes" and "nothing left worth judging" in verdict["summary"]


def test_a_flow_error_fails_the_run_with_its_reason(tmp_path, target):
    class BrokenFlow(TinyFlow):
        def check(self, run, attempt, candidate):
            raise RuntimeError("gate crashed")

    store = new_tiny_run(tmp_path / "runs", target)
    engine = Engine(
        store, BrokenFlow(), GreetingAgent(), double_fence(store.run_dir), Progress(False)
    )
    with pytest.raises(RuntimeError):
        engine.run()
    report = report_json(store)
    assert report["state"] == "failed" and report["reason"] == "RuntimeError: gate crashed"


def test_an_agent_that_crashes_fails_the_run_and_its_attempt_is_closed(tmp_path, target):
    class CrashingAgent(GreetingAgent):
        def run(self, session):
            raise ValueError("backend bug")

    store = new_tiny_run(tmp_path / "runs", target)
    engine = Engine(
        store, TinyFlow(), CrashingAgent(), double_fence(store.run_dir), Progress(False)
    )
    with pytest.raises(ValueError):
        engine.run()
    report = report_json(store)
    assert report["state"] == "failed" and report["reason"] == "ValueError: backend bug"
    assert [a["status"] for a in report["attempts"]] == ["interrupted"]
    assert (
        "stopped before its end: ValueError: backend bug"
        in (store.evidence_dir / "report.md").read_text()
    )


def test_the_trace_is_well_formed_chrome_trace_json(tmp_path, target):
    store = new_tiny_run(tmp_path / "runs", target)
    run_tiny(store, GreetingAgent(good_from=2))
    trace = json.loads((store.evidence_dir / "trace.json").read_text())
    assert trace["displayTimeUnit"] == "ms"
    for event in trace["traceEvents"]:
        assert event["ph"] in {"X", "i", "M"} and isinstance(event["pid"], int)
        if event["ph"] == "X":
            assert isinstance(event["ts"], int) and isinstance(event["dur"], int)
            assert event["ts"] >= 0 and event["dur"] >= 0 and event["tid"] in {1, 2, 3, 4}
    gates = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "gate"]
    assert gates == ["gate scope", "gate greeting"] * 2


def test_a_provider_that_cannot_serve_interrupts_the_run_and_the_attempt_is_not_counted(
    tmp_path, target
):
    """Rate-limited past the pause bound (or a refused key): the run is `interrupted` (exit 75),
    the attempt in flight is withdrawn with its spend kept, and a resume runs it again."""
    from controller.errors import ProviderUnavailable

    class RateLimitedOnce(GreetingAgent):
        def run(self, session):
            if not self.sessions:
                self.sessions.append(session)
                raise ProviderUnavailable(
                    "the provider kept refusing for rate limits", {"calls": 4, "failed_calls": 4}
                )
            return super().run(session)

    store = new_tiny_run(tmp_path / "runs", target)
    agent = RateLimitedOnce(good_from=1)
    outcome = run_tiny(store, agent)
    assert outcome.state == "interrupted" and outcome.exit_code == 75
    assert "rate limits" in outcome.reason
    spend = store.history().spend
    assert spend.attempts == 0 and spend.calls == 4 and spend.failed_calls == 4
    resumed = run_tiny(store, agent)
    assert resumed.state == "done"
    assert [session.attempt for session in agent.sessions] == [1, 1]
    assert store.history().spend.attempts == 1
