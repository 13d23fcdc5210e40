"""Resume re-verifies everything the manifest froze and refuses, naming the field that changed."""

import json
import subprocess

import pytest
from engine_fixtures import (
    TEST_ENVIRONMENT,
    GreetingAgent,
    TinyFlow,
    double_fence,
    make_target,
    new_tiny_run,
    report_json,
)

from controller.errors import ControllerError
from controller.gitrepo import git
from controller.runs.engine import Engine
from controller.runs.launch import verify_resumable
from controller.runs.manifest import AgentChoice
from controller.runs.progress import Progress
from controller.runs.signals import RunInterrupted
from controller.runs.store import write_json_atomic
from controller.runs.stored_run import read_stored_run


class InterruptedAgent(GreetingAgent):
    """Behaves as if Ctrl-C arrived while the first session was running."""

    def run(self, session):
        if session.attempt == 1:
            raise RunInterrupted("SIGINT")
        return super().run(session)


def run_tiny(store, agent):
    return Engine(store, TinyFlow(), agent, double_fence(store.run_dir), Progress(False)).run()


@pytest.fixture
def interrupted_run(tmp_path):
    target = make_target(tmp_path / "target")
    store = new_tiny_run(tmp_path / "runs", target)
    outcome = run_tiny(store, InterruptedAgent())
    assert (outcome.state, outcome.exit_code) == ("interrupted", 130)
    return store


def verify(store, **overrides):
    """verify_resumable with the test environment; the source digest is the one frozen, since
    the shared tree may be edited while tests run (test_process_control edits a real copy)."""
    stored = json.loads(store.manifest_path.read_text())["manifest"]
    arguments = {
        "flow": "tiny",
        "environment": TEST_ENVIRONMENT,
        "source_digest": stored["controller_source_digest"],
    }
    return verify_resumable(read_stored_run(store), **(arguments | overrides))


def refusal(store, **overrides) -> str:
    with pytest.raises(ControllerError) as caught:
        verify(store, **overrides)
    return str(caught.value)


def test_an_untouched_run_resumes_and_the_interrupted_attempt_is_not_replayed(interrupted_run):
    store = interrupted_run
    assert json.loads(store.state_path.read_text())["resume_state"] == "attempting"
    verify(store)
    agent = GreetingAgent(good_from=2)
    assert run_tiny(store, agent).state == "done"
    assert [session.attempt for session in agent.sessions] == [2]
    report = report_json(store)
    assert [a["status"] for a in report["attempts"]] == ["interrupted", "accepted"]
    assert report["totals"]["attempts"] == 2


def test_an_edited_manifest_field_is_named(interrupted_run):
    stored = json.loads(interrupted_run.manifest_path.read_text())
    stored["manifest"]["limits"]["max_attempts"] = 99
    write_json_atomic(interrupted_run.manifest_path, stored)
    assert "'limits.max_attempts'" in refusal(interrupted_run)


def test_an_edited_manifest_with_a_recomputed_digest_is_still_caught(interrupted_run):
    manifest = interrupted_run.manifest().model_copy(update={"agent": AgentChoice(spec="claude")})
    write_json_atomic(interrupted_run.manifest_path, manifest.stored_form())
    assert "'agent.spec'" in refusal(interrupted_run)


def test_an_edited_digest_is_named(interrupted_run):
    stored = json.loads(interrupted_run.manifest_path.read_text())
    stored["digest"] = "sha256:" + "0" * 64
    write_json_atomic(interrupted_run.manifest_path, stored)
    assert "'digest'" in refusal(interrupted_run)


def test_a_changed_environment_is_named(interrupted_run):
    changed = TEST_ENVIRONMENT | {"torch": "9.9"}
    assert "'environment.torch'" in refusal(interrupted_run, environment=changed)


def test_another_flow_cannot_resume_the_run(interrupted_run):
    assert "'flow'" in refusal(interrupted_run, flow="register")


def test_a_base_commit_gone_from_the_target_is_named(tmp_path):
    target = make_target(tmp_path / "target")
    git(target, "checkout", "-q", "-b", "side")
    (target / "hello.txt").write_text("side\n")
    git(target, "-c", "user.name=t", "-c", "user.email=t@l", "commit", "-qam", "side")
    git(target, "checkout", "-q", "main")
    store = new_tiny_run(tmp_path / "runs", target)
    side = git(target, "rev-parse", "side").strip()
    write_json_atomic(
        store.manifest_path, store.manifest().model_copy(update={"base_commit": side}).stored_form()
    )
    verify(store)
    git(target, "branch", "-q", "-D", "side")
    git(target, "reflog", "expire", "--expire=now", "--all")
    git(target, "gc", "-q", "--prune=now")
    assert "'base_commit'" in refusal(store)


def test_a_missing_target_is_named(interrupted_run):
    subprocess.run(["rm", "-rf", interrupted_run.manifest().target], check=True)
    assert "'target'" in refusal(interrupted_run)
