"""Whole register runs on the fixture target: feedback, acceptance, the branch, rejection."""

import json
from pathlib import Path

from register_session import SITE_ARGUMENTS, expected_tree, git, good_actions, only_run

from controller.cli import main


def run_register(target, session, tmp_path, fence_arguments, *extra: str) -> int:
    arguments = ["register", "run", "--target", str(target), "--operator", "gelu_tanh"]
    arguments += [*SITE_ARGUMENTS, "--agent", f"scripted:{session}", *fence_arguments]
    return main([*arguments, "--runs-dir", str(tmp_path / "runs"), *extra])


def verdicts(run: Path, attempt: int) -> dict[str, dict]:
    folder = run / "attempts" / f"{attempt:04d}" / "verdicts"
    return {v["gate"]: v for v in (json.loads(f.read_text()) for f in folder.glob("*.json"))}


def test_a_forgotten_site_gets_feedback_and_the_second_attempt_is_branched(
    target, write_session, tmp_path, fence_arguments
):
    head, status = git(target, "rev-parse", "HEAD"), git(target, "status", "--porcelain")
    session = write_session(good_actions(routed_projector=False), good_actions())
    assert run_register(target, session, tmp_path, fence_arguments) == 0
    run = only_run(tmp_path)
    first = verdicts(run, 1)
    assert not first["structure"]["passed"] and not first["registry_hits"]["passed"]
    assert {g for g, v in first.items() if not v["passed"]} == {"structure", "registry_hits"}
    second_prompt = (run / "attempts" / "0002" / "prompt.md").read_text()
    assert "Feedback: attempt 1 was rejected" in second_prompt
    assert "VisionProjector.forward does not call ops.gelu_tanh" in second_prompt
    assert all(v["passed"] for v in verdicts(run, 2).values())

    published = json.loads((run / "publish.json").read_text())
    branch = published["branch"]
    assert branch == f"controller/register/gelu_tanh/{run.name}"
    assert git(target, "rev-parse", f"{branch}^") == head
    assert git(target, "rev-parse", f"{branch}^{{tree}}") == expected_tree(target, tmp_path)
    message = git(target, "log", "-1", "--format=%B", branch)
    assert "Operator: gelu_tanh" in message and f"Run: {run.name}" in message
    assert "PASS bit_exact_parity" in message
    assert git(target, "rev-parse", "HEAD") == head
    assert git(target, "status", "--porcelain") == status
    assert git(target, "branch", "--show-current") == "main"


def test_a_spent_budget_ends_rejected_without_a_branch(
    target, write_session, tmp_path, fence_arguments
):
    session = write_session(good_actions(routed_projector=False))
    code = run_register(target, session, tmp_path, fence_arguments, "--max-attempts", "1")
    assert code != 0
    state = json.loads((only_run(tmp_path) / "state.json").read_text())
    assert state["state"] == "rejected"
    assert "controller/register" not in git(target, "branch", "--list", "controller/*")
