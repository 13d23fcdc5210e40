"""What every gate of one registration attempt reads: the request, the gate settings and the
attempt itself, whose candidate probe, registry snapshots and new-test session are shared and
run once, by the first gate that asks.

Its own module so that the suite's table and the gates it lists (`registry_gates`) both
import it, and neither imports the other.
"""

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from gates.registration import target_tests
from gates.registration.call_sites import CallSite
from gates.registration.commands import CommandRunner
from gates.registration.hidden import HiddenDraw
from gates.registration.judged_commit import JudgedCommit
from gates.registration.probes import ProbeResult, cached_probe, run_probe
from gates.registration.tree_changes import new_test_files, tree_changes
from gates.target import TargetConfig


class RegistrationRequest(BaseModel):
    """What a registration run asks for: one operator, the call sites to route through it."""

    model_config = ConfigDict(frozen=True)

    operator: str
    call_sites: tuple[CallSite, ...]


class GateSettings(BaseModel):
    """Timeouts of the gates that run target code, and whether to run every gate regardless."""

    model_config = ConfigDict(frozen=True)

    test_timeout_s: float = 300
    probe_timeout_s: float = 300
    all_gates: bool = False
    """Run the gates that execute target code even after a static gate failed."""


@dataclass
class Attempt:
    """What every gate of one attempt may read; the candidate probe is shared and run once."""

    base: Path
    commit: JudgedCommit
    request: RegistrationRequest
    config: TargetConfig
    runner: CommandRunner
    workdir: Path
    base_probe_dir: Path
    settings: GateSettings
    hidden: HiddenDraw
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _shared: dict[str, Future] = field(default_factory=dict)

    def export(self, gate: str) -> Path:
        """A fresh read-only export of the judged commit for `gate` alone."""
        return self.commit.export(self.workdir / gate / "tree")

    def base_probe(self) -> ProbeResult:
        return cached_probe(
            self.base,
            self.base_probe_dir,
            self.config,
            self.operator,
            self.runner,
            self.hidden,
            self.sites,
        )

    def candidate_probe(self) -> ProbeResult:
        """The candidate's probe, started by the first gate that asks and shared with the rest."""

        def probe() -> ProbeResult:
            return run_probe(
                self.export("probe"),
                self.workdir / "probe" / "out",
                self.config,
                self.operator,
                self.runner,
                self.hidden,
                self.sites,
                self.settings.probe_timeout_s,
            )

        return self.shared("probe", probe)

    def new_tests_session(self):
        """The new test files run once on the candidate, for the tests and effectiveness gates."""

        def session():
            tree = self.export("new_tests")
            tests = new_test_files(tree_changes(self.base, tree))
            arguments = [*target_tests.NEW_TEST_OPTIONS, *tests]
            out, timeout = self.workdir / "new_tests" / "out", self.settings.test_timeout_s
            return target_tests.run_session(self.base, tree, arguments, self.runner, out, timeout)

        return self.shared("new_tests", session)

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """`compute()` run once per attempt by the first gate that asks; the others wait for it."""
        with self._lock:
            job = self._shared.get(key)
            owner = job is None
            if owner:
                job = self._shared[key] = Future()
        if owner:
            try:
                job.set_result(compute())
            except BaseException as error:
                job.set_exception(error)
        return job.result()

    @property
    def operator(self) -> str:
        return self.request.operator

    @property
    def sites(self) -> list[CallSite]:
        return list(self.request.call_sites)
