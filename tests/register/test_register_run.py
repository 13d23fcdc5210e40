"""Whole register runs on the fixture target: feedback, acceptance, the branch, rejection."""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from register_session import (
    SITE_ARGUMENTS,
    expected_tree,
    git,
    good_actions,
    only_run,
    write_target,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "review_page"))

from page_in_browser import open_review_page  # noqa: E402

from controller.cli import main


def run_register(target, session, tmp_path, fence_arguments, *extra: str) -> int:
    arguments = ["register", "run", "--target", str(target), "--operator", "gelu_tanh"]
    arguments += [*SITE_ARGUMENTS, "--agent", f"scripted:{session}", *fence_arguments]
    return main([*arguments, "--runs-dir", str(tmp_path / "runs"), *extra])


def verdicts(run: Path, attempt: int) -> dict[str, dict]:
    folder = run / "attempts" / f"{attempt:04d}" / "verdicts"
    return {v["gate"]: v for v in (json.loads(f.read_text()) for f in folder.glob("*.json"))}


@pytest.fixture(scope="module")
def forgotten_site(tmp_path_factory, fence_arguments) -> SimpleNamespace:
    """One run whose attempt 1 forgets a call site and whose attempt 2 is branched."""
    tmp_path = tmp_path_factory.mktemp("forgotten_site")
    target = write_target(tmp_path / "target")
    head, status = git(target, "rev-parse", "HEAD"), git(target, "status", "--porcelain")
    session = tmp_path / "session.json"
    attempts = [good_actions(routed_projector=False), good_actions()]
    session.write_text(json.dumps({"attempts": attempts}))
    code = run_register(target, session, tmp_path, fence_arguments)
    return SimpleNamespace(code=code, target=target, tmp_path=tmp_path, head=head, status=status)


def test_a_forgotten_site_gets_feedback_and_the_second_attempt_is_branched(forgotten_site):
    target, tmp_path = forgotten_site.target, forgotten_site.tmp_path
    head, status = forgotten_site.head, forgotten_site.status
    assert forgotten_site.code == 0
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


def test_the_review_page_opens_in_a_browser_with_both_attempts_and_every_gate(
    forgotten_site, tmp_path
):
    """The page the run wrote, as Chromium renders it: no console error, attempt 1 with the
    two gates that failed, attempt 2 with every gate passed, each verdict's details folded
    under it, and attempt 2's diff highlighted."""
    run = only_run(forgotten_site.tmp_path)
    seen, load = open_review_page(run / "evidence" / "report.html", tmp_path / "register.png")
    assert load.errors == [] and seen["external"] == []
    first, second = seen["attempts"]
    assert (first["number"], first["status"]) == (1, "rejected")
    assert (second["number"], second["status"]) == (2, "accepted")
    gates = json.loads((run / "manifest.json").read_text())["manifest"]["gates"]
    assert [gate["gate"] for gate in first["gates"]] == gates
    assert {g["gate"] for g in first["gates"] if g["outcome"] == "fail"} == {
        "structure",
        "registry_hits",
    }
    assert [gate["gate"] for gate in second["gates"]] == gates
    assert all(gate["outcome"] == "pass" for gate in second["gates"])
    assert all(gate["details"] >= 2 for gate in first["gates"] + second["gates"])  # "{}" at least
    assert second["diffLines"] > 20 and seen["transcripts"] == 2
    assert seen["charts"] == []  # a register run times nothing


def test_a_spent_budget_ends_rejected_without_a_branch(
    target, write_session, tmp_path, fence_arguments
):
    session = write_session(good_actions(routed_projector=False))
    code = run_register(target, session, tmp_path, fence_arguments, "--max-attempts", "1")
    assert code != 0
    state = json.loads((only_run(tmp_path) / "state.json").read_text())
    assert state["state"] == "rejected"
    assert "controller/register" not in git(target, "branch", "--list", "controller/*")
