"""Run the registration gates on one candidate commit, cheap ones first, each on its own export.

Every gate is one row of `GATES`. Static gates (they read files, run no target code) go first;
when one fails, the gates that run target code are skipped unless `all_gates` is set, and their
verdicts say so. Each gate reads its own fresh read-only export of the judged commit, so no
gate's execution can change what another sees. The candidate's parity probe runs once, in its
own export, and feeds the gates that compare with BASE; BASE's probe and test outcomes are
recorded once per run and read back afterwards.
"""

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gates.changes.ruff_rules import base_configuration, ruff_verdict
from gates.registration import (
    GATE_NAMES,
    aten_sequence,
    bit_parity,
    effectiveness,
    registry_gates,
    registry_hits,
    scope,
    structure,
    target_tests,
)
from gates.registration.attempt import Attempt, GateSettings, RegistrationRequest
from gates.registration.commands import CommandRunner
from gates.registration.declared import reference_location
from gates.registration.hidden import HiddenDraw
from gates.registration.judged_commit import JudgedCommit, make_writable
from gates.target import TargetConfig
from gates.verdict import Verdict

BASE_TESTS = "base-tests"
"""Where BASE's test outcomes are recorded, beside BASE's probe."""

# The controller shows these records as progress lines (controller/runs/progress.py).
PROGRESS = logging.getLogger("kernel_controller.progress")


@dataclass(frozen=True)
class Gate:
    """One registration gate: its name, whether it runs target code, how it is checked."""

    name: str
    runs_code: bool
    check: Callable[[Attempt], Verdict]


def _scope(attempt: Attempt) -> Verdict:
    return scope.check(attempt.base, attempt.commit, attempt.config, attempt.operator)


def _ruff(attempt: Attempt) -> Verdict:
    configuration = base_configuration(attempt.base)
    return ruff_verdict(attempt.base, attempt.export("ruff"), configuration, attempt.config.limits)


def _structure(attempt: Attempt) -> Verdict:
    tree = attempt.export("structure")
    probe = attempt.candidate_probe()
    return structure.check(
        attempt.base, tree, attempt.config, attempt.operator, attempt.sites, probe
    )


def _tests(attempt: Attempt) -> Verdict:
    return target_tests.check(
        attempt.base,
        attempt.export("tests"),
        attempt.config,
        attempt.runner,
        attempt.workdir / "tests",
        attempt.base_probe_dir / BASE_TESTS,
        attempt.settings.test_timeout_s,
        attempt.new_tests_session,
    )


def _effectiveness(attempt: Attempt) -> Verdict:
    tree = attempt.export("test_effectiveness")
    reference = reference_location(tree, attempt.config, attempt.operator)
    probe = attempt.candidate_probe() if reference is None else None
    return effectiveness.check(
        attempt.base,
        tree,
        probe,
        attempt.runner,
        attempt.workdir / "test_effectiveness",
        attempt.settings.test_timeout_s,
        reference,
        lambda: attempt.new_tests_session()[1],
    )


def _aten(attempt: Attempt) -> Verdict:
    base, candidate = attempt.base_probe(), attempt.candidate_probe()
    return aten_sequence.check(base, candidate, attempt.config, attempt.hidden)


def _hits(attempt: Attempt) -> Verdict:
    base, candidate = attempt.base_probe(), attempt.candidate_probe()
    config, operator, sites = attempt.config, attempt.operator, attempt.sites
    return registry_hits.check(candidate, config, operator, sites, attempt.hidden, base)


def _parity(attempt: Attempt) -> Verdict:
    base, candidate = attempt.base_probe(), attempt.candidate_probe()
    return bit_parity.check(base, candidate, attempt.config, attempt.hidden)


GATES: tuple[Gate, ...] = (
    Gate("scope", runs_code=False, check=_scope),
    Gate("ruff", runs_code=False, check=_ruff),
    Gate("structure", runs_code=True, check=_structure),
    Gate("operator_identity", runs_code=True, check=registry_gates.operator_identity_gate),
    Gate("declaration_truth", runs_code=True, check=registry_gates.declaration_truth_gate),
    Gate("kernel_workloads", runs_code=True, check=registry_gates.kernel_workloads_gate),
    Gate("tests", runs_code=True, check=_tests),
    Gate("test_effectiveness", runs_code=True, check=_effectiveness),
    Gate("aten_sequence", runs_code=True, check=_aten),
    Gate("registry_hits", runs_code=True, check=_hits),
    Gate("bit_exact_parity", runs_code=True, check=_parity),
)
"""Every registration gate in run order; adding a gate is one function and one row here
(and its name in `GATE_NAMES`)."""


def check_attempt(
    base: Path,
    commit: JudgedCommit,
    request: RegistrationRequest,
    config: TargetConfig,
    runner: CommandRunner,
    workdir: Path,
    base_probe_dir: Path,
    settings: GateSettings | None = None,
    hidden: HiddenDraw | None = None,
) -> list[Verdict]:
    """Every gate's verdict on `commit`, in the order of `GATE_NAMES` (skipped ones included)."""
    attempt = Attempt(
        base=Path(base),
        commit=commit,
        request=request,
        config=config,
        runner=runner,
        workdir=Path(workdir),
        base_probe_dir=Path(base_probe_dir),
        settings=settings or GateSettings(),
        hidden=hidden or HiddenDraw(),
    )
    attempt.workdir.mkdir(parents=True, exist_ok=True)
    try:
        verdicts = {gate.name: _run(gate, attempt) for gate in GATES if not gate.runs_code}
        failed = [name for name, verdict in verdicts.items() if not verdict.passed]
        running = [gate for gate in GATES if gate.runs_code]
        if failed and not attempt.settings.all_gates:
            verdicts |= {gate.name: skipped(gate.name, failed) for gate in running}
        else:
            with ThreadPoolExecutor(max_workers=max(1, len(running))) as pool:
                jobs = {gate.name: pool.submit(_run, gate, attempt) for gate in running}
                verdicts |= {name: job.result() for name, job in jobs.items()}
    finally:
        make_writable(attempt.workdir)  # the exports are read-only only while gates run
    return [verdicts[name] for name in GATE_NAMES]


def skipped(gate: str, failed: list[str]) -> Verdict:
    """The verdict of a gate not run because a cheaper one already failed."""
    summary = f"skipped: {', '.join(failed)} failed first (run with --all-gates to see this gate)"
    return Verdict(gate=gate, passed=False, summary=summary, details={"skipped": True})


def is_skipped(verdict: Verdict) -> bool:
    return bool(verdict.details.get("skipped"))


def _run(gate: Gate, attempt: Attempt) -> Verdict:
    started = time.monotonic()
    PROGRESS.info("gate %s: running", gate.name)
    verdict = gate.check(attempt)
    if verdict.seconds:
        return verdict
    return verdict.model_copy(update={"seconds": time.monotonic() - started})
