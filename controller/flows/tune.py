"""The tune flow: improve an operator's kernel against an incumbent, attempt after attempt.

Each attempt's workspace holds the incumbent's solution sources and, read-only, the task
package and the history of earlier attempts; the controller's gates (scope, ruff, correctness,
latency) judge the candidate outside the agent's reach. A candidate that passes every gate is
promoted (snapshotted under `incumbents/NNNN/`) and the run goes on until a stop reason; the
best incumbent is then exported.
"""

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import prompts
from controller.candidate import Candidate
from controller.errors import ControllerError
from controller.flows import tune_evidence, tune_export, tune_screen_evidence
from controller.flows import tune_incumbents as incumbents
from controller.flows.base import RunContext
from controller.gitrepo import CONTROLLER_IDENTITY, git
from controller.review_page import write_review_page
from controller.runs.budget import BudgetStop
from controller.runs.records import START_FOLDER
from controller.runs.store import write_json_atomic
from gates.changes.ruff_rules import base_configuration
from gates.tuning import GATE_NAMES
from gates.tuning.suite import Evaluator, TuningCheck, check_tuning_attempt
from gates.verdict import Verdict

PROMPT_TEMPLATE = Path(prompts.__file__).with_name("tune.md")
TASK = "task"
HISTORY = "history"
DEFAULT_TIMEOUT_S = 900.0


class TuneFlow:
    """Tune one operator's kernel (see `prompts/tune.md`); `evaluator` is injectable for tests."""

    name = "tune"
    promotes = True

    def __init__(
        self,
        work_item: dict[str, Any],
        gate_settings: dict[str, Any],
        evaluator: Evaluator | None = None,
    ) -> None:
        self.operator: str = work_item["operator"]
        self.task_digest: str = work_item["task_digest"]
        self.task_source: str | None = work_item.get("task")
        self.patience: int | None = work_item.get("patience")
        self.target_speedup: float | None = work_item.get("target_speedup")
        self.device: str = gate_settings.get("device", "cpu")
        self.timeout_s: float = float(gate_settings.get("evaluation_timeout_s", DEFAULT_TIMEOUT_S))
        self._evaluator = evaluator

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            from gates.evaluator.evaluation import evaluate

            self._evaluator = evaluate
        return self._evaluator

    def gate_names(self) -> list[str]:
        return list(GATE_NAMES)

    # -- preparing ------------------------------------------------------------------------

    def task_dir(self, run: RunContext) -> Path:
        return run.prepared_dir / TASK

    def prepare(self, run: RunContext) -> None:
        """The controller's own task package (digest as frozen) and incumbent 0000 (production)."""
        task = self.task_dir(run)
        if not task.is_dir():
            staging = run.prepared_dir / f"{TASK}.partial"
            shutil.rmtree(staging, ignore_errors=True)
            write_task(self.operator, staging, self.task_source)
            os.replace(staging, task)
        digest = task_package_digest(task)
        if digest != self.task_digest:
            raise ControllerError(
                f"manifest field 'work_item.task_digest' no longer matches the task package "
                f"({digest[:16]} is not {self.task_digest[:16]}): the operator changed; "
                "start a new run"
            )
        incumbents.snapshot(run.run_dir, 0, task / "solution", None)
        if self.device != "cuda":
            print(
                f"controller: tuning on {self.device}: correctness is checked under the Triton "
                "interpreter, but nothing can be promoted without CUDA timing",
                file=sys.stderr,
            )

    # -- one attempt ----------------------------------------------------------------------

    def make_workspace(
        self, run: RunContext, attempt: int, attempt_dir: Path
    ) -> tuple[Path, list[Path]]:
        """solution/ (the incumbent's), task/ and history/ (read-only), and BASE's ruff
        configuration file (read-only) so the agent lints as the gate does; start/ keeps a copy."""
        start = attempt_dir / START_FOLDER
        staging = attempt_dir / f"{START_FOLDER}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(start, ignore_errors=True)
        incumbent = incumbents.current(run.run_dir)
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(incumbent.solution, staging / "solution", ignore=ignore)
        shutil.copytree(self.task_dir(run), staging / TASK, ignore=ignore)
        history = [summary.model_dump(mode="json") for summary in self._summaries(run)]
        write_json_atomic(staging / HISTORY / "attempts.json", history)
        configuration = base_configuration(run.base_path)
        if configuration is not None:  # the agent's own `ruff` then agrees with the ruff gate
            shutil.copy2(configuration, staging / configuration.name)
        os.replace(staging, start)
        workspace = attempt_dir / "workspace"
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.copytree(start, workspace)
        _commit_workspace(workspace)
        protected = [workspace / TASK, workspace / HISTORY]
        if configuration is not None:
            protected.append(workspace / configuration.name)
        return workspace, protected

    def context_paths(self, run: RunContext) -> list[Path]:
        return []

    def prompt(self, run: RunContext, attempt: int, feedback: list[Verdict]) -> str:
        from controller.flows.tune_prompt import render_prompt

        return render_prompt(
            PROMPT_TEMPLATE.read_text(),
            task=self.task_dir(run),
            incumbent=incumbents.current(run.run_dir),
            latest=incumbents.latest_timed(run.store),
            attempt=attempt,
            feedback=feedback,
            device=self.device,
        )

    def check(self, run: RunContext, attempt: int, candidate: Candidate) -> list[Verdict]:
        """The four tuning gates on a fresh copy, outside the fence; the evaluation is kept."""
        directory = run.attempt_dir(attempt)
        if task_package_digest(self.task_dir(run)) != self.task_digest:
            raise ControllerError(
                f"the controller's task package {self.task_dir(run)} changed during attempt "
                f"{attempt} (its identity digest moved); the run cannot be judged, start a new run"
            )
        checks = directory / "gates"
        checks.mkdir(parents=True, exist_ok=True)
        work = checks / f"check-{len(list(checks.iterdir())) + 1}"
        work.mkdir()
        incumbent = incumbents.current(run.run_dir)
        check = TuningCheck(
            start=directory / START_FOLDER,
            candidate=candidate.path,
            task=self.task_dir(run),
            task_digest=self.task_digest,
            base=run.base_path,
            device=self.device,
            incumbent=incumbent.solution if incumbent.attempt > 0 else None,
            timeout_s=self.timeout_s,
            work=work,
        )
        outcome = check_tuning_attempt(check, self.evaluator)
        if outcome.evaluation is not None:
            write_json_atomic(directory / incumbents.EVALUATION, outcome.evaluation)
        return outcome.verdicts

    # -- going on or stopping -------------------------------------------------------------

    def promote(self, run: RunContext, attempt: int) -> None:
        """Snapshot the attempt's candidate solution as the new incumbent (idempotent)."""
        from controller.runs.records import read_json

        directory = run.attempt_dir(attempt)
        evaluation = read_json(directory / incumbents.EVALUATION)
        incumbents.snapshot(run.run_dir, attempt, directory / "candidate" / "solution", evaluation)

    def stop_reason(self, run: RunContext) -> BudgetStop | None:
        """Patience (attempts in a row without a promotion) or the target speedup reached."""
        best = incumbents.current(run.run_dir)
        reading = best.reading
        speedup = reading.weighted_speedup() if reading else None
        if self.target_speedup is not None and speedup and speedup >= self.target_speedup:
            return BudgetStop(
                limit="target_speedup",
                reason=f"target speedup reached: x{speedup:.3f} over production "
                f"(target x{self.target_speedup})",
            )
        if self.patience is not None:
            since = [a for a in run.store.history().attempts if a.number > best.attempt]
            if len(since) >= self.patience:
                return BudgetStop(
                    limit="patience",
                    reason=f"patience reached: {len(since)} attempts in a row without a "
                    f"promotion (patience {self.patience})",
                )
        return None

    def result_attempt(self, run: RunContext) -> int | None:
        """The attempt whose candidate is the best incumbent; None if none was promoted."""
        best = incumbents.current(run.run_dir)
        return best.attempt if best.attempt > 0 else None

    def publish(self, run: RunContext, candidate: Candidate, verdicts: list[Verdict]) -> dict:
        """Export the best incumbent: sources, solution JSON, its evaluations, checksums."""
        return tune_export.export_best(run, self.operator, incumbents.current(run.run_dir))

    def write_evidence(self, run: RunContext) -> None:
        tune_evidence.write_tuning_evidence(run.store, self.device)
        tune_screen_evidence.write_screen_evidence(run.store)
        write_review_page(run.store.run_dir)

    def _summaries(self, run: RunContext) -> list[incumbents.AttemptSummary]:
        return incumbents.attempt_summaries(run.store)


def write_task(operator: str, destination: Path, source: str | None) -> None:
    """The task package: copied from `source` (a `controller generate` folder) or rendered."""
    if source is not None:
        shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__"))
        return
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    written, _ = write_package(REGISTRY.declaration(operator), destination.parent / ".render")
    os.replace(written, destination)
    shutil.rmtree(destination.parent / ".render", ignore_errors=True)


def task_package_digest(folder: Path) -> str:
    from gates.tasks.package import digest_files, read_package_files

    return digest_files(read_package_files(folder))


def given_task_digest(operator: str, task: Path) -> str | None:
    """The digest of a task package that describes `operator` as it is now, else None: a
    catalog package must be the one `controller generate` writes now; a captured one (its
    workloads come from a capture) must match in what the declaration decides."""
    from gates.tasks.captured import LAYOUTS_FILE, captured_package_is_current
    from gates.tasks.package import load_task
    from operators import REGISTRY

    current = current_task_digest(operator)
    if not (Path(task) / LAYOUTS_FILE).is_file():
        return current if task_package_digest(task) == current else None
    loaded = load_task(task)
    declaration = REGISTRY.declaration(operator)
    if loaded.definition.name != operator or not captured_package_is_current(loaded, declaration):
        return None
    return loaded.digest


def current_task_digest(operator: str) -> str:
    """The digest of the package `controller generate` would write for `operator` now."""
    from gates.tasks.generation import render_package
    from gates.tasks.package import digest_files
    from operators import REGISTRY

    if operator not in REGISTRY:
        names = ", ".join(sorted(REGISTRY.names()))
        raise ControllerError(f"unknown operator {operator!r}; use one of: {names}")
    return digest_files(render_package(REGISTRY.declaration(operator)))


def _commit_workspace(workspace: Path) -> None:
    """One commit, so the agent's `git diff` shows exactly its own edits."""
    git(workspace, "init", "--quiet", "--initial-branch=incumbent")
    git(workspace, "add", "--all", "--force")
    dated = {**CONTROLLER_IDENTITY, "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"}
    git(workspace, "commit", "--quiet", "--no-verify", "-m", "incumbent", env=dated)
