"""The Flow protocol: what a kind of run (register, tune) supplies to the shared engine.

The engine owns the loop, the budget, the journal and the evidence; a flow owns the prompt,
the gates and what is published. Every method may be called again after a crash, so each
must be idempotent. A flow that improves an incumbent (tune) adds the optional hooks the
engine's docstring lists (`promotes`, `promote`, `stop_reason`, `result_attempt`,
`make_workspace`, `write_evidence`).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from controller.candidate import Candidate
from controller.runs.manifest import Manifest
from controller.runs.store import RunStore
from gates.verdict import Verdict


@dataclass(frozen=True)
class RunContext:
    """What a flow may read about the run it serves.

    `fence` and `policy` are the run's fence and its base policy (no workspace), for gates that
    run fenced, such as the tests gate; `base_path` is the pristine export of BASE.
    """

    run_dir: Path
    manifest: Manifest
    store: RunStore
    target: Path
    base_commit: str
    fence: Any
    policy: Any
    base_path: Path

    @property
    def prepared_dir(self) -> Path:
        """Where `prepare` keeps what it records (e.g. BASE parity outputs)."""
        return self.store.prepared_dir

    def attempt_dir(self, attempt: int) -> Path:
        return self.store.attempt_dir(attempt)

    def verdict_dir(self, attempt: int) -> Path:
        """Where a gate may write evidence files named in its Verdict."""
        return self.store.attempt_dir(attempt) / "verdicts"


@runtime_checkable
class Flow(Protocol):
    """A kind of run: register an operator, or tune a kernel."""

    name: str

    def gate_names(self) -> list[str]:
        """The gates `check` runs, in order; frozen in the manifest."""
        ...

    def prepare(self, run: RunContext) -> None:
        """One-time work before the first attempt (idempotent), under `run.prepared_dir`."""
        ...

    def prompt(self, run: RunContext, attempt: int, feedback: list[Verdict]) -> str:
        """The agent's task for this attempt; `feedback` holds the previous failed verdicts."""
        ...

    def context_paths(self, run: RunContext) -> list[Path]:
        """Files or folders the agent may read but not write."""
        ...

    def check(self, run: RunContext, attempt: int, candidate: Candidate) -> list[Verdict]:
        """Run every gate, outside the fence, each on a fresh copy of the candidate."""
        ...

    def publish(self, run: RunContext, candidate: Candidate, verdicts: list[Verdict]) -> dict:
        """Deliver an accepted candidate (idempotent, e.g. a branch); returns what to report."""
        ...
