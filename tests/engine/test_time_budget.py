"""A run's time limit holds within 10%: an attempt that, as long as the longest one so far,
would end past the limit by more than that is not started."""

from controller.runs.budget import attempt_allowance, budget_stop
from controller.runs.history import Spend, summarize
from controller.runs.manifest import RunLimits

LIMITS = RunLimits(max_attempts=50, max_minutes=1.0)


def test_an_attempt_that_would_end_too_late_is_not_started():
    stop = budget_stop(LIMITS, Spend(attempts=2, elapsed_s=50.0, longest_attempt_s=20.0))
    assert stop is not None and stop.limit == "wall_time" and "time limit near" in stop.reason


def test_an_attempt_that_fits_within_the_overrun_starts():
    assert budget_stop(LIMITS, Spend(attempts=2, elapsed_s=40.0, longest_attempt_s=25.0)) is None
    assert budget_stop(LIMITS, Spend(attempts=0, elapsed_s=0.0)) is None


def test_the_longest_attempt_is_read_from_the_journal():
    events = [
        {"kind": "agent_started", "attempt": 1, "elapsed_s": 1.0},
        {"kind": "verdicts", "attempt": 1, "elapsed_s": 31.0, "passed": False},
        {"kind": "agent_started", "attempt": 2, "elapsed_s": 32.0},
        {"kind": "verdicts", "attempt": 2, "elapsed_s": 42.0, "passed": True},
    ]
    assert summarize(events).spend.longest_attempt_s == 30.0


def test_before_any_attempt_the_expected_one_is_held_to_the_limit():
    """The first attempt is judged by the run's expected attempt (tune-all passes its
    preflight's evaluation time): one that would end too late is not started."""
    expecting = RunLimits(max_attempts=50, max_minutes=1.0, expected_attempt_s=70.0)
    stop = budget_stop(expecting, Spend(attempts=0, elapsed_s=0.0))
    assert stop is not None and "as long as expected (1.17 min)" in stop.reason
    fits = RunLimits(max_attempts=50, max_minutes=1.0, expected_attempt_s=30.0)
    assert budget_stop(fits, Spend(attempts=0, elapsed_s=0.0)) is None
    # a longer attempt already judged outweighs the expectation
    longer = budget_stop(fits, Spend(attempts=1, elapsed_s=30.0, longest_attempt_s=40.0))
    assert longer is not None and "the longest so far (0.67 min)" in longer.reason


def test_an_agent_session_leaves_the_gates_time_to_judge_its_candidate():
    """A tune step ran 31% past its minutes: the tuner screened for all the time left, then its
    candidate was judged. The session's time now ends a judging (the preflight's) earlier."""
    limits = RunLimits(max_attempts=5, max_minutes=1.0, expected_attempt_s=14.0)
    allowance = attempt_allowance(limits, Spend(attempts=1, elapsed_s=30.0))
    assert allowance.wall_s == 16.0
    assert attempt_allowance(LIMITS, Spend(attempts=1, elapsed_s=30.0)).wall_s == 30.0
    nearly_out = attempt_allowance(limits, Spend(attempts=1, elapsed_s=59.0))
    assert nearly_out.wall_s == 1.0
    judged_slower = Spend(attempts=1, elapsed_s=30.0, longest_judging_s=25.0)
    assert attempt_allowance(limits, judged_slower).wall_s == 5.0, "the longer judging counts"


def test_the_longest_judging_is_read_from_the_journal():
    events = [
        {"kind": "agent_started", "attempt": 1, "elapsed_s": 1.0},
        {"kind": "agent_finished", "attempt": 1, "elapsed_s": 2.0},
        {"kind": "verdicts", "attempt": 1, "elapsed_s": 27.0, "passed": True},
        {"kind": "agent_started", "attempt": 2, "elapsed_s": 28.0},
        {"kind": "agent_finished", "attempt": 2, "elapsed_s": 60.0},
        {"kind": "verdicts", "attempt": 2, "elapsed_s": 80.0, "passed": False},
    ]
    spend = summarize(events).spend
    assert spend.longest_judging_s == 25.0 and spend.longest_attempt_s == 52.0
