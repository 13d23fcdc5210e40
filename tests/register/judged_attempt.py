"""Replay a scripted attempt into a fresh workspace of a fixture target and judge its commit with
the suite's own gate table, as the register flow does (without the agent loop around it)."""

import subprocess
from pathlib import Path

import register_session  # noqa: F401 (puts the gate tests' fixture target on the path)
from target_fixture import REQUEST

from controller.candidate import Candidate, capture_candidate
from controller.gitrepo import export_commit, git
from controller.workspace import create_workspace
from gates.registration.benchmark import apply_actions
from gates.registration.hidden import draw_hidden
from gates.registration.suite import GATES, Attempt, GateSettings
from gates.target import load_target_config
from gates.verdict import Verdict

NONCE = "issue-11-attack-classes"


class JudgedTarget:
    """A fixture target, its BASE export, and BASE's probe and test outcomes recorded once."""

    def __init__(self, target: Path, scratch: Path, runner) -> None:
        self.target, self.scratch, self.runner = target, scratch, runner
        self.head = git(target, "rev-parse", "HEAD").strip()
        self.base = scratch / "base"
        export_commit(target, self.head, self.base)
        self.config = load_target_config(self.base)
        self.hidden = draw_hidden(self.config, NONCE)
        self.attempts = 0

    def attempt(self, actions: list[dict], all_gates: bool = False) -> tuple[Candidate, Attempt]:
        """Replay `actions` (write, edit, bash) in a new workspace; its candidate and gates."""
        self.attempts += 1
        folder = self.scratch / f"attempt-{self.attempts}"
        workspace = create_workspace(self.target, self.head, folder / "workspace")
        for action in actions:
            if action["tool"] == "bash":
                subprocess.run(
                    action["command"], shell=True, cwd=workspace, check=True, executable="/bin/bash"
                )
            else:
                apply_actions(workspace, [action])
        candidate = capture_candidate(workspace, self.base, folder)
        attempt = Attempt(
            base=self.base,
            commit=candidate.commit,
            request=REQUEST,
            config=self.config,
            runner=self.runner,
            workdir=folder / "gates",
            base_probe_dir=self.scratch / "base-probe",
            settings=GateSettings(all_gates=all_gates),
            hidden=self.hidden,
        )
        return candidate, attempt


def gate(attempt: Attempt, name: str) -> Verdict:
    """One gate of the suite's table on the attempt (its own export, the shared probe)."""
    (row,) = [row for row in GATES if row.name == name]
    return row.check(attempt)


def writes(files: dict[str, str]) -> list[dict]:
    return [{"tool": "write", "path": path, "content": text} for path, text in files.items()]
