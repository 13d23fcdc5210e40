"""The engine: drives one run through the state machine for any Flow, resumably.

Each step journals its transition first, then does the work of the state it entered; that work
is idempotent, so a run killed anywhere resumes by redoing the work of its current state. The
one exception is the agent session: an attempt whose session started but never finished is
recorded as interrupted (it still counts against the budget) and is never replayed.

A flow that improves an incumbent (tune) sets `promotes = True` and supplies `promote(run, n)`
(make attempt n the incumbent, idempotently), `stop_reason(run)` (its own stop reasons beside
the budget's), `result_attempt(run)` (the attempt to publish when the run stops, or None) and
`make_workspace(run, n, attempt_dir)` (the attempt's workspace and the paths in it kept
read-only; the tree it started from goes to `attempt_dir/start`). A flow may also add to the
evidence with `write_evidence(run)`.
"""

import os
import shutil
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from controller.candidate import capture_candidate, load_candidate
from controller.errors import ProviderUnavailable, environment_failure, is_user_error
from controller.flows.base import Flow, RunContext
from controller.runs import records
from controller.runs.attempt_session import AttemptSetting, attempt_session, logged_usage
from controller.runs.budget import agent_stop, budget_stop
from controller.runs.evidence import write_evidence
from controller.runs.faults import fault_point
from controller.runs.fencing import FenceBinding
from controller.runs.progress import Progress, session_line, transition_suffix
from controller.runs.recovery import open_run, redo_description
from controller.runs.signals import RunInterrupted, interrupt_on_signals, signals_deferred
from controller.runs.statemachine import EXIT_CODES, check_transition
from controller.runs.store import RunStore
from controller.runs.stored_run import StoredRun, read_stored_run
from controller.workspace import create_workspace
from gates.verdict import Verdict

NO_CHANGES = Verdict(
    gate="changes",
    passed=False,
    summary="the attempt changed no file; make the change the task asks for",
)
NOTHING_LEFT = NO_CHANGES.model_copy(
    update={"summary": "the agent submitted nothing: it had nothing left worth judging"}
)
# An environmental failure (a full disk, a fence that cannot start) leaves the run interrupted;
# the process exits with EX_TEMPFAIL: fix the machine and resume.
EXIT_ENVIRONMENT = 75


class RunOutcome(BaseModel):
    """How a run ended (or paused): its state, why, and the process exit code."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_dir: Path
    state: str
    reason: str | None = None
    limit: str | None = None
    exit_code: int


class Engine:
    """Runs one stored run with one flow, one agent and one fence until it ends or is stopped."""

    def __init__(
        self,
        store: RunStore,
        flow: Flow,
        agent,
        fence: FenceBinding,
        progress: Progress | None = None,
        stored: StoredRun | None = None,
    ) -> None:
        """`stored`: the run as resuming read it (read here when not given)."""
        self.store, self.flow, self.agent, self.fence = store, flow, agent, fence
        self.stored = stored or read_stored_run(store)
        self.manifest = self.stored.manifest
        self.progress = progress or Progress()
        self._usage_in_flight: dict | None = None  # a finished session's usage, until journaled
        self._environment_failure: str | None = None
        self.context = RunContext(
            run_dir=store.run_dir,
            manifest=self.manifest,
            store=store,
            target=Path(self.manifest.target),
            base_commit=self.manifest.base_commit,
            fence=fence.fence,
            policy=fence.base_policy,
            base_path=store.base_path,
        )

    def run(self) -> RunOutcome:
        """Hold the run's lock and step until a terminal state, a signal or an error."""
        with self.store.locked(), self.progress.listening():
            try:
                with interrupt_on_signals():
                    self._open()
                    if self.state.state == "interrupted":
                        redo = redo_description(
                            self.state.resume_state, self.state.attempt, self.stored.history
                        )
                        self._transition(self.state.resume_state, reason=f"resumed; redoing {redo}")
                    while not self.state.terminal:
                        following, fields = self._step()
                        self._transition(following, **fields)
            except RunInterrupted as stop:
                with signals_deferred():
                    self._record_interruption(f"stopped by {stop.signal_name}")
            except Exception as error:
                self._environment_failure = environment_failure(error)
                with signals_deferred():
                    if isinstance(error, ProviderUnavailable):
                        self._usage_in_flight = error.usage or self._usage_in_flight
                        self._record_interruption(self._environment_failure, withdraw=True)
                    elif self._environment_failure is not None:
                        self._record_interruption(self._environment_failure)
                    else:
                        self._record_failure(error)
                if self._environment_failure is None and not is_user_error(error):
                    with signals_deferred():
                        self._write_evidence()
                    raise
            with signals_deferred():
                self._write_evidence()
        exit_code = EXIT_CODES.get(self.state.state, 1)
        if self._environment_failure is not None:
            exit_code = EXIT_ENVIRONMENT
        return RunOutcome(
            run_id=self.store.run_id,
            run_dir=self.store.run_dir,
            state=self.state.state,
            reason=self._environment_failure or self.state.reason,
            limit=self.state.limit,
            exit_code=exit_code,
        )

    def _open(self) -> None:
        """Open the run as read before the lock was taken, or read again if it moved since."""
        if not self.stored.is_current():
            self.stored = read_stored_run(self.store)
        self.journal, self.state = open_run(self.store, self.stored, self.progress)
        self.store.write_state(self.state)

    def _transition(self, following: str, **fields) -> None:
        check_transition(self.state.state, following)
        fields.setdefault("attempt", self.state.attempt)
        event = self.journal.append(
            "transition", **{"from": self.state.state, "to": following}, **fields
        )
        self.state = self.store.state()
        assert self.state.seq == event["seq"], "journal and state disagree"
        fault_point(f"transition -> {following}")
        self.store.write_state(self.state)
        self.progress.note(f"{event['from']} -> {following}" + transition_suffix(fields))

    def _step(self) -> tuple[str, dict]:
        handlers = {
            "created": self._prepare,
            "prepared": self._plan_attempt,
            "feedback": self._plan_attempt,
            "attempting": self._attempt,
            "checking": self._check,
            "promoted": self._promote,
            "accepted": self._publish,
            "published": lambda: ("done", self._stop_fields()),
        }
        return handlers[self.state.state]()

    def _prepare(self) -> tuple[str, dict]:
        base = self.store.base_path
        if not base.exists():
            staging = self.store.run_dir / "base.partial"
            if staging.exists():
                shutil.rmtree(staging)
            from controller.gitrepo import export_commit

            fault_point("write base/ (export)", staging)
            export_commit(self.context.target, self.manifest.base_commit, staging)
            os.replace(staging, base)
        fault_point("write prepared/ (the flow's preparation)", self.store.prepared_dir)
        self.store.prepared_dir.mkdir(exist_ok=True)
        with self.progress.phase(f"preparing the {self.flow.name} run"):
            self.flow.prepare(self.context)
        return "prepared", {}

    def _plan_attempt(self) -> tuple[str, dict]:
        history = self.store.history()
        spend = history.spend.model_copy(update={"elapsed_s": self.journal.elapsed_s()})
        stop = budget_stop(self.manifest.limits, spend)
        if stop is None and hasattr(self.flow, "stop_reason"):
            stop = self.flow.stop_reason(self.context)
        if stop is None:
            stop = agent_stop(history.attempts)
        if stop is not None:
            fields = {"reason": stop.reason, "limit": stop.limit}
            best = self.flow.result_attempt(self.context) if self._promotes else None
            if best is not None:
                return "accepted", {**fields, "attempt": best}
            return "rejected", fields
        return "attempting", {"attempt": self.state.attempt + 1}

    def _promote(self) -> tuple[str, dict]:
        """Make the checked attempt the incumbent (idempotent), then go on or stop."""
        with self.progress.phase(f"attempt {self.state.attempt}: promoting"):
            self.flow.promote(self.context, self.state.attempt)
        return self._plan_attempt()

    @property
    def _promotes(self) -> bool:
        return bool(getattr(self.flow, "promotes", False))

    def _attempt(self) -> tuple[str, dict]:
        number = self.state.attempt
        record = self.store.history().attempt(number)
        if record.interrupted:
            return "feedback", {}
        if record.finished:
            return "checking", {}
        if record.started:
            self.journal.append(
                "attempt_interrupted",
                attempt=number,
                reason="the controller stopped during the agent session",
                **logged_usage(self.store.attempt_dir(number)),
            )
            return "feedback", {}
        return self._run_agent(number)

    def _run_agent(self, number: int) -> tuple[str, dict]:
        directory = self.store.attempt_dir(number)
        if directory.exists():  # left by a process that died before the session started
            shutil.rmtree(directory)
        fault_point("write attempt/ (folder)", directory)
        directory.mkdir(parents=True)
        prompt = self.flow.prompt(self.context, number, self._feedback_before(number))
        records.save_prompt(directory, prompt)
        protected: list[Path] = []
        fault_point("write attempt/workspace", directory / "workspace")
        if hasattr(self.flow, "make_workspace"):
            workspace, protected = self.flow.make_workspace(self.context, number, directory)
        else:
            workspace = create_workspace(
                self.context.target, self.manifest.base_commit, directory / "workspace"
            )
        context_paths = tuple(self.flow.context_paths(self.context)) + tuple(protected)
        session = attempt_session(
            AttemptSetting(number=number, folder=directory, workspace=workspace, prompt=prompt),
            context_paths,
            self.fence,
            self.manifest.limits,
            self.store.history().spend,
        )
        self.journal.append("agent_started", attempt=number)
        self.progress.note(f"attempt {number}: started (agent {self.manifest.agent.spec})")
        started = time.time()
        with self.progress.phase(f"attempt {number}: agent {self.manifest.agent.spec} working"):
            result = self.agent.run(session)
        self._usage_in_flight = result.usage.model_dump(mode="json")
        self.progress.note(f"attempt {number}: {session_line(result, time.time() - started)}")
        records.save_session(directory, result, started, time.time() - started)
        fault_point("write attempt/candidate", directory / "candidate")
        candidate = capture_candidate(workspace, self._base(directory), directory)
        self.journal.append(
            "agent_finished",
            attempt=number,
            exit_reason=result.exit_reason,
            usage=result.usage.model_dump(mode="json"),
            changes=len(candidate.changes),
        )
        self._usage_in_flight = None
        return "checking", {}

    def _check(self) -> tuple[str, dict]:
        number = self.state.attempt
        directory = self.store.attempt_dir(number)
        if self.store.history().attempt(number).checked:
            verdicts = records.load_verdicts(directory)
        else:
            verdicts = records.load_verdicts(directory)  # a complete check.json from a crash
            if not verdicts:
                verdicts = self._run_gates(number, directory)
            else:  # rewrite the per-gate files the crash may have left half done
                check = records.read_json(directory / "check.json")
                records.save_verdicts(directory, verdicts, check["started_at"], check["seconds"])
            self.journal.append(
                "verdicts",
                attempt=number,
                passed=self._passed(verdicts),
                gates={v.gate: v.passed for v in verdicts},
            )
        if not self._passed(verdicts):
            return "feedback", {}
        return ("promoted" if self._promotes else "accepted"), {}

    def _run_gates(self, number: int, directory: Path) -> list[Verdict]:
        candidate = load_candidate(directory / "candidate", self._base(directory))
        started = time.time()
        if not candidate.changes:
            exhausted = self.store.history().attempt(number).exit_reason == "exhausted"
            verdicts = [NOTHING_LEFT if exhausted else NO_CHANGES]
        else:
            fault_point("write attempt/gates", directory / "gates")
            with self.progress.phase(f"attempt {number}: gates checking"):
                verdicts = list(self.flow.check(self.context, number, candidate))
        for verdict in verdicts:
            mark = "pass" if verdict.passed else "FAIL"
            line = f"attempt {number}: gate {verdict.gate}: {mark} in {verdict.seconds:.1f} s"
            self.progress.note(line + ("" if verdict.passed else f" ({verdict.summary})"))
        records.save_verdicts(directory, verdicts, started, time.time() - started)
        return verdicts

    def _passed(self, verdicts: list[Verdict]) -> bool:
        """Accepted only when every gate of the manifest has a passing verdict."""
        passing = {verdict.gate for verdict in verdicts if verdict.passed}
        failing = [verdict for verdict in verdicts if not verdict.passed]
        return not failing and set(self.manifest.gates) <= passing and bool(verdicts)

    def _publish(self) -> tuple[str, dict]:
        number = self.state.attempt
        directory = self.store.attempt_dir(number)
        candidate = load_candidate(directory / "candidate", self._base(directory))
        verdicts = records.load_verdicts(directory)
        fault_point("write publish (the flow's output)", self.context.target)
        with self.progress.phase("publishing"):
            result = self.flow.publish(self.context, candidate, verdicts)
        records.write_json_atomic(self.store.run_dir / "publish.json", result)
        self.journal.append("published", attempt=number, result=result)
        return "published", self._stop_fields()

    def _stop_fields(self) -> dict:
        """A stop reason (tune) stays on the run's state through publishing to `done`."""
        fields = {"reason": self.state.reason, "limit": self.state.limit}
        return {key: value for key, value in fields.items() if value}

    def _base(self, attempt_dir: Path) -> Path:
        return records.attempt_base(attempt_dir, self.store.base_path)

    def _write_evidence(self) -> None:
        """Rebuild the evidence; on a disk too full for it, the next resume rebuilds it."""
        try:
            write_evidence(self.store)
            if hasattr(self.flow, "write_evidence"):
                self.flow.write_evidence(self.context)
        except OSError as error:
            if environment_failure(error) is None:
                raise
            self.progress.note(f"evidence not written: {environment_failure(error)}")

    def _feedback_before(self, number: int) -> list[Verdict]:
        """The failed verdicts of the latest checked attempt before this one."""
        for earlier in range(number - 1, 0, -1):
            verdicts = records.load_verdicts(self.store.attempt_dir(earlier))
            if verdicts:
                return [verdict for verdict in verdicts if not verdict.passed]
        return []

    def _record_interruption(self, reason: str, withdraw: bool = False) -> None:
        """Journal `interrupted`; a disk too full even for that leaves a crash to resume from.
        `withdraw`: the attempt in flight is not counted (the provider, not the agent, failed)."""
        try:
            self.journal = self.store.open_journal()  # an append may have been cut short
            self.state = self.store.state()
            if self.state.terminal or self.state.state == "interrupted":
                return
            self._close_attempt_in_flight(reason, withdraw)
            self._transition("interrupted", reason=reason, resume_state=self.state.state)
        except OSError as error:
            if environment_failure(error) is None:
                raise
            self.state = self.store.state()

    def _record_failure(self, error: Exception) -> None:
        self.journal = self.store.open_journal()
        self.state = self.store.state()
        if self.state.terminal:
            return
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        reason = f"{type(error).__name__}: {message}".rstrip(": ")
        self._close_attempt_in_flight(reason)
        self._transition("failed", reason=reason)

    def _close_attempt_in_flight(self, reason: str, withdraw: bool = False) -> None:
        """An agent session cut short is recorded as interrupted; it is never replayed. One the
        provider could not serve is withdrawn: its spend is kept, the attempt runs again."""
        record = self.store.history().attempt(self.state.attempt)
        if self.state.state == "attempting" and record.started and not record.finished:
            usage = {"usage": self._usage_in_flight} if self._usage_in_flight else {}
            usage = usage or logged_usage(self.store.attempt_dir(self.state.attempt))
            kind = "attempt_withdrawn" if withdraw else "attempt_interrupted"
            self.journal.append(kind, attempt=self.state.attempt, reason=reason, **usage)
