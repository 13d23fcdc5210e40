"""A tiny flow, a test agent and a pass-through fence for driving the real engine in tests.

The flow asks for `hello.txt` to read "hello"; its gates check that and that nothing else
changed; it publishes a real branch in the target. The agent writes the file directly, wrong
before attempt `good_from` and right from then on, and reports fixed usage per attempt.
"""

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from controller.agents.base import SessionResult, TraceEvent, Usage
from controller.candidate import Candidate
from controller.flows.base import RunContext
from controller.gitrepo import commit_tree_as_branch, git
from controller.runs.fencing import FenceBinding
from controller.runs.launch import new_manifest
from controller.runs.manifest import AgentChoice, FenceChoice, RunLimits
from controller.runs.store import RunStore
from gates.verdict import Verdict

TEST_ENVIRONMENT = {"python": "3.test", "torch": "test", "triton": "test", "gpu_name": "cpu"}
GOOD, BAD = "hello\n", "hullo\n"


def make_target(path: Path) -> Path:
    """A real git repository with a README and a hello.txt that says hi."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (path / "README.md").write_text("# target\n")
    (path / "hello.txt").write_text("hi\n")
    (path / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (path / "tool.sh").chmod(0o755)
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "base")
    return path


class TinyFlow:
    """Gates: `greeting` (hello.txt reads hello) and `scope` (only hello.txt changed)."""

    name = "tiny"

    def gate_names(self) -> list[str]:
        return ["scope", "greeting"]

    def prepare(self, run: RunContext) -> None:
        (run.prepared_dir / "base_greeting.txt").write_text(
            (run.base_path / "hello.txt").read_text()
        )

    def prompt(self, run: RunContext, attempt: int, feedback: list[Verdict]) -> str:
        lines = [f"Attempt {attempt}: make hello.txt say hello."]
        lines += [f"- {verdict.gate}: {verdict.summary}" for verdict in feedback]
        return "\n".join(lines) + "\n"

    def context_paths(self, run: RunContext) -> list[Path]:
        return [run.prepared_dir]

    def check(self, run: RunContext, attempt: int, candidate: Candidate) -> list[Verdict]:
        copy = candidate.copy_to(run.attempt_dir(attempt) / "gate-copy")
        others = [change.path for change in candidate.changes if change.path != "hello.txt"]
        scope = Verdict(
            gate="scope",
            passed=not others,
            summary="only hello.txt changed" if not others else f"changed {others}",
        )
        text = (copy / "hello.txt").read_text() if (copy / "hello.txt").is_file() else ""
        greeting = Verdict(
            gate="greeting",
            passed=text == GOOD,
            summary="hello.txt says hello" if text == GOOD else f"got {text!r}",
        )
        return [scope, greeting]

    def publish(self, run: RunContext, candidate: Candidate, verdicts: list[Verdict]) -> dict:
        branch = f"controller/tiny/{run.store.run_id}"
        commit = commit_tree_as_branch(
            run.target, run.base_commit, candidate.path, branch, f"tiny run {run.store.run_id}"
        )
        tree = git(run.target, "rev-parse", f"{commit}^{{tree}}").strip()
        return {"branch": branch, "commit": commit, "tree": tree}


@dataclass
class GreetingAgent:
    """Writes hello.txt: wrong before `good_from`, right after; fixed usage per attempt."""

    good_from: int = 2
    tokens: int = 150
    dollars: float = 0.01
    sleep_s: float = 0.0
    spec: str = "test:greeting"
    sessions: list = field(default_factory=list)

    def check_available(self) -> None:
        return None

    def run(self, session) -> SessionResult:
        started = time.time()
        self.sessions.append(session)
        marker = session.workspace.parent / "agent-started"
        marker.write_text(str(session.attempt))
        deadline = time.monotonic() + self.sleep_s
        while time.monotonic() < deadline:
            time.sleep(0.05)
        text = GOOD if session.attempt >= self.good_from else BAD
        (session.workspace / "hello.txt").write_text(text)
        limits = session.limits.model_dump(mode="json")
        return SessionResult(
            transcript=[{"role": "user", "content": session.prompt}, {"limits": limits}],
            usage=Usage(
                input_tokens=self.tokens - 50,
                output_tokens=50,
                dollars=self.dollars,
                calls=2,
                failed_calls=1,
            ),
            exit_reason="finished",
            events=[
                TraceEvent(name="turn 1", category="agent_turn", start_s=started, duration_s=0.001),
                TraceEvent(
                    name="write hello.txt",
                    category="tool_call",
                    start_s=started,
                    duration_s=0.001,
                    args={"path": "hello.txt"},
                ),
            ],
        )


class PassThroughFence:
    """Runs nothing itself: the test agent writes files directly, and the tiny gates need none."""

    name = "test-double"


def double_fence(run_dir: Path) -> FenceBinding:
    return FenceBinding(
        fence=PassThroughFence(),
        policy_for=lambda workspace, readable: {"workspace": str(workspace)},
        base_policy={"workspace": str(run_dir)},
    )


def new_tiny_run(runs_dir: Path, target: Path, environment=None, **limits) -> RunStore:
    """Create (not start) a tiny run on the target's HEAD."""
    manifest = new_manifest(
        flow="tiny",
        target=target,
        base_ref="HEAD",
        work_item={"file": "hello.txt", "want": GOOD},
        agent=AgentChoice(spec="test:greeting"),
        fence=FenceChoice(name="none", unfenced=True),
        limits=RunLimits(**limits),
        gates=TinyFlow().gate_names(),
        environment=dict(environment or TEST_ENVIRONMENT),
    )
    return RunStore.create(runs_dir, manifest)


def report_json(store: RunStore) -> dict:
    return json.loads((store.evidence_dir / "report.json").read_text())
