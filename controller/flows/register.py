"""The register flow: ask an agent to register an operator and route call sites through it,
judge each attempt with the eight registration gates, and publish a review branch.

The branch is written with git plumbing (a private index, `commit-tree`, `update-ref`), so the
target's working tree, index and HEAD are never touched, and nothing is pushed.
"""

import ast
import os
import shutil
import string
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import prompts
from controller.candidate import Candidate
from controller.errors import ControllerError
from controller.flows.base import RunContext
from controller.gitrepo import CONTROLLER_IDENTITY, git
from gates.python_source import parse_python
from gates.registration import GATE_NAMES
from gates.registration.call_sites import CallSite, require_call_sites
from gates.registration.suite import GateSettings, RegistrationRequest, check_attempt
from gates.registration.tree_changes import tree_changes
from gates.target import TargetConfig, load_target_config
from gates.verdict import Verdict

PROMPT_TEMPLATE = Path(prompts.__file__).with_name("register.md")
EXAMPLE_OPERATOR = "rms_norm"
BASE_PROBE = "base-probe"


class RegisterFlow:
    """Register one operator and route the selected call sites (see `prompts/register.md`)."""

    name = "register"

    def __init__(self, work_item: dict[str, Any], gate_settings: dict[str, Any]) -> None:
        self.request = RegistrationRequest(
            operator=work_item["operator"],
            call_sites=tuple(CallSite.parse(site) for site in work_item["call_sites"]),
        )
        self.settings = GateSettings(**gate_settings)

    def gate_names(self) -> list[str]:
        return list(GATE_NAMES)

    def prepare(self, run: RunContext) -> None:
        """Check BASE (call sites exist, operator not registered yet); copy the worked example."""
        config = load_target_config(run.base_path)
        require_call_sites(run.base_path, list(self.request.call_sites))
        from gates.registration.probes import cached_probe

        probe = cached_probe(
            run.base_path,
            run.prepared_dir / BASE_PROBE,
            config,
            self.request.operator,
            self._runner(run),
        )
        if probe.problem:
            raise ControllerError(f"BASE cannot be probed: {probe.problem}")
        if self.request.operator in (probe.declaration or {}).get("registered", []):
            raise ControllerError(f"operator {self.request.operator!r} is already registered")
        example = run.prepared_dir / "worked_example"
        if not example.exists():
            staging = run.prepared_dir / "worked_example.partial"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            for relative in worked_example_files(run.base_path, config):
                destination = staging / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(run.base_path / relative, destination)
            os.replace(staging, example)

    def context_paths(self, run: RunContext) -> list[Path]:
        return [run.prepared_dir / "worked_example"]

    def prompt(self, run: RunContext, attempt: int, feedback: list[Verdict]) -> str:
        config = load_target_config(run.base_path)
        example = run.prepared_dir / "worked_example"
        shown = []
        for file in sorted(p for p in example.rglob("*") if p.is_file()):
            relative = file.relative_to(example).as_posix()
            shown.append(f"\n### {relative}\n\n```python\n{file.read_text().rstrip()}\n```\n")
        values = {
            "operator": self.request.operator,
            "registry_module": config.registry_module,
            "runtime_package": config.runtime_package,
            "call_sites": "\n".join(f"   - `{site}`" for site in self.request.call_sites),
            "allowed_paths": ", ".join(f"`{p}`" for p in config.allowed_paths),
            "protected_paths": ", ".join(f"`{p}`" for p in config.protected_paths) or "(none)",
            "test_command": " ".join(config.test_command),
            "parity": ", ".join(f"`{d}`" for d in config.parity_configurations),
            "feedback": _feedback(attempt, feedback),
            "example_folder": str(example),
            "worked_example": "".join(shown),
        }
        return string.Template(PROMPT_TEMPLATE.read_text()).substitute(values)

    def check(self, run: RunContext, attempt: int, candidate: Candidate) -> list[Verdict]:
        """All eight gates on a fresh copy of the candidate, outside the agent's fence."""
        # A controller stopped mid-gates may leave fenced children still writing into their
        # folder, so every check gets a new one and the gates start over there.
        checks = run.attempt_dir(attempt) / "gates"
        checks.mkdir(parents=True, exist_ok=True)
        work = checks / f"check-{len(list(checks.iterdir())) + 1}"
        tree = candidate.copy_to(work / "tree")
        return check_attempt(
            run.base_path,
            tree,
            self.request,
            load_target_config(run.base_path),
            self._runner(run),
            work,
            run.prepared_dir / BASE_PROBE,
            self.settings,
        )

    def publish(self, run: RunContext, candidate: Candidate, verdicts: list[Verdict]) -> dict:
        """Create `controller/register/<op>/<run-id>`: one commit on BASE, never pushed."""
        branch = f"controller/register/{self.request.operator}/{run.manifest.run_id}"
        message = self._commit_message(run, verdicts)
        commit = commit_candidate(
            run.target, run.base_commit, candidate, message, run.manifest.created_at
        )
        ref = f"refs/heads/{branch}"
        existing = _ref(run.target, ref)
        if existing is None:
            git(run.target, "update-ref", ref, commit, "0" * 40)
        elif existing != commit:
            raise ControllerError(f"branch {branch} already exists at another commit {existing}")
        return {"branch": branch, "commit": commit, "target": str(run.target)}

    def _runner(self, run: RunContext):
        from gates.registration.fenced_runner import FencedRunner

        return FencedRunner(run.fence)

    def _commit_message(self, run: RunContext, verdicts: list[Verdict]) -> str:
        lines = [
            f"Register {self.request.operator} and route {len(self.request.call_sites)} "
            "call sites through the registry",
            "",
            f"Operator: {self.request.operator}",
            "Call sites:",
            *[f"  {site}" for site in self.request.call_sites],
            f"Run: {run.manifest.run_id}",
            f"Agent: {run.manifest.agent.spec}",
            "Gate verdicts:",
            *[f"  {'PASS' if v.passed else 'FAIL'} {v.gate}: {v.summary}" for v in verdicts],
        ]
        return "\n".join(lines) + "\n"


def _feedback(attempt: int, feedback: list[Verdict]) -> str:
    if not feedback:
        return ""
    lines = [f"\n## Feedback: attempt {attempt - 1} was rejected; fix these and try again\n"]
    lines.append(
        "The workspace is a fresh copy of BASE again: the earlier attempt's changes are gone, "
        "so make the whole change, fixing these:\n"
    )
    lines += [f"- **{verdict.gate}**: {verdict.summary}" for verdict in feedback]
    return "\n".join(lines) + "\n"


def worked_example_files(tree: Path, config: TargetConfig) -> list[str]:
    """The example operator's catalog module, its test file, and one file that calls it."""
    package = Path(*config.registry_module.split("."))
    files = []
    module = package / f"{EXAMPLE_OPERATOR}.py"
    if (tree / module).is_file():
        files.append(module.as_posix())
    tests = sorted(tree.glob(f"tests/**/test_{EXAMPLE_OPERATOR}.py"))
    files += [tests[0].relative_to(tree).as_posix()] if tests else []
    caller = _first_caller(tree, config, package)
    files += [caller] if caller else []
    return files


def _first_caller(tree: Path, config: TargetConfig, package: Path) -> str | None:
    for prefix in config.allowed_paths:
        for file in sorted((tree / prefix).rglob("*.py")) if (tree / prefix).is_dir() else []:
            relative = file.relative_to(tree)
            if relative.is_relative_to(package) or relative.name.startswith("test_"):
                continue
            try:
                module = parse_python(file.read_text())
            except SyntaxError:
                continue
            for node in ast.walk(module):
                callee = getattr(node, "func", None)
                if isinstance(node, ast.Call) and isinstance(callee, ast.Attribute):
                    owner = callee.value
                    if callee.attr == EXAMPLE_OPERATOR and getattr(owner, "id", "") == "ops":
                        return relative.as_posix()
    return None


def commit_candidate(
    target: Path, base_commit: str, candidate: Candidate, message: str, date: str
) -> str:
    """A commit on BASE whose tree is the candidate's, built in a private index.

    The changes are the ones the gates judged (`tree_changes`, caches such as `__pycache__`
    left out), so the branch holds exactly what was accepted.
    """
    with tempfile.TemporaryDirectory(prefix="register-index-") as scratch:
        environment = {**CONTROLLER_IDENTITY, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(target, "read-tree", base_commit, env=environment)
        for change in tree_changes(candidate.base_path, candidate.path):
            if change.kind == "deleted":
                git(target, "update-index", "--force-remove", "--", change.path, env=environment)
                continue
            file = candidate.path / change.path
            blob = git(target, "hash-object", "-w", "--stdin", stdin=file.read_bytes()).strip()
            mode = "100755" if os.access(file, os.X_OK) else "100644"
            git(
                target,
                "update-index",
                "--add",
                "--cacheinfo",
                f"{mode},{blob},{change.path}",
                env=environment,
            )
        tree = git(target, "write-tree", env=environment).strip()
    dated = {**CONTROLLER_IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return git(
        target, "commit-tree", tree, "-p", base_commit, env=dated, stdin=message.encode()
    ).strip()


def _ref(target: Path, ref: str) -> str | None:
    completed = subprocess.run(
        ["git", "-C", str(target), "rev-parse", "--verify", "--quiet", ref],
        capture_output=True,
        text=True,
        check=False,
    )
    return completed.stdout.strip() if completed.returncode == 0 else None
