"""Each budget stops the run (rejected) with its own reason; attempts get what the run has left."""

import pytest
from engine_fixtures import GreetingAgent, TinyFlow, double_fence, make_target, new_tiny_run

from controller.runs.engine import Engine
from controller.runs.progress import Progress


@pytest.fixture
def target(tmp_path):
    return make_target(tmp_path / "target")


def run_tiny(store, agent):
    return Engine(store, TinyFlow(), agent, double_fence(store.run_dir), Progress(False)).run()


def test_attempt_limit(tmp_path, target):
    store = new_tiny_run(tmp_path / "runs", target, max_attempts=2)
    outcome = run_tiny(store, GreetingAgent(good_from=99))
    assert (outcome.state, outcome.limit, outcome.exit_code) == ("rejected", "attempts", 1)
    assert "attempt limit reached: 2 of 2" in outcome.reason
    assert store.history().spend.attempts == 2


def test_wall_time_limit(tmp_path, target):
    # 0.02 minutes is 1.2 s (room for the first attempt on a loaded machine); one session
    # sleeping 1.5 s uses it up.
    store = new_tiny_run(tmp_path / "runs", target, max_attempts=5, max_minutes=0.02)
    agent = GreetingAgent(good_from=99, sleep_s=1.5)
    outcome = run_tiny(store, agent)
    assert (outcome.state, outcome.limit) == ("rejected", "wall_time")
    assert len(agent.sessions) == 1


def test_token_limit_counts_every_call_and_narrows_the_next_attempt(tmp_path, target):
    store = new_tiny_run(tmp_path / "runs", target, max_attempts=5, max_tokens=200)
    agent = GreetingAgent(good_from=99, tokens=150)
    outcome = run_tiny(store, agent)
    assert (outcome.state, outcome.limit) == ("rejected", "tokens")
    assert "300 of 200 tokens" in outcome.reason
    assert [session.limits.max_tokens for session in agent.sessions] == [200, 50]


def test_per_attempt_tokens_are_passed_to_the_agent(tmp_path, target):
    store = new_tiny_run(tmp_path / "runs", target, max_attempts=1, max_tokens_per_attempt=70)
    agent = GreetingAgent(good_from=99)
    run_tiny(store, agent)
    assert agent.sessions[0].limits.max_tokens == 70


def test_dollar_limit(tmp_path, target):
    store = new_tiny_run(tmp_path / "runs", target, max_attempts=5, max_dollars=0.025)
    agent = GreetingAgent(good_from=99, dollars=0.01)
    outcome = run_tiny(store, agent)
    assert (outcome.state, outcome.limit) == ("rejected", "dollars")
    assert len(agent.sessions) == 3
    assert agent.sessions[2].limits.max_dollars == pytest.approx(0.005)


def test_a_run_within_its_limits_is_not_stopped(tmp_path, target):
    store = new_tiny_run(
        tmp_path / "runs", target, max_attempts=2, max_tokens=1000, max_dollars=1.0
    )
    assert run_tiny(store, GreetingAgent(good_from=2)).state == "done"
