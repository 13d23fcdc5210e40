"""The register flow: ask an agent to register an operator and route call sites through it,
judge each attempt's candidate commit with the registration gates, and publish a review branch.

The branch is written with git plumbing (a private index, `commit-tree`, `update-ref`), so the
target's working tree, index and HEAD are never touched, and nothing is pushed. Its changes are
exactly the judged commit's (same paths, modes and blobs), checked after it is written.
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
from controller.flows.register_evidence import write_declaration_evidence
from controller.gitrepo import CONTROLLER_IDENTITY, git
from controller.review_page import write_review_page
from controller.runs.review_notes import REGISTER_BY_EYE, review_lines
from gates.python_source import parse_python
from gates.registration import GATE_NAMES
from gates.registration.call_sites import CallSite, require_call_sites
from gates.registration.hidden import HiddenDraw, draw_hidden, new_nonce
from gates.registration.suite import (
    GateSettings,
    RegistrationRequest,
    check_attempt,
    is_skipped,
)
from gates.target import TargetConfig, load_target_config
from gates.verdict import Verdict

PROMPT_TEMPLATE = Path(prompts.__file__).with_name("register.md")
EXAMPLE_OPERATOR = "rms_norm"
BASE_PROBE = "base-probe"
NONCE_FILE = "hidden-nonce"
BYTECODE_CACHE = "pycache"
"""The runners' private bytecode cache, filled by BASE's probe and tests when the run starts."""


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
        """Check BASE (call sites exist, operator not registered yet); draw the run's nonce for
        the hidden configurations; copy the worked example."""
        config = load_target_config(run.base_path)
        require_call_sites(run.base_path, list(self.request.call_sites))
        from gates.registration.probes import cached_probe

        nonce = run.prepared_dir / NONCE_FILE
        if not nonce.is_file():
            staged = run.prepared_dir / f"{NONCE_FILE}.partial"
            staged.write_text(new_nonce())
            os.replace(staged, nonce)
        probe = cached_probe(
            run.base_path,
            run.prepared_dir / BASE_PROBE,
            config,
            self.request.operator,
            self._runner(run),
            self._hidden(run, config),
            self.request.call_sites,
            seed_bytecode=True,
        )
        if probe.problem:
            raise ControllerError(f"BASE cannot be probed: {probe.problem}")
        from gates.registration.suite import BASE_TESTS
        from gates.registration.target_tests import record_base_outcomes

        record = run.prepared_dir / BASE_PROBE / BASE_TESTS
        record_base_outcomes(
            run.base_path, config, self._runner(run), record, self.settings.test_timeout_s
        )
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
        """Every gate on the candidate commit (each on its own export), outside the fence."""
        # A controller stopped mid-gates may leave fenced children still writing into their
        # folder, so every check gets a new one and the gates start over there.
        checks = run.attempt_dir(attempt) / "gates"
        checks.mkdir(parents=True, exist_ok=True)
        work = checks / f"check-{len(list(checks.iterdir())) + 1}"
        config = load_target_config(run.base_path)
        return check_attempt(
            run.base_path,
            candidate.commit,
            self.request,
            config,
            self._runner(run),
            work,
            run.prepared_dir / BASE_PROBE,
            self.settings,
            self._hidden(run, config),
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

    def write_evidence(self, run: RunContext) -> None:
        """The report's section on the new declaration beside the calls its sites made, and
        the review page built from the finished report."""
        write_declaration_evidence(run.store)
        write_review_page(run.store.run_dir)

    def _hidden(self, run: RunContext, config: TargetConfig) -> HiddenDraw:
        """The run's hidden configurations, drawn again from its nonce (same on resume)."""
        return draw_hidden(config, (run.prepared_dir / NONCE_FILE).read_text().strip())

    def _runner(self, run: RunContext):
        from gates.registration.fenced_runner import FencedRunner

        return FencedRunner(run.fence, pycache_prefix=run.prepared_dir / BYTECODE_CACHE)

    def _commit_message(self, run: RunContext, verdicts: list[Verdict]) -> str:
        lines = [
            f"Register {self.request.operator} and route {len(self.request.call_sites)} "
            "call sites through the registry",
            "",
            f"Operator: {self.request.operator}",
            "Call sites:",
            *[f"  {site}" for site in self.request.call_sites],
            f"Agent: {run.manifest.agent.spec}",
            *review_lines(run.store, run.store.state().attempt, REGISTER_BY_EYE),
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
    lines += [f"- **{v.gate}**: {v.summary}" for v in feedback if not is_skipped(v)]
    skipped = [v.gate for v in feedback if is_skipped(v)]
    if skipped:
        lines.append(f"- not run, because the gates above failed first: {', '.join(skipped)}")
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
    """A commit on BASE whose changes are exactly the judged commit's, built in a private index.

    Each changed blob is copied into the target's object store and checked to keep its id;
    the written commit's change list (paths, modes, blobs) is compared with the judged one.
    """
    judged = candidate.commit.changes()
    contents = candidate.commit.blobs([change.blob for change in judged])
    with tempfile.TemporaryDirectory(prefix="register-index-") as scratch:
        environment = {**CONTROLLER_IDENTITY, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(target, "read-tree", base_commit, env=environment)
        for change in judged:
            if change.kind == "deleted":
                git(target, "update-index", "--force-remove", "--", change.path, env=environment)
                continue
            blob = git(target, "hash-object", "-w", "--stdin", stdin=contents[change.blob]).strip()
            if blob != change.blob:
                raise ControllerError(f"{change.path}: blob {blob} is not the judged {change.blob}")
            cacheinfo = f"{change.mode},{blob},{change.path}"
            git(target, "update-index", "--add", "--cacheinfo", cacheinfo, env=environment)
        tree = git(target, "write-tree", env=environment).strip()
    dated = {**CONTROLLER_IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    commit = git(
        target, "commit-tree", tree, "-p", base_commit, env=dated, stdin=message.encode()
    ).strip()
    fields = git(target, "diff-tree", "-r", "-z", "--no-renames", base_commit, commit).split("\0")
    written = sorted(
        (path, meta.split()[1], meta.split()[3])
        for meta, path in zip(fields[::2], fields[1::2], strict=False)
    )
    expected = sorted((c.path, c.mode or "000000", c.blob or "0" * 40) for c in judged)
    if written != expected:
        raise ControllerError("the branch commit differs from the judged commit; not published")
    return commit


def _ref(target: Path, ref: str) -> str | None:
    completed = subprocess.run(
        ["git", "-C", str(target), "rev-parse", "--verify", "--quiet", ref],
        capture_output=True,
        text=True,
        check=False,
    )
    return completed.stdout.strip() if completed.returncode == 0 else None
